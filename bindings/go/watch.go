package chring

import (
	"errors"
	"os"
	"sync"
	"syscall"
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

// fileStamp is what the watcher compares between two looks at the file.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64 // nanoseconds
	missing  string
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{missing: err.Error()}
	}
	s := fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return s
}

// WatchFile follows the ring file at path: it applies it to ring at once,
// then looks at the file's inode, size and modification time every
// interval (at least 10ms) and applies it again when one of them changed.
// A file that fails to apply leaves the ring as it was. onEvent (may be
// nil) is called from the watching goroutine once per change seen, never
// concurrently with itself. Writers should replace the file by rename so
// that a reader never sees it half written; a rename also changes the
// inode, so a rewrite within the file system's timestamp granularity is
// still seen.
//
// The returned stop function ends the watch and waits for the goroutine
// (and any onEvent call in progress) to finish; calling it again is a
// no-op. Close the ring only after stop returned.
func WatchFile(ring *Ring, path string, interval time.Duration, onEvent func(WatchEvent)) (stop func()) {
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last fileStamp
		first := true
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			if now := stampOf(path); first || now != last {
				first = false
				last = now
				ev := WatchEvent{Path: path}
				ev.Info, ev.Err = ring.ApplyFile(path)
				if errors.Is(ev.Err, ErrClosed) {
					return
				}
				if onEvent != nil {
					onEvent(ev)
				}
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
