mod common;

use std::collections::HashSet;

use chring::{ErrorKind, Member, Options, ReplicaPolicy, Ring};
use common::{expect_error, key, node_id};

/// Zones a (4 nodes), b (4), c (1), weight 1 each.
fn zoned_ring() -> Ring {
    let ring = Ring::new(&Options::default()).unwrap();
    for (i, zone) in ["a", "a", "a", "a", "b", "b", "b", "b", "c"].iter().enumerate() {
        let id = node_id(i);
        ring.add_member(&Member { zone: zone.as_bytes(), tag: i as u64, ..Member::new(&id, 1) }).unwrap();
    }
    ring
}

#[test]
fn policy_names_round_trip() {
    for (p, name) in
        [(ReplicaPolicy::Nodes, "nodes"), (ReplicaPolicy::ZonesFirst, "zones-first"), (ReplicaPolicy::Nts, "nts")]
    {
        assert_eq!(p.name(), name);
        assert_eq!(p.to_string(), name);
        assert_eq!(ReplicaPolicy::from_name(name).unwrap(), p);
    }
    assert_eq!(ReplicaPolicy::default(), ReplicaPolicy::Nodes);
    expect_error(ReplicaPolicy::from_name("zones"), ErrorKind::NotSupported, "chr_replica_policy_find");
}

#[test]
fn zones_first_lists() {
    let ring = zoned_ring();
    let snap = ring.snapshot().unwrap();
    for i in 0..500 {
        let k = key(i);
        let owner = ring.lookup(&k).unwrap();
        let zf = ring.replicas_policy(&k, 4, ReplicaPolicy::ZonesFirst).unwrap();
        assert_eq!(zf.len(), 4);
        assert_eq!(zf[0].id(), owner.id());
        let zones: HashSet<&[u8]> = zf[..3].iter().map(|n| n.zone()).collect();
        assert_eq!(zones.len(), 3, "key {}: first 3 replicas in distinct zones", i);
        let three = snap.replicas_policy(&k, 3, ReplicaPolicy::ZonesFirst).unwrap();
        for j in 0..3 {
            assert_eq!(three[j].id(), zf[j].id(), "key {}: replicas(3) is a prefix of replicas(4)", i);
        }
        let set: HashSet<&[u8]> = zf.iter().map(|n| n.id()).collect();
        for n in snap.replicas_policy(&k, 4, ReplicaPolicy::Nts).unwrap() {
            assert!(set.contains(n.id()), "key {}: the NTS set is the zones-first set", i);
        }
        let plain = ring.replicas(&k, 3).unwrap();
        let same = ring.replicas_policy(&k, 3, ReplicaPolicy::Nodes).unwrap();
        assert_eq!(plain.iter().map(|n| n.id()).collect::<Vec<_>>(), same.iter().map(|n| n.id()).collect::<Vec<_>>());
    }
    expect_error(
        snap.replicas_policy("k", 0, ReplicaPolicy::Nts),
        ErrorKind::InvalidArgument,
        "chr_snapshot_replicas_policy",
    );
}

#[test]
fn replica_shares_are_exact() {
    let snap = zoned_ring().snapshot().unwrap();
    let shares = snap.replica_shares(ReplicaPolicy::ZonesFirst, 3).unwrap();
    let total: f64 = shares.iter().sum();
    assert!((total - 3.0).abs() < 1e-12, "shares sum to {}", total);
    assert_eq!(shares[8], 1.0, "the only node of zone c holds every key");
    let own = snap.replica_shares(ReplicaPolicy::Nodes, 1).unwrap();
    for (i, s) in own.iter().enumerate() {
        assert_eq!(*s, snap.node(i).unwrap().ownership());
    }
    expect_error(
        snap.replica_shares(ReplicaPolicy::Nodes, 0),
        ErrorKind::InvalidArgument,
        "chr_snapshot_replica_shares",
    );
}
