//! Small building blocks for the corpus: copies, FIFOs, symlinks, a seeded
//! PRNG, non-UTF-8 names, SQLite edits, JSONL line surgery.

use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// Copies a folder recursively (symlinks copied as symlinks).
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let e = e.unwrap();
        let t = dst.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            copy_dir(&e.path(), &t);
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &t).unwrap();
        } else {
            copy(&e.path(), &t);
        }
    }
}

/// Copies a file, creating the destination's folders; the copy is writable.
pub fn copy(src: &Path, dst: &Path) {
    if let Some(p) = dst.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::copy(src, dst)
        .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", src.display(), dst.display()));
    chmod(dst, 0o644);
}

pub fn write(p: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(p, bytes).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

pub fn mkdir(p: &Path) {
    std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
}

pub fn symlink(target: impl AsRef<Path>, link: &Path) {
    if let Some(d) = link.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::symlink(target.as_ref(), link)
        .unwrap_or_else(|e| panic!("symlink {}: {e}", link.display()));
}

pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

pub fn mkfifo(p: &Path) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let c = cpath(p);
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(
        r,
        0,
        "mkfifo {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

/// `lchown -R` (symlinks themselves, never their targets).
pub fn chown_tree(p: &Path, uid: u32) {
    let c = cpath(p);
    unsafe {
        libc::lchown(c.as_ptr(), uid, uid);
    }
    let Ok(md) = std::fs::symlink_metadata(p) else {
        return;
    };
    if md.file_type().is_dir() {
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                chown_tree(&e.path(), uid);
            }
        }
    }
}

/// Removes a tree whatever its modes (chmod 000 folders included).
pub fn remove_tree(p: &Path) {
    if let Ok(md) = std::fs::symlink_metadata(p) {
        if md.file_type().is_dir() {
            let _ =
                std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755));
            if let Ok(rd) = std::fs::read_dir(p) {
                for e in rd.flatten() {
                    remove_tree(&e.path());
                }
            }
            let _ = std::fs::remove_dir(p);
        } else {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A path component from raw bytes (non-UTF-8 names).
pub fn raw(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

/// xorshift64*: deterministic bytes, so a rebuilt case is the same case.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(n);
        v
    }
}

/// Lines of a JSONL file, each with its newline (the last one may lack it).
pub fn lines(p: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    b.split_inclusive(|c| *c == b'\n')
        .map(|l| l.to_vec())
        .collect()
}

pub fn write_lines(p: &Path, lines: &[Vec<u8>]) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(p).unwrap());
    for l in lines {
        f.write_all(l).unwrap();
    }
    f.flush().unwrap();
}

/// A line with a newline appended.
pub fn nl(mut v: Vec<u8>) -> Vec<u8> {
    v.push(b'\n');
    v
}

/// Writes `prefix`, `n` bytes of `fill`, `suffix` without holding them in memory.
pub fn write_streamed(p: &Path, prefix: &[u8], fill: u8, n: usize, suffix: &[u8]) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(p).unwrap());
    f.write_all(prefix).unwrap();
    let chunk = vec![fill; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len());
        f.write_all(&chunk[..k]).unwrap();
        left -= k;
    }
    f.write_all(suffix).unwrap();
    f.flush().unwrap();
}

/// Appends to a file.
pub fn append(p: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(bytes).unwrap();
}

pub fn sqlite(p: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display()))
}

/// Files under `dir` (recursively), as paths relative to it.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_type().is_file() {
            v.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    v.sort();
    v
}
