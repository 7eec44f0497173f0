// A snapshot's availability state (chring.h, "Availability"): marks carried
// across a change of membership, and what follows from them (panic, the
// down slots lookups route around, the digest). A snapshot that changes the
// marks alone is built in snapshot_build.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "snapshot.hpp"

namespace chring {

namespace {

// docs/semantics.md, "Availability digest": xxh3-64 of this prefix, the
// threshold, the count of ids marked down, then each id as a 4-byte
// little-endian length and its bytes, ids in byte order.
constexpr char kDigestPrefix[] = "chring availability 1";

void put_u32le(std::string &out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(char(v >> (8 * i) & 0xff));
}

// The digest of `marks` over the node table `nodes`.
uint64_t digest_of(const std::vector<Node> &nodes, const Marks &marks) {
    size_t count = 0;
    for (size_t i = 0; i < marks.down.size(); ++i) count += marks.down[i] != 0;
    if (count == 0 && marks.panic_threshold == CHR_PANIC_THRESHOLD_DEFAULT) return 0;
    std::string bytes(kDigestPrefix, sizeof kDigestPrefix - 1);
    put_u32le(bytes, marks.panic_threshold);
    put_u32le(bytes, uint32_t(count));
    for (size_t i = 0; i < marks.down.size(); ++i)  // the node table is in id byte order
        if (marks.down[i]) {
            put_u32le(bytes, uint32_t(nodes[i].id.size()));
            bytes += nodes[i].id;
        }
    return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace

void Snapshot::carry_marks(const Snapshot &base, const MembershipDelta &delta, const Marks *marks) {
    if (marks) {
        marks_ = *marks;
        return;
    }
    marks_.panic_threshold = base.marks_.panic_threshold;
    if (base.marks_.down.empty()) return;
    marks_.down.assign(delta.nodes.size(), 0);
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.old_index[k] >= 0) marks_.down[k] = base.marks_.down[size_t(delta.old_index[k])];
}

// Requires nodes_' token counts, the slots, zone numbers and weights.
void Snapshot::derive_availability() {
    const size_t N = nodes_.size();
    if (marks_.down.size() != N || std::none_of(marks_.down.begin(), marks_.down.end(), [](uint8_t d) { return d != 0; }))
        marks_.down.clear();
    marked_count_ = down_weight_ = 0;
    for (size_t i = 0; i < marks_.down.size(); ++i)
        if (marks_.down[i]) {
            ++marked_count_;
            down_weight_ += candidate_weight(i);
        }
    // Weights are below 2^32 and members below 2^21: the products fit.
    panic_ = down_weight_ * 100 > total_weight() * marks_.panic_threshold;
    routing_around_ = marked_count_ > 0 && !panic_;
    availability_digest_ = digest_of(nodes_, marks_);
    down_slot_.clear();
    eligible_up_ = eligible_;
    live_zones_up_ = live_zones_;
    if (!routing_around_) return;
    down_slot_.assign(slot_node_.size(), 0);
    std::vector<uint8_t> live(zone_count_, 0);
    eligible_up_ = 0;
    for (size_t i = 0; i < N; ++i) {
        down_slot_[node_slot_[i]] = marks_.down[i] != 0;
        if (nodes_[i].tokens && !marks_.down[i]) {
            ++eligible_up_;
            live[zone_of(i)] = 1;  // zone_of reads node_slot_, set
        }
    }
    live_zones_up_ = size_t(std::count(live.begin(), live.end(), 1));
}

}  // namespace chring
