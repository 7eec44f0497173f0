package chring

/*
#include <stdlib.h>
#include <time.h>
#include "shim.h"

// The library's calls with the handle as void *: cgo boxes a typed pointer
// to an incomplete struct on the Go heap at every call (shim.h); these
// compile to a jump.
static chr_status ref_snapshot_lookup(const void *snap, const void *key, size_t len,
                                      chr_node_view *out) {
    return chr_snapshot_lookup(snap, key, len, out);
}
static chr_status ref_ring_lookup(const void *ring, const void *key, size_t len, chr_node_ref *out) {
    return chr_ring_lookup(ring, key, len, out);
}
static chr_status ref_snapshot_lookup_batch(const void *snap, const void *const *keys,
                                            const size_t *lens, size_t n, uint32_t *out) {
    return chr_snapshot_lookup_batch(snap, keys, lens, n, out);
}
static void gochr_empty(void) {}

static int64_t gochr_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Under callgrind started with --collect-atstart=no, switches counting on
// or off for the calling thread (count_instructions.sh); a no-op anywhere
// else, and without valgrind's header.
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define GOCHR_CALLGRIND 1
#endif
#endif
static int gochr_count_toggle(void) {
#ifdef GOCHR_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
    return 1;
#else
    return 0;
#endif
}
*/
import "C"

import (
	"time"
	"unsafe"
)

// cRef makes the C calls the binding's benchmarks compare it with, as
// directly as cgo allows: no error-message shim, out-structs and batch arrays in C
// memory allocated once, the key passed as a Go pointer. Only the tests
// use it.
type cRef struct {
	view *C.chr_node_view
	ref  *C.chr_node_ref
	ptrs *unsafe.Pointer // batch keys, copied into C memory
	lens *C.size_t
	out  *C.uint32_t
	n    int
	mem  []unsafe.Pointer // every C block, for free
}

func (c *cRef) alloc(size int) unsafe.Pointer {
	p := C.calloc(1, C.size_t(size))
	if p == nil {
		panic("cRef: out of memory")
	}
	c.mem = append(c.mem, p)
	return p
}

// newCRef copies keys into C memory for cRef.batch.
func newCRef(keys [][]byte) *cRef {
	c := &cRef{n: len(keys)}
	c.view = (*C.chr_node_view)(c.alloc(C.sizeof_chr_node_view))
	c.ref = (*C.chr_node_ref)(c.alloc(C.sizeof_chr_node_ref))
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	data := unsafe.Slice((*byte)(c.alloc(total+1)), total+1)
	ptrs := unsafe.Slice((*unsafe.Pointer)(c.alloc(len(keys)*8+8)), len(keys))
	lens := unsafe.Slice((*C.size_t)(c.alloc(len(keys)*8+8)), len(keys))
	c.ptrs, c.lens = &ptrs[0], &lens[0]
	c.out = (*C.uint32_t)(c.alloc(len(keys)*4 + 4))
	off := 0
	for i, k := range keys {
		ptrs[i] = unsafe.Pointer(&data[off])
		lens[i] = C.size_t(len(k))
		off += copy(data[off:], k)
	}
	return c
}

func (c *cRef) free() {
	for _, p := range c.mem {
		C.free(p)
	}
	c.mem = nil
}

// snapshotLookup is chr_snapshot_lookup; it returns the owner's index.
func (c *cRef) snapshotLookup(s *Snapshot, key []byte) int {
	k, n := bytesArg(key)
	if C.ref_snapshot_lookup(unsafe.Pointer(s.ptr.p.Load()), k, n, c.view) != C.CHR_OK {
		panic("chr_snapshot_lookup failed")
	}
	return int(c.view.index)
}

// ringLookup is chr_ring_lookup; it returns the owner's index.
func (c *cRef) ringLookup(r *Ring, key []byte) int {
	k, n := bytesArg(key)
	if C.ref_ring_lookup(unsafe.Pointer(r.ptr.p.Load()), k, n, c.ref) != C.CHR_OK {
		panic("chr_ring_lookup failed")
	}
	return int(c.ref.index)
}

// batch is chr_snapshot_lookup_batch of the C copies of keys
// [from, from+count); it returns the index of the first key's owner.
func (c *cRef) batch(s *Snapshot, from, count int) int {
	ptrs := unsafe.Add(unsafe.Pointer(c.ptrs), from*8)
	lens := unsafe.Add(unsafe.Pointer(c.lens), from*8)
	if C.ref_snapshot_lookup_batch(unsafe.Pointer(s.ptr.p.Load()), (*unsafe.Pointer)(ptrs), (*C.size_t)(lens), C.size_t(count), c.out) != C.CHR_OK {
		panic("chr_snapshot_lookup_batch failed")
	}
	return int(*c.out)
}

// countToggle switches callgrind's counting for this thread (see
// gochr_count_toggle); false when built without valgrind's header.
func countToggle() bool { return C.gochr_count_toggle() != 0 }

// threadCPUTime is the calling thread's CPU time (lock the goroutine to
// its thread around a measurement).
func threadCPUTime() time.Duration { return time.Duration(C.gochr_thread_cpu_ns()) }

// emptyCall is a cgo call of a C function that does nothing.
func emptyCall() { C.gochr_empty() }
