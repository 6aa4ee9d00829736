//! Claude Code JSONL transcripts: `~/.claude/projects/<encoded cwd>/<sessionId>.jsonl`,
//! one JSON object per line, chained by `uuid` / `parentUuid`; sub-agent
//! transcripts in `<sessionId>/subagents/agent-*.jsonl` (2.1.x) or
//! `agent-*.jsonl` beside the sessions (older versions). Shapes:
//! docs/formats/claude-code.md sections 2 to 5; resume semantics of 2.1.197:
//! `view.rs`.
//!
//! A store is one session: its main file plus its sub-agent files. Files are
//! streamed line by line (bounded by the longest line); only compaction
//! boundary lines keep their JSON in memory, every other line is re-read by
//! its byte offset when it must be rewritten. Originals are opened read-only.

mod edit;
pub(crate) mod parse;
mod view;

use crate::edit::Applier;
use crate::edit::{Edit, StoredChange};
use crate::formats::{Copier, Store};
use crate::model::{Agent, Session};
use anyhow::Result;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Stored field names (Claude Code transcript lines).
pub(crate) mod field {
    pub const PARENT: &str = "parentUuid";
    pub const SESSION: &str = "sessionId";
    pub const LEAF: &str = "leafUuid";
}

/// The Claude Code format.
pub struct Claude;

impl super::Format for Claude {
    fn name(&self) -> &'static str {
        "Claude Code <session>.jsonl"
    }

    fn wants_file(&self, p: &Path) -> bool {
        is_jsonl(p)
    }

    fn open_file(&self, p: &Path) -> super::Opened {
        open_file(p)
    }

    fn open_probed(&self, probe: &super::Probe<'_>) -> super::Opened {
        open_probed(probe)
    }

    /// The `projects/` dir of each comma-separated dir in
    /// `$CLAUDE_CONFIG_DIR` (a dir may be a `projects/` dir itself), else of
    /// `$HOME/.config/claude` and `$HOME/.claude` (where ccusage looks too).
    fn default_places(&self) -> &'static str {
        "Claude Code projects/ under $CLAUDE_CONFIG_DIR, $HOME/.config/claude or $HOME/.claude"
    }

    fn default_paths(&self) -> Vec<PathBuf> {
        let dirs: Vec<PathBuf> = match std::env::var("CLAUDE_CONFIG_DIR") {
            Ok(v) if !v.trim().is_empty() => v
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect(),
            _ => super::home()
                .iter()
                .flat_map(|h| [h.join(".config/claude"), h.join(".claude")])
                .collect(),
        };
        dirs.into_iter()
            .map(|d| {
                if d.file_name().is_some_and(|n| n == "projects") {
                    d
                } else {
                    d.join("projects")
                }
            })
            .collect()
    }
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "jsonl")
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `8-4-4-4-12` hex digits: the shape of a Claude Code session id.
fn uuid_like(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// What the first lines of a `.jsonl` say about it.
#[derive(Debug, PartialEq, Eq)]
struct Sniff {
    /// A line has the shape of a Claude Code transcript line.
    claude: bool,
    /// No line parsed as a JSON object.
    nothing_parsed: bool,
    /// A line is a message line without the transcript keys
    /// ([`loose_message`]).
    message_line: bool,
    /// `sessionId` of the first line that has one.
    session_id: Option<String>,
    /// Read on until a transcript line names its session (only an
    /// `agent-*.jsonl` asks which session it belongs to); else the sniff
    /// ends at the first transcript line.
    need_session: bool,
}

/// A transcript line: an object with `parentUuid` (possibly null) or a
/// camelCase `sessionId`, or a legacy `summary` / `file-history-snapshot`
/// line. Claude Code's stream-json output (`session_id`, no `parentUuid`) and
/// other agents' JSONL (Codex `payload`) do not qualify.
fn looks_like_claude(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    if o.contains_key(field::PARENT) || o.get(field::SESSION).is_some_and(Value::is_string) {
        return true;
    }
    match o.get("type").and_then(Value::as_str) {
        Some("summary") => o.contains_key(field::LEAF),
        Some("file-history-snapshot") => o.contains_key("messageId"),
        _ => false,
    }
}

/// A message line that lacks both `parentUuid` and `sessionId` (which
/// Claude Code writes on every line): `type` `user` or `assistant`, a
/// string `uuid` and a `message` object, and neither the `session_id` of
/// Claude Code's stream-json output nor Codex's `payload`. Claude Code loads
/// such a line as a message with no parent. It makes a store only of a file
/// named by a session uuid ([`open_probed`]): a copy compact cut down to
/// such lines is still found (fuzz input whole_claude-23: the cut dropped
/// the only lines with `sessionId`, leaving one that was not JSON and one
/// message line without either key).
fn loose_message(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    matches!(
        o.get("type").and_then(Value::as_str),
        Some("user" | "assistant")
    ) && o.get("uuid").is_some_and(Value::is_string)
        && o.get("message").is_some_and(Value::is_object)
        && !o.contains_key("session_id")
        && !o.contains_key("payload")
}

/// One line read as JSON for the sniff. A line with bytes that are not
/// UTF-8 counts exactly when the loader reads it: its typed read skips such
/// bytes in the fields it does not read (fuzz input whole_claude-16: a copy
/// whose only message line held one was not found) and rejects them in a
/// key or a field it reads (whole_claude-17: a store found only through
/// such a line lost it as unreadable in its repaired copy). Such a line is
/// then read with U+FFFD for those bytes, as Claude Code (Node.js) reads it.
/// Likewise a lone surrogate escape (`\ud800`), which `JSON.parse` takes
/// and serde_json's tree refuses, in a field the typed read leaves raw
/// (fuzz input whole_claude-22: a compacted copy whose first message line
/// held one in a usage key was not found): such a line is sniffed by its
/// top-level fields, read raw.
fn sniff_value(line: &[u8]) -> Option<Value> {
    let text = match std::str::from_utf8(line) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => {
            parse::Fields::read(line, &mut None).ok()?;
            String::from_utf8_lossy(line)
        }
    };
    if let Ok(v) = serde_json::from_str(&text) {
        return Some(v);
    }
    parse::Fields::read(line, &mut None).ok()?;
    let top: std::collections::HashMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(&text).ok()?;
    let keys = [
        field::PARENT,
        field::SESSION,
        field::LEAF,
        "type",
        "messageId",
    ];
    let kept = keys.iter().filter_map(|k| {
        let raw = top.get(*k)?;
        let v = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        Some((k.to_string(), v))
    });
    Some(Value::Object(kept.collect()))
}

impl Sniff {
    /// Takes one line (`buf`, its line ending left on); answers whether the
    /// sniff is done: a transcript line, which names its session when
    /// [`Sniff::need_session`] (a file whose first line is a `summary` or
    /// `file-history-snapshot` line was opened again and read on to its
    /// first message, which nothing but an `agent-*` file's owner needs).
    fn take(&mut self, buf: &[u8]) -> bool {
        let Some(v) = sniff_value(buf) else {
            return false;
        };
        if v.is_object() {
            self.nothing_parsed = false;
        }
        if loose_message(&v) {
            self.message_line = true;
        }
        if looks_like_claude(&v) {
            self.claude = true;
            if self.session_id.is_none() {
                self.session_id = v
                    .get(field::SESSION)
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            return self.session_id.is_some() || !self.need_session;
        }
        false
    }
}

/// Reads up to [`SNIFF_LINES`] lines (and at most about 4 MB) of `p`, on to
/// a line that names the session.
fn sniff(p: &Path) -> Result<Sniff> {
    sniff_from(p, None, true)
}

/// Lines sniffed at most.
const SNIFF_LINES: usize = 50;

/// [`sniff`], with the file's first line already read (`first`, complete:
/// see [`super::FirstLine`]); the file is opened only when more lines are
/// needed, and read from after that line. `need_session`: see
/// [`Sniff::need_session`].
fn sniff_from(p: &Path, first: Option<&[u8]>, need_session: bool) -> Result<Sniff> {
    use std::io::{Seek, SeekFrom};
    let mut out = Sniff {
        claude: false,
        nothing_parsed: true,
        message_line: false,
        session_id: None,
        need_session,
    };
    let mut read = 0usize;
    let mut lines = 0;
    if let Some(line) = first {
        // A first line without a line feed is the whole file.
        if line.is_empty() || out.take(line) || !line.ends_with(b"\n") {
            return Ok(out);
        }
        read += line.len();
        lines = 1;
        if read > 4 << 20 {
            return Ok(out);
        }
    }
    let mut f = crate::fsx::open_regular(p)
        .map_err(|e| anyhow::anyhow!("{}: cannot open: {e}", p.display()))?;
    if read > 0 {
        f.seek(SeekFrom::Start(read as u64))
            .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?;
    }
    let mut r = std::io::BufReader::new(f);
    let mut buf = Vec::new();
    for _ in lines..SNIFF_LINES {
        buf.clear();
        // At most one probe's worth of a line: a line longer than that
        // (a run of zero bytes a crash left, without a line feed) is not
        // held to be sniffed; the sniff stops there.
        let n = std::io::Read::take(&mut r, super::PROBE_LINE_BYTES)
            .read_until(b'\n', &mut buf)
            .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?;
        if n == 0 || (n as u64 == super::PROBE_LINE_BYTES && !buf.ends_with(b"\n")) {
            break;
        }
        read += n;
        if out.take(&buf) {
            break;
        }
        if read > 4 << 20 {
            break;
        }
    }
    Ok(out)
}

/// Opens a `.jsonl` as a Claude Code session: `Ok(None)` for files of other
/// formats, for sub-agent transcripts (they are read with their session) and
/// for `agent-*.jsonl` files whose session file sits beside them.
pub fn open_file(p: &Path) -> Result<Option<Box<dyn Store>>> {
    open_probed(&super::Probe::new(p))
}

/// [`open_file`] of the file `probe` reads: its first line is the one the
/// probe read for every format (when complete), the rest read here.
fn open_probed(probe: &super::Probe<'_>) -> Result<Option<Box<dyn Store>>> {
    let p = probe.path();
    if !is_jsonl(p) || !p.is_file() {
        return Ok(None);
    }
    let parent = p.parent().unwrap_or(Path::new("."));
    if parent.file_name().is_some_and(|n| n == "subagents") {
        return Ok(None);
    }
    let first = probe.first_line()?;
    let id = stem(p);
    let agent = id.starts_with("agent-");
    let s = sniff_from(p, first.complete.then_some(first.bytes.as_slice()), agent)?;
    let empty_or_broken = s.nothing_parsed && uuid_like(&id);
    let loose = s.message_line && uuid_like(&id);
    if !s.claude && !empty_or_broken && !loose {
        return Ok(None);
    }
    if agent {
        if let Some(sid) = &s.session_id {
            if sid != &id && parent.join(format!("{sid}.jsonl")).is_file() {
                return Ok(None);
            }
        }
    }
    Ok(Some(Box::new(ClaudeStore::new(p, &id))))
}

/// The `agent-*.jsonl` files of `dir` with the session id their lines name,
/// sorted; read once per folder and shared, not copied for each session
/// (a project of older versions can hold hundreds of them beside hundreds
/// of sessions).
fn agents_beside(dir: &Path) -> std::sync::Arc<Vec<(PathBuf, Option<String>)>> {
    type Listing = std::sync::Arc<Vec<(PathBuf, Option<String>)>>;
    static CACHE: std::sync::OnceLock<std::sync::Mutex<rustc_hash::FxHashMap<PathBuf, Listing>>> =
        std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(dir).cloned()) {
        return v;
    }
    let mut v: Vec<(PathBuf, Option<String>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    is_jsonl(p)
                        && crate::fsx::ensure_regular(p).is_ok()
                        && file_name(p).starts_with("agent-")
                })
                .map(|p| {
                    let sid = sniff(&p).ok().and_then(|s| s.session_id);
                    (p, sid)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    let v: Listing = std::sync::Arc::new(v);
    if let Ok(mut c) = cache.lock() {
        c.insert(dir.to_path_buf(), v.clone());
    }
    v
}

/// One Claude Code session: its main file and its sub-agent files.
pub struct ClaudeStore {
    main: PathBuf,
    id: String,
    /// Sub-agent transcripts, sorted: `<id>/subagents/*.jsonl`, then
    /// `agent-*.jsonl` beside the main file whose lines name this session.
    agents: Vec<PathBuf>,
    /// Bytes of each file as read by [`Store::load`] (main file first):
    /// the copy is written from the same bytes.
    snapshot: std::sync::OnceLock<Vec<u64>>,
    /// The session's [`Session::project_dir`] as [`Store::load`] read it,
    /// for the next steps (written after the session is dropped).
    project_dir: std::sync::OnceLock<Option<PathBuf>>,
}

impl ClaudeStore {
    fn new(main: &Path, id: &str) -> ClaudeStore {
        let dir = main.parent().unwrap_or(Path::new("."));
        let mut agents: Vec<PathBuf> = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir.join(id).join("subagents")) {
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| is_jsonl(p) && crate::fsx::ensure_regular(p).is_ok())
                .collect();
            v.sort();
            agents.extend(v);
        }
        if !id.starts_with("agent-") {
            agents.extend(
                agents_beside(dir)
                    .iter()
                    .filter(|(_, sid)| sid.as_deref() == Some(id))
                    .map(|(p, _)| p.clone()),
            );
        }
        ClaudeStore {
            main: main.to_path_buf(),
            id: id.to_string(),
            agents,
            snapshot: Default::default(),
            project_dir: Default::default(),
        }
    }

    /// The main file, then the sub-agent files.
    fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.main.clone()];
        v.extend(self.agents.iter().cloned());
        v
    }

    /// `<config dir>` when the file sits in `<config dir>/projects/<cwd>/`,
    /// else `None`.
    fn config_dir(&self) -> Option<PathBuf> {
        // Absolute first: `check .` run inside `projects/` names its files
        // `./<project>/<id>.jsonl`, whose `projects` folder only shows then.
        let main = crate::fsx::absolute(&self.main);
        let project = main.parent()?;
        let projects = project.parent()?;
        if projects.file_name()? == "projects" {
            Some(projects.parent()?.to_path_buf())
        } else {
            None
        }
    }

    /// Where a file of the session goes, relative to the main file's folder.
    fn relative(&self, f: &Path) -> PathBuf {
        let dir = self.main.parent().unwrap_or(Path::new("."));
        f.strip_prefix(dir)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| PathBuf::from(file_name(f)))
    }

    /// The files of the copy at `dest` that differ from their originals
    /// (as `(original, copy)`, main file first): the files a put-in-place
    /// step must move, a repaired sub-agent file as much as the main file.
    /// Each copy is compared with the bytes of its original it was written
    /// from ([`Store::load`]'s snapshot): by size, then byte by byte when
    /// the sizes agree. The main file alone when none differs, or when it is
    /// the session's only file.
    fn changed_files(&self, dest: &Path) -> Vec<(PathBuf, PathBuf)> {
        let files = self.files();
        // A session of one file (the usual case, and a huge transcript's):
        // nothing to compare, nor to read again.
        if files.len() == 1 {
            return vec![(self.main.clone(), dest.to_path_buf())];
        }
        let lens: Vec<Option<u64>> = match self.snapshot.get() {
            Some(l) => l.iter().copied().map(Some).collect(),
            None => files
                .iter()
                .map(|f| crate::formats::complete_len(f).ok())
                .collect(),
        };
        let changed: Vec<(PathBuf, PathBuf)> = files
            .into_iter()
            .zip(self.copy_targets(dest))
            .zip(lens)
            .filter(|((src, copy), len)| len.is_none_or(|len| differs(src, len, copy)))
            .map(|(pair, _)| pair)
            .collect();
        if changed.is_empty() {
            vec![(self.main.clone(), dest.to_path_buf())]
        } else {
            changed
        }
    }
}

/// Whether `copy` differs from the first `len` bytes of `original`; a file
/// that cannot be read counts as different (a step then names it rather
/// than leave a changed file out).
fn differs(original: &Path, len: u64, copy: &Path) -> bool {
    use std::io::Read;
    const CHUNK: usize = 1 << 20;
    if std::fs::metadata(copy).map(|m| m.len()).ok() != Some(len) {
        return true;
    }
    let (Ok(a), Ok(b)) = (
        crate::fsx::open_regular(original),
        std::fs::File::open(copy),
    ) else {
        return true;
    };
    let (mut a, mut b) = (a.take(len), b.take(len));
    let (mut ba, mut bb) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut left = len;
    while left > 0 {
        let n = CHUNK.min(usize::try_from(left).unwrap_or(CHUNK));
        if a.read_exact(&mut ba[..n]).is_err() || b.read_exact(&mut bb[..n]).is_err() {
            return true;
        }
        if ba[..n] != bb[..n] {
            return true;
        }
        left -= n as u64;
    }
    false
}

/// The name of the folder under `projects/` Claude Code keeps the sessions
/// of the absolute folder `cwd` in: every character that is not an ASCII
/// letter or digit replaced by `-` (JavaScript's
/// `replace(/[^a-zA-Z0-9]/g, "-")`, which replaces each UTF-16 unit: two
/// for a character beyond the BMP). Checked on every transcript of
/// fixtures/ and of the shared real sessions whose folder was not renamed
/// (test `every_fixture_folder_is_its_cwd_encoded`). `None` for a relative
/// path.
pub(crate) fn encoded_project_folder(cwd: &Path) -> Option<String> {
    if !cwd.is_absolute() {
        return None;
    }
    let s = cwd.to_str()?;
    Some(
        s.chars()
            .flat_map(|c| {
                let (c, n) = if c.is_ascii_alphanumeric() {
                    (c, 1)
                } else {
                    ('-', c.len_utf16())
                };
                std::iter::repeat_n(c, n)
            })
            .collect(),
    )
}

/// A path or folder name shown inside a sentence or a `#` comment: control
/// characters (a line break would end the comment) as `?`.
fn shown(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// `paths` quoted for the shell, joined by `, `.
fn sh_list<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> String {
    paths
        .into_iter()
        .map(|p| crate::formats::sh(p))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store for ClaudeStore {
    fn agent(&self) -> Agent {
        Agent::ClaudeCode
    }

    fn path(&self) -> &Path {
        &self.main
    }

    fn source_files(&self) -> Vec<PathBuf> {
        self.files()
    }

    /// The `projects/` folder when the file sits in `projects/<cwd>/`.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        self.config_dir()
            .map(|c| vec![c.join("projects")])
            .unwrap_or_default()
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        Ok(vec![self.id.clone()])
    }

    fn load(&self, id: &str) -> Result<Session> {
        if id != self.id {
            anyhow::bail!("{}: no session {id}", self.main.display());
        }
        let (s, lens) = parse::load(&self.id, &self.files())?;
        let _ = self.snapshot.set(lens);
        let _ = self.project_dir.set(s.project_dir.clone());
        Ok(s)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl Applier for ClaudeStore {
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        edit::apply(session, edits)
    }

    fn apply_owned(&self, session: Session, edits: &[Edit]) -> Result<Session> {
        edit::apply_owned(session, edits)
    }
}

impl Copier for ClaudeStore {
    /// `projects/<encoded cwd>/<id>.jsonl` (the layout Claude Code reads), or
    /// `<id>.jsonl` for a file outside a `projects/` tree. Sub-agent files go
    /// beside it in the same relative places.
    fn copy_path(&self) -> PathBuf {
        let name = self.main.file_name().map(PathBuf::from).unwrap_or_default();
        match self.config_dir() {
            Some(cfg) => crate::fsx::absolute(&self.main)
                .strip_prefix(&cfg)
                .map(Path::to_path_buf)
                .unwrap_or(name),
            None => name,
        }
    }

    fn copy_base(&self) -> PathBuf {
        self.config_dir().unwrap_or_else(|| {
            self.main
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("."))
        })
    }

    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        let mut v = vec![dest.to_path_buf()];
        v.extend(self.agents.iter().map(|f| dir.join(self.relative(f))));
        v
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
        edit::describe(ix, edit)
    }

    /// Claude Code reads `$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl`
    /// (docs/formats/claude-code.md section 2), `<cwd>` the folder it runs
    /// in encoded ([`encoded_project_folder`]), and resumes with `--resume`
    /// from there. When the session's stored project folder
    /// ([`Session::project_dir`]) encodes to the folder the copy is in, the
    /// step `cd`s there (quoted) and resumes as printed; otherwise (no cwd
    /// stored, or a folder renamed since) it says in words which folder to
    /// run from. The id is quoted for the shell (as remedy commands quote it).
    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        use crate::formats::sh;
        let id = crate::formats::step_id(sessions.first().map(String::as_str));
        let cwd = self.project_dir.get().cloned().flatten();
        let encoded = cwd.as_deref().and_then(encoded_project_folder);
        const OWN: &str =
            "a config folder of its own: log in again there, or copy your credentials into it";
        // dest = <out>/projects/<cwd>/<id>.jsonl when laid out as Claude reads it.
        let home = dest
            .parent()
            .and_then(Path::parent)
            .filter(|p| p.file_name().is_some_and(|n| n == "projects"))
            .and_then(Path::parent);
        match home {
            Some(home) => {
                let resume = format!("CLAUDE_CONFIG_DIR={} claude --resume {id}", sh(home));
                let folder = dest
                    .parent()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let step = match (&cwd, &encoded) {
                    (Some(cwd), Some(e)) if *e == folder => {
                        format!("cd {} && {resume}   # {OWN}", sh(cwd))
                    }
                    _ => {
                        let why = match (&cwd, &encoded) {
                            (Some(cwd), Some(e)) => format!(
                                "the transcript names {}, which encodes to {} instead",
                                shown(&cwd.display().to_string()),
                                shown(e)
                            ),
                            (Some(cwd), None) => format!(
                                "the transcript names {}, not an absolute path",
                                shown(&cwd.display().to_string())
                            ),
                            _ => "the transcript names no folder".to_string(),
                        };
                        format!(
                            "run `{resume}` from the session's project folder, the one whose absolute path with every character but a letter or digit replaced by - is {} ({why}; {OWN})",
                            shown(&folder)
                        )
                    }
                };
                vec![step, put_in_place(&self.changed_files(dest), dest)]
            }
            None => {
                // Claude Code reads the whole session from its project
                // folder under its config folder (`$CLAUDE_CONFIG_DIR`, else
                // `~/.claude`): every file of the copy goes there.
                let base = format!(
                    "~/.claude/projects/{}",
                    encoded.as_deref().map_or_else(
                        || "<encoded project folder>".to_string(),
                        |e| sh(Path::new(e))
                    )
                );
                let name = dest
                    .file_name()
                    .map(|n| sh(Path::new(n)))
                    .unwrap_or_default();
                let agents: Vec<PathBuf> = self.copy_targets(dest).into_iter().skip(1).collect();
                let side = if agents.is_empty() {
                    String::new()
                } else {
                    let places: Vec<String> = self
                        .agents
                        .iter()
                        .map(|f| format!("{base}/{}", sh(&self.relative(f))))
                        .collect();
                    format!(
                        " and the copies {} at {}",
                        sh_list(&agents),
                        places.join(", ")
                    )
                };
                let resume = match (&cwd, &encoded) {
                    (Some(cwd), Some(_)) => format!("`cd {} && claude --resume {id}`", sh(cwd)),
                    _ => format!("`claude --resume {id}` from the project folder"),
                };
                vec![format!(
                    "put the copy at {base}/{name}{side} (move the original aside first; under $CLAUDE_CONFIG_DIR/projects instead of ~/.claude/projects when you set CLAUDE_CONFIG_DIR), then {resume}"
                )]
            }
        }
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        let edits: Vec<&Edit> = edits.iter().filter(|e| *e.session_id == *self.id).collect();
        let lens = match self.snapshot.get() {
            Some(l) => l.clone(),
            None => self
                .files()
                .iter()
                .map(|f| crate::formats::complete_len(f))
                .collect::<Result<Vec<_>>>()?,
        };
        // Stage every file first, then move them into place: sub-agent files
        // before the main file, which lands last.
        let mut staged = Vec::new();
        for ((src, target), len) in self.files().iter().zip(self.copy_targets(dest)).zip(lens) {
            staged.push(edit::write_file(src, len, &target, &edits)?);
        }
        let mode = crate::formats::copy_mode(&self.main);
        for st in staged.into_iter().rev() {
            st.commit(mode, replace)?;
        }
        Ok(())
    }
}

/// The put-in-place step for the files of a copy at `dest` that differ
/// from their originals (`changed`: `(original, copy)`): "the copy" when
/// only the main file changed, else each copy named beside its original.
fn put_in_place(changed: &[(PathBuf, PathBuf)], dest: &Path) -> String {
    use crate::formats::sh;
    match changed {
        [(original, copy)] if copy == dest => format!(
            "or, with Claude Code closed, move the original {} aside and put the copy in its place",
            sh(original)
        ),
        [(original, copy)] => format!(
            "or, with Claude Code closed, move the original {} aside and put the copy {} in its place",
            sh(original),
            sh(copy)
        ),
        _ => format!(
            "or, with Claude Code closed, move the originals {} aside and put the copies {} in their places",
            sh_list(changed.iter().map(|(o, _)| o)),
            sh_list(changed.iter().map(|(_, c)| c))
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sniff from a probe's first line gives what reading the file
    /// from its start gives: on every `.jsonl` of `fixtures/` and on files
    /// made to end or decide at line 1 or later (empty, one line without a
    /// line feed, a title line before the first line naming the session,
    /// lines that are not JSON).
    #[test]
    fn a_sniff_from_the_probed_first_line_matches_a_sniff_of_the_file() {
        let t = tempfile::tempdir().unwrap();
        let made = [
            "",
            r#"{"type":"summary","summary":"s","leafUuid":"u"}"#,
            "{\"type\":\"summary\",\"summary\":\"s\",\"leafUuid\":\"u\"}\n{\"parentUuid\":null,\"sessionId\":\"abc\",\"uuid\":\"u\"}\n",
            "{\"parentUuid\":null,\"sessionId\":\"abc\",\"uuid\":\"u\"}\n",
            "not json\n{\"parentUuid\":null,\"uuid\":\"u\"}\nnot json either",
            "\n\n\n",
        ];
        let mut files: Vec<PathBuf> = made
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let p = t.path().join(format!("made-{i}.jsonl"));
                std::fs::write(&p, text).unwrap();
                p
            })
            .collect();
        files.extend(
            walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
                .into_iter()
                .filter_map(Result::ok)
                .map(walkdir::DirEntry::into_path)
                .filter(|p| is_jsonl(p)),
        );
        let (mut decided_at_one, mut read_on) = (0, 0);
        for p in &files {
            let probe = crate::formats::Probe::new(p);
            let first = probe.first_line().unwrap();
            assert!(first.complete);
            let from_probe = sniff_from(p, Some(&first.bytes), true).unwrap();
            let whole = sniff(p).unwrap();
            assert_eq!(from_probe, whole, "{}", p.display());
            // A sniff that need not find the session answers whether the
            // file is a transcript as the whole sniff does.
            let quick = sniff_from(p, Some(&first.bytes), false).unwrap();
            assert_eq!(
                (quick.claude, quick.claude || quick.nothing_parsed),
                (whole.claude, whole.claude || whole.nothing_parsed),
                "{}",
                p.display()
            );
            let mut one = Sniff {
                claude: false,
                nothing_parsed: true,
                message_line: false,
                session_id: None,
                need_session: true,
            };
            if one.take(&first.bytes) {
                decided_at_one += 1;
            } else {
                read_on += 1;
            }
        }
        assert!(files.len() > 30, "{} files", files.len());
        assert!(
            decided_at_one > 10 && read_on > 10,
            "{decided_at_one} / {read_on}"
        );
    }

    #[test]
    fn uuid_shape() {
        assert!(uuid_like("0a40fb08-409e-47b5-867c-464f5acf52d8"));
        assert!(!uuid_like("agent-c8d9b115"));
        assert!(!uuid_like("0a40fb08-409e-47b5-867c-464f5acf52dz"));
    }

    #[test]
    fn only_transcript_lines_qualify() {
        let yes = [
            r#"{"parentUuid":null,"type":"user","uuid":"a"}"#,
            r#"{"type":"queue-operation","sessionId":"s"}"#,
            r#"{"type":"summary","summary":"t","leafUuid":"x"}"#,
        ];
        let no = [
            r#"{"type":"system","session_id":"s","uuid":"u"}"#,
            r#"{"timestamp":"t","type":"session_meta","payload":{}}"#,
            r#"[1,2]"#,
        ];
        for y in yes {
            assert!(looks_like_claude(&serde_json::from_str(y).unwrap()), "{y}");
        }
        for n in no {
            assert!(!looks_like_claude(&serde_json::from_str(n).unwrap()), "{n}");
        }
    }

    #[test]
    fn part_ids_are_allocated_at_their_length() {
        let u = "0a40fb08-409e-47b5-867c-464f5acf52d8";
        for (k, want) in [(0, "#0"), (9, "#9"), (10, "#10"), (123, "#123")] {
            let id = parse::block_id(u, k);
            assert_eq!(id, format!("{u}{want}"));
            assert_eq!(id.capacity(), id.len(), "{id}");
        }
        let id = parse::part_id(u, "compactMetadata");
        assert_eq!(id, format!("{u}#compactMetadata"));
        assert_eq!(id.capacity(), id.len());
    }

    /// Fuzz input whole_claude-23: a message line with neither `sessionId`
    /// nor `parentUuid` (after a line that is not JSON) makes a store of a
    /// file named by a session uuid only; stream-json and Codex lines do not.
    #[test]
    fn a_loose_message_line_makes_a_store_only_of_a_uuid_named_file() {
        let text = b"{]\n{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"u8\"}\n";
        let (dir, p) = transcript(text);
        let store = open_file(&p).unwrap().expect("a uuid-named transcript");
        let ids = store.session_ids().unwrap();
        assert_eq!(store.load(&ids[0]).unwrap().messages.len(), 1);
        let other = dir.path().join("notes.jsonl");
        std::fs::write(&other, text).unwrap();
        assert!(open_file(&other).unwrap().is_none());
        for line in [
            r#"{"type":"user","message":{"role":"user"},"uuid":"u","session_id":"s"}"#,
            r#"{"type":"user","message":{"role":"user"},"uuid":"u","payload":{}}"#,
            r#"{"type":"system","message":{"role":"user"},"uuid":"u"}"#,
            r#"{"type":"user","message":"hi","uuid":"u"}"#,
        ] {
            let (_d, p) = transcript(line.as_bytes());
            assert!(open_file(&p).unwrap().is_none(), "{line}");
        }
    }

    /// `bytes` as a transcript named like a session, in a new folder.
    fn transcript(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir
            .path()
            .join("0a40fb08-409e-47b5-867c-464f5acf52d8.jsonl");
        std::fs::write(&p, bytes).unwrap();
        (dir, p)
    }

    /// Fuzz input whole_claude-17: a line with a byte that is not UTF-8 in a
    /// key is read by the sniff exactly as the loader reads it (its
    /// repaired copy was not found when the two disagreed). Both read it
    /// with U+FFFD for the byte, as Claude Code (Node.js) does; it was
    /// unreadable to both before (stop 41).
    #[test]
    fn a_line_with_a_byte_that_is_not_utf8_in_a_key_is_read_alike_by_sniff_and_loader() {
        let mut text = b"{}\n{\"type\":\"queue-operation\",\"timesta".to_vec();
        text.extend_from_slice(b"\xadp\":\"2026-11-22T12:08:09.340Z\",\"sessionId\":\"a\"}");
        let (_dir, p) = transcript(&text);
        let line = &text[3..];
        let lossy: Value = serde_json::from_str(&String::from_utf8_lossy(line)).unwrap();
        assert_eq!(sniff_value(line), Some(lossy));
        assert!(parse::Fields::read(line, &mut None).is_ok());
        let found = sniff(&p).unwrap().claude;
        assert!(found);
        let store = open_file(&p).unwrap().expect("a transcript");
        let ids = store.session_ids().unwrap();
        let s = store.load(&ids[0]).unwrap();
        assert!(s.problems.is_empty(), "{:?}", s.problems);
    }

    /// Fuzz input whole_claude-16: a compacted copy whose only message line
    /// holds a byte that is not UTF-8 (in a field the loader skips) was not
    /// found as a Claude Code store, while the same line loaded as a message.
    #[test]
    fn a_line_with_a_byte_that_is_not_utf8_is_still_a_transcript_line() {
        let mut line =
            br#"{"type":"assistant","parentUuid":null,"uuid":"a","message":{"role":"assistan"#
                .to_vec();
        line.extend_from_slice(b"\xb9\",\"content\":[]}}\n{\"silly\":\"this\"}\n");
        let (_dir, p) = transcript(&line);
        let v = sniff_value(&line[..line.iter().position(|&b| b == b'\n').unwrap()]).unwrap();
        assert_eq!(v["message"]["role"], "assistan\u{fffd}");
        let s = sniff(&p).unwrap();
        assert!(s.claude && !s.nothing_parsed);
        assert!(open_file(&p).unwrap().is_some());
    }

    /// Fuzz input whole_claude-22: a compacted copy whose first message line
    /// holds a lone surrogate escape in a key of its usage (which Node.js's
    /// `JSON.parse` takes, serde_json's tree refuses, and the loader leaves
    /// raw) was not found as a Claude Code store, while the line loaded as a
    /// message; a line with one in a top-level key stays unread by both.
    #[test]
    fn a_line_with_a_lone_surrogate_escape_is_sniffed_as_the_loader_reads_it() {
        let line = br#"{"parentUuid":"p","sessionId":"s","type":"assistant","uuid":"a","message":{"role":"assistant","content":[],"usage":{"cache_creat\ud800ion_input_tokens":1}}}"#;
        assert!(serde_json::from_slice::<Value>(line).is_err());
        let v = sniff_value(line).expect("read as the loader reads it");
        assert_eq!(v[field::PARENT], "p");
        assert_eq!(v[field::SESSION], "s");
        let (_dir, p) = transcript(&[&b"{\"other\":1}\n"[..], line, b"\n"].concat());
        let s = sniff(&p).unwrap();
        assert!(s.claude && s.session_id.as_deref() == Some("s"));
        let store = open_file(&p).unwrap().expect("a transcript");
        let ids = store.session_ids().unwrap();
        let loaded = store.load(&ids[0]).unwrap();
        assert_eq!(loaded.messages.len(), 1);
        let bad_key = br#"{"parentUuid":"p","sessionId":"s","uuid":"a","x\ud800":1}"#;
        assert!(sniff_value(bad_key).is_none());
        assert!(parse::Fields::read(bad_key, &mut None).is_err());
    }

    #[test]
    fn a_project_folder_encodes_every_character_but_letters_and_digits() {
        let e = |p: &str| encoded_project_folder(Path::new(p));
        assert_eq!(
            e("/Users/dain/workspace/danieldemmel.me-next").as_deref(),
            Some("-Users-dain-workspace-danieldemmel-me-next")
        );
        assert_eq!(
            e("/home/dev/cc-dev/claude/double_compact/proj").as_deref(),
            Some("-home-dev-cc-dev-claude-double-compact-proj")
        );
        // One `-` per UTF-16 unit, as JavaScript's regex replaces them.
        assert_eq!(e("/a é/😀b").as_deref(), Some("-a-----b"));
        assert_eq!(e("relative/dir"), None);
    }

    /// The rule holds on every transcript of fixtures/ kept in a
    /// `projects/<folder>/` that has messages: its stored cwd (the first one) encodes to the
    /// folder, but in the two claude-code-log folders renamed when that
    /// data was sanitized (their lines name /Users/dain/workspace/claude-code-log
    /// and /home/user/project).
    #[test]
    fn every_fixture_folder_is_its_cwd_encoded() {
        let mut matched = 0;
        let mut renamed = std::collections::BTreeSet::new();
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            let p = e.path();
            let in_projects = p
                .parent()
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .is_some_and(|n| n == "projects");
            if !is_jsonl(p) || !in_projects {
                continue;
            }
            let id = p.file_stem().unwrap().to_string_lossy();
            let (s, _) = parse::load(&id, &[p.to_path_buf()]).unwrap();
            let folder = p.parent().unwrap().file_name().unwrap().to_str().unwrap();
            // A file of metadata lines only (a legacy summary file) names
            // no folder.
            let Some(cwd) = s.project_dir.as_deref() else {
                assert!(s.messages.is_empty(), "{}", p.display());
                continue;
            };
            if encoded_project_folder(cwd).as_deref() == Some(folder) {
                matched += 1;
            } else {
                renamed.insert(folder.to_string());
            }
        }
        assert!(matched >= 10, "{matched}");
        assert_eq!(
            renamed.into_iter().collect::<Vec<_>>(),
            [
                "-Users-dain-workspace-claude-code-log-sample",
                "-experiments-ideas"
            ]
        );
    }
}
