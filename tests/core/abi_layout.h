/*
 * abi_layout.h — the layout of every public struct, pinned.
 *
 * CHR_ABI_LAYOUT(SIZE, FIELD) expands SIZE(type, bytes) and
 * FIELD(type, member, offset) for each struct and member, with the values
 * of the LP64 ABI (x86_64, aarch64) that libchring.so.1 was released with.
 * Each translation unit of test_abi (C99, C++17) measures its own view of
 * the header through this list; test_abi compares them all to the pins.
 * A change here is an ABI break: bump CHR_ABI_VERSION and the soname.
 * Include it after chring.h.
 */
#ifndef CHRING_ABI_LAYOUT_H
#define CHRING_ABI_LAYOUT_H

#include <stddef.h>

#define CHR_ABI_LAYOUT(SIZE, FIELD)                  \
    SIZE(chr_options, 40)                            \
    FIELD(chr_options, version, 0)                   \
    FIELD(chr_options, tokens_per_weight, 4)         \
    FIELD(chr_options, seed, 8)                      \
    FIELD(chr_options, hasher, 16)                   \
    FIELD(chr_options, placement, 24)                \
    FIELD(chr_options, reserved0, 28)                \
    FIELD(chr_options, plugin_dir, 32)               \
    SIZE(chr_change, 48)                             \
    FIELD(chr_change, op, 0)                         \
    FIELD(chr_change, weight, 4)                     \
    FIELD(chr_change, id, 8)                         \
    FIELD(chr_change, id_len, 16)                    \
    FIELD(chr_change, zone, 24)                      \
    FIELD(chr_change, zone_len, 32)                  \
    FIELD(chr_change, tag, 40)                       \
    SIZE(chr_node_ref, 360)                          \
    FIELD(chr_node_ref, tag, 0)                      \
    FIELD(chr_node_ref, ownership, 8)                \
    FIELD(chr_node_ref, weight, 16)                  \
    FIELD(chr_node_ref, tokens, 20)                  \
    FIELD(chr_node_ref, index, 24)                   \
    FIELD(chr_node_ref, id_len, 28)                  \
    FIELD(chr_node_ref, zone_len, 32)                \
    FIELD(chr_node_ref, flags, 36)               \
    FIELD(chr_node_ref, id, 40)                      \
    FIELD(chr_node_ref, zone, 296)                   \
    SIZE(chr_node_view, 64)                          \
    FIELD(chr_node_view, id, 0)                      \
    FIELD(chr_node_view, id_len, 8)                  \
    FIELD(chr_node_view, zone, 16)                   \
    FIELD(chr_node_view, zone_len, 24)               \
    FIELD(chr_node_view, tag, 32)                    \
    FIELD(chr_node_view, ownership, 40)              \
    FIELD(chr_node_view, weight, 48)                 \
    FIELD(chr_node_view, tokens, 52)                 \
    FIELD(chr_node_view, index, 56)                  \
    FIELD(chr_node_view, flags, 60)              \
    SIZE(chr_hasher_info, 32)                        \
    FIELD(chr_hasher_info, name, 0)                  \
    FIELD(chr_hasher_info, description, 8)           \
    FIELD(chr_hasher_info, origin, 16)               \
    FIELD(chr_hasher_info, digest_size, 24)          \
    FIELD(chr_hasher_info, reserved0, 28)            \
    SIZE(chr_placement_info, 40)                     \
    FIELD(chr_placement_info, version, 0)            \
    FIELD(chr_placement_info, mode, 4)               \
    FIELD(chr_placement_info, name, 8)               \
    FIELD(chr_placement_info, summary, 16)           \
    FIELD(chr_placement_info, hasher, 24)            \
    FIELD(chr_placement_info, digest_size, 32)       \
    FIELD(chr_placement_info, flags, 36)             \
    SIZE(chr_hasher, 56)                             \
    FIELD(chr_hasher, abi_version, 0)                \
    FIELD(chr_hasher, struct_size, 4)                \
    FIELD(chr_hasher, name, 8)                       \
    FIELD(chr_hasher, description, 16)               \
    FIELD(chr_hasher, hash64, 24)                    \
    FIELD(chr_hasher, digest_size, 32)               \
    FIELD(chr_hasher, digest, 40)                    \
    FIELD(chr_hasher, flags, 48)                     \
    SIZE(chr_ringfile_info, 72)                      \
    FIELD(chr_ringfile_info, version, 0)             \
    FIELD(chr_ringfile_info, flags, 4)               \
    FIELD(chr_ringfile_info, revision, 8)            \
    FIELD(chr_ringfile_info, fingerprint, 16)        \
    FIELD(chr_ringfile_info, format_version, 24)     \
    FIELD(chr_ringfile_info, members, 28)            \
    FIELD(chr_ringfile_info, added, 32)              \
    FIELD(chr_ringfile_info, removed, 36)            \
    FIELD(chr_ringfile_info, reweighted, 40)         \
    FIELD(chr_ringfile_info, replaced, 44)           \
    FIELD(chr_ringfile_info, error_line, 48)         \
    FIELD(chr_ringfile_info, reserved0, 52)          \
    FIELD(chr_ringfile_info, availability, 56)       \
    FIELD(chr_ringfile_info, down, 64)               \
    FIELD(chr_ringfile_info, panic_threshold, 68)    \
    SIZE(chr_diff_range, 24)                         \
    FIELD(chr_diff_range, first, 0)                  \
    FIELD(chr_diff_range, last, 8)                   \
    FIELD(chr_diff_range, from, 16)                  \
    FIELD(chr_diff_range, to, 20)                    \
    SIZE(chr_diff_cell, 16)                          \
    FIELD(chr_diff_cell, from, 0)                    \
    FIELD(chr_diff_cell, to, 4)                      \
    FIELD(chr_diff_cell, fraction, 8)                \
    SIZE(chr_diff_info, 64)                          \
    FIELD(chr_diff_info, version, 0)                 \
    FIELD(chr_diff_info, reserved0, 4)               \
    FIELD(chr_diff_info, ranges, 8)                  \
    FIELD(chr_diff_info, cells, 16)                  \
    FIELD(chr_diff_info, moved, 24)                  \
    FIELD(chr_diff_info, old_fingerprint, 32)        \
    FIELD(chr_diff_info, new_fingerprint, 40)        \
    FIELD(chr_diff_info, old_nodes, 48)              \
    FIELD(chr_diff_info, new_nodes, 52)              \
    FIELD(chr_diff_info, added, 56)                  \
    FIELD(chr_diff_info, removed, 60)                \
    SIZE(chr_transition, 152)                        \
    FIELD(chr_transition, position, 0)               \
    FIELD(chr_transition, old_index, 8)              \
    FIELD(chr_transition, new_index, 12)             \
    FIELD(chr_transition, moved, 16)                 \
    FIELD(chr_transition, reserved0, 20)             \
    FIELD(chr_transition, old_owner, 24)             \
    FIELD(chr_transition, new_owner, 88)             \
    SIZE(chr_plan_range, 88)                         \
    FIELD(chr_plan_range, first, 0)                  \
    FIELD(chr_plan_range, last, 8)                   \
    FIELD(chr_plan_range, to, 16)                    \
    FIELD(chr_plan_range, source_count, 20)          \
    FIELD(chr_plan_range, sources, 24)               \
    SIZE(chr_plan_info, 32)                          \
    FIELD(chr_plan_info, version, 0)                 \
    FIELD(chr_plan_info, policy, 4)                  \
    FIELD(chr_plan_info, replicas, 8)                \
    FIELD(chr_plan_info, reserved0, 12)              \
    FIELD(chr_plan_info, entries, 16)                \
    FIELD(chr_plan_info, copies, 24)                 \
    SIZE(chr_follow_state, 600)                      \
    FIELD(chr_follow_state, version, 0)          \
    FIELD(chr_follow_state, last_outcome, 4)     \
    FIELD(chr_follow_state, status, 8)           \
    FIELD(chr_follow_state, error_line, 12)      \
    FIELD(chr_follow_state, checks, 16)          \
    FIELD(chr_follow_state, applied, 24)         \
    FIELD(chr_follow_state, refused, 32)         \
    FIELD(chr_follow_state, applied_flags, 40)   \
    FIELD(chr_follow_state, refused_flags, 44)   \
    FIELD(chr_follow_state, applied_revision, 48)\
    FIELD(chr_follow_state, applied_fingerprint, 56)\
    FIELD(chr_follow_state, refused_revision, 64)\
    FIELD(chr_follow_state, refused_fingerprint, 72)\
    FIELD(chr_follow_state, message, 80)             \
    FIELD(chr_follow_state, applied_availability, 592)\
    SIZE(chr_availability_info, 40)                  \
    FIELD(chr_availability_info, version, 0)         \
    FIELD(chr_availability_info, panic, 4)           \
    FIELD(chr_availability_info, panic_threshold, 8) \
    FIELD(chr_availability_info, down, 12)           \
    FIELD(chr_availability_info, down_weight, 16)    \
    FIELD(chr_availability_info, total_weight, 24)   \
    FIELD(chr_availability_info, digest, 32)         \
    SIZE(chr_error_info, 80)                         \
    FIELD(chr_error_info, version, 0)                \
    FIELD(chr_error_info, status, 4)                 \
    FIELD(chr_error_info, flags, 8)                  \
    FIELD(chr_error_info, line, 12)                  \
    FIELD(chr_error_info, other_line, 16)            \
    FIELD(chr_error_info, reserved0, 20)             \
    FIELD(chr_error_info, change_index, 24)          \
    FIELD(chr_error_info, function, 32)              \
    FIELD(chr_error_info, message, 40)               \
    FIELD(chr_error_info, reason, 48)                \
    FIELD(chr_error_info, source, 56)                \
    FIELD(chr_error_info, member, 64)                \
    FIELD(chr_error_info, member_len, 72)            \
    SIZE(chr_ringfile_member, 336)                   \
    FIELD(chr_ringfile_member, version, 0)           \
    FIELD(chr_ringfile_member, weight, 4)            \
    FIELD(chr_ringfile_member, id_len, 8)            \
    FIELD(chr_ringfile_member, zone_len, 12)         \
    FIELD(chr_ringfile_member, id, 16)               \
    FIELD(chr_ringfile_member, zone, 272)

/* Helpers to expand the list into arrays. */
#define CHR_ABI_MEASURE_SIZE(type, bytes) sizeof(type),
#define CHR_ABI_MEASURE_FIELD(type, member, offset) offsetof(type, member),
#define CHR_ABI_PINNED_SIZE(type, bytes) (size_t)(bytes),
#define CHR_ABI_PINNED_FIELD(type, member, offset) (size_t)(offset),
#define CHR_ABI_NAME_SIZE(type, bytes) "sizeof(" #type ")",
#define CHR_ABI_NAME_FIELD(type, member, offset) "offsetof(" #type ", " #member ")",

#ifdef __cplusplus
extern "C" {
#endif

/* Each translation unit's measurements, in list order; *count receives
 * the number of entries. */
const size_t *abi_layout_c99(size_t *count);
const size_t *abi_layout_cxx(size_t *count);

/* CHR_OPTIONS_INIT as each language's compiler fills it. */
void abi_options_init_c99(chr_options *out);
void abi_options_init_cxx(chr_options *out);

/* chr_version() called from C++, proving the header gives C linkage. */
uint32_t abi_version_from_cxx(void);

#ifdef __cplusplus
}
#endif

#endif /* CHRING_ABI_LAYOUT_H */
