package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"unsafe"
)

// ReplicaPolicy says which of the nodes met walking clockwise from a key
// are its replicas, and in what order (chring.h, "Zone-aware replicas").
// A member's zone is its Zone bytes; members with an empty Zone share one
// zone.
type ReplicaPolicy int32

const (
	// ReplicasNodes: the first n distinct nodes of the walk (Replicas).
	ReplicasNodes ReplicaPolicy = C.CHR_REPLICAS_NODES
	// ReplicasZonesFirst: the first node of each zone met, in walk order,
	// then the others in walk order. The first min(n, zones) replicas are
	// in distinct zones, replica 0 is the owner, and the list for n is a
	// prefix of the list for n+1.
	ReplicasZonesFirst ReplicaPolicy = C.CHR_REPLICAS_ZONES_FIRST
	// ReplicasNTS: the set of ReplicasZonesFirst in walk order, as
	// Cassandra's NetworkTopologyStrategy lists one data centre (zones =
	// racks). Not prefix-stable.
	ReplicasNTS ReplicaPolicy = C.CHR_REPLICAS_NTS
)

// String is the policy's name: "nodes", "zones-first", "nts".
func (p ReplicaPolicy) String() string {
	var name *C.char
	if check(C.gochr_replica_policy_name(C.int32_t(p), &name)) != nil {
		return "ReplicaPolicy(" + strconv.Itoa(int(p)) + ")"
	}
	return C.GoString(name)
}

// ParseReplicaPolicy is the policy of that name (as String gives it);
// ErrNotSupported for an unknown name.
func ParseReplicaPolicy(name string) (ReplicaPolicy, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var p C.int32_t
	if err := check(C.gochr_replica_policy_find(cname, &p)); err != nil {
		return 0, err
	}
	return ReplicaPolicy(p), nil
}

// ReplicasPolicy is Replicas under a replica policy; ReplicasNodes gives
// exactly Replicas' lists. ErrNotSupported for an unknown policy.
func (r *Ring) ReplicasPolicy(key []byte, n int, policy ReplicaPolicy) ([]Node, error) {
	return r.replicas(key, n, func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_ref, count *C.size_t) C.gochr_result {
		return C.gochr_ring_replicas_policy(p, k, kn, C.int32_t(policy), want, out, count)
	})
}

// ReplicasPolicy is Ring.ReplicasPolicy against this snapshot.
func (s *Snapshot) ReplicasPolicy(key []byte, n int, policy ReplicaPolicy) ([]Node, error) {
	return s.replicas(key, n, func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_view, count *C.size_t) C.gochr_result {
		return C.gochr_snapshot_replicas_policy(p, k, kn, C.int32_t(policy), want, out, count)
	})
}

// ReplicaShares returns, per member (indexed as Node.Index), the fraction
// of the key space for which it is among the first n replicas under
// policy: exact from the token arcs, summing to min(n, members with
// tokens). Members of a zone with less weight carry more copies. Costs a
// walk per token: for inspection, not per request.
func (s *Snapshot) ReplicaShares(policy ReplicaPolicy, n int) ([]float64, error) {
	p, err := s.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(s)
	if n < 0 {
		n = 0 // the library's CHR_EINVAL
	}
	var count C.size_t
	if err := check(C.gochr_snapshot_node_count(unsafe.Pointer(p), &count)); err != nil {
		return nil, err
	}
	shares := make([]float64, count)
	var out *C.double
	if count > 0 {
		out = (*C.double)(unsafe.Pointer(&shares[0]))
	}
	if err := check(C.gochr_snapshot_replica_shares(unsafe.Pointer(p), C.int32_t(policy), C.size_t(n), out, count, &count)); err != nil {
		return nil, err
	}
	return shares, nil
}
