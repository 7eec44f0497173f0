//! Lookups allocate nothing, counted by a global allocator; batch lookups
//! agree with single ones. One test in this binary, so that no other test
//! thread allocates while it counts.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use chring::{Options, Ring};
use common::{key, ring_with};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to System; the counter has no effect on the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f`.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    f();
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn lookups_allocate_nothing_and_batches_agree() {
    let ring = ring_with(&Options::default().seed(11), 40);
    let snap = ring.snapshot().unwrap();
    let keys: Vec<Vec<u8>> = (0..5000).map(key).collect();
    let mut single = vec![0u32; keys.len()];
    for (i, k) in keys.iter().enumerate() {
        single[i] = snap.lookup(k).unwrap().index() as u32;
    }
    let mut indices = vec![0u32; keys.len()];
    // Sizes around the 256-key chunk, and all keys.
    for n in [0, 1, 255, 256, 257, 1000, keys.len()] {
        let batch = &keys[..n];
        let made = allocations(|| snap.lookup_batch(batch, &mut indices).unwrap());
        assert_eq!(made, 0, "lookup_batch of {} keys allocated {} times", n, made);
        assert_eq!(&indices[..n], &single[..n], "batch of {} keys differs from single lookups", n);
    }
    let strs: Vec<String> = (0..300).map(|i| format!("key:{}", i)).collect();
    assert_eq!(allocations(|| snap.lookup_batch(&strs, &mut indices).unwrap()), 0);
    assert_eq!(&indices[..300], &single[..300], "&str keys");
    let made = allocations(|| {
        for k in &keys {
            assert_eq!(snap.lookup(k).unwrap().index(), ring.lookup(k).unwrap().index());
        }
    });
    assert_eq!(made, 0, "{} allocations in {} lookups", made, 2 * keys.len());
    // The counter counts: a Vec is one allocation.
    // SAFETY: reads an element of a live Vec (volatile: the Vec stays).
    assert_eq!(allocations(|| assert_eq!(unsafe { std::ptr::read_volatile(&vec![1u8; 10][3]) }, 1)), 1);
    drop(Ring::new(&Options::default()).unwrap());
}
