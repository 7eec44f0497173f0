// Reader throughput through chr_ring_lookup on 1 and 2 threads, alone and
// while a writer thread keeps updating the same ring (remove one node, add
// it back, again and again: every update publishes a new snapshot and
// retires the old one).
//
// Google Benchmark reports, for ->Threads(n): cpu_time = CPU ns per lookup
// on one reader thread; real_time = wall ns / lookups of all threads, the
// inverse of the aggregate throughput. On a 2-core machine, 2 readers plus
// a writer share 2 cores, so wall time there includes time descheduled.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "bench_support.hpp"

namespace {

// Updates `ring` continuously on its own thread until stop(); counts the
// snapshots it published.
class Writer {
public:
    // Returns once the first update is published, so that even a timed
    // loop of one iteration runs against a writer that is already busy.
    explicit Writer(chr_ring *ring) : ring_(ring), thread_([this] { run(); }) {
        while (updates_.load(std::memory_order_acquire) == 0 && !failed_.load())
            std::this_thread::yield();
    }
    ~Writer() { stop(); }
    Writer(const Writer &) = delete;
    Writer &operator=(const Writer &) = delete;

    // Joins the thread; returns the updates it made per second of its
    // life (0 if one failed).
    double stop() {
        stop_.store(true, std::memory_order_relaxed);
        if (thread_.joinable()) thread_.join();
        std::chrono::duration<double> lived = std::chrono::steady_clock::now() - started_;
        return failed_ ? 0.0 : double(updates_.load()) / lived.count();
    }

private:
    void run() {
        static const std::string id = "node-churn";
        while (!stop_.load(std::memory_order_relaxed)) {
            if (chr_ring_add(ring_, id.data(), id.size(), 1, nullptr, 0, 0) != CHR_OK ||
                chr_ring_remove(ring_, id.data(), id.size()) != CHR_OK) {
                failed_.store(true);
                return;
            }
            updates_.fetch_add(2, std::memory_order_release);
        }
    }

    chr_ring *ring_;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::atomic<bool> stop_{false};
    std::atomic<bool> failed_{false};
    std::atomic<size_t> updates_{0};
    std::thread thread_;  // last: starts once the fields above exist
};

// Arguments: nodes, writer (0 or 1).
void readers(benchmark::State &state) {
    chr_ring *ring = bench::shared_ring(size_t(state.range(0)));
    const bool with_writer = state.range(1) != 0;
    const bench::KeyPool &pool = bench::KeyPool::get();

    // Thread 0 owns the writer; Google Benchmark lines all readers up at
    // the start and end of the timed loop, so it runs for the whole loop.
    std::unique_ptr<Writer> writer;
    if (with_writer && state.thread_index() == 0) writer = std::make_unique<Writer>(ring);

    static thread_local bench::ResultSlots<chr_node_ref> out;
    size_t i = size_t(state.thread_index()) * (bench::KeyPool::kSize / 2);
    for (auto _ : state) {
        const bench::Key &k = pool[i];
        chr_node_ref *owner = out[i++];
        if (chr_ring_lookup(ring, k.bytes, k.len, owner) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(owner->index);
    }

    if (writer) {
        double updates_per_second = writer->stop();
        if (updates_per_second == 0.0)
            state.SkipWithError("the writer thread's update failed or never ran");
        state.counters["writer_updates_per_s"] = updates_per_second;
    }
}

void reader_args(benchmark::internal::Benchmark *b) {
    b->ArgNames({"nodes", "writer"});
    for (int nodes : {100, 1000})
        for (int writer : {0, 1}) b->Args({nodes, writer});
}

}  // namespace

BENCHMARK(readers)->Apply(reader_args)->Threads(1)->Threads(2);

BENCHMARK_MAIN();
