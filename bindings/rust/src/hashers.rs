use std::ffi::CStr;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use crate::bytes_arg;
use crate::error::{check, Result};
use crate::options::c_string;
use crate::sys;

/// One available hasher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HasherInfo {
    /// Its name, as given to [`crate::Options::hasher`].
    pub name: String,
    /// One line of description ("" if none).
    pub description: String,
    /// "builtin", "registered", or the plugin file's path.
    pub origin: String,
    /// Size of its full digest in bytes; 0 if it has none.
    pub digest_size: usize,
}

/// Loads the hash plugin at `path` and registers its hashers (all or
/// nothing); returns how many. Plugins next to the library, in
/// `CHRING_PLUGIN_PATH` and in [`crate::Options::plugin_dir`] are found
/// without this.
pub fn load_plugin(path: impl AsRef<Path>) -> Result<usize> {
    let path = c_string(path.as_ref().as_os_str().as_bytes(), "plugin path")?;
    let mut loaded = 0;
    // SAFETY: path is a valid C string; loaded a valid out-pointer.
    check(unsafe { sys::chr_plugin_load(path.as_ptr(), &mut loaded) })?;
    Ok(loaded)
}

fn owned(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the library's strings live as long as the process.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// The available hashers, after discovering plugins in the default places
/// and in `plugin_dir`.
pub fn hashers(plugin_dir: Option<&Path>) -> Result<Vec<HasherInfo>> {
    let dir = plugin_dir.map(|d| c_string(d.as_os_str().as_bytes(), "plugin_dir")).transpose()?;
    let dir_ptr = dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
    let mut count = 0usize;
    loop {
        // SAFETY: chr_hasher_info is plain data, filled by the library.
        let mut out: Vec<sys::chr_hasher_info> = vec![unsafe { std::mem::zeroed() }; count];
        // SAFETY: out has room for out.len() entries.
        let status = unsafe { sys::chr_hasher_list(dir_ptr, out.as_mut_ptr(), out.len(), &mut count) };
        if status == sys::CHR_ERANGE && count > out.len() {
            continue; // a plugin appeared between asking the size and listing
        }
        check(status)?;
        out.truncate(count);
        return Ok(out
            .iter()
            .map(|h| HasherInfo {
                name: owned(h.name),
                description: owned(h.description),
                origin: owned(h.origin),
                digest_size: h.digest_size as usize,
            })
            .collect());
    }
}

/// Hashes `data` with the named hasher and seed, as a ring would hash a key.
pub fn hash(hasher: &str, data: &[u8], seed: u64) -> Result<u64> {
    let name = c_string(hasher.as_bytes(), "hasher")?;
    let (d, len) = bytes_arg(data);
    let mut out = 0;
    // SAFETY: valid name, data and out-pointer.
    check(unsafe { sys::chr_hasher_hash(name.as_ptr(), d, len, seed, &mut out) })?;
    Ok(out)
}

/// The named hasher's full digest of `data` (e.g. MD5's 16 bytes).
pub fn digest(hasher: &str, data: &[u8]) -> Result<Vec<u8>> {
    let name = c_string(hasher.as_bytes(), "hasher")?;
    let (d, len) = bytes_arg(data);
    let mut out = [0u8; sys::CHR_DIGEST_MAX];
    let mut size = 0usize;
    // SAFETY: out has room for CHR_DIGEST_MAX bytes, the largest digest.
    check(unsafe { sys::chr_hasher_digest(name.as_ptr(), d, len, out.as_mut_ptr(), out.len(), &mut size) })?;
    Ok(out[..size].to_vec())
}
