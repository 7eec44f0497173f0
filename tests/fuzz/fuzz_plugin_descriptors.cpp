// plugin_descriptors: the input fills the descriptor table of a real plugin
// (descriptor_fixture.so: count, table entries, every descriptor field, the
// names and descriptions in the plugin's own memory) and the harness loads
// it with chr_plugin_load (or registers one descriptor with
// chr_hasher_register). The loader must give the status the documented
// rules predict, register all hashers or none, and a registered hasher must
// hash exactly as the plugin's function does.
//
// Pointers outside the plugin are part of the input too: an inaccessible
// page, the harness's own memory (readable, valid contents, just not the
// plugin's) for the name, description, functions, descriptors, and for the
// table the entry point returns (also misaligned, or running off the end of
// the plugin's last segment). The loader must refuse each with a status
// before reading through it (the table before copying a single entry).
// CHR_FUZZ_WILD_DESCRIPTORS=0 leaves them out.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "chring.h"
#include "descriptor_fixture.h"

namespace {

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::fprintf(stderr, "plugin_descriptors: check failed at line %d: %s\n  ", __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                                   \
            std::fprintf(stderr, "\n  last error: %s\n", chr_last_error());                      \
            std::abort();                                                                        \
        }                                                                                        \
    } while (0)

fz_area *g_area;
chr_hash64_fn g_hash_a, g_hash_b;
chr_digest_fn g_digest4, g_digest16;
bool g_wild;
unsigned char *g_noaccess;           // a PROT_NONE page
std::set<std::string> g_registered;  // every name registered in this process
uintptr_t g_plugin_end;              // end of the fixture's last readable segment
chr_hasher g_foreign[FZ_SLOTS];      // descriptors in the harness's memory
const chr_hasher *g_foreign_table[FZ_TABLE];
const char kForeignName[] = "fharness";  // a valid name, in the harness's memory

const char kNameChars[] = "abcdefghijklmnopqrstuvwxyz0123456789_.-";

bool valid_name(const char *p, size_t &len) {
    len = strnlen(p, CHR_HASHER_NAME_MAX + 1);
    if (len == 0 || len > CHR_HASHER_NAME_MAX) return false;
    for (size_t i = 0; i < len; ++i)
        if (!std::strchr(kNameChars, p[i]) || p[i] == 0) return false;
    return true;
}

// How the harness built each pointer: kinds the model knows the validity of.
enum class Ptr { Null, Good, Wild };

struct SlotPlan {
    Ptr desc = Ptr::Good, name = Ptr::Good, description = Ptr::Good, hash = Ptr::Good, digest = Ptr::Null;
    chr_hash64_fn hash_fn = nullptr;
    chr_digest_fn digest_fn = nullptr;
    size_t digest_writes = 0;  // bytes the digest function writes
};

// A valid name from a bounded set (registrations are permanent: an
// unbounded set would grow the registry for the whole run).
void bounded_name(char *dst, uint32_t pick) {
    const size_t n = sizeof kNameChars - 1;
    static const size_t lengths[] = {3, 4, CHR_HASHER_NAME_MAX};
    size_t len = lengths[pick % 3];
    pick /= 3;
    dst[0] = 'f';
    dst[1] = kNameChars[pick % n];
    dst[2] = kNameChars[(pick / n) % n];
    for (size_t i = 3; i < len; ++i) dst[i] = 'x';
    dst[len] = 0;
}

void fill_slot(FuzzedDataProvider &in, int k, SlotPlan &plan) {
    fz_slot &slot = g_area->slots[k];
    std::memset(&slot, 0, sizeof slot);
    chr_hasher &d = slot.desc;
    uint8_t abi = in.ConsumeIntegralInRange<uint8_t>(0, 15);
    d.abi_version = abi < 12 ? CHR_PLUGIN_ABI_VERSION : abi == 12 ? 0 : abi == 13 ? CHR_PLUGIN_ABI_VERSION + 1
                                                                                : in.ConsumeIntegral<uint32_t>();
    uint8_t size = in.ConsumeIntegralInRange<uint8_t>(0, 15);
    d.struct_size = size < 11 ? sizeof(chr_hasher) : size == 11 ? sizeof(chr_hasher) - 1
                    : size == 12 ? sizeof(chr_hasher) + sizeof slot.tail : size == 13 ? 0
                    : in.ConsumeIntegralInRange<uint32_t>(0, sizeof(chr_hasher) + sizeof slot.tail);

    char *name = g_area->names[k];
    std::memset(name, 0, FZ_NAME);
    uint8_t nm = in.ConsumeIntegralInRange<uint8_t>(0, 15);
    if (nm < 8) {
        bounded_name(name, in.ConsumeIntegral<uint16_t>());
        d.name = name;
    } else if (nm < 14) {
        // Raw bytes at an offset in the buffer, its last byte kept NUL. A
        // raw name that happens to be valid is swapped for a bounded one.
        size_t off = in.ConsumeIntegralInRange<size_t>(0, 8);
        std::string raw = in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 70));
        std::memcpy(name + off, raw.data(), std::min(raw.size(), size_t(FZ_NAME - 1 - off)));
        size_t len;
        if (valid_name(name + off, len)) bounded_name(name + off, uint32_t(len * 31 + (unsigned char)name[off]));
        d.name = name + off;
    } else if (nm == 14 && g_wild) {
        d.name = in.ConsumeBool() ? reinterpret_cast<const char *>(g_noaccess) : kForeignName;
        plan.name = Ptr::Wild;
    } else {
        d.name = nullptr;
        plan.name = Ptr::Null;
    }

    char *desc = g_area->descriptions[k];
    std::memset(desc, 0, FZ_DESCRIPTION);
    uint8_t ds = in.ConsumeIntegralInRange<uint8_t>(0, 7);
    if (ds == 0) {
        d.description = nullptr;
        plan.description = Ptr::Null;
    } else if (ds == 1 && g_wild) {
        d.description = in.ConsumeBool() ? reinterpret_cast<const char *>(g_noaccess) : kForeignName;
        plan.description = Ptr::Wild;
    } else {
        std::string text = in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, FZ_DESCRIPTION - 1));
        std::memcpy(desc, text.data(), text.size());
        d.description = desc;
    }

    uint8_t h = in.ConsumeIntegralInRange<uint8_t>(0, 7);
    if (h < 4) plan.hash_fn = g_hash_a;
    else if (h < 6) plan.hash_fn = g_hash_b;
    else if (h == 6 && g_wild) {
        // Data, not code, and outside the plugin.
        plan.hash_fn = reinterpret_cast<chr_hash64_fn>(reinterpret_cast<uintptr_t>(&g_registered));
        plan.hash = Ptr::Wild;
    } else {
        plan.hash = Ptr::Null;
    }
    d.hash64 = plan.hash_fn;

    uint8_t g = in.ConsumeIntegralInRange<uint8_t>(0, 7);
    static const uint32_t sizes[] = {0, 4, 16, 1, CHR_DIGEST_MAX, CHR_DIGEST_MAX + 1, 0, 16};
    d.digest_size = in.ConsumeIntegralInRange<uint8_t>(0, 15) == 0 ? in.ConsumeIntegral<uint32_t>() : sizes[g];
    uint8_t df = in.ConsumeIntegralInRange<uint8_t>(0, 7);
    if (df < 3) {
        plan.digest_fn = d.digest_size == 0 && df == 0 ? nullptr : d.digest_size == 4 ? g_digest4 : g_digest16;
    } else if (df < 5) {
        plan.digest_fn = df == 3 ? g_digest4 : g_digest16;
    } else if (df == 5 && g_wild) {
        plan.digest_fn = reinterpret_cast<chr_digest_fn>(reinterpret_cast<uintptr_t>(g_noaccess));
        plan.digest = Ptr::Wild;
    }
    if (plan.digest_fn && plan.digest != Ptr::Wild) {
        plan.digest = Ptr::Good;
        plan.digest_writes = plan.digest_fn == g_digest4 ? 4 : 16;
    }
    d.digest = plan.digest_fn;
    d.flags = in.ConsumeIntegralInRange<uint8_t>(0, 15) == 0 ? in.ConsumeIntegral<uint32_t>() | 1 : 0;
}

// The documented checks of one descriptor (chring_plugin.h): CHR_OK,
// CHR_EPLUGIN_ABI or CHR_EPLUGIN_DESC; kOutside when its outcome depends on a
// pointer outside the plugin (any refusal is right, acceptance is not).
constexpr int kOutside = 1000;  // not a status

int predict_descriptor(const chr_hasher *d, const SlotPlan &p) {
    if (p.desc == Ptr::Wild) return kOutside;
    if (!d) return CHR_EPLUGIN_DESC;
    if (d->abi_version < 1 || d->abi_version > CHR_PLUGIN_ABI_VERSION) return CHR_EPLUGIN_ABI;
    if (d->struct_size < sizeof(chr_hasher)) return CHR_EPLUGIN_DESC;
    if (p.name == Ptr::Null) return CHR_EPLUGIN_DESC;
    if (p.name == Ptr::Wild) return kOutside;
    size_t len;
    if (!valid_name(d->name, len)) return CHR_EPLUGIN_DESC;
    if (p.hash == Ptr::Null) return CHR_EPLUGIN_DESC;
    if (d->digest_size > CHR_DIGEST_MAX) return CHR_EPLUGIN_DESC;
    if ((d->digest_size == 0) != (d->digest == nullptr)) return CHR_EPLUGIN_DESC;
    if (d->flags != 0) return CHR_EPLUGIN_DESC;
    if (p.hash == Ptr::Wild || p.digest == Ptr::Wild || p.description == Ptr::Wild) return kOutside;
    return CHR_OK;
}

// A registered hasher hashes and digests as the plugin's functions do.
void check_registered(const chr_hasher &d, FuzzedDataProvider &in) {
    std::string data = in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 16));
    uint64_t seed = in.ConsumeIntegral<uint64_t>(), h = 0;
    CHECK(chr_hasher_hash(d.name, data.data(), data.size(), seed, &h) == CHR_OK, "hash with '%s'", d.name);
    CHECK(h == d.hash64(data.data(), data.size(), seed), "'%s' hashes differently from its function", d.name);
    unsigned char out[CHR_DIGEST_MAX + 16], want[CHR_DIGEST_MAX + 16];
    size_t size = 0;
    chr_status st = chr_hasher_digest(d.name, data.data(), data.size(), out, CHR_DIGEST_MAX, &size);
    CHECK(size == d.digest_size, "digest size %zu, declared %u", size, d.digest_size);
    if (d.digest_size == 0) {
        CHECK(st == CHR_ENOTSUP, "digest of a hasher without one: %d", st);
        return;
    }
    CHECK(st == CHR_OK, "digest: %d", st);
    // The declared size may be larger than what the function writes: only
    // the bytes it writes are compared.
    size_t n = std::min<size_t>(d.digest_size, d.digest == g_digest4 ? 4 : 16);
    d.digest(data.data(), data.size(), want);
    CHECK(std::memcmp(out, want, n) == 0, "digest of '%s' differs", d.name);
}

// The end of the last readable PT_LOAD of the object behind `handle`, as
// the program headers say (the harness's own reading, not the loader's).
uintptr_t readable_end(void *handle) {
    struct link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return 0;
    struct Query {
        ElfW(Addr) base;
        uintptr_t end;
    } q{map->l_addr, 0};
    dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) {
            auto *q = static_cast<Query *>(data);
            if (info->dlpi_addr != q->base) return 0;
            for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr) &p = info->dlpi_phdr[i];
                if (p.p_type == PT_LOAD && (p.p_flags & PF_R))
                    q->end = std::max<uintptr_t>(q->end, info->dlpi_addr + p.p_vaddr + p.p_memsz);
            }
            return 1;
        },
        &q);
    return q.end;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    // No plugin discovery beyond the fixture: only explicit loads register.
    setenv("CHRING_PLUGIN_PATH", "", 1);
    const char *wild = std::getenv("CHR_FUZZ_WILD_DESCRIPTORS");
    g_wild = !wild || std::strcmp(wild, "0") != 0;
    // Our own reference keeps the fixture mapped (and its area stable)
    // between loads that the loader refuses and unloads.
    void *h = dlopen(CHR_FUZZ_FIXTURE, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::fprintf(stderr, "plugin_descriptors: cannot open %s: %s\n", CHR_FUZZ_FIXTURE, dlerror());
        std::abort();
    }
    g_area = static_cast<fz_area *>(dlsym(h, FZ_AREA_SYMBOL));
    g_hash_a = reinterpret_cast<chr_hash64_fn>(dlsym(h, FZ_HASH_A_SYMBOL));
    g_hash_b = reinterpret_cast<chr_hash64_fn>(dlsym(h, FZ_HASH_B_SYMBOL));
    g_digest4 = reinterpret_cast<chr_digest_fn>(dlsym(h, FZ_DIGEST4_SYMBOL));
    g_digest16 = reinterpret_cast<chr_digest_fn>(dlsym(h, FZ_DIGEST16_SYMBOL));
    void *page = mmap(nullptr, size_t(getpagesize()), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!g_area || !g_hash_a || !g_hash_b || !g_digest4 || !g_digest16 || page == MAP_FAILED || !readable_end(h)) {
        std::fprintf(stderr, "plugin_descriptors: fixture symbols missing\n");
        std::abort();
    }
    g_noaccess = static_cast<unsigned char *>(page);
    g_plugin_end = readable_end(h);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzedDataProvider in(data, size);
    SlotPlan plans[FZ_SLOTS];
    const int slots = in.ConsumeIntegralInRange<int>(1, FZ_SLOTS);
    for (int k = 0; k < slots; ++k) fill_slot(in, k, plans[k]);

    uint8_t cs = in.ConsumeIntegralInRange<uint8_t>(0, 31);
    uint32_t count = cs < 24 ? 1 + cs % 4 : cs < 26 ? 0 : cs == 26 ? FZ_TABLE : cs == 27 ? FZ_TABLE + 1
                     : cs == 28 ? UINT32_MAX : in.ConsumeIntegralInRange<uint32_t>(1, FZ_TABLE);
    g_area->count = count;
    g_area->null_table = in.ConsumeIntegralInRange<uint8_t>(0, 31) == 0;
    std::vector<SlotPlan> entry_plan(FZ_TABLE);
    for (uint32_t i = 0; i < FZ_TABLE; ++i) {
        uint8_t e = i < 8 ? in.ConsumeIntegralInRange<uint8_t>(0, 31) : uint8_t(i);
        int k = e % slots;
        entry_plan[i] = plans[k];
        if (e == 30) {
            g_area->table[i] = nullptr;
            entry_plan[i].desc = Ptr::Null;
        } else if (e == 31 && g_wild) {
            g_area->table[i] = reinterpret_cast<const chr_hasher *>(g_noaccess);
            entry_plan[i].desc = Ptr::Wild;
        } else if (e == 29 && g_wild) {  // a copy of the slot's descriptor, outside the plugin
            g_foreign[k] = g_area->slots[k].desc;
            g_area->table[i] = &g_foreign[k];
            entry_plan[i].desc = Ptr::Wild;
        } else {
            g_area->table[i] = &g_area->slots[k].desc;
        }
    }
    // The table pointer the entry point returns (the fixture's own table
    // unless one of these).
    enum class Table { Own, Wild, Foreign, Misaligned, AtEnd } table = Table::Own;
    g_area->returned = nullptr;
    if (g_wild) {
        uint8_t t = in.ConsumeIntegralInRange<uint8_t>(0, 15);
        if (t == 1) {
            table = Table::Wild;
            g_area->returned = g_noaccess;
        } else if (t == 2) {  // a correct table, in the harness's memory
            table = Table::Foreign;
            std::memcpy(g_foreign_table, g_area->table, sizeof g_foreign_table);
            g_area->returned = g_foreign_table;
        } else if (t == 3) {
            table = Table::Misaligned;
            g_area->returned = reinterpret_cast<const char *>(g_area->table) + 1 + in.ConsumeIntegralInRange<int>(0, 6);
        } else if (t == 4 && count >= 1 && count <= FZ_TABLE) {
            // The last `room` entries of the segment, `count` > room of them claimed.
            table = Table::AtEnd;
            const uint32_t room = count - 1 - in.ConsumeIntegralInRange<uint32_t>(0, count - 1);
            const uintptr_t end = g_plugin_end & ~uintptr_t(alignof(void *) - 1);
            g_area->returned = reinterpret_cast<const void *>(end - room * sizeof(void *));
        }
    }
    // chr_hasher_register has no plugin to check pointers against (its
    // caller vouches for them): wild pointers go through chr_plugin_load only.
    const SlotPlan &first = entry_plan[0];
    const bool first_wild = first.desc == Ptr::Wild || first.name == Ptr::Wild || first.description == Ptr::Wild ||
                            first.hash == Ptr::Wild || first.digest == Ptr::Wild;
    const bool use_register = in.ConsumeIntegralInRange<uint8_t>(0, 7) == 0 && !first_wild;

    // The model.
    int want;
    uint32_t n = use_register ? 1 : count;
    if (use_register) {
        // chr_hasher_register checks its argument before the descriptor.
        want = g_area->table[0] ? predict_descriptor(g_area->table[0], entry_plan[0]) : CHR_EINVAL;
    } else if ((g_area->null_table && table == Table::Own) || count == 0 || count > FZ_TABLE ||
               table != Table::Own) {
        want = CHR_EPLUGIN_DESC;
    } else {
        want = CHR_OK;
        for (uint32_t i = 0; i < count && want == CHR_OK; ++i)
            want = predict_descriptor(g_area->table[i], entry_plan[i]);
    }
    std::vector<std::string> names;
    if (want == CHR_OK) {
        std::set<std::string> fresh;
        for (uint32_t i = 0; i < n && want == CHR_OK; ++i) {
            std::string name = g_area->table[i]->name;
            if (g_registered.count(name) || !fresh.insert(name).second) want = CHR_EEXIST;
            names.push_back(name);
        }
    }

    size_t loaded = 99;
    chr_status st = use_register ? chr_hasher_register(g_area->table[0]) : chr_plugin_load(CHR_FUZZ_FIXTURE, &loaded);
    if (want == kOutside) {
        CHECK(st != CHR_OK, "a descriptor pointer outside the plugin was accepted");
        CHECK(st == CHR_EPLUGIN_DESC || st == CHR_EPLUGIN_ABI, "status %d for a pointer outside the plugin", st);
    } else {
        CHECK(st == want, "%s returned %d, the model says %d", use_register ? "chr_hasher_register" : "chr_plugin_load",
              st, want);
    }
    if (!use_register) CHECK(loaded == (st == CHR_OK ? count : 0), "loaded %zu after status %d", loaded, st);
    if (st != CHR_OK) {
        CHECK(std::strlen(chr_last_error()) > 0, "refused without a message");
        // All or nothing: no name of a refused load became available.
        for (const std::string &name : names)
            if (!g_registered.count(name)) {
                uint64_t h;
                CHECK(chr_hasher_hash(name.c_str(), "", 0, 0, &h) == CHR_ENOHASHER, "'%s' registered by a refused load",
                      name.c_str());
            }
        return 0;
    }
    for (uint32_t i = 0; i < n; ++i) g_registered.insert(names[i]);
    for (uint32_t i = 0; i < n; ++i) check_registered(*g_area->table[i], in);
    return 0;
}
