package chring

import (
	"bytes"
	"math"
	"sort"
	"testing"
)

// diffPair: a ring of 10 nodes before and after adding node 10.
func diffPair(t *testing.T) (before, after *Snapshot) {
	t.Helper()
	r, err := New(nil)
	mustOK(t, err)
	defer r.Close()
	for i := 0; i < 10; i++ {
		mustOK(t, r.Add(Member{ID: nodeID(i), Weight: 1, Tag: uint64(i)}))
	}
	before, err = r.Snapshot()
	mustOK(t, err)
	mustOK(t, r.Add(Member{ID: nodeID(10), Weight: 1, Tag: 10}))
	after, err = r.Snapshot()
	mustOK(t, err)
	return before, after
}

// Adding a node: every range goes to it, the ranges hold exactly the keys
// that move (by lookups on both snapshots), the matrix sums to 1.
func TestDiffAddNode(t *testing.T) {
	before, after := diffPair(t)
	d, err := NewDiff(before, after)
	mustOK(t, err)
	defer d.Close()
	before.Close() // the diff keeps its own references
	after.Close()
	info := d.Info()
	if info.Added != 1 || info.Removed != 0 || info.OldNodes != 10 || info.NewNodes != 11 {
		t.Fatalf("info %+v", info)
	}
	ranges, err := d.Ranges()
	mustOK(t, err)
	if len(ranges) != info.Ranges || len(ranges) == 0 {
		t.Fatalf("%d ranges, info says %d", len(ranges), info.Ranges)
	}
	added, err := d.Node(SideNew, ranges[0].To)
	mustOK(t, err)
	if !bytes.Equal(added.ID, nodeID(10)) {
		t.Fatalf("first range goes to %s", added.ID)
	}
	total := 0.0
	for i, r := range ranges {
		if r.To != ranges[0].To || r.First > r.Last || (i > 0 && ranges[i-1].Last >= r.First) {
			t.Fatalf("range %d: %+v", i, r)
		}
		total += r.Share()
	}
	if math.Abs(total-info.Moved) > 1e-12 || math.Abs(total-added.Ownership) > 1e-12 {
		t.Fatalf("ranges total %g, moved %g, new node owns %g", total, info.Moved, added.Ownership)
	}
	moved := 0
	for i := 0; i < 20000; i++ {
		tr, err := d.Lookup(keyOf(i))
		mustOK(t, err)
		k := sort.Search(len(ranges), func(j int) bool { return ranges[j].Last >= tr.Position })
		inRange := k < len(ranges) && ranges[k].First <= tr.Position
		if inRange != tr.Moved || (tr.Moved && (tr.Old != ranges[k].From || tr.New != ranges[k].To)) {
			t.Fatalf("key %d at %#x: moved %v, in a range %v", i, tr.Position, tr.Moved, inRange)
		}
		if tr.Moved {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no key moved")
	}
	cells, err := d.Matrix()
	mustOK(t, err)
	sum := 0.0
	for _, c := range cells {
		sum += c.Fraction
	}
	if len(cells) != info.Cells || math.Abs(sum-1) > 1e-12 {
		t.Fatalf("%d cells summing to %g", len(cells), sum)
	}
	other, err := d.Counterpart(SideNew, ranges[0].To)
	mustOK(t, err)
	if other != NoNode {
		t.Fatalf("the added node has counterpart %d", other)
	}
	other, err = d.Counterpart(SideOld, 0)
	mustOK(t, err)
	if other != 0 {
		t.Fatalf("node 0's counterpart is %d", other)
	}
	_, err = d.Counterpart(SideOld, 99)
	wantStatus(t, err, ErrRange, "chr_diff_counterpart")
}

// With one replica the plan is the diff's ranges; with three, the added
// node gains and copies from three old replicas.
func TestDiffPlan(t *testing.T) {
	before, after := diffPair(t)
	defer before.Close()
	defer after.Close()
	d, err := NewDiff(before, after)
	mustOK(t, err)
	defer d.Close()
	ranges, err := d.Ranges()
	mustOK(t, err)
	one, err := d.Plan(ReplicasNodes, 1)
	mustOK(t, err)
	if len(one) != len(ranges) {
		t.Fatalf("plan for 1 replica: %d entries, %d ranges", len(one), len(ranges))
	}
	for i, e := range one {
		r := ranges[i]
		if e.First != r.First || e.Last != r.Last || e.To != r.To || len(e.Sources) != 1 || e.Sources[0] != r.From {
			t.Fatalf("entry %d %+v, range %+v", i, e, r)
		}
	}
	three, err := d.Plan(ReplicasZonesFirst, 3)
	mustOK(t, err)
	for _, e := range three {
		if e.To != ranges[0].To || len(e.Sources) != 3 {
			t.Fatalf("entry %+v", e)
		}
	}
	_, err = d.Plan(ReplicasNodes, 0)
	wantStatus(t, err, ErrInvalid, "chr_plan_new")
	_, err = d.Plan(ReplicaPolicy(7), 2)
	wantStatus(t, err, ErrNotSupported, "chr_plan_new")
}

func TestDiffIncompatible(t *testing.T) {
	a, err := New(nil)
	mustOK(t, err)
	defer a.Close()
	b, err := New(&Options{Seed: 7})
	mustOK(t, err)
	defer b.Close()
	sa, err := a.Snapshot()
	mustOK(t, err)
	defer sa.Close()
	sb, err := b.Snapshot()
	mustOK(t, err)
	defer sb.Close()
	_, err = NewDiff(sa, sb)
	wantStatus(t, err, ErrIncompatible, "chr_diff_new")
	d, err := NewDiff(sa, sa)
	mustOK(t, err)
	d.Close()
	d.Close()
	_, err = d.Ranges()
	if err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}
