package chring

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// Idle and unmasked, the bounded lookup is the plain one; with every load
// at the formula's capacity but one, the key goes to the one with room.
func TestLookupBoundedIdleAndFull(t *testing.T) {
	r := newRing(t, nil, 6)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	opts := DefaultBoundOptions()
	for i := 0; i < 2000; i++ {
		home, err := snap.LookupIndex(keyOf(i))
		mustOK(t, err)
		n, res, err := snap.LookupBounded(keyOf(i), nil, nil, &opts)
		mustOK(t, err)
		if n.Index != home || res.Home != home || res.Probes != 1 || res.Flags != 0 {
			t.Fatalf("key %d: idle bounded lookup %+v, home %d", i, res, home)
		}
	}
	loads := make([]uint64, 6)
	loads[2] = 100 // L = 100: every cap is ceil(101 * 1.25 / 6) or one less, far below 100
	for i := 0; i < 2000; i++ {
		n, res, err := snap.LookupBounded(keyOf(i), loads, nil, &opts)
		mustOK(t, err)
		if n.Index == 2 {
			t.Fatalf("key %d: sent to the full node", i)
		}
		if loads[n.Index]+1 > res.Capacity {
			t.Fatalf("key %d: load %d over capacity %d", i, loads[n.Index], res.Capacity)
		}
	}
	caps, err := BoundCapacities([]uint32{1, 1, 1, 1, 1, 1}, 100, &opts)
	mustOK(t, err)
	var sum uint64
	for _, c := range caps {
		sum += c
	}
	if sum < 101 {
		t.Fatalf("capacities %v add up to %d < L + 1", caps, sum)
	}
	if _, _, err := snap.LookupBounded(keyOf(1), make([]uint64, 5), nil, &opts); !errors.Is(err, ErrInvalid) {
		t.Fatalf("wrong loads length: %v", err)
	}
}

// A masked node gets nothing; unmasked, its keys come back.
func TestLookupBoundedAvailability(t *testing.T) {
	r := newRing(t, nil, 5)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	up := []bool{true, false, true, true, true}
	moved := 0
	for i := 0; i < 2000; i++ {
		home, _ := snap.LookupIndex(keyOf(i))
		n, _, err := snap.LookupBounded(keyOf(i), nil, up, nil)
		mustOK(t, err)
		if n.Index == 1 {
			t.Fatalf("key %d: sent to the masked node", i)
		}
		if home != 1 && n.Index != home {
			t.Fatalf("key %d moved although its home is up", i)
		}
		if home == 1 {
			moved++
		}
		back, _, err := snap.LookupBounded(keyOf(i), nil, nil, nil)
		mustOK(t, err)
		if back.Index != home {
			t.Fatalf("key %d did not come back", i)
		}
	}
	if moved == 0 {
		t.Fatal("no key had the masked node as home")
	}
}

// Guards released with defer bring every count back to 0, also when nodes
// are removed while requests are in flight, from many goroutines.
func TestTrackerGuards(t *testing.T) {
	r := newRing(t, nil, 8)
	tr, err := NewTracker(0)
	mustOK(t, err)
	defer tr.Close()
	opts := DefaultBoundOptions()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				func() {
					snap, err := r.Snapshot()
					if err != nil {
						t.Error(err)
						return
					}
					defer snap.Close()
					guard, err := tr.Acquire(snap, keyOf(g*1000+i), &opts)
					if err != nil {
						t.Error(err)
						return
					}
					defer guard.Release()
					if guard.Result.Load >= guard.Result.Capacity {
						t.Errorf("acquired at load %d, capacity %d", guard.Result.Load, guard.Result.Capacity)
					}
				}()
			}
		}(g)
	}
	snap, err := r.Snapshot()
	mustOK(t, err)
	held, err := tr.Acquire(snap, []byte("held"), &opts)
	mustOK(t, err)
	mustOK(t, r.Remove(held.Node.ID))
	snap.Close()
	wg.Wait()
	if l, _ := tr.Load(held.Node.ID); l != 1 {
		t.Fatalf("removed node's count is %d, want 1", l)
	}
	mustOK(t, held.Release())
	mustOK(t, held.Release()) // a second Release is a no-op
	if total, _ := tr.Total(); total != 0 {
		t.Fatalf("total %d after every release", total)
	}

	// Masked through the tracker: never chosen.
	snap, err = r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	first, _ := snap.Node(0)
	mustOK(t, tr.SetAvailable(first.ID, false))
	for i := 0; i < 300; i++ {
		guard, err := tr.Acquire(snap, keyOf(i), nil)
		mustOK(t, err)
		if bytes.Equal(guard.Node.ID, first.ID) {
			t.Fatalf("key %d: sent to the masked node", i)
		}
		mustOK(t, guard.Release())
	}
}
