package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"math"
	"runtime"
	"unsafe"
)

// nodeTable is a copy of a snapshot's node table in Go memory: the Nodes
// that lookups return (their ID and Zone slices point into one arena),
// and, for Ring.Lookup, the same fields in C memory that C compares
// against a lookup's result (gochr_ring_lookup_match), freed by a
// finalizer once no lookup holds the table.
type nodeTable struct {
	nodes []Node
	arena []byte
	cmem  unsafe.Pointer // GOCHR_TABLE_STRIDE words per node, then the ids and zones
	gen   uint64         // Ring.gen when the table was read (Ring only)
}

// newNodeTable builds a table of count nodes; node(i) returns node i's
// fields (ID and Zone unset) and its id and zone bytes, which are copied.
// With inC it also fills the C copy for gochr_ring_lookup_match.
func newNodeTable(count int, inC bool, node func(i int) (Node, []byte, []byte)) *nodeTable {
	size := 0
	for i := 0; i < count; i++ {
		_, id, zone := node(i)
		size += len(id) + len(zone)
	}
	t := &nodeTable{
		nodes: make([]Node, count),
		arena: make([]byte, 0, size), // every id and zone in one allocation
	}
	var words []uint64
	if inC {
		wordBytes := count * C.GOCHR_TABLE_STRIDE * 8
		t.cmem = C.malloc(C.size_t(wordBytes + size + 1))
		if t.cmem == nil {
			panic("chring: out of memory for the node table")
		}
		words = unsafe.Slice((*uint64)(t.cmem), count*C.GOCHR_TABLE_STRIDE)
		runtime.SetFinalizer(t, func(t *nodeTable) { C.free(t.cmem) })
	}
	for i := range t.nodes {
		n, id, zone := node(i)
		if inC {
			w := words[i*C.GOCHR_TABLE_STRIDE:]
			w[0] = n.Tag
			w[1] = math.Float64bits(n.Ownership)
			w[2] = uint64(n.Weight)<<32 | uint64(n.Tokens)
			w[3] = uint64(len(t.arena))<<32 | uint64(len(id))
			w[4] = uint64(len(t.arena)+len(id))<<32 | uint64(len(zone))
		}
		n.ID = t.add(id)
		if len(zone) > 0 {
			n.Zone = t.add(zone)
		}
		t.nodes[i] = n
	}
	if inC && size > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Add(t.cmem, count*C.GOCHR_TABLE_STRIDE*8)), size), t.arena)
	}
	return t
}

// add appends b to the arena (sized for every id and zone: it never
// grows) and returns its copy there.
func (t *nodeTable) add(b []byte) []byte {
	start := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[start:len(t.arena):len(t.arena)]
}

// cArgs is the C table as gochr_ring_lookup_match takes it (0, 0 for none).
func (t *nodeTable) cArgs() (C.uintptr_t, C.size_t) {
	if t == nil || t.cmem == nil {
		return 0, 0
	}
	return C.uintptr_t(uintptr(t.cmem)), C.size_t(len(t.nodes))
}
