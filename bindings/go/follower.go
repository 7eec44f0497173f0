package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Outcome is what one Follower.Check did (CHR_FOLLOW_*).
type Outcome int32

// Check outcomes.
const (
	FollowUnchanged Outcome = C.CHR_FOLLOW_UNCHANGED // the file's stamp is the one last read: nothing done
	FollowApplied   Outcome = C.CHR_FOLLOW_APPLIED   // the file changed and the ring now is what it describes
	FollowRefused   Outcome = C.CHR_FOLLOW_REFUSED   // the file changed (or cannot be read) and was refused: the ring is unchanged
)

func (o Outcome) String() string {
	switch o {
	case FollowUnchanged:
		return "unchanged"
	case FollowApplied:
		return "applied"
	case FollowRefused:
		return "refused"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// FollowState is what a Follower has seen (chr_follow_state): the file
// applied last and, while the file as last read is refused, why.
type FollowState struct {
	LastOutcome Outcome // of the latest check (FollowUnchanged before the first)
	Checks      uint64  // Check calls
	Applied     uint64  // checks that applied a file
	Refused     uint64  // checks that refused one

	// The file applied last; all zero before the first apply.
	AppliedHasRevision    bool   // it has a %%revision
	AppliedRevision       uint64 // its %%revision (0 if none)
	AppliedHasFingerprint bool   // it has a %%fingerprint (checked: it matched)
	AppliedHasOptions     bool   // it has an option directive
	AppliedFingerprint    uint64 // the ring's fingerprint right after that apply
	AppliedAvailability   uint64 // the ring's availability digest right after that apply

	// Err is nil when the file as last read is the one applied (or no
	// check ran yet); otherwise why it was refused: an *Error with its
	// Status (ErrFormat, ErrOptions, ErrIO, ErrNoHasher, ErrNoMemory), its
	// Message and its Line, as Check returned it. Line and Message repeat
	// those two fields (0 and "" when Err is nil).
	Err     error
	Line    int    // the refused file's line at fault; 0 for the file as a whole
	Message string // "file:line: reason"

	// What the refused file declared before its fault.
	RefusedHasRevision    bool
	RefusedRevision       uint64 // its %%revision, when RefusedHasRevision
	RefusedHasFingerprint bool
	RefusedFingerprint    uint64 // the %%fingerprint it claimed, when RefusedHasFingerprint
}

// Follower keeps a Ring equal to a ring file that another process
// rewrites: each Check looks at the file's stamp (device, inode, size,
// modification and change times, taken from the open file the text is
// read from) and, when it changed since the text read last, applies the
// file to the ring as Ring.ApplyFile does. A refused file (malformed,
// unreadable, other options, a %%fingerprint that does not match) leaves
// the ring as it was and is reported by one Check only; State still says
// why until the file changes. It is libchring's chr_follower: the stamp
// and the rules are the C library's, the same for every binding and for
// the nginx module.
//
// Check, State and Close may be called from any number of goroutines at
// once: checks on one follower run one at a time, and State waits for a
// check in progress. Lookups on the ring never wait for a check.
//
// The follower keeps its Ring from being collected. Ring.Close frees the
// ring's followers first (waiting for a check in progress), after which
// Check returns ErrClosed and State the state at that moment; closing the
// follower first is the usual order.
type Follower struct {
	ring *Ring
	core *followerCore
}

// followerCore is the C follower: the Ring's set of followers holds it
// (not the Follower, whose finalizer would otherwise never run), so that
// Ring.Close can free it before the C ring it borrows.
type followerCore struct {
	mu    sync.RWMutex // read: a C call on p; write: freeing p
	p     *C.chr_follower
	final FollowState // the state when p was freed
}

// followerSet is the followers of a Ring (Ring.followers).
type followerSet struct {
	mu  sync.Mutex
	set map[*followerCore]struct{}
}

// NewFollower creates a follower of the ring file at path for ring. Nothing
// is read yet: the first Check reads and applies the file, whatever its
// stamp. A relative path is resolved at each check against the working
// directory of that moment. Errors: ErrClosed (a closed ring), ErrInvalid
// (an empty path, a NUL byte in it), ErrNoMemory.
func NewFollower(ring *Ring, path string) (*Follower, error) {
	cpath, err := cString(path, "NewFollower: path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	core, err := ring.addFollower(cpath)
	if err != nil {
		return nil, err
	}
	f := &Follower{ring: ring, core: core}
	runtime.SetFinalizer(f, (*Follower).Close) // a safety net only: call Close
	return f, nil
}

// addFollower makes a C follower of r and records it in r.followers, under
// the set's lock: Ring.Close takes the C ring before it takes that lock,
// so a follower made here is either seen and freed by Close, or not made.
func (r *Ring) addFollower(cpath *C.char) (*followerCore, error) {
	r.followers.mu.Lock()
	defer r.followers.mu.Unlock()
	p, err := r.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(r)
	var fp *C.chr_follower
	if err := check(C.gochr_follower_new(unsafe.Pointer(p), cpath, &fp)); err != nil {
		return nil, err
	}
	core := &followerCore{p: fp}
	if r.followers.set == nil {
		r.followers.set = make(map[*followerCore]struct{})
	}
	r.followers.set[core] = struct{}{}
	return core, nil
}

// closeFollowers frees every follower of r (Ring.Close, before the C ring).
func (r *Ring) closeFollowers() {
	r.followers.mu.Lock()
	set := r.followers.set
	r.followers.set = nil
	r.followers.mu.Unlock()
	for core := range set {
		core.free()
	}
}

// free keeps the final state and frees the C follower, once no call uses it.
func (c *followerCore) free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return
	}
	if st, err := c.state(); err == nil {
		c.final = st
	}
	C.chr_follower_free(c.p)
	c.p = nil
}

// state reads the C state; the caller holds mu and p is not nil.
func (c *followerCore) state() (FollowState, error) {
	var st C.chr_follow_state
	if err := check(C.gochr_result{status: C.chr_follow_state_init(&st, C.CHR_FOLLOW_STATE_VERSION)}); err != nil {
		return FollowState{}, err
	}
	if err := check(C.gochr_follower_state(unsafe.Pointer(c.p), &st)); err != nil {
		return FollowState{}, err
	}
	return followState(&st), nil
}

func followState(st *C.chr_follow_state) FollowState {
	s := FollowState{
		LastOutcome:           Outcome(st.last_outcome),
		Checks:                uint64(st.checks),
		Applied:               uint64(st.applied),
		Refused:               uint64(st.refused),
		AppliedHasRevision:    st.applied_flags&C.CHR_RINGFILE_HAS_REVISION != 0,
		AppliedRevision:       uint64(st.applied_revision),
		AppliedHasFingerprint: st.applied_flags&C.CHR_RINGFILE_HAS_FINGERPRINT != 0,
		AppliedHasOptions:     st.applied_flags&C.CHR_RINGFILE_HAS_OPTIONS != 0,
		AppliedFingerprint:    uint64(st.applied_fingerprint),
		AppliedAvailability:   uint64(st.applied_availability),
		RefusedHasRevision:    st.refused_flags&C.CHR_RINGFILE_HAS_REVISION != 0,
		RefusedRevision:       uint64(st.refused_revision),
		RefusedHasFingerprint: st.refused_flags&C.CHR_RINGFILE_HAS_FINGERPRINT != 0,
		RefusedFingerprint:    uint64(st.refused_fingerprint),
	}
	if st.status != C.CHR_OK {
		s.Line = int(st.error_line)
		s.Message = C.GoString(&st.message[0])
		s.Err = &Error{Status: Status(st.status), Message: s.Message, Index: -1, Line: s.Line}
	}
	return s
}

// Check looks at the file once. When its stamp differs from the one last
// read (or at the first check) it reads the file and applies it to the
// ring as one batch: FollowApplied with the FileInfo of that apply, or
// FollowRefused with the refusal as an *Error (ErrFormat with Error.Line,
// ErrOptions, ErrIO, ErrNoHasher, ErrNoMemory; the ring is unchanged).
// Otherwise FollowUnchanged, a zero FileInfo and nil. After Close, or once
// the ring is closed: FollowUnchanged and ErrClosed.
func (f *Follower) Check() (Outcome, FileInfo, error) {
	c := f.core
	c.mu.RLock()
	defer c.mu.RUnlock()
	defer runtime.KeepAlive(f)
	if c.p == nil {
		return FollowUnchanged, FileInfo{}, ErrClosed
	}
	info, err := newCInfo()
	if err != nil {
		return FollowUnchanged, FileInfo{}, err
	}
	var outcome C.int32_t
	// The check may change the ring: bracketed as every change of a Ring
	// (Ring.table). Only an apply changes it; otherwise the change count
	// goes back, so that a follower checking every few milliseconds does
	// not make every lookup take the slow path.
	r := f.ring
	r.beginChange()
	res := C.gochr_follower_check(unsafe.Pointer(c.p), &outcome, info)
	o := Outcome(outcome)
	if o == FollowApplied {
		r.endChange()
	} else {
		r.endNoChange()
	}
	fi, err := fileResult(res, info)
	if o == FollowUnchanged && err == nil {
		fi = FileInfo{}
	}
	return o, fi, err
}

// State is what the follower has seen. It may run while another goroutine
// checks (it waits for that check). After Close, or once the ring is
// closed, it is the state at that moment.
func (f *Follower) State() FollowState {
	c := f.core
	c.mu.RLock()
	defer c.mu.RUnlock()
	defer runtime.KeepAlive(f)
	if c.p == nil {
		return c.final
	}
	st, err := c.state()
	if err != nil { // not with a live follower and this version
		return FollowState{Err: err}
	}
	return st
}

// Close frees the follower; its ring is untouched. It waits for a check in
// progress. Closing twice, or after the ring was closed, is a no-op; calls
// after it return ErrClosed.
func (f *Follower) Close() error {
	f.core.free()
	r := f.ring
	r.followers.mu.Lock()
	delete(r.followers.set, f.core)
	r.followers.mu.Unlock()
	runtime.SetFinalizer(f, nil)
	return nil
}
