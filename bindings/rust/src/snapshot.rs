use std::ptr::NonNull;

use crate::bytes_arg;
use crate::error::{check, Error, Result};
use crate::node::NodeView;
use crate::sys;

/// Keys per C call of [`Snapshot::lookup_batch`]: its pointer and length
/// arrays live on the stack (2 KiB each).
const BATCH_CHUNK: usize = 256;

/// An immutable view of a ring at one point in time. Lookups on it return
/// [`NodeView`]s that borrow from it without copying.
pub struct Snapshot {
    raw: NonNull<sys::chr_snapshot>,
}

// SAFETY: a snapshot is immutable and reference-counted inside the library;
// chring.h: "the snapshot itself may be used by many threads at once and
// released by any". Drop (the release) owns it exclusively.
unsafe impl Send for Snapshot {}
unsafe impl Sync for Snapshot {}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: exclusive ownership; views borrowing it are gone.
        unsafe { sys::chr_snapshot_release(self.raw.as_ptr()) }
    }
}

impl Snapshot {
    pub(crate) fn from_raw(raw: *mut sys::chr_snapshot) -> Snapshot {
        Snapshot { raw: NonNull::new(raw).expect("chr_ring_snapshot returned CHR_OK and NULL") }
    }

    pub(crate) fn raw_ptr(&self) -> *const sys::chr_snapshot {
        self.raw.as_ptr()
    }

    fn ptr(&self) -> *const sys::chr_snapshot {
        self.raw.as_ptr()
    }

    /// The C snapshot, for calls of [`sys`] this crate does not wrap (and
    /// for benchmarks against the C calls). Valid while `self` lives; never
    /// pass it to `chr_snapshot_release`.
    pub fn as_ptr(&self) -> *const sys::chr_snapshot {
        self.raw.as_ptr()
    }

    /// The member that owns `key`: lock-free, allocation-free.
    pub fn lookup(&self, key: impl AsRef<[u8]>) -> Result<NodeView<'_>> {
        let (k, len) = bytes_arg(key.as_ref());
        let mut out = NodeView::empty_raw();
        // SAFETY: out is a valid chr_node_view to fill.
        check(unsafe { sys::chr_snapshot_lookup(self.ptr(), k, len, &mut out) })?;
        Ok(NodeView::from_raw(out))
    }

    /// Looks up many keys in one call: `indices[i]` receives the node
    /// index of `keys[i]`'s owner (see [`Snapshot::node`]). Allocates
    /// nothing: the C call's pointer and length arrays are built on the
    /// stack, 256 keys at a time. On error the contents of
    /// `indices` are unspecified.
    pub fn lookup_batch<K: AsRef<[u8]>>(&self, keys: &[K], indices: &mut [u32]) -> Result<()> {
        if indices.len() < keys.len() {
            return Err(Error::binding(
                sys::CHR_ERANGE,
                format!("Snapshot::lookup_batch: {} keys but room for {} indices", keys.len(), indices.len()),
            ));
        }
        let mut ptrs = [std::ptr::null::<std::os::raw::c_void>(); BATCH_CHUNK];
        let mut lens = [0usize; BATCH_CHUNK];
        let mut done = 0;
        loop {
            let chunk = (keys.len() - done).min(BATCH_CHUNK);
            for (i, key) in keys[done..done + chunk].iter().enumerate() {
                (ptrs[i], lens[i]) = bytes_arg(key.as_ref());
            }
            // SAFETY: ptrs/lens hold `chunk` entries borrowed from `keys`;
            // indices[done..] has room for as many.
            check(unsafe {
                sys::chr_snapshot_lookup_batch(
                    self.ptr(),
                    ptrs.as_ptr(),
                    lens.as_ptr(),
                    chunk,
                    indices[done..].as_mut_ptr(),
                )
            })?;
            done += chunk;
            if done == keys.len() {
                return Ok(());
            }
        }
    }

    /// Up to `n` distinct members for `key`, coordinator first.
    pub fn replicas(&self, key: impl AsRef<[u8]>, n: usize) -> Result<Vec<NodeView<'_>>> {
        let room = n.min(self.node_count()?).max(1);
        let mut out = vec![NodeView::empty_raw(); room];
        let mut count = 0usize;
        let (k, len) = bytes_arg(key.as_ref());
        // SAFETY: out has room for min(n, room) entries.
        check(unsafe { sys::chr_snapshot_replicas(self.ptr(), k, len, n.min(room), out.as_mut_ptr(), &mut count) })?;
        out.truncate(count);
        Ok(out.into_iter().map(NodeView::from_raw).collect())
    }

    /// Member `index` (0..node_count, ids in byte order).
    pub fn node(&self, index: usize) -> Result<NodeView<'_>> {
        let mut out = NodeView::empty_raw();
        // SAFETY: out is a valid chr_node_view to fill.
        check(unsafe { sys::chr_snapshot_node(self.ptr(), index, &mut out) })?;
        Ok(NodeView::from_raw(out))
    }

    /// Every member, ids in byte order.
    pub fn nodes(&self) -> Result<Vec<NodeView<'_>>> {
        (0..self.node_count()?).map(|i| self.node(i)).collect()
    }

    /// Members, weight 0 included.
    pub fn node_count(&self) -> Result<usize> {
        let mut c = 0;
        // SAFETY: c is a valid out-pointer.
        check(unsafe { sys::chr_snapshot_node_count(self.ptr(), &mut c) })?;
        Ok(c)
    }

    /// Tokens on the circle.
    pub fn token_count(&self) -> Result<usize> {
        let mut c = 0;
        // SAFETY: c is a valid out-pointer.
        check(unsafe { sys::chr_snapshot_token_count(self.ptr(), &mut c) })?;
        Ok(c)
    }

    /// As [`crate::Ring::fingerprint`], for this snapshot.
    pub fn fingerprint(&self) -> Result<u64> {
        let mut fp = 0;
        // SAFETY: fp is a valid out-pointer.
        check(unsafe { sys::chr_snapshot_fingerprint(self.ptr(), &mut fp) })?;
        Ok(fp)
    }

    /// Token `index` of the sorted token array: (position, owner's node index).
    pub fn token(&self, index: usize) -> Result<(u64, usize)> {
        let (mut value, mut owner) = (0u64, 0u32);
        // SAFETY: valid out-pointers.
        check(unsafe { sys::chr_snapshot_token(self.ptr(), index, &mut value, &mut owner) })?;
        Ok((value, owner as usize))
    }
}

crate::debug_by_counts!(Snapshot);
