use std::fmt;
use std::marker::PhantomData;
use std::slice;

use crate::snapshot::Snapshot;
use crate::sys;

/// The accessors Node and NodeView share: plain values of `self.raw`.
macro_rules! plain_accessors {
    () => {
        /// The caller's tag given at add.
        pub fn tag(&self) -> u64 {
            self.raw.tag
        }
        /// The weight.
        pub fn weight(&self) -> u32 {
            self.raw.weight
        }
        /// Tokens placed for it (weight * tokens_per_weight).
        pub fn tokens(&self) -> u32 {
            self.raw.tokens
        }
        /// Position in the node table (ids in byte order) of the snapshot it came from.
        pub fn index(&self) -> usize {
            self.raw.index as usize
        }
        /// Fraction of the circle it owns, 0..1.
        pub fn ownership(&self) -> f64 {
            self.raw.ownership
        }
        /// The member is marked down and lookups route around it now (the
        /// ring is not in panic; `CHR_NODE_DOWN`). A replica list holds such
        /// a member only after every available one.
        pub fn down(&self) -> bool {
            self.raw.flags & crate::sys::CHR_NODE_DOWN != 0
        }
    };
}

/// A member as returned by calls on a [`crate::Ring`]: an owned copy
/// (the C `chr_node_ref`, kept inline: no heap allocation).
#[derive(Clone, Copy)]
pub struct Node {
    raw: sys::chr_node_ref,
}

impl Node {
    pub(crate) fn from_raw(raw: sys::chr_node_ref) -> Node {
        Node { raw }
    }

    pub(crate) fn empty_raw() -> sys::chr_node_ref {
        // SAFETY: chr_node_ref is plain data, valid when zeroed.
        unsafe { std::mem::zeroed() }
    }

    /// The node id (any bytes).
    pub fn id(&self) -> &[u8] {
        &self.raw.id[..self.raw.id_len as usize]
    }
    /// The node id as text, if it is UTF-8.
    pub fn id_str(&self) -> Option<&str> {
        std::str::from_utf8(self.id()).ok()
    }
    /// The zone label given at add (may be empty).
    pub fn zone(&self) -> &[u8] {
        &self.raw.zone[..self.raw.zone_len as usize]
    }
    plain_accessors!();
}

/// A member seen through a [`Snapshot`]: its id and zone are borrowed from
/// the snapshot, so a view cannot outlive it.
#[derive(Clone, Copy)]
pub struct NodeView<'s> {
    raw: sys::chr_node_view,
    _snapshot: PhantomData<&'s Snapshot>,
}

// SAFETY: a view is a pair of pointers into an immutable snapshot plus plain
// values; it is as shareable as the `&'s Snapshot` it stands for, and
// Snapshot is Sync.
unsafe impl Send for NodeView<'_> {}
unsafe impl Sync for NodeView<'_> {}

impl<'s> NodeView<'s> {
    pub(crate) fn from_raw(raw: sys::chr_node_view) -> NodeView<'s> {
        NodeView { raw, _snapshot: PhantomData }
    }

    pub(crate) fn empty_raw() -> sys::chr_node_view {
        // SAFETY: chr_node_view is plain data; the library fills it before use.
        unsafe { std::mem::zeroed() }
    }

    /// The node id, borrowed from the snapshot.
    pub fn id(&self) -> &'s [u8] {
        // SAFETY: the library filled (id, id_len) from the snapshot, which
        // outlives 's (PhantomData ties the view to it); id is never NULL.
        unsafe { slice::from_raw_parts(self.raw.id, self.raw.id_len) }
    }
    /// The node id as text, if it is UTF-8.
    pub fn id_str(&self) -> Option<&'s str> {
        std::str::from_utf8(self.id()).ok()
    }
    /// The zone label, borrowed from the snapshot.
    pub fn zone(&self) -> &'s [u8] {
        // SAFETY: as id(); zone is never NULL, zone_len may be 0.
        unsafe { slice::from_raw_parts(self.raw.zone, self.raw.zone_len) }
    }
    plain_accessors!();
}

fn show(f: &mut fmt::Formatter<'_>, name: &str, id: &[u8], zone: &[u8], weight: u32, index: usize) -> fmt::Result {
    f.debug_struct(name)
        .field("id", &String::from_utf8_lossy(id))
        .field("zone", &String::from_utf8_lossy(zone))
        .field("weight", &weight)
        .field("index", &index)
        .finish()
}

/// An id for people: UTF-8 as it is, each byte of anything else as `%XX`
/// (as the chring tool and membership files write such bytes).
fn display_id(f: &mut fmt::Formatter<'_>, mut id: &[u8]) -> fmt::Result {
    loop {
        match std::str::from_utf8(id) {
            Ok(text) => return f.write_str(text),
            Err(e) => {
                let (good, rest) = id.split_at(e.valid_up_to());
                // SAFETY: from_utf8 checked good (the bytes up to valid_up_to).
                f.write_str(unsafe { std::str::from_utf8_unchecked(good) })?;
                let bad = e.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    write!(f, "%{:02X}", b)?;
                }
                id = &rest[bad..];
            }
        }
    }
}

/// The node id: `println!("{}", ring.lookup("user:42")?)` prints
/// `cache-b`. Bytes that are not UTF-8 are written `%XX`.
impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display_id(f, self.id())
    }
}

/// The node id, as for [`Node`].
impl fmt::Display for NodeView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display_id(f, self.id())
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        show(f, "Node", self.id(), self.zone(), self.weight(), self.index())
    }
}

impl fmt::Debug for NodeView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        show(f, "NodeView", self.id(), self.zone(), self.weight(), self.index())
    }
}
