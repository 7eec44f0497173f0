mod common;

use std::sync::Arc;
use std::thread;

use chring::{bound_capacities, BoundOptions, ErrorKind, Options, Spill, Tracker};
use common::{expect_error, key, ring_with};

#[test]
fn idle_bounded_lookup_is_the_plain_lookup() {
    let ring = ring_with(&Options::default(), 7);
    let snap = ring.snapshot().unwrap();
    for spill in [Spill::Replicas, Spill::Shuffle] {
        let opts = BoundOptions { spill, ..BoundOptions::default() };
        for i in 0..2000 {
            let home = snap.lookup(key(i)).unwrap().index();
            let (node, res) = snap.lookup_bounded(key(i), None, None, Some(&opts)).unwrap();
            assert_eq!((node.index(), res.home, res.probes, res.spilled), (home, home, 1, false));
        }
    }
}

#[test]
fn full_and_masked_nodes_get_nothing() {
    let ring = ring_with(&Options::default(), 5);
    let snap = ring.snapshot().unwrap();
    let mut loads = vec![0u64; 5];
    loads[3] = 60;
    let up = [true, false, true, true, true];
    let opts = BoundOptions::default();
    for i in 0..2000 {
        let (node, res) = snap.lookup_bounded(key(i), Some(&loads), Some(&up), Some(&opts)).unwrap();
        assert!(node.index() != 1 && node.index() != 3, "key {} went to {}", i, node.index());
        assert!(loads[node.index()] < res.capacity);
        // unmasked and idle: back home
        let (back, _) = snap.lookup_bounded(key(i), None, None, None).unwrap();
        assert_eq!(back.index(), snap.lookup(key(i)).unwrap().index());
    }
    let caps = bound_capacities(&[1, 1, 1, 1], 99, &opts).unwrap();
    assert!(caps.iter().sum::<u64>() >= 100);
    let bad = snap.lookup_bounded("k", Some(&loads[..4]), None, Some(&opts));
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let wrong = BoundOptions { factor_pct: 50, ..BoundOptions::default() };
    expect_error(snap.lookup_bounded("k", None, None, Some(&wrong)), ErrorKind::OutOfRange, "chr_snapshot_lookup_bounded");
}

#[test]
fn guards_release_on_drop_across_threads_and_removals() {
    let ring = Arc::new(ring_with(&Options::default(), 8));
    let tracker = Arc::new(Tracker::new(0).unwrap());
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (ring, tracker) = (ring.clone(), tracker.clone());
            thread::spawn(move || {
                let opts = BoundOptions::default();
                for i in 0..500 {
                    let snap = ring.snapshot().unwrap();
                    let guard = tracker.acquire(&snap, key(t * 1000 + i), Some(&opts)).unwrap();
                    assert!(guard.result().load < guard.result().capacity);
                }
            })
        })
        .collect();
    {
        let snap = ring.snapshot().unwrap();
        let held = tracker.acquire(&snap, "held", None).unwrap();
        let id = held.node().id().to_vec();
        ring.remove(&id).unwrap();
        assert_eq!(tracker.load(&id).unwrap(), 1);
        drop(held); // released after its node left the ring
        assert_eq!(tracker.load(&id).unwrap(), 0);
    }
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(tracker.total().unwrap(), 0);

    let snap = ring.snapshot().unwrap();
    let first = snap.node(0).unwrap().id().to_vec();
    tracker.set_available(&first, false).unwrap();
    for i in 0..300 {
        let g = tracker.acquire(&snap, key(i), None).unwrap();
        assert_ne!(g.node().id(), &first[..]);
    }
    assert_eq!(tracker.total().unwrap(), 0);
}
