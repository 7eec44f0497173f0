package chring

import (
	"errors"
	"sync"
	"time"
)

// WatchEvent reports one look at a watched file that found it changed:
// either it was applied (Err nil, Info says what changed) or it was not
// (Err says why, with the file and line for a malformed file) and the ring
// kept its last good state.
type WatchEvent struct {
	Path string
	Info FileInfo
	Err  error
}

// WatchFile follows the ring file at path from a goroutine, with a
// Follower: it applies the file at once, then checks it every interval
// (at least 10ms) and applies it again when its stamp (device, inode,
// size, modification and change times) changed. A file that fails to apply
// leaves the ring as it was and is reported once. onEvent (may be nil) is
// called from the watching goroutine once per change seen (an apply or a
// refusal), never concurrently with itself; a follower that cannot be made
// (a NUL byte in path) is reported once and ends the watch. Writers should
// replace the file by rename so that a reader never sees it half written;
// a rename also changes the inode, so a rewrite within the file system's
// timestamp granularity is still seen.
//
// The returned stop function ends the watch and waits for the goroutine
// (and any onEvent call in progress) to finish; calling it again is a
// no-op. Close the ring after stop returned; closing it first ends the
// watch too (Ring.Close frees the follower, waiting for a check in
// progress), and stop still waits for the goroutine.
func WatchFile(ring *Ring, path string, interval time.Duration, onEvent func(WatchEvent)) (stop func()) {
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	report := func(ev WatchEvent) {
		if onEvent != nil {
			onEvent(ev)
		}
	}
	// Made here, not in the goroutine: a Ring.Close after WatchFile
	// returned always finds it.
	f, err := NewFollower(ring, path)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				report(WatchEvent{Path: path, Err: err})
			}
			return
		}
		defer f.Close()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			outcome, info, err := f.Check()
			if errors.Is(err, ErrClosed) {
				return
			}
			if outcome != FollowUnchanged || err != nil {
				report(WatchEvent{Path: path, Info: info, Err: err})
			}
			select {
			case <-done:
				return
			case <-ticker.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
