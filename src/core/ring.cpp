#include "ring.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "base/errors.hpp"
#include "base/validate.hpp"

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

// Room for one more element of `v`, growing geometrically: reserving
// exactly size() + 1 reallocates and copies the whole vector on every
// call, which made a batch of n removes or weight changes O(n^2).
template <class T>
void reserve_one_more(std::vector<T> &v) {
    if (v.size() == v.capacity()) v.reserve(std::max<size_t>(8, 2 * v.capacity()));
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
    Snapshot *next = nullptr;
    if (chr_status st = build(*current_.load(std::memory_order_relaxed), changes, count,
                              change_size, failed_index, who, &next))
        return st;
    publish(next);
    return CHR_OK;
}

chr_status Ring::apply_planned(const Plan &plan, const Check &check, size_t *failed_index,
                               const char *who, const MarksById *marks) {
    std::lock_guard<std::mutex> lock(writer_);
    const Snapshot &base = *current_.load(std::memory_order_relaxed);
    std::vector<chr_change> changes;
    if (failed_index) *failed_index = 0;
    if (chr_status st = plan(base, changes)) return st;
    if (failed_index) *failed_index = changes.size();
    Snapshot *next = nullptr;
    if (chr_status st = build(base, changes.data(), changes.size(), sizeof(chr_change), failed_index,
                              who, &next, marks))
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

chr_status Ring::build(const Snapshot &base, const void *changes, size_t count, size_t change_size,
                       size_t *failed_index, const char *who, Snapshot **next, const MarksById *marks) {
    const Placement &placement = *base.placement();
    const PlacementOps &ops = *placement.ops;

    // The batch runs change by change against a working membership that
    // leaves the base table (sorted by id) as it is: a base slot the batch
    // touches gets an entry in `edited` (its working node; a removed slot
    // is marked dead; a remove-then-add refills it as a new node), nodes new
    // to the ring go to `added` with a hash index, and one sort and one
    // merge at the end build the sorted table, copying each untouched base
    // node once. So a batch of n changes costs O(n log n) plus that copy,
    // however its ids are ordered (inserting into the sorted vector was O(n)
    // per change), and a single change copies the table once, not twice.
    MembershipDelta d;
    const std::vector<Node> &table = base.nodes();
    struct Edited {
        size_t pos;  // in the base table
        Node node;
        bool live, refilled;
    };
    std::vector<Edited> edited;
    std::unordered_map<size_t, size_t> edited_at;  // base position -> its entry in `edited`
    // The working entry of base slot pos, made on first use.
    auto edit = [&](size_t pos) -> Edited & {
        auto it = edited_at.find(pos);
        if (it != edited_at.end()) return edited[it->second];
        reserve_one_more(edited);  // may throw: nothing changed yet
        edited_at.emplace(pos, edited.size());
        edited.push_back({pos, table[pos], true, false});
        return edited.back();
    };
    std::vector<Node> added;
    std::vector<bool> added_live;
    std::unordered_map<std::string, size_t> added_at;  // id -> its live entry in `added`
    size_t live = table.size();
    // Running bound on the tokens of the working membership (exact for native).
    TokenTally tokens(placement, base.token_bound());

    for (size_t c = 0; c < count; ++c) {
        chr_change ch;
        bool read = false;
        // A refused change: its index, and its id in the record once the
        // change is read (note_member() keeps only an id of valid length).
        auto reject = [&](chr_status st) {
            if (failed_index) *failed_index = c;
            if (read) note_member(ch.id, ch.id_len);
            return st;
        };
        if (chr_status st = read_change(changes, c, change_size, &ch, who)) return reject(st);
        read = true;
        if (chr_status st = check_change(who, ch, c)) return reject(st);
        if (ch.op != CHR_OP_REMOVE && ops.check_weight)
            if (chr_status st = ops.check_weight(ch.weight, who)) return reject(st);
        std::string id(static_cast<const char *>(ch.id), ch.id_len);
        // The id's node in the working membership, if any: a base slot
        // (as edited, if it was) or an added entry.
        size_t pos = position(table, id);
        const bool in_table = pos < table.size() && table[pos].id == id;
        const Node *node = nullptr;
        auto found = in_table ? added_at.end() : added_at.find(id);
        if (in_table) {
            auto e = edited_at.find(pos);
            if (e == edited_at.end()) node = &table[pos];
            else if (edited[e->second].live) node = &edited[e->second].node;
        } else if (found != added_at.end()) {
            node = &added[found->second];
        }
        const bool present = node != nullptr;

        if (ch.op == CHR_OP_ADD) {
            if (present)
                return reject(fail(CHR_EEXIST, "%s: node '%s' is already in the ring", who,
                                   Quoted(id.data(), id.size()).c_str()));
            if (live >= CHR_NODES_MAX)
                return reject(fail(CHR_ERANGE, "%s: the ring already has %u nodes, the limit", who,
                                   CHR_NODES_MAX));
            Node n;
            n.id = std::move(id);
            if (ch.zone_len) n.zone.assign(static_cast<const char *>(ch.zone), ch.zone_len);
            n.tag = ch.tag;
            n.weight = ch.weight;
            if (in_table) {  // removed earlier in this batch: back as a new node
                Edited &e = edit(pos);
                e.node = std::move(n);
                e.live = e.refilled = true;
            } else {
                std::string key = n.id;
                added_at[std::move(key)] = added.size();
                added.push_back(std::move(n));
                added_live.push_back(true);
            }
            ++live;
            tokens.add(ch.weight);
        } else {
            if (!present)
                return reject(fail(CHR_ENOENT, "%s: no node '%s' in the ring", who,
                                   Quoted(id.data(), id.size()).c_str()));
            tokens.remove(node->weight);
            if (ch.op == CHR_OP_REMOVE) {
                if (in_table) {
                    edit(pos).live = false;
                } else {
                    added_live[found->second] = false;
                    added_at.erase(found);
                }
                --live;
            } else {
                (in_table ? edit(pos).node : added[found->second]).weight = ch.weight;
                tokens.add(ch.weight);
            }
        }
        if (tokens.over_limit())
            return reject(fail(CHR_ERANGE,
                               "%s: change %zu would make %llu tokens (limit %u; native "
                               "placement: weight x tokens_per_weight %u summed over nodes)",
                               who, c, (unsigned long long)tokens.total(), CHR_TOKENS_MAX,
                               placement.tokens_per_weight));
    }

    // New ids in id order, then one merge with the base slots, edited ones
    // (in position order) as the batch left them.
    std::vector<size_t> order;
    order.reserve(added_at.size());
    for (size_t a = 0; a < added.size(); ++a)
        if (added_live[a]) order.push_back(a);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return added[x].id < added[y].id; });
    std::vector<size_t> by_pos(edited.size());
    for (size_t e = 0; e < edited.size(); ++e) by_pos[e] = e;
    std::sort(by_pos.begin(), by_pos.end(), [&](size_t x, size_t y) { return edited[x].pos < edited[y].pos; });
    d.nodes.reserve(live);
    d.old_index.reserve(live);
    // Where each added node goes: before the first base entry after it
    // (found once, not compared at every entry).
    std::vector<size_t> added_pos(order.size());
    for (size_t j = 0; j < order.size(); ++j) added_pos[j] = position(table, added[order[j]].id);
    // The base table in runs between the places an added or edited node
    // goes: a run is copied as it is (kept tokens, nothing regenerated).
    d.regenerate.reserve(live);
    auto push = [&](Node &&n, int64_t old) {
        d.regenerate.push_back(old < 0 || base.node(size_t(old)).weight != n.weight);
        d.nodes.push_back(std::move(n));
        d.old_index.push_back(old);
    };
    size_t pending = 0, next_edit = 0;
    for (size_t k = 0;;) {
        size_t stop = table.size();
        if (pending < order.size()) stop = std::min(stop, added_pos[pending]);
        if (next_edit < by_pos.size()) stop = std::min(stop, edited[by_pos[next_edit]].pos);
        d.nodes.insert(d.nodes.end(), table.begin() + ptrdiff_t(k), table.begin() + ptrdiff_t(stop));
        for (; k < stop; ++k) d.old_index.push_back(int64_t(k));
        d.regenerate.resize(d.nodes.size(), 0);
        while (pending < order.size() && added_pos[pending] <= k) push(std::move(added[order[pending++]]), -1);
        if (k == table.size()) break;
        if (next_edit < by_pos.size() && edited[by_pos[next_edit]].pos == k) {
            Edited &e = edited[by_pos[next_edit++]];
            if (e.live) push(std::move(e.node), e.refilled ? -1 : int64_t(k));
            ++k;
        }
    }
    d.token_bound = tokens.total();

    Marks by_index;
    if (marks) {
        by_index.panic_threshold = marks->panic_threshold;
        by_index.down.assign(d.nodes.size(), 0);
        for (const std::string &id : marks->down) {
            const size_t k = position(d.nodes, id);
            if (k < d.nodes.size() && d.nodes[k].id == id) by_index.down[k] = 1;
        }
    }
    reserve_one_more(retired_);  // so publishing cannot fail after the swap
    *next = new Snapshot(base, std::move(d), marks ? &by_index : nullptr);
    return CHR_OK;
}

chr_status Ring::set_marks(const MarksPlan &plan) {
    std::lock_guard<std::mutex> lock(writer_);
    const Snapshot &base = *current_.load(std::memory_order_relaxed);
    Marks marks = base.marks();
    if (marks.down.empty()) marks.down.assign(base.node_count(), 0);
    if (chr_status st = plan(base, marks)) return st;
    bool same = marks.panic_threshold == base.panic_threshold();
    for (size_t i = 0; same && i < base.node_count(); ++i) same = (marks.down[i] != 0) == base.marked(i);
    if (same) return CHR_OK;
    reserve_one_more(retired_);  // so publishing cannot fail after the swap
    publish(new Snapshot(base, std::move(marks)));
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
