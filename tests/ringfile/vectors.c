#include "vectors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keys routed in every vector: plain, empty, UTF-8, binary. */
static const struct {
    const char *bytes;
    size_t len;
} keys[] = {
    {"user:1", 6}, {"user:2", 6}, {"user:3", 6}, {"user:42", 7}, {"session/9f8e7d", 14},
    {"", 0}, {"caf\xC3\xA9", 5}, {"\x00\xFF key", 6}, {"a", 1}, {"zzzzzzzzzzzzzzzzzzzz", 20},
    {"10.0.0.1", 8}, {"/index.html", 11},
};

char *vectors_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Printable ASCII other than space and '%' as is, every other byte %XX,
 * the empty string as "-":
 * a plain, unambiguous spelling for the key column (not the ring file's
 * UTF-8-preserving escapes, so that a reader needs no UTF-8 decoder). */
static void put_escaped(char **out, size_t *len, size_t *cap, const void *bytes, size_t n) {
    const unsigned char *b = bytes;
    if (n == 0) {
        bytes = "-"; /* the empty key; no key of the list is "-" itself */
        b = bytes;
        n = 1;
    }
    for (size_t i = 0; i < n; ++i) {
        if (*len + 4 > *cap) {
            *cap = *cap * 2 + 64;
            *out = realloc(*out, *cap);
        }
        if (b[i] > 0x20 && b[i] < 0x7f && b[i] != '%')
            (*out)[(*len)++] = (char)b[i];
        else
            *len += (size_t)sprintf(*out + *len, "%%%02X", b[i]);
    }
}

static void put(char **out, size_t *len, size_t *cap, const char *text) {
    size_t n = strlen(text);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *out = realloc(*out, *cap);
    }
    memcpy(*out + *len, text, n + 1);
    *len += n;
}

static char *export_as(const char *name, const char *text, size_t len, uint32_t format,
                       size_t *out_len) {
    chr_ring *ring = NULL;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    if (chr_ring_new_from_text(text, len, name, NULL, &ring, &info) != CHR_OK) return NULL;
    uint32_t flags = format | ((info.flags & CHR_RINGFILE_HAS_REVISION) ? CHR_EXPORT_REVISION : 0);
    size_t need = 0;
    chr_ring_export(ring, flags, info.revision, NULL, 0, &need);
    char *buf = malloc(need + 1);
    if (buf && chr_ring_export(ring, flags, info.revision, buf, need + 1, out_len) != CHR_OK) {
        free(buf);
        buf = NULL;
    }
    chr_ring_free(ring);
    return buf;
}

char *vectors_canonical(const char *name, const char *text, size_t len, size_t *out_len) {
    return export_as(name, text, len, 0, out_len);
}

char *vectors_json(const char *name, const char *text, size_t len) {
    size_t unused;
    return export_as(name, text, len, CHR_EXPORT_JSON, &unused);
}

char *vectors_expect(const char *name, const char *text, size_t len) {
    chr_ring *ring = NULL;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    if (chr_ring_new_from_text(text, len, name, NULL, &ring, &info) != CHR_OK) return NULL;
    size_t canon_len = 0;
    char *canon = vectors_canonical(name, text, len, &canon_len);
    int canonical = canon && canon_len == len && memcmp(canon, text, len) == 0;
    free(canon);

    size_t tokens = 0, olen = 0, cap = 1024;
    chr_ring_token_count(ring, &tokens);
    char *out = malloc(cap), line[128];
    out[0] = '\0';
    put(&out, &olen, &cap, "# known answers for ");
    put(&out, &olen, &cap, name);
    put(&out, &olen, &cap, " (tests/vectors/ring-file/README.md)\n");
    snprintf(line, sizeof line, "fingerprint 0x%016llx\nmembers %u\ntokens %zu\n",
             (unsigned long long)info.fingerprint, info.members, tokens);
    put(&out, &olen, &cap, line);
    if (info.flags & CHR_RINGFILE_HAS_REVISION)
        snprintf(line, sizeof line, "revision %llu\n", (unsigned long long)info.revision);
    else
        snprintf(line, sizeof line, "revision -\n");
    put(&out, &olen, &cap, line);
    put(&out, &olen, &cap, canonical ? "canonical yes\n" : "canonical no\n");
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k) {
        chr_node_ref refs[3];
        size_t n = 0;
        put(&out, &olen, &cap, "key ");
        put_escaped(&out, &olen, &cap, keys[k].bytes, keys[k].len);
        if (chr_ring_replicas(ring, keys[k].bytes, keys[k].len, 3, refs, &n) != CHR_OK) n = 0;
        if (n == 0) put(&out, &olen, &cap, " -");
        for (size_t i = 0; i < n; ++i) {
            put(&out, &olen, &cap, " ");
            put_escaped(&out, &olen, &cap, refs[i].id, refs[i].id_len);
        }
        put(&out, &olen, &cap, "\n");
    }
    chr_ring_free(ring);
    return out;
}
