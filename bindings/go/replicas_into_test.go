package chring

import (
	"sync"
	"testing"
)

func sameNodes(a, b []Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameNode(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestReplicasIntoEqualsReplicas(t *testing.T) {
	r, snap := newSnapshot(t, nil, 12)
	var into []Node
	for i := 0; i < 300; i++ {
		for _, n := range []int{1, 3, 9, 12, 40} { // 40: clamped, and over the C stack buffer
			want, err := r.Replicas(keyOf(i), n)
			mustOK(t, err)
			into, err = r.ReplicasInto(keyOf(i), n, into)
			mustOK(t, err)
			if !sameNodes(into, want) {
				t.Fatalf("key %d n %d: Ring.ReplicasInto %v, Replicas %v", i, n, into, want)
			}
			into, err = snap.ReplicasInto(keyOf(i), n, into)
			mustOK(t, err)
			if !sameNodes(into, want) {
				t.Fatalf("key %d n %d: Snapshot.ReplicasInto %v, Replicas %v", i, n, into, want)
			}
		}
	}
	_, err := r.ReplicasInto([]byte("k"), 0, nil)
	wantStatus(t, err, ErrInvalid, "chr_ring_replicas")
	_, err = snap.ReplicasInto([]byte("k"), -1, nil)
	wantStatus(t, err, ErrInvalid, "chr_snapshot_replicas")
	empty := newRing(t, nil, 0)
	_, err = empty.ReplicasInto([]byte("k"), 3, nil)
	wantStatus(t, err, ErrEmpty, "chr_ring_replicas")
	mustOK(t, r.Close())
	if _, err := r.ReplicasInto([]byte("k"), 3, nil); err != ErrClosed {
		t.Fatalf("ReplicasInto after Close: %v", err)
	}
}

func TestReplicasIntoFollowsChanges(t *testing.T) {
	r := newRing(t, nil, 10)
	var into []Node
	for step := 0; step < 4; step++ {
		switch step {
		case 1:
			mustOK(t, r.SetWeight(nodeID(2), 5))
		case 2:
			mustOK(t, r.Remove(nodeID(0)))
		case 3:
			mustOK(t, r.Add(Member{ID: []byte("node-0"), Weight: 2, Zone: []byte("z"), Tag: 7}))
		}
		for i := 0; i < 500; i++ {
			want, err := r.Replicas(keyOf(i), 3)
			mustOK(t, err)
			into, err = r.ReplicasInto(keyOf(i), 3, into)
			mustOK(t, err)
			if !sameNodes(into, want) {
				t.Fatalf("step %d key %d: %v, want %v", step, i, into, want)
			}
		}
	}
}

func TestReplicasIntoAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("pooled scratch: the race detector's sync.Pool drops items")
	}
	r, snap := newSnapshot(t, nil, 50)
	keys := batchKeys(1024)
	i := 0
	next := func() []byte { i++; return keys[i%len(keys)] }
	nodes := make([]Node, 0, 3)
	wantNoAllocs(t, "Ring.ReplicasInto", func() { nodes, _ = r.ReplicasInto(next(), 3, nodes) })
	wantNoAllocs(t, "Snapshot.ReplicasInto", func() { nodes, _ = snap.ReplicasInto(next(), 3, nodes) })
	big := make([]Node, 0, 50) // over the shim's stack buffer: C memory, not Go
	wantNoAllocs(t, "Ring.ReplicasInto, 20", func() { big, _ = r.ReplicasInto(next(), 20, big) })
	mustOK(t, r.SetWeight(nodeID(1), 3))
	wantNoAllocs(t, "Ring.ReplicasInto after a change", func() { nodes, _ = r.ReplicasInto(next(), 3, nodes) })
}

// While a writer flips the ring between two memberships A and B (same ids,
// other weights, so other ownerships and token counts), every Ring.Lookup
// and Ring.ReplicasInto answer must be A's or B's in every field: an index
// from one membership paired with the node table of the other would show.
func TestRingAnswersComeFromOneMembership(t *testing.T) {
	const members = 12
	weightA := func(i int) uint32 { return uint32(1 + i%3) }
	weightB := func(i int) uint32 {
		if i == 4 {
			return 0 // a member without tokens in B
		}
		return uint32(4 - i%3)
	}
	build := func(w func(int) uint32) *Ring {
		ring := newRing(t, nil, 0)
		for i := 0; i < members; i++ {
			mustOK(t, ring.Add(Member{ID: nodeID(i), Weight: w(i), Tag: uint64(i)}))
		}
		return ring
	}
	a, b := build(weightA), build(weightB)
	r := build(weightA)
	const keys = 512
	type answer struct {
		owner Node
		reps  []Node
	}
	expect := func(ring *Ring) []answer {
		out := make([]answer, keys)
		for i := range out {
			var err error
			out[i].owner, err = ring.Lookup(keyOf(i))
			mustOK(t, err)
			out[i].reps, err = ring.Replicas(keyOf(i), 3)
			mustOK(t, err)
		}
		return out
	}
	wantA, wantB := expect(a), expect(b)

	toB := make([]Change, members)
	toA := make([]Change, members)
	for i := range toB {
		toB[i] = SetWeightChange(nodeID(i), weightB(i))
		toA[i] = SetWeightChange(nodeID(i), weightA(i))
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for flip := 0; ; flip++ {
			select {
			case <-stop:
				return
			default:
			}
			changes := toB
			if flip%2 == 1 {
				changes = toA
			}
			if err := r.Apply(changes); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var readers sync.WaitGroup
	for g := 0; g < 3; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			var reps []Node
			for i := 0; i < 6000; i++ {
				k := (i*7 + g) % keys
				owner, err := r.Lookup(keyOf(k))
				if err != nil {
					t.Error(err)
					return
				}
				if !sameNode(owner, wantA[k].owner) && !sameNode(owner, wantB[k].owner) {
					t.Errorf("Lookup(key %d) = %+v: neither A's %+v nor B's %+v", k, owner, wantA[k].owner, wantB[k].owner)
					return
				}
				if reps, err = r.ReplicasInto(keyOf(k), 3, reps); err != nil {
					t.Error(err)
					return
				}
				if !sameNodes(reps, wantA[k].reps) && !sameNodes(reps, wantB[k].reps) {
					t.Errorf("ReplicasInto(key %d) = %v: neither A's nor B's", k, reps)
					return
				}
			}
		}(g)
	}
	readers.Wait()
	close(stop)
	writer.Wait()
	if n, _ := r.NodeCount(); n != members {
		t.Fatalf("%d members, want %d", n, members)
	}
}
