/*
 * Writes the cross-language test's input: ring options, a membership of
 * several hundred nodes (ASCII, UTF-8 and binary ids with 0x00 and 0xff,
 * one of the maximum length, weights 0..8) and 100,000 keys (the empty
 * key, short binary keys, random bytes, "user:N" strings). Deterministic:
 * the same file on every run and platform.
 *
 * Format (text, one record per line, byte strings in lowercase hex, "-"
 * for the empty string):
 *   chring-crosslang 1
 *   options <tokens_per_weight> <seed as 16 hex digits>
 *   replicas <n>
 *   nodes <count>
 *   <id> <weight> <zone> <tag>          (count lines)
 *   keys <count>
 *   <key>                               (count lines)
 *
 * Usage: gen_data OUTPUT
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NODES 400
#define KEYS 100000
#define TOKENS_PER_WEIGHT 100
#define SEED 0x9e3779b97f4a7c15ull /* above 2^53: bindings must keep all 64 bits */
#define REPLICAS 4

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

/* splitmix64: a fixed, portable sequence. */
static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void put_hex(FILE *out, const unsigned char *bytes, size_t len)
{
    if (len == 0) {
        fputc('-', out);
        return;
    }
    for (size_t i = 0; i < len; ++i) fprintf(out, "%02x", bytes[i]);
}

static size_t random_bytes(unsigned char *buf, size_t max_len)
{
    size_t len = (size_t)(next_random() % (max_len + 1));
    for (size_t i = 0; i < len; ++i) buf[i] = (unsigned char)next_random();
    return len;
}

/* Node i's id: unique by construction (i is spelled into every form). */
static size_t node_id(int i, unsigned char *buf)
{
    int n;
    if (i == 7) { /* the longest id allowed */
        memset(buf, 'L', 256);
        buf[0] = 0xff;
        return 256;
    }
    switch (i % 4) {
    case 0: n = sprintf((char *)buf, "node-%03d", i); break;
    case 1: n = sprintf((char *)buf, "\xc3\xb1odo-%d-\xc3\xa9", i); break;  /* ñodo-N-é */
    case 2: n = sprintf((char *)buf, "\xe3\x82\xb5\xe3\x83\xbc\xe3\x83\x90%d", i); break; /* サーバN */
    default: {
        buf[0] = 0x00;
        buf[1] = 0xff;
        buf[2] = (unsigned char)(i >> 8);
        buf[3] = (unsigned char)i;
        n = 4 + (int)random_bytes(buf + 4, 12);
    }
    }
    return (size_t)n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "chring-crosslang 1\noptions %d %016llx\nreplicas %d\nnodes %d\n",
            TOKENS_PER_WEIGHT, (unsigned long long)SEED, REPLICAS, NODES);
    unsigned char buf[300];
    for (int i = 0; i < NODES; ++i) {
        size_t len = node_id(i, buf);
        unsigned weight = i % 17 == 0 ? 0 : 1 + (unsigned)(next_random() % 8);
        char zone[8];
        int zone_len = sprintf(zone, "z%d", i % 3);
        put_hex(out, buf, len);
        fprintf(out, " %u ", weight);
        put_hex(out, (const unsigned char *)zone, (size_t)zone_len);
        fprintf(out, " %d\n", i);
    }

    fprintf(out, "keys %d\n", KEYS);
    static const unsigned char fixed[][3] = {{0}, {0}, {0xff}, {0, 0xff, 0}};
    static const size_t fixed_len[] = {0, 1, 1, 3}; /* "", "\0", "\xff", "\0\xff\0" */
    for (int k = 0; k < KEYS; ++k) {
        size_t len;
        if (k < 4) {
            len = fixed_len[k];
            memcpy(buf, fixed[k], len);
        } else if (k % 4 == 0) {
            len = (size_t)sprintf((char *)buf, "user:%d", k);
        } else {
            len = random_bytes(buf, 40);
        }
        put_hex(out, buf, len);
        fputc('\n', out);
    }
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
