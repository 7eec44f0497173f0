//! Ring files through the Rust binding: create, apply, export, errors, the
//! follower and the file watcher.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use chring::{ErrorKind, Export, FollowOutcome, Follower, Options, Outcome, Ring, Watcher};

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

const GOOD1: &str = "%%revision 7\na 1\nb 2\n";
const GOOD2: &str = "%%revision 8\na 1\nb 2\nc 1\n";

fn text_fingerprint(text: &str) -> u64 {
    Ring::from_text(text, None, &Options::default()).unwrap().0.fingerprint().unwrap()
}

fn applied(f: &Follower<'_>) -> chring::FileInfo {
    match f.check() {
        Ok(Outcome::Applied(info)) => info,
        other => panic!("want an apply, got {:?}", other),
    }
}

fn unchanged(f: &Follower<'_>) {
    assert_eq!(f.check(), Ok(Outcome::Unchanged));
}

#[test]
fn follower_applies_then_reports_unchanged() {
    let dir = scratch("follow-apply");
    let path = dir.join("ring");
    replace(&path, GOOD1);
    let ring = Ring::new(&Options::default()).unwrap();
    let f = Follower::new(&ring, &path).unwrap();
    let st = f.state();
    assert_eq!(
        (st.checks, st.last_outcome, st.error.clone(), st.applied_fingerprint),
        (0, FollowOutcome::Unchanged, None, None)
    );

    let info = applied(&f);
    assert_eq!((info.added, info.revision), (2, Some(7)));
    let fp = ring.fingerprint().unwrap();
    assert_eq!((fp, info.fingerprint), (text_fingerprint(GOOD1), fp));
    let st = f.state();
    assert_eq!((st.applied, st.applied_revision, st.applied_fingerprint), (1, Some(7), Some(fp)));
    assert_eq!((st.last_outcome, st.error), (FollowOutcome::Applied, None));

    unchanged(&f);
    replace(&path, GOOD2);
    let info = applied(&f);
    assert_eq!((info.added, info.removed, info.revision), (1, 0, Some(8)));
    unchanged(&f);
    let st = f.state();
    assert_eq!((st.checks, st.applied, st.refused, st.applied_revision), (4, 2, 0, Some(8)));
    assert_eq!(st.last_outcome, FollowOutcome::Unchanged);
    assert_eq!(ring.fingerprint().unwrap(), text_fingerprint(GOOD2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn follower_refuses_a_bad_file_once_and_keeps_the_ring() {
    let dir = scratch("follow-refuse");
    let path = dir.join("ring");
    replace(&path, GOOD1);
    let ring = Ring::new(&Options::default()).unwrap();
    let f = Follower::new(&ring, &path).unwrap();
    applied(&f);
    let good = ring.fingerprint().unwrap();

    replace(&path, "%%revision 9\n%%fingerprint 0x0123456789abcdef\na 1\nb x\n");
    let err = f.check().unwrap_err();
    assert_eq!((err.kind(), err.line()), (ErrorKind::Format, Some(4)));
    let at = format!("{}:4: ", path.display());
    assert!(err.message().starts_with(&at), "{}", err.message());
    assert_eq!(ring.fingerprint().unwrap(), good);
    assert_eq!(err.member(), Some(&b"b"[..])); // the member line's id, from the error record
    let st = f.state();
    // The state keeps the status, the message and the line (not the member).
    let kept = st.error.as_ref().map(|e| (e.kind(), e.message(), e.line()));
    assert_eq!(kept, Some((err.kind(), err.message(), err.line())));
    assert_eq!((st.refused_revision, st.refused_fingerprint), (Some(9), Some(0x0123456789abcdef)));
    assert_eq!((st.refused, st.last_outcome), (1, FollowOutcome::Refused));
    assert_eq!((st.applied_revision, st.applied_fingerprint), (Some(7), Some(good)));

    // Once: the same bad file is not reported again; the state still says why.
    unchanged(&f);
    let st = f.state();
    assert_eq!((st.refused, st.last_outcome, st.refused_revision), (1, FollowOutcome::Unchanged, Some(9)));
    assert_eq!(st.error.map(|e| (e.kind(), e.line())), Some((ErrorKind::Format, Some(4))));

    // Options that differ from the ring's: nothing declared before the fault.
    replace(&path, "%%placement ketama\na:11211 1\n");
    assert_eq!(f.check().unwrap_err().kind(), ErrorKind::Options);
    let st = f.state();
    assert_eq!((st.refused_revision, st.refused_fingerprint), (None, None));

    // A good file clears the refusal.
    replace(&path, GOOD2);
    applied(&f);
    let st = f.state();
    assert_eq!((st.error, st.refused_revision, st.refused), (None, None, 2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn follower_of_a_missing_file() {
    let dir = scratch("follow-missing");
    let path = dir.join("ring");
    let ring = Ring::new(&Options::default()).unwrap();
    let f = Follower::new(&ring, &path).unwrap();
    let err = f.check().unwrap_err();
    assert_eq!((err.kind(), err.line()), (ErrorKind::Io, Some(0)));
    assert!(err.message().contains(path.to_str().unwrap()), "{}", err.message());
    unchanged(&f);

    replace(&path, GOOD1);
    applied(&f);
    let good = ring.fingerprint().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(f.check().unwrap_err().kind(), ErrorKind::Io);
    unchanged(&f);
    assert_eq!(ring.fingerprint().unwrap(), good);
    let st = f.state();
    assert_eq!(st.error.map(|e| e.kind()), Some(ErrorKind::Io));
    assert_eq!((st.refused, st.applied_revision), (2, Some(7)));
    replace(&path, GOOD2);
    applied(&f);
    assert_eq!(f.state().error, None);

    assert_eq!(Follower::new(&ring, "").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(Follower::new(&ring, "a\0b").unwrap_err().kind(), ErrorKind::InvalidArgument);
    std::fs::remove_dir_all(&dir).ok();
}

fn assert_send_sync<T: Send + Sync>() {}

// One thread checks while the file flips between two memberships, another
// reads the state, a third looks keys up: every lookup finds a member of
// one of the files, the state only grows, and the ring ends as the last
// file.
#[test]
fn follower_state_from_another_thread_while_checking() {
    assert_send_sync::<Follower<'static>>();
    const FLIPS: u64 = 151; // odd: the ring ends on the second file
    let files = ["a 1\nb 1\n", "a 1\ncc 1\n"];
    let dir = scratch("follow-threads");
    let path = dir.join("ring");
    replace(&path, files[0]);
    let ring = Ring::new(&Options::default()).unwrap();
    let f = Follower::new(&ring, &path).unwrap();
    applied(&f);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let state_reader = s.spawn(|| {
            let mut last = 0;
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                let st = f.state();
                assert!(st.error.is_none() && st.checks >= last && st.applied >= 1, "{:?}", st);
                last = st.checks;
                reads += 1;
            }
            reads
        });
        let key_reader = s.spawn(|| {
            let mut i = 0u64;
            while !done.load(Ordering::Relaxed) {
                let owner = ring.lookup(format!("key:{}", i)).unwrap();
                assert!([&b"a"[..], b"b", b"cc"].contains(&owner.id()), "{:?}", owner.id());
                i += 1;
            }
        });
        for i in 1..=FLIPS {
            replace(&path, files[(i % 2) as usize]);
            applied(&f);
        }
        done.store(true, Ordering::Relaxed);
        assert!(state_reader.join().unwrap() > 0);
        key_reader.join().unwrap();
    });
    let st = f.state();
    assert_eq!((st.checks, st.applied), (FLIPS + 1, FLIPS + 1));
    assert_eq!(ring.fingerprint().unwrap(), text_fingerprint(files[1]));
    std::fs::remove_dir_all(&dir).ok();
}

// A follower of a shared ring moves to another thread; the ring lives as
// long as the follower, even when every other Arc is gone.
#[test]
fn shared_follower_keeps_its_ring() {
    let dir = scratch("follow-shared");
    let path = dir.join("ring");
    replace(&path, GOOD1);
    let ring = Arc::new(Ring::new(&Options::default()).unwrap());
    let f = Follower::shared(Arc::clone(&ring), &path).unwrap();
    let weak = Arc::downgrade(&ring);
    drop(ring);
    let f = std::thread::spawn(move || {
        applied(&f);
        f
    })
    .join()
    .unwrap();
    let ring = weak.upgrade().expect("the follower let its ring go");
    assert_eq!(ring.fingerprint().unwrap(), text_fingerprint(GOOD1));
    drop(ring);
    drop(f);
    assert!(weak.upgrade().is_none(), "the follower's drop kept the ring");
    std::fs::remove_dir_all(&dir).ok();
}
