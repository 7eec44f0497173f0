package chring

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ErrIncompatible: two snapshots place keys differently (placement, hasher
// or seed), so they cannot be diffed.
const ErrIncompatible Status = C.CHR_EINCOMPATIBLE

// NoNode is the node index of "no owner": every position of a snapshot
// without tokens (empty, or every weight 0), and a member that the other
// side of a diff does not have.
const NoNode = -1

// Side names one of a diff's two snapshots.
type Side int32

const (
	SideOld Side = C.CHR_DIFF_OLD // the snapshot before the change
	SideNew Side = C.CHR_DIFF_NEW // the snapshot after it
)

// Range is a run of key positions First..Last (both included, First <=
// Last, never wrapping) whose owner changes from From (a node index in the
// old snapshot) to To (in the new one); either may be NoNode.
type Range struct {
	First, Last uint64
	From, To    int
}

// Share is the range's fraction of the key space: (Last-First+1) / 2^64.
func (r Range) Share() float64 { return (float64(r.Last-r.First) + 1) / (1 << 64) }

// Cell is one cell of the transfer matrix: the fraction of the key space
// owned by From in the old snapshot and by To in the new one.
type Cell struct {
	From, To int
	Fraction float64
}

// DiffInfo holds a diff's counts and totals (chr_diff_info).
type DiffInfo struct {
	Ranges, Cells                  int
	Moved                          float64 // share of the key space whose owner changes
	OldFingerprint, NewFingerprint uint64
	OldNodes, NewNodes             int
	Added, Removed                 int // members only in the new / only in the old snapshot
}

// Transition is where a key lives before and after (for dual reads).
type Transition struct {
	Position uint64
	Old, New int  // owner indices in each snapshot, or NoNode
	Moved    bool // the owners are different nodes
}

// PlanRange: node To (new snapshot index) gains positions First..Last and
// can copy them from Sources (old snapshot indices, in the old replica
// list's order, coordinator first; empty when the old snapshot has no
// tokens).
type PlanRange struct {
	First, Last uint64
	To          int
	Sources     []int
}

// Diff is what changes between two snapshots that place keys alike
// (docs/migration.md): the ranges whose owner changes, the transfer matrix,
// the correspondence of nodes by id, transition lookups and replica plans.
// It keeps its own references to both snapshots: the caller may close them.
// Its methods may be called from any number of goroutines at once, except
// Close.
type Diff struct {
	ptr      handle[C.chr_diff]
	info     DiffInfo
	old, new []Node // the two snapshots' node tables
}

func nodeIndex(i C.uint32_t) int {
	if i == C.CHR_DIFF_NONE {
		return NoNode
	}
	return int(i)
}

// NewDiff computes the diff from old to new: one merge walk over the two
// token arrays. ErrIncompatible if they place keys differently.
func NewDiff(old, new *Snapshot) (*Diff, error) {
	po, err := old.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(old)
	pn, err := new.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(new)
	var p *C.chr_diff
	if err := check(C.gochr_diff_new(unsafe.Pointer(po), unsafe.Pointer(pn), &p)); err != nil {
		return nil, err
	}
	d := &Diff{}
	d.ptr.p.Store(p)
	runtime.SetFinalizer(d, (*Diff).Close) // a safety net only: call Close
	var info C.chr_diff_info
	if err := check(C.gochr_result{status: C.chr_diff_info_init(&info, C.CHR_DIFF_INFO_VERSION)}); err != nil {
		d.Close()
		return nil, err
	}
	if err := check(C.gochr_diff_describe(unsafe.Pointer(p), &info)); err != nil {
		d.Close()
		return nil, err
	}
	d.info = DiffInfo{int(info.ranges), int(info.cells), float64(info.moved), uint64(info.old_fingerprint),
		uint64(info.new_fingerprint), int(info.old_nodes), int(info.new_nodes), int(info.added), int(info.removed)}
	if d.old, err = old.nodes(po); err == nil {
		d.new, err = new.nodes(pn)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close frees the diff. Closing twice is a no-op; calls after it return
// ErrClosed.
func (d *Diff) Close() error {
	if p := d.ptr.take(); p != nil {
		C.chr_diff_free(p)
		runtime.SetFinalizer(d, nil)
	}
	return nil
}

// Info returns the diff's counts and totals.
func (d *Diff) Info() DiffInfo { return d.info }

// Node is member index of one side, as Snapshot.Node gives it; NoNode or a
// bad index is ErrRange.
func (d *Diff) Node(side Side, index int) (Node, error) {
	table := d.old
	if side == SideNew {
		table = d.new
	}
	if index < 0 || index >= len(table) {
		return Node{}, &Error{Status: ErrRange, Index: -1, Message: "Diff.Node: index out of range"}
	}
	return table[index], nil
}

// Ranges returns every range, sorted by First.
func (d *Diff) Ranges() ([]Range, error) {
	p, err := d.ptr.get()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(d)
	raw := make([]C.chr_diff_range, d.info.Ranges)
	if err := readAll(len(raw), func(at, n int, written *C.size_t) C.gochr_result {
		return C.gochr_diff_ranges(unsafe.Pointer(p), C.size_t(at), &raw[at], C.size_t(n), written)
	}); err != nil {
		return nil, err
	}
	out := make([]Range, len(raw))
	for i, r := range raw {
		out[i] = Range{uint64(r.first), uint64(r.last), nodeIndex(r.from), nodeIndex(r.to)}
	}
	return out, nil
}

// Matrix returns the cells of the transfer matrix that are not 0, sorted
// by (From, To), NoNode last; they sum to 1.
func (d *Diff) Matrix() ([]Cell, error) {
	p, err := d.ptr.get()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(d)
	raw := make([]C.chr_diff_cell, d.info.Cells)
	if err := readAll(len(raw), func(at, n int, written *C.size_t) C.gochr_result {
		return C.gochr_diff_matrix(unsafe.Pointer(p), C.size_t(at), &raw[at], C.size_t(n), written)
	}); err != nil {
		return nil, err
	}
	out := make([]Cell, len(raw))
	for i, c := range raw {
		out[i] = Cell{nodeIndex(c.from), nodeIndex(c.to), float64(c.fraction)}
	}
	return out, nil
}

// readAll fills a slice of n elements through a cursor call.
func readAll(n int, call func(at, n int, written *C.size_t) C.gochr_result) error {
	for at := 0; at < n; {
		var written C.size_t
		if err := check(call(at, n-at, &written)); err != nil {
			return err
		}
		if written == 0 {
			return &Error{Status: ErrInternal, Index: -1, Message: "a diff's cursor stopped early"}
		}
		at += int(written)
	}
	return nil
}

// Counterpart is the index, in the other snapshot, of the member with the
// same id as member index of side; NoNode if the other has none.
func (d *Diff) Counterpart(side Side, index int) (int, error) {
	p, err := d.ptr.get()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(d)
	i := C.uint32_t(C.CHR_DIFF_NONE)
	if index != NoNode {
		i = C.uint32_t(index)
		if index < 0 || int64(index) >= int64(C.CHR_DIFF_NONE) {
			i = C.CHR_DIFF_NONE - 1 // out of range: the library says so
		}
	}
	var other C.uint32_t
	if err := check(C.gochr_diff_counterpart(unsafe.Pointer(p), C.int32_t(side), i, &other)); err != nil {
		return 0, err
	}
	return nodeIndex(other), nil
}

// Lookup is the transition lookup: key's owner before and after.
func (d *Diff) Lookup(key []byte) (Transition, error) {
	p, err := d.ptr.get()
	if err != nil {
		return Transition{}, err
	}
	defer runtime.KeepAlive(d)
	var t C.chr_transition
	k, n := bytesArg(key)
	if err := check(C.gochr_diff_lookup(unsafe.Pointer(p), k, n, &t)); err != nil {
		return Transition{}, err
	}
	return Transition{uint64(t.position), nodeIndex(t.old_index), nodeIndex(t.new_index), t.moved != 0}, nil
}

// Plan is the replica plan for n replicas (1..16) under policy: for each
// range of positions, the node that gains a copy and the old replicas it
// can copy from. Sorted by (First, To).
func (d *Diff) Plan(policy ReplicaPolicy, n int) ([]PlanRange, error) {
	p, err := d.ptr.get()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(d)
	if n < 0 {
		n = 0 // the library's ErrInvalid
	}
	var plan *C.chr_plan
	if err := check(C.gochr_plan_new(unsafe.Pointer(p), C.int32_t(policy), C.size_t(n), &plan)); err != nil {
		return nil, err
	}
	defer C.chr_plan_free(plan)
	var info C.chr_plan_info
	if err := check(C.gochr_result{status: C.chr_plan_info_init(&info, C.CHR_PLAN_INFO_VERSION)}); err != nil {
		return nil, err
	}
	if err := check(C.gochr_plan_describe(unsafe.Pointer(plan), &info)); err != nil {
		return nil, err
	}
	raw := make([]C.chr_plan_range, info.entries)
	if err := readAll(len(raw), func(at, n int, written *C.size_t) C.gochr_result {
		return C.gochr_plan_ranges(unsafe.Pointer(plan), C.size_t(at), &raw[at], C.size_t(n), written)
	}); err != nil {
		return nil, err
	}
	out := make([]PlanRange, len(raw))
	for i := range raw {
		e := &raw[i]
		sources := make([]int, e.source_count)
		for k := range sources {
			sources[k] = int(e.sources[k])
		}
		out[i] = PlanRange{uint64(e.first), uint64(e.last), int(e.to), sources}
	}
	return out, nil
}
