//! OpenAI Codex CLI rollouts: `${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`
//! and `archived_sessions/rollout-*.jsonl`, one JSON object per line
//! (`{timestamp, type, payload}`; the older envelope-less format too). Shapes:
//! docs/formats/codex.md sections 1 to 3, and the real rollouts of
//! Codex 0.104 (codex/localpush) and 0.169 (codex-gen).
//!
//! A store is one rollout file, which holds one session. Files are streamed
//! line by line (memory bounded by the longest line, see `parse.rs`); a copy is
//! written by streaming the original again: a line no edit touches is copied
//! byte for byte, an edited line is re-read, edited as JSON (unknown fields
//! kept) and written as compact JSON. Originals are opened read-only.

mod edit;
pub(crate) mod parse;
mod view;

use crate::edit::Applier;
use crate::edit::{Edit, StoredChange};
use crate::formats::{Copier, Store};
use crate::model::{Agent, Session};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use parse::{visible_view, EFFECTIVE_WINDOW_PERCENT};

/// Ids session-doctor gives Codex lines, items and parts (Codex stores none
/// that are unique per line): `L<line>` for the message of a line,
/// `L<line>.rh<k>` for item `k` of a `compacted` line's `replacement_history`,
/// `<message>#<k>` for content item `k` of a message (`#0` for items with a
/// single part), `<message>#note` for a note a compact copy adds. Line numbers
/// are 1-based and name the lines of the file that was read.
///
/// Every id is an [`Id`](crate::model::Id), held inline up to 15 bytes: `L2415110`,
/// `L2415110#12` and `L2415110.rh12` take 8, 11 and 13, so the millions of
/// ids of a rollout allocate nothing.
pub mod ids {
    use crate::model::Id;
    use ecow::eco_format;

    /// Id of the message of line `n`.
    pub fn line(n: u64) -> Id {
        // Written digits first, not through `format!` (one id per line).
        let mut id = Id::new();
        id.push('L');
        id.push_str(itoa::Buffer::new().format(n));
        id
    }

    /// Id of item `k` of the `replacement_history` of line message `line_id`.
    pub fn rh(line_id: &str, k: usize) -> Id {
        eco_format!("{line_id}.rh{k}")
    }

    /// Id of part `k` of message `message_id`.
    pub fn part(message_id: &str, k: usize) -> Id {
        let mut id = Id::from(message_id);
        id.push('#');
        id.push_str(itoa::Buffer::new().format(k));
        id
    }

    /// Id of the note part a compact copy adds to `message_id`.
    pub fn note_part(message_id: &str) -> Id {
        eco_format!("{message_id}#note")
    }

    /// `(line, replacement_history index)` of a message id.
    pub fn parse_message(id: &str) -> Option<(u64, Option<usize>)> {
        let rest = id.strip_prefix('L')?;
        match rest.split_once(".rh") {
            Some((l, k)) => Some((l.parse().ok()?, Some(k.parse().ok()?))),
            None => Some((rest.parse().ok()?, None)),
        }
    }

    /// `(message id, part index)` of a part id; `None` as the index for a note.
    pub fn parse_part(id: &str) -> Option<(&str, Option<usize>)> {
        let (m, k) = id.rsplit_once('#')?;
        if k == "note" {
            return Some((m, None));
        }
        Some((m, Some(k.parse().ok()?)))
    }
}

/// The Codex format. Any `.jsonl` is looked at: a rollout is recognised by
/// its first line, whatever its name.
pub struct Codex;

impl super::Format for Codex {
    fn name(&self) -> &'static str {
        "Codex rollout-*.jsonl"
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

    /// A `rollout-*.jsonl` whose first line is a JSON object of no Codex
    /// shape (one that is not JSON is opened, and its lines reported).
    fn not_mine(&self, p: &Path) -> Option<super::NotMine> {
        is_rollout(p).then(|| super::NotMine {
            why: "line 1: not a Codex CLI line (expected an object with `type` and `payload`, or a legacy header with `id` and `timestamp`)".to_string(),
            common_name: false,
        })
    }

    /// `sessions/` and `archived_sessions/` under `$CODEX_HOME`, else `$HOME/.codex`.
    fn default_places(&self) -> &'static str {
        "Codex sessions/ and archived_sessions/ under $CODEX_HOME or $HOME/.codex"
    }

    fn default_paths(&self) -> Vec<PathBuf> {
        codex_home()
            .map(|h| vec![h.join("sessions"), h.join("archived_sessions")])
            .unwrap_or_default()
    }
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "jsonl")
}

/// `rollout-*.jsonl`: the name Codex gives every rollout.
pub fn is_rollout(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with("rollout-") && name.ends_with(".jsonl")
}

/// A first line (see [`super::Probe::first_line`]), parsed, if it is a JSON object.
fn parse_first(buf: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(parse::trim_eol(buf))
        .ok()
        .filter(Value::is_object)
}

/// The first line of `p`, parsed, if it is a JSON object within [`super::PROBE_LINE_BYTES`].
fn first_line(p: &Path) -> Result<Option<Value>> {
    super::Probe::new(p)
        .first_line()
        .map(|l| parse_first(&l.bytes))
}

/// Whether a first line may be a Codex line, answered without parsing it
/// (most `.jsonl` files met while walking are Claude Code transcripts):
/// [`parse::looks_like_codex`] needs a top-level `payload` key, `id` and
/// `timestamp` keys, or a `RolloutItem` type name, so a line holding none
/// of these names, and no `\u` escape that could spell one, is not one.
fn maybe_codex(line: &[u8]) -> bool {
    let has = |k: &[u8]| memchr::memmem::find(line, k).is_some();
    has(b"\\u")
        || has(b"\"payload\"")
        || (has(b"\"id\"") && has(b"\"timestamp\""))
        || parse::ENVELOPE_TYPES
            .iter()
            .any(|t| has(format!("\"{t}\"").as_bytes()))
}

/// Opens a rollout: a `.jsonl` whose first line is a Codex line (any name),
/// or a `rollout-*.jsonl` whose first line is not JSON (a damaged rollout).
/// `Ok(None)` for other files.
pub fn open_file(p: &Path) -> Result<Option<Box<dyn Store>>> {
    open_probed(&super::Probe::new(p))
}

/// [`open_file`] of the file `probe` reads (its first line shared with the
/// other formats that sniff it).
fn open_probed(probe: &super::Probe<'_>) -> Result<Option<Box<dyn Store>>> {
    let p = probe.path();
    if !is_jsonl(p) {
        return Ok(None);
    }
    let line = &probe.first_line()?.bytes;
    if !is_rollout(p) && !maybe_codex(line) {
        return Ok(None);
    }
    match parse_first(line) {
        Some(v) if parse::looks_like_codex(&v) => {}
        Some(_) => return Ok(None),
        None if is_rollout(p) => {}
        None => return Ok(None),
    }
    Ok(Some(Box::new(CodexStore {
        path: p.to_path_buf(),
        snapshot: Default::default(),
    })))
}

/// `$CODEX_HOME`, else `$HOME/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".codex"))
        })
}

/// The uuid at the end of a `rollout-<ts>-<uuid>.jsonl` name, else the stem.
/// Cuts on character boundaries only (names are user data).
fn id_from_name(p: &Path) -> String {
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let chars: Vec<char> = stem.chars().collect();
    if chars.len() >= 36 {
        let tail: String = chars.iter().skip(chars.len() - 36).collect();
        let uuid = tail.split('-').map(str::len).eq([8, 4, 4, 4, 12])
            && tail.chars().all(|c| c == '-' || c.is_ascii_hexdigit());
        if uuid {
            return tail;
        }
    }
    stem
}

/// One rollout file, opened read-only.
pub struct CodexStore {
    path: PathBuf,
    /// Bytes of the file as read by [`Store::load`] (its size when opened,
    /// cut to the last complete line when the agent was still appending):
    /// the copy is written from the same bytes.
    snapshot: std::sync::OnceLock<u64>,
}

impl CodexStore {
    /// The Codex home the file is in (the folder that holds `sessions/` or
    /// `archived_sessions/` above it) and the file's path below it; `None`
    /// for a rollout outside any Codex home.
    fn home_above(&self) -> Option<(PathBuf, PathBuf)> {
        let mut dir = self.path.parent();
        while let Some(d) = dir {
            if d.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
            {
                if let (Some(home), Ok(rel)) =
                    (d.parent(), self.path.strip_prefix(d.parent().unwrap_or(d)))
                {
                    return Some((home.to_path_buf(), rel.to_path_buf()));
                }
            }
            dir = d.parent();
        }
        None
    }

    /// The step that gives the copy's Codex home `home` the settings and
    /// login of the Codex home the rollout is in ([`CodexStore::home_above`],
    /// which `CODEX_HOME` names: `~/.codex` by default): a `cp` of the
    /// `config.toml` and `auth.json` found there, or, when the rollout is in
    /// no Codex home or that home holds neither, a sentence saying so.
    fn settings_step(&self, home: &Path) -> String {
        use crate::formats::sh;
        let why = "the copy's Codex home needs your settings and login";
        let put = |whose: String| {
            format!(
                "put config.toml and auth.json from the Codex home you use into {}/ ({why}; {whose})",
                sh(home)
            )
        };
        let Some((src_home, _)) = self.home_above() else {
            return put(format!(
                "{} is in no Codex home: no sessions/ or archived_sessions/ folder above it",
                sh(&crate::fsx::absolute(&self.path))
            ));
        };
        let src_home = crate::fsx::absolute(&src_home);
        let files = crate::formats::existing_files(&src_home, &["config.toml", "auth.json"]);
        if files.is_empty() {
            put(format!(
                "{}, the Codex home the rollout is in, holds neither",
                sh(&src_home)
            ))
        } else {
            format!("cp {} {}/   # {why}", files.join(" "), sh(home))
        }
    }

    /// The folder that holds `sessions/` or `archived_sessions/` above the
    /// file (the Codex home), and the file's path below it.
    fn home_and_rel(&self) -> (PathBuf, PathBuf) {
        if let Some(found) = self.home_above() {
            return found;
        }
        // Not under a Codex home: lay the copy out as Codex would
        // (sessions/YYYY/MM/DD from the file name's date).
        let name = self.path.file_name().unwrap_or_default().to_os_string();
        let n = name.to_string_lossy();
        let mut rel = PathBuf::from("sessions");
        let date = n.strip_prefix("rollout-").and_then(|r| r.get(..10));
        if let Some(d) = date {
            if let (Some(y), Some(m), Some(dd), Some("-"), Some("-")) = (
                d.get(..4),
                d.get(5..7),
                d.get(8..10),
                d.get(4..5),
                d.get(7..8),
            ) {
                if [y, m, dd]
                    .iter()
                    .all(|x| x.bytes().all(|b| b.is_ascii_digit()))
                {
                    rel = rel.join(y).join(m).join(dd);
                }
            }
        }
        let home = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        (home, rel.join(name))
    }
}

impl Store for CodexStore {
    fn agent(&self) -> Agent {
        Agent::Codex
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// The `sessions/` or `archived_sessions/` folder above the file, when
    /// it sits in a Codex home.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        let mut dir = self.path.parent();
        while let Some(d) = dir {
            if d.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
            {
                return vec![d.to_path_buf()];
            }
            dir = d.parent();
        }
        Vec::new()
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        let id = first_line(&self.path)?
            .and_then(|v| match parse::classify(&v, true) {
                parse::Line::Meta(p) => p.get("id").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .unwrap_or_else(|| id_from_name(&self.path));
        Ok(vec![id])
    }

    fn load(&self, id: &str) -> Result<Session> {
        use std::io::Read;
        let (f, len) = crate::fsx::open_regular_sized(&self.path)
            .with_context(|| format!("{}: cannot open", self.path.display()))?;
        let lines = crate::formats::estimate_lines(&f, len)
            .with_context(|| format!("{}: cannot read", self.path.display()))?;
        let mut s = parse::load_sized(
            f.take(len),
            &self.path,
            &id_from_name(&self.path),
            lines,
            len,
        )
        .with_context(|| format!("{}: cannot read", self.path.display()))?;
        let used = crate::formats::settle_growing_tail(&mut s, &self.path, 0, len);
        let _ = self.snapshot.set(used);
        if s.id != id {
            anyhow::bail!("{}: no session {id}", self.path.display());
        }
        Ok(s)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl Applier for CodexStore {
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        edit::apply(session, edits)
    }

    fn apply_owned(&self, session: Session, edits: &[Edit]) -> Result<Session> {
        edit::apply_owned(session, edits)
    }

    /// A cut's runs are dropped with one edit each, and with them the
    /// lines between their messages that hold no message (events, turn
    /// contexts; a header stays): the copy keeps no metadata of the history
    /// it no longer holds.
    fn drops_through(&self) -> bool {
        true
    }

    /// Codex reads the whole rollout on resume: a compact copy always keeps
    /// only `session_meta`, the newest `compacted` line and what follows it.
    fn replays_everything(&self) -> bool {
        true
    }
}

impl Copier for CodexStore {
    fn copy_base(&self) -> PathBuf {
        self.home_and_rel().0
    }

    /// `sessions/YYYY/MM/DD/rollout-….jsonl` (the path below the Codex home).
    fn copy_path(&self) -> PathBuf {
        self.home_and_rel().1
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, e: &Edit) -> StoredChange {
        edit::describe(ix, e)
    }

    /// Codex reads `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`
    /// (docs/formats/codex.md section 1) and resumes with `codex resume`.
    /// The id is quoted for the shell (as remedy commands quote it), after
    /// `--` when it starts with `-` (`codex resume` takes it as a
    /// positional argument, which would otherwise read as a flag).
    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        use crate::formats::sh;
        let first = sessions.first().map(String::as_str);
        let id = match first {
            Some(id) if id.starts_with('-') => format!("-- {}", crate::formats::step_id(first)),
            _ => crate::formats::step_id(first),
        };
        let rel = self.copy_path();
        let mut home = Some(dest);
        for _ in rel.components() {
            home = home.and_then(Path::parent);
        }
        let home = home.unwrap_or(Path::new("."));
        vec![
            self.settings_step(home),
            format!("CODEX_HOME={} codex resume {id}", sh(home)),
            format!(
                "or, with Codex closed, move the original {} aside and put the copy in its place",
                sh(&self.path)
            ),
        ]
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        let len = match self.snapshot.get() {
            Some(&n) => n,
            None => crate::formats::complete_len(&self.path)?,
        };
        edit::write_copy(&self.path, len, dest, edits, replace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The byte prefilter never turns away a line the parser takes for a
    /// Codex line: every first line of every fixture (and of
    /// ../shared/real-sessions when present), and keys spelled with escapes.
    #[test]
    fn maybe_codex_keeps_every_codex_first_line() {
        let (mut files, mut codex) = (0, 0);
        for root in [
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-sessions"),
        ] {
            for e in walkdir::WalkDir::new(root)
                .into_iter()
                .filter_map(Result::ok)
            {
                if e.path().extension().is_none_or(|x| x != "jsonl") {
                    continue;
                }
                let probe = crate::formats::Probe::new(e.path());
                let line = &probe.first_line().unwrap().bytes;
                files += 1;
                if parse_first(line).is_some_and(|v| parse::looks_like_codex(&v)) {
                    codex += 1;
                    assert!(maybe_codex(line), "{}", e.path().display());
                }
            }
        }
        assert!(
            codex >= 5 && files > codex,
            "{codex} Codex first lines of {files}"
        );
        for line in [
            r#"{"type":"event_msg","pay\u006coad":{}}"#,
            r#"{"\u0069d":"x","timestamp":"t"}"#,
            r#"{ "id" : "x" , "timestamp" : "t" }"#,
            r#"{"payl,oad":{"type":"task_complete"},"type":"event_msg"}"#,
            r#"{"type":"response_item"}"#,
        ] {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(parse::looks_like_codex(&v), "{line}");
            assert!(maybe_codex(line.as_bytes()), "{line}");
        }
        let claude =
            br#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u","timestamp":"t"}"#;
        assert!(!maybe_codex(claude));
        // A damaged Claude Code line with `id` and `timestamp` but no `type`
        // is not an envelope-less Codex header (fuzz input whole_claude-18).
        let damaged: Value = serde_json::from_str(
            r#"{"parentUuid":"p","isSidechain":false,"id":"x","timestamp":"t"}"#,
        )
        .unwrap();
        assert!(!parse::looks_like_codex(&damaged));
    }

    /// Fuzz input whole_codex-3: a compacted copy whose first line is a
    /// `RolloutItem` line with no `payload` (unreadable: the cut dropped the
    /// readable lines before it) was not found as a rollout. It is, under a
    /// rollout name or any other, and its first line is named; a line of
    /// another type, or with Claude Code's `parentUuid`, is not Codex's.
    #[test]
    fn a_first_line_without_payload_still_makes_a_rollout() {
        let t = tempfile::tempdir().unwrap();
        let text = concat!(
            r#"{"payl,oad":{"type":"task_complete"},"type":"event_msg"}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
            "\n"
        );
        for name in ["rollout-2026-01-01T00-00-00-x.jsonl", "copy.jsonl"] {
            let p = t.path().join(name);
            std::fs::write(&p, text).unwrap();
            let store = open_file(&p).unwrap().expect("a rollout");
            let ids = store.session_ids().unwrap();
            let s = store.load(&ids[0]).unwrap();
            assert_eq!(s.messages.len(), 1, "{name}");
            assert_eq!(s.problems.len(), 1, "{name}: {:?}", s.problems);
        }
        for line in [
            r#"{"type":"user","message":{}}"#,
            r#"{"parentUuid":null,"type":"event_msg"}"#,
        ] {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(!parse::looks_like_codex(&v), "{line}");
        }
    }

    /// Issue 8: lines that hold no message are not messages, and a run of
    /// dropped messages (one `drop-through` edit) takes the lines among and
    /// around them that hold none, but for a header, in the model as in the
    /// copy: the copy's bytes are what the model counts, and it reads as
    /// the model says.
    #[test]
    fn a_run_drops_the_lines_that_hold_no_message_among_its_messages_but_a_header() {
        let item = |t: &str| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{t}"}}]}}}}"#
            )
        };
        let event = |t: &str| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{{"type":"{t}"}}}}"#
            )
        };
        let meta =
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s-1"}}"#;
        let lines = [
            meta.to_string(),                                                 // 1: header
            event("task_started"),                                            // 2
            item("one"),                                                      // 3: L3
            event("agent_message"),                                           // 4
            meta.to_string(),     // 5: a header inside the run stays
            "   ".to_string(),    // 6: blank
            item("two"),          // 7: L7
            event("token_count"), // 8 (no info: holds nothing)
            r#"{"type":"turn_context","payload":{"model":"m"}}"#.to_string(), // 9
            item("three"),        // 10: L10, kept
            event("task_complete"), // 11
        ];
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("rollout-2026-01-01T00-00-00-s.jsonl");
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let store = open_file(&p).unwrap().expect("a rollout");
        let s = store.load("s-1").unwrap();
        let ids: Vec<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["L3", "L7", "L10"]);
        assert_eq!(s.meta_lines.len(), 8);
        assert_eq!(s.payload_bytes(), std::fs::metadata(&p).unwrap().len());
        let edit = Edit {
            session_id: "s-1".into(),
            message_id: "L3".into(),
            change: crate::edit::Change::DropThrough(Box::new(crate::edit::DropRun {
                last: "L7".into(),
                messages: 2,
                prev: None,
                next: Some("L10".into()),
            })),
        };
        let after = edit::apply(&s, std::slice::from_ref(&edit)).unwrap();
        let ids: Vec<&str> = after.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["L10"]);
        let dest = t.path().join("out.jsonl");
        store
            .copier()
            .write_copy(&dest, std::slice::from_ref(&edit), false)
            .unwrap();
        let copy = std::fs::read_to_string(&dest).unwrap();
        let got: Vec<&str> = copy.lines().collect();
        // Lines 1 and 5 (headers), then line 10 on.
        assert_eq!(
            got,
            [meta, meta, lines[9].as_str(), lines[10].as_str()],
            "{copy}"
        );
        assert_eq!(after.payload_bytes(), copy.len() as u64);
        let kinds: Vec<String> = after
            .meta_lines
            .by_kind()
            .into_iter()
            .map(|k| k.kind)
            .collect();
        assert_eq!(kinds, ["session_meta", "event_msg/task_complete"]);
        // The change names the lines dropped (2 to 9, less the header on 5).
        let changes = store.copier().describe_all(&s, std::slice::from_ref(&edit));
        let run = changes[0].run.as_ref().expect("a run");
        assert_eq!((run.first_line, run.last_line, run.lines), (2, 9, 7));
        assert_eq!(changes[0].edits(), 2);
    }

    #[test]
    fn ids_round_trip() {
        assert_eq!(ids::parse_message("L44"), Some((44, None)));
        assert_eq!(ids::parse_message(&ids::rh("L44", 3)), Some((44, Some(3))));
        assert_eq!(ids::parse_part("L44.rh3#2"), Some(("L44.rh3", Some(2))));
        assert_eq!(ids::parse_part(&ids::note_part("L9")), Some(("L9", None)));
        assert_eq!(ids::parse_message("msg_x"), None);
        // The digits are written as `format!` writes them, at the ends of the range too.
        for n in [1, 9, 10, 2_415_110, u64::MAX] {
            assert_eq!(ids::line(n), format!("L{n}"));
            assert_eq!(ids::parse_message(&ids::line(n)), Some((n, None)));
            for k in [0, 7, 12, usize::MAX] {
                assert_eq!(ids::part(&ids::line(n), k), format!("L{n}#{k}"));
            }
        }
    }

    #[test]
    fn usage_splits_cached_input_like_ccusage() {
        let u = parse::usage_of(&json!({"input_tokens": 7475, "cached_input_tokens": 5980,
            "cache_write_input_tokens": 0, "output_tokens": 15, "reasoning_output_tokens": 3,
            "total_tokens": 7490}));
        assert_eq!(
            (u.input, u.cache_read, u.output, u.reasoning),
            (1495, 5980, 15, 3)
        );
        assert_eq!(u.overflow_count(), 7490);
    }

    #[test]
    fn lines_of_both_formats_are_classified() {
        let meta = json!({"id": "x", "timestamp": "2025-05-01T10:00:00Z", "instructions": null});
        assert!(matches!(parse::classify(&meta, true), parse::Line::Meta(_)));
        assert!(matches!(
            parse::classify(
                &json!({"type": "message", "role": "user", "content": []}),
                false
            ),
            parse::Line::Item(_)
        ));
        assert!(matches!(
            parse::classify(&json!({"type": "world_state", "payload": {}}), false),
            parse::Line::Other { .. }
        ));
        assert!(parse::looks_like_codex(
            &json!({"type": "session_meta", "payload": {"id": "x"}})
        ));
        assert!(!parse::looks_like_codex(
            &json!({"type": "user", "parentUuid": null, "sessionId": "x"})
        ));
        // A damaged session_meta payload is still a rollout's line (fuzz
        // input whole_codex-2), and Claude Code's parentUuid still is not.
        assert!(parse::looks_like_codex(
            &json!({"type": "session_meta", "payload": "AAAA"})
        ));
        assert!(!parse::looks_like_codex(
            &json!({"type": "session_meta", "payload": "AAAA", "parentUuid": null})
        ));
        assert_eq!(parse::trim_eol(b"{}\r\n"), b"{}");
    }

    #[test]
    fn copies_are_laid_out_below_the_codex_home() {
        let s = CodexStore {
            path: PathBuf::from(
                "/h/.codex/sessions/2026/11/22/rollout-2026-11-22T12-07-50-x.jsonl",
            ),
            snapshot: Default::default(),
        };
        assert_eq!(s.copy_base(), PathBuf::from("/h/.codex"));
        assert_eq!(s.agent_dirs(), vec![PathBuf::from("/h/.codex/sessions")]);
        assert_eq!(
            s.copy_path(),
            PathBuf::from("sessions/2026/11/22/rollout-2026-11-22T12-07-50-x.jsonl")
        );
        let s = CodexStore {
            path: PathBuf::from("/tmp/rollout-2026-02-23T12-54-34-y.jsonl"),
            snapshot: Default::default(),
        };
        assert_eq!(s.copy_base(), PathBuf::from("/tmp"));
        assert!(s.agent_dirs().is_empty());
        assert_eq!(
            s.copy_path(),
            PathBuf::from("sessions/2026/02/23/rollout-2026-02-23T12-54-34-y.jsonl")
        );
        assert_eq!(
            id_from_name(Path::new(
                "rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ed.jsonl"
            )),
            "01a20327-d155-7513-b850-ad26df82d9ed"
        );
    }

    /// Issue 7 item 2: a name whose last 36 bytes start inside a multi-byte
    /// character must not panic.
    #[test]
    fn issue7_multibyte_rollout_name_does_not_panic() {
        let name = format!("rollout-{}a.jsonl", "é".repeat(40));
        assert_eq!(
            id_from_name(Path::new(&name)),
            name.trim_end_matches(".jsonl")
        );
    }
}
