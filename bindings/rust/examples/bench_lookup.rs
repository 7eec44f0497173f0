//! Lookups through the binding next to the C calls they wrap, made
//! directly through `chring::sys` on the same ring and keys, in interleaved
//! rounds; prints a Markdown table of medians of the thread's CPU time (ns
//! per key: a busy host's other processes are not charged) and ratios.
//!
//!     cargo run --release --offline --example bench_lookup [ROUNDS]
//!
//! Rings: N members "node-<i>" of weight 1 (160 tokens each), default
//! options, built with one `apply`. Keys: 2^18 distinct keys of 20-30
//! bytes, shuffled once, walked in order; batches of 1,024 keys.

use std::os::raw::{c_int, c_long, c_void};

use chring::{sys, Change, Options, Ring, Snapshot};

const KEYS: usize = 1 << 18;
const BATCH: usize = 1024;
const SIZES: [usize; 3] = [10, 100, 1000];

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: c_long,
}

extern "C" {
    fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
}

/// CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID, Linux).
fn thread_cpu_ns() -> f64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer; 3 is CLOCK_THREAD_CPUTIME_ID.
    assert_eq!(unsafe { clock_gettime(3, &mut ts) }, 0);
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn keys() -> Vec<Vec<u8>> {
    let mut state = 42u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut keys: Vec<Vec<u8>> = (0..KEYS).map(|i| format!("session:user_{}:{:x}", i, next() as u32).into_bytes()).collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    keys
}

struct Fixture {
    ring: Ring,
    snap: Snapshot,
}

fn fixture(n: usize) -> Fixture {
    let ids: Vec<String> = (0..n).map(|i| format!("node-{}", i)).collect();
    let changes: Vec<Change> = ids.iter().map(|id| Change::Add(chring::Member::new(id.as_bytes(), 1))).collect();
    let ring = Ring::new(&Options::default()).expect("Ring::new");
    ring.apply(&changes).expect("apply");
    let snap = ring.snapshot().expect("snapshot");
    Fixture { ring, snap }
}

/// One benchmark: looks up every key once, returns a checksum of owners.
type Case = (&'static str, Option<&'static str>, fn(&Fixture, &Keys) -> u64);

struct Keys {
    keys: Vec<Vec<u8>>,
    ptrs: Vec<*const c_void>,
    lens: Vec<usize>,
}

fn c_snapshot_lookup(f: &Fixture, k: &Keys) -> u64 {
    // SAFETY: chr_node_view is plain data; the snapshot outlives the call.
    let mut view: sys::chr_node_view = unsafe { std::mem::zeroed() };
    let mut sum = 0u64;
    for key in &k.keys {
        assert_eq!(unsafe { sys::chr_snapshot_lookup(f.snap.as_ptr(), key.as_ptr().cast(), key.len(), &mut view) }, 0);
        sum += u64::from(view.index);
    }
    sum
}

fn snapshot_lookup(f: &Fixture, k: &Keys) -> u64 {
    k.keys.iter().map(|key| f.snap.lookup(key).unwrap().index() as u64).sum()
}

fn c_ring_lookup(f: &Fixture, k: &Keys) -> u64 {
    // SAFETY: chr_node_ref is plain data; the ring outlives the call.
    let mut node: sys::chr_node_ref = unsafe { std::mem::zeroed() };
    let mut sum = 0u64;
    for key in &k.keys {
        assert_eq!(unsafe { sys::chr_ring_lookup(f.ring.as_ptr(), key.as_ptr().cast(), key.len(), &mut node) }, 0);
        sum += u64::from(node.index);
    }
    sum
}

fn ring_lookup(f: &Fixture, k: &Keys) -> u64 {
    k.keys.iter().map(|key| f.ring.lookup(key).unwrap().index() as u64).sum()
}

fn c_batch(f: &Fixture, k: &Keys) -> u64 {
    let mut out = [0u32; BATCH];
    let mut sum = 0u64;
    for from in (0..KEYS).step_by(BATCH) {
        // SAFETY: ptrs/lens hold KEYS entries (a multiple of BATCH).
        let st = unsafe {
            sys::chr_snapshot_lookup_batch(f.snap.as_ptr(), k.ptrs[from..].as_ptr(), k.lens[from..].as_ptr(), BATCH, out.as_mut_ptr())
        };
        assert_eq!(st, 0);
        sum += out.iter().map(|&i| u64::from(i)).sum::<u64>();
    }
    sum
}

fn lookup_batch(f: &Fixture, k: &Keys) -> u64 {
    let mut out = [0u32; BATCH];
    let mut sum = 0u64;
    for chunk in k.keys.chunks(BATCH) {
        f.snap.lookup_batch(chunk, &mut out).unwrap();
        sum += out.iter().map(|&i| u64::from(i)).sum::<u64>();
    }
    sum
}

const CASES: [Case; 6] = [
    ("C chr_snapshot_lookup", None, c_snapshot_lookup),
    ("Snapshot::lookup", Some("C chr_snapshot_lookup"), snapshot_lookup),
    ("C chr_ring_lookup", None, c_ring_lookup),
    ("Ring::lookup", Some("C chr_ring_lookup"), ring_lookup),
    ("C chr_snapshot_lookup_batch", None, c_batch),
    ("Snapshot::lookup_batch", Some("C chr_snapshot_lookup_batch"), lookup_batch),
];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map(|s| s.parse().expect("ROUNDS")).unwrap_or(5);
    let keys = keys();
    let (ptrs, lens) = keys.iter().map(|k| (k.as_ptr().cast::<c_void>(), k.len())).unzip();
    let k = Keys { keys, ptrs, lens };
    let fixtures: Vec<Fixture> = SIZES.iter().map(|&n| fixture(n)).collect();
    let mut ns = vec![vec![Vec::new(); SIZES.len()]; CASES.len()];
    let mut checksums = vec![vec![0u64; SIZES.len()]; CASES.len()];
    for round in 0..rounds {
        for c in 0..CASES.len() {
            let c = (c + round) % CASES.len(); // rotate the order each round
            for (s, f) in fixtures.iter().enumerate() {
                let start = thread_cpu_ns();
                checksums[c][s] = (CASES[c].2)(f, &k);
                ns[c][s].push((thread_cpu_ns() - start) / KEYS as f64);
            }
        }
    }
    let medians: Vec<Vec<f64>> = ns.iter_mut().map(|per| per.iter_mut().map(|v| median(v)).collect()).collect();
    println!("{} rounds, medians of thread CPU time, ns per key\n", rounds);
    println!("| call | 10 nodes | 100 | 1,000 | vs the C call |\n|---|---|---|---|---|");
    for (c, (name, reference, _)) in CASES.iter().enumerate() {
        let cells: Vec<String> = medians[c].iter().map(|m| format!("{:.1}", m)).collect();
        let ratio = match reference {
            None => "(reference)".to_string(),
            Some(r) => {
                let rc = CASES.iter().position(|x| x.0 == *r).unwrap();
                assert_eq!(checksums[c], checksums[rc], "{} and {} disagree", name, r);
                (0..SIZES.len())
                    .map(|s| format!("{:.2}x ({:+.1} ns)", medians[c][s] / medians[rc][s], medians[c][s] - medians[rc][s]))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        println!("| `{}` | {} | {} |", name, cells.join(" | "), ratio);
    }
}
