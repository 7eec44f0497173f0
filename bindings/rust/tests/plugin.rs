//! Options::plugin_dir and the plugin calls, with the fixture plugin
//! bindings/testdata/bindtest_plugin.c that meson builds into a directory
//! discovery does not search (CHRING_TEST_PLUGIN_DIR names it).
mod common;

use std::path::PathBuf;

use chring::{digest, hash, hashers, load_plugin, ErrorKind, Options, Ring};
use common::expect_error;

const NAME: &str = "bindtest_fnv1a";

/// The fixture's hash: FNV-1a 64 with the seed XORed into the offset basis.
fn fnv1a(data: &[u8], seed: u64) -> u64 {
    data.iter().fold(0xcbf29ce484222325 ^ seed, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

fn plugin_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CHRING_TEST_PLUGIN_DIR").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("CHRING_TEST_PLUGIN_DIR is not set (run through meson test): skipped");
    }
    dir
}

#[test]
fn plugin_dir_reaches_the_library() {
    let dir = match plugin_dir() {
        Some(dir) => dir,
        None => return,
    };
    // Not findable without the directory...
    expect_error(Ring::new(&Options::default().hasher(NAME)), ErrorKind::NoHasher, "chr_ring_new");
    // ...and found through it.
    let ring = Ring::new(&Options::default().hasher(NAME).seed(99).plugin_dir(&dir)).unwrap();
    ring.add("only", 1).unwrap();
    assert_eq!(ring.lookup("k").unwrap().id(), b"only");
    for data in [&b""[..], b"a", b"\0\xff\x07"] {
        assert_eq!(hash(NAME, data, 99).unwrap(), fnv1a(data, 99));
    }
    assert_eq!(digest(NAME, b"a").unwrap(), fnv1a(b"a", 0).to_be_bytes());
    let listed = hashers(None).unwrap().into_iter().find(|h| h.name == NAME).expect("listed");
    assert_eq!(listed.digest_size, 8);
    assert_eq!(PathBuf::from(&listed.origin).parent(), Some(dir.as_path()));
}

#[test]
fn plugin_errors() {
    let dir = std::env::temp_dir().join(format!("chring-rust-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    expect_error(load_plugin(dir.join("chring-missing.so")), ErrorKind::PluginFile, "chr_plugin_load");
    let text = dir.join("chring-text.so");
    std::fs::write(&text, "not an ELF file").unwrap();
    expect_error(load_plugin(&text), ErrorKind::PluginNotSharedObject, "chr_plugin_load");
    std::fs::remove_dir_all(&dir).ok();
    expect_error(digest("no-such-hasher", b"a"), ErrorKind::NoHasher, "chr_hasher_digest");
    if let Some(h) = hashers(None).unwrap().into_iter().find(|h| h.digest_size == 0) {
        expect_error(digest(&h.name, b"a"), ErrorKind::NotSupported, "chr_hasher_digest");
    }
}
