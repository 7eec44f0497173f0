#include "ring.hpp"

#include <algorithm>
#include <cstring>

#include "compat.hpp"
#include "errors.hpp"
#include "plugin/discovery.hpp"

namespace chring {
namespace {

chr_status check_bytes(const void *p, size_t len, const char *what, const char *who) {
    if (!p && len) return fail(CHR_EINVAL, "%s: %s is NULL with length %zu", who, what, len);
    return CHR_OK;
}

chr_status check_id(const void *id, size_t len, const char *who) {
    if (chr_status st = check_bytes(id, len, "id", who)) return st;
    if (len == 0) return fail(CHR_EINVAL, "%s: node id is empty (1..%d bytes)", who, CHR_NODE_ID_MAX);
    if (len > CHR_NODE_ID_MAX)
        return fail(CHR_ERANGE, "%s: node id is %zu bytes (1..%d allowed)", who, len, CHR_NODE_ID_MAX);
    return CHR_OK;
}

// Where `id` is in the working table, or where it would go.
size_t position(const std::vector<Node> &nodes, const std::string &id) {
    return size_t(std::lower_bound(nodes.begin(), nodes.end(), id,
                                   [](const Node &n, const std::string &v) { return n.id < v; }) -
                  nodes.begin());
}

}  // namespace

chr_status Ring::create(const chr_options *opts, Ring **out) {
    static const char *who = "chr_ring_new";
    if (!out) return fail(CHR_EINVAL, "%s: out is NULL", who);
    *out = nullptr;
    chr_options o = CHR_OPTIONS_INIT;
    if (opts) {
        if (opts->version < 1 || opts->version > CHR_OPTIONS_VERSION)
            return fail(CHR_EVERSION, "%s: options version %u is not supported (1..%d)", who,
                        opts->version, CHR_OPTIONS_VERSION);
        o = *opts;  // version 1 is the whole struct today; later versions copy by version
    }
    if (o.tokens_per_weight < 1 || o.tokens_per_weight > CHR_TOKENS_PER_WEIGHT_MAX)
        return fail(CHR_ERANGE, "%s: tokens_per_weight %u is out of range (1..%u)", who,
                    o.tokens_per_weight, CHR_TOKENS_PER_WEIGHT_MAX);
    if (o.reserved0 != 0) return fail(CHR_EINVAL, "%s: options.reserved0 must be 0", who);
    if (o.placement < CHR_PLACEMENT_NATIVE || o.placement > CHR_PLACEMENT_NGINX)
        return fail(CHR_ENOTSUP, "%s: placement mode %d is not available in this build (0..%d)",
                    who, o.placement, CHR_PLACEMENT_NGINX);
    const char *name = o.hasher ? o.hasher : CHR_DEFAULT_HASHER;
    if (const char *required = compat::required_hasher(o.placement)) {
        if (o.hasher && std::strcmp(o.hasher, required) != 0)
            return fail(CHR_EINVAL, "%s: placement mode %d is defined with hasher '%s', not '%.*s'",
                        who, o.placement, required, CHR_HASHER_NAME_MAX, o.hasher);
        name = required;
    }
    auto placement = std::make_shared<Placement>();
    placement->hasher = resolve_hasher(name, o.plugin_dir);
    if (!placement->hasher) {
        std::string skipped = skipped_plugins();
        return fail(CHR_ENOHASHER,
                    "%s: no hasher named '%.*s' is registered or found in a plugin (searched next "
                    "to libchring, CHRING_PLUGIN_PATH and plugin_dir)%s%s",
                    who, CHR_HASHER_NAME_MAX, name, skipped.empty() ? "" : "; skipped: ",
                    skipped.c_str());
    }
    if (compat::required_hasher(o.placement) && !placement->hasher->digest)
        return fail(CHR_ENOHASHER, "%s: hasher '%s' has no full digest, which placement mode %d needs",
                    who, name, o.placement);
    placement->seed = o.seed;
    placement->tokens_per_weight = o.tokens_per_weight;
    placement->mode = o.placement;
    *out = new Ring(std::move(placement));
    return CHR_OK;
}

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

chr_status Ring::apply(const chr_change *changes, size_t count, size_t *failed_index,
                       const char *who) {
    if (failed_index) *failed_index = count;
    std::lock_guard<std::mutex> lock(writer_);
    const Snapshot &base = *current_.load(std::memory_order_relaxed);
    const Placement &placement = *base.placement();

    MembershipDelta d;
    d.nodes = base.nodes();
    d.old_index.resize(d.nodes.size());
    for (size_t k = 0; k < d.nodes.size(); ++k) d.old_index[k] = int64_t(k);
    // Running bound on the tokens of the working membership (exact for native).
    uint64_t total_tokens = 0;
    for (const Node &n : d.nodes) total_tokens += compat::point_bound(placement, n.weight);

    for (size_t c = 0; c < count; ++c) {
        const chr_change &ch = changes[c];
        auto reject = [&](chr_status st) {
            if (failed_index) *failed_index = c;
            return st;
        };
        if (ch.op != CHR_OP_ADD && ch.op != CHR_OP_REMOVE && ch.op != CHR_OP_SET_WEIGHT)
            return reject(fail(CHR_EINVAL, "%s: change %zu has unknown op %u (1..3)", who, c, ch.op));
        if (chr_status st = check_id(ch.id, ch.id_len, who)) return reject(st);
        std::string id(static_cast<const char *>(ch.id), ch.id_len);
        size_t pos = position(d.nodes, id);
        bool present = pos < d.nodes.size() && d.nodes[pos].id == id;

        if (ch.op != CHR_OP_REMOVE) {
            if (ch.weight > CHR_WEIGHT_MAX)
                return reject(fail(CHR_ERANGE, "%s: weight %u is out of range (0..%u)", who,
                                   ch.weight, CHR_WEIGHT_MAX));
            if (chr_status st = compat::check_weight(placement, ch.weight, who)) return reject(st);
        }
        if (ch.op == CHR_OP_ADD) {
            if (present)
                return reject(fail(CHR_EEXIST, "%s: node '%.*s' is already in the ring", who,
                                   int(std::min<size_t>(id.size(), 64)), id.data()));
            if (chr_status st = check_bytes(ch.zone, ch.zone_len, "zone", who)) return reject(st);
            if (ch.zone_len > CHR_ZONE_MAX)
                return reject(fail(CHR_ERANGE, "%s: zone is %zu bytes (0..%d allowed)", who,
                                   ch.zone_len, CHR_ZONE_MAX));
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
            total_tokens += compat::point_bound(placement, ch.weight);
        } else {
            if (!present)
                return reject(fail(CHR_ENOENT, "%s: no node '%.*s' in the ring", who,
                                   int(std::min<size_t>(id.size(), 64)), id.data()));
            total_tokens -= compat::point_bound(placement, d.nodes[pos].weight);
            if (ch.op == CHR_OP_REMOVE) {
                d.nodes.erase(d.nodes.begin() + long(pos));
                d.old_index.erase(d.old_index.begin() + long(pos));
            } else {
                d.nodes[pos].weight = ch.weight;
                total_tokens += compat::point_bound(placement, ch.weight);
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
