/* The table the plugin_descriptors harness fills in descriptor_fixture.so:
 * every descriptor, name and description lives in the plugin's own
 * (writable) data, so pointers into it are pointers into the plugin. */
#ifndef CHR_FUZZ_DESCRIPTOR_FIXTURE_H
#define CHR_FUZZ_DESCRIPTOR_FIXTURE_H

#include <chring_plugin.h>

#define FZ_SLOTS 8      /* distinct descriptors */
#define FZ_TABLE 256    /* table entries: the loader's limit */
#define FZ_NAME 128     /* name buffer; the harness keeps its last byte NUL */
#define FZ_DESCRIPTION 256

struct fz_slot {
    chr_hasher desc;
    unsigned char tail[64]; /* room for a struct_size larger than chr_hasher */
};

struct fz_area {
    const chr_hasher *table[FZ_TABLE];
    uint32_t count;
    uint32_t null_table; /* the entry point returns NULL */
    const void *returned; /* if not NULL, the entry point returns this instead of table */
    struct fz_slot slots[FZ_SLOTS];
    char names[FZ_SLOTS][FZ_NAME];
    char descriptions[FZ_SLOTS][FZ_DESCRIPTION];
};

/* What the fixture exports besides the entry point. */
#define FZ_AREA_SYMBOL "fuzz_fixture_area"
#define FZ_HASH_A_SYMBOL "fuzz_fixture_hash_a"
#define FZ_HASH_B_SYMBOL "fuzz_fixture_hash_b"
#define FZ_DIGEST4_SYMBOL "fuzz_fixture_digest4"
#define FZ_DIGEST16_SYMBOL "fuzz_fixture_digest16"

#endif
