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
// C function, the bad value and the allowed range (chr_last_error). It
// unwraps to its Status.
type Error struct {
	Status  Status
	Message string
	// Index is, for Ring.Apply, the index of the change that failed
	// (len(changes) for a batch-wide error); -1 for every other call.
	Index int
	// Line is, for the ring-file calls, the line at fault (ErrFormat,
	// ErrOptions, ErrNoHasher); 0 for the file as a whole and for every
	// other call.
	Line int
}

func (e *Error) Error() string { return "chring: " + e.Message }

// Unwrap makes errors.Is(err, chring.ErrNotFound) and friends work.
func (e *Error) Unwrap() error { return e.Status }

// check turns a shim result into nil or an *Error, freeing the C copy of
// the message.
func check(r C.gochr_result) error {
	if r.status == C.CHR_OK {
		return nil
	}
	return toError(r, -1)
}

func toError(r C.gochr_result, index int) *Error {
	status := Status(r.status)
	message := status.Error()
	if r.message != nil {
		message = C.GoString(r.message)
		C.free(unsafe.Pointer(r.message))
	}
	return &Error{Status: status, Message: message, Index: index}
}
