package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Status is a chr_status code of the C library. Status values are errors
// themselves, so they work as sentinels with errors.Is:
//
//	if errors.Is(err, chring.ErrNotFound) { ... }
type Status int

// The library's statuses (include/c/chring.h). Values are never reused.
const (
	ErrInvalid         Status = C.CHR_EINVAL            // bad argument (empty id, n == 0, ...)
	ErrNoMemory        Status = C.CHR_ENOMEM            // an allocation failed; nothing changed
	ErrRange           Status = C.CHR_ERANGE            // a value over a documented limit
	ErrExists          Status = C.CHR_EEXIST            // the node id is already present
	ErrNotFound        Status = C.CHR_ENOENT            // no node with that id
	ErrEmpty           Status = C.CHR_EEMPTY            // no node with tokens: nothing to route to
	ErrVersion         Status = C.CHR_EVERSION          // unknown versioned-struct version
	ErrNoHasher        Status = C.CHR_ENOHASHER         // no hasher of that name, built in or in a plugin
	ErrNotSupported    Status = C.CHR_ENOTSUP           // not provided by this build
	ErrInternal        Status = C.CHR_EINTERNAL         // a bug in chring
	ErrPluginFile      Status = C.CHR_EPLUGIN_NOFILE    // plugin file missing or unreadable
	ErrPluginNotSO     Status = C.CHR_EPLUGIN_NOTSO     // plugin is not a loadable shared object
	ErrPluginSymbol    Status = C.CHR_EPLUGIN_SYMBOL    // plugin lacks its entry point
	ErrPluginABI       Status = C.CHR_EPLUGIN_ABI       // plugin built for another ABI
	ErrPluginDesc      Status = C.CHR_EPLUGIN_DESC      // malformed hasher descriptor
	ErrPluginUntrusted Status = C.CHR_EPLUGIN_UNTRUSTED // plugin file or directory refused by the trust rules
)

// Error returns the library's static text for the status (chr_strerror).
func (s Status) Error() string {
	return C.GoString(C.chr_strerror(C.chr_status(s)))
}

// ErrClosed is returned by calls on a Ring or Snapshot after Close.
var ErrClosed = errors.New("chring: use of a closed ring or snapshot")

// Error is a failed call: its status, and the library's message naming the
// C function, the bad value and the allowed range (chr_last_error), with
// what the library recorded of it as data (chr_last_error_info): the line of
// a ring file, the earlier line it conflicts with, the member. It unwraps to
// its Status.
type Error struct {
	Status  Status
	Message string
	// Index is, for Ring.Apply, the index of the change that failed
	// (len(changes) for a batch-wide error); for a ring-file call, the index
	// of the change a line became when the ring refused it; -1 otherwise.
	Index int
	// Line is, for the ring-file calls, the line at fault (ErrFormat,
	// ErrOptions, ErrNoHasher); 0 for the file as a whole and for every
	// other call.
	Line int
	// OtherLine is, for a ring file, the earlier line the faulty one
	// conflicts with (the first occurrence of a duplicate id or directive);
	// 0 when there is none.
	OtherLine int
	// Member is the id of the member the failure is about (Add, Remove,
	// SetWeight, a change of Apply, a ring file's member line); nil when the
	// failure is about no one member.
	Member []byte
}

func (e *Error) Error() string { return "chring: " + e.Message }

// Unwrap makes errors.Is(err, chring.ErrNotFound) and friends work.
func (e *Error) Unwrap() error { return e.Status }

// check turns a shim result into nil or an *Error, freeing the C copy of
// the failure.
func check(r C.gochr_result) error {
	if r.status == C.CHR_OK {
		return nil
	}
	return toError(r, -1)
}

func toError(r C.gochr_result, index int) *Error {
	status := Status(r.status)
	e := &Error{Status: status, Message: status.Error(), Index: index}
	f := r.failure
	if f == nil {
		return e
	}
	defer C.free(unsafe.Pointer(f))
	e.Message = C.GoString(&f.message[0])
	if f.flags&C.CHR_ERROR_HAS_LINE != 0 {
		e.Line = int(f.line)
	}
	if f.flags&C.CHR_ERROR_HAS_OTHER_LINE != 0 {
		e.OtherLine = int(f.other_line)
	}
	if f.flags&C.CHR_ERROR_HAS_MEMBER != 0 {
		e.Member = C.GoBytes(unsafe.Pointer(&f.member[0]), C.int(f.member_len))
	}
	if f.flags&C.CHR_ERROR_HAS_CHANGE != 0 && index < 0 {
		e.Index = int(f.change_index)
	}
	return e
}
