//! Storage formats. Each format module is the only place that knows its raw
//! shapes; everything else works on [`crate::model`].
//!
//! A format is found by [`discover`], which walks the given paths and asks each
//! format whether a path is one of its stores.

pub mod claude;
pub mod codex;
pub mod opencode;

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

/// `p` with `suffix` appended to its file name (SQLite's `-wal` / `-shm` side files).
pub fn sidecar(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// One store of sessions (a database file or a JSON tree), opened read-only.
pub trait Store: Send + Sync {
    /// Agent that wrote the store.
    fn agent(&self) -> Agent;
    /// The store itself: a db file or a `storage/` dir.
    fn path(&self) -> &Path;
    /// The folder a copy may never be written into (it holds the original).
    fn root(&self) -> PathBuf {
        self.path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
    /// Name of the copy under `--out` (e.g. `opencode.db`, `kilo.db`, `storage`).
    fn copy_name(&self) -> String;
    /// Ids of the sessions in the store, oldest first.
    fn session_ids(&self) -> Result<Vec<String>>;
    /// Loads one session. Unreadable rows become [`crate::model::LoadProblem`]s;
    /// an error means the store itself could not be read.
    fn load(&self, id: &str) -> Result<Session>;
    /// How `edit` looks in storage (stored field name, old and new JSON values).
    fn describe(&self, session: &Session, edit: &Edit) -> StoredChange;
    /// `session` with `edits` applied, re-read from the edited raw JSON so every
    /// figure (bytes, tokens, media, visible view) is what the copy will hold.
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session>;
    /// Writes a copy of the whole store to `dest` (the final path of the copy,
    /// `dest` must not exist), with `edits` applied. Written to a temporary name
    /// beside `dest` and renamed into place.
    fn write_copy(&self, dest: &Path, edits: &[Edit]) -> Result<()>;
    /// Whether `compact` always strips historical media and drops the history
    /// the agent no longer sends, even when the session already fits: true
    /// where the agent re-reads the whole store on resume (Codex replays
    /// every rollout line, so hidden history costs time and memory).
    fn compact_drops_hidden_history(&self) -> bool {
        false
    }
}

/// Result of walking the input paths.
pub struct Discovery {
    pub stores: Vec<Box<dyn Store>>,
    /// Paths that looked like stores but could not be opened, with the reason.
    pub errors: Vec<String>,
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
pub const FORMATS: &[Format] = &[opencode::FORMAT, claude::FORMAT, codex::FORMAT];

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

/// Finds every store in `paths`: a store file, a data dir, a legacy `storage/`
/// dir, or any folder containing these (searched with walkdir). Paths that
/// hold nothing are reported in `errors`.
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut d = Discovery {
        stores: Vec::new(),
        errors: Vec::new(),
    };
    let names = FORMATS
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ");
    for path in paths {
        let before = d.stores.len() + d.errors.len();
        if !path.exists() {
            d.errors
                .push(format!("{}: no such file or directory", path.display()));
            continue;
        }
        if path.is_file() {
            match open_any_file(path, false) {
                Ok(Some(s)) => d.stores.push(s),
                Ok(None) => d.errors.push(format!(
                    "{}: not a session store of a supported agent ({names})",
                    path.display()
                )),
                Err(e) => d.errors.push(format!("{e:#}")),
            }
            continue;
        }
        let mut walker = walkdir::WalkDir::new(path).sort_by_file_name().into_iter();
        while let Some(entry) = walker.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    d.errors.push(format!("{e}"));
                    continue;
                }
            };
            let p = entry.path();
            let opened = if entry.file_type().is_dir() {
                open_any_dir(p)
            } else if entry.file_type().is_file() {
                open_any_file(p, true)
            } else {
                Ok(None)
            };
            match opened {
                Ok(Some(s)) => {
                    d.stores.push(s);
                    if entry.file_type().is_dir() {
                        walker.skip_current_dir();
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    d.errors.push(format!("{e:#}"));
                    if entry.file_type().is_dir() {
                        walker.skip_current_dir();
                    }
                }
            }
        }
        if d.stores.len() + d.errors.len() == before {
            d.errors.push(format!(
                "{}: no session store found ({names})",
                path.display()
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
