/*
 * C side of the Go binding. chr_last_error() and chr_last_error_info() are
 * per OS thread, and a goroutine may move to another thread between two cgo
 * calls, so every fallible call goes through a wrapper that copies the
 * failure in the same call, on the thread that failed.
 *
 * Ring and snapshot handles are passed as void *: cgo boxes a typed pointer
 * to an incomplete C struct on the heap at every call (one allocation per
 * lookup), and an unsafe.Pointer it does not.
 */
#ifndef CHRING_GO_SHIM_H
#define CHRING_GO_SHIM_H

#include <chring.h>

/* A failure as the failing thread recorded it: chr_last_error_info()'s
 * fields the Go error carries, copied into one malloc'd block. */
typedef struct gochr_failure {
    uint32_t flags;        /* CHR_ERROR_HAS_* */
    uint32_t line;         /* with CHR_ERROR_HAS_LINE */
    uint32_t other_line;   /* with CHR_ERROR_HAS_OTHER_LINE */
    uint32_t member_len;   /* with CHR_ERROR_HAS_MEMBER */
    uint64_t change_index; /* with CHR_ERROR_HAS_CHANGE */
    unsigned char member[CHR_NODE_ID_MAX];
    char message[512];     /* chr_last_error() */
} gochr_failure;

/* A status and, on failure, a malloc'd copy of the failure (NULL on
 * success or if the copy could not be made); the Go side frees it. */
typedef struct gochr_result {
    chr_status status;
    gochr_failure *failure;
} gochr_result;

gochr_result gochr_ring_new(const chr_options *opts, chr_ring **out);
gochr_result gochr_ring_add(void *ring, const void *id, size_t id_len, uint32_t weight,
                            const void *zone, size_t zone_len, uint64_t tag);
gochr_result gochr_ring_remove(void *ring, const void *id, size_t id_len);
gochr_result gochr_ring_set_weight(void *ring, const void *id, size_t id_len, uint32_t weight);
gochr_result gochr_ring_apply(void *ring, const chr_change *changes, size_t count,
                              size_t *failed_index);
gochr_result gochr_ring_lookup(const void *ring, const void *key, size_t key_len,
                               chr_node_ref *out);
gochr_result gochr_ring_replicas(const void *ring, const void *key, size_t key_len, size_t n,
                                 chr_node_ref *out, size_t *count);
gochr_result gochr_ring_node_count(const void *ring, size_t *count);
gochr_result gochr_ring_token_count(const void *ring, size_t *count);
gochr_result gochr_ring_nodes(const void *ring, chr_node_ref *out, size_t capacity,
                              size_t *count);
gochr_result gochr_ring_ownership(const void *ring, const void *id, size_t id_len,
                                  double *fraction);
gochr_result gochr_ring_fingerprint(const void *ring, uint64_t *fingerprint);
gochr_result gochr_ring_snapshot(const void *ring, chr_snapshot **out);
gochr_result gochr_snapshot_lookup(const void *snap, const void *key, size_t key_len,
                                   chr_node_view *out);
gochr_result gochr_snapshot_replicas(const void *snap, const void *key, size_t key_len,
                                     size_t n, chr_node_view *out, size_t *count);
gochr_result gochr_snapshot_node(const void *snap, size_t index, chr_node_view *out);
gochr_result gochr_ring_replicas_policy(const void *ring, const void *key, size_t key_len,
                                        int32_t policy, size_t n, chr_node_ref *out,
                                        size_t *count);
gochr_result gochr_snapshot_replicas_policy(const void *snap, const void *key, size_t key_len,
                                            int32_t policy, size_t n, chr_node_view *out,
                                            size_t *count);
gochr_result gochr_snapshot_replica_shares(const void *snap, int32_t policy, size_t n,
                                           double *shares, size_t capacity, size_t *count);
gochr_result gochr_replica_policy_name(int32_t policy, const char **name);
gochr_result gochr_replica_policy_find(const char *name, int32_t *policy);
gochr_result gochr_diff_new(const void *old_snap, const void *new_snap, chr_diff **out);
gochr_result gochr_diff_describe(const void *diff, chr_diff_info *info);
gochr_result gochr_diff_ranges(const void *diff, size_t cursor, chr_diff_range *out,
                               size_t capacity, size_t *written);
gochr_result gochr_diff_matrix(const void *diff, size_t cursor, chr_diff_cell *out,
                               size_t capacity, size_t *written);
gochr_result gochr_diff_snapshot(const void *diff, int32_t side, const chr_snapshot **out);
gochr_result gochr_diff_counterpart(const void *diff, int32_t side, uint32_t index,
                                    uint32_t *other);
gochr_result gochr_diff_lookup(const void *diff, const void *key, size_t key_len,
                               chr_transition *out);
gochr_result gochr_plan_new(const void *diff, int32_t policy, size_t replicas, chr_plan **out);
gochr_result gochr_plan_describe(const void *plan, chr_plan_info *info);
gochr_result gochr_plan_ranges(const void *plan, size_t cursor, chr_plan_range *out,
                               size_t capacity, size_t *written);
gochr_result gochr_snapshot_node_count(const void *snap, size_t *count);
gochr_result gochr_snapshot_token_count(const void *snap, size_t *count);
gochr_result gochr_snapshot_fingerprint(const void *snap, uint64_t *fingerprint);
gochr_result gochr_snapshot_token(const void *snap, size_t index, uint64_t *value,
                                  uint32_t *node_index);
gochr_result gochr_plugin_load(const char *path, size_t *loaded);
gochr_result gochr_hasher_list(const char *plugin_dir, chr_hasher_info *out, size_t capacity,
                               size_t *count);
gochr_result gochr_hasher_digest(const char *name, const void *data, size_t len,
                                 unsigned char *out, size_t capacity, size_t *digest_size);
gochr_result gochr_hasher_hash(const char *name, const void *data, size_t len, uint64_t seed,
                               uint64_t *out);
gochr_result gochr_ring_new_from_text(const void *text, size_t len, const char *name,
                                     const chr_options *base, chr_ring **out,
                                     chr_ringfile_info *info);
gochr_result gochr_ring_new_from_file(const char *path, const chr_options *base, chr_ring **out,
                                     chr_ringfile_info *info);
gochr_result gochr_ring_apply_text(void *ring, const void *text, size_t len, const char *name,
                                   chr_ringfile_info *info);
gochr_result gochr_ring_apply_file(void *ring, const char *path, chr_ringfile_info *info);
gochr_result gochr_ring_export(const void *ring, uint32_t flags, uint64_t revision, void *buf,
                               size_t capacity, size_t *len);
gochr_result gochr_snapshot_export(const void *snap, uint32_t flags, uint64_t revision, void *buf,
                                   size_t capacity, size_t *len);

/* Following a ring file (chring.h, "Following a ring file"); the follower
 * is passed as void * like the ring. */
gochr_result gochr_follower_new(void *ring, const char *path, chr_follower **out);
gochr_result gochr_follower_check(void *follower, int32_t *outcome, chr_ringfile_info *info);
gochr_result gochr_follower_state(const void *follower, chr_follow_state *state);

/* Availability (chring.h, "Availability"). */
gochr_result gochr_ring_set_down(void *ring, const void *id, size_t id_len, uint32_t down);
gochr_result gochr_ring_set_availability_packed(void *ring, const void *data, const size_t *lens,
                                               size_t count, uint32_t panic_threshold);
gochr_result gochr_ring_availability(const void *ring, chr_availability_info *info);
gochr_result gochr_snapshot_availability(const void *snap, chr_availability_info *info);
gochr_result gochr_snapshot_marked_down(const void *snap, size_t index, uint32_t *marked);

/* Bounded loads and the tracker (chring.h, "Bounded loads and availability"). */
gochr_result gochr_snapshot_lookup_bounded(const void *snap, const void *key, size_t key_len,
                                           const uint64_t *loads, const unsigned char *available,
                                           size_t n_nodes, const chr_bound_options *opts,
                                           chr_node_view *out, chr_bound_result *result);
gochr_result gochr_bound_capacities(const uint32_t *weights, size_t n, uint64_t total_load,
                                    const chr_bound_options *opts, uint64_t *caps);
gochr_result gochr_tracker_new(size_t max_nodes, chr_tracker **out);
gochr_result gochr_tracker_acquire(void *tracker, const void *snap, const void *key,
                                   size_t key_len, const chr_bound_options *opts,
                                   chr_node_view *out, chr_bound_result *result,
                                   chr_ticket *ticket);
gochr_result gochr_tracker_release(void *tracker, const chr_ticket *ticket);
gochr_result gochr_tracker_set_available(void *tracker, const void *id, size_t id_len,
                                         uint32_t available);
gochr_result gochr_tracker_load(const void *tracker, const void *id, size_t id_len,
                                uint64_t *load);
gochr_result gochr_tracker_total(const void *tracker, uint64_t *total);
/* The hot paths return everything by value: a Go pointer passed to C
 * escapes to the Go heap, so an out-parameter would cost one allocation per
 * call. */

/* A lookup's status, owner index and, on failure, the failure. */
typedef struct gochr_index {
    chr_status status;
    uint32_t index;
    gochr_failure *failure;
} gochr_index;

gochr_index gochr_snapshot_lookup_index(const void *snap, const void *key, size_t key_len);

/* chr_ring_lookup's owner index only (the ring's Go side returns the node
 * from its own copy of the node table, once it knows no change ran
 * meanwhile). */
gochr_index gochr_ring_lookup_index(const void *ring, const void *key, size_t key_len);

/* A replica call's status, count written and, on failure, the failure. */
typedef struct gochr_count {
    chr_status status;
    size_t count;
    gochr_failure *failure;
} gochr_count;

/* chr_ring_replicas / chr_snapshot_replicas writing only the owners'
 * indices: `indices` has room for n (Go memory without pointers). */
gochr_count gochr_ring_replicas_index(const void *ring, const void *key, size_t key_len,
                                      size_t n, uint32_t *indices);
gochr_count gochr_snapshot_replicas_index(const void *snap, const void *key, size_t key_len,
                                          size_t n, uint32_t *indices);

/* chr_snapshot_lookup_batch over keys packed end to end in `data`: key i is
 * the lens[i] bytes after keys 0..i-1. The pointer array is built here, in
 * chunks on the C stack, because Go memory passed to C must not hold Go
 * pointers. */
gochr_result gochr_snapshot_lookup_packed(const void *snap, const void *data, const size_t *lens,
                                          size_t n, uint32_t *indices);

#endif
