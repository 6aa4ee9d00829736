//! Reading SQLite stores without touching them, and writing verified copies.
//! Shared by every SQLite-based format.
//!
//! How a source database is read ([`Snapshot::open`]), by what sits beside it
//! (measured with the bundled SQLite: opening a WAL database `mode=ro`
//! creates `-shm` when it is missing, `readonly_shm=1` without a `-wal`
//! creates `-wal`, `immutable=1` ignores the `-wal` and a hot journal):
//!
//! | beside the db | how it is read |
//! |---|---|
//! | nothing (rollback mode) | `mode=ro`: SQLite's shared lock, nothing created |
//! | nothing (WAL mode, checkpointed) | `mode=ro&immutable=1`: everything is in the main file, read without locks, so the file must be unchanged after each session read and each copy ([`Snapshot::unchanged`]; else that session is refused: run again) |
//! | `-wal` and `-shm` (the agent may be running) | a private snapshot made with the backup API from a `mode=ro&readonly_shm=1` connection, i.e. under SQLite's own WAL locking, then `quick_check`ed |
//! | `-wal` without `-shm` | db and `-wal` copied into a private folder, their size and time checked unchanged across the copy (else copied again, up to 5 times), opened there (SQLite replays the WAL), `quick_check`ed |
//! | a `-journal` SQLite calls hot (a writer died mid-transaction) | db and journal copied the same way; SQLite rolls the journal back on open in the private folder |
//!
//! Every side file must be a regular file: a FIFO or device named `-wal`
//! would hang or feed garbage, so the store is refused with its name.
//! Private copies live in [`crate::fsx::private_dir`] (0700, removed on exit
//! and on SIGINT/SIGTERM).
//!
//! Copies are the snapshot's file copied byte for byte (a rollback-mode
//! source under SQLite's read lock, [`Snapshot::copy_file_into`]) into a
//! staged file in the destination folder, edited there, checkpointed (no
//! `-wal` is left beside the copy), checked with `PRAGMA integrity_check`,
//! and only then moved into place; a copy that fails the check is removed
//! and reported.

use crate::fsx;
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// Why SQLite failed, said once. rusqlite's `SqliteFailure` shows its
/// message and then, as its source, the result code with that code's
/// description ("database disk image is malformed: Error code 11: The
/// database disk image is malformed" in an error chain): this is the
/// message SQLite gave when there is one, else the code's description;
/// any other error as rusqlite shows it. [`crate::error::chain`] formats
/// every rusqlite error of a chain with it.
pub fn reason(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        rusqlite::Error::SqliteFailure(err, None) => {
            rusqlite::ffi::code_to_str(err.extended_code).to_string()
        }
        other => other.to_string(),
    }
}

/// The 16-byte header every SQLite 3 database starts with.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// `p` with `suffix` appended to its file name (`-wal`, `-shm`, `-journal`).
pub fn side(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The side files SQLite may keep beside a database.
pub const SIDE_SUFFIXES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// The database `db` and its side files ([`SIDE_SUFFIXES`]): every path a
/// copy written at `db` writes or removes (a replaced copy's old side files
/// are removed), so each is checked against the sources first
/// ([`crate::formats::Copier::copy_targets`]).
pub fn with_side_files(db: &Path) -> Vec<PathBuf> {
    let mut v = vec![db.to_path_buf()];
    v.extend(side_files(db));
    v
}

/// The side files SQLite may keep beside the database `db`.
pub fn side_files(db: &Path) -> Vec<PathBuf> {
    SIDE_SUFFIXES.iter().map(|s| side(db, s)).collect()
}

/// Why `p`, named as an agent names its database, is not one of its
/// stores ([`crate::formats::Format::not_mine`]): it cannot be read, it is
/// not SQLite, or it lacks `tables` (what the agent's store holds, in
/// words).
pub fn not_a_store(p: &Path, tables: &str) -> String {
    match head(p) {
        Err(e) => format!("cannot read: {e}"),
        Ok(Head::Empty) => format!("an empty file; expected a SQLite database with {tables}"),
        Ok(Head::Other) => format!(
            "not a SQLite database (no \"SQLite format 3\" header); expected one with {tables}"
        ),
        Ok(Head::Sqlite) => format!("a SQLite database without {tables}"),
    }
}

/// What a file's first bytes say ([`head`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// No bytes.
    Empty,
    /// Not [`SQLITE_MAGIC`].
    Other,
    /// [`SQLITE_MAGIC`]: a SQLite 3 database.
    Sqlite,
}

/// Reads the first 16 bytes of `p` (a regular file, [`fsx::open_regular`]).
///
/// # Errors
/// `p` cannot be opened or read, or is not a regular file.
pub fn head(p: &Path) -> std::io::Result<Head> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(SQLITE_MAGIC.len());
    fsx::open_regular(p)?
        .take(SQLITE_MAGIC.len() as u64)
        .read_to_end(&mut buf)?;
    Ok(if buf.is_empty() {
        Head::Empty
    } else if buf == SQLITE_MAGIC {
        Head::Sqlite
    } else {
        Head::Other
    })
}

/// Percent-encodes a path for a SQLite `file:` URI, byte by byte (non-UTF-8
/// names stay exact).
pub fn uri_path(p: &Path) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    #[cfg(unix)]
    let bytes: Vec<u8> = {
        use std::os::unix::ffi::OsStrExt;
        abs.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes: Vec<u8> = abs.to_string_lossy().as_bytes().to_vec();
    let mut out = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How a source is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// `mode=ro`: rollback-mode database, no journal.
    ReadOnly,
    /// `mode=ro&immutable=1`: WAL-mode database without a `-wal`.
    Immutable,
    /// A private snapshot (backup API or verified file copy).
    Private,
}

/// A source database opened for reading: either the file itself or a private
/// snapshot of it.
#[derive(Debug)]
pub struct Snapshot {
    source: PathBuf,
    read_path: PathBuf,
    mode: ReadMode,
    /// Why a private snapshot was made (for messages), when one was.
    pub why_private: Option<&'static str>,
    _private: Option<fsx::PrivateDir>,
    /// `(len, mtime, ctime, inode)` of the source when it was opened, for an
    /// [`ReadMode::Immutable`] source ([`Snapshot::unchanged`]).
    opened: Option<(u64, i64, i64, u64)>,
}

/// Opens `uri` with `flags`, naming `shown` in errors.
fn open_uri(uri: &str, flags: OpenFlags, shown: &Path) -> Result<Connection> {
    Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
        .with_context(|| format!("{}: cannot open as SQLite", shown.display()))
}

fn ro_flags() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// `(len, mtime, ctime, inode)` of a file, to tell whether it changed.
fn stamp(p: &Path) -> Option<(u64, i64, i64, u64)> {
    let md = std::fs::metadata(p).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((
            md.len(),
            md.mtime() * 1_000_000_000 + md.mtime_nsec(),
            md.ctime() * 1_000_000_000 + md.ctime_nsec(),
            md.ino(),
        ))
    }
    #[cfg(not(unix))]
    {
        let m = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64);
        Some((md.len(), m, 0, 0))
    }
}

/// Copies every page in one step (one read transaction on the source, so the
/// copy is one consistent state), retrying while the source is locked.
fn backup_all(b: &rusqlite::backup::Backup<'_, '_>) -> rusqlite::Result<()> {
    use rusqlite::backup::StepResult;
    for attempt in 0..200u32 {
        match b.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            StepResult::Busy | StepResult::Locked => {
                std::thread::sleep(std::time::Duration::from_millis(10 + u64::from(attempt)))
            }
            _ => {}
        }
    }
    Err(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some("the database stayed locked".into()),
    ))
}

/// Runs `PRAGMA quick_check` (or `integrity_check`); `Err` with SQLite's
/// first complaint when the database is not "ok".
pub fn verify(conn: &Connection, full: bool, shown: &Path) -> Result<()> {
    let pragma = if full {
        "PRAGMA integrity_check(20)"
    } else {
        "PRAGMA quick_check(20)"
    };
    let mut st = conn
        .prepare(pragma)
        .with_context(|| format!("{}: cannot check the database", shown.display()))?;
    let rows: Vec<String> = st
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|it| it.collect())
        .with_context(|| format!("{}: the database is malformed", shown.display()))?;
    if rows.len() == 1 && rows[0] == "ok" {
        return Ok(());
    }
    bail!(
        "{}: the database is malformed ({}: {})",
        shown.display(),
        if full {
            "integrity_check"
        } else {
            "quick_check"
        },
        rows.join("; ")
    )
}

/// Why the `-wal` file `wal` is not a write-ahead log SQLite reads, or
/// `None` when its header is one (or it is empty: no log yet, or one
/// checkpointed and truncated). SQLite checks the header as here (its
/// magic number, page size and checksum, `walIndexRecover`) and ignores a
/// log that fails, in silence: the database read as if no `-wal` were
/// there, so a store whose tables were in the log was "not a session
/// store", naming neither the log nor what was wrong with it.
pub fn wal_header_problem(wal: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let mut h = Vec::with_capacity(32);
    fsx::open_regular(wal)?.take(32).read_to_end(&mut h)?;
    if h.is_empty() {
        return Ok(None);
    }
    if h.len() < 32 {
        return Ok(Some(format!(
            "{} bytes, shorter than the 32-byte header of a write-ahead log",
            h.len()
        )));
    }
    let be = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let magic = be(0);
    if magic & !1 != 0x377F_0682 {
        return Ok(Some(format!(
            "it starts with {magic:08X}, not a write-ahead log's magic number 377F0682 or 377F0683"
        )));
    }
    let page = be(8);
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Ok(Some(format!(
            "its page size {page} is not one SQLite writes (a power of two from 512 to 65536)"
        )));
    }
    // The checksum of the first 24 bytes, in 32-bit words of the byte
    // order the magic number's last bit names (1: big-endian).
    let word = |at: usize| {
        let b = [h[at], h[at + 1], h[at + 2], h[at + 3]];
        if magic & 1 == 1 {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let (mut s1, mut s2) = (0u32, 0u32);
    for at in (0..24).step_by(8) {
        s1 = s1.wrapping_add(word(at)).wrapping_add(s2);
        s2 = s2.wrapping_add(word(at + 4)).wrapping_add(s1);
    }
    if (s1, s2) != (be(24), be(28)) {
        return Ok(Some("its header checksum does not match its header".into()));
    }
    Ok(None)
}

fn copy_file(src: &Path, dst: &Path) -> Result<()> {
    let mut f =
        fsx::open_regular(src).with_context(|| format!("{}: cannot open", src.display()))?;
    let mut out = fsx::create_private_file(dst).with_context(|| {
        format!(
            "{}: cannot write the private copy (is the temp folder full?)",
            dst.display()
        )
    })?;
    std::io::copy(&mut f, &mut out).with_context(|| {
        format!(
            "{}: cannot copy to the private temp folder {} (is it full?)",
            src.display(),
            dst.display()
        )
    })?;
    Ok(())
}

impl Snapshot {
    /// Opens `source` for reading (see the module doc). Errors name the file
    /// and say what was expected.
    pub fn open(source: &Path) -> Result<Snapshot> {
        // Taken before anything is read: a write after it changes it.
        let opened = stamp(source);
        let mut header = [0u8; 100];
        {
            use std::io::Read;
            let mut f = fsx::open_regular(source)
                .with_context(|| format!("{}: cannot open", source.display()))?;
            let n = f
                .read(&mut header)
                .with_context(|| format!("{}: cannot read", source.display()))?;
            if n < 16 || &header[..16] != SQLITE_MAGIC {
                bail!(
                    "{}: not a SQLite database (expected the header \"SQLite format 3\")",
                    source.display()
                );
            }
        }
        for sfx in SIDE_SUFFIXES {
            let p = side(source, sfx);
            match std::fs::symlink_metadata(&p) {
                Err(_) => {}
                Ok(_) => {
                    match fsx::ensure_regular(&p) {
                        Ok(_) => {}
                        // Removed in between by the agent (a committed
                        // transaction's -journal): as good as none.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => bail!(
                            "{}: {e}; the database cannot be read safely beside it",
                            p.display()
                        ),
                    }
                }
            }
        }
        let wal = side(source, "-wal");
        let shm = side(source, "-shm");
        let journal = side(source, "-journal");
        let wal_mode = header[18] == 2 || header[19] == 2;
        let has = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file());
        let non_empty = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0);

        if non_empty(&journal) && wal_mode && !has(&wal) {
            // SQLite opening a WAL database read-only creates its -wal and
            // -shm when they are missing: never beside the source.
            return Snapshot::copied(
                source,
                &journal,
                "a -journal beside a WAL database: read through a verified private copy",
            );
        }
        if non_empty(&journal) && !wal_mode {
            // Only SQLite knows whether the journal is hot: ask it read-only first.
            let s = Snapshot::direct(source, ReadMode::ReadOnly);
            match s.connect().and_then(|c| {
                c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(anyhow::Error::from)
            }) {
                Ok(_) => return Ok(s),
                Err(_) => {
                    return Snapshot::copied(source, &journal, "a hot -journal (a writer stopped mid-transaction): read through a private copy that SQLite rolls back")
                }
            }
        }
        if has(&wal) {
            if let Some(why) = wal_header_problem(&wal)
                .with_context(|| format!("{}: cannot read", wal.display()))?
            {
                bail!(
                    "{}: not a valid SQLite write-ahead log ({why}); SQLite ignores such a -wal (the agent does not see what it may hold, and replaces it on its next write), so {} is not read beside it: keep a copy of the -wal, then move it aside to read the database as SQLite reads it",
                    wal.display(),
                    source.display()
                );
            }
            if has(&shm) {
                match Snapshot::backup_snapshot(source) {
                    Ok(s) => return Ok(s),
                    Err(_) => return Snapshot::copied(
                        source,
                        &wal,
                        "a -wal whose -shm could not be used: read through a verified private copy",
                    ),
                }
            }
            return Snapshot::copied(
                source,
                &wal,
                "a -wal without -shm: read through a verified private copy",
            );
        }
        if wal_mode {
            let mut s = Snapshot::direct(source, ReadMode::Immutable);
            s.opened = opened;
            return Ok(s);
        }
        Ok(Snapshot::direct(source, ReadMode::ReadOnly))
    }

    fn direct(source: &Path, mode: ReadMode) -> Snapshot {
        Snapshot {
            source: source.to_path_buf(),
            read_path: source.to_path_buf(),
            mode,
            why_private: None,
            _private: None,
            opened: None,
        }
    }

    /// A snapshot made by SQLite's backup API under its WAL locking.
    fn backup_snapshot(source: &Path) -> Result<Snapshot> {
        let dir = fsx::private_dir()?;
        let copy = dir.path().join("snapshot.db");
        drop(
            fsx::create_private_file(&copy).with_context(|| {
                format!("{}: cannot create the private snapshot", copy.display())
            })?,
        );
        {
            let src = open_uri(
                &format!("file:{}?mode=ro&readonly_shm=1", uri_path(source)),
                ro_flags(),
                source,
            )?;
            let mut dst = Connection::open(&copy).with_context(|| {
                format!("{}: cannot create the private snapshot", copy.display())
            })?;
            let backup = rusqlite::backup::Backup::new(&src, &mut dst)
                .with_context(|| format!("{}: cannot start a snapshot", source.display()))?;
            backup_all(&backup).with_context(|| {
                format!("{}: cannot read a consistent snapshot", source.display())
            })?;
        }
        Snapshot::finish_private(source, dir, copy, "a -wal (the agent may be writing): read from a consistent snapshot taken under SQLite's locking")
    }

    /// db plus one side file (`-wal` or `-journal`) copied into a private
    /// folder, retried until neither changed during the copy.
    fn copied(source: &Path, side_file: &Path, why: &'static str) -> Result<Snapshot> {
        let mut last = String::new();
        for attempt in 0..5u32 {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(50 << attempt));
            }
            let dir = fsx::private_dir()?;
            let copy = dir.path().join("snapshot.db");
            let before = (stamp(source), stamp(side_file));
            copy_file(source, &copy)?;
            let sfx = if side_file.as_os_str().to_string_lossy().ends_with("-wal") {
                "-wal"
            } else {
                "-journal"
            };
            if std::fs::metadata(side_file).is_ok() {
                if let Err(e) = copy_file(side_file, &side(&copy, sfx)) {
                    // Removed in between (the writer committed): try again.
                    if std::fs::metadata(side_file).is_err() {
                        last = format!("{} went away while it was copied", side_file.display());
                        continue;
                    }
                    return Err(e);
                }
            }
            let after = (stamp(source), stamp(side_file));
            if before != after {
                last = "the database changed while it was copied".into();
                continue;
            }
            match Snapshot::finish_private(source, dir, copy, why) {
                Ok(s) => return Ok(s),
                Err(e) => last = crate::error::chain(&e),
            }
        }
        bail!(
            "{}: cannot read a consistent copy after 5 attempts ({last}); try again when the agent is idle",
            source.display()
        )
    }

    /// Opens the private copy read-write (SQLite replays a WAL or rolls a
    /// hot journal back), turns it into a rollback-mode file, checks it.
    fn finish_private(
        source: &Path,
        dir: fsx::PrivateDir,
        copy: PathBuf,
        why: &'static str,
    ) -> Result<Snapshot> {
        {
            let c = Connection::open(&copy)
                .with_context(|| format!("{}: cannot open the private copy", source.display()))?;
            verify(&c, false, source)?;
            c.pragma_update(None, "journal_mode", "DELETE")
                .with_context(|| format!("{}: cannot read the private copy", source.display()))?;
        }
        Ok(Snapshot {
            source: source.to_path_buf(),
            read_path: copy,
            mode: ReadMode::Private,
            why_private: Some(why),
            _private: Some(dir),
            opened: None,
        })
    }

    /// The source database.
    pub fn source(&self) -> &Path {
        &self.source
    }

    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    /// Whether what was read since [`Snapshot::open`] is one state of the
    /// source. An [`ReadMode::Immutable`] source (a WAL database without
    /// `-wal`) is read without SQLite's locks: an agent that starts meanwhile
    /// writes its `-wal`, which that read ignores (still one state), but its
    /// checkpoint writes pages into the file itself while they are read. So
    /// the file's `(len, mtime, ctime, inode)` must be what it was at open.
    /// The other modes read one state by construction (a read transaction,
    /// or a private snapshot): always `Ok`.
    ///
    /// # Errors
    /// The source changed (or went away) since it was opened: the error
    /// names it and says to run again (the agent's `-wal` is then beside it,
    /// so the next run reads a snapshot taken under SQLite's locking).
    pub fn unchanged(&self) -> Result<()> {
        if self.mode != ReadMode::Immutable || stamp(&self.source) == self.opened {
            return Ok(());
        }
        bail!(
            "{}: the database changed while it was read (it had no -wal, so it was read without locks, and the agent wrote to it meanwhile); run again: with the agent's -wal beside it, it is read from a snapshot taken under SQLite's locking",
            self.source.display()
        )
    }

    /// A new read-only connection to the snapshot (one per worker).
    pub fn connect(&self) -> Result<Connection> {
        let uri = match self.mode {
            ReadMode::Immutable => {
                format!("file:{}?mode=ro&immutable=1", uri_path(&self.read_path))
            }
            ReadMode::ReadOnly | ReadMode::Private => {
                format!("file:{}?mode=ro", uri_path(&self.read_path))
            }
        };
        open_uri(&uri, ro_flags(), &self.source)
    }

    /// Copies the snapshot's bytes into `out` (the staged file `tmp`), as
    /// one consistent state. A snapshot is one complete file: a private
    /// snapshot is ours and checkpointed into rollback mode
    /// ([`Snapshot::finish_private`]); an `Immutable` source has no `-wal`.
    /// A `ReadOnly` source (rollback mode) is copied under a read
    /// transaction: SQLite's SHARED lock keeps every writer from changing
    /// the file until the copy is done (a writer needs EXCLUSIVE to write
    /// it). The same pages as the backup API copies, through the kernel's
    /// file copy instead of SQLite's pager: the 1 GB opencode.db of
    /// benches/ copies in well under a second, where the backup API took
    /// 5 s of `repair`'s 10.
    fn copy_file_into(&self, out: &mut std::fs::File, tmp: &Path) -> Result<()> {
        let locked = match self.mode {
            ReadMode::ReadOnly => {
                let c = self.connect()?;
                c.execute_batch("BEGIN")
                    .and_then(|()| {
                        c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                            r.get::<_, i64>(0)
                        })
                    })
                    .with_context(|| {
                        format!("{}: cannot take a read lock", self.source.display())
                    })?;
                Some(c)
            }
            ReadMode::Immutable | ReadMode::Private => None,
        };
        let len = crate::formats::complete_len(&self.read_path)?;
        crate::formats::copy_unchanged(&self.read_path, len, out, tmp)
            .with_context(|| format!("{}: cannot copy", self.source.display()))?;
        drop(locked);
        self.unchanged()
    }

    /// Writes a verified copy of the snapshot to `dest`: its bytes copied
    /// ([`Snapshot::copy_file_into`]) into a staged file beside `dest`
    /// (synced on a second thread meanwhile), `edit` run in one transaction on it,
    /// checkpointed, `PRAGMA integrity_check`ed, then moved into place
    /// (`replace`: `dest` is a previous copy that may be replaced). Stale
    /// `-wal`/`-shm`/`-journal` beside a replaced copy are removed first
    /// (SQLite would apply an old `-wal` to the new file).
    pub fn write_copy(
        &self,
        dest: &Path,
        replace: bool,
        edit: &dyn Fn(&rusqlite::Transaction<'_>) -> Result<()>,
    ) -> Result<()> {
        let (staged, mut file) = fsx::Staged::file(dest)?;
        let tmp = staged.path().to_path_buf();
        for sfx in SIDE_SUFFIXES {
            staged.track(&side(&tmp, sfx));
        }
        let cleanup_sides = || {
            for sfx in SIDE_SUFFIXES {
                let _ = std::fs::remove_file(side(&tmp, sfx));
                fsx::unregister(&side(&tmp, sfx));
            }
        };
        let edit_and_check = || -> Result<()> {
            let mut dst = Connection::open(&tmp)
                .with_context(|| format!("{}: cannot open the copy", tmp.display()))?;
            let txn = dst.transaction()?;
            edit(&txn)?;
            txn.commit()
                .with_context(|| format!("{}: cannot commit the edits", tmp.display()))?;
            dst.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .ok();
            verify(&dst, true, dest).map_err(|e| {
                anyhow!(
                    "the copy fails its check and was removed: {}",
                    crate::error::chain(&e)
                )
            })?;
            dst.close().map_err(|(_, e)| e)?;
            Ok(())
        };
        let res = self.copy_file_into(&mut file, &tmp).and_then(|()| {
            // The copied bytes go to disk while SQLite edits and checks the
            // copy, so that the sync before the rename ([`fsx::Staged::commit`])
            // waits only for what the edits wrote.
            std::thread::scope(|sc| {
                let flush = sc.spawn(|| file.sync_data());
                let checked = edit_and_check();
                let _ = flush.join();
                checked
            })
        });
        drop(file);
        cleanup_sides();
        res?;
        if replace {
            for sfx in SIDE_SUFFIXES {
                let p = side(dest, sfx);
                if std::fs::symlink_metadata(&p).is_ok() {
                    std::fs::remove_file(&p).with_context(|| {
                        format!(
                            "{}: cannot remove the previous copy's side file",
                            p.display()
                        )
                    })?;
                }
            }
        }
        staged.commit(0o644, replace)
    }
}

/// Names of the tables of a connection.
pub fn tables(conn: &Connection, shown: &Path) -> Result<Vec<String>> {
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type='table'")
        .with_context(|| format!("{}: cannot read the schema", shown.display()))?;
    let v = st
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
        .with_context(|| format!("{}: cannot read the schema", shown.display()))?;
    Ok(v)
}

/// Names of the columns of `table`.
pub fn columns(conn: &Connection, table: &str, shown: &Path) -> Result<Vec<String>> {
    let mut st = conn
        .prepare(&format!(
            "PRAGMA table_info(\"{}\")",
            table.replace('"', "\"\"")
        ))
        .with_context(|| {
            format!(
                "{}: cannot read the columns of table {table}",
                shown.display()
            )
        })?;
    let v = st
        .query_map([], |r| r.get::<_, String>(1))
        .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
        .with_context(|| {
            format!(
                "{}: cannot read the columns of table {table}",
                shown.display()
            )
        })?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn uri_paths_are_percent_encoded_bytewise() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = Path::new(std::ffi::OsStr::from_bytes(b"/a b/\xff/x?.db"));
            assert_eq!(uri_path(p), "/a%20b/%FF/x%3F.db");
        }
    }

    /// A folder holding `a.db`: a WAL-mode database of one empty table `t`,
    /// checkpointed (no `-wal` beside it).
    fn wal_db() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.db");
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute("CREATE TABLE t(x)", []).unwrap();
        drop(c);
        (d, p)
    }

    #[test]
    fn wal_mode_without_wal_is_read_immutable_and_nothing_is_created() {
        let (d, p) = wal_db();
        assert_eq!(listing(d.path()), ["a.db"]);
        let s = Snapshot::open(&p).unwrap();
        assert_eq!(s.mode(), ReadMode::Immutable);
        let n: i64 = s
            .connect()
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(listing(d.path()), ["a.db"]);
    }

    /// A WAL database read without locks (no `-wal` when opened) that an
    /// agent writes and checkpoints meanwhile is no longer one state:
    /// [`Snapshot::unchanged`] says so, and a copy of it is refused. A
    /// private snapshot of the same database stays valid.
    #[test]
    fn an_immutable_read_that_the_agent_writes_meanwhile_is_refused() {
        let (d, p) = wal_db();
        let s = Snapshot::open(&p).unwrap();
        assert_eq!(s.mode(), ReadMode::Immutable);
        s.unchanged().unwrap();
        let copy = d.path().join("out").join("copy.db");
        std::fs::create_dir(copy.parent().unwrap()).unwrap();
        s.write_copy(&copy, false, &|_| Ok(())).unwrap();
        std::fs::remove_file(&copy).unwrap();
        // The agent starts, writes, and checkpoints into the file on close.
        std::thread::sleep(std::time::Duration::from_millis(20));
        {
            let c = Connection::open(&p).unwrap();
            c.execute("INSERT INTO t VALUES (zeroblob(100000))", [])
                .unwrap();
        }
        assert_eq!(listing(d.path()), ["a.db", "out"]);
        let e = format!("{:#}", s.unchanged().unwrap_err());
        assert!(
            e.contains("a.db") && e.contains("changed while it was read"),
            "{e}"
        );
        let e = format!("{:#}", s.write_copy(&copy, false, &|_| Ok(())).unwrap_err());
        assert!(e.contains("changed while it was read"), "{e}");
        assert_eq!(listing(&d.path().join("out")), Vec::<String>::new());
        // A snapshot taken now reads the new state, and stays valid.
        let again = Snapshot::open(&p).unwrap();
        again.unchanged().unwrap();
        let n: i64 = again
            .connect()
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    /// The header check passes a log SQLite wrote and names a damaged one.
    #[test]
    fn a_wal_header_sqlite_writes_passes_and_a_damaged_one_is_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.db");
        let c = Connection::open(&p).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c.execute("CREATE TABLE t(x)", []).unwrap();
        let wal = side(&p, "-wal");
        let good = std::fs::read(&wal).unwrap();
        drop(c);
        std::fs::write(&wal, &good).unwrap();
        assert_eq!(wal_header_problem(&wal).unwrap(), None);
        let mut bad = good.clone();
        bad[17] ^= 0xFF;
        std::fs::write(&wal, &bad).unwrap();
        assert_eq!(
            wal_header_problem(&wal).unwrap().as_deref(),
            Some("its header checksum does not match its header")
        );
        std::fs::write(&wal, &good[..10]).unwrap();
        assert!(wal_header_problem(&wal)
            .unwrap()
            .unwrap()
            .contains("10 bytes"));
        std::fs::write(&wal, b"").unwrap();
        assert_eq!(wal_header_problem(&wal).unwrap(), None);
    }

    #[test]
    fn a_fifo_beside_the_db_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.db");
        Connection::open(&p)
            .unwrap()
            .execute("CREATE TABLE t(x)", [])
            .unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            side(&p, "-wal"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = format!("{:#}", Snapshot::open(&p).unwrap_err());
        assert!(e.contains("a.db-wal") && e.contains("FIFO"), "{e}");
    }
}
