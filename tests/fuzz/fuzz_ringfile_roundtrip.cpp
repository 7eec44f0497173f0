// ringfile_roundtrip: for any id and zone bytes, the canonical text written
// for a ring reads back, through the library's own parser, as that ring.
// The parser harness starts from text; this one starts from rings, whose
// ids (any bytes, U+FEFF first of the first member included) text from the
// wild seldom spells.
//
// Input: byte 0 picks the placement (bits 0-1), a revision in the export
// (bit 2) and the tokens per weight of a native ring (bits 3-5); then
// records, one member each:
//   [id length L: 1..255] [L id bytes] [weight] [zone length Z] [Z zone bytes] [tag]
// a short tail is ignored. A member the ring refuses (duplicate id, weight
// over the placement's limit) is left out. For every input:
//   - each field spelling is one field (no blank, no control byte, no
//     leading '#' or "%%"), holds no raw U+FEFF, and decodes to the bytes;
//   - the export never starts with a byte order mark, and reads back
//     (chr_ring_new_from_text) to the same fingerprint, members, weights,
//     zones; exporting that ring gives the same bytes;
//   - its member lines alone, a plain members file, read with the ring's
//     options give the same fingerprint.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chring.h"
#include "ring_checks.hpp"

namespace {

using ring_checks::export_text;
using ring_checks::fingerprint_of;
using ring_checks::own_hasher;
constexpr const char *kHarness = "ringfile_roundtrip";

constexpr size_t kMaxMembers = 12;
constexpr const char *kBom = "\xEF\xBB\xBF";

// A member as chr_ring_nodes lists it (tags are not compared: a file's
// tags are positions, the original ring's any values in the same order).
struct Node {
    std::string id, zone;
    uint32_t weight;
};

std::vector<Node> nodes_of(const chr_ring *ring) {
    std::vector<chr_node_ref> refs(kMaxMembers + 1);
    size_t count = 0;
    CHECK(chr_ring_nodes(ring, refs.data(), refs.size(), &count) == CHR_OK, "chr_ring_nodes");
    std::vector<Node> out;
    for (size_t i = 0; i < count; ++i)
        out.push_back({std::string(reinterpret_cast<const char *>(refs[i].id), refs[i].id_len),
                       std::string(reinterpret_cast<const char *>(refs[i].zone), refs[i].zone_len),
                       refs[i].weight});
    return out;
}

// The field spelling of `bytes` is one field and decodes back to them.
void check_spelling(const std::string &bytes) {
    std::string spelled(bytes.size() * 3 + 1, '\0');
    size_t len = 0;
    CHECK(chr_ringfile_escape(bytes.data(), bytes.size(), 0, &spelled[0], spelled.size(), &len) == CHR_OK,
          "chr_ringfile_escape");
    spelled.resize(len);
    for (unsigned char c : spelled) CHECK(c > 0x20 && c != 0x7F, "a blank or control byte in '%s'", spelled.c_str());
    CHECK(spelled.empty() || (spelled[0] != '#' && spelled.compare(0, 2, "%%") != 0), "'%s' is not a member field",
          spelled.c_str());
    CHECK(spelled.find(kBom) == std::string::npos, "a raw U+FEFF in '%s'", spelled.c_str());
    std::string back(bytes.size() + 1, '\0');
    CHECK(chr_ringfile_unescape(spelled.data(), spelled.size(), "id", &back[0], back.size(), &len) == CHR_OK,
          "chr_ringfile_unescape('%s')", spelled.c_str());
    back.resize(len);
    CHECK(back == bytes, "'%s' decodes to other bytes", spelled.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
#ifdef CHR_FUZZ_PLUGIN_PATH
    setenv("CHRING_PLUGIN_PATH", CHR_FUZZ_PLUGIN_PATH, 0);  // the build's plugins: md5, crc32
#endif
    for (const char *h : {"md5", "crc32"}) {
        uint64_t v;
        if (chr_hasher_hash(h, "", 0, 0, &v) != CHR_OK) {
            std::fprintf(stderr, "ringfile_roundtrip: hasher %s is not available (CHRING_PLUGIN_PATH)\n", h);
            std::abort();
        }
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > (1 << 14)) return 0;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = data[0] & 3;
    opts.hasher = own_hasher(opts.placement);
    if (opts.placement == CHR_PLACEMENT_NATIVE) opts.tokens_per_weight = 1 + ((data[0] >> 3) & 7);
    const bool with_revision = data[0] & 4;
    chr_ring *ring = nullptr;
    CHECK(chr_ring_new(&opts, &ring) == CHR_OK, "chr_ring_new");

    size_t at = 1, members = 0;
    while (members < kMaxMembers && at < size) {
        const size_t id_len = data[at++];
        if (id_len == 0 || at + id_len + 2 > size) break;
        const char *id = reinterpret_cast<const char *>(data + at);
        at += id_len;
        const uint32_t weight = data[at++] % 4;
        const size_t zone_len = std::min<size_t>(data[at++], CHR_ZONE_MAX);
        if (at + zone_len + 1 > size) break;
        const char *zone = reinterpret_cast<const char *>(data + at);
        at += zone_len;
        const uint64_t tag = data[at++] % 4;  // repeated tags: ties broken by id
        chr_status st = chr_ring_add(ring, id, id_len, weight, zone, zone_len, tag);
        CHECK(st == CHR_OK || st == CHR_EEXIST || st == CHR_ERANGE, "chr_ring_add: %d", st);
        check_spelling(std::string(id, id_len));
        check_spelling(std::string(zone, zone_len));
        ++members;
    }

    const uint64_t fp = fingerprint_of(ring);
    const uint64_t revision = fp ^ 0x5555;
    const std::string text = export_text(ring, with_revision ? CHR_EXPORT_REVISION : 0, revision);
    CHECK(text.compare(0, 3, kBom) != 0, "the export starts with a byte order mark");
    chr_ring *back = nullptr;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    CHECK(chr_ring_new_from_text(text.data(), text.size(), "export", nullptr, &back, &info) == CHR_OK,
          "the export does not read back:\n%s", text.c_str());
    CHECK(fingerprint_of(back) == fp && info.fingerprint == fp, "the export reads back as another ring:\n%s",
          text.c_str());
    CHECK(!with_revision || info.revision == revision, "the revision is lost");
    const std::vector<Node> want = nodes_of(ring), got = nodes_of(back);
    CHECK(want.size() == got.size(), "%zu members read back, %zu written", got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        CHECK(want[i].id == got[i].id && want[i].zone == got[i].zone && want[i].weight == got[i].weight,
              "member %zu reads back differently:\n%s", i, text.c_str());
    CHECK(export_text(back, with_revision ? CHR_EXPORT_REVISION : 0, info.revision) == text,
          "the export of the export differs");

    // The member lines alone, as a members file, with the ring's options.
    const size_t fp_line = text.find("\n%%fingerprint ");
    CHECK(fp_line != std::string::npos, "no %%fingerprint line");
    const std::string lines = text.substr(text.find('\n', fp_line + 1) + 1);
    CHECK(lines.compare(0, 3, kBom) != 0, "the member lines start with a byte order mark");
    chr_ring *plain = nullptr;
    CHECK(chr_ring_new_from_text(lines.data(), lines.size(), "members", &opts, &plain, nullptr) == CHR_OK,
          "the member lines do not read back:\n%s", lines.c_str());
    CHECK(fingerprint_of(plain) == fp, "the member lines read back as another ring:\n%s", lines.c_str());

    chr_ring_free(plain);
    chr_ring_free(back);
    chr_ring_free(ring);
    return 0;
}
