/*
 * The C side of the ring-file cross-language test (ringfile.py):
 *   ringfile_c build SPEC OUTDIR LANG   builds each ring of SPEC by calls and
 *                                       writes OUTDIR/LANG-<n>.txt and .json
 *   ringfile_c load FILE...             prints "<fingerprint> same|differs" per
 *                                       file: its fingerprint, and whether the
 *                                       export of the loaded ring is the file
 * SPEC: "ring <placement> <tokens_per_weight> <seed>" then
 * "node <id hex> <weight> <zone hex or ->" lines; tag = position.
 */
#include <chring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
    fprintf(stderr, "ringfile_c: %s: %s\n", what, chr_last_error());
    exit(1);
}

static size_t unhex(const char *hex, unsigned char *buf)
{
    if (strcmp(hex, "-") == 0) return 0;
    size_t len = strlen(hex) / 2;
    for (size_t i = 0; i < len; ++i) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        buf[i] = (unsigned char)v;
    }
    return len;
}

static char *export_ring(const chr_ring *ring, uint32_t flags, size_t *len)
{
    if (chr_ring_export(ring, flags, 0, NULL, 0, len) != CHR_ERANGE) die("export size");
    char *buf = malloc(*len + 1);
    if (!buf || chr_ring_export(ring, flags, 0, buf, *len + 1, len) != CHR_OK) die("export");
    return buf;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void finish_ring(chr_ring *ring, const char *dir, const char *lang, int n)
{
    if (!ring) return;
    char path[4096];
    size_t len;
    char *text = export_ring(ring, 0, &len);
    snprintf(path, sizeof path, "%s/%s-%d.txt", dir, lang, n);
    write_file(path, text, len);
    free(text);
    text = export_ring(ring, CHR_EXPORT_JSON, &len);
    snprintf(path, sizeof path, "%s/%s-%d.json", dir, lang, n);
    write_file(path, text, len);
    free(text);
    chr_ring_free(ring);
}

static void build(const char *spec, const char *dir, const char *lang)
{
    FILE *in = fopen(spec, "r");
    if (!in) {
        perror(spec);
        exit(1);
    }
    static char line[4096];
    chr_ring *ring = NULL;
    int rings = 0;
    uint64_t tag = 0;
    while (fgets(line, sizeof line, in)) {
        int placement;
        unsigned tpw;
        unsigned long long seed;
        char id_hex[1024], zone_hex[256];
        unsigned weight;
        if (sscanf(line, "ring %d %u %llu", &placement, &tpw, &seed) == 3) {
            if (ring) finish_ring(ring, dir, lang, rings++);
            chr_options o;
            chr_options_init(&o, CHR_OPTIONS_VERSION);
            o.placement = placement;
            o.tokens_per_weight = tpw;
            o.seed = seed;
            if (chr_ring_new(&o, &ring) != CHR_OK) die("chr_ring_new");
            tag = 0;
        } else if (sscanf(line, "node %1023s %u %255s", id_hex, &weight, zone_hex) == 3) {
            unsigned char id[CHR_NODE_ID_MAX], zone[CHR_ZONE_MAX];
            size_t id_len = unhex(id_hex, id), zone_len = unhex(zone_hex, zone);
            if (chr_ring_add(ring, id, id_len, weight, zone, zone_len, tag++) != CHR_OK) die("chr_ring_add");
        }
    }
    finish_ring(ring, dir, lang, rings);
    fclose(in);
}

static void load(const char *path)
{
    chr_ring *ring;
    uint64_t fp;
    if (chr_ring_new_from_file(path, NULL, &ring, NULL) != CHR_OK) die(path);
    if (chr_ring_fingerprint(ring, &fp) != CHR_OK) die("fingerprint");
    size_t len;
    char *text = export_ring(ring, 0, &len);
    FILE *f = fopen(path, "rb");
    char *file = malloc(len + 2);
    size_t got = f ? fread(file, 1, len + 1, f) : 0;
    if (f) fclose(f);
    printf("%016llx %s\n", (unsigned long long)fp,
           got == len && memcmp(file, text, len) == 0 ? "same" : "differs");
    free(file);
    free(text);
    chr_ring_free(ring);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "build") == 0) {
        build(argv[2], argv[3], argv[4]);
    } else if (argc >= 2 && strcmp(argv[1], "load") == 0) {
        for (int i = 2; i < argc; ++i) load(argv[i]);
    } else {
        fprintf(stderr, "usage: ringfile_c build SPEC OUTDIR LANG | load FILE...\n");
        return 2;
    }
    return 0;
}
