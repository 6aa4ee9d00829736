//! Fuzz targets (issue 7, "Keep it that way"). Not part of the public API.
//!
//! Each target is a `pub fn(&[u8])` that must never panic, whatever the
//! bytes. The parser targets feed the bytes to one parser (an opencode
//! `message.data` / `part.data` JSON, a legacy `storage/` file, a Claude Code
//! transcript line or file, a Codex rollout line or file) and run the
//! findings and the repair plan on what it gives. The whole-path targets
//! (`whole_*`) make a store on disk from the bytes (a JSONL file, a minimal
//! opencode db, a legacy tree), then `discover` -> `load` -> `diagnose` ->
//! `repair::plan` and `compact::plan` -> `write_copy` -> load the copy, and
//! panic when a promise is broken:
//! - an original byte or file changed, or a file appeared beside it;
//! - a copy could not be written or does not load (same agent, same sessions);
//! - the repaired copy still holds a fault repair promises to fix
//!   (`src/treat/repair.rs`): a message repair re-parented still has a
//!   `stale-parent`, `dangling-parent` or sits in a `parent-cycle`, an id
//!   whose later copies it dropped is still duplicated, or `repair::plan`
//!   on the copy still finds parent links or copies to fix.
//!
//! Used by `tests/fuzz.rs` (stable, inside `cargo test`) and by the
//! cargo-fuzz crate in `fuzz/` (libFuzzer). [`seeds`] makes the seed corpora
//! from the fixtures.

use crate::diagnose::{diagnose, Options, Severity};
use crate::edit::Change;
use crate::formats::{discover, Store};
use crate::model::{Agent, LineRef, Message, ParentLinks, Session};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// A fuzz target.
pub type Target = fn(&[u8]);

/// Every target, by name (the names of the cargo-fuzz targets and corpora).
pub const TARGETS: &[(&str, Target)] = &[
    ("opencode_message", opencode_message),
    ("opencode_part", opencode_part),
    ("legacy_file", legacy_file),
    ("claude_line", claude_line),
    ("claude_transcript", claude_transcript),
    ("codex_line", codex_line),
    ("codex_rollout", codex_rollout),
    ("whole_claude", whole_claude),
    ("whole_codex", whole_codex),
    ("whole_opencode_db", whole_opencode_db),
    ("whole_legacy", whole_legacy),
    ("whole_hermes", whole_hermes),
    ("whole_docker_agent", whole_docker_agent),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Session id of every store the targets make.
const SID: &str = "ses_fuzz";
/// Claude Code session file stem (uuid-shaped, so an unparsable file is still a transcript).
const CLAUDE_ID: &str = "0a40fb08-409e-47b5-867c-464f5acf52d8";
/// Codex rollout file name.
const CODEX_NAME: &str = "rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ed.jsonl";
/// The fault codes repair fixes.
const REPAIRED_CODES: &[&str] = &[
    "stale-parent",
    "dangling-parent",
    "parent-cycle",
    "duplicate-id",
];

// ---------------------------------------------------------------- parsers

/// A small valid opencode session (user turn, assistant reply) the parser
/// targets put their message or part into.
/// (message id, message JSON, its parts as (part id, part JSON)).
type TemplateMessage = (String, Value, Vec<(String, Value)>);

fn opencode_template() -> Vec<TemplateMessage> {
    vec![
        (
            "msg_a".into(),
            serde_json::json!({"role":"user","time":{"created":1000},"agent":"build",
                "model":{"providerID":"stub","modelID":"stub-small"}}),
            vec![(
                "prt_a1".into(),
                serde_json::json!({"type":"text","text":"hello"}),
            )],
        ),
        (
            "msg_b".into(),
            serde_json::json!({"parentID":"msg_a","role":"assistant","modelID":"stub-small",
                "providerID":"stub","tokens":{"total":20,"input":15,"output":5,"reasoning":0,
                "cache":{"write":0,"read":0}},"time":{"created":2000,"completed":2100},"finish":"stop"}),
            vec![(
                "prt_b1".into(),
                serde_json::json!({"type":"text","text":"hi"}),
            )],
        ),
    ]
}

/// Builds an opencode session from the template plus `extra_msg` and
/// `extra_part` (message id, part), as the opencode loaders assemble one.
fn opencode_session(
    extra_msg: Option<Message>,
    extra_part: Option<(String, crate::model::Part)>,
) -> Session {
    use crate::formats::opencode::{parse_message, parse_part};
    let mut s = Session::new(Agent::Opencode, SID, None, PathBuf::from("fuzz"));
    for (mid, raw, parts) in opencode_template() {
        let n = raw.to_string().len() as u64;
        if let Ok(mut m) = parse_message(&mid, raw, n, None) {
            for (pid, p) in parts {
                let n = p.to_string().len() as u64;
                if let Ok(p) = parse_part(&pid, p, n) {
                    m.parts.push(p);
                }
            }
            s.messages.push(m);
        }
    }
    s.messages.extend(extra_msg);
    if let Some((message_id, p)) = extra_part {
        match s.messages.iter_mut().find(|m| m.id == message_id) {
            Some(m) => m.parts.push(p),
            None => s.orphan_parts.push(crate::model::OrphanPart {
                message_id,
                part: p,
            }),
        }
    }
    s.messages
        .sort_by(|a, b| (a.time_created(), &a.id).cmp(&(b.time_created(), &b.id)));
    s.visible = crate::formats::opencode::visible_view(&s.messages);
    s
}

/// Findings, figures and the repair plan of an in-memory session.
fn exercise_session(s: &Session) {
    let findings = diagnose(s, &Options::default());
    let _ = crate::diagnose::SeverityCounts::of(&findings);
    let _ = serde_json::to_string(&findings);
    let _ = (
        s.tokens_total(),
        s.context_tokens(),
        s.payload_bytes(),
        s.media_bytes(),
        s.part_count(),
        s.compactions(),
        s.visible_mask(),
        s.resume_model(),
    );
    for m in &s.messages {
        let _ = (m.tokens_estimated(), m.wire_bytes(), m.media_count());
    }
    let _ = crate::sizing::next_turn(s, None);
    let _ = crate::sizing::agent_overhead(s);
    let _ = crate::treat::repair::plan(s);
}

/// JSON text as SQLite hands it to the loader (UTF-8 only).
fn json_of(data: &[u8]) -> Option<Value> {
    serde_json::from_str(std::str::from_utf8(data).ok()?).ok()
}

/// An opencode `message.data` JSON (also a legacy message file's content).
/// The typed reader (`message_of_text`) must give what the tree reader
/// gives, or leave the text to it.
pub fn opencode_message(data: &[u8]) {
    use crate::formats::opencode::{message_of_text, parse_message};
    let n = data.len() as u64;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let v = serde_json::from_str::<Value>(text).ok();
    for tc in [None, Some(1500)] {
        let tree = v.clone().map(|v| parse_message("msg_fuzz", v, n, tc));
        if let Some(fast) = message_of_text("msg_fuzz", text, n, tc) {
            match &tree {
                Some(Ok(m)) => assert_eq!(format!("{fast:?}"), format!("{m:?}"), "typed reader"),
                other => panic!("typed reader read a message the tree reader refuses: {other:?}"),
            }
        }
        if let Some(Ok(m)) = tree {
            exercise_session(&opencode_session(Some(m), None));
        }
    }
}

/// An opencode `part.data` JSON, as a part of the template's reply.
/// The typed reader (`part_of_text`) must give what the tree reader gives,
/// or leave the text to it.
pub fn opencode_part(data: &[u8]) {
    use crate::formats::opencode::{parse_part, part_of_text};
    let n = data.len() as u64;
    if let Some(fast) = std::str::from_utf8(data)
        .ok()
        .and_then(|t| part_of_text("prt_fuzz", t, n))
    {
        match json_of(data).map(|v| parse_part("prt_fuzz", v, n)) {
            Some(Ok(p)) => assert_eq!(format!("{fast:?}"), format!("{p:?}"), "typed reader"),
            other => panic!("typed reader read a part the tree reader refuses: {other:?}"),
        }
    }
    let Some(v) = json_of(data) else { return };
    for mid in ["msg_b", "msg_a", "msg_gone"] {
        if let Ok(p) = crate::formats::opencode::parse_part("prt_fuzz", v.clone(), n) {
            exercise_session(&opencode_session(None, Some((mid.to_string(), p))));
        }
    }
}

/// One Claude Code transcript line.
pub fn claude_line(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if !v.is_object() {
        return;
    }
    let line = LineRef {
        file: 0,
        line: std::num::NonZeroU32::MIN,
        offset: 0,
        bytes: data.len() as u64 + 1,
    };
    for sidechain in [false, true] {
        if let Some(m) = crate::formats::claude::parse::parse_line(&v, line, sidechain) {
            let mut s = Session::new(Agent::ClaudeCode, CLAUDE_ID, None, PathBuf::from("fuzz"));
            s.parent_links = ParentLinks::Chain;
            s.messages.push(m.clone());
            s.messages.push(m);
            s.visible = (0..s.messages.len()).collect();
            exercise_session(&s);
        }
    }
}

/// One Codex rollout line, parsed alone and loaded as a one-line rollout;
/// the typed read must load what the tree reader loads.
pub fn codex_line(data: &[u8]) {
    use crate::formats::codex::parse;
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = parse::looks_like_codex(&v);
        let _ = parse::time_ms(&v);
        let _ = parse::json_len(&v);
        if v.is_object() {
            let line = LineRef {
                file: 0,
                line: std::num::NonZeroU32::MIN,
                offset: 0,
                bytes: data.len() as u64 + 1,
            };
            for first in [true, false] {
                let _ = parse::classify(&v, first);
                if let Some(ms) = parse::line_messages(&v, first, line, 0) {
                    let _ = parse::visible_view(&ms);
                }
            }
        }
    }
    let mut two = data.to_vec();
    two.push(b'\n');
    two.extend_from_slice(data);
    for bytes in [data, &two[..]] {
        if let Ok(s) = parse::load(bytes, Path::new(CODEX_NAME), "fuzz") {
            exercise_session(&s);
        }
        codex_typed_read_agrees(bytes);
    }
}

/// The typed read of a rollout loads what the tree reader loads.
fn codex_typed_read_agrees(bytes: &[u8]) {
    let path = Path::new(CODEX_NAME);
    if let Ok((fast, tree)) = crate::formats::codex::parse::load_both_ways(bytes, path) {
        assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "typed reader");
    }
}

/// A whole Codex rollout, read from memory.
pub fn codex_rollout(data: &[u8]) {
    if let Ok(s) = crate::formats::codex::parse::load(data, Path::new(CODEX_NAME), "fuzz") {
        exercise_session(&s);
    }
    codex_typed_read_agrees(data);
}

// ------------------------------------------------------------ disk stores

/// A temp dir for one run: `src/` holds the store, `out/` the copies.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// In `$SD_FUZZ_TMPDIR`, else `/dev/shm` when there is one (copies are
    /// fsynced: a disk makes every run slow), else the temp dir.
    fn new() -> Option<Scratch> {
        let base = std::env::var_os("SD_FUZZ_TMPDIR")
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from("/dev/shm")).filter(|p| p.is_dir()))
            .unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::Builder::new()
            .prefix("sd-fuzz-")
            .tempdir_in(&base)
            .or_else(|_| tempfile::Builder::new().prefix("sd-fuzz-").tempdir())
            .ok()?;
        std::fs::create_dir(dir.path().join("src")).ok()?;
        Some(Scratch { dir })
    }
    fn src(&self) -> PathBuf {
        self.dir.path().join("src")
    }
    fn out(&self, what: &str) -> PathBuf {
        self.dir.path().join("out").join(what)
    }
}

fn write_file(p: &Path, bytes: &[u8]) -> Option<()> {
    std::fs::create_dir_all(p.parent()?).ok()?;
    std::fs::write(p, bytes).ok()
}

/// Every file and folder under `root`, with the files' bytes.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap_or(e.path())
            .to_path_buf();
        let bytes = e
            .file_type()
            .is_file()
            .then(|| std::fs::read(e.path()).unwrap_or_default());
        m.insert(rel, bytes);
    }
    m
}

/// A Claude Code transcript on disk (`projects/<cwd>/<uuid>.jsonl`).
fn claude_store(sc: &Scratch, data: &[u8]) -> Option<PathBuf> {
    let p = sc
        .src()
        .join("projects/-home-dev-proj")
        .join(format!("{CLAUDE_ID}.jsonl"));
    write_file(&p, data)?;
    Some(p)
}

/// A Codex rollout on disk (`sessions/YYYY/MM/DD/rollout-*.jsonl`).
fn codex_store(sc: &Scratch, data: &[u8]) -> Option<PathBuf> {
    let p = sc.src().join("sessions/2026/11/22").join(CODEX_NAME);
    write_file(&p, data)?;
    Some(p)
}

/// One row of a store spec: (is a message, id, message id of a part, data).
pub type SpecRow = (bool, String, String, Vec<u8>);

/// Parses a store spec: one row per line, `M\t<id>\t<data>` for a message,
/// `P\t<id>\t<message id>\t<data>` for a part (`data` as stored in the
/// `data` column or file); any other line is a message with a made-up id.
pub fn spec_rows(data: &[u8]) -> Vec<SpecRow> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut out = Vec::new();
    for (k, line) in data.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"M\t") {
            let mut f = rest.splitn(2, |&b| b == b'\t');
            let id = text(f.next().unwrap_or_default());
            let d = f.next().unwrap_or_default().to_vec();
            out.push((true, id, String::new(), d));
        } else if let Some(rest) = line.strip_prefix(b"P\t") {
            let mut f = rest.splitn(3, |&b| b == b'\t');
            let id = text(f.next().unwrap_or_default());
            let mid = text(f.next().unwrap_or_default());
            let d = f.next().unwrap_or_default().to_vec();
            out.push((false, id, mid, d));
        } else {
            out.push((true, format!("msg_line{k}"), String::new(), line.to_vec()));
        }
    }
    out
}

/// `time.created` of a stored JSON, else `fallback`.
fn created(data: &[u8], fallback: i64) -> i64 {
    serde_json::from_slice::<Value>(data)
        .ok()
        .and_then(|v| v.pointer("/time/created").and_then(Value::as_i64))
        .unwrap_or(fallback)
}

/// A minimal opencode db (the `session`, `message` and `part` columns of
/// opencode 1.18.33) holding the rows of the spec; `data` is stored as text
/// when it is UTF-8, else as a blob. A repeated id keeps its first row.
fn opencode_db(sc: &Scratch, data: &[u8]) -> Option<PathBuf> {
    let p = sc.src().join("opencode/opencode.db");
    std::fs::create_dir_all(p.parent()?).ok()?;
    let mut c = rusqlite::Connection::open(&p).ok()?;
    c.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
           slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
           time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE INDEX part_message_id_id_idx ON part (message_id, id);
         INSERT INTO session VALUES ('ses_fuzz', 'proj', NULL, 'fuzz', '/tmp', 'fuzz', '1.18.33', 1, 1);",
    )
    .ok()?;
    let txn = c.transaction().ok()?;
    for (k, (is_msg, id, mid, d)) in spec_rows(data).into_iter().enumerate() {
        let t = created(&d, k as i64);
        let value = match String::from_utf8(d) {
            Ok(s) => rusqlite::types::Value::Text(s),
            Err(e) => rusqlite::types::Value::Blob(e.into_bytes()),
        };
        let r = if is_msg {
            txn.execute(
                "INSERT OR IGNORE INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
                rusqlite::params![id, SID, t, value],
            )
        } else {
            txn.execute(
                "INSERT OR IGNORE INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                rusqlite::params![id, mid, SID, t, value],
            )
        };
        r.ok()?;
    }
    txn.commit().ok()?;
    c.close().ok()?;
    Some(p)
}

/// A file name for an id: path separators and dots that would leave the
/// folder are replaced, so every id stays one file in its folder.
fn file_id(id: &str) -> String {
    let mut s: String = id
        .chars()
        .take(80)
        .map(|c| {
            if c == '/' || c == '\\' || c == '\0' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        s = format!("id{}", s.len());
    }
    s
}

/// A legacy `storage/` tree: the session file, then one file per row.
fn legacy_tree(sc: &Scratch, rows: &[SpecRow], session: Option<&[u8]>) -> Option<PathBuf> {
    let root = sc.src().join("storage");
    let default = br#"{"id":"ses_fuzz","slug":"fuzz","version":"1.1.65","projectID":"proj","directory":"/tmp","title":"fuzz","time":{"created":1,"updated":1}}"#;
    write_file(
        &root.join("session/proj").join(format!("{SID}.json")),
        session.unwrap_or(default),
    )?;
    std::fs::create_dir_all(root.join("message").join(SID)).ok()?;
    for (is_msg, id, mid, d) in rows {
        let f = if *is_msg {
            root.join("message")
                .join(SID)
                .join(format!("{}.json", file_id(id)))
        } else {
            root.join("part")
                .join(file_id(mid))
                .join(format!("{}.json", file_id(id)))
        };
        write_file(&f, d)?;
    }
    Some(root)
}

/// The template session as legacy rows (pretty-printed, as opencode < 1.2 wrote them).
fn legacy_template_rows() -> Vec<SpecRow> {
    let mut rows = Vec::new();
    for (mid, mut raw, parts) in opencode_template() {
        raw["id"] = mid.clone().into();
        raw["sessionID"] = SID.into();
        let pretty = serde_json::to_vec_pretty(&raw).unwrap_or_default();
        rows.push((true, mid.clone(), String::new(), pretty));
        for (pid, mut p) in parts {
            p["id"] = pid.clone().into();
            p["messageID"] = mid.clone().into();
            p["sessionID"] = SID.into();
            let pretty = serde_json::to_vec_pretty(&p).unwrap_or_default();
            rows.push((false, pid, mid.clone(), pretty));
        }
    }
    rows
}

/// One file of a legacy tree: byte 0 picks which (0 a message file, 1 a
/// part of the user turn, 2 a part of the reply, 3 the session file), the
/// rest is the file. Loaded with the template session around it.
pub fn legacy_file(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let Some(sc) = Scratch::new() else { return };
    let mut rows = legacy_template_rows();
    let mut session = None;
    match sel % 4 {
        0 => rows.push((true, "msg_fuzz".into(), String::new(), body.to_vec())),
        1 => rows.push((false, "prt_fuzz".into(), "msg_a".into(), body.to_vec())),
        2 => rows.push((false, "prt_fuzz".into(), "msg_b".into(), body.to_vec())),
        _ => session = Some(body),
    }
    let Some(root) = legacy_tree(&sc, &rows, session) else {
        return;
    };
    run_store(&sc, &root, data.len(), false);
}

/// A whole Claude Code transcript, loaded from disk (no copy written).
pub fn claude_transcript(data: &[u8]) {
    let Some(sc) = Scratch::new() else { return };
    let Some(p) = claude_store(&sc, data) else {
        return;
    };
    run_store(&sc, &p, data.len(), false);
}

// ------------------------------------------------------------ whole paths

/// Bytes -> a Claude Code transcript -> load, diagnose, repair, compact,
/// copies written and loaded again.
pub fn whole_claude(data: &[u8]) {
    let Some(sc) = Scratch::new() else { return };
    let Some(p) = claude_store(&sc, data) else {
        return;
    };
    run_store(&sc, &p, data.len(), true);
}

/// Bytes -> a Codex rollout -> the whole path.
pub fn whole_codex(data: &[u8]) {
    let Some(sc) = Scratch::new() else { return };
    let Some(p) = codex_store(&sc, data) else {
        return;
    };
    run_store(&sc, &p, data.len(), true);
}

/// A store spec ([`spec_rows`]) -> a minimal opencode db -> the whole path.
pub fn whole_opencode_db(data: &[u8]) {
    let Some(sc) = Scratch::new() else { return };
    let Some(p) = opencode_db(&sc, data) else {
        return;
    };
    run_store(&sc, &p, data.len(), true);
}

/// A store spec ([`spec_rows`]) -> a legacy `storage/` tree -> the whole path.
pub fn whole_legacy(data: &[u8]) {
    let Some(sc) = Scratch::new() else { return };
    let Some(root) = legacy_tree(&sc, &spec_rows(data), None) else {
        return;
    };
    run_store(&sc, &root, data.len(), true);
}

// --------------------------------------------------------- hermes-agent

/// The real hermes-agent dbs (`fixtures/hermes/`) a [`whole_hermes`] input
/// edits: a rotated compression chain, a five-rotation loop, tool-call
/// pairs, two in-place compressions, an empty continuation.
const HERMES_TEMPLATES: [&str; 5] = [
    "hermes/compress_rotate",
    "hermes-gen/rotate_loop",
    "hermes-gen/tools_pairs",
    "hermes/compress_inplace",
    "derived/empty_continuation",
];

/// A value for a text column: NULL for an empty text, else the text
/// (lossy UTF-8: hermes-agent writes text).
fn text_or_null(t: &[u8]) -> Option<String> {
    (!t.is_empty()).then(|| String::from_utf8_lossy(t).into_owned())
}

/// The rows an edit names: session `a`, session `b` and row `a` of the
/// other table, each modulo its count (`None` when the table is empty);
/// `sessions` and `rows` are the queries of their ids, in order.
fn picks(
    c: &rusqlite::Connection,
    sessions: &str,
    rows: &str,
    a: u8,
    b: u8,
) -> [Option<rusqlite::types::Value>; 3] {
    let pick = |v: &[rusqlite::types::Value], k: u8| v.get(k as usize % v.len().max(1)).cloned();
    let (ss, rs) = (sql_ids(c, sessions), sql_ids(c, rows));
    [pick(&ss, a), pick(&ss, b), pick(&rs, a)]
}

/// Applies one edit of a [`whole_hermes`] spec line to the db: `op` picks
/// the column, `a` and `b` pick rows (modulo their count), `t` is the
/// text. An edit SQLite refuses is skipped.
fn hermes_edit(c: &rusqlite::Connection, op: u8, a: u8, b: u8, t: &[u8]) {
    use rusqlite::params;
    let [s, s2, m] = picks(
        c,
        "SELECT id FROM sessions ORDER BY started_at, id",
        "SELECT id FROM messages ORDER BY id",
        a,
        b,
    );
    let text = text_or_null(t);
    let r = match (op % 16, s, m) {
        (0, _, Some(m)) => c.execute("UPDATE messages SET content = ?2 WHERE id = ?1", params![m, text]),
        (1, _, Some(m)) => c.execute("UPDATE messages SET role = ?2 WHERE id = ?1", params![m, text.unwrap_or_default()]),
        (2, _, Some(m)) => c.execute("DELETE FROM messages WHERE id = ?1", params![m]),
        (3, Some(s), _) => c.execute(
            "UPDATE sessions SET parent_session_id = ?2 WHERE id = ?1",
            params![s, if b.is_multiple_of(3) { None } else { s2 }],
        ),
        (4, Some(s), _) => c.execute("UPDATE sessions SET parent_session_id = ?2 WHERE id = ?1", params![s, text]),
        (5, Some(s), _) => c.execute("UPDATE sessions SET end_reason = ?2 WHERE id = ?1", params![s, text]),
        (6, Some(s), _) => c.execute(
            "UPDATE sessions SET ended_at = CASE WHEN ?2 % 2 = 0 THEN NULL ELSE started_at + ?2 END WHERE id = ?1",
            params![s, b],
        ),
        (7, _, Some(m)) => c.execute("UPDATE messages SET tool_calls = ?2 WHERE id = ?1", params![m, text]),
        (8, _, Some(m)) => c.execute(
            "UPDATE messages SET tool_call_id = ?2, tool_name = ?2 WHERE id = ?1",
            params![m, text],
        ),
        (9, _, Some(m)) => c.execute("UPDATE messages SET session_id = ?2 WHERE id = ?1", params![m, s2]),
        (10, Some(s), _) => {
            let r = c.execute("DELETE FROM sessions WHERE id = ?1", params![s]);
            if b.is_multiple_of(2) {
                let _ = c.execute("DELETE FROM messages WHERE session_id = ?1", params![s]);
            }
            r
        }
        (11, _, Some(m)) => c.execute(
            "UPDATE messages SET token_count = ?2 * 997, finish_reason = ?3 WHERE id = ?1",
            params![m, b, text],
        ),
        (12, _, Some(m)) => c.execute(
            "UPDATE messages SET timestamp = timestamp + (?2 - 128) WHERE id = ?1",
            params![m, b],
        ),
        (13, Some(s), _) => c.execute(
            "UPDATE sessions SET message_count = ?2, input_tokens = ?2 * 1013, model = ?3 WHERE id = ?1",
            params![s, b, text],
        ),
        (14, Some(s), _) => c.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, active) \
             SELECT ?1, ?2, ?3, COALESCE(MAX(timestamp), 0) + 1, 1 FROM messages WHERE session_id = ?1",
            params![s, ["user", "assistant", "tool", "system"][b as usize % 4], text],
        ),
        (15, _, Some(m)) => c.execute(
            "UPDATE messages SET active = ?2 % 3, compacted = ?2 % 2, api_content = ?3 WHERE id = ?1",
            params![m, b, text],
        ),
        _ => Ok(0),
    };
    let _ = r;
}

/// Bytes -> edits of a real hermes-agent `state.db` -> the whole path.
/// Byte 0 picks the db ([`HERMES_TEMPLATES`]); then each line is one edit
/// ([`hermes_edit`]): byte 0 the column, bytes 1 and 2 the rows, the rest
/// the text. Foreign keys are not enforced (hermes-agent does not turn
/// them on), so a parent may name no session.
pub fn whole_hermes(data: &[u8]) {
    let Some((&sel, spec)) = data.split_first() else {
        return;
    };
    let template = Path::new("hermes")
        .join(HERMES_TEMPLATES[sel as usize % HERMES_TEMPLATES.len()])
        .join("state.db");
    if let Some((sc, p)) = edited_db(&template, "hermes/state.db", spec, hermes_edit) {
        run_store(&sc, &p, data.len(), true);
    }
}

/// A copy of the fixture db `template` (under `fixtures/`) at `at` in a
/// new scratch folder, with each line of `spec` of 3 bytes or more applied
/// by `edit` (op, row, row, text); `None` when the copy cannot be made.
fn edited_db(
    template: &Path,
    at: &str,
    spec: &[u8],
    edit: fn(&rusqlite::Connection, u8, u8, u8, &[u8]),
) -> Option<(Scratch, PathBuf)> {
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(template);
    let sc = Scratch::new()?;
    let p = sc.src().join(at);
    std::fs::create_dir_all(p.parent()?).ok()?;
    std::fs::copy(&template, &p).ok()?;
    let c = rusqlite::Connection::open(&p).ok()?;
    for line in spec.split(|&b| b == b'\n').filter(|l| l.len() >= 3) {
        edit(&c, line[0], line[1], line[2], &line[3..]);
    }
    c.close().ok()?;
    Some((sc, p))
}

// --------------------------------------------------------- docker-agent

/// The docker-agent dbs (`fixtures/docker-agent/`) a [`whole_docker_agent`]
/// input edits: a compaction loop, a stale `first_kept_entry`, an
/// unfinished tool call, a dangling sub-session, two sessions, overflow
/// errors.
const DOCKER_AGENT_TEMPLATES: [&str; 6] = [
    "derived/compaction-loop.db",
    "derived/stale-fke-beyond.db",
    "derived/unfinished-tool-call.db",
    "derived/orphan-subsession-dangling.db",
    "migrated/two-sessions.db",
    "derived/overflow-errors.db",
];

/// The ids of a one-column query, in order (empty when SQLite refuses it).
fn sql_ids(c: &rusqlite::Connection, sql: &str) -> Vec<rusqlite::types::Value> {
    c.prepare(sql)
        .and_then(|mut st| {
            st.query_map([], |r| r.get::<_, rusqlite::types::Value>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_default()
}

/// Applies one edit of a [`whole_docker_agent`] spec line to the db, as
/// [`hermes_edit`] does for hermes-agent: `op` picks the column, `a` and
/// `b` the rows, `t` is the text. An edit SQLite refuses is skipped.
fn docker_agent_edit(c: &rusqlite::Connection, op: u8, a: u8, b: u8, t: &[u8]) {
    use rusqlite::params;
    let [s, s2, i] = picks(
        c,
        "SELECT id FROM sessions ORDER BY created_at, id",
        "SELECT id FROM session_items ORDER BY id",
        a,
        b,
    );
    let text = text_or_null(t);
    let _ = match (op % 14, s, i) {
        (0, _, Some(i)) => c.execute(
            "UPDATE session_items SET message_json = ?2 WHERE id = ?1",
            params![i, text],
        ),
        (1, _, Some(i)) => c.execute(
            "UPDATE session_items SET item_type = ?2 WHERE id = ?1",
            params![i, text.unwrap_or_default()],
        ),
        (2, _, Some(i)) => c.execute("DELETE FROM session_items WHERE id = ?1", params![i]),
        (3, _, Some(i)) => c.execute(
            "UPDATE session_items SET position = position + (?2 - 128) WHERE id = ?1",
            params![i, b],
        ),
        (4, _, Some(i)) => c.execute(
            "UPDATE session_items SET summary_text = ?2 WHERE id = ?1",
            params![i, text],
        ),
        (5, _, Some(i)) => c.execute(
            "UPDATE session_items SET first_kept_entry = ?2 - 8 WHERE id = ?1",
            params![i, b],
        ),
        (6, _, Some(i)) => c.execute(
            "UPDATE session_items SET usage_json = ?2 WHERE id = ?1",
            params![i, text.unwrap_or_default()],
        ),
        (7, _, Some(i)) => c.execute(
            "UPDATE session_items SET model = ?2 WHERE id = ?1",
            params![i, text.unwrap_or_default()],
        ),
        (8, _, Some(i)) => c.execute(
            "UPDATE session_items SET subsession_id = ?2 WHERE id = ?1",
            params![i, if b.is_multiple_of(3) { None } else { s2 }],
        ),
        (9, Some(s), _) => c.execute(
            "UPDATE sessions SET parent_id = ?2 WHERE id = ?1",
            params![s, if b.is_multiple_of(2) { s2 } else { text.map(rusqlite::types::Value::Text) }],
        ),
        (10, Some(s), _) => {
            let r = c.execute("DELETE FROM sessions WHERE id = ?1", params![s]);
            if b.is_multiple_of(2) {
                let _ = c.execute("DELETE FROM session_items WHERE session_id = ?1", params![s]);
            }
            r
        }
        (11, Some(s), _) => c.execute(
            "INSERT INTO session_items (session_id, position, item_type, message_json, summary_text) \
             SELECT ?1, COALESCE(MAX(position), -1) + 1, ?2, ?3, ?3 FROM session_items WHERE session_id = ?1",
            params![s, ["message", "summary", "subsession"][b as usize % 3], text],
        ),
        // A field inside the stored message, the rest of its JSON kept.
        (12, _, Some(i)) => c.execute(
            "UPDATE session_items SET message_json = json_set(message_json, ?2, ?3) WHERE id = ?1",
            params![
                i,
                ["$.message.content", "$.message.role", "$.message.tool_call_id", "$.message.usage", "$.agentName"][b as usize % 5],
                text
            ],
        ),
        (13, Some(s), _) => c.execute(
            "UPDATE sessions SET input_tokens = ?2 * 1009, output_tokens = ?2 * 7 WHERE id = ?1",
            params![s, b],
        ),
        _ => Ok(0),
    };
}

/// Bytes -> edits of a docker-agent `session.db` -> the whole path. Byte 0
/// picks the db ([`DOCKER_AGENT_TEMPLATES`]); then each line is one edit
/// ([`docker_agent_edit`]).
pub fn whole_docker_agent(data: &[u8]) {
    let Some((&sel, spec)) = data.split_first() else {
        return;
    };
    let template = Path::new("docker-agent")
        .join(DOCKER_AGENT_TEMPLATES[sel as usize % DOCKER_AGENT_TEMPLATES.len()]);
    if let Some((sc, p)) = edited_db(
        &template,
        "docker-agent/session.db",
        spec,
        docker_agent_edit,
    ) {
        run_store(&sc, &p, data.len(), true);
    }
}

/// The compact target for an input of `len` bytes: a request limit below
/// most inputs' size, so the steps run; every third size keeps 1 turn.
fn compact_target(len: usize) -> crate::treat::compact::Target {
    let o = Options {
        max_request_bytes: 2048 + (len as u64) / 3,
        ..Options::default()
    };
    crate::treat::compact::Target {
        budget: None,
        max_request_bytes: o.max_request_bytes,
        headroom_bytes: crate::diagnose::headroom_bytes(&o),
        keep_turns: len.is_multiple_of(3).then_some(1),
        goals: Default::default(),
    }
}

/// What kind of error `e` is, without paths, ids or numbers (the panic's
/// first line, which names a crash): the text after the last `): ` (or
/// `: `), digits replaced by `N`, at most 80 characters.
fn error_class(e: &anyhow::Error) -> String {
    let full = format!("{e:#}");
    let tail = full
        .rsplit_once("): ")
        .or_else(|| full.rsplit_once(": "))
        .map_or(full.as_str(), |(_, t)| t);
    let mut out = String::new();
    for c in tail.chars().take(80) {
        if c.is_ascii_digit() {
            if !out.ends_with('N') {
                out.push('N');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Runs the pipeline on the store at `input` (inside `sc.src()`); with
/// `write`, writes the repaired and compacted copies and checks them.
fn run_store(sc: &Scratch, input: &Path, len: usize, write: bool) {
    let before = tree(&sc.src());
    let d = discover(&[input.to_path_buf()]);
    for store in &d.stores {
        let Ok(ids) = store.session_ids() else {
            continue;
        };
        let mut loaded: Vec<Session> = Vec::new();
        for id in ids.iter().take(4) {
            if let Ok(s) = store.load(id) {
                loaded.push(s);
            }
        }
        let cp = store.copier();
        let mut repair_edits = Vec::new();
        let mut plans = Vec::new();
        for s in &loaded {
            exercise_session(s);
            let plan = crate::treat::repair::plan(s);
            let _ = cp.describe_all(s, &plan);
            let _ = cp.apply(s, &plan);
            repair_edits.extend(plan.iter().cloned());
            plans.push(plan);
        }
        let compacted = loaded.first().and_then(|s| {
            let t = compact_target(len);
            // The plan applies its own edits to measure them: a loaded
            // session whose compact edits cannot be applied is a fault
            // (`compact` exits 2 on it).
            // Described as `compact` does: each step against the session
            // as that step found it.
            let describe = |s: &Session, e: &[crate::edit::Edit], out: &mut Vec<_>| {
                out.extend(cp.describe_all(s, e))
            };
            let p = match crate::treat::compact::plan(
                cp,
                std::borrow::Cow::Borrowed(s),
                &t,
                Some(&describe),
            ) {
                Ok(p) => p,
                Err(e) => panic!(
                    "compact cannot plan a loaded session: {}\n{}: {e:#}",
                    error_class(&e),
                    s.id
                ),
            };
            // One change per edit, or per run of whole lines dropped
            // together: the run names its first and last edit's messages
            // (a drop-through edit is one run: its ends, with the lines
            // among them that hold no message, and a header that stays).
            let mut k = 0;
            for c in &p.changes {
                assert_eq!(c.message_id, p.edits[k].message_id, "change {k}");
                if let crate::edit::Change::DropThrough(run) = &p.edits[k].change {
                    if let Some(r) = &c.run {
                        assert!(r.lines <= r.last_line - r.first_line + 1);
                        assert_eq!(r.last_message_id, run.last);
                    }
                    assert_eq!(c.edits(), run.messages, "change {k}");
                    k += 1;
                    continue;
                }
                let n = c.run.as_ref().map_or(1, |r| r.lines as usize);
                if let Some(r) = &c.run {
                    assert!(n >= 2, "a run of {n} line");
                    assert_eq!(r.last_line - r.first_line + 1, r.lines);
                    assert_eq!(r.last_message_id, p.edits[k + n - 1].message_id);
                }
                k += n;
            }
            assert_eq!(k, p.edits.len(), "one change per edit or run");
            // What `check` asks before it prints a compact command: the
            // same answer, whatever it leaves out.
            let answer = |p: &crate::treat::compact::Plan| {
                (
                    p.fits,
                    p.unreachable.is_some(),
                    p.unreachable.is_none() && p.edits.is_empty(),
                )
            };
            match crate::treat::compact::plan_to_reach(cp, std::borrow::Cow::Borrowed(s), &t) {
                Ok(r) => {
                    assert_eq!(answer(&r), answer(&p), "plan_to_reach\n{}", s.id);
                    // A reason of its own only from the floor.
                    if r.unreachable != p.unreachable {
                        let why = r.unreachable.as_deref().unwrap_or_default();
                        assert!(
                            why.contains("still at least"),
                            "plan_to_reach: {why}\n{}",
                            s.id
                        );
                    }
                }
                Err(e) => panic!("plan_to_reach fails where plan does not\n{}: {e:#}", s.id),
            }
            // Strip-media applied is never over the ceiling `check` answers from.
            let strip = crate::treat::compact::strip_media(s);
            if !strip.is_empty() {
                if let Ok(done) = cp.apply(s, &strip) {
                    let nt = crate::sizing::next_turn(&done, None).at_least(p.overhead_tokens);
                    let most = crate::sizing::overhead_ceiling(s, &|_| true).max(p.overhead_tokens);
                    let (tokens, wire) =
                        crate::treat::compact::ceiling_after_strip_media(s, &strip, most);
                    assert!(
                        tokens >= nt.tokens && wire >= nt.wire_bytes,
                        "compact ceiling under strip-media\nceiling ({tokens}, {wire}), applied ({}, {})\n{}",
                        nt.tokens,
                        nt.wire_bytes,
                        s.id
                    );
                }
            }
            // No state of the plan is under the floor `check` answers from.
            if let Some(f) =
                crate::treat::compact::floor_after_every_step(cp, s, &t, p.overhead_tokens)
            {
                for x in std::iter::once(&p.before).chain(p.steps.iter().map(|x| &x.after)) {
                    assert!(
                        x.tokens_next_turn >= f.tokens_next_turn
                            && x.request_bytes >= f.request_bytes,
                        "compact floor {f:?} above a step: {x:?}\n{}",
                        s.id
                    );
                }
            }
            p.fits.then_some(p.edits)
        });
        if !write {
            continue;
        }
        // The repaired copy (every session of the store, as `repair` does).
        let dest = sc.out("repair").join(cp.copy_path());
        if let Some(dir) = dest.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = cp.write_copy(&dest, &repair_edits, false) {
            panic!(
                "the repaired copy could not be written: {}\n{}: {e:#}\nedits: {repair_edits:?}",
                error_class(&e),
                store.path().display()
            );
        }
        // hermes-agent: repair removes an empty continuation from the copy.
        let dropped = |s: &Session| {
            repair_edits.iter().any(|e| {
                e.change == Change::Session(crate::edit::SessionChange::DropEmpty)
                    && e.message_id == s.id.as_str()
            })
        };
        let (kept, kept_plans): (Vec<Session>, Vec<&Vec<crate::edit::Edit>>) = loaded
            .iter()
            .zip(&plans)
            .filter(|(s, _)| !dropped(s))
            .map(|(s, p)| (s.clone(), p))
            .unzip();
        let copies = load_copy(store.as_ref(), &dest, &kept, "repaired");
        for ((s, plan), c) in kept.iter().zip(kept_plans).zip(&copies) {
            let v = repair_violations(s, plan, c);
            if !v.is_empty() {
                let kinds: BTreeSet<&str> = v.iter().map(|(k, _)| k.as_str()).collect();
                panic!(
                    "repair promise broken: {}\nsession {}:\n{}\nedits: {plan:?}",
                    kinds.into_iter().collect::<Vec<_>>().join(", "),
                    s.id,
                    v.iter()
                        .map(|(_, d)| d.as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
        // The compacted copy of the first session, when the plan fits.
        if let Some(edits) = compacted {
            let dest = sc.out("compact").join(cp.copy_path());
            if let Some(dir) = dest.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Err(e) = cp.write_copy(&dest, &edits, false) {
                panic!(
                    "the compacted copy could not be written: {}\n{}: {e:#}\nedits: {edits:?}",
                    error_class(&e),
                    store.path().display()
                );
            }
            load_copy(store.as_ref(), &dest, &loaded[..1], "compacted");
        }
    }
    let after = tree(&sc.src());
    if before != after {
        let changed: Vec<String> = before
            .keys()
            .chain(after.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|k| before.get(*k) != after.get(*k))
            .map(|k| k.display().to_string())
            .collect();
        panic!("the original store changed\n{changed:?}");
    }
}

/// Loads the copy at `dest` of `store`: it must be found as a store of the
/// same agent, without errors, and hold every session in `sessions`.
fn load_copy(store: &dyn Store, dest: &Path, sessions: &[Session], what: &str) -> Vec<Session> {
    let d = discover(&[dest.to_path_buf()]);
    assert!(
        d.problems.errors.is_empty(),
        "the {what} copy does not load\n{}: {:?}",
        dest.display(),
        d.problems
            .errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        d.stores.len(),
        1,
        "the {what} copy is not one store\n{}",
        dest.display()
    );
    let copy = &d.stores[0];
    assert_eq!(
        copy.agent(),
        store.agent(),
        "the {what} copy is read as another agent's store\n{}",
        dest.display()
    );
    let ids = copy.session_ids().unwrap_or_else(|e| {
        panic!(
            "the {what} copy has no session list\n{}: {e:#}",
            dest.display()
        )
    });
    sessions
        .iter()
        .map(|s| {
            assert!(
                ids.contains(&s.id),
                "the {what} copy lost a session\n{}: {} (it has {ids:?})",
                dest.display(),
                s.id
            );
            copy.load(&s.id).unwrap_or_else(|e| {
                panic!(
                    "the {what} copy does not load a session\n{}: {}: {e:#}",
                    dest.display(),
                    s.id
                )
            })
        })
        .collect()
}

/// What repair promised for `before` with `plan` and the copy `after` does
/// not hold, as (kind, detail); empty when every promise is kept. Kinds:
/// `re-parented-still-<code>`, `re-parented-into-cycle`,
/// `copies-left-after-drop-copies` (a copy repeating the first one's
/// content left), and `repair-again-<changes>-for-<codes>`
/// (repair run on the copy still finds parent links or copies to fix).
pub fn repair_violations(
    before: &Session,
    plan: &[crate::edit::Edit],
    after: &Session,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let reparented: HashSet<&str> = plan
        .iter()
        .filter(|e| {
            matches!(
                e.change,
                Change::SetParent { .. } | Change::ClearParent { .. }
            )
        })
        .map(|e| e.message_id.as_str())
        .collect();
    let deduplicated: HashSet<&str> = plan
        .iter()
        .filter(|e| matches!(e.change, Change::DropCopies))
        .map(|e| e.message_id.as_str())
        .collect();
    let findings = diagnose(after, &Options::default());
    for f in &findings {
        let Some(id) = f.message_id.as_deref() else {
            continue;
        };
        let code = f.code.to_string();
        let code = code.as_str();
        if matches!(code, "stale-parent" | "dangling-parent") && reparented.contains(id) {
            out.push((
                format!("re-parented-still-{code}"),
                format!(
                    "{code} on message {id}, which repair re-parented: {}",
                    f.detail
                ),
            ));
        }
        // Drop-copies drops the copies that repeat the first one (the
        // warning); a copy with other content (the error) stays.
        if code == "duplicate-id" && f.severity == Severity::Warning && deduplicated.contains(id) {
            out.push((
                "copies-left-after-drop-copies".to_string(),
                format!(
                    "duplicate-id {id}, whose later copies repair dropped: {}",
                    f.detail
                ),
            ));
        }
    }
    for c in crate::diagnose::cycles(&crate::diagnose::Facts::new(after)) {
        if let Some(m) = c
            .members
            .iter()
            .map(|&i| after.messages[i].id.as_str())
            .find(|id| reparented.contains(id))
        {
            out.push((
                "re-parented-into-cycle".to_string(),
                format!(
                    "message {m}, which repair re-parented, is in a parent cycle of {} message(s)",
                    c.members.len()
                ),
            ));
        }
    }
    // No error of those codes that the original did not have.
    let had: HashSet<(String, Option<String>)> = diagnose(before, &Options::default())
        .iter()
        .map(|f| (f.code.to_string(), f.message_id.clone()))
        .collect();
    for f in &findings {
        let code = f.code.to_string();
        if f.severity == Severity::Error
            && REPAIRED_CODES.contains(&code.as_str())
            && !had.contains(&(code.clone(), f.message_id.clone()))
        {
            out.push((
                format!("introduced-{code}"),
                format!(
                    "{code} on {} in the copy, not in the original: {}",
                    f.message_id.as_deref().unwrap_or("-"),
                    f.detail
                ),
            ));
        }
    }
    // Stricter, not a promise of repair.rs (SD_FUZZ_STRICT=1): repair run
    // again on the copy finds nothing left to fix (a fix can make another
    // dangling parent fixable, or make copies of an id identical).
    if std::env::var_os("SD_FUZZ_STRICT").is_some() {
        let again: Vec<crate::edit::Edit> = crate::treat::repair::plan(after)
            .into_iter()
            .filter(|e| !matches!(e.change, Change::DropMessage))
            .collect();
        for name in again
            .iter()
            .map(|e| e.change.name())
            .collect::<BTreeSet<_>>()
        {
            out.push((
                format!("repair-again-{name}"),
                format!(
                    "repair on the copy still plans {:?}",
                    again
                        .iter()
                        .map(|e| format!("{} {}", e.change.name(), e.message_id))
                        .collect::<Vec<_>>()
                ),
            ));
        }
    }
    out
}

// ------------------------------------------------------------------ seeds

/// Strings longer than this are cut in seeds (data URLs keep more, whole
/// base64 quads), so seeds stay small and still parse.
const SEED_TEXT: usize = 512;
const SEED_DATA_URL: usize = 4096;
/// Seeds per target at most: single rows and lines, whole files or stores.
pub const MAX_SEEDS: usize = 300;
pub const MAX_FILE_SEEDS: usize = 100;
/// Largest seed (bytes).
pub const MAX_SEED_BYTES: usize = 24 << 10;

fn shrink(v: &mut Value) {
    match v {
        Value::String(s) if s.starts_with("data:") && s.len() > SEED_DATA_URL => {
            if let Some(comma) = s.find(',') {
                let keep = comma + 1 + (SEED_DATA_URL / 4) * 4;
                if keep < s.len() && s.is_char_boundary(keep) {
                    s.truncate(keep);
                }
            }
        }
        Value::String(s) if s.len() > SEED_TEXT && !s.starts_with("data:") => {
            let mut k = SEED_TEXT;
            while !s.is_char_boundary(k) {
                k -= 1;
            }
            s.truncate(k);
        }
        Value::Array(a) => a.iter_mut().for_each(shrink),
        Value::Object(o) => o.values_mut().for_each(shrink),
        _ => {}
    }
}

/// A JSON document with long strings cut (compact, or pretty with 2 spaces).
fn shrunk(bytes: &[u8], pretty: bool) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut v) => {
            shrink(&mut v);
            if pretty {
                serde_json::to_vec_pretty(&v).unwrap_or_default()
            } else {
                serde_json::to_vec(&v).unwrap_or_default()
            }
        }
        Err(_) => bytes.to_vec(),
    }
}

fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

/// Rows of every opencode/Kilo db under `fixtures`: per session, its
/// messages and parts as spec rows (`M\t`/`P\t` lines), in stored order.
fn db_sessions(fixtures: &Path) -> Vec<Vec<SpecRow>> {
    let mut out = Vec::new();
    for db in files_under(&fixtures.join("opencode"), ".db") {
        let uri = format!("file:{}?mode=ro&immutable=1", db.display());
        let Ok(c) = rusqlite::Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        ) else {
            continue;
        };
        let Ok(mut st) = c.prepare("SELECT id FROM session ORDER BY time_created, id") else {
            continue;
        };
        let sessions: Vec<String> = st
            .query_map([], |r| r.get(0))
            .map(|it| it.flatten().collect())
            .unwrap_or_default();
        for sid in sessions {
            let mut rows = Vec::new();
            let msgs: Vec<(String, String)> = c
                .prepare(
                    "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
                )
                .and_then(|mut st| {
                    st.query_map([&sid], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map(|it| it.flatten().collect())
                })
                .unwrap_or_default();
            for (mid, data) in msgs {
                rows.push((true, mid.clone(), String::new(), data.into_bytes()));
                let parts: Vec<(String, String)> = c
                    .prepare("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")
                    .and_then(|mut st| {
                        st.query_map([&mid], |r| Ok((r.get(0)?, r.get(1)?)))
                            .map(|it| it.flatten().collect())
                    })
                    .unwrap_or_default();
                for (pid, data) in parts {
                    rows.push((false, pid, mid.clone(), data.into_bytes()));
                }
            }
            out.push(rows);
        }
    }
    out
}

/// A spec (one `M`/`P` line per row) of `rows`, data shrunk.
fn spec_of(rows: &[SpecRow]) -> Vec<u8> {
    let mut out = Vec::new();
    for (is_msg, id, mid, d) in rows {
        if *is_msg {
            out.extend_from_slice(format!("M\t{id}\t").as_bytes());
        } else {
            out.extend_from_slice(format!("P\t{id}\t{mid}\t").as_bytes());
        }
        out.extend(shrunk(d, false));
        out.push(b'\n');
    }
    out
}

/// Windows of `n` consecutive items of `items` (each as a seed), stepping by `n / 2`.
fn windows<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    if items.len() <= n {
        return vec![items.to_vec()];
    }
    (0..items.len())
        .step_by((n / 2).max(1))
        .map(|i| items[i..(i + n).min(items.len())].to_vec())
        .collect()
}

/// The lines of every `.jsonl` under `dir`, each file's lines in a group.
fn jsonl_files(dir: &Path) -> Vec<Vec<Vec<u8>>> {
    files_under(dir, ".jsonl")
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .map(|b| {
            b.split(|&c| c == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| shrunk(l, false))
                .collect()
        })
        .collect()
}

/// Joins lines into a JSONL document.
fn jsonl(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

/// Seeds of a db-edit target ([`whole_hermes`], [`whole_docker_agent`]):
/// each of the `templates` dbs as it is, then with each of `edits` (one
/// spec line each).
fn db_edit_seeds(templates: usize, edits: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for t in 0..templates as u8 {
        out.push(vec![t]);
        for edit in edits {
            let mut seed = vec![t];
            seed.extend_from_slice(edit);
            out.push(seed);
        }
    }
    out
}

/// The seed corpus of target `name`, made from the real data in `fixtures`
/// (the repo's `fixtures/`): rows, lines, files and windows of consecutive
/// lines, long strings cut, deduplicated, at most [`MAX_SEEDS`] (rows and
/// lines) or [`MAX_FILE_SEEDS`] (files and stores) of at most
/// [`MAX_SEED_BYTES`] each.
pub fn seeds(name: &str, fixtures: &Path) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let legacy: Vec<PathBuf> = files_under(&fixtures.join("opencode"), ".json")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/storage/"))
        .collect();
    let legacy_of = |kind: &str| -> Vec<Vec<u8>> {
        legacy
            .iter()
            .filter(|p| p.to_string_lossy().contains(&format!("/storage/{kind}/")))
            .filter_map(|p| std::fs::read(p).ok())
            .collect()
    };
    match name {
        "opencode_message" | "opencode_part" => {
            let want_msg = name == "opencode_message";
            for rows in db_sessions(fixtures) {
                for (is_msg, _, _, d) in rows {
                    if is_msg == want_msg {
                        out.push(shrunk(&d, false));
                    }
                }
            }
            let kind = if want_msg { "message" } else { "part" };
            out.extend(legacy_of(kind).iter().map(|d| shrunk(d, false)));
        }
        "legacy_file" => {
            for (sel, kind) in [(0u8, "message"), (2, "part"), (3, "session")] {
                for d in legacy_of(kind) {
                    let mut s = vec![sel];
                    s.extend(shrunk(&d, true));
                    out.push(s);
                }
            }
            for rows in db_sessions(fixtures) {
                for (is_msg, _, _, d) in rows {
                    let mut s = vec![if is_msg { 0 } else { 2 }];
                    s.extend(shrunk(&d, true));
                    out.push(s);
                }
            }
        }
        "claude_line" | "codex_line" => {
            let dir = if name == "claude_line" {
                "claude-code"
            } else {
                "codex"
            };
            out.extend(jsonl_files(&fixtures.join(dir)).into_iter().flatten());
        }
        "claude_transcript" | "whole_claude" | "codex_rollout" | "whole_codex" => {
            let dir = if name.contains("claude") {
                "claude-code"
            } else {
                "codex"
            };
            for lines in jsonl_files(&fixtures.join(dir)) {
                for (k, w) in windows(&lines, 8).into_iter().enumerate() {
                    if dir == "codex" && k > 0 {
                        // Codex rollouts start with their header line.
                        let mut with_head = vec![lines[0].clone()];
                        with_head.extend(w);
                        out.push(jsonl(&with_head));
                    } else {
                        out.push(jsonl(&w));
                    }
                }
            }
        }
        "whole_opencode_db" | "whole_legacy" => {
            for rows in db_sessions(fixtures) {
                for w in windows(&rows, 12) {
                    out.push(spec_of(&w));
                }
            }
            // The legacy fixture tree as a spec: each message, then its parts.
            let mut rows = Vec::new();
            let stem = |p: &Path| {
                p.file_stem()
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            for m in legacy
                .iter()
                .filter(|p| p.to_string_lossy().contains("/storage/message/"))
            {
                let (Some(storage), Ok(d)) = (m.ancestors().nth(3), std::fs::read(m)) else {
                    continue;
                };
                let mid = stem(m);
                rows.push((true, mid.clone(), String::new(), d));
                for p in files_under(&storage.join("part").join(&mid), ".json") {
                    if let Ok(d) = std::fs::read(&p) {
                        rows.push((false, stem(&p), mid.clone(), d));
                    }
                }
            }
            for w in windows(&rows, 12) {
                out.push(spec_of(&w));
            }
        }
        "whole_hermes" => {
            // Each db as it is, then with one edit each: a session closed
            // by a compression, one deleted with its messages, a parent
            // that names no session, a message's text, a message deleted,
            // a message of bytes that are not UTF-8 added.
            out.extend(db_edit_seeds(
                HERMES_TEMPLATES.len(),
                &[
                    b"\x05\x00\x00compression",
                    b"\x0a\x01\x00",
                    b"\x04\x01\x00ses_missing",
                    b"\x00\x03\x00hello",
                    b"\x02\x00\x00",
                    b"\x0e\x00\x01\xff\xfe",
                ],
            ));
        }
        "whole_docker_agent" => {
            // Each db as it is, then with one edit each: a message's text,
            // an item deleted, a first_kept_entry past the items, a summary
            // item added, a parent that names no session, a role inside the
            // stored message.
            out.extend(db_edit_seeds(
                DOCKER_AGENT_TEMPLATES.len(),
                &[
                    b"\x0c\x03\x00hello",
                    b"\x02\x02\x00",
                    b"\x05\x04\x40",
                    b"\x0b\x00\x01summary",
                    b"\x09\x01\x01ses_missing",
                    b"\x0c\x05\x01tool",
                ],
            ));
        }
        _ => {}
    }
    let mut seen = HashSet::new();
    out.retain(|s| !s.is_empty() && s.len() <= MAX_SEED_BYTES && seen.insert(s.clone()));
    let max = if name.ends_with("_line") || name.starts_with("opencode_") || name == "legacy_file" {
        MAX_SEEDS
    } else {
        MAX_FILE_SEEDS
    };
    if out.len() > max {
        // An even spread over the sources, not only the first files.
        let step = out.len() as f64 / max as f64;
        out = (0..max)
            .map(|i| out[(i as f64 * step) as usize].clone())
            .collect();
    }
    out
}
