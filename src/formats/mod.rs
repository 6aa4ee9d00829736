//! Storage formats. Each format module is the only place that knows its raw
//! shapes; everything else works on [`crate::model`].
//!
//! A format is found by [`discover`], which walks the given paths and asks each
//! format whether a path is one of its stores.

pub mod claude;
pub mod codex;
pub mod docker_agent;
pub mod hermes;
pub(crate) mod json_scan;
pub(crate) mod measured;
pub mod opencode;
#[cfg(test)]
pub(crate) mod random_json;
pub mod sqlite;

use crate::edit::{Applier, Edit, LineRun, StoredChange};
use crate::model::{Agent, LineRef, Session};
use anyhow::Result;
use std::path::{Path, PathBuf};

pub use sqlite::side as sidecar;

/// One store of sessions (a database file, a JSONL file with its sub-agent
/// files, or a JSON tree), opened read-only: the read side. Its write side
/// is [`Store::copier`].
pub trait Store: Send + Sync {
    /// Agent that wrote the store.
    fn agent(&self) -> Agent;
    /// The store itself: a db file, a transcript or rollout, or a `storage/` dir.
    fn path(&self) -> &Path;
    /// Every file the store reads (the db, a transcript and its sub-agent
    /// files); a tree store (a folder) lists none: the folder is its source.
    fn source_files(&self) -> Vec<PathBuf> {
        if self.path().is_dir() {
            Vec::new()
        } else {
            vec![self.path().to_path_buf()]
        }
    }
    /// Files the agent (or SQLite) keeps beside the sources (`-wal`, `-shm`,
    /// `-journal`), existing or not: never written, replaced or removed.
    fn side_files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// Folders the agent itself reads sessions from (Claude Code `projects/`,
    /// Codex `sessions/`, an opencode data dir): no output folder goes inside.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// Bytes of input the store holds (for progress: what takes time is
    /// reading bytes).
    fn input_bytes(&self) -> u64 {
        self.source_files()
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum()
    }
    /// Ids of the sessions in the store, oldest first.
    fn session_ids(&self) -> Result<Vec<String>>;
    /// Loads one session. Unreadable rows become [`crate::model::LoadProblem`]s;
    /// an error means the store itself could not be read.
    fn load(&self, id: &str) -> Result<Session>;
    /// The write side: copies of this store.
    fn copier(&self) -> &dyn Copier;
    /// What reading the store's own tree passes over that is not a session's
    /// (a symbolic link loop in a legacy opencode `storage/`), reported as
    /// warnings when the store is found ([`discover`] does not walk into a
    /// store's folder).
    fn tree_warnings(&self) -> Vec<crate::error::InputError> {
        Vec::new()
    }
}

/// The write side of a store: where its copy goes and how edits land in it.
pub trait Copier: Applier + Send + Sync {
    /// Path of the copy relative to `--out` (e.g. `opencode.db`, `storage`,
    /// `projects/<cwd>/<id>.jsonl`), in the layout the agent reads.
    fn copy_path(&self) -> PathBuf;
    /// The folder [`Copier::copy_path`] is relative to in the source's layout
    /// (the db's folder, the Claude config dir, the Codex home); copies of
    /// several stores keep their places relative to these.
    fn copy_base(&self) -> PathBuf;
    /// Every path a copy at `dest` writes (the copy itself, sub-agent files).
    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        vec![dest.to_path_buf()]
    }
    /// How `edit` looks in storage (stored field name, old and new JSON
    /// values) in the session `ix` is over, with lookups built once by the
    /// caller ([`Session::lookup`]).
    fn describe(&self, ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange;
    /// [`Copier::describe`] for every edit.
    fn describe_all(&self, session: &Session, edits: &[Edit]) -> Vec<StoredChange> {
        let mut out = Vec::with_capacity(edits.len());
        self.describe_into(session, edits, &mut out);
        out
    }
    /// [`Copier::describe`] for every edit, appended to `out`, except that
    /// two or more consecutive whole lines dropped together are one change
    /// ([`crate::edit::LineRun`], field `line`): a cut of a huge rollout is
    /// a few changes, not one per line.
    fn describe_into(&self, session: &Session, edits: &[Edit], out: &mut Vec<StoredChange>) {
        let ids = || edits.iter().map(|e| e.message_id.as_str());
        let stored = |ix: &crate::model::Lookup<'_>, e: &Edit, run: Option<LineRun>| match run {
            None => self.describe(ix, e),
            Some(run) => StoredChange {
                session_id: e.session_id.clone(),
                message_id: e.message_id.clone(),
                part_id: None,
                field: "line".into(),
                old: serde_json::Value::String(format!(
                    "lines {}-{} ({} lines, {} bytes)",
                    run.first_line, run.last_line, run.lines, run.bytes
                )),
                new: serde_json::Value::Null,
                run: Some(Box::new(run)),
                figures: None,
            },
        };
        // A few edits (a repair) look up their own messages only, not a
        // map of every id.
        let few = edits.len() < session.messages.len() / 4;
        // Many edits naming messages in stored order (a cut's drops: 2.4
        // million for the 1 GB rollout of benches/) are found by one walk,
        // and only the edits no run takes are looked up: a map of every id
        // would be about 100 MB there.
        let walked = if few {
            None
        } else {
            session.indices_in_order(ids())
        };
        if let Some(at) = walked {
            let mut emitted: Vec<(usize, Option<LineRun>)> = Vec::new();
            crate::edit::describe_runs(
                edits,
                |i, _| session.whole_line_at(at[i]),
                |i, run| emitted.push((i, run)),
            );
            let singles = emitted.iter().filter(|(_, run)| run.is_none());
            let ix = session.lookup_of(singles.map(|&(i, _)| edits[i].message_id.as_str()));
            out.extend(
                emitted
                    .into_iter()
                    .map(|(i, run)| stored(&ix, &edits[i], run)),
            );
            return;
        }
        let ix = if few {
            session.lookup_of(ids())
        } else {
            session.lookup()
        };
        crate::edit::describe_runs(
            edits,
            |_, e| ix.whole_line(&e.message_id),
            |i, run| out.push(stored(&ix, &edits[i], run)),
        );
    }
    /// Writes a copy of the whole store to `dest` with `edits` applied:
    /// staged under a temporary name beside `dest`, verified, then moved into
    /// place; `replace`: `dest` is a previous copy that may be replaced,
    /// otherwise an existing `dest` is an error. Reads the same snapshot of
    /// the sources the sessions were loaded from.
    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()>;
    /// What to do with a copy written at `dest` (an absolute path) so the
    /// agent loads it: shell commands and short sentences, one per line,
    /// naming `sessions` (the ids the copy changed; empty when it changed
    /// none). The agent's own paths and flags come from its format notes in
    /// `docs/formats/`.
    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String>;
}

/// `path` quoted for a POSIX shell when it needs it.
pub fn sh(path: &Path) -> String {
    shell_words::quote(&path.display().to_string()).into_owned()
}

/// The files named `names` that exist in the folder `home`, each quoted
/// for the shell ([`sh`]): the settings a copy's agent home needs, for a
/// `cp` step that cannot fail on a missing one.
pub fn existing_files(home: &Path, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| home.join(n))
        .filter(|f| f.is_file())
        .map(|f| sh(&f))
        .collect()
}

/// A session id for a printed step: `id` quoted for the shell (as remedy
/// commands quote it), or the placeholder `<session id>` when there is none.
pub fn step_id(id: Option<&str>) -> String {
    id.map_or_else(
        || "<session id>".to_string(),
        |id| shell_words::quote(id).into_owned(),
    )
}

/// Permission bits for a copy of `src`: the original's, plus owner read and
/// write (the copy is for the agent to use even when the original is read-only).
pub fn copy_mode(src: &Path) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(src)
            .map(|m| (m.permissions().mode() | 0o600) & 0o777)
            .unwrap_or(0o644)
    }
    #[cfg(not(unix))]
    {
        let _ = src;
        0o644
    }
}

/// Copies the first `len` bytes of `src` into `out` (the staged file
/// `shown`) as they are: the copy of a file no edit changes (or of a
/// database snapshot, edited after). `std::io::copy`
/// of a `Take<File>` into a `File` is the kernel's file copy on Linux
/// (`copy_file_range`), not a read and a write of every line. Errors name
/// the file.
pub fn copy_unchanged(src: &Path, len: u64, out: &mut std::fs::File, shown: &Path) -> Result<()> {
    use anyhow::Context;
    use std::io::Read;
    let f =
        crate::fsx::open_regular(src).with_context(|| format!("{}: cannot open", src.display()))?;
    let copied = std::io::copy(&mut f.take(len), out).with_context(|| {
        format!(
            "{}: cannot copy into {} (is the disk full?)",
            src.display(),
            shown.display()
        )
    })?;
    if copied != len {
        anyhow::bail!(
            "{}: {copied} bytes copied where {len} were expected (the file was cut meanwhile)",
            src.display()
        );
    }
    Ok(())
}

/// The current size of `path` (bytes), for a writer that runs without a load.
pub fn complete_len(path: &Path) -> Result<u64> {
    Ok(crate::fsx::ensure_regular(path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        .len())
}

/// Offset just after the last newline within the first `len` bytes of
/// `path` (0 when there is none).
fn last_newline_end(path: &Path, len: u64) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::fsx::open_regular(path)?;
    let mut end = len;
    let mut buf = vec![0u8; 1 << 16];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// For a line-oriented file read up to `len` bytes (its size when opened):
/// when the agent appended to it meanwhile and the read ended inside a line,
/// that line is the agent's write in progress, not a torn tail. The
/// snapshot is cut at the last complete line (the torn-tail problem of file
/// `file` and the line's bytes are taken out of `s`). Returns the snapshot's
/// length in bytes, which the copy is written from.
pub fn settle_growing_tail(s: &mut Session, path: &Path, file: usize, len: u64) -> u64 {
    let grew = std::fs::metadata(path).is_ok_and(|m| m.len() > len);
    let torn = s
        .problems
        .iter()
        .rposition(|p| p.kind == crate::model::ProblemKind::TornTail && p.file == Some(file));
    match (grew, torn) {
        (true, Some(i)) => match last_newline_end(path, len) {
            Ok(cut) => {
                s.problems.remove(i);
                s.other_bytes = s.other_bytes.saturating_sub(len - cut);
                s.note(
                    format!(
                        "{} was being written while it was read: its last {} byte(s), an unfinished line, are left out of this snapshot",
                        path.display(),
                        len - cut
                    ),
                    [("unfinished_tail_bytes", len - cut)],
                );
                cut
            }
            Err(_) => len,
        },
        _ => len,
    }
}

/// Result of walking the input paths.
pub struct Discovery {
    pub stores: Vec<Box<dyn Store>>,
    /// Paths that looked like stores but could not be opened (errors: the
    /// exit code becomes 2), and paths skipped on purpose (warnings).
    pub problems: crate::error::Problems,
}

/// What opening a path gives: a store, `None` when the path is not of the
/// format, or why it could not be read.
pub type Opened = Result<Option<Box<dyn Store>>>;

/// Largest first line a [`Probe`] reads (bytes): a Codex `session_meta`
/// line carries the base instructions (tens of KB).
pub const PROBE_LINE_BYTES: u64 = 16 << 20;

/// A file the formats that want it try in turn while stores are found: its
/// first line is read once, when a format first asks, and shared (a
/// `.jsonl` is sniffed by the Codex and then the Claude Code format: two
/// opens and reads per file, 4,720 of them in the many-sessions benchmark).
pub struct Probe<'a> {
    path: &'a Path,
    first: std::cell::OnceCell<std::result::Result<FirstLine, String>>,
}

/// The first line of a probed file, its line ending left on.
pub struct FirstLine {
    pub bytes: Vec<u8>,
    /// The whole line was read: it ends with a line feed, or the file ends
    /// within [`PROBE_LINE_BYTES`] (then the file holds this one line).
    pub complete: bool,
}

impl<'a> Probe<'a> {
    pub fn new(path: &'a Path) -> Probe<'a> {
        Probe {
            path,
            first: std::cell::OnceCell::new(),
        }
    }

    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// The file's first line, at most [`PROBE_LINE_BYTES`].
    ///
    /// # Errors
    /// The file cannot be opened as a regular file or read ("cannot open",
    /// "cannot read", naming the path); the same error for every caller.
    pub fn first_line(&self) -> Result<&FirstLine> {
        self.first
            .get_or_init(|| read_first_line(self.path))
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e}"))
    }
}

fn read_first_line(p: &Path) -> std::result::Result<FirstLine, String> {
    use std::io::{BufRead, Read};
    let f =
        crate::fsx::open_regular(p).map_err(|e| format!("{}: cannot open: {e}", p.display()))?;
    let mut r = std::io::BufReader::new(f.take(PROBE_LINE_BYTES));
    let mut bytes = Vec::new();
    r.read_until(b'\n', &mut bytes)
        .map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
    let complete = bytes.ends_with(b"\n") || (bytes.len() as u64) < PROBE_LINE_BYTES;
    Ok(FirstLine { bytes, complete })
}

/// One storage format: how to recognise its stores and where the agent
/// keeps them. A new agent is one module implementing this trait and one
/// entry in [`FORMATS`].
pub trait Format: Sync {
    /// Name used in messages (`opencode.db, kilo.db, legacy opencode storage/`).
    fn name(&self) -> &'static str;
    /// Whether a file met while walking folders is worth opening.
    fn wants_file(&self, _p: &Path) -> bool {
        false
    }
    /// Opens a file as a store: `Ok(None)` when it is not of this format.
    fn open_file(&self, _p: &Path) -> Opened {
        Ok(None)
    }
    /// [`Format::open_file`] of the file `probe` reads: formats that sniff
    /// a file's first line take it from the probe, which reads it once for
    /// all of them.
    fn open_probed(&self, probe: &Probe<'_>) -> Opened {
        self.open_file(probe.path())
    }
    /// Opens a folder as a store: `Ok(None)` when it is not one. A folder
    /// that is a store is not searched further.
    fn open_dir(&self, _p: &Path) -> Opened {
        Ok(None)
    }
    /// Why the file `p`, named as this agent names its stores
    /// (`state.db`, `rollout-*.jsonl`...), is not one, once every format
    /// declined to open it: `None` for a file of any other name, which is
    /// left alone while walking (a folder holds many files that are no
    /// store), where a file of the agent's own name is reported with what
    /// was expected ([`NotMine`]).
    fn not_mine(&self, _p: &Path) -> Option<NotMine> {
        None
    }
    /// Where the agent keeps its stores on this machine (environment
    /// variables and home folder; paths that do not exist are dropped by
    /// the caller).
    fn default_paths(&self) -> Vec<PathBuf>;
    /// Where [`Format::default_paths`] looks, in words, for the error when
    /// no PATH is given and none exists (`Codex sessions/ and
    /// archived_sessions/ under $CODEX_HOME or $HOME/.codex`).
    fn default_places(&self) -> &'static str;
}

/// A file named as an agent names its stores that is not one
/// ([`Format::not_mine`]).
#[derive(Debug)]
pub struct NotMine {
    /// What is wrong and what was expected.
    pub why: String,
    /// The name is one other programs use too (`state.db`, `session.db`):
    /// met while walking a folder, the file is reported as a warning (it may
    /// be another program's), not as an input that could not be read.
    /// Given by name, it is an error either way.
    pub common_name: bool,
}

impl std::fmt::Display for NotMine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for NotMine {}

/// Every supported format, tried in this order (a Codex rollout is
/// recognised by content before a Claude Code transcript).
pub static FORMATS: &[&dyn Format] = &[
    &opencode::Opencode,
    &hermes::Hermes,
    &docker_agent::DockerAgent,
    &codex::Codex,
    &claude::Claude,
];

/// Opens a file with the formats that want it; a file given by name that
/// none of them opens is tried with every other format (a hermes-agent
/// `state.db` copied to another name is recognised by its tables; when
/// nothing opens it, the error says why).
fn open_any_file(p: &Path, walking: bool) -> Result<Option<Box<dyn Store>>> {
    let probe = Probe::new(p);
    for f in FORMATS.iter().filter(|f| f.wants_file(p)) {
        if let Some(s) = f.open_probed(&probe)? {
            return Ok(Some(s));
        }
    }
    if walking {
        return not_mine(p);
    }
    // Formats that do not want the file only say why when none wants it.
    let strict = !FORMATS.iter().any(|f| f.wants_file(p));
    for f in FORMATS.iter().filter(|f| !f.wants_file(p)) {
        match f.open_file(p) {
            Ok(Some(s)) => return Ok(Some(s)),
            Err(e) if strict => return Err(e),
            Ok(None) | Err(_) => {}
        }
    }
    not_mine(p)
}

/// `Err` naming what was expected when `p` bears an agent's own store name
/// ([`Format::not_mine`]), else `Ok(None)`.
fn not_mine(p: &Path) -> Result<Option<Box<dyn Store>>> {
    match FORMATS.iter().find_map(|f| f.not_mine(p)) {
        Some(n) => Err(anyhow::Error::new(n)),
        None => Ok(None),
    }
}

fn open_any_dir(p: &Path) -> Result<Option<Box<dyn Store>>> {
    for f in FORMATS {
        if let Some(s) = f.open_dir(p)? {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

/// A store's identity for de-duplication ([`store_key`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum StoreKey {
    /// The device and inode of the file or folder it names.
    Inode(u64, u64),
    /// Its canonical path, where the file system gives no inode.
    Path(PathBuf),
}

/// The store's identity for de-duplication: a file or folder reached
/// twice (through symbolic links, or a hard link) is one store. The
/// device and inode of the path (one `stat`, symlinks followed) where it
/// has one; else the canonical path. `realpath` asked once per path
/// component: 37,300 `readlink` calls of the 139,000 system calls that
/// discovering the 5,901 files of the many-sessions benchmark made.
fn store_key(s: &dyn Store) -> StoreKey {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(md) = std::fs::metadata(s.path()) {
            if md.ino() != 0 {
                return StoreKey::Inode(md.dev(), md.ino());
            }
        }
    }
    StoreKey::Path(
        s.path()
            .canonicalize()
            .unwrap_or_else(|_| s.path().to_path_buf()),
    )
}

/// What one entry of a walk gives, in walk order.
enum Found {
    Store(Box<dyn Store>),
    /// A regular file not opened yet.
    File(PathBuf),
    Error(crate::error::InputError),
    Warn(crate::error::InputError),
    Nothing,
}

/// Finds every store in `paths`: a store file, a data dir, a legacy `storage/`
/// dir, or any folder containing these (searched with walkdir, following
/// symbolic links once, with loop detection). Only regular files are opened:
/// a FIFO, socket or device met while walking is skipped with a warning
/// naming it; given by name, it is an error. Paths that hold nothing are
/// errors.
pub fn discover(paths: &[PathBuf]) -> Discovery {
    use crate::error::InputError;
    let mut d = Discovery {
        stores: Vec::new(),
        problems: Default::default(),
    };
    let mut seen: rustc_hash::FxHashSet<StoreKey> = rustc_hash::FxHashSet::default();
    let names = FORMATS
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ");
    let mut push = |d: &mut Discovery, s: Box<dyn Store>, key: StoreKey| {
        if seen.insert(key) {
            for w in s.tree_warnings() {
                d.problems.warn(w);
            }
            d.stores.push(s);
        }
    };
    for path in paths {
        // Whether `path` holds a store, read from an earlier path or not
        // (the same folder given twice, or a folder and a store inside it:
        // the store is read once, and neither path is "without a store").
        let mut holds_store = false;
        let errors_before = d.problems.errors.len();
        let md = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    if std::fs::symlink_metadata(path).is_ok() {
                        "a symbolic link to nothing (no such file or directory)".to_string()
                    } else {
                        "no such file or directory".to_string()
                    }
                } else {
                    format!("cannot read: {e}")
                };
                d.problems.error(InputError::new(path, why));
                continue;
            }
        };
        if !md.is_dir() && !md.is_file() {
            d.problems.error(InputError::new(
                path,
                format!(
                    "{}, expected a session file or a folder",
                    crate::fsx::type_name(&md.file_type())
                ),
            ));
            continue;
        }
        if md.is_file() {
            match open_any_file(path, false) {
                Ok(Some(s)) => {
                    let key = store_key(s.as_ref());
                    push(&mut d, s, key)
                }
                Ok(None) => d.problems.error(InputError::new(
                    path,
                    format!("not a session store of a supported agent ({names})"),
                )),
                Err(e) => d.problems.error(InputError::from_anyhow(path, &e)),
            }
            continue;
        }
        // The walk itself is sequential (a folder that opens as a store is
        // not descended into); files are opened afterwards on every worker
        // (most of discovery is reading each file's first lines), and what
        // they give is taken in walk order.
        let mut found: Vec<Found> = Vec::new();
        let mut walker = walkdir::WalkDir::new(path)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walker.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let at = e.path().unwrap_or(path).to_path_buf();
                    found.push(if let Some(anc) = e.loop_ancestor() {
                        Found::Warn(InputError::new(
                            &at,
                            format!(
                                "a symbolic link loop back to {}; not followed",
                                anc.display()
                            ),
                        ))
                    } else if e
                        .io_error()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                    {
                        Found::Warn(InputError::new(&at, "a symbolic link to nothing; skipped"))
                    } else if std::fs::symlink_metadata(&at)
                        .is_ok_and(|m| m.file_type().is_symlink())
                    {
                        // A link to itself or around a loop of links: as a
                        // link to nothing, a warning while walking.
                        let why = e
                            .io_error()
                            .map(|io| io.to_string())
                            .unwrap_or_else(|| e.to_string());
                        Found::Warn(InputError::new(
                            &at,
                            format!("a symbolic link that cannot be followed ({why}); skipped"),
                        ))
                    } else {
                        let why = e
                            .io_error()
                            .map(|io| format!("cannot read: {io}"))
                            .unwrap_or_else(|| e.to_string());
                        Found::Error(InputError::new(&at, why))
                    });
                    continue;
                }
            };
            let p = entry.path();
            let ft = entry.file_type();
            if ft.is_dir() {
                match open_any_dir(p) {
                    Ok(Some(s)) => {
                        found.push(Found::Store(s));
                        walker.skip_current_dir();
                    }
                    Ok(None) => {}
                    Err(e) => {
                        found.push(Found::Error(InputError::from_anyhow(p, &e)));
                        walker.skip_current_dir();
                    }
                }
            } else if ft.is_file() {
                found.push(Found::File(p.to_path_buf()));
            } else if FORMATS.iter().any(|f| f.wants_file(p)) {
                found.push(Found::Warn(InputError::new(
                    p,
                    format!(
                        "{}, not a regular file; skipped",
                        crate::fsx::type_name(&ft)
                    ),
                )));
            }
        }
        use rayon::prelude::*;
        let opened: Vec<Found> = found
            .into_par_iter()
            .map(|f| match f {
                Found::File(p) => match open_any_file(&p, true) {
                    Ok(Some(s)) => Found::Store(s),
                    Ok(None) => Found::Nothing,
                    Err(e) => match e.downcast_ref::<NotMine>() {
                        Some(n) if n.common_name => {
                            Found::Warn(InputError::new(&p, format!("{}; skipped", n.why)))
                        }
                        _ => Found::Error(InputError::from_anyhow(&p, &e)),
                    },
                },
                other => other,
            })
            .collect();
        let keys: Vec<Option<StoreKey>> = opened
            .par_iter()
            .map(|f| match f {
                Found::Store(s) => Some(store_key(s.as_ref())),
                _ => None,
            })
            .collect();
        for (f, key) in opened.into_iter().zip(keys) {
            match f {
                Found::Store(s) => {
                    let key = key.unwrap_or_else(|| StoreKey::Path(s.path().to_path_buf()));
                    holds_store = true;
                    push(&mut d, s, key)
                }
                Found::Error(e) => d.problems.error(e),
                Found::Warn(e) => d.problems.warn(e),
                Found::File(_) | Found::Nothing => {}
            }
        }
        if !holds_store && d.problems.errors.len() == errors_before {
            d.problems.error(InputError::new(
                path,
                format!("no session store found ({names})"),
            ));
        }
    }
    d
}

/// `$HOME` when set and not empty.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The default data dirs of every supported agent that exist on this
/// machine, in [`FORMATS`] order, each once (see each format's
/// [`Format::default_paths`]).
pub fn default_paths() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for f in FORMATS {
        for p in f.default_paths() {
            if p.is_dir() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Where every format looks for its data dirs ([`Format::default_places`]),
/// in [`FORMATS`] order: what the error says when none exists.
pub fn default_places() -> String {
    FORMATS
        .iter()
        .map(|f| f.default_places())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The side files a store of one file at `path` may keep beside it, of any
/// format (SQLite's `-wal`, `-shm`, `-journal`): what the output guard
/// protects for a file given as input even when no format could open it.
pub fn side_files_of(path: &Path) -> Vec<PathBuf> {
    sqlite::side_files(path)
}

/// The folder holding `path` (`.` for a bare file name): where a one-file
/// store's copy path is taken relative to.
pub(crate) fn folder_of(path: &std::path::Path) -> std::path::PathBuf {
    path.parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| std::path::PathBuf::from("."))
}

/// The file name of `path` as a relative path, else `default`.
pub(crate) fn file_name_or(path: &std::path::Path, default: &str) -> std::path::PathBuf {
    path.file_name()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(default))
}

/// Files smaller than this (bytes) get no estimate from [`estimate_lines`]:
/// their lists grow cheaply, and the extra reads would cost more than they
/// save.
const RESERVE_FROM_BYTES: u64 = 8 << 20;

/// Places [`estimate_lines`] samples a large file at.
const LINE_SAMPLES: u64 = 8;

/// An estimate of the line feeds in the first `len` bytes of `f`, on the
/// high side (0 for a file under [`RESERVE_FROM_BYTES`]): the line feeds
/// of [`LINE_SAMPLES`] reads of 1 MiB spread evenly over the file, scaled
/// to `len`, plus a quarter. The JSONL loaders reserve one message per line
/// with it, so a session of millions of lines is not copied each time its
/// list doubles; room reserved and never filled is never touched, so it
/// costs address space, not resident memory. Sampling reads 8 MiB of a
/// 1 GB file where counting read all of it (a tenth of `check`'s time).
/// The file position is left alone (reads at explicit offsets).
///
/// # Errors
/// A read error of `f`.
pub(crate) fn estimate_lines(f: &std::fs::File, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    if len < RESERVE_FROM_BYTES {
        return Ok(0);
    }
    let mut buf = vec![0u8; 1 << 20];
    let (mut read, mut feeds) = (0u64, 0u64);
    let step = len / LINE_SAMPLES;
    for k in 0..LINE_SAMPLES {
        let at = k * step;
        let want = usize::try_from(len - at).map_or(buf.len(), |r| r.min(buf.len()));
        let got = f.read_at(&mut buf[..want], at)?;
        feeds += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
        read += got as u64;
    }
    if read == 0 {
        return Ok(0);
    }
    let scaled = u128::from(feeds) * u128::from(len) / u128::from(read);
    Ok(u64::try_from(scaled + scaled / 4 + 16).unwrap_or(u64::MAX))
}

/// The deepest nesting serde_json's tree reader accepts (its recursion limit
/// is 128, counted from the top object): a line nested deeper cannot be read
/// into a tree, so it could not be edited in a copy; it is `unreadable` (fuzz
/// input claude_transcript-3). Shared by the JSONL formats, whose writers
/// edit lines through trees.
pub(crate) const MAX_DEPTH: usize = 127;

/// `body` as text when it is all UTF-8, checked by `simdutf8` (vectorized,
/// several times std's check on mixed text). A line checked whole is then
/// parsed from `&str` (serde_json's `from_str`), which checks no string
/// again: parsed from bytes, every string kept and every raw value taken
/// was checked on its own (5% of `check`'s CPU on the many-sessions
/// benchmark, most of a line's bytes more than once). Same answers: on
/// UTF-8 text both readers parse alike.
pub(crate) fn utf8(body: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(body).ok()
}

/// `T` read from one line: from text when [`utf8`] takes it (no string
/// checked twice), else from its bytes, as before, so a line that is not
/// UTF-8 is accepted or refused exactly as serde_json's byte reader does.
pub(crate) fn from_line<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    match utf8(body) {
        Some(text) => serde_json::from_str(text),
        None => serde_json::from_slice(body),
    }
}

/// A JSON value in words, for a message saying what was found where
/// something else was expected: "the number 5", "the string \"ab\"" (its
/// first 40 characters), "the boolean true", "null", "an object", "an array".
pub(crate) fn json_found(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(t) => {
            let shown: String = t.chars().take(40).collect();
            let more = if shown.len() < t.len() { "..." } else { "" };
            format!("the string {}{more}", Value::String(shown))
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// A field a stored record must hold to be read, for the error that says
/// why it was not ([`Required::error`]).
pub(crate) struct Required {
    /// Its path of object keys (`["time", "created"]`).
    pub path: &'static [&'static str],
    /// Its kind, for a missing one: "string", "number".
    pub kind: &'static str,
    /// What it must be, in words: "a string".
    pub expected: &'static str,
    /// Where it sits, after its name (" in the part"), or "".
    pub within: &'static str,
}

impl Required {
    /// Why the field is not read in `v`: "missing string field `role`" when
    /// it is absent, else what was expected and what was found ("`role`:
    /// expected a string, found the number 5"; "`time`: expected an
    /// object, found null" for a record whose `time` cannot hold
    /// `time.created`). A field of the wrong type was reported missing.
    pub(crate) fn error(&self, v: &serde_json::Value) -> String {
        let mut cur = v;
        for (k, key) in self.path.iter().enumerate() {
            let name = format!("`{}`{}", self.path[..=k].join("."), self.within);
            if !cur.is_object() {
                let found = json_found(cur);
                if k == 0 {
                    return format!("expected a JSON object, found {found}");
                }
                let outer = format!("`{}`{}", self.path[..k].join("."), self.within);
                return format!("{outer}: expected an object, found {found}");
            }
            match cur.get(key) {
                Some(next) if k + 1 < self.path.len() => cur = next,
                Some(found) => {
                    return format!(
                        "{name}: expected {}, found {}",
                        self.expected,
                        json_found(found)
                    )
                }
                None => break,
            }
        }
        format!(
            "missing {} field `{}`{}",
            self.kind,
            self.path.join("."),
            self.within
        )
    }
}

/// The UTF-8 byte order mark, which JSON does not allow (RFC 8259, 8.1).
pub(crate) const UTF8_BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// What a JSON text that starts with [`UTF8_BOM`] is told (`what`: "the
/// line", "the file"): an editor that saved it "as UTF-8 with BOM" gives
/// no other sign, and serde_json's "expected value at column 1" names none.
pub(crate) fn bom_error(what: &str) -> String {
    format!("{what} starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow")
}

/// What serde_json found wrong in line `n` (`body`) of a JSONL file, for a
/// finding that names that line; `agent` names the agent and how it reads a
/// line, for a line it cannot read either ("Codex (serde_json)").
///
/// serde_json reads the line alone, so its own position ("at line 1
/// column 200") always says line 1, which read beside our "line 6" named
/// another line. The position is said as a column of line `n` ("at column
/// 200 of line 6"; serde_json counts bytes from 1). A line that starts with
/// a UTF-8 byte order mark says so ([`bom_error`]): the agent's reader
/// refuses it too, so the line is not read past it, as the agent does not.
/// The one place the JSONL readers (Claude Code, Codex) word a JSON error
/// of a line.
pub(crate) fn line_json_error(e: &serde_json::Error, body: &[u8], n: u64, agent: &str) -> String {
    if body.trim_ascii_start().starts_with(UTF8_BOM) {
        return format!(
            "{}: {agent} cannot read the line either and skips it",
            bom_error("the line")
        );
    }
    let text = e.to_string();
    if e.line() == 0 {
        return text;
    }
    let at = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&at) {
        Some(what) if e.line() == 1 => format!("{what} at column {} of line {n}", e.column()),
        // Not within one line (the reader never gives one a line feed):
        // serde_json's words as they are.
        _ => text,
    }
}

/// Whether `body` may hold a surrogate escape (`\uD800` to `\uDFFF`, any
/// case): serde_json refuses a lone one in a tree, but a typed reader
/// skips the strings it does not keep without decoding them, so a text
/// that holds one goes to the tree reader (a valid pair too: it costs
/// time, never a wrong answer).
pub(crate) fn may_hold_surrogate_escape(body: &[u8]) -> bool {
    // One searcher for the run: building it per line was 0.7% of a huge
    // Codex rollout's `check`.
    static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    ESCAPE.find_iter(body).any(|i| {
        matches!(body.get(i + 2), Some(b'd' | b'D'))
            && matches!(
                body.get(i + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

/// Whether `body` nests arrays and objects deeper than [`MAX_DEPTH`]
/// (brackets inside strings do not count). Lines with few brackets are
/// answered by a count alone.
///
/// The loaders ask it through [`Prescan::too_deep`] with the number check.
#[cfg(test)]
pub(crate) fn too_deep(body: &[u8]) -> bool {
    prescan(body).too_deep(body)
}

/// What one vectorized pass over a line tells the two checks a typed read
/// needs before it ([`Prescan::too_deep`], [`Prescan::number_out_of_range`]):
/// whether a number in it may overflow ([`may_overflow_counting`]) and how many
/// opening brackets (`[`, `{`) it holds, strings included. The JSONL loaders
/// ask both of every line; counting the brackets in the number check's pass
/// replaces a second search of the line (memchr2 stopping at every bracket:
/// 5.6% of `check`'s samples on the many-sessions benchmark).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prescan {
    /// A number may overflow: the exact scan decides.
    overflow: bool,
    /// Opening brackets in the line, or `None` when the pass stopped early
    /// (a number that may overflow) before counting them all.
    opens: Option<usize>,
}

/// [`Prescan`] of `body`.
pub(crate) fn prescan(body: &[u8]) -> Prescan {
    let mut opens = 0usize;
    let overflow = may_overflow_counting(body, &mut opens);
    Prescan {
        overflow,
        opens: (!overflow).then_some(opens),
    }
}

impl Prescan {
    /// [`too_deep`] of the line this was taken of: at most [`MAX_DEPTH`]
    /// opening brackets anywhere (most lines) answers it; otherwise the
    /// brackets outside strings are walked.
    pub(crate) fn too_deep(&self, body: &[u8]) -> bool {
        if self.opens.is_some_and(|n| n <= MAX_DEPTH) {
            return false;
        }
        deep_by_blocks(body).unwrap_or_else(|| deep_walk(body))
    }

    /// [`number_out_of_range`] of the line this was taken of.
    pub(crate) fn number_out_of_range(&self, body: &[u8]) -> bool {
        self.overflow && out_of_range_scan(body)
    }
}

/// [`too_deep`] by walking `body` byte by byte (strings skipped by
/// [`skip_string`]): the definition [`deep_by_blocks`] is held to.
fn deep_walk(body: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        i += 1;
        match b {
            b'"' => match skip_string(body, i) {
                Some(next) => i = next,
                None => return false, // an unterminated string: nothing after it counts
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Bit masks of one 64-byte block: bit `i` set when `block[i]` is a
/// quote, a backslash, an opening bracket (`[` or `{`), a closing one.
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

/// [`Masks`] of `block`, 16 bytes a step.
#[cfg(target_arch = "x86_64")]
fn masks(block: &[u8; 64]) -> Masks {
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
    unsafe { masks_sse2(block) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn masks_sse2(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm_set1_epi8(b as i8);
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        open: 0,
        close: 0,
    };
    for (k, c) in block.chunks_exact(16).enumerate() {
        // SAFETY: `c` is 16 readable bytes; the load has no alignment
        // requirement.
        let v = unsafe { _mm_loadu_si128(c.as_ptr().cast()) };
        let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
        m.quote |= bits(_mm_cmpeq_epi8(v, splat(b'"')));
        m.backslash |= bits(_mm_cmpeq_epi8(v, splat(b'\\')));
        // `[` and `{` differ only in bit 0x20, as do `]` and `}`.
        let folded = _mm_or_si128(v, splat(0x20));
        m.open |= bits(_mm_cmpeq_epi8(folded, splat(b'{')));
        m.close |= bits(_mm_cmpeq_epi8(folded, splat(b'}')));
    }
    m
}

/// Other targets: the masks bit by bit.
#[cfg(not(target_arch = "x86_64"))]
fn masks(block: &[u8; 64]) -> Masks {
    let mask = |want: &dyn Fn(u8) -> bool| {
        block
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &c)| m | (u64::from(want(c)) << i))
    };
    Masks {
        quote: mask(&|c| c == b'"'),
        backslash: mask(&|c| c == b'\\'),
        open: mask(&|c| matches!(c, b'[' | b'{')),
        close: mask(&|c| matches!(c, b']' | b'}')),
    }
}

/// [`deep_walk`]'s answer taken 64 bytes at a time, or `None` when `body`
/// holds a backslash outside its strings (not JSON), which the walk reads
/// differently. Per block: where quotes, backslashes and brackets are (bit
/// masks, [`masks`]), which bytes a backslash escapes (each
/// run of backslashes escapes the byte after it when its length is odd),
/// which bytes are inside strings (a prefix XOR of the unescaped quotes:
/// from an opening quote up to its closing one), and then the brackets
/// outside strings. A block whose opening brackets cannot take the depth
/// past [`MAX_DEPTH`] and whose closing ones cannot take it below 0 is
/// counted whole; others are walked bracket by bracket. Long lines of code
/// and logs, with a bracket or an escape every few bytes, took most of
/// `too_deep`'s time in the walk: `too_deep` was 5.9% of the samples of
/// `check` of a 1 GB Claude Code transcript, and is 2.2% by blocks.
fn deep_by_blocks(body: &[u8]) -> Option<bool> {
    let mut depth = 0usize;
    // The first byte of the next block is escaped (a run of odd length
    // ends the block), and the block ends inside a string (all ones).
    let mut escapes_next = false;
    let mut inside_carry = 0u64;
    let mut blocks = body.chunks_exact(64);
    let mut tail = [0u8; 64]; // zeros: none of the bytes looked for
    let rest = blocks.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    let whole = (&mut blocks).map(|b| <&[u8; 64]>::try_from(b).unwrap_or(&tail));
    for block in whole.chain((!rest.is_empty()).then_some(&tail)) {
        let m = masks(block);
        let mut backslash = m.backslash;
        let mut escaped = u64::from(escapes_next);
        backslash &= !escaped; // an escaped backslash escapes nothing
        escapes_next = false;
        let mut runs = backslash;
        while runs != 0 {
            let start = runs.trailing_zeros();
            let len = (!(runs >> start)).trailing_zeros();
            let end = start + len; // the byte after the run
            if len % 2 == 1 {
                if end < 64 {
                    escaped |= 1 << end;
                } else {
                    escapes_next = true;
                }
            }
            runs &= if end < 64 { !0u64 << end } else { 0 };
        }
        let quote = m.quote & !escaped;
        let mut inside = quote;
        for shift in [1, 2, 4, 8, 16, 32] {
            inside ^= inside << shift;
        }
        inside ^= inside_carry;
        inside_carry = if inside >> 63 == 1 { !0 } else { 0 };
        if backslash & !inside != 0 {
            return None;
        }
        let open = m.open & !inside;
        let close = m.close & !inside;
        let (opens, closes) = (open.count_ones() as usize, close.count_ones() as usize);
        if depth + opens <= MAX_DEPTH && closes <= depth {
            depth = depth + opens - closes;
            continue;
        }
        let mut brackets = open | close;
        while brackets != 0 {
            let at = brackets.trailing_zeros();
            if open >> at & 1 == 1 {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(true);
                }
            } else {
                depth = depth.saturating_sub(1);
            }
            brackets &= brackets - 1;
        }
    }
    Some(false)
}

/// Whether `body` (a JSON text) holds a number outside its strings that the
/// JSON tree reader refuses as out of range (its value overflows an `f64`,
/// such as `1e400`). The typed readers skip numbers they do not keep
/// without reading them, so a line they accept must pass this too, or its
/// copy's writer (which reads the line as a tree) could not edit it.
///
/// Exact for a JSON text. A text that is not JSON (which every reader
/// refuses anyway) may hide such a number after a byte no JSON number
/// follows (`{"a":x1e400}`): it is then refused for its syntax instead.
/// The loaders ask it through [`Prescan::number_out_of_range`] with the
/// nesting check.
#[cfg(test)]
pub(crate) fn number_out_of_range(body: &[u8]) -> bool {
    prescan(body).number_out_of_range(body)
}

/// Bytes a JSON number is made of: what [`out_of_range_scan`] takes into a
/// number token.
fn number_byte(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
}

/// Whole 16-byte blocks of [`number_byte`]s in a row that [`may_overflow_counting`]
/// takes for a long number: [`out_of_range_scan`] parses a token without
/// an exponent only when it is longer than 300 bytes. Such a run holds at
/// least 286 bytes before the last 15 (which are looked at one by one,
/// [`exponent_may_overflow`] taking any run over 300 bytes), so at least
/// 16 whole blocks.
const LONG_RUN_BLOCKS: usize = 16;

/// Whether the run of [`number_byte`]s holding `body[e]` (an `e` or `E`)
/// is a number [`out_of_range_scan`] would refuse if it stood outside a
/// string: its token (from its first `-` or digit) holds this exponent
/// and overflows an `f64`, and the run follows what a JSON number follows
/// (`:`, `,` or `[`, maybe after whitespace, or nothing). Hex ids and
/// hashes (`2e498115`) hold such exponents but follow a letter or a quote.
fn exponent_may_overflow(body: &[u8], e: usize) -> bool {
    let before = body.get(..e).unwrap_or_default();
    let start = before
        .iter()
        .rposition(|&b| !number_byte(b))
        .map_or(0, |i| i + 1);
    let end = body
        .get(e..)
        .and_then(|r| r.iter().position(|&b| !number_byte(b)))
        .map_or(body.len(), |i| e + i);
    let follows_json = before
        .get(..start)
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_none_or(|b| matches!(b, b':' | b',' | b'['));
    let token = body.get(start..end).unwrap_or_default();
    let token = match token.iter().position(|b| matches!(b, b'-' | b'0'..=b'9')) {
        Some(i) if start + i < e => token.get(i..).unwrap_or_default(),
        _ => return false,
    };
    follows_json && token_overflows(token)
}

/// Whether [`out_of_range_scan`] refuses number token `token`.
fn token_overflows(token: &[u8]) -> bool {
    // Only an exponent or about 309 digits can overflow.
    (token.len() > 300 || token.iter().any(|c| matches!(c, b'e' | b'E')))
        && std::str::from_utf8(token)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(f64::is_infinite)
}

/// A necessary condition for [`out_of_range_scan`] on a JSON text, checked
/// without telling strings apart, 32 bytes at a time where the CPU has
/// AVX2, else 16 (SSE2, which every x86-64 CPU has): a long run of
/// [`number_byte`]s, or an `e`/`E` between a digit or `.` and a digit or
/// `+` whose [`exponent_may_overflow`]. Lines that hold neither (nearly
/// all: English text has few `e`s before digits; ids and hashes follow
/// letters or quotes) skip the exact scan, which walks every string. In
/// the same pass, adds the opening brackets of `body` to `opens` (all of
/// them when the answer is false; see [`Prescan`]).
#[cfg(target_arch = "x86_64")]
fn may_overflow_counting(body: &[u8], opens: &mut usize) -> bool {
    may_overflow_on(body, avx2_usable(), opens)
}

/// Whether this CPU runs [`may_overflow_avx2`]: AVX2 and popcnt (every CPU
/// with AVX2 has popcnt; asked for all the same).
#[cfg(target_arch = "x86_64")]
fn avx2_usable() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
}

/// [`may_overflow_counting`] with AVX2 for the whole 32-byte blocks and SSE2 for
/// the rest (`avx2`: the caller checked that the CPU has AVX2 and popcnt),
/// or with SSE2 only. Either answer is a necessary condition; they may
/// differ where the exact scan finds nothing. Adds the opening brackets
/// (`[`, `{`) of `body` to `opens`: all of them when the answer is false,
/// those before where it stopped when true.
#[cfg(target_arch = "x86_64")]
fn may_overflow_on(body: &[u8], avx2: bool, opens: &mut usize) -> bool {
    let from = if avx2 {
        // SAFETY: the caller checked that the CPU has AVX2 and popcnt.
        match unsafe { may_overflow_avx2(body, opens) } {
            Some(tail) => tail,
            None => return true,
        }
    } else {
        0
    };
    // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64 CPU has it.
    unsafe { may_overflow_sse2(body, from, opens) }
}

/// Whole 32-byte blocks of [`number_byte`]s in a row that
/// [`may_overflow_avx2`] takes for a long number. A run over 300 bytes
/// holds at least 8 (up to 31 bytes are lost before the first); one that
/// ends in the 31 bytes or fewer left to [`may_overflow_sse2`] has at
/// least 270 bytes here, ending with a whole block, so at least 7.
const LONG_RUN_BLOCKS_AVX2: usize = 7;

/// [`may_overflow_counting`] on the whole 32-byte blocks of `body`: `None` when it
/// may overflow, else where the blocks end (the rest is for
/// [`may_overflow_sse2`]); the opening brackets of the blocks passed are
/// added to `opens`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn may_overflow_avx2(body: &[u8], opens: &mut usize) -> Option<usize> {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm256_set1_epi8(b as i8);
    let mut blocks = body.chunks_exact(32);
    let mut long = 0usize;
    for (k, c) in (&mut blocks).enumerate() {
        // SAFETY: `c` is 32 readable bytes; the load has no alignment
        // requirement.
        let v = unsafe { _mm256_loadu_si256(c.as_ptr().cast()) };
        // `e`/`E` and `[`/`{` each differ only in bit 0x20.
        let folded = _mm256_or_si256(v, splat(0x20));
        let e = _mm256_cmpeq_epi8(folded, splat(b'e'));
        let open = _mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, splat(b'{')));
        *opens += (open as u32).count_ones() as usize;
        let d = _mm256_sub_epi8(v, splat(b'0'));
        let digit = _mm256_cmpeq_epi8(_mm256_min_epu8(d, splat(9)), d);
        let plus = _mm256_cmpeq_epi8(v, splat(b'+'));
        let minus = _mm256_cmpeq_epi8(v, splat(b'-'));
        let dot = _mm256_cmpeq_epi8(v, splat(b'.'));
        let num = _mm256_or_si256(
            _mm256_or_si256(digit, plus),
            _mm256_or_si256(_mm256_or_si256(minus, dot), e),
        );
        if _mm256_movemask_epi8(num) == -1 {
            long += 1;
            if long >= LONG_RUN_BLOCKS_AVX2 {
                return None;
            }
        } else {
            long = 0;
        }
        // As in `may_overflow_sse2`, 32 bytes wide.
        let mask = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32);
        let em = mask(e);
        let next = (mask(_mm256_or_si256(digit, plus)) >> 1) | 1 << 31;
        let prev = (mask(_mm256_or_si256(digit, dot)) << 1) | 1;
        let mut cand = em & next & prev;
        while cand != 0 {
            let at = k * 32 + cand.trailing_zeros() as usize;
            if exponent_may_overflow(body, at) {
                return None;
            }
            cand &= cand - 1;
        }
    }
    Some(body.len() - blocks.remainder().len())
}

/// [`may_overflow_counting`] on x86-64 from byte `from` of `body`, 16 bytes a step;
/// the opening brackets of the bytes passed are added to `opens`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn may_overflow_sse2(body: &[u8], from: usize, opens: &mut usize) -> bool {
    use std::arch::x86_64::*;
    let splat = |b: u8| _mm_set1_epi8(b as i8);
    let mut blocks = body.get(from..).unwrap_or_default().chunks_exact(16);
    let mut long = 0usize;
    for (k, c) in (&mut blocks).enumerate() {
        // SAFETY: `c` is 16 readable bytes; the load has no alignment
        // requirement.
        let v = unsafe { _mm_loadu_si128(c.as_ptr().cast()) };
        let folded = _mm_or_si128(v, splat(0x20));
        let e = _mm_cmpeq_epi8(folded, splat(b'e'));
        let open = _mm_movemask_epi8(_mm_cmpeq_epi8(folded, splat(b'{')));
        *opens += (open as u32).count_ones() as usize;
        let d = _mm_sub_epi8(v, splat(b'0'));
        let digit = _mm_cmpeq_epi8(_mm_min_epu8(d, splat(9)), d);
        let plus = _mm_cmpeq_epi8(v, splat(b'+'));
        let minus = _mm_cmpeq_epi8(v, splat(b'-'));
        let dot = _mm_cmpeq_epi8(v, splat(b'.'));
        let num = _mm_or_si128(
            _mm_or_si128(digit, plus),
            _mm_or_si128(_mm_or_si128(minus, dot), e),
        );
        if _mm_movemask_epi8(num) == 0xFFFF {
            long += 1;
            if long >= LONG_RUN_BLOCKS {
                return true;
            }
        } else {
            long = 0;
        }
        // An `e` after a digit or `.` and before a digit or `+` (the first
        // and the last byte's neighbours are in the blocks around: taken as
        // such). No branch before this mask: blocks of English text hold
        // an `e` at random.
        let em = _mm_movemask_epi8(e) as u32;
        let next = (_mm_movemask_epi8(_mm_or_si128(digit, plus)) as u32 >> 1) | 0x8000;
        let prev = ((_mm_movemask_epi8(_mm_or_si128(digit, dot)) as u32) << 1) | 1;
        let mut cand = em & next & prev;
        while cand != 0 {
            let at = from + k * 16 + cand.trailing_zeros() as usize;
            if exponent_may_overflow(body, at) {
                return true;
            }
            cand &= cand - 1;
        }
    }
    let rest = blocks.remainder();
    let tail = body.len() - rest.len();
    *opens += rest.iter().filter(|&&b| matches!(b, b'[' | b'{')).count();
    (tail..body.len()).any(|i| matches!(body[i], b'e' | b'E') && exponent_may_overflow(body, i))
}

/// Other targets: every line takes the exact number scan; the brackets are
/// counted by a search.
#[cfg(not(target_arch = "x86_64"))]
fn may_overflow_counting(body: &[u8], opens: &mut usize) -> bool {
    *opens += memchr::memchr2_iter(b'[', b'{', body).count();
    true
}

/// [`number_out_of_range`] by walking the text: strings skipped, every
/// number token with an exponent (or longer than 300 bytes) parsed.
fn out_of_range_scan(body: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        i += 1;
        match b {
            b'"' => match skip_string(body, i) {
                Some(next) => i = next,
                None => return false,
            },
            b'-' | b'0'..=b'9' => {
                let start = i - 1;
                while body
                    .get(i)
                    .is_some_and(|c| matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
                {
                    i += 1;
                }
                if token_overflows(body.get(start..i).unwrap_or_default()) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// The largest read of a [`LineReader`], in bytes: 4 MiB. One read is one
/// block of [`read_block`], and each block ends in a wait for both cores,
/// so fewer, larger blocks keep the cores busier: `check` of a 1 GB Claude
/// Code transcript took 1.92-1.99 s with 1 MiB, 1.78-1.87 s with 4 MiB,
/// 1.72-1.76 s with 8 MiB and 1.87-1.92 s with 16 MiB (past the CPU's
/// cache) on the 2-core bench machine; 4 MiB is the size that stays well
/// inside a common last-level cache.
const MAX_READ: u64 = 4 << 20;

/// Reads lines of a JSONL file in place: each line is handed out as a slice
/// of one buffer (its `\n` included; the last line may lack one), not copied
/// into a line buffer as `BufRead::read_until` does. The buffer holds at
/// least the longest line, so memory is one line plus one read, whatever
/// the file's size.
pub(crate) struct LineReader<R> {
    r: R,
    /// The bytes read and not yet dropped (its length is what was read; its
    /// spare capacity is where the next read goes, never zeroed first).
    buf: Vec<u8>,
    /// The next line starts here.
    start: usize,
    eof: bool,
    /// Longest line held ([`max_line_bytes`]).
    max_line: usize,
    /// The line just given was longer than `max_line` (or than memory
    /// allows) and was passed over, not held: its bytes (line ending
    /// included) and whether it ended with `\n`. See
    /// [`LineReader::overlong`].
    overlong: Option<(u64, bool)>,
}

/// Longest line the JSONL readers hold, in bytes: 512 MiB. A longer line is
/// passed over (read and dropped as it streams by) and reported as
/// unreadable, never held: V8, which Claude Code runs on, cannot make a
/// string of more than 2^29 - 24 characters, so such a line is one Claude
/// Code cannot read either; a file that ends in a run of zero bytes without
/// a line feed (what a crash can leave) is such a line, and holding it made
/// memory grow with it until the allocator aborted the run. Copies stream
/// such a line through unchanged ([`copy_rest_of_line`]).
/// `SESSION_DOCTOR_MAX_LINE_BYTES` (an integer, at least 1) sets another
/// limit: a hook for the tests, which cannot afford a 512 MiB line.
pub(crate) fn max_line_bytes() -> usize {
    static MAX: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
        std::env::var("SESSION_DOCTOR_MAX_LINE_BYTES")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_MAX_LINE_BYTES)
    });
    *MAX
}

/// [`max_line_bytes`] when not set otherwise: 512 MiB.
pub(crate) const DEFAULT_MAX_LINE_BYTES: usize = 512 << 20;

/// What a line that [`max_line_bytes`] passed over reads as, in every
/// JSONL format: the error text of its load problem.
pub(crate) fn overlong_line_error(bytes: u64) -> String {
    format!(
        "line of {bytes} bytes, longer than the {} bytes session-doctor reads of one line (Claude Code, on Node, cannot read a line past 512 MiB either): not read",
        max_line_bytes()
    )
}

/// The line ending of `buf`, a line read with its ending: `\r\n`, `\n`,
/// or none (a last line without one). An edited line of a JSONL copy is
/// written with the ending it had: a line written with `\n` alone in a
/// file of `\r\n` lines (a transcript saved on Windows) mixed the two.
pub(crate) fn line_ending(buf: &[u8]) -> &'static str {
    if buf.ends_with(b"\r\n") {
        "\r\n"
    } else if buf.ends_with(b"\n") {
        "\n"
    } else {
        ""
    }
}

/// Reads the next line of `r` into `buf` (cleared first), holding at most
/// [`max_line_bytes`] of it. Answers `None` at the end, else whether the
/// whole line is in `buf` (`Some(true)`: it ends with `\n`, or the input
/// ended); `Some(false)`: `buf` holds its first [`max_line_bytes`] bytes and
/// the rest is still to read ([`copy_rest_of_line`]). Errors: the reader's.
pub(crate) fn read_line_bounded(
    r: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    use std::io::{BufRead, Read};
    buf.clear();
    let max = max_line_bytes();
    let n = r.by_ref().take(max as u64).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(
        buf.ends_with(b"\n") || n < max || r.fill_buf()?.is_empty(),
    ))
}

/// The rest of a line [`read_line_bounded`] did not hold, up to and
/// including its `\n` (or the end of the input): written to `w`, or
/// dropped when `w` is `None`, without holding it. Answers its bytes.
/// Errors: the reader's and the writer's.
pub(crate) fn copy_rest_of_line(
    r: &mut impl std::io::BufRead,
    mut w: Option<&mut dyn std::io::Write>,
) -> std::io::Result<u64> {
    let mut total = 0u64;
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(total);
        }
        let (n, done) = match memchr::memchr(b'\n', avail) {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if let Some(w) = w.as_mut() {
            w.write_all(avail.get(..n).unwrap_or_default())?;
        }
        r.consume(n);
        total += n as u64;
        if done {
            return Ok(total);
        }
    }
}

impl<R: std::io::Read> LineReader<R> {
    /// Reads from `r` in reads of up to `size_hint` bytes (clamped to
    /// 4 KiB..[`MAX_READ`]: the file's size, when known, keeps small files
    /// small).
    pub(crate) fn new(r: R, size_hint: u64) -> LineReader<R> {
        let cap = usize::try_from(size_hint.clamp(4 << 10, MAX_READ)).unwrap_or(1 << 20);
        LineReader {
            r,
            buf: Vec::with_capacity(cap),
            start: 0,
            eof: false,
            max_line: max_line_bytes(),
            overlong: None,
        }
    }

    /// The same reader holding lines of at most `max` bytes (the tests'
    /// [`max_line_bytes`]).
    #[cfg(test)]
    fn with_max_line(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// The line [`LineReader::next_line`] or [`LineReader::next_lines`]
    /// just gave as an empty slice because it was longer than
    /// [`max_line_bytes`] (or than memory allowed): its bytes, line ending
    /// included, and whether it ended with `\n`; `None` for any other line.
    pub(crate) fn overlong(&self) -> Option<(u64, bool)> {
        self.overlong
    }

    /// Passes over the rest of a line of which `held` bytes are in the
    /// buffer (from `start`), reading and dropping it up to its `\n`;
    /// keeps what follows it. Errors: the reader's.
    fn pass_over(&mut self, held: usize) -> std::io::Result<()> {
        use std::io::Read;
        let mut total = held as u64;
        // What the long line took goes back (one read's room is kept).
        self.buf = Vec::with_capacity(MAX_READ as usize);
        self.start = 0;
        let room = self.buf.capacity();
        loop {
            self.buf.clear();
            let n = (&mut self.r).take(room as u64).read_to_end(&mut self.buf)?;
            if n == 0 {
                self.eof = true;
                self.overlong = Some((total, false));
                return Ok(());
            }
            if let Some(i) = memchr::memchr(b'\n', &self.buf) {
                total += i as u64 + 1;
                self.start = i + 1;
                self.overlong = Some((total, true));
                return Ok(());
            }
            total += n as u64;
        }
    }

    /// The next line, `None` at the end; an empty slice for a line longer
    /// than [`max_line_bytes`], passed over ([`LineReader::overlong`]
    /// tells its length). Errors: the reader's.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        use std::io::Read;
        self.overlong = None;
        let mut scan = self.start;
        loop {
            let end = self.buf.len();
            let filled = self.buf.get(scan..).unwrap_or_default();
            if let Some(i) = memchr::memchr(b'\n', filled) {
                let (s, e) = (self.start, scan + i + 1);
                self.start = e;
                return Ok(self.buf.get(s..e));
            }
            if self.eof {
                let s = self.start;
                self.start = end;
                return Ok(self.buf.get(s..).filter(|l| !l.is_empty()));
            }
            // Keep the partial line, move it to the front, make room.
            scan = end - self.start;
            self.buf.copy_within(self.start..end, 0);
            self.buf.truncate(scan);
            self.start = 0;
            if scan >= self.max_line {
                self.pass_over(scan)?;
                return Ok(Some(&[]));
            }
            if self.buf.len() == self.buf.capacity() {
                let more = self.buf.capacity().max(4 << 10);
                // Past the longest line, or more than memory gives: the
                // line is passed over, not an abort.
                let to_max = (self.max_line - scan).max(4 << 10);
                if self.buf.try_reserve(more.min(to_max)).is_err() {
                    self.pass_over(scan)?;
                    return Ok(Some(&[]));
                }
            }
            // Fill the spare capacity (or read to the end): `read_to_end`
            // reads a file into memory it has not zeroed first (zeroing
            // each read's buffer was 1% of reading many small sessions).
            let room = self.buf.capacity() - self.buf.len();
            let n = (&mut self.r).take(room as u64).read_to_end(&mut self.buf)?;
            self.eof = n < room;
        }
    }
}

impl<R: std::io::Read> LineReader<R> {
    /// Gives back the last `n` bytes [`LineReader::next_lines`] gave (whole
    /// lines): the next call gives them again.
    pub(crate) fn unread(&mut self, n: usize) {
        self.start -= n.min(self.start);
    }

    /// The next lines: every complete line already read (at least one, read
    /// as [`LineReader::next_line`] reads it), as one slice of the buffer;
    /// `None` at the end. The last line of the input may lack its `\n`.
    /// Errors: the reader's.
    pub(crate) fn next_lines(&mut self) -> std::io::Result<Option<&[u8]>> {
        let Some(first) = self.next_line()?.map(<[u8]>::len) else {
            return Ok(None);
        };
        if self.overlong.is_some() {
            // A line passed over is a block of its own.
            return Ok(Some(&[]));
        }
        let start = self.start - first;
        let rest = self.buf.get(self.start..).unwrap_or_default();
        if let Some(i) = memchr::memrchr(b'\n', rest) {
            self.start += i + 1;
        }
        Ok(self.buf.get(start..self.start))
    }
}

/// The most handles one [`LineFiles`] keeps open: a session of more files
/// (Claude Code writes one per sub-agent; thousands are possible) reads the
/// lines of the others through a handle opened for that read and closed
/// after it, so the open files stay far below the usual limit of 1,024 a
/// process whatever the number of workers.
pub(crate) const MAX_KEPT_OPEN: usize = 64;

/// Read-only handles of a session's JSONL files, each opened at its first
/// use and shared by every worker, to read lines again by their
/// [`LineRef`] (`pread`): opening a file per line re-read was 4 system
/// calls a line (18k opens of the 1 GB many-sessions benchmark). At most
/// [`MAX_KEPT_OPEN`] are kept open; a failed open is not remembered (the
/// next read tries again). Elsewhere than Unix, a handle is locked,
/// positioned and read.
pub(crate) struct LineFiles<'f> {
    /// Index in the session's files of `paths[0]`.
    first: usize,
    /// An open handle of `paths[0]` lent by a loader ([`LineFiles::of_open`]).
    lent: Option<&'f std::fs::File>,
    paths: Vec<PathBuf>,
    handles: Vec<std::sync::OnceLock<Handle>>,
    /// Handles kept in `handles` so far.
    kept: std::sync::atomic::AtomicUsize,
}

#[cfg(unix)]
type Handle = std::fs::File;
#[cfg(not(unix))]
type Handle = std::sync::Mutex<std::fs::File>;

/// The [`Handle`] of an opened file.
fn handle(f: std::fs::File) -> Handle {
    #[cfg(unix)]
    return f;
    #[cfg(not(unix))]
    return std::sync::Mutex::new(f);
}

impl<'f> LineFiles<'f> {
    /// Handles for `paths` (a session's `files`), none opened yet.
    pub(crate) fn new(paths: &[PathBuf]) -> LineFiles<'f> {
        LineFiles {
            first: 0,
            lent: None,
            paths: paths.to_vec(),
            handles: paths.iter().map(|_| Default::default()).collect(),
            kept: Default::default(),
        }
    }

    /// The one file `index` of a session (`path`), read through `f`, the
    /// loader's own open handle, which reads it in order meanwhile (`pread`
    /// leaves its position alone): the lines read again are those of the
    /// file the loader opened, even when `path` is removed or replaced
    /// meanwhile, and no second open is made. Elsewhere than Unix, where a
    /// read moves the position, `path` is opened at the first read.
    pub(crate) fn of_open(index: usize, path: &Path, f: &'f std::fs::File) -> LineFiles<'f> {
        LineFiles {
            first: index,
            #[cfg(unix)]
            lent: Some(f),
            #[cfg(not(unix))]
            lent: {
                let _ = f;
                None
            },
            paths: vec![path.to_path_buf()],
            handles: vec![Default::default()],
            kept: Default::default(),
        }
    }

    /// The bytes of line `l` (its `bytes` at its `offset`, line ending
    /// included). Errors: a file index outside the handles' files, the
    /// open's or the read's error, each naming the file.
    pub(crate) fn read(&self, l: LineRef) -> Result<Vec<u8>> {
        use anyhow::Context;
        use std::sync::atomic::Ordering::Relaxed;
        let k = l.file_index();
        let (path, cell) = k
            .checked_sub(self.first)
            .and_then(|j| self.paths.get(j).zip(self.handles.get(j)))
            .with_context(|| format!("no file {k} in the session"))?;
        let this_read_only: Handle;
        #[cfg(unix)]
        let lent = self.lent.filter(|_| k == self.first);
        #[cfg(not(unix))]
        let lent: Option<&Handle> = None;
        let f = match lent.or_else(|| cell.get()) {
            Some(f) => f,
            None => {
                let opened = crate::fsx::open_regular(path)
                    .map(handle)
                    .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", path.display()))?;
                if self.kept.fetch_add(1, Relaxed) < MAX_KEPT_OPEN {
                    if cell.set(opened).is_err() {
                        // Another worker opened it first.
                        self.kept.fetch_sub(1, Relaxed);
                    }
                    cell.get()
                        .with_context(|| format!("{}: no handle", path.display()))?
                } else {
                    self.kept.fetch_sub(1, Relaxed);
                    this_read_only = opened;
                    &this_read_only
                }
            }
        };
        let len = usize::try_from(l.bytes)?;
        let at = || format!("{}: cannot read at byte {}", path.display(), l.offset);
        #[cfg(unix)]
        let bytes = crate::fsx::read_at(f, l.offset, len).with_context(at)?;
        #[cfg(not(unix))]
        let bytes = {
            use std::io::{Read, Seek};
            let mut f = f.lock().map_err(|_| anyhow::anyhow!("{}", at()))?;
            f.seek(std::io::SeekFrom::Start(l.offset))
                .with_context(at)?;
            let mut buf = vec![0; len];
            f.read_exact(&mut buf).with_context(at)?;
            buf
        };
        Ok(bytes)
    }

    /// How many handles are kept open (at most [`MAX_KEPT_OPEN`]).
    #[cfg(test)]
    pub(crate) fn kept_open(&self) -> usize {
        self.kept.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Blocks of fewer lines than this are read on one core (the split costs
/// more than it saves).
const PARALLEL_FROM_LINES: usize = 64;

/// One block of a JSONL file, each line read by a format's line reader:
/// where the line sits, whether it ends with a newline, and what the reader
/// made of it (owning nothing of the read buffer, so the next block can be
/// read while this one is taken in).
pub(crate) type ReadBlock<T> = Vec<(LineRef, bool, T)>;

/// Reads the next block of lines of file `file` from `r` (`None` at the
/// end) and each of its lines with `read` (given the line with its line
/// ending), on every core of the current thread pool; `n` lines and
/// `offset` bytes came before it, and count this block's after it.
/// A line longer than [`max_line_bytes`] is a block of its own, read by
/// `too_long` (given where it is) instead of `read`.
/// Errors: the reader's; `InvalidData` past [`crate::model::MAX_LINES`]
/// lines, or for a file index past `u32::MAX`.
pub(crate) fn read_block<R: std::io::Read, T: Send>(
    r: &mut LineReader<R>,
    file: usize,
    n: &mut u64,
    offset: &mut u64,
    read: impl Fn(LineRef, &[u8]) -> T + Sync,
    too_long: impl Fn(LineRef) -> T,
) -> std::io::Result<Option<ReadBlock<T>>> {
    use rayon::prelude::*;
    let Some(block) = r.next_lines()? else {
        return Ok(None);
    };
    let too_many = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let file = u32::try_from(file)
        .map_err(|_| too_many(format!("more than {} files in one session", u32::MAX)))?;
    let mut next_line = |bytes: u64| -> std::io::Result<LineRef> {
        let line = u32::try_from(*n + 1)
            .ok()
            .and_then(std::num::NonZeroU32::new)
            .ok_or_else(|| {
                too_many(format!(
                    "more than {} lines (the most session-doctor reads of one file)",
                    crate::model::MAX_LINES
                ))
            })?;
        let at = LineRef {
            file,
            line,
            offset: *offset,
            bytes,
        };
        *n += 1;
        *offset += bytes;
        Ok(at)
    };
    // Only a line passed over gives an empty block.
    if block.is_empty() {
        let (bytes, ended) = r.overlong().unwrap_or((0, true));
        let at = next_line(bytes)?;
        return Ok(Some(vec![(at, ended, too_long(at))]));
    }
    let mut lines: Vec<(LineRef, &[u8])> = Vec::new();
    let mut taken = 0usize;
    for l in lines_inclusive(block) {
        if lines.len() == MAX_BLOCK_LINES {
            break;
        }
        taken += l.len();
        lines.push((next_line(l.len() as u64)?, l));
    }
    let excess = block.len() - taken;
    let one = |&(line, l): &(LineRef, &[u8])| (line, l.ends_with(b"\n"), read(line, l));
    let out = if lines.len() < PARALLEL_FROM_LINES {
        lines.iter().map(one).collect()
    } else {
        lines.par_iter().with_min_len(16).map(one).collect()
    };
    drop(lines);
    r.unread(excess);
    Ok(Some(out))
}

/// The most lines of one block [`read_block`] reads (65,536): a block is
/// what one read gave (up to [`MAX_READ`] bytes), and a file of tiny lines
/// (blank lines: 4 million in one read) would hold a record of each at
/// once; the lines past it are left for the next block.
pub(crate) const MAX_BLOCK_LINES: usize = 1 << 16;

/// The lines of `block`, each with its `\n` (a last line without one as it
/// is): `block.split_inclusive(|&b| b == b'\n')`, the newlines found by a
/// vectorized search rather than byte by byte (the split ran on one core
/// before a block's lines are read on every core).
pub(crate) fn lines_inclusive(block: &[u8]) -> LinesInclusive<'_> {
    LinesInclusive { rest: block }
}

/// Iterator of [`lines_inclusive`].
pub(crate) struct LinesInclusive<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for LinesInclusive<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest).map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}

/// Skips the JSON string whose opening quote is at `b[i - 1]`: the index
/// just past its closing quote (a vectorized search for the next quote or
/// backslash), or `None` when it is not terminated.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let rest = b.get(i..)?;
        let k = memchr::memchr2(b'"', b'\\', rest)?;
        i += k + 1;
        if rest[k] == b'"' {
            return Some(i);
        }
        i += 1; // the escaped byte
    }
}

/// The elements of a JSON array, each as its own text (surrounding
/// whitespace left out, exactly what `Vec<&RawValue>` gives). `json` must be
/// JSON a parser has accepted (a captured raw value); anything but an array
/// gives no elements. Strings are skipped with a vectorized search, so
/// splitting costs a fraction of parsing the array again.
pub(crate) fn array_items(json: &str) -> Vec<&str> {
    let b = json.as_bytes();
    let mut out = Vec::new();
    if !json.trim_start().starts_with('[') {
        return out;
    }
    let mut depth = 0usize;
    let mut start: Option<usize> = None;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let at = i;
        i += 1;
        match c {
            b'"' => {
                if depth == 1 && start.is_none() {
                    start = Some(at);
                }
                match skip_string(b, i) {
                    Some(next) => i = next,
                    None => return out,
                }
            }
            b'[' | b'{' => {
                if depth == 1 && start.is_none() {
                    start = Some(at);
                }
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(s) = start {
                        out.push(json.get(s..at).unwrap_or_default().trim_end());
                    }
                    return out;
                }
            }
            b',' if depth == 1 => {
                if let Some(s) = start.take() {
                    out.push(json.get(s..at).unwrap_or_default().trim_end());
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                if depth == 1 && start.is_none() {
                    start = Some(at);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod line_check_tests {
    use super::{may_hold_surrogate_escape, read_block, utf8, LineReader, MAX_BLOCK_LINES};

    /// Review of stop 38: a read of 4 MiB of blank lines was one block of
    /// 4 million lines, a record of each held at once.
    #[test]
    fn read_block_takes_at_most_max_block_lines_and_leaves_the_rest_in_order() {
        let n_lines = MAX_BLOCK_LINES * 2 + 5;
        let mut text = b"{}\n".to_vec();
        text.extend(std::iter::repeat_n(b'\n', n_lines - 2));
        text.extend_from_slice(b"x");
        let mut r = LineReader::new(&text[..], text.len() as u64);
        let (mut n, mut offset) = (0u64, 0u64);
        let mut sizes = Vec::new();
        let mut all = Vec::new();
        while let Some(b) = read_block(
            &mut r,
            0,
            &mut n,
            &mut offset,
            |l, t| (l, t.len()),
            |l| (l, 0),
        )
        .unwrap()
        {
            sizes.push(b.len());
            all.extend(b);
        }
        assert!(sizes.iter().all(|&k| k <= MAX_BLOCK_LINES), "{sizes:?}");
        assert_eq!(all.len(), n_lines);
        assert_eq!((n, offset), (n_lines as u64, text.len() as u64));
        let mut at = 0u64;
        for (k, (line, complete, (l2, len))) in all.iter().enumerate() {
            assert_eq!(line.number(), k as u64 + 1);
            assert_eq!((line.offset, line.bytes), (at, *len as u64));
            assert_eq!(l2, line);
            assert_eq!(*complete, k + 1 < n_lines);
            at += line.bytes;
        }
    }

    /// Line numbers are kept in 32 bits: the last number a `u32` holds is
    /// read, the line after it is refused with an error that says so (never
    /// numbered again or wrapped).
    #[test]
    fn read_block_refuses_lines_past_the_32_bit_line_numbers() {
        let text = b"{}\n{}\n{}\n";
        let mut r = LineReader::new(&text[..], text.len() as u64);
        let (mut n, mut offset) = (crate::model::MAX_LINES - 1, 0u64);
        let err = read_block(
            &mut r,
            0,
            &mut n,
            &mut offset,
            |l, _| l.number(),
            |l| l.number(),
        )
        .expect_err("the line past u32::MAX is refused");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(
            err.to_string().contains("more than 4294967295 lines"),
            "{err}"
        );
        let mut r = LineReader::new(&b"{}\n"[..], 3);
        let mut n = crate::model::MAX_LINES - 1;
        let block = read_block(
            &mut r,
            0,
            &mut n,
            &mut offset,
            |l, _| l.number(),
            |l| l.number(),
        )
        .expect("the last line number is read")
        .expect("one line");
        assert_eq!(block[0].2, crate::model::MAX_LINES);
    }

    /// Any `\uD800` to `\uDFFF` escape, in any case and wherever it is,
    /// sends a line to the tree reader; other escapes and the six bytes
    /// split over the end of the text do not.
    #[test]
    fn surrogate_escapes_are_found_in_every_line() {
        for yes in [
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":"x\uDC00"}"#,
            r#"{"a":1,"b":["\uDbFf"]}"#,
        ] {
            // The same line twice: the searcher is shared, not used up.
            assert!(may_hold_surrogate_escape(yes.as_bytes()), "{yes}");
            assert!(may_hold_surrogate_escape(yes.as_bytes()), "{yes}");
        }
        for no in [
            r#"{"a":"\u00e9"}"#,
            r#"{"a":"\\d800"}"#,
            r#"{"a":"\u"}"#,
            "\\uD",
        ] {
            assert!(!may_hold_surrogate_escape(no.as_bytes()), "{no}");
        }
    }

    /// `utf8` agrees with std's check, on text and on bytes that are not UTF-8.
    #[test]
    fn utf8_agrees_with_std() {
        for b in [
            &b"{\"a\":\"caf\xc3\xa9\"}"[..],
            b"{\"a\":\"\xad\"}",
            b"\xf0\x9f\x98",
            b"",
        ] {
            assert_eq!(utf8(b), std::str::from_utf8(b).ok());
        }
    }
}

#[cfg(test)]
mod depth_tests {
    use super::{too_deep, MAX_DEPTH};

    fn nested(depth: usize) -> Vec<u8> {
        let mut v = b"{\"uuid\":\"u\",\"x\":".to_vec();
        v.extend(std::iter::repeat_n(b'[', depth - 1));
        v.push(b'0');
        v.extend(std::iter::repeat_n(b']', depth - 1));
        v.push(b'}');
        v
    }

    /// A reader that hands out at most 7 bytes per read.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(out.len()).min(7);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// A line longer than the reader's limit is passed over, not held: it
    /// comes out of `read_block` as a block of its own with its true
    /// length, offset and ending, and every line around it as before. A
    /// run of zero bytes without a line feed at the end of a file (what a
    /// crash can leave) grew the buffer until the allocator aborted the
    /// run (review of stop 41).
    #[test]
    fn a_line_past_the_limit_is_passed_over_with_its_length_and_the_rest_read() {
        use super::{read_block, LineReader};
        let max = 5000;
        let long = "x".repeat(10_000);
        let huge = "y".repeat(100_000);
        let nul = "\0".repeat(300_000);
        for text in [
            format!("a\n{long}\nb\n{huge}\nc\n"),
            format!("{{}}\n{huge}"),
            format!("{{}}\n{}\n{nul}", "z".repeat(max)),
            format!("{huge}\n\n{long}{long}\nend"),
        ] {
            let want: Vec<&[u8]> = text.as_bytes().split_inclusive(|&b| b == b'\n').collect();
            for hint in [0, 4096, 1 << 30] {
                for trickle in [true, false] {
                    let mut lr: LineReader<Box<dyn std::io::Read>> = LineReader::new(
                        if trickle {
                            Box::new(Trickle(text.as_bytes())) as Box<dyn std::io::Read>
                        } else {
                            Box::new(text.as_bytes())
                        },
                        hint,
                    )
                    .with_max_line(max);
                    let (mut n, mut offset) = (0u64, 0u64);
                    let mut got = Vec::new();
                    let read = |l: crate::model::LineRef, b: &[u8]| (l, Some(b.to_vec()));
                    while let Some(block) =
                        read_block(&mut lr, 0, &mut n, &mut offset, read, |l| (l, None)).unwrap()
                    {
                        got.extend(block);
                    }
                    assert_eq!(got.len(), want.len(), "hint {hint}");
                    let mut at = 0u64;
                    for ((l, ended, (l2, bytes)), w) in got.iter().zip(&want) {
                        assert_eq!(l, l2);
                        assert_eq!(l.offset, at);
                        assert_eq!(l.bytes, w.len() as u64, "line {}", l.number());
                        assert_eq!(*ended, w.ends_with(b"\n"));
                        match bytes {
                            Some(b) => {
                                assert_eq!(b.as_slice(), *w);
                                // Held: within the limit plus one read.
                                assert!(b.len() <= max + (4 << 20));
                            }
                            // Passed over: only lines past the limit.
                            None => assert!(w.len() > max, "line {}", l.number()),
                        }
                        at += l.bytes;
                    }
                    // Reads of up to 4 KiB (a small file's): the first
                    // line past the limit is passed over. (Within one
                    // read, 4 MiB, a line is held.)
                    if hint <= 4096 {
                        assert!(got
                            .iter()
                            .any(|(l, _, (_, b))| b.is_none() && l.bytes > 10_000));
                    }
                }
            }
        }
    }

    /// The vectorized split is `split_inclusive` on `\n`, edge cases included.
    #[test]
    fn lines_inclusive_splits_as_split_inclusive() {
        for text in ["", "\n", "a", "a\nb", "a\nb\n", "\n\n\r\n", "é\n\u{0}x"] {
            let b = text.as_bytes();
            let got: Vec<&[u8]> = super::lines_inclusive(b).collect();
            let want: Vec<&[u8]> = b.split_inclusive(|&c| c == b'\n').collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn line_reader_gives_the_lines_read_until_gives_one_by_one_and_in_blocks() {
        use super::LineReader;
        use std::io::BufRead;
        let long = "x".repeat(10_000);
        for text in [
            String::new(),
            "\n".into(),
            "a".into(),
            "a\nb".into(),
            "a\nb\n".into(),
            "\n\n\n".into(),
            format!("{long}\n{long}{long}\nshort\n{long}"),
            format!("{}\n", "y\n".repeat(5000)),
        ] {
            let mut want = Vec::new();
            let mut r = std::io::BufReader::new(text.as_bytes());
            loop {
                let mut l = Vec::new();
                if r.read_until(b'\n', &mut l).unwrap() == 0 {
                    break;
                }
                want.push(l);
            }
            for hint in [0, 5, 4096, 1 << 30] {
                let mut got = Vec::new();
                let mut lr = LineReader::new(Trickle(text.as_bytes()), hint);
                while let Some(l) = lr.next_line().unwrap() {
                    got.push(l.to_vec());
                }
                assert_eq!(got, want, "hint {hint}, {} bytes", text.len());
                // A reader that fills the spare capacity itself (as a file
                // does), unzeroed, gives the same lines.
                let mut got = Vec::new();
                let mut lr = LineReader::new(text.as_bytes(), hint);
                while let Some(l) = lr.next_line().unwrap() {
                    got.push(l.to_vec());
                }
                assert_eq!(got, want, "slice, hint {hint}, {} bytes", text.len());
                // Blocks of whole lines hold the same lines.
                let mut got = Vec::new();
                let mut lr = LineReader::new(Trickle(text.as_bytes()), hint);
                while let Some(block) = lr.next_lines().unwrap() {
                    assert!(!block.is_empty());
                    got.extend(block.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec));
                    let lines: Vec<&[u8]> = super::lines_inclusive(block).collect();
                    let split: Vec<&[u8]> = block.split_inclusive(|&b| b == b'\n').collect();
                    assert_eq!(lines, split);
                }
                assert_eq!(got, want, "blocks, hint {hint}, {} bytes", text.len());
            }
        }
    }

    #[test]
    fn array_items_split_as_the_json_reader_does() {
        use super::array_items;
        use serde_json::value::RawValue;
        for json in [
            r#"[]"#,
            r#" [ ] "#,
            r#"[1]"#,
            r#"[ 1 , "a,]" ,{"k":[1,{"x":"}\"]"}]}, [[],[2]] , null,true,-1.5e3 ]"#,
            r#"["\\","\\\"",""]"#,
            "[{\"type\":\"text\",\"text\":\"h\u{e9}llo \\u00e9 \\n\"},\"\u{1f600}\"]",
            r#"{"a":[1,2]}"#,
            r#""[1,2]""#,
            r#"3"#,
        ] {
            let want: Vec<&str> = serde_json::from_str::<Vec<&RawValue>>(json)
                .map(|v| v.into_iter().map(RawValue::get).collect())
                .unwrap_or_default();
            assert_eq!(array_items(json), want, "{json}");
        }
    }

    #[test]
    fn number_out_of_range_matches_the_json_reader() {
        use super::number_out_of_range;
        for line in [
            r#"{"a":1e400}"#,
            r#"{"a":-1E+309,"b":"x"}"#,
            r#"{"a":[1,2,{"b":1.5e308}]}"#,
            r#"{"a":"1e400 in a string","b":true,"c":-0.5e-400}"#,
            r#"{"a":1e308,"b":"\"1e999\""}"#,
        ] {
            let tree = serde_json::from_str::<serde_json::Value>(line).is_ok();
            assert_eq!(!number_out_of_range(line.as_bytes()), tree, "{line}");
        }
        let long = format!(r#"{{"a":{}}}"#, "9".repeat(400));
        let tree = serde_json::from_str::<serde_json::Value>(&long).is_ok();
        assert_eq!(!number_out_of_range(long.as_bytes()), tree);
    }

    /// The vectorized pre-check never hides a number the exact scan finds
    /// in a JSON text: both agree on random JSON documents (numbers that
    /// overflow or nearly do, hex ids, number-like text in strings, any
    /// whitespace, so exponents fall on block edges and in the tail) and on
    /// every line of the fixtures. On random texts that are not JSON they
    /// differ only where the text is not JSON.
    #[test]
    fn number_out_of_range_agrees_with_the_exact_scan() {
        use super::{number_out_of_range, out_of_range_scan};
        // Whichever path this CPU takes, the other holds too: the pre-check
        // passes every text the exact scan flags, 16 bytes a step (SSE2)
        // and 32 (AVX2, where the CPU has it).
        let both_paths_hold = |b: &[u8]| {
            #[cfg(target_arch = "x86_64")]
            if out_of_range_scan(b) {
                assert!(super::may_overflow_on(b, false, &mut 0), "sse2: {b:?}");
                if super::avx2_usable() {
                    assert!(super::may_overflow_on(b, true, &mut 0), "avx2: {b:?}");
                }
            }
        };
        let mut next = super::random_json::rng(0x9e37_79b9_7f4a_7c15);
        let numbers = [
            "1e400",
            "-2E+309",
            "1e308",
            "9e307",
            "0.5",
            "12",
            "1e-999",
            "3.5e299",
            "17e307",
            "1e00000000000000400",
            "-0",
            "5e3",
        ];
        let strings = [
            "2e498115",
            "13-f6c65b29c82e498115b3",
            "ratio:1e400",
            "[9e999",
            "x\\\"1e400",
            "\\\\",
            "é",
            "",
            "a,1e309",
        ];
        let spaces = ["", " ", "\n", "  \t"];
        let pieces = super::random_json::Pieces {
            numbers: &numbers,
            strings: &strings,
            keys: &["k0", "k1", "k2", "k3"],
            spaces: &spaces,
        };
        let mut flagged = 0;
        for _ in 0..50_000 {
            let mut t = " ".repeat(next(17));
            super::random_json::doc(&mut next, &pieces, 0, &mut t);
            assert!(
                serde_json::from_str::<serde::de::IgnoredAny>(&t).is_ok(),
                "{t}"
            );
            let want = out_of_range_scan(t.as_bytes());
            assert_eq!(number_out_of_range(t.as_bytes()), want, "{t}");
            both_paths_hold(t.as_bytes());
            flagged += usize::from(want);
        }
        assert!(
            flagged > 5_000 && flagged < 45_000,
            "{flagged} of 50000 flagged"
        );
        // Not JSON: bytes of numbers, quotes, escapes, letters.
        let pieces = [
            "0", "9", ".", "e", "E", "+", "-", "\"", "\\", "a", ":", ",", "[", " ", "1e400",
            "e400", "9e307",
        ];
        for _ in 0..50_000 {
            let mut t = String::new();
            for _ in 0..next(80) {
                t.push_str(pieces[next(pieces.len())]);
            }
            if number_out_of_range(t.as_bytes()) != out_of_range_scan(t.as_bytes()) {
                assert!(
                    serde_json::from_str::<serde::de::IgnoredAny>(&t).is_err(),
                    "{t}"
                );
            }
        }
        // Long mantissas, with and without an exponent, at every offset.
        // (Every length from 300 to 340 at 64 offsets: where a run's end
        // falls in the bytes after the last whole 32-byte block too.)
        for pad in 0..64 {
            for m in (300..=340).chain([250, 299, 400]) {
                for tail in ["", "e5", "e-400", ".5", "e0"] {
                    let t = format!(r#"{}{{"a":{}{tail}}}"#, " ".repeat(pad), "9".repeat(m));
                    assert_eq!(
                        number_out_of_range(t.as_bytes()),
                        out_of_range_scan(t.as_bytes()),
                        "{pad} {m} {tail}"
                    );
                    both_paths_hold(t.as_bytes());
                }
            }
        }
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut lines = 0;
        for e in walkdir::WalkDir::new(fixtures).into_iter().flatten() {
            if e.path()
                .extension()
                .is_some_and(|x| x == "jsonl" || x == "json")
            {
                let text = std::fs::read(e.path()).unwrap();
                for l in text.split(|&b| b == b'\n') {
                    assert_eq!(number_out_of_range(l), out_of_range_scan(l));
                    both_paths_hold(l);
                    lines += 1;
                }
            }
        }
        assert!(lines > 1000, "{lines} fixture lines");
    }

    /// The estimate is 0 under the size worth reserving for, and on the
    /// high side (within a third above the truth) for a large file whose
    /// line lengths vary.
    #[test]
    fn estimate_lines_is_a_little_above_the_count() {
        use super::{estimate_lines, RESERVE_FROM_BYTES};
        use std::io::Write;
        let mut small = tempfile::tempfile().unwrap();
        small.write_all(b"a\nb\n").unwrap();
        assert_eq!(estimate_lines(&small, 4).unwrap(), 0);
        let mut f = tempfile::tempfile().unwrap();
        let (mut bytes, mut lines, mut k) = (0u64, 0u64, 0usize);
        while bytes < RESERVE_FROM_BYTES * 3 {
            let line = format!("{}\n", "x".repeat(50 + (k * 7919) % 3000));
            f.write_all(line.as_bytes()).unwrap();
            bytes += line.len() as u64;
            lines += 1;
            k += 1;
        }
        let est = estimate_lines(&f, bytes).unwrap();
        assert!(
            est >= lines && est <= lines + lines / 3,
            "{est} for {lines} lines"
        );
    }

    /// The 64-byte block scan gives the byte walk's answer on every text:
    /// token soups (brackets, strings holding brackets, quotes, escapes
    /// and runs of backslashes, across block edges) nested around the
    /// limit, and random bytes of the same alphabet, with backslashes
    /// outside strings too (where the blocks hand back to the walk).
    #[test]
    fn too_deep_by_blocks_matches_the_walk() {
        let mut next = super::random_json::rng(0x2545_f491_4f6c_dd1d);
        let inner = [
            "a", "[", "]", "{", "}", "\\\"", "\\\\", "\\\\\\\"", "\\n", "\\\\\\\\", " ",
        ];
        let (mut by_blocks, mut deep, mut walked) = (0, 0, 0);
        for round in 0..20_000 {
            let mut t = String::new();
            let len = next(1500);
            // Deeper texts in some rounds: opening brackets more likely.
            let opens = 1 + next(7);
            if round % 4 == 3 {
                let alphabet = ["[", "]", "{", "}", "\"", "\\", "a", " "];
                while t.len() < len {
                    t.push_str(alphabet[next(alphabet.len())]);
                }
            } else {
                while t.len() < len {
                    match next(10) {
                        k if k < opens => t.push(if next(2) == 0 { '[' } else { '{' }),
                        k if k < 8 => t.push(if next(2) == 0 { ']' } else { '}' }),
                        8 => t.push(','),
                        _ => {
                            t.push('"');
                            for _ in 0..next(12) {
                                t.push_str(inner[next(inner.len())]);
                            }
                            if next(400) > 0 {
                                t.push('"');
                            }
                        }
                    }
                }
            }
            let b = t.as_bytes();
            let want = super::deep_walk(b);
            match super::deep_by_blocks(b) {
                Some(got) => {
                    assert_eq!(got, want, "{t}");
                    by_blocks += 1;
                }
                None => walked += 1,
            }
            assert_eq!(too_deep(b), want, "{t}");
            deep += usize::from(want);
        }
        // Both answers, and both paths, were exercised.
        assert!(deep > 1_000 && 20_000 - deep > 1_000, "{deep} deep");
        assert!(
            by_blocks > 10_000 && walked > 1_000,
            "{by_blocks} by blocks, {walked} walked"
        );
    }

    /// The opening brackets the number check's pass counts ([`Prescan`])
    /// are all of the line's, strings included, on both paths and at every
    /// length (whole 32- and 16-byte blocks and the tail), so a line with
    /// more than [`MAX_DEPTH`] of them is never answered "not too deep"
    /// by the count.
    #[test]
    fn prescan_counts_every_opening_bracket() {
        let mut next = super::random_json::rng(0x1234_5678_9abc_def1);
        let alphabet = [
            "[", "{", "]", "}", "\"", "a", "e", "E", "1", "-", ".", " ", "\\", "é",
        ];
        let mut counted = 0;
        for round in 0..6_000 {
            let mut t = String::new();
            let len = if round % 10 == 0 {
                next(3000)
            } else {
                next(300)
            };
            while t.len() < len {
                t.push_str(alphabet[next(alphabet.len())]);
            }
            let b = t.as_bytes();
            let want = memchr::memchr2_iter(b'[', b'{', b).count();
            #[cfg(target_arch = "x86_64")]
            for avx2 in [false, true] {
                if avx2 && !super::avx2_usable() {
                    continue;
                }
                let mut n = 0;
                if !super::may_overflow_on(b, avx2, &mut n) {
                    assert_eq!(n, want, "avx2 {avx2}: {t}");
                }
            }
            let scan = super::prescan(b);
            if let Some(n) = scan.opens {
                assert_eq!(n, want, "{t}");
                counted += 1;
            }
            assert_eq!(scan.too_deep(b), super::deep_walk(b), "{t}");
        }
        assert!(counted > 5_000, "{counted} lines counted");
    }

    /// `too_deep` draws the line exactly where serde_json's tree reader
    /// stops, so every line the loader accepts can be edited.
    #[test]
    fn too_deep_matches_the_json_readers_limit() {
        for d in [
            1,
            2,
            MAX_DEPTH - 1,
            MAX_DEPTH,
            MAX_DEPTH + 1,
            MAX_DEPTH + 2,
            1000,
        ] {
            let line = nested(d);
            let tree = serde_json::from_slice::<serde_json::Value>(&line).is_ok();
            assert_eq!(!too_deep(&line), tree, "depth {d}");
        }
        // Brackets inside strings do not count.
        let mut s = b"{\"uuid\":\"".to_vec();
        s.extend(std::iter::repeat_n(b'[', 500));
        s.extend_from_slice(b"\"}");
        assert!(!too_deep(&s));
        assert!(serde_json::from_slice::<serde_json::Value>(&s).is_ok());
        // Escaped quotes and backslashes do not end a string; brackets after
        // the string's end count again.
        for inner in [&b"\\\"["[..], &b"\\\\"[..]] {
            let mut s = b"{\"a\":\"".to_vec();
            s.extend_from_slice(inner);
            s.extend(std::iter::repeat_n(b'[', 200));
            s.extend_from_slice(b"\"");
            s.extend(std::iter::repeat_n(b'[', 200));
            s.extend(std::iter::repeat_n(b']', 200));
            s.extend_from_slice(b"}");
            let tree = serde_json::from_slice::<serde_json::Value>(&s).is_ok();
            assert!(!tree);
            assert!(too_deep(&s), "{}", String::from_utf8_lossy(&s));
        }
    }
}

#[cfg(test)]
mod line_files_tests {
    use super::{LineFiles, MAX_KEPT_OPEN};
    use crate::model::LineRef;
    use std::num::NonZeroU32;

    fn line(file: u32, offset: u64, bytes: u64) -> LineRef {
        LineRef {
            file,
            line: NonZeroU32::MIN,
            offset,
            bytes,
        }
    }

    /// Review of 6194608: a session of more files than the open-file limit
    /// kept a handle per file read again until the end of the apply.
    #[test]
    fn keeps_at_most_max_kept_open_handles_and_still_reads_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let n = MAX_KEPT_OPEN + 10;
        let paths: Vec<_> = (0..n)
            .map(|k| {
                let p = dir.path().join(format!("agent-{k}.jsonl"));
                std::fs::write(&p, format!("{{\"k\":{k:03}}}\n")).unwrap();
                p
            })
            .collect();
        let files = LineFiles::new(&paths);
        for round in 0..2 {
            for k in 0..n {
                let got = files.read(line(k as u32, 0, 10)).unwrap();
                assert_eq!(
                    got,
                    format!("{{\"k\":{k:03}}}\n").as_bytes(),
                    "round {round}"
                );
            }
        }
        assert_eq!(files.kept_open(), MAX_KEPT_OPEN);
    }

    #[test]
    fn a_failed_open_is_tried_again_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("late.jsonl");
        let files = LineFiles::new(std::slice::from_ref(&p));
        let err = files.read(line(0, 0, 3)).unwrap_err().to_string();
        assert!(err.contains("late.jsonl: cannot open"), "{err}");
        std::fs::write(&p, "{}\n").unwrap();
        assert_eq!(files.read(line(0, 0, 3)).unwrap(), b"{}\n");
        assert_eq!(files.kept_open(), 1);
        let err = files.read(line(1, 0, 3)).unwrap_err().to_string();
        assert!(err.contains("no file 1"), "{err}");
    }

    /// Review of 6194608: a repeated uuid's lines were read again by path,
    /// so a file replaced during the load was compared with another file's
    /// bytes.
    #[cfg(unix)]
    #[test]
    fn of_open_reads_the_open_file_not_what_its_path_names_later() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, "{\"a\":1}\n{\"a\":2}\n").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let files = LineFiles::of_open(3, &p, &f);
        let other = dir.path().join("new.jsonl");
        std::fs::write(&other, "{\"b\":7}\n{\"b\":8}\n").unwrap();
        std::fs::rename(&other, &p).unwrap();
        assert_eq!(files.read(line(3, 8, 8)).unwrap(), b"{\"a\":2}\n");
        assert_eq!(files.kept_open(), 0, "no handle opened by path");
        let err = files.read(line(0, 0, 8)).unwrap_err().to_string();
        assert!(err.contains("no file 0"), "{err}");
    }
}
