//! Zone-aware replicas (chring.h, "Zone-aware replicas").

use std::ffi::{CStr, CString};

use crate::bytes_arg;
use crate::error::{check, Error, Result};
use crate::node::{Node, NodeView};
use crate::ring::Ring;
use crate::snapshot::Snapshot;
use crate::sys;

/// Which of the nodes met walking clockwise from a key are its replicas,
/// and in what order. A member's zone is its zone bytes; members with an
/// empty zone share one zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReplicaPolicy {
    /// The first n distinct nodes of the walk ([`Ring::replicas`]).
    #[default]
    Nodes,
    /// The first node of each zone met, in walk order, then the others in
    /// walk order: the first min(n, zones) replicas are in distinct zones,
    /// replica 0 is the owner, and the list for n is a prefix of the list
    /// for n + 1.
    ZonesFirst,
    /// The set of `ZonesFirst` in walk order, as Cassandra's
    /// NetworkTopologyStrategy lists one data centre (zones = racks). Not
    /// prefix-stable.
    Nts,
}

impl ReplicaPolicy {
    pub(crate) fn raw(self) -> i32 {
        match self {
            ReplicaPolicy::Nodes => sys::CHR_REPLICAS_NODES,
            ReplicaPolicy::ZonesFirst => sys::CHR_REPLICAS_ZONES_FIRST,
            ReplicaPolicy::Nts => sys::CHR_REPLICAS_NTS,
        }
    }

    /// The library's name: "nodes", "zones-first", "nts".
    pub fn name(self) -> &'static str {
        let mut name = std::ptr::null();
        // SAFETY: name is a valid out-pointer; the policy is one the
        // header defines, so the call succeeds with a static string.
        check(unsafe { sys::chr_replica_policy_name(self.raw(), &mut name) }).expect("a policy of chring.h");
        // SAFETY: a NUL-terminated string in static storage.
        unsafe { CStr::from_ptr(name) }.to_str().expect("policy names are ASCII")
    }

    /// The policy called `name` (as [`ReplicaPolicy::name`] gives it);
    /// [`crate::ErrorKind::NotSupported`] for another name.
    pub fn from_name(name: &str) -> Result<ReplicaPolicy> {
        let c = CString::new(name).map_err(|_| {
            Error::binding(sys::CHR_EINVAL, format!("ReplicaPolicy::from_name: {:?} holds a NUL byte", name))
        })?;
        let mut raw = 0i32;
        // SAFETY: c is NUL-terminated, raw a valid out-pointer.
        check(unsafe { sys::chr_replica_policy_find(c.as_ptr(), &mut raw) })?;
        Ok(match raw {
            sys::CHR_REPLICAS_ZONES_FIRST => ReplicaPolicy::ZonesFirst,
            sys::CHR_REPLICAS_NTS => ReplicaPolicy::Nts,
            _ => ReplicaPolicy::Nodes,
        })
    }
}

impl std::fmt::Display for ReplicaPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs a replica call into room for `room` raw entries (at least 1, so
/// that n = 0 reaches the library and gets its error) and wraps the ones
/// it wrote.
fn collect<R: Copy, T>(
    room: usize,
    empty: R,
    wrap: impl Fn(R) -> T,
    call: impl FnOnce(*mut R, usize, &mut usize) -> sys::chr_status,
) -> Result<Vec<T>> {
    let mut out = vec![empty; room.max(1)];
    let mut count = 0usize;
    check(call(out.as_mut_ptr(), room.max(1), &mut count))?;
    out.truncate(count);
    Ok(out.into_iter().map(wrap).collect())
}

impl Ring {
    /// [`Ring::replicas`] under a replica policy; `ReplicaPolicy::Nodes`
    /// gives exactly its lists.
    pub fn replicas_policy(&self, key: impl AsRef<[u8]>, n: usize, policy: ReplicaPolicy) -> Result<Vec<Node>> {
        let (k, len) = bytes_arg(key.as_ref());
        collect(n.min(self.node_count()?), Node::empty_raw(), Node::from_raw, |out, room, count| {
            // SAFETY: out has room for `room` entries, and at most that many are asked.
            unsafe { sys::chr_ring_replicas_policy(self.raw_ptr(), k, len, policy.raw(), n.min(room), out, count) }
        })
    }
}

impl Snapshot {
    /// [`Snapshot::replicas`] under a replica policy.
    pub fn replicas_policy(&self, key: impl AsRef<[u8]>, n: usize, policy: ReplicaPolicy) -> Result<Vec<NodeView<'_>>> {
        let (k, len) = bytes_arg(key.as_ref());
        collect(n.min(self.node_count()?), NodeView::empty_raw(), NodeView::from_raw, |out, room, count| {
            // SAFETY: out has room for `room` entries, and at most that many are asked.
            unsafe { sys::chr_snapshot_replicas_policy(self.raw_ptr(), k, len, policy.raw(), n.min(room), out, count) }
        })
    }

    /// Per member (node index order), the fraction of keys for which it is
    /// among the first `n` replicas under `policy`: exact from the token
    /// arcs, summing to min(n, members with tokens). Members of a zone with
    /// less weight carry more copies. A walk per token: for inspection.
    pub fn replica_shares(&self, policy: ReplicaPolicy, n: usize) -> Result<Vec<f64>> {
        let mut shares = vec![0f64; self.node_count()?];
        let mut count = 0usize;
        // SAFETY: shares has room for shares.len() doubles.
        check(unsafe {
            sys::chr_snapshot_replica_shares(
                self.raw_ptr(),
                policy.raw(),
                n,
                shares.as_mut_ptr(),
                shares.len(),
                &mut count,
            )
        })?;
        Ok(shares)
    }
}
