//! Migration plans (chring.h, "Migration plans"; docs/migration.md): what
//! moves between two snapshots that place keys alike.

use std::ptr::NonNull;

use crate::bytes_arg;
use crate::error::{check, Error, Result};
use crate::node::NodeView;
use crate::snapshot::Snapshot;
use crate::sys;
use crate::zones::ReplicaPolicy;

/// One of a diff's two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The snapshot before the change.
    Old,
    /// The snapshot after it.
    New,
}

impl Side {
    fn raw(self) -> i32 {
        match self {
            Side::Old => sys::CHR_DIFF_OLD,
            Side::New => sys::CHR_DIFF_NEW,
        }
    }
}

fn index(i: u32) -> Option<u32> {
    (i != sys::CHR_DIFF_NONE).then_some(i)
}

/// Key positions `first..=last` (never wrapping) whose owner changes from
/// node `from` of the old snapshot to node `to` of the new one (`None`: no
/// owner, the snapshot has no tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// First key position of the range.
    pub first: u64,
    /// Last key position, included.
    pub last: u64,
    /// Owner in the old snapshot (its node index there).
    pub from: Option<u32>,
    /// Owner in the new snapshot (its node index there).
    pub to: Option<u32>,
}

impl Range {
    /// The range's share of the key space: (last - first + 1) / 2^64.
    pub fn share(&self) -> f64 {
        ((self.last - self.first) as f64 + 1.0) / 18446744073709551616.0
    }
}

/// A cell of the transfer matrix: the share of the key space owned by
/// `from` in the old snapshot and by `to` in the new one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Node index in the old snapshot, `None` for no owner.
    pub from: Option<u32>,
    /// Node index in the new snapshot, `None` for no owner.
    pub to: Option<u32>,
    /// Of the 2^64 key positions, 0..1.
    pub fraction: f64,
}

/// Counts and totals of a diff.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiffInfo {
    /// Ranges [`Diff::ranges`] lists.
    pub ranges: usize,
    /// Cells [`Diff::matrix`] lists.
    pub cells: usize,
    /// Share of the key space whose owner changes.
    pub moved: f64,
    /// Fingerprint of the old snapshot.
    pub old_fingerprint: u64,
    /// Fingerprint of the new snapshot.
    pub new_fingerprint: u64,
    /// Members of the old snapshot.
    pub old_nodes: usize,
    /// Members of the new snapshot.
    pub new_nodes: usize,
    /// Members only in the new snapshot (by id).
    pub added: usize,
    /// Members only in the old snapshot.
    pub removed: usize,
}

/// Where a key lives before and after (for dual reads during a move); the
/// views borrow from the diff.
#[derive(Clone, Copy)]
pub struct Transition<'d> {
    /// The key's position on the circle.
    pub position: u64,
    /// Its owner in the old snapshot, `None` if that has no tokens.
    pub old: Option<NodeView<'d>>,
    /// Its owner in the new snapshot.
    pub new: Option<NodeView<'d>>,
    /// Whether the owners are different nodes.
    pub moved: bool,
}

/// Node `to` of the new snapshot gains positions `first..=last` as a
/// replica and can copy them from `sources` (old snapshot indices, in the
/// old replica list's order, coordinator first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRange {
    /// First key position.
    pub first: u64,
    /// Last key position, included.
    pub last: u64,
    /// The gaining node: its index in the new snapshot.
    pub to: u32,
    /// The old replicas that hold the range (empty if the old snapshot has no tokens).
    pub sources: Vec<u32>,
}

/// The difference between two snapshots: the ranges whose owner changes,
/// the transfer matrix, nodes matched by id, transition lookups and replica
/// plans. It holds its own references to both snapshots, so it may outlive
/// the [`Snapshot`]s it was made from.
pub struct Diff {
    raw: NonNull<sys::chr_diff>,
    info: DiffInfo,
}

// SAFETY: a diff is immutable once made; chring.h: "any number of threads
// may read it at once". Drop (the free) owns it exclusively.
unsafe impl Send for Diff {}
unsafe impl Sync for Diff {}

impl Drop for Diff {
    fn drop(&mut self) {
        // SAFETY: exclusive ownership; views borrowing it are gone.
        unsafe { sys::chr_diff_free(self.raw.as_ptr()) }
    }
}

/// Reads `total` elements through one of the cursor calls.
fn read_all<T: Default + Clone>(
    total: usize,
    mut call: impl FnMut(usize, *mut T, usize, &mut usize) -> sys::chr_status,
) -> Result<Vec<T>> {
    let mut out = vec![T::default(); total];
    let mut at = 0;
    while at < total {
        let mut written = 0usize;
        // SAFETY (of the calls): out has room for total - at elements from at.
        check(call(at, out[at..].as_mut_ptr(), total - at, &mut written))?;
        if written == 0 {
            return Err(Error::binding(sys::CHR_EINTERNAL, "a diff's cursor stopped early".into()));
        }
        at += written;
    }
    Ok(out)
}

impl Diff {
    /// The diff from `old` to `new`: one merge walk over both token
    /// arrays. [`crate::ErrorKind::Incompatible`] if they place keys
    /// differently (placement, hasher or seed).
    pub fn new(old: &Snapshot, new: &Snapshot) -> Result<Diff> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: both snapshots are live; raw is a valid out-pointer.
        check(unsafe { sys::chr_diff_new(old.raw_ptr(), new.raw_ptr(), &mut raw) })?;
        let raw = NonNull::new(raw).expect("chr_diff_new returned CHR_OK and NULL");
        let mut i = sys::chr_diff_info::default();
        // SAFETY: i is a chr_diff_info of this version; raw is live.
        let described = unsafe {
            check(sys::chr_diff_info_init(&mut i, sys::CHR_DIFF_INFO_VERSION))
                .and_then(|_| check(sys::chr_diff_describe(raw.as_ptr(), &mut i)))
        };
        let diff = Diff {
            raw,
            info: DiffInfo {
                ranges: i.ranges as usize,
                cells: i.cells as usize,
                moved: i.moved,
                old_fingerprint: i.old_fingerprint,
                new_fingerprint: i.new_fingerprint,
                old_nodes: i.old_nodes as usize,
                new_nodes: i.new_nodes as usize,
                added: i.added as usize,
                removed: i.removed as usize,
            },
        };
        described.map(|_| diff)
    }

    fn ptr(&self) -> *const sys::chr_diff {
        self.raw.as_ptr()
    }

    /// Counts and totals.
    pub fn info(&self) -> DiffInfo {
        self.info
    }

    /// Every range, sorted by `first`.
    pub fn ranges(&self) -> Result<Vec<Range>> {
        // SAFETY: the diff is live; read_all passes room for `room` ranges.
        let raw = read_all(self.info.ranges, |at, out: *mut sys::chr_diff_range, room, written| unsafe {
            sys::chr_diff_ranges(self.ptr(), at, out, room, written)
        })?;
        Ok(raw.iter().map(|r| Range { first: r.first, last: r.last, from: index(r.from), to: index(r.to) }).collect())
    }

    /// The transfer matrix's cells that are not 0, sorted by (from, to),
    /// no owner last; they sum to 1.
    pub fn matrix(&self) -> Result<Vec<Cell>> {
        // SAFETY: as in ranges().
        let raw = read_all(self.info.cells, |at, out: *mut sys::chr_diff_cell, room, written| unsafe {
            sys::chr_diff_matrix(self.ptr(), at, out, room, written)
        })?;
        Ok(raw.iter().map(|c| Cell { from: index(c.from), to: index(c.to), fraction: c.fraction }).collect())
    }

    /// Member `index` of one side, borrowed from the diff.
    pub fn node(&self, side: Side, index: u32) -> Result<NodeView<'_>> {
        let mut snap = std::ptr::null();
        let mut out = NodeView::empty_raw();
        // SAFETY: the diff is live; the snapshot it hands out lives as long
        // as the diff, and so does the view (the lifetime of &self).
        check(unsafe { sys::chr_diff_snapshot(self.ptr(), side.raw(), &mut snap) })?;
        check(unsafe { sys::chr_snapshot_node(snap, index as usize, &mut out) })?;
        Ok(NodeView::from_raw(out))
    }

    /// The index, in the other snapshot, of the member with the same id as
    /// member `index` of `side`; `None` if the other has none.
    pub fn counterpart(&self, side: Side, index: u32) -> Result<Option<u32>> {
        let mut other = 0u32;
        // SAFETY: the diff is live; other is a valid out-pointer.
        check(unsafe { sys::chr_diff_counterpart(self.ptr(), side.raw(), index, &mut other) })?;
        Ok(self::index(other))
    }

    /// The transition lookup: `key`'s owner before and after.
    pub fn lookup(&self, key: impl AsRef<[u8]>) -> Result<Transition<'_>> {
        let (k, len) = bytes_arg(key.as_ref());
        // SAFETY: chr_transition is plain data, valid when zeroed.
        let mut t: sys::chr_transition = unsafe { std::mem::zeroed() };
        // SAFETY: the diff is live; t is a valid chr_transition to fill.
        check(unsafe { sys::chr_diff_lookup(self.ptr(), k, len, &mut t) })?;
        let view = |i: u32, v: sys::chr_node_view| index(i).map(|_| NodeView::from_raw(v));
        Ok(Transition {
            position: t.position,
            old: view(t.old_index, t.old_owner),
            new: view(t.new_index, t.new_owner),
            moved: t.moved != 0,
        })
    }

    /// The replica plan for `n` replicas (1..=16) under `policy`: each range
    /// a node gains as a replica and the old replicas it can copy it from,
    /// sorted by (first, to).
    pub fn plan(&self, policy: ReplicaPolicy, n: usize) -> Result<Vec<PlanRange>> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the diff is live; raw is a valid out-pointer.
        check(unsafe { sys::chr_plan_new(self.ptr(), policy.raw(), n, &mut raw) })?;
        struct Plan(*mut sys::chr_plan);
        impl Drop for Plan {
            fn drop(&mut self) {
                // SAFETY: made by chr_plan_new above, freed once.
                unsafe { sys::chr_plan_free(self.0) }
            }
        }
        let plan = Plan(raw);
        let mut info = sys::chr_plan_info::default();
        // SAFETY: info is a chr_plan_info of this version; the plan is live.
        unsafe {
            check(sys::chr_plan_info_init(&mut info, sys::CHR_PLAN_INFO_VERSION))?;
            check(sys::chr_plan_describe(plan.0, &mut info))?;
        }
        // SAFETY: as in ranges().
        let entries = read_all(info.entries as usize, |at, out: *mut sys::chr_plan_range, room, written| unsafe {
            sys::chr_plan_ranges(plan.0, at, out, room, written)
        })?;
        Ok(entries
            .iter()
            .map(|e| PlanRange {
                first: e.first,
                last: e.last,
                to: e.to,
                sources: e.sources[..e.source_count as usize].to_vec(),
            })
            .collect())
    }
}

impl std::fmt::Debug for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diff").field("info", &self.info).finish()
    }
}
