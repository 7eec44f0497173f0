use std::ptr::{self, NonNull};

use crate::bytes_arg;
use crate::error::{check, Error, Result};
use crate::node::Node;
use crate::options::Options;
use crate::snapshot::Snapshot;
use crate::sys;

/// A member to add: id (1..256 bytes, any bytes), weight (0..1e6; 0 keeps
/// it a member without tokens), optional zone label and tag.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The node id.
    pub id: &'a [u8],
    /// The weight.
    pub weight: u32,
    /// An optional zone label (0..64 bytes).
    pub zone: &'a [u8],
    /// A value returned with the node (e.g. an index into your pool).
    pub tag: u64,
}

impl<'a> Member<'a> {
    /// A member with no zone and tag 0.
    pub fn new(id: &'a [u8], weight: u32) -> Member<'a> {
        Member { id, weight, zone: &[], tag: 0 }
    }
}

/// One change of a batch for [`Ring::apply`].
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Add a member.
    Add(Member<'a>),
    /// Remove the member with this id.
    Remove(&'a [u8]),
    /// Set the weight of the member with this id.
    SetWeight(&'a [u8], u32),
}

impl Change<'_> {
    fn raw(&self) -> sys::chr_change {
        let (op, id, weight, zone, tag) = match *self {
            Change::Add(m) => (sys::CHR_OP_ADD, m.id, m.weight, m.zone, m.tag),
            Change::Remove(id) => (sys::CHR_OP_REMOVE, id, 0, &[][..], 0),
            Change::SetWeight(id, w) => (sys::CHR_OP_SET_WEIGHT, id, w, &[][..], 0),
        };
        let (id, id_len) = bytes_arg(id);
        let (zone, zone_len) = bytes_arg(zone);
        sys::chr_change { op, weight, id, id_len, zone, zone_len, tag }
    }
}

/// A consistent-hashing ring.
///
/// Lookups never lock and never wait for writers; updates serialize inside
/// the library and publish a new snapshot atomically. Share one ring
/// between threads with `Arc<Ring>` or scoped threads.
pub struct Ring {
    raw: NonNull<sys::chr_ring>,
}

// SAFETY: chring.h's threading model: every call on a chr_ring except
// chr_ring_free may run on any thread, concurrently with any other
// (readers are lock-free, writers serialize on the ring's own mutex), and
// the ring has no thread affinity. chr_ring_free runs only in Drop, which
// owns the ring exclusively, so no other call can race with it.
unsafe impl Send for Ring {}
unsafe impl Sync for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: exclusive ownership; snapshots keep their own references.
        unsafe { sys::chr_ring_free(self.raw.as_ptr()) }
    }
}

impl Ring {
    /// Creates an empty ring.
    pub fn new(options: &Options) -> Result<Ring> {
        options.with_raw(|raw| {
            let mut out = ptr::null_mut();
            // SAFETY: raw and its strings are valid during the call.
            check(unsafe { sys::chr_ring_new(raw, &mut out) })?;
            NonNull::new(out)
                .map(|raw| Ring { raw })
                .ok_or_else(|| Error::binding(sys::CHR_EINTERNAL, "chr_ring_new returned NULL".into()))
        })
    }

    fn ptr(&self) -> *mut sys::chr_ring {
        self.raw.as_ptr()
    }

    pub(crate) fn raw_ptr(&self) -> *mut sys::chr_ring {
        self.raw.as_ptr()
    }

    /// The C ring, for calls of [`sys`] this crate does not wrap (and for
    /// benchmarks against the C calls). Valid while `self` lives; never
    /// pass it to `chr_ring_free`.
    pub fn as_ptr(&self) -> *const sys::chr_ring {
        self.raw.as_ptr()
    }

    /// Owns a ring the library just created (CHR_OK, so never NULL).
    pub(crate) fn from_raw(raw: *mut sys::chr_ring) -> Ring {
        Ring { raw: NonNull::new(raw).expect("a chring call returned CHR_OK and a NULL ring") }
    }

    /// Adds a member of this weight, with no zone and tag 0.
    pub fn add(&self, id: impl AsRef<[u8]>, weight: u32) -> Result<()> {
        self.add_member(&Member::new(id.as_ref(), weight))
    }

    /// Adds a member; keys move only onto it.
    pub fn add_member(&self, m: &Member<'_>) -> Result<()> {
        let (id, id_len) = bytes_arg(m.id);
        let (zone, zone_len) = bytes_arg(m.zone);
        // SAFETY: the ring is live; the slices outlive the call.
        check(unsafe { sys::chr_ring_add(self.ptr(), id, id_len, m.weight, zone, zone_len, m.tag) })
    }

    /// Removes a member; only its keys move.
    pub fn remove(&self, id: impl AsRef<[u8]>) -> Result<()> {
        let (id, len) = bytes_arg(id.as_ref());
        // SAFETY: as add_member.
        check(unsafe { sys::chr_ring_remove(self.ptr(), id, len) })
    }

    /// Changes a member's weight; keys move only to or from it.
    pub fn set_weight(&self, id: impl AsRef<[u8]>, weight: u32) -> Result<()> {
        let (id, len) = bytes_arg(id.as_ref());
        // SAFETY: as add_member.
        check(unsafe { sys::chr_ring_set_weight(self.ptr(), id, len, weight) })
    }

    /// Applies the changes in order and publishes them as one snapshot:
    /// readers see all or none. On error nothing changed and
    /// [`Error::index`] names the change that failed.
    pub fn apply(&self, changes: &[Change<'_>]) -> Result<()> {
        let raw: Vec<sys::chr_change> = changes.iter().map(Change::raw).collect();
        let mut failed = 0usize;
        // SAFETY: raw borrows from `changes`, alive during the call.
        let status = unsafe { sys::chr_ring_apply(self.ptr(), raw.as_ptr(), raw.len(), &mut failed) };
        check(status).map_err(|e| e.at(failed))
    }

    /// The member that owns `key`: a copy, no heap allocation.
    pub fn lookup(&self, key: impl AsRef<[u8]>) -> Result<Node> {
        let (k, len) = bytes_arg(key.as_ref());
        let mut out = Node::empty_raw();
        // SAFETY: out is a valid chr_node_ref to fill.
        check(unsafe { sys::chr_ring_lookup(self.ptr(), k, len, &mut out) })?;
        Ok(Node::from_raw(out))
    }

    /// Up to `n` distinct members for `key`, coordinator first (members of
    /// weight 0 are never chosen). `n` is clamped to the number of members
    /// at the time of the call.
    pub fn replicas(&self, key: impl AsRef<[u8]>, n: usize) -> Result<Vec<Node>> {
        let room = n.min(self.node_count()?).max(1);
        let mut out = vec![Node::empty_raw(); room];
        let mut count = 0usize;
        let (k, len) = bytes_arg(key.as_ref());
        // SAFETY: out has room for min(n, room) entries.
        check(unsafe { sys::chr_ring_replicas(self.ptr(), k, len, n.min(room), out.as_mut_ptr(), &mut count) })?;
        out.truncate(count);
        Ok(out.into_iter().map(Node::from_raw).collect())
    }

    /// Members, weight 0 included.
    pub fn node_count(&self) -> Result<usize> {
        let mut c = 0;
        // SAFETY: c is a valid out-pointer.
        check(unsafe { sys::chr_ring_node_count(self.ptr(), &mut c) })?;
        Ok(c)
    }

    /// Tokens on the circle.
    pub fn token_count(&self) -> Result<usize> {
        let mut c = 0;
        // SAFETY: c is a valid out-pointer.
        check(unsafe { sys::chr_ring_token_count(self.ptr(), &mut c) })?;
        Ok(c)
    }

    /// Every member, ids in byte order.
    pub fn nodes(&self) -> Result<Vec<Node>> {
        let mut count = 0usize;
        loop {
            // Ask the size, then fetch; a writer may grow the ring between,
            // and then the library answers CHR_ERANGE with the new size.
            let mut out = vec![Node::empty_raw(); count];
            // SAFETY: out has room for out.len() entries.
            let status = unsafe { sys::chr_ring_nodes(self.ptr(), out.as_mut_ptr(), out.len(), &mut count) };
            if status == sys::CHR_ERANGE && count > out.len() {
                continue;
            }
            check(status)?;
            out.truncate(count);
            return Ok(out.into_iter().map(Node::from_raw).collect());
        }
    }

    /// The fraction of the circle (0..1) that member `id` owns.
    pub fn ownership(&self, id: impl AsRef<[u8]>) -> Result<f64> {
        let (id, len) = bytes_arg(id.as_ref());
        let mut f = 0.0;
        // SAFETY: f is a valid out-pointer.
        check(unsafe { sys::chr_ring_ownership(self.ptr(), id, len, &mut f) })?;
        Ok(f)
    }

    /// A digest of the options and placement: equal fingerprints route
    /// every key and every replica list the same.
    pub fn fingerprint(&self) -> Result<u64> {
        let mut fp = 0;
        // SAFETY: fp is a valid out-pointer.
        check(unsafe { sys::chr_ring_fingerprint(self.ptr(), &mut fp) })?;
        Ok(fp)
    }

    /// The current snapshot: one consistent view for many lookups, valid
    /// (and unchanged) until dropped, even after the ring is.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let mut out = ptr::null_mut();
        // SAFETY: out is a valid out-pointer.
        check(unsafe { sys::chr_ring_snapshot(self.ptr(), &mut out) })?;
        Ok(Snapshot::from_raw(out))
    }
}

crate::debug_by_counts!(Ring);
