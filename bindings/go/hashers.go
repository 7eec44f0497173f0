package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// HasherInfo describes one available hasher.
type HasherInfo struct {
	Name        string
	Description string
	Origin      string // "builtin", "registered", or the plugin file's path
	DigestSize  int    // 0 if the hasher has no full digest
}

// cString is a C copy of s (free it with C.free), or ErrInvalid if s holds
// a NUL byte, which would silently cut the name short in C.
func cString(s, what string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Status: ErrInvalid, Index: -1, Message: what + " contains a NUL byte"}
	}
	return C.CString(s), nil
}

// cStringOrNil is cString, or NULL for "".
func cStringOrNil(s, what string) (*C.char, error) {
	if s == "" {
		return nil, nil
	}
	return cString(s, what)
}

// LoadPlugin loads the hash plugin at path and registers its hashers
// (all or nothing), returning how many it registered. Plugins next to the
// library, in CHRING_PLUGIN_PATH and in Options.PluginDir are found
// without it; this is for a plugin file anywhere else.
func LoadPlugin(path string) (int, error) {
	p, err := cString(path, "LoadPlugin: path")
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(p))
	var loaded C.size_t
	err = check(C.gochr_plugin_load(p, &loaded))
	return int(loaded), err
}

// Hashers lists the available hashers after discovering plugins in the
// default places and in pluginDir ("" for none).
func Hashers(pluginDir string) ([]HasherInfo, error) {
	dir, err := cStringOrNil(pluginDir, "Hashers: pluginDir")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(dir))
	var count C.size_t
	for {
		infos := make([]C.chr_hasher_info, count)
		var out *C.chr_hasher_info
		if len(infos) > 0 {
			out = &infos[0]
		}
		res := C.gochr_hasher_list(dir, out, C.size_t(len(infos)), &count)
		if res.status == C.CHR_ERANGE && int(count) > len(infos) {
			C.free(unsafe.Pointer(res.failure))
			continue // a plugin appeared between asking the size and listing
		}
		if err := check(res); err != nil {
			return nil, err
		}
		list := make([]HasherInfo, count)
		for i := range list {
			list[i] = HasherInfo{
				Name:        C.GoString(infos[i].name),
				Description: C.GoString(infos[i].description),
				Origin:      C.GoString(infos[i].origin),
				DigestSize:  int(infos[i].digest_size),
			}
		}
		return list, nil
	}
}

// Hash hashes data with the named hasher and seed, as a ring with that
// hasher and seed hashes a key.
func Hash(hasher string, data []byte, seed uint64) (uint64, error) {
	name, err := cString(hasher, "Hash: hasher")
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(name))
	d, n := bytesArg(data)
	var out C.uint64_t
	err = check(C.gochr_hasher_hash(name, d, n, C.uint64_t(seed), &out))
	return uint64(out), err
}

// Digest is the named hasher's full digest of data (e.g. the 16 bytes of
// MD5); ErrNotSupported for a hasher without one.
func Digest(hasher string, data []byte) ([]byte, error) {
	name, err := cString(hasher, "Digest: hasher")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(name))
	d, n := bytesArg(data)
	var out [C.CHR_DIGEST_MAX]byte
	var size C.size_t
	err = check(C.gochr_hasher_digest(name, d, n, (*C.uchar)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &size))
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), out[:size]...), nil
}
