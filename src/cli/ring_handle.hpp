// RAII wrappers over the public C API (chring.h only). Every failing call
// becomes a CliError carrying chr_last_error(), so commands read straight.
#pragma once

#include <chring.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>


namespace chring::cli {

// One member as a command builds it (demo's servers, sim's changes).
struct Member {
    std::string id;    // raw bytes, 1..CHR_NODE_ID_MAX
    uint32_t weight = 1;
    std::string zone;  // raw bytes, 0..CHR_ZONE_MAX
};

// A failure the user can act on: printed as "chring: <what()>", exit 1.
class CliError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A command that ran to its end with an answer other than success, its
// output printed (chring etcd status, --wait): exit `code()`, 3 and up, so
// that scripts tell it from an error (1) and bad usage (2).
class ExitStatus : public std::runtime_error {
public:
    explicit ExitStatus(int code) : std::runtime_error("exit status " + std::to_string(code)), code_(code) {}
    int code() const { return code_; }

private:
    int code_;
};

// Throws a CliError "<context>: <chr_last_error()>" unless st is CHR_OK.
void check(chr_status st, const std::string &context);

// After CHR_ENOHASHER: "<context>: <chr_last_error()> (available: ...)".
[[noreturn]] void throw_no_hasher(const std::string &context, const char *plugin_dir);

// Placement modes by name, as the library describes them.
struct PlacementMode {
    const char *name;
    int32_t value;         // CHR_PLACEMENT_*
    const char *hasher;    // the hasher it uses unless --hasher says otherwise
    const char *summary;
};
const std::vector<PlacementMode> &placement_modes();
// The mode called `name`; a CliError listing the known names otherwise.
const PlacementMode &placement_mode(const std::string &name);
// "native, ketama, ..." for help texts and errors.
std::string placement_names();

// The replica policy called `name` ("nodes", "zones-first", "nts"), as the
// library names them; a CliError listing them otherwise.
int32_t replica_policy(const std::string &name);
// Every policy's name, in number order (for --policy's check and help).
std::vector<std::string> replica_policy_names();

// What chr_options carries, as the flags spell it.
struct RingConfig {
    std::string hasher;  // empty: the placement's own (xxh3 for native)
    std::string placement = "native";
    uint32_t tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    uint64_t seed = 0;
    std::string plugin_dir;  // empty = none
    // Which option flags the user wrote: a ring file's directives must agree
    // with those (src/cli/README.md, "Ring files and flags").
    bool given_placement = false, given_hasher = false, given_seed = false, given_tokens = false;

    // The hasher the ring will use: --hasher, or the placement's own.
    std::string effective_hasher() const;
    // As chr_options; its strings point into this config.
    chr_options options() const;
};

// One member as a snapshot shows it, copied out of the borrowed view.
struct NodeInfo {
    std::string id;
    std::string zone;
    uint32_t weight = 0;
    uint32_t tokens = 0;
    double ownership = 0.0;  // fraction of the circle, 0..1
    uint64_t tag = 0;        // from a ring file: the member's position in it
    bool marked = false;     // marked down (chr_snapshot_marked_down), in effect or not
    bool down = false;       // marked, and lookups route around it now (CHR_NODE_DOWN)
};

// A released-on-destruction chr_snapshot.
class Snapshot {
public:
    explicit Snapshot(chr_snapshot *snap) : snap_(snap) {}
    ~Snapshot() { chr_snapshot_release(snap_); }
    Snapshot(Snapshot &&other) noexcept : snap_(other.snap_) { other.snap_ = nullptr; }
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;

    const chr_snapshot *get() const { return snap_; }
    size_t node_count() const;
    size_t token_count() const;
    uint64_t fingerprint() const;
    chr_availability_info availability() const;
    std::vector<NodeInfo> nodes() const;  // index order = ids in byte order
    // Token `index` of the sorted token array: value and owner node index.
    void token(size_t index, uint64_t &value, uint32_t &owner) const;
    // Owners (node indices) of n keys.
    void lookup_batch(const void *const *keys, const size_t *lens, size_t n, uint32_t *owners) const;
    // Up to n distinct owners, coordinator first, under a replica policy
    // (CHR_REPLICAS_*); returns how many.
    size_t replicas(const void *key, size_t len, size_t n, chr_node_view *out,
                    int32_t policy = CHR_REPLICAS_NODES) const;
    // Each member's replica share (node index order) for n replicas.
    std::vector<double> replica_shares(int32_t policy, size_t n) const;
    // The canonical ring file (or, with CHR_EXPORT_JSON, its JSON twin).
    std::string export_text(uint32_t flags, uint64_t revision) const;
    // The options the snapshot's ring has, as its canonical file states them.
    RingConfig options() const;

private:
    chr_snapshot *snap_;
};

// One change of a simulated operation, owning its bytes.
struct Change {
    uint32_t op;  // CHR_OP_*
    Member member;
    std::string flag;  // how the user wrote it, for error messages
    uint64_t tag = 0;  // ADD: the node's position in the configuration list (compat ties)
};

// A chr_ring freed on destruction.
class Ring {
public:
    explicit Ring(const RingConfig &config);
    explicit Ring(chr_ring *owned) : ring_(owned) {}
    ~Ring() { chr_ring_free(ring_); }
    Ring(const Ring &) = delete;
    Ring &operator=(const Ring &) = delete;

    // Adds all members as one batch, tagged first_tag, first_tag + 1, ...
    // (their positions in the server list: compat placements break ties by
    // them). On failure returns the status with chr_last_error() set and
    // the index of the member at fault in *failed (members.size() when the
    // batch as a whole failed); the ring is unchanged.
    chr_status try_add(const std::vector<Member> &members, uint64_t first_tag, size_t *failed);
    // try_add from tag 0; an error names the member.
    void add(const std::vector<Member> &members);
    // Applies the changes as one batch; an error names the flag.
    void apply(const std::vector<Change> &changes);
    Snapshot snapshot() const;
    chr_ring *get() const { return ring_; }

private:
    void apply_batch(const std::vector<chr_change> &batch, size_t *failed);
    chr_ring *ring_ = nullptr;
};

// The hashers this process can use ("xxh3, md5, ..."), plugins discovered.
std::string hasher_names(const char *plugin_dir);

// H(key) with the named hasher and seed, as a ring would position the key.
uint64_t hash_bytes(const std::string &hasher, uint64_t seed, const void *data, size_t len);

}  // namespace chring::cli
