/*
 * chring_plugin.h — the hasher ABI: what a chring hash plugin exports.
 *
 * A hasher turns bytes into a 64-bit ring position. The ring calls it for
 * every key it looks up and for every token it places (`id "#" i`).
 *
 * A plugin is a shared object that includes only this header (it does not
 * link libchring) and exports one C function, CHR_PLUGIN_ENTRY_SYMBOL,
 * returning a table of pointers to hasher descriptors:
 *
 *     #include <chring_plugin.h>
 *
 *     static uint64_t my_hash(const void *data, size_t len, uint64_t seed)
 *     { ... }
 *
 *     static const chr_hasher my_hasher = {
 *         CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher),
 *         "myhash", "my 64-bit hash", my_hash, 0, NULL, 0
 *     };
 *     static const chr_hasher *const my_table[] = { &my_hasher };
 *
 *     CHR_PLUGIN_DEFINE(my_table)
 *
 * The same descriptor type is accepted in-process by chr_hasher_register()
 * (chring.h), which is how the built-in hashers are installed too.
 *
 * Contract for every function a descriptor points to:
 *  - pure: the same (data, len, seed) gives the same result, on every
 *    platform, for the life of the process (rings persist its outputs);
 *  - thread-safe and reentrant: many threads call it at once, with no lock;
 *  - `data` may be NULL only when `len` is 0; it must not be read past `len`;
 *  - it never fails, never allocates per call on the hot path, never throws
 *    (a C++ plugin wraps its body in noexcept).
 *
 * Versioning: a descriptor starts with `abi_version` and `struct_size`.
 * Fields are only ever appended; the loader accepts a descriptor whose
 * `struct_size` covers at least the version-1 fields and whose
 * `abi_version` is between 1 and CHR_PLUGIN_ABI_VERSION.
 */
#ifndef CHRING_PLUGIN_H
#define CHRING_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The plugin ABI this header describes. Bumped only on an incompatible change. */
#define CHR_PLUGIN_ABI_VERSION 1

/** The name of the one symbol every plugin exports (see CHR_PLUGIN_DEFINE). */
#define CHR_PLUGIN_ENTRY_SYMBOL "chr_plugin_hashers"

/** Longest hasher name accepted, in bytes, without the terminating NUL. */
#define CHR_HASHER_NAME_MAX 63

/** Longest hasher description accepted, in bytes, without the terminating NUL. */
#define CHR_HASHER_DESCRIPTION_MAX 1023

/** Largest full digest a hasher may declare, in bytes (SHA-512 fits). */
#define CHR_DIGEST_MAX 64

/**
 * A seeded 64-bit hash. The ring's seed (chr_options.seed) is passed
 * through unchanged; a hasher with no native seed must still mix it in so
 * that different seeds give independent rings.
 */
typedef uint64_t (*chr_hash64_fn)(const void *data, size_t len, uint64_t seed);

/**
 * Optional full digest (e.g. the 16 bytes of MD5, the 4 bytes of CRC-32 as
 * a big-endian word), written to `out`, which has room for `digest_size`
 * bytes. Used by the compatibility placements, which need the exact bytes
 * other systems derive their points from.
 */
typedef void (*chr_digest_fn)(const void *data, size_t len, unsigned char *out);

/**
 * One hasher. All pointers must stay valid while the plugin is loaded. In a
 * plugin, the descriptor, its strings and the table pointing to it must lie
 * in the plugin's own readable segments (static data), each string ending
 * with a NUL inside its segment, and its functions in the plugin's own code;
 * the loader checks this and refuses the plugin (CHR_EPLUGIN_DESC) otherwise.
 */
typedef struct chr_hasher {
    uint32_t abi_version;      /**< CHR_PLUGIN_ABI_VERSION the plugin was built with */
    uint32_t struct_size;      /**< sizeof(chr_hasher) as the plugin saw it */
    const char *name;          /**< unique, 1..CHR_HASHER_NAME_MAX bytes of [a-z0-9_.-] */
    const char *description;   /**< one line for listings, at most CHR_HASHER_DESCRIPTION_MAX bytes; may be NULL */
    chr_hash64_fn hash64;      /**< required */
    uint32_t digest_size;      /**< 0 when there is no digest, else 1..CHR_DIGEST_MAX */
    chr_digest_fn digest;      /**< required when digest_size > 0, else NULL */
    uint32_t flags;            /**< reserved, must be 0 */
} chr_hasher;

/**
 * The entry point: returns an array of `*count` descriptor pointers that
 * stays valid while the plugin is loaded. Called once per load, never
 * concurrently with another plugin's; a refused plugin is unloaded right
 * after, so the entry point must not register callbacks or destructors.
 */
typedef const chr_hasher *const *(*chr_plugin_entry_fn)(uint32_t *count);

#if defined(_WIN32)
#define CHR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define CHR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point has C linkage in a C++ plugin too: the macro expands in
 * the plugin's own file, outside this header's extern "C" block, and the
 * loader looks the symbol up by its plain name. */
#ifdef __cplusplus
#define CHR_PLUGIN_LINKAGE extern "C" CHR_PLUGIN_EXPORT
#else
#define CHR_PLUGIN_LINKAGE CHR_PLUGIN_EXPORT
#endif

/**
 * Defines the entry point over a static array of descriptor pointers.
 * Use it once per plugin, at file scope.
 */
#define CHR_PLUGIN_DEFINE(table)                                             \
    CHR_PLUGIN_LINKAGE const chr_hasher *const *chr_plugin_hashers(uint32_t *count); \
    CHR_PLUGIN_LINKAGE const chr_hasher *const *chr_plugin_hashers(uint32_t *count) \
    {                                                                        \
        *count = (uint32_t)(sizeof(table) / sizeof((table)[0]));             \
        return (table);                                                      \
    }

#ifdef __cplusplus
}
#endif

#endif /* CHRING_PLUGIN_H */
