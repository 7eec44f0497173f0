// The keys a simulation routes: synthetic ("key-0", "key-1", ...) or read
// from a file, one per line. Walked in blocks so batch lookups stay cheap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "progress.hpp"
#include "ring_handle.hpp"

namespace chring::cli {

// The limits of the keys the CLI reads (--key-file, lookup's stdin): one
// key, its LF and a trailing CR excluded, and a whole key file.
constexpr size_t kKeyLineMax = size_t(64) << 10;   // 64 KiB
constexpr size_t kKeyFileMax = size_t(256) << 20;  // 256 MiB

// "NAME:LINE: the key is longer than 65536 bytes (the limit for one key)".
CliError key_too_long(const std::string &name, uint64_t line);

// Consecutive keys in caller-ready form for chr_snapshot_lookup_batch.
struct KeyBlock {
    std::vector<const void *> data;
    std::vector<size_t> lens;
    std::string storage;  // synthetic keys live here
    size_t size() const { return data.size(); }
};

class KeySet {
public:
    static constexpr size_t kBlock = 4096;

    static KeySet synthetic(uint64_t count);
    // One key per line (a trailing '\r' is dropped); empty lines are keys
    // too. "-" is standard input. At most kKeyFileMax bytes and keys of at
    // most kKeyLineMax bytes, or a CliError naming the file (and the line).
    static KeySet from_file(const std::string &path);

    uint64_t size() const { return count_; }
    std::string describe() const;  // "1,000,000 synthetic keys" / "N keys from FILE"

    // Calls f(first_index, const KeyBlock &) over all keys, in order.
    template <class F>
    void for_each_block(F &&f) const {
        KeyBlock block;
        for (uint64_t first = 0; first < count_; first += kBlock) {
            fill(first, size_t(std::min<uint64_t>(kBlock, count_ - first)), block);
            f(first, static_cast<const KeyBlock &>(block));
        }
    }

private:
    void fill(uint64_t first, size_t n, KeyBlock &block) const;

    uint64_t count_ = 0;
    std::string source_;          // file name; empty for synthetic keys
    std::string text_;            // file keys, back to back
    std::vector<size_t> offsets_; // file keys: start of key i; one past the end last
};

// The owner (node index in `snap`) of every key, in key order.
std::vector<uint32_t> owners_of(const Snapshot &snap, const KeySet &keys, Progress *progress);

// H(key) of every key with the ring's hasher and seed (for hash % N).
std::vector<uint64_t> hashes_of(const KeySet &keys, const RingConfig &config, Progress *progress);

// "1234567" -> "1,234,567", for tables a person reads.
std::string with_commas(uint64_t n);

}  // namespace chring::cli
