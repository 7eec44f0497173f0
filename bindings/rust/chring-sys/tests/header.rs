//! Checks `chring_sys` against the real header: every `extern` function,
//! function-pointer type, alias, constant and struct layout of `src/lib.rs`
//! is turned into C declarations and static assertions that the C compiler
//! checks against `chring.h` (a mismatched parameter type is an
//! incompatible-pointer-type error under -Werror), and the header's
//! functions and integer constants must all be declared in `src/lib.rs`.
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::mem::{size_of, size_of_val, zeroed};
use std::path::{Path, PathBuf};
use std::process::Command;

use chring_sys as sys;

const SYS_RS: &str = include_str!("../src/lib.rs");

fn include_dir() -> PathBuf {
    PathBuf::from(env!("CHRING_INCLUDE_DIR"))
}

fn header_text() -> String {
    ["chring.h", "chring_plugin.h"]
        .iter()
        .map(|h| std::fs::read_to_string(include_dir().join(h)).expect("read header"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The C spelling of a Rust FFI type, as used in `src/lib.rs`.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(rest) = rust.strip_prefix("*const ") {
        return format!("{} *", qualified(c_type(rest), true));
    }
    if let Some(rest) = rust.strip_prefix("*mut ") {
        return format!("{} *", qualified(c_type(rest), false));
    }
    match rust {
        "u8" => "uint8_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "usize" => "size_t",
        "f64" => "double",
        "c_int" => "int",
        "c_char" => "char",
        "c_uchar" => "unsigned char",
        "c_void" => "void",
        other => other, // chr_* types keep their names
    }
    .to_string()
}

fn qualified(c: String, is_const: bool) -> String {
    match (is_const, c.ends_with('*')) {
        (false, _) => c,
        (true, true) => format!("{} const", c), // const pointer pointee
        (true, false) => format!("const {}", c),
    }
}

/// `a: T, b: U` -> `T, U` in C (`void` when empty).
fn c_params(params: &str) -> String {
    let list: Vec<String> = params
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| c_type(p.split_once(':').expect("named parameter").1))
        .collect();
    if list.is_empty() {
        "void".to_string()
    } else {
        list.join(", ")
    }
}

/// `(params) -> ret` or `(params)` -> (params, C return type).
fn split_signature(sig: &str) -> (String, String) {
    let open = sig.find('(').expect("(");
    let close = sig.rfind(')').expect(")");
    let ret = sig[close + 1..].trim().trim_start_matches("->").trim();
    let ret = if ret.is_empty() { "void".to_string() } else { c_type(ret) };
    (c_params(&sig[open + 1..close]), ret)
}

struct Layout {
    name: &'static str,
    size: usize,
    fields: Vec<(&'static str, usize, usize)>, // name, offset, size
}

macro_rules! layout {
    ($t:ident { $($f:ident),* $(,)? }) => {{
        // SAFETY: every sys struct is plain data, valid when zeroed.
        let v: sys::$t = unsafe { zeroed() };
        let base = &v as *const _ as usize;
        Layout {
            name: stringify!($t),
            size: size_of::<sys::$t>(),
            fields: vec![$((stringify!($f), &v.$f as *const _ as usize - base, size_of_val(&v.$f))),*],
        }
    }};
}

fn layouts() -> Vec<Layout> {
    vec![
        layout!(chr_options { version, tokens_per_weight, seed, hasher, placement, reserved0, plugin_dir }),
        layout!(chr_node_ref { tag, ownership, weight, tokens, index, id_len, zone_len, flags, id, zone }),
        layout!(chr_node_view { id, id_len, zone, zone_len, tag, ownership, weight, tokens, index, flags }),
        layout!(chr_change { op, weight, id, id_len, zone, zone_len, tag }),
        layout!(chr_hasher { abi_version, struct_size, name, description, hash64, digest_size, digest, flags }),
        layout!(chr_hasher_info { name, description, origin, digest_size, reserved0 }),
        layout!(chr_ringfile_info {
            version,
            flags,
            revision,
            fingerprint,
            format_version,
            members,
            added,
            removed,
            reweighted,
            replaced,
            error_line,
            reserved0,
            availability,
            down,
            panic_threshold
        }),
        layout!(chr_follow_state {
            version,
            last_outcome,
            status,
            error_line,
            checks,
            applied,
            refused,
            applied_flags,
            refused_flags,
            applied_revision,
            applied_fingerprint,
            refused_revision,
            refused_fingerprint,
            message,
            applied_availability
        }),
        layout!(chr_availability_info { version, panic, panic_threshold, down, down_weight, total_weight, digest }),
        layout!(chr_bound_options { version, factor_pct, spill, max_probes, slack }),
        layout!(chr_bound_result { index, home, probes, flags, load, capacity }),
        layout!(chr_ticket { slot, check }),
        layout!(chr_error_info {
            version,
            status,
            flags,
            line,
            other_line,
            reserved0,
            change_index,
            function,
            message,
            reason,
            source,
            member,
            member_len
        }),
        layout!(chr_ringfile_member { version, weight, id_len, zone_len, id, zone }),
    ]
}

/// Field names of `pub struct NAME { ... }` in src/lib.rs.
fn sys_struct_fields(name: &str) -> Vec<String> {
    let start = SYS_RS.find(&format!("pub struct {} {{", name)).expect("struct in src/lib.rs");
    let body = &SYS_RS[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("pub ").and_then(|f| f.split_once(':')).map(|(n, _)| n.to_string()))
        .collect()
}

fn sys_functions() -> Vec<(String, String, String)> {
    SYS_RS
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .map(|l| {
            let name = l[..l.find('(').unwrap()].to_string();
            let (params, ret) = split_signature(l.trim_end_matches(';'));
            (name, params, ret)
        })
        .collect()
}

fn header_functions(header: &str) -> BTreeSet<String> {
    // Declarations start lines with "CHR_API"; the name is the identifier
    // right before the first '('.
    let mut names = BTreeSet::new();
    for (i, _) in header.match_indices("\nCHR_API ") {
        let decl = &header[i + 1..];
        let before = &decl[..decl.find('(').unwrap()];
        let name = before.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap();
        names.insert(name.to_string());
    }
    names
}

/// Integer-valued `#define CHR_X value` macros of the header.
fn header_int_constants(header: &str) -> BTreeSet<String> {
    header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define "))
        .filter_map(|l| {
            let mut parts = l.splitn(2, char::is_whitespace);
            let name = parts.next()?;
            let value = parts.next()?.trim();
            let numeric = value.starts_with(|c: char| c.is_ascii_digit() || c == '(' || c == '-');
            (name.starts_with("CHR_") && !name.contains('(') && numeric).then(|| name.to_string())
        })
        .collect()
}

fn generated_c() -> String {
    let mut c = String::from("#include <stddef.h>\n#include <chring.h>\n\n");
    for line in SYS_RS.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub const ") {
            let (name, value) = rest.trim_end_matches(';').split_once('=').unwrap();
            let name = name.split(':').next().unwrap().trim();
            writeln!(c, "_Static_assert(({}) == ({}), \"{} differs\");", name, value.trim(), name).unwrap();
        } else if let Some(rest) = line.strip_prefix("pub type ") {
            let (name, ty) = rest.trim_end_matches(';').split_once('=').unwrap();
            let (name, ty) = (name.trim(), ty.trim());
            if let Some(sig) = ty.strip_prefix("Option<unsafe extern \"C\" fn").and_then(|s| s.strip_suffix('>')) {
                let (params, ret) = split_signature(sig);
                writeln!(c, "static const {} check_type_{} = ({} (*)({}))0;", name, name, ret, params).unwrap();
            } else {
                writeln!(c, "static {} *const check_alias_{} = ({} *)0;", name, name, c_type(ty)).unwrap();
            }
        }
    }
    for (name, params, ret) in sys_functions() {
        writeln!(c, "static {} (*const check_fn_{})({}) = {};", ret, name, params, name).unwrap();
    }
    for l in layouts() {
        writeln!(c, "_Static_assert(sizeof({0}) == {1}, \"sizeof {0}\");", l.name, l.size).unwrap();
        for (f, off, size) in &l.fields {
            writeln!(c, "_Static_assert(offsetof({0}, {1}) == {2}, \"offset of {0}.{1}\");", l.name, f, off).unwrap();
            writeln!(c, "_Static_assert(sizeof(((const {0} *)0)->{1}) == {2}, \"size of {0}.{1}\");", l.name, f, size)
                .unwrap();
        }
    }
    // Reference every check so that -Wunused does not fire.
    c.push_str("\nconst void *chring_rust_checks[] = {\n");
    for (name, _, _) in sys_functions() {
        writeln!(c, "    (const void *)&check_fn_{},", name).unwrap();
    }
    for line in SYS_RS.lines().filter_map(|l| l.trim().strip_prefix("pub type ")) {
        let name = line.split('=').next().unwrap().trim();
        let kind = if line.contains("extern \"C\" fn") { "type" } else { "alias" };
        writeln!(c, "    (const void *)&check_{}_{},", kind, name).unwrap();
    }
    c.push_str("};\n");
    c
}

fn compile(source: &str, dir: &Path) -> Result<(), String> {
    let file = dir.join("chring_sys_check.c");
    std::fs::write(&file, source).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", "-o"])
        .arg(dir.join("chring_sys_check.o"))
        .arg("-I")
        .arg(include_dir())
        .arg(&file)
        .output()
        .map_err(|e| format!("cannot run {}: {}", cc, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chring-header-{}-{}", name, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn sys_declarations_compile_against_the_header() {
    let dir = scratch_dir("ok");
    let result = compile(&generated_c(), &dir);
    std::fs::remove_dir_all(&dir).ok();
    if let Err(errors) = result {
        panic!("src/lib.rs does not match chring.h:\n{}", errors);
    }
}

#[test]
fn the_check_rejects_a_wrong_declaration() {
    // The same generated file with one parameter's constness flipped must
    // fail: proof that the compiler compares the signatures.
    let good = generated_c();
    let bad = good.replacen("check_fn_chr_ring_lookup)(const chr_ring *", "check_fn_chr_ring_lookup)(chr_ring *", 1);
    assert_ne!(good, bad, "the generated check lost chr_ring_lookup");
    let dir = scratch_dir("bad");
    let result = compile(&bad, &dir);
    std::fs::remove_dir_all(&dir).ok();
    assert!(result.is_err(), "a wrong parameter type compiled");
}

#[test]
fn every_header_function_is_declared() {
    let header = header_functions(&header_text());
    let declared: BTreeSet<String> = sys_functions().into_iter().map(|(n, _, _)| n).collect();
    assert!(header.len() >= 30, "parsed only {} functions from the header", header.len());
    let missing: Vec<_> = header.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&header).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing in src/lib.rs: {:?}; not in the header: {:?}",
        missing,
        extra
    );
}

#[test]
fn every_header_integer_constant_is_declared() {
    let header = header_int_constants(&header_text());
    let declared: BTreeSet<String> = SYS_RS
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect();
    assert!(
        header.contains("CHR_EPLUGIN_DESC") && header.contains("CHR_NODE_ID_MAX") && header.contains("CHR_EXPORT_JSON")
    );
    let missing: Vec<_> = header.difference(&declared).collect();
    assert!(missing.is_empty(), "header constants missing in src/lib.rs: {:?}", missing);
}

#[test]
fn layout_lists_name_every_field() {
    for l in layouts() {
        let listed: Vec<String> = l.fields.iter().map(|(f, _, _)| f.to_string()).collect();
        assert_eq!(listed, sys_struct_fields(l.name), "tests/header.rs lists other fields than sys.rs for {}", l.name);
    }
}
