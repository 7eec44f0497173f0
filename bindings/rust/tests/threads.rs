//! Readers on several threads look up keys, on the ring and on a shared
//! snapshot, while one thread keeps changing the membership.
mod common;

use std::sync::Arc;
use std::thread;

use chring::{Change, Member, Options, Ring, Snapshot};
use common::ring_with;

const READERS: usize = 4;
const LOOKUPS: usize = 20_000;
const UPDATES: usize = 600;

fn valid(id: &[u8]) -> bool {
    id.starts_with(b"stable-") || id.starts_with(b"churn-")
}

/// A fresh snapshot is one membership: owner and replicas come from its own
/// node table, the coordinator is the owner, the fingerprint stays put.
fn check_snapshot(snap: &Snapshot, key: &[u8]) {
    let fp = snap.fingerprint().unwrap();
    let owner = snap.lookup(key).unwrap();
    let reps = snap.replicas(key, 3).unwrap();
    assert_eq!(reps[0].id(), owner.id());
    for n in reps.iter().chain(Some(&owner)) {
        assert_eq!(snap.node(n.index()).unwrap().id(), n.id());
    }
    assert_eq!(snap.fingerprint().unwrap(), fp);
}

#[test]
fn lookups_on_many_threads_during_updates() {
    let ring = ring_with(&Options::default(), 0);
    for i in 0..8 {
        ring.add(format!("stable-{}", i), 1 + (i % 3) as u32).unwrap();
    }
    let shared = Arc::new(ring.snapshot().unwrap());

    thread::scope(|s| {
        s.spawn(|| {
            for u in 0..UPDATES {
                let id = format!("churn-{}", u % 5).into_bytes();
                match (u / 5) % 3 {
                    0 => ring.add(&id, 1 + (u % 4) as u32),
                    1 => ring.apply(&[
                        Change::SetWeight(&id, (u % 3) as u32),
                        Change::Add(Member::new(b"batch-tmp", 1)),
                        Change::Remove(b"batch-tmp"),
                    ]),
                    _ => ring.remove(&id),
                }
                .unwrap_or_else(|e| panic!("update {}: {}", u, e));
            }
        });
        for g in 0..READERS {
            let ring = &ring;
            let shared = Arc::clone(&shared);
            s.spawn(move || {
                for i in 0..LOOKUPS {
                    let key = format!("k{}-{}", g, i).into_bytes();
                    let owner = ring.lookup(&key).unwrap();
                    assert!(valid(owner.id()), "{:?}", owner);
                    let a = shared.lookup(&key).unwrap();
                    let b = shared.lookup(&key).unwrap();
                    assert_eq!(a.id(), b.id(), "a snapshot answered twice differently");
                    if i % 50 == 0 {
                        check_snapshot(&ring.snapshot().unwrap(), &key);
                    }
                }
            });
        }
    });

    // The final ring equals one built directly from its final membership.
    let rebuilt = Ring::new(&Options::default()).unwrap();
    for n in ring.nodes().unwrap().iter().rev() {
        rebuilt.add(n.id(), n.weight()).unwrap();
    }
    assert_eq!(ring.fingerprint().unwrap(), rebuilt.fingerprint().unwrap());
}

/// Ring and Snapshot move between threads, and a snapshot is released on
/// a thread other than the one that took it.
#[test]
fn handles_move_across_threads() {
    let ring = Arc::new(ring_with(&Options::default(), 4));
    let snap = ring.snapshot().unwrap();
    let expected = snap.lookup("k").unwrap().id().to_vec();
    let got = thread::spawn(move || snap.lookup("k").unwrap().id().to_vec()).join().unwrap();
    assert_eq!(got, expected);
    let ring2 = Arc::clone(&ring);
    thread::spawn(move || ring2.add("from-another-thread", 1).unwrap()).join().unwrap();
    assert_eq!(ring.node_count().unwrap(), 5);
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    assert_send_sync::<Ring>();
    assert_send_sync::<Snapshot>();
    assert_send_sync::<chring::Node>();
    assert_send_sync::<chring::NodeView<'static>>();
    assert_send_sync::<chring::Error>();
}
