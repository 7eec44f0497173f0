use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;

use crate::error::{check, Error, Result};
use crate::sys;

/// How tokens are placed and keys hashed (chring.h explains each).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// `weight * tokens_per_weight` tokens at H(id "#" i).
    #[default]
    Native,
    /// libmemcached / twemproxy weighted ketama (hasher md5).
    Ketama,
    /// libmemcached ketama with every weight 0 or 1 (hasher md5).
    KetamaUnweighted,
    /// nginx `hash $key consistent` (hasher crc32).
    Nginx,
}

impl Placement {
    fn raw(self) -> i32 {
        match self {
            Placement::Native => sys::CHR_PLACEMENT_NATIVE,
            Placement::Ketama => sys::CHR_PLACEMENT_KETAMA,
            Placement::KetamaUnweighted => sys::CHR_PLACEMENT_KETAMA_UNWEIGHTED,
            Placement::Nginx => sys::CHR_PLACEMENT_NGINX,
        }
    }
}

/// Options of a new ring, built from the defaults:
/// `Options::default().seed(7).tokens_per_weight(100)`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    tokens_per_weight: Option<u32>,
    seed: u64,
    hasher: Option<String>,
    placement: Placement,
    plugin_dir: Option<PathBuf>,
}

impl Options {
    /// Tokens per unit of weight, 1..65536 (default 160).
    pub fn tokens_per_weight(mut self, n: u32) -> Self {
        self.tokens_per_weight = Some(n);
        self
    }

    /// The seed passed to the hasher for every key and token (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The hasher's name (default "xxh3").
    pub fn hasher(mut self, name: &str) -> Self {
        self.hasher = Some(name.to_string());
        self
    }

    /// The placement mode (default [`Placement::Native`]).
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// An extra directory searched for hash plugins, after the library's
    /// own directory and `CHRING_PLUGIN_PATH`.
    pub fn plugin_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.plugin_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Calls `f` with the C struct; its string pointers live during the call.
    pub(crate) fn with_raw<T>(&self, f: impl FnOnce(&sys::chr_options) -> Result<T>) -> Result<T> {
        // SAFETY: chr_options is plain data; chr_options_init fills it.
        let mut raw: sys::chr_options = unsafe { std::mem::zeroed() };
        check(unsafe { sys::chr_options_init(&mut raw, sys::CHR_OPTIONS_VERSION) })?;
        if let Some(n) = self.tokens_per_weight {
            raw.tokens_per_weight = n;
        }
        raw.seed = self.seed;
        raw.placement = self.placement.raw();
        let hasher = self.hasher.as_deref().map(|h| c_string(h.as_bytes(), "hasher")).transpose()?;
        let dir = self.plugin_dir.as_deref().map(|d| c_string(d.as_os_str().as_bytes(), "plugin_dir")).transpose()?;
        raw.hasher = hasher.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        raw.plugin_dir = dir.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        f(&raw)
    }
}

/// A C string for the library, or CHR_EINVAL if `bytes` holds a NUL.
pub(crate) fn c_string(bytes: &[u8], what: &str) -> Result<CString> {
    CString::new(bytes)
        .map_err(|_| Error::binding(sys::CHR_EINVAL, format!("chring (Rust): {} contains a NUL byte", what)))
}
