//! Availability: members marked down are routed around along each key's
//! replica walk, unmarking restores every key, panic ignores the marks,
//! and the digest is the one the library writes and checks in ring files.
mod common;

use chring::{ErrorKind, Follower, Options, Outcome, Ring, Snapshot, PANIC_THRESHOLD_DEFAULT};
use common::{expect_error, key, node_id, ring_with};

const KEYS: usize = 1000;

/// Every key of `ring` against `before` (the same members, no marks): the
/// owner is the first member of the key's unmarked walk not in `down`, the
/// replica list starts with it and lists down members last, and the
/// snapshot's lookups and batch agree. Returns how many keys moved.
fn check_routing(ring: &Ring, before: &Snapshot, down: &[Vec<u8>]) -> usize {
    let members = before.node_count().unwrap();
    let snap = ring.snapshot().unwrap();
    let is_down = |id: &[u8]| down.iter().any(|d| d == id);
    let mut moved = 0;
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let mut batch = vec![0u32; KEYS];
    snap.lookup_batch(&keys, &mut batch).unwrap();
    for (i, k) in keys.iter().enumerate() {
        let walk = before.replicas(k, members).unwrap();
        let want = walk.iter().find(|n| !is_down(n.id())).unwrap_or(&walk[0]).id();
        let owner = ring.lookup(k).unwrap();
        assert_eq!(owner.id(), want, "key {}", i);
        assert_eq!(snap.lookup(k).unwrap().id(), want, "key {} (snapshot)", i);
        assert_eq!(snap.node(batch[i] as usize).unwrap().id(), want, "key {} (batch)", i);
        let reps = ring.replicas(k, 3).unwrap();
        assert_eq!(reps[0].id(), want, "key {}: replica list", i);
        for pair in reps.windows(2) {
            assert!(!(is_down(pair[0].id()) && !is_down(pair[1].id())), "key {}: down before available", i);
        }
        moved += (want != walk[0].id()) as usize;
    }
    moved
}

#[test]
fn set_down_routes_to_the_next_replica_and_back() {
    let ring = ring_with(&Options::default().seed(3), 5);
    let before = ring.snapshot().unwrap();
    let owners: Vec<Vec<u8>> = (0..KEYS).map(|i| ring.lookup(key(i)).unwrap().id().to_vec()).collect();
    ring.set_down(node_id(1), true).unwrap();
    assert!(check_routing(&ring, &before, &[node_id(1)]) > 0, "no key moved");
    let a = ring.availability().unwrap();
    assert_eq!((a.down, a.panic, a.down_weight, a.total_weight), (1, false, 2, 9));
    assert_eq!(a.panic_threshold, PANIC_THRESHOLD_DEFAULT);
    assert_ne!(a.digest, 0);
    for n in ring.nodes().unwrap() {
        assert_eq!(n.down(), n.id() == node_id(1).as_slice(), "{}", n);
    }
    let snap = ring.snapshot().unwrap();
    assert_eq!(snap.availability().unwrap(), a);
    assert!(snap.marked_down(1).unwrap() && snap.node(1).unwrap().down());
    assert!(!snap.marked_down(0).unwrap());
    expect_error(snap.marked_down(5), ErrorKind::OutOfRange, "chr_snapshot_marked_down");

    ring.set_down(node_id(1), false).unwrap();
    for (i, want) in owners.iter().enumerate() {
        assert_eq!(ring.lookup(key(i)).unwrap().id(), want.as_slice(), "key {} after unmarking", i);
    }
    assert_eq!(ring.availability().unwrap().digest, 0);
    expect_error(ring.set_down("nobody", true), ErrorKind::NotFound, "chr_ring_set_down");
}

#[test]
fn two_of_five_honoured_three_of_four_is_panic() {
    let ring = ring_with(&Options::default().seed(5), 5);
    let before = ring.snapshot().unwrap();
    let down = [node_id(0), node_id(3)];
    ring.set_availability(&down, PANIC_THRESHOLD_DEFAULT).unwrap();
    check_routing(&ring, &before, &down);

    let eq = Ring::new(&Options::default().seed(9)).unwrap();
    for i in 0..4 {
        eq.add(node_id(i), 1).unwrap();
    }
    let plain = eq.snapshot().unwrap();
    let three = [node_id(0), node_id(1), node_id(2)];
    eq.set_availability(&three, PANIC_THRESHOLD_DEFAULT).unwrap();
    let a = eq.availability().unwrap();
    assert!(a.panic && a.down == 3 && a.down_weight == 3 && a.total_weight == 4, "{:?}", a);
    assert_eq!(check_routing(&eq, &plain, &[]), 0);
    assert!(eq.nodes().unwrap().iter().all(|n| !n.down()), "Down set in panic");
    let snap = eq.snapshot().unwrap();
    assert!(snap.marked_down(0).unwrap() && !snap.node(0).unwrap().down(), "a mark panic suspends");
    eq.set_availability(&three, 100).unwrap();
    assert!(!eq.availability().unwrap().panic);
    check_routing(&eq, &plain, &three);

    // A failed set leaves the state as it was.
    let digest = eq.availability().unwrap().digest;
    let err = expect_error(
        eq.set_availability(&[node_id(0), b"ghost".to_vec()], 50),
        ErrorKind::NotFound,
        "chr_ring_set_availability",
    );
    assert_eq!((err.index(), err.member()), (Some(1), Some(&b"ghost"[..])));
    expect_error(eq.set_availability::<&[u8]>(&[], 101), ErrorKind::OutOfRange, "chr_ring_set_availability");
    assert_eq!(eq.availability().unwrap().digest, digest);
    eq.set_availability::<&[u8]>(&[], PANIC_THRESHOLD_DEFAULT).unwrap();
    assert_eq!(eq.availability().unwrap().digest, 0);
}

/// The digest a ring reports is the one the library writes into a ring
/// file and checks when loading one; a follower applies %%down lines and
/// reports the digest of what it applied.
#[test]
fn digest_matches_the_files_and_a_follower_applies_it() {
    let a = ring_with(&Options::default(), 6);
    let b = ring_with(&Options::default(), 6);
    a.set_down(node_id(4), true).unwrap();
    a.set_down(node_id(2), true).unwrap();
    b.set_availability(&[node_id(2), node_id(4), node_id(2)], PANIC_THRESHOLD_DEFAULT).unwrap();
    let digest = a.availability().unwrap().digest;
    assert_eq!(a.availability().unwrap(), b.availability().unwrap());

    let text = String::from_utf8(a.export(chring::Export::default()).unwrap()).unwrap();
    assert!(text.contains("%%down node-2\n"), "{}", text);
    let (c, info) = Ring::from_text(&text, Some("a"), &Options::default()).unwrap();
    assert!(info.has_availability && info.down == 2 && info.availability == digest, "{:?}", info);
    assert_eq!(c.availability().unwrap().digest, digest);
    // The file's %%availability is the digest, and checked against its state.
    let claimed = format!("%%availability 0x{:016x}\n", digest);
    assert!(text.contains(&claimed), "{}", text);
    let wrong = text.replace(&claimed, &format!("%%availability 0x{:016x}\n", digest ^ 1));
    expect_error(Ring::from_text(&wrong, None, &Options::default()), ErrorKind::Format, "");

    let dir = std::env::temp_dir().join(format!("chring-rust-availability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fleet.ring");
    std::fs::write(&path, &text).unwrap();
    let follower = Ring::new(&Options::default()).unwrap();
    let f = Follower::new(&follower, &path).unwrap();
    match f.check() {
        Ok(Outcome::Applied(info)) => assert_eq!(info.availability, digest),
        other => panic!("want an apply, got {:?}", other),
    }
    assert_eq!(f.state().applied_availability, Some(digest));
    for i in 0..KEYS {
        assert_eq!(follower.lookup(key(i)).unwrap().id(), a.lookup(key(i)).unwrap().id(), "key {}", i);
    }
    std::fs::remove_dir_all(&dir).ok();
}
