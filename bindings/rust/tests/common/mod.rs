//! Helpers shared by the integration tests.
#![allow(dead_code)]

use chring::{Error, ErrorKind, Member, Options, Ring};

/// A ring with `count` members "node-<i>" of weight 1 + i % 3 and tag i.
pub fn ring_with(options: &Options, count: usize) -> Ring {
    let ring = Ring::new(options).expect("Ring::new");
    for i in 0..count {
        let id = node_id(i);
        ring.add_member(&Member { tag: i as u64, ..Member::new(&id, 1 + (i % 3) as u32) }).expect("add");
    }
    ring
}

pub fn node_id(i: usize) -> Vec<u8> {
    format!("node-{}", i).into_bytes()
}

pub fn key(i: usize) -> Vec<u8> {
    format!("key:{}", i).into_bytes()
}

/// Asserts `result` failed with `kind` and a message naming `function`.
#[track_caller]
pub fn expect_error<T: std::fmt::Debug>(result: Result<T, Error>, kind: ErrorKind, function: &str) -> Error {
    let err = result.expect_err("expected an error");
    assert_eq!(err.kind(), kind, "wrong kind for {:?}", err);
    assert!(err.message().contains(function), "message {:?} does not name {}", err.message(), function);
    err
}
