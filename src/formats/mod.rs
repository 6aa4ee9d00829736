//! Storage formats. Each format module is the only place that knows its raw
//! shapes; everything else works on [`crate::model`].
//!
//! A format is found by [`discover`], which walks the given paths and asks each
//! format whether a path is one of its stores.

pub mod claude;
pub mod codex;
pub mod opencode;
pub mod sqlite;

use crate::model::{Agent, Session};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// A change to make in a copy of a store. Treatments produce these; only the
/// format module that owns the session knows how to write them.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub session_id: String,
    pub message_id: String,
    pub change: Change,
}

/// Which text of a part a truncation applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The output of a completed tool call.
    ToolOutput,
    /// The string values of a tool call's input.
    ToolInput,
    /// The text of a text or reasoning part.
    Text,
}

/// What an [`Edit`] changes, in the model's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Point the message's parent at another message.
    SetParent { old: Option<String>, new: String },
    /// Remove the message's parent: it becomes a root (breaks a parent cycle
    /// where no earlier message can be its parent).
    ClearParent { old: String },
    /// Replace the inline media of a part by `placeholder` text (one line per
    /// media item). The part keeps its id; its type only changes where the
    /// agent's schema has no room for text (a file part becomes a text part).
    StripMedia {
        part_id: String,
        placeholder: String,
    },
    /// Keep the first and last `max_chars / 2` characters of a text field,
    /// with a marker saying how many characters were removed in between.
    Truncate {
        part_id: String,
        field: TextField,
        max_chars: usize,
    },
    /// Remove the message and its parts from the copy. For a line-oriented
    /// store the message id may also name a load problem (a torn last line).
    DropMessage,
    /// Remove every later stored copy of the message id, keeping the first
    /// (an agent that re-wrote lines with the same id).
    DropCopies,
    /// Add a synthetic text part with `text` at the start of the message (the
    /// format chooses the new part's id).
    AddNote { text: String },
}

impl Change {
    /// Short name for reports (`set-parent`, `strip-media`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Change::SetParent { .. } => "set-parent",
            Change::ClearParent { .. } => "clear-parent",
            Change::StripMedia { .. } => "strip-media",
            Change::Truncate { .. } => "truncate",
            Change::DropMessage => "drop-message",
            Change::DropCopies => "drop-copies",
            Change::AddNote { .. } => "add-note",
        }
    }

    /// The part the change touches, if it touches one.
    pub fn part_id(&self) -> Option<&str> {
        match self {
            Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } => Some(part_id),
            _ => None,
        }
    }
}

/// The marker a truncation leaves in the text.
pub fn truncation_marker(removed_chars: usize) -> String {
    format!("[... {removed_chars} characters removed by session-doctor compact ...]")
}

/// Keeps the first and last `max_chars / 2` characters of `text` with a
/// [`truncation_marker`] between them; `None` when `text` already fits.
pub fn truncate_middle(text: &str, max_chars: usize) -> Option<String> {
    let n = text.chars().count();
    if n <= max_chars {
        return None;
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let removed = n - head - tail;
    let mut out: String = text.chars().take(head).collect();
    out.push('\n');
    out.push_str(&truncation_marker(removed));
    out.push('\n');
    out.extend(text.chars().skip(n - tail));
    Some(out)
}

/// [`truncate_middle`] on every string inside `v` (tool inputs, structured outputs).
pub fn truncate_strings(v: &mut serde_json::Value, max_chars: usize) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Some(t) = truncate_middle(s, max_chars) {
                *s = t;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| truncate_strings(x, max_chars)),
        Value::Object(o) => o.values_mut().for_each(|x| truncate_strings(x, max_chars)),
        _ => {}
    }
}

/// A change as it is stored: the stored field name with old and new values.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredChange {
    pub session_id: String,
    pub message_id: String,
    /// The part changed, for part-level changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_id: Option<String>,
    pub field: String,
    pub old: serde_json::Value,
    pub new: serde_json::Value,
}

pub use sqlite::side as sidecar;

/// One store of sessions (a database file, a JSONL file with its sub-agent
/// files, or a JSON tree), opened read-only.
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
    /// Path of the copy relative to `--out` (e.g. `opencode.db`, `storage`,
    /// `projects/<cwd>/<id>.jsonl`), in the layout the agent reads.
    fn copy_path(&self) -> PathBuf;
    /// The folder [`Store::copy_path`] is relative to in the source's layout
    /// (the db's folder, the Claude config dir, the Codex home); copies of
    /// several stores keep their places relative to these.
    fn copy_base(&self) -> PathBuf {
        self.path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
    /// Every path a copy at `dest` writes (the copy itself, sub-agent files).
    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        vec![dest.to_path_buf()]
    }
    /// Ids of the sessions in the store, oldest first.
    fn session_ids(&self) -> Result<Vec<String>>;
    /// Loads one session. Unreadable rows become [`crate::model::LoadProblem`]s;
    /// an error means the store itself could not be read.
    fn load(&self, id: &str) -> Result<Session>;
    /// How `edit` looks in storage (stored field name, old and new JSON
    /// values), with lookups built once by the caller ([`Session::lookup`]).
    fn describe(
        &self,
        session: &Session,
        ix: &crate::model::Lookup<'_>,
        edit: &Edit,
    ) -> StoredChange;
    /// [`Store::describe`] for every edit.
    fn describe_all(&self, session: &Session, edits: &[Edit]) -> Vec<StoredChange> {
        let ix = session.lookup();
        edits
            .iter()
            .map(|e| self.describe(session, &ix, e))
            .collect()
    }
    /// `session` with `edits` applied, re-read from the edited raw JSON so every
    /// figure (bytes, tokens, media, visible view) is what the copy will hold.
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session>;
    /// Writes a copy of the whole store to `dest` with `edits` applied:
    /// staged under a temporary name beside `dest`, verified, then moved into
    /// place; `replace`: `dest` is a previous copy that may be replaced,
    /// otherwise an existing `dest` is an error.
    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()>;
    /// Whether `compact` always strips historical media and drops the history
    /// the agent no longer sends, even when the session already fits: true
    /// where the agent re-reads the whole store on resume (Codex replays
    /// every rollout line, so hidden history costs time and memory).
    fn compact_drops_hidden_history(&self) -> bool {
        false
    }
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
                s.notes.push(format!(
                    "{} was being written while it was read: its last {} byte(s), an unfinished line, are left out of this snapshot",
                    path.display(),
                    len - cut
                ));
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

/// One storage format's detection hooks. A new agent is one module and one
/// entry in [`FORMATS`].
pub struct Format {
    /// Name used in messages (`opencode/Kilo`).
    pub name: &'static str,
    /// Whether a file met while walking folders is worth opening.
    pub wants_file: fn(&Path) -> bool,
    /// Opens a file as a store: `Ok(None)` when it is not of this format.
    pub open_file: fn(&Path) -> Opened,
    /// Opens a folder as a store: `Ok(None)` when it is not one. A folder that
    /// is a store is not searched further.
    pub open_dir: fn(&Path) -> Opened,
}

/// Every supported format, tried in order.
pub const FORMATS: &[Format] = &[opencode::FORMAT, codex::FORMAT, claude::FORMAT];

/// Opens a file with the formats that want it; a file given by name that no
/// format wants is tried with every format (so the error says why).
fn open_any_file(p: &Path, walking: bool) -> Result<Option<Box<dyn Store>>> {
    let wanted = FORMATS.iter().any(|f| (f.wants_file)(p));
    for f in FORMATS {
        if (walking || wanted) && !(f.wants_file)(p) {
            continue;
        }
        if let Some(s) = (f.open_file)(p)? {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

fn open_any_dir(p: &Path) -> Result<Option<Box<dyn Store>>> {
    for f in FORMATS {
        if let Some(s) = (f.open_dir)(p)? {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

/// The store's identity for de-duplication (a folder reached twice through
/// symbolic links is one store).
fn store_key(s: &dyn Store) -> PathBuf {
    s.path()
        .canonicalize()
        .unwrap_or_else(|_| s.path().to_path_buf())
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
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let names = FORMATS
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ");
    let mut push = |d: &mut Discovery, s: Box<dyn Store>| {
        if seen.insert(store_key(s.as_ref())) {
            d.stores.push(s);
        }
    };
    for path in paths {
        let before = d.stores.len() + d.problems.errors.len();
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
                Ok(Some(s)) => push(&mut d, s),
                Ok(None) => d.problems.error(InputError::new(
                    path,
                    format!("not a session store of a supported agent ({names})"),
                )),
                Err(e) => d.problems.error(InputError::from_anyhow(path, &e)),
            }
            continue;
        }
        let mut walker = walkdir::WalkDir::new(path)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walker.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let at = e.path().unwrap_or(path).to_path_buf();
                    if let Some(anc) = e.loop_ancestor() {
                        d.problems.warn(InputError::new(
                            &at,
                            format!(
                                "a symbolic link loop back to {}; not followed",
                                anc.display()
                            ),
                        ));
                    } else if e
                        .io_error()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                    {
                        d.problems
                            .warn(InputError::new(&at, "a symbolic link to nothing; skipped"));
                    } else {
                        let why = e
                            .io_error()
                            .map(|io| format!("cannot read: {io}"))
                            .unwrap_or_else(|| e.to_string());
                        d.problems.error(InputError::new(&at, why));
                    }
                    continue;
                }
            };
            let p = entry.path();
            let ft = entry.file_type();
            let opened = if ft.is_dir() {
                open_any_dir(p)
            } else if ft.is_file() {
                open_any_file(p, true)
            } else {
                if FORMATS.iter().any(|f| (f.wants_file)(p)) {
                    d.problems.warn(InputError::new(
                        p,
                        format!(
                            "{}, not a regular file; skipped",
                            crate::fsx::type_name(&ft)
                        ),
                    ));
                }
                Ok(None)
            };
            match opened {
                Ok(Some(s)) => {
                    push(&mut d, s);
                    if ft.is_dir() {
                        walker.skip_current_dir();
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    d.problems.error(InputError::from_anyhow(p, &e));
                    if ft.is_dir() {
                        walker.skip_current_dir();
                    }
                }
            }
        }
        if d.stores.len() + d.problems.errors.len() == before {
            d.problems.error(InputError::new(
                path,
                format!("no session store found ({names})"),
            ));
        }
    }
    d
}

/// The default data dirs of the supported agents that exist on this machine:
/// `$XDG_DATA_HOME/{opencode,kilo}` and `$HOME/.local/share/{opencode,kilo}`;
/// Claude Code's `projects/` under each dir of `$CLAUDE_CONFIG_DIR`
/// (comma-separated; a dir may also be a `projects/` dir itself), else under
/// `$HOME/.config/claude` and `$HOME/.claude` (where ccusage looks too).
/// Codex's `sessions/` and `archived_sessions/` under `$CODEX_HOME`, else
/// `$HOME/.codex`.
pub fn default_paths() -> Vec<PathBuf> {
    let mut bases = Vec::new();
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        bases.push(PathBuf::from(x));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        bases.push(PathBuf::from(h).join(".local/share"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for b in bases {
        for name in ["opencode", "kilo"] {
            let p = b.join(name);
            if p.is_dir() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty());
    let claude_dirs: Vec<PathBuf> = match std::env::var("CLAUDE_CONFIG_DIR") {
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => home
            .iter()
            .flat_map(|h| {
                let h = PathBuf::from(h);
                [h.join(".config/claude"), h.join(".claude")]
            })
            .collect(),
    };
    for d in claude_dirs {
        let p = if d.file_name().is_some_and(|n| n == "projects") {
            d
        } else {
            d.join("projects")
        };
        if p.is_dir() && !out.contains(&p) {
            out.push(p);
        }
    }
    if let Some(home) = codex::codex_home() {
        for name in ["sessions", "archived_sessions"] {
            let p = home.join(name);
            if p.is_dir() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}
