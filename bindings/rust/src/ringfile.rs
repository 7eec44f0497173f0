//! Ring files (docs/ring-file.md): create a ring from one, apply one to a
//! ring as one atomic batch, export a ring's canonical text. Following a
//! file is `follower.rs`.
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use crate::error::{Error, Result};
use crate::options::{c_string, Options};
use crate::ring::Ring;
use crate::snapshot::Snapshot;
use crate::sys;

/// What a ring file said and what loading it did (`chr_ringfile_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileInfo {
    /// The file's `%%revision`, if it has one.
    pub revision: Option<u64>,
    /// The file has a `%%fingerprint` (checked: it matched).
    pub has_fingerprint: bool,
    /// The file has an option directive.
    pub has_options: bool,
    /// The ring's fingerprint after the call.
    pub fingerprint: u64,
    /// The `%%ring-file` value (1 when absent).
    pub format_version: u32,
    /// Member lines in the file.
    pub members: u32,
    /// Members added (creation: every member).
    pub added: u32,
    /// Members removed.
    pub removed: u32,
    /// Members whose weight changed.
    pub reweighted: u32,
    /// Members removed and added again (zone or position changed).
    pub replaced: u32,
    /// The file has `%%down`, `%%panic-threshold` or `%%availability`.
    pub has_availability: bool,
    /// `%%down` lines in the file.
    pub down: u32,
    /// The `%%panic-threshold` value ([`crate::PANIC_THRESHOLD_DEFAULT`] when absent).
    pub panic_threshold: u32,
    /// The ring's availability digest after the call.
    pub availability: u64,
}

/// What [`Ring::export`] writes: the canonical text (the default) or its
/// JSON twin, with or without a `%%revision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Export {
    /// The JSON twin instead of the text.
    pub json: bool,
    /// A `%%revision` directive with this value.
    pub revision: Option<u64>,
}

impl Export {
    fn flags(&self) -> (u32, u64) {
        let mut flags = 0;
        if self.json {
            flags |= sys::CHR_EXPORT_JSON;
        }
        if self.revision.is_some() {
            flags |= sys::CHR_EXPORT_REVISION;
        }
        (flags, self.revision.unwrap_or(0))
    }
}

pub(crate) fn new_info() -> Result<sys::chr_ringfile_info> {
    let mut info = sys::chr_ringfile_info::default();
    // SAFETY: info is a valid out-struct.
    crate::error::check(unsafe { sys::chr_ringfile_info_init(&mut info, sys::CHR_RINGFILE_INFO_VERSION) })?;
    Ok(info)
}

/// The result of a ring-file call: FileInfo, or the error with its line.
pub(crate) fn finish(status: sys::chr_status, info: &sys::chr_ringfile_info) -> Result<FileInfo> {
    if status != sys::CHR_OK {
        return Err(Error::last(status).at_line(info.error_line));
    }
    Ok(FileInfo {
        revision: (info.flags & sys::CHR_RINGFILE_HAS_REVISION != 0).then_some(info.revision),
        has_fingerprint: info.flags & sys::CHR_RINGFILE_HAS_FINGERPRINT != 0,
        has_options: info.flags & sys::CHR_RINGFILE_HAS_OPTIONS != 0,
        fingerprint: info.fingerprint,
        format_version: info.format_version,
        members: info.members,
        added: info.added,
        removed: info.removed,
        reweighted: info.reweighted,
        replaced: info.replaced,
        has_availability: info.flags & sys::CHR_RINGFILE_HAS_AVAILABILITY != 0,
        down: info.down,
        panic_threshold: info.panic_threshold,
        availability: info.availability,
    })
}

fn name_arg(name: Option<&str>) -> Result<Option<CString>> {
    name.map(|n| c_string(n.as_bytes(), "name")).transpose()
}

pub(crate) fn path_arg(path: &Path) -> Result<CString> {
    c_string(path.as_os_str().as_bytes(), "path")
}

fn opt_ptr(s: &Option<CString>) -> *const std::os::raw::c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

impl Ring {
    /// Creates a ring from a ring file's bytes. `name` appears in messages
    /// (`None` = "<text>"); `base` gives the options of a file without
    /// option directives and the plugin directory.
    pub fn from_text(text: impl AsRef<[u8]>, name: Option<&str>, base: &Options) -> Result<(Ring, FileInfo)> {
        let text = text.as_ref();
        let name = name_arg(name)?;
        base.with_raw(|raw| {
            let mut info = new_info()?;
            let mut out = ptr::null_mut();
            // SAFETY: text, name and raw are valid during the call.
            let st = unsafe {
                sys::chr_ring_new_from_text(text.as_ptr().cast(), text.len(), opt_ptr(&name), raw, &mut out, &mut info)
            };
            let fi = finish(st, &info)?;
            Ok((Ring::from_raw(out), fi))
        })
    }

    /// Creates a ring from the ring file at `path`, as [`Ring::from_text`];
    /// a file that cannot be read is [`crate::ErrorKind::Io`].
    pub fn from_file(path: impl AsRef<Path>, base: &Options) -> Result<(Ring, FileInfo)> {
        let path = path_arg(path.as_ref())?;
        base.with_raw(|raw| {
            let mut info = new_info()?;
            let mut out = ptr::null_mut();
            // SAFETY: path and raw are valid during the call.
            let st = unsafe { sys::chr_ring_new_from_file(path.as_ptr(), raw, &mut out, &mut info) };
            let fi = finish(st, &info)?;
            Ok((Ring::from_raw(out), fi))
        })
    }

    /// Makes this ring the one the file describes, as one atomic batch. A
    /// file whose options differ from the ring's is
    /// [`crate::ErrorKind::Options`]; on any error the ring is unchanged.
    pub fn apply_text(&self, text: impl AsRef<[u8]>, name: Option<&str>) -> Result<FileInfo> {
        let text = text.as_ref();
        let name = name_arg(name)?;
        let mut info = new_info()?;
        // SAFETY: the ring is live; text and name outlive the call.
        let st = unsafe {
            sys::chr_ring_apply_text(self.raw_ptr(), text.as_ptr().cast(), text.len(), opt_ptr(&name), &mut info)
        };
        finish(st, &info)
    }

    /// [`Ring::apply_text`] with the file at `path`.
    pub fn apply_file(&self, path: impl AsRef<Path>) -> Result<FileInfo> {
        let path = path_arg(path.as_ref())?;
        let mut info = new_info()?;
        // SAFETY: as apply_text.
        let st = unsafe { sys::chr_ring_apply_file(self.raw_ptr(), path.as_ptr(), &mut info) };
        finish(st, &info)
    }

    /// The ring's canonical ring file (or its JSON twin): the same ring
    /// gives the same bytes in every language.
    pub fn export(&self, how: Export) -> Result<Vec<u8>> {
        let (flags, revision) = how.flags();
        // SAFETY: the ring is live; buf has room for cap bytes.
        export_with(|buf, cap, len| unsafe { sys::chr_ring_export(self.raw_ptr(), flags, revision, buf, cap, len) })
    }
}

impl Snapshot {
    /// [`Ring::export`] for this snapshot.
    pub fn export(&self, how: Export) -> Result<Vec<u8>> {
        let (flags, revision) = how.flags();
        // SAFETY: the snapshot is live; buf has room for cap bytes.
        export_with(|buf, cap, len| unsafe { sys::chr_snapshot_export(self.raw_ptr(), flags, revision, buf, cap, len) })
    }
}

/// Asks the size, then exports; a writer may grow the ring in between
/// (CHR_ERANGE with the new size), so it asks again.
fn export_with(
    mut call: impl FnMut(*mut std::os::raw::c_char, usize, &mut usize) -> sys::chr_status,
) -> Result<Vec<u8>> {
    let mut len = 0usize;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let st = call(if buf.is_empty() { ptr::null_mut() } else { buf.as_mut_ptr().cast() }, buf.len(), &mut len);
        match st {
            sys::CHR_OK if len <= buf.len() && !buf.is_empty() => {
                buf.truncate(len);
                return Ok(buf);
            }
            sys::CHR_OK | sys::CHR_ERANGE => buf = vec![0u8; len + 1],
            _ => return Err(Error::last(st)),
        }
    }
}
