#include "keys.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>

#include "file_io.hpp"

namespace chring::cli {

KeySet KeySet::synthetic(uint64_t count) {
    KeySet k;
    k.count_ = count;
    return k;
}

CliError key_too_long(const std::string &name, uint64_t line) {
    return CliError(name + ":" + std::to_string(line) + ": the key is longer than " + std::to_string(kKeyLineMax) +
                    " bytes (the limit for one key)");
}

KeySet KeySet::from_file(const std::string &path) {
    KeySet k;
    k.source_ = input_name(path);
    k.text_ = read_input(path, InputLimits{"key file", kKeyFileMax, false, kKeyLineMax});
    size_t pos = 0;
    while (pos < k.text_.size()) {
        size_t end = k.text_.find('\n', pos);
        if (end == std::string::npos) end = k.text_.size();
        const size_t cr = end > pos && k.text_[end - 1] == '\r';
        if (end - pos - cr > kKeyLineMax) throw key_too_long(k.source_, k.offsets_.size() + 1);
        k.offsets_.push_back(pos);
        pos = end + 1;
    }
    // Sentinel: one past the last key's end, wherever its '\n' is or would be.
    bool ends_in_newline = !k.text_.empty() && k.text_.back() == '\n';
    k.offsets_.push_back(k.text_.size() + (ends_in_newline ? 0 : 1));
    k.count_ = k.offsets_.size() - 1;
    if (k.count_ == 0) throw CliError(k.source_ + ": the key file has no keys");
    return k;
}

std::string KeySet::describe() const {
    if (source_.empty()) return with_commas(count_) + " synthetic keys (key-0, key-1, ...)";
    return with_commas(count_) + " keys from " + source_;
}

void KeySet::fill(uint64_t first, size_t n, KeyBlock &block) const {
    block.data.resize(n);
    block.lens.resize(n);
    if (source_.empty()) {
        // "key-" + decimal index, at most 24 bytes each; reserve first so
        // the pointers taken below stay valid.
        block.storage.resize(n * 24);
        char *p = block.storage.data();
        for (size_t i = 0; i < n; ++i) {
            char *start = p;
            std::memcpy(p, "key-", 4);
            p = std::to_chars(p + 4, start + 24, first + i).ptr;
            block.data[i] = start;
            block.lens[i] = size_t(p - start);
        }
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        size_t begin = offsets_[first + i], end = offsets_[first + i + 1] - 1;
        if (end > begin && text_[end - 1] == '\r') --end;
        block.data[i] = text_.data() + begin;
        block.lens[i] = end - begin;
    }
}

std::vector<uint32_t> owners_of(const Snapshot &snap, const KeySet &keys, Progress *progress) {
    std::vector<uint32_t> owners(keys.size());
    keys.for_each_block([&](uint64_t first, const KeyBlock &block) {
        snap.lookup_batch(block.data.data(), block.lens.data(), block.size(), owners.data() + first);
        if (progress) progress->advance(block.size());
    });
    return owners;
}

std::vector<uint64_t> hashes_of(const KeySet &keys, const RingConfig &config, Progress *progress) {
    std::vector<uint64_t> hashes(keys.size());
    keys.for_each_block([&](uint64_t first, const KeyBlock &block) {
        for (size_t i = 0; i < block.size(); ++i)
            hashes[first + i] = hash_bytes(config.effective_hasher(), config.seed, block.data[i], block.lens[i]);
        if (progress) progress->advance(block.size());
    });
    return hashes;
}

std::string with_commas(uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

}  // namespace chring::cli
