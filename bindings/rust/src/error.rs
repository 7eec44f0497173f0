use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

/// What kind of failure a status is (the `CHR_E*` codes of chring.h).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// CHR_EINVAL: a bad argument (empty id, n == 0, NUL inside a name...).
    InvalidArgument,
    /// CHR_ENOMEM: an allocation failed; nothing changed.
    OutOfMemory,
    /// CHR_ERANGE: a value over a documented limit.
    OutOfRange,
    /// CHR_EEXIST: the node id is already present.
    AlreadyExists,
    /// CHR_ENOENT: no node with that id.
    NotFound,
    /// CHR_EEMPTY: no node has tokens, so there is nothing to route to.
    Empty,
    /// CHR_EVERSION: a versioned struct this library does not know.
    Version,
    /// CHR_ENOHASHER: no hasher of that name, built in or in a plugin.
    NoHasher,
    /// CHR_ENOTSUP: not provided by this build.
    NotSupported,
    /// CHR_EINTERNAL: a bug in chring.
    Internal,
    /// CHR_EPLUGIN_NOFILE: plugin file missing or unreadable.
    PluginFile,
    /// CHR_EPLUGIN_NOTSO: plugin is not a loadable shared object.
    PluginNotSharedObject,
    /// CHR_EPLUGIN_SYMBOL: plugin lacks its entry point.
    PluginSymbol,
    /// CHR_EPLUGIN_ABI: plugin built for another ABI.
    PluginAbi,
    /// CHR_EPLUGIN_DESC: a malformed hasher descriptor.
    PluginDescriptor,
    /// CHR_EPLUGIN_UNTRUSTED: a plugin file or directory refused by the trust rules.
    PluginUntrusted,
    /// CHR_EFORMAT: a malformed ring file ([`Error::line`] is the line at fault).
    Format,
    /// CHR_EOPTIONS: the ring file's options differ from the ring's.
    Options,
    /// CHR_EIO: the ring file cannot be read (missing, a directory, ...).
    Io,
    /// CHR_EINCOMPATIBLE: two snapshots place keys differently (placement,
    /// hasher or seed): no diff between them.
    Incompatible,
    /// A status this binding does not know (a newer library).
    Other,
}

impl ErrorKind {
    fn from_status(status: sys::chr_status) -> ErrorKind {
        match status {
            sys::CHR_EINVAL => ErrorKind::InvalidArgument,
            sys::CHR_ENOMEM => ErrorKind::OutOfMemory,
            sys::CHR_ERANGE => ErrorKind::OutOfRange,
            sys::CHR_EEXIST => ErrorKind::AlreadyExists,
            sys::CHR_ENOENT => ErrorKind::NotFound,
            sys::CHR_EEMPTY => ErrorKind::Empty,
            sys::CHR_EVERSION => ErrorKind::Version,
            sys::CHR_ENOHASHER => ErrorKind::NoHasher,
            sys::CHR_ENOTSUP => ErrorKind::NotSupported,
            sys::CHR_EINTERNAL => ErrorKind::Internal,
            sys::CHR_EPLUGIN_NOFILE => ErrorKind::PluginFile,
            sys::CHR_EPLUGIN_NOTSO => ErrorKind::PluginNotSharedObject,
            sys::CHR_EPLUGIN_SYMBOL => ErrorKind::PluginSymbol,
            sys::CHR_EPLUGIN_ABI => ErrorKind::PluginAbi,
            sys::CHR_EPLUGIN_DESC => ErrorKind::PluginDescriptor,
            sys::CHR_EPLUGIN_UNTRUSTED => ErrorKind::PluginUntrusted,
            sys::CHR_EFORMAT => ErrorKind::Format,
            sys::CHR_EOPTIONS => ErrorKind::Options,
            sys::CHR_EIO => ErrorKind::Io,
            sys::CHR_EINCOMPATIBLE => ErrorKind::Incompatible,
            _ => ErrorKind::Other,
        }
    }
}

/// A failed call: its status and the library's message (chr_last_error),
/// which names the C function, the bad value and the allowed range, with
/// what the library recorded of it as data (chr_last_error_info): the line
/// of a ring file, the earlier line it conflicts with, the member, the
/// change of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: sys::chr_status,
    message: String,
    index: Option<usize>,
    line: Option<u32>,
    other_line: Option<u32>,
    member: Option<Vec<u8>>,
}

impl Error {
    /// The error of the call that just failed on this thread with `status`.
    /// The error record is per thread, and a Rust thread does not move, so
    /// reading it right after the call gets that call's failure.
    pub(crate) fn last(status: sys::chr_status) -> Error {
        // SAFETY: chr_error_info is plain data (integers and pointers), valid
        // when zeroed; its version is set before the call.
        let mut info: sys::chr_error_info = unsafe { std::mem::zeroed() };
        info.version = sys::CHR_ERROR_INFO_VERSION;
        // SAFETY: `info` is a valid chr_error_info of a version the library
        // accepts; on CHR_OK its strings are never NULL and its member
        // points to member_len bytes, valid until this thread's next failing
        // call: everything is copied at once. chr_last_error never returns
        // NULL either.
        let recorded = unsafe { sys::chr_last_error_info(&mut info) } == sys::CHR_OK;
        let text = unsafe { CStr::from_ptr(if recorded { info.message } else { sys::chr_last_error() }) };
        let mut message = text.to_string_lossy().into_owned();
        if message.is_empty() {
            message = strerror(status);
        }
        let mut e = Error::binding(status, message);
        if recorded {
            let has = |flag: u32| info.flags & flag != 0;
            e.line = has(sys::CHR_ERROR_HAS_LINE).then_some(info.line);
            e.other_line = has(sys::CHR_ERROR_HAS_OTHER_LINE).then_some(info.other_line);
            e.index = has(sys::CHR_ERROR_HAS_CHANGE).then_some(info.change_index as usize);
            if has(sys::CHR_ERROR_HAS_MEMBER) {
                // SAFETY: member points to member_len bytes (see above).
                let bytes = unsafe { std::slice::from_raw_parts(info.member as *const u8, info.member_len) };
                e.member = Some(bytes.to_vec());
            }
        }
        e
    }

    /// An error raised by the binding itself (e.g. a NUL inside a name).
    pub(crate) fn binding(status: sys::chr_status, message: String) -> Error {
        Error { status, message, index: None, line: None, other_line: None, member: None }
    }

    pub(crate) fn at(mut self, index: usize) -> Error {
        self.index = Some(index);
        self
    }

    pub(crate) fn at_line(mut self, line: u32) -> Error {
        self.line = Some(line);
        self
    }

    /// For the ring-file calls: the line at fault (0 for the file as a
    /// whole); `None` for every other call.
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// For a ring file: the earlier line the faulty one conflicts with (the
    /// first occurrence of a duplicate id or directive); `None` otherwise.
    pub fn other_line(&self) -> Option<u32> {
        self.other_line
    }

    /// The id of the member the failure is about (add, remove, set_weight,
    /// a change of a batch, a ring file's member line); `None` when it is
    /// about no one member.
    pub fn member(&self) -> Option<&[u8]> {
        self.member.as_deref()
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_status(self.status)
    }

    /// The raw `chr_status` (a negative `CHR_E*` code).
    pub fn code(&self) -> i32 {
        self.status
    }

    /// The library's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For [`crate::Ring::apply`]: the index of the change that failed
    /// (the batch length for a batch-wide error); for a ring-file call, the
    /// index of the change a line became when the ring refused it.
    pub fn index(&self) -> Option<usize> {
        self.index
    }
}

/// The library's static text for a status (chr_strerror).
fn strerror(status: sys::chr_status) -> String {
    // SAFETY: chr_strerror returns static storage, never NULL.
    unsafe { CStr::from_ptr(sys::chr_strerror(status)) }.to_string_lossy().into_owned()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chring: {} ({})", self.message, strerror(self.status))
    }
}

impl std::error::Error for Error {}

/// `Ok(())` for CHR_OK, else the thread's last error.
pub(crate) fn check(status: sys::chr_status) -> Result<()> {
    if status == sys::CHR_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}
