// chring etcd down|up|panic-threshold: the operators' side of the ring's
// availability (availability.hpp, docs/etcd.md "Availability"). A mark is
// P/down/<id field> under a lease (--for, or --hold while the command
// runs); each command builds the ring the change leaves, prints what it
// does (the member's share of the keys moves to its next replicas, panic)
// and writes in one transaction that compares only the keys it depends on,
// so a checker's write at the same moment is no conflict.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "../options.hpp"
#include "../spelling.hpp"
#include "admin.hpp"
#include "availability.hpp"

namespace chring::cli::etcd {

namespace {

StopFlag g_hold_stop = 0;
extern "C" void on_hold_signal(int) { g_hold_stop = 1; }

// "1h", "30m", "90s", "90", "2d": seconds, 1 s .. 365 d.
double parse_duration(const std::string &text) {
    size_t end = 0;
    double n = -1;
    try {
        n = std::stod(text, &end);
    } catch (const std::exception &) {
    }
    const std::string unit = text.substr(std::min(end, text.size()));
    const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : 0;
    const double seconds = n * scale;
    if (end == 0 || scale == 0 || !std::isfinite(seconds) || seconds < 1 || seconds > 365 * 86400.0 ||
        text.find_first_of(" \t") != std::string::npos)
        throw UsageError("--for: " + quoted_bounded(text) + " is not a duration of 1s..365d (90s, 30m, 1h, 2d)");
    return seconds;
}

// What the ring's availability becomes, from `before` (the state in etcd;
// may be invalid) to `after`, for the member `id` (empty: none in
// particular): printed before anything is written.
void print_availability_change(const Built &before, const Built &after, const std::string &id,
                               const std::string &change) {
    const Availability &now = *after.availability;
    const Availability *was = before.availability ? before.availability.get() : nullptr;
    std::string share;
    if (!id.empty())
        for (const NodeInfo &n : after.ring->snapshot().nodes())
            if (n.id == id) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.2f%%", n.ownership * 100.0);
                share = buf;
            }
    const DownMember *down_after = id.empty() ? nullptr : now.find(id);
    const DownMember *down_before = was && !id.empty() ? was->find(id) : nullptr;
    std::cout << change << ": ";
    if (id.empty())
        std::cout << "panic threshold " << (was ? std::to_string(was->threshold) + "% -> " : "") << now.threshold << "%";
    else if (down_after && !down_before)
        std::cout << printable_id(id) << "'s keys (" << share << " of the keys) go to their next replicas";
    else if (!down_after && down_before)
        std::cout << printable_id(id) << "'s keys (" << share << " of the keys) come back to it";
    else if (down_after)
        std::cout << printable_id(id) << " stays down (" << down_after->why() << ")";
    else
        std::cout << printable_id(id) << " stays up";
    std::cout << "; down: " << (was ? was->down_text() + " -> " : "") << now.down_text() << "; " << weight_text(now.info)
              << '\n';
    const bool panic_before = was && was->info.panic;
    if (now.info.panic && !panic_before)
        std::cout << change << ": the ring enters panic: " << weight_text(now.info)
                  << ": every mark is ignored, every member used, while it lasts\n";
    else if (now.info.panic)
        std::cout << change << ": the ring stays in panic (" << weight_text(now.info)
                  << "): the marks take effect when it ends\n";
    else if (panic_before)
        std::cout << change << ": the ring leaves panic: the marks take effect again\n";
}

nlohmann::json put_leased_op(const std::string &key, const std::string &value, uint64_t lease) {
    return {{"request_put",
             {{"key", base64_encode(key)}, {"value", base64_encode(value)}, {"lease", std::to_string(lease)}}}};
}

// The lease of a mark: granted for `ttl` seconds; its id.
uint64_t grant_lease(Client &client, double ttl) {
    nlohmann::json answer = client.post("/v3/lease/grant", {{"TTL", int64_t(std::llround(ttl))}});
    const uint64_t id = json_u64(answer, "ID");
    if (id == 0 || json_u64(answer, "TTL") == 0) throw CliError("etcd granted no lease: " + answer.dump());
    return id;
}

void revoke_lease(Client &client, uint64_t lease) {
    try {
        client.post("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
    } catch (const ServerError &e) {
        if (!e.not_found()) throw;
    }
}

// --hold: the mark's lease is kept alive until SIGTERM or SIGINT, then revoked.
constexpr double kHoldTtl = 10;

// From the start of a --hold: a signal during the write or --wait ends the hold at once.
void catch_hold_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_hold_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
}

int hold_mark(Admin &a, uint64_t lease, const std::string &key) {
    std::cout << "holding " << key << " until SIGTERM or SIGINT (its lease: " << seconds_text(kHoldTtl)
              << " s, kept alive)" << std::endl;
    using Clock = std::chrono::steady_clock;
    auto next = Clock::now();
    std::string failing;  // the keepalive failure said last
    while (!g_hold_stop) {
        if (Clock::now() >= next) {
            const std::string expired = "the lease of " + key + " expired: the mark is gone";
            try {
                nlohmann::json answer = a.client().post("/v3/lease/keepalive", {{"ID", std::to_string(lease)}});
                auto result = answer.find("result");
                if (result == answer.end() || json_u64(*result, "TTL") == 0) throw CliError(expired);
                next = Clock::now() + std::chrono::milliseconds(long(kHoldTtl * 1000 / 3));
                if (!failing.empty()) std::cerr << "chring: etcd: keeping the mark alive again\n";
                failing.clear();
            } catch (const ServerError &e) {
                if (e.not_found()) throw CliError(expired);
                throw;
            } catch (const TransportError &e) {
                // etcd away for a moment: tried again every second while the lease may live
                if (failing.empty()) std::cerr << "chring: etcd: cannot keep the mark alive (trying again): " << e.what() << '\n';
                failing = e.what();
                next = Clock::now() + std::chrono::seconds(1);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    revoke_lease(a.client(), lease);
    std::cout << "revoked the lease of " << key << ": the mark is gone" << std::endl;
    return 0;
}

int run_down(Admin &a) {
    const AdminFlags &f = a.flags();
    const double ttl = f.hold ? kHoldTtl : parse_duration(f.for_text);
    const std::string change = "down " + visible_bounded(f.id);
    const auto [id, cur, member_key] = find_member(a);
    const std::string key = a.layout().down_key(canonical_field(id));
    std::string note = "chring etcd down " + where_and_when() +
                       (f.hold ? " while the command runs (--hold)" : " for " + f.for_text) +
                       (f.reason.empty() ? "" : ": " + f.reason);
    if (note.size() > kNoteMax)
        throw UsageError("--reason: " + std::to_string(f.reason.size()) + " bytes: the mark's note would be over " +
                         std::to_string(kNoteMax));
    if (f.hold) catch_hold_signals();
    State next = cur.state;
    if (auto it = next.find(key); it != next.end())
        std::cout << change << ": already marked (" << visible_bounded(it->second, 128) << "): the mark is replaced\n";
    next[key] = note;
    const Built b = a.validate(next, change);
    const Built before = build_ring(a.layout(), cur.state, f.etcd.plugin_dir_or_null());
    print_availability_change(before, b, id, change);
    if (f.dry_run) {
        std::cout << "dry run: nothing written\n";
        return 0;
    }
    const uint64_t lease = grant_lease(a.client(), ttl);
    uint64_t rev = 0;
    try {
        rev = a.commit(cur, one(unchanged_compare(member_key, cur.mod_revision.at(member_key))),
                       one(put_leased_op(key, note, lease)), false);
    } catch (const CliError &) {
        revoke_lease(a.client(), lease);
        throw;
    }
    std::cout << "marked " << printable_id(id) << " down"
              << (f.hold ? " while this command runs" : " for " + f.for_text + " (unless marked again)") << ": revision "
              << rev << ", availability " << hex64(b.availability->info.digest) << '\n';
    const int status = a.finish(rollout(rev, b, true));
    if (status != 0 || !f.hold) return status;
    return hold_mark(a, lease, key);
}

int run_up(Admin &a) {
    const AdminFlags &f = a.flags();
    const std::string change = "up " + visible_bounded(f.id);
    const std::string id = decode_id(f.id, quoted_bounded(f.id));
    const Current cur = a.read();
    // Every key that marks the id, whatever its spelling.
    std::vector<std::string> keys;
    const std::string dir = a.layout().down_dir();
    for (auto it = cur.state.lower_bound(dir); it != cur.state.end() && it->first.compare(0, dir.size(), dir) == 0;
         ++it) {
        try {
            if (decode_id(std::string_view(it->first).substr(dir.size()), it->first) == id) keys.push_back(it->first);
        } catch (const CliError &) {
            // a malformed mark: the state is refused below, naming it
        }
    }
    State next = cur.state;
    for (const std::string &k : keys) next.erase(k);
    const Built b = a.validate(next, change);
    if (keys.empty()) {
        if (!cur.key_of_id.count(id))
            throw CliError(change + ": " + quoted_bounded(f.id) + " is neither a member of " + a.layout().prefix() +
                           " nor marked down (revision " + std::to_string(cur.header.revision) + ")");
        const DownMember *d = b.availability->find(id);
        std::cout << printable_id(id) << " has no operator's mark: nothing written"
                  << (d ? " (it is down: " + d->why() + ")" : "") << '\n';
        return a.finish(rollout(cur.header.revision, b, false));
    }
    if (cur.key_of_id.count(id))
        print_availability_change(build_ring(a.layout(), cur.state, f.etcd.plugin_dir_or_null()), b, id, change);
    else
        std::cout << change << ": " << printable_id(id) << " is not a member: its mark was ignored, it goes\n";
    if (f.dry_run) {
        std::cout << "dry run: nothing written\n";
        return 0;
    }
    nlohmann::json compares = nlohmann::json::array(), ops = nlohmann::json::array();
    for (const std::string &k : keys) {
        compares.push_back(unchanged_compare(k, cur.mod_revision.at(k)));
        ops.push_back(delete_op(k));
    }
    const uint64_t rev = a.commit(cur, compares, ops, false);
    std::cout << "removed the mark of " << printable_id(id) << ": revision " << rev << ", availability "
              << hex64(b.availability->info.digest) << '\n';
    return a.finish(rollout(rev, b, true));
}

int run_panic_threshold(Admin &a) {
    const AdminFlags &f = a.flags();
    const Current cur = a.read();
    const Built now = a.validate(cur.state, "panic-threshold");
    const Availability &av = *now.availability;
    if (f.percent < 0) {
        std::cout << "panic threshold " << av.threshold << "%" << (av.threshold_set ? "" : " (default)") << "; "
                  << weight_text(av.info) << (av.info.panic ? ": panic, marks ignored" : "") << '\n';
        return 0;
    }
    const std::string key = a.layout().panic_threshold_key();
    const std::string value = std::to_string(f.percent);
    const std::string change = "panic-threshold " + value;
    if (auto it = cur.state.find(key); it != cur.state.end() && it->second == value) {
        std::cout << "the panic threshold already is " << value << "%: nothing written\n";
        return a.finish(rollout(cur.header.revision, now, false));
    }
    State next = cur.state;
    next[key] = value;
    const Built b = a.validate(next, change);
    print_availability_change(now, b, "", change);
    if (f.dry_run) {
        std::cout << "dry run: nothing written\n";
        return 0;
    }
    auto it = cur.mod_revision.find(key);
    const uint64_t rev = a.commit(cur, one(it == cur.mod_revision.end() ? absent_compare(key)
                                                                       : unchanged_compare(key, it->second)),
                                  one(put_op(key, value)), false);
    std::cout << "panic threshold " << value << "%: revision " << rev << ", availability "
              << hex64(b.availability->info.digest) << '\n';
    return a.finish(rollout(rev, b, true));
}

}  // namespace

void add_availability_commands(CLI::App &etcd_app, const std::shared_ptr<AdminFlags> &flags) {
    CLI::App *etcd = &etcd_app;
    CLI::App *down = etcd->add_subcommand(
        "down", "Mark a member down (PREFIX/down/ID under a lease): its keys go to their next replicas, no token moves");
    down->add_option("id", flags->id, "The member's id, as in a ring file")->required();
    down->add_option("--for", flags->for_text,
                     "How long the mark lives unless written again (the lease's TTL): 90s, 30m, 1h, 2d")
        ->type_name("DURATION")
        ->capture_default_str();
    down->add_option("--reason", flags->reason, "Why, for people: part of the mark's note")->type_name("TEXT");
    down->add_flag("--hold", flags->hold,
                   "Keep the mark while this command runs (its lease kept alive), revoke it on SIGTERM or SIGINT");
    add_wait_flag(*down, *flags);
    down->callback([flags, down] {
        if (flags->hold && down->count("--for")) throw UsageError("--hold and --for: give one");
        guarded(flags, run_down);
    });

    CLI::App *up = etcd->add_subcommand("up", "Remove an operator's down mark (the checkers' view stays)");
    up->add_option("id", flags->id, "The member's id, as in a ring file")->required();
    add_wait_flag(*up, *flags);
    up->callback([flags] { guarded(flags, run_up); });

    CLI::App *threshold = etcd->add_subcommand(
        "panic-threshold", "Print or set the panic threshold: the percent of the weight down beyond which marks are ignored");
    threshold->add_option("percent", flags->percent, "The new threshold, 0..100 (100: never panic); none: print it")
        ->check(CLI::Range(0, 100));
    add_wait_flag(*threshold, *flags);
    threshold->callback([flags] { guarded(flags, run_panic_threshold); });
}

}  // namespace chring::cli::etcd
