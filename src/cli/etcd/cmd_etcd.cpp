// chring etcd add|remove|set-weight|apply|show: change the membership kept
// in etcd so that a bad value never gets there. Each change reads the prefix
// at a revision R, builds the ring of the state it would leave with the
// library (the watcher's own check), and writes in one transaction that
// succeeds only if nothing under the prefix changed since R. Before it
// writes, a change prints what it moves; one that breaks a guard rail
// (guard.hpp) is written only with --force, together with the guard key
// that lets the watchers publish it. The availability operations (down,
// up, panic-threshold) are in cmd_availability.cpp.
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <memory>
#include <optional>

#include "../options.hpp"
#include "../report.hpp"
#include "../spelling.hpp"
#include "admin.hpp"
#include "availability.hpp"

namespace chring::cli::etcd {

Current Admin::read() {
    RangeResult r = client_.range(layout_.range_begin(), layout_.range_end());
    Current cur;
    cur.header = r.header;
    const std::string dir = layout_.members_dir();
    for (KeyValue &kv : r.kvs) {
        cur.mod_revision[kv.key] = kv.mod_revision;
        if (layout_.is_member_key(kv.key)) {
            try {  // the id alone, so that a member with a bad value can be removed
                cur.key_of_id.emplace(decode_id(std::string_view(kv.key).substr(dir.size()), kv.key), kv.key);
            } catch (const CliError &) {
                // an undecodable key: the state is refused by validate()
            }
        }
        cur.state.emplace(std::move(kv.key), std::move(kv.value));
    }
    return cur;
}

Built Admin::validate(const State &state, const std::string &change) {
    Built b = build_ring(layout_, state, f_.etcd.plugin_dir_or_null());
    if (!b.ring)
        throw CliError(change + ": refused, the ring would be invalid: " + b.error +
                       "; nothing was written");
    return b;
}

nlohmann::json put_op(const std::string &key, const std::string &value) {
    return {{"request_put", {{"key", base64_encode(key)}, {"value", base64_encode(value)}}}};
}

nlohmann::json delete_op(const std::string &key) {
    return {{"request_delete_range", {{"key", base64_encode(key)}}}};
}

nlohmann::json unchanged_compare(const std::string &key, uint64_t mod_revision) {
    return {{"key", base64_encode(key)}, {"target", "MOD"}, {"result", "EQUAL"},
            {"mod_revision", std::to_string(mod_revision)}};
}

nlohmann::json absent_compare(const std::string &key) {
    return {{"key", base64_encode(key)}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
}

nlohmann::json one(nlohmann::json x) { return nlohmann::json::array({std::move(x)}); }

uint64_t Admin::commit(const Current &cur, nlohmann::json compares, nlohmann::json ops, bool whole_prefix) {
    // No key under the prefix was written after the revision read. (A key
    // that vanished is not seen by a range compare: the compares the caller
    // adds for the keys it touches cover those.)
    if (whole_prefix)
        compares.push_back({{"key", base64_encode(layout_.range_begin())},
                        {"range_end", base64_encode(layout_.range_end())},
                        {"target", "MOD"},
                        {"result", "LESS"},
                        {"mod_revision", std::to_string(cur.header.revision + 1)}});
    nlohmann::json answer;
    try {
        answer = client_.post("/v3/kv/txn", {{"compare", compares}, {"success", ops}});
    } catch (const ServerError &e) {
        std::string what = e.what();
        if (what.find("too many operations") != std::string::npos)
            what += " (etcd's --max-txn-ops, 128 by default, bounds the changes of one transaction: raise it, or "
                    "change the ring in steps)";
        throw CliError(what);
    }
    if (!answer.value("succeeded", false))
        throw CliError("conflict: " + layout_.prefix() + (whole_prefix ? "" : "'s keys for this change") +
                       " changed since revision " +
                       std::to_string(cur.header.revision) +
                       " (another writer); nothing was written: read it again and retry");
    return parse_header(answer).revision;
}

std::string where_and_when() {
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    char when[32] = "";
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    if (gmtime_r(&now, &utc)) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return "on " + visible(host) + " at " + when;
}

namespace {

// Who lifted a guard, when and why: the guard key's value (for people;
// the watchers read only its mod_revision).
std::string lift_note(const std::string &change, const std::string &broken) {
    return "lifted by chring etcd " + change + " --force " + where_and_when() + ": " + broken + "\n";
}

}  // namespace

std::optional<nlohmann::json> Admin::plan(const Current &cur, const Built &next, const std::string &change) {
    Built before = build_ring(layout_, cur.state, f_.etcd.plugin_dir_or_null());
    const std::unique_ptr<Snapshot> old_snap = before.ring ? std::make_unique<Snapshot>(before.ring->snapshot()) : nullptr;
    const ChangeEffect effect = measure(old_snap.get(), next.ring->snapshot());
    std::cout << change << ": " << describe(effect)
              << (before.ring ? "" : " (the state in etcd is not a valid ring: " + before.error + ")") << '\n';
    for (const std::string &line : flow_lines(effect, 10)) std::cout << line << '\n';
    const std::string broken = violation(f_.guard, effect);
    if (f_.dry_run) {
        std::cout << "dry run: nothing written" << (broken.empty() ? "" : "; it needs --force: " + broken) << '\n';
        return std::nullopt;
    }
    nlohmann::json ops = nlohmann::json::array();
    if (broken.empty()) return ops;
    if (!f_.force)
        throw CliError(change + ": refused: " + broken + ": add --force to write it (it also writes " +
                       layout_.guard_key() + ", which lets the watchers publish it); nothing was written");
    ops.push_back(put_op(layout_.guard_key(), lift_note(change, broken)));
    std::cout << change << ": --force: " << broken << "; writing " << layout_.guard_key() << '\n';
    return ops;
}

namespace {

// The change's own operations followed by the plan's.
nlohmann::json with(nlohmann::json ops, const nlohmann::json &more) {
    for (const nlohmann::json &op : more) ops.push_back(op);
    return ops;
}

std::string summary(uint64_t revision, const Built &b) {
    return "revision " + std::to_string(revision) + ", fingerprint " + hex64(b.fingerprint) + ", " +
           std::to_string(b.members) + (b.members == 1 ? " member" : " members");
}

}  // namespace

Rollout rollout(uint64_t revision, const Built &b, bool written) {
    return {revision, b.fingerprint, b.availability->info.digest, written};
}

Target find_member(Admin &a) {
    const std::string &arg = a.flags().id;
    Target t;
    t.id = decode_id(arg, quoted_bounded(arg));
    t.cur = a.read();
    auto it = t.cur.key_of_id.find(t.id);
    if (it == t.cur.key_of_id.end())
        throw CliError(quoted_bounded(arg) + " is not a member of " + a.layout().prefix() + " (revision " +
                       std::to_string(t.cur.header.revision) + ")");
    t.key = it->second;
    return t;
}

namespace {

int run_add(Admin &a) {
    const AdminFlags &f = a.flags();
    const std::string change = "add " + visible_bounded(f.id);
    std::string value = std::to_string(f.weight) + (f.zone.empty() ? "" : " " + f.zone);
    MemberEntry m = parse_member(f.id, value, change);
    // ZONE is the line's third field: one that reads as none ("#z" starts a
    // comment, a blank is no field) would drop the zone given.
    if (!f.zone.empty() && m.zone.empty())
        throw CliError(change + ": the zone " + quoted_bounded(f.zone) + " is read as no zone in the member line " +
                       quoted_bounded(f.id + " " + value) + " (write a leading '#' as %23, a space as %20)");
    Current cur = a.read();
    auto it = cur.key_of_id.find(m.id);
    if (it != cur.key_of_id.end())
        throw CliError(change + ": already a member (key " + a.layout().shown(it->second) +
                       "): use set-weight or remove");
    const std::string key = a.layout().member_key(m.id_field);
    State next = cur.state;
    next[key] = m.value;
    Built b = a.validate(next, change);
    const std::optional<nlohmann::json> more = a.plan(cur, b, change);
    if (!more) return 0;  // a dry run: nothing to wait for
    uint64_t rev = a.commit(cur, one(absent_compare(key)), with(one(put_op(key, m.value)), *more));
    std::cout << "added " << printable_id(m.id) << " (weight " << m.weight
              << (m.zone.empty() ? "" : ", zone " + printable_id(m.zone)) << "): " << summary(rev, b) << '\n';
    return a.finish(rollout(rev, b, true));
}

int run_remove(Admin &a) {
    const AdminFlags &f = a.flags();
    const auto [id, cur, key] = find_member(a);
    State next = cur.state;
    next.erase(key);
    const std::string change = "remove " + visible_bounded(f.id);
    Built b = a.validate(next, change);
    const std::optional<nlohmann::json> more = a.plan(cur, b, change);
    if (!more) return 0;  // a dry run: nothing to wait for
    uint64_t rev = a.commit(cur, one(unchanged_compare(key, cur.mod_revision.at(key))), with(one(delete_op(key)), *more));
    std::cout << "removed " << printable_id(id) << ": " << summary(rev, b) << '\n';
    return a.finish(rollout(rev, b, true));
}

int run_set_weight(Admin &a) {
    const AdminFlags &f = a.flags();
    const auto [id, cur, key] = find_member(a);
    MemberEntry old;
    try {
        old = parse_member(key.substr(a.layout().members_dir().size()), cur.state.at(key), a.layout().shown(key));
    } catch (const CliError &e) {
        throw CliError(std::string(e.what()) + ": set-weight keeps the zone, which cannot be read here: remove " +
                       "the member and add it again, or correct the value with etcdctl put");
    }
    MemberEntry m = canonical_member(old.id, f.weight, old.zone);
    State next = cur.state;
    next[key] = m.value;
    const std::string change = "set-weight " + visible_bounded(f.id);
    Built b = a.validate(next, change);
    if (cur.state.at(key) == m.value) {
        std::cout << printable_id(id) << " already has weight " << f.weight << ": nothing written ("
                  << summary(cur.header.revision, b) << ")\n";
        return a.finish(rollout(cur.header.revision, b, false));
    }
    const std::optional<nlohmann::json> more = a.plan(cur, b, change);
    if (!more) return 0;  // a dry run: nothing to wait for
    uint64_t rev = a.commit(cur, one(unchanged_compare(key, cur.mod_revision.at(key))),
                            with(one(put_op(key, m.value)), *more));
    std::cout << printable_id(id) << ": weight " << old.weight << " -> " << m.weight << ": " << summary(rev, b)
              << '\n';
    return a.finish(rollout(rev, b, true));
}

int run_apply(Admin &a) {
    const AdminFlags &f = a.flags();
    RingConfig config;
    config.plugin_dir = f.etcd.plugin_dir;
    MembershipFlags file;
    file.file = f.file;
    const LoadedRing loaded = file.load(config);  // members in file order
    const bool has_options = loaded.info.flags & CHR_RINGFILE_HAS_OPTIONS;
    std::vector<MemberEntry> members;
    for (const NodeInfo &n : loaded.members) members.push_back(canonical_member(n.id, n.weight, n.zone));

    Current cur = a.read();
    const std::string options_key = a.layout().options_key();
    State next;
    if (has_options)
        next[options_key] = options_value(loaded.ring->snapshot());
    else if (auto it = cur.state.find(options_key); it != cur.state.end())
        next[options_key] = it->second;  // a plain member list keeps the ring's options
    for (const MemberEntry &m : members) next[a.layout().member_key(m.id_field)] = m.value;
    // Not the file's: the guard and the availability keys stay as they are.
    for (const auto &[key, value] : cur.state)
        if (a.layout().is_kept_by_apply(key)) next[key] = value;
    Built b = a.validate(next, "apply " + f.file);

    // For the compatibility placements the members' order breaks ties; in
    // etcd it is the order of their keys. Refuse a file whose order differs.
    // The options as the built ring has them, not the key's raw value: that
    // one may lack its last line's LF, which would join the first member's line.
    std::string reference = options_value(b.ring->snapshot());
    for (const MemberEntry &m : members) reference += m.id_field + " " + m.value + "\n";
    const chr_options base = config.options();
    chr_ring *ref = nullptr;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    check(chr_ring_new_from_text(reference.data(), reference.size(), f.file.c_str(), &base, &ref, &info), f.file);
    chr_ring_free(ref);
    if (info.fingerprint != b.fingerprint)
        throw CliError("apply " + f.file + ": refused: in etcd the members are in the order of their keys, which "
                       "is not the file's order, and for this placement the order is part of the ring "
                       "(fingerprint " + hex64(b.fingerprint) + ", not the file's " + hex64(info.fingerprint) +
                       "): sort the member lines by id; nothing was written");

    nlohmann::json ops = nlohmann::json::array();
    size_t added = 0, removed = 0, changed = 0;
    bool options_changed = false;
    for (const auto &[key, value] : next) {
        auto it = cur.state.find(key);
        if (it != cur.state.end() && it->second == value) continue;
        ops.push_back(put_op(key, value));
        if (key == options_key)
            options_changed = true;
        else
            ++(it == cur.state.end() ? added : changed);
    }
    for (const auto &[key, value] : cur.state) {
        if (next.count(key)) continue;
        ops.push_back(delete_op(key));
        if (key == options_key)
            options_changed = true;
        else
            ++removed;
    }
    if (ops.empty()) {
        std::cout << a.layout().prefix() << " already is " << f.file << ": nothing written ("
                  << summary(cur.header.revision, b) << ")\n";
        return a.finish(rollout(cur.header.revision, b, false));
    }
    const std::optional<nlohmann::json> more = a.plan(cur, b, "apply " + f.file);
    if (!more) return 0;  // a dry run: nothing to wait for
    uint64_t rev = a.commit(cur, nlohmann::json::array(), with(ops, *more));
    std::cout << "applied " << f.file << ": " << added << " added, " << removed << " removed, " << changed
              << " changed, options " << (options_changed ? "changed" : "unchanged") << ": " << summary(rev, b)
              << '\n';
    return a.finish(rollout(rev, b, true));
}

int run_show(Admin &a) {
    const AdminFlags &f = a.flags();
    Current cur = a.read();
    Built b = build_ring(a.layout(), cur.state, f.etcd.plugin_dir_or_null());
    if (!b.ring)
        throw CliError(a.layout().prefix() + " at revision " + std::to_string(cur.header.revision) +
                       " is not a valid ring: " + b.error);
    const uint64_t rev = cur.header.revision;
    const Snapshot snap = b.ring->snapshot();
    if (f.format == "json" || f.format == "ring-file") {
        std::cout << snap.export_text(CHR_EXPORT_REVISION | (f.format == "json" ? CHR_EXPORT_JSON : 0u), rev);
        return 0;
    }
    const std::string options = describe_options(snap.options());
    Report report;
    Table t;
    t.key = "ring";
    t.record = true;
    t.add_field("prefix", "prefix", text_cell(a.layout().prefix()));
    t.add_field("revision", "revision", text_cell(std::to_string(rev)));
    t.add_field("fingerprint", "fingerprint", hex_cell(b.fingerprint));
    t.add_field("options", "options",
                text_cell(options + (cur.state.count(a.layout().options_key()) ? "" : " (no options key: the defaults)")));
    t.add_field("members", "members", count_cell(b.members));
    t.add_field("tokens", "tokens", count_cell(snap.token_count()));
    const Availability &av = *b.availability;
    t.add_field("down", "down",
                text_cell(av.down_text() + " (panic threshold " + std::to_string(av.threshold) + "%" +
                          (av.info.panic ? "; panic: marks ignored)" : ")")));
    t.add_field("digest", "digest", hex_cell(av.info.digest));
    report.tables.push_back(std::move(t));
    Table m;
    m.key = "members";
    m.title = "Members";
    m.columns = {{"id", "id", false}, {"weight", "weight"}, {"zone", "zone", false}, {"tokens", "tokens"},
                 {"share", "share"}};
    for (const NodeInfo &n : snap.nodes())
        m.add_row({text_cell(printable_id(n.id)), count_cell(n.weight),
                   n.zone.empty() ? none_cell() : text_cell(printable_id(n.zone)), count_cell(n.tokens),
                   percent_cell(n.ownership, 2)});
    report.tables.push_back(std::move(m));
    write_report(report, Format::table, std::cout);
    return 0;
}

int run_status(Admin &a) {
    return fleet_status(a.client(), a.reports(), a.layout(), a.flags().etcd.plugin_dir_or_null(),
                        a.flags().format == "json", std::cout);
}

}  // namespace

void guarded(const std::shared_ptr<AdminFlags> &flags, int (*run)(Admin &)) {
    int status = 0;
    try {
        Admin admin(*flags);
        status = run(admin);
    } catch (const UsageError &) {
        throw;
    } catch (const CliError &e) {
        throw CliError(std::string("etcd: ") + e.what());
    }
    if (status != 0) throw ExitStatus(status);
}

void add_wait_flag(CLI::App &cmd, AdminFlags &flags) {
    cmd.add_flag("--wait{60}", flags.wait,
                 "Then wait until every process reporting under PREFIX.status/ holds the new ring (or a later "
                 "one): exit 0; 3 when one refused it or TIMEOUT seconds (default 60) passed, 4 when no "
                 "process reports")
        ->type_name("[=TIMEOUT]")
        ->check(seconds(0.1, 86400));
}

void add_etcd_command(CLI::App &app) {
    auto flags = std::make_shared<AdminFlags>();
    CLI::App *etcd = add_etcd_subcommand(
        app, "etcd", "Change or show the ring kept in etcd, validated before anything is written (docs/etcd.md)",
        "chring etcd --etcd http://127.0.0.1:2379 --prefix /chring/cache add cache-d --weight 2", flags->etcd);
    etcd->require_subcommand(1);
    etcd->fallthrough();  // --etcd and --prefix may also follow the operation
    add_guard_flags(*etcd, flags->guard);
    etcd->add_flag("--dry-run", flags->dry_run, "Print what a change would move, write nothing");
    etcd->add_flag("--force", flags->force,
                   "Write a change that breaks a guard (--min-members, --max-moved), and lift the watchers' guard for it");

    CLI::App *add = etcd->add_subcommand("add", "Add a member (one put; refused if the id is a member)");
    add->add_option("id", flags->id, "The member's id, as in a ring file (%XX escapes)")->required();
    add->add_option("--weight", flags->weight, "Its weight (0..1000000; 0 = a member without tokens)")
        ->type_name("W")
        ->check(whole_number(0, CHR_WEIGHT_MAX))
        ->required();
    add->add_option("--zone", flags->zone, "Its zone, as in a ring file")->type_name("ZONE");
    add_wait_flag(*add, *flags);
    add->callback([flags] { guarded(flags, run_add); });

    CLI::App *remove = etcd->add_subcommand("remove", "Remove a member (one delete)");
    remove->add_option("id", flags->id, "The member's id, as in a ring file")->required();
    add_wait_flag(*remove, *flags);
    remove->callback([flags] { guarded(flags, run_remove); });

    CLI::App *reweight = etcd->add_subcommand("set-weight", "Change a member's weight (its zone is kept)");
    reweight->add_option("id", flags->id, "The member's id, as in a ring file")->required();
    reweight->add_option("weight", flags->weight, "The new weight (0..1000000)")
        ->check(whole_number(0, CHR_WEIGHT_MAX))
        ->required();
    add_wait_flag(*reweight, *flags);
    reweight->callback([flags] { guarded(flags, run_set_weight); });

    CLI::App *apply = etcd->add_subcommand(
        "apply", "Make the prefix equal a ring file (its options if it has any, and its members), one transaction");
    apply->add_option("file", flags->file, "The ring file")->required();
    add_wait_flag(*apply, *flags);
    apply->callback([flags] { guarded(flags, run_apply); });

    add_availability_commands(*etcd, flags);

    CLI::App *show = etcd->add_subcommand("show", "Members, revision and fingerprint of the ring in etcd");
    show->add_option("--format", flags->format,
                     "table (default), json (the ring file's JSON twin) or ring-file (the file the watcher writes)")
        ->type_name("FORMAT")
        ->check(CLI::IsMember({"table", "json", "ring-file"}))
        ->capture_default_str();
    show->callback([flags] { guarded(flags, run_show); });

    CLI::App *status = etcd->add_subcommand(
        "status", "The fleet: which ring each process reporting under PREFIX.status/ holds, against etcd's");
    status->add_option("--format", flags->format, "table (default) or json")
        ->type_name("FORMAT")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    status->footer("Exit status: 0 every reporting process holds the current ring, 3 some lag or refused, "
                   "4 no process reports, 1 error.");
    status->callback([flags] { guarded(flags, run_status); });
}

}  // namespace chring::cli::etcd
