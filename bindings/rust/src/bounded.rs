//! Bounded-load and availability-aware lookups, and the in-flight tracker
//! (chring.h, "Bounded loads and availability"; docs/bounded-loads.md).
use std::ptr::NonNull;

use crate::bytes_arg;
use crate::error::{check, Error, Result};
use crate::node::NodeView;
use crate::snapshot::Snapshot;
use crate::sys;

/// Where requests go when the key's home is full or unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spill {
    /// The key's replica walk: the overflow lands on the key's own replicas.
    Replicas,
    /// A permutation of the members seeded by the key's hash (against cascades).
    Shuffle,
}

/// How a bounded lookup caps nodes.
#[derive(Debug, Clone, Copy)]
pub struct BoundOptions {
    /// The cap as a percentage of the weighted mean load, 100..100000 (125 = 1.25 x).
    pub factor_pct: u32,
    /// The spill order.
    pub spill: Spill,
    /// At most this many nodes compared with their capacity; 0 = no limit.
    pub max_probes: u32,
    /// Added to every node's capacity.
    pub slack: u64,
}

impl Default for BoundOptions {
    fn default() -> Self {
        BoundOptions { factor_pct: 125, spill: Spill::Replicas, max_probes: 0, slack: 0 }
    }
}

impl BoundOptions {
    fn raw(&self) -> sys::chr_bound_options {
        let mut o = sys::chr_bound_options { version: 0, factor_pct: 0, spill: 0, max_probes: 0, slack: 0 };
        // SAFETY: o is a valid struct to fill; the version is the one we declare.
        unsafe { sys::chr_bound_options_init(&mut o, sys::CHR_BOUND_OPTIONS_VERSION) };
        o.factor_pct = self.factor_pct;
        o.spill = match self.spill {
            Spill::Replicas => sys::CHR_SPILL_REPLICAS,
            Spill::Shuffle => sys::CHR_SPILL_SHUFFLE,
        };
        o.max_probes = self.max_probes;
        o.slack = self.slack;
        o
    }
}

fn raw_opts(opts: Option<&BoundOptions>) -> Option<sys::chr_bound_options> {
    opts.map(BoundOptions::raw)
}

fn opts_ptr(o: &Option<sys::chr_bound_options>) -> *const sys::chr_bound_options {
    o.as_ref().map_or(std::ptr::null(), |o| o as *const _)
}

/// What a bounded lookup chose and how.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BoundResult {
    /// The chosen node's index.
    pub index: usize,
    /// The key's home (what [`Snapshot::lookup`] returns).
    pub home: usize,
    /// Nodes compared with their capacity.
    pub probes: u32,
    /// The node is not the key's home.
    pub spilled: bool,
    /// The probe limit was reached with every probed node full.
    pub over: bool,
    /// The chosen node's load before this request.
    pub load: u64,
    /// Its capacity.
    pub capacity: u64,
}

impl BoundResult {
    fn from_raw(r: &sys::chr_bound_result) -> BoundResult {
        BoundResult {
            index: r.index as usize,
            home: r.home as usize,
            probes: r.probes,
            spilled: r.flags & sys::CHR_BOUND_SPILLED != 0,
            over: r.flags & sys::CHR_BOUND_OVER != 0,
            load: r.load,
            capacity: r.capacity,
        }
    }
}

impl Snapshot {
    /// The node for `key` that has room, given every node's in-flight
    /// `loads` (by node index; `None` = all 0) and `available` mask (`None`
    /// = all available). `opts` `None` means no bound: availability only.
    pub fn lookup_bounded(
        &self,
        key: impl AsRef<[u8]>,
        loads: Option<&[u64]>,
        available: Option<&[bool]>,
        opts: Option<&BoundOptions>,
    ) -> Result<(NodeView<'_>, BoundResult)> {
        let n = self.node_count()?;
        for (what, len) in [("loads", loads.map(<[u64]>::len)), ("available", available.map(<[bool]>::len))] {
            if let Some(len) = len {
                if len != n {
                    return Err(Error::binding(
                        sys::CHR_EINVAL,
                        format!("Snapshot::lookup_bounded: {} has {} entries, the snapshot {} nodes", what, len, n),
                    ));
                }
            }
        }
        let mask: Option<Vec<u8>> = available.map(|a| a.iter().map(|&up| up as u8).collect());
        let (k, len) = bytes_arg(key.as_ref());
        let o = raw_opts(opts);
        let mut out = NodeView::empty_raw();
        let mut res = sys::chr_bound_result::default();
        // SAFETY: loads and mask hold n entries (checked above) or are NULL;
        // out and res are valid to fill.
        check(unsafe {
            sys::chr_snapshot_lookup_bounded(
                self.raw_ptr(),
                k,
                len,
                loads.map_or(std::ptr::null(), <[u64]>::as_ptr),
                mask.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()),
                n,
                opts_ptr(&o),
                &mut out,
                &mut res,
            )
        })?;
        Ok((NodeView::from_raw(out), BoundResult::from_raw(&res)))
    }
}

/// The capacity of each weight (0 = not a candidate) for `total_load`
/// requests in flight: the formula bounded lookups compare loads with.
pub fn bound_capacities(weights: &[u32], total_load: u64, opts: &BoundOptions) -> Result<Vec<u64>> {
    let mut caps = vec![0u64; weights.len()];
    let o = opts.raw();
    // SAFETY: weights and caps hold weights.len() entries.
    check(unsafe { sys::chr_bound_capacities(weights.as_ptr(), weights.len(), total_load, &o, caps.as_mut_ptr()) })?;
    Ok(caps)
}

/// Per-node in-flight counters keyed by node id, across snapshots; shared
/// by any number of threads.
pub struct Tracker {
    raw: NonNull<sys::chr_tracker>,
}

// SAFETY: chring.h: every tracker call but chr_tracker_free may run on any
// thread concurrently; Drop (the free) owns it exclusively.
unsafe impl Send for Tracker {}
unsafe impl Sync for Tracker {}

impl Drop for Tracker {
    fn drop(&mut self) {
        // SAFETY: exclusive ownership; guards borrow the tracker, so none is left.
        unsafe { sys::chr_tracker_free(self.raw.as_ptr()) }
    }
}

/// One acquired request; dropping it releases it.
pub struct Guard<'t, 's> {
    tracker: &'t Tracker,
    ticket: sys::chr_ticket,
    node: NodeView<'s>,
    result: BoundResult,
}

impl Guard<'_, '_> {
    /// The node the request was placed on.
    pub fn node(&self) -> &NodeView<'_> {
        &self.node
    }
    /// How it was chosen.
    pub fn result(&self) -> BoundResult {
        self.result
    }
}

impl Drop for Guard<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: the ticket came from this tracker's acquire and is released once.
        let st = unsafe { sys::chr_tracker_release(self.tracker.raw.as_ptr(), &self.ticket) };
        debug_assert_eq!(st, sys::CHR_OK, "chr_tracker_release of a guard's own ticket");
    }
}

impl Tracker {
    /// A tracker with room for `max_nodes` distinct node ids over its life
    /// (0 = 4096).
    pub fn new(max_nodes: usize) -> Result<Tracker> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw is a valid out pointer.
        check(unsafe { sys::chr_tracker_new(max_nodes, &mut raw) })?;
        Ok(Tracker { raw: NonNull::new(raw).expect("chr_tracker_new returned CHR_OK and NULL") })
    }

    /// Places one request (with the bound, or availability only when
    /// `opts` is `None`) and counts it until the guard is dropped. The guard
    /// may outlive the snapshot's node: it borrows the snapshot only for
    /// the node view.
    pub fn acquire<'t, 's>(
        &'t self,
        snap: &'s Snapshot,
        key: impl AsRef<[u8]>,
        opts: Option<&BoundOptions>,
    ) -> Result<Guard<'t, 's>> {
        let (k, len) = bytes_arg(key.as_ref());
        let o = raw_opts(opts);
        let mut out = NodeView::empty_raw();
        let mut res = sys::chr_bound_result::default();
        let mut ticket = sys::chr_ticket::default();
        // SAFETY: every out pointer is valid to fill.
        check(unsafe {
            sys::chr_tracker_acquire(self.raw.as_ptr(), snap.raw_ptr(), k, len, opts_ptr(&o), &mut out, &mut res, &mut ticket)
        })?;
        Ok(Guard { tracker: self, ticket, node: NodeView::from_raw(out), result: BoundResult::from_raw(&res) })
    }

    /// Marks node `id` available or not for this tracker's acquires.
    pub fn set_available(&self, id: impl AsRef<[u8]>, available: bool) -> Result<()> {
        let (k, len) = bytes_arg(id.as_ref());
        // SAFETY: id is borrowed for the call.
        check(unsafe { sys::chr_tracker_set_available(self.raw.as_ptr(), k, len, available as u32) })
    }

    /// Requests in flight on node `id`.
    pub fn load(&self, id: impl AsRef<[u8]>) -> Result<u64> {
        let (k, len) = bytes_arg(id.as_ref());
        let mut v = 0;
        // SAFETY: v is a valid out pointer.
        check(unsafe { sys::chr_tracker_load(self.raw.as_ptr(), k, len, &mut v) })?;
        Ok(v)
    }

    /// Requests in flight over every node.
    pub fn total(&self) -> Result<u64> {
        let mut v = 0;
        // SAFETY: v is a valid out pointer.
        check(unsafe { sys::chr_tracker_total(self.raw.as_ptr(), &mut v) })?;
        Ok(v)
    }
}
