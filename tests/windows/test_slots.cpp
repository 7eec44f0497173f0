// Windows: a reading thread's reclamation slot is recycled when the thread
// exits, for threads std::thread starts (winpthreads) and for threads
// started with CreateThread, which no C++ runtime knows about (the case of
// a host application's own thread pool). White-box: links the core and
// counts the slots (src/core/reclaim.hpp, registered_slots()).
#include <windows.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "chr_assert.h"

#include "reclaim.hpp"

namespace {

chr_ring *shared_ring = nullptr;

// One ring-level read: registers the calling thread's slot on first use.
void one_read() {
    chr_node_ref owner;
    if (chr_ring_lookup(shared_ring, "key", 3, &owner) != CHR_OK) std::abort();
}

DWORD WINAPI read_once(void *) {
    one_read();
    return 0;
}

size_t slots_in_use() {
    size_t busy = 0;
    chring::reclaim::registered_slots(&busy);
    return busy;
}

void setup_ring() {
    assert_chr_ok(chr_ring_new(nullptr, &shared_ring));
    assert_chr_ok(chr_ring_add(shared_ring, "a", 1, 1, nullptr, 0, 0));
    one_read();  // this thread's own slot, for the whole test
}

// 200 threads one after another, each reads and exits: the slot count
// stays at what one extra thread needs, and none is left in use.
void test_std_threads_recycle_slots(void **) {
    if (!shared_ring) setup_ring();
    const size_t busy_before = slots_in_use();
    for (int i = 0; i < 200; ++i) {
        std::thread t(one_read);
        t.join();
        assert_int_equal(slots_in_use(), busy_before);
    }
    size_t busy = 0;
    size_t all = chring::reclaim::registered_slots(&busy);
    assert_true(all <= busy_before + 2);
}

void test_create_thread_threads_recycle_slots(void **) {
    if (!shared_ring) setup_ring();
    const size_t busy_before = slots_in_use();
    size_t all_before = chring::reclaim::registered_slots(nullptr);
    for (int i = 0; i < 200; ++i) {
        HANDLE t = ::CreateThread(nullptr, 0, read_once, nullptr, 0, nullptr);
        assert_non_null(t);
        assert_int_equal(::WaitForSingleObject(t, INFINITE), WAIT_OBJECT_0);
        ::CloseHandle(t);
        assert_int_equal(slots_in_use(), busy_before);
    }
    assert_true(chring::reclaim::registered_slots(nullptr) <= all_before + 1);
}

// Eight threads alive together hold eight slots; once they are gone the
// next eight reuse them (no new slot is allocated).
void test_concurrent_threads_reuse_slots(void **) {
    if (!shared_ring) setup_ring();
    const size_t busy_before = slots_in_use();
    HANDLE go = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
    size_t all_after_first = 0;
    for (int round = 0; round < 2; ++round) {
        ::ResetEvent(go);
        std::thread threads[8];
        std::atomic<int> ready{0};
        for (std::thread &t : threads)
            t = std::thread([&] {
                one_read();
                ready.fetch_add(1);
                ::WaitForSingleObject(go, INFINITE);
            });
        while (ready.load() < 8) std::this_thread::yield();
        assert_int_equal(slots_in_use(), busy_before + 8);
        ::SetEvent(go);
        for (std::thread &t : threads) t.join();
        assert_int_equal(slots_in_use(), busy_before);
        size_t all = chring::reclaim::registered_slots(nullptr);
        if (round == 0)
            all_after_first = all;
        else
            assert_int_equal(all, all_after_first);
    }
    ::CloseHandle(go);
}

}  // namespace

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_std_threads_recycle_slots),
        cmocka_unit_test(test_create_thread_threads_recycle_slots),
        cmocka_unit_test(test_concurrent_threads_reuse_slots),
    };
    select_cases(argc, argv, tests);
    int failed = cmocka_run_group_tests(tests, nullptr, nullptr);
    chr_ring_free(shared_ring);
    return failed;
}
