package chring

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// newRing is a ring with `count` members "node-<i>" of weight 1 + i%3,
// closed at the end of the test.
func newRing(t testing.TB, opts *Options, count int) *Ring {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	for i := 0; i < count; i++ {
		mustOK(t, r.Add(Member{ID: nodeID(i), Weight: uint32(1 + i%3), Tag: uint64(i)}))
	}
	return r
}

// newSnapshot is newRing's ring and its snapshot, closed after the test.
func newSnapshot(t testing.TB, opts *Options, count int) (*Ring, *Snapshot) {
	t.Helper()
	r := newRing(t, opts, count)
	snap, err := r.Snapshot()
	mustOK(t, err)
	t.Cleanup(func() { snap.Close() })
	return r, snap
}

func nodeID(i int) []byte { return []byte(fmt.Sprintf("node-%d", i)) }

func keyOf(i int) []byte { return []byte(fmt.Sprintf("key:%d", i)) }

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantStatus checks that err is an *Error with `status` whose message
// names the C function `fn`.
func wantStatus(t testing.TB, err error, status Status, fn string) *Error {
	t.Helper()
	if !errors.Is(err, status) {
		t.Fatalf("want %v (%d), got %v", status, int(status), err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *chring.Error, got %T", err)
	}
	if fn != "" && !strings.Contains(e.Message, fn) {
		t.Fatalf("message %q does not name %s", e.Message, fn)
	}
	return e
}

func sameNode(a, b Node) bool {
	return bytes.Equal(a.ID, b.ID) && bytes.Equal(a.Zone, b.Zone) && a.Tag == b.Tag &&
		a.Weight == b.Weight && a.Tokens == b.Tokens && a.Index == b.Index && a.Ownership == b.Ownership
}
