// A parsed ring file made into a ring, or applied to one as a single batch.
#include <algorithm>
#include <cstring>
#include <string>

#include "base/errors.hpp"
#include "placement.hpp"
#include "plugin/discovery.hpp"
#include "ring.hpp"
#include "base/validate.hpp"
#include "ringfile/ringfile.hpp"

namespace chring {
namespace ringfile {
namespace {

constexpr const char *kBatch = "ring file";  // `who` of the batch; never shown

// A refusal of the file at `line` (0: the file as a whole), about member
// `id` when not null: recorded with the file's name, by entry point `who`.
chr_status at(const File &f, const char *who, size_t line, Outcome &o, chr_status st,
              const std::string &why, const std::string *id = nullptr) {
    o.error_line = line;
    ErrorWhere where;
    where.function = who;
    where.source = f.name.c_str();
    where.line = line;
    if (id) {
        where.member = id->data();
        where.member_len = id->size();
    }
    return fail_at(where, st, "%s", why.c_str());
}

std::string shown_id(const std::string &id) { return "'" + std::string(Quoted(id.data(), id.size()).c_str()) + "'"; }

// The hasher the file's options name: its %%hasher, or the placement's own.
// A compatibility placement with another hasher is a malformed file.
chr_status file_hasher(const File &f, const char *who, Outcome &o, std::string &name) {
    const PlacementOps *ops = find_placement(f.placement);
    const char *required = ops ? ops->hasher : nullptr;
    if (required && !f.hasher.empty() && f.hasher != required)
        return at(f, who, f.hasher_line, o, CHR_EFORMAT,
                  "%%hasher " + f.hasher + ": placement " + placement_name(f.placement) +
                      " is defined with hasher " + required);
    name = !f.hasher.empty() ? f.hasher : required ? required : CHR_DEFAULT_HASHER;
    return CHR_OK;
}

// CHR_EOPTIONS unless the file's options (when it has any) are the ring's.
chr_status same_options(const File &f, const char *who, const Placement &p, Outcome &o) {
    if (!f.options_line) return CHR_OK;  // a plain member list takes the ring's options
    std::string hasher;
    if (chr_status st = file_hasher(f, who, o, hasher)) return st;
    auto differ = [&](const char *what, size_t line, const std::string &mine,
                      const std::string &ring) {
        std::string why = line ? "%%" + std::string(what) + " " + mine
                               : "the file's " + std::string(what) + " is " + mine + " (no %%" +
                                     what + " line: the default)";
        return at(f, who, line ? line : f.options_line, o, CHR_EOPTIONS,
                  why + " differs from the ring's " + what + " " + ring);
    };
    if (f.placement != p.ops->mode)
        return differ("placement", f.placement_line, placement_name(f.placement),
                      placement_name(p.ops->mode));
    if (hasher != p.hasher->name) return differ("hasher", f.hasher_line, hasher, p.hasher->name);
    if (!p.ops->seeded) return CHR_OK;  // seed and tokens per weight do not move its points
    if (f.seed != p.seed)
        return differ("seed", f.seed_line, std::to_string(f.seed), std::to_string(p.seed));
    if (f.tokens_per_weight != p.tokens_per_weight)
        return differ("tokens-per-weight", f.tokens_line, std::to_string(f.tokens_per_weight),
                      std::to_string(p.tokens_per_weight));
    return CHR_OK;
}

// What the ring would refuse, said with the file's line: weights the
// placement does not take, and the token limit.
chr_status within_limits(const File &f, const char *who, const Placement &p, Outcome &o) {
    TokenTally tokens(p);
    for (const Member &m : f.members) {
        if (p.ops->check_weight && p.ops->check_weight(m.weight, kBatch) != CHR_OK)
            return at(f, who, m.line, o, CHR_EFORMAT,
                      "weight " + std::to_string(m.weight) + " of " + shown_id(m.id) +
                          " is out of range for placement " + placement_name(p.ops->mode) +
                          " (0..1: use ketama for weighted servers)",
                      &m.id);
        tokens.add(m.weight);
        if (tokens.over_limit())
            return at(f, who, m.line, o, CHR_EFORMAT,
                      "member " + shown_id(m.id) + " brings the ring over " +
                          std::to_string(CHR_TOKENS_MAX) +
                          " tokens (the limit; weight x tokens-per-weight " +
                          std::to_string(p.tokens_per_weight) + " summed over members)",
                      &m.id);
    }
    return CHR_OK;
}

// The batch that turns `base` into the file's ring: removes, then weight
// decreases, then increases, then adds, so the running token count never
// exceeds the larger of the old and the new ring's. `lines[i]` is the
// file line behind change i (0 for a remove).
void plan_changes(const File &f, const Snapshot &base, std::vector<chr_change> &changes,
                  std::vector<size_t> &lines, Outcome &o) {
    const bool by_position = base.placement()->ops->mode != CHR_PLACEMENT_NATIVE;
    std::vector<uint8_t> kept(base.node_count(), 0);
    std::vector<chr_change> removes, lower, higher, adds;
    std::vector<size_t> lower_lines, higher_lines, add_lines;
    auto add = [&](const Member &m, size_t position) {
        adds.push_back({CHR_OP_ADD, m.weight, m.id.data(), m.id.size(), m.zone.data(),
                        m.zone.size(), uint64_t(position)});
        add_lines.push_back(m.line);
    };
    for (size_t k = 0; k < f.members.size(); ++k) {
        const Member &m = f.members[k];
        int64_t i = base.find(m.id);
        if (i < 0) {
            add(m, k);
            ++o.added;
            continue;
        }
        const Node &n = base.node(size_t(i));
        if (n.zone != m.zone || (by_position && n.tag != k)) {
            removes.push_back({CHR_OP_REMOVE, 0, n.id.data(), n.id.size(), nullptr, 0, 0});
            add(m, k);
            ++o.replaced;
            kept[size_t(i)] = 1;
            continue;
        }
        kept[size_t(i)] = 1;
        if (n.weight == m.weight) continue;
        chr_change c = {CHR_OP_SET_WEIGHT, m.weight, m.id.data(), m.id.size(), nullptr, 0, 0};
        (m.weight < n.weight ? lower : higher).push_back(c);
        (m.weight < n.weight ? lower_lines : higher_lines).push_back(m.line);
        ++o.reweighted;
    }
    std::vector<chr_change> gone;
    for (size_t i = 0; i < base.node_count(); ++i)
        if (!kept[i]) {
            const Node &n = base.node(i);
            gone.push_back({CHR_OP_REMOVE, 0, n.id.data(), n.id.size(), nullptr, 0, 0});
            ++o.removed;
        }
    changes.clear();
    lines.clear();
    for (auto *part : {&gone, &removes}) {
        changes.insert(changes.end(), part->begin(), part->end());
        lines.insert(lines.end(), part->size(), 0);
    }
    changes.insert(changes.end(), lower.begin(), lower.end());
    lines.insert(lines.end(), lower_lines.begin(), lower_lines.end());
    changes.insert(changes.end(), higher.begin(), higher.end());
    lines.insert(lines.end(), higher_lines.begin(), higher_lines.end());
    changes.insert(changes.end(), adds.begin(), adds.end());
    lines.insert(lines.end(), add_lines.begin(), add_lines.end());
}

// The ring's refusal of change `index`, restated with the file's line: its
// reason and member, the change's index in the batch.
chr_status refused(const File &f, const char *who, const std::vector<size_t> &lines, size_t index,
                   chr_status st, Outcome &o) {
    if (st == CHR_ENOMEM) return st;
    RecordedFailure ring;
    recorded_failure(&ring);
    ErrorWhere where;
    where.function = who;
    where.source = f.name.c_str();
    where.line = o.error_line = index < lines.size() ? lines[index] : 0;
    if (ring.member_len) {
        where.member = ring.member;
        where.member_len = ring.member_len;
    }
    where.has_change = true;
    where.change_index = index;
    return fail_at(where, CHR_EFORMAT, "%s", ring.reason);
}

chr_status apply_file(Ring &ring, const File &f, const char *who, Outcome &o, bool check_options) {
    std::vector<size_t> lines;
    Outcome planned;
    size_t failed = 0;
    // The file's availability state, always: one without directives has
    // nothing down and the default threshold.
    Ring::MarksById marks;
    marks.panic_threshold = f.panic_threshold;
    for (const File::Down &d : f.down) marks.down.push_back(d.id);
    chr_status st = ring.apply_planned(
        [&](const Snapshot &base, std::vector<chr_change> &changes) {
            if (check_options)
                if (chr_status bad = same_options(f, who, *base.placement(), planned)) return bad;
            if (chr_status bad = within_limits(f, who, *base.placement(), planned)) return bad;
            plan_changes(f, base, changes, lines, planned);
            return CHR_OK;
        },
        [&](const Snapshot &next) {
            planned.fingerprint = next.fingerprint();
            if (f.fingerprint_line && next.fingerprint() != f.fingerprint) {
                return at(f, who, f.fingerprint_line, planned, CHR_EFORMAT,
                          "%%fingerprint " + hex64(f.fingerprint) +
                              " does not match the ring the file describes (" + hex64(next.fingerprint()) + ")");
            }
            planned.availability = next.availability_digest();
            if (f.availability_line && next.availability_digest() != f.availability)
                return at(f, who, f.availability_line, planned, CHR_EFORMAT,
                          "%%availability " + hex64(f.availability) +
                              " does not match the availability state the file describes (" +
                              hex64(next.availability_digest()) + ")");
            return CHR_OK;
        },
        &failed, kBatch, &marks);
    if (st != CHR_OK && !planned.error_line && failed < lines.size() && st != CHR_EFORMAT &&
        st != CHR_EOPTIONS)
        st = refused(f, who, lines, failed, st, planned);
    o = planned;
    if (st != CHR_OK) o.added = o.removed = o.reweighted = o.replaced = 0;
    return st;
}

}  // namespace

chr_status create(const File &f, const chr_options *base, const char *who, Ring **out, Outcome &o) {
    *out = nullptr;
    o = Outcome();
    chr_options opts = CHR_OPTIONS_INIT;
    std::string hasher;
    const chr_options *use = base;
    if (f.options_line) {
        if (chr_status st = file_hasher(f, who, o, hasher)) return st;
        opts.placement = f.placement;
        opts.hasher = hasher.c_str();
        opts.seed = f.seed;
        opts.tokens_per_weight = f.tokens_per_weight;
        opts.plugin_dir = base ? base->plugin_dir : nullptr;
        use = &opts;
    }
    chr_options checked;
    chr_status st = read_options(who, use, &checked);
    PlacementPtr placement;
    if (st == CHR_OK) st = make_placement(&checked, &placement, who);
    if (st == CHR_ENOHASHER && f.options_line)
        return at(f, who, f.hasher_line ? f.hasher_line : f.options_line, o, st,
                  "%%hasher " + hasher +
                      ": no hasher of that name is registered or found in a plugin (searched next "
                      "to libchring, CHRING_PLUGIN_PATH and plugin_dir)");
    if (st != CHR_OK) return st;
    auto owned = std::make_unique<Ring>(std::move(placement));
    Ring *ring = owned.get();
    st = apply_file(*ring, f, who, o, false);
    if (st != CHR_OK) return st;
    *out = owned.release();
    return CHR_OK;
}

chr_status apply(Ring &ring, const File &f, const char *who, Outcome &o) {
    return apply_file(ring, f, who, o, true);
}

void describe(const File &f, const Outcome &o, chr_status st, chr_ringfile_info *info) {
    if (!info) return;
    chr_ringfile_info d{};
    d.error_line = uint32_t(std::min<size_t>(o.error_line, UINT32_MAX));
    if (st == CHR_OK) {
        d.flags = directive_flags(f);
        d.revision = f.revision;
        d.fingerprint = o.fingerprint;
        d.format_version = f.format_version;
        d.members = uint32_t(f.members.size());
        d.added = o.added;
        d.removed = o.removed;
        d.reweighted = o.reweighted;
        d.replaced = o.replaced;
        d.availability = o.availability;
        d.down = uint32_t(f.down.size());
        d.panic_threshold = f.panic_threshold;
    }
    write_versioned(info, d);
}

}  // namespace ringfile
}  // namespace chring
