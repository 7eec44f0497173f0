package chring

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Op is the kind of a Change.
type Op uint32

// Change operations.
const (
	OpAdd       Op = C.CHR_OP_ADD
	OpRemove    Op = C.CHR_OP_REMOVE
	OpSetWeight Op = C.CHR_OP_SET_WEIGHT
)

// Change is one change of a batch for Ring.Apply. Fields an Op does not use
// are ignored (Remove uses only ID; SetWeight ID and Weight).
type Change struct {
	Op     Op
	ID     []byte
	Weight uint32
	Zone   []byte
	Tag    uint64
}

// AddChange is the Change that adds m.
func AddChange(m Member) Change {
	return Change{Op: OpAdd, ID: m.ID, Weight: m.Weight, Zone: m.Zone, Tag: m.Tag}
}

// RemoveChange is the Change that removes member id.
func RemoveChange(id []byte) Change { return Change{Op: OpRemove, ID: id} }

// SetWeightChange is the Change that sets member id's weight.
func SetWeightChange(id []byte, weight uint32) Change {
	return Change{Op: OpSetWeight, ID: id, Weight: weight}
}

// Apply applies the changes in order and publishes them as one snapshot:
// readers see all of them or none. On error nothing is applied and the
// *Error's Index names the change that failed.
func (r *Ring) Apply(changes []Change) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	if len(changes) == 0 {
		return nil
	}
	// The C array holds pointers to ids and zones; cgo forbids passing Go
	// memory that holds Go pointers, so the bytes are copied into one C
	// block (the array itself then holds only C pointers).
	total := 0
	for i := range changes {
		total += len(changes[i].ID) + len(changes[i].Zone)
	}
	arena := C.malloc(C.size_t(total + 1))
	if arena == nil {
		return &Error{Status: ErrNoMemory, Message: "chring: Apply: cannot copy the batch", Index: len(changes)}
	}
	defer C.free(arena)
	bytes := unsafe.Slice((*byte)(arena), total+1)
	off := 0
	place := func(b []byte) (unsafe.Pointer, C.size_t) {
		if len(b) == 0 {
			return nil, 0
		}
		at := unsafe.Pointer(&bytes[off])
		off += copy(bytes[off:], b)
		return at, C.size_t(len(b))
	}
	cs := make([]C.chr_change, len(changes))
	for i, ch := range changes {
		cs[i].op = C.uint32_t(ch.Op)
		cs[i].weight = C.uint32_t(ch.Weight)
		cs[i].id, cs[i].id_len = place(ch.ID)
		cs[i].zone, cs[i].zone_len = place(ch.Zone)
		cs[i].tag = C.uint64_t(ch.Tag)
	}
	var failed C.size_t
	res := C.gochr_ring_apply(unsafe.Pointer(p), &cs[0], C.size_t(len(cs)), &failed)
	if res.status != C.CHR_OK {
		return toError(res, int(failed))
	}
	return nil
}
