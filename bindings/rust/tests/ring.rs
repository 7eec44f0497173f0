mod common;

use chring::{
    hash, version, version_string, Change, ErrorKind, Member, Options, Placement, Ring,
    BINDING_VERSION,
};
use common::{expect_error, key, node_id, ring_with};

#[test]
fn version_is_at_least_0_1() {
    assert!(version() >= 100);
}

#[test]
fn loaded_library_is_the_crates_version() {
    assert_eq!(version_string(), BINDING_VERSION);
    let parts: Vec<u32> = BINDING_VERSION.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(version(), parts[0] * 10000 + parts[1] * 100 + parts[2]);
}

#[test]
fn lookup_on_an_empty_ring_is_empty() {
    let ring = ring_with(&Options::default(), 0);
    expect_error(ring.lookup("k"), ErrorKind::Empty, "chr_ring_lookup");
    expect_error(ring.replicas("k", 2), ErrorKind::Empty, "chr_ring_replicas");
    ring.add("drained", 0).unwrap();
    expect_error(ring.lookup("k"), ErrorKind::Empty, "chr_ring_lookup");
}

#[test]
fn lookup_returns_the_member_with_its_fields() {
    let ring = ring_with(&Options::default(), 0);
    let id = [b'a', 0, 0xff, b'z']; // NUL and non-UTF-8 bytes are ordinary
    ring.add_member(&Member { zone: b"eu-1", tag: 77, ..Member::new(&id, 3) }).unwrap();
    for k in [&b""[..], b"\0", b"\xff\0", b"user:42"] {
        let n = ring.lookup(k).unwrap();
        assert_eq!(n.id(), &id);
        assert_eq!(n.zone(), b"eu-1");
        assert_eq!((n.tag(), n.weight(), n.tokens(), n.index()), (77, 3, 480, 0));
        assert_eq!(n.ownership(), 1.0);
    }
}

#[test]
fn display_shows_utf8_ids_as_text() {
    let ring = ring_with(&Options::default(), 0);
    ring.add("café-b", 1).unwrap();
    let owner = ring.lookup("user:42").unwrap();
    assert_eq!(owner.to_string(), "café-b");
    assert_eq!(owner.id_str(), Some("café-b"));
    let snap = ring.snapshot().unwrap();
    assert_eq!(snap.lookup(b"user:42").unwrap().to_string(), "café-b");

    let ring = ring_with(&Options::default(), 0);
    ring.add(&[b'a', 0xff, b'%', 0xc3], 1).unwrap(); // not UTF-8: each bad byte as %XX
    let owner = ring.lookup("k").unwrap();
    assert_eq!(owner.to_string(), "a%FF%%C3");
    assert_eq!(owner.id_str(), None);
}

#[test]
fn bad_updates_fail_and_change_nothing() {
    let ring = ring_with(&Options::default(), 1);
    let before = ring.fingerprint().unwrap();
    expect_error(ring.add(node_id(0), 1), ErrorKind::AlreadyExists, "chr_ring_add");
    expect_error(ring.add("", 1), ErrorKind::InvalidArgument, "chr_ring_add");
    expect_error(ring.add(vec![b'x'; 257], 1), ErrorKind::OutOfRange, "chr_ring_add");
    expect_error(ring.add("w", 1_000_001), ErrorKind::OutOfRange, "chr_ring_add");
    let long_zone = [b'z'; 65];
    expect_error(
        ring.add_member(&Member { zone: &long_zone, ..Member::new(b"z", 1) }),
        ErrorKind::OutOfRange,
        "chr_ring_add",
    );
    expect_error(ring.remove("ghost"), ErrorKind::NotFound, "chr_ring_remove");
    expect_error(ring.set_weight("ghost", 2), ErrorKind::NotFound, "chr_ring_set_weight");
    expect_error(ring.ownership("ghost"), ErrorKind::NotFound, "chr_ring_ownership");
    assert_eq!(ring.fingerprint().unwrap(), before);
    assert_eq!(ring.node_count().unwrap(), 1);
}

#[test]
fn errors_carry_code_message_and_display() {
    let ring = ring_with(&Options::default(), 0);
    let err = ring.remove("ghost").unwrap_err();
    assert_eq!(err.code(), chring::sys::CHR_ENOENT);
    assert_eq!(err.index(), None);
    assert_eq!((err.member(), err.line(), err.other_line()), (Some(&b"ghost"[..]), None, None));
    let shown = err.to_string();
    assert!(shown.starts_with("chring: chr_ring_remove") && shown.contains("ghost"), "{}", shown);
    assert!(shown.ends_with("(no such node)"), "{}", shown);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    assert!(boxed.to_string().contains("ghost"));
}

#[test]
fn options_reach_the_library() {
    let ring = ring_with(&Options::default().tokens_per_weight(7).seed(1), 0);
    ring.add("a", 3).unwrap();
    assert_eq!(ring.token_count().unwrap(), 21);
    let other = ring_with(&Options::default().tokens_per_weight(7).seed(2), 0);
    other.add("a", 3).unwrap();
    assert_ne!(ring.fingerprint().unwrap(), other.fingerprint().unwrap());

    expect_error(Ring::new(&Options::default().tokens_per_weight(65537)), ErrorKind::OutOfRange, "chr_ring_new");
    expect_error(Ring::new(&Options::default().tokens_per_weight(0)), ErrorKind::OutOfRange, "chr_ring_new");
    expect_error(Ring::new(&Options::default().hasher("no-such-hasher")), ErrorKind::NoHasher, "chr_ring_new");
    let nul = Ring::new(&Options::default().hasher("xx\0h3")).err().unwrap();
    assert_eq!(nul.kind(), ErrorKind::InvalidArgument);

    let ketama = ring_with(&Options::default().placement(Placement::Ketama), 0);
    ketama.add("10.0.0.1:11211", 1).unwrap();
    ketama.add("10.0.0.2:11211", 1).unwrap();
    assert_eq!(ketama.token_count().unwrap(), 320, "libmemcached weighted ketama: 160 points each");
}

#[test]
fn fingerprint_ignores_call_order() {
    let forward = ring_with(&Options::default(), 0);
    let backward = ring_with(&Options::default(), 0);
    for i in 0..20 {
        forward.add(node_id(i), (i % 4) as u32).unwrap();
        let j = 19 - i;
        backward.add_member(&Member { tag: 9, ..Member::new(&node_id(j), (j % 4) as u32) }).unwrap();
    }
    assert_eq!(forward.fingerprint().unwrap(), backward.fingerprint().unwrap());
}

/// Adding a member moves keys only onto it; removing it moves them back.
#[test]
fn minimal_disruption() {
    let ring = ring_with(&Options::default(), 10);
    let before: Vec<Vec<u8>> = (0..5000).map(|i| ring.lookup(key(i)).unwrap().id().to_vec()).collect();
    ring.add("newcomer", 2).unwrap();
    let mut moved = 0;
    for (i, old) in before.iter().enumerate() {
        let now = ring.lookup(key(i)).unwrap();
        if now.id() != &old[..] {
            assert_eq!(now.id(), b"newcomer", "key {} moved elsewhere than the new node", i);
            moved += 1;
        }
    }
    assert!(moved > 0, "a weight-2 node took no key of 5000");
    ring.remove("newcomer").unwrap();
    for (i, old) in before.iter().enumerate() {
        assert_eq!(ring.lookup(key(i)).unwrap().id(), &old[..]);
    }
}

#[test]
fn replicas_are_distinct_and_start_at_the_owner() {
    let ring = ring_with(&Options::default(), 6);
    ring.add("drained", 0).unwrap();
    for i in 0..200 {
        let reps = ring.replicas(key(i), 10).unwrap();
        assert_eq!(reps.len(), 6, "every member with tokens, and only those");
        assert_eq!(reps[0].id(), ring.lookup(key(i)).unwrap().id());
        let mut ids: Vec<&[u8]> = reps.iter().map(|n| n.id()).collect();
        assert!(!ids.contains(&&b"drained"[..]));
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 6, "a node repeats in {:?}", reps);
    }
    assert_eq!(ring.replicas("k", 2).unwrap().len(), 2);
    expect_error(ring.replicas("k", 0), ErrorKind::InvalidArgument, "chr_ring_replicas");
}

#[test]
fn apply_is_all_or_nothing() {
    let ring = ring_with(&Options::default(), 3);
    let before = ring.fingerprint().unwrap();
    let err = expect_error(
        ring.apply(&[Change::Add(Member::new(b"x", 1)), Change::SetWeight(b"node-0", 5), Change::Remove(b"not-there")]),
        ErrorKind::NotFound,
        "chr_ring_apply",
    );
    assert_eq!(err.index(), Some(2));
    assert_eq!(err.member(), Some(&b"not-there"[..]));
    assert_eq!(ring.fingerprint().unwrap(), before);

    ring.apply(&[
        Change::Add(Member { zone: b"z1", tag: 5, ..Member::new(b"x", 1) }),
        Change::SetWeight(b"node-0", 5),
        Change::Remove(b"node-1"),
        Change::Add(Member::new(b"y", 1)),
        Change::Remove(b"y"), // a later change sees the earlier ones
    ])
    .unwrap();
    let nodes = ring.nodes().unwrap();
    let ids: Vec<&[u8]> = nodes.iter().map(|n| n.id()).collect();
    assert_eq!(ids, [&b"node-0"[..], b"node-2", b"x"]);
    assert_eq!(nodes[0].weight(), 5);
    assert_eq!((nodes[2].zone(), nodes[2].tag()), (&b"z1"[..], 5));
    ring.apply(&[]).unwrap();
}

#[test]
fn nodes_are_in_id_order_and_ownership_sums_to_one() {
    let ring = ring_with(&Options::default(), 12);
    let nodes = ring.nodes().unwrap();
    assert_eq!(nodes.len(), 12);
    assert!(nodes.windows(2).all(|w| w[0].id() < w[1].id()));
    let mut sum = 0.0;
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(n.index(), i);
        assert_eq!(ring.ownership(n.id()).unwrap(), n.ownership());
        sum += n.ownership();
    }
    assert!((sum - 1.0).abs() < 1e-9, "ownership sums to {}", sum);
}

#[test]
fn snapshot_is_fixed_and_outlives_its_ring() {
    let ring = ring_with(&Options::default(), 8);
    let snap = ring.snapshot().unwrap();
    let owners: Vec<Vec<u8>> = (0..2000)
        .map(|i| {
            let view = snap.lookup(key(i)).unwrap();
            assert_eq!(view.id(), ring.lookup(key(i)).unwrap().id());
            view.id().to_vec()
        })
        .collect();
    let fp = snap.fingerprint().unwrap();
    ring.remove("node-3").unwrap();
    ring.set_weight("node-4", 9).unwrap();
    assert_ne!(ring.fingerprint().unwrap(), fp);
    drop(ring);
    for (i, owner) in owners.iter().enumerate() {
        assert_eq!(snap.lookup(key(i)).unwrap().id(), &owner[..]);
    }
    assert_eq!((snap.fingerprint().unwrap(), snap.node_count().unwrap()), (fp, 8));
}

#[test]
fn snapshot_tokens_nodes_batch_and_replicas() {
    let ring = ring_with(&Options::default().tokens_per_weight(4), 5);
    let snap = ring.snapshot().unwrap();
    let tokens = snap.token_count().unwrap();
    assert_eq!(tokens, 4 * (1 + 2 + 3 + 1 + 2));
    let mut last = 0;
    for i in 0..tokens {
        let (value, owner) = snap.token(i).unwrap();
        assert!(value >= last && owner < 5, "token {} breaks the order", i);
        last = value;
    }
    expect_error(snap.token(tokens), ErrorKind::OutOfRange, "chr_snapshot_token");
    expect_error(snap.node(5), ErrorKind::OutOfRange, "chr_snapshot_node");
    let names: Vec<&[u8]> = snap.nodes().unwrap().iter().map(|n| n.id()).collect();
    assert_eq!(names.len(), 5);

    let keys: Vec<Vec<u8>> = (0..300).map(key).collect();
    let mut indices = vec![0u32; keys.len()];
    snap.lookup_batch(&keys, &mut indices).unwrap();
    for (k, &index) in keys.iter().zip(&indices) {
        assert_eq!(snap.lookup(k).unwrap().index(), index as usize);
        let reps = snap.replicas(k, 3).unwrap();
        let from_ring = ring.replicas(k, 3).unwrap();
        assert_eq!(reps.len(), 3);
        for (a, b) in reps.iter().zip(&from_ring) {
            assert_eq!(a.id(), b.id());
        }
        assert_eq!(reps[0].index(), index as usize);
    }
    expect_error(snap.lookup_batch(&keys, &mut indices[..10]), ErrorKind::OutOfRange, "lookup_batch");
    expect_error(snap.replicas("k", 0), ErrorKind::InvalidArgument, "chr_snapshot_replicas");
}

#[test]
fn snapshot_of_an_empty_ring() {
    let ring = ring_with(&Options::default(), 0);
    let snap = ring.snapshot().unwrap();
    expect_error(snap.lookup("k"), ErrorKind::Empty, "chr_snapshot_lookup");
    expect_error(snap.replicas("k", 3), ErrorKind::Empty, "chr_snapshot_replicas");
    let mut none: [u32; 0] = [];
    snap.lookup_batch::<&[u8]>(&[], &mut none).unwrap();
}

/// XXH3-64 of the empty input with seed 0, from the xxHash reference.
#[test]
fn hash_known_answer() {
    assert_eq!(hash("xxh3", b"", 0).unwrap(), 0x2D06800538D394C2);
    expect_error(hash("nope", b"x", 0), ErrorKind::NoHasher, "chr_hasher_hash");
}
