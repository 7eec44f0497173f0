package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Snapshot is an immutable view of a ring at one point in time: any
// number of lookups against it agree with each other, whatever writers do
// meanwhile. It stays valid after the Ring is closed, until its own Close.
// Its methods may be called from any number of goroutines at once, except
// Close, which must come after every other call has returned.
//
// Lookups on a snapshot allocate nothing: they return nodes from the
// snapshot's node table, copied into Go memory once, on first use. The ID
// and Zone slices of those nodes are shared: do not modify them.
type Snapshot struct {
	ptr       handle[C.chr_snapshot]
	tableOnce sync.Once
	table     []Node
	tableErr  error
}

// Snapshot takes the ring's current snapshot.
func (r *Ring) Snapshot() (*Snapshot, error) {
	p, err := r.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(r)
	var sp *C.chr_snapshot
	if err := check(C.gochr_ring_snapshot(unsafe.Pointer(p), &sp)); err != nil {
		return nil, err
	}
	s := &Snapshot{}
	s.ptr.p.Store(sp)
	runtime.SetFinalizer(s, (*Snapshot).Close) // a safety net only: call Close
	return s, nil
}

// Close releases the snapshot. Closing twice is a no-op; calls after it
// return ErrClosed. Nodes already returned stay valid (they are Go memory).
func (s *Snapshot) Close() error {
	if p := s.ptr.take(); p != nil {
		C.chr_snapshot_release(p)
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// handle is the C snapshot, or ErrClosed; callers defer
// runtime.KeepAlive(s) (see Ring.handle).
func (s *Snapshot) handle() (*C.chr_snapshot, error) { return s.ptr.get() }

// nodes is the snapshot's node table, built on first use.
func (s *Snapshot) nodes(p *C.chr_snapshot) ([]Node, error) {
	s.tableOnce.Do(func() { s.table, s.tableErr = buildTable(p) })
	return s.table, s.tableErr
}

// handleAndNodes is handle, then nodes; callers defer
// runtime.KeepAlive(s).
func (s *Snapshot) handleAndNodes() (*C.chr_snapshot, []Node, error) {
	p, err := s.handle()
	if err != nil {
		return nil, nil, err
	}
	table, err := s.nodes(p)
	return p, table, err
}

func buildTable(p *C.chr_snapshot) ([]Node, error) {
	var count C.size_t
	if err := check(C.gochr_snapshot_node_count(unsafe.Pointer(p), &count)); err != nil {
		return nil, err
	}
	views := make([]C.chr_node_view, count)
	for i := range views {
		if err := check(C.gochr_snapshot_node(unsafe.Pointer(p), C.size_t(i), &views[i])); err != nil {
			return nil, err
		}
	}
	return newNodeTable(len(views), func(i int) (Node, []byte, []byte) {
		v := &views[i]
		return Node{
			Tag:       uint64(v.tag),
			Weight:    uint32(v.weight),
			Tokens:    uint32(v.tokens),
			Index:     int(v.index),
			Ownership: float64(v.ownership),
			Down:      v.flags&C.CHR_NODE_DOWN != 0,
		}, unsafe.Slice((*byte)(v.id), int(v.id_len)), unsafe.Slice((*byte)(v.zone), int(v.zone_len))
	}).nodes, nil
}

// Lookup returns the member that owns key in this snapshot.
func (s *Snapshot) Lookup(key []byte) (Node, error) {
	p, table, err := s.handleAndNodes()
	defer runtime.KeepAlive(s)
	if err != nil {
		return Node{}, err
	}
	i, err := lookupIndex(p, key)
	if err != nil {
		return Node{}, err
	}
	return table[i], nil
}

// LookupIndex returns the index (see Node) of the member that owns key.
func (s *Snapshot) LookupIndex(key []byte) (int, error) {
	p, err := s.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	i, err := lookupIndex(p, key)
	return int(i), err
}

func lookupIndex(p *C.chr_snapshot, key []byte) (uint32, error) {
	k, n := bytesArg(key)
	r := C.gochr_snapshot_lookup_index(unsafe.Pointer(p), k, n)
	if r.status != C.CHR_OK {
		return 0, check(C.gochr_result{status: r.status, failure: r.failure})
	}
	return uint32(r.index), nil
}

// Node returns member i, 0 <= i < NodeCount(), ids in byte order.
func (s *Snapshot) Node(i int) (Node, error) {
	_, table, err := s.handleAndNodes()
	defer runtime.KeepAlive(s)
	if err != nil {
		return Node{}, err
	}
	if i < 0 || i >= len(table) {
		return Node{}, &Error{Status: ErrRange, Index: -1,
			Message: "Snapshot.Node: index out of range (0..NodeCount()-1)"}
	}
	return table[i], nil
}

// Replicas is Ring.Replicas against this snapshot.
func (s *Snapshot) Replicas(key []byte, n int) ([]Node, error) {
	return s.replicas(key, n, func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_view, count *C.size_t) C.gochr_result {
		return C.gochr_snapshot_replicas(p, k, kn, want, out, count)
	})
}

// ReplicasInto is Replicas returning nodes, resized to the number of
// replicas; nodes is reused when it has room, and then the call allocates
// nothing. On error the contents of nodes are unspecified.
func (s *Snapshot) ReplicasInto(key []byte, n int, nodes []Node) ([]Node, error) {
	p, table, err := s.handleAndNodes()
	defer runtime.KeepAlive(s)
	if err != nil {
		return nodes, err
	}
	b := scratchPool.Get().(*batchScratch)
	defer scratchPool.Put(b)
	return replicasFromTable(unsafe.Pointer(p), key, n, table, b, nodes,
		func(p, k unsafe.Pointer, kn, want C.size_t, out *C.uint32_t) C.gochr_count {
			return C.gochr_snapshot_replicas_index(p, k, kn, want, out)
		})
}

// replicas runs one of the C replica calls for Replicas and ReplicasPolicy.
func (s *Snapshot) replicas(key []byte, n int, call func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_view, count *C.size_t) C.gochr_result) ([]Node, error) {
	p, table, err := s.handleAndNodes()
	defer runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	room := clampReplicas(n, len(table))
	views := make([]C.chr_node_view, room)
	k, kn := bytesArg(key)
	var count C.size_t
	if err := check(call(unsafe.Pointer(p), k, kn, C.size_t(clampCount(n, room)), &views[0], &count)); err != nil {
		return nil, err
	}
	out := make([]Node, count)
	for i := range out {
		out[i] = table[views[i].index]
	}
	return out, nil
}

// NodeCount is the number of members, weight 0 included.
func (s *Snapshot) NodeCount() (int, error) {
	return s.count(func(p *C.chr_snapshot, c *C.size_t) C.gochr_result {
		return C.gochr_snapshot_node_count(unsafe.Pointer(p), c)
	})
}

// TokenCount is the number of tokens on the circle.
func (s *Snapshot) TokenCount() (int, error) {
	return s.count(func(p *C.chr_snapshot, c *C.size_t) C.gochr_result {
		return C.gochr_snapshot_token_count(unsafe.Pointer(p), c)
	})
}

func (s *Snapshot) count(call func(*C.chr_snapshot, *C.size_t) C.gochr_result) (int, error) {
	p, err := s.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	var c C.size_t
	err = check(call(p, &c))
	return int(c), err
}

// Fingerprint is Ring.Fingerprint for this snapshot.
func (s *Snapshot) Fingerprint() (uint64, error) {
	p, err := s.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	var fp C.uint64_t
	err = check(C.gochr_snapshot_fingerprint(unsafe.Pointer(p), &fp))
	return uint64(fp), err
}

// Token returns token i of the sorted token array: its position on the
// circle and its owner's index. For inspection tools and tests.
func (s *Snapshot) Token(i int) (value uint64, owner int, err error) {
	p, err := s.handle()
	if err != nil {
		return 0, 0, err
	}
	defer runtime.KeepAlive(s)
	if i < 0 {
		return 0, 0, &Error{Status: ErrRange, Index: -1, Message: "Snapshot.Token: negative index"}
	}
	var v C.uint64_t
	var o C.uint32_t
	err = check(C.gochr_snapshot_token(unsafe.Pointer(p), C.size_t(i), &v, &o))
	return uint64(v), int(o), err
}
