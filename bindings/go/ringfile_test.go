package chring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleFile = "%%ring-file 1\n%%placement native\n%%hasher xxh3\n%%seed 7\n%%tokens-per-weight 40\n" +
	"cache-a 1 eu-west-1a\ncache-b 2\n"

func TestRingFileRoundTrip(t *testing.T) {
	r, info, err := NewRingFromText([]byte(sampleFile), "sample", nil)
	mustOK(t, err)
	defer r.Close()
	if info.Members != 2 || info.Added != 2 || !info.HasOptions || info.FormatVersion != 1 {
		t.Fatalf("info %+v", info)
	}
	fp, _ := r.Fingerprint()
	if info.Fingerprint != fp {
		t.Fatalf("info fingerprint %x, ring %x", info.Fingerprint, fp)
	}
	text, err := r.Export(ExportOptions{})
	mustOK(t, err)
	want := strings.Replace(sampleFile, "cache-a", fmt.Sprintf("%%%%fingerprint 0x%016x\ncache-a", fp), 1)
	if string(text) != want {
		t.Fatalf("canonical export differs:\n%q\n%q", text, want)
	}
	// The same ring built by calls exports the same bytes.
	b, err := New(&Options{Seed: 7, TokensPerWeight: 40})
	mustOK(t, err)
	defer b.Close()
	mustOK(t, b.Add(Member{ID: []byte("cache-b"), Weight: 2}))
	mustOK(t, b.Add(Member{ID: []byte("cache-a"), Weight: 1, Zone: []byte("eu-west-1a")}))
	other, err := b.Export(ExportOptions{})
	mustOK(t, err)
	if !bytes.Equal(other, text) {
		t.Fatalf("built ring exports %q", other)
	}
	withRev, err := b.Export(ExportOptions{WithRevision: true, Revision: 42})
	mustOK(t, err)
	if !bytes.Contains(withRev, []byte("\n%%revision 42\n")) {
		t.Fatalf("no revision in %q", withRev)
	}
	r2, info2, err := NewRingFromText(withRev, "", nil)
	mustOK(t, err)
	defer r2.Close()
	if !info2.HasRevision || info2.Revision != 42 || info2.Fingerprint != fp {
		t.Fatalf("info %+v", info2)
	}
	js, err := r.Export(ExportOptions{JSON: true})
	mustOK(t, err)
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("JSON twin %q: %v", js, err)
	}
	snap, err := r.Snapshot()
	mustOK(t, err)
	defer snap.Close()
	st, err := snap.Export(ExportOptions{})
	mustOK(t, err)
	if !bytes.Equal(st, text) {
		t.Fatalf("snapshot export %q", st)
	}
}

func TestRingFileApply(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ring.txt")
	r, _, err := NewRingFromText([]byte("a 1\nb 1\nc 1\n"), "", &Options{Seed: 3})
	mustOK(t, err)
	defer r.Close()
	mustOK(t, os.WriteFile(path, []byte("a 1\nb 3 zone-b\nd 1\n"), 0o644))
	info, err := r.ApplyFile(path)
	mustOK(t, err)
	if info.Added != 1 || info.Removed != 1 || info.Members != 3 {
		t.Fatalf("info %+v", info)
	}
	fresh, _, err := NewRingFromFile(path, &Options{Seed: 3})
	mustOK(t, err)
	defer fresh.Close()
	want, _ := fresh.Fingerprint()
	if info.Fingerprint != want {
		t.Fatalf("applied %x, fresh %x", info.Fingerprint, want)
	}
	// A file with other options is refused and changes nothing.
	_, err = r.ApplyText([]byte("%%seed 4\na 1\n"), "other")
	e := wantStatus(t, err, ErrOptions, "")
	if e.Line != 1 {
		t.Fatalf("line %d in %q", e.Line, e.Message)
	}
	if fp, _ := r.Fingerprint(); fp != want {
		t.Fatal("a refused file changed the ring")
	}
}

func TestRingFileErrors(t *testing.T) {
	_, err := (&Ring{}).ApplyText(nil, "")
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("closed ring: %v", err)
	}
	_, _, err = NewRingFromText([]byte("a 1\nb 1\na 2\n"), "dup.txt", nil)
	e := wantStatus(t, err, ErrFormat, "dup.txt:3:")
	if e.Line != 3 || e.OtherLine != 1 || string(e.Member) != "a" || e.Index != -1 {
		t.Fatalf("line %d, other line %d, member %q, index %d: want 3, 1, a, -1", e.Line, e.OtherLine,
			e.Member, e.Index)
	}
	_, _, err = NewRingFromFile(filepath.Join(t.TempDir(), "missing"), nil)
	wantStatus(t, err, ErrIO, "missing")
	_, _, err = NewRingFromFile(t.TempDir(), nil)
	wantStatus(t, err, ErrIO, "")
	_, _, err = NewRingFromText([]byte("a 1\n"), "bad\x00name", nil)
	wantStatus(t, err, ErrInvalid, "NUL")
	// An empty file is a ring with no members.
	r, info, err := NewRingFromText(nil, "", nil)
	mustOK(t, err)
	defer r.Close()
	if n, _ := r.NodeCount(); n != 0 || info.Members != 0 {
		t.Fatalf("empty file: %d members", n)
	}
	if !strings.Contains(ErrFormat.Error(), "") || ErrFormat == ErrIO {
		t.Fatal("statuses")
	}
}
