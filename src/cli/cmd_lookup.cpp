// chring lookup: the owner (and replicas) of each key. Streams: keys are
// read, routed in batches against one snapshot and written in blocks, so
// millions of keys pipe through at memory speed.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "keys.hpp"
#include "options.hpp"

namespace chring::cli {
namespace {

constexpr size_t kBatch = 4096;
constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kWriteFlush = 1 << 16;

struct LookupFlags {
    MembershipFlags members;
    RingConfig ring;
    std::string format = "table";
    size_t replicas = 1;
    std::string policy = "nodes";
    bool percent = false;
    bool no_header = false;
    std::vector<std::string> keys;
};

// Buffered writes to stdout; a failed write is an error. Whatever is still
// buffered when an error unwinds is dropped (no header without rows).
class Output {
public:
    std::string &buffer() { return buf_; }
    void maybe_flush() {
        if (buf_.size() >= kWriteFlush) flush();
    }
    void flush() {
        if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), stdout) != buf_.size())
            throw CliError("cannot write the output");
        buf_.clear();
        std::fflush(stdout);
    }

private:
    std::string buf_;
};

// Formats one key's answer in the chosen format.
class Writer {
public:
    Writer(Format format, size_t columns, size_t id_width, bool header)
        : format_(format), columns_(columns), id_width_(id_width), header_(header) {}

    void begin(Output &out, size_t key_width_hint) {
        key_width_ = std::max(key_width_, key_width_hint);
        if (!header_) return;
        header_ = false;
        if (format_ == Format::json) return;
        const char *replica = format_ == Format::csv ? "replica_" : "replica ";
        std::vector<std::string> names = {"key", "owner"};
        for (size_t r = 2; r <= columns_; ++r) names.push_back(replica + std::to_string(r));
        write_fields(out.buffer(), names);
    }

    void row(Output &out, const std::string &key, const std::vector<const std::string *> &owners) {
        std::string &b = out.buffer();
        if (format_ == Format::json) {
            nlohmann::ordered_json j;
            j["key"] = key;
            j["owner"] = *owners[0];
            if (columns_ > 1) {
                auto list = nlohmann::ordered_json::array();
                for (const std::string *o : owners) list.push_back(*o);
                j["replicas"] = list;
            }
            b += json_text(j);
            b += '\n';
            return;
        }
        fields_.clear();
        fields_.push_back(key);
        for (size_t r = 0; r < columns_; ++r) fields_.push_back(r < owners.size() ? *owners[r] : std::string());
        write_fields(b, fields_);
    }

private:
    void write_fields(std::string &b, const std::vector<std::string> &fields) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (format_ == Format::csv) {
                if (i) b += ',';
                b += csv_field(fields[i]);
                continue;
            }
            if (i) b += "  ";
            const std::string shown = visible(fields[i]);  // keys are raw bytes
            b += shown;
            size_t width = i == 0 ? key_width_ : id_width_;
            if (i + 1 < fields.size())
                for (size_t w = display_width(shown); w < width; ++w) b += ' ';
        }
        b += '\n';
    }

    Format format_;
    size_t columns_;
    size_t id_width_;
    size_t key_width_ = 3;
    bool header_;
    std::vector<std::string> fields_;
};

class Router {
public:
    Router(const Snapshot &snap, const LookupFlags &f, Writer &writer, Output &out)
        : snap_(snap), flags_(f), writer_(writer), out_(out), policy_(replica_policy(f.policy)) {
        for (const NodeInfo &n : snap.nodes()) ids_.push_back(printable_id(n.id));
        views_.resize(f.replicas);
    }

    // Queues one key as written by the user (decoded here if --percent).
    void add(std::string_view text) {
        shown_.emplace_back(text);
        if (flags_.percent) {
            std::string decoded, why;
            if (!decode_field(text, "key", decoded, why)) throw CliError(why);
            keys_.push_back(std::move(decoded));
        } else {
            keys_.emplace_back(text);
        }
        if (keys_.size() == kBatch) flush();
    }

    void flush() {
        if (keys_.empty()) return;
        size_t widest = 0;
        for (const std::string &k : shown_) widest = std::max(widest, display_width(visible(k)));
        writer_.begin(out_, widest);
        std::vector<const std::string *> owners;
        if (flags_.replicas == 1) {
            ptrs_.resize(keys_.size());
            lens_.resize(keys_.size());
            indices_.resize(keys_.size());
            for (size_t i = 0; i < keys_.size(); ++i) {
                ptrs_[i] = keys_[i].data();
                lens_[i] = keys_[i].size();
            }
            snap_.lookup_batch(ptrs_.data(), lens_.data(), keys_.size(), indices_.data());
            for (size_t i = 0; i < keys_.size(); ++i) {
                owners.assign(1, &ids_[indices_[i]]);
                writer_.row(out_, shown_[i], owners);
                out_.maybe_flush();
            }
        } else {
            for (size_t i = 0; i < keys_.size(); ++i) {
                size_t got = snap_.replicas(keys_[i].data(), keys_[i].size(), flags_.replicas,
                                            views_.data(), policy_);
                owners.clear();
                for (size_t r = 0; r < got; ++r) owners.push_back(&ids_[views_[r].index]);
                writer_.row(out_, shown_[i], owners);
                out_.maybe_flush();
            }
        }
        keys_.clear();
        shown_.clear();
    }

private:
    const Snapshot &snap_;
    const LookupFlags &flags_;
    Writer &writer_;
    Output &out_;
    const int32_t policy_;  // CHR_REPLICAS_*
    std::vector<std::string> ids_;
    std::vector<std::string> keys_, shown_;
    std::vector<const void *> ptrs_;
    std::vector<size_t> lens_;
    std::vector<uint32_t> indices_;
    std::vector<chr_node_view> views_;
};

// Feeds every line of stdin (without its '\n' and a trailing '\r'); a
// line longer than kKeyLineMax is an error with its line number.
void read_stdin_keys(Router &router) {
    std::string pending;
    std::vector<char> chunk(kReadChunk);
    uint64_t line_number = 1;
    auto feed = [&](std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.size() > kKeyLineMax) throw key_too_long("<stdin>", line_number);
        router.add(line);
        ++line_number;
    };
    for (;;) {
        ssize_t got = ::read(STDIN_FILENO, chunk.data(), chunk.size());
        if (got < 0) {
            if (errno == EINTR) continue;
            throw CliError(std::string("cannot read keys from stdin: ") + std::strerror(errno));
        }
        if (got == 0) break;
        std::string_view data(chunk.data(), size_t(got));
        size_t pos = 0;
        for (size_t nl; (nl = data.find('\n', pos)) != std::string_view::npos; pos = nl + 1) {
            std::string_view line = data.substr(pos, nl - pos);
            if (!pending.empty()) {
                pending.append(line);
                line = pending;
            }
            feed(line);
            pending.clear();
        }
        pending.append(data.substr(pos));
        if (pending.size() > kKeyLineMax + 1) throw key_too_long("<stdin>", line_number);  // + 1: a CR
    }
    if (!pending.empty()) feed(pending);
}

void run(LookupFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    Format format = parse_format(f.format);
    if (f.keys.empty() && f.members.file == "-")
        throw UsageError("the membership and the keys cannot both come from stdin: give keys as arguments");
    LoadedRing loaded = f.members.load(f.ring);
    Snapshot snap = loaded.ring->snapshot();

    size_t with_tokens = 0, id_width = 5;
    for (const NodeInfo &n : snap.nodes()) {
        with_tokens += n.tokens > 0;
        id_width = std::max(id_width, display_width(printable_id(n.id)));
    }
    if (with_tokens == 0)
        throw CliError("no key can have an owner: " + loaded.why_no_tokens + " (give members with a weight above 0)");
    size_t columns = std::max<size_t>(1, std::min(f.replicas, with_tokens));
    if (columns > 1) id_width = std::max(id_width, display_width("replica " + std::to_string(columns)));
    Output out;
    Writer writer(format, columns, id_width, !f.no_header);
    Router router(snap, f, writer, out);
    if (!f.keys.empty()) {
        for (const std::string &k : f.keys) router.add(k);
    } else {
        if (isatty(STDIN_FILENO)) std::cerr << "chring lookup: reading keys from the terminal, one per line (Ctrl-D ends)\n";
        read_stdin_keys(router);
    }
    router.flush();
    out.flush();
}

}  // namespace

void add_lookup_command(CLI::App &app) {
    auto flags = std::make_shared<LookupFlags>();
    CLI::App *cmd = app.add_subcommand("lookup", "The owner (and replicas) of each key, from arguments or stdin");
    cmd->footer("Examples:\n  chring lookup -m members.txt user:42 user:43\n"
                "  chring lookup -m members.txt --replicas 3 --policy zones-first user:1\n"
                "  seq 1000000 | chring lookup -m members.txt --format csv > owners.csv\n"
                "Reading stdin, each line is one key (a trailing CR is dropped). Table output aligns the key "
                "column per block of 4096 keys; --format json writes one JSON object per line.");
    add_membership_options(*cmd, flags->members, true);
    add_ring_options(*cmd, flags->ring);
    cmd->add_option("--replicas", flags->replicas, "Print N distinct nodes per key, coordinator first")
        ->type_name("N")
        ->check(whole_number(1, CHR_NODES_MAX))
        ->capture_default_str();
    cmd->add_option("--policy", flags->policy,
                    "Replica order: nodes (the walk's distinct nodes), zones-first (one node per zone "
                    "first, then the rest; a prefix for every N), nts (Cassandra NetworkTopologyStrategy's "
                    "set and order, racks = zones)")
        ->type_name("nodes|zones-first|nts")
        ->check(CLI::IsMember(replica_policy_names()).description(""))
        ->capture_default_str();
    cmd->add_flag("--percent", flags->percent, "Keys are percent-encoded (%XX), as ids in ring files");
    cmd->add_flag("--no-header", flags->no_header, "Leave out the header line (table, csv)");
    cmd->add_option("--format", flags->format, "Output: aligned table, csv, or json (one object per line)")
        ->type_name("table|json|csv")
        ->check(CLI::IsMember({"table", "json", "csv"}).description(""))
        ->capture_default_str();
    cmd->add_option("keys", flags->keys, "Keys to look up; none = read stdin, one per line")->type_name("KEY");
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
