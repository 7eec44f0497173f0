#include "ring_source.hpp"

#include <algorithm>
#include <new>
#include <string_view>

#include "options.hpp"
#include "spelling.hpp"

namespace chring::cli {
namespace {

constexpr const char *kDirectivesRule =
    " (a ring file with option directives sets the ring's options: leave the flag out, or give the file's value)";

// The library refused the file: its message names the file and the line.
// Without a line, the options the file did not set (the flags') were bad.
[[noreturn]] void file_refused(chr_status st, const chr_ringfile_info &info, const RingConfig &flags,
                              const MemberSource &source) {
    if (st == CHR_ENOMEM) throw std::bad_alloc();
    // The read stopped in an overlong line, so that is the line the parser
    // refuses (the length is the first thing it checks of a line); it
    // measured only the line_max + 2 bytes read of it, not its length. (A
    // NUL byte in that line, or a byte order mark starting it as the first,
    // is refused too, but the line's length is what ended the read.)
    if (source.cut_line && info.error_line == source.cut_line)
        throw CliError(source.name + ":" + std::to_string(source.cut_line) + ": line is more than " +
                       std::to_string(CHR_RINGFILE_LINE_MAX) + " bytes long (limit " +
                       std::to_string(CHR_RINGFILE_LINE_MAX) + ")");
    const bool the_file = st == CHR_EFORMAT || st == CHR_EIO || info.error_line != 0;
    const std::string context = the_file ? "" : "cannot create the ring";
    if (st == CHR_ENOHASHER) throw_no_hasher(context, flags.plugin_dir.empty() ? nullptr : flags.plugin_dir.c_str());
    check(st, context);
    throw CliError(chr_strerror(st));  // not reached: check() throws for every error
}

// The line of the file that has `id`, as the parser knows it: the file
// with the id added as a last line is a duplicate, whose error record
// names the first line (other_line) and the id (member). 0 if it is not.
size_t line_of(const MemberSource &source, const std::string &id, const chr_options &base) {
    std::string text = source.text;
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += canonical_field(id) + " 0\n";
    chr_ring *ring = nullptr;
    if (chr_ring_new_from_text(text.data(), text.size(), source.name.c_str(), &base, &ring, nullptr) == CHR_OK) {
        chr_ring_free(ring);
        return 0;
    }
    chr_error_info error = CHR_ERROR_INFO_INIT;
    if (chr_last_error_info(&error) != CHR_OK || !(error.flags & CHR_ERROR_HAS_OTHER_LINE) ||
        !(error.flags & CHR_ERROR_HAS_MEMBER) ||
        std::string_view(static_cast<const char *>(error.member), error.member_len) != id)
        return 0;
    return error.other_line;
}

// The option flags the user gave must agree with the file's directives.
// The library decides what differs (chr_ring_apply_text refuses a file
// whose options are not the ring's: CHR_EOPTIONS, naming the line), on a
// ring made with the file's options and the given flags.
void check_flags_agree(const MemberSource &source, const RingConfig &flags, const RingConfig &file) {
    RingConfig wanted = file;
    std::string given;
    auto differs = [&](bool user_set, bool differ, const std::string &text) {
        if (!user_set || !differ) return false;
        given += (given.empty() ? "" : " ") + text;
        return true;
    };
    if (differs(flags.given_placement, flags.placement != file.placement, "--placement " + flags.placement)) {
        wanted.placement = flags.placement;
        wanted.hasher.clear();  // the placement's own, unless --hasher says otherwise
    }
    if (differs(flags.given_hasher, flags.effective_hasher() != file.hasher, "--hasher " + flags.hasher))
        wanted.hasher = flags.hasher;
    if (differs(flags.given_seed, flags.seed != file.seed, "--seed " + std::to_string(flags.seed)))
        wanted.seed = flags.seed;
    if (differs(flags.given_tokens, flags.tokens_per_weight != file.tokens_per_weight,
                "--tokens-per-weight " + std::to_string(flags.tokens_per_weight)))
        wanted.tokens_per_weight = flags.tokens_per_weight;
    if (given.empty()) return;
    std::unique_ptr<Ring> probe;
    try {
        probe = std::make_unique<Ring>(wanted);
    } catch (const CliError &) {  // e.g. a hasher the file's placement does not take
        throw UsageError(given + " conflicts with the options of " + source.name + " (" + describe_options(file) +
                         ")" + kDirectivesRule);
    }
    chr_status st = chr_ring_apply_text(probe->get(), source.text.data(), source.text.size(), source.name.c_str(),
                                        nullptr);
    if (st == CHR_EOPTIONS) throw UsageError(given + ": " + chr_last_error() + kDirectivesRule);
    if (st == CHR_ENOMEM) throw std::bad_alloc();
    // Otherwise the flag does not change this ring (a compatibility placement
    // ignores the seed and tokens per weight): the file's options stand.
}

void add_flag_members(const MemberSource &source, LoadedRing &out, const chr_options &base) {
    if (source.flags.empty()) return;
    std::vector<Member> members;
    for (const FlagMember &f : source.flags) members.push_back(f.member);
    size_t failed = 0;
    chr_status st = out.ring->try_add(members, out.info.members, &failed);
    if (st == CHR_OK) return;
    if (failed >= members.size()) check(st, "");
    const FlagMember &f = source.flags[failed];
    if (st == CHR_EEXIST && !source.name.empty()) {
        const size_t line = line_of(source, f.member.id, base);
        throw CliError(f.flag + ": duplicate id '" + printable_id(f.member.id) + "' (first in " + source.name +
                       (line ? ":" + std::to_string(line) : "") + ")");
    }
    check(st, f.flag);
}

}  // namespace

void read_ring_file(const std::string &path, MemberSource &source) {
    source.name = input_name(path);
    source.text = read_input(path, InputLimits{"ring file", CHR_RINGFILE_SIZE_MAX, true, CHR_RINGFILE_LINE_MAX},
                             &source.cut_line);
}

std::string describe_options(const RingConfig &c) {
    return "placement " + c.placement + ", hasher " + c.effective_hasher() + ", seed " + std::to_string(c.seed) +
           ", tokens per weight " + std::to_string(c.tokens_per_weight);
}

LoadedRing build_ring(const MemberSource &source, const RingConfig &flags) {
    LoadedRing out;
    out.config = flags;
    const chr_options base = flags.options();
    if (source.name.empty()) {
        out.ring = std::make_unique<Ring>(flags);
    } else {
        chr_ring *ring = nullptr;
        chr_status st = chr_ring_new_from_text(source.text.data(), source.text.size(), source.name.c_str(), &base,
                                               &ring, &out.info);
        if (st != CHR_OK) file_refused(st, out.info, flags, source);
        out.ring = std::make_unique<Ring>(ring);
        if (out.info.flags & CHR_RINGFILE_HAS_OPTIONS) {
            out.config = out.ring->snapshot().options();
            out.config.plugin_dir = flags.plugin_dir;
            check_flags_agree(source, flags, out.config);
        }
    }
    add_flag_members(source, out, base);
    out.members = out.ring->snapshot().nodes();
    std::stable_sort(out.members.begin(), out.members.end(),
                     [](const NodeInfo &a, const NodeInfo &b) { return a.tag < b.tag; });
    out.why_no_tokens = !source.name.empty() && out.members.empty() ? source.name + " has no member lines"
                                                                      : "every member has weight 0";
    return out;
}

}  // namespace chring::cli
