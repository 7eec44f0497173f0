package chring

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
)

// testPluginDir is the directory of bindings/testdata/bindtest_plugin.c as
// built by meson (which sets the variable); the test is skipped without it.
func testPluginDir(t *testing.T) string {
	dir := os.Getenv("CHRING_TEST_PLUGIN_DIR")
	if dir == "" {
		t.Skip("CHRING_TEST_PLUGIN_DIR is not set (run through meson test)")
	}
	return dir
}

// fnvSeeded is the fixture's hash: FNV-1a 64 with the seed XORed into the
// offset basis, rebuilt from Go's own FNV by undoing the basis.
func fnvSeeded(data []byte, seed uint64) uint64 {
	const basis, prime = 0xcbf29ce484222325, 0x100000001b3
	if seed == 0 {
		h := fnv.New64a()
		h.Write(data)
		return h.Sum64()
	}
	x := uint64(basis) ^ seed
	for _, b := range data {
		x = (x ^ uint64(b)) * prime
	}
	return x
}

func TestPluginDirReachesTheLibrary(t *testing.T) {
	dir := testPluginDir(t)
	const name = "bindtest_fnv1a"
	// Not findable without the directory...
	_, err := New(&Options{Hasher: name})
	wantStatus(t, err, ErrNoHasher, "chr_ring_new")

	// ...and found through Options.PluginDir.
	r, err := New(&Options{Hasher: name, Seed: 99, PluginDir: dir})
	mustOK(t, err)
	defer r.Close()
	mustOK(t, r.Add(Member{ID: []byte("only"), Weight: 1}))
	if n, err := r.Lookup([]byte("k")); err != nil || string(n.ID) != "only" {
		t.Fatalf("Lookup on the plugin's ring: %v %v", n, err)
	}
	for _, in := range [][]byte{nil, []byte("a"), {0, 0xff, 7}} {
		got, err := Hash(name, in, 99)
		mustOK(t, err)
		if want := fnvSeeded(in, 99); got != want {
			t.Fatalf("Hash(%q) = %#x, want %#x", in, got, want)
		}
	}
	digest, err := Digest(name, []byte("a"))
	mustOK(t, err)
	want := make([]byte, 8)
	binary.BigEndian.PutUint64(want, fnvSeeded([]byte("a"), 0))
	if !bytes.Equal(digest, want) {
		t.Fatalf("Digest = %x, want %x", digest, want)
	}

	infos, err := Hashers("")
	mustOK(t, err)
	var found *HasherInfo
	for i := range infos {
		if infos[i].Name == name {
			found = &infos[i]
		}
	}
	if found == nil || found.DigestSize != 8 || filepath.Dir(found.Origin) != filepath.Clean(dir) {
		t.Fatalf("Hashers() does not list the loaded plugin: %+v", found)
	}
}

func TestLoadPluginErrors(t *testing.T) {
	_, err := LoadPlugin(filepath.Join(t.TempDir(), "chring-missing.so"))
	wantStatus(t, err, ErrPluginFile, "chr_plugin_load")
	notSO := filepath.Join(t.TempDir(), "chring-text.so")
	mustOK(t, os.WriteFile(notSO, []byte("not an ELF file"), 0o644))
	_, err = LoadPlugin(notSO)
	wantStatus(t, err, ErrPluginNotSO, "chr_plugin_load")
	_, err = Digest("no-such-hasher", []byte("a"))
	wantStatus(t, err, ErrNoHasher, "chr_hasher_digest")

	infos, err := Hashers("")
	mustOK(t, err)
	for _, h := range infos {
		if h.DigestSize == 0 {
			_, err = Digest(h.Name, []byte("a"))
			wantStatus(t, err, ErrNotSupported, "chr_hasher_digest")
			return
		}
	}
	t.Logf("no hasher without a digest among %d: the ErrNotSupported case is not covered", len(infos))
}

func TestCompatPlacementOption(t *testing.T) {
	r, err := New(&Options{Placement: PlacementKetama})
	mustOK(t, err)
	defer r.Close()
	mustOK(t, r.Add(Member{ID: []byte("10.0.0.1:11211"), Weight: 1}))
	mustOK(t, r.Add(Member{ID: []byte("10.0.0.2:11211"), Weight: 1}))
	// libmemcached's weighted ketama: 160 points per server when weights are equal.
	if c, _ := r.TokenCount(); c != 320 {
		t.Fatalf("ketama placed %d points for 2 servers, want 320", c)
	}
	native := newRing(t, nil, 0)
	mustOK(t, native.Add(Member{ID: []byte("10.0.0.1:11211"), Weight: 1}))
	mustOK(t, native.Add(Member{ID: []byte("10.0.0.2:11211"), Weight: 1}))
	f1, _ := r.Fingerprint()
	f2, _ := native.Fingerprint()
	if f1 == f2 {
		t.Fatal("the placement option did not reach the library")
	}
	_, err = New(&Options{Placement: 77})
	wantStatus(t, err, ErrNotSupported, "chr_ring_new")
}
