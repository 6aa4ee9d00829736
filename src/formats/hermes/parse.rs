//! Reading hermes-agent's `state.db` into the model: the sessions table as a
//! lineage graph (built once per store), one `messages` row as a
//! [`Message`] ([`parse_row`]), and the compression markers session-doctor
//! derives (rotations from the chain, in-place compressions from the rows).
//! Shapes: docs/formats/hermes.md sections 3 to 9. Columns are always read
//! by name: older databases gained theirs by `ADD COLUMN`, in another order.

use super::ids;
use crate::measure::{char_count as chars, media_from_base64, parse_data_url};
use crate::model::*;
use anyhow::{anyhow, Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The prefix hermes puts before JSON-encoded (list or dict) content: a NUL
/// byte, then `json:` (`SessionDB._encode_content`).
pub const JSON_PREFIX: &str = "\u{0}json:";

/// The opening sentence every compaction summary prefix hermes 0.19.0
/// writes or recognises starts with (`SUMMARY_PREFIX` and the three frozen
/// `_HISTORICAL_SUMMARY_PREFIXES`).
pub const SUMMARY_OPENING: &str =
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.";
/// The oldest summary prefix (`LEGACY_SUMMARY_PREFIX`).
pub const LEGACY_SUMMARY_PREFIX: &str = "[CONTEXT SUMMARY]:";
/// What follows the old content of a message a summary was merged into.
pub const MERGED_SUMMARY_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";

/// Whether `text` is a compaction summary by hermes' own test
/// (`ContextCompressor._is_context_summary_content`): leading whitespace
/// stripped, what follows the merge delimiter when there is one, then one of
/// the prefixes, old or new.
pub fn is_summary_text(text: &str) -> bool {
    let mut t = text.trim_start();
    if let Some((_, after)) = t.split_once(MERGED_SUMMARY_DELIMITER) {
        t = after.trim_start();
    }
    t.starts_with(SUMMARY_OPENING) || t.starts_with(LEGACY_SUMMARY_PREFIX)
}

/// Which columns and tables a database has.
pub struct Schema {
    pub sessions: HashSet<String>,
    pub messages: HashSet<String>,
    pub tables: HashSet<String>,
    /// `session_model_usage` columns.
    pub usage: HashSet<String>,
}

impl Schema {
    pub fn read(conn: &Connection, path: &Path) -> Result<Schema> {
        let tables: HashSet<String> = crate::formats::sqlite::tables(conn, path)?
            .into_iter()
            .collect();
        let cols = |t: &str| -> Result<HashSet<String>> {
            if !tables.contains(t) {
                return Ok(HashSet::new());
            }
            Ok(crate::formats::sqlite::columns(conn, t, path)?
                .into_iter()
                .collect())
        };
        Ok(Schema {
            sessions: cols("sessions")?,
            messages: cols("messages")?,
            usage: cols("session_model_usage")?,
            tables,
        })
    }

    /// Whether these are hermes' tables.
    pub fn is_hermes(&self) -> bool {
        ["id", "started_at"]
            .iter()
            .all(|c| self.sessions.contains(*c))
            && ["session_id", "role", "content"]
                .iter()
                .all(|c| self.messages.contains(*c))
    }

    fn pick(set: &HashSet<String>, name: &str, default: &str) -> String {
        if set.contains(name) {
            format!("\"{name}\"")
        } else {
            default.to_string()
        }
    }

    /// `name` of `sessions`, or `default` (SQL) when the column is missing.
    pub fn s(&self, name: &str, default: &str) -> String {
        Self::pick(&self.sessions, name, default)
    }

    /// `name` of `messages`, or `default` (SQL) when the column is missing.
    pub fn m(&self, name: &str, default: &str) -> String {
        Self::pick(&self.messages, name, default)
    }

    /// Bytes of `name` of `messages` as stored (0 when missing or NULL).
    pub fn m_len(&self, name: &str) -> String {
        if self.messages.contains(name) {
            format!("COALESCE(length(CAST(\"{name}\" AS BLOB)), 0)")
        } else {
            "0".to_string()
        }
    }
}

/// A number column as f64 (integers, reals, numeric text).
pub fn num(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A count column as u64 (negative, NULL or text: 0).
pub fn count(v: ValueRef<'_>) -> u64 {
    num(v).map_or(0, |f| if f > 0.0 { f as u64 } else { 0 })
}

/// A text column (integers are written out; NULL and blobs: `None`).
pub fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        _ => None,
    }
}

/// One `sessions` row, with the figures of its messages and usage rows.
#[derive(Debug, Clone, Default)]
pub struct SessRow {
    pub id: String,
    pub parent: Option<String>,
    pub source: String,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    /// `model_config.$._branched_from` is set (a `/branch`).
    pub branched: bool,
    /// `model_config.$._delegate_from` is set (a sub-agent run).
    pub delegate: bool,
    pub title: Option<String>,
    /// `provider/model` as the budget lookup names it.
    pub model: Option<String>,
    /// The `sessions` usage columns (main loop only).
    pub usage: Usage,
    /// Message rows, archived ones included, and the newest row's timestamp.
    pub rows: usize,
    pub last_ts: Option<f64>,
    /// Main-loop calls and prompt tokens (input + cache read + cache write):
    /// `session_model_usage` rows with `task = ''` when there are any, else
    /// the `sessions` columns.
    pub main_calls: u64,
    pub main_prompt: u64,
    /// Auxiliary usage (`session_model_usage` rows with another task), by task.
    pub aux: Vec<(String, u64, Usage)>,
}

impl SessRow {
    /// The main-loop prompt size of this segment: prompt tokens per main
    /// call; 0 for a segment with no call.
    pub fn segment_prompt(&self) -> u64 {
        self.main_prompt.checked_div(self.main_calls).unwrap_or(0)
    }

    fn ended_by_compression(&self) -> bool {
        self.end_reason.as_deref() == Some("compression")
    }
}

/// Every session of a store and how they link (built once per store).
#[derive(Debug, Default)]
pub struct Graph {
    pub sessions: Vec<SessRow>,
    pub index: HashMap<String, usize>,
    pub children: Vec<Vec<usize>>,
}

fn marker_set(model_config: Option<&str>, key: &str) -> bool {
    model_config
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
        .and_then(|v| v.get(key).cloned())
        .is_some_and(|v| !v.is_null())
}

impl Graph {
    /// Reads `sessions`, the message counts and `session_model_usage`.
    pub fn read(conn: &Connection, schema: &Schema, path: &Path) -> Result<Graph> {
        let fail = |t: &str, e: rusqlite::Error| {
            anyhow!(
                "{}: cannot read table {t} (expected hermes-agent's columns): {e}",
                path.display()
            )
        };
        let sql = format!(
            "SELECT id, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {} FROM sessions",
            schema.s("parent_session_id", "NULL"),
            schema.s("source", "''"),
            schema.s("started_at", "0"),
            schema.s("ended_at", "NULL"),
            schema.s("end_reason", "NULL"),
            schema.s("model_config", "NULL"),
            schema.s("title", "NULL"),
            schema.s("model", "NULL"),
            schema.s("billing_provider", "NULL"),
            schema.s("input_tokens", "0"),
            schema.s("output_tokens", "0"),
            schema.s("cache_read_tokens", "0"),
            schema.s("cache_write_tokens", "0"),
            schema.s("reasoning_tokens", "0"),
            schema.s("api_call_count", "0"),
        );
        let mut st = conn.prepare(&sql).map_err(|e| fail("sessions", e))?;
        let mut rows = st.query([]).map_err(|e| fail("sessions", e))?;
        let mut g = Graph::default();
        while let Some(r) = rows.next().map_err(|e| fail("sessions", e))? {
            let v = |i: usize| r.get_ref(i).unwrap_or(ValueRef::Null);
            let Some(id) = text(v(0)) else { continue };
            let model_config = text(v(6));
            let model = text(v(8)).filter(|m| !m.trim().is_empty());
            let provider = text(v(9)).filter(|p| !p.trim().is_empty());
            let model = model.map(|m| match &provider {
                Some(p) if !m.contains('/') => format!("{p}/{m}"),
                _ => m,
            });
            let usage = Usage {
                input: count(v(10)),
                output: count(v(11)),
                cache_read: count(v(12)),
                cache_write: count(v(13)),
                reasoning: count(v(14)),
                total: None,
            };
            let api_calls = count(v(15));
            let row = SessRow {
                parent: text(v(1)).filter(|p| !p.is_empty()),
                source: text(v(2)).unwrap_or_default(),
                started_at: num(v(3)).unwrap_or(0.0),
                ended_at: num(v(4)),
                end_reason: text(v(5)),
                branched: marker_set(model_config.as_deref(), "_branched_from"),
                delegate: marker_set(model_config.as_deref(), "_delegate_from"),
                title: text(v(7)),
                model,
                main_calls: api_calls,
                main_prompt: usage.input + usage.cache_read + usage.cache_write,
                usage,
                id: id.clone(),
                ..Default::default()
            };
            if g.index.contains_key(&id) {
                continue;
            }
            g.index.insert(id, g.sessions.len());
            g.sessions.push(row);
        }
        drop(rows);
        drop(st);
        let sql = format!(
            "SELECT session_id, COUNT(*), MAX({}) FROM messages GROUP BY session_id",
            schema.m("timestamp", "NULL")
        );
        let mut st = conn.prepare(&sql).map_err(|e| fail("messages", e))?;
        let mut rows = st.query([]).map_err(|e| fail("messages", e))?;
        while let Some(r) = rows.next().map_err(|e| fail("messages", e))? {
            let v = |i: usize| r.get_ref(i).unwrap_or(ValueRef::Null);
            if let Some(&i) = text(v(0)).and_then(|id| g.index.get(&id)) {
                g.sessions[i].rows = count(v(1)) as usize;
                g.sessions[i].last_ts = num(v(2));
            }
        }
        drop(rows);
        drop(st);
        if schema.tables.contains("session_model_usage") && schema.usage.contains("session_id") {
            let u = |c: &str| Schema::pick(&schema.usage, c, "0");
            let sql = format!(
                "SELECT session_id, {}, {}, {}, {}, {}, {}, {} FROM session_model_usage",
                Schema::pick(&schema.usage, "task", "''"),
                u("api_call_count"),
                u("input_tokens"),
                u("output_tokens"),
                u("cache_read_tokens"),
                u("cache_write_tokens"),
                u("reasoning_tokens"),
            );
            let mut st = conn
                .prepare(&sql)
                .map_err(|e| fail("session_model_usage", e))?;
            let mut rows = st.query([]).map_err(|e| fail("session_model_usage", e))?;
            let mut main: HashMap<usize, (u64, u64)> = HashMap::new();
            while let Some(r) = rows.next().map_err(|e| fail("session_model_usage", e))? {
                let v = |i: usize| r.get_ref(i).unwrap_or(ValueRef::Null);
                let Some(&i) = text(v(0)).and_then(|id| g.index.get(&id)) else {
                    continue;
                };
                let task = text(v(1)).unwrap_or_default();
                let calls = count(v(2));
                let usage = Usage {
                    input: count(v(3)),
                    output: count(v(4)),
                    cache_read: count(v(5)),
                    cache_write: count(v(6)),
                    reasoning: count(v(7)),
                    total: None,
                };
                if task.is_empty() {
                    let e = main.entry(i).or_default();
                    e.0 += calls;
                    e.1 += usage.input + usage.cache_read + usage.cache_write;
                } else {
                    let aux = &mut g.sessions[i].aux;
                    match aux.iter_mut().find(|(t, ..)| *t == task) {
                        Some(a) => {
                            a.1 += calls;
                            a.2.add(&usage);
                        }
                        None => aux.push((task, calls, usage)),
                    }
                }
            }
            for (i, (calls, prompt)) in main {
                g.sessions[i].main_calls = calls;
                g.sessions[i].main_prompt = prompt;
            }
        }
        g.children = vec![Vec::new(); g.sessions.len()];
        for (i, s) in g.sessions.iter().enumerate() {
            if let Some(&p) = s.parent.as_ref().and_then(|p| g.index.get(p)) {
                if p != i {
                    g.children[p].push(i);
                }
            }
        }
        Ok(g)
    }

    /// Session ids, oldest first (`started_at`, then id).
    pub fn ids(&self) -> Vec<String> {
        let mut v: Vec<&SessRow> = self.sessions.iter().collect();
        v.sort_by(|a, b| {
            a.started_at
                .total_cmp(&b.started_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        v.into_iter().map(|s| s.id.clone()).collect()
    }

    fn parent_of(&self, i: usize) -> Option<usize> {
        self.sessions[i]
            .parent
            .as_ref()
            .and_then(|p| self.index.get(p))
            .copied()
            .filter(|&p| p != i)
    }

    /// Not a branch, a sub-agent or a tool session.
    fn plain_child(&self, c: usize) -> bool {
        let s = &self.sessions[c];
        !s.branched && !s.delegate && s.source != "tool"
    }

    /// A compression continuation: its parent ended with
    /// `end_reason='compression'` and it is a plain child
    /// (`get_compression_tip`'s filter).
    pub fn is_continuation(&self, c: usize) -> bool {
        self.parent_of(c)
            .is_some_and(|p| self.sessions[p].ended_by_compression() && self.plain_child(c))
    }

    /// The continuation `get_compression_tip` steps to from `i`: children
    /// that ended with compression first, then live ones, then the rest;
    /// within a class the latest activity, then the latest start, then the
    /// greatest id.
    fn next_continuation(&self, i: usize) -> Option<usize> {
        if !self.sessions[i].ended_by_compression() {
            return None;
        }
        self.children[i]
            .iter()
            .copied()
            .filter(|&c| self.plain_child(c))
            .min_by(|&a, &b| {
                let class = |c: usize| {
                    let s = &self.sessions[c];
                    if s.ended_by_compression() {
                        0
                    } else if s.ended_at.is_none() {
                        1
                    } else {
                        2
                    }
                };
                let activity = |c: usize| {
                    let s = &self.sessions[c];
                    s.last_ts.unwrap_or(s.started_at)
                };
                let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
                class(a)
                    .cmp(&class(b))
                    .then_with(|| activity(b).total_cmp(&activity(a)))
                    .then_with(|| sb.started_at.total_cmp(&sa.started_at))
                    .then_with(|| sb.id.cmp(&sa.id))
            })
    }

    /// The chain from `i` forward to its tip (`get_compression_tip`, at
    /// most 100 hops), `i` first.
    fn forward(&self, i: usize) -> Vec<usize> {
        let mut path = vec![i];
        let mut seen: HashSet<usize> = HashSet::from([i]);
        let mut cur = i;
        for _ in 0..100 {
            match self.next_continuation(cur) {
                Some(c) if seen.insert(c) => {
                    path.push(c);
                    cur = c;
                }
                _ => break,
            }
        }
        path
    }

    /// The first session of `i`'s chain: up the parents while each link is
    /// a compression continuation.
    fn root(&self, i: usize) -> usize {
        let mut cur = i;
        let mut seen: HashSet<usize> = HashSet::from([i]);
        while self.is_continuation(cur) {
            match self.parent_of(cur) {
                Some(p) if seen.insert(p) => cur = p,
                _ => break,
            }
        }
        cur
    }

    /// The session `hermes --resume <i>` loads (`resolve_resume_session_id`):
    /// the compression tip, then down the most recently started plain child
    /// (whatever its end reason, at most 32 hops) to the deepest session
    /// holding a row; the tip when none does.
    pub fn resolve_resume(&self, i: usize) -> usize {
        let tip = *self.forward(i).last().expect("never empty");
        let mut cur = tip;
        let mut best = None;
        let mut seen: HashSet<usize> = HashSet::from([tip]);
        for _ in 0..32 {
            if self.sessions[cur].rows > 0 {
                best = Some(cur);
            }
            let child = self.children[cur]
                .iter()
                .copied()
                .filter(|&c| self.plain_child(c))
                .max_by(|&a, &b| {
                    let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
                    sa.started_at
                        .total_cmp(&sb.started_at)
                        .then_with(|| sa.id.cmp(&sb.id))
                });
            match child {
                Some(c) if seen.insert(c) => cur = c,
                _ => break,
            }
        }
        best.unwrap_or(tip)
    }

    /// The chain `i` belongs to, root to tip, and `i`'s 1-based position.
    pub fn chain(&self, i: usize) -> (Vec<usize>, usize) {
        let root = self.root(i);
        let path = self.forward(root);
        let position = match path.iter().position(|&k| k == i) {
            Some(k) => k + 1,
            None => {
                // Off the tip's path (a stale sibling): its depth.
                let mut d = 1;
                let mut cur = i;
                while cur != root && d <= path.len() + 100 {
                    match self.parent_of(cur) {
                        Some(p) => {
                            cur = p;
                            d += 1;
                        }
                        None => break,
                    }
                }
                d
            }
        };
        (path, position)
    }

    /// Where session `i` sits.
    pub fn lineage(&self, i: usize) -> Lineage {
        let s = &self.sessions[i];
        let (path, position) = self.chain(i);
        Lineage {
            parent: s.parent.clone(),
            parent_missing: s
                .parent
                .as_ref()
                .is_some_and(|p| !self.index.contains_key(p)),
            root: self.sessions[path[0]].id.clone(),
            position,
            length: path.len(),
            tip: self.sessions[*path.last().expect("never empty")].id.clone(),
            resumes: self.sessions[self.resolve_resume(i)].id.clone(),
            ended_by_compaction: s.ended_by_compression(),
            continuations: self.children[i]
                .iter()
                .filter(|&&c| self.is_continuation(c))
                .count(),
            continuation: self.is_continuation(i),
            sibling_continuations: match self.parent_of(i) {
                Some(p) if self.is_continuation(i) => self.children[p]
                    .iter()
                    .filter(|&&c| c != i && self.is_continuation(c))
                    .count(),
                _ => 0,
            },
            rows: s.rows,
        }
    }

    /// The rotations to mark on session `i`, as `(ended, continuation)`
    /// pairs: every rotation of the chain on its tip (what a resume
    /// continues, where chain-level findings belong), the one that started
    /// it on any other continuation.
    pub fn rotations(&self, i: usize) -> Vec<(usize, usize)> {
        let (path, _) = self.chain(i);
        if path.len() > 1 && path.last() == Some(&i) {
            return path.windows(2).map(|w| (w[0], w[1])).collect();
        }
        match self.parent_of(i) {
            Some(p) if self.is_continuation(i) => vec![(p, i)],
            _ => Vec::new(),
        }
    }
}

/// A message id for time `t` (unix seconds) in milliseconds.
pub fn ms(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// The marker of the rotation that ended `ended` and continued in a child.
pub fn rotation_marker(ended: &SessRow, child: &SessRow) -> Message {
    let id = ids::rotation(&ended.id);
    let mut p = Part::empty(id.clone(), PartKind::Compaction, "compression");
    p.set_compaction(Some(Box::new(CompactionMarker {
        auto: true,
        trigger_tokens: Some(ended.segment_prompt()),
        ..Default::default()
    })));
    marker_message(id, ms(ended.ended_at.unwrap_or(child.started_at)), p)
}

/// The marker of an in-place compression of session `sid` whose new
/// generation starts at row `first_row`.
pub fn in_place_marker(sid: &str, first_row: &str, time: i64) -> Message {
    let id = ids::in_place(sid, first_row);
    let mut p = Part::empty(id.clone(), PartKind::Compaction, "compression");
    p.set_compaction(Some(Box::new(CompactionMarker {
        auto: true,
        unjudged: true,
        ..Default::default()
    })));
    marker_message(id, time, p)
}

fn marker_message(id: String, time: i64, p: Part) -> Message {
    Message::from(MessageFields {
        parent_optional: true,
        time_created: time,
        parts: std::iter::once(p).collect(),
        ..MessageFields::new(id, Role::Other(sym("compression")))
    })
}

/// One `messages` row as stored: what parsing and editing need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowData {
    pub id: i64,
    pub role: String,
    /// `content` as stored (NUL prefix included); `None` for NULL.
    pub content: Option<String>,
    pub api_content: Option<String>,
    pub tool_calls: Option<String>,
    pub tool_call_id: Option<String>,
    pub tool_name: Option<String>,
    pub finish_reason: Option<String>,
    pub timestamp: f64,
    /// Bytes of the other text columns (reasoning, codex items).
    pub other_bytes: u64,
}

impl RowData {
    /// The fields an edit changes, as JSON (kept in [`Message::raw`] so
    /// later edits apply on top).
    pub fn to_raw(&self) -> Value {
        serde_json::json!({
            "content": self.content,
            "api_content": self.api_content,
            "tool_calls": self.tool_calls,
        })
    }

    /// `self` with the edited fields of `raw` ([`RowData::to_raw`]).
    pub fn with_raw(mut self, raw: &Value) -> RowData {
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
        self.content = s("content");
        self.api_content = s("api_content");
        self.tool_calls = s("tool_calls");
        self
    }
}

/// The facts of a row the view needs, without its text.
#[derive(Debug, Clone, Default)]
pub struct RowFacts {
    /// `active`, NULL read as 1 (hermes sets NULL rows to 1 when it opens the db).
    pub active: bool,
    pub compacted: bool,
    pub role: String,
    /// The `id` and `call_id` of each of an assistant's tool calls.
    pub call_ids: Vec<Vec<String>>,
    pub tool_call_id: Option<String>,
    /// A Codex interim turn, never merged with its neighbour.
    pub interim: bool,
    pub timestamp: f64,
}

/// The `SELECT` list of [`read_row`] and [`read_facts`], in that order.
pub fn row_columns(schema: &Schema) -> String {
    let other = [
        "reasoning",
        "reasoning_content",
        "reasoning_details",
        "codex_reasoning_items",
        "codex_message_items",
    ]
    .iter()
    .map(|c| schema.m_len(c))
    .collect::<Vec<_>>()
    .join(" + ");
    let interim = {
        let mut v: Vec<String> = ["codex_reasoning_items", "codex_message_items"]
            .iter()
            .filter(|c| schema.messages.contains(**c))
            .map(|c| format!("COALESCE(\"{c}\", '') NOT IN ('', '[]', 'null')"))
            .collect();
        if schema.messages.contains("finish_reason") {
            v.push("COALESCE(finish_reason, '') = 'incomplete'".into());
        }
        if v.is_empty() {
            "0".to_string()
        } else {
            format!("({})", v.join(" OR "))
        }
    };
    format!(
        "id, {role}, CAST(content AS BLOB), {api}, {tc}, {tcid}, {tname}, {ts}, {fin}, {active}, {compacted}, {other}, {interim}",
        role = schema.m("role", "''"),
        api = schema.m("api_content", "NULL"),
        tc = schema.m("tool_calls", "NULL"),
        tcid = schema.m("tool_call_id", "NULL"),
        tname = schema.m("tool_name", "NULL"),
        ts = schema.m("timestamp", "0"),
        fin = schema.m("finish_reason", "NULL"),
        active = schema.m("active", "1"),
        compacted = schema.m("compacted", "0"),
    )
}

/// A row of [`row_columns`]: its data and facts.
pub fn read_row(r: &rusqlite::Row<'_>) -> (RowData, RowFacts) {
    let v = |i: usize| r.get_ref(i).unwrap_or(ValueRef::Null);
    let id = match v(0) {
        ValueRef::Integer(i) => i,
        other => num(other).map_or(-1, |f| f as i64),
    };
    let content = match v(2) {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Null => None,
        other => text(other),
    };
    let tool_calls = text(v(4)).filter(|t| !t.is_empty());
    let data = RowData {
        id,
        role: text(v(1)).unwrap_or_default(),
        content,
        api_content: text(v(3)),
        tool_calls,
        tool_call_id: text(v(5)).filter(|t| !t.is_empty()),
        tool_name: text(v(6)),
        finish_reason: text(v(8)),
        timestamp: num(v(7)).unwrap_or(0.0),
        other_bytes: count(v(11)),
    };
    let facts = RowFacts {
        active: !matches!(v(9), ValueRef::Integer(0)) && num(v(9)) != Some(0.0),
        compacted: num(v(10)).is_some_and(|c| c != 0.0),
        role: data.role.clone(),
        call_ids: call_ids(data.tool_calls.as_deref()),
        tool_call_id: data.tool_call_id.clone(),
        interim: count(v(12)) != 0,
        timestamp: data.timestamp,
    };
    (data, facts)
}

/// The text columns of a row of [`row_columns`] whose bytes are not UTF-8
/// (`content` is read as bytes, so it is checked whatever its type),
/// named as stored, in column order.
fn not_utf8_columns(r: &rusqlite::Row<'_>) -> Vec<&'static str> {
    const NAMES: [(usize, &str); 7] = [
        (1, "`role`"),
        (2, "`content`"),
        (3, "`api_content`"),
        (4, "`tool_calls`"),
        (5, "`tool_call_id`"),
        (6, "`tool_name`"),
        (8, "`finish_reason`"),
    ];
    NAMES
        .iter()
        .filter(|(i, _)| match r.get_ref(*i) {
            Ok(ValueRef::Text(b)) => std::str::from_utf8(b).is_err(),
            Ok(ValueRef::Blob(b)) if *i == 2 => std::str::from_utf8(b).is_err(),
            _ => false,
        })
        .map(|(_, n)| *n)
        .collect()
}

/// The `id` and `call_id` of each call of a `tool_calls` JSON list.
pub fn call_ids(tool_calls: Option<&str>) -> Vec<Vec<String>> {
    let Some(Value::Array(a)) = tool_calls.and_then(|t| serde_json::from_str(t).ok()) else {
        return Vec::new();
    };
    a.iter()
        .map(|c| {
            let mut v: Vec<String> = Vec::new();
            for k in ["id", "call_id"] {
                if let Some(x) = c.get(k).and_then(Value::as_str).filter(|x| !x.is_empty()) {
                    if !v.iter().any(|o| o == x) {
                        v.push(x.to_string());
                    }
                }
            }
            v
        })
        .collect()
}

/// `content` decoded as hermes decodes it (`_decode_content`).
pub enum Content {
    /// Plain text (or JSON that decodes to a string).
    Text(String),
    /// A list (or one dict) of parts.
    Items(Vec<Value>),
    /// Starts with the JSON prefix but is not valid JSON: hermes sends the
    /// raw string; the error says why.
    Bad(String, String),
}

pub fn decode(content: &str) -> Content {
    let Some(rest) = content.strip_prefix(JSON_PREFIX) else {
        return Content::Text(content.to_string());
    };
    match serde_json::from_str::<Value>(rest) {
        Ok(Value::Array(a)) => Content::Items(a),
        Ok(o @ Value::Object(_)) => Content::Items(vec![o]),
        Ok(Value::String(s)) => Content::Text(s),
        Ok(other) => Content::Text(other.to_string()),
        Err(e) => Content::Bad(content.to_string(), e.to_string()),
    }
}

/// The image parts hermes recognises (`_is_image_part`).
pub fn is_image(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("image_url" | "input_image" | "image")
    )
}

/// The inline media of an image part, and the bytes its data puts on the wire.
fn image_media(item: &Value) -> (Option<Media>, u64) {
    let url = match item.get("image_url") {
        Some(Value::String(u)) => Some(u.as_str()),
        Some(o) => o.get("url").and_then(Value::as_str),
        None => None,
    };
    if let Some(u) = url {
        return (parse_data_url(u, None), u.len() as u64);
    }
    let src = item.get("source");
    let data = src.and_then(|s| s.get("data")).and_then(Value::as_str);
    match data {
        Some(d) => {
            let mime = src
                .and_then(|s| s.get("media_type"))
                .and_then(Value::as_str)
                .unwrap_or("");
            (Some(media_from_base64(mime, d, None)), d.len() as u64)
        }
        None => (
            None,
            src.and_then(|s| s.get("url"))
                .and_then(Value::as_str)
                .map_or(0, |u| u.len() as u64),
        ),
    }
}

/// The text of a content value hermes tests for summaries
/// (`_content_text_for_contains`).
fn text_of(c: &Content) -> String {
    match c {
        Content::Text(t) | Content::Bad(t, _) => t.clone(),
        Content::Items(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.as_str()),
                o => o.get("text").and_then(Value::as_str),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// A [`Message`] from a stored row, and what could not be read in it.
/// `model`: the session's `provider/model`.
pub fn parse_row(
    row: &RowData,
    model: Option<&Sym>,
    location: &str,
) -> (Message, Vec<LoadProblem>) {
    let id = row.id.to_string();
    let mut problems = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    let role = Role::named(&row.role);
    let content = decode(row.content.as_deref().unwrap_or(""));
    if let Content::Bad(_, e) = &content {
        problems.push(LoadProblem {
            location: format!("{location}: messages row {id}"),
            id: Some(id.clone()),
            error: format!(
                "`content` starts with hermes' \\x00json: prefix but is not valid JSON ({e}); hermes sends it as raw text"
            ),
            kind: ProblemKind::Unreadable,
            file: None,
            line: None,
            row: None,
        });
    }
    let summary =
        matches!(role, Role::User | Role::Assistant) && is_summary_text(&text_of(&content));
    let tool_row = row.role == "tool";
    match &content {
        Content::Text(t) | Content::Bad(t, _) => {
            let stored = row.content.as_deref().map_or(0, |c| c.len() as u64);
            if tool_row {
                parts.push(tool_result(
                    ids::part(&id, 0),
                    row,
                    chars(t),
                    t.len() as u64,
                    stored,
                ));
            } else if !t.is_empty() {
                let mut p = Part::empty(ids::part(&id, 0), PartKind::Text, "text");
                p.set_model_chars(chars(t));
                p.set_wire_bytes(t.len() as u64);
                p.set_payload_bytes(stored);
                parts.push(p);
            }
        }
        Content::Items(items) => {
            let mut result_chars = 0;
            let mut result_bytes = 0;
            for (k, item) in items.iter().enumerate() {
                let pid = ids::part(&id, k);
                let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
                let stored = super::edit::py_json(item).len() as u64;
                let mut p = if is_image(item) {
                    let (m, wire) = image_media(item);
                    let mut p = Part::empty(pid, PartKind::File, ty);
                    p.set_wire_bytes(wire);
                    p.media_mut().extend(m);
                    p
                } else if let Some(t) = item
                    .get("text")
                    .and_then(Value::as_str)
                    .or_else(|| item.as_str())
                {
                    if tool_row {
                        result_chars += chars(t);
                        result_bytes += t.len() as u64;
                        continue;
                    }
                    let mut p =
                        Part::empty(pid, PartKind::Text, if ty.is_empty() { "text" } else { ty });
                    p.set_model_chars(chars(t));
                    p.set_wire_bytes(t.len() as u64);
                    p
                } else {
                    let j = item.to_string();
                    let mut p = Part::empty(pid, PartKind::Other, ty);
                    p.set_model_chars(chars(&j));
                    p.set_wire_bytes(j.len() as u64);
                    p
                };
                p.set_payload_bytes(stored);
                parts.push(p);
            }
            if tool_row {
                parts.insert(
                    0,
                    tool_result(ids::part(&id, 0), row, result_chars, result_bytes, 0),
                );
            }
        }
    }
    if let Some(api) = row.api_content.as_deref().filter(|a| !a.is_empty()) {
        // Sent instead of `content` (docs/formats/hermes.md section 5).
        for p in parts.iter_mut() {
            p.set_model_chars(0);
            p.set_wire_bytes(0);
        }
        let mut p = Part::empty(ids::api_part(&id), PartKind::Text, "api_content");
        p.set_model_chars(chars(api));
        p.set_wire_bytes(api.len() as u64);
        p.set_payload_bytes(api.len() as u64);
        parts.push(p);
    }
    if let Some(tc) = row.tool_calls.as_deref() {
        match serde_json::from_str::<Value>(tc) {
            Ok(Value::Array(calls)) => {
                for (k, c) in calls.iter().enumerate() {
                    let f = c.get("function");
                    let name = f
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let args = match f.and_then(|f| f.get("arguments")) {
                        Some(Value::String(a)) => a.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(o) => o.to_string(),
                    };
                    let call_id = c
                        .get("call_id")
                        .and_then(Value::as_str)
                        .filter(|x| !x.is_empty())
                        .or_else(|| c.get("id").and_then(Value::as_str))
                        .unwrap_or("");
                    let mut p = Part::empty(ids::call_part(&id, k), PartKind::Tool, "tool_call");
                    p.set_model_chars(chars(name) + chars(&args));
                    p.set_wire_bytes((name.len() + args.len()) as u64);
                    p.set_payload_bytes(super::edit::py_json(c).len() as u64);
                    p.tool = Some(Box::new(ToolCall {
                        name: sym(name),
                        call_id: call_id.into(),
                        status: ToolStatus::Pending,
                        output_chars: 0,
                        output_cleared: false,
                    }));
                    parts.push(p);
                }
            }
            Ok(_) | Err(_) => problems.push(LoadProblem {
                location: format!("{location}: messages row {id}"),
                id: Some(id.clone()),
                error: "`tool_calls` is not a JSON list; hermes replays the row without its calls"
                    .into(),
                kind: ProblemKind::Unreadable,
                file: None,
                line: None,
                row: None,
            }),
        }
    }
    let stored: u64 = row.content.as_deref().map_or(0, |c| c.len() as u64)
        + row.api_content.as_deref().map_or(0, |c| c.len() as u64)
        + row.tool_calls.as_deref().map_or(0, |c| c.len() as u64)
        + row.other_bytes;
    let in_parts: u64 = parts.iter().map(|p| p.payload_bytes()).sum();
    for p in parts.iter_mut().filter(|p| p.payload_bytes() > stored) {
        p.set_payload_bytes(stored);
    }
    // Text `session-doctor compact` wrote where it cut or stripped something.
    if row
        .content
        .as_deref()
        .is_some_and(crate::measure::has_compact_marker)
    {
        for p in parts.iter_mut().filter(|p| p.kind != PartKind::Compaction) {
            p.rewritten = true;
        }
    }
    let time = ms(row.timestamp);
    let m = Message::from(MessageFields {
        id: id.into(),
        role: role.clone(),
        parent_id: None,
        line: None,
        sidechain: false,
        parent_optional: false,
        response_id: None,
        time_created: time,
        time_completed: (role == Role::Assistant).then_some(time).into(),
        summary,
        finish: row.finish_reason.as_deref().map(sym),
        usage: None,
        model: matches!(role, Role::User | Role::Assistant)
            .then(|| model.cloned())
            .flatten(),
        info_bytes: stored.saturating_sub(in_parts),
        parts: parts.into(),
        rare: None,
    });
    (m, problems)
}

fn tool_result(id: String, row: &RowData, model_chars: u64, wire: u64, stored: u64) -> Part {
    let mut p = Part::empty(id, PartKind::Tool, "tool_result");
    p.set_model_chars(model_chars);
    p.set_wire_bytes(wire);
    p.set_payload_bytes(stored);
    p.tool = Some(Box::new(ToolCall {
        name: sym(row.tool_name.as_deref().unwrap_or_default()),
        call_id: row.tool_call_id.as_deref().unwrap_or_default().into(),
        status: ToolStatus::Completed,
        output_chars: ToolCall::chars(model_chars),
        output_cleared: false,
    }));
    p
}

/// Marks each tool call answered by a tool row of the session (by its `id`
/// or its `call_id`) completed; `facts` are the rows' facts by message id.
pub fn resolve_calls(s: &mut Session, facts: &HashMap<String, RowFacts>) {
    let answered: HashSet<&str> = facts
        .values()
        .filter_map(|f| f.tool_call_id.as_deref())
        .collect();
    for m in &mut s.messages {
        let Some(f) = facts.get(m.id.as_str()) else {
            continue;
        };
        let mut k = 0;
        for p in m.parts.iter_mut() {
            let Some(t) = p.tool.as_mut() else { continue };
            if &*p.kind_name != "tool_call" {
                continue;
            }
            let done = answered.contains(&*t.call_id)
                || f.call_ids
                    .get(k)
                    .is_some_and(|ids| ids.iter().any(|x| answered.contains(x.as_str())));
            t.status = if done {
                ToolStatus::Completed
            } else {
                ToolStatus::Pending
            };
            k += 1;
        }
    }
}

/// Inserts the markers of in-place compressions among the rows of `s`
/// (no generation is stored: a new generation starts where the row
/// timestamps go back, as the compacted list is re-inserted with its
/// messages' original times, and holds a summary row; the boundary between
/// archived and active rows always starts one).
pub fn mark_in_place(s: &mut Session, facts: &HashMap<String, RowFacts>) {
    let rows: Vec<usize> = (0..s.messages.len())
        .filter(|&i| facts.contains_key(s.messages[i].id.as_str()))
        .collect();
    let mut starts: Vec<usize> = Vec::new();
    for w in 1..rows.len() {
        let (a, b) = (
            &facts[s.messages[rows[w - 1]].id.as_str()],
            &facts[s.messages[rows[w]].id.as_str()],
        );
        let archive_edge = a.compacted && !a.active && b.active;
        let went_back = b.timestamp < a.timestamp;
        if archive_edge {
            starts.push(w);
            continue;
        }
        if went_back {
            let end = (w + 1..rows.len())
                .find(|&x| {
                    let (p, q) = (
                        &facts[s.messages[rows[x - 1]].id.as_str()],
                        &facts[s.messages[rows[x]].id.as_str()],
                    );
                    q.timestamp < p.timestamp || (p.compacted && !p.active && q.active)
                })
                .unwrap_or(rows.len());
            if (w..end).any(|x| s.messages[rows[x]].summary()) {
                starts.push(w);
            }
        }
    }
    for &w in starts.iter().rev() {
        let at = rows[w];
        let prev = rows[w - 1];
        let marker = in_place_marker(&s.id, &s.messages[at].id, s.messages[prev].time_created());
        s.messages.insert(at, marker);
    }
}

/// Calls `each` on the rows of `messages` matching `filter` (with
/// `params`), in id order (`desc`: newest first), until it returns `false`.
///
/// Only the rowids are sorted by SQLite; each row is then read by rowid. A
/// `SELECT {columns} ... ORDER BY id` is sorted in a temporary b-tree that
/// holds every selected column (no hermes index orders a session's rows by
/// id), and a big session's text spills to a temporary file. On a
/// connection outside a transaction, the reads share one read transaction.
pub fn rows_by_id(
    conn: &Connection,
    columns: &str,
    filter: &str,
    params: impl rusqlite::Params,
    desc: bool,
    mut each: impl FnMut(&rusqlite::Row<'_>) -> bool,
) -> rusqlite::Result<()> {
    let own = conn.is_autocommit();
    if own {
        conn.execute_batch("BEGIN")?;
    }
    let read = || -> rusqlite::Result<()> {
        let order = if desc { "DESC" } else { "ASC" };
        let rowids: Vec<i64> = conn
            .prepare(&format!(
                "SELECT rowid FROM messages WHERE {filter} ORDER BY id {order}"
            ))?
            .query_map(params, |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut st = conn.prepare(&format!("SELECT {columns} FROM messages WHERE rowid = ?1"))?;
        for rowid in rowids {
            let mut rows = st.query([rowid])?;
            if let Some(r) = rows.next()? {
                if !each(r) {
                    break;
                }
            }
        }
        Ok(())
    };
    let result = read();
    if own {
        let _ = conn.execute_batch("COMMIT");
    }
    result
}

/// Reads the rows of session `sid` (every row, archived ones included, in
/// id order) into `s`, with their facts by message id.
pub fn read_rows(
    conn: &Connection,
    schema: &Schema,
    path: &Path,
    s: &mut Session,
    model: Option<&Sym>,
) -> Result<HashMap<String, RowFacts>> {
    let location = path.display().to_string();
    let mut facts = HashMap::new();
    let sid = s.id.clone();
    let (messages, problems) = (&mut s.messages, &mut s.problems);
    rows_by_id(
        conn,
        &row_columns(schema),
        "session_id = ?1",
        [&sid],
        false,
        |r| {
            let (data, f) = read_row(r);
            let (m, p) = parse_row(&data, model, &location);
            let bad = not_utf8_columns(r);
            if !bad.is_empty() {
                problems.push(LoadProblem {
                    location: format!("{location}: messages row {}", data.id),
                    id: Some(m.id.to_string()),
                    error: format!(
                        "{} not UTF-8 text: hermes-agent reads rows with Python's sqlite3, which cannot decode it, so the session does not load",
                        bad.join(", ")
                    ),
                    kind: ProblemKind::Unreadable,
                    file: None,
                    line: None,
                    row: None,
                });
            }
            facts.insert(m.id.to_string(), f);
            messages.push(m);
            problems.extend(p);
            true
        },
    )
    .with_context(|| {
        format!(
            "{}: session {sid}: cannot read its messages (expected hermes-agent's columns)",
            path.display(),
        )
    })?;
    Ok(facts)
}

/// The facts of every row of session `sid`, re-read without their text
/// (for edits measured on the model).
pub fn read_facts(
    conn: &Connection,
    schema: &Schema,
    sid: &str,
) -> Result<HashMap<String, RowFacts>> {
    let mut out = HashMap::new();
    rows_by_id(
        conn,
        &row_columns(schema).replace("CAST(content AS BLOB)", "NULL"),
        "session_id = ?1",
        [sid],
        false,
        |r| {
            let (d, f) = read_row(r);
            out.insert(d.id.to_string(), f);
            true
        },
    )?;
    Ok(out)
}

/// Re-reads one row of session `sid` by id.
pub fn read_one(conn: &Connection, schema: &Schema, sid: &str, id: &str) -> Result<RowData> {
    let sql = format!(
        "SELECT {} FROM messages WHERE session_id = ?1 AND id = ?2",
        row_columns(schema)
    );
    let rid: i64 = id
        .parse()
        .map_err(|_| anyhow!("{id} is not a messages row id"))?;
    conn.query_row(&sql, rusqlite::params![sid, rid], |r| Ok(read_row(r).0))
        .with_context(|| format!("messages row {id} of session {sid} not found"))
}
