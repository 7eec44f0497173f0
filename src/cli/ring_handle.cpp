#include "ring_handle.hpp"

#include <charconv>

#include "spelling.hpp"

namespace chring::cli {

void throw_no_hasher(const std::string &context, const char *plugin_dir) {
    std::string message = chr_last_error();
    if (!context.empty()) message = context + ": " + message;
    throw CliError(message + " (available: " + hasher_names(plugin_dir) + ")");
}

void check(chr_status st, const std::string &context) {
    if (st == CHR_OK) return;
    std::string message = chr_last_error();
    if (message.empty()) message = chr_strerror(st);
    throw CliError(context.empty() ? message : context + ": " + message);
}

// The library's placements (chr_placement_describe: modes 0, 1, ... until
// CHR_ENOTSUP), so the CLI never restates which hasher each one needs.
const std::vector<PlacementMode> &placement_modes() {
    static const std::vector<PlacementMode> modes = [] {
        std::vector<PlacementMode> all;
        for (int32_t mode = 0;; ++mode) {
            chr_placement_info info = CHR_PLACEMENT_INFO_INIT;
            if (chr_placement_describe(mode, &info) != CHR_OK) break;
            all.push_back({info.name, info.mode, info.hasher ? info.hasher : CHR_DEFAULT_HASHER,
                           info.summary});
        }
        return all;
    }();
    return modes;
}

std::string placement_names() {
    std::string known;
    for (const PlacementMode &m : placement_modes()) known += known.empty() ? m.name : std::string(", ") + m.name;
    return known;
}

const PlacementMode &placement_mode(const std::string &name) {
    for (const PlacementMode &m : placement_modes())
        if (name == m.name) return m;
    throw CliError("unknown placement mode '" + name + "' (this build knows: " + placement_names() + ")");
}

std::string RingConfig::effective_hasher() const {
    return hasher.empty() ? placement_mode(placement).hasher : hasher;
}

size_t Snapshot::node_count() const {
    size_t n = 0;
    check(chr_snapshot_node_count(snap_, &n), "");
    return n;
}

size_t Snapshot::token_count() const {
    size_t n = 0;
    check(chr_snapshot_token_count(snap_, &n), "");
    return n;
}

uint64_t Snapshot::fingerprint() const {
    uint64_t f = 0;
    check(chr_snapshot_fingerprint(snap_, &f), "");
    return f;
}

std::vector<NodeInfo> Snapshot::nodes() const {
    std::vector<NodeInfo> out(node_count());
    for (size_t i = 0; i < out.size(); ++i) {
        chr_node_view v;
        check(chr_snapshot_node(snap_, i, &v), "");
        NodeInfo &n = out[i];
        n.id.assign(reinterpret_cast<const char *>(v.id), v.id_len);
        n.zone.assign(reinterpret_cast<const char *>(v.zone), v.zone_len);
        n.weight = v.weight;
        n.tokens = v.tokens;
        n.ownership = v.ownership;
        n.tag = v.tag;
        n.down = (v.flags & CHR_NODE_DOWN) != 0;
        uint32_t marked = 0;
        check(chr_snapshot_marked_down(snap_, i, &marked), "");
        n.marked = marked != 0;
    }
    return out;
}

chr_availability_info Snapshot::availability() const {
    chr_availability_info a = CHR_AVAILABILITY_INFO_INIT;
    check(chr_snapshot_availability(snap_, &a), "");
    return a;
}

std::string Snapshot::export_text(uint32_t flags, uint64_t revision) const {
    size_t len = 0;
    chr_status st = chr_snapshot_export(snap_, flags, revision, nullptr, 0, &len);
    if (st != CHR_ERANGE) check(st, "export");
    std::string text(len, '\0');
    check(chr_snapshot_export(snap_, flags, revision, text.data(), text.size(), &len), "export");
    return text;
}

RingConfig Snapshot::options() const {
    // The canonical file starts with every option directive, one
    // "%%name value" line each (docs/ring-file.md, section 6).
    const std::string text = export_text(0, 0);
    RingConfig c;
    auto number = [](const std::string &v, auto &out) { std::from_chars(v.data(), v.data() + v.size(), out); };
    for (size_t pos = 0; pos < text.size() && text.compare(pos, 2, "%%") == 0;) {
        size_t space = text.find(' ', pos), end = text.find('\n', pos);
        const std::string name = text.substr(pos + 2, space - pos - 2);
        const std::string value = text.substr(space + 1, end - space - 1);
        if (name == "placement") c.placement = value;
        else if (name == "hasher") c.hasher = value;
        else if (name == "seed") number(value, c.seed);
        else if (name == "tokens-per-weight") number(value, c.tokens_per_weight);
        pos = end + 1;
    }
    return c;
}

void Snapshot::token(size_t index, uint64_t &value, uint32_t &owner) const {
    check(chr_snapshot_token(snap_, index, &value, &owner), "");
}

void Snapshot::lookup_batch(const void *const *keys, const size_t *lens, size_t n,
                            uint32_t *owners) const {
    check(chr_snapshot_lookup_batch(snap_, keys, lens, n, owners), "lookup");
}

size_t Snapshot::replicas(const void *key, size_t len, size_t n, chr_node_view *out,
                          int32_t policy) const {
    size_t count = 0;
    if (policy == CHR_REPLICAS_NODES)
        check(chr_snapshot_replicas(snap_, key, len, n, out, &count), "replicas");
    else
        check(chr_snapshot_replicas_policy(snap_, key, len, policy, n, out, &count), "replicas");
    return count;
}

std::vector<double> Snapshot::replica_shares(int32_t policy, size_t n) const {
    std::vector<double> shares(node_count());
    size_t count = 0;
    check(chr_snapshot_replica_shares(snap_, policy, n, shares.data(), shares.size(), &count),
          "replica shares");
    return shares;
}

std::vector<std::string> replica_policy_names() {
    std::vector<std::string> names;
    const char *name = nullptr;
    for (int32_t p = 0; chr_replica_policy_name(p, &name) == CHR_OK; ++p) names.push_back(name);
    return names;
}

int32_t replica_policy(const std::string &name) {
    int32_t policy = 0;
    if (chr_replica_policy_find(name.c_str(), &policy) == CHR_OK) return policy;
    std::string known;
    for (const std::string &n : replica_policy_names()) known += (known.empty() ? "" : ", ") + n;
    throw CliError("unknown replica policy '" + name + "' (known: " + known + ")");
}

chr_options RingConfig::options() const {
    chr_options opts;
    check(chr_options_init(&opts, CHR_OPTIONS_VERSION), "");
    opts.tokens_per_weight = tokens_per_weight;
    opts.seed = seed;
    opts.hasher = hasher.empty() ? nullptr : hasher.c_str();
    opts.placement = placement_mode(placement).value;
    opts.plugin_dir = plugin_dir.empty() ? nullptr : plugin_dir.c_str();
    return opts;
}

Ring::Ring(const RingConfig &config) {
    const chr_options opts = config.options();
    chr_status st = chr_ring_new(&opts, &ring_);
    if (st == CHR_ENOHASHER) throw_no_hasher("cannot create the ring", opts.plugin_dir);
    check(st, "cannot create the ring");
}

std::string hasher_names(const char *plugin_dir) {
    size_t count = 0;
    chr_status st = chr_hasher_list(plugin_dir, nullptr, 0, &count);
    if (st != CHR_OK && st != CHR_ERANGE) return "unknown";
    std::vector<chr_hasher_info> infos(count);
    if (chr_hasher_list(plugin_dir, infos.data(), infos.size(), &count) != CHR_OK) return "unknown";
    std::string names;
    for (size_t i = 0; i < count; ++i) names += (i ? ", " : "") + std::string(infos[i].name);
    return names.empty() ? "none" : names;
}

void Ring::apply_batch(const std::vector<chr_change> &batch, size_t *failed) {
    *failed = batch.size();
    chr_status st = chr_ring_apply(ring_, batch.data(), batch.size(), failed);
    if (st == CHR_OK) return;
    // The caller names the change that failed; other errors are batch-wide.
    throw CliError(chr_last_error());
}

chr_status Ring::try_add(const std::vector<Member> &members, uint64_t first_tag, size_t *failed) {
    std::vector<chr_change> batch(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
        const Member &m = members[i];
        batch[i] = chr_change{CHR_OP_ADD, m.weight, m.id.data(), m.id.size(), m.zone.data(),
                              m.zone.size(), first_tag + i};
    }
    *failed = members.size();
    return chr_ring_apply(ring_, batch.data(), batch.size(), failed);
}

void Ring::add(const std::vector<Member> &members) {
    size_t failed = 0;
    chr_status st = try_add(members, 0, &failed);
    if (st == CHR_OK) return;
    if (failed >= members.size()) check(st, "");
    check(st, "node '" + printable_id(members[failed].id) + "'");
}

void Ring::apply(const std::vector<Change> &changes) {
    std::vector<chr_change> batch(changes.size());
    for (size_t i = 0; i < changes.size(); ++i) {
        const Member &m = changes[i].member;
        batch[i] = chr_change{changes[i].op, m.weight, m.id.data(), m.id.size(), m.zone.data(),
                              m.zone.size(), changes[i].tag};
    }
    size_t failed = 0;
    try {
        apply_batch(batch, &failed);
    } catch (const CliError &e) {
        if (failed >= changes.size()) throw;
        throw CliError(changes[failed].flag + ": " + e.what());
    }
}

Snapshot Ring::snapshot() const {
    chr_snapshot *snap = nullptr;
    check(chr_ring_snapshot(ring_, &snap), "snapshot");
    return Snapshot(snap);
}

uint64_t hash_bytes(const std::string &hasher, uint64_t seed, const void *data, size_t len) {
    uint64_t h = 0;
    chr_status st = chr_hasher_hash(hasher.c_str(), data, len, seed, &h);
    if (st == CHR_ENOHASHER) throw_no_hasher("hash", nullptr);
    check(st, "hash");
    return h;
}

}  // namespace chring::cli
