package chring

/*
#include "shim.h"
*/
import "C"

import (
	"math"
	"unsafe"
)

// nodeTable is a copy of a snapshot's node table in Go memory: the Nodes
// that lookups return (their ID and Zone slices point into one arena), and
// the same fields as words that C compares against a lookup's result
// (gochr_ring_lookup_match, GOCHR_TABLE_STRIDE words per node).
type nodeTable struct {
	nodes []Node
	arena []byte
	words []uint64
	gen   uint64 // Ring.gen when the table was read (Ring only)
}

// newNodeTable builds a table of count nodes; node(i) returns node i's
// fields (ID and Zone unset) and its id and zone bytes, which are copied.
func newNodeTable(count int, node func(i int) (Node, []byte, []byte)) *nodeTable {
	size := 0
	for i := 0; i < count; i++ {
		_, id, zone := node(i)
		size += len(id) + len(zone)
	}
	t := &nodeTable{
		nodes: make([]Node, count),
		arena: make([]byte, 0, size), // every id and zone in one allocation
		words: make([]uint64, count*C.GOCHR_TABLE_STRIDE),
	}
	for i := range t.nodes {
		n, id, zone := node(i)
		w := t.words[i*C.GOCHR_TABLE_STRIDE:]
		w[0] = n.Tag
		w[1] = math.Float64bits(n.Ownership)
		w[2] = uint64(n.Weight)<<32 | uint64(n.Tokens)
		w[3] = uint64(len(t.arena))<<32 | uint64(len(id))
		n.ID = t.add(id)
		w[4] = uint64(len(t.arena))<<32 | uint64(len(zone))
		if len(zone) > 0 {
			n.Zone = t.add(zone)
		}
		t.nodes[i] = n
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

// cArgs are the table's arena and words as C arguments (NULL when empty).
func (t *nodeTable) cArgs() (unsafe.Pointer, *C.uint64_t, C.size_t) {
	if t == nil || len(t.nodes) == 0 {
		return nil, nil, 0
	}
	var arena unsafe.Pointer
	if len(t.arena) > 0 {
		arena = unsafe.Pointer(&t.arena[0])
	}
	return arena, (*C.uint64_t)(unsafe.Pointer(&t.words[0])), C.size_t(len(t.nodes))
}
