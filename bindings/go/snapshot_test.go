package chring

import (
	"bytes"
	"testing"
)

func TestSnapshotAgreesWithRingAndStaysFixed(t *testing.T) {
	r := newRing(t, nil, 8)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	const keys = 2000
	owners := make([]Node, keys)
	for i := range owners {
		fromRing, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		owners[i], err = snap.Lookup(keyOf(i))
		mustOK(t, err)
		if !sameNode(fromRing, owners[i]) {
			t.Fatalf("key %d: ring says %+v, snapshot %+v", i, fromRing, owners[i])
		}
	}
	fp, _ := snap.Fingerprint()

	mustOK(t, r.Remove(nodeID(3)))
	mustOK(t, r.SetWeight(nodeID(4), 9))
	for i := range owners {
		n, err := snap.Lookup(keyOf(i))
		mustOK(t, err)
		if !sameNode(n, owners[i]) {
			t.Fatalf("key %d changed owner inside a snapshot", i)
		}
	}
	if now, _ := snap.Fingerprint(); now != fp {
		t.Fatal("snapshot fingerprint changed")
	}
	if ringFP, _ := r.Fingerprint(); ringFP == fp {
		t.Fatal("ring fingerprint did not change after updates")
	}
	if c, _ := snap.NodeCount(); c != 8 {
		t.Fatalf("snapshot NodeCount = %d, want 8", c)
	}
}

func TestSnapshotNodesTokensAndReplicas(t *testing.T) {
	r := newRing(t, &Options{TokensPerWeight: 4}, 5)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	tokens, _ := snap.TokenCount()
	if want, _ := r.TokenCount(); tokens != want || tokens != 4*(1+2+3+1+2) {
		t.Fatalf("TokenCount = %d", tokens)
	}
	var last uint64
	for i := 0; i < tokens; i++ {
		v, owner, err := snap.Token(i)
		mustOK(t, err)
		if v < last || owner < 0 || owner >= 5 {
			t.Fatalf("token %d = (%d, owner %d) breaks the sorted order", i, v, owner)
		}
		last = v
	}
	_, _, err = snap.Token(tokens)
	wantStatus(t, err, ErrRange, "chr_snapshot_token")
	_, err = snap.Node(5)
	wantStatus(t, err, ErrRange, "")

	for i := 0; i < 100; i++ {
		fromSnap, err := snap.Replicas(keyOf(i), 3)
		mustOK(t, err)
		fromRing, err := r.Replicas(keyOf(i), 3)
		mustOK(t, err)
		for j := range fromRing {
			if !sameNode(fromSnap[j], fromRing[j]) {
				t.Fatalf("key %d replica %d: snapshot %s, ring %s", i, j, fromSnap[j].ID, fromRing[j].ID)
			}
		}
	}
	_, err = snap.Replicas([]byte("k"), 0)
	wantStatus(t, err, ErrInvalid, "chr_snapshot_replicas")
}

func TestSnapshotOfEmptyRingAndClose(t *testing.T) {
	r := newRing(t, nil, 0)
	snap, err := r.Snapshot()
	mustOK(t, err)
	_, err = snap.Lookup([]byte("k"))
	wantStatus(t, err, ErrEmpty, "chr_snapshot_lookup")
	_, err = snap.Replicas([]byte("k"), 3)
	wantStatus(t, err, ErrEmpty, "chr_snapshot_replicas")
	mustOK(t, snap.Close())
	mustOK(t, snap.Close())
	if _, err := snap.Lookup([]byte("k")); err != ErrClosed {
		t.Fatalf("Lookup after Close: %v", err)
	}
}

func TestSnapshotLookupAllocatesNothing(t *testing.T) {
	r := newRing(t, nil, 16)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	key := []byte("user:1234")
	want, _ := snap.Lookup(key) // builds the node table
	allocs := testing.AllocsPerRun(1000, func() {
		n, err := snap.Lookup(key)
		if err != nil || !bytes.Equal(n.ID, want.ID) {
			t.Fatal("lookup changed")
		}
	})
	if allocs != 0 {
		t.Fatalf("Snapshot.Lookup allocates %.1f times per call", allocs)
	}
}
