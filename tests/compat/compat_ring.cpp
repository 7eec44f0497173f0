#include "compat_ring.hpp"

#include <random>

namespace compat_test {

chr_status build_ring(int32_t placement, const std::vector<Server> &servers, chr_ring **out,
                      const std::vector<uint64_t> *tags) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = placement;
    chr_ring *ring = nullptr;
    *out = nullptr;
    if (chr_status st = chr_ring_new(&opts, &ring)) return st;
    // One batch: a compat ring recomputes every point on each change, so
    // adding servers one by one would cost n rebuilds.
    std::vector<chr_change> changes(servers.size());
    for (size_t i = 0; i < servers.size(); ++i) {
        chr_change &c = changes[i];
        c = chr_change{};
        c.op = CHR_OP_ADD;
        c.weight = servers[i].weight;
        c.id = servers[i].id.data();
        c.id_len = servers[i].id.size();
        c.tag = tags ? (*tags)[i] : i;
    }
    if (chr_status st = chr_ring_apply(ring, changes.data(), changes.size(), nullptr)) {
        chr_ring_free(ring);
        return st;
    }
    *out = ring;
    return CHR_OK;
}

void KeyBatch::add(const void *key, size_t len) {
    offsets.push_back(bytes.size());
    lens.push_back(len);
    const auto *p = static_cast<const unsigned char *>(key);
    bytes.insert(bytes.end(), p, p + len);
}

KeyBatch random_keys(size_t count, size_t min_len, size_t max_len, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> length(min_len, max_len);
    KeyBatch keys;
    std::vector<unsigned char> key(max_len);
    for (size_t i = 0; i < count; ++i) {
        size_t len = length(rng);
        for (size_t b = 0; b < len; ++b) key[b] = static_cast<unsigned char>(rng());
        keys.add(key.data(), len);
    }
    return keys;
}

chr_status owner_tags(const chr_ring *ring, const KeyBatch &keys, std::vector<uint64_t> &tags) {
    chr_snapshot *snap = nullptr;
    if (chr_status st = chr_ring_snapshot(ring, &snap)) return st;
    size_t nodes = 0;
    chr_status st = chr_snapshot_node_count(snap, &nodes);
    std::vector<uint64_t> tag_of_index(nodes);
    for (size_t i = 0; st == CHR_OK && i < nodes; ++i) {
        chr_node_view view;
        st = chr_snapshot_node(snap, i, &view);
        tag_of_index[i] = view.tag;
    }
    std::vector<const void *> pointers(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) pointers[i] = keys.key(i);
    std::vector<uint32_t> indices(keys.size());
    if (st == CHR_OK)
        st = chr_snapshot_lookup_batch(snap, pointers.data(), keys.lens.data(), keys.size(),
                                       indices.data());
    chr_snapshot_release(snap);
    if (st) return st;
    tags.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) tags[i] = tag_of_index.at(indices[i]);
    return CHR_OK;
}

int32_t placement_named(const std::string &name) {
    if (name == "native") return CHR_PLACEMENT_NATIVE;
    if (name == "ketama") return CHR_PLACEMENT_KETAMA;
    if (name == "ketama-unweighted") return CHR_PLACEMENT_KETAMA_UNWEIGHTED;
    if (name == "nginx") return CHR_PLACEMENT_NGINX;
    return -1;
}

}  // namespace compat_test
