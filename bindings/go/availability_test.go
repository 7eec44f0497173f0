package chring

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// downSet is a set of member ids for the routing checks.
type downSet map[string]bool

// wantRouted checks every key of r against before, a snapshot of the same
// membership without marks: the owner is the first member of the key's
// unmarked replica walk that is not down, and each replica list starts
// with the owner and lists down members only after every available one.
func wantRouted(t *testing.T, r *Ring, before *Snapshot, down downSet, keys int) (moved int) {
	t.Helper()
	members, err := before.NodeCount()
	mustOK(t, err)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	for i := 0; i < keys; i++ {
		walk, err := before.Replicas(keyOf(i), members)
		mustOK(t, err)
		want := walk[0]
		for _, n := range walk {
			if !down[string(n.ID)] {
				want = n
				break
			}
		}
		got, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		fromSnap, err := snap.Lookup(keyOf(i))
		mustOK(t, err)
		if !bytes.Equal(got.ID, want.ID) || !bytes.Equal(fromSnap.ID, want.ID) {
			t.Fatalf("key:%d goes to %s (snapshot %s), want %s", i, got.ID, fromSnap.ID, want.ID)
		}
		if !bytes.Equal(want.ID, walk[0].ID) {
			moved++
		}
		reps, err := r.Replicas(keyOf(i), 3)
		mustOK(t, err)
		if !bytes.Equal(reps[0].ID, want.ID) {
			t.Fatalf("key:%d: replicas start with %s, lookup says %s", i, reps[0].ID, want.ID)
		}
		for j := 1; j < len(reps); j++ {
			if down[string(reps[j-1].ID)] && !down[string(reps[j].ID)] {
				t.Fatalf("key:%d: down %s before available %s", i, reps[j-1].ID, reps[j].ID)
			}
		}
	}
	batch, err := snap.LookupBatch(keysUpTo(keys), nil)
	mustOK(t, err)
	for i, index := range batch {
		n, err := snap.LookupIndex(keyOf(i))
		mustOK(t, err)
		if int(index) != n {
			t.Fatalf("key:%d: batch says node %d, lookup %d", i, index, n)
		}
	}
	return moved
}

func keysUpTo(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = keyOf(i)
	}
	return keys
}

func TestSetDownRoutesToNextReplicaAndBack(t *testing.T) {
	r, before := newSnapshot(t, &Options{Seed: 3}, 5)
	owners := make([]string, 2000)
	for i := range owners {
		n, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		owners[i] = string(n.ID)
	}
	mustOK(t, r.SetDown(nodeID(1), true))
	if moved := wantRouted(t, r, before, downSet{"node-1": true}, len(owners)); moved == 0 {
		t.Fatal("no key moved off the down member")
	}
	a, err := r.Availability()
	mustOK(t, err)
	if a.Down != 1 || a.Panic || a.Digest == 0 || a.PanicThreshold != PanicThresholdDefault ||
		a.DownWeight != 2 || a.TotalWeight != 1+2+3+1+2 {
		t.Fatalf("availability %+v", a)
	}
	n, err := r.Lookup(keyOf(0)) // never a member whose mark is in effect
	mustOK(t, err)
	nodes, err := r.Nodes()
	mustOK(t, err)
	for _, node := range nodes {
		if node.Down != bytes.Equal(node.ID, nodeID(1)) {
			t.Fatalf("Nodes: %s Down=%v", node.ID, node.Down)
		}
	}
	if n.Down {
		t.Fatalf("lookup returned the down member %s", n.ID)
	}

	mustOK(t, r.SetDown(nodeID(1), false))
	for i, want := range owners {
		n, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		if string(n.ID) != want || n.Down {
			t.Fatalf("after unmarking, key:%d goes to %s, was %s", i, n.ID, want)
		}
	}
	if a, _ := r.Availability(); a != (Availability{PanicThreshold: PanicThresholdDefault, TotalWeight: 9}) {
		t.Fatalf("unmarked availability %+v", a)
	}
	wantStatus(t, r.SetDown([]byte("nobody"), true), ErrNotFound, "chr_ring_set_down")
}

func TestSetAvailabilityTwoOfFiveAndPanic(t *testing.T) {
	r, before := newSnapshot(t, &Options{Seed: 5}, 5)
	down := [][]byte{nodeID(0), nodeID(3)} // weights 1 and 1 of 9
	mustOK(t, r.SetAvailability(down, PanicThresholdDefault))
	wantRouted(t, r, before, downSet{"node-0": true, "node-3": true}, 1000)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	for i := 0; i < 5; i++ {
		marked, err := snap.MarkedDown(i)
		mustOK(t, err)
		node, err := snap.Node(i)
		mustOK(t, err)
		want := i == 0 || i == 3
		if marked != want || node.Down != want {
			t.Fatalf("node %d: marked %v, Down %v, want %v", i, marked, node.Down, want)
		}
	}
	if _, err := snap.MarkedDown(5); err == nil {
		t.Fatal("MarkedDown past the end succeeded")
	}

	// Four equal members: two down is honoured, three is panic (every
	// member used as if none were down); threshold 100 never panics.
	eq, err := New(&Options{Seed: 9})
	mustOK(t, err)
	defer eq.Close()
	for i := 0; i < 4; i++ {
		mustOK(t, eq.Add(Member{ID: nodeID(i), Weight: 1}))
	}
	plain, err := eq.Snapshot()
	mustOK(t, err)
	defer plain.Close()
	three := [][]byte{nodeID(0), nodeID(1), nodeID(2)}
	mustOK(t, eq.SetAvailability(three, PanicThresholdDefault))
	a, err := eq.Availability()
	mustOK(t, err)
	if !a.Panic || a.Down != 3 || a.DownWeight != 3 || a.TotalWeight != 4 {
		t.Fatalf("3 of 4 down: %+v", a)
	}
	wantRouted(t, eq, plain, downSet{}, 1000)
	nodes, err := eq.Nodes()
	mustOK(t, err)
	for _, n := range nodes {
		if n.Down {
			t.Fatalf("in panic, %s has Down set", n.ID)
		}
	}
	mustOK(t, eq.SetAvailability(three, 100))
	if a, _ := eq.Availability(); a.Panic {
		t.Fatalf("threshold 100 panics: %+v", a)
	}
	wantRouted(t, eq, plain, downSet{"node-0": true, "node-1": true, "node-2": true}, 1000)

	// A failed set leaves the state as it was.
	digest := a.Digest
	e := wantStatus(t, eq.SetAvailability([][]byte{nodeID(0), []byte("ghost")}, 50), ErrNotFound, "chr_ring_set_availability")
	if e.Index != 1 || string(e.Member) != "ghost" {
		t.Fatalf("error index %d member %q", e.Index, e.Member)
	}
	wantStatus(t, eq.SetAvailability(nil, 101), ErrRange, "")
	if a, _ := eq.Availability(); a.Digest == digest || a.PanicThreshold != 100 {
		t.Fatalf("state changed by failed sets: %+v", a)
	}
	mustOK(t, eq.SetAvailability(nil, PanicThresholdDefault))
	if a, _ := eq.Availability(); a.Digest != 0 || a.Down != 0 {
		t.Fatalf("cleared: %+v", a)
	}
}

// The digest is the state's, whoever computes it: two rings given the same
// marks by different calls agree, a ring file carries it, and a follower
// reports the digest of what it applied.
func TestAvailabilityDigestAndFiles(t *testing.T) {
	a := newRing(t, nil, 6)
	b := newRing(t, nil, 6)
	mustOK(t, a.SetDown(nodeID(4), true))
	mustOK(t, a.SetDown(nodeID(2), true))
	mustOK(t, b.SetAvailability([][]byte{nodeID(2), nodeID(4), nodeID(2)}, PanicThresholdDefault))
	da, _ := a.Availability()
	db, _ := b.Availability()
	if da.Digest == 0 || da != db {
		t.Fatalf("same marks, states %+v and %+v", da, db)
	}
	text, err := a.Export(ExportOptions{})
	mustOK(t, err)
	if !bytes.Contains(text, []byte("%%down node-2\n")) {
		t.Fatalf("export has no %%%%down line:\n%s", text)
	}
	c, info, err := NewRingFromText(text, "a", nil)
	mustOK(t, err)
	defer c.Close()
	if !info.HasAvailability || info.Down != 2 || info.Availability != da.Digest ||
		info.PanicThreshold != PanicThresholdDefault {
		t.Fatalf("loaded info %+v, digest %016x", info, da.Digest)
	}

	path := filepath.Join(t.TempDir(), "fleet.ring")
	mustOK(t, os.WriteFile(path, text, 0o644))
	follower := newRing(t, nil, 0)
	f, err := NewFollower(follower, path)
	mustOK(t, err)
	defer f.Close()
	if o, _, err := f.Check(); o != FollowApplied || err != nil {
		t.Fatalf("check: %v %v", o, err)
	}
	if st := f.State(); st.AppliedAvailability != da.Digest {
		t.Fatalf("follower applied digest %016x, want %016x", st.AppliedAvailability, da.Digest)
	}
	for i := 0; i < 500; i++ {
		x, err := a.Lookup(keyOf(i))
		mustOK(t, err)
		y, err := follower.Lookup(keyOf(i))
		mustOK(t, err)
		if !bytes.Equal(x.ID, y.ID) {
			t.Fatalf("key:%d: %s by calls, %s by file", i, x.ID, y.ID)
		}
	}
}

// Lookups racing a writer that flips a mark never return a member whose
// mark is in effect (the Ring's node table and the C lookup agree on the
// marks as they agree on the membership), and every key is on one of its
// two possible owners.
func TestLookupsWhileMarksFlip(t *testing.T) {
	r := newRing(t, &Options{Seed: 4}, 4)
	before, err := r.Snapshot()
	mustOK(t, err)
	defer before.Close()
	var readers sync.WaitGroup
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; i < 3000; i++ {
				key := keyOf(i % 500)
				n, err := r.Lookup(key)
				if err != nil || n.Down {
					t.Errorf("key %s: %s down=%v, %v", key, n.ID, n.Down, err)
					return
				}
				walk, _ := before.Replicas(key, 2)
				if !bytes.Equal(n.ID, walk[0].ID) && !bytes.Equal(n.ID, walk[1].ID) {
					t.Errorf("key %s on %s, not on its owner or next replica", key, n.ID)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	flips := 0
	for running := true; running; flips++ {
		select {
		case <-done:
			running = false
		default:
			mustOK(t, r.SetDown(nodeID(2), flips%2 == 0))
		}
	}
	mustOK(t, r.SetDown(nodeID(2), false))
	t.Logf("%d flips during the lookups", flips)
}
