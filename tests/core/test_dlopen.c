/*
 * libchring loads with dlopen() into a program that does not link it (as
 * LuaJIT's ffi.load, Python's ctypes and nginx's load_module load it): its
 * thread-locals are static TLS (an initial-exec variable marks the library
 * STATIC_TLS), which glibc then takes from a reserve of about 1.6 KB. A
 * library whose thread-locals outgrow it fails here with "cannot allocate
 * memory in static TLS block". Then a failure's record reads back through
 * the loaded copy.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "chring.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBCHRING\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    chr_status (*remove_node)(chr_ring *, const void *, size_t);
    chr_status (*last_error_info)(chr_error_info *);
    *(void **)&remove_node = dlsym(lib, "chr_ring_remove"); /* POSIX's way to a function pointer */
    *(void **)&last_error_info = dlsym(lib, "chr_last_error_info");
    if (!remove_node || !last_error_info) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    chr_error_info info = CHR_ERROR_INFO_INIT;
    if (remove_node(NULL, "a", 1) != CHR_EINVAL || last_error_info(&info) != CHR_OK ||
        info.status != CHR_EINVAL || strcmp(info.function, "chr_ring_remove") != 0) {
        fprintf(stderr, "the loaded library's error record: status %d, function '%s'\n", info.status,
                info.function ? info.function : "(null)");
        return 1;
    }
    printf("loaded with dlopen; %s\n", info.message);
    return 0;
}
