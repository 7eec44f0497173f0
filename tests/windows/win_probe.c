/*
 * win_probe: the program tests/windows/check_windows.py runs under Wine, in
 * directories it lays out (chring.dll and plugins copied beside it, plugin
 * files with the access lists under test). For each argument:
 *   NAME       creates a ring with hasher NAME and looks a key up;
 *   @PATH      loads the plugin file PATH with chr_plugin_load;
 * and prints one line each,
 *   ok <arg> <hasher origin, or the count of hashers loaded>
 *   error <arg> <status> <chr_last_error()>
 * Exit status 0.
 */
#include <stdio.h>
#include <string.h>

#include <chring.h>

static void probe_hasher(const char *name) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = name;
    chr_ring *ring = NULL;
    chr_status st = chr_ring_new(&opts, &ring);
    chr_node_ref owner;
    if (st == CHR_OK) st = chr_ring_add(ring, "a", 1, 1, NULL, 0, 0);
    if (st == CHR_OK) st = chr_ring_lookup(ring, "k", 1, &owner);
    if (st != CHR_OK) {
        printf("error %s %d %s\n", name, (int)st, chr_last_error());
    } else {
        chr_hasher_info info[64];
        size_t n = 0;
        const char *origin = "?";
        if (chr_hasher_list(NULL, info, 64, &n) == CHR_OK)
            for (size_t i = 0; i < n; ++i)
                if (strcmp(info[i].name, name) == 0) origin = info[i].origin;
        printf("ok %s %s\n", name, origin);
    }
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] == '@') {
            size_t loaded = 0;
            chr_status st = chr_plugin_load(argv[i] + 1, &loaded);
            if (st == CHR_OK)
                printf("ok %s %zu\n", argv[i], loaded);
            else
                printf("error %s %d %s\n", argv[i], (int)st, chr_last_error());
        } else {
            probe_hasher(argv[i]);
        }
    }
    return 0;
}
