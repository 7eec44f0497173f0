// Memory for the token index's chunks of a big ring: 2 MiB slabs, aligned
// and advised for huge pages, carved into blocks of a few size classes.
//
// At 16M tokens a chunk is ~10 KB and a lookup reads one at random: from
// the ordinary heap every read is also a TLB miss (on a VM, a two-level
// page walk), and a first build faults 30,000 small pages. From slabs,
// a ring's chunks sit on a few dozen huge pages.
//
// Blocks are freed one by one as snapshots drop their chunks and reused
// by the next chunk of their class; a slab goes back to the heap when its
// last block is freed, so a dropped ring leaves nothing behind. Classes
// are 16 a power of two (rounding wastes at most 1/16, ~3% on average).
//
// Thread-safe: one mutex, taken by writers making chunks and by whoever
// drops the last reference to one (never by a lookup).
#pragma once

#include <cstddef>

namespace chring::chunk_pool {

// The size a block of `bytes` takes (its class).
size_t block_bytes(size_t bytes) noexcept;

// A block of at least `bytes` bytes (>= 16), 16-byte aligned. Throws
// std::bad_alloc when a new slab cannot be had.
void *allocate(size_t bytes);

// Gives back a block from allocate(bytes), with the same `bytes`.
void release(void *block, size_t bytes) noexcept;

// Slabs held (for tests: 0 once every block is released).
size_t slab_count() noexcept;

}  // namespace chring::chunk_pool
