package chring

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	if v := Version(); v < 100 {
		t.Fatalf("Version() = %d, want >= 0.1.0 (100)", v)
	}
	// The loaded library is the one this package was written for, in both spellings.
	if s := VersionString(); s != BindingVersion {
		t.Fatalf("VersionString() = %q, want BindingVersion %q", s, BindingVersion)
	}
	var major, minor, patch uint32
	if n, err := fmt.Sscanf(BindingVersion, "%d.%d.%d", &major, &minor, &patch); n != 3 || err != nil {
		t.Fatalf("BindingVersion %q is not MAJOR.MINOR.PATCH: %v", BindingVersion, err)
	}
	if v, want := Version(), major*10000+minor*100+patch; v != want {
		t.Fatalf("Version() = %d, want %d from BindingVersion %q", v, want, BindingVersion)
	}
}

func TestLookupOnEmptyRingIsErrEmpty(t *testing.T) {
	r := newRing(t, nil, 0)
	_, err := r.Lookup([]byte("k"))
	wantStatus(t, err, ErrEmpty, "chr_ring_lookup")
	_, err = r.Replicas([]byte("k"), 2)
	wantStatus(t, err, ErrEmpty, "chr_ring_replicas")
}

func TestLookupReturnsAMemberWithItsFields(t *testing.T) {
	r := newRing(t, nil, 0)
	id := []byte{'a', 0, 0xff, 'z'} // NUL and non-UTF-8 bytes are ordinary id bytes
	mustOK(t, r.Add(Member{ID: id, Weight: 3, Zone: []byte("eu-1"), Tag: 77}))
	for _, key := range [][]byte{nil, {}, {0}, {0xff, 0}, []byte("user:42")} {
		n, err := r.Lookup(key)
		mustOK(t, err)
		if !bytes.Equal(n.ID, id) || string(n.Zone) != "eu-1" || n.Tag != 77 || n.Weight != 3 ||
			n.Tokens != 3*DefaultTokensWeight || n.Index != 0 || n.Ownership != 1 {
			t.Fatalf("Lookup(%q) = %+v", key, n)
		}
	}
}

func TestAddRejectsBadMembers(t *testing.T) {
	r := newRing(t, nil, 1)
	e := wantStatus(t, r.Add(Member{ID: nodeID(0), Weight: 1}), ErrExists, "chr_ring_add")
	if !bytes.Equal(e.Member, nodeID(0)) || e.Index != -1 || e.Line != 0 || e.OtherLine != 0 {
		t.Fatalf("the error names the member: %+v", e)
	}
	wantStatus(t, r.Add(Member{ID: nil, Weight: 1}), ErrInvalid, "chr_ring_add")
	wantStatus(t, r.Add(Member{ID: make([]byte, NodeIDMax+1), Weight: 1}), ErrRange, "chr_ring_add")
	wantStatus(t, r.Add(Member{ID: []byte("w"), Weight: WeightMax + 1}), ErrRange, "chr_ring_add")
	wantStatus(t, r.Add(Member{ID: []byte("z"), Weight: 1, Zone: make([]byte, ZoneMax+1)}), ErrRange, "chr_ring_add")
	if e := wantStatus(t, r.Remove([]byte("missing")), ErrNotFound, "chr_ring_remove"); string(e.Member) != "missing" {
		t.Fatalf("member %q", e.Member)
	}
	wantStatus(t, r.SetWeight([]byte("missing"), 2), ErrNotFound, "chr_ring_set_weight")
	if c, _ := r.NodeCount(); c != 1 {
		t.Fatalf("failed updates changed the ring: %d members", c)
	}
}

func TestErrorTextAndUnwrap(t *testing.T) {
	r := newRing(t, nil, 0)
	err := r.Remove([]byte("ghost"))
	e := wantStatus(t, err, ErrNotFound, "chr_ring_remove")
	if !strings.HasPrefix(err.Error(), "chring: chr_ring_remove") || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("Error() = %q", err.Error())
	}
	if e.Index != -1 || e.Status.Error() != "no such node" {
		t.Fatalf("Index %d, status text %q", e.Index, e.Status.Error())
	}
	if errors.Is(err, ErrExists) {
		t.Fatal("ErrNotFound matched ErrExists")
	}
}

func TestOptions(t *testing.T) {
	r := newRing(t, &Options{TokensPerWeight: 7, Seed: 1}, 0)
	mustOK(t, r.Add(Member{ID: []byte("a"), Weight: 3}))
	if c, _ := r.TokenCount(); c != 21 {
		t.Fatalf("TokenCount = %d, want 3 * 7", c)
	}
	other := newRing(t, &Options{TokensPerWeight: 7, Seed: 2}, 0)
	mustOK(t, other.Add(Member{ID: []byte("a"), Weight: 3}))
	f1, _ := r.Fingerprint()
	f2, _ := other.Fingerprint()
	if f1 == f2 {
		t.Fatal("different seeds gave the same fingerprint")
	}

	_, err := New(&Options{TokensPerWeight: TokensPerWeightMax + 1})
	wantStatus(t, err, ErrRange, "chr_ring_new")
	_, err = New(&Options{Hasher: "no-such-hasher", PluginDir: t.TempDir()})
	wantStatus(t, err, ErrNoHasher, "chr_ring_new")
	_, err = New(&Options{Hasher: "xx\x00h3"})
	wantStatus(t, err, ErrInvalid, "NUL")
	_, err = Hash("xxh3\x00", nil, 0)
	wantStatus(t, err, ErrInvalid, "NUL")
	withDir, err := New(&Options{Hasher: DefaultHasher, PluginDir: t.TempDir()})
	mustOK(t, err)
	withDir.Close()
}

func TestFingerprintIgnoresCallOrder(t *testing.T) {
	forward := newRing(t, nil, 0)
	backward := newRing(t, nil, 0)
	for i := 0; i < 20; i++ {
		mustOK(t, forward.Add(Member{ID: nodeID(i), Weight: uint32(i % 4)}))
		mustOK(t, backward.Add(Member{ID: nodeID(19 - i), Weight: uint32((19 - i) % 4), Tag: 9}))
	}
	f1, _ := forward.Fingerprint()
	f2, _ := backward.Fingerprint()
	if f1 != f2 {
		t.Fatalf("fingerprints differ: %x vs %x", f1, f2)
	}
}

// Adding a member moves keys only onto it; removing it moves them back.
func TestMinimalDisruption(t *testing.T) {
	r := newRing(t, nil, 10)
	const keys = 5000
	before := make([][]byte, keys)
	for i := range before {
		n, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		before[i] = n.ID
	}
	newcomer := []byte("newcomer")
	mustOK(t, r.Add(Member{ID: newcomer, Weight: 2}))
	moved := 0
	for i := range before {
		n, _ := r.Lookup(keyOf(i))
		if !bytes.Equal(n.ID, before[i]) {
			moved++
			if !bytes.Equal(n.ID, newcomer) {
				t.Fatalf("key %d moved from %s to %s, not to the new node", i, before[i], n.ID)
			}
		}
	}
	if moved == 0 {
		t.Fatal("a weight-2 node among weight 1..3 nodes took no key of 5000")
	}
	mustOK(t, r.Remove(newcomer))
	for i := range before {
		if n, _ := r.Lookup(keyOf(i)); !bytes.Equal(n.ID, before[i]) {
			t.Fatalf("key %d did not return to %s after the removal", i, before[i])
		}
	}
}

func TestReplicas(t *testing.T) {
	r := newRing(t, nil, 6)
	mustOK(t, r.Add(Member{ID: []byte("drained"), Weight: 0}))
	for i := 0; i < 200; i++ {
		reps, err := r.Replicas(keyOf(i), 10)
		mustOK(t, err)
		if len(reps) != 6 {
			t.Fatalf("got %d replicas, want the 6 members with tokens", len(reps))
		}
		owner, _ := r.Lookup(keyOf(i))
		if !sameNode(reps[0], owner) {
			t.Fatalf("first replica %s is not the owner %s", reps[0].ID, owner.ID)
		}
		seen := map[string]bool{}
		for _, n := range reps {
			if seen[string(n.ID)] || string(n.ID) == "drained" {
				t.Fatalf("replica list %v repeats a node or holds the weight-0 one", reps)
			}
			seen[string(n.ID)] = true
		}
	}
	_, err := r.Replicas([]byte("k"), 0)
	wantStatus(t, err, ErrInvalid, "chr_ring_replicas")
	_, err = r.Replicas([]byte("k"), -3)
	wantStatus(t, err, ErrInvalid, "chr_ring_replicas")
	two, err := r.Replicas([]byte("k"), 2)
	mustOK(t, err)
	if len(two) != 2 {
		t.Fatalf("asked 2, got %d", len(two))
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	r := newRing(t, nil, 3)
	before, _ := r.Fingerprint()
	err := r.Apply([]Change{
		AddChange(Member{ID: []byte("x"), Weight: 1}),
		SetWeightChange(nodeID(0), 5),
		RemoveChange([]byte("not-there")),
	})
	e := wantStatus(t, err, ErrNotFound, "chr_ring_apply")
	if e.Index != 2 || string(e.Member) != "not-there" {
		t.Fatalf("failed index %d, member %q: want 2, not-there", e.Index, e.Member)
	}
	if after, _ := r.Fingerprint(); after != before {
		t.Fatal("a failed batch changed the ring")
	}
	err = r.Apply([]Change{{Op: Op(99), ID: []byte("x")}})
	wantStatus(t, err, ErrInvalid, "chr_ring_apply")

	mustOK(t, r.Apply([]Change{
		AddChange(Member{ID: []byte("x"), Weight: 1, Zone: []byte("z1"), Tag: 5}),
		SetWeightChange(nodeID(0), 5),
		RemoveChange(nodeID(1)),
		AddChange(Member{ID: []byte("y"), Weight: 1}),
		RemoveChange([]byte("y")), // a later change sees the earlier ones
	}))
	nodes, err := r.Nodes()
	mustOK(t, err)
	var ids []string
	for _, n := range nodes {
		ids = append(ids, string(n.ID))
		if string(n.ID) == "x" && (string(n.Zone) != "z1" || n.Tag != 5) {
			t.Fatalf("x came back as %+v", n)
		}
		if string(n.ID) == "node-0" && n.Weight != 5 {
			t.Fatalf("node-0 has weight %d, want 5", n.Weight)
		}
	}
	if strings.Join(ids, ",") != "node-0,node-2,x" {
		t.Fatalf("members after the batch: %v", ids)
	}
	mustOK(t, r.Apply(nil))
}

func TestNodesAndOwnership(t *testing.T) {
	r := newRing(t, nil, 12)
	nodes, err := r.Nodes()
	mustOK(t, err)
	if len(nodes) != 12 {
		t.Fatalf("Nodes() has %d members", len(nodes))
	}
	if !sort.SliceIsSorted(nodes, func(i, j int) bool { return bytes.Compare(nodes[i].ID, nodes[j].ID) < 0 }) {
		t.Fatal("Nodes() is not in id byte order")
	}
	sum := 0.0
	for i, n := range nodes {
		if n.Index != i {
			t.Fatalf("node %s has index %d at position %d", n.ID, n.Index, i)
		}
		own, err := r.Ownership(n.ID)
		mustOK(t, err)
		if own != n.Ownership {
			t.Fatalf("Ownership(%s) = %v, Nodes says %v", n.ID, own, n.Ownership)
		}
		sum += own
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("ownership sums to %v", sum)
	}
	_, err = r.Ownership([]byte("ghost"))
	wantStatus(t, err, ErrNotFound, "chr_ring_ownership")
}

func TestClose(t *testing.T) {
	r, err := New(nil)
	mustOK(t, err)
	mustOK(t, r.Add(Member{ID: []byte("a"), Weight: 1}))
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	mustOK(t, r.Close())
	mustOK(t, r.Close()) // twice is a no-op
	if _, err := r.Lookup([]byte("k")); err != ErrClosed {
		t.Fatalf("Lookup after Close: %v", err)
	}
	if err := r.Add(Member{ID: []byte("b"), Weight: 1}); err != ErrClosed {
		t.Fatalf("Add after Close: %v", err)
	}
	if n, err := snap.Lookup([]byte("k")); err != nil || string(n.ID) != "a" {
		t.Fatalf("a snapshot must outlive its ring: %v %v", n, err)
	}
}

// XXH3-64 of the empty input with seed 0, from the xxHash reference.
func TestHashKnownAnswer(t *testing.T) {
	h, err := Hash("xxh3", nil, 0)
	mustOK(t, err)
	if h != 0x2D06800538D394C2 {
		t.Fatalf("xxh3(\"\") = %#x", h)
	}
	_, err = Hash("nope", []byte("x"), 0)
	wantStatus(t, err, ErrNoHasher, "chr_hasher_hash")
}
