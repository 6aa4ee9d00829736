//! Filesystem safety shared by every reader and writer.
//!
//! - Readers open only regular files ([`open_regular`]): a FIFO, socket or
//!   device met where a session file is expected is refused by its type
//!   before it is opened (and the open itself is non-blocking), so nothing
//!   hangs on a pipe and nothing reads `/dev/zero` forever. JSON documents
//!   are read with a size cap ([`read_capped`], [`MAX_JSON_DOC_BYTES`]).
//! - Private copies of sources (a database with a `-wal` or a hot journal)
//!   go into a per-user cache folder ([`private_dir`]): folders are created
//!   0700, a run's folder is removed when the run ends, on SIGINT and on
//!   SIGTERM ([`install_signal_cleanup`]), and a later run removes the folders
//!   of runs whose process is gone (SIGKILL, power loss).
//! - Writers stage every output under a temporary name in the destination's
//!   folder ([`Staged`]) and move it into place with a rename that never
//!   replaces an existing path unless asked to (`renameat2(RENAME_NOREPLACE)`,
//!   else link + unlink), then sync the folder.
//! - A folder of copies holds a manifest ([`Manifest`]) naming the copies
//!   this tool wrote there; `--force` only ever replaces a path listed in it.

use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest JSON document read whole (a legacy message or part file, a
/// models.dev file): 256 MiB. Bigger ones are reported with their size.
pub const MAX_JSON_DOC_BYTES: u64 = 256 << 20;

/// Name of a file type for messages (`fifo`, `socket`, `character device`, ...).
pub fn type_name(ft: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// `Ok(())` when `p` (symlinks followed) is a regular file; otherwise an
/// error saying what it is. A missing path is an `io::ErrorKind::NotFound`.
pub fn ensure_regular(p: &Path) -> io::Result<std::fs::Metadata> {
    let md = std::fs::metadata(p)?;
    if md.is_file() {
        Ok(md)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} (expected a regular file)", type_name(&md.file_type())),
        ))
    }
}

/// Opens `p` read-only when it is a regular file. The type is checked before
/// opening and again on the open handle (a path swapped for a FIFO in
/// between is refused, and the open never blocks: `O_NONBLOCK`).
pub fn open_regular(p: &Path) -> io::Result<File> {
    open_regular_sized(p).map(|(f, _)| f)
}

/// [`open_regular`], with the file's length in bytes when it was opened
/// (from the handle's own `stat`, which the type check makes anyway: a
/// loader that asked for the length after the open made a second one).
pub fn open_regular_sized(p: &Path) -> io::Result<(File, u64)> {
    ensure_regular(p)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let f = opts.open(p)?;
    let md = f.metadata()?;
    if !md.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} (expected a regular file)", type_name(&md.file_type())),
        ));
    }
    Ok((f, md.len()))
}

/// Reads `len` bytes of `f` at byte `offset` without moving its position
/// (`pread`: the handle may be read in order on another thread meanwhile).
/// Errors: the read's; `UnexpectedEof` when the file holds fewer bytes.
#[cfg(unix)]
pub fn read_at(f: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0; len];
    f.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// Why [`read_capped`] gave up.
#[derive(Debug)]
pub enum CappedError {
    Io(io::Error),
    /// The file holds more than the cap (its size in bytes).
    TooLarge(u64),
}

impl std::fmt::Display for CappedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CappedError::Io(e) => write!(f, "cannot read: {e}"),
            CappedError::TooLarge(n) => write!(
                f,
                "{n} bytes, more than the {} MiB a JSON document may have",
                MAX_JSON_DOC_BYTES >> 20
            ),
        }
    }
}

/// Reads a whole regular file of at most `cap` bytes.
pub fn read_capped(p: &Path, cap: u64) -> Result<Vec<u8>, CappedError> {
    let f = open_regular(p).map_err(CappedError::Io)?;
    let len = f.metadata().map_err(CappedError::Io)?.len();
    if len > cap {
        return Err(CappedError::TooLarge(len));
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(CappedError::Io)?;
    if buf.len() as u64 > cap {
        return Err(CappedError::TooLarge(buf.len() as u64));
    }
    Ok(buf)
}

// ---------------------------------------------------------------------------
// Clean-up registry: paths removed when the run is interrupted.

static CLEANUP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers `p` (a file or folder this run created) for removal if the run
/// is interrupted before it is unregistered.
pub fn register(p: &Path) {
    if let Ok(mut v) = CLEANUP.lock() {
        v.push(p.to_path_buf());
    }
}

/// Forgets `p` (it was committed or removed).
pub fn unregister(p: &Path) {
    if let Ok(mut v) = CLEANUP.lock() {
        if let Some(i) = v.iter().rposition(|x| x == p) {
            v.swap_remove(i);
        }
    }
}

fn remove_any(p: &Path) {
    // A folder is first moved aside: another thread of this run may still be
    // creating files in it by path (SQLite's journal of a copy in progress),
    // which then fail instead of refilling it while it is removed.
    let mut p = p.to_path_buf();
    if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
        let mut aside = p.clone().into_os_string();
        aside.push(".removing");
        if std::fs::rename(&p, &aside).is_ok() {
            p = PathBuf::from(aside);
        }
    }
    let p = p.as_path();
    for _ in 0..100 {
        let res = match std::fs::symlink_metadata(p) {
            Ok(md) if md.is_dir() => std::fs::remove_dir_all(p),
            Ok(_) => std::fs::remove_file(p),
            Err(_) => return,
        };
        if res.is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Removes every registered path (newest first), and every private folder
/// of this process (one created a moment before it was registered).
/// Called on SIGINT/SIGTERM.
pub fn cleanup_all() {
    let paths: Vec<PathBuf> = match CLEANUP.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => Vec::new(),
    };
    for p in paths.iter().rev() {
        remove_any(p);
    }
    let prefix = format!("run-{}-", std::process::id());
    if let Ok(rd) = std::fs::read_dir(private_base()) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                remove_any(&e.path());
            }
        }
    }
}

/// Held by the signal handler from its start to the process's exit, and by
/// the main thread once the run is over ([`end_of_run`]): whichever takes
/// it first decides the exit code.
static EXIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Installs a SIGINT/SIGTERM handler that removes this run's temporary files
/// and folders, then exits with 130. Idempotent. The run goes on while the
/// handler removes its files (its writes then fail), so the main thread
/// must not end the process meanwhile with its own code: it waits at
/// [`end_of_run`] (a run that ended on the files removed under it exited 2
/// before the handler's 130, under load).
pub fn install_signal_cleanup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            let _held = EXIT.lock().unwrap_or_else(|e| e.into_inner());
            cleanup_all();
            eprintln!("session-doctor: interrupted; temporary files removed");
            std::process::exit(130);
        });
    });
}

/// Called by `main` when the run is over, its own clean-up done, before it
/// exits with its code: waits for a signal handler already running (which
/// exits with 130 and never returns here), and keeps any later one from
/// starting (it waits on the lock, held until the process exits).
pub fn end_of_run() {
    let held = EXIT.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::forget(held);
}

// ---------------------------------------------------------------------------
// Private folders for copies of sources.

/// The per-user folder holding this tool's private run folders:
/// `$XDG_CACHE_HOME/session-doctor/tmp`, else `$HOME/.cache/session-doctor/tmp`,
/// else `<temp dir>/session-doctor-<uid>`.
pub fn private_base() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        });
    match cache {
        Some(c) => c.join("session-doctor").join("tmp"),
        None => {
            #[cfg(unix)]
            let uid = rustix::process::getuid().as_raw();
            #[cfg(not(unix))]
            let uid = 0;
            std::env::temp_dir().join(format!("session-doctor-{uid}"))
        }
    }
}

fn create_private_base(base: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(base)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let md = std::fs::symlink_metadata(base)?;
        if !md.is_dir() || md.uid() != rustix::process::getuid().as_raw() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "not a folder owned by this user",
            ));
        }
        if md.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// Removes run folders (`run-<pid>-*`) whose process no longer exists.
fn reclaim_stale(base: &Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = name
            .strip_prefix("run-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == std::process::id() || process_alive(pid) {
            continue;
        }
        let _ = std::fs::remove_dir_all(e.path());
    }
}

fn process_alive(pid: i32) -> bool {
    #[cfg(unix)]
    {
        match rustix::process::Pid::from_raw(pid) {
            Some(p) => !matches!(
                rustix::process::test_kill_process(p),
                Err(rustix::io::Errno::SRCH)
            ),
            None => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Creates a new file readable by its owner only (0600): private copies of
/// sources never widen who can read them.
pub fn create_private_file(p: &Path) -> io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).read(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(p)
}

/// At the start of a run: removes the private folders of earlier runs whose
/// process is gone (killed with SIGKILL, or a crash). Creates nothing.
pub fn reclaim_at_start() {
    let base = private_base();
    if base.is_dir() {
        reclaim_stale(&base);
    }
}

/// A private folder (0700) for copies of sources, removed on drop and on
/// SIGINT/SIGTERM.
#[derive(Debug)]
pub struct PrivateDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl PrivateDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        unregister(&self.path);
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
}

/// Creates a private folder under [`private_base`]; the first call of a run
/// also removes folders left by runs that were killed.
pub fn private_dir() -> Result<PrivateDir> {
    let base = private_base();
    create_private_base(&base).with_context(|| {
        format!(
            "{}: cannot create the private temp folder (for copies of databases that are being written)",
            base.display()
        )
    })?;
    static RECLAIM: std::sync::Once = std::sync::Once::new();
    RECLAIM.call_once(|| reclaim_stale(&base));
    let dir = tempfile::Builder::new()
        .prefix(&format!("run-{}-", std::process::id()))
        .tempdir_in(&base)
        .with_context(|| format!("{}: cannot create a private temp folder", base.display()))?;
    let path = dir.path().to_path_buf();
    register(&path);
    Ok(PrivateDir {
        dir: Some(dir),
        path,
    })
}

// ---------------------------------------------------------------------------
// Staged writes.

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists
/// (files and folders), atomically where the kernel supports it.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::EXIST) => {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, "exists"))
            }
            Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if std::fs::symlink_metadata(from)?.is_dir() {
        if std::fs::symlink_metadata(to).is_ok() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "exists"));
        }
        return std::fs::rename(from, to);
    }
    // A hard link fails when `to` exists; then drop the temp name.
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// Syncs a folder so a rename in it survives a crash (best effort).
pub fn sync_dir(dir: &Path) {
    if let Ok(f) = File::open(dir) {
        let _ = f.sync_all();
    }
}

/// What a staged output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedKind {
    File,
    Dir,
}

/// An output written under a temporary name in its destination's folder,
/// moved into place by [`Staged::commit`]; removed on drop (and on
/// SIGINT/SIGTERM) when not committed.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    kind: StagedKind,
    done: bool,
}

fn temp_name(dest: &Path, dir_kind: bool) -> Result<PathBuf> {
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| anyhow!("{}: has no parent folder", dest.display()))?;
    let mut name = std::ffi::OsString::from(".session-doctor-");
    name.push(dest.file_name().unwrap_or_default());
    for _ in 0..100 {
        let mut n = name.clone();
        n.push(format!(
            "-{:x}{}",
            rand_u64(),
            if dir_kind { ".tmpdir" } else { ".tmp" }
        ));
        let p = parent.join(n);
        if std::fs::symlink_metadata(&p).is_err() {
            return Ok(p);
        }
    }
    bail!("{}: cannot find a free temporary name", parent.display())
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    h.finish()
}

impl Staged {
    /// Stages a new file for `dest` (created empty, mode 0600 until commit).
    /// Its folder must exist.
    pub fn file(dest: &Path) -> Result<(Staged, File)> {
        let tmp = temp_name(dest, false)?;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).read(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        register(&tmp);
        let f = opts.open(&tmp).map_err(|e| {
            unregister(&tmp);
            anyhow!("{}: cannot create a temporary file: {e}", tmp.display())
        })?;
        Ok((
            Staged {
                tmp,
                dest: dest.to_path_buf(),
                kind: StagedKind::File,
                done: false,
            },
            f,
        ))
    }

    /// Stages a new folder for `dest` (created empty). Its parent must exist.
    pub fn dir(dest: &Path) -> Result<Staged> {
        let tmp = temp_name(dest, true)?;
        register(&tmp);
        std::fs::create_dir(&tmp).map_err(|e| {
            unregister(&tmp);
            anyhow!("{}: cannot create a temporary folder: {e}", tmp.display())
        })?;
        Ok(Staged {
            tmp,
            dest: dest.to_path_buf(),
            kind: StagedKind::Dir,
            done: false,
        })
    }

    /// The temporary path to write.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Also remove `p` (a side file the writer may create next to the
    /// temporary path, e.g. SQLite's `-journal`) if the run is interrupted.
    pub fn track(&self, p: &Path) {
        register(p);
    }

    /// Sets the final permission bits, syncs, and moves the output into
    /// place. `replace`: the destination is a previous copy that may be
    /// replaced (the caller checked the manifest); otherwise an existing
    /// destination fails with "exists".
    pub fn commit(mut self, mode: u32, replace: bool) -> Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.tmp, std::fs::Permissions::from_mode(mode));
        }
        #[cfg(not(unix))]
        let _ = mode;
        if self.kind == StagedKind::File {
            if let Ok(f) = File::open(&self.tmp) {
                let _ = f.sync_all();
            }
        }
        let res = match rename_noreplace(&self.tmp, &self.dest) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && replace => {
                self.replace_existing()
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(anyhow!(
                "{}: exists (written meanwhile by another run?); pass --force to replace a previous copy",
                self.dest.display()
            )),
            Err(e) => Err(anyhow!(
                "{}: cannot move the copy into place: {e}",
                self.dest.display()
            )),
        };
        if res.is_ok() {
            self.done = true;
            unregister(&self.tmp);
            if let Some(p) = self.dest.parent() {
                sync_dir(p);
            }
        }
        res
    }

    fn replace_existing(&self) -> Result<()> {
        match self.kind {
            StagedKind::File => std::fs::rename(&self.tmp, &self.dest).with_context(|| {
                format!("{}: cannot replace the previous copy", self.dest.display())
            }),
            StagedKind::Dir => {
                // Move the previous copy aside, the new one in, then remove the old one.
                let old = temp_name(&self.dest, true)?;
                register(&old);
                std::fs::rename(&self.dest, &old).with_context(|| {
                    format!(
                        "{}: cannot move the previous copy aside",
                        self.dest.display()
                    )
                })?;
                if let Err(e) = std::fs::rename(&self.tmp, &self.dest) {
                    let _ = std::fs::rename(&old, &self.dest);
                    unregister(&old);
                    bail!(
                        "{}: cannot move the copy into place: {e}",
                        self.dest.display()
                    );
                }
                let _ = std::fs::remove_dir_all(&old);
                unregister(&old);
                Ok(())
            }
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            remove_any(&self.tmp);
            unregister(&self.tmp);
        }
    }
}

// ---------------------------------------------------------------------------
// The manifest of copies in an output folder.

/// File name of the manifest in an output folder.
pub const MANIFEST_NAME: &str = ".session-doctor-copies.json";
/// File name of the lock taken while writing into an output folder.
pub const LOCK_NAME: &str = ".session-doctor.lock";

/// Percent-encodes the bytes of a relative path so non-UTF-8 names survive JSON.
pub fn encode_path(p: &Path) -> String {
    #[cfg(unix)]
    let bytes: Vec<u8> = {
        use std::os::unix::ffi::OsStrExt;
        p.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes: Vec<u8> = p.to_string_lossy().as_bytes().to_vec();
    let mut s = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_graphic() && b != b'%' || b == b' ' {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The copies this tool wrote into an output folder (paths relative to it),
/// kept in [`MANIFEST_NAME`]. Writes are serialized by an exclusive lock on
/// [`LOCK_NAME`] held by [`OutLock`].
#[derive(Debug, Default)]
pub struct Manifest {
    pub copies: std::collections::BTreeSet<String>,
}

impl Manifest {
    /// Reads the manifest of `out` (empty when there is none).
    pub fn load(out: &Path) -> Result<Manifest> {
        let p = out.join(MANIFEST_NAME);
        let bytes = match read_capped(&p, 64 << 20) {
            Ok(b) => b,
            Err(CappedError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Manifest::default())
            }
            Err(e) => bail!("{}: {e}", p.display()),
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not a session-doctor manifest", p.display()))?;
        let copies = v
            .get("copies")
            .and_then(|c| c.as_array())
            .ok_or_else(|| {
                anyhow!(
                    "{}: not a session-doctor manifest (no `copies`)",
                    p.display()
                )
            })?
            .iter()
            .filter_map(|c| c.get("path").and_then(|p| p.as_str()).map(str::to_string))
            .collect();
        Ok(Manifest { copies })
    }

    /// Whether `rel` (relative to the output folder) is a copy this tool wrote.
    pub fn contains(&self, rel: &Path) -> bool {
        self.copies.contains(&encode_path(rel))
    }

    pub fn insert(&mut self, rel: &Path) {
        self.copies.insert(encode_path(rel));
    }

    /// Writes the manifest atomically into `out`.
    pub fn save(&self, out: &Path) -> Result<()> {
        let doc = serde_json::json!({
            "tool": "session-doctor",
            "version": env!("CARGO_PKG_VERSION"),
            "note": "copies written by session-doctor into this folder; `--force` replaces only these",
            "copies": self.copies.iter().map(|p| serde_json::json!({"path": p})).collect::<Vec<_>>(),
        });
        let dest = out.join(MANIFEST_NAME);
        let (staged, mut f) = Staged::file(&dest)?;
        use std::io::Write;
        f.write_all(serde_json::to_string_pretty(&doc)?.as_bytes())
            .with_context(|| format!("{}: cannot write", staged.path().display()))?;
        drop(f);
        staged.commit(0o644, true)
    }
}

/// An exclusive lock on an output folder, held while copies are written.
pub struct OutLock {
    _file: File,
}

impl OutLock {
    /// Creates `out` if needed and waits for its lock.
    pub fn acquire(out: &Path) -> Result<OutLock> {
        std::fs::create_dir_all(out)
            .with_context(|| format!("{}: cannot create the output folder", out.display()))?;
        let p = out.join(LOCK_NAME);
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .with_context(|| format!("{}: cannot create the lock file", p.display()))?;
        f.lock()
            .with_context(|| format!("{}: cannot lock", p.display()))?;
        Ok(OutLock { _file: f })
    }
}

/// `p` as an absolute path, lexically: the current folder prepended to a
/// relative path and `.` components dropped (`""`, the folder of a bare file
/// name, is the current folder); symbolic links and `..` are left as they
/// are. `p` itself when the current folder cannot be read.
pub fn absolute(p: &Path) -> PathBuf {
    let p = if p.as_os_str().is_empty() {
        Path::new(".")
    } else {
        p
    };
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = open_regular(&p).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
    }

    #[test]
    fn reading_is_capped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.json");
        std::fs::write(&p, vec![b' '; 100]).unwrap();
        assert!(matches!(
            read_capped(&p, 99),
            Err(CappedError::TooLarge(100))
        ));
        assert_eq!(read_capped(&p, 100).unwrap().len(), 100);
        let e = read_capped(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn commit_never_replaces_without_leave() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("a.db");
        std::fs::write(&dest, b"first").unwrap();
        let (s, mut f) = Staged::file(&dest).unwrap();
        use std::io::Write;
        f.write_all(b"second").unwrap();
        let tmp = s.path().to_path_buf();
        assert!(s.commit(0o644, false).is_err());
        assert_eq!(std::fs::read(&dest).unwrap(), b"first");
        assert!(!tmp.exists(), "the temporary file is removed");
        let (s, mut f) = Staged::file(&dest).unwrap();
        f.write_all(b"third").unwrap();
        s.commit(0o644, true).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"third");
    }

    #[test]
    fn manifest_round_trips_non_utf8_names() {
        let d = tempfile::tempdir().unwrap();
        let mut m = Manifest::default();
        #[cfg(unix)]
        let name = {
            use std::os::unix::ffi::OsStrExt;
            PathBuf::from(std::ffi::OsStr::from_bytes(b"a/\xff.jsonl"))
        };
        #[cfg(not(unix))]
        let name = PathBuf::from("a/x.jsonl");
        m.insert(&name);
        m.save(d.path()).unwrap();
        let m2 = Manifest::load(d.path()).unwrap();
        assert!(m2.contains(&name));
        assert!(!m2.contains(Path::new("a/?.jsonl")));
    }
}
