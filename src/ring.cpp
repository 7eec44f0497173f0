#include "ring.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "compat.hpp"
#include "errors.hpp"
#include "plugins.hpp"

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
    if (!placement->hasher)
        return fail(CHR_ENOHASHER,
                    "%s: no hasher named '%.*s' is registered or found in a plugin (searched next "
                    "to libchring, CHRING_PLUGIN_PATH and plugin_dir)",
                    who, CHR_HASHER_NAME_MAX, name);
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
    Snapshot *next = nullptr;
    if (chr_status st = build(*current_.load(std::memory_order_relaxed), changes, count,
                              failed_index, who, &next))
        return st;
    publish(next);
    return CHR_OK;
}

chr_status Ring::apply_planned(const Plan &plan, const Check &check, size_t *failed_index,
                               const char *who) {
    std::lock_guard<std::mutex> lock(writer_);
    const Snapshot &base = *current_.load(std::memory_order_relaxed);
    std::vector<chr_change> changes;
    if (failed_index) *failed_index = 0;
    if (chr_status st = plan(base, changes)) return st;
    if (failed_index) *failed_index = changes.size();
    Snapshot *next = nullptr;
    if (chr_status st = build(base, changes.data(), changes.size(), failed_index, who, &next))
        return st;
    chr_status st;
    try {
        st = check(*next);
    } catch (...) {
        next->release();
        throw;
    }
    if (st != CHR_OK) {
        next->release();  // never published: its only reference
        return st;
    }
    publish(next);
    return CHR_OK;
}

chr_status Ring::build(const Snapshot &base, const chr_change *changes, size_t count,
                       size_t *failed_index, const char *who, Snapshot **next) {
    const Placement &placement = *base.placement();

    // The batch runs change by change against a working membership without
    // moving any element: the base table (sorted by id) is edited in place
    // (weights; a removed slot is marked dead; a remove-then-add refills its
    // slot as a new node), nodes new to the ring go to `added` with a hash
    // index, and one sort and one merge at the end build the sorted table.
    // So a batch of n changes costs O(n log n) however its ids are ordered
    // (inserting into the sorted vector was O(n) per change).
    MembershipDelta d;
    std::vector<Node> table = base.nodes();
    std::vector<int64_t> table_old(table.size());  // old index, or -1 for a refilled slot
    std::vector<bool> table_live(table.size(), true);
    for (size_t k = 0; k < table.size(); ++k) table_old[k] = int64_t(k);
    std::vector<Node> added;
    std::vector<bool> added_live;
    std::unordered_map<std::string, size_t> added_at;  // id -> its live entry in `added`
    size_t live = table.size();
    // Running bound on the tokens of the working membership (exact for native).
    uint64_t total_tokens = 0;
    for (const Node &n : table) total_tokens += compat::point_bound(placement, n.weight);

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
        // The id's node in the working membership, if any: a base slot or an added entry.
        size_t pos = position(table, id);
        const bool in_table = pos < table.size() && table[pos].id == id;
        Node *node = nullptr;
        auto found = in_table ? added_at.end() : added_at.find(id);
        if (in_table) {
            if (table_live[pos]) node = &table[pos];
        } else if (found != added_at.end()) {
            node = &added[found->second];
        }
        const bool present = node != nullptr;

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
            if (live >= CHR_NODES_MAX)
                return reject(fail(CHR_ERANGE, "%s: the ring already has %u nodes, the limit", who,
                                   CHR_NODES_MAX));
            Node n;
            n.id = std::move(id);
            if (ch.zone_len) n.zone.assign(static_cast<const char *>(ch.zone), ch.zone_len);
            n.tag = ch.tag;
            n.weight = ch.weight;
            if (in_table) {  // removed earlier in this batch: back as a new node
                table[pos] = std::move(n);
                table_old[pos] = -1;
                table_live[pos] = true;
            } else {
                std::string key = n.id;
                added_at[std::move(key)] = added.size();
                added.push_back(std::move(n));
                added_live.push_back(true);
            }
            ++live;
            total_tokens += compat::point_bound(placement, ch.weight);
        } else {
            if (!present)
                return reject(fail(CHR_ENOENT, "%s: no node '%.*s' in the ring", who,
                                   int(std::min<size_t>(id.size(), 64)), id.data()));
            total_tokens -= compat::point_bound(placement, node->weight);
            if (ch.op == CHR_OP_REMOVE) {
                if (in_table) {
                    table_live[pos] = false;
                } else {
                    added_live[found->second] = false;
                    added_at.erase(found);
                }
                --live;
            } else {
                node->weight = ch.weight;
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

    // New ids in id order, then one merge with the live base slots.
    std::vector<size_t> order;
    order.reserve(added_at.size());
    for (size_t a = 0; a < added.size(); ++a)
        if (added_live[a]) order.push_back(a);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return added[x].id < added[y].id; });
    d.nodes.reserve(live);
    d.old_index.reserve(live);
    size_t pending = 0;
    for (size_t k = 0; k <= table.size(); ++k) {
        while (pending < order.size() && (k == table.size() || added[order[pending]].id < table[k].id)) {
            d.nodes.push_back(std::move(added[order[pending++]]));
            d.old_index.push_back(-1);
        }
        if (k == table.size() || !table_live[k]) continue;
        d.nodes.push_back(std::move(table[k]));
        d.old_index.push_back(table_old[k]);
    }

    d.regenerate.resize(d.nodes.size());
    for (size_t k = 0; k < d.nodes.size(); ++k)
        d.regenerate[k] = d.old_index[k] < 0 || base.node(size_t(d.old_index[k])).weight != d.nodes[k].weight;

    retired_.reserve(retired_.size() + 1);  // so publishing cannot fail after the swap
    *next = new Snapshot(base, std::move(d));
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
