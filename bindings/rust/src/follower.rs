//! Following a ring file: [`Follower`], libchring's `chr_follower` (one
//! implementation of "keep this ring equal to that file" for every binding),
//! and [`Watcher`], a thread that checks one on an interval.
use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{check, Error, Result};
use crate::ring::Ring;
use crate::ringfile::{finish, new_info, path_arg, FileInfo};
use crate::sys;

/// What one [`Follower::check`] did when it did not refuse the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The file's stamp is the one read last: nothing was read or changed.
    Unchanged,
    /// The file changed and the ring now is what it describes.
    Applied(FileInfo),
}

/// The outcome of a follower's latest check, in [`FollowState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowOutcome {
    /// Nothing read (also before the first check).
    Unchanged,
    /// A file was applied.
    Applied,
    /// A file was refused: the ring is unchanged.
    Refused,
}

/// What a [`Follower`] has seen (`chr_follow_state`): the file applied
/// last and, while the file as last read is refused, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowState {
    /// The outcome of the latest check.
    pub last_outcome: FollowOutcome,
    /// Checks made.
    pub checks: u64,
    /// Checks that applied a file.
    pub applied: u64,
    /// Checks that refused one.
    pub refused: u64,
    /// The `%%revision` of the file applied last, if it has one.
    pub applied_revision: Option<u64>,
    /// The ring's fingerprint right after the file applied last; `None`
    /// before the first apply.
    pub applied_fingerprint: Option<u64>,
    /// The ring's availability digest right after the file applied last;
    /// `None` before the first apply.
    pub applied_availability: Option<u64>,
    /// Why the file as last read was refused: its status
    /// ([`crate::ErrorKind::Format`], `Options`, `Io`, `NoHasher`,
    /// `OutOfMemory`), message ("file:line: reason") and [`Error::line`],
    /// as [`Follower::check`] returned them (the state keeps no member id);
    /// `None` when that file is the one applied, or before the first check.
    pub error: Option<Error>,
    /// The `%%revision` the refused file declared before its fault.
    pub refused_revision: Option<u64>,
    /// The `%%fingerprint` the refused file claimed before its fault.
    pub refused_fingerprint: Option<u64>,
}

impl FollowState {
    fn from_raw(st: &sys::chr_follow_state) -> FollowState {
        let has = |flags: u32, bit: u32, v: u64| (flags & bit != 0).then_some(v);
        let error = (st.status != sys::CHR_OK).then(|| {
            // SAFETY: the library always NUL-terminates message.
            let message = unsafe { CStr::from_ptr(st.message.as_ptr()) }.to_string_lossy().into_owned();
            Error::binding(st.status, message).at_line(st.error_line)
        });
        FollowState {
            last_outcome: match st.last_outcome {
                sys::CHR_FOLLOW_APPLIED => FollowOutcome::Applied,
                sys::CHR_FOLLOW_REFUSED => FollowOutcome::Refused,
                _ => FollowOutcome::Unchanged,
            },
            checks: st.checks,
            applied: st.applied,
            refused: st.refused,
            applied_revision: has(st.applied_flags, sys::CHR_RINGFILE_HAS_REVISION, st.applied_revision),
            applied_fingerprint: (st.applied > 0).then_some(st.applied_fingerprint),
            applied_availability: (st.applied > 0).then_some(st.applied_availability),
            error,
            refused_revision: has(st.refused_flags, sys::CHR_RINGFILE_HAS_REVISION, st.refused_revision),
            refused_fingerprint: has(st.refused_flags, sys::CHR_RINGFILE_HAS_FINGERPRINT, st.refused_fingerprint),
        }
    }
}

/// Keeps a [`Ring`] equal to a ring file that another process rewrites.
///
/// Each [`Follower::check`] compares the file's stamp (device, inode, size,
/// modification and change times, taken from the open file the text is
/// read from) with the stamp of the text read last and, when it changed,
/// applies the file to the ring as [`Ring::apply_file`] does. A refused
/// file (malformed, unreadable, other options, a `%%fingerprint` that does
/// not match) leaves the ring as it was and is returned by one check only;
/// [`Follower::state`] still says why until the file changes. The stamp and
/// the rules are the C library's (`chr_follower`), the same in every
/// binding and in the nginx module.
///
/// `Send + Sync`: the C follower serializes the calls on it with a lock of
/// its own, so one thread may check while others read the state; the
/// ring's lookups never wait for a check. The follower borrows its ring
/// (`'r`), or holds an `Arc` of it ([`Follower::shared`]); dropping it frees
/// the C follower.
///
/// ```no_run
/// # use chring::{Follower, Options, Outcome, Ring};
/// let ring = Ring::new(&Options::default())?;
/// let follower = Follower::new(&ring, "/etc/app/ring")?; // reads nothing yet
/// loop {
///     match follower.check() {
///         Ok(Outcome::Applied(info)) => println!("applied revision {:?}", info.revision),
///         Ok(Outcome::Unchanged) => {}
///         Err(e) => eprintln!("kept the last good ring: {}", e), // e.line(): the line at fault
///     }
///     std::thread::sleep(std::time::Duration::from_secs(1));
/// }
/// # Ok::<(), chring::Error>(())
/// ```
pub struct Follower<'r> {
    raw: NonNull<sys::chr_follower>,
    // Dropped after Drop::drop freed the C follower, which borrows it.
    _shared: Option<Arc<Ring>>,
    _ring: PhantomData<&'r Ring>,
}

// SAFETY: chring.h: chr_follower_check and chr_follower_state may run on
// any thread, concurrently (a lock inside the follower serializes them),
// and the follower has no thread affinity. chr_follower_free runs only in
// Drop, which owns the follower exclusively. The ring it borrows is Sync
// and outlives it ('r, or the Arc held).
unsafe impl Send for Follower<'_> {}
unsafe impl Sync for Follower<'_> {}

impl Drop for Follower<'_> {
    fn drop(&mut self) {
        // SAFETY: exclusive ownership; the ring is still alive.
        unsafe { sys::chr_follower_free(self.raw.as_ptr()) }
    }
}

impl<'r> Follower<'r> {
    /// A follower of the ring file at `path` for `ring`. Nothing is read
    /// yet: the first [`Follower::check`] reads and applies the file,
    /// whatever its stamp. A relative path is resolved at each check
    /// against the working directory of that moment. Errors:
    /// [`crate::ErrorKind::InvalidArgument`] (an empty path, a NUL byte in
    /// it), [`crate::ErrorKind::OutOfMemory`].
    pub fn new(ring: &'r Ring, path: impl AsRef<Path>) -> Result<Follower<'r>> {
        Follower::make(ring.raw_ptr(), path.as_ref(), None)
    }

    /// `ring` must outlive the follower: borrowed for 'r, or kept by `shared`.
    fn make(ring: *mut sys::chr_ring, path: &Path, shared: Option<Arc<Ring>>) -> Result<Follower<'r>> {
        let path = path_arg(path)?;
        let mut out = ptr::null_mut();
        // SAFETY: the ring is live and outlives the follower; the path is
        // copied by the call.
        check(unsafe { sys::chr_follower_new(ring, path.as_ptr(), 0, &mut out) })?;
        let raw = NonNull::new(out)
            .ok_or_else(|| Error::binding(sys::CHR_EINTERNAL, "chr_follower_new returned NULL".into()))?;
        Ok(Follower { raw, _shared: shared, _ring: PhantomData })
    }

    /// Looks at the file once. When its stamp differs from the one read
    /// last (or at the first check), reads the file and applies it to the
    /// ring as one batch: `Ok(Outcome::Applied(info))`, or `Err` with the
    /// refusal (kind `Format` with [`Error::line`], `Options`, `Io` for a
    /// missing or unreadable file, `NoHasher`, `OutOfMemory`): the ring is
    /// unchanged. Otherwise `Ok(Outcome::Unchanged)`.
    pub fn check(&self) -> Result<Outcome> {
        let mut info = new_info()?;
        let mut outcome = sys::CHR_FOLLOW_UNCHANGED;
        // SAFETY: the follower is live; outcome and info are valid
        // out-parameters. The error message, if any, is read on this
        // thread right after the call (finish).
        let st = unsafe { sys::chr_follower_check(self.raw.as_ptr(), &mut outcome, &mut info) };
        let fi = finish(st, &info)?;
        Ok(if outcome == sys::CHR_FOLLOW_APPLIED { Outcome::Applied(fi) } else { Outcome::Unchanged })
    }

    /// What the follower has seen. May run on any thread, also while
    /// another checks (it waits for that check).
    pub fn state(&self) -> FollowState {
        // SAFETY: chr_follow_state is plain data; init fills it.
        let mut st: sys::chr_follow_state = unsafe { std::mem::zeroed() };
        // SAFETY: st is a valid out-struct; the follower is live.
        let status = unsafe {
            match sys::chr_follow_state_init(&mut st, sys::CHR_FOLLOW_STATE_VERSION) {
                sys::CHR_OK => sys::chr_follower_state(self.raw.as_ptr(), &mut st),
                other => other,
            }
        };
        // Fails only on a NULL argument or an unknown version: neither here.
        assert_eq!(status, sys::CHR_OK, "chr_follower_state failed");
        FollowState::from_raw(&st)
    }

    /// The C follower, for calls of [`sys`] this crate does not wrap. Valid
    /// while `self` lives; never pass it to `chr_follower_free`.
    pub fn as_ptr(&self) -> *const sys::chr_follower {
        self.raw.as_ptr()
    }
}

impl Follower<'static> {
    /// [`Follower::new`] for a shared ring: the follower holds a clone of
    /// the `Arc`, so it may move to another thread or live in a struct
    /// beside the ring.
    pub fn shared(ring: Arc<Ring>, path: impl AsRef<Path>) -> Result<Follower<'static>> {
        Follower::make(ring.raw_ptr(), path.as_ref(), Some(ring))
    }
}

impl fmt::Debug for Follower<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Follower").field("state", &self.state()).finish()
    }
}

/// One report of a [`Watcher`]: a change of the file seen and applied
/// (`Ok`), or not applied (`Err`: the ring kept its last good state).
pub type WatchEvent = Result<FileInfo>;

/// A thread following a ring file with a [`Follower`]: it applies the file
/// at once, then checks it every interval and applies it again when its
/// stamp (device, inode, size, modification and change times) changed; a
/// file that fails leaves the ring as it was and is reported once. The
/// callback runs on the watcher's thread once per change seen (an apply or
/// a refusal), never for an unchanged file; a follower that cannot be made
/// (a NUL byte in the path) is reported once and ends the thread. Replace
/// the file by rename so that it is never read half written. Dropping the
/// watcher (or [`Watcher::stop`]) ends the thread and waits for it.
pub struct Watcher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Starts following `path` for `ring`; `interval` is at least 10 ms.
    pub fn start<F>(ring: Arc<Ring>, path: impl Into<PathBuf>, interval: Duration, mut on_event: F) -> Watcher
    where
        F: FnMut(WatchEvent) + Send + 'static,
    {
        let follower = Follower::shared(ring, path.into());
        let interval = interval.max(Duration::from_millis(10));
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let follower = match follower {
                Ok(f) => f,
                Err(e) => return on_event(Err(e)),
            };
            loop {
                match follower.check() {
                    Ok(Outcome::Unchanged) => {}
                    Ok(Outcome::Applied(info)) => on_event(Ok(info)),
                    Err(e) => on_event(Err(e)),
                }
                let (lock, cv) = &*flag;
                let stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                let (stopped, _) = cv.wait_timeout_while(stopped, interval, |s| !*s).unwrap_or_else(|e| e.into_inner());
                if *stopped {
                    return;
                }
            }
        });
        Watcher { stop, thread: Some(thread) }
    }

    /// Ends the watch and waits for the thread (and a callback in progress).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shutdown();
    }
}
