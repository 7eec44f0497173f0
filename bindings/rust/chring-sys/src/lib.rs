//! Raw declarations of libchring's C API, `chring.h` and `chring_plugin.h`,
//! one for one; the safe binding is the `chring` crate. `build.rs` finds
//! the library with `pkg-config` and links it; its directory is this
//! package's `links = "chring"` metadata, `DEP_CHRING_LIBDIR` for the build
//! scripts of packages that depend on this one directly.
//! `tests/header.rs` compiles every declaration, struct layout and
//! constant below against the real header with the C compiler, so any
//! drift fails the tests. Keep one item per line in the form that test
//! parses: `pub const NAME: TYPE = VALUE;` and `pub fn name(args) -> ret;`.
#![allow(non_camel_case_types, missing_docs)] // documented in chring.h

use std::os::raw::{c_char, c_int, c_uchar, c_void};

pub type chr_status = c_int;

pub const CHR_VERSION_MAJOR: u32 = 0;
pub const CHR_VERSION_MINOR: u32 = 1;
pub const CHR_VERSION_PATCH: u32 = 0;
pub const CHR_ABI_VERSION: u32 = 1;

pub const CHR_OK: chr_status = 0;
pub const CHR_EINVAL: chr_status = -1;
pub const CHR_ENOMEM: chr_status = -2;
pub const CHR_ERANGE: chr_status = -3;
pub const CHR_EEXIST: chr_status = -4;
pub const CHR_ENOENT: chr_status = -5;
pub const CHR_EEMPTY: chr_status = -6;
pub const CHR_EVERSION: chr_status = -7;
pub const CHR_ENOHASHER: chr_status = -8;
pub const CHR_ENOTSUP: chr_status = -9;
pub const CHR_EINTERNAL: chr_status = -10;
pub const CHR_EPLUGIN_NOFILE: chr_status = -11;
pub const CHR_EPLUGIN_NOTSO: chr_status = -12;
pub const CHR_EPLUGIN_SYMBOL: chr_status = -13;
pub const CHR_EPLUGIN_ABI: chr_status = -14;
pub const CHR_EPLUGIN_DESC: chr_status = -15;
pub const CHR_EPLUGIN_UNTRUSTED: chr_status = -16;
pub const CHR_EFORMAT: chr_status = -17;
pub const CHR_EOPTIONS: chr_status = -18;
pub const CHR_EIO: chr_status = -19;

pub const CHR_ERROR_INFO_VERSION: u32 = 1;
pub const CHR_ERROR_HAS_SOURCE: u32 = 0x1;
pub const CHR_ERROR_HAS_LINE: u32 = 0x2;
pub const CHR_ERROR_HAS_OTHER_LINE: u32 = 0x4;
pub const CHR_ERROR_HAS_MEMBER: u32 = 0x8;
pub const CHR_ERROR_HAS_CHANGE: u32 = 0x10;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_error_info {
    pub version: u32,
    pub status: chr_status,
    pub flags: u32,
    pub line: u32,
    pub other_line: u32,
    pub reserved0: u32,
    pub change_index: u64,
    pub function: *const c_char,
    pub message: *const c_char,
    pub reason: *const c_char,
    pub source: *const c_char,
    pub member: *const c_void,
    pub member_len: usize,
}

pub const CHR_NODE_ID_MAX: usize = 256;
pub const CHR_ZONE_MAX: usize = 64;
pub const CHR_WEIGHT_MAX: u32 = 1000000;
pub const CHR_TOKENS_PER_WEIGHT_MAX: u32 = 65536;
pub const CHR_TOKENS_MAX: u32 = 16777216;
pub const CHR_NODES_MAX: u32 = 1048576;

pub const CHR_PLACEMENT_NATIVE: i32 = 0;
pub const CHR_PLACEMENT_KETAMA: i32 = 1;
pub const CHR_PLACEMENT_KETAMA_UNWEIGHTED: i32 = 2;
pub const CHR_PLACEMENT_NGINX: i32 = 3;
pub const CHR_OPTIONS_VERSION: u32 = 1;
pub const CHR_DEFAULT_TOKENS_PER_WEIGHT: u32 = 160;

pub const CHR_REPLICAS_NODES: i32 = 0;
pub const CHR_REPLICAS_ZONES_FIRST: i32 = 1;
pub const CHR_REPLICAS_NTS: i32 = 2;
pub const CHR_FINGERPRINT_VERSION: u32 = 2;

pub const CHR_EINCOMPATIBLE: chr_status = -20;
pub const CHR_DIFF_NONE: u32 = 0xFFFFFFFF;
pub const CHR_DIFF_OLD: i32 = 0;
pub const CHR_DIFF_NEW: i32 = 1;
pub const CHR_DIFF_INFO_VERSION: u32 = 1;
pub const CHR_PLAN_REPLICAS_MAX: usize = 16;
pub const CHR_PLAN_INFO_VERSION: u32 = 1;

pub const CHR_SPILL_REPLICAS: u32 = 0;
pub const CHR_SPILL_SHUFFLE: u32 = 1;
pub const CHR_BALANCE_FACTOR_MIN: u32 = 100;
pub const CHR_BALANCE_FACTOR_MAX: u32 = 100000;
pub const CHR_LOAD_MAX: u64 = 0x10000000000;
pub const CHR_BOUND_OPTIONS_VERSION: u32 = 1;
pub const CHR_BOUND_SPILLED: u32 = 0x1;
pub const CHR_BOUND_OVER: u32 = 0x2;
pub const CHR_TRACKER_NODES_DEFAULT: u32 = 4096;

pub const CHR_OP_ADD: u32 = 1;
pub const CHR_OP_REMOVE: u32 = 2;
pub const CHR_OP_SET_WEIGHT: u32 = 3;

pub const CHR_RINGFILE_FORMAT_VERSION: u32 = 1;
pub const CHR_RINGFILE_LINE_MAX: u32 = 65536;
pub const CHR_RINGFILE_SIZE_MAX: u32 = 268435456;
pub const CHR_RINGFILE_HAS_REVISION: u32 = 0x1;
pub const CHR_RINGFILE_HAS_FINGERPRINT: u32 = 0x2;
pub const CHR_RINGFILE_HAS_OPTIONS: u32 = 0x4;
pub const CHR_RINGFILE_HAS_AVAILABILITY: u32 = 0x8;
pub const CHR_RINGFILE_INFO_VERSION: u32 = 2;
pub const CHR_RINGFILE_MEMBER_VERSION: u32 = 1;
pub const CHR_EXPORT_REVISION: u32 = 0x1;
pub const CHR_EXPORT_JSON: u32 = 0x2;
pub const CHR_ESCAPE_HIDDEN: u32 = 0x1;
pub const CHR_FOLLOW_UNCHANGED: i32 = 0;
pub const CHR_FOLLOW_APPLIED: i32 = 1;
pub const CHR_FOLLOW_REFUSED: i32 = 2;
pub const CHR_FOLLOW_STATE_VERSION: u32 = 2;
pub const CHR_FOLLOW_MESSAGE_MAX: usize = 512;

pub const CHR_PLUGIN_ABI_VERSION: u32 = 1;
pub const CHR_HASHER_NAME_MAX: usize = 63;
pub const CHR_DIGEST_MAX: usize = 64;
pub const CHR_HASHER_DESCRIPTION_MAX: usize = 1023;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_options {
    pub version: u32,
    pub tokens_per_weight: u32,
    pub seed: u64,
    pub hasher: *const c_char,
    pub placement: i32,
    pub reserved0: u32,
    pub plugin_dir: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct chr_node_ref {
    pub tag: u64,
    pub ownership: f64,
    pub weight: u32,
    pub tokens: u32,
    pub index: u32,
    pub id_len: u32,
    pub zone_len: u32,
    pub flags: u32,
    pub id: [c_uchar; CHR_NODE_ID_MAX],
    pub zone: [c_uchar; CHR_ZONE_MAX],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_node_view {
    pub id: *const c_uchar,
    pub id_len: usize,
    pub zone: *const c_uchar,
    pub zone_len: usize,
    pub tag: u64,
    pub ownership: f64,
    pub weight: u32,
    pub tokens: u32,
    pub index: u32,
    pub flags: u32,
}

pub const CHR_NODE_DOWN: u32 = 0x1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_change {
    pub op: u32,
    pub weight: u32,
    pub id: *const c_void,
    pub id_len: usize,
    pub zone: *const c_void,
    pub zone_len: usize,
    pub tag: u64,
}

pub type chr_hash64_fn = Option<unsafe extern "C" fn(data: *const c_void, len: usize, seed: u64) -> u64>;
pub type chr_digest_fn = Option<unsafe extern "C" fn(data: *const c_void, len: usize, out: *mut c_uchar)>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_hasher {
    pub abi_version: u32,
    pub struct_size: u32,
    pub name: *const c_char,
    pub description: *const c_char,
    pub hash64: chr_hash64_fn,
    pub digest_size: u32,
    pub digest: chr_digest_fn,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_hasher_info {
    pub name: *const c_char,
    pub description: *const c_char,
    pub origin: *const c_char,
    pub digest_size: u32,
    pub reserved0: u32,
}

pub const CHR_PLACEMENT_INFO_VERSION: u32 = 1;
pub const CHR_PLACEMENT_SEEDED: u32 = 0x1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_placement_info {
    pub version: u32,
    pub mode: i32,
    pub name: *const c_char,
    pub summary: *const c_char,
    pub hasher: *const c_char,
    pub digest_size: u32,
    pub flags: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_ringfile_info {
    pub version: u32,
    pub flags: u32,
    pub revision: u64,
    pub fingerprint: u64,
    pub format_version: u32,
    pub members: u32,
    pub added: u32,
    pub removed: u32,
    pub reweighted: u32,
    pub replaced: u32,
    pub error_line: u32,
    pub reserved0: u32,
    pub availability: u64,
    pub down: u32,
    pub panic_threshold: u32,
}

/// One member line, decoded (`CHR_RINGFILE_MEMBER_VERSION`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct chr_ringfile_member {
    pub version: u32,
    pub weight: u32,
    pub id_len: u32,
    pub zone_len: u32,
    pub id: [c_uchar; CHR_NODE_ID_MAX],
    pub zone: [c_uchar; CHR_ZONE_MAX],
}

/// What a follower has seen (`CHR_FOLLOW_STATE_VERSION`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct chr_follow_state {
    pub version: u32,
    pub last_outcome: i32,
    pub status: chr_status,
    pub error_line: u32,
    pub checks: u64,
    pub applied: u64,
    pub refused: u64,
    pub applied_flags: u32,
    pub refused_flags: u32,
    pub applied_revision: u64,
    pub applied_fingerprint: u64,
    pub refused_revision: u64,
    pub refused_fingerprint: u64,
    pub message: [c_char; CHR_FOLLOW_MESSAGE_MAX],
    pub applied_availability: u64,
}

pub const CHR_PANIC_THRESHOLD_DEFAULT: u32 = 50;
pub const CHR_AVAILABILITY_INFO_VERSION: u32 = 1;

/// A snapshot's availability state (`CHR_AVAILABILITY_INFO_VERSION`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_availability_info {
    pub version: u32,
    pub panic: u32,
    pub panic_threshold: u32,
    pub down: u32,
    pub down_weight: u64,
    pub total_weight: u64,
    pub digest: u64,
}

/// Opaque follower handle.
#[repr(C)]
pub struct chr_follower {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_diff_range {
    pub first: u64,
    pub last: u64,
    pub from: u32,
    pub to: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_diff_cell {
    pub from: u32,
    pub to: u32,
    pub fraction: f64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_diff_info {
    pub version: u32,
    pub reserved0: u32,
    pub ranges: u64,
    pub cells: u64,
    pub moved: f64,
    pub old_fingerprint: u64,
    pub new_fingerprint: u64,
    pub old_nodes: u32,
    pub new_nodes: u32,
    pub added: u32,
    pub removed: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_transition {
    pub position: u64,
    pub old_index: u32,
    pub new_index: u32,
    pub moved: u32,
    pub reserved0: u32,
    pub old_owner: chr_node_view,
    pub new_owner: chr_node_view,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_plan_range {
    pub first: u64,
    pub last: u64,
    pub to: u32,
    pub source_count: u32,
    pub sources: [u32; CHR_PLAN_REPLICAS_MAX],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_plan_info {
    pub version: u32,
    pub policy: i32,
    pub replicas: u32,
    pub reserved0: u32,
    pub entries: u64,
    pub copies: f64,
}

/// Opaque diff handle.
#[repr(C)]
pub struct chr_diff {
    _private: [u8; 0],
}

/// Opaque replica plan handle.
#[repr(C)]
pub struct chr_plan {
    _private: [u8; 0],
}

/// Opaque ring handle.
#[repr(C)]
pub struct chr_ring {
    _private: [u8; 0],
}

/// Opaque snapshot handle.
#[repr(C)]
pub struct chr_snapshot {
    _private: [u8; 0],
}

/// Options of a bounded-load lookup (`CHR_BOUND_OPTIONS_VERSION`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct chr_bound_options {
    pub version: u32,
    pub factor_pct: u32,
    pub spill: u32,
    pub max_probes: u32,
    pub slack: u64,
}

/// What a bounded lookup chose and how.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_bound_result {
    pub index: u32,
    pub home: u32,
    pub probes: u32,
    pub flags: u32,
    pub load: u64,
    pub capacity: u64,
}

/// One request acquired on a tracker.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct chr_ticket {
    pub slot: u64,
    pub check: u64,
}

/// Opaque tracker handle.
#[repr(C)]
pub struct chr_tracker {
    _private: [u8; 0],
}

// One declaration per line: tests/header.rs parses them.
#[rustfmt::skip]
extern "C" {
    pub fn chr_version() -> u32;
    pub fn chr_version_string() -> *const c_char;
    pub fn chr_strerror(status: chr_status) -> *const c_char;
    pub fn chr_last_error() -> *const c_char;
    pub fn chr_error_info_init(info: *mut chr_error_info, version: u32) -> chr_status;
    pub fn chr_last_error_info(info: *mut chr_error_info) -> chr_status;
    pub fn chr_options_init(opts: *mut chr_options, version: u32) -> chr_status;
    pub fn chr_ring_new(opts: *const chr_options, out: *mut *mut chr_ring) -> chr_status;
    pub fn chr_ring_free(ring: *mut chr_ring);
    pub fn chr_ring_add(ring: *mut chr_ring, id: *const c_void, id_len: usize, weight: u32, zone: *const c_void, zone_len: usize, tag: u64) -> chr_status;
    pub fn chr_ring_remove(ring: *mut chr_ring, id: *const c_void, id_len: usize) -> chr_status;
    pub fn chr_ring_set_weight(ring: *mut chr_ring, id: *const c_void, id_len: usize, weight: u32) -> chr_status;
    pub fn chr_ring_apply(ring: *mut chr_ring, changes: *const chr_change, count: usize, failed_index: *mut usize) -> chr_status;
    pub fn chr_ring_lookup(ring: *const chr_ring, key: *const c_void, key_len: usize, out: *mut chr_node_ref) -> chr_status;
    pub fn chr_ring_replicas(ring: *const chr_ring, key: *const c_void, key_len: usize, n: usize, out: *mut chr_node_ref, count: *mut usize) -> chr_status;
    pub fn chr_ring_node_count(ring: *const chr_ring, count: *mut usize) -> chr_status;
    pub fn chr_ring_token_count(ring: *const chr_ring, count: *mut usize) -> chr_status;
    pub fn chr_ring_nodes(ring: *const chr_ring, out: *mut chr_node_ref, capacity: usize, count: *mut usize) -> chr_status;
    pub fn chr_ring_ownership(ring: *const chr_ring, id: *const c_void, id_len: usize, fraction: *mut f64) -> chr_status;
    pub fn chr_ring_fingerprint(ring: *const chr_ring, fingerprint: *mut u64) -> chr_status;
    pub fn chr_ring_snapshot(ring: *const chr_ring, out: *mut *mut chr_snapshot) -> chr_status;
    pub fn chr_snapshot_release(snap: *mut chr_snapshot);
    pub fn chr_snapshot_lookup(snap: *const chr_snapshot, key: *const c_void, key_len: usize, out: *mut chr_node_view) -> chr_status;
    pub fn chr_snapshot_lookup_batch(snap: *const chr_snapshot, keys: *const *const c_void, key_lens: *const usize, n: usize, indices: *mut u32) -> chr_status;
    pub fn chr_snapshot_replicas(snap: *const chr_snapshot, key: *const c_void, key_len: usize, n: usize, out: *mut chr_node_view, count: *mut usize) -> chr_status;
    pub fn chr_snapshot_node(snap: *const chr_snapshot, index: usize, out: *mut chr_node_view) -> chr_status;
    pub fn chr_snapshot_node_count(snap: *const chr_snapshot, count: *mut usize) -> chr_status;
    pub fn chr_snapshot_token_count(snap: *const chr_snapshot, count: *mut usize) -> chr_status;
    pub fn chr_snapshot_fingerprint(snap: *const chr_snapshot, fingerprint: *mut u64) -> chr_status;
    pub fn chr_snapshot_token(snap: *const chr_snapshot, index: usize, value: *mut u64, node_index: *mut u32) -> chr_status;
    pub fn chr_replica_policy_name(policy: i32, name: *mut *const c_char) -> chr_status;
    pub fn chr_replica_policy_find(name: *const c_char, policy: *mut i32) -> chr_status;
    pub fn chr_ring_replicas_policy(ring: *const chr_ring, key: *const c_void, key_len: usize, policy: i32, n: usize, out: *mut chr_node_ref, count: *mut usize) -> chr_status;
    pub fn chr_snapshot_replicas_policy(snap: *const chr_snapshot, key: *const c_void, key_len: usize, policy: i32, n: usize, out: *mut chr_node_view, count: *mut usize) -> chr_status;
    pub fn chr_snapshot_replica_shares(snap: *const chr_snapshot, policy: i32, n: usize, shares: *mut f64, capacity: usize, count: *mut usize) -> chr_status;
    pub fn chr_diff_info_init(info: *mut chr_diff_info, version: u32) -> chr_status;
    pub fn chr_diff_new(old_snap: *const chr_snapshot, new_snap: *const chr_snapshot, out: *mut *mut chr_diff) -> chr_status;
    pub fn chr_diff_free(diff: *mut chr_diff);
    pub fn chr_diff_describe(diff: *const chr_diff, info: *mut chr_diff_info) -> chr_status;
    pub fn chr_diff_ranges(diff: *const chr_diff, cursor: usize, out: *mut chr_diff_range, capacity: usize, written: *mut usize) -> chr_status;
    pub fn chr_diff_matrix(diff: *const chr_diff, cursor: usize, out: *mut chr_diff_cell, capacity: usize, written: *mut usize) -> chr_status;
    pub fn chr_diff_snapshot(diff: *const chr_diff, side: i32, out: *mut *const chr_snapshot) -> chr_status;
    pub fn chr_diff_counterpart(diff: *const chr_diff, side: i32, index: u32, other: *mut u32) -> chr_status;
    pub fn chr_diff_lookup(diff: *const chr_diff, key: *const c_void, key_len: usize, out: *mut chr_transition) -> chr_status;
    pub fn chr_diff_lookup_batch(diff: *const chr_diff, keys: *const *const c_void, key_lens: *const usize, n: usize, old_indices: *mut u32, new_indices: *mut u32) -> chr_status;
    pub fn chr_plan_info_init(info: *mut chr_plan_info, version: u32) -> chr_status;
    pub fn chr_plan_new(diff: *const chr_diff, policy: i32, replicas: usize, out: *mut *mut chr_plan) -> chr_status;
    pub fn chr_plan_free(plan: *mut chr_plan);
    pub fn chr_plan_describe(plan: *const chr_plan, info: *mut chr_plan_info) -> chr_status;
    pub fn chr_plan_ranges(plan: *const chr_plan, cursor: usize, out: *mut chr_plan_range, capacity: usize, written: *mut usize) -> chr_status;
    pub fn chr_plugin_load(path: *const c_char, loaded: *mut usize) -> chr_status;
    pub fn chr_hasher_list(plugin_dir: *const c_char, out: *mut chr_hasher_info, capacity: usize, count: *mut usize) -> chr_status;
    pub fn chr_hasher_register(hasher: *const chr_hasher) -> chr_status;
    pub fn chr_hasher_hash(name: *const c_char, data: *const c_void, len: usize, seed: u64, out: *mut u64) -> chr_status;
    pub fn chr_ringfile_info_init(info: *mut chr_ringfile_info, version: u32) -> chr_status;
    pub fn chr_ring_new_from_text(text: *const c_char, len: usize, name: *const c_char, base: *const chr_options, out: *mut *mut chr_ring, info: *mut chr_ringfile_info) -> chr_status;
    pub fn chr_ring_new_from_file(path: *const c_char, base: *const chr_options, out: *mut *mut chr_ring, info: *mut chr_ringfile_info) -> chr_status;
    pub fn chr_placement_info_init(info: *mut chr_placement_info, version: u32) -> chr_status;
    pub fn chr_placement_describe(mode: i32, out: *mut chr_placement_info) -> chr_status;
    pub fn chr_placement_find(name: *const c_char, mode: *mut i32) -> chr_status;
    pub fn chr_ring_apply2(ring: *mut chr_ring, changes: *const c_void, count: usize, change_size: usize, failed_index: *mut usize) -> chr_status;
    pub fn chr_ring_apply_text(ring: *mut chr_ring, text: *const c_char, len: usize, name: *const c_char, info: *mut chr_ringfile_info) -> chr_status;
    pub fn chr_ring_apply_file(ring: *mut chr_ring, path: *const c_char, info: *mut chr_ringfile_info) -> chr_status;
    pub fn chr_ring_export(ring: *const chr_ring, flags: u32, revision: u64, buf: *mut c_char, capacity: usize, len: *mut usize) -> chr_status;
    pub fn chr_snapshot_export(snap: *const chr_snapshot, flags: u32, revision: u64, buf: *mut c_char, capacity: usize, len: *mut usize) -> chr_status;
    pub fn chr_ringfile_escape(bytes: *const c_void, len: usize, flags: u32, buf: *mut c_char, capacity: usize, out_len: *mut usize) -> chr_status;
    pub fn chr_ringfile_unescape(field: *const c_char, len: usize, what: *const c_char, buf: *mut c_char, capacity: usize, out_len: *mut usize) -> chr_status;
    pub fn chr_ringfile_member_init(member: *mut chr_ringfile_member, version: u32) -> chr_status;
    pub fn chr_ringfile_parse_member(line: *const c_char, len: usize, name: *const c_char, out: *mut chr_ringfile_member) -> chr_status;
    pub fn chr_follow_state_init(state: *mut chr_follow_state, version: u32) -> chr_status;
    pub fn chr_follower_new(ring: *mut chr_ring, path: *const c_char, flags: u32, out: *mut *mut chr_follower) -> chr_status;
    pub fn chr_follower_free(follower: *mut chr_follower);
    pub fn chr_follower_check(follower: *mut chr_follower, outcome: *mut i32, info: *mut chr_ringfile_info) -> chr_status;
    pub fn chr_follower_state(follower: *const chr_follower, state: *mut chr_follow_state) -> chr_status;
    pub fn chr_hasher_digest(name: *const c_char, data: *const c_void, len: usize, out: *mut c_uchar, capacity: usize, digest_size: *mut usize) -> chr_status;
    pub fn chr_bound_options_init(opts: *mut chr_bound_options, version: u32) -> chr_status;
    pub fn chr_bound_capacities(weights: *const u32, n: usize, total_load: u64, opts: *const chr_bound_options, caps: *mut u64) -> chr_status;
    pub fn chr_snapshot_lookup_bounded(snap: *const chr_snapshot, key: *const c_void, key_len: usize, loads: *const u64, available: *const c_uchar, n_nodes: usize, opts: *const chr_bound_options, out: *mut chr_node_view, result: *mut chr_bound_result) -> chr_status;
    pub fn chr_tracker_new(max_nodes: usize, out: *mut *mut chr_tracker) -> chr_status;
    pub fn chr_tracker_free(tracker: *mut chr_tracker);
    pub fn chr_tracker_acquire(tracker: *mut chr_tracker, snap: *const chr_snapshot, key: *const c_void, key_len: usize, opts: *const chr_bound_options, out: *mut chr_node_view, result: *mut chr_bound_result, ticket: *mut chr_ticket) -> chr_status;
    pub fn chr_tracker_release(tracker: *mut chr_tracker, ticket: *const chr_ticket) -> chr_status;
    pub fn chr_tracker_set_available(tracker: *mut chr_tracker, id: *const c_void, id_len: usize, available: u32) -> chr_status;
    pub fn chr_tracker_load(tracker: *const chr_tracker, id: *const c_void, id_len: usize, load: *mut u64) -> chr_status;
    pub fn chr_tracker_total(tracker: *const chr_tracker, total: *mut u64) -> chr_status;
    pub fn chr_availability_info_init(info: *mut chr_availability_info, version: u32) -> chr_status;
    pub fn chr_ring_set_down(ring: *mut chr_ring, id: *const c_void, id_len: usize, down: u32) -> chr_status;
    pub fn chr_ring_set_availability(ring: *mut chr_ring, ids: *const *const c_void, id_lens: *const usize, count: usize, panic_threshold: u32) -> chr_status;
    pub fn chr_ring_availability(ring: *const chr_ring, info: *mut chr_availability_info) -> chr_status;
    pub fn chr_snapshot_availability(snap: *const chr_snapshot, info: *mut chr_availability_info) -> chr_status;
    pub fn chr_snapshot_marked_down(snap: *const chr_snapshot, index: usize, marked: *mut u32) -> chr_status;
}
