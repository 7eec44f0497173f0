// White-box: the slab pool of the token index's chunks
// (src/core/chunk_pool.hpp), both kinds of slab. Blocks never overlap and
// keep what is written to them, are 16-byte aligned and rounded up by at
// most 1/16; freed blocks are reused by their class; a slab goes back when
// its last block does, so after everything is released the pool holds
// nothing; a slab that cannot be had is std::bad_alloc with the pool
// unchanged; and threads allocating and releasing blocks of both kinds at
// once (TSan runs this too) agree.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <setjmp.h>

#include <new>
#include <random>
#include <thread>
#include <vector>

extern "C" { /* cmocka.h declares its functions without linkage */
#include <cmocka.h>
}
#include "test_cases.h"

#include "alloc_countdown.hpp"
#include "chunk_pool.hpp"

namespace {

namespace pool = chring::chunk_pool;
using Source = pool::Source;

struct Block {
    unsigned char *p;
    size_t bytes;
    unsigned char fill;
    Source kind;
};

// Sizes as chunks have them (one group at 1.6M tokens, 8 and 16 groups
// past 2M), tiny ones, and ones too big for a slab's blocks.
size_t chunk_like_size(std::mt19937_64 &rng) {
    switch (rng() % 6) {
    case 0: return 16 + rng() % 64;
    case 1: return 900 + rng() % 700;
    case 2: return 9000 + rng() % 1200;
    case 3: return 18000 + rng() % 2500;
    case 4: return 300000 + rng() % 1000;  // above the largest class: the heap
    default: return 2000 + rng() % 30000;
    }
}

Block take(size_t bytes, unsigned char fill, Source kind) {
    unsigned char *p = static_cast<unsigned char *>(pool::allocate(bytes, kind));
    assert_int_equal(uintptr_t(p) % 16, 0);
    std::memset(p, fill, bytes);
    return {p, bytes, fill, kind};
}

// Checks the block's first and last 16 bytes and every 61st between: an
// overlap with a neighbour shows at one end (and the sanitizers' runs stay
// short; a check of every byte took TSan past its timeout).
void give_back(const Block &b) {
    for (size_t i = 0; i < b.bytes; i += (i < 16 || i + 16 >= b.bytes) ? 1 : 61)
        if (b.p[i] != b.fill) fail_msg("block of %zu bytes: byte %zu is %u, not %u", b.bytes, i, b.p[i], b.fill);
    pool::release(b.p, b.bytes, b.kind);
}

void test_class_rounding(void **) {
    for (Source kind : {Source::small_slabs, Source::huge_slabs})
        for (size_t bytes = 16; bytes < 300000; bytes += 1 + bytes / 97) {
            const size_t block = pool::block_bytes(bytes, kind);
            assert_true(block >= bytes);
            // The header and the rounding: at most 1/16 and 16 bytes more, plus 16.
            if (block > bytes + bytes / 16 + 32) fail_msg("%zu bytes take a %zu-byte block", bytes, block);
        }
}

void random_workload_leaves_nothing(Source kind) {
    std::mt19937_64 rng(7);
    std::vector<Block> live;
    for (int op = 0; op < 20000; ++op) {
        if (live.empty() || rng() % 100 < 55) {
            live.push_back(take(chunk_like_size(rng), static_cast<unsigned char>(rng()), kind));
        } else {
            const size_t i = rng() % live.size();
            give_back(live[i]);
            live[i] = live.back();
            live.pop_back();
        }
    }
    assert_true(pool::slab_count() > 0);
    for (const Block &b : live) give_back(b);
    assert_int_equal(pool::slab_count(), 0);
}
void test_random_workload_leaves_nothing(void **) {
    random_workload_leaves_nothing(Source::small_slabs);
    random_workload_leaves_nothing(Source::huge_slabs);
}

// Sizes that a slab of the kind holds (an eighth of it at most).
void freed_blocks_are_reused(Source kind, size_t bytes) {
    std::vector<Block> blocks;
    for (int i = 0; i < 1000; ++i) blocks.push_back(take(bytes + i % 50, 1, kind));
    const size_t slabs = pool::slab_count();
    for (size_t i = 0; i < blocks.size(); i += 2) {
        give_back(blocks[i]);
        blocks[i] = take(bytes + i % 50, 2, kind);  // the same class: a freed block
    }
    assert_int_equal(pool::slab_count(), slabs);
    for (const Block &b : blocks) give_back(b);
    assert_int_equal(pool::slab_count(), 0);
}
void test_freed_blocks_are_reused(void **) {
    freed_blocks_are_reused(Source::small_slabs, 1000);
    freed_blocks_are_reused(Source::huge_slabs, 10000);
}

void failed_slab_is_bad_alloc(Source kind) {
    assert_int_equal(pool::slab_count(), 0);
    alloc_countdown::arm(1, alloc_countdown::Mode::once);
    bool threw = false;
    try {
        (void)pool::allocate(1000, kind);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    const alloc_countdown::Tally tally = alloc_countdown::disarm();
    assert_true(threw);
    assert_true(tally.injected);
    assert_int_equal(pool::slab_count(), 0);
    const Block b = take(1000, 3, kind);  // and the pool still works
    give_back(b);
    assert_int_equal(pool::slab_count(), 0);
}
void test_failed_slab_is_bad_alloc(void **) {
    failed_slab_is_bad_alloc(Source::small_slabs);
    failed_slab_is_bad_alloc(Source::huge_slabs);
}

void test_threads(void **) {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
        threads.emplace_back([t] {
            std::mt19937_64 rng(t);
            std::vector<Block> live;
            for (int op = 0; op < 4000; ++op) {
                if (live.empty() || rng() % 2) {
                    const Source kind = Source(rng() % 3);  // the heap too
                    live.push_back(take(chunk_like_size(rng), static_cast<unsigned char>(t + 1), kind));
                } else {
                    give_back(live.back());
                    live.pop_back();
                }
            }
            for (const Block &b : live) give_back(b);
        });
    }
    for (std::thread &th : threads) th.join();
    assert_int_equal(pool::slab_count(), 0);
}

}  // namespace

int main(int argc, char **argv) {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_class_rounding),
        cmocka_unit_test(test_random_workload_leaves_nothing),
        cmocka_unit_test(test_freed_blocks_are_reused),
        cmocka_unit_test(test_failed_slab_is_bad_alloc),
        cmocka_unit_test(test_threads),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
