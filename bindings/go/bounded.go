package chring

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Spill orders of a bounded lookup: where requests go when the key's home
// is full or unavailable.
const (
	SpillReplicas = C.CHR_SPILL_REPLICAS // the key's replica walk (locality)
	SpillShuffle  = C.CHR_SPILL_SHUFFLE  // a permutation seeded by the key's hash
)

// Flags of a BoundResult.
const (
	BoundSpilled = C.CHR_BOUND_SPILLED // the node is not the key's home
	BoundOver    = C.CHR_BOUND_OVER    // MaxProbes reached with every probed node full
)

// BoundOptions caps every node at FactorPct percent of its weighted share
// of the requests in flight (docs/bounded-loads.md). The zero value is not
// valid: start from DefaultBoundOptions().
type BoundOptions struct {
	FactorPct uint32 // 100..100000; 125 = 1.25 x the weighted mean
	Spill     uint32 // SpillReplicas or SpillShuffle
	MaxProbes uint32 // 0 = no limit
	Slack     uint64 // added to every node's capacity
}

// DefaultBoundOptions is factor 1.25, replica-walk spill, no probe limit,
// no slack.
func DefaultBoundOptions() BoundOptions {
	return BoundOptions{FactorPct: 125, Spill: SpillReplicas}
}

func (o *BoundOptions) c() *C.chr_bound_options {
	if o == nil {
		return nil
	}
	var c C.chr_bound_options
	C.chr_bound_options_init(&c, C.CHR_BOUND_OPTIONS_VERSION)
	c.factor_pct = C.uint32_t(o.FactorPct)
	c.spill = C.uint32_t(o.Spill)
	c.max_probes = C.uint32_t(o.MaxProbes)
	c.slack = C.uint64_t(o.Slack)
	return &c
}

// BoundResult says what a bounded lookup chose and how.
type BoundResult struct {
	Index    int    // the chosen node's index
	Home     int    // the key's home (Snapshot.LookupIndex)
	Probes   int    // nodes compared with their capacity
	Flags    uint32 // BoundSpilled, BoundOver
	Load     uint64 // the chosen node's load before this request
	Capacity uint64 // its capacity
}

func boundResult(r *C.chr_bound_result) BoundResult {
	return BoundResult{Index: int(r.index), Home: int(r.home), Probes: int(r.probes),
		Flags: uint32(r.flags), Load: uint64(r.load), Capacity: uint64(r.capacity)}
}

// LookupBounded returns the node for key that has room, given every node's
// in-flight load (by node index; nil = all 0) and availability (nil = all
// available). opts nil means no bound: only availability applies.
func (s *Snapshot) LookupBounded(key []byte, loads []uint64, available []bool, opts *BoundOptions) (Node, BoundResult, error) {
	p, err := s.handle()
	if err != nil {
		return Node{}, BoundResult{}, err
	}
	defer runtime.KeepAlive(s)
	table, err := s.nodes(p)
	if err != nil {
		return Node{}, BoundResult{}, err
	}
	n := len(table)
	var lp *C.uint64_t
	if loads != nil {
		if len(loads) != n {
			return Node{}, BoundResult{}, &Error{Status: ErrInvalid, Index: -1,
				Message: "Snapshot.LookupBounded: loads must have one entry per node (NodeCount())"}
		}
		if n > 0 {
			lp = (*C.uint64_t)(unsafe.Pointer(&loads[0]))
		}
	}
	var ap *C.uchar
	if available != nil {
		if len(available) != n {
			return Node{}, BoundResult{}, &Error{Status: ErrInvalid, Index: -1,
				Message: "Snapshot.LookupBounded: available must have one entry per node (NodeCount())"}
		}
		mask := make([]C.uchar, n+1)
		for i, up := range available {
			if up {
				mask[i] = 1
			}
		}
		ap = &mask[0]
	}
	var view C.chr_node_view
	var res C.chr_bound_result
	k, kn := bytesArg(key)
	if err := check(C.gochr_snapshot_lookup_bounded(unsafe.Pointer(p), k, kn, lp, ap, C.size_t(n), opts.c(), &view, &res)); err != nil {
		return Node{}, BoundResult{}, err
	}
	return table[view.index], boundResult(&res), nil
}

// BoundCapacities returns the capacity of each weight (0 = not a candidate)
// for totalLoad requests in flight: the formula LookupBounded compares
// loads with.
func BoundCapacities(weights []uint32, totalLoad uint64, opts *BoundOptions) ([]uint64, error) {
	caps := make([]uint64, len(weights))
	if len(weights) == 0 {
		return caps, nil
	}
	if opts == nil {
		d := DefaultBoundOptions()
		opts = &d
	}
	err := check(C.gochr_bound_capacities((*C.uint32_t)(unsafe.Pointer(&weights[0])), C.size_t(len(weights)),
		C.uint64_t(totalLoad), opts.c(), (*C.uint64_t)(unsafe.Pointer(&caps[0]))))
	return caps, err
}

// Tracker counts requests in flight per node id, across snapshots: an
// acquired request is released correctly after its node left the ring.
// Safe for any number of goroutines; Close after every other call.
type Tracker struct {
	ptr handle[C.chr_tracker]
}

// NewTracker creates a tracker with room for maxNodes distinct node ids
// over its life (0 = 4096).
func NewTracker(maxNodes int) (*Tracker, error) {
	if maxNodes < 0 {
		return nil, &Error{Status: ErrRange, Index: -1, Message: "NewTracker: maxNodes is negative"}
	}
	var p *C.chr_tracker
	if err := check(C.gochr_tracker_new(C.size_t(maxNodes), &p)); err != nil {
		return nil, err
	}
	t := &Tracker{}
	t.ptr.p.Store(p)
	runtime.SetFinalizer(t, (*Tracker).Close)
	return t, nil
}

// Close frees the tracker; outstanding guards become invalid.
func (t *Tracker) Close() error {
	if p := t.ptr.take(); p != nil {
		C.chr_tracker_free(p)
		runtime.SetFinalizer(t, nil)
	}
	return nil
}

// Guard is one acquired request. Release it exactly once, typically with
// defer right after Acquire:
//
//	g, err := tracker.Acquire(snap, key, &opts)
//	if err != nil { ... }
//	defer g.Release()
type Guard struct {
	Node   Node
	Result BoundResult
	t      *Tracker
	ticket C.chr_ticket
	done   bool
}

// Acquire places one request with the bound (opts nil: availability only)
// and counts it on the chosen node.
func (t *Tracker) Acquire(s *Snapshot, key []byte, opts *BoundOptions) (*Guard, error) {
	tp, err := t.ptr.get()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	sp, err := s.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(s)
	table, err := s.nodes(sp)
	if err != nil {
		return nil, err
	}
	g := &Guard{t: t}
	var view C.chr_node_view
	var res C.chr_bound_result
	k, kn := bytesArg(key)
	if err := check(C.gochr_tracker_acquire(unsafe.Pointer(tp), unsafe.Pointer(sp), k, kn, opts.c(), &view, &res, &g.ticket)); err != nil {
		return nil, err
	}
	g.Node = table[view.index]
	g.Result = boundResult(&res)
	return g, nil
}

// Release ends the request. A second Release is a no-op returning nil.
func (g *Guard) Release() error {
	if g == nil || g.done {
		return nil
	}
	tp, err := g.t.ptr.get()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g.t)
	g.done = true
	return check(C.gochr_tracker_release(unsafe.Pointer(tp), &g.ticket))
}

// SetAvailable marks node id available or not for this tracker's acquires.
func (t *Tracker) SetAvailable(id []byte, available bool) error {
	tp, err := t.ptr.get()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(t)
	up := C.uint32_t(0)
	if available {
		up = 1
	}
	k, kn := bytesArg(id)
	return check(C.gochr_tracker_set_available(unsafe.Pointer(tp), k, kn, up))
}

// Load is the number of requests in flight on node id.
func (t *Tracker) Load(id []byte) (uint64, error) {
	tp, err := t.ptr.get()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	var v C.uint64_t
	k, kn := bytesArg(id)
	err = check(C.gochr_tracker_load(unsafe.Pointer(tp), k, kn, &v))
	return uint64(v), err
}

// Total is the number of requests in flight over every node.
func (t *Tracker) Total() (uint64, error) {
	tp, err := t.ptr.get()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	var v C.uint64_t
	err = check(C.gochr_tracker_total(unsafe.Pointer(tp), &v))
	return uint64(v), err
}
