/*
 * Plugin files the library must refuse or survive, in this process:
 *  - trust rules: a plugin writable by others (0666), in a directory
 *    writable by others (0777, and 1777 like /tmp), owned by another user
 *    (as root: chowned to nobody), and a relative search entry: each
 *    refused with CHR_EPLUGIN_UNTRUSTED and a message saying which rule,
 *    by chr_plugin_load and, for discovery, in the CHR_ENOHASHER message;
 *    the same file in a directory that keeps the rules loads;
 *  - discovery order: with CHRING_PLUGIN_PATH=A:B, asking for a name that
 *    A's first file exports maps neither A's second file nor B's (checked
 *    in /proc/self/maps); chr_hasher_list then loads them all;
 *  - truncated copies of a real plugin at many lengths: each load, in a
 *    forked child, ends with a status (CHR_EPLUGIN_NOTSO while any
 *    PT_LOAD lies past the end), never a signal; and a copy cut at 8192
 *    bytes in a search directory gives a lookup CHR_ENOHASHER, not SIGBUS;
 *  - corrupted dynamic sections (entries the loader needs removed, tables
 *    moved onto other bytes, counts and names out of range): each refused
 *    with CHR_EPLUGIN_NOTSO before the dynamic loader sees the file.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_process.h"
#include "test_util.h"

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR and EXAMPLE_PLUGIN come from meson"
#endif

enum { PATH_SIZE = 4096 };

static char root[PATH_SIZE]; /* temporary, removed at the end */

static void path_join(char *out, const char *a, const char *b) {
    int n = snprintf(out, PATH_SIZE, "%s/%s", a, b);
    assert_true(n > 0 && n < PATH_SIZE);
}

/* root/<name>, created with exactly `mode`. */
static void make_dir(char *out, const char *name, mode_t mode) {
    path_join(out, root, name);
    assert_int_equal(mkdir(out, 0700), 0);
    assert_int_equal(chmod(out, mode), 0);
}

static void copy_fixture(const char *fixture, const char *dir, const char *as, char *out) {
    char from[PATH_SIZE];
    path_join(from, FIXTURE_DIR, fixture);
    path_join(out, dir, as);
    copy_file(from, out);
    assert_int_equal(chmod(out, 0755), 0);
}

static void expect_untrusted(const char *path, const char *reason) {
    size_t loaded = 9;
    assert_chr_error(chr_plugin_load(path, &loaded), CHR_EPLUGIN_UNTRUSTED, "chr_plugin_load");
    assert_int_equal(loaded, 0);
    if (!strstr(chr_last_error(), reason))
        fail_msg("chr_plugin_load(%s): \"%s\" does not say \"%s\"", path, chr_last_error(), reason);
}

/* A ring with `hasher`, plugin_dir = `dir`: CHR_ENOHASHER, saying `reason`. */
static void expect_discovery_skips(const char *dir, const char *hasher, const char *reason) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = hasher;
    opts.plugin_dir = dir;
    chr_ring *ring = NULL;
    assert_chr_error(chr_ring_new(&opts, &ring), CHR_ENOHASHER, "chr_ring_new");
    if (!strstr(chr_last_error(), reason))
        fail_msg("plugin_dir %s: \"%s\" does not say \"%s\"", dir, chr_last_error(), reason);
}

static int group_setup(void **state) {
    (void)state;
    make_temp_dir(root);
    unsetenv("CHRING_PLUGIN_PATH"); /* every case sets its own */
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    remove_tree(root);
    return 0;
}

/* ---- trust rules ---------------------------------------------------------------- */

/* A plugin or its directory writable by others, or by the group: refused by
 * chr_plugin_load and skipped by discovery, each saying which rule. */
static void test_writable_files_and_directories(void **state) {
    (void)state;
    static const struct {
        const char *dir;
        mode_t dir_mode, file_mode;
        const char *reason;           /* in chr_plugin_load's message */
        const char *discovery_reason; /* in the CHR_ENOHASHER message */
    } cases[] = {
        {"file-0666", 0755, 0666, "writable by others (mode 0666)", "writable by others (mode 0666)"},
        {"file-0775", 0755, 0775, "writable by its group (mode 0775)", "(mode 0775)"},
        {"dir-0777", 0777, 0755, "writable by others (mode 0777)", "writable by others (mode 0777)"},
        /* sticky does not help the plugin's own directory: anyone may add a file */
        {"dir-1777", 01777, 0755, "writable by others (mode 1777)", "(mode 1777)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char dir[PATH_SIZE], file[PATH_SIZE];
        make_dir(dir, cases[i].dir, cases[i].dir_mode);
        copy_fixture("fixture-trust.so", dir, "chring-trust.so", file);
        assert_int_equal(chmod(file, cases[i].file_mode), 0);
        expect_untrusted(file, cases[i].reason);
        expect_discovery_skips(dir, "fixture_trust", cases[i].discovery_reason);
    }
}

static void test_file_owned_by_another_user(void **state) {
    (void)state;
    if (geteuid() != 0) {
        print_message("not root: cannot give a file to another user\n");
        skip();
    }
    char dir[PATH_SIZE], file[PATH_SIZE];
    make_dir(dir, "owned-by-nobody", 0755);
    copy_fixture("fixture-trust.so", dir, "chring-trust.so", file);
    assert_int_equal(chown(file, 65534, 65534), 0);
    expect_untrusted(file, "owned by uid 65534, not by root or the effective uid 0");
    expect_discovery_skips(dir, "fixture_trust", "owned by uid 65534");
    /* the directory too */
    char dir2[PATH_SIZE], file2[PATH_SIZE];
    make_dir(dir2, "dir-owned-by-nobody", 0755);
    copy_fixture("fixture-trust.so", dir2, "chring-trust.so", file2);
    assert_int_equal(chown(dir2, 65534, 65534), 0);
    expect_untrusted(file2, "owned by uid 65534");
}

static void test_relative_search_entries(void **state) {
    (void)state;
    char dir[PATH_SIZE], file[PATH_SIZE], cwd[PATH_SIZE];
    make_dir(dir, "relative", 0755);
    char plugins[PATH_SIZE];
    path_join(plugins, dir, "plugins");
    assert_int_equal(mkdir(plugins, 0755), 0);
    copy_fixture("fixture-trust.so", plugins, "chring-trust.so", file);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);

    expect_discovery_skips("plugins", "fixture_trust", "'plugins': not an absolute path");
    assert_int_equal(setenv("CHRING_PLUGIN_PATH", "plugins", 1), 0);
    uint64_t value = 0;
    assert_chr_error(chr_hasher_hash("fixture_trust", "k", 1, 0, &value), CHR_ENOHASHER,
                     "chr_hasher_hash");
    if (!strstr(chr_last_error(), "not an absolute path"))
        fail_msg("CHRING_PLUGIN_PATH=plugins: \"%s\"", chr_last_error());
    assert_int_equal(unsetenv("CHRING_PLUGIN_PATH"), 0);
    assert_int_equal(chdir(cwd), 0);
}

/* The control: the same file where the rules hold loads (last, since it
 * stays registered). */
static void test_trusted_copy_loads(void **state) {
    (void)state;
    char dir[PATH_SIZE], file[PATH_SIZE];
    make_dir(dir, "trusted", 0755);
    copy_fixture("fixture-trust.so", dir, "chring-trust.so", file);
    uint64_t value = 0;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "fixture_trust";
    opts.plugin_dir = dir;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_ring_free(ring);
    assert_chr_ok(chr_hasher_hash("fixture_trust", "k", 1, 0, &value));
}

/* ---- discovery stops at the wanted name --------------------------------------------- */

static int mapped(const char *path) {
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[PATH_SIZE + 256];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        line[strcspn(line, "\n")] = '\0';
        const char *name = strchr(line, '/');
        found = name && strcmp(name, path) == 0;
    }
    fclose(maps);
    return found;
}

static void test_discovery_stops_at_the_wanted_name(void **state) {
    (void)state;
    char a[PATH_SIZE], b[PATH_SIZE], a1[PATH_SIZE], a2[PATH_SIZE], b1[PATH_SIZE];
    make_dir(a, "order-a", 0755);
    make_dir(b, "order-b", 0755);
    copy_fixture("fixture-stop-a.so", a, "chring-1.so", a1);
    copy_fixture("fixture-stop-a2.so", a, "chring-2.so", a2);
    copy_fixture("fixture-stop-b.so", b, "chring-1.so", b1);
    char path[PATH_SIZE * 2 + 2];
    snprintf(path, sizeof path, "%s:%s", a, b);
    assert_int_equal(setenv("CHRING_PLUGIN_PATH", path, 1), 0);

    uint64_t value = 0;
    assert_chr_ok(chr_hasher_hash("stop_a", "k", 1, 0, &value));
    assert_true(mapped(a1));
    assert_false(mapped(a2)); /* later in the same directory */
    assert_false(mapped(b1)); /* a later directory */

    size_t count = 0;
    assert_chr_status(chr_hasher_list(NULL, NULL, 0, &count), CHR_ERANGE); /* loads everything */
    assert_true(mapped(a2));
    assert_true(mapped(b1));
    assert_chr_ok(chr_hasher_hash("stop_b", "k", 1, 0, &value));
    assert_int_equal(unsetenv("CHRING_PLUGIN_PATH"), 0);
}

/* ---- truncated plugins ------------------------------------------------------------------ */

static unsigned char *read_whole(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    unsigned char *bytes = malloc((size_t)n);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

/* Where the last PT_LOAD's file bytes end. */
static size_t loads_end(const unsigned char *elf, size_t size) {
    Elf64_Ehdr eh;
    assert_true(size >= sizeof eh);
    memcpy(&eh, elf, sizeof eh);
    size_t end = 0;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        assert_true(eh.e_phoff + (i + 1) * sizeof ph <= size);
        memcpy(&ph, elf + eh.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end) end = ph.p_offset + ph.p_filesz;
    }
    return end;
}

static void write_prefix(const char *path, const unsigned char *bytes, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
}

/* chr_plugin_load of `path` in a forked child: its status, or fails if the
 * child died of a signal. */
static chr_status load_in_child(const char *path, size_t cut) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(-chr_plugin_load(path, NULL));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("loading the plugin cut at %zu bytes killed the process with signal %d", cut,
                 WTERMSIG(status));
    assert_true(WIFEXITED(status));
    return -WEXITSTATUS(status);
}

static void test_truncated_plugins_never_crash(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *elf = read_whole(EXAMPLE_PLUGIN, &size);
    const size_t end = loads_end(elf, size);
    assert_true(end > 8192 && end <= size);
    char dir[PATH_SIZE];
    make_dir(dir, "truncated", 0755);
    /* every 61 bytes (all alignments, every header and segment), around the
     * ends of the ELF header, the program headers and each page */
    size_t cuts[600], n = 0;
    for (size_t c = 0; c < size && n < 500; c += 61) cuts[n++] = c;
    const size_t marks[] = {4, 63, 64, 65, 119, 120, 4095, 4096, 4097, 8191, 8192, 8193,
                            end - 1, end, size - 1};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; ++i) cuts[n++] = marks[i];
    for (size_t i = 0; i < n; ++i) {
        char path[PATH_SIZE], name[64];
        snprintf(name, sizeof name, "cut-%zu.so", cuts[i]);
        path_join(path, dir, name);
        write_prefix(path, elf, cuts[i]);
        chr_status st = load_in_child(path, cuts[i]);
        if (cuts[i] < end) {
            if (st != CHR_EPLUGIN_NOTSO)
                fail_msg("cut at %zu of %zu (segments end at %zu): status %d, not CHR_EPLUGIN_NOTSO",
                         cuts[i], size, end, st);
        } else if (st != CHR_OK && st != CHR_EPLUGIN_NOTSO) {
            fail_msg("cut at %zu past the segments: status %d", cuts[i], st);
        }
        unlink(path);
    }
    free(elf);
}

/* The report's case: head -c 8192 of a real plugin in a search directory. */
static void test_truncated_plugin_in_search_path(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *elf = read_whole(EXAMPLE_PLUGIN, &size);
    char dir[PATH_SIZE], path[PATH_SIZE];
    make_dir(dir, "head-8192", 0755);
    path_join(path, dir, "chring-example.so");
    write_prefix(path, elf, 8192);
    free(elf);
    expect_discovery_skips(dir, "example_djb2", "truncated");
    assert_int_equal(chr_plugin_load(path, NULL), CHR_EPLUGIN_NOTSO);
    if (!strstr(chr_last_error(), "truncated: a PT_LOAD segment"))
        fail_msg("\"%s\" does not say what is truncated", chr_last_error());
}

/* ---- corrupted dynamic sections ----------------------------------------------------------- */

/* The file offset of virtual address `vaddr` (inside a PT_LOAD's file bytes). */
static size_t file_offset(const unsigned char *elf, uint64_t vaddr) {
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, elf + eh.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
            return (size_t)(ph.p_offset + (vaddr - ph.p_vaddr));
    }
    fail_msg("address 0x%llx is not in the file", (unsigned long long)vaddr);
    return 0;
}

/* The program header of type `type`, and the dynamic entry with tag `tag`:
 * their offsets in the file. */
static size_t phdr_at(const unsigned char *elf, uint32_t type) {
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, elf + eh.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == type) return (size_t)eh.e_phoff + i * sizeof ph;
    }
    fail_msg("no program header of type %u", type);
    return 0;
}

/* The file offset of the dynamic entry `tag`, or 0 when the plugin has none
 * (which entries a build's linker writes varies: without calls through the
 * PLT or versioned symbols, the gcc build's plugin has no DT_JMPREL,
 * DT_VERSYM or DT_VERNEED). */
static size_t dyn_find(const unsigned char *elf, int64_t tag) {
    Elf64_Phdr ph;
    memcpy(&ph, elf + phdr_at(elf, PT_DYNAMIC), sizeof ph);
    for (size_t at = (size_t)ph.p_offset;; at += sizeof(Elf64_Dyn)) {
        Elf64_Dyn d;
        memcpy(&d, elf + at, sizeof d);
        if (d.d_tag == tag) return at;
        if (d.d_tag == DT_NULL) return 0;
    }
}

static int dyn_has(const unsigned char *elf, int64_t tag) { return dyn_find(elf, tag) != 0; }

static size_t dyn_at(const unsigned char *elf, int64_t tag) {
    const size_t at = dyn_find(elf, tag);
    if (!at) fail_msg("no dynamic entry %lld", (long long)tag);
    return at;
}

static uint64_t dyn_value(const unsigned char *elf, int64_t tag) {
    Elf64_Dyn d;
    memcpy(&d, elf + dyn_at(elf, tag), sizeof d);
    return d.d_un.d_val;
}

/* One corruption: an entry's tag replaced by DT_BIND_NOW (as good as
 * removed: the plugin is loaded with RTLD_NOW anyway), or a value set. */
typedef struct corruption {
    const char *what;
    int64_t tag;      /* the dynamic entry to change; 0: see `edit` */
    int remove;       /* remove the entry, else set its value */
    uint64_t value;
    const char *reason; /* in the message */
} corruption;

/* chr_plugin_load of `path` in a forked child: its status and message, or
 * fails if the child died of a signal. */
static chr_status load_in_child_said(const char *path, const char *what, char *message, size_t size) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        chr_status st = chr_plugin_load(path, NULL);
        const char *m = chr_last_error();
        ssize_t ignored = write(fds[1], m, strlen(m));
        (void)ignored;
        _exit(-st);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], message, size - 1);
    message[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) fail_msg("%s: the load killed the process with signal %d", what, WTERMSIG(status));
    assert_true(WIFEXITED(status));
    return -WEXITSTATUS(status);
}

/* What the dynamic loader trusts in a valid plugin, corrupted one thing at a
 * time: each would crash (or abort) ld.so inside dlopen; each is refused
 * with CHR_EPLUGIN_NOTSO and a message saying what is wrong. The offsets
 * come from the plugin's own headers, so any build of it serves. */
static void test_corrupted_dynamic_sections_are_refused(void **state) {
    (void)state;
    size_t size = 0;
    unsigned char *elf = read_whole(EXAMPLE_PLUGIN, &size);
    const uint64_t relas = dyn_value(elf, DT_RELASZ) / sizeof(Elf64_Rela);
    /* some of its relocations are not relative (the GOT's), so counting all
     * of them as relative is a lie the loader would assert on */
    assert_true(dyn_value(elf, DT_RELACOUNT) < relas);
    const corruption cases[] = {
        {"no DT_RELAENT", DT_RELAENT, 1, 0, "needs entry size"},
        {"no DT_VERSYM", DT_VERSYM, 1, 0, "DT_VERSYM must come with"},
        {"no DT_VERNEED", DT_VERNEED, 1, 0, "DT_VERSYM must come with"},
        {"no DT_JMPREL", DT_JMPREL, 1, 0, "DT_PLTREL and DT_JMPREL"},
        {"no DT_SYMTAB", DT_SYMTAB, 1, 0, "lacks a symbol table"},
        {"no DT_RELASZ", DT_RELASZ, 1, 0, "has no size entry"},
        {"DT_GNU_HASH on the ELF header", DT_GNU_HASH, 0, 1, "DT_GNU_HASH"},
        {"DT_STRSZ of 1", DT_STRSZ, 0, 1, "string table"},
        {"DT_RELACOUNT over every relocation", DT_RELACOUNT, 0, relas, "counted as relative"},
        {"DT_INIT_ARRAY on the ELF header", DT_INIT_ARRAY, 0, 0, "is not relocated to the plugin's code"},
        {"DT_INIT outside the code", DT_INIT, 0, 0, "is not in an executable PT_LOAD"},
        {"PT_DYNAMIC's address moved", 0, 0, 0, "offset and address name different bytes"},
        {"a symbol name past the string table", -1, 0, 0, "past the string table"},
        {"PT_GNU_RELRO past its PT_LOAD", -2, 0, 0, "PT_GNU_RELRO lies outside"},
    };
    char dir[PATH_SIZE], path[PATH_SIZE], message[1024];
    make_dir(dir, "corrupted", 0755);
    path_join(path, dir, "chring-corrupted.so");
    unsigned char *copy = malloc(size);
    assert_non_null(copy);
    size_t ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const corruption *c = &cases[i];
        if (c->tag > 0 && !dyn_has(elf, c->tag)) {
            printf("skipped \"%s\": this build's plugin has no such entry\n", c->what);
            continue;
        }
        ++ran;
        memcpy(copy, elf, size);
        if (c->tag > 0) {
            Elf64_Dyn d;
            const size_t at = dyn_at(copy, c->tag);
            memcpy(&d, copy + at, sizeof d);
            if (c->remove) d.d_tag = DT_BIND_NOW;
            else d.d_un.d_val = c->value;
            memcpy(copy + at, &d, sizeof d);
        } else if (c->tag == 0) {
            Elf64_Phdr ph;
            const size_t at = phdr_at(copy, PT_DYNAMIC);
            memcpy(&ph, copy + at, sizeof ph);
            ph.p_vaddr = ph.p_paddr = 1;
            memcpy(copy + at, &ph, sizeof ph);
        } else if (c->tag == -2) {
            /* ld.so would write-protect whatever is mapped after the plugin */
            Elf64_Phdr ph;
            const size_t at = phdr_at(copy, PT_GNU_RELRO);
            memcpy(&ph, copy + at, sizeof ph);
            ph.p_memsz += (uint64_t)1 << 40;
            memcpy(copy + at, &ph, sizeof ph);
        } else {
            Elf64_Sym sym;
            const size_t at = file_offset(copy, dyn_value(copy, DT_SYMTAB)) + sizeof sym;
            memcpy(&sym, copy + at, sizeof sym);
            sym.st_name = (Elf64_Word)dyn_value(copy, DT_STRSZ) + 100;
            memcpy(copy + at, &sym, sizeof sym);
        }
        write_prefix(path, copy, size);
        chr_status st = load_in_child_said(path, c->what, message, sizeof message);
        if (st != CHR_EPLUGIN_NOTSO || !strstr(message, c->reason))
            fail_msg("%s: status %d, message \"%s\" (want CHR_EPLUGIN_NOTSO, \"%s\")", c->what, st, message,
                     c->reason);
    }
    /* Every linker writes the entries of all but the three optional cases. */
    assert_true(ran >= sizeof cases / sizeof cases[0] - 3);
    unlink(path);
    free(copy);
    free(elf);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writable_files_and_directories),
        cmocka_unit_test(test_file_owned_by_another_user),
        cmocka_unit_test(test_relative_search_entries),
        cmocka_unit_test(test_trusted_copy_loads),
        cmocka_unit_test(test_discovery_stops_at_the_wanted_name),
        cmocka_unit_test(test_truncated_plugins_never_crash),
        cmocka_unit_test(test_truncated_plugin_in_search_path),
        cmocka_unit_test(test_corrupted_dynamic_sections_are_refused),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
