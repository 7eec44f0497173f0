package chring

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// Readers on many goroutines look up keys, on the ring and on shared
// snapshots, while one goroutine keeps changing the membership. Run with
// -race: the binding must add no data race of its own, every read must
// succeed (stable members always have tokens), and every answer must come
// from one consistent membership.
func TestConcurrentLookupsDuringUpdates(t *testing.T) {
	const (
		stable  = 8
		readers = 4
		lookups = 4000
		updates = 300
	)
	r := newRing(t, nil, 0)
	for i := 0; i < stable; i++ {
		mustOK(t, r.Add(Member{ID: []byte(fmt.Sprintf("stable-%d", i)), Weight: uint32(1 + i%3)}))
	}
	valid := func(id []byte) bool {
		return bytes.HasPrefix(id, []byte("stable-")) || bytes.HasPrefix(id, []byte("churn-"))
	}

	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	done := make(chan struct{})
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer close(done)
		for u := 0; u < updates; u++ {
			id := []byte(fmt.Sprintf("churn-%d", u%5))
			var err error
			switch (u / 5) % 3 {
			case 0:
				err = r.Add(Member{ID: id, Weight: uint32(1 + u%4)})
			case 1:
				err = r.Apply([]Change{SetWeightChange(id, uint32(u%3)), AddChange(Member{ID: []byte("batch-tmp"), Weight: 1}), RemoveChange([]byte("batch-tmp"))})
			case 2:
				err = r.Remove(id)
			}
			if err != nil {
				errs <- fmt.Errorf("update %d: %w", u, err)
				return
			}
		}
	}()

	shared := make(chan *Snapshot, readers)
	var snapUsers sync.WaitGroup
	for g := 0; g < readers; g++ {
		wg.Add(1)
		snapUsers.Add(1)
		go func(g int) {
			defer wg.Done()
			// One snapshot used by every reader, released after the last.
			snap := <-shared
			defer snapUsers.Done()
			for i := 0; i < lookups; i++ {
				key := []byte(fmt.Sprintf("k%d-%d", g, i))
				n, err := r.Lookup(key)
				if err != nil || !valid(n.ID) {
					errs <- fmt.Errorf("reader %d: Lookup(%s) = %s, %v", g, key, n.ID, err)
					return
				}
				if i%50 == 0 {
					if err := checkSnapshot(r, key); err != nil {
						errs <- fmt.Errorf("reader %d: %w", g, err)
						return
					}
				}
				a, errA := snap.Lookup(key)
				b, errB := snap.Lookup(key)
				if errA != nil || errB != nil || !sameNode(a, b) {
					errs <- fmt.Errorf("reader %d: shared snapshot answered %s then %s", g, a.ID, b.ID)
					return
				}
			}
		}(g)
	}
	first, err := r.Snapshot()
	mustOK(t, err)
	for g := 0; g < readers; g++ {
		shared <- first
	}
	go func() { snapUsers.Wait(); first.Close() }()

	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The final ring equals one built directly with its final membership.
	final, err := r.Nodes()
	mustOK(t, err)
	rebuilt := newRing(t, nil, 0)
	for i := len(final) - 1; i >= 0; i-- {
		mustOK(t, rebuilt.Add(Member{ID: final[i].ID, Weight: final[i].Weight}))
	}
	f1, _ := r.Fingerprint()
	f2, _ := rebuilt.Fingerprint()
	if f1 != f2 {
		t.Fatalf("after concurrent updates the ring's fingerprint %x differs from a rebuilt one %x", f1, f2)
	}
}

// checkSnapshot takes a fresh snapshot and checks it is one membership:
// the owner and replicas of key are members of its own node table, the
// coordinator is the owner, and its fingerprint does not move.
func checkSnapshot(r *Ring, key []byte) error {
	snap, err := r.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	fp, _ := snap.Fingerprint()
	owner, err := snap.Lookup(key)
	if err != nil {
		return err
	}
	reps, err := snap.Replicas(key, 3)
	if err != nil {
		return err
	}
	if !sameNode(reps[0], owner) {
		return fmt.Errorf("snapshot coordinator %s is not its owner %s", reps[0].ID, owner.ID)
	}
	count, _ := snap.NodeCount()
	for _, n := range append(reps, owner) {
		if n.Index >= count {
			return fmt.Errorf("node %s has index %d in a snapshot of %d members", n.ID, n.Index, count)
		}
		if byIndex, _ := snap.Node(n.Index); !sameNode(byIndex, n) {
			return fmt.Errorf("node %s is not entry %d of its snapshot", n.ID, n.Index)
		}
	}
	if again, _ := snap.Fingerprint(); again != fp {
		return fmt.Errorf("snapshot fingerprint moved from %x to %x", fp, again)
	}
	return nil
}

// The first use of a snapshot's node table from many goroutines at once
// (the table is built lazily). Node and Replicas touch no sync.Pool, whose
// race annotations would otherwise order the goroutines and hide a race.
func TestSnapshotFirstUseFromManyGoroutines(t *testing.T) {
	r := newRing(t, nil, 32)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	start := make(chan struct{})
	results := make([][]Node, 8)
	var wg sync.WaitGroup
	for g := range results {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-start
			n, err := snap.Node(g)
			if err != nil {
				t.Error(err)
				return
			}
			reps, err := snap.Replicas(keyOf(1), 4)
			if err != nil {
				t.Error(err)
				return
			}
			results[g] = append([]Node{n}, reps...)
		}(g)
	}
	close(start)
	wg.Wait()
	for g := range results {
		if len(results[g]) != 5 || results[g][0].Index != g {
			t.Fatalf("goroutine %d got %v", g, results[g])
		}
		for j := 1; j < 5; j++ {
			if !sameNode(results[g][j], results[0][j]) {
				t.Fatalf("goroutines disagree on replica %d", j)
			}
		}
	}
}
