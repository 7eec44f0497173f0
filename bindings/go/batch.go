package chring

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Keys is a batch of keys packed end to end in one buffer, the form the
// batch lookup passes to C in one call. Reuse one Keys across batches
// (Reset, then Add): once its buffers have grown to the largest batch,
// filling it allocates nothing. The zero value is an empty batch. A Keys
// is not safe for use by several goroutines at once.
type Keys struct {
	data []byte
	lens []C.size_t
}

// Reset empties the batch and keeps its buffers.
func (k *Keys) Reset() {
	k.data = k.data[:0]
	k.lens = k.lens[:0]
}

// Add appends a key (copied).
func (k *Keys) Add(key []byte) {
	k.data = append(k.data, key...)
	k.lens = append(k.lens, C.size_t(len(key)))
}

// AddString appends a key given as a string (copied).
func (k *Keys) AddString(key string) {
	k.data = append(k.data, key...)
	k.lens = append(k.lens, C.size_t(len(key)))
}

// Len is the number of keys in the batch.
func (k *Keys) Len() int { return len(k.lens) }

// resize returns out with length n, reusing its array when it has room.
func resize[T any](out []T, n int) []T {
	if cap(out) < n {
		return make([]T, n)
	}
	return out[:n]
}

// LookupKeys looks up every key of the batch in one C call and returns
// indices, resized to keys.Len(), with indices[i] the node index (see
// Node) of key i's owner. The array of indices is reused when it has room,
// so a caller that passes the previous result back allocates nothing.
// On error the contents of indices are unspecified.
func (s *Snapshot) LookupKeys(keys *Keys, indices []uint32) ([]uint32, error) {
	p, err := s.handle()
	if err != nil {
		return indices, err
	}
	defer runtime.KeepAlive(s)
	indices = resize(indices, keys.Len())
	var data unsafe.Pointer
	if len(keys.data) > 0 {
		data = unsafe.Pointer(&keys.data[0])
	}
	var lens *C.size_t
	var out *C.uint32_t
	if len(keys.lens) > 0 {
		lens = &keys.lens[0]
		out = (*C.uint32_t)(unsafe.Pointer(&indices[0]))
	}
	err = check(C.gochr_snapshot_lookup_packed(unsafe.Pointer(p), data, lens, C.size_t(keys.Len()), out))
	return indices, err
}

// scratchPool recycles the packed keys of LookupBatch and the indices of
// LookupNodes across calls (and goroutines).
type batchScratch struct {
	keys    Keys
	indices []uint32
}

var scratchPool = sync.Pool{New: func() any { return new(batchScratch) }}

// pack fills the scratch's Keys with keys.
func (b *batchScratch) pack(keys [][]byte) *Keys {
	b.keys.Reset()
	for _, k := range keys {
		b.keys.Add(k)
	}
	return &b.keys
}

// LookupBatch is LookupKeys for keys given as slices: they are copied into
// a pooled Keys (about a nanosecond per short key), so steady-state calls
// allocate nothing when indices has room for len(keys).
func (s *Snapshot) LookupBatch(keys [][]byte, indices []uint32) ([]uint32, error) {
	b := scratchPool.Get().(*batchScratch)
	defer scratchPool.Put(b)
	return s.LookupKeys(b.pack(keys), indices)
}

// LookupNodes returns nodes, resized to len(keys), with nodes[i] the owner
// of keys[i], from one C call. The nodes are the snapshot's own (see
// Snapshot); nodes is reused when it has room, and then steady-state calls
// allocate nothing.
func (s *Snapshot) LookupNodes(keys [][]byte, nodes []Node) ([]Node, error) {
	b := scratchPool.Get().(*batchScratch)
	defer scratchPool.Put(b)
	var err error
	if b.indices, err = s.LookupKeys(b.pack(keys), b.indices); err != nil {
		return nodes, err
	}
	_, table, err := s.handleAndNodes()
	defer runtime.KeepAlive(s)
	if err != nil {
		return nodes, err
	}
	nodes = resize(nodes, len(keys))
	for i, index := range b.indices {
		nodes[i] = table[index]
	}
	return nodes, nil
}
