//! Safe Rust binding of chring, a consistent-hashing ring with a stable C
//! ABI (`include/c/chring.h`). The library is found at build time through
//! the `pkg-config` command, by the `chring-sys` crate (its `build.rs`),
//! which holds the raw declarations ([`sys`]).
//!
//! ```
//! use chring::{Options, Ring};
//!
//! let ring = Ring::new(&Options::default().seed(7))?;
//! ring.add("cache-a", 1)?;
//! ring.add("cache-b", 2)?; // twice the share
//! let owner = ring.lookup("user:42")?;
//! println!("{}", String::from_utf8_lossy(owner.id()));
//!
//! let snap = ring.snapshot()?; // one consistent view, borrowed results
//! let view = snap.lookup(b"user:42")?;
//! assert_eq!(view.id(), owner.id());
//! # Ok::<(), chring::Error>(())
//! ```
//!
//! Threads: [`Ring`] and [`Snapshot`] are `Send + Sync`; share them with
//! `Arc` or scoped threads. Lookups never lock and never wait for writers;
//! writers serialize inside the library and publish atomically.
//!
//! Errors: every fallible call returns [`Result`]; [`Error`] carries the
//! library's status ([`ErrorKind`]) and its message naming the C function
//! and the bad value.
#![warn(missing_docs)]

/// Debug for a handle: its counts and fingerprint, read from the library.
macro_rules! debug_by_counts {
    ($t:ty) => {
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("nodes", &self.node_count().ok())
                    .field("tokens", &self.token_count().ok())
                    .field("fingerprint", &self.fingerprint().ok().map(|fp| format!("{:016x}", fp)))
                    .finish()
            }
        }
    };
}
pub(crate) use debug_by_counts;

mod availability;
mod bounded;
mod diff;
mod error;
mod follower;
mod hashers;
mod node;
mod options;
mod ring;
mod ringfile;
mod snapshot;
mod zones;
/// The raw C declarations: the `chring-sys` crate.
pub use chring_sys as sys;

pub use availability::{Availability, PANIC_THRESHOLD_DEFAULT};
pub use bounded::{bound_capacities, BoundOptions, BoundResult, Guard, Spill, Tracker};
pub use diff::{Cell, Diff, DiffInfo, PlanRange, Range, Side, Transition};
pub use error::{Error, ErrorKind, Result};
pub use follower::{FollowOutcome, FollowState, Follower, Outcome, WatchEvent, Watcher};
pub use hashers::{digest, hash, hashers, load_plugin, HasherInfo};
pub use node::{Node, NodeView};
pub use options::{Options, Placement};
pub use ring::{Change, Member, Ring};
pub use ringfile::{Export, FileInfo};
pub use snapshot::Snapshot;
pub use zones::ReplicaPolicy;

/// This crate's version, which is the version of the libchring it was
/// written for (the project's version in meson.build; a test checks both).
pub const BINDING_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version of the loaded libchring, as MAJOR*10000 + MINOR*100 + PATCH.
pub fn version() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { sys::chr_version() }
}

/// The version of the loaded libchring as text, "MAJOR.MINOR.PATCH".
pub fn version_string() -> &'static str {
    // SAFETY: a NUL-terminated string in static storage, never NULL.
    unsafe { std::ffi::CStr::from_ptr(sys::chr_version_string()) }.to_str().expect("chr_version_string is ASCII")
}

/// (pointer, length) of a byte string for the C API, which accepts NULL
/// only with length 0; an empty slice's dangling pointer is fine too, but
/// NULL says it plainly.
pub(crate) fn bytes_arg(b: &[u8]) -> (*const std::os::raw::c_void, usize) {
    if b.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (b.as_ptr().cast(), b.len())
    }
}
