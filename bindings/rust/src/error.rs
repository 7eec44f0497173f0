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
/// which names the C function, the bad value and the allowed range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: sys::chr_status,
    message: String,
    index: Option<usize>,
    line: Option<u32>,
}

impl Error {
    /// The error of the call that just failed on this thread with `status`.
    /// chr_last_error() is per thread, and a Rust thread does not move, so
    /// reading it right after the call gets that call's message.
    pub(crate) fn last(status: sys::chr_status) -> Error {
        // SAFETY: chr_last_error never returns NULL and its buffer is valid
        // until this thread's next failing call; it is copied at once.
        let text = unsafe { CStr::from_ptr(sys::chr_last_error()) };
        let mut message = text.to_string_lossy().into_owned();
        if message.is_empty() {
            message = strerror(status);
        }
        Error { status, message, index: None, line: None }
    }

    /// An error raised by the binding itself (e.g. a NUL inside a name).
    pub(crate) fn binding(status: sys::chr_status, message: String) -> Error {
        Error { status, message, index: None, line: None }
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
    /// (the batch length for a batch-wide error).
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
