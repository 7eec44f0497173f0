package chring

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// The ring file's statuses (docs/ring-file.md).
const (
	ErrFormat  Status = C.CHR_EFORMAT  // a malformed ring file; Error.Line is the line at fault
	ErrOptions Status = C.CHR_EOPTIONS // the file's options differ from the ring's
	ErrIO      Status = C.CHR_EIO      // the file cannot be read (missing, a directory, ...)
)

// Limits of ring files.
const (
	RingFileFormatVersion = C.CHR_RINGFILE_FORMAT_VERSION
	RingFileLineMax       = C.CHR_RINGFILE_LINE_MAX
	RingFileSizeMax       = C.CHR_RINGFILE_SIZE_MAX
)

// FileInfo is what a ring file said and what loading it did
// (chr_ringfile_info).
type FileInfo struct {
	HasRevision    bool   // the file has a %%revision
	Revision       uint64 // its value; 0 when absent
	HasFingerprint bool   // the file has a %%fingerprint, and it matched
	HasOptions     bool   // the file has an option directive
	Fingerprint    uint64 // the ring's fingerprint after the call
	FormatVersion  uint32 // the %%ring-file value; 1 when absent
	Members        int    // member lines in the file
	Added          int    // members added (creation: every member)
	Removed        int    // members removed
	Reweighted     int    // members whose weight changed
	Replaced       int    // members removed and added again (zone or position changed)
	// The availability the file carried (%%down, %%panic-threshold,
	// %%availability) and the ring's state after the call.
	HasAvailability bool   // the file has one of those directives
	Down            int    // %%down lines in the file
	PanicThreshold  uint32 // the %%panic-threshold value (PanicThresholdDefault when absent)
	Availability    uint64 // the ring's availability digest after the call
}

func newCInfo() (*C.chr_ringfile_info, error) {
	info := (*C.chr_ringfile_info)(C.calloc(1, C.sizeof_chr_ringfile_info))
	if info == nil {
		return nil, &Error{Status: ErrNoMemory, Index: -1, Message: "chring: out of memory"}
	}
	if err := check(C.gochr_result{status: C.chr_ringfile_info_init(info, C.CHR_RINGFILE_INFO_VERSION)}); err != nil {
		C.free(unsafe.Pointer(info))
		return nil, err
	}
	return info, nil
}

// fileResult turns a ring-file call's result into FileInfo and error,
// freeing info; a failure carries the line at fault.
func fileResult(res C.gochr_result, info *C.chr_ringfile_info) (FileInfo, error) {
	defer C.free(unsafe.Pointer(info))
	if res.status != C.CHR_OK {
		e := toError(res, -1)
		e.Line = int(info.error_line)
		return FileInfo{}, e
	}
	return FileInfo{
		HasRevision:    info.flags&C.CHR_RINGFILE_HAS_REVISION != 0,
		Revision:       uint64(info.revision),
		HasFingerprint: info.flags&C.CHR_RINGFILE_HAS_FINGERPRINT != 0,
		HasOptions:     info.flags&C.CHR_RINGFILE_HAS_OPTIONS != 0,
		Fingerprint:    uint64(info.fingerprint),
		FormatVersion:  uint32(info.format_version),
		Members:        int(info.members),
		Added:          int(info.added),
		Removed:        int(info.removed),
		Reweighted:     int(info.reweighted),
		Replaced:       int(info.replaced),

		HasAvailability: info.flags&C.CHR_RINGFILE_HAS_AVAILABILITY != 0,
		Down:            int(info.down),
		PanicThreshold:  uint32(info.panic_threshold),
		Availability:    uint64(info.availability),
	}, nil
}

// NewRingFromText creates a ring from a ring file's bytes. name appears in
// error messages ("" = "<text>"); opts (nil = defaults) are the options of
// a file without option directives and give the plugin directory.
// Errors: ErrFormat (with Error.Line), ErrNoHasher, ErrInvalid, ...
func NewRingFromText(text []byte, name string, opts *Options) (*Ring, FileInfo, error) {
	cname, err := cStringOrNil(name, "NewRingFromText: name")
	if err != nil {
		return nil, FileInfo{}, err
	}
	defer C.free(unsafe.Pointer(cname))
	return newRingFrom(opts, "NewRingFromText", func(o *C.chr_options, out **C.chr_ring, info *C.chr_ringfile_info) C.gochr_result {
		t, n := bytesArg(text)
		return C.gochr_ring_new_from_text(t, n, cname, o, out, info)
	})
}

// NewRingFromFile creates a ring from the ring file at path (a regular
// file of at most RingFileSizeMax bytes), as NewRingFromText; a file that
// cannot be read is ErrIO.
func NewRingFromFile(path string, opts *Options) (*Ring, FileInfo, error) {
	cpath, err := cString(path, "NewRingFromFile: path")
	if err != nil {
		return nil, FileInfo{}, err
	}
	defer C.free(unsafe.Pointer(cpath))
	return newRingFrom(opts, "NewRingFromFile", func(o *C.chr_options, out **C.chr_ring, info *C.chr_ringfile_info) C.gochr_result {
		return C.gochr_ring_new_from_file(cpath, o, out, info)
	})
}

func newRingFrom(opts *Options, who string,
	call func(*C.chr_options, **C.chr_ring, *C.chr_ringfile_info) C.gochr_result) (*Ring, FileInfo, error) {
	var fi FileInfo
	var p *C.chr_ring
	err := withCOptions(opts, who, func(o *C.chr_options) error {
		info, err := newCInfo()
		if err != nil {
			return err
		}
		// out is C memory: cgo forbids passing a Go pointer to a Go pointer.
		out := (**C.chr_ring)(C.calloc(1, C.size_t(unsafe.Sizeof(p))))
		defer C.free(unsafe.Pointer(out))
		fi, err = fileResult(call(o, out, info), info)
		p = *out
		return err
	})
	if err != nil {
		return nil, FileInfo{}, err
	}
	return wrapRing(p), fi, nil
}

// ApplyText makes the ring the one the file describes, as one atomic batch
// (adds, removes, reweights, zone changes). A file whose options differ
// from the ring's is ErrOptions; on any error the ring is unchanged.
func (r *Ring) ApplyText(text []byte, name string) (FileInfo, error) {
	p, err := r.handle()
	if err != nil {
		return FileInfo{}, err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	cname, err := cStringOrNil(name, "ApplyText: name")
	if err != nil {
		return FileInfo{}, err
	}
	defer C.free(unsafe.Pointer(cname))
	info, err := newCInfo()
	if err != nil {
		return FileInfo{}, err
	}
	t, n := bytesArg(text)
	return fileResult(C.gochr_ring_apply_text(unsafe.Pointer(p), t, n, cname, info), info)
}

// ApplyFile is ApplyText with the file at path (ErrIO if it cannot be read).
func (r *Ring) ApplyFile(path string) (FileInfo, error) {
	p, err := r.handle()
	if err != nil {
		return FileInfo{}, err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	cpath, err := cString(path, "ApplyFile: path")
	if err != nil {
		return FileInfo{}, err
	}
	defer C.free(unsafe.Pointer(cpath))
	info, err := newCInfo()
	if err != nil {
		return FileInfo{}, err
	}
	return fileResult(C.gochr_ring_apply_file(unsafe.Pointer(p), cpath, info), info)
}

// ExportOptions select what Export writes. The zero value is the canonical
// text without a %%revision.
type ExportOptions struct {
	JSON         bool   // the JSON twin instead of the text
	WithRevision bool   // write a %%revision directive
	Revision     uint64 // its value
}

func (o ExportOptions) flags() C.uint32_t {
	var f C.uint32_t
	if o.JSON {
		f |= C.CHR_EXPORT_JSON
	}
	if o.WithRevision {
		f |= C.CHR_EXPORT_REVISION
	}
	return f
}

// Export returns the ring's canonical ring file (or its JSON twin): the
// same ring gives the same bytes in every language.
func (r *Ring) Export(o ExportOptions) ([]byte, error) {
	p, err := r.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(r)
	return exportWith(func(buf unsafe.Pointer, capacity C.size_t, n *C.size_t) C.gochr_result {
		return C.gochr_ring_export(unsafe.Pointer(p), o.flags(), C.uint64_t(o.Revision), buf, capacity, n)
	})
}

// Export is Ring.Export for this snapshot.
func (s *Snapshot) Export(o ExportOptions) ([]byte, error) {
	p, err := s.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(s)
	return exportWith(func(buf unsafe.Pointer, capacity C.size_t, n *C.size_t) C.gochr_result {
		return C.gochr_snapshot_export(unsafe.Pointer(p), o.flags(), C.uint64_t(o.Revision), buf, capacity, n)
	})
}

// exportWith asks the size, then exports into C memory; a writer may grow
// the ring in between, in which case the library reports CHR_ERANGE and the
// new size.
func exportWith(call func(unsafe.Pointer, C.size_t, *C.size_t) C.gochr_result) ([]byte, error) {
	n := (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0)))))
	defer C.free(unsafe.Pointer(n))
	res := call(nil, 0, n)
	for {
		if res.status != C.CHR_OK && res.status != C.CHR_ERANGE {
			return nil, check(res)
		}
		C.free(unsafe.Pointer(res.failure))
		capacity := *n + 1
		buf := C.malloc(capacity)
		if buf == nil {
			return nil, &Error{Status: ErrNoMemory, Index: -1, Message: "chring: out of memory"}
		}
		res = call(buf, capacity, n)
		if res.status == C.CHR_OK {
			out := C.GoBytes(buf, C.int(*n))
			C.free(buf)
			return out, nil
		}
		C.free(buf)
	}
}
