// Memory for the token index's chunks: the heap, or slabs carved into
// blocks of a few size classes, of two kinds.
//
// - Huge: 2 MiB slabs, aligned and advised for huge pages, for big rings.
//   At 16M tokens a chunk is ~10 KB and a lookup reads one at random: from
//   the ordinary heap every read is also a TLB miss (on a VM, a two-level
//   page walk), and a first build faults 30,000 small pages. From slabs,
//   a ring's chunks sit on a few dozen huge pages.
// - Small: 64 KiB slabs, for the chunks an update makes in smaller rings.
//   An add at 1,000 nodes makes ~150 chunks of ~1.1 KB and frees as many,
//   which glibc's allocator serves from its bins, not its per-thread
//   cache: from slabs, adds and removes were 17-22% faster at 100-1,000
//   nodes (tests/bench/HISTORY.md, "Coarse buckets for big rings"). Not
//   huge pages: a small ring would hold 2 MiB for a few KB.
//
// Blocks are freed one by one as snapshots drop their chunks and reused
// by the next chunk of their class and kind; a slab goes back to the heap
// when its last block is freed, so a dropped ring leaves nothing behind.
// Classes are 16 a power of two (rounding wastes at most 1/16, ~3% on
// average); a block bigger than an eighth of its kind's slab comes from the
// heap.
//
// Thread-safe: a mutex a kind of slab, taken by writers making chunks and
// by whoever frees one, a writer or the thread dropping a snapshot (never
// by a lookup).
#pragma once

#include <cstddef>

namespace chring::chunk_pool {

// Where a block comes from: the heap (operator new, as it is), or slabs
// of 64 KiB or of one huge page.
enum class Source : unsigned { heap = 0, small_slabs = 1, huge_slabs = 2 };

// The size a block of `bytes` takes (its class; `bytes` from the heap).
size_t block_bytes(size_t bytes, Source source) noexcept;

// A block of at least `bytes` bytes (>= 16), 16-byte aligned, from
// `source`. Throws std::bad_alloc when a new slab (or the heap block)
// cannot be had.
void *allocate(size_t bytes, Source source);

// Gives back a block from allocate(bytes, source), with the same `bytes`
// and `source`.
void release(void *block, size_t bytes, Source source) noexcept;

// Slabs held, of both kinds (for tests: 0 once every block is released).
size_t slab_count() noexcept;

}  // namespace chring::chunk_pool
