//! Output-folder safety: where copies may go.
//!
//! Every destination is resolved (symbolic links of its existing part
//! followed, `.` and `..` folded, relative paths made absolute) and compared
//! with every source before anything is written, removed or renamed. Refused,
//! whatever the flags:
//! - a destination that is a source file, a source's side file (`-wal`,
//!   `-shm`, `-journal`), or the same file as one (same device and inode);
//! - a destination inside a source folder (a legacy `storage/` tree), or a
//!   destination folder that holds a source (replacing it would remove it);
//! - an output folder inside a folder given as input, or inside a folder the
//!   agent itself reads sessions from (Claude Code `projects/`, Codex
//!   `sessions/`, an opencode data dir).
//!
//! Everything else is allowed, e.g. `repair opencode.db --out fixed` (a new
//! folder beside the file) or an output folder next to a `projects/` tree.

use crate::formats::Store;
use anyhow::{bail, Result};
use std::path::{Component, Path, PathBuf};

/// Absolute form of `p`: symbolic links of its longest existing ancestor
/// resolved, the rest folded lexically (it does not exist, so it holds no
/// links).
pub fn resolved(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let comps: Vec<Component> = abs.components().collect();
    // The longest prefix that exists, canonicalized; the rest folded.
    let mut k = comps.len();
    let mut out = loop {
        let prefix: PathBuf = comps[..k].iter().collect();
        if let Ok(c) = prefix.canonicalize() {
            break c;
        }
        if k <= 1 {
            break prefix;
        }
        k -= 1;
    };
    for c in &comps[k..] {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(unix)]
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_p: &Path) -> Option<(u64, u64)> {
    None
}

/// What must never be overwritten, and where no output folder may go.
#[derive(Debug, Default)]
pub struct Guard {
    /// Source files and their side files, resolved.
    files: Vec<(PathBuf, &'static str)>,
    /// Source trees (legacy `storage/`), input folders and agent folders, resolved, with a label.
    folders: Vec<(PathBuf, String)>,
    /// Device and inode of every existing source file.
    ids: Vec<((u64, u64), PathBuf)>,
}

impl Guard {
    /// The guard for `stores` read from `inputs` (the paths given on the
    /// command line, or the default data dirs).
    pub fn new(inputs: &[PathBuf], stores: &[&dyn Store]) -> Guard {
        let mut g = Guard::default();
        for i in inputs {
            if i.is_dir() {
                g.folders
                    .push((resolved(i), format!("the input folder {}", i.display())));
            } else {
                // A file given as input is a source whether or not a format
                // could open it (one that failed to open has no store).
                if let Some(id) = file_id(i) {
                    g.ids.push((id, i.clone()));
                }
                g.files.push((resolved(i), "a source file"));
                for f in crate::formats::side_files_of(i) {
                    g.files.push((resolved(&f), "a source's side file"));
                }
            }
        }
        for s in stores {
            for f in s.source_files() {
                if let Some(id) = file_id(&f) {
                    g.ids.push((id, f.clone()));
                }
                g.files.push((resolved(&f), "a source file"));
            }
            for f in s.side_files() {
                g.files.push((resolved(&f), "a source's side file"));
            }
            if s.path().is_dir() {
                g.folders.push((
                    resolved(s.path()),
                    format!("the source folder {}", s.path().display()),
                ));
            }
            for d in s.agent_dirs() {
                g.folders.push((
                    resolved(&d),
                    format!("{}, which the agent reads sessions from", d.display()),
                ));
            }
        }
        g
    }

    /// Checks the output folder; returns it resolved.
    pub fn check_out_dir(&self, out: &Path) -> Result<PathBuf> {
        let r = resolved(out);
        for (f, label) in &self.folders {
            if r.starts_with(f) {
                bail!(
                    "refusing --out {}: it is inside {label} (copies never go among the originals)",
                    out.display()
                );
            }
        }
        for (f, what) in &self.files {
            if &r == f {
                bail!("refusing --out {}: it is {what}", out.display());
            }
        }
        // The folder, or the nearest part of it that exists, must be a
        // folder: a file there makes every copy fail with a message about
        // the file inside it that cannot be read.
        if let Some((at, md)) = r
            .ancestors()
            .find_map(|a| std::fs::metadata(a).ok().map(|m| (a, m)))
        {
            if !md.is_dir() {
                bail!(
                    "--out {}: {} is {}, not a folder",
                    out.display(),
                    at.display(),
                    crate::fsx::type_name(&md.file_type())
                );
            }
        }
        Ok(r)
    }

    /// Checks one path a copy would write (or replace).
    pub fn check_dest(&self, dest: &Path) -> Result<()> {
        let r = resolved(dest);
        for (f, what) in &self.files {
            if &r == f {
                bail!(
                    "refusing to write {}: it is {what} (copies never replace originals, not even with --force)",
                    dest.display()
                );
            }
            if f.starts_with(&r) {
                bail!(
                    "refusing to write {}: it holds {what}, {} (copies never replace originals, not even with --force)",
                    dest.display(),
                    f.display()
                );
            }
        }
        for (f, label) in &self.folders {
            if r.starts_with(f) || f.starts_with(&r) {
                bail!(
                    "refusing to write {}: it is inside or holds {label} (copies never go among the originals)",
                    dest.display()
                );
            }
        }
        if let Some(id) = file_id(dest) {
            if let Some((_, src)) = self.ids.iter().find(|(i, _)| *i == id) {
                bail!(
                    "refusing to write {}: it is the same file as the source {}",
                    dest.display(),
                    src.display()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotdot_and_missing_parts_are_folded() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("a")).unwrap();
        assert_eq!(resolved(&base.join("a/new/../../a")), base.join("a"));
        assert_eq!(resolved(&base.join("a/x/./y")), base.join("a/x/y"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("src")).unwrap();
        std::os::unix::fs::symlink(base.join("src"), base.join("link")).unwrap();
        assert_eq!(resolved(&base.join("link/out")), base.join("src/out"));
    }
}
