//! Ring files through the Rust binding: create, apply, export, errors and
//! the file watcher.
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use chring::{ErrorKind, Export, Options, Ring, Watcher};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chring-rust-ringfile-{}-{}", name, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn replace(path: &std::path::Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn export_is_canonical_and_round_trips() {
    let ring = Ring::new(&Options::default().seed(7).tokens_per_weight(40)).unwrap();
    ring.add("cache-b", 2).unwrap();
    ring.add_member(&chring::Member { id: b"cache-a", weight: 1, zone: b"eu-west-1a", tag: 0 }).unwrap();
    let text = ring.export(Export::default()).unwrap();
    let want = format!(
        "%%ring-file 1\n%%placement native\n%%hasher xxh3\n%%seed 7\n%%tokens-per-weight 40\n%%fingerprint 0x{:016x}\ncache-a 1 eu-west-1a\ncache-b 2\n",
        ring.fingerprint().unwrap()
    );
    assert_eq!(String::from_utf8(text.clone()).unwrap(), want);
    let (again, info) = Ring::from_text(&text, Some("canon"), &Options::default()).unwrap();
    assert_eq!(info.fingerprint, ring.fingerprint().unwrap());
    assert_eq!((info.members, info.added, info.has_options, info.has_fingerprint), (2, 2, true, true));
    assert_eq!(again.export(Export::default()).unwrap(), text);
    let with_rev = ring.export(Export { json: false, revision: Some(42) }).unwrap();
    let (_, info) = Ring::from_text(&with_rev, None, &Options::default()).unwrap();
    assert_eq!(info.revision, Some(42));
    let json = String::from_utf8(ring.export(Export { json: true, revision: None }).unwrap()).unwrap();
    assert!(json.trim_start().starts_with('{') && json.contains("cache-a"), "{}", json);
    assert_eq!(ring.snapshot().unwrap().export(Export::default()).unwrap(), text);
}

#[test]
fn apply_is_one_batch_and_refuses_other_options() {
    let dir = scratch("apply");
    let path = dir.join("ring.txt");
    let (ring, _) = Ring::from_text("a 1\nb 1\nc 1\n", None, &Options::default().seed(3)).unwrap();
    std::fs::write(&path, "a 1\nb 3 zone-b\nd 1\n").unwrap();
    let info = ring.apply_file(&path).unwrap();
    assert_eq!((info.added, info.removed, info.members), (1, 1, 3));
    let (fresh, _) = Ring::from_file(&path, &Options::default().seed(3)).unwrap();
    assert_eq!(info.fingerprint, fresh.fingerprint().unwrap());
    let err = ring.apply_text("%%seed 4\na 1\n", Some("other")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Options);
    assert_eq!(err.line(), Some(1));
    assert_eq!(ring.fingerprint().unwrap(), fresh.fingerprint().unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_carry_status_message_and_line() {
    let err = Ring::from_text("a 1\nb 1\na 2\n", Some("dup.txt"), &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Format);
    assert_eq!((err.line(), err.other_line(), err.member(), err.index()), (Some(3), Some(1), Some(&b"a"[..]), None));
    assert!(err.message().contains("dup.txt:3:"), "{}", err.message());
    let dir = scratch("errors");
    let err = Ring::from_file(dir.join("missing"), &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.message().contains("missing"), "{}", err.message());
    assert_eq!(Ring::from_file(&dir, &Options::default()).unwrap_err().kind(), ErrorKind::Io);
    assert_eq!(
        Ring::from_text("a 1\n", Some("n\0ul"), &Options::default()).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let (empty, info) = Ring::from_text("", None, &Options::default()).unwrap();
    assert_eq!((empty.node_count().unwrap(), info.members), (0, 0));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn watcher_applies_changes_and_keeps_the_last_good_ring() {
    let dir = scratch("watch");
    let path = dir.join("ring.txt");
    replace(&path, "a 1\nb 1\n");
    let ring = Arc::new(Ring::new(&Options::default()).unwrap());
    let (tx, rx) = mpsc::channel();
    let watcher = Watcher::start(Arc::clone(&ring), &path, Duration::from_millis(10), move |ev| {
        let _ = tx.send(ev);
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("no event within the deadline");
    let first = next().unwrap();
    assert_eq!(first.added, 2);
    let good = ring.fingerprint().unwrap();
    replace(&path, "a 1\nb 1\nb 2\n");
    let err = next().unwrap_err();
    assert_eq!((err.kind(), err.line()), (ErrorKind::Format, Some(3)));
    assert_eq!(ring.fingerprint().unwrap(), good);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(next().unwrap_err().kind(), ErrorKind::Io);
    replace(&path, "c 1\n");
    let info = next().unwrap();
    assert_eq!((info.removed, info.added), (2, 1));
    // Once per change: nothing more while the file stays as it is.
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    watcher.stop();
    replace(&path, "d 1\n");
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "an event after stop");
    std::fs::remove_dir_all(&dir).ok();
}
