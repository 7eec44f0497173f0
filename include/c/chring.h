/*
 * chring.h — consistent hashing ring, C API.
 *
 * A ring maps keys (byte strings) to nodes (servers, shards, backends) so
 * that a change of membership moves only the keys it must: adding node X
 * moves keys only onto X, removing X moves only X's keys, and changing X's
 * weight moves keys only to or from X. Each node places
 * `weight * tokens_per_weight` tokens at H(id "#" i) on a 64-bit circle; a
 * key belongs to the first token at or after H(key), wrapping around.
 *
 * Quick start (error checks shortened):
 *
 *     #include <chring.h>
 *
 *     chr_ring *ring = NULL;
 *     if (chr_ring_new(NULL, &ring) != CHR_OK) die(chr_last_error());
 *     chr_ring_add(ring, "cache-a", 7, 1, NULL, 0, 0);
 *     chr_ring_add(ring, "cache-b", 7, 2, NULL, 0, 1);   // twice the share
 *     chr_node_ref owner;
 *     if (chr_ring_lookup(ring, "user:42", 7, &owner) == CHR_OK)
 *         printf("%.*s\n", (int)owner.id_len, (const char *)owner.id);
 *     chr_ring_free(ring);
 *
 * Build with `pkg-config --cflags --libs chring`.
 *
 * THREADING MODEL
 *   A chr_ring is shared by any number of threads. Readers (lookup,
 *   replicas, counts, fingerprint, snapshot) never take a lock and never
 *   wait: each reads exactly one immutable snapshot, old or new, never a
 *   mix. Writers (add, remove, set_weight, apply) serialize among
 *   themselves on a per-ring mutex, build a new snapshot off to the side
 *   and publish it with one atomic pointer swap. Old snapshots are freed by
 *   epoch-based reclamation once no reader can still hold them
 *   (docs/design/reclamation.md gives the ordering argument: which store and
 *   load pair, who fences, why freeing is safe). The only call that must not race with others on the
 *   same ring is chr_ring_free().
 *
 * ERROR MODEL
 *   Every fallible function returns a chr_status: CHR_OK (0) or a negative
 *   code. On failure a message naming the function and the bad value is
 *   kept per thread (chr_last_error()), and the same failure as data
 *   (chr_last_error_info(): the function, the reason, a ring file's name and
 *   line, the member, the change of a batch); success leaves both
 *   untouched. No
 *   C++ exception crosses this API. Out of memory is CHR_ENOMEM. A failed
 *   update leaves the ring exactly as it was. Ids and names from the
 *   caller appear in messages spelled as the CLI spells ids
 *   (chr_ringfile_escape with CHR_ESCAPE_HIDDEN): printable ASCII and
 *   valid UTF-8 as they are; controls, the C1 and bidirectional controls,
 *   space, '%', a leading '#', U+FEFF and invalid UTF-8 as %XX; at most
 *   their first 64 bytes, then "...".
 *
 * SIZE QUERIES
 *   Calls that fill a caller buffer (chr_ring_nodes, chr_hasher_list,
 *   chr_hasher_digest, chr_ring_export, chr_snapshot_export,
 *   chr_ringfile_escape, chr_ringfile_unescape) take a capacity and report
 *   the size needed. Passing
 *   out = NULL with capacity 0 asks only the size: the call returns
 *   CHR_ERANGE with the size (CHR_OK if it is 0), and, being a question
 *   rather than a failure, leaves chr_last_error() untouched. A real
 *   buffer that is too small is a failure and sets the message.
 *
 * OWNERSHIP MODEL
 *   `_new(&out)` hands you an object to release with its `_free` /
 *   `_release` (both accept NULL). Calls on a ring copy results into caller
 *   memory (chr_node_ref). Borrowed pointers (chr_node_view) come only from
 *   a chr_snapshot and stay valid until that snapshot is released.
 *
 * Keys and node ids are (pointer, length) byte strings, never C strings;
 * any bytes are allowed, including NUL. A NULL pointer is allowed only
 * with length 0.
 */
#ifndef CHRING_H
#define CHRING_H

#include <stddef.h>
#include <stdint.h>

#include "chring_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CHR_API marks every exported function. Define it before including this
 * header to override it (as libgit2's GIT_EXTERN and zstd's ZSTDLIB_API can
 * be). By default: on Windows, __declspec(dllexport) while the library is
 * built (CHR_BUILDING_LIBRARY), nothing for a program linking a static
 * libchring (define CHR_STATIC), else __declspec(dllimport), which MSVC
 * and MinGW consumers of chring.dll want; elsewhere default visibility
 * while building, nothing for consumers. */
#ifndef CHR_API
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(CHR_BUILDING_LIBRARY)
#define CHR_API __declspec(dllexport)
#elif defined(CHR_STATIC)
#define CHR_API
#else
#define CHR_API __declspec(dllimport)
#endif
#elif defined(CHR_BUILDING_LIBRARY)
#define CHR_API __attribute__((visibility("default")))
#else
#define CHR_API
#endif
#endif

/* CHR_DEPRECATED(msg) marks a declaration that a later major version will
 * remove: using it warns with `msg`, which names the replacement. A
 * deprecated declaration stays, working, for at least one minor release
 * before the next major version removes it (docs/compatibility.md,
 * "Deprecation"). Define CHR_NO_DEPRECATED_WARNINGS before including this
 * header to silence the warnings; define CHR_DEPRECATED yourself to
 * replace the macro. Used by no declaration yet. */
#ifndef CHR_DEPRECATED
#if defined(CHR_NO_DEPRECATED_WARNINGS)
#define CHR_DEPRECATED(msg)
#elif defined(__GNUC__) || defined(__clang__)
#define CHR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define CHR_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define CHR_DEPRECATED(msg)
#endif
#endif

/* No function of this API throws: C++ sees each as noexcept. */
#if defined(__cplusplus)
#define CHR_NOEXCEPT noexcept
#else
#define CHR_NOEXCEPT
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define CHR_VERSION_MAJOR 0
#define CHR_VERSION_MINOR 1
#define CHR_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH, for compile-time checks. */
#define CHR_VERSION_NUMBER \
    (CHR_VERSION_MAJOR * 10000 + CHR_VERSION_MINOR * 100 + CHR_VERSION_PATCH)
/** The ABI (soname) version; bumped only on an incompatible change. What a
 * patch, minor or major release may change, how structs grow, deprecation
 * and the symbol versions: docs/compatibility.md. */
#define CHR_ABI_VERSION 1

/**
 * The version of the library actually loaded, as CHR_VERSION_NUMBER.
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API uint32_t chr_version(void) CHR_NOEXCEPT;

/**
 * The version of the library actually loaded, as text "MAJOR.MINOR.PATCH"
 * (for example "0.1.0"), the same version as chr_version().
 * @return a NUL-terminated string, never NULL.
 * Thread-safety: any thread. Ownership: static storage; never free it.
 * Since: 0.1.
 */
CHR_API const char *chr_version_string(void) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/** 0 on success, a negative CHR_E* code otherwise. Values are never reused. */
typedef int chr_status;

#define CHR_OK 0
#define CHR_EINVAL (-1)      /**< bad argument: NULL handle or out pointer, NULL data with length > 0, empty id, unknown operation */
#define CHR_ENOMEM (-2)      /**< an allocation failed; nothing changed */
#define CHR_ERANGE (-3)      /**< a value over a documented limit, or a caller buffer too small (the size needed is reported) */
#define CHR_EEXIST (-4)      /**< the node id (or hasher name) is already present */
#define CHR_ENOENT (-5)      /**< no node with that id */
#define CHR_EEMPTY (-6)      /**< the ring has no node with a token (empty, or every weight is 0) */
#define CHR_EVERSION (-7)    /**< a versioned struct has a version this library does not know */
#define CHR_ENOHASHER (-8)   /**< no hasher of that name is registered or found in a plugin */
#define CHR_ENOTSUP (-9)     /**< a placement mode or option this build does not provide */
#define CHR_EINTERNAL (-10)  /**< a bug in chring: please report the chr_last_error() text */
#define CHR_EPLUGIN_NOFILE (-11)  /**< plugin file missing or unreadable */
#define CHR_EPLUGIN_NOTSO (-12)   /**< plugin file is not a loadable shared object */
#define CHR_EPLUGIN_SYMBOL (-13)  /**< plugin lacks the CHR_PLUGIN_ENTRY_SYMBOL entry point */
#define CHR_EPLUGIN_ABI (-14)     /**< plugin built for an ABI version this library does not accept */
#define CHR_EPLUGIN_DESC (-15)    /**< a hasher descriptor is malformed (size, name, function, digest) */
#define CHR_EPLUGIN_UNTRUSTED (-16) /**< plugin file or directory refused by the trust rules (owner, mode, relative path) */

/**
 * Static English text for a status (never NULL; unknown codes get a
 * generic text). Thread-safety: any thread. Ownership: static storage.
 * Since: 0.1.
 */
CHR_API const char *chr_strerror(chr_status status) CHR_NOEXCEPT;

/**
 * The message of the last failed call made by this thread, naming the
 * function, the bad value and the allowed range; "" if none yet. Never
 * NULL. Kept in a fixed per-thread buffer: valid until this thread's next
 * failing chring call. Successful calls do not change it.
 * Thread-safety: per thread. Since: 0.1.
 */
CHR_API const char *chr_last_error(void) CHR_NOEXCEPT;

#define CHR_ERROR_INFO_VERSION 1

/* chr_error_info.flags: which optional fields the failure set */
#define CHR_ERROR_HAS_SOURCE 0x1u     /**< source: the failure is about a ring file */
#define CHR_ERROR_HAS_LINE 0x2u       /**< line (0 = the file as a whole); set with source, except by chr_ringfile_parse_member */
#define CHR_ERROR_HAS_OTHER_LINE 0x4u /**< other_line: the earlier line the faulty one conflicts with */
#define CHR_ERROR_HAS_MEMBER 0x8u     /**< member, member_len */
#define CHR_ERROR_HAS_CHANGE 0x10u    /**< change_index */

/**
 * The last failure of this thread as data, for callers that act on where a
 * failure is rather than show it: the same failure chr_last_error() words,
 * its parts in fields, so that no caller parses the message. Set `version`
 * (CHR_ERROR_INFO_INIT or chr_error_info_init()) and call
 * chr_last_error_info(); the fields of that version are filled. The
 * optional fields are valid only with their CHR_ERROR_HAS_* flag (else 0 or
 * NULL): which ones a failure sets is said below.
 *
 * A ring file's failure (chr_ring_new_from_*, chr_ring_apply_*,
 * chr_follower_check: malformed, unreadable, refused by the ring or by the
 * options) has source and line
 * (0 for the file as a whole), and: other_line for a duplicate id (the
 * member's first line), a duplicate directive (its first line), a directive
 * after a member (the first member's line) and a %%ring-file after another
 * directive (that directive's line); member for a failure about one member
 * line (its decoded id); change_index when the ring refused the change the
 * line became. chr_ringfile_parse_member's failure has source (its name)
 * but no line, as a line read alone has none, and member as the same
 * line's failure in a file has it. chr_ring_add, chr_ring_remove and
 * chr_ring_set_weight set member; chr_ring_apply and chr_ring_apply2 set
 * change_index for a failure of one change, and member when that change's
 * id is valid.
 */
typedef struct chr_error_info {
    uint32_t version;       /**< in: CHR_ERROR_INFO_VERSION (1..current accepted) */
    chr_status status;      /**< the failure's status; CHR_OK when this thread has had none */
    uint32_t flags;         /**< CHR_ERROR_HAS_* */
    uint32_t line;          /**< the ring file's line at fault; 0 = the file as a whole (or no line) */
    uint32_t other_line;    /**< the earlier line the faulty one conflicts with */
    uint32_t reserved0;     /**< set to 0 */
    uint64_t change_index;  /**< the change at fault: its index in the batch of chr_ring_apply or
                                 chr_ring_apply2, or in the batch a ring file became */
    const char *function;   /**< the chr_* call that failed ("chr_ring_add"); "" if unknown */
    const char *message;    /**< the message, as chr_last_error() */
    const char *reason;     /**< the message without its prefix ("name:line: ", "name: " or
                                 "chr_ring_add: "): what is wrong */
    const char *source;     /**< the ring file's name as given: the path, the name argument,
                                 "<text>"; "" without CHR_ERROR_HAS_SOURCE */
    const void *member;     /**< the member id's bytes (member_len of them, not NUL-terminated) */
    size_t member_len;      /**< 1..CHR_NODE_ID_MAX */
} chr_error_info;

#define CHR_ERROR_INFO_INIT { CHR_ERROR_INFO_VERSION, CHR_OK, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, 0 }

/**
 * Fills `info` with zeros, NULL pointers and `version`, the function twin
 * of CHR_ERROR_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (version not in
 *         1..CHR_ERROR_INFO_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_error_info_init(chr_error_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * The last failure of this thread (see chr_error_info). A thread that has
 * had no failure gets status CHR_OK, flags 0 and "" for every string.
 * Successful calls leave the record as it is, as they leave chr_last_error().
 * @param info  its `version` set by the caller; receives the record
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (info->version not
 *         in 1..CHR_ERROR_INFO_VERSION). These two failures are the only
 *         ones that do not replace the record: it still holds the failure
 *         the caller asked about, and `info` is not written.
 * Thread-safety: per thread. Ownership: the strings and `member` point into
 * fixed per-thread buffers (recording a failure never allocates), valid
 * until this thread's next failing chring call; copy what you keep. As
 * the message keeps at most 511 bytes, source keeps at least its first 175
 * (a longer name may be cut). Since: 0.1.
 */
CHR_API chr_status chr_last_error_info(chr_error_info *info) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Limits                                                                   */
/* ------------------------------------------------------------------------ */

#define CHR_NODE_ID_MAX 256            /**< node id length limit, bytes (1..256) */
#define CHR_ZONE_MAX 64                /**< zone label length limit, bytes (0..64) */
#define CHR_WEIGHT_MAX 1000000u        /**< weight limit (0..1e6; 0 = member without tokens) */
#define CHR_TOKENS_PER_WEIGHT_MAX 65536u /**< tokens_per_weight limit (1..65536) */
#define CHR_TOKENS_MAX (1u << 24)      /**< tokens in one ring, all nodes together (16,777,216) */
#define CHR_NODES_MAX (1u << 20)       /**< members in one ring, weight 0 included */

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Placement: how tokens are derived and keys hashed.
 *
 * CHR_PLACEMENT_NATIVE: tokens H(id "#" i) for i < weight * tokens_per_weight
 * with the ring's hasher and seed; ties ordered by id bytes. Exact minimal
 * disruption, order-independent.
 *
 * The compatibility placements reproduce other systems' key -> server
 * mapping bit for bit, for the same server list and weights. They fix the
 * hasher (leave chr_options.hasher NULL or name the one below), ignore
 * tokens_per_weight and seed, and break ties between equal points by the
 * node's tag, which must be the server's 0-based position in the original
 * configuration list. Node ids are the servers' configuration text.
 *
 * CHR_PLACEMENT_KETAMA: libmemcached MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA
 *   with MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (key and point hash MD5; each
 *   server gets floor(w/W*160/4*n)*4 points in float arithmetic, 4 per MD5
 *   digest of "host-N", or "host:port-N" when the port is not 11211).
 *   Also twemproxy's `distribution: ketama` with `hash: md5`, using the
 *   twemproxy server name as the id. Hasher: "md5".
 *   Not minimal-disruption: a change of membership or weight recomputes
 *   every server's point count (the original does the same).
 * CHR_PLACEMENT_KETAMA_UNWEIGHTED: libmemcached CONSISTENT_KETAMA with every
 *   weight 1 and MEMCACHED_BEHAVIOR_HASH = MD5: 100 points per server, one
 *   per "host[:port]-N", point value and key hash the first little-endian
 *   word of MD5. Weights must be 0 or 1. Hasher: "md5".
 * CHR_PLACEMENT_NGINX: nginx `hash $key consistent;`
 *   (ngx_http_upstream_hash_module): weight * 160 points per server,
 *   chained CRC-32 of host "\0" port and the previous point, duplicates
 *   dropped (the lowest tag keeps the point), key hash CRC-32. Hasher:
 *   "crc32". One node per single-address `server` directive; a `down`
 *   server is weight 0 (no points).
 *
 * Where the placements differ from the originals (docs/compat.md, "Where
 * chring differs"): a weight-0 server has no points, where libmemcached
 * counts it as weight 1; twemproxy hashes a server name ending in :11211,
 * holding brackets or starting with '/' literally, where chring applies
 * libmemcached's host[:port] rule to every id; nginx keeps a down server's
 * points and skips them, and after 21 consecutive down points (or for the
 * empty key) picks by round robin, where the ring simply has no points for
 * the down server and hashes the empty key like any other.
 * docs/compat.md details each algorithm, the source file it was read from
 * and its traps; tests/compat checks each against the real system.
 */
#define CHR_PLACEMENT_NATIVE 0
#define CHR_PLACEMENT_KETAMA 1
#define CHR_PLACEMENT_KETAMA_UNWEIGHTED 2
#define CHR_PLACEMENT_NGINX 3

#define CHR_OPTIONS_VERSION 1
#define CHR_DEFAULT_HASHER "xxh3"
#define CHR_DEFAULT_TOKENS_PER_WEIGHT 160

/**
 * Ring options. Always start from CHR_OPTIONS_INIT or chr_options_init():
 * fields are only appended, and `version` tells the library which exist.
 */
typedef struct chr_options {
    uint32_t version;           /**< CHR_OPTIONS_VERSION (1..current accepted) */
    uint32_t tokens_per_weight; /**< tokens per unit of weight, 1..CHR_TOKENS_PER_WEIGHT_MAX; default 160 */
    uint64_t seed;              /**< passed to the hasher for every key and token; default 0 */
    const char *hasher;         /**< NUL-terminated hasher name; NULL = CHR_DEFAULT_HASHER */
    int32_t placement;          /**< CHR_PLACEMENT_*; default CHR_PLACEMENT_NATIVE */
    uint32_t reserved0;         /**< must be 0 */
    const char *plugin_dir;     /**< extra directory searched for hash plugins (absolute); NULL = none */
} chr_options;

#define CHR_OPTIONS_INIT \
    { CHR_OPTIONS_VERSION, CHR_DEFAULT_TOKENS_PER_WEIGHT, 0, NULL, CHR_PLACEMENT_NATIVE, 0, NULL }

/**
 * Fills `opts` with the defaults of struct version `version`, the function
 * twin of CHR_OPTIONS_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL if opts is NULL; CHR_EVERSION if version is
 *         not in 1..CHR_OPTIONS_VERSION.
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_options_init(chr_options *opts, uint32_t version) CHR_NOEXCEPT;

#define CHR_PLACEMENT_INFO_VERSION 1

/** Set in chr_placement_info.flags: seed and tokens_per_weight change the points. */
#define CHR_PLACEMENT_SEEDED 0x1u

/**
 * What a placement is and what it requires: the one home of the rule
 * "which hasher a placement needs". Set `version` before the call
 * (CHR_PLACEMENT_INFO_INIT or chr_placement_info_init()); the library fills
 * the fields of that version.
 */
typedef struct chr_placement_info {
    uint32_t version;       /**< in: CHR_PLACEMENT_INFO_VERSION (1..current accepted) */
    int32_t mode;           /**< CHR_PLACEMENT_* */
    const char *name;       /**< "native", "ketama", "ketama-unweighted", "nginx" */
    const char *summary;    /**< one line for help texts */
    const char *hasher;     /**< the hasher it is defined with; NULL: any (NULL in
                                 chr_options picks CHR_DEFAULT_HASHER) */
    uint32_t digest_size;   /**< the exact digest size, bytes, it needs of that hasher; 0: none */
    uint32_t flags;         /**< CHR_PLACEMENT_SEEDED, or 0 (seed and tokens_per_weight ignored) */
} chr_placement_info;

#define CHR_PLACEMENT_INFO_INIT { CHR_PLACEMENT_INFO_VERSION, 0, NULL, NULL, NULL, 0, 0 }

/**
 * Fills `info` with the empty description of struct version `version`
 * (`version` set, every other field 0 or NULL), the function twin of
 * CHR_PLACEMENT_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (version not in
 *         1..CHR_PLACEMENT_INFO_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_placement_info_init(chr_placement_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * Describes placement `mode`. Modes are numbered from 0 without gaps: ask
 * 0, 1, 2, ... until CHR_ENOTSUP to list those this library provides.
 * @param mode  CHR_PLACEMENT_*
 * @param out   its `version` set by the caller; receives the description.
 *              The strings are static: valid for the life of the process.
 * @return CHR_OK; CHR_EINVAL (NULL out); CHR_EVERSION (out->version not in
 *         1..CHR_PLACEMENT_INFO_VERSION); CHR_ENOTSUP (no such mode in this
 *         library).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_placement_describe(int32_t mode, chr_placement_info *out) CHR_NOEXCEPT;

/**
 * The mode of the placement called `name` (as chr_placement_info.name,
 * NUL-terminated, exact match).
 * @return CHR_OK; CHR_EINVAL (NULL name or mode); CHR_ENOTSUP (no placement
 *         of that name in this library).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_placement_find(const char *name, int32_t *mode) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Nodes as returned to callers                                             */
/* ------------------------------------------------------------------------ */

/**
 * A copy of one member, filled by calls on a ring. Owns its bytes: keep it
 * as long as you like. Written: every field before `id`; of `id`, the first
 * id_len bytes, and when id_len <= 24 the first 24 bytes (the id, then zero
 * bytes: the copy is one 64-byte line); of `zone`, the first zone_len
 * bytes. The rest of `id` and `zone` is left as the caller had it.
 */
typedef struct chr_node_ref {
    uint64_t tag;                     /**< the caller's tag given at add (e.g. a peer index) */
    double ownership;                 /**< fraction of the 2^64 circle this node owns, 0..1 */
    uint32_t weight;
    uint32_t tokens;                  /**< tokens placed for it (weight * tokens_per_weight) */
    uint32_t index;                   /**< position in the snapshot's node table (ids in byte order) */
    uint32_t id_len;
    uint32_t zone_len;
    uint32_t flags;                   /**< CHR_NODE_* bits */
    unsigned char id[CHR_NODE_ID_MAX];
    unsigned char zone[CHR_ZONE_MAX];
} chr_node_ref;

/**
 * One member as seen through a snapshot: pointers are borrowed from the
 * snapshot and valid until chr_snapshot_release() on it.
 */
typedef struct chr_node_view {
    const unsigned char *id;
    size_t id_len;
    const unsigned char *zone;        /**< never NULL; zone_len may be 0 */
    size_t zone_len;
    uint64_t tag;
    double ownership;
    uint32_t weight;
    uint32_t tokens;
    uint32_t index;                   /**< 0..node_count-1, ids in byte order */
    uint32_t flags;                   /**< CHR_NODE_* bits */
} chr_node_view;

/**
 * chr_node_ref.flags / chr_node_view.flags: the member is marked down and
 * lookups route around it now (the mark is in effect: the ring is not in
 * panic). See "Availability". A list may still hold such a member, after
 * every available one, when the key has no available node left.
 */
#define CHR_NODE_DOWN 0x1u

/* ------------------------------------------------------------------------ */
/* Ring lifecycle                                                           */
/* ------------------------------------------------------------------------ */

/** An opaque, thread-safe, copy-on-write ring. */
typedef struct chr_ring chr_ring;

/**
 * Creates an empty ring.
 * @param opts  options, or NULL for the defaults (xxh3, 160 tokens per
 *              weight, seed 0, native placement). Copied: not kept.
 * @param out   receives the ring; set to NULL on failure.
 * @return CHR_OK; CHR_EINVAL (NULL out, reserved field set, a compatibility
 *         placement with a hasher other than its own: chr_placement_describe
 *         names it); CHR_EVERSION; CHR_ERANGE (tokens_per_weight);
 *         CHR_ENOHASHER (no hasher of that name, or a compatibility
 *         placement's hasher without exactly the digest size it needs);
 *         CHR_ENOTSUP (placement); CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: release with chr_ring_free().
 * Since: 0.1.
 */
CHR_API chr_status chr_ring_new(const chr_options *opts, chr_ring **out) CHR_NOEXCEPT;

/**
 * Frees a ring. NULL is a no-op. No other call on this ring may run
 * concurrently or follow. Snapshots taken from it stay valid until released.
 * Thread-safety: exclusive. Since: 0.1.
 */
CHR_API void chr_ring_free(chr_ring *ring) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Membership changes (writers)                                             */
/* ------------------------------------------------------------------------ */

/**
 * Adds a member. Its tokens are weight * tokens_per_weight positions
 * H(id "#" i); keys move only onto the new node.
 * @param id, id_len     1..CHR_NODE_ID_MAX bytes, unique in the ring
 * @param weight         0..CHR_WEIGHT_MAX; 0 = member without tokens (draining)
 * @param zone, zone_len optional label 0..CHR_ZONE_MAX bytes (NULL, 0 for none)
 * @param tag            any value, returned with the node (e.g. a peer index)
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (id, zone, weight, node or token
 *         totals); CHR_EEXIST; CHR_ENOMEM. On failure the ring is unchanged.
 * Thread-safety: any thread; writers serialize, readers are not blocked.
 * Cost: each call publishes a snapshot. It rewrites only the parts of the
 *       token index the node's tokens fall in (measured at 160,000,
 *       1.6M and 16M tokens: tests/bench/RESULTS.md, bench_scale), and
 *       rebuilds everything when the ring doubles. To build a ring, or to make
 *       several changes, one chr_ring_apply() batch is the way: one
 *       snapshot, one pass.
 * Since: 0.1.
 */
CHR_API chr_status chr_ring_add(chr_ring *ring, const void *id, size_t id_len, uint32_t weight,
                                const void *zone, size_t zone_len, uint64_t tag) CHR_NOEXCEPT;

/**
 * Removes a member; only its keys move.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (id length); CHR_ENOENT; CHR_ENOMEM.
 * Thread-safety: as chr_ring_add. Since: 0.1.
 */
CHR_API chr_status chr_ring_remove(chr_ring *ring, const void *id, size_t id_len) CHR_NOEXCEPT;

/**
 * Changes a member's weight; keys move only to or from it (its token set
 * grows or shrinks as a prefix in i).
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE; CHR_ENOENT; CHR_ENOMEM.
 * Thread-safety: as chr_ring_add. Since: 0.1.
 */
CHR_API chr_status chr_ring_set_weight(chr_ring *ring, const void *id, size_t id_len,
                                       uint32_t weight) CHR_NOEXCEPT;

#define CHR_OP_ADD 1
#define CHR_OP_REMOVE 2
#define CHR_OP_SET_WEIGHT 3

/**
 * One change of a batch. Fields a given op does not use are ignored.
 * Fields are only appended: chr_ring_apply2() takes sizeof(chr_change) as
 * the caller compiled it, so a later version's larger struct keeps working
 * with this library and this one's with a later library.
 */
typedef struct chr_change {
    uint32_t op;          /**< CHR_OP_* */
    uint32_t weight;      /**< ADD, SET_WEIGHT */
    const void *id;
    size_t id_len;
    const void *zone;     /**< ADD */
    size_t zone_len;
    uint64_t tag;         /**< ADD */
} chr_change;

/**
 * Applies `count` changes in order and publishes the result as one
 * snapshot: readers see all of them or none. A later change sees the
 * earlier ones (add then remove of the same id is valid).
 * @param failed_index  if not NULL, receives the index of the change that
 *                      failed (count on success or on a batch-wide error).
 * @return CHR_OK or the first change's error; on error nothing is applied.
 *         CHR_EINVAL also for changes == NULL with count > 0.
 * Thread-safety: as chr_ring_add. Since: 0.1.
 */
CHR_API chr_status chr_ring_apply(chr_ring *ring, const chr_change *changes, size_t count,
                                  size_t *failed_index) CHR_NOEXCEPT;

/**
 * As chr_ring_apply, for an array whose elements are `change_size` bytes:
 * pass sizeof(chr_change). Change i starts at (const char *)changes + i *
 * change_size. A change_size larger than this library's chr_change is
 * accepted when the bytes past it are all zero (fields it does not know,
 * left at their defaults); a nonzero byte there is CHR_ENOTSUP for that
 * change, since the library cannot honour a field it does not have.
 * chr_ring_apply(r, c, n, f) is chr_ring_apply2(r, c, n, sizeof *c, f) for
 * the chr_change of version 0.1 (48 bytes).
 * @param change_size  bytes per element, at least 48 (version 0.1's struct)
 * @return as chr_ring_apply; also CHR_EINVAL for change_size < 48.
 * Thread-safety: as chr_ring_add. Since: 0.1.
 */
CHR_API chr_status chr_ring_apply2(chr_ring *ring, const void *changes, size_t count,
                                   size_t change_size, size_t *failed_index) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Lookups on the ring (readers)                                            */
/* ------------------------------------------------------------------------ */

/**
 * Finds the node that owns `key`.
 * @param out  receives a copy of the owner.
 * @return CHR_OK; CHR_EINVAL; CHR_EEMPTY (no node with tokens); CHR_ENOMEM
 *         (only on a thread's first read, which registers it).
 * Thread-safety: any thread, lock-free, wait-free with respect to writers.
 * Ownership: writes caller memory only. Since: 0.1.
 */
CHR_API chr_status chr_ring_lookup(const chr_ring *ring, const void *key, size_t key_len,
                                   chr_node_ref *out) CHR_NOEXCEPT;

/**
 * Up to `n` distinct nodes for `key`, coordinator first: walks clockwise
 * from the key's successor and skips tokens of nodes already chosen.
 * Weight-0 nodes are never chosen; n is clamped to the number of nodes
 * with tokens.
 * @param out    room for n entries
 * @param count  receives how many were written
 * @return CHR_OK; CHR_EINVAL (n == 0, NULL out or count); CHR_EEMPTY; CHR_ENOMEM.
 * Thread-safety: as chr_ring_lookup. Since: 0.1.
 */
CHR_API chr_status chr_ring_replicas(const chr_ring *ring, const void *key, size_t key_len,
                                     size_t n, chr_node_ref *out, size_t *count) CHR_NOEXCEPT;

/**
 * Counts members (weight 0 included) / tokens of the current snapshot.
 * Thread-safety: as chr_ring_lookup. Since: 0.1.
 */
CHR_API chr_status chr_ring_node_count(const chr_ring *ring, size_t *count) CHR_NOEXCEPT;
CHR_API chr_status chr_ring_token_count(const chr_ring *ring, size_t *count) CHR_NOEXCEPT;

/**
 * Copies every member, ids in byte order, into `out` (room for `capacity`).
 * @param count  receives the number of members; on CHR_ERANGE, the
 *               capacity needed (out NULL with capacity 0 asks without
 *               touching chr_last_error(): see SIZE QUERIES).
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (capacity too small); CHR_ENOMEM.
 * Thread-safety: as chr_ring_lookup. Since: 0.1.
 */
CHR_API chr_status chr_ring_nodes(const chr_ring *ring, chr_node_ref *out, size_t capacity,
                                  size_t *count) CHR_NOEXCEPT;

/**
 * The fraction of the token circle (0..1) that member `id` owns: the sum of
 * the arcs ending at its tokens. Over all members it sums to 1.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (id length); CHR_ENOENT; CHR_ENOMEM.
 * Thread-safety: as chr_ring_lookup. Since: 0.1.
 */
CHR_API chr_status chr_ring_ownership(const chr_ring *ring, const void *id, size_t id_len,
                                      double *fraction) CHR_NOEXCEPT;

/**
 * The fingerprint algorithm of this library (docs/semantics.md,
 * "Fingerprint"): compare fingerprints only between libraries with the same
 * version. Version 2 added the zones, and only for rings where some member
 * has one: a ring without zones fingerprints as in version 1.
 */
#define CHR_FINGERPRINT_VERSION 2

/**
 * A 64-bit digest of the placement options, the sorted token array (value
 * and owner id), the members (id, weight) and their zones. Two rings with
 * equal fingerprints route every key, and every replica list under every
 * replica policy, the same; rings built from the same options and
 * membership have equal fingerprints whatever the order of the calls that
 * built them, on every platform. Tags are metadata and not included. A
 * compatibility placement ignores seed and tokens_per_weight, so rings that
 * differ only in those are the same ring and have equal fingerprints.
 * Thread-safety: as chr_ring_lookup. Since: 0.1 (zones are covered from
 * CHR_FINGERPRINT_VERSION 2 on).
 */
CHR_API chr_status chr_ring_fingerprint(const chr_ring *ring, uint64_t *fingerprint) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Snapshots: many reads against one consistent view                        */
/* ------------------------------------------------------------------------ */

/** An immutable view of a ring at one point in time. */
typedef struct chr_snapshot chr_snapshot;

/**
 * Takes a reference to the ring's current snapshot. It stays valid, and
 * unchanged, until chr_snapshot_release(), even after chr_ring_free().
 * @return CHR_OK; CHR_EINVAL; CHR_ENOMEM (first read on this thread).
 * Thread-safety: any thread; the snapshot itself may be used by many
 * threads at once and released by any. Since: 0.1.
 */
CHR_API chr_status chr_ring_snapshot(const chr_ring *ring, chr_snapshot **out) CHR_NOEXCEPT;

/** Releases a snapshot; NULL is a no-op. Since: 0.1. */
CHR_API void chr_snapshot_release(chr_snapshot *snap) CHR_NOEXCEPT;

/**
 * As chr_ring_lookup, without copying: `out` borrows from the snapshot.
 * Lock-free, allocation-free, no atomic read-modify-write.
 * Since: 0.1.
 */
CHR_API chr_status chr_snapshot_lookup(const chr_snapshot *snap, const void *key, size_t key_len,
                                       chr_node_view *out) CHR_NOEXCEPT;

/**
 * Looks up `n` keys at once, for callers whose per-call cost dominates
 * (FFI). `keys[i]`/`key_lens[i]` is key i; `indices[i]` receives its
 * owner's node index (see chr_snapshot_node()).
 * @return CHR_OK; CHR_EINVAL (NULL arrays with n > 0, NULL key with length);
 *         CHR_EEMPTY. On error `indices` is unspecified.
 * Since: 0.1.
 */
CHR_API chr_status chr_snapshot_lookup_batch(const chr_snapshot *snap, const void *const *keys,
                                             const size_t *key_lens, size_t n, uint32_t *indices) CHR_NOEXCEPT;

/** As chr_ring_replicas, borrowing from the snapshot. Since: 0.1. */
CHR_API chr_status chr_snapshot_replicas(const chr_snapshot *snap, const void *key,
                                         size_t key_len, size_t n, chr_node_view *out,
                                         size_t *count) CHR_NOEXCEPT;

/** Member `index` (0..node_count-1, ids in byte order). CHR_ERANGE past the end. Since: 0.1. */
CHR_API chr_status chr_snapshot_node(const chr_snapshot *snap, size_t index, chr_node_view *out) CHR_NOEXCEPT;

/** Counts and fingerprint of the snapshot, as the ring versions. Since: 0.1. */
CHR_API chr_status chr_snapshot_node_count(const chr_snapshot *snap, size_t *count) CHR_NOEXCEPT;
CHR_API chr_status chr_snapshot_token_count(const chr_snapshot *snap, size_t *count) CHR_NOEXCEPT;
CHR_API chr_status chr_snapshot_fingerprint(const chr_snapshot *snap, uint64_t *fingerprint) CHR_NOEXCEPT;

/**
 * Token `index` of the sorted token array (0..token_count-1): its 64-bit
 * value and its owner's node index. For inspection tools and tests.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (index past the end).
 * Since: 0.1.
 */
CHR_API chr_status chr_snapshot_token(const chr_snapshot *snap, size_t index, uint64_t *value,
                                      uint32_t *node_index) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Zone-aware replicas                                                      */
/* ------------------------------------------------------------------------ */

/*
 * A replica policy orders the same clockwise walk differently. Every policy
 * walks the tokens clockwise from the key's successor and takes each node
 * the first time it meets it (the walk of chr_ring_replicas); they differ in
 * which of those nodes are kept and in what order. A node's zone is its
 * label bytes (chr_ring_add); every node with an empty zone is in one shared
 * zone. "Live zones" are the zones holding a node with tokens.
 *
 * CHR_REPLICAS_NODES (0, the default): the first n nodes of the walk, as
 *   chr_ring_replicas. Zones are ignored.
 * CHR_REPLICAS_ZONES_FIRST (1): the nodes that are the first of their zone
 *   in walk order come first, in walk order, then the other nodes in walk
 *   order. So the first min(n, live zones) replicas are in distinct zones,
 *   the coordinator (replica 0) is the key's owner (chr_ring_lookup),
 *   replicas(n) is a prefix of replicas(n + 1) (a client failing over along
 *   the list never revisits a node), and adding or removing a node changes
 *   only the lists that contain it (before or after the change).
 * CHR_REPLICAS_NTS (2): the set of CHR_REPLICAS_ZONES_FIRST, in walk order:
 *   the replicas Cassandra's NetworkTopologyStrategy chooses for one data
 *   centre whose racks are the zones, in the order it lists them (a node of
 *   an already seen zone is taken while more than one node per zone is
 *   needed to reach n, i.e. while n exceeds the live zones). Not a prefix
 *   order: replicas(n) and replicas(n + 1) may order the same nodes
 *   differently.
 *
 * Policies are numbered from 0 without gaps: ask chr_replica_policy_name()
 * for 0, 1, 2, ... until CHR_ENOTSUP to list those this library provides.
 *
 * Cost: the walk goes on until it has the nodes it needs, so under a zone
 * policy a key whose zones are not all near its successor walks further
 * than CHR_REPLICAS_NODES does (up to every token when a zone is small).
 * Memory: no allocation for n <= 32, or when the members plus the distinct
 * zone labels number at most 65,536 (a bitmap on the stack); beyond, a
 * per-thread table is sized once per thread (as chr_ring_replicas does past
 * 65,536 members).
 */
#define CHR_REPLICAS_NODES 0
#define CHR_REPLICAS_ZONES_FIRST 1
#define CHR_REPLICAS_NTS 2

/**
 * The name of replica policy `policy`: "nodes", "zones-first", "nts".
 * @param name  receives a static NUL-terminated string (valid for the life
 *              of the process)
 * @return CHR_OK; CHR_EINVAL (NULL name); CHR_ENOTSUP (no such policy in
 *         this library).
 * Thread-safety: any thread. Ownership: static storage. Since: 0.1.
 */
CHR_API chr_status chr_replica_policy_name(int32_t policy, const char **name) CHR_NOEXCEPT;

/**
 * The policy called `name` (as chr_replica_policy_name, NUL-terminated,
 * exact match).
 * @return CHR_OK; CHR_EINVAL (NULL name or policy); CHR_ENOTSUP (no policy
 *         of that name).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_replica_policy_find(const char *name, int32_t *policy) CHR_NOEXCEPT;

/**
 * As chr_ring_replicas, under replica policy `policy` (CHR_REPLICAS_*);
 * CHR_REPLICAS_NODES gives exactly chr_ring_replicas' lists.
 * @param n      clamped to the number of nodes with tokens
 * @param out    room for n entries
 * @param count  receives how many were written
 * @return CHR_OK; CHR_EINVAL (n == 0, NULL out or count); CHR_ENOTSUP
 *         (unknown policy); CHR_EEMPTY; CHR_ENOMEM (a thread's first read,
 *         or its first large walk: see "Memory" above).
 * Thread-safety: as chr_ring_lookup. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_ring_replicas_policy(const chr_ring *ring, const void *key, size_t key_len,
                                            int32_t policy, size_t n, chr_node_ref *out,
                                            size_t *count) CHR_NOEXCEPT;

/** As chr_ring_replicas_policy, borrowing from the snapshot. Since: 0.1. */
CHR_API chr_status chr_snapshot_replicas_policy(const chr_snapshot *snap, const void *key,
                                                size_t key_len, int32_t policy, size_t n,
                                                chr_node_view *out, size_t *count) CHR_NOEXCEPT;

/**
 * Each member's replica share: the fraction of the key space (0..1) for
 * which it is among the first n replicas under `policy`, exact from the
 * token arcs (every key of an arc has the same list), not sampled.
 * shares[i] is member i's (node index order, as chr_snapshot_node); they
 * sum to min(n, nodes with tokens). Under CHR_REPLICAS_NODES with n = 1
 * a share is the member's ownership. Nodes in a zone holding less weight
 * than the others carry more copies under the zone policies.
 * O(tokens x walk): an inspection call, not for the request path.
 * @param shares  room for `capacity` doubles (NULL with capacity 0 asks
 *                the size: see SIZE QUERIES)
 * @param count   receives the number of members; on CHR_ERANGE the
 *                capacity needed
 * @return CHR_OK; CHR_EINVAL (n == 0, NULL count); CHR_ENOTSUP (policy);
 *         CHR_ERANGE (capacity too small); CHR_ENOMEM. An empty ring is
 *         CHR_OK with every share 0.
 * Thread-safety: any thread (the snapshot is immutable). Ownership:
 * writes caller memory only. Since: 0.1.
 */
CHR_API chr_status chr_snapshot_replica_shares(const chr_snapshot *snap, int32_t policy, size_t n,
                                               double *shares, size_t capacity,
                                               size_t *count) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Bounded loads and availability                                           */
/* ------------------------------------------------------------------------ */

/*
 * A ring balances keys, not load: one hot key, or a slow node, sends a
 * burst to one node. A bounded lookup (consistent hashing with bounded
 * loads, Mirrokni, Thorup and Zadimoghaddam; HAProxy's hash-balance-factor)
 * caps every node at about `factor` times its weighted share of the load in
 * flight and sends the overflow on to the next node of a spill order. The
 * ring is not changed: no key's home moves, and when the load falls the
 * keys are served at home again. docs/bounded-loads.md has the details.
 *
 * Load is what the caller counts: requests in flight per node, by node
 * index (chr_snapshot_node order), excluding the request being placed. L
 * is their sum over every member of the snapshot.
 *
 * Capacity (HAProxy's chash_server_is_eligible, in integers). Over the
 * candidates, the members with weight > 0 that are available, in index
 * order, with W their total weight and C_i the weight of the candidates
 * before node i:
 *
 *     total  = ceil((L + 1) * factor_pct / 100)
 *     cap_i  = w_i * (total / W)
 *              + ((C_i + w_i) * (total % W)) / W - (C_i * (total % W)) / W
 *     cap_i  = max(cap_i, 1) + slack
 *
 * The remainder terms add up to total % W exactly, so the capacities add
 * up to at least total >= L + 1 > L: some candidate always has load below
 * its capacity. A lookup without a probe limit therefore never fails for
 * lack of room, and the node it returns has load + 1 <= its capacity.
 * With n equal weights and no slack that is at most
 * ceil((L + 1) * factor_pct / (100 * n)) per node after the request.
 *
 * Availability: a member marked unavailable (down, draining, failing its
 * health checks) is skipped by the lookup and left out of W; its tokens stay
 * where they are, so its keys come back to it as soon as it is available
 * again. Its load still counts in L.
 */

/** Spill order: the key's replica walk (chr_snapshot_replicas order), so
 *  the overflow lands on the key's own replicas (locality). */
#define CHR_SPILL_REPLICAS 0
/** Spill order: a permutation of the members seeded by the key's hash, so
 *  the overflow of one node spreads over all others instead of cascading
 *  onto its ring neighbour. */
#define CHR_SPILL_SHUFFLE 1

#define CHR_BALANCE_FACTOR_MIN 100u     /**< factor_pct limits: 100 (exact mean) .. */
#define CHR_BALANCE_FACTOR_MAX 100000u  /**< .. 100000 (1000 times the mean) */
#define CHR_LOAD_MAX (UINT64_C(1) << 40) /**< the largest load of one node, and the largest slack */

#define CHR_BOUND_OPTIONS_VERSION 1

/**
 * How a bounded lookup caps nodes. Start from CHR_BOUND_OPTIONS_INIT or
 * chr_bound_options_init(): fields are only appended.
 */
typedef struct chr_bound_options {
    uint32_t version;     /**< CHR_BOUND_OPTIONS_VERSION (1..current accepted) */
    uint32_t factor_pct;  /**< the cap as a percentage of the weighted mean load,
                               CHR_BALANCE_FACTOR_MIN..MAX; default 125 (1.25 x) */
    uint32_t spill;       /**< CHR_SPILL_*; default CHR_SPILL_REPLICAS */
    uint32_t max_probes;  /**< at most this many nodes compared with their capacity;
                               0 (default) = no limit */
    uint64_t slack;       /**< added to every candidate's capacity, 0..CHR_LOAD_MAX: a
                               margin for loads that are a sample (each of several
                               proxies counting only its own requests); default 0 */
} chr_bound_options;

#define CHR_BOUND_OPTIONS_INIT { CHR_BOUND_OPTIONS_VERSION, 125, CHR_SPILL_REPLICAS, 0, 0 }

/**
 * Fills `opts` with the defaults of struct version `version`, the function
 * twin of CHR_BOUND_OPTIONS_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL opts); CHR_EVERSION (version not in
 *         1..CHR_BOUND_OPTIONS_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_bound_options_init(chr_bound_options *opts, uint32_t version) CHR_NOEXCEPT;

/* chr_bound_result.flags */
#define CHR_BOUND_SPILLED 0x1u  /**< the node is not the key's home (chr_snapshot_lookup's) */
#define CHR_BOUND_OVER 0x2u     /**< max_probes reached with every probed node full: the one
                                     with the lowest load/capacity ratio is returned */

/** What a bounded lookup chose and how. */
typedef struct chr_bound_result {
    uint32_t index;     /**< the chosen node's index */
    uint32_t home;      /**< the key's home: chr_snapshot_lookup's node index */
    uint32_t probes;    /**< nodes compared with their capacity (>= 1); unavailable
                             members passed over are not counted */
    uint32_t flags;     /**< CHR_BOUND_* */
    uint64_t load;      /**< the chosen node's load, this request excluded */
    uint64_t capacity;  /**< the chosen node's capacity (UINT64_MAX without a bound) */
} chr_bound_result;

/**
 * The capacities of the formula above, for a list of weights: what a
 * bounded lookup compares each load with. For callers that place requests
 * themselves (the nginx module) and for tests.
 * @param weights     n weights in candidate order; 0 = not a candidate
 *                    (unavailable, or without tokens): capacity 0
 * @param total_load  L, 0..CHR_LOAD_MAX * CHR_NODES_MAX
 * @param opts        factor_pct and slack are used (NULL: the defaults)
 * @param caps        receives n capacities
 * @return CHR_OK; CHR_EINVAL (NULL weights or caps with n > 0);
 *         CHR_EVERSION; CHR_ERANGE (n over CHR_NODES_MAX, a weight over
 *         CHR_WEIGHT_MAX, factor_pct, slack or total_load out of range).
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_bound_capacities(const uint32_t *weights, size_t n, uint64_t total_load,
                                        const chr_bound_options *opts, uint64_t *caps) CHR_NOEXCEPT;

/**
 * Finds the node for `key` that has room: the key's home if it is
 * available and its load is below its capacity, else the first such node
 * of the spill order. A pure function of its arguments: the same snapshot,
 * key, loads, mask and options give the same node on every platform.
 * @param loads      n_nodes in-flight counts by node index, each at most
 *                   CHR_LOAD_MAX; NULL = all 0
 * @param available  n_nodes bytes by node index, nonzero = available; NULL =
 *                   all available
 * @param n_nodes    the snapshot's node count (checked when loads or
 *                   available is given)
 * @param opts       the bound; NULL = no bound: only the mask applies (the
 *                   first available node of the replica walk, loads ignored)
 * @param out        receives the chosen node, borrowed from the snapshot
 * @param result     if not NULL, receives what was chosen and how
 * @return CHR_OK; CHR_EINVAL (NULL snap or out, NULL key with a length,
 *         n_nodes not the node count, unknown spill); CHR_EVERSION;
 *         CHR_ERANGE (factor_pct, slack or a load out of range);
 *         CHR_EEMPTY (no node has tokens, or every node with tokens is
 *         unavailable); CHR_ENOMEM (only past 65,536 members, on a
 *         thread's first spill along the replica walk, which sizes its
 *         table). Without max_probes it never fails for lack of room.
 * Cost: the home check is one lookup plus a pass over loads (O(nodes));
 * a spill walks tokens (replica walk) or members (shuffle) until a node
 * has room; with some node unavailable, each probe adds O(nodes).
 * Thread-safety: any thread; lock-free, allocation-free for up to 65,536
 * members (a per-thread table beyond, sized once per thread and kept for
 * the threads that follow it). Ownership: reads loads
 * and available, writes out and result only. Since: 0.1.
 */
CHR_API chr_status chr_snapshot_lookup_bounded(const chr_snapshot *snap, const void *key,
                                               size_t key_len, const uint64_t *loads,
                                               const unsigned char *available, size_t n_nodes,
                                               const chr_bound_options *opts, chr_node_view *out,
                                               chr_bound_result *result) CHR_NOEXCEPT;

/*
 * A tracker counts requests in flight per node for callers that do not
 * keep their own counts. Its counters are keyed by node id, not by index,
 * so they carry over from one snapshot to the next: a node removed and
 * added again finds its count, and a request acquired on an old snapshot is
 * released correctly after the node is gone. Acquire and release are
 * lock-free (atomic compare-and-swap on one counter and the total) and
 * never allocate, except the first acquire on a snapshot, which hashes its
 * members' ids once (8 bytes a member, kept until the snapshot is freed);
 * the counters live in a table sized at creation. Ids are
 * told apart by a 64-bit hash of their bytes: two ids of one tracker with
 * the same hash (odds about n^2 / 2^65 for n ids) would share a counter.
 */

/** A tracker: per-node in-flight counters shared by any number of threads. */
typedef struct chr_tracker chr_tracker;

/** One acquired request; give it back to chr_tracker_release() once. */
typedef struct chr_ticket {
    uint64_t slot;   /**< the tracker's counter the request was counted on */
    uint64_t check;  /**< ties the ticket to its tracker and slot */
} chr_ticket;

#define CHR_TRACKER_NODES_DEFAULT 4096u /**< chr_tracker_new() with max_nodes 0 */

/**
 * Creates a tracker with room for `max_nodes` distinct node ids over its
 * lifetime (an id keeps its counter once it has one, so that late releases
 * always find it).
 * @param max_nodes  1..CHR_NODES_MAX; 0 = CHR_TRACKER_NODES_DEFAULT
 * @return CHR_OK; CHR_EINVAL (NULL out); CHR_ERANGE (max_nodes); CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: release with chr_tracker_free().
 * Since: 0.1.
 */
CHR_API chr_status chr_tracker_new(size_t max_nodes, chr_tracker **out) CHR_NOEXCEPT;

/**
 * Frees a tracker; NULL is a no-op. No other call on it may run
 * concurrently or follow; outstanding tickets become invalid.
 * Thread-safety: exclusive. Since: 0.1.
 */
CHR_API void chr_tracker_free(chr_tracker *tracker) CHR_NOEXCEPT;

/**
 * Places one request: chr_snapshot_lookup_bounded() over the tracker's
 * counts of the snapshot's members (L is their sum: requests in flight on
 * nodes not in `snap`, another ring's included, do not count) and its
 * availability, then counts the request on the chosen node. The
 * increment is a compare-and-swap that succeeds only while the node's count
 * is below the capacity just computed (a race lost to another thread is
 * retried), so after every acquire the node's count is at most its
 * capacity for the total seen (CHR_BOUND_OVER excepted).
 * @param opts    the bound; NULL = no bound (availability only)
 * @param out     if not NULL, receives the node, borrowed from `snap`
 * @param result  if not NULL, receives what was chosen and how
 * @param ticket  receives the ticket to release
 * @return CHR_OK; CHR_EINVAL; CHR_EVERSION; CHR_ERANGE (opts out of range,
 *         or the tracker has no room for another node id); CHR_EEMPTY (no
 *         available node with tokens); CHR_ENOMEM (as
 *         chr_snapshot_lookup_bounded, or the first acquire on `snap`).
 *         On failure nothing is counted.
 * Thread-safety: any thread; lock-free, allocation-free as
 * chr_snapshot_lookup_bounded once a first acquire on `snap` has kept its
 * members' hashed ids (one allocation of 8 bytes a member, freed with the
 * snapshot; threads racing on it each make one, one is kept). Cost:
 * O(nodes) table probes to sum L, plus the probes of the lookup. Ownership: `snap`
 * stays the caller's. Since: 0.1.
 */
CHR_API chr_status chr_tracker_acquire(chr_tracker *tracker, const chr_snapshot *snap,
                                       const void *key, size_t key_len,
                                       const chr_bound_options *opts, chr_node_view *out,
                                       chr_bound_result *result, chr_ticket *ticket) CHR_NOEXCEPT;

/**
 * Ends one request: the node's count and the total go down by one. Valid
 * whatever happened to the node since (removed, reweighted, masked).
 * @return CHR_OK; CHR_EINVAL (NULL, a ticket not from this tracker, or one
 *         released more often than acquired: nothing changes).
 * Thread-safety: any thread; lock-free. Since: 0.1.
 */
CHR_API chr_status chr_tracker_release(chr_tracker *tracker, const chr_ticket *ticket) CHR_NOEXCEPT;

/**
 * Marks node `id` available (nonzero) or unavailable (0) for this tracker's
 * acquires; every node starts available. The id need not be in any
 * snapshot yet.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (id length, or no room for
 *         another node id).
 * Thread-safety: any thread; acquires see the change at once or on their
 * next call. Since: 0.1.
 */
CHR_API chr_status chr_tracker_set_available(chr_tracker *tracker, const void *id, size_t id_len,
                                             uint32_t available) CHR_NOEXCEPT;

/**
 * The requests in flight on node `id` (0 for an id never counted), and
 * the total over every node.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (id length).
 * Thread-safety: any thread; a racing acquire may or may not be counted.
 * Since: 0.1.
 */
CHR_API chr_status chr_tracker_load(const chr_tracker *tracker, const void *id, size_t id_len,
                                    uint64_t *load) CHR_NOEXCEPT;
CHR_API chr_status chr_tracker_total(const chr_tracker *tracker, uint64_t *total) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Availability: members marked down, routed around without moving tokens   */
/* ------------------------------------------------------------------------ */

/*
 * Besides its members a ring holds an availability state: the set of
 * members marked down (dead, draining, failing their health checks) and a
 * panic threshold. A mark changes no token and not the fingerprint; it
 * changes where the keys of the marked member are served while it is down,
 * and nothing else:
 *
 * - While marks are in effect, chr_ring_lookup, chr_snapshot_lookup and
 *   chr_snapshot_lookup_batch answer the first member of the key's replica
 *   walk (chr_ring_replicas order) that is not marked down. A key whose
 *   owner is up keeps its owner; a key of a down member goes to the next
 *   member of its own walk (Dynamo's preference list, not a re-hash); when
 *   the mark goes, every key is back on exactly its old member.
 * - Replica lists (chr_ring_replicas, chr_snapshot_replicas and the replica
 *   policies) are the lists of the same ring with the down members' tokens
 *   taken away, followed, when that leaves fewer than n members, by the down
 *   members in walk order: a list never shrinks, and its first entry is the
 *   lookup's answer. Zone policies count the live zones of the available
 *   members.
 * - Bounded lookups and tracker acquires treat a down member as
 *   unavailable, on top of the caller's own mask.
 * - No key is ever left without a node: when every member of a key's walk
 *   is down, the key goes to its owner as if nothing were marked.
 * - Panic threshold (Envoy's): when the weight of the down members (members
 *   with tokens) is more than panic_threshold percent of the weight of all
 *   members with tokens, the marks are ignored and every member is used as
 *   if none were down (chr_availability_info.panic = 1). A threshold of 100
 *   never panics. The default, CHR_PANIC_THRESHOLD_DEFAULT, is 50: two of
 *   four equal members down is honoured, three is panic.
 *
 * Marks belong to members: a mark for an id that is not a member is
 * CHR_ENOENT, removing a member drops its mark, a member added is up. A
 * ring file carries the state (%%down, %%panic-threshold, %%availability:
 * docs/ring-file.md), so a process following a file gets membership and
 * availability together, in one snapshot. Diffs and migration plans
 * (chr_diff_*, chr_plan_*) compare tokens and ignore marks.
 *
 * The availability digest proves that processes agree on the state: a
 * 64-bit digest of the panic threshold and the sorted ids marked down
 * (docs/semantics.md, "Availability digest"); 0 when nothing is marked and
 * the threshold is the default. Equal fingerprints and equal digests route
 * every key the same.
 */

#define CHR_PANIC_THRESHOLD_DEFAULT 50u /**< percent of the weight down beyond which marks are ignored */
#define CHR_AVAILABILITY_INFO_VERSION 1

/** A snapshot's availability state. Set `version`; the calls fill the rest. */
typedef struct chr_availability_info {
    uint32_t version;         /**< in: CHR_AVAILABILITY_INFO_VERSION (1..current accepted) */
    uint32_t panic;           /**< 1: more than panic_threshold of the weight is down, marks ignored */
    uint32_t panic_threshold; /**< percent, 0..100 */
    uint32_t down;            /**< members marked down (in effect or not) */
    uint64_t down_weight;     /**< weight of the members marked down that have tokens */
    uint64_t total_weight;    /**< weight of every member with tokens */
    uint64_t digest;          /**< the availability digest (0: nothing marked, default threshold) */
} chr_availability_info;

#define CHR_AVAILABILITY_INFO_INIT { CHR_AVAILABILITY_INFO_VERSION, 0, 0, 0, 0, 0, 0 }

/**
 * Fills `info` with zeros and `version`, the function twin of
 * CHR_AVAILABILITY_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (version not in
 *         1..CHR_AVAILABILITY_INFO_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_availability_info_init(chr_availability_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * Marks member `id` down (down != 0) or up (0), and publishes the result as
 * a new snapshot. Marking a member that is already in that state changes
 * nothing (no new snapshot).
 * @return CHR_OK; CHR_EINVAL (NULL ring, NULL id with a length, an empty
 *         id, as chr_ring_add); CHR_ERANGE (id longer than CHR_NODE_ID_MAX);
 *         CHR_ENOENT (not a member); CHR_ENOMEM (the ring is unchanged).
 * Thread-safety: as chr_ring_add (writers serialize; readers never wait).
 * Since: 0.1.
 */
CHR_API chr_status chr_ring_set_down(chr_ring *ring, const void *id, size_t id_len,
                                     uint32_t down) CHR_NOEXCEPT;

/**
 * Replaces the whole availability state in one snapshot: exactly the
 * `count` members ids[i]/id_lens[i] are marked down (duplicates allowed),
 * every other member is up, and the panic threshold is `panic_threshold`
 * percent.
 * @return CHR_OK; CHR_EINVAL (NULL ring, NULL arrays with count > 0, NULL
 *         id with a length, an empty id); CHR_ERANGE (an id longer than
 *         CHR_NODE_ID_MAX, panic_threshold over 100); CHR_ENOENT (an id not a member: chr_last_error_info() names
 *         it and its position in change_index); CHR_ENOMEM. On any error the
 *         ring is unchanged.
 * Thread-safety: as chr_ring_add. Since: 0.1.
 */
CHR_API chr_status chr_ring_set_availability(chr_ring *ring, const void *const *ids,
                                             const size_t *id_lens, size_t count,
                                             uint32_t panic_threshold) CHR_NOEXCEPT;

/**
 * The availability state of the ring's current snapshot / of a snapshot.
 * @return CHR_OK; CHR_EINVAL (NULL argument); CHR_EVERSION (info->version
 *         not in 1..CHR_AVAILABILITY_INFO_VERSION); CHR_ENOMEM (first read
 *         on this thread, ring only).
 * Thread-safety: as chr_ring_lookup / chr_snapshot_lookup. Since: 0.1.
 */
CHR_API chr_status chr_ring_availability(const chr_ring *ring, chr_availability_info *info) CHR_NOEXCEPT;
CHR_API chr_status chr_snapshot_availability(const chr_snapshot *snap,
                                             chr_availability_info *info) CHR_NOEXCEPT;

/**
 * Whether member `index` (chr_snapshot_node order) is marked down: *marked
 * is 1 for a mark whether or not it is in effect (chr_node_view.flags has
 * CHR_NODE_DOWN only while it is).
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (index past the end).
 * Thread-safety: as chr_snapshot_lookup. Since: 0.1.
 */
CHR_API chr_status chr_snapshot_marked_down(const chr_snapshot *snap, size_t index,
                                            uint32_t *marked) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Hashers and plugins                                                      */
/* ------------------------------------------------------------------------ */

/*
 * A ring hashes keys and tokens with a named hasher (chr_options.hasher).
 * The default, CHR_DEFAULT_HASHER ("xxh3"), is compiled into the library:
 * a ring with the default hasher never loads a plugin or calls dlopen, so
 * it works from a static build, in a sandboxed process (no /proc, no file
 * access) and from an install moved to another prefix. Every other hasher
 * comes from a plugin (see chring_plugin.h) or chr_hasher_register().
 *
 * Plugins are found without configuration when a name is not registered
 * yet, searching, in this order:
 *   1. next to the loaded libchring: <libdir>/chring/plugins/;
 *   2. each directory of the CHRING_PLUGIN_PATH environment variable
 *      (':'-separated, in order), which is ignored in a setuid, setgid or
 *      capability-raised process (secure_getenv);
 *   3. chr_options.plugin_dir (or the plugin_dir argument below).
 * The library never looks for a build tree: `meson test` and `meson
 * devenv` set CHRING_PLUGIN_PATH to the build's plugin folders.
 * Within a directory, files named chring-*.so are tried in byte order of
 * their names. Discovery stops as soon as the wanted name is registered,
 * so later files are not loaded; chr_hasher_list() loads every file.
 * A name belongs to the first file loaded with it (a later file exporting
 * it is refused whole, CHR_EEXIST); so an earlier directory wins a clash.
 * Missing directories, and files or directories that fail a check below,
 * are skipped; a name still not found gets CHR_ENOHASHER with what was
 * skipped and why in chr_last_error().
 *
 * Trust rules, checked on the opened file before any of its code runs
 * (the rules ld.so, sudo and PAM apply); a refusal is CHR_EPLUGIN_UNTRUSTED:
 *  - every search directory must be an absolute path (a relative entry
 *    such as CHRING_PLUGIN_PATH=plugins would follow the working directory);
 *  - the plugin file, the directory holding it and every directory above
 *    it must be owned by root or by the process's effective user; in a
 *    secure-execution process (setuid, setgid or capability-raised:
 *    AT_SECURE), by root only, since there the effective user may be the
 *    unprivileged caller (a setgid program) who chose the file;
 *  - the file and the directory holding it must not be writable by group
 *    or others (mode 1777 too: anyone could add a file); a directory above
 *    may be only if it is sticky (like /tmp: no one else can rename what
 *    is in it).
 * Symbolic links are resolved first, and the rules apply to the target and
 * its directories. The file is then loaded through that same open file
 * (/proc/self/fd/N), so it cannot be swapped between check and load.
 *
 * Before the dynamic loader sees a file, its ELF header and program
 * headers are checked against the file: class, byte order and machine of
 * this host, ET_DYN, every PT_LOAD inside the file (a truncated copy is
 * refused, not mapped), the dynamic section inside a PT_LOAD. A file that
 * fails is CHR_EPLUGIN_NOTSO. After loading, the entry point, its table and
 * every descriptor pointer must lie in the plugin's own segments (strings
 * readable and NUL-terminated inside them, functions executable), else
 * CHR_EPLUGIN_DESC. A plugin whose hashers are registered stays loaded for
 * the rest of the process: function pointers taken from it never dangle.
 * docs/plugins.md has the details.
 *
 * On Windows: plugins are chring-*.dll beside chring.dll itself, the
 * CHRING_PLUGIN_PATH list is ';'-separated, the trust rules read the
 * owner and access list of the file and its directory, and PE checks take
 * the place of the ELF checks (docs/windows.md).
 */

/** One available hasher. The strings live as long as the process. */
typedef struct chr_hasher_info {
    const char *name;
    const char *description;  /**< "" if none */
    const char *origin;       /**< "builtin", "registered", or the plugin file's path */
    uint32_t digest_size;     /**< 0 if the hasher has no full digest */
    uint32_t reserved0;
} chr_hasher_info;

/**
 * Loads the plugin at `path` and registers every hasher it exports. All or
 * nothing: if any descriptor is refused, none is registered and the file
 * is unloaded.
 * @param loaded  if not NULL, receives the number of hashers registered.
 * `path` may be relative to the working directory (the caller's own choice);
 * the trust rules above apply to the file it resolves to.
 * @return CHR_OK; CHR_EINVAL; CHR_EPLUGIN_NOFILE (missing, unreadable or not
 *         a regular file); CHR_EPLUGIN_UNTRUSTED (a trust rule);
 *         CHR_EPLUGIN_NOTSO (not ELF, another machine, truncated or
 *         malformed headers, or refused by the dynamic loader); CHR_EPLUGIN_SYMBOL;
 *         CHR_EPLUGIN_ABI; CHR_EPLUGIN_DESC (no hashers, or a bad field);
 *         CHR_EEXIST (a name is already registered: the first keeps working);
 *         CHR_ENOMEM.
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_plugin_load(const char *path, size_t *loaded) CHR_NOEXCEPT;

/**
 * Lists the available hashers, after loading every plugin found in the
 * default places and in `plugin_dir` (NULL for none): the one call that
 * loads everything.
 * @param count  receives the number of hashers; on CHR_ERANGE the capacity
 *               needed (out NULL with capacity 0 asks without touching
 *               chr_last_error(): see SIZE QUERIES).
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE; CHR_ENOMEM.
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_hasher_list(const char *plugin_dir, chr_hasher_info *out, size_t capacity,
                                   size_t *count) CHR_NOEXCEPT;

/**
 * Registers a hasher in this process (see chring_plugin.h for the
 * descriptor and its contract). The descriptor and everything it points to
 * must stay valid for the rest of the process; registration is permanent.
 * The descriptor is validated exactly as a plugin's is.
 * @return CHR_OK; CHR_EINVAL (NULL); CHR_EPLUGIN_ABI; CHR_EPLUGIN_DESC;
 *         CHR_EEXIST (name taken: the first one keeps working); CHR_ENOMEM.
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_hasher_register(const chr_hasher *hasher) CHR_NOEXCEPT;

/**
 * Hashes bytes with the named hasher (discovering plugins if needed), as a
 * ring with that hasher and seed would hash a key.
 * @return CHR_OK; CHR_EINVAL; CHR_ENOHASHER.
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_hasher_hash(const char *name, const void *data, size_t len, uint64_t seed,
                                   uint64_t *out) CHR_NOEXCEPT;

/**
 * The named hasher's full digest of `data` (e.g. the 16 MD5 bytes).
 * @param out          room for `capacity` bytes
 * @param digest_size  receives the digest's size (also on CHR_ERANGE; out
 *                     NULL with capacity 0 asks without touching
 *                     chr_last_error(): see SIZE QUERIES)
 * @return CHR_OK; CHR_EINVAL; CHR_ENOHASHER; CHR_ENOTSUP (the hasher has no
 *         digest); CHR_ERANGE (capacity too small).
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_hasher_digest(const char *name, const void *data, size_t len,
                                     unsigned char *out, size_t capacity, size_t *digest_size) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Ring files: membership and options as one text document                  */
/* ------------------------------------------------------------------------ */

/*
 * A ring file (docs/ring-file.md) is a superset of the CLI's members file:
 * `id weight [zone]` lines, `#` comments, %XX escapes, plus `%%name value`
 * directive lines before the first member:
 *
 *     %%ring-file 1
 *     %%placement native
 *     %%hasher xxh3
 *     %%seed 0
 *     %%tokens-per-weight 160
 *     %%revision 42
 *     %%fingerprint 0x058b64534d60e174
 *     cache-a 1 eu-west-1a
 *     cache-b 2
 *
 * Every directive is optional. A file with no option directive (placement,
 * hasher, seed, tokens-per-weight) is a plain member list: the options are
 * the caller's when creating a ring and the ring's own when applying. A
 * file with any of them defines all four (absent ones take the defaults;
 * the hasher defaults to the placement's own). A %%fingerprint is checked
 * against the ring the file describes; a %%revision (the etcd watcher's)
 * is handed back in chr_ringfile_info. A member's tag is its 0-based
 * position among the file's members: the compatibility placements break
 * ties by it, so for them the file's order is part of the ring.
 *
 * The canonical form, written by chr_ring_export(), is a function of the
 * ring: every directive in the order above (%%revision only when asked),
 * single spaces, LF line ends, minimal escapes, members sorted by id bytes
 * (native) or by tag, then id (compatibility placements).
 *
 * Errors: a malformed file is CHR_EFORMAT with "name:line: what is wrong"
 * in chr_last_error() (just "name: ..." for the file as a whole), and the
 * name, the line, the reason and the member apart in chr_last_error_info();
 * a file that cannot be read is CHR_EIO. A failed call changes nothing.
 */

#define CHR_EFORMAT (-17)   /**< a malformed ring file: chr_last_error() reads "file:line: reason" */
#define CHR_EOPTIONS (-18)  /**< the ring file's options differ from the ring's */
#define CHR_EIO (-19)       /**< a ring file cannot be read: missing, unreadable, not a regular file */

#define CHR_RINGFILE_FORMAT_VERSION 1      /**< the %%ring-file version this library reads and writes */
#define CHR_RINGFILE_LINE_MAX 65536u       /**< bytes in one line, its LF excluded */
#define CHR_RINGFILE_SIZE_MAX (256u << 20) /**< bytes in one file (256 MiB) */

/* chr_ringfile_info.flags */
#define CHR_RINGFILE_HAS_REVISION 0x1u    /**< the file has a %%revision */
#define CHR_RINGFILE_HAS_FINGERPRINT 0x2u /**< the file has a %%fingerprint (checked: it matched) */
#define CHR_RINGFILE_HAS_OPTIONS 0x4u     /**< the file has an option directive */
#define CHR_RINGFILE_HAS_AVAILABILITY 0x8u /**< the file has %%down, %%panic-threshold or %%availability */

#define CHR_RINGFILE_INFO_VERSION 2 /**< 2 added the availability fields */

/**
 * What a ring file said and what loading it did. Set `version` (from
 * CHR_RINGFILE_INFO_INIT or chr_ringfile_info_init()); the calls fill the
 * rest, on success and, for error_line, on failure.
 */
typedef struct chr_ringfile_info {
    uint32_t version;        /**< in: CHR_RINGFILE_INFO_VERSION (1..current accepted) */
    uint32_t flags;          /**< CHR_RINGFILE_HAS_* */
    uint64_t revision;       /**< the %%revision value; 0 when absent */
    uint64_t fingerprint;    /**< the ring's fingerprint after the call (chr_ring_fingerprint) */
    uint32_t format_version; /**< the %%ring-file value; 1 when absent */
    uint32_t members;        /**< member lines in the file */
    uint32_t added;          /**< apply: members added (create: every member) */
    uint32_t removed;        /**< apply: members removed */
    uint32_t reweighted;     /**< apply: members whose weight changed */
    uint32_t replaced;       /**< apply: members removed and added again in the batch: zone
                                  changed, or (compatibility placements) position changed */
    uint32_t error_line;     /**< on CHR_EFORMAT / CHR_EOPTIONS / CHR_ENOHASHER: the line at
                                  fault, 0 for the file as a whole; 0 on success */
    uint32_t reserved0;      /**< set to 0 by the calls */
    /* Version 2: */
    uint64_t availability;   /**< the ring's availability digest after the call */
    uint32_t down;           /**< %%down lines in the file */
    uint32_t panic_threshold;/**< the %%panic-threshold value (CHR_PANIC_THRESHOLD_DEFAULT when absent) */
} chr_ringfile_info;

#define CHR_RINGFILE_INFO_INIT { CHR_RINGFILE_INFO_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Fills `info` with zeros and `version`, the function twin of
 * CHR_RINGFILE_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (version not in
 *         1..CHR_RINGFILE_INFO_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_ringfile_info_init(chr_ringfile_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * Creates a ring from a ring file's text.
 * @param text, len  the file's bytes (NULL with len 0: the empty file, a
 *                   valid ring with no members); at most CHR_RINGFILE_SIZE_MAX
 * @param name       NUL-terminated name used in messages (a path, "<etcd>");
 *                   NULL = "<text>"
 * @param base       options for a file without option directives, and the
 *                   plugin_dir searched for the file's hasher; NULL = defaults
 * @param out        receives the ring; set to NULL on failure
 * @param info       if not NULL (version set), receives what the file said
 * @return CHR_OK; CHR_EFORMAT (malformed file, a %%fingerprint that does not
 *         match, members the ring refuses: limits, weights a compatibility
 *         placement does not take); CHR_ENOHASHER (the file's hasher is not
 *         available here); CHR_EINVAL; CHR_EVERSION (info or base version);
 *         CHR_ERANGE, CHR_ENOTSUP (bad base options); CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: release the ring with
 * chr_ring_free(); text, name and base are not kept. Since: 0.1.
 */
CHR_API chr_status chr_ring_new_from_text(const char *text, size_t len, const char *name,
                                          const chr_options *base, chr_ring **out,
                                          chr_ringfile_info *info) CHR_NOEXCEPT;

/**
 * As chr_ring_new_from_text, reading the file at `path` (named by its path
 * in messages): a regular file of at most CHR_RINGFILE_SIZE_MAX bytes.
 * @return as chr_ring_new_from_text, and CHR_EIO (missing, unreadable, a
 *         directory or other non-regular file, a read error).
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_ring_new_from_file(const char *path, const chr_options *base,
                                          chr_ring **out, chr_ringfile_info *info) CHR_NOEXCEPT;

/**
 * Makes `ring` the ring the file describes, as ONE batch published as one
 * snapshot (chr_ring_apply): members only in the ring are removed, members
 * only in the file added (tag = position in the file), changed weights set,
 * and a member whose zone changed (or, for a compatibility placement, whose
 * position changed) is removed and added again. The difference is computed
 * under the ring's writer lock, so concurrent writers cannot interleave.
 * Afterwards the ring's fingerprint equals that of chr_ring_new_from_text()
 * on the same file with the ring's options. A file without option
 * directives takes the ring's options.
 * @param info  if not NULL (version set), receives the revision, the new
 *              fingerprint and the counts of changes
 * @return CHR_OK; CHR_EFORMAT; CHR_EOPTIONS (the file's placement, hasher,
 *         seed or tokens per weight differ from the ring's: the message names
 *         both values and the line); CHR_EINVAL; CHR_EVERSION; CHR_ENOMEM.
 *         On any failure the ring is unchanged.
 * Thread-safety: as chr_ring_apply; readers see the old or the new ring.
 * Since: 0.1.
 */
CHR_API chr_status chr_ring_apply_text(chr_ring *ring, const char *text, size_t len,
                                       const char *name, chr_ringfile_info *info) CHR_NOEXCEPT;

/**
 * As chr_ring_apply_text, reading the file at `path`.
 * @return as chr_ring_apply_text, and CHR_EIO.
 * Thread-safety: as chr_ring_apply. Since: 0.1.
 */
CHR_API chr_status chr_ring_apply_file(chr_ring *ring, const char *path, chr_ringfile_info *info) CHR_NOEXCEPT;

/* chr_ring_export() flags */
#define CHR_EXPORT_REVISION 0x1u /**< write a %%revision directive with the given value */
#define CHR_EXPORT_JSON 0x2u     /**< write the JSON twin (docs/ring-file.md) instead of the text */

/**
 * Writes the ring's canonical ring file (or its JSON twin) into `buf`.
 * The bytes depend only on the ring's options, members, zones, tag order
 * (compatibility placements), `flags` and `revision`.
 * @param flags     CHR_EXPORT_* bits; others are CHR_EINVAL
 * @param revision  the %%revision value, used with CHR_EXPORT_REVISION
 * @param buf       room for `capacity` bytes (NULL with capacity 0 asks the
 *                  size without touching chr_last_error(): see SIZE
 *                  QUERIES); a NUL is added after the text when it fits,
 *                  but is not needed
 * @param len       receives the text's length in bytes, without a NUL; on
 *                  CHR_ERANGE the capacity needed
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (capacity < *len: nothing written);
 *         CHR_ENOMEM. The ring may change between a size query and the
 *         export: call again on CHR_ERANGE, or export a snapshot.
 * Thread-safety: as chr_ring_lookup (a reader). Ownership: writes caller
 * memory only. Since: 0.1.
 */
CHR_API chr_status chr_ring_export(const chr_ring *ring, uint32_t flags, uint64_t revision,
                                   char *buf, size_t capacity, size_t *len) CHR_NOEXCEPT;

/** As chr_ring_export, for one snapshot (stable between calls). Since: 0.1. */
CHR_API chr_status chr_snapshot_export(const chr_snapshot *snap, uint32_t flags, uint64_t revision,
                                       char *buf, size_t capacity, size_t *len) CHR_NOEXCEPT;

/*
 * Fields: how an id or a zone is spelled in a ring file, for tools that
 * write member lines, take ids on a command line or show them. Both calls
 * follow docs/ring-file.md, the rules chr_ring_new_from_text() reads and
 * chr_ring_export() writes.
 */

/* chr_ringfile_escape() flags */
#define CHR_ESCAPE_HIDDEN 0x1u /**< also %XX the C1 and bidirectional controls (text for a terminal) */

/**
 * The field spelling of `bytes`, as chr_ring_export() writes ids and zones:
 * a byte is %XX (uppercase hex) if and only if it is a control byte
 * (0x00-0x1F, 0x7F), a space, '%', a '#' at the start, a byte of U+FEFF
 * (EF BB BF, wherever it stands: first in a file it would read as a byte
 * order mark, which the parser refuses), or not part of a valid UTF-8
 * sequence; everything else is copied. With CHR_ESCAPE_HIDDEN,
 * the bytes of the code points a terminal acts on instead of showing them
 * are %XX too: the C1 controls U+0080..U+009F (U+009B is a CSI) and the
 * bidirectional marks, embeddings, overrides and isolates (U+061C,
 * U+200E/F, U+202A..E, U+2066..9). Either spelling decodes back to `bytes`
 * (chr_ringfile_unescape); only flags 0 is the canonical one.
 * @param bytes, len  any bytes; NULL with len 0 is the empty string
 * @param flags       0 or CHR_ESCAPE_HIDDEN; other bits are CHR_EINVAL
 * @param buf         room for `capacity` bytes (3 * len always suffices; NULL
 *                    with capacity 0 asks the size: see SIZE QUERIES); a NUL
 *                    is added after the text when it fits
 * @param out_len     receives the spelling's length without a NUL; on
 *                    CHR_ERANGE the capacity needed
 * @return CHR_OK; CHR_EINVAL (NULL out_len, NULL bytes or buf with a length,
 *         unknown flags); CHR_ERANGE (capacity too small: nothing written);
 *         CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_ringfile_escape(const void *bytes, size_t len, uint32_t flags, char *buf,
                                       size_t capacity, size_t *out_len) CHR_NOEXCEPT;

/**
 * Decodes one field as a ring file's member line does: `%` and two hex
 * digits (either case) stand for that byte, every other byte for itself.
 * @param field, len  the field as written (NULL with len 0: empty)
 * @param what        NUL-terminated name of the field in messages ("id",
 *                    "zone", "key"); NULL = "field"
 * @param buf         room for `capacity` bytes (len always suffices; NULL
 *                    with capacity 0 asks the size); not NUL-terminated
 *                    unless capacity leaves room, as chr_ringfile_escape
 * @param out_len     receives the decoded length; on CHR_ERANGE the
 *                    capacity needed
 * @return CHR_OK; CHR_EFORMAT (a raw control byte, or a '%' not followed by
 *         two hex digits: chr_last_error() reads "<what> '<field>': <reason>",
 *         without a function name, so a tool can show it as it is);
 *         CHR_EINVAL; CHR_ERANGE (nothing written); CHR_ENOMEM.
 *         No length limit applies: ids and zones have theirs at the ring.
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_ringfile_unescape(const char *field, size_t len, const char *what,
                                         char *buf, size_t capacity, size_t *out_len) CHR_NOEXCEPT;

/*
 * One member line: the ring file's own reading of `id weight [zone]`, for
 * programs that keep members one by one in another store and must read
 * each as the line of the ring file it becomes (the etcd layout of
 * docs/etcd.md: a key's id field and its value "weight [zone]" are one
 * member line of the file the watcher writes).
 */

#define CHR_RINGFILE_MEMBER_VERSION 1

/**
 * One member line, decoded. Set `version` (CHR_RINGFILE_MEMBER_INIT or
 * chr_ringfile_member_init()); chr_ringfile_parse_member() fills the rest.
 */
typedef struct chr_ringfile_member {
    uint32_t version;                  /**< in: CHR_RINGFILE_MEMBER_VERSION (1..current accepted) */
    uint32_t weight;                   /**< 0..CHR_WEIGHT_MAX */
    uint32_t id_len;                   /**< bytes of id: 1..CHR_NODE_ID_MAX; 0 after a failure */
    uint32_t zone_len;                 /**< bytes of zone: 0..CHR_ZONE_MAX; 0 = no zone */
    unsigned char id[CHR_NODE_ID_MAX]; /**< the decoded id: id_len bytes, not NUL-terminated */
    unsigned char zone[CHR_ZONE_MAX];  /**< the decoded zone: zone_len bytes, not NUL-terminated */
} chr_ringfile_member;

#define CHR_RINGFILE_MEMBER_INIT { CHR_RINGFILE_MEMBER_VERSION, 0, 0, 0, {0}, {0} }

/**
 * Fills `member` with zeros and `version`, the function twin of
 * CHR_RINGFILE_MEMBER_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL member); CHR_EVERSION (version not in
 *         1..CHR_RINGFILE_MEMBER_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_ringfile_member_init(chr_ringfile_member *member, uint32_t version) CHR_NOEXCEPT;

/**
 * Reads one member line, `id weight [zone]`, with the code that reads the
 * member lines of a ring file (chr_ring_new_from_text; docs/ring-file.md,
 * sections 2 and 3): the same fields (blanks, a trailing `# comment`), the
 * same decoding and limits of id, weight and zone, and so the same member,
 * or the same refusal with the same reason, as a file holding the line
 * gets. What a file checks as a whole (its size, a byte order mark at its
 * start) or across lines (a duplicate id), and what the ring checks (the
 * weights a placement takes, the token limit), do not apply to one line.
 * The line must be a member line: a blank line, a comment and a directive
 * (which a file may hold) are refused, and so is a CR or LF anywhere in it
 * (a line break cannot be inside one line).
 * @param line, len  the line, without a line end (NULL with len 0: the
 *                   empty line, refused as blank); a line is at most
 *                   CHR_RINGFILE_LINE_MAX bytes
 * @param name       NUL-terminated name used in messages (where the line
 *                   came from: a key, "<etcd>"); NULL = "<text>"
 * @param out        its `version` set by the caller; receives the member.
 *                   After a failure other than CHR_EVERSION its other
 *                   fields are 0.
 * @return CHR_OK; CHR_EFORMAT (not one valid member line: chr_last_error()
 *         reads "name: reason", the reason a file's line gets after
 *         "name:LINE: ", and chr_last_error_info() has the name as source,
 *         no line, and the decoded id as member when the fault comes after
 *         the id); CHR_EINVAL (NULL out, NULL line with a length);
 *         CHR_EVERSION (out->version not in 1..CHR_RINGFILE_MEMBER_VERSION:
 *         `out` is not written); CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: writes caller memory only; line
 * and name are not kept. Since: 0.1.
 */
CHR_API chr_status chr_ringfile_parse_member(const char *line, size_t len, const char *name,
                                             chr_ringfile_member *out) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Following a ring file                                                    */
/* ------------------------------------------------------------------------ */

/*
 * A follower keeps a ring equal to a ring file that another process
 * rewrites (a deploy tool, `chring watch`, `chring etcd watch`): each
 * chr_follower_check() compares the file's stamp with the one it last
 * read and, when it changed, applies the file to the ring as
 * chr_ring_apply_file() does. A file that is refused (malformed, unreadable,
 * options that differ from the ring's, a %%fingerprint that does not match)
 * leaves the ring as it was: the ring keeps the last good file.
 *
 *     chr_follower *f = NULL;
 *     if (chr_follower_new(ring, "/etc/app/ring", 0, &f) != CHR_OK) die(chr_last_error());
 *     for (;;) {                      // or on the embedding's own timer
 *         int32_t what;
 *         if (chr_follower_check(f, &what, NULL) != CHR_OK && what == CHR_FOLLOW_REFUSED)
 *             log("kept the last good ring: %s", chr_last_error());
 *         sleep(1);
 *     }
 *
 * THE STAMP: the file's device, inode, size and modification and change
 * times in nanoseconds (Windows: size and times, in seconds), or the errno
 * of a file that cannot be opened. It is taken from the open file the text
 * was read from, so the applied text and its stamp always belong together:
 * a file replaced between two checks is read again at the next one. A
 * writer should replace the file by rename (chring's own writers do): a
 * reader never sees a half-written file, and a new inode is seen even when
 * the rewrite falls within the file system's timestamp granularity. A file
 * rewritten in place with the same size and times is not seen.
 *
 * A refused file is reported once: its stamp is kept, so later checks
 * return CHR_FOLLOW_UNCHANGED until the file changes again (the follower's
 * state still says why it was refused). A failure to allocate is the
 * exception: the stamp is not kept, and the next check tries again.
 *
 * THREADING: the calls on one follower are serialized by a lock inside it,
 * so a timer may check while another thread reads the state; the ring's
 * readers never wait for a check (it is one chr_ring_apply batch).
 * OWNERSHIP: the follower borrows `ring`, which must outlive it; it copies
 * the path.
 */

/* chr_follower_check() outcomes */
#define CHR_FOLLOW_UNCHANGED 0 /**< the file's stamp is the one last read: nothing done */
#define CHR_FOLLOW_APPLIED 1   /**< the file changed and the ring now is what it describes */
#define CHR_FOLLOW_REFUSED 2   /**< the file changed (or cannot be read) and was refused: the ring is unchanged */

/** A ring kept equal to a ring file (chr_follower_new). */
typedef struct chr_follower chr_follower;

#define CHR_FOLLOW_STATE_VERSION 2 /**< 2 added applied_availability */
#define CHR_FOLLOW_MESSAGE_MAX 512 /**< bytes of chr_follow_state.message, its NUL included */

/**
 * What a follower has seen: the file applied last and, when the file as
 * last read was refused, why. Set `version` (CHR_FOLLOW_STATE_INIT or
 * chr_follow_state_init()); chr_follower_state() fills the rest.
 */
typedef struct chr_follow_state {
    uint32_t version;             /**< in: CHR_FOLLOW_STATE_VERSION */
    int32_t last_outcome;         /**< CHR_FOLLOW_* of the latest check (UNCHANGED before the first) */
    chr_status status;            /**< CHR_OK when the file as last read is the one applied (or no
                                       check ran yet); otherwise why it was refused */
    uint32_t error_line;          /**< the refused file's line at fault; 0 for the file as a whole */
    uint64_t checks;              /**< chr_follower_check() calls */
    uint64_t applied;             /**< checks that applied a file */
    uint64_t refused;             /**< checks that refused one */
    uint32_t applied_flags;       /**< CHR_RINGFILE_HAS_* of the file applied last (0 if none) */
    uint32_t refused_flags;       /**< CHR_RINGFILE_HAS_REVISION / _HAS_FINGERPRINT: the directives
                                       read from the refused file before the fault (0 if none) */
    uint64_t applied_revision;    /**< the %%revision of the file applied last (0 if none) */
    uint64_t applied_fingerprint; /**< the ring's fingerprint right after that apply (0 if none) */
    uint64_t refused_revision;    /**< the refused file's %%revision, when refused_flags has it */
    uint64_t refused_fingerprint; /**< the refused file's %%fingerprint (what it claimed), when
                                       refused_flags has it */
    char message[CHR_FOLLOW_MESSAGE_MAX]; /**< why the file was refused ("file:line: reason", as
                                       chr_last_error() read after that check); "" when status is
                                       CHR_OK. Always NUL-terminated. */
    /* Version 2: */
    uint64_t applied_availability; /**< the ring's availability digest right after the last apply
                                       (0 if none) */
} chr_follow_state;

#define CHR_FOLLOW_STATE_INIT { CHR_FOLLOW_STATE_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, { 0 }, 0 }

/**
 * Fills `state` with zeros and `version`, the function twin of
 * CHR_FOLLOW_STATE_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL state); CHR_EVERSION (version not in
 *         1..CHR_FOLLOW_STATE_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_follow_state_init(chr_follow_state *state, uint32_t version) CHR_NOEXCEPT;

/**
 * Creates a follower of the ring file at `path` for `ring`. Nothing is read
 * yet: the first chr_follower_check() reads and applies the file, whatever
 * its stamp.
 * @param ring   the ring to keep equal to the file; borrowed, must outlive
 *               the follower
 * @param path   NUL-terminated path of the ring file; copied. A relative
 *               path is resolved at each check against the working
 *               directory of that moment.
 * @param flags  0 (reserved; other values are CHR_EINVAL)
 * @param out    receives the follower; set to NULL on failure
 * @return CHR_OK; CHR_EINVAL (NULL ring, path or out, empty path, flags);
 *         CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: release with chr_follower_free().
 * Since: 0.1.
 */
CHR_API chr_status chr_follower_new(chr_ring *ring, const char *path, uint32_t flags,
                                    chr_follower **out) CHR_NOEXCEPT;

/** Releases a follower (NULL is allowed); its ring is untouched. Not while
 *  another thread uses the follower. Since: 0.1. */
CHR_API void chr_follower_free(chr_follower *follower) CHR_NOEXCEPT;

/**
 * Looks at the file once: when its stamp differs from the one last read
 * (or at the first check), reads it and applies it to the ring as one batch.
 * @param outcome  receives CHR_FOLLOW_UNCHANGED, _APPLIED or _REFUSED (may be
 *                 NULL); CHR_FOLLOW_UNCHANGED when the call itself fails
 *                 (bad arguments)
 * @param info     if not NULL (version set), receives what the applied file
 *                 said and did (chr_ring_apply_file), or the refused file's
 *                 error_line; untouched when the file is unchanged
 * @return CHR_OK when the file is unchanged or was applied. When it was
 *         refused (*outcome is CHR_FOLLOW_REFUSED), the refusal's status,
 *         as chr_ring_apply_file returns it: CHR_EFORMAT, CHR_EOPTIONS,
 *         CHR_EIO, CHR_ENOHASHER, CHR_ENOMEM; chr_last_error() says why.
 *         CHR_EINVAL (NULL follower); CHR_EVERSION (info version).
 *         On every failure the ring is unchanged.
 * Thread-safety: any thread; calls on one follower are serialized.
 * Since: 0.1.
 */
CHR_API chr_status chr_follower_check(chr_follower *follower, int32_t *outcome,
                                      chr_ringfile_info *info) CHR_NOEXCEPT;

/**
 * Copies the follower's state (chr_follow_state) into `state`.
 * @return CHR_OK; CHR_EINVAL (NULL argument); CHR_EVERSION.
 * Thread-safety: any thread, also while another thread checks.
 * Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_follower_state(const chr_follower *follower, chr_follow_state *state) CHR_NOEXCEPT;

/* ------------------------------------------------------------------------ */
/* Migration plans: what moves between two rings                            */
/* ------------------------------------------------------------------------ */

/*
 * A diff compares two snapshots that place keys the same way (same
 * placement, hasher and seed; tokens_per_weight may differ) and tells which
 * key positions change owner, from which node to which: what an operator
 * copies before cutting over to a new membership (docs/migration.md).
 *
 *     chr_diff *diff = NULL;
 *     if (chr_diff_new(old_snap, new_snap, &diff) != CHR_OK) die(chr_last_error());
 *     chr_diff_range r[64];
 *     size_t got;
 *     for (size_t at = 0; chr_diff_ranges(diff, at, r, 64, &got) == CHR_OK && got; at += got)
 *         for (size_t i = 0; i < got; ++i)
 *             copy_range(r[i].first, r[i].last, r[i].from, r[i].to);
 *     chr_diff_free(diff);
 *
 * Key positions are the 64-bit values a key hashes to (the position a
 * lookup searches for; chr_diff_lookup() reports it). A range covers the
 * positions first..last, both included, first <= last: a range never wraps.
 * The arc that wraps around the top of the circle is cut at 2^64 - 1 / 0,
 * so it appears as one range ending at 2^64 - 1 and one starting at 0,
 * and nobody has to subtract positions modulo 2^64. Its share of the key
 * space is (last - first + 1) / 2^64.
 *
 * Owners: a range's `from` is a node index in the old snapshot and its `to`
 * a node index in the new one (chr_snapshot_node() on chr_diff_snapshot()
 * gives ids, zones, weights). Indices are per snapshot: the same node
 * usually has different indices in the two, and nodes are matched across
 * them by id (chr_diff_counterpart()). A key "changes owner" when its old
 * and new owners have different ids; a node whose zone or weight changed is
 * still the same node. CHR_DIFF_NONE stands for "no owner": every position
 * of a snapshot without tokens (empty, or every weight 0).
 *
 * The ranges are exactly the positions that change owner: sorted by
 * `first`, disjoint, and two ranges that touch (one's last + 1 is the
 * other's first) never have the same (from, to) pair: they are merged.
 * Everything is computed by chr_diff_new() in one merge walk over both
 * sorted token arrays, O(T_old + T_new) time; the diff keeps the ranges
 * (24 bytes each: a one-node change in a ring of V tokens per node makes
 * about V of them) and the transfer matrix.
 *
 * THREADING: a diff is immutable once made; any number of threads may read
 * it at once. OWNERSHIP: a diff holds a reference to each of its two
 * snapshots (the caller may release its own right after chr_diff_new());
 * chr_diff_free() drops them. Every other call copies into caller memory,
 * or borrows from those snapshots (valid until chr_diff_free()).
 */

#define CHR_EINCOMPATIBLE (-20) /**< two snapshots place keys differently (placement, hasher or seed): no diff between them */

#define CHR_DIFF_NONE 0xFFFFFFFFu /**< a node index meaning "no node": the snapshot has no token, or no such member */
#define CHR_DIFF_OLD 0            /**< chr_diff_snapshot() / chr_diff_counterpart(): the old snapshot */
#define CHR_DIFF_NEW 1            /**< ... the new snapshot */

/** A difference between two snapshots of rings that place keys alike. */
typedef struct chr_diff chr_diff;

/** Key positions first..last (both included) move from `from` to `to`. */
typedef struct chr_diff_range {
    uint64_t first; /**< first key position of the range */
    uint64_t last;  /**< last key position, included; first <= last */
    uint32_t from;  /**< owner in the old snapshot: node index there, or CHR_DIFF_NONE */
    uint32_t to;    /**< owner in the new snapshot: node index there, or CHR_DIFF_NONE */
} chr_diff_range;

/**
 * One cell of the transfer matrix: the share of the key space owned by
 * `from` in the old snapshot and by `to` in the new one. The cells that are
 * not 0 are listed, sorted by (from, to), CHR_DIFF_NONE last. They cover
 * the whole key space (their fractions sum to 1, up to rounding); the cells
 * whose from and to are the same node (chr_diff_counterpart) are the keys
 * that stay, every other cell is a sum of ranges.
 */
typedef struct chr_diff_cell {
    uint32_t from;   /**< node index in the old snapshot, or CHR_DIFF_NONE */
    uint32_t to;     /**< node index in the new snapshot, or CHR_DIFF_NONE */
    double fraction; /**< of the 2^64 key positions, 0..1 */
} chr_diff_cell;

#define CHR_DIFF_INFO_VERSION 1

/** What a diff found. Set `version` (CHR_DIFF_INFO_INIT) before the call. */
typedef struct chr_diff_info {
    uint32_t version;         /**< in: CHR_DIFF_INFO_VERSION (1..current accepted) */
    uint32_t reserved0;       /**< set to 0 */
    uint64_t ranges;          /**< ranges chr_diff_ranges() lists */
    uint64_t cells;           /**< cells chr_diff_matrix() lists */
    double moved;             /**< share of the key space whose owner changes: the ranges' total */
    uint64_t old_fingerprint; /**< chr_snapshot_fingerprint of each side */
    uint64_t new_fingerprint;
    uint32_t old_nodes;       /**< members of each side, weight 0 included */
    uint32_t new_nodes;
    uint32_t added;           /**< members only in the new snapshot (by id) */
    uint32_t removed;         /**< members only in the old snapshot */
} chr_diff_info;

#define CHR_DIFF_INFO_INIT { CHR_DIFF_INFO_VERSION, 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0 }

/**
 * Where one key lives before and after: for dual reads during a move (read
 * the new owner, fall back to the old one while `moved` and the copy is not
 * done). The views borrow from the diff's snapshots: valid until
 * chr_diff_free(). A side without tokens has no owner: its index is
 * CHR_DIFF_NONE and its view is zero (id NULL, zone "").
 */
typedef struct chr_transition {
    uint64_t position;        /**< the key's position on the circle */
    uint32_t old_index;       /**< owner in the old snapshot, or CHR_DIFF_NONE */
    uint32_t new_index;       /**< owner in the new snapshot, or CHR_DIFF_NONE */
    uint32_t moved;           /**< 1 if the owners are different nodes (different ids, or one is none), else 0 */
    uint32_t reserved0;       /**< set to 0 */
    chr_node_view old_owner;  /**< the old owner (index old_index) */
    chr_node_view new_owner;  /**< the new owner (index new_index) */
} chr_transition;

/**
 * Fills `info` with zeros and `version`, the function twin of
 * CHR_DIFF_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL (NULL info); CHR_EVERSION (version not in
 *         1..CHR_DIFF_INFO_VERSION).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_diff_info_init(chr_diff_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * Computes what changes from `old_snap` to `new_snap`: the ranges, the
 * transfer matrix and the node correspondence, in one merge walk over the
 * two token arrays (O(T_old + T_new) time; memory for the ranges, the
 * cells and 4 bytes per member of each side).
 * @param out  receives the diff; set to NULL on failure
 * @return CHR_OK; CHR_EINVAL (NULL argument); CHR_EINCOMPATIBLE (the
 *         snapshots differ in placement, hasher or, for a seeded placement,
 *         seed: the message names both values); CHR_ENOMEM.
 * Thread-safety: any thread (snapshots are immutable). Ownership: release
 * with chr_diff_free(); the diff holds its own reference to both snapshots,
 * which stay alive until then even if the caller releases them. Since: 0.1.
 */
CHR_API chr_status chr_diff_new(const chr_snapshot *old_snap, const chr_snapshot *new_snap,
                                chr_diff **out) CHR_NOEXCEPT;

/**
 * Frees a diff and drops its references to the two snapshots. NULL is a
 * no-op. Pointers borrowed through it (chr_diff_snapshot, the views of a
 * chr_transition) are invalid afterwards unless the caller holds its own
 * reference to those snapshots.
 * Thread-safety: exclusive (no other call on this diff may run). Since: 0.1.
 */
CHR_API void chr_diff_free(chr_diff *diff) CHR_NOEXCEPT;

/**
 * Counts and totals of the diff (see chr_diff_info).
 * @param info  its `version` set by the caller; the fields of that version
 *              are filled
 * @return CHR_OK; CHR_EINVAL; CHR_EVERSION.
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_diff_describe(const chr_diff *diff, chr_diff_info *info) CHR_NOEXCEPT;

/**
 * Copies ranges `cursor`, `cursor` + 1, ... into `out`, in order: start at
 * 0 and add `written` until it is 0. Total: chr_diff_info.ranges.
 * @param cursor    index of the first range to copy, 0..ranges
 * @param out       room for `capacity` ranges (NULL only with capacity 0)
 * @param written   receives how many were copied: min(capacity, ranges - cursor)
 * @return CHR_OK; CHR_EINVAL (NULL diff or written, NULL out with
 *         capacity > 0); CHR_ERANGE (cursor past the end).
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_diff_ranges(const chr_diff *diff, size_t cursor, chr_diff_range *out,
                                   size_t capacity, size_t *written) CHR_NOEXCEPT;

/**
 * Copies cells `cursor`, ... of the transfer matrix (chr_diff_cell), as
 * chr_diff_ranges does. Total: chr_diff_info.cells.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (cursor past the end).
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_diff_matrix(const chr_diff *diff, size_t cursor, chr_diff_cell *out,
                                   size_t capacity, size_t *written) CHR_NOEXCEPT;

/**
 * One of the diff's two snapshots, to read the nodes its indices name
 * (chr_snapshot_node), their ids, zones, weights and shares.
 * @param side  CHR_DIFF_OLD or CHR_DIFF_NEW
 * @param out   receives the snapshot, borrowed: valid until chr_diff_free();
 *              do not release it
 * @return CHR_OK; CHR_EINVAL (NULL argument, unknown side).
 * Thread-safety: any thread. Since: 0.1.
 */
CHR_API chr_status chr_diff_snapshot(const chr_diff *diff, int32_t side, const chr_snapshot **out) CHR_NOEXCEPT;

/**
 * The same node (by id) on the other side: for node `index` of snapshot
 * `side`, its index in the other snapshot, or CHR_DIFF_NONE if the other
 * has no member with that id (added or removed). CHR_DIFF_NONE maps to
 * CHR_DIFF_NONE.
 * @return CHR_OK; CHR_EINVAL (NULL argument, unknown side); CHR_ERANGE
 *         (index past that snapshot's members).
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_diff_counterpart(const chr_diff *diff, int32_t side, uint32_t index,
                                        uint32_t *other) CHR_NOEXCEPT;

/**
 * The transition lookup: where `key` lives in the new snapshot and where it
 * lived in the old one, and whether that is a move. The key is hashed once
 * (both snapshots place it at the same position). Never fails on an empty
 * side: that side's owner is CHR_DIFF_NONE.
 * @return CHR_OK; CHR_EINVAL (NULL diff or out, NULL key with length > 0).
 * Thread-safety: any thread; lock-free, allocation-free. Ownership: the
 * views borrow from the diff's snapshots, valid until chr_diff_free().
 * Since: 0.1.
 */
CHR_API chr_status chr_diff_lookup(const chr_diff *diff, const void *key, size_t key_len,
                                   chr_transition *out) CHR_NOEXCEPT;

/**
 * chr_diff_lookup for `n` keys at once, indices only (for FFI callers and
 * key files): `old_indices[i]` / `new_indices[i]` receive key i's owners
 * (CHR_DIFF_NONE on a side without tokens). A key moved when
 * chr_diff_counterpart(diff, CHR_DIFF_OLD, old_indices[i]) differs from
 * new_indices[i].
 * @return CHR_OK; CHR_EINVAL (NULL arrays with n > 0, a NULL key with a
 *         length). On error the outputs are unspecified.
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_diff_lookup_batch(const chr_diff *diff, const void *const *keys,
                                         const size_t *key_lens, size_t n, uint32_t *old_indices,
                                         uint32_t *new_indices) CHR_NOEXCEPT;

/*
 * A replica-aware plan: with n copies of each key, which node must receive
 * which ranges, and from which old replicas it can copy them. For every key
 * position the plan compares the key's first n replicas in the old snapshot
 * with those in the new one (under a replica policy): each node of the new
 * list that is not in the old list (by id) gains the position, and any node
 * of the old list holds the data. Positions where the lists hold the same
 * nodes (in any order) need no copy and appear nowhere.
 *
 * Entries are sorted by (first, to). Entries of one gaining node are
 * disjoint, and touching entries of one node with the same sources are
 * merged; entries of different nodes may overlap (with n > 1 a new node can
 * gain a range as replica 1 while another gains it as replica 3).
 * Built by one walk over both token arrays, computing each side's replica
 * list once per token: O((T_old + T_new) x walk), where a walk is the
 * tokens one replica list reads (a few for n = 3 on an even ring, more
 * under a zone policy when a zone is small).
 */

#define CHR_PLAN_REPLICAS_MAX 16 /**< largest n of a plan: the sources fit one fixed array */

/** A plan for n replicas between a diff's two snapshots. */
typedef struct chr_plan chr_plan;

/** Node `to` gains positions first..last and can copy them from `sources`. */
typedef struct chr_plan_range {
    uint64_t first;         /**< first key position, as chr_diff_range */
    uint64_t last;          /**< last key position, included */
    uint32_t to;            /**< the gaining node: its index in the new snapshot */
    uint32_t source_count;  /**< entries of `sources` used: the old list's length (0: the old snapshot has no tokens) */
    uint32_t sources[CHR_PLAN_REPLICAS_MAX]; /**< the old replicas, old snapshot indices, in the old
                                                  list's order (coordinator first); unused entries are
                                                  CHR_DIFF_NONE */
} chr_plan_range;

#define CHR_PLAN_INFO_VERSION 1

/** What a plan holds. Set `version` (CHR_PLAN_INFO_INIT) before the call. */
typedef struct chr_plan_info {
    uint32_t version;   /**< in: CHR_PLAN_INFO_VERSION (1..current accepted) */
    int32_t policy;     /**< the replica policy it was made for */
    uint32_t replicas;  /**< n, as asked */
    uint32_t reserved0; /**< set to 0 */
    uint64_t entries;   /**< entries chr_plan_ranges() lists */
    double copies;      /**< the entries' total share of the key space: what is copied, in units of
                             one full copy of the data (up to n) */
} chr_plan_info;

#define CHR_PLAN_INFO_INIT { CHR_PLAN_INFO_VERSION, 0, 0, 0, 0, 0.0 }

/**
 * Fills `info` with zeros and `version`, the function twin of
 * CHR_PLAN_INFO_INIT for bindings.
 * @return CHR_OK; CHR_EINVAL; CHR_EVERSION.
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_plan_info_init(chr_plan_info *info, uint32_t version) CHR_NOEXCEPT;

/**
 * Computes the plan for `replicas` copies under replica policy `policy`
 * (CHR_REPLICAS_*: the lists chr_snapshot_replicas_policy gives) between
 * the two snapshots of `diff`. Each side's lists are clamped to its nodes
 * with tokens, as chr_snapshot_replicas_policy clamps them. Under a zone
 * policy, a node whose zone changed gains what its new zone makes it hold.
 * @param replicas  1..CHR_PLAN_REPLICAS_MAX
 * @param out       receives the plan; set to NULL on failure
 * @return CHR_OK; CHR_EINVAL (NULL argument, replicas 0); CHR_ERANGE
 *         (replicas over CHR_PLAN_REPLICAS_MAX); CHR_ENOTSUP (unknown
 *         policy); CHR_ENOMEM.
 * Thread-safety: any thread. Ownership: release with chr_plan_free(); the
 * plan holds its own references to the diff's snapshots, so it may outlive
 * the diff. Since: 0.1.
 */
CHR_API chr_status chr_plan_new(const chr_diff *diff, int32_t policy, size_t replicas,
                                chr_plan **out) CHR_NOEXCEPT;

/**
 * Frees a plan and its snapshot references; NULL is a no-op.
 * Thread-safety: exclusive. Since: 0.1.
 */
CHR_API void chr_plan_free(chr_plan *plan) CHR_NOEXCEPT;

/**
 * Counts and totals of the plan (see chr_plan_info).
 * @return CHR_OK; CHR_EINVAL; CHR_EVERSION.
 * Thread-safety: any thread. Ownership: writes caller memory. Since: 0.1.
 */
CHR_API chr_status chr_plan_describe(const chr_plan *plan, chr_plan_info *info) CHR_NOEXCEPT;

/**
 * Copies entries `cursor`, ... of the plan, as chr_diff_ranges does.
 * Total: chr_plan_info.entries.
 * @return CHR_OK; CHR_EINVAL; CHR_ERANGE (cursor past the end).
 * Thread-safety: any thread. Ownership: writes caller memory only.
 * Since: 0.1.
 */
CHR_API chr_status chr_plan_ranges(const chr_plan *plan, size_t cursor, chr_plan_range *out,
                                   size_t capacity, size_t *written) CHR_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* CHRING_H */
