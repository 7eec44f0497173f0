//! Availability (chring.h, "Availability"): members marked down, routed
//! around along their own replica walk without moving a token, a panic
//! threshold, and the digest that proves processes agree on the state.
use crate::bytes_arg;
use crate::error::{check, Result};
use crate::ring::Ring;
use crate::snapshot::Snapshot;
use crate::sys;

/// The panic threshold of a ring nobody set one for (percent): with more
/// of the weight than that marked down, the marks are ignored.
pub const PANIC_THRESHOLD_DEFAULT: u32 = sys::CHR_PANIC_THRESHOLD_DEFAULT;

/// The availability state of a ring or snapshot (`chr_availability_info`).
///
/// While the marks are in effect (not in panic), lookups, batches and
/// replica lists send a down member's keys to the next member of their own
/// replica walk; unmarking brings every key back to its old member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Availability {
    /// More than `panic_threshold` percent of the weight is down: the marks
    /// are ignored and every member is used.
    pub panic: bool,
    /// Percent, 0..=100.
    pub panic_threshold: u32,
    /// Members marked down (in effect or not).
    pub down: u32,
    /// Weight of the members marked down that have tokens.
    pub down_weight: u64,
    /// Weight of every member with tokens.
    pub total_weight: u64,
    /// The availability digest: equal fingerprints and equal digests route
    /// every key the same, in any process and language. 0 when nothing is
    /// marked and the threshold is the default.
    pub digest: u64,
}

impl Availability {
    fn read(call: impl FnOnce(*mut sys::chr_availability_info) -> sys::chr_status) -> Result<Availability> {
        let mut info = sys::chr_availability_info::default();
        // SAFETY: info is a valid out-struct.
        check(unsafe { sys::chr_availability_info_init(&mut info, sys::CHR_AVAILABILITY_INFO_VERSION) })?;
        check(call(&mut info))?;
        Ok(Availability {
            panic: info.panic != 0,
            panic_threshold: info.panic_threshold,
            down: info.down,
            down_weight: info.down_weight,
            total_weight: info.total_weight,
            digest: info.digest,
        })
    }
}

impl Ring {
    /// Marks member `id` down (`true`) or up (`false`) and publishes the
    /// result as a new snapshot; marking a member already in that state
    /// changes nothing. [`crate::ErrorKind::NotFound`] for an id that is
    /// not a member.
    pub fn set_down(&self, id: impl AsRef<[u8]>, down: bool) -> Result<()> {
        let (id, len) = bytes_arg(id.as_ref());
        // SAFETY: the ring is live; id outlives the call.
        check(unsafe { sys::chr_ring_set_down(self.raw_ptr(), id, len, down as u32) })
    }

    /// Replaces the whole availability state in one snapshot: exactly the
    /// members `ids` are down (duplicates allowed), every other member is
    /// up, and the panic threshold is `panic_threshold` percent (0..=100;
    /// 100 never panics). On error the ring is unchanged:
    /// [`crate::ErrorKind::NotFound`] for an id that is not a member, with
    /// [`crate::Error::index`] its position in `ids` and
    /// [`crate::Error::member`] the id; `OutOfRange` for a threshold over 100.
    pub fn set_availability<I: AsRef<[u8]>>(&self, ids: &[I], panic_threshold: u32) -> Result<()> {
        let (ptrs, lens): (Vec<_>, Vec<_>) = ids.iter().map(|id| bytes_arg(id.as_ref())).unzip();
        // SAFETY: ptrs/lens hold ids.len() entries borrowed from `ids`.
        check(unsafe {
            sys::chr_ring_set_availability(self.raw_ptr(), ptrs.as_ptr(), lens.as_ptr(), ids.len(), panic_threshold)
        })
    }

    /// The availability state of the ring's current snapshot.
    pub fn availability(&self) -> Result<Availability> {
        // SAFETY: the ring is live; info is the out-struct read() made.
        Availability::read(|info| unsafe { sys::chr_ring_availability(self.as_ptr(), info) })
    }
}

impl Snapshot {
    /// The availability state of this snapshot.
    pub fn availability(&self) -> Result<Availability> {
        // SAFETY: the snapshot is live; info is the out-struct read() made.
        Availability::read(|info| unsafe { sys::chr_snapshot_availability(self.as_ptr(), info) })
    }

    /// Whether member `index` ([`Snapshot::node`] order) is marked down,
    /// whether or not the mark is in effect ([`crate::NodeView::down`] is
    /// set only while it is: not in panic). `OutOfRange` past the end.
    pub fn marked_down(&self, index: usize) -> Result<bool> {
        let mut marked = 0u32;
        // SAFETY: marked is a valid out-pointer.
        check(unsafe { sys::chr_snapshot_marked_down(self.as_ptr(), index, &mut marked) })?;
        Ok(marked != 0)
    }
}
