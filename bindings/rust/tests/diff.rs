mod common;

use chring::{Diff, ErrorKind, Options, ReplicaPolicy, Side};
use common::{expect_error, key, node_id, ring_with};

/// Snapshots of a ring of 10 nodes before and after adding node-10.
fn pair() -> (chring::Snapshot, chring::Snapshot) {
    let ring = ring_with(&Options::default(), 10);
    let before = ring.snapshot().unwrap();
    ring.add(node_id(10), 1).unwrap();
    (before, ring.snapshot().unwrap())
}

#[test]
fn an_added_node_gains_exactly_the_ranges_that_move() {
    let (before, after) = pair();
    let diff = Diff::new(&before, &after).unwrap();
    drop(before); // the diff keeps its own references
    drop(after);
    let info = diff.info();
    assert_eq!((info.added, info.removed, info.old_nodes, info.new_nodes), (1, 0, 10, 11));
    let ranges = diff.ranges().unwrap();
    assert_eq!(ranges.len(), info.ranges);
    assert!(!ranges.is_empty());
    let added = ranges[0].to.unwrap();
    assert_eq!(diff.node(Side::New, added).unwrap().id(), node_id(10).as_slice());
    let mut total = 0.0;
    for (i, r) in ranges.iter().enumerate() {
        assert_eq!(r.to, Some(added), "range {} goes elsewhere", i);
        assert!(r.first <= r.last);
        if i > 0 {
            assert!(ranges[i - 1].last < r.first, "sorted, disjoint");
        }
        total += r.share();
    }
    assert!((total - info.moved).abs() < 1e-12);
    let mut moved = 0;
    for i in 0..20000 {
        let t = diff.lookup(key(i)).unwrap();
        let k = ranges.partition_point(|r| r.last < t.position);
        let inside = k < ranges.len() && ranges[k].first <= t.position;
        assert_eq!(inside, t.moved, "key {} at {:#x}", i, t.position);
        if t.moved {
            moved += 1;
            assert_eq!(t.old.unwrap().index() as u32, ranges[k].from.unwrap());
            assert_eq!(t.new.unwrap().index() as u32, added);
        }
    }
    assert!(moved > 0);
    let sum: f64 = diff.matrix().unwrap().iter().map(|c| c.fraction).sum();
    assert!((sum - 1.0).abs() < 1e-12);
    assert_eq!(diff.counterpart(Side::New, added).unwrap(), None);
    assert_eq!(diff.counterpart(Side::Old, 0).unwrap(), Some(0));
    expect_error(diff.counterpart(Side::Old, 99), ErrorKind::OutOfRange, "chr_diff_counterpart");
}

#[test]
fn the_plan_for_one_replica_is_the_ranges() {
    let (before, after) = pair();
    let diff = Diff::new(&before, &after).unwrap();
    let ranges = diff.ranges().unwrap();
    let one = diff.plan(ReplicaPolicy::Nodes, 1).unwrap();
    assert_eq!(one.len(), ranges.len());
    for (e, r) in one.iter().zip(&ranges) {
        assert_eq!((e.first, e.last, Some(e.to)), (r.first, r.last, r.to));
        assert_eq!(e.sources, vec![r.from.unwrap()]);
    }
    for e in diff.plan(ReplicaPolicy::ZonesFirst, 3).unwrap() {
        assert_eq!(Some(e.to), ranges[0].to, "only the added node gains");
        assert_eq!(e.sources.len(), 3);
    }
    expect_error(diff.plan(ReplicaPolicy::Nodes, 0), ErrorKind::InvalidArgument, "chr_plan_new");
    expect_error(diff.plan(ReplicaPolicy::Nodes, 17), ErrorKind::OutOfRange, "chr_plan_new");
}

#[test]
fn rings_that_place_keys_differently_are_refused() {
    let a = ring_with(&Options::default(), 3).snapshot().unwrap();
    let b = ring_with(&Options::default().seed(7), 3).snapshot().unwrap();
    expect_error(Diff::new(&a, &b), ErrorKind::Incompatible, "chr_diff_new");
    let same = Diff::new(&a, &a).unwrap();
    assert_eq!(same.info().ranges, 0);
}
