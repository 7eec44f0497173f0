#include "plugin/elf_check.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

// The linker's symbol for the ELF header of the object it is linked into
// (libchring.so, or the program that links the core statically).
extern "C" const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

namespace chring {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Dyn = ElfW(Dyn);
using Addr = ElfW(Addr);

// The program header count read at most: real objects have about ten.
constexpr uint32_t kMaxProgramHeaders = 1024;
// Dynamic entries read at most (real objects have a few dozen).
constexpr uint64_t kMaxDynamicEntries = 4096;
// The relocation kind of this host's PLT (the loader asserts it).
#if defined(__x86_64__) || defined(__aarch64__) || defined(__riscv) || defined(__powerpc64__) || \
    defined(__s390x__)
constexpr int64_t kHostPltRel = DT_RELA;
#else
constexpr int64_t kHostPltRel = DT_REL;
#endif

ElfVerdict refuse(bool elf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ElfVerdict refuse(bool elf, const char *fmt, ...) {
    ElfVerdict v;
    v.elf = elf;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(v.why, sizeof v.why, fmt, ap);
    va_end(ap);
    return v;
}

bool power_of_two_or_zero(uint64_t v) { return (v & (v - 1)) == 0; }

// [start, start + len) without overflow, inside [0, limit).
bool range_within(uint64_t start, uint64_t len, uint64_t limit) {
    return start <= limit && len <= limit - start;
}

struct Image {
    std::vector<Phdr> loads;
    // The PT_LOAD whose memory holds [vaddr, vaddr + len) entirely, or null.
    // file_backed: only its first p_filesz bytes count. Unless `any`, only a
    // readable segment counts: it is for bytes the loader reads (a segment
    // mapped without PF_R faults on the first read).
    const Phdr *holding(uint64_t vaddr, uint64_t len, bool file_backed, bool any = false) const {
        for (const Phdr &p : loads) {
            uint64_t extent = file_backed ? p.p_filesz : p.p_memsz;
            if (vaddr >= p.p_vaddr && range_within(vaddr - p.p_vaddr, len, extent))
                return any || (p.p_flags & PF_R) ? &p : nullptr;
        }
        return nullptr;
    }
};

const char *segment_name(uint32_t type) {
    switch (type) {
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_NOTE: return "PT_NOTE";
    case PT_TLS: return "PT_TLS";
    case PT_INTERP: return "PT_INTERP";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
    default: return "segment";
    }
}

// ---- the tables the loader reads through the dynamic section ----------------
//
// ld.so trusts what the tables hold: a hash chain index, a symbol's name
// offset, a version index, a relocation's target are used unchecked, so a
// corrupted table crashes (or hangs) the process that opens the file. The
// checks below bound every such value by the tables it indexes, reading the
// image as the loader maps it (file bytes, zeros past p_filesz).

using DynamicValues = std::map<int64_t, uint64_t>;

// Symbols, hash entries, version entries or relocations read at most.
constexpr uint64_t kMaxTableEntries = uint64_t(1) << 20;
// Version records (Verneed, Vernaux, Verdef) walked at most.
constexpr unsigned kMaxVersionRecords = 4096;

#if defined(__s390x__) || defined(__alpha__)
using HashWord = uint64_t;  // DT_HASH entries are 64-bit there
#else
using HashWord = uint32_t;
#endif

#if __ELF_NATIVE_CLASS == 64
#define CHR_R_SYM(info) ELF64_R_SYM(info)
#define CHR_R_TYPE(info) ELF64_R_TYPE(info)
#else
#define CHR_R_SYM(info) ELF32_R_SYM(info)
#define CHR_R_TYPE(info) ELF32_R_TYPE(info)
#endif

// The relative relocation's type: the loader applies the first
// DT_RELACOUNT / DT_RELCOUNT relocations as that type, and asserts it.
#if defined(__x86_64__)
constexpr uint64_t kRelativeType = R_X86_64_RELATIVE;
#elif defined(__aarch64__)
constexpr uint64_t kRelativeType = R_AARCH64_RELATIVE;
#elif defined(__i386__)
constexpr uint64_t kRelativeType = R_386_RELATIVE;
#elif defined(__arm__)
constexpr uint64_t kRelativeType = R_ARM_RELATIVE;
#else
constexpr uint64_t kRelativeType = UINT64_MAX;  // not checked
#endif

class Tables {
public:
    Tables(const ReadAt &read, const Image &image, const DynamicValues &values)
        : read_(read), image_(image), values_(values) {}

    ElfVerdict check() {
        strsz_ = value(DT_STRSZ);
        const bool textrel = values_.count(DT_TEXTREL) || (value(DT_FLAGS) & DF_TEXTREL);
        const size_t plt_entry = kHostPltRel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
        ElfVerdict v{true, true, {}};
        // Each check fills `v` and returns false on the first fault.
        (void)(check_strings(v) && check_hash(v) && check_gnu_hash(v) && check_symbols(v) &&
               check_verneed(v) && check_verdef(v) && check_versym(v) &&
               check_relocations(v, DT_RELA, DT_RELASZ, sizeof(ElfW(Rela)), textrel, DT_RELACOUNT) &&
               check_relocations(v, DT_REL, DT_RELSZ, sizeof(ElfW(Rel)), textrel, DT_RELCOUNT) &&
               check_relocations(v, DT_JMPREL, DT_PLTRELSZ, plt_entry, textrel, 0) &&
               check_relr(v, textrel) && check_initializers(v));
        return v;
    }

private:
    const ReadAt &read_;
    const Image &image_;
    const DynamicValues &values_;
    uint64_t strsz_ = 0, nsyms_ = 0;
    unsigned max_version_ = 1;  // indices 0 (local) and 1 (global) always exist
    // Where relocations write: the address a relative one stores, or kSymbolic.
    static constexpr uint64_t kSymbolic = UINT64_MAX;
    std::map<uint64_t, uint64_t> relocated_;

    bool has(int64_t tag) const { return values_.count(tag) != 0; }
    uint64_t value(int64_t tag) const {
        auto it = values_.find(tag);
        return it == values_.end() ? 0 : it->second;
    }

    bool bad(ElfVerdict &v, const char *fmt, ...) __attribute__((format(printf, 3, 4))) {
        v.ok = false;
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(v.why, sizeof v.why, fmt, ap);
        va_end(ap);
        return false;
    }

    // [vaddr, vaddr + len) of the mapped image, inside one PT_LOAD.
    bool bytes(uint64_t vaddr, uint64_t len, std::vector<unsigned char> &out) const {
        const Phdr *p = image_.holding(vaddr, len, false);
        if (!p || len > kMaxTableEntries * 32) return false;
        out.assign(size_t(len), 0);
        const uint64_t off = vaddr - p->p_vaddr;
        if (off < p->p_filesz && !read_(p->p_offset + off, out.data(), size_t(std::min(len, p->p_filesz - off))))
            return false;
        return true;
    }
    template <class T>
    bool one(uint64_t vaddr, T &out) const {
        const Phdr *p = image_.holding(vaddr, sizeof out, false);
        if (!p) return false;
        std::memset(&out, 0, sizeof out);
        const uint64_t off = vaddr - p->p_vaddr;
        return off >= p->p_filesz ||
               read_(p->p_offset + off, &out, size_t(std::min<uint64_t>(sizeof out, p->p_filesz - off)));
    }
    template <class T>
    static T at(const std::vector<unsigned char> &b, uint64_t i) {
        T v;
        std::memcpy(&v, b.data() + i * sizeof(T), sizeof v);
        return v;
    }
    bool name_ok(uint64_t offset) const { return offset < strsz_; }

    // Every string ends inside the table.
    bool check_strings(ElfVerdict &v) {
        unsigned char last = 1;
        if (strsz_ == 0 || !one(value(DT_STRTAB) + strsz_ - 1, last) || last != 0)
            return bad(v, "its string table does not end with a NUL byte");
        return true;
    }

    // DT_HASH: nbucket, nchain, buckets, chains; every index below nchain,
    // every chain ending (no loop). nchain is the symbol count.
    bool check_hash(ElfVerdict &v) {
        if (!has(DT_HASH)) return true;
        const uint64_t at_addr = value(DT_HASH);
        HashWord head[2];
        if (!one(at_addr, head)) return bad(v, "its DT_HASH header is outside every PT_LOAD");
        const uint64_t nbucket = head[0], nchain = head[1];
        if (nbucket == 0 || nbucket > kMaxTableEntries || nchain > kMaxTableEntries)
            return bad(v, "its DT_HASH table has %llu buckets and %llu chains",
                       (unsigned long long)nbucket, (unsigned long long)nchain);
        std::vector<unsigned char> t;
        if (!bytes(at_addr, (2 + nbucket + nchain) * sizeof(HashWord), t))
            return bad(v, "its DT_HASH table runs outside its PT_LOAD");
        uint64_t walked = 0;
        for (uint64_t b = 0; b < nbucket; ++b)
            for (uint64_t i = at<HashWord>(t, 2 + b); i != 0; i = at<HashWord>(t, 2 + nbucket + i))
                if (i >= nchain || ++walked > nchain)
                    return bad(v, "its DT_HASH chains leave the table or loop");
        nsyms_ = nchain;
        return true;
    }

    // DT_GNU_HASH: the header, a power-of-two bloom filter, buckets at or
    // past symoffset, chains that end inside the image.
    bool check_gnu_hash(ElfVerdict &v) {
        if (!has(DT_GNU_HASH)) return true;
        const uint64_t base = value(DT_GNU_HASH);
        uint32_t head[4];
        if (!one(base, head)) return bad(v, "its DT_GNU_HASH header is outside every PT_LOAD");
        const uint64_t nbuckets = head[0], symoffset = head[1], bloom = head[2];
        if (nbuckets == 0 || nbuckets > kMaxTableEntries || bloom == 0 || (bloom & (bloom - 1)) ||
            bloom > kMaxTableEntries || symoffset > kMaxTableEntries)
            return bad(v, "its DT_GNU_HASH table has %llu buckets, %llu bloom words, symbol offset %llu",
                       (unsigned long long)nbuckets, (unsigned long long)bloom,
                       (unsigned long long)symoffset);
        const uint64_t buckets_at = base + 16 + bloom * sizeof(ElfW(Addr));
        std::vector<unsigned char> buckets;
        if (!bytes(buckets_at, nbuckets * 4, buckets))
            return bad(v, "its DT_GNU_HASH table runs outside its PT_LOAD");
        // The chains run to at most the end of their segment: read that once.
        const uint64_t chains_at = buckets_at + nbuckets * 4;
        const Phdr *holding = image_.holding(chains_at, 4, false);
        std::vector<unsigned char> chains;
        if (!holding || !bytes(chains_at, std::min<uint64_t>(holding->p_vaddr + holding->p_memsz - chains_at,
                                                             kMaxTableEntries * 4) & ~uint64_t(3),
                               chains))
            return bad(v, "its DT_GNU_HASH chains run outside the image");
        uint64_t count = symoffset, walked = 0;
        for (uint64_t b = 0; b < nbuckets; ++b) {
            uint64_t i = at<uint32_t>(buckets, b);
            if (i == 0) continue;
            if (i < symoffset) return bad(v, "a DT_GNU_HASH bucket points below the symbol offset");
            for (;; ++i) {
                if (++walked > kMaxTableEntries || (i - symoffset + 1) * 4 > chains.size())
                    return bad(v, "its DT_GNU_HASH chains run outside the image");
                if (at<uint32_t>(chains, i - symoffset) & 1) break;
            }
            count = std::max(count, i + 1);
        }
        nsyms_ = std::max(nsyms_, count);
        return true;
    }

    // The symbols the hash tables index, each name inside the string table.
    bool check_symbols(ElfVerdict &v) {
        if (has(DT_SYMENT) && value(DT_SYMENT) != sizeof(ElfW(Sym)))
            return bad(v, "DT_SYMENT %llu is not %zu", (unsigned long long)value(DT_SYMENT),
                       sizeof(ElfW(Sym)));
        std::vector<unsigned char> t;
        if (!bytes(value(DT_SYMTAB), nsyms_ * sizeof(ElfW(Sym)), t))
            return bad(v, "its %llu symbols run outside their PT_LOAD", (unsigned long long)nsyms_);
        for (uint64_t i = 0; i < nsyms_; ++i)
            if (!name_ok(at<ElfW(Sym)>(t, i).st_name))
                return bad(v, "symbol %llu's name is past the string table", (unsigned long long)i);
        return true;
    }

    bool check_verneed(ElfVerdict &v) {
        if (!has(DT_VERNEED)) return true;
        uint64_t ent = value(DT_VERNEED);
        for (unsigned records = 0;;) {
            ElfW(Verneed) n;
            if (++records > kMaxVersionRecords || !one(ent, n) || !name_ok(n.vn_file))
                return bad(v, "its DT_VERNEED records run outside the image or loop");
            uint64_t aux = ent + n.vn_aux;
            for (;;) {
                ElfW(Vernaux) a;
                if (++records > kMaxVersionRecords || !one(aux, a) || !name_ok(a.vna_name))
                    return bad(v, "its DT_VERNEED records run outside the image or loop");
                max_version_ = std::max<unsigned>(max_version_, a.vna_other & 0x7fff);
                if (a.vna_next == 0) break;
                aux += a.vna_next;
            }
            if (n.vn_next == 0) return true;
            ent += n.vn_next;
        }
    }

    bool check_verdef(ElfVerdict &v) {
        if (!has(DT_VERDEF)) return true;
        uint64_t ent = value(DT_VERDEF);
        for (unsigned records = 0;;) {
            ElfW(Verdef) d;
            ElfW(Verdaux) a;
            if (++records > kMaxVersionRecords || !one(ent, d) || !one(ent + d.vd_aux, a) ||
                !name_ok(a.vda_name))
                return bad(v, "its DT_VERDEF records run outside the image or loop");
            max_version_ = std::max<unsigned>(max_version_, d.vd_ndx & 0x7fff);
            if (d.vd_next == 0) return true;
            ent += d.vd_next;
        }
    }

    // One version index per symbol, each naming a version the object has.
    bool check_versym(ElfVerdict &v) {
        if (!has(DT_VERSYM)) return true;
        std::vector<unsigned char> t;
        if (!bytes(value(DT_VERSYM), nsyms_ * 2, t))
            return bad(v, "its DT_VERSYM table runs outside its PT_LOAD");
        for (uint64_t i = 0; i < nsyms_; ++i)
            if ((at<ElfW(Half)>(t, i) & 0x7fff) > max_version_)
                return bad(v, "symbol %llu has version index %u (the object has %u)",
                           (unsigned long long)i, at<ElfW(Half)>(t, i) & 0x7fff, max_version_);
        return true;
    }

    // Where a relocation writes: inside a writable PT_LOAD (any PT_LOAD
    // with text relocations).
    bool target_ok(uint64_t where, bool textrel) const {
        const Phdr *p = image_.holding(where, sizeof(ElfW(Addr)), false, true);
        return p && (textrel || (p->p_flags & PF_W));
    }

    bool check_relocations(ElfVerdict &v, int64_t tag, int64_t size_tag, size_t entry, bool textrel,
                           int64_t relative_count_tag) {
        if (!has(tag)) return true;
        if (tag == DT_JMPREL && value(DT_PLTREL) != uint64_t(kHostPltRel)) return true;
        const uint64_t n = value(size_tag) / entry;
        if (n > kMaxTableEntries) return bad(v, "%llu relocations", (unsigned long long)n);
        std::vector<unsigned char> t;
        if (!bytes(value(tag), n * entry, t)) return bad(v, "its relocations run outside their PT_LOAD");
        const uint64_t relative = relative_count_tag ? std::min(value(relative_count_tag), n) : 0;
        for (uint64_t i = 0; i < n; ++i) {
            // r_offset and r_info start both kinds of entry.
            ElfW(Rel) r;
            std::memcpy(&r, t.data() + i * entry, sizeof r);
            if (i < relative && kRelativeType != UINT64_MAX && CHR_R_TYPE(r.r_info) != kRelativeType)
                return bad(v, "relocation %llu is counted as relative (dynamic entry %lld) but is of type %llu",
                           (unsigned long long)i, (long long)relative_count_tag,
                           (unsigned long long)CHR_R_TYPE(r.r_info));
            if (CHR_R_TYPE(r.r_info) == kRelativeType) {
                uint64_t to = 0;  // RELA: the addend; REL: the bytes in place
                if (entry == sizeof(ElfW(Rela))) to = uint64_t(at<ElfW(Rela)>(t, i).r_addend);
                else one(r.r_offset, to);
                relocated_[r.r_offset] = to;
            } else {
                relocated_[r.r_offset] = kSymbolic;
            }
            if (!target_ok(r.r_offset, textrel) || CHR_R_SYM(r.r_info) >= std::max<uint64_t>(nsyms_, 1))
                return bad(v, "relocation %llu of table %lld writes at 0x%llx or names symbol %llu "
                              "(of %llu)",
                           (unsigned long long)i, (long long)tag, (unsigned long long)r.r_offset,
                           (unsigned long long)CHR_R_SYM(r.r_info), (unsigned long long)nsyms_);
        }
        return true;
    }

    // DT_RELR: addresses and bitmaps of relative relocations.
    bool check_relr(ElfVerdict &v, bool textrel) {
        if (!has(DT_RELR)) return true;
        const uint64_t n = value(DT_RELRSZ) / sizeof(ElfW(Relr));
        std::vector<unsigned char> t;
        if (n > kMaxTableEntries || !bytes(value(DT_RELR), n * sizeof(ElfW(Relr)), t))
            return bad(v, "its DT_RELR table runs outside its PT_LOAD");
        const unsigned bits = 8 * sizeof(ElfW(Relr)) - 1;
        uint64_t where = 0;
        for (uint64_t i = 0; i < n; ++i) {
            uint64_t e = at<ElfW(Relr)>(t, i);
            if ((e & 1) == 0) {
                if (!target_ok(e, textrel)) return bad(v, "a DT_RELR address 0x%llx is not writable", (unsigned long long)e);
                relative_in_place(e);
                where = e + sizeof(ElfW(Addr));
                continue;
            }
            for (unsigned k = 0; (e >>= 1) != 0; ++k) {
                if (!(e & 1)) continue;
                if (!target_ok(where + k * sizeof(ElfW(Addr)), textrel))
                    return bad(v, "a DT_RELR bitmap reaches past its segment");
                relative_in_place(where + k * sizeof(ElfW(Addr)));
            }
            where += bits * sizeof(ElfW(Addr));
        }
        return true;
    }

    // A relative relocation whose value is the address stored in place.
    void relative_in_place(uint64_t where) {
        ElfW(Addr) to = 0;
        one(where, to);
        relocated_[where] = to;
    }

    bool executable(uint64_t vaddr) const {
        const Phdr *p = image_.holding(vaddr, 1, true, true);
        return p && (p->p_flags & PF_X);
    }

    // The initializers and finalizers the loader calls (the plugin's own
    // constructors): DT_INIT and DT_FINI, and every slot of the init and
    // fini arrays, which in a shared object is set by a relocation: a
    // relative one must point into the plugin's code. (A slot that a
    // symbol's relocation fills is resolved by the loader, as its code.)
    bool check_initializers(ElfVerdict &v) {
        for (int64_t tag : {DT_INIT, DT_FINI})
            if (has(tag) && !executable(value(tag)))
                return bad(v, "dynamic entry %lld (0x%llx) is not in an executable PT_LOAD", (long long)tag,
                           (unsigned long long)value(tag));
        for (auto [array, size] : {std::pair<int64_t, int64_t>{DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
                                   {DT_FINI_ARRAY, DT_FINI_ARRAYSZ}}) {
            if (!has(array)) continue;
            for (uint64_t i = 0; i < value(size) / sizeof(ElfW(Addr)); ++i) {
                const uint64_t slot = value(array) + i * sizeof(ElfW(Addr));
                auto it = relocated_.find(slot);
                if (it == relocated_.end() || (it->second != kSymbolic && !executable(it->second)))
                    return bad(v, "entry %llu of dynamic table %lld is not relocated to the plugin's code",
                               (unsigned long long)i, (long long)array);
            }
        }
        return true;
    }
};

ElfVerdict check_tables(const ReadAt &read, const Image &image, const DynamicValues &values) {
    return Tables(read, image, values).check();
}

// Checks the dynamic section's address entries (tables the loader reads
// through the mapped image) and its DT_NULL terminator.
ElfVerdict check_dynamic(const ReadAt &read, const Phdr &dyn, const Image &image) {
    uint64_t count = dyn.p_filesz / sizeof(Dyn);
    if (count > kMaxDynamicEntries) count = kMaxDynamicEntries;
    uint64_t strtab = 0, strsz = 0;
    bool have_strtab = false, have_strsz = false, terminated = false, have_symtab = false,
         have_hash = false;
    // Entry sizes the loader asserts (dereferencing the entry unchecked:
    // a table without its entry size crashes it), and the PLT's relocation kind.
    struct Entry {
        int64_t table_tag, entry_tag;
        uint64_t want;
        bool have_table = false, have_entry = false;
        uint64_t entry = 0;
    } entries[] = {{DT_RELA, DT_RELAENT, sizeof(ElfW(Rela))},
                   {DT_REL, DT_RELENT, sizeof(ElfW(Rel))},
                   {DT_RELR, DT_RELRENT, sizeof(ElfW(Relr))}};
    bool have_pltrel = false, have_jmprel = false, have_versions = false, have_versym = false;
    uint64_t pltrel = 0;
    DynamicValues values;  // the loader keeps the last entry of each tag
    struct Sized {
        int64_t addr_tag, size_tag;
        uint64_t addr = 0, size = 0;
        bool have_addr = false, have_size = false;
    } sized[] = {{DT_STRTAB, DT_STRSZ},       {DT_RELA, DT_RELASZ},
                 {DT_REL, DT_RELSZ},          {DT_JMPREL, DT_PLTRELSZ},
                 {DT_INIT_ARRAY, DT_INIT_ARRAYSZ}, {DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
                 {DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ}, {DT_RELR, DT_RELRSZ}};
    static const int64_t pointer_tags[] = {DT_SYMTAB, DT_HASH,   DT_GNU_HASH, DT_VERSYM,
                                           DT_VERDEF, DT_VERNEED, DT_INIT,    DT_FINI,
                                           DT_PLTGOT};
    for (uint64_t i = 0; i < count; ++i) {
        Dyn d;
        if (!read(dyn.p_offset + i * sizeof d, &d, sizeof d))
            return refuse(true, "its dynamic section cannot be read");
        if (d.d_tag == DT_NULL) {
            terminated = true;
            break;
        }
        values[d.d_tag] = d.d_un.d_val;
        for (Sized &s : sized) {
            if (d.d_tag == s.addr_tag) s.addr = d.d_un.d_ptr, s.have_addr = true;
            if (d.d_tag == s.size_tag) s.size = d.d_un.d_val, s.have_size = true;
        }
        for (int64_t tag : pointer_tags)
            if (d.d_tag == tag && !image.holding(d.d_un.d_ptr, 1, false))
                return refuse(true, "dynamic entry %lld points at 0x%llx, outside every PT_LOAD",
                              static_cast<long long>(tag),
                              static_cast<unsigned long long>(d.d_un.d_ptr));
        if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr, have_strtab = true;
        if (d.d_tag == DT_SYMTAB) have_symtab = true;
        for (Entry &e : entries) {
            if (d.d_tag == e.table_tag) e.have_table = true;
            if (d.d_tag == e.entry_tag) e.have_entry = true, e.entry = d.d_un.d_val;
        }
        if (d.d_tag == DT_PLTREL) have_pltrel = true, pltrel = d.d_un.d_val;
        if (d.d_tag == DT_JMPREL) have_jmprel = true;
        if (d.d_tag == DT_VERNEED || d.d_tag == DT_VERDEF) have_versions = true;
        if (d.d_tag == DT_VERSYM) have_versym = true;
        if (d.d_tag == DT_HASH || d.d_tag == DT_GNU_HASH) have_hash = true;
        if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val, have_strsz = true;
    }
    if (!terminated) return refuse(true, "its dynamic section has no DT_NULL terminator");
    for (const Sized &s : sized) {
        if (!s.have_addr) continue;
        // The loader reads the size entry of every table it finds, unchecked.
        if (!s.have_size)
            return refuse(true, "dynamic table %lld has no size entry (%lld)",
                          static_cast<long long>(s.addr_tag), static_cast<long long>(s.size_tag));
        uint64_t len = s.have_size ? s.size : 1;
        if (!image.holding(s.addr, len ? len : 1, false))
            return refuse(true, "dynamic table %lld at 0x%llx (%llu bytes) is outside every PT_LOAD",
                          static_cast<long long>(s.addr_tag), static_cast<unsigned long long>(s.addr),
                          static_cast<unsigned long long>(len));
    }
    if (have_strtab != have_strsz) return refuse(true, "DT_STRTAB and DT_STRSZ must come together");
    for (const Entry &e : entries)
        if (e.have_table && (!e.have_entry || e.entry != e.want))
            return refuse(true, "dynamic table %lld needs entry size %llu (dynamic entry %lld)",
                          static_cast<long long>(e.table_tag),
                          static_cast<unsigned long long>(e.want),
                          static_cast<long long>(e.entry_tag));
    if (have_pltrel != have_jmprel)
        return refuse(true, "DT_PLTREL and DT_JMPREL must come together");
    if (have_pltrel && pltrel != kHostPltRel)
        return refuse(true, "DT_PLTREL %llu is not this host's relocation kind %lld",
                      static_cast<unsigned long long>(pltrel), static_cast<long long>(kHostPltRel));
    if (have_versions != have_versym)
        return refuse(true, "DT_VERSYM must come with DT_VERNEED or DT_VERDEF, and they with it");
    // The loader looks the entry point up through these (and dereferences
    // them unchecked): an object without them exports nothing.
    if (!have_strtab || !have_symtab || !have_hash)
        return refuse(true, "its dynamic section lacks a symbol table (DT_SYMTAB, DT_STRTAB and "
                            "DT_HASH or DT_GNU_HASH)");
    // Names (DT_NEEDED, DT_SONAME, run paths) are offsets into the string table.
    for (uint64_t i = 0; have_strtab && i < count; ++i) {
        Dyn d;
        if (!read(dyn.p_offset + i * sizeof d, &d, sizeof d)) break;
        if (d.d_tag == DT_NULL) break;
        if ((d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME || d.d_tag == DT_RPATH ||
             d.d_tag == DT_RUNPATH) &&
            d.d_un.d_val >= strsz)
            return refuse(true, "dynamic entry %lld names string %llu, past the %llu-byte string table",
                          static_cast<long long>(d.d_tag),
                          static_cast<unsigned long long>(d.d_un.d_val),
                          static_cast<unsigned long long>(strsz));
    }
    (void)strtab;
    return check_tables(read, image, values);
}

}  // namespace

ElfHost host_elf() {
    const unsigned char *ident = __ehdr_start.e_ident;
    return ElfHost{ident[EI_CLASS], ident[EI_DATA], __ehdr_start.e_machine};
}

ElfVerdict check_elf(const ReadAt &read, uint64_t size, const ElfHost &host) {
    unsigned char magic[SELFMAG];
    if (size < SELFMAG || !read(0, magic, SELFMAG) || std::memcmp(magic, ELFMAG, SELFMAG) != 0)
        return refuse(false, "no ELF header");
    if (size < sizeof(Ehdr))
        return refuse(true, "truncated: %llu bytes, shorter than an ELF header",
                      static_cast<unsigned long long>(size));
    Ehdr eh;
    if (!read(0, &eh, sizeof eh)) return refuse(true, "its ELF header cannot be read");
    if (eh.e_ident[EI_CLASS] != host.elf_class)
        return refuse(true, "ELF class %u, not this host's %u", eh.e_ident[EI_CLASS], host.elf_class);
    if (eh.e_ident[EI_DATA] != host.data)
        return refuse(true, "ELF byte order %u, not this host's %u", eh.e_ident[EI_DATA], host.data);
    if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
        return refuse(true, "ELF version %u, not %u", eh.e_version, EV_CURRENT);
    if (eh.e_type != ET_DYN) return refuse(true, "ELF type %u is not a shared object", eh.e_type);
    if (eh.e_machine != host.machine)
        return refuse(true, "built for ELF machine %u, not this host's %u", eh.e_machine, host.machine);
    if (eh.e_ehsize < sizeof(Ehdr)) return refuse(true, "ELF header size %u is too small", eh.e_ehsize);
    if (eh.e_phentsize != sizeof(Phdr))
        return refuse(true, "program header size %u, not %zu", eh.e_phentsize, sizeof(Phdr));
    if (eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders)
        return refuse(true, "%u program headers (1..%u)", eh.e_phnum, kMaxProgramHeaders);
    if (!range_within(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Phdr), size))
        return refuse(true, "truncated: the program headers end past the file's %llu bytes",
                      static_cast<unsigned long long>(size));
    std::vector<Phdr> phdrs(eh.e_phnum);
    if (!read(eh.e_phoff, phdrs.data(), phdrs.size() * sizeof(Phdr)))
        return refuse(true, "its program headers cannot be read");

    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    Image image;
    for (const Phdr &p : phdrs) {
        if (p.p_type != PT_LOAD) continue;
        if (!range_within(p.p_offset, p.p_filesz, size))
            return refuse(true,
                          "truncated: a PT_LOAD segment's bytes [%llu, +%llu) end past the file's %llu",
                          static_cast<unsigned long long>(p.p_offset),
                          static_cast<unsigned long long>(p.p_filesz),
                          static_cast<unsigned long long>(size));
        if (p.p_filesz > p.p_memsz)
            return refuse(true, "a PT_LOAD segment has more file bytes than memory bytes");
        if (p.p_memsz == 0) return refuse(true, "a PT_LOAD segment is empty");
        if (!range_within(p.p_vaddr, p.p_memsz, UINT64_MAX))
            return refuse(true, "a PT_LOAD segment's addresses wrap around");
        if (!power_of_two_or_zero(p.p_align))
            return refuse(true, "a PT_LOAD alignment %llu is not a power of two",
                          static_cast<unsigned long long>(p.p_align));
        if (p.p_align > 1 && (p.p_offset - p.p_vaddr) % p.p_align != 0)
            return refuse(true, "a PT_LOAD segment's offset and address disagree modulo its alignment");
        if ((p.p_offset - p.p_vaddr) % page != 0)
            return refuse(true, "a PT_LOAD segment's offset and address disagree modulo the page size");
        if (!image.loads.empty()) {
            const Phdr &prev = image.loads.back();
            if (p.p_vaddr < prev.p_vaddr + prev.p_memsz)
                return refuse(true, "PT_LOAD segments overlap or are out of address order");
        }
        image.loads.push_back(p);
    }
    if (image.loads.empty()) return refuse(true, "no PT_LOAD segment");

    const Phdr *dynamic = nullptr;
    for (const Phdr &p : phdrs) {
        switch (p.p_type) {
        case PT_DYNAMIC:
            if (dynamic) return refuse(true, "two PT_DYNAMIC segments");
            dynamic = &p;
            if (p.p_filesz < sizeof(Dyn)) return refuse(true, "an empty PT_DYNAMIC segment");
            [[fallthrough]];
        case PT_NOTE:
        case PT_TLS:
        case PT_INTERP:
        case PT_GNU_EH_FRAME:
        case PT_GNU_PROPERTY:
            // Read by the loader from the file or through the mapped image.
            if (!range_within(p.p_offset, p.p_filesz, size))
                return refuse(true, "truncated: its %s ends past the file's %llu bytes",
                              segment_name(p.p_type), static_cast<unsigned long long>(size));
            if (p.p_filesz && !image.holding(p.p_vaddr, p.p_filesz, true))
                return refuse(true, "its %s lies outside the file bytes of every PT_LOAD",
                              segment_name(p.p_type));
            // The loader reads it at its address, these checks at its offset:
            // both must name the same bytes.
            if (p.p_filesz) {
                const Phdr *load = image.holding(p.p_vaddr, p.p_filesz, true);
                if (load->p_offset + (p.p_vaddr - load->p_vaddr) != p.p_offset)
                    return refuse(true, "its %s's offset and address name different bytes of its PT_LOAD",
                                  segment_name(p.p_type));
            }
            break;
        case PT_GNU_RELRO:
            // After relocating, the loader makes these pages read-only: a range
            // past its PT_LOAD would write-protect whatever is mapped next.
            if (p.p_memsz && !image.holding(p.p_vaddr, p.p_memsz, false, true))
                return refuse(true, "its PT_GNU_RELRO lies outside the memory of every PT_LOAD");
            break;
        default: break;
        }
    }
    if (!dynamic) return refuse(true, "no PT_DYNAMIC segment: not a shared object");
    return check_dynamic(read, *dynamic, image);
}

ElfVerdict check_elf_bytes(const void *data, size_t size, const ElfHost &host) {
    const unsigned char *bytes = static_cast<const unsigned char *>(data);
    ReadAt read = [bytes, size](uint64_t offset, void *out, size_t len) {
        if (!range_within(offset, len, size)) return false;
        std::memcpy(out, bytes + offset, len);
        return true;
    };
    return check_elf(read, size, host);
}

}  // namespace chring
