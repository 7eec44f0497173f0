package chring

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// events collects a watcher's reports for the test goroutine.
type events struct {
	mu   sync.Mutex
	list []WatchEvent
}

func (e *events) add(ev WatchEvent) { e.mu.Lock(); e.list = append(e.list, ev); e.mu.Unlock() }
func (e *events) count() int        { e.mu.Lock(); defer e.mu.Unlock(); return len(e.list) }
func (e *events) last() WatchEvent  { e.mu.Lock(); defer e.mu.Unlock(); return e.list[len(e.list)-1] }

// replaceFile writes a new version by rename, as a deploy tool would.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	mustOK(t, os.WriteFile(tmp, []byte(text), 0o644))
	mustOK(t, os.Rename(tmp, path))
}

// waitFor polls cond every 5ms until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatchFileKeepsLastGoodRing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring.txt")
	replaceFile(t, path, "a 1\nb 1\n")
	r := newRing(t, nil, 0)
	var ev events
	stop := WatchFile(r, path, 10*time.Millisecond, ev.add)
	defer stop()
	waitFor(t, "the first apply", func() bool { return ev.count() >= 1 })
	if e := ev.last(); e.Err != nil || e.Info.Added != 2 {
		t.Fatalf("first event %+v", e)
	}
	good, _ := r.Fingerprint()
	replaceFile(t, path, "a 1\nb 1\nb 2\n")
	waitFor(t, "the bad file's report", func() bool { return ev.count() >= 2 })
	e := ev.last()
	wantStatus(t, e.Err, ErrFormat, path+":3:")
	if fp, _ := r.Fingerprint(); fp != good {
		t.Fatal("a bad file changed the ring")
	}
	// Reported once per change, not at every poll.
	time.Sleep(100 * time.Millisecond)
	if n := ev.count(); n != 2 {
		t.Fatalf("%d events for 2 changes", n)
	}
	mustOK(t, os.Remove(path))
	waitFor(t, "the missing file's report", func() bool { return ev.count() >= 3 })
	wantStatus(t, ev.last().Err, ErrIO, "")
	replaceFile(t, path, "c 1\n")
	waitFor(t, "the recovery", func() bool { return ev.count() >= 4 })
	if e := ev.last(); e.Err != nil || e.Info.Removed != 2 || e.Info.Added != 1 {
		t.Fatalf("recovery event %+v", e)
	}
	stop()
	stop()
	n := ev.count()
	replaceFile(t, path, "d 1\n")
	time.Sleep(50 * time.Millisecond)
	if ev.count() != n {
		t.Fatal("an event after stop")
	}
}

// cOwners runs the C reference (testdata/owners_c.c, built by meson) on a
// ring file: its fingerprint and the owner of each "key:<i>".
func cOwners(t *testing.T, prog, path string, keys int) (string, []string) {
	t.Helper()
	out, err := exec.Command(prog, path, fmt.Sprint(keys)).CombinedOutput()
	if err != nil {
		t.Fatalf("owners_c %s: %v\n%s", path, err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != keys+1 {
		t.Fatalf("owners_c printed %d lines", len(lines))
	}
	return lines[0], lines[1:]
}

// A long-running program following a file that is rewritten several times
// (add, remove, reweight, zone change, a bad file) routes, after each
// change, every key to the owner the C library computes for that file.
func TestWatchFileFollowsLikeC(t *testing.T) {
	prog := os.Getenv("CHRING_OWNERS_C")
	if prog == "" {
		t.Skip("CHRING_OWNERS_C is not set (meson test sets it)")
	}
	const keys = 2000
	path := filepath.Join(t.TempDir(), "ring.txt")
	id := func(i int) string { return fmt.Sprintf("srv-%%%02x-%d", 0x80+i, i) } // an escaped byte
	versions := []struct {
		what, text string
		bad        bool
	}{
		{"initial", "%%ring-file 1\n%%seed 11\n" + id(0) + " 1\n" + id(1) + " 1\n" + id(2) + " 2\n", false},
		{"add", "%%ring-file 1\n%%seed 11\n" + id(0) + " 1\n" + id(1) + " 1\n" + id(2) + " 2\n" + id(3) + " 1 z\n", false},
		{"remove", "%%ring-file 1\n%%seed 11\n" + id(0) + " 1\n" + id(2) + " 2\n" + id(3) + " 1 z\n", false},
		{"bad", "%%ring-file 1\n%%seed 11\n" + id(0) + " 1\n" + id(0) + " 2\n", true},
		{"reweight", "%%ring-file 1\n%%seed 11\n" + id(0) + " 5\n" + id(2) + " 2\n" + id(3) + " 1 z\n", false},
		{"zone", "%%ring-file 1\n%%seed 11\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n", false},
		{"other options", "%%ring-file 1\n%%seed 12\n" + id(0) + " 5\n", true},
		{"add two", "%%ring-file 1\n%%seed 11\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n" + id(4) + " 1\n" + id(5) + " 3\n", false},
	}
	replaceFile(t, path, versions[0].text)
	r, _, err := NewRingFromFile(path, nil)
	mustOK(t, err)
	defer r.Close()
	var ev events
	stop := WatchFile(r, path, 20*time.Millisecond, ev.add)
	defer stop()
	var wantFP string
	var wantOwners []string
	for _, v := range versions {
		before := ev.count()
		replaceFile(t, path, v.text)
		if v.bad {
			waitFor(t, v.what+"'s report", func() bool { return ev.count() > before })
			if ev.last().Err == nil {
				t.Fatalf("%s: applied", v.what)
			}
		} else {
			wantFP, wantOwners = cOwners(t, prog, path, keys)
			fresh := mustExport(t, path)
			// The fingerprint does not cover zones: converged is the same
			// fingerprint and the same canonical file.
			waitFor(t, v.what+" applied", func() bool {
				fp, _ := r.Fingerprint()
				text, _ := r.Export(ExportOptions{})
				return fmt.Sprintf("%016x", fp) == wantFP && bytes.Equal(text, fresh)
			})
		}
		for i := 0; i < keys; i++ {
			node, err := r.Lookup(keyOf(i))
			mustOK(t, err)
			if got := hex.EncodeToString(node.ID); got != wantOwners[i] {
				t.Fatalf("%s: key:%d goes to %s, C says %s", v.what, i, got, wantOwners[i])
			}
		}
		if fp, _ := r.Fingerprint(); fmt.Sprintf("%016x", fp) != wantFP {
			t.Fatalf("%s: fingerprint %016x, C says %s", v.what, fp, wantFP)
		}
	}
}

func mustExport(t *testing.T, path string) []byte {
	r, _, err := NewRingFromFile(path, nil)
	mustOK(t, err)
	defer r.Close()
	b, err := r.Export(ExportOptions{})
	mustOK(t, err)
	return b
}
