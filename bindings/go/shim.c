#include "shim.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failure with only a message (the shim's own), or NULL without memory. */
static gochr_failure *failure_saying(const char *message) {
    gochr_failure *f = calloc(1, sizeof *f);
    if (f) snprintf(f->message, sizeof f->message, "%s", message);
    return f;
}

/* This thread's failure, just recorded. */
static gochr_failure *recorded_failure(void) {
    chr_error_info info = CHR_ERROR_INFO_INIT;
    if (chr_last_error_info(&info) != CHR_OK) return failure_saying(chr_last_error());
    gochr_failure *f = failure_saying(info.message);
    if (!f) return NULL;
    f->flags = info.flags;
    f->line = info.line;
    f->other_line = info.other_line;
    f->change_index = info.change_index;
    if (info.flags & CHR_ERROR_HAS_MEMBER) {
        f->member_len = (uint32_t)info.member_len;
        memcpy(f->member, info.member, info.member_len);
    }
    return f;
}

static gochr_result finish(chr_status status) {
    gochr_result r = {status, NULL};
    if (status != CHR_OK) r.failure = recorded_failure();
    return r;
}

/* One wrapper per fallible call: gochr_<name>(params) = finish(chr_<name>(args)). */
#define WRAP(name, params, args) \
    gochr_result gochr_##name params { return finish(chr_##name args); }

WRAP(ring_new, (const chr_options *opts, chr_ring **out), (opts, out))
WRAP(ring_add,
     (void *ring, const void *id, size_t id_len, uint32_t weight, const void *zone,
      size_t zone_len, uint64_t tag),
     (ring, id, id_len, weight, zone, zone_len, tag))
WRAP(ring_remove, (void *ring, const void *id, size_t id_len), (ring, id, id_len))
WRAP(ring_set_weight, (void *ring, const void *id, size_t id_len, uint32_t weight),
     (ring, id, id_len, weight))
WRAP(ring_apply, (void *ring, const chr_change *changes, size_t count, size_t *failed_index),
     (ring, changes, count, failed_index))
WRAP(ring_lookup, (const void *ring, const void *key, size_t key_len, chr_node_ref *out),
     (ring, key, key_len, out))
WRAP(ring_replicas,
     (const void *ring, const void *key, size_t key_len, size_t n, chr_node_ref *out,
      size_t *count),
     (ring, key, key_len, n, out, count))
WRAP(ring_node_count, (const void *ring, size_t *count), (ring, count))
WRAP(ring_token_count, (const void *ring, size_t *count), (ring, count))
WRAP(ring_nodes, (const void *ring, chr_node_ref *out, size_t capacity, size_t *count),
     (ring, out, capacity, count))
WRAP(ring_ownership, (const void *ring, const void *id, size_t id_len, double *fraction),
     (ring, id, id_len, fraction))
WRAP(ring_fingerprint, (const void *ring, uint64_t *fingerprint), (ring, fingerprint))
WRAP(ring_snapshot, (const void *ring, chr_snapshot **out), (ring, out))
WRAP(snapshot_lookup,
     (const void *snap, const void *key, size_t key_len, chr_node_view *out),
     (snap, key, key_len, out))
WRAP(snapshot_replicas,
     (const void *snap, const void *key, size_t key_len, size_t n, chr_node_view *out,
      size_t *count),
     (snap, key, key_len, n, out, count))
WRAP(snapshot_node, (const void *snap, size_t index, chr_node_view *out),
     (snap, index, out))
WRAP(ring_replicas_policy,
     (const void *ring, const void *key, size_t key_len, int32_t policy, size_t n,
      chr_node_ref *out, size_t *count),
     (ring, key, key_len, policy, n, out, count))
WRAP(snapshot_replicas_policy,
     (const void *snap, const void *key, size_t key_len, int32_t policy, size_t n,
      chr_node_view *out, size_t *count),
     (snap, key, key_len, policy, n, out, count))
WRAP(snapshot_replica_shares,
     (const void *snap, int32_t policy, size_t n, double *shares, size_t capacity, size_t *count),
     (snap, policy, n, shares, capacity, count))
WRAP(replica_policy_name, (int32_t policy, const char **name), (policy, name))
WRAP(replica_policy_find, (const char *name, int32_t *policy), (name, policy))
WRAP(diff_new, (const void *old_snap, const void *new_snap, chr_diff **out), (old_snap, new_snap, out))
WRAP(diff_describe, (const void *diff, chr_diff_info *info), (diff, info))
WRAP(diff_ranges,
     (const void *diff, size_t cursor, chr_diff_range *out, size_t capacity, size_t *written),
     (diff, cursor, out, capacity, written))
WRAP(diff_matrix,
     (const void *diff, size_t cursor, chr_diff_cell *out, size_t capacity, size_t *written),
     (diff, cursor, out, capacity, written))
WRAP(diff_snapshot, (const void *diff, int32_t side, const chr_snapshot **out), (diff, side, out))
WRAP(diff_counterpart, (const void *diff, int32_t side, uint32_t index, uint32_t *other),
     (diff, side, index, other))
WRAP(diff_lookup, (const void *diff, const void *key, size_t key_len, chr_transition *out),
     (diff, key, key_len, out))
WRAP(plan_new, (const void *diff, int32_t policy, size_t replicas, chr_plan **out),
     (diff, policy, replicas, out))
WRAP(plan_describe, (const void *plan, chr_plan_info *info), (plan, info))
WRAP(plan_ranges,
     (const void *plan, size_t cursor, chr_plan_range *out, size_t capacity, size_t *written),
     (plan, cursor, out, capacity, written))
WRAP(snapshot_node_count, (const void *snap, size_t *count), (snap, count))
WRAP(snapshot_token_count, (const void *snap, size_t *count), (snap, count))
WRAP(snapshot_fingerprint, (const void *snap, uint64_t *fingerprint), (snap, fingerprint))
WRAP(snapshot_token,
     (const void *snap, size_t index, uint64_t *value, uint32_t *node_index),
     (snap, index, value, node_index))
WRAP(hasher_hash, (const char *name, const void *data, size_t len, uint64_t seed, uint64_t *out),
     (name, data, len, seed, out))
WRAP(plugin_load, (const char *path, size_t *loaded), (path, loaded))
WRAP(hasher_list, (const char *plugin_dir, chr_hasher_info *out, size_t capacity, size_t *count),
     (plugin_dir, out, capacity, count))
WRAP(hasher_digest,
     (const char *name, const void *data, size_t len, unsigned char *out, size_t capacity,
      size_t *digest_size),
     (name, data, len, out, capacity, digest_size))
WRAP(ring_new_from_text,
     (const void *text, size_t len, const char *name, const chr_options *base, chr_ring **out,
      chr_ringfile_info *info),
     ((const char *)text, len, name, base, out, info))
WRAP(ring_new_from_file,
     (const char *path, const chr_options *base, chr_ring **out, chr_ringfile_info *info),
     (path, base, out, info))
WRAP(ring_apply_text,
     (void *ring, const void *text, size_t len, const char *name, chr_ringfile_info *info),
     (ring, (const char *)text, len, name, info))
WRAP(ring_apply_file, (void *ring, const char *path, chr_ringfile_info *info), (ring, path, info))
WRAP(ring_export,
     (const void *ring, uint32_t flags, uint64_t revision, void *buf, size_t capacity, size_t *len),
     (ring, flags, revision, buf, capacity, len))
WRAP(snapshot_export,
     (const void *snap, uint32_t flags, uint64_t revision, void *buf, size_t capacity, size_t *len),
     (snap, flags, revision, buf, capacity, len))
WRAP(ring_set_down, (void *ring, const void *id, size_t id_len, uint32_t down),
     (ring, id, id_len, down))
WRAP(ring_availability, (const void *ring, chr_availability_info *info), (ring, info))
WRAP(snapshot_availability, (const void *snap, chr_availability_info *info), (snap, info))
WRAP(snapshot_marked_down, (const void *snap, size_t index, uint32_t *marked),
     (snap, index, marked))
WRAP(follower_new, (void *ring, const char *path, chr_follower **out), (ring, path, 0, out))
WRAP(follower_check, (void *follower, int32_t *outcome, chr_ringfile_info *info),
     (follower, outcome, info))
WRAP(follower_state, (const void *follower, chr_follow_state *state), (follower, state))
WRAP(snapshot_lookup_bounded,
     (const void *snap, const void *key, size_t key_len, const uint64_t *loads,
      const unsigned char *available, size_t n_nodes, const chr_bound_options *opts,
      chr_node_view *out, chr_bound_result *result),
     (snap, key, key_len, loads, available, n_nodes, opts, out, result))
WRAP(bound_capacities,
     (const uint32_t *weights, size_t n, uint64_t total_load, const chr_bound_options *opts,
      uint64_t *caps),
     (weights, n, total_load, opts, caps))
WRAP(tracker_new, (size_t max_nodes, chr_tracker **out), (max_nodes, out))
WRAP(tracker_acquire,
     (void *tracker, const void *snap, const void *key, size_t key_len,
      const chr_bound_options *opts, chr_node_view *out, chr_bound_result *result,
      chr_ticket *ticket),
     (tracker, snap, key, key_len, opts, out, result, ticket))
WRAP(tracker_release, (void *tracker, const chr_ticket *ticket), (tracker, ticket))
WRAP(tracker_set_available, (void *tracker, const void *id, size_t id_len, uint32_t available),
     (tracker, id, id_len, available))
WRAP(tracker_load, (const void *tracker, const void *id, size_t id_len, uint64_t *load),
     (tracker, id, id_len, load))
WRAP(tracker_total, (const void *tracker, uint64_t *total), (tracker, total))

gochr_index gochr_snapshot_lookup_index(const void *snap, const void *key, size_t key_len) {
    chr_node_view view;
    gochr_result r = finish(chr_snapshot_lookup(snap, key, key_len, &view));
    gochr_index out = {r.status, r.status == CHR_OK ? view.index : 0, r.failure};
    return out;
}

gochr_index gochr_ring_lookup_index(const void *ring, const void *key, size_t key_len) {
    chr_node_ref ref;
    gochr_result r = finish(chr_ring_lookup(ring, key, key_len, &ref));
    gochr_index out = {r.status, r.status == CHR_OK ? ref.index : 0, r.failure};
    return out;
}

/* Replica out-structs: on the stack for the usual few, else malloc'd.
 * The ring's call fills chr_node_ref and the snapshot's chr_node_view;
 * one helper serves both, given the call, the struct's size and where
 * its index field is. */
enum { REPLICAS_ON_STACK = 8 };

typedef chr_status (*replicas_call)(const void *handle, const void *key, size_t key_len, size_t n,
                                    void *out, size_t *count);

static chr_status ring_replicas(const void *ring, const void *key, size_t key_len, size_t n,
                                void *out, size_t *count) {
    return chr_ring_replicas(ring, key, key_len, n, out, count);
}

static chr_status snapshot_replicas(const void *snap, const void *key, size_t key_len, size_t n,
                                    void *out, size_t *count) {
    return chr_snapshot_replicas(snap, key, key_len, n, out, count);
}

static gochr_count replicas_index(replicas_call call, const char *who, size_t size,
                                  size_t index_offset, const void *handle, const void *key,
                                  size_t key_len, size_t n, uint32_t *indices) {
    union {
        chr_node_ref refs[REPLICAS_ON_STACK];
        chr_node_view views[REPLICAS_ON_STACK];
    } stack;
    unsigned char *buf = (unsigned char *)&stack;
    gochr_count out = {CHR_OK, 0, NULL};
    if (n > REPLICAS_ON_STACK && (n > SIZE_MAX / size || !(buf = malloc(n * size)))) {
        char message[128];
        snprintf(message, sizeof message, "%s: out of memory for the Go binding's buffer", who);
        out.status = CHR_ENOMEM;
        out.failure = failure_saying(message);
        return out;
    }
    gochr_result r = finish(call(handle, key, key_len, n, buf, &out.count));
    out.status = r.status;
    out.failure = r.failure;
    if (r.status == CHR_OK)
        for (size_t i = 0; i < out.count; i++)
            memcpy(&indices[i], buf + i * size + index_offset, sizeof indices[i]);
    if (buf != (unsigned char *)&stack) free(buf);
    return out;
}

gochr_count gochr_ring_replicas_index(const void *ring, const void *key, size_t key_len,
                                      size_t n, uint32_t *indices) {
    return replicas_index(ring_replicas, "chr_ring_replicas", sizeof(chr_node_ref),
                          offsetof(chr_node_ref, index), ring, key, key_len, n, indices);
}

gochr_count gochr_snapshot_replicas_index(const void *snap, const void *key, size_t key_len,
                                          size_t n, uint32_t *indices) {
    return replicas_index(snapshot_replicas, "chr_snapshot_replicas", sizeof(chr_node_view),
                          offsetof(chr_node_view, index), snap, key, key_len, n, indices);
}

gochr_result gochr_snapshot_lookup_packed(const void *snap, const void *data, const size_t *lens,
                                          size_t n, uint32_t *indices) {
    enum { CHUNK = 256 };
    const void *ptrs[CHUNK];
    const unsigned char *at = data;
    size_t done = 0;
    do {
        size_t chunk = n - done < CHUNK ? n - done : CHUNK;
        for (size_t i = 0; i < chunk; i++) {
            ptrs[i] = at;
            at += lens[done + i];
        }
        chr_status status = chr_snapshot_lookup_batch(snap, ptrs, lens ? lens + done : NULL, chunk,
                                                      indices ? indices + done : NULL);
        if (status != CHR_OK) return finish(status);
        done += chunk;
    } while (done < n);
    return finish(CHR_OK);
}

/* chr_ring_set_availability over ids packed end to end in `data` (as
 * gochr_snapshot_lookup_packed's keys); the pointer array is malloc'd here,
 * the set being one call. */
gochr_result gochr_ring_set_availability_packed(void *ring, const void *data, const size_t *lens,
                                               size_t count, uint32_t panic_threshold) {
    const void **ptrs = count ? malloc(count * sizeof *ptrs) : NULL;
    if (count && !ptrs) {
        gochr_result r = {CHR_ENOMEM, failure_saying("SetAvailability: out of memory")};
        return r;
    }
    const unsigned char *at = data;
    for (size_t i = 0; i < count; i++) {
        ptrs[i] = lens[i] ? at : NULL;
        at += lens[i];
    }
    gochr_result r = finish(chr_ring_set_availability(ring, ptrs, lens, count, panic_threshold));
    free(ptrs);
    return r;
}
