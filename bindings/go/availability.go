package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// PanicThresholdDefault is the panic threshold of a ring nobody set one
// for: with more than this percent of the weight marked down, the marks
// are ignored.
const PanicThresholdDefault = C.CHR_PANIC_THRESHOLD_DEFAULT

// Availability is the availability state of a ring or a snapshot
// (chr_availability_info): which members are marked down, and whether the
// marks are in effect. While they are, lookups, batches and replica lists
// route a down member's keys to the next member of their own replica walk;
// no token moves, so unmarking brings every key back.
type Availability struct {
	Panic          bool   // more than PanicThreshold percent of the weight is down: marks ignored
	PanicThreshold uint32 // percent, 0..100
	Down           int    // members marked down (in effect or not)
	DownWeight     uint64 // weight of the members marked down that have tokens
	TotalWeight    uint64 // weight of every member with tokens
	// Digest is the availability digest: equal fingerprints and equal
	// digests route every key the same, in any process and language. 0
	// when nothing is marked and the threshold is the default.
	Digest uint64
}

func availabilityOf(info *C.chr_availability_info) Availability {
	return Availability{
		Panic:          info.panic != 0,
		PanicThreshold: uint32(info.panic_threshold),
		Down:           int(info.down),
		DownWeight:     uint64(info.down_weight),
		TotalWeight:    uint64(info.total_weight),
		Digest:         uint64(info.digest),
	}
}

// readAvailability fills a chr_availability_info with call.
func readAvailability(call func(*C.chr_availability_info) C.gochr_result) (Availability, error) {
	var info C.chr_availability_info
	if err := check(C.gochr_result{status: C.chr_availability_info_init(&info, C.CHR_AVAILABILITY_INFO_VERSION)}); err != nil {
		return Availability{}, err
	}
	if err := check(call(&info)); err != nil {
		return Availability{}, err
	}
	return availabilityOf(&info), nil
}

// SetDown marks member id down (true) or up (false) and publishes the
// result as a new snapshot; marking a member already in that state changes
// nothing. Errors: ErrNotFound (not a member), ErrInvalid, ErrRange.
func (r *Ring) SetDown(id []byte, down bool) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	r.beginChange() // Node.Down of the ring's node table changes
	defer r.endChange()
	ptr, n := bytesArg(id)
	var d C.uint32_t
	if down {
		d = 1
	}
	return check(C.gochr_ring_set_down(unsafe.Pointer(p), ptr, n, d))
}

// SetAvailability replaces the whole availability state in one snapshot:
// exactly the members ids are down (duplicates allowed), every other member
// is up, and the panic threshold is panicThreshold percent (0..100;
// PanicThresholdDefault is the default, 100 never panics). On error the
// ring is unchanged: ErrNotFound for an id that is not a member (Error.Index
// is its position in ids, Error.Member the id), ErrRange, ErrInvalid.
func (r *Ring) SetAvailability(ids [][]byte, panicThreshold uint32) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	total := 0
	for _, id := range ids {
		total += len(id)
	}
	data := make([]byte, total+1) // never empty: &data[0] below
	lens := make([]C.size_t, len(ids)+1)
	at := 0
	for i, id := range ids {
		at += copy(data[at:], id)
		lens[i] = C.size_t(len(id))
	}
	r.beginChange()
	defer r.endChange()
	return check(C.gochr_ring_set_availability_packed(unsafe.Pointer(p), unsafe.Pointer(&data[0]),
		&lens[0], C.size_t(len(ids)), C.uint32_t(panicThreshold)))
}

// Availability is the availability state of the ring's current snapshot.
func (r *Ring) Availability() (Availability, error) {
	p, err := r.handle()
	if err != nil {
		return Availability{}, err
	}
	defer runtime.KeepAlive(r)
	return readAvailability(func(info *C.chr_availability_info) C.gochr_result {
		return C.gochr_ring_availability(unsafe.Pointer(p), info)
	})
}

// Availability is the availability state of this snapshot.
func (s *Snapshot) Availability() (Availability, error) {
	p, err := s.handle()
	if err != nil {
		return Availability{}, err
	}
	defer runtime.KeepAlive(s)
	return readAvailability(func(info *C.chr_availability_info) C.gochr_result {
		return C.gochr_snapshot_availability(unsafe.Pointer(p), info)
	})
}

// MarkedDown reports whether member i (0 <= i < NodeCount(), as Node) is
// marked down, whether or not the mark is in effect (Node.Down is set only
// while it is: not in panic). ErrRange past the end.
func (s *Snapshot) MarkedDown(i int) (bool, error) {
	p, err := s.handle()
	if err != nil {
		return false, err
	}
	defer runtime.KeepAlive(s)
	if i < 0 {
		return false, &Error{Status: ErrRange, Index: -1, Message: "Snapshot.MarkedDown: negative index"}
	}
	var marked C.uint32_t
	err = check(C.gochr_snapshot_marked_down(unsafe.Pointer(p), C.size_t(i), &marked))
	return marked != 0, err
}
