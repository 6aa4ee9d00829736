//! Snapshots of input folders: every entry (files, folders, symlinks, FIFOs,
//! side files) with its type, mode and content hash, never following a link
//! and never opening a FIFO or device. Files larger than `FULL_HASH_MAX` are
//! compared by inode, size, mtime and ctime after each run and hashed in full
//! at the end of their case.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

pub const FULL_HASH_MAX: u64 = 16 << 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        len: u64,
        /// (ino, mtime ns, ctime ns): compared for large files.
        stamp: (u64, i128, i128),
        /// sha256, when hashed (small files, or `full`).
        sha: Option<String>,
    },
    Link(PathBuf),
    Fifo {
        mode: u32,
    },
    Other {
        mode: u32,
    },
}

pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// Snapshot of every entry under `root` (the root itself as "").
pub fn snapshot(root: &Path, full: bool) -> Snapshot {
    let mut m = BTreeMap::new();
    walk(root, Path::new(""), full, &mut m);
    m
}

fn walk(root: &Path, rel: &Path, full: bool, m: &mut Snapshot) {
    let p = if rel.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let md = match std::fs::symlink_metadata(&p) {
        Ok(md) => md,
        Err(_) => return,
    };
    let ft = md.file_type();
    let mode = md.mode() & 0o7777;
    if ft.is_symlink() {
        let t = std::fs::read_link(&p).unwrap_or_default();
        m.insert(rel.to_path_buf(), Entry::Link(t));
    } else if ft.is_dir() {
        m.insert(rel.to_path_buf(), Entry::Dir { mode });
        if let Ok(rd) = std::fs::read_dir(&p) {
            let mut names: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
            names.sort();
            for n in names {
                walk(root, &rel.join(n), full, m);
            }
        }
    } else if ft.is_file() {
        let len = md.len();
        let stamp = (
            md.ino(),
            md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128,
            md.ctime() as i128 * 1_000_000_000 + md.ctime_nsec() as i128,
        );
        let sha = if full || len <= FULL_HASH_MAX {
            hash_file(&p)
        } else {
            None
        };
        m.insert(
            rel.to_path_buf(),
            Entry::File {
                mode,
                len,
                stamp,
                sha,
            },
        );
    } else if ft.is_fifo() {
        m.insert(rel.to_path_buf(), Entry::Fifo { mode });
    } else {
        m.insert(rel.to_path_buf(), Entry::Other { mode });
    }
}

pub fn hash_file(p: &Path) -> Option<String> {
    let mut f = std::fs::File::open(p).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(_) => return None,
        }
    }
    Some(format!("{:x}", h.finalize()))
}

/// Differences between two snapshots of one root.
#[derive(Default, Debug)]
pub struct Diff {
    pub added: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    pub changed: Vec<(PathBuf, String)>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

pub fn diff(before: &Snapshot, after: &Snapshot) -> Diff {
    let mut d = Diff::default();
    for (k, b) in before {
        match after.get(k) {
            None => d.removed.push(k.clone()),
            Some(a) => {
                if let Some(why) = differs(b, a) {
                    d.changed.push((k.clone(), why));
                }
            }
        }
    }
    for k in after.keys() {
        if !before.contains_key(k) {
            d.added.push(k.clone());
        }
    }
    d
}

fn differs(b: &Entry, a: &Entry) -> Option<String> {
    match (b, a) {
        (
            Entry::File {
                mode: m1,
                len: l1,
                stamp: s1,
                sha: h1,
            },
            Entry::File {
                mode: m2,
                len: l2,
                stamp: s2,
                sha: h2,
            },
        ) => {
            if m1 != m2 {
                return Some(format!("mode {m1:o} -> {m2:o}"));
            }
            if l1 != l2 {
                return Some(format!("size {l1} -> {l2}"));
            }
            match (h1, h2) {
                (Some(x), Some(y)) if x != y => Some("content changed (sha256)".into()),
                (Some(_), Some(_)) => None,
                _ if s1 != s2 => Some("inode/mtime/ctime changed".into()),
                _ => None,
            }
        }
        (x, y) if x == y => None,
        (x, y) => Some(format!("{} -> {}", kind(x), kind(y))),
    }
}

fn kind(e: &Entry) -> String {
    match e {
        Entry::Dir { mode } => format!("dir {mode:o}"),
        Entry::File { .. } => "file".into(),
        Entry::Link(t) => format!("symlink -> {}", t.display()),
        Entry::Fifo { mode } => format!("fifo {mode:o}"),
        Entry::Other { mode } => format!("special {mode:o}"),
    }
}
