package chring

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// zonedRing: zones a (4 nodes), b (4 nodes), c (1 node), weight 1 each.
func zonedRing(t *testing.T) *Ring {
	t.Helper()
	r, err := New(nil)
	mustOK(t, err)
	t.Cleanup(func() { r.Close() })
	for i, zone := range []string{"a", "a", "a", "a", "b", "b", "b", "b", "c"} {
		mustOK(t, r.Add(Member{ID: nodeID(i), Weight: 1, Zone: []byte(zone), Tag: uint64(i)}))
	}
	return r
}

func TestReplicaPolicyNames(t *testing.T) {
	for p, name := range map[ReplicaPolicy]string{ReplicasNodes: "nodes", ReplicasZonesFirst: "zones-first", ReplicasNTS: "nts"} {
		if p.String() != name {
			t.Fatalf("%d: %q, want %q", int(p), p.String(), name)
		}
		back, err := ParseReplicaPolicy(name)
		mustOK(t, err)
		if back != p {
			t.Fatalf("ParseReplicaPolicy(%q) = %d", name, int(back))
		}
	}
	if s := ReplicaPolicy(9).String(); s != "ReplicaPolicy(9)" {
		t.Fatalf("unknown policy prints %q", s)
	}
	_, err := ParseReplicaPolicy("zones")
	wantStatus(t, err, ErrNotSupported, "chr_replica_policy_find")
}

func TestReplicasPolicyZonesFirst(t *testing.T) {
	r := zonedRing(t)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	for i := 0; i < 500; i++ {
		key := keyOf(i)
		owner, err := r.Lookup(key)
		mustOK(t, err)
		zf, err := r.ReplicasPolicy(key, 4, ReplicasZonesFirst)
		mustOK(t, err)
		if len(zf) != 4 || !bytes.Equal(zf[0].ID, owner.ID) {
			t.Fatalf("key %d: %d replicas, first %s, owner %s", i, len(zf), zf[0].ID, owner.ID)
		}
		zones := map[string]bool{}
		for _, n := range zf[:3] {
			zones[string(n.Zone)] = true
		}
		if len(zones) != 3 {
			t.Fatalf("key %d: first 3 replicas in %d zones", i, len(zones))
		}
		three, err := snap.ReplicasPolicy(key, 3, ReplicasZonesFirst)
		mustOK(t, err)
		nts, err := snap.ReplicasPolicy(key, 4, ReplicasNTS)
		mustOK(t, err)
		set := map[string]bool{}
		for j, n := range zf {
			set[string(n.ID)] = true
			if j < 3 && !bytes.Equal(three[j].ID, n.ID) {
				t.Fatalf("key %d: replicas(3) is not a prefix of replicas(4)", i)
			}
		}
		for _, n := range nts {
			if !set[string(n.ID)] {
				t.Fatalf("key %d: NTS has %s, zones-first does not", i, n.ID)
			}
		}
		plain, err := r.Replicas(key, 3)
		mustOK(t, err)
		same, err := r.ReplicasPolicy(key, 3, ReplicasNodes)
		mustOK(t, err)
		for j := range plain {
			if !sameNode(plain[j], same[j]) {
				t.Fatalf("key %d: ReplicasNodes differs from Replicas", i)
			}
		}
	}
	_, err = r.ReplicasPolicy([]byte("k"), 2, ReplicaPolicy(3))
	wantStatus(t, err, ErrNotSupported, "chr_ring_replicas_policy")
	_, err = snap.ReplicasPolicy([]byte("k"), 0, ReplicasNTS)
	wantStatus(t, err, ErrInvalid, "chr_snapshot_replicas_policy")
}

func TestReplicaShares(t *testing.T) {
	r := zonedRing(t)
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	shares, err := snap.ReplicaShares(ReplicasZonesFirst, 3)
	mustOK(t, err)
	total := 0.0
	for _, s := range shares {
		total += s
	}
	if math.Abs(total-3) > 1e-12 {
		t.Fatalf("shares sum to %v, want 3", total)
	}
	// the only node of zone c is a replica of every key
	if shares[8] != 1 {
		t.Fatalf("zone c's node share %v, want 1", shares[8])
	}
	one, err := snap.ReplicaShares(ReplicasNodes, 1)
	mustOK(t, err)
	for i, s := range one {
		n, err := snap.Node(i)
		mustOK(t, err)
		if s != n.Ownership {
			t.Fatalf("node %d: share %v, ownership %v", i, s, n.Ownership)
		}
	}
	_, err = snap.ReplicaShares(ReplicasNodes, 0)
	wantStatus(t, err, ErrInvalid, "chr_snapshot_replica_shares")
	_, err = snap.ReplicaShares(ReplicaPolicy(-1), 1)
	wantStatus(t, err, ErrNotSupported, "chr_snapshot_replica_shares")
}

func ExampleRing_ReplicasPolicy() {
	ring, _ := New(nil)
	defer ring.Close()
	for i, zone := range []string{"a", "a", "b", "b", "c"} {
		ring.Add(Member{ID: []byte(fmt.Sprintf("srv-%d", i+1)), Weight: 1, Zone: []byte(zone)})
	}
	replicas, _ := ring.ReplicasPolicy([]byte("user:1"), 3, ReplicasZonesFirst)
	zones := map[string]bool{}
	for _, n := range replicas {
		zones[string(n.Zone)] = true
	}
	fmt.Println(len(replicas), "replicas in", len(zones), "zones")
	// Output: 3 replicas in 3 zones
}
