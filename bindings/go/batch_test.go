package chring

import (
	"fmt"
	"testing"
)

// batchKeys are n keys of lengths 0..40, the empty key included.
func batchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		k := []byte(fmt.Sprintf("batch:%d:", i*7919))
		keys[i] = append(k, make([]byte, i%11)...)[:((i*13)%41)%(len(k)+i%11+1)]
	}
	return keys
}

func TestBatchLookupsEqualSingleLookups(t *testing.T) {
	_, snap := newSnapshot(t, nil, 37)
	keys := batchKeys(20000)
	want := make([]Node, len(keys))
	var err error
	for i, k := range keys {
		want[i], err = snap.Lookup(k)
		mustOK(t, err)
	}
	var indices []uint32
	var nodes []Node
	var packed Keys
	// Sizes around the shim's chunk of 256, and the whole set.
	for _, n := range []int{0, 1, 255, 256, 257, 1024, 1500, len(keys)} {
		for from := 0; from+n <= len(keys); from += n + 4999 {
			batch := keys[from : from+n]
			indices, err = snap.LookupBatch(batch, indices)
			mustOK(t, err)
			packed.Reset()
			for _, k := range batch {
				packed.AddString(string(k))
			}
			fromKeys, err := snap.LookupKeys(&packed, nil)
			mustOK(t, err)
			nodes, err = snap.LookupNodes(batch, nodes)
			mustOK(t, err)
			if len(indices) != n || len(fromKeys) != n || len(nodes) != n || packed.Len() != n {
				t.Fatalf("batch of %d: %d indices, %d from Keys, %d nodes", n, len(indices), len(fromKeys), len(nodes))
			}
			for i := range batch {
				w := want[from+i]
				if int(indices[i]) != w.Index || int(fromKeys[i]) != w.Index || !sameNode(nodes[i], w) {
					t.Fatalf("key %q: batch %d, Keys %d, node %+v; single lookup %+v", batch[i], indices[i], fromKeys[i], nodes[i], w)
				}
			}
			if n == 0 {
				break
			}
		}
	}
}

func TestBatchLookupErrors(t *testing.T) {
	_, snap := newSnapshot(t, nil, 0)
	_, err := snap.LookupBatch([][]byte{[]byte("a")}, nil)
	wantStatus(t, err, ErrEmpty, "chr_snapshot_lookup_batch")
	_, err = snap.LookupNodes([][]byte{[]byte("a")}, nil)
	wantStatus(t, err, ErrEmpty, "chr_snapshot_lookup_batch")
	mustOK(t, snap.Close())
	if _, err := snap.LookupKeys(&Keys{}, nil); err != ErrClosed {
		t.Fatalf("LookupKeys after Close: %v", err)
	}
}

func TestRingLookupFollowsChanges(t *testing.T) {
	r := newRing(t, nil, 20)
	check := func(what string) {
		t.Helper()
		snap, err := r.Snapshot()
		mustOK(t, err)
		defer snap.Close() // one per change: closed at once
		for i := 0; i < 3000; i++ {
			got, err := r.Lookup(keyOf(i))
			mustOK(t, err)
			want, err := snap.Lookup(keyOf(i))
			mustOK(t, err)
			if !sameNode(got, want) {
				t.Fatalf("%s: key %d: Ring.Lookup %+v, snapshot %+v", what, i, got, want)
			}
		}
	}
	check("built")
	mustOK(t, r.SetWeight(nodeID(3), 7)) // same ids, other weights and ownerships
	check("reweighted")
	mustOK(t, r.Remove(nodeID(0))) // every index shifts
	check("removed")
	mustOK(t, r.Apply([]Change{AddChange(Member{ID: []byte("node-0"), Weight: 1, Zone: []byte("z1"), Tag: 99})}))
	check("re-added with a zone and a tag")
}

// wantNoAllocs fails unless f allocates nothing (averaged over 200 runs).
func wantNoAllocs(t *testing.T, what string, f func()) {
	t.Helper()
	f() // warm: node tables, pools, buffers
	if a := testing.AllocsPerRun(200, f); a != 0 {
		t.Errorf("%s: %v allocations per call, want 0", what, a)
	}
}

func TestLookupsAllocateNothing(t *testing.T) {
	r, snap := newSnapshot(t, &Options{Seed: 3}, 50)
	keys := batchKeys(1024)
	i := 0
	next := func() []byte { i++; return keys[i%len(keys)] }
	wantNoAllocs(t, "Ring.Lookup", func() { _, _ = r.Lookup(next()) })
	wantNoAllocs(t, "Snapshot.Lookup", func() { _, _ = snap.Lookup(next()) })
	wantNoAllocs(t, "Snapshot.LookupIndex", func() { _, _ = snap.LookupIndex(next()) })
	var packed Keys
	var indices []uint32
	wantNoAllocs(t, "Keys + Snapshot.LookupKeys", func() {
		packed.Reset()
		for _, k := range keys {
			packed.Add(k)
		}
		indices, _ = snap.LookupKeys(&packed, indices)
	})
	mustOK(t, r.SetWeight(nodeID(1), 3))
	wantNoAllocs(t, "Ring.Lookup after a change", func() { _, _ = r.Lookup(next()) })
	if raceEnabled {
		t.Log("pooled paths (LookupBatch, LookupNodes) not checked: the race detector's sync.Pool drops items")
		return
	}
	var nodes []Node
	wantNoAllocs(t, "Snapshot.LookupBatch", func() { indices, _ = snap.LookupBatch(keys, indices) })
	wantNoAllocs(t, "Snapshot.LookupNodes", func() { nodes, _ = snap.LookupNodes(keys, nodes) })
}
