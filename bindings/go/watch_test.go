package chring

import (
	"bytes"
	"encoding/hex"
	"errors"
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

const (
	followGood1 = "%%revision 7\na 1\nb 2\n"
	followGood2 = "%%revision 8\na 1\nb 2\nc 1\n"
)

// newFollower follows path for r, closed at the end of the test.
func newFollower(t *testing.T, r *Ring, path string) *Follower {
	t.Helper()
	f, err := NewFollower(r, path)
	mustOK(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// checkOnce runs one Check that must end with this outcome, and no error
// unless it is FollowRefused.
func checkOnce(t *testing.T, f *Follower, want Outcome) (FileInfo, error) {
	t.Helper()
	got, info, err := f.Check()
	if got != want || (err != nil) != (want == FollowRefused) {
		t.Fatalf("Check: %v, %v; want %v", got, err, want)
	}
	return info, err
}

func textFingerprint(t *testing.T, text string) uint64 {
	t.Helper()
	r, _, err := NewRingFromText([]byte(text), "", nil)
	mustOK(t, err)
	defer r.Close()
	fp, err := r.Fingerprint()
	mustOK(t, err)
	return fp
}

// The first check applies the file whatever its stamp; a check of the same
// file does nothing and reports nothing.
func TestFollowerAppliesThenUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	replaceFile(t, path, followGood1)
	r := newRing(t, nil, 0)
	f := newFollower(t, r, path)
	if st := f.State(); st.Checks != 0 || st.LastOutcome != FollowUnchanged || st.Err != nil {
		t.Fatalf("state before the first check: %+v", st)
	}

	info, _ := checkOnce(t, f, FollowApplied)
	if info.Added != 2 || !info.HasRevision || info.Revision != 7 {
		t.Fatalf("first check's info %+v", info)
	}
	fp, _ := r.Fingerprint()
	if fp != textFingerprint(t, followGood1) || info.Fingerprint != fp {
		t.Fatalf("fingerprint %016x, info says %016x", fp, info.Fingerprint)
	}
	st := f.State()
	if st.Applied != 1 || !st.AppliedHasRevision || st.AppliedRevision != 7 || st.AppliedFingerprint != fp ||
		st.LastOutcome != FollowApplied || st.Err != nil {
		t.Fatalf("state after the first check: %+v", st)
	}

	if info, _ := checkOnce(t, f, FollowUnchanged); info != (FileInfo{}) {
		t.Fatalf("an unchanged file's info %+v", info)
	}
	replaceFile(t, path, followGood2)
	if info, _ := checkOnce(t, f, FollowApplied); info.Added != 1 || info.Removed != 0 || info.Revision != 8 {
		t.Fatalf("second file's info %+v", info)
	}
	checkOnce(t, f, FollowUnchanged)
	st = f.State()
	if st.Checks != 4 || st.Applied != 2 || st.Refused != 0 || st.AppliedRevision != 8 ||
		st.LastOutcome != FollowUnchanged || st.Message != "" {
		t.Fatalf("state after four checks: %+v", st)
	}
	if fp, _ := r.Fingerprint(); fp != textFingerprint(t, followGood2) {
		t.Fatal("the ring is not the second file")
	}
}

// A malformed replacement is refused once, with its line; the ring keeps
// its fingerprint; the state says why and what the file claimed to be.
func TestFollowerRefusesOnceAndKeepsTheRing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	replaceFile(t, path, followGood1)
	r := newRing(t, nil, 0)
	f := newFollower(t, r, path)
	checkOnce(t, f, FollowApplied)
	good, _ := r.Fingerprint()

	replaceFile(t, path, "%%revision 9\n%%fingerprint 0x0123456789abcdef\na 1\nb x\n")
	_, err := checkOnce(t, f, FollowRefused)
	e := wantStatus(t, err, ErrFormat, path+":4: ")
	if e.Line != 4 {
		t.Fatalf("refusal at line %d, want 4", e.Line)
	}
	if fp, _ := r.Fingerprint(); fp != good {
		t.Fatal("a refused file changed the ring")
	}
	st := f.State()
	se := wantStatus(t, st.Err, ErrFormat, path+":4: ")
	if se.Line != 4 || st.Line != 4 || st.Message != e.Message || se.Message != e.Message {
		t.Fatalf("state's refusal %+v (%+v), check's %+v", st, se, e)
	}
	if !st.RefusedHasRevision || st.RefusedRevision != 9 || !st.RefusedHasFingerprint ||
		st.RefusedFingerprint != 0x0123456789abcdef || st.Refused != 1 || st.LastOutcome != FollowRefused {
		t.Fatalf("state of the refused file %+v", st)
	}
	if st.AppliedRevision != 7 || st.AppliedFingerprint != good || st.Applied != 1 {
		t.Fatalf("state of the applied file %+v", st)
	}

	// Once: the same bad file is not reported again, the state still says why.
	checkOnce(t, f, FollowUnchanged)
	st = f.State()
	if st.Refused != 1 || st.LastOutcome != FollowUnchanged || !errors.Is(st.Err, ErrFormat) || st.RefusedRevision != 9 {
		t.Fatalf("state after a second look at the bad file %+v", st)
	}

	// Options that differ from the ring's: refused, nothing declared.
	replaceFile(t, path, "%%placement ketama\na:11211 1\n")
	_, err = checkOnce(t, f, FollowRefused)
	wantStatus(t, err, ErrOptions, "")
	if st := f.State(); st.RefusedHasRevision || st.RefusedHasFingerprint || !errors.Is(st.Err, ErrOptions) {
		t.Fatalf("state of a file with other options %+v", st)
	}

	// A good file clears the refusal.
	replaceFile(t, path, followGood2)
	checkOnce(t, f, FollowApplied)
	if st := f.State(); st.Err != nil || st.Line != 0 || st.Message != "" || st.RefusedHasRevision || st.Refused != 2 {
		t.Fatalf("state after recovery %+v", st)
	}
}

// A missing file is ErrIO once; the ring keeps what it had; the file's
// return is applied.
func TestFollowerMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	r := newRing(t, nil, 0)
	f := newFollower(t, r, path)
	_, err := checkOnce(t, f, FollowRefused)
	if e := wantStatus(t, err, ErrIO, path); e.Line != 0 {
		t.Fatalf("a missing file at line %d", e.Line)
	}
	checkOnce(t, f, FollowUnchanged)

	replaceFile(t, path, followGood1)
	checkOnce(t, f, FollowApplied)
	good, _ := r.Fingerprint()
	mustOK(t, os.Remove(path))
	_, err = checkOnce(t, f, FollowRefused)
	wantStatus(t, err, ErrIO, path)
	checkOnce(t, f, FollowUnchanged)
	if fp, _ := r.Fingerprint(); fp != good {
		t.Fatal("a missing file changed the ring")
	}
	if st := f.State(); !errors.Is(st.Err, ErrIO) || st.Refused != 2 || st.AppliedRevision != 7 {
		t.Fatalf("state while the file is missing %+v", st)
	}
	replaceFile(t, path, followGood2)
	checkOnce(t, f, FollowApplied)
	if st := f.State(); st.Err != nil || st.Applied != 2 {
		t.Fatalf("state after the file came back %+v", st)
	}
}

// A follower's checks go through the Ring's change count: one that applies
// a file makes Lookup reread the node table, one that applies nothing
// leaves the table current.
func TestFollowerKeepsRingLookupsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	replaceFile(t, path, "a 1\nb 1\n")
	r := newRing(t, nil, 0)
	f := newFollower(t, r, path)
	checkOnce(t, f, FollowApplied)
	_, _ = r.Lookup([]byte("k")) // reads the node table
	if tab, _ := r.current(); tab == nil {
		t.Fatal("no current node table after a lookup")
	}
	checkOnce(t, f, FollowUnchanged)
	if tab, _ := r.current(); tab == nil {
		t.Fatal("a check that applied nothing made the node table stale")
	}
	replaceFile(t, path, "a 1\nc 1\n") // b's index now is c's
	checkOnce(t, f, FollowApplied)
	fresh, _, err := NewRingFromFile(path, nil)
	mustOK(t, err)
	defer fresh.Close()
	for i := 0; i < 200; i++ {
		got, err := r.Lookup(keyOf(i))
		mustOK(t, err)
		want, err := fresh.Lookup(keyOf(i))
		mustOK(t, err)
		if !bytes.Equal(got.ID, want.ID) {
			t.Fatalf("key:%d goes to %s after the apply, want %s", i, got.ID, want.ID)
		}
	}
}

// One goroutine checks while the file flips between two memberships,
// others read the follower's state and look keys up (run with -race): no
// data race, every lookup finds a member of one of the files, and once the
// checks stop the ring routes as the last file says.
func TestFollowerStateWhileChecking(t *testing.T) {
	const flips = 151 // odd: the ring ends on the second file
	path := filepath.Join(t.TempDir(), "ring")
	files := []string{"a 1\nb 1\n", "a 1\nc 1\n"}
	replaceFile(t, path, files[0])
	r := newRing(t, nil, 0)
	f := newFollower(t, r, path)
	checkOnce(t, f, FollowApplied)
	_, _ = r.Lookup(keyOf(0)) // the node table of the first file

	done := make(chan struct{})
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the state reader
		defer wg.Done()
		for last := uint64(0); ; {
			select {
			case <-done:
				return
			default:
			}
			st := f.State()
			if st.Err != nil || st.Checks < last || st.Applied == 0 {
				errs <- fmt.Errorf("state %+v after %d checks", st, last)
				return
			}
			last = st.Checks
		}
	}()
	go func() { // the key reader
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			n, err := r.Lookup(keyOf(i))
			if err != nil || len(n.ID) != 1 || !bytes.Contains([]byte("abc"), n.ID) {
				errs <- fmt.Errorf("key:%d: %q, %v", i, n.ID, err)
				return
			}
		}
	}()
	for i := 1; i <= flips; i++ {
		replaceFile(t, path, files[i%2])
		if o, _, err := f.Check(); o != FollowApplied || err != nil {
			t.Errorf("flip %d: %v, %v", i, o, err)
			break
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := f.State(); st.Checks != flips+1 || st.Applied != flips+1 {
		t.Fatalf("state after the flips %+v", st)
	}
	fresh, _, err := NewRingFromText([]byte(files[flips%2]), "", nil)
	mustOK(t, err)
	defer fresh.Close()
	for i := 0; i < 200; i++ {
		got, _ := r.Lookup(keyOf(i))
		want, _ := fresh.Lookup(keyOf(i))
		if !bytes.Equal(got.ID, want.ID) {
			t.Fatalf("key:%d goes to %s, the last file says %s", i, got.ID, want.ID)
		}
	}
}

// Ring.Close frees the ring's followers first: their calls then return
// ErrClosed and the last state, and a watch on the ring ends.
func TestFollowerAfterRingClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	replaceFile(t, path, followGood1)
	r, err := New(nil)
	mustOK(t, err)
	f, err := NewFollower(r, path)
	mustOK(t, err)
	checkOnce(t, f, FollowApplied)
	var ev events
	stop := WatchFile(r, path, 10*time.Millisecond, ev.add)
	waitFor(t, "the watch's first apply", func() bool { return ev.count() >= 1 })

	mustOK(t, r.Close())
	if o, _, err := f.Check(); o != FollowUnchanged || err != ErrClosed {
		t.Fatalf("Check after Ring.Close: %v, %v", o, err)
	}
	if st := f.State(); st.Checks != 1 || st.Applied != 1 || st.AppliedRevision != 7 {
		t.Fatalf("State after Ring.Close: %+v", st)
	}
	mustOK(t, f.Close())
	mustOK(t, f.Close())
	ended := make(chan struct{})
	go func() { stop(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end with its ring")
	}
	if _, err := NewFollower(r, path); err != ErrClosed {
		t.Fatalf("NewFollower on a closed ring: %v", err)
	}
	if _, err := NewFollower(newRing(t, nil, 0), "a\x00b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewFollower with a NUL in the path: %v", err)
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
// (add, remove, reweight, zone change, a bad file, members marked down,
// unmarked, panic) routes, after each change, every key to the owner the C
// library computes for that file, with its availability digest.
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
		// Availability: the same members, keys of the down ones served by
		// their next replica; then unmarked; then panic (the marks ignored).
		{"mark down", "%%ring-file 1\n%%seed 11\n%%down " + id(5) + "\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n" + id(4) + " 1\n" + id(5) + " 3\n", false},
		{"mark two", "%%ring-file 1\n%%seed 11\n%%down " + id(5) + "\n%%down " + id(3) + "\n%%panic-threshold 80\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n" + id(4) + " 1\n" + id(5) + " 3\n", false},
		{"unmark", "%%ring-file 1\n%%seed 11\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n" + id(4) + " 1\n" + id(5) + " 3\n", false},
		{"panic", "%%ring-file 1\n%%seed 11\n%%down " + id(0) + "\n%%down " + id(2) + "\n" + id(0) + " 5\n" + id(2) + " 2 y\n" + id(3) + " 1 z\n" + id(4) + " 1\n" + id(5) + " 3\n", false},
	}
	downIn := map[string][]int{"mark down": {5}, "mark two": {5, 3}} // the ids no key may go to
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
				text, _ := r.Export(ExportOptions{})
				return ringState(r) == wantFP && bytes.Equal(text, fresh)
			})
		}
		for _, down := range downIn[v.what] {
			for i, owner := range wantOwners {
				if owner == fmt.Sprintf("7372762d%02x2d%x", 0x80+down, fmt.Sprint(down)) { // "srv-" byte "-" i
					t.Fatalf("%s: C routes key:%d to %s, marked down", v.what, i, id(down))
				}
			}
		}
		if a, err := r.Availability(); err != nil || a.Panic != (v.what == "panic") {
			t.Fatalf("%s: availability %+v, %v", v.what, a, err)
		}
		for i := 0; i < keys; i++ {
			node, err := r.Lookup(keyOf(i))
			mustOK(t, err)
			if got := hex.EncodeToString(node.ID); got != wantOwners[i] {
				t.Fatalf("%s: key:%d goes to %s, C says %s", v.what, i, got, wantOwners[i])
			}
		}
		if got := ringState(r); got != wantFP {
			t.Fatalf("%s: fingerprint and availability digest %s, C says %s", v.what, got, wantFP)
		}
	}
}

// ringState is the ring's fingerprint and availability digest as owners_c
// prints them.
func ringState(r *Ring) string {
	fp, _ := r.Fingerprint()
	a, _ := r.Availability()
	return fmt.Sprintf("%016x %016x", fp, a.Digest)
}

func mustExport(t *testing.T, path string) []byte {
	r, _, err := NewRingFromFile(path, nil)
	mustOK(t, err)
	defer r.Close()
	b, err := r.Export(ExportOptions{})
	mustOK(t, err)
	return b
}
