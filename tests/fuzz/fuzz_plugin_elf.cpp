// plugin_elf: corrupted plugin files. The input is a list of edits (bytes,
// header, program-header, section-header and dynamic-entry fields,
// truncations at structural offsets) applied to a real plugin from the
// build; the result is written to a private directory (0755, file 0644) and
//   child 1 dlopen()s it and looks up the entry point with dlsym(): does
//     the dynamic loader survive it?
//   child 2 loads it with chr_plugin_load().
// The parent then requires: child 2 did not crash in chring's code (nor
// fail a sanitizer check), nor in the dynamic loader (chring validates the
// ELF and program headers before dlopen, so a file ld.so cannot map must be
// refused first), and returned a documented status with a message. The
// edits never change the plugin's machine code (chring cannot judge code;
// a flipped instruction could break the calling convention and fault in
// chring after it returns). A crash in the plugin's own code (its
// constructors, its entry point, run from an edited address or on edited
// data), or in chring's code called from it, is the plugin's, and counted.
// Child 2's coverage counters are copied back, so libFuzzer is guided by
// the loader's branches.
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chring.h"


namespace {

constexpr int kDone = 0x55;  // a child's exit code when it finished normally
constexpr int kHog = 0x200;  // in_child(): killed for using more than kChildRssLimit
// A corrupted plugin's constructors (its ASan runtime registering globals
// through a wrong relocation) can touch gigabytes: a child over this is killed.
constexpr long kChildRssLimit = 1L << 30;
constexpr int kFrames = 48;

struct Shared {
    int32_t status;
    int32_t signal;
    int32_t dl_ok;
    int64_t entry_offset;  // child 1: where dlsym found the entry point, from the file's load base
    int32_t frames;
    void *frame[kFrames];
    char message[512];
};

std::vector<uint8_t> g_base;
std::string g_dir, g_path;
Shared *g_shared;
uint8_t *g_cov;  // shared copy of the counters
uint8_t *g_counters_start;  // this executable's inline 8-bit counters
size_t g_cov_size;
unsigned long g_plugin_crashes, g_refused_unsurvivable, g_content_crashes;
int64_t g_base_entry_offset = -1;  // the unedited plugin's entry point, from its load base

void copy_counters() {
    if (g_cov_size) std::memcpy(g_cov, g_counters_start, g_cov_size);
}

void on_fatal(int sig, siginfo_t *, void *uc) {
    g_shared->signal = sig;
    if (sig == SIGALRM) _exit(kDone + 2);  // a hang: no walk (it may need a lock the stuck code holds)
    int n = 0;
#if defined(__x86_64__)
    g_shared->frame[n++] = reinterpret_cast<void *>(static_cast<ucontext_t *>(uc)->uc_mcontext.gregs[REG_RIP]);
#else
    (void)uc;
#endif
    g_shared->frames = n;  // the PC alone, should the walk below fault
    void *bt[kFrames];
    int got = backtrace(bt, kFrames);
    for (int i = 0; i < got && n < kFrames; ++i) g_shared->frame[n++] = bt[i];
    g_shared->frames = n;
    copy_counters();
    _exit(kDone + 1);
}

void child_setup() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    static char altstack[1 << 16];  // a crash on an overflowed stack is still recorded
    stack_t ss{};
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM}) sigaction(sig, &sa, nullptr);
    alarm(20);  // a hang is reported as SIGALRM
}

enum class Where { Chring, DynamicLoader, Plugin };

// The sanitizer runtime's entry points (and the interceptors it puts in front
// of libc's string functions), called by whoever crashed through them.
bool sanitizer_entry(const char *name) {
    return name && (std::strncmp(name, "__asan", 6) == 0 || std::strncmp(name, "__sanitizer", 11) == 0 ||
                    std::strncmp(name, "__ubsan", 7) == 0 || std::strncmp(name, "__interceptor_", 14) == 0 ||
                    std::strcmp(name, "strnlen") == 0 || std::strcmp(name, "strlen") == 0);
}

// chring's code faulted at frame i - 1: it is chring's crash unless
// chring was called by the plugin (its code, run from an edited address,
// jumped there through an edited pointer) or by the dynamic loader (its
// constructors): the first caller outside this executable and libc decides.
Where caller_of_chring(const Shared &s, int i) {
    Dl_info self;
    dladdr(reinterpret_cast<void *>(&caller_of_chring), &self);
    for (; i < s.frames; ++i) {
        Dl_info info;
        if (!dladdr(s.frame[i], &info) || !info.dli_fname) return Where::Plugin;  // not mapped in the parent
        if (info.dli_fbase == self.dli_fbase || std::strstr(info.dli_fname, "libc.so")) continue;
        if (std::strstr(info.dli_fname, "ld-linux") || std::strstr(info.dli_fname, "/ld-")) return Where::DynamicLoader;
        return Where::Plugin;
    }
    return Where::Chring;
}

// The innermost frame that is neither libc nor the signal handler decides.
Where classify(const Shared &s) {
    Dl_info self;
    dladdr(reinterpret_cast<void *>(&classify), &self);
    // frame[0] is the faulting PC; backtrace()'s frames follow: the handler
    // and backtrace itself up to the signal trampoline (in libc), then the
    // faulting frame again and its callers.
    int first_caller = 1;
    for (int i = 1; i < s.frames; ++i) {
        Dl_info info;
        if (dladdr(s.frame[i], &info) && info.dli_fname && std::strstr(info.dli_fname, "libc.so")) {
            first_caller = i + 1;
            break;
        }
    }
    for (int i = 0; i < s.frames; ++i) {
        if (i == 1) i = first_caller;
        if (i >= s.frames) break;
        Dl_info info;
        if (!dladdr(s.frame[i], &info) || !info.dli_fname) return Where::Plugin;  // not mapped in the parent
        if (info.dli_fbase == self.dli_fbase) {
            if (info.dli_sname && std::strcmp(info.dli_sname, "_ZN12_GLOBAL__N_18on_fatalEiP9siginfo_tPv") == 0) continue;
            // The sanitizer runtime linked into this executable is called by
            // whoever crashed through it (an instrumented plugin's
            // constructor registering its globals, chring's strnlen): the
            // caller decides.
            if (sanitizer_entry(info.dli_sname)) continue;
            // An unnamed frame (not exported) is the sanitizer runtime's
            // inside when the next named frame of this executable is one of
            // its entries (an ODR report aborting from __asan_register_globals).
            if (!info.dli_sname) {
                int j = i + 1;
                Dl_info next;
                for (; j < s.frames; ++j)
                    if (dladdr(s.frame[j], &next) && next.dli_fbase == self.dli_fbase && next.dli_sname) break;
                if (j < s.frames && sanitizer_entry(next.dli_sname)) {
                    i = j;
                    continue;
                }
            }
            // Frames of the handler itself, when the PC was not recorded.
            if (reinterpret_cast<uintptr_t>(s.frame[i]) >= reinterpret_cast<uintptr_t>(&on_fatal) &&
                reinterpret_cast<uintptr_t>(s.frame[i]) < reinterpret_cast<uintptr_t>(&on_fatal) + 512)
                continue;
            return caller_of_chring(s, i + 1);
        }
        if (std::strstr(info.dli_fname, "ld-linux") || std::strstr(info.dli_fname, "/ld-")) return Where::DynamicLoader;
        if (std::strstr(info.dli_fname, "libc.so")) continue;
        return Where::Plugin;
    }
    return Where::Plugin;
}

long resident_bytes(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/statm", int(pid));
    FILE *f = std::fopen(path, "r");
    long size = 0, resident = 0;
    if (f) {
        if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

// Runs f() in a child; returns its exit code (kDone: finished), 256 + the
// number of a signal that killed it without the handler, or kHog.
template <class F>
int in_child(F &&f) {
    std::memset(g_shared, 0, sizeof *g_shared);
    pid_t pid = fork();
    if (pid < 0) {
        std::perror("plugin_elf: fork");
        std::abort();
    }
    if (pid == 0) {
        child_setup();
        f();
        _exit(kDone);
    }
    // A child stuck in the dynamic loader (or in the crash handler, behind a
    // lock ld.so holds) is killed after 30 s; one using too much memory at once.
    int ws = 0;
    bool hog = false;
    for (int waited = 0;; ++waited) {
        pid_t r = waitpid(pid, &ws, WNOHANG);
        if (r == pid) break;
        if (r < 0 && errno != EINTR) {
            std::perror("plugin_elf: waitpid");
            std::abort();
        }
        if (waited == 30000) kill(pid, SIGKILL);
        if (waited % 8 == 0 && !hog && resident_bytes(pid) > kChildRssLimit) {
            hog = true;
            kill(pid, SIGKILL);
        }
        usleep(waited < 100 ? 100 : 1000);
    }
    if (hog) return kHog;
    if (WIFSIGNALED(ws)) return 256 + WTERMSIG(ws);
    return WEXITSTATUS(ws);
}

// ---- edits ---------------------------------------------------------------

struct Layout {
    std::vector<uint64_t> points;  // structural offsets worth truncating at
    uint64_t phoff = 0, shoff = 0, dyn = 0;
    unsigned phnum = 0, shnum = 0, dynnum = 0;
    uint64_t loaded_end = 0;  // end of the last PT_LOAD's file bytes
    std::vector<std::pair<uint64_t, uint64_t>> code;  // file ranges of the SHF_EXECINSTR sections
};
Layout g_layout;

void read_layout() {
    Layout &l = g_layout;
    if (g_base.size() < sizeof(Elf64_Ehdr)) return;
    Elf64_Ehdr eh;
    std::memcpy(&eh, g_base.data(), sizeof eh);
    l.phoff = eh.e_phoff;
    l.phnum = eh.e_phnum;
    l.shoff = eh.e_shoff;
    l.shnum = eh.e_shnum;
    l.points = {sizeof(Elf64_Ehdr), eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr), eh.e_shoff, g_base.size()};
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (eh.e_phoff + (i + 1) * sizeof ph > g_base.size()) break;
        std::memcpy(&ph, g_base.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
        l.points.push_back(ph.p_offset);
        l.points.push_back(ph.p_offset + ph.p_filesz);
        if (ph.p_type == PT_LOAD) l.loaded_end = std::max<uint64_t>(l.loaded_end, ph.p_offset + ph.p_filesz);
        if (ph.p_type == PT_DYNAMIC) {
            l.dyn = ph.p_offset;
            l.dynnum = unsigned(ph.p_filesz / sizeof(Elf64_Dyn));
        }
    }
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
        Elf64_Shdr sh;
        if (eh.e_shoff + (i + 1) * sizeof sh > g_base.size()) break;
        std::memcpy(&sh, g_base.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
        if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
            l.code.push_back({sh.sh_offset, sh.sh_offset + sh.sh_size});
    }
}

void put(std::vector<uint8_t> &f, uint64_t off, uint64_t value, unsigned width) {
    for (unsigned i = 0; i < width && off + i < f.size(); ++i) f[off + i] = uint8_t(value >> (8 * i));
}

uint64_t pick_value(FuzzedDataProvider &in, const std::vector<uint8_t> &f) {
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return UINT32_MAX;
    case 3: return UINT64_MAX;
    case 4: return f.size();
    case 5: return f.size() + in.ConsumeIntegralInRange<uint64_t>(0, 1 << 16);
    case 6: return uint64_t(1) << in.ConsumeIntegralInRange<int>(0, 63);
    default: return in.ConsumeIntegral<uint64_t>();
    }
}

std::vector<uint8_t> mutate(FuzzedDataProvider &in) {
    std::vector<uint8_t> f = g_base;
    const Layout &l = g_layout;
    int edits = in.ConsumeIntegralInRange<int>(1, 8);
    static const unsigned widths[] = {1, 2, 4, 8};
    for (int e = 0; e < edits && in.remaining_bytes() > 0 && !f.empty(); ++e) {
        unsigned width = widths[in.ConsumeIntegralInRange<int>(0, 3)];
        switch (in.ConsumeIntegralInRange<int>(0, 7)) {
        case 0:  // truncate anywhere
            f.resize(in.ConsumeIntegralInRange<uint64_t>(0, f.size()));
            break;
        case 1: {  // truncate near a structural offset
            uint64_t p = l.points[in.ConsumeIntegralInRange<size_t>(0, l.points.size() - 1)];
            int64_t delta = in.ConsumeIntegralInRange<int64_t>(-64, 64);
            uint64_t at = uint64_t(std::max<int64_t>(0, int64_t(p) + delta));
            if (at < f.size()) f.resize(at);
            break;
        }
        case 2:  // a byte anywhere
            f[in.ConsumeIntegralInRange<size_t>(0, f.size() - 1)] = in.ConsumeIntegral<uint8_t>();
            break;
        case 3:  // an ELF header field
            put(f, in.ConsumeIntegralInRange<uint64_t>(0, sizeof(Elf64_Ehdr) - 1), pick_value(in, f), width);
            break;
        case 4:  // a program header field
            if (l.phnum)
                put(f, l.phoff + in.ConsumeIntegralInRange<unsigned>(0, l.phnum - 1) * sizeof(Elf64_Phdr) +
                           8 * in.ConsumeIntegralInRange<unsigned>(0, 6),
                    pick_value(in, f), width);
            break;
        case 5:  // a section header field
            if (l.shnum)
                put(f, l.shoff + in.ConsumeIntegralInRange<unsigned>(0, l.shnum - 1) * sizeof(Elf64_Shdr) +
                           8 * in.ConsumeIntegralInRange<unsigned>(0, 7),
                    pick_value(in, f), width);
            break;
        case 6:  // a dynamic entry (tag or value)
            if (l.dynnum)
                put(f, l.dyn + in.ConsumeIntegralInRange<unsigned>(0, l.dynnum - 1) * sizeof(Elf64_Dyn) +
                           8 * in.ConsumeIntegralInRange<unsigned>(0, 1),
                    pick_value(in, f), width);
            break;
        default: {  // flip bits in a run
            size_t at = in.ConsumeIntegralInRange<size_t>(0, f.size() - 1);
            size_t n = in.ConsumeIntegralInRange<size_t>(1, 16);
            uint8_t mask = in.ConsumeIntegral<uint8_t>() | 1;
            for (size_t i = at; i < std::min(f.size(), at + n); ++i) f[i] ^= mask;
            break;
        }
        }
    }
    // The machine code stays as built: chring does not read it (it can only
    // check that a code address is executable), and edited instructions
    // that run would make any fault after them, in chring too, the plugin's.
    for (const auto &r : l.code)
        for (uint64_t i = r.first; i < r.second && i < f.size(); ++i) f[i] = g_base[i];
    return f;
}

// Whether byte i of the dynamic section is the value of a DT_INIT or
// DT_FINI entry whose tag is unchanged: a code address, which chring can
// only check to be executable; moved elsewhere in the plugin's code, it
// runs that code (the plugin's own, as an edit of the code itself would).
bool code_address_value(const std::vector<uint8_t> &f, uint64_t i) {
    const Layout &l = g_layout;
    const uint64_t entry = l.dyn + (i - l.dyn) / sizeof(Elf64_Dyn) * sizeof(Elf64_Dyn);
    if (i < entry + offsetof(Elf64_Dyn, d_un)) return false;
    Elf64_Sxword base_tag, tag;
    std::memcpy(&base_tag, &g_base[entry], sizeof base_tag);
    std::memcpy(&tag, &f[entry], sizeof tag);
    return tag == base_tag && (tag == DT_INIT || tag == DT_FINI);
}

// Whether byte i of the program headers lies in the p_filesz of a PT_LOAD
// whose value the edits made smaller: the segment's tail then reads as
// zeros, as if those data bytes had been edited (the plugin's constructors
// run on them), which is no structure chring could judge.
bool shrunk_file_size(const std::vector<uint8_t> &f, uint64_t i) {
    const Layout &l = g_layout;
    const uint64_t header = l.phoff + (i - l.phoff) / sizeof(Elf64_Phdr) * sizeof(Elf64_Phdr);
    const uint64_t field = header + offsetof(Elf64_Phdr, p_filesz);
    if (i < field || i >= field + sizeof(Elf64_Xword) || header + sizeof(Elf64_Phdr) > f.size()) return false;
    Elf64_Phdr base, now;
    std::memcpy(&base, &g_base[header], sizeof base);
    std::memcpy(&now, &f[header], sizeof now);
    return base.p_type == PT_LOAD && now.p_type == PT_LOAD && now.p_filesz < base.p_filesz;
}

// Whether the edits reached what chring validates before dlopen (the ELF
// header, the program headers, the dynamic section, and the file's size
// against its PT_LOAD segments: src/plugin/elf_check.cpp), rather than
// only the contents of the tables and code the segments hold.
bool structural_edit(const std::vector<uint8_t> &f) {
    const Layout &l = g_layout;
    if (f.size() < l.loaded_end) return true;
    const uint64_t dyn_end = l.dyn + uint64_t(l.dynnum) * sizeof(Elf64_Dyn);
    const uint64_t ranges[][2] = {{0, sizeof(Elf64_Ehdr)},
                                  {l.phoff, l.phoff + uint64_t(l.phnum) * sizeof(Elf64_Phdr)},
                                  {l.dyn, dyn_end}};
    for (const auto &r : ranges)
        for (uint64_t i = r[0]; i < r[1] && i < f.size(); ++i)
            if (f[i] != g_base[i] &&
                !(r[0] == l.phoff && shrunk_file_size(f, i)) &&
                !(r[0] == l.dyn && dyn_end <= f.size() && code_address_value(f, i)))
                return true;
    return false;
}

void write_file(const std::vector<uint8_t> &f) {
    int fd = open(g_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || (f.size() && write(fd, f.data(), f.size()) != ssize_t(f.size())) || fchmod(fd, 0644) != 0) {
        std::perror("plugin_elf: writing the plugin");
        std::abort();
    }
    close(fd);
}

// What any loader of the file does: open it, look up the entry point.
void dlopen_alone() {
    g_shared->entry_offset = -1;
    void *h = dlopen(g_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    void *entry = h ? dlsym(h, CHR_PLUGIN_ENTRY_SYMBOL) : nullptr;
    Dl_info info;
    g_shared->dl_ok = entry != nullptr;
    if (entry && dladdr(entry, &info) && info.dli_fbase)
        g_shared->entry_offset = static_cast<char *>(entry) - static_cast<char *>(info.dli_fbase);
}

// Whether dlopen alone survives the file with its structural edits kept and
// every other byte put back: then the crash needs the edits of contents
// (code, data, table entries), which chring does not judge, and a structural
// edit that came with them (one the loader ignores) is beside the point.
bool structure_alone_survives(const std::vector<uint8_t> &file) {
    const Layout &l = g_layout;
    std::vector<uint8_t> f = file;
    const uint64_t dyn_end = l.dyn + uint64_t(l.dynnum) * sizeof(Elf64_Dyn);
    const uint64_t phdr_end = l.phoff + uint64_t(l.phnum) * sizeof(Elf64_Phdr);
    for (uint64_t i = 0; i < f.size() && i < g_base.size(); ++i) {
        const bool structure = i < sizeof(Elf64_Ehdr) || (i >= l.phoff && i < phdr_end) || (i >= l.dyn && i < dyn_end);
        if (!structure) f[i] = g_base[i];
    }
    write_file(f);
    return in_child(dlopen_alone) == kDone;
}

bool documented_status(int st) {
    switch (st) {
    case CHR_OK: case CHR_EINVAL: case CHR_ENOMEM: case CHR_EEXIST: case CHR_EPLUGIN_NOFILE:
    case CHR_EPLUGIN_NOTSO: case CHR_EPLUGIN_SYMBOL: case CHR_EPLUGIN_ABI: case CHR_EPLUGIN_DESC:
        return true;
    default: return false;
    }
}

void report(const char *what, size_t size) {
    std::fprintf(stderr, "plugin_elf: finding: %s (file of %zu bytes; signal %d)\n  frames:", what, size,
                 g_shared->signal);
    for (int i = 0; i < g_shared->frames; ++i) {
        Dl_info info;
        if (dladdr(g_shared->frame[i], &info) && info.dli_fname)
            std::fprintf(stderr, " %s(%s)", std::strrchr(info.dli_fname, '/') ? std::strrchr(info.dli_fname, '/') + 1 : info.dli_fname,
                         info.dli_sname ? info.dli_sname : "?");
        else
            std::fprintf(stderr, " %p", g_shared->frame[i]);
    }
    std::fprintf(stderr, "\n");
}

void cleanup() {
    unlink(g_path.c_str());
    rmdir(g_dir.c_str());
    std::fprintf(stderr,
                 "plugin_elf: %lu files crashed in the plugin's own code, %lu that crash the dynamic loader (dlopen "
                 "alone) were refused cleanly, %lu with corrupted table contents crashed it (dlopen alone too)\n",
                 g_plugin_crashes, g_refused_unsurvivable, g_content_crashes);
}

// The coverage counters of this executable (chring's core is linked in):
// section __sancov_cntrs, found in our own section headers. (Naming the
// linker's __start___sancov_cntrs instead keeps libFuzzer from registering
// the counters at all.)
void find_counters() {
    FILE *f = std::fopen("/proc/self/exe", "rb");
    Dl_info self;
    if (!f || !dladdr(reinterpret_cast<void *>(&find_counters), &self)) return;
    Elf64_Ehdr eh;
    std::vector<Elf64_Shdr> sh;
    if (std::fread(&eh, sizeof eh, 1, f) == 1 && eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum) {
        sh.resize(eh.e_shnum);
        if (std::fseek(f, long(eh.e_shoff), SEEK_SET) != 0 || std::fread(sh.data(), sizeof(Elf64_Shdr), sh.size(), f) != sh.size())
            sh.clear();
    }
    if (!sh.empty()) {
        const Elf64_Shdr &strs = sh[eh.e_shstrndx];
        std::vector<char> names(strs.sh_size + 1, 0);
        if (std::fseek(f, long(strs.sh_offset), SEEK_SET) == 0 && std::fread(names.data(), 1, strs.sh_size, f) == strs.sh_size)
            for (const Elf64_Shdr &s : sh)
                if (s.sh_name < strs.sh_size && std::strcmp(&names[s.sh_name], "__sancov_cntrs") == 0) {
                    g_counters_start = static_cast<uint8_t *>(self.dli_fbase) + s.sh_addr;
                    g_cov_size = s.sh_size;
                }
    }
    std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    setenv("CHRING_PLUGIN_PATH", "", 1);  // children load only the file under test
    FILE *f = std::fopen(CHR_FUZZ_ELF_PLUGIN, "rb");
    if (!f) {
        std::perror("plugin_elf: " CHR_FUZZ_ELF_PLUGIN);
        std::abort();
    }
    int c;
    while ((c = std::fgetc(f)) != EOF) g_base.push_back(uint8_t(c));
    std::fclose(f);
    read_layout();
    if (g_layout.points.empty()) {
        std::fprintf(stderr, "plugin_elf: %s is not a 64-bit ELF file\n", CHR_FUZZ_ELF_PLUGIN);
        std::abort();
    }
    // A directory only we can write (the loader may refuse others' files).
    g_dir = std::string(CHR_FUZZ_TMP_PARENT) + "/elf-" + std::to_string(getpid());
    if (mkdir(g_dir.c_str(), 0755) != 0 || chmod(g_dir.c_str(), 0755) != 0) {
        std::perror("plugin_elf: mkdir");
        std::abort();
    }
    g_path = g_dir + "/chring-fuzzed.so";
    std::atexit(cleanup);
    find_counters();
    void *mem = mmap(nullptr, sizeof(Shared) + g_cov_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("plugin_elf: mmap");
        std::abort();
    }
    g_shared = static_cast<Shared *>(mem);
    g_cov = static_cast<uint8_t *>(mem) + sizeof(Shared);
    write_file(g_base);
    if (in_child(dlopen_alone) != kDone || g_shared->entry_offset < 0) {
        std::fprintf(stderr, "plugin_elf: the unedited %s does not load\n", CHR_FUZZ_ELF_PLUGIN);
        std::abort();
    }
    g_base_entry_offset = g_shared->entry_offset;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzedDataProvider in(data, size);
    std::vector<uint8_t> file = mutate(in);
    write_file(file);
    if (const char *keep = std::getenv("CHR_FUZZ_ELF_KEEP")) {  // reproducing: the corrupted file
        FILE *out = std::fopen(keep, "wb");
        if (out) {
            std::fwrite(file.data(), 1, file.size(), out);
            std::fclose(out);
        }
    }

    // Child 1: the dynamic loader alone.
    int raw = in_child(dlopen_alone);
    const bool survives = raw == kDone;
    const bool entry_moved = survives && g_shared->entry_offset != g_base_entry_offset;

    // Child 2: chring's loader, its counters copied back.
    if (g_cov_size) std::memset(g_cov, 0, g_cov_size);
    int load = in_child([] {
        size_t loaded = 0;
        g_shared->status = chr_plugin_load(g_path.c_str(), &loaded);
        std::snprintf(g_shared->message, sizeof g_shared->message, "%s", chr_last_error());
        copy_counters();
    });
    for (size_t i = 0; i < g_cov_size; ++i)
        if (g_cov[i] > g_counters_start[i]) g_counters_start[i] = g_cov[i];

    if (load == kDone) {
        int st = g_shared->status;
        if (!survives) ++g_refused_unsurvivable;
        if (!documented_status(st) || (st != CHR_OK && g_shared->message[0] == 0)) {
            std::fprintf(stderr, "plugin_elf: finding: chr_plugin_load returned %d ('%s'), not a documented status\n",
                         st, g_shared->message);
            std::abort();
        }
        return 0;
    }
    if (load > 255 && g_shared->signal) load = kDone + 1;  // the handler faulted after recording the crash
    if (load != kDone + 1 && load == raw) {
        // The process ended the same way as with dlopen alone: ld.so itself
        // (_dl_fatal_printf exits 127), or, exit code 1, a sanitizer report
        // from the file's own constructors (an instrumented plugin registering
        // globals through an edited relocation); dlopen alone runs no chring
        // code. chring handed over a file it should have refused, unless only
        // table contents were edited.
        if (!structural_edit(file) || structure_alone_survives(file)) {
            ++g_content_crashes;
            return 0;
        }
        std::fprintf(stderr, "plugin_elf: finding: chr_plugin_load passed a file on which the dynamic loader "
                             "ends the process (status %d%s), as dlopen alone does\n", load,
                     load == kHog ? ": over 1 GiB of memory" : "");
        std::abort();
    }
    if (load != kDone + 1) {  // a sanitizer report (printed by the child, exit code 1) or a kill
        std::fprintf(stderr, "plugin_elf: finding: the chr_plugin_load child ended with %s %d\n",
                     load > 255 ? "signal" : "exit code", load > 255 ? load - 256 : load);
        std::abort();
    }
    Where w = classify(*g_shared);
    // An edited symbol value or relocation moved the entry point to other
    // code of the plugin, which chr_plugin_load then called: what that code
    // leaves behind (registers the calling convention says it keeps, the
    // stack) is the plugin's doing, wherever the fault comes after it.
    if (w == Where::Chring && entry_moved) w = Where::Plugin;
    if (w == Where::Chring) {
        report("chr_plugin_load crashed in chring's code", file.size());
        std::abort();
    }
    if (w == Where::Plugin) {  // the corrupted plugin's own code (its entry point) crashed
        ++g_plugin_crashes;
        return 0;
    }
    if (survives) {
        report("chr_plugin_load crashed in the dynamic loader on a file that dlopen and dlsym alone survive", file.size());
        std::abort();
    }
    // chring handed ld.so a file ld.so cannot survive: a finding when the
    // edits reached what chring validates. The contents of relocation,
    // symbol, version and hash tables are not validated (ld.so trusts
    // them, and so does every program that dlopens the file): a crash on
    // those alone, which dlopen alone shares, is counted.
    if (!structural_edit(file) || structure_alone_survives(file)) {
        ++g_content_crashes;
        return 0;
    }
    report("chr_plugin_load passed a file that crashes the dynamic loader", file.size());
    std::abort();
}
