/*
 * plugin_probe — a program run by test_plugin_discovery in a controlled
 * environment: creates a ring with each hasher named on the command line
 * (options.plugin_dir from --plugin-dir; "-" means chr_ring_new(NULL), the
 * default options), looks a key up in it, and prints
 *   library <path of the libchring this process loaded>
 *   secure <AT_SECURE: 1 in a setuid or setgid process, where CHRING_PLUGIN_PATH is ignored>
 *   ids <uid> <euid> <gid> <egid>
 *   loaded <name> <plugin objects mapped after the lookup, before listing>
 *   hasher <name> <origin from chr_hasher_list>
 * or, on the first failure,
 *   error <name> <status> <chr_last_error()>
 * exiting 1. "--load PATH" among the names loads that file (chr_plugin_load)
 * and prints "load <status> <chr_last_error() or the path>", going on either way.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chring.h>

/* In a sanitizer build: no leak check in a secure-execution process run by
 * an unprivileged user. LeakSanitizer ptraces the process to check it, and
 * the setgid bit made it undumpable; nor can it read ASAN_OPTIONS there
 * (its own /proc/self/environ is root's). The hook is read at exit only. */
__attribute__((visibility("default"), used)) int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return getauxval(AT_SECURE) != 0 && geteuid() != 0; }

/* The path of the libchring mapped into this process. */
static const char *loaded_library(void) {
    static char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return "(unknown)";
    const char *found = "(unknown)";
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, "/libchring.so")) {
            path[strcspn(path, "\n")] = '\0';
            found = path;
            break;
        }
    }
    fclose(maps);
    return found;
}

/* Loaded objects that are plugins: the loader opens them as
 * /proc/self/fd/N (or by path where /proc is missing: chring-*.so). */
static int count_plugin(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    if (strncmp(name, "/proc/self/fd/", 14) == 0 || (base && strncmp(base, "/chring-", 8) == 0))
        ++*(int *)data;
    return 0;
}

static int plugins_loaded(void) {
    int n = 0;
    dl_iterate_phdr(count_plugin, &n);
    return n;
}

static const char *origin_of(const char *hasher, const char *plugin_dir) {
    static chr_hasher_info infos[256];
    size_t count = 0;
    if (chr_hasher_list(plugin_dir, infos, 256, &count) != CHR_OK) return "(list failed)";
    for (size_t i = 0; i < count; ++i)
        if (strcmp(infos[i].name, hasher) == 0) return infos[i].origin;
    return "(not listed)";
}

static int probe(const char *hasher, const char *plugin_dir) {
    const int defaults = strcmp(hasher, "-") == 0;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = hasher;
    opts.plugin_dir = plugin_dir;
    chr_ring *ring = NULL;
    chr_node_ref owner;
    chr_status st = chr_ring_new(defaults ? NULL : &opts, &ring);
    if (st == CHR_OK) st = chr_ring_add(ring, "node-a", 6, 1, NULL, 0, 1);
    if (st == CHR_OK) st = chr_ring_add(ring, "node-b", 6, 1, NULL, 0, 2);
    if (st == CHR_OK) st = chr_ring_lookup(ring, "key", 3, &owner);
    chr_ring_free(ring);
    if (st != CHR_OK) {
        printf("error %s %d %s\n", hasher, st, chr_last_error());
        return 1;
    }
    printf("loaded %s %d\n", hasher, plugins_loaded());
    printf("hasher %s %s\n", hasher, origin_of(defaults ? CHR_DEFAULT_HASHER : hasher, plugin_dir));
    return 0;
}

int main(int argc, char **argv) {
    const char *plugin_dir = NULL;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--plugin-dir") == 0) {
        plugin_dir = argv[2];
        first = 3;
    }
    printf("library %s\n", loaded_library());
    printf("secure %lu\n", getauxval(AT_SECURE));
    printf("ids %u %u %u %u\n", (unsigned)getuid(), (unsigned)geteuid(), (unsigned)getgid(),
           (unsigned)getegid());
    for (int i = first; i < argc; ++i) {
        if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
            chr_status st = chr_plugin_load(argv[++i], NULL);
            printf("load %d %s\n", st, st == CHR_OK ? argv[i] : chr_last_error());
            continue;
        }
        if (probe(argv[i], plugin_dir) != 0) return 1;
    }
    return 0;
}
