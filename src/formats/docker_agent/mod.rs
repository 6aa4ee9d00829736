//! docker-agent (formerly cagent) session stores: one SQLite file
//! (`~/.cagent/session.db`, or any file with docker-agent's tables) holding
//! every session, in three schema generations (docs/formats/docker-agent.md
//! sections 1 to 5):
//! - legacy (migrations up to 013): one JSON array of items per session in
//!   `sessions.messages`, sub-sessions embedded;
//! - `session_items` (014 to 020): one row per item, sub-sessions as
//!   `sessions` rows referenced by `subsession` items;
//! - newest (021 to 029): `summary` items with `first_kept_entry`, per-item
//!   `cost`, `model` and `usage_json`.
//!
//! The db is always read through a [`Snapshot`] (its `-wal` included) and
//! never written; copies are byte copies of the snapshot, edited there. A
//! session is one `sessions` row (or an embedded legacy sub-session); its
//! messages are its items in docker-agent's order, ids `session_items.id`
//! (`json[k]` in a legacy array). Items are streamed into figures
//! (`parse.rs`); a treatment's edits are applied by reading the rows again.

mod edit;
mod parse;
mod view;

use crate::edit::{Applier, Change, Edit, StoredChange};
use crate::formats::sqlite::Snapshot;
use crate::formats::{Copier, Store};
use crate::model::{Agent, LoadProblem, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use parse::{Facts, Kind, RawItem, What, DOCTOR_MODEL, NEW_PREFIX, SUMMARY_PREFIX};
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use view::KEEP_BUDGET;

/// The docker-agent format: any `*.db` is looked at; a store is recognised
/// by its tables, whatever its name.
pub struct DockerAgent;

impl super::Format for DockerAgent {
    fn name(&self) -> &'static str {
        "docker-agent session.db"
    }

    fn wants_file(&self, p: &Path) -> bool {
        p.extension().is_some_and(|x| x == "db")
    }

    fn open_file(&self, p: &Path) -> super::Opened {
        open(p)
    }

    fn not_mine(&self, p: &Path) -> Option<super::NotMine> {
        p.file_name().is_some_and(|n| n == "session.db").then(|| super::NotMine {
            why: crate::formats::sqlite::not_a_store(
                p,
                "docker-agent's tables `sessions` and `session_items` (or `sessions` with a `messages` column, and `migrations`)",
            ),
            common_name: true,
        })
    }

    /// `$HOME/.cagent` (docker-agent's data dir, which holds `session.db`).
    fn default_places(&self) -> &'static str {
        "docker-agent session databases under $HOME/.cagent"
    }

    fn default_paths(&self) -> Vec<PathBuf> {
        super::home()
            .map(|h| vec![h.join(".cagent")])
            .unwrap_or_default()
    }
}

/// The schema generation of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gen {
    /// `sessions.messages` JSON arrays (migrations up to 013).
    Legacy,
    /// `session_items`; which of the newer columns exist.
    Items {
        first_kept: bool,
        model_usage: bool,
        cost: bool,
    },
}

/// Where a legacy session lives: its root row and the path of `sub_session`
/// entries down to it.
#[derive(Debug, Clone)]
struct Place {
    row: String,
    path: Vec<usize>,
    title: Option<String>,
}

#[derive(Debug, Default)]
struct LegacyIndex {
    order: Vec<String>,
    place: HashMap<String, Place>,
}

/// A docker-agent store, read through a [`Snapshot`] (never written).
pub struct DaStore {
    path: PathBuf,
    snap: Snapshot,
    gen: Gen,
    sessions_cols: Vec<String>,
    legacy: std::sync::OnceLock<std::result::Result<LegacyIndex, String>>,
}

fn is_sqlite(p: &Path) -> std::io::Result<bool> {
    Ok(crate::formats::sqlite::head(p)? == crate::formats::sqlite::Head::Sqlite)
}

/// Opens `p` as a docker-agent store: `Ok(None)` for a file that is not
/// SQLite or lacks docker-agent's tables (`sessions` with `session_items`,
/// or with a `messages` column and docker-agent's `migrations`).
pub fn open(p: &Path) -> Result<Option<Box<dyn Store>>> {
    let named = p.file_name().is_some_and(|n| n == "session.db");
    match is_sqlite(p) {
        Ok(true) => {}
        Ok(false) if named => bail!(
            "{}: not a SQLite database (expected the header \"SQLite format 3\")",
            p.display()
        ),
        Ok(false) => return Ok(None),
        Err(e) if named => bail!("{}: cannot read: {e}", p.display()),
        Err(_) => return Ok(None),
    }
    let snap = Snapshot::open(p)?;
    let conn = snap.connect()?;
    let tables = crate::formats::sqlite::tables(&conn, p)?;
    let has = |t: &str| tables.iter().any(|x| x == t);
    if !has("sessions") {
        return Ok(None);
    }
    let sessions_cols = crate::formats::sqlite::columns(&conn, "sessions", p)?;
    let gen = if has("session_items") {
        let c = crate::formats::sqlite::columns(&conn, "session_items", p)?;
        let hc = |n: &str| c.iter().any(|x| x == n);
        if !(hc("session_id") && hc("position") && hc("item_type")) {
            return Ok(None);
        }
        Gen::Items {
            first_kept: hc("first_kept_entry"),
            model_usage: hc("model") && hc("usage_json"),
            cost: hc("cost"),
        }
    } else if sessions_cols.iter().any(|c| c == "messages") && has("migrations") {
        let first: Option<String> = conn
            .query_row("SELECT name FROM migrations WHERE id = 1", [], |r| r.get(0))
            .optional()
            .ok()
            .flatten();
        if first.as_deref() != Some("001_add_tools_approved_column") {
            return Ok(None);
        }
        Gen::Legacy
    } else {
        return Ok(None);
    };
    Ok(Some(Box::new(DaStore {
        path: p.to_path_buf(),
        snap,
        gen,
        sessions_cols,
        legacy: std::sync::OnceLock::new(),
    })))
}

/// Part of a legacy items array read only for its sub-sessions.
#[derive(serde::Deserialize)]
struct SkimItem {
    sub_session: Option<SkimSub>,
}

#[derive(serde::Deserialize)]
struct SkimSub {
    id: Option<String>,
    title: Option<String>,
    messages: Option<Vec<SkimItem>>,
}

/// A legacy entry with its parts kept as stored text.
#[derive(serde::Deserialize)]
struct LegacyItem<'a> {
    #[serde(borrow)]
    message: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    sub_session: Option<&'a serde_json::value::RawValue>,
    summary: Option<String>,
    first_kept_entry: Option<i64>,
    model: Option<String>,
    #[serde(borrow)]
    usage: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    error: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    termination: Option<&'a serde_json::value::RawValue>,
}

#[derive(serde::Deserialize)]
struct LegacyMessage<'a> {
    #[serde(borrow)]
    message: Option<&'a serde_json::value::RawValue>,
    implicit: Option<bool>,
}

#[derive(serde::Deserialize)]
struct LegacySub<'a> {
    id: Option<String>,
    #[serde(borrow)]
    messages: Option<&'a serde_json::value::RawValue>,
}

/// Builds a session from its items, one at a time.
struct Builder {
    s: Session,
    facts: Vec<Facts>,
    slice: usize,
    time: i64,
    max_position: i64,
    last_summary: Option<String>,
    /// `tool_definitions` stored on assistant items: items, copies, bytes,
    /// distinct definitions (hashes).
    tool_defs: (usize, usize, u64, HashSet<u64>),
}

/// Tool definitions repeated on assistant items worth a note (bytes).
const TOOL_DEFS_NOTE_BYTES: u64 = 64 << 10;

impl Builder {
    fn new(s: Session) -> Builder {
        Builder {
            s,
            facts: Vec::new(),
            slice: 0,
            time: 0,
            max_position: -1,
            last_summary: None,
            tool_defs: Default::default(),
        }
    }

    fn problem(&mut self, item: &RawItem, error: String) {
        self.s.problems.push(LoadProblem {
            location: item.location.clone(),
            id: Some(item.id.clone()),
            error,
            kind: ProblemKind::Unreadable,
            file: None,
            line: None,
            row: None,
        });
    }

    /// An item docker-agent counts in its list but session-doctor could not
    /// read (docker-agent's load of the session fails on it): later indexes
    /// still count it.
    fn hole(&mut self) {
        self.facts.push(Facts {
            msg: None,
            slice: Some(self.slice),
            what: What::Silent,
        });
        self.slice += 1;
    }

    fn add(&mut self, m: crate::model::Message, what: What, in_slice: bool) {
        self.time = self.time.max(m.time_created());
        let slice = in_slice.then(|| {
            self.slice += 1;
            self.slice - 1
        });
        self.facts.push(Facts {
            msg: Some(self.s.messages.len()),
            slice,
            what,
        });
        self.s.messages.push(m);
    }

    /// Adds one item; `raw` is its edited JSON (a `chat.Message`, or a
    /// summary's columns) when a treatment changed it.
    fn push(&mut self, mut item: RawItem, raw: Option<Value>) {
        self.max_position = self.max_position.max(item.position);
        match &item.kind {
            Kind::Message => {
                let keep = raw.is_some();
                let parsed: std::result::Result<(Value, u64), String> = match raw {
                    Some(v) => {
                        let n = edit::go_json(&v).len() as u64;
                        Ok((v, n))
                    }
                    None => match item.json.as_deref() {
                        None => Err("`message_json` is NULL (docker-agent cannot load this session)".into()),
                        Some(t) if t.len() as u64 > crate::fsx::MAX_JSON_DOC_BYTES => Err(format!(
                            "`message_json` holds {} bytes, more than the {} MiB a JSON document may have",
                            t.len(),
                            crate::fsx::MAX_JSON_DOC_BYTES >> 20
                        )),
                        Some(t) => serde_json::from_str(t)
                            .map(|v| (v, t.len() as u64))
                            .map_err(|e| {
                                format!("invalid JSON in `message_json` (docker-agent cannot load this session): {e}")
                            }),
                    },
                };
                match parsed
                    .and_then(|(v, n)| parse::message_item(&item, &v, n, self.time).map(|r| (r, v)))
                {
                    Ok(((mut m, what), v)) => {
                        if let Some(Value::Array(defs)) = v.get("tool_definitions") {
                            use std::hash::{Hash, Hasher};
                            self.tool_defs.0 += 1;
                            for d in defs {
                                let t = serde_json::to_string(d).unwrap_or_default();
                                let mut h = std::collections::hash_map::DefaultHasher::new();
                                t.hash(&mut h);
                                self.tool_defs.1 += 1;
                                self.tool_defs.2 += edit::go_escaped_len(&t);
                                self.tool_defs.3.insert(h.finish());
                            }
                        }
                        if keep {
                            m.rare_mut().raw = Some(v);
                        }
                        self.add(m, what, true);
                    }
                    Err(e) => {
                        self.problem(&item, e);
                        self.hole();
                    }
                }
            }
            Kind::Summary => {
                if let Some(r) = &raw {
                    item.set_summary_object(r);
                }
                match parse::summary_item(&item, self.time) {
                    Ok((mut m, what)) => {
                        if !item.summary_text.is_empty() {
                            self.last_summary = Some(item.summary_text.clone());
                        }
                        m.rare_mut().raw = Some(item.summary_object());
                        self.add(m, what, true);
                    }
                    Err(e) => {
                        self.problem(&item, e);
                        self.hole();
                    }
                }
            }
            Kind::Subsession => {
                let sub = item.subsession.clone().unwrap_or_default();
                let mut m = parse::bare(&item.id, crate::model::SUBSESSION_REF, self.time, 0);
                let loaded = !sub.is_empty() && item.sub_exists;
                if !loaded {
                    // docker-agent skips it ("Skipping subsession item with NULL
                    // reference" / "Skipping orphaned subsession reference").
                    m.set_parent_id(Some(sub.into()));
                }
                self.add(m, What::Silent, loaded);
            }
            Kind::Error => match parse::error_item(&item, self.time) {
                Ok(m) => self.add(m, What::Silent, true),
                Err(e) => {
                    self.problem(&item, e);
                    self.hole();
                }
            },
            Kind::Termination => {
                let n = item.json.as_deref().map_or(0, str::len) as u64;
                let m = parse::bare(&item.id, "termination", self.time, n);
                self.add(m, What::Silent, true);
            }
            Kind::Other(name) => {
                // Dropped silently by docker-agent's loader; a row of
                // `session_items` is named, as what it holds is not in the
                // session (a legacy entry holding none of the keys is not).
                let n = item.json.as_deref().map_or(0, str::len) as u64;
                self.s.other_bytes += n;
                if parse_legacy_id(&item.id).is_none() {
                    let e = format!(
                        "`item_type` is {}, expected message, subsession, summary, error or termination: docker-agent passes over the item, so its message_json ({n} bytes) is not in the session",
                        serde_json::Value::String(name.clone())
                    );
                    self.problem(&item, e);
                }
            }
        }
    }

    /// The index in docker-agent's item list of message `id`.
    fn slice_of(&self, id: &str) -> Option<usize> {
        self.facts
            .iter()
            .find(|f| f.msg.is_some_and(|i| self.s.messages[i].id == id))
            .and_then(|f| f.slice)
    }

    fn finish(mut self) -> Session {
        view::finish(&mut self.s, &self.facts);
        let (items, copies, bytes, distinct) = &self.tool_defs;
        if *bytes >= TOOL_DEFS_NOTE_BYTES {
            self.s.note(
                format!(
                    "{items} assistant items store {copies} tool definitions ({bytes} bytes, {} distinct) in their message_json; they count in the request size (whether docker-agent sends them to the provider is not verified)",
                    distinct.len()
                ),
                [
                    ("tool_definition_items", *items as u64),
                    ("tool_definition_copies", *copies as u64),
                    ("tool_definition_bytes", *bytes),
                    ("tool_definitions_distinct", distinct.len() as u64),
                ],
            );
        }
        self.s.messages.shrink_to_fit();
        self.s
    }
}

/// Message id of legacy entry `k` of a session's array.
fn legacy_id(k: usize) -> String {
    format!("json[{k}]")
}

fn parse_legacy_id(id: &str) -> Option<usize> {
    id.strip_prefix("json[")?.strip_suffix(']')?.parse().ok()
}

/// A text column (NULL -> None; numbers and blobs as text).
fn text(r: &rusqlite::Row<'_>, i: usize) -> Option<String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).ok()? {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

impl DaStore {
    fn conn(&self) -> Result<Connection> {
        self.snap.connect()
    }

    fn has_col(&self, c: &str) -> bool {
        self.sessions_cols.iter().any(|x| x == c)
    }

    fn read_err(&self, what: &str, e: impl std::fmt::Display) -> anyhow::Error {
        anyhow!(
            "{}: cannot read {what} (expected docker-agent's tables): {e}",
            self.path.display()
        )
    }

    /// Every legacy session (root rows, then their embedded sub-sessions,
    /// depth first) and where each lives.
    fn legacy_index(&self) -> Result<&LegacyIndex> {
        let r = self.legacy.get_or_init(|| {
            let build = || -> Result<LegacyIndex> {
                let conn = self.conn()?;
                let title = if self.has_col("title") {
                    "title"
                } else {
                    "NULL"
                };
                let mut st = conn
                    .prepare(&format!(
                        "SELECT id, messages, {title} FROM sessions ORDER BY created_at, id"
                    ))
                    .map_err(|e| self.read_err("table sessions", e))?;
                let mut rows = st
                    .query([])
                    .map_err(|e| self.read_err("table sessions", e))?;
                let mut ix = LegacyIndex::default();
                fn walk(
                    ix: &mut LegacyIndex,
                    row: &str,
                    path: &mut Vec<usize>,
                    items: &[SkimItem],
                ) {
                    for (k, it) in items.iter().enumerate() {
                        let Some(sub) = &it.sub_session else { continue };
                        let id = sub.id.clone().unwrap_or_default();
                        path.push(k);
                        if !id.is_empty() && !ix.place.contains_key(&id) {
                            ix.order.push(id.clone());
                            ix.place.insert(
                                id,
                                Place {
                                    row: row.to_string(),
                                    path: path.clone(),
                                    title: sub.title.clone(),
                                },
                            );
                        }
                        walk(ix, row, path, sub.messages.as_deref().unwrap_or(&[]));
                        path.pop();
                    }
                }
                while let Some(r) = rows
                    .next()
                    .map_err(|e| self.read_err("table sessions", e))?
                {
                    let Some(id) = text(r, 0) else { continue };
                    if ix.place.contains_key(&id) {
                        continue;
                    }
                    ix.order.push(id.clone());
                    ix.place.insert(
                        id.clone(),
                        Place {
                            row: id.clone(),
                            path: Vec::new(),
                            title: text(r, 2),
                        },
                    );
                    let raw = text(r, 1).unwrap_or_default();
                    if let Ok(items) = serde_json::from_str::<Vec<SkimItem>>(&raw) {
                        walk(&mut ix, &id, &mut Vec::new(), &items);
                    }
                }
                Ok(ix)
            };
            build().map_err(|e| crate::error::chain(&e))
        });
        r.as_ref().map_err(|e| anyhow!("{e}"))
    }

    /// The session shell (id, title) of `id`.
    fn shell(&self, conn: &Connection, id: &str) -> Result<Session> {
        let title = match self.gen {
            Gen::Legacy => self
                .legacy_index()?
                .place
                .get(id)
                .and_then(|p| p.title.clone()),
            Gen::Items { .. } if self.has_col("title") => conn
                .query_row("SELECT title FROM sessions WHERE id = ?1", [id], |r| {
                    Ok(text(r, 0))
                })
                .optional()
                .map_err(|e| self.read_err("table sessions", e))?
                .flatten(),
            Gen::Items { .. } => None,
        };
        Ok(Session::new(
            Agent::DockerAgent,
            id,
            title.filter(|t| !t.is_empty()),
            self.path.clone(),
        ))
    }

    /// Streams the stored items of session `id` in docker-agent's order.
    fn each_item(
        &self,
        conn: &Connection,
        id: &str,
        f: &mut dyn FnMut(RawItem) -> Result<()>,
    ) -> Result<()> {
        match self.gen {
            Gen::Items {
                first_kept,
                model_usage,
                ..
            } => {
                let cols = format!(
                    "id, position, item_type, message_json, implicit, subsession_id, summary_text, {}, {}, {}",
                    if first_kept { "COALESCE(first_kept_entry, 0)" } else { "0" },
                    if model_usage { "COALESCE(model, '')" } else { "''" },
                    if model_usage { "COALESCE(usage_json, '')" } else { "''" },
                );
                let mut st = conn
                    .prepare(&format!(
                        "SELECT {cols}, (SELECT count(*) FROM sessions s WHERE s.id = i.subsession_id) \
                         FROM session_items i WHERE session_id = ?1 ORDER BY position, id"
                    ))
                    .map_err(|e| self.read_err("table session_items", e))?;
                let mut rows = st
                    .query([id])
                    .map_err(|e| self.read_err("table session_items", e))?;
                while let Some(r) = rows
                    .next()
                    .map_err(|e| self.read_err("table session_items", e))?
                {
                    let rowid: i64 = r.get(0).unwrap_or(-1);
                    let kind = Kind::named(&text(r, 2).unwrap_or_default());
                    let mut item = RawItem::new(
                        rowid.to_string(),
                        r.get(1).unwrap_or(0),
                        kind,
                        format!("{}: session_items row {rowid}", self.path.display()),
                    );
                    item.json = text(r, 3);
                    item.implicit = r.get::<_, Option<i64>>(4).ok().flatten().unwrap_or(0) != 0;
                    item.subsession = text(r, 5);
                    item.summary_text = text(r, 6).unwrap_or_default();
                    item.first_kept = r.get::<_, Option<i64>>(7).ok().flatten().unwrap_or(0);
                    item.model = text(r, 8).unwrap_or_default();
                    item.usage_json = text(r, 9).unwrap_or_default();
                    item.sub_exists = r.get::<_, i64>(10).unwrap_or(0) > 0;
                    f(item)?;
                }
                Ok(())
            }
            Gen::Legacy => {
                let place = self
                    .legacy_index()?
                    .place
                    .get(id)
                    .cloned()
                    .ok_or_else(|| anyhow!("{}: no session {id}", self.path.display()))?;
                let raw: Option<String> = conn
                    .query_row(
                        "SELECT messages FROM sessions WHERE id = ?1",
                        [&place.row],
                        |r| Ok(text(r, 0)),
                    )
                    .map_err(|e| self.read_err("table sessions", e))?;
                let raw = raw.unwrap_or_default();
                let loc = |k: usize| {
                    format!(
                        "{}: sessions row {} messages{}[{k}]",
                        self.path.display(),
                        place.row,
                        place
                            .path
                            .iter()
                            .map(|p| format!("[{p}].sub_session.messages"))
                            .collect::<String>()
                    )
                };
                if raw.trim().is_empty() {
                    return Ok(());
                }
                let mut arr: Vec<&serde_json::value::RawValue> = serde_json::from_str(&raw)
                    .map_err(|e| {
                        anyhow!(
                            "{}: sessions row {}: invalid JSON in `messages`: {e}",
                            self.path.display(),
                            place.row
                        )
                    })?;
                for &k in &place.path {
                    let entry = arr
                        .get(k)
                        .ok_or_else(|| anyhow!("{}: no session {id}", self.path.display()))?;
                    let sub: LegacySub = serde_json::from_str::<LegacyItem>(entry.get())
                        .ok()
                        .and_then(|i| i.sub_session)
                        .and_then(|s| serde_json::from_str(s.get()).ok())
                        .ok_or_else(|| anyhow!("{}: no session {id}", self.path.display()))?;
                    let _ = sub.id;
                    arr = match sub.messages {
                        Some(m) if m.get() != "null" => {
                            serde_json::from_str(m.get()).map_err(|e| {
                                anyhow!(
                                    "{}: session {id}: invalid `messages`: {e}",
                                    self.path.display()
                                )
                            })?
                        }
                        _ => Vec::new(),
                    };
                }
                for (k, entry) in arr.iter().enumerate() {
                    let mut item =
                        RawItem::new(legacy_id(k), k as i64, Kind::Other("empty".into()), loc(k));
                    match serde_json::from_str::<LegacyItem>(entry.get()) {
                        Err(e) => {
                            item.kind = Kind::Message;
                            item.json = Some(format!("invalid entry: {e}"));
                        }
                        Ok(it) => {
                            if let Some(m) = it.message.filter(|m| m.get() != "null") {
                                item.kind = Kind::Message;
                                match serde_json::from_str::<LegacyMessage>(m.get()) {
                                    Ok(lm) => {
                                        item.json = lm.message.map(|x| x.get().to_string());
                                        item.implicit = lm.implicit.unwrap_or(false);
                                    }
                                    Err(e) => item.json = Some(format!("invalid entry: {e}")),
                                }
                            } else if let Some(sub) = it.sub_session.filter(|m| m.get() != "null") {
                                item.kind = Kind::Subsession;
                                let sid = serde_json::from_str::<LegacySub>(sub.get())
                                    .ok()
                                    .and_then(|s| s.id);
                                item.sub_exists = sid.as_ref().is_some_and(|s| !s.is_empty());
                                item.subsession = sid;
                            } else if let Some(t) = it.summary.filter(|t| !t.is_empty()) {
                                item.kind = Kind::Summary;
                                item.summary_text = t;
                                item.first_kept = it.first_kept_entry.unwrap_or(0);
                                item.model = it.model.unwrap_or_default();
                                item.usage_json = it
                                    .usage
                                    .map(|u| u.get().to_string())
                                    .filter(|u| u != "null")
                                    .unwrap_or_default();
                            } else if let Some(e) = it.error.filter(|m| m.get() != "null") {
                                item.kind = Kind::Error;
                                item.json = Some(e.get().to_string());
                            } else if let Some(t) = it.termination.filter(|m| m.get() != "null") {
                                item.kind = Kind::Termination;
                                item.json = Some(t.get().to_string());
                            } else {
                                // An empty entry: not an item docker-agent sends or indexes here.
                                continue;
                            }
                        }
                    }
                    f(item)?;
                }
                Ok(())
            }
        }
    }

    /// Loads session `id` with `edits` (of this session) applied on top of
    /// `base` (a session loaded or edited earlier: its edited items keep
    /// their JSON in `raw`, items it no longer holds are left out).
    fn build(&self, id: &str, base: Option<&Session>, edits: &[&Edit]) -> Result<Session> {
        let conn = self.conn()?;
        conn.execute_batch("BEGIN")
            .map_err(|e| self.read_err("the database", e))?;
        let mut b = Builder::new(self.shell(&conn, id)?);
        let by_id: HashMap<&str, &crate::model::Message> = base
            .map(|s| s.messages.iter().map(|m| (m.id.as_str(), m)).collect())
            .unwrap_or_default();
        let problems: HashSet<&str> = base
            .map(|s| s.problems.iter().filter_map(|p| p.id.as_deref()).collect())
            .unwrap_or_default();
        let dropped: HashSet<&str> = edits
            .iter()
            .filter(|e| e.change == Change::DropMessage)
            .map(|e| e.message_id.as_str())
            .collect();
        for d in &dropped {
            match by_id.get(d) {
                Some(m) if edit::skipped(m) => {}
                _ => bail!(
                    "item {d}: only a sub-session reference docker-agent skips can be removed (removing a loaded item would shift every first_kept_entry after it)"
                ),
            }
        }
        let gen = self.gen;
        let res = self.each_item(&conn, id, &mut |item| {
            if dropped.contains(item.id.as_str()) {
                return Ok(());
            }
            let mut raw: Option<Value> = match (base, by_id.get(item.id.as_str())) {
                (None, _) => None,
                (Some(_), Some(m)) => m.raw().cloned(),
                (Some(_), None) if problems.contains(item.id.as_str()) || matches!(item.kind, Kind::Other(_)) => None,
                // Removed by an earlier edit.
                (Some(_), None) => return Ok(()),
            };
            for e in edits.iter().filter(|e| e.message_id == item.id) {
                match &e.change {
                    Change::SetFirstKept { new, .. } => {
                        if item.kind != Kind::Summary {
                            bail!("item {}: not a summary item", item.id);
                        }
                        if !matches!(gen, Gen::Items { first_kept: true, .. }) {
                            bail!("item {}: this store has no first_kept_entry column (docker-agent migration 021)", item.id);
                        }
                        let mut o = raw.take().unwrap_or_else(|| item.summary_object());
                        o["first_kept_entry"] = Value::from(*new);
                        raw = Some(o);
                    }
                    Change::StripMedia { .. } | Change::Truncate { .. } | Change::AddNote { .. } => {
                        if item.kind != Kind::Message {
                            bail!("item {}: not a message item", item.id);
                        }
                        let mut v = match raw.take() {
                            Some(v) => v,
                            None => serde_json::from_str(item.json.as_deref().unwrap_or(""))
                                .with_context(|| format!("item {}: message_json", item.id))?,
                        };
                        edit::edit_message(&mut v, &e.change).map_err(|err| anyhow!("item {}: {err}", item.id))?;
                        raw = Some(v);
                    }
                    Change::DropMessage | Change::CutBefore { .. } => {}
                    other => bail!(
                        "item {}: docker-agent items have no parent links; {} does not apply",
                        item.id,
                        other.name()
                    ),
                }
            }
            b.push(item, raw);
            Ok(())
        });
        let _ = conn.execute_batch("COMMIT");
        res?;
        // Items an earlier edit added.
        for m in base
            .into_iter()
            .flat_map(|s| &s.messages)
            .filter(|m| m.id.starts_with(NEW_PREFIX))
        {
            let mut item = RawItem::new(m.id.to_string(), 0, Kind::Summary, "(added)".into());
            if let Some(r) = m.raw() {
                item.set_summary_object(r);
            }
            b.push(item, None);
        }
        for e in edits {
            if let Change::CutBefore { note } = &e.change {
                let item = self.new_summary(&b, &e.message_id, note)?;
                b.push(item, None);
            }
        }
        Ok(b.finish())
    }

    /// The summary item [`Change::CutBefore`] appends: docker-agent's own
    /// kind of compaction (`PersistCompaction` appends a summary whose
    /// `first_kept_entry` is where the kept tail starts), written by no model.
    fn new_summary(&self, b: &Builder, first: &str, note: &str) -> Result<RawItem> {
        if !matches!(
            self.gen,
            Gen::Items {
                first_kept: true,
                ..
            }
        ) {
            bail!(
                "{}: cutting history needs docker-agent's first_kept_entry (migration 021); this store is older: open it once with a current docker-agent (which migrates it), then compact",
                self.path.display()
            );
        }
        let index = b
            .slice_of(first)
            .ok_or_else(|| anyhow!("item {first}: not an item docker-agent loads"))?;
        if index == 0 {
            bail!("item {first}: the kept tail cannot start at the first item (docker-agent ignores first_kept_entry 0)");
        }
        let position = b.max_position + 1;
        let mut item = RawItem::new(
            format!("{NEW_PREFIX}{position}"),
            position,
            Kind::Summary,
            "(added)".into(),
        );
        item.summary_text = match &b.last_summary {
            Some(t) => format!("{t}\n\n{note}"),
            None => note.to_string(),
        };
        item.first_kept = index as i64;
        item.model = DOCTOR_MODEL.to_string();
        Ok(item)
    }

    /// Applies one edit to the copy (inside its transaction).
    fn apply_in_db(&self, txn: &rusqlite::Transaction<'_>, e: &Edit) -> Result<()> {
        let (sid, mid) = (&*e.session_id, &e.message_id);
        match self.gen {
            Gen::Legacy => {
                if !matches!(
                    e.change,
                    Change::StripMedia { .. } | Change::Truncate { .. } | Change::AddNote { .. }
                ) {
                    bail!(
                        "{}: {} is not supported on a legacy (migration 013) store",
                        self.path.display(),
                        e.change.name()
                    );
                }
                let place = self
                    .legacy_index()?
                    .place
                    .get(sid)
                    .cloned()
                    .ok_or_else(|| anyhow!("session {sid} not found in the copy"))?;
                let raw: String = txn
                    .query_row(
                        "SELECT messages FROM sessions WHERE id = ?1",
                        [&place.row],
                        |r| r.get(0),
                    )
                    .with_context(|| format!("session {} not found in the copy", place.row))?;
                let mut arr: Value = serde_json::from_str(&raw)?;
                let mut cur = &mut arr;
                for &k in &place.path {
                    cur = cur
                        .get_mut(k)
                        .and_then(|x| x.get_mut("sub_session"))
                        .and_then(|x| x.get_mut("messages"))
                        .ok_or_else(|| anyhow!("session {sid} not found in the copy"))?;
                }
                let k = parse_legacy_id(mid)
                    .ok_or_else(|| anyhow!("item {mid}: not a legacy entry id"))?;
                let msg = cur
                    .get_mut(k)
                    .and_then(|x| x.get_mut("message"))
                    .and_then(|x| x.get_mut("message"))
                    .ok_or_else(|| anyhow!("item {mid} not found in the copy"))?;
                edit::edit_message(msg, &e.change).map_err(|err| anyhow!("item {mid}: {err}"))?;
                txn.execute(
                    "UPDATE sessions SET messages = ?1 WHERE id = ?2",
                    [&edit::go_json(&arr), &place.row],
                )?;
            }
            Gen::Items {
                first_kept,
                model_usage,
                cost,
            } => match &e.change {
                Change::StripMedia { .. } | Change::Truncate { .. } | Change::AddNote { .. } => {
                    let data: String = txn
                        .query_row(
                            "SELECT message_json FROM session_items WHERE id = ?1 AND session_id = ?2 AND item_type = 'message'",
                            rusqlite::params![mid.parse::<i64>().unwrap_or(-1), sid],
                            |r| r.get(0),
                        )
                        .with_context(|| format!("item {mid} not found in the copy"))?;
                    let mut v: Value = serde_json::from_str(&data)?;
                    edit::edit_message(&mut v, &e.change)
                        .map_err(|err| anyhow!("item {mid}: {err}"))?;
                    txn.execute(
                        "UPDATE session_items SET message_json = ?1 WHERE id = ?2",
                        rusqlite::params![edit::go_json(&v), mid.parse::<i64>().unwrap_or(-1)],
                    )?;
                }
                Change::SetFirstKept { new, .. } => {
                    if !first_kept {
                        bail!(
                            "{}: no first_kept_entry column (docker-agent migration 021)",
                            self.path.display()
                        );
                    }
                    let n = txn.execute(
                        "UPDATE session_items SET first_kept_entry = ?1 WHERE id = ?2 AND session_id = ?3 AND item_type = 'summary'",
                        rusqlite::params![new, mid.parse::<i64>().unwrap_or(-1), sid],
                    )?;
                    if n != 1 {
                        bail!("summary item {mid} not found in the copy");
                    }
                }
                Change::DropMessage => {
                    let n = txn.execute(
                        "DELETE FROM session_items WHERE id = ?1 AND session_id = ?2 AND item_type = 'subsession' \
                         AND (subsession_id IS NULL OR subsession_id = '' OR subsession_id NOT IN (SELECT id FROM sessions))",
                        rusqlite::params![mid.parse::<i64>().unwrap_or(-1), sid],
                    )?;
                    if n != 1 {
                        bail!("item {mid}: not an orphan sub-session reference in the copy");
                    }
                }
                Change::CutBefore { note } => {
                    if !first_kept {
                        bail!(
                            "{}: cutting history needs docker-agent's first_kept_entry (migration 021)",
                            self.path.display()
                        );
                    }
                    // docker-agent's item list as loadSessionItems builds it.
                    let mut st = txn.prepare(
                        "SELECT i.id, i.item_type, i.subsession_id, i.summary_text, \
                         (SELECT count(*) FROM sessions s WHERE s.id = i.subsession_id), i.position \
                         FROM session_items i WHERE session_id = ?1 ORDER BY position, id",
                    )?;
                    let mut rows = st.query([sid])?;
                    let (mut index, mut n, mut last, mut max_pos) = (None, 0usize, None, -1i64);
                    while let Some(r) = rows.next()? {
                        let id: i64 = r.get(0)?;
                        let ty: String = r.get(1)?;
                        max_pos = max_pos.max(r.get(5)?);
                        let loaded = match ty.as_str() {
                            "message" | "summary" | "error" | "termination" => true,
                            "subsession" => {
                                text(r, 2).is_some_and(|s| !s.is_empty()) && r.get::<_, i64>(4)? > 0
                            }
                            _ => false,
                        };
                        if !loaded {
                            continue;
                        }
                        if id.to_string() == *mid {
                            index = Some(n);
                        }
                        if ty == "summary" {
                            if let Some(t) = text(r, 3).filter(|t| !t.is_empty()) {
                                last = Some(t);
                            }
                        }
                        n += 1;
                    }
                    drop(rows);
                    drop(st);
                    let index = index
                        .filter(|&i| i > 0)
                        .ok_or_else(|| anyhow!("item {mid}: cannot start the kept tail there"))?;
                    let text = match last {
                        Some(t) => format!("{t}\n\n{note}"),
                        None => note.clone(),
                    };
                    let (mut cols, mut vals) = (
                        "session_id, position, item_type, summary_text, first_kept_entry"
                            .to_string(),
                        "?1, ?2, 'summary', ?3, ?4".to_string(),
                    );
                    if model_usage {
                        cols.push_str(", model, usage_json");
                        vals.push_str(&format!(", '{DOCTOR_MODEL}', ''"));
                    }
                    if cost {
                        cols.push_str(", cost");
                        vals.push_str(", 0");
                    }
                    txn.execute(
                        &format!("INSERT INTO session_items ({cols}) VALUES ({vals})"),
                        rusqlite::params![sid, max_pos + 1, text, index as i64],
                    )?;
                    // What PersistCompaction leaves in the session counters:
                    // the summary's size as the prompt, no output.
                    if self.has_col("input_tokens") && self.has_col("output_tokens") {
                        let tokens = crate::measure::estimate_tokens(
                            crate::measure::char_count(SUMMARY_PREFIX)
                                + crate::measure::char_count(&text),
                        );
                        txn.execute(
                            "UPDATE sessions SET input_tokens = ?1, output_tokens = 0 WHERE id = ?2",
                            rusqlite::params![tokens as i64, sid],
                        )?;
                    }
                }
                other => bail!(
                    "item {mid}: docker-agent items have no parent links; {} does not apply",
                    other.name()
                ),
            },
        }
        Ok(())
    }
}

impl Store for DaStore {
    fn agent(&self) -> Agent {
        Agent::DockerAgent
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn side_files(&self) -> Vec<PathBuf> {
        crate::formats::sqlite::side_files(&self.path)
    }

    /// `~/.cagent` when the db sits in it.
    fn agent_dirs(&self) -> Vec<PathBuf> {
        self.path
            .parent()
            .filter(|d| d.file_name().is_some_and(|n| n == ".cagent"))
            .map(|d| vec![d.to_path_buf()])
            .unwrap_or_default()
    }

    fn input_bytes(&self) -> u64 {
        [
            self.path.clone(),
            crate::formats::sqlite::side(&self.path, "-wal"),
        ]
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
    }

    fn session_ids(&self) -> Result<Vec<String>> {
        match self.gen {
            Gen::Legacy => Ok(self.legacy_index()?.order.clone()),
            Gen::Items { .. } => {
                let conn = self.conn()?;
                let mut st = conn
                    .prepare("SELECT rowid, id FROM sessions ORDER BY created_at, id")
                    .map_err(|e| self.read_err("table sessions", e))?;
                let mut rows = st
                    .query([])
                    .map_err(|e| self.read_err("table sessions", e))?;
                let mut ids = Vec::new();
                while let Some(r) = rows
                    .next()
                    .map_err(|e| self.read_err("table sessions", e))?
                {
                    match text(r, 1) {
                        Some(id) => ids.push(id),
                        None => bail!(
                            "{}: sessions row with rowid {}: `id` is NULL",
                            self.path.display(),
                            r.get::<_, i64>(0).unwrap_or(-1)
                        ),
                    }
                }
                Ok(ids)
            }
        }
    }

    fn load(&self, id: &str) -> Result<Session> {
        let s = self.build(id, None, &[])?;
        self.snap.unchanged()?;
        Ok(s)
    }

    fn copier(&self) -> &dyn Copier {
        self
    }
}

impl Applier for DaStore {
    fn apply(&self, session: &Session, edits: &[Edit]) -> Result<Session> {
        let mine: Vec<&Edit> = edits
            .iter()
            .filter(|e| *e.session_id == *session.id)
            .collect();
        self.build(&session.id, Some(session), &mine)
    }

    fn cuts_with_summary(&self) -> bool {
        true
    }
}

impl Copier for DaStore {
    /// The copy and its side files: a replaced copy's are removed.
    fn copy_targets(&self, dest: &Path) -> Vec<PathBuf> {
        crate::formats::sqlite::with_side_files(dest)
    }

    fn copy_base(&self) -> PathBuf {
        crate::formats::folder_of(&self.path)
    }

    fn copy_path(&self) -> PathBuf {
        crate::formats::file_name_or(&self.path, "session.db")
    }

    fn describe(&self, ix: &crate::model::Lookup<'_>, e: &Edit) -> StoredChange {
        edit::describe(ix, e)
    }

    /// docker-agent reads `~/.cagent/session.db`, or the file named by
    /// `--session-db` (docs/formats/docker-agent.md section 1).
    /// The id is quoted for the shell (as remedy commands quote it).
    fn next_steps(&self, dest: &Path, sessions: &[String]) -> Vec<String> {
        use crate::formats::sh;
        let id = crate::formats::step_id(sessions.first().map(String::as_str));
        vec![
            format!(
                "docker agent run <agent.yaml> --session-db {}   # then open session {id} from its session list",
                sh(dest)
            ),
            format!(
                "or, with docker-agent closed, move the original {} (and any -wal/-shm) aside and put the copy in its place",
                sh(&self.path)
            ),
        ]
    }

    fn write_copy(&self, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
        self.snap.write_copy(dest, replace, &|txn| {
            for e in edits {
                self.apply_in_db(txn, e)?;
            }
            Ok(())
        })
    }
}
