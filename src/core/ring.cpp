#include "ring.hpp"

#include <algorithm>
#include <cstring>

#include "errors.hpp"
#include "validate.hpp"

namespace chring {
namespace {

// Where `id` is in the working table, or where it would go.
size_t position(const std::vector<Node> &nodes, const std::string &id) {
    return size_t(std::lower_bound(nodes.begin(), nodes.end(), id,
                                   [](const Node &n, const std::string &v) { return n.id < v; }) -
                  nodes.begin());
}

// Change c of a batch of `change_size`-byte changes, as this library's
// chr_change; CHR_ENOTSUP if the caller's struct sets a field past it.
chr_status read_change(const void *changes, size_t c, size_t change_size, chr_change *out,
                       const char *who) {
    const unsigned char *p = static_cast<const unsigned char *>(changes) + c * change_size;
    *out = chr_change{};
    std::memcpy(out, p, std::min(change_size, sizeof *out));
    for (size_t i = sizeof *out; i < change_size; ++i)
        if (p[i] != 0)
            return fail(CHR_ENOTSUP,
                        "%s: change %zu sets byte %zu of a %zu-byte chr_change; this library's "
                        "chr_change has %zu bytes and cannot honour later fields",
                        who, c, i, change_size, sizeof *out);
    return CHR_OK;
}

}  // namespace

Ring::Ring(PlacementPtr placement)
    : placement_(std::move(placement)), key_hash_(*placement_), current_(new Snapshot(placement_)) {}

Ring::~Ring() {
    // No reader may run concurrently with the destructor (chr_ring_free's
    // contract), so retired snapshots can go now; explicit chr_snapshot
    // handles keep their own references.
    for (Retired &r : retired_) r.snapshot->release();
    current_.load(std::memory_order_relaxed)->release();
}

chr_status Ring::out_of_slots(const char *who) {
    return fail(CHR_ENOMEM, "%s: cannot register this thread as a reader: out of memory", who);
}

chr_status Ring::acquire(const Snapshot **out, const char *who) const {
    return read(who, [&](const Snapshot &s) {
        s.retain();  // safe: the read section keeps `s` from being freed meanwhile
        *out = &s;
        return CHR_OK;
    });
}

chr_status Ring::apply(const void *changes, size_t count, size_t change_size,
                       size_t *failed_index, const char *who) {
    if (failed_index) *failed_index = count;
    std::lock_guard<std::mutex> lock(writer_);
    const Snapshot &base = *current_.load(std::memory_order_relaxed);
    const Placement &placement = *base.placement();
    const PlacementOps &ops = *placement.ops;

    MembershipDelta d;
    d.nodes = base.nodes();
    d.old_index.resize(d.nodes.size());
    for (size_t k = 0; k < d.nodes.size(); ++k) d.old_index[k] = int64_t(k);
    // Running bound on the tokens of the working membership (exact for native).
    uint64_t total_tokens = 0;
    for (const Node &n : d.nodes) total_tokens += ops.point_bound(placement, n.weight);

    for (size_t c = 0; c < count; ++c) {
        auto reject = [&](chr_status st) {
            if (failed_index) *failed_index = c;
            return st;
        };
        chr_change ch;
        if (chr_status st = read_change(changes, c, change_size, &ch, who)) return reject(st);
        if (chr_status st = check_change(who, ch, c)) return reject(st);
        if (ch.op != CHR_OP_REMOVE && ops.check_weight)
            if (chr_status st = ops.check_weight(ch.weight, who)) return reject(st);
        std::string id(static_cast<const char *>(ch.id), ch.id_len);
        size_t pos = position(d.nodes, id);
        bool present = pos < d.nodes.size() && d.nodes[pos].id == id;

        if (ch.op == CHR_OP_ADD) {
            if (present)
                return reject(fail(CHR_EEXIST, "%s: node '%s' is already in the ring", who,
                                   Quoted(id.data(), id.size()).c_str()));
            if (d.nodes.size() >= CHR_NODES_MAX)
                return reject(fail(CHR_ERANGE, "%s: the ring already has %u nodes, the limit", who,
                                   CHR_NODES_MAX));
            Node n;
            n.id = std::move(id);
            if (ch.zone_len) n.zone.assign(static_cast<const char *>(ch.zone), ch.zone_len);
            n.tag = ch.tag;
            n.weight = ch.weight;
            d.nodes.insert(d.nodes.begin() + long(pos), std::move(n));
            d.old_index.insert(d.old_index.begin() + long(pos), -1);
            total_tokens += ops.point_bound(placement, ch.weight);
        } else {
            if (!present)
                return reject(fail(CHR_ENOENT, "%s: no node '%s' in the ring", who,
                                   Quoted(id.data(), id.size()).c_str()));
            total_tokens -= ops.point_bound(placement, d.nodes[pos].weight);
            if (ch.op == CHR_OP_REMOVE) {
                d.nodes.erase(d.nodes.begin() + long(pos));
                d.old_index.erase(d.old_index.begin() + long(pos));
            } else {
                d.nodes[pos].weight = ch.weight;
                total_tokens += ops.point_bound(placement, ch.weight);
            }
        }
        if (total_tokens > CHR_TOKENS_MAX)
            return reject(fail(CHR_ERANGE,
                               "%s: change %zu would make %llu tokens (limit %u; native "
                               "placement: weight x tokens_per_weight %u summed over nodes)",
                               who, c, (unsigned long long)total_tokens, CHR_TOKENS_MAX,
                               placement.tokens_per_weight));
    }

    d.regenerate.resize(d.nodes.size());
    for (size_t k = 0; k < d.nodes.size(); ++k)
        d.regenerate[k] = d.old_index[k] < 0 || base.node(size_t(d.old_index[k])).weight != d.nodes[k].weight;

    retired_.reserve(retired_.size() + 1);  // so publishing cannot fail after the swap
    publish(new Snapshot(base, std::move(d)));
    return CHR_OK;
}

void Ring::publish(Snapshot *next) {
    Snapshot *old = current_.exchange(next, std::memory_order_seq_cst);
    retired_.push_back({old, reclaim::retire_epoch()});  // capacity reserved by the caller
    collect();
}

void Ring::collect() noexcept {
    if (!reclaim::fence_readers()) return;  // cannot prove readers are done: keep everything
    const uint64_t oldest = reclaim::oldest_reader_epoch();
    auto still_reachable = [&](const Retired &r) { return r.epoch >= oldest; };
    auto keep = std::partition(retired_.begin(), retired_.end(), still_reachable);
    for (auto it = keep; it != retired_.end(); ++it) it->snapshot->release();
    retired_.erase(keep, retired_.end());
}

}  // namespace chring
