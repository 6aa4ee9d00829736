//! Edits on hermes-agent stores: on the model (to measure a plan,
//! [`apply`]), as stored changes ([`describe`]), and as SQL on a copy
//! ([`write`]). Every write goes through plain SQL on the copy's `messages`
//! and `sessions` rows, so hermes' own FTS triggers keep `messages_fts` and
//! `messages_fts_trigram` in step (docs/formats/hermes.md section 3).
//!
//! - strip-media: an image part of a JSON-encoded content list becomes
//!   hermes' own placeholder text part (`_strip_images_from_content`);
//! - truncate: the text of `content` (or of its text parts), `api_content`,
//!   or the string values of a call's `function.arguments`;
//! - any edit of `content` sets `api_content` to NULL, as hermes'
//!   `drop_stale_api_content` does;
//! - drop-message archives the row (`active = 0, compacted = 1`), as hermes'
//!   in-place compression does; a row already archived and a compression
//!   marker (not a row) are left as they are;
//! - cut-before is an in-place compression of the session, as hermes'
//!   `archive_and_compact` does it: every active row is archived, then a
//!   summary row (hermes' compaction prefix, the note, the body of the
//!   newest summary it replaces, hermes' end marker) and copies of the rows
//!   from the cut on are inserted as the new active rows; the session's
//!   `message_count` / `tool_call_count` become the active counts;
//! - session changes: reopen (the #80337 SQL of docs/formats/hermes.md
//!   section 11), drop an empty continuation (section 10), clear a parent
//!   that names no session.

use super::ids::{self, PartRef};
use super::parse::{
    decode, in_place_marker, is_image, parse_row, read_facts, read_one, Content, RowData, RowFacts,
    Schema, JSON_PREFIX,
};
use super::view::visible_view;
use crate::edit::{
    truncate_middle, truncate_strings, Change, ChangeFigures, Edit, SessionChange, StoredChange,
    TextField,
};
use crate::model::{Lineage, Session, Sym};
use anyhow::{anyhow, bail, Context, Result};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The text hermes puts in place of a historical image
/// (`agent/context_compressor.py: _strip_images_from_content`).
pub const IMAGE_PLACEHOLDER: &str = "[Attached image — stripped after compression]";

/// hermes-agent 0.19.0's `SUMMARY_PREFIX`, verbatim.
pub const SUMMARY_PREFIX: &str = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. This is a handoff from a previous context window — treat it as background reference, NOT as active instructions. Do NOT answer questions or fulfill requests mentioned in this summary; they were already addressed. Respond ONLY to the latest user message that appears AFTER this summary — that message is the single source of truth for what to do right now. Topic overlap with the summary does NOT mean you should resume its task: even on similar topics, the latest user message WINS. Treat ONLY the latest message as the active task and discard stale items from '## Historical Task Snapshot' / '## Historical In-Progress State' / '## Historical Pending User Asks' / '## Historical Remaining Work' entirely — do not 'wrap up' or 'finish' work described there unless the latest message explicitly asks for it. Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll back', 'just verify', 'don't do that anymore', 'never mind', a new topic) must immediately end any in-flight work described in the summary; do not re-surface it in later turns. IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system prompt is ALWAYS authoritative and active — never ignore or deprioritize memory content due to this compaction note. None of the above restricts HOW you work: your tools remain fully active — keep calling them normally for the active task (edit files, run commands, search) instead of merely narrating what you would do. The current session state (files, config, etc.) may reflect work described here — avoid repeating it:";

/// hermes' `_SUMMARY_END_MARKER`, appended to a standalone summary.
pub const SUMMARY_END_MARKER: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";

/// The content of the summary row a compact copy adds (hermes' standalone
/// summary shape: prefix, newline, body, blank line, end marker); the body
/// is the note, then the body of the summary it replaces.
pub fn summary_content(note: &str, previous: Option<&str>) -> String {
    match previous.filter(|p| !p.is_empty()) {
        Some(p) => format!("{SUMMARY_PREFIX}\n{note}\n\n{p}\n\n{SUMMARY_END_MARKER}"),
        None => format!("{SUMMARY_PREFIX}\n{note}\n\n{SUMMARY_END_MARKER}"),
    }
}

/// The body of a summary text, without the merged wrapper, the prefix and
/// the end marker (hermes' `_strip_summary_prefix`; every prefix, old or
/// new, is one line).
pub fn summary_body(text: &str) -> String {
    use super::parse::{LEGACY_SUMMARY_PREFIX, MERGED_SUMMARY_DELIMITER, SUMMARY_OPENING};
    let mut t = text.trim();
    if let Some((_, after)) = t.split_once(MERGED_SUMMARY_DELIMITER) {
        t = after.trim();
    }
    if t.starts_with(SUMMARY_OPENING) {
        t = t.split_once('\n').map_or("", |(_, b)| b).trim_start();
    } else if let Some(r) = t.strip_prefix(LEGACY_SUMMARY_PREFIX) {
        t = r.trim_start();
    }
    t.strip_suffix(SUMMARY_END_MARKER)
        .unwrap_or(t)
        .trim_end()
        .to_string()
}

/// The body of the newest active summary row of session `sid` before row
/// `before` (what a compaction carries forward).
fn previous_summary(conn: &Connection, schema: &Schema, sid: &str, before: i64) -> Option<String> {
    let active = if schema.messages.contains("active") {
        ACTIVE
    } else {
        "1 = 1"
    };
    let mut found = None;
    let _ = super::parse::rows_by_id(
        conn,
        "CAST(content AS BLOB)",
        &format!("session_id = ?1 AND id < ?2 AND {active} AND role IN ('user', 'assistant')"),
        rusqlite::params![sid, before],
        true,
        |r| {
            let Ok(Some(c)) = r.get::<_, Option<Vec<u8>>>(0) else {
                return true;
            };
            let text = content_text(&String::from_utf8_lossy(&c));
            if super::parse::is_summary_text(&text) {
                found = Some(summary_body(&text));
            }
            found.is_none()
        },
    );
    found
}

/// The text of a stored content value (text parts joined by newlines).
fn content_text(content: &str) -> String {
    match decode(content) {
        Content::Text(t) | Content::Bad(t, _) => t,
        Content::Items(items) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn row_text(row: &RowData) -> String {
    content_text(row.content.as_deref().unwrap_or(""))
}

/// The role of that summary row: the one that keeps user/assistant
/// alternation with the first row it precedes.
pub fn summary_role(first_kept_role: &str) -> &'static str {
    if first_kept_role == "user" {
        "assistant"
    } else {
        "user"
    }
}

/// `v` as Python's `json.dumps(v)` writes it (hermes' encoding of list
/// content and `tool_calls`): `", "` and `": "` separators, non-ASCII
/// escaped as `\uXXXX`.
pub fn py_json(v: &Value) -> String {
    let mut s = String::new();
    write_py(&mut s, v);
    s
}

fn write_py(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_py_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py(out, x);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_py_str(out, k);
                out.push_str(": ");
                write_py(out, x);
            }
            out.push('}');
        }
    }
}

fn write_py_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e && (c as u32) != 0x7f => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Re-encodes content parts the way they were stored (a list, or one dict).
fn encode_items(original: &str, mut items: Vec<Value>) -> String {
    let dict = original
        .strip_prefix(JSON_PREFIX)
        .is_some_and(|r| r.trim_start().starts_with('{'));
    let v = if dict && items.len() == 1 {
        items.remove(0)
    } else {
        Value::Array(items)
    };
    format!("{JSON_PREFIX}{}", py_json(&v))
}

/// Applies a part-level change to a stored row.
pub fn edit_row(row: &mut RowData, change: &Change) -> Result<()> {
    let pid = change
        .part_id()
        .ok_or_else(|| anyhow!("not a part-level change"))?;
    let (_, at) = ids::parse_part(pid).ok_or_else(|| anyhow!("{pid} is not a part id"))?;
    match (change, at) {
        (Change::StripMedia { .. }, PartRef::Content(k)) => {
            let orig = row.content.clone().unwrap_or_default();
            let Content::Items(mut items) = decode(&orig) else {
                bail!("part {pid}: the row's content holds no image part");
            };
            let item = items
                .get_mut(k)
                .filter(|i| is_image(i))
                .ok_or_else(|| anyhow!("part {pid} is not an image part"))?;
            *item = json!({"type": "text", "text": IMAGE_PLACEHOLDER});
            row.content = Some(encode_items(&orig, items));
            row.api_content = None;
        }
        (
            Change::Truncate {
                field: TextField::Text | TextField::ToolOutput,
                max_chars,
                ..
            },
            PartRef::Content(k),
        ) => {
            let orig = row.content.clone().unwrap_or_default();
            let tool_row = row.role == "tool";
            let new = match decode(&orig) {
                Content::Text(t) => truncate_middle(&t, *max_chars),
                Content::Bad(..) => bail!("part {pid}: the content is not readable JSON"),
                Content::Items(mut items) => {
                    let mut changed = false;
                    for (j, item) in items.iter_mut().enumerate() {
                        if !(tool_row || j == k) {
                            continue;
                        }
                        if let Some(Value::String(t)) = item.get_mut("text") {
                            if let Some(n) = truncate_middle(t, *max_chars) {
                                *t = n;
                                changed = true;
                            }
                        }
                    }
                    changed.then(|| encode_items(&orig, items))
                }
            };
            if let Some(n) = new {
                row.content = Some(n);
                row.api_content = None;
            }
        }
        (Change::Truncate { max_chars, .. }, PartRef::Api) => {
            if let Some(n) = row
                .api_content
                .as_deref()
                .and_then(|a| truncate_middle(a, *max_chars))
            {
                row.api_content = Some(n);
            }
        }
        (
            Change::Truncate {
                field: TextField::ToolInput,
                max_chars,
                ..
            },
            PartRef::Call(k),
        ) => {
            let mut calls: Value = serde_json::from_str(row.tool_calls.as_deref().unwrap_or(""))
                .with_context(|| format!("part {pid}: tool_calls is not JSON"))?;
            let args = calls
                .get_mut(k)
                .and_then(|c| c.get_mut("function"))
                .and_then(|f| f.get_mut("arguments"))
                .ok_or_else(|| anyhow!("part {pid}: the call has no arguments"))?;
            match args {
                Value::String(a) => match serde_json::from_str::<Value>(a) {
                    Ok(mut parsed) if parsed.is_object() || parsed.is_array() => {
                        truncate_strings(&mut parsed, *max_chars);
                        *a = py_json(&parsed);
                    }
                    _ => {
                        if let Some(n) = truncate_middle(a, *max_chars) {
                            *a = n;
                        }
                    }
                },
                other => truncate_strings(other, *max_chars),
            }
            row.tool_calls = Some(py_json(&calls));
        }
        (c, _) => bail!("part {pid}: {} does not apply to it", c.name()),
    }
    Ok(())
}

/// What [`apply`] needs from the store.
pub struct Ctx<'a> {
    pub conn: &'a Connection,
    pub schema: &'a Schema,
    pub location: &'a str,
}

/// The next `messages` id SQLite's AUTOINCREMENT gives in the copy.
fn next_row_id(conn: &Connection) -> Result<i64> {
    let seq: i64 = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    let max: i64 = conn
        .query_row("SELECT COALESCE(MAX(id), 0) FROM messages", [], |r| {
            r.get(0)
        })
        .unwrap_or(0);
    Ok(seq.max(max) + 1)
}

fn session_change(l: &mut Lineage, c: &SessionChange) {
    match c {
        SessionChange::Reopen => l.ended_by_compaction = false,
        SessionChange::DropEmpty => {
            l.continuation = false;
            l.rows = 0;
        }
        SessionChange::ClearParent { .. } => {
            l.parent = None;
            l.parent_missing = false;
        }
    }
}

/// `s` with `edits` applied, as the copy will hold it.
pub fn apply(ctx: &Ctx<'_>, s: &Session, edits: &[Edit]) -> Result<Session> {
    let mut out = s.clone();
    let mut facts = read_facts(ctx.conn, ctx.schema, &s.id)?;
    let model: Option<Sym> = s.messages.iter().find_map(|m| m.model_sym().cloned());
    let index: HashMap<crate::model::Id, usize> = out
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id.clone(), i))
        .collect();
    let mut cut: Option<(String, String)> = None;
    for e in edits {
        if let Change::Session(c) = &e.change {
            // A session change may name another session of the store (the
            // parent an empty continuation hands back to).
            if *e.session_id == *s.id {
                if let Some(l) = out.lineage.as_deref_mut() {
                    session_change(l, c);
                }
            }
            continue;
        }
        if *e.session_id != *s.id {
            continue;
        }
        let mi = *index
            .get(&e.message_id)
            .ok_or_else(|| anyhow!("message {} not in session {}", e.message_id, s.id))?;
        match &e.change {
            Change::StripMedia { .. } | Change::Truncate { .. } => {
                let m = &mut out.messages[mi];
                if !facts.contains_key(m.id.as_str()) {
                    bail!("message {} is not a stored row", m.id);
                }
                let base = read_one(ctx.conn, ctx.schema, &s.id, &m.id)?;
                let mut row = match m.raw() {
                    Some(r) => base.with_raw(r),
                    None => base,
                };
                edit_row(&mut row, &e.change)?;
                let (mut nm, _) = parse_row(&row, model.as_ref(), ctx.location);
                nm.rare_mut().raw = Some(row.to_raw());
                *m = nm;
            }
            Change::DropMessage => {
                if let Some(f) = facts.get_mut(e.message_id.as_str()) {
                    if f.active {
                        f.active = false;
                        f.compacted = true;
                    }
                }
            }
            Change::CutBefore { note } => {
                if !facts.get(e.message_id.as_str()).is_some_and(|f| f.active) {
                    bail!("message {}: not an active row to cut before", e.message_id);
                }
                cut = Some((e.message_id.to_string(), note.clone()));
            }
            Change::SetParent { .. }
            | Change::ClearParent { .. }
            | Change::DropCopies
            | Change::DropThrough(_)
            | Change::SetFirstKept { .. }
            | Change::AddNote { .. } => bail!(
                "message {}: {} does not apply to hermes rows",
                e.message_id,
                e.change.name()
            ),
            Change::Session(_) => {}
        }
    }
    if let Some((target, text)) = cut {
        let next = next_row_id(ctx.conn)?;
        let target_id: i64 = target.parse().unwrap_or(i64::MAX);
        // The newest summary before the cut, as edited so far.
        let mut previous = None;
        for m in out.messages.iter().rev() {
            let Ok(id) = m.id.parse::<i64>() else {
                continue;
            };
            if id >= target_id
                || !m.summary()
                || !facts.get(m.id.as_str()).is_some_and(|f| f.active)
            {
                continue;
            }
            let base = read_one(ctx.conn, ctx.schema, &s.id, &m.id)?;
            let row = match m.raw() {
                Some(r) => base.with_raw(r),
                None => base,
            };
            previous = Some(summary_body(&row_text(&row)));
            break;
        }
        let kept: Vec<usize> = (0..out.messages.len())
            .filter(|&i| {
                let m = &out.messages[i];
                facts.get(m.id.as_str()).is_some_and(|f| f.active)
                    && m.id.parse::<i64>().is_ok_and(|id| id >= target_id)
            })
            .collect();
        for m in &out.messages {
            if let Some(f) = facts.get_mut(m.id.as_str()) {
                f.active = false;
                f.compacted = true;
            }
        }
        let first = kept.first().map(|&i| &out.messages[i]);
        let first_role = first.map_or("user", |m| m.role().as_str()).to_string();
        let first_ts = first.map_or(0.0, |m| m.time_created() as f64 / 1000.0);
        let row = RowData {
            id: next,
            role: summary_role(&first_role).to_string(),
            content: Some(summary_content(&text, previous.as_deref())),
            timestamp: first_ts,
            ..Default::default()
        };
        let (summary, _) = parse_row(&row, model.as_ref(), ctx.location);
        let marker = in_place_marker(&s.id, &summary.id, summary.time_created());
        facts.insert(
            summary.id.to_string(),
            RowFacts {
                active: true,
                role: row.role.clone(),
                timestamp: first_ts,
                ..Default::default()
            },
        );
        let mut added = vec![marker, summary];
        for (j, &i) in kept.iter().enumerate() {
            let old = out.messages[i].id.to_string();
            let new_id = (next + 1 + j as i64).to_string();
            let mut m = out.messages[i].clone();
            for p in &mut m.parts {
                if let Some((_, rest)) = p.id.split_once('#') {
                    p.id = ecow::eco_format!("{new_id}#{rest}");
                }
            }
            m.id = new_id.as_str().into();
            let mut f = facts.get(&old).cloned().unwrap_or_default();
            f.active = true;
            f.compacted = false;
            facts.insert(new_id, f);
            if let Some(o) = facts.get_mut(&old) {
                o.active = false;
                o.compacted = true;
            }
            added.push(m);
        }
        out.messages.extend(added);
    }
    let resumed_here = out.lineage.as_deref().is_none_or(|l| l.resumes == s.id);
    out.visible = visible_view(&out.messages, &facts, resumed_here);
    Ok(out)
}

/// How `edit` looks in storage, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
    let s = ix.session();
    let part = edit.change.part_id().and_then(|pid| ix.part(pid));
    let mut fig = ChangeFigures::default();
    let (field, old, new) = match &edit.change {
        Change::StripMedia { part_id, .. } => {
            fig = ChangeFigures::media(part);
            let bytes = fig.media_bytes.unwrap_or(0);
            let kind = part.map_or("image".to_string(), |p| p.kind_name.to_string());
            let k = ids::parse_part(part_id).map_or(0, |(_, r)| match r {
                PartRef::Content(k) => k,
                _ => 0,
            });
            (
                format!("content[{k}]"),
                json!(format!("{kind} part with {bytes} bytes of inline media")),
                json!({"type": "text", "text": IMAGE_PLACEHOLDER}),
            )
        }
        Change::Truncate {
            part_id,
            field,
            max_chars,
        } => {
            let at = ids::parse_part(part_id).map(|(_, r)| r);
            let name = match at {
                Some(PartRef::Api) => "api_content".to_string(),
                Some(PartRef::Call(k)) => format!("tool_calls[{k}].function.arguments"),
                _ => "content".to_string(),
            };
            let chars = part.map_or(0, |p| match field {
                TextField::ToolOutput => p.tool.as_ref().map_or(p.model_chars(), |t| t.output_chars()),
                _ => p.model_chars(),
            });
            fig = ChangeFigures::truncate(chars, *max_chars);
            let cleared = if matches!(at, Some(PartRef::Content(_))) {
                " (api_content cleared)"
            } else {
                ""
            };
            (
                name,
                json!(format!("{chars} characters")),
                json!(format!(
                    "at most {max_chars} characters kept, head and tail{cleared}"
                )),
            )
        }
        Change::DropMessage => {
            let m = ix.message(&edit.message_id);
            let hidden = m.is_some_and(|m| {
                !s.visible
                    .iter()
                    .any(|&i| s.messages.get(i).is_some_and(|x| x.id == m.id))
            });
            match m {
                Some(m) if m.compaction().is_some() => (
                    "compression".to_string(),
                    json!("a compression marker session-doctor derives, not a row"),
                    json!("unchanged"),
                ),
                Some(m) if hidden && edit.message_id.parse::<i64>().is_ok() => (
                    "active, compacted".to_string(),
                    json!(format!(
                        "{} row not sent on resume (archived or dropped by hermes)",
                        m.role().as_str()
                    )),
                    json!("0, 1 (archived)"),
                ),
                _ => (
                    "active, compacted".to_string(),
                    json!("1, 0"),
                    json!("0, 1 (archived, as hermes' in-place compression does)"),
                ),
            }
        }
        Change::CutBefore { note } => (
            "messages".to_string(),
            json!("the active rows"),
            json!(format!(
                "archived; then a summary row with hermes' compaction prefix, \"{note}\" and the summary it replaces, and copies of the rows from {} on, as hermes' in-place compression (archive_and_compact) writes them",
                edit.message_id
            )),
        ),
        Change::Session(SessionChange::Reopen) => (
            "sessions.ended_at, sessions.end_reason".to_string(),
            json!("set, 'compression'"),
            json!("NULL, NULL"),
        ),
        Change::Session(SessionChange::DropEmpty) => (
            "sessions".to_string(),
            json!("an empty continuation session (no message row)"),
            Value::Null,
        ),
        Change::Session(SessionChange::ClearParent { old }) => (
            "sessions.parent_session_id".to_string(),
            json!(old),
            Value::Null,
        ),
        Change::SetParent { .. }
        | Change::ClearParent { .. }
        | Change::DropCopies
        | Change::DropThrough(_)
        | Change::SetFirstKept { .. }
        | Change::AddNote { .. } => (
            "message".to_string(),
            Value::Null,
            json!(format!("refused: {}", edit.change.name())),
        ),
    };
    StoredChange {
        session_id: edit.session_id.clone(),
        message_id: edit.message_id.clone(),
        part_id: edit.change.part_id().map(str::to_string),
        field: field.into(),
        old,
        new,
        run: None,
        figures: fig.boxed(),
    }
}

/// What the cut of one session collects.
#[derive(Default)]
struct Cut {
    archive: Vec<i64>,
    /// The row the new active rows start at, and the note.
    cut_before: Option<(i64, String)>,
}

fn need(schema: &Schema, cols: &[&str], what: &str) -> Result<()> {
    for c in cols {
        if !schema.messages.contains(*c) {
            bail!("the messages table has no `{c}` column, needed to {what}; open the database once with hermes-agent 0.19.0 (it adds its columns), then retry");
        }
    }
    Ok(())
}

/// Applies `edits` to the rows of a copy (inside the copy's transaction),
/// then checks both FTS indexes.
pub fn write(txn: &rusqlite::Transaction<'_>, schema: &Schema, edits: &[Edit]) -> Result<()> {
    let conn: &Connection = txn;
    settle_trigram(conn, schema, true)?;
    let mut cuts: Vec<(String, Cut)> = Vec::new();
    let cut = |cuts: &mut Vec<(String, Cut)>, sid: &str| -> usize {
        match cuts.iter().position(|(s, _)| s == sid) {
            Some(i) => i,
            None => {
                cuts.push((sid.to_string(), Cut::default()));
                cuts.len() - 1
            }
        }
    };
    for e in edits {
        let (sid, mid) = (&*e.session_id, e.message_id.as_str());
        match &e.change {
            Change::StripMedia { .. } | Change::Truncate { .. } => {
                let before = read_one(conn, schema, sid, mid)?;
                let mut row = before.clone();
                edit_row(&mut row, &e.change)?;
                let mut sets: Vec<(&str, Option<String>)> = Vec::new();
                if row.content != before.content {
                    sets.push(("content", row.content.clone()));
                }
                if row.api_content != before.api_content {
                    sets.push(("api_content", row.api_content.clone()));
                }
                if row.tool_calls != before.tool_calls {
                    sets.push(("tool_calls", row.tool_calls.clone()));
                }
                if sets.is_empty() {
                    continue;
                }
                let assign = sets
                    .iter()
                    .enumerate()
                    .map(|(k, (c, _))| format!("\"{c}\" = ?{}", k + 1))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut params: Vec<Box<dyn rusqlite::ToSql>> = sets
                    .into_iter()
                    .map(|(_, v)| Box::new(v) as Box<dyn rusqlite::ToSql>)
                    .collect();
                params.push(Box::new(row.id));
                params.push(Box::new(sid.to_string()));
                let n = params.len();
                conn.execute(
                    &format!(
                        "UPDATE messages SET {assign} WHERE id = ?{} AND session_id = ?{n}",
                        n - 1
                    ),
                    rusqlite::params_from_iter(params.iter().map(|b| b.as_ref())),
                )
                .with_context(|| format!("messages row {mid}: cannot update it in the copy"))?;
            }
            Change::DropMessage => {
                // A compression marker is not a row: nothing to do.
                if let Ok(id) = mid.parse::<i64>() {
                    let i = cut(&mut cuts, sid);
                    cuts[i].1.archive.push(id);
                }
            }
            Change::CutBefore { note } => {
                let id: i64 = mid
                    .parse()
                    .map_err(|_| anyhow!("{mid} is not a messages row id"))?;
                let i = cut(&mut cuts, sid);
                cuts[i].1.cut_before = Some((id, note.clone()));
            }
            Change::Session(c) => session_sql(conn, schema, sid, c)?,
            Change::SetParent { .. }
            | Change::ClearParent { .. }
            | Change::DropCopies
            | Change::DropThrough(_)
            | Change::SetFirstKept { .. }
            | Change::AddNote { .. } => bail!(
                "message {mid}: {} does not apply to hermes rows",
                e.change.name()
            ),
        }
    }
    for (sid, c) in &cuts {
        write_cut(conn, schema, sid, c)?;
    }
    settle_trigram(conn, schema, false)?;
    for t in ["messages_fts", "messages_fts_trigram"] {
        if schema.tables.contains(t) {
            conn.execute(
                &format!("INSERT INTO {t}({t}) VALUES('integrity-check')"),
                [],
            )
            .with_context(|| format!("the copy's {t} index fails its integrity check"))?;
        }
    }
    Ok(())
}

/// The trigram index of rows whose indexed text holds a NUL byte (content
/// JSON-encoded with hermes' `\x00json:` prefix) depends on the SQLite
/// version: hermes' SQLite 3.40 indexes nothing past the NUL, the bundled
/// 3.50 indexes all of it, so each finds the other's index "malformed" and
/// refuses to update or delete those rows. Such rows are re-indexed with
/// the text before the NUL, which every version tokenizes alike (and which
/// is what 3.40 finds in them: nothing, for a prefixed row). `rebuild`:
/// first rebuild the index from its stored text with this SQLite, so the
/// rows can be removed (done once, before any edit).
fn settle_trigram(conn: &Connection, schema: &Schema, rebuild: bool) -> Result<()> {
    const T: &str = "messages_fts_trigram";
    if !schema.tables.contains(T) || !schema.tables.contains("messages_fts_trigram_content") {
        return Ok(());
    }
    let rows: Vec<(i64, Vec<u8>)> = {
        let mut st = conn.prepare(
            "SELECT id, CAST(c0 AS BLOB) FROM messages_fts_trigram_content WHERE instr(CAST(c0 AS BLOB), X'00') > 0",
        )?;
        let v = st
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, Option<Vec<u8>>>(1)?.unwrap_or_default(),
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        v
    };
    if rows.is_empty() {
        return Ok(());
    }
    if rebuild {
        conn.execute(&format!("INSERT INTO {T}({T}) VALUES('rebuild')"), [])
            .context("cannot rebuild the copy's trigram index")?;
    }
    for (id, text) in rows {
        let cut = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let head = String::from_utf8_lossy(&text[..cut]).into_owned();
        conn.execute(&format!("DELETE FROM {T} WHERE rowid = ?1"), [id])?;
        conn.execute(
            &format!("INSERT INTO {T}(rowid, content) VALUES (?1, ?2)"),
            rusqlite::params![id, head],
        )?;
    }
    Ok(())
}

const ACTIVE: &str = "COALESCE(active, 1) = 1";

fn write_cut(conn: &Connection, schema: &Schema, sid: &str, c: &Cut) -> Result<()> {
    need(schema, &["active", "compacted"], "archive rows")?;
    for id in &c.archive {
        conn.execute(
            &format!("UPDATE messages SET active = 0, compacted = 1 WHERE id = ?1 AND session_id = ?2 AND {ACTIVE}"),
            rusqlite::params![id, sid],
        )?;
    }
    let count_calls = |ids: &[i64]| -> Result<u64> {
        let mut n = 0;
        for id in ids {
            let tc: Option<String> = conn
                .query_row(
                    &format!(
                        "SELECT {} FROM messages WHERE id = ?1",
                        schema.m("tool_calls", "NULL")
                    ),
                    [id],
                    |r| r.get(0),
                )
                .unwrap_or(None);
            n += super::parse::call_ids(tc.as_deref()).len() as u64;
        }
        Ok(n)
    };
    let active: Vec<i64> = {
        let mut st = conn.prepare(&format!(
            "SELECT id FROM messages WHERE session_id = ?1 AND {ACTIVE} ORDER BY id"
        ))?;
        let v = st
            .query_map([sid], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        v
    };
    let (count, calls) = match &c.cut_before {
        None => {
            let calls = count_calls(&active)?;
            (active.len() as u64, calls)
        }
        Some((target, note)) => {
            if !active.contains(target) {
                bail!("messages row {target} of session {sid} is not active: cannot cut before it");
            }
            let previous = previous_summary(conn, schema, sid, *target);
            let active: Vec<i64> = active.into_iter().filter(|id| id >= target).collect();
            let first = active.first().copied();
            let (role, ts): (String, f64) = match first {
                Some(id) => conn.query_row(
                    &format!(
                        "SELECT role, {} FROM messages WHERE id = ?1",
                        schema.m("timestamp", "0")
                    ),
                    [id],
                    |r| Ok((r.get(0)?, r.get::<_, Option<f64>>(1)?.unwrap_or(0.0))),
                )?,
                None => ("user".to_string(), 0.0),
            };
            conn.execute(
                &format!(
                    "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ?1 AND {ACTIVE}"
                ),
                [sid],
            )?;
            let mut cols = vec!["session_id", "role", "content", "active", "compacted"];
            let mut vals: Vec<Box<dyn rusqlite::ToSql>> = vec![
                Box::new(sid.to_string()),
                Box::new(summary_role(&role).to_string()),
                Box::new(summary_content(note, previous.as_deref())),
                Box::new(1),
                Box::new(0),
            ];
            if schema.messages.contains("timestamp") {
                cols.push("timestamp");
                vals.push(Box::new(ts));
            }
            let marks = (1..=cols.len())
                .map(|k| format!("?{k}"))
                .collect::<Vec<_>>()
                .join(", ");
            conn.execute(
                &format!(
                    "INSERT INTO messages ({}) VALUES ({marks})",
                    cols.iter()
                        .map(|c| format!("\"{c}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                rusqlite::params_from_iter(vals.iter().map(|b| b.as_ref())),
            )
            .context("cannot insert the summary row in the copy")?;
            let copy: Vec<String> = schema
                .messages
                .iter()
                .filter(|c| !matches!(c.as_str(), "id" | "active" | "compacted"))
                .map(|c| format!("\"{c}\""))
                .collect();
            let list = copy.join(", ");
            for id in &active {
                conn.execute(
                    &format!(
                        "INSERT INTO messages ({list}, active, compacted) SELECT {list}, 1, 0 FROM messages WHERE id = ?1"
                    ),
                    [id],
                )
                .with_context(|| format!("cannot re-insert messages row {id} in the copy"))?;
            }
            let calls = count_calls(&active)?;
            (active.len() as u64 + 1, calls)
        }
    };
    let mut sets = Vec::new();
    if schema.sessions.contains("message_count") {
        sets.push("message_count = ?1");
    }
    if schema.sessions.contains("tool_call_count") {
        sets.push("tool_call_count = ?2");
    }
    if !sets.is_empty() {
        conn.execute(
            &format!("UPDATE sessions SET {} WHERE id = ?3", sets.join(", ")),
            rusqlite::params![count as i64, calls as i64, sid],
        )?;
    }
    Ok(())
}

/// A continuation child of `sid` exists (the filter of `get_compression_tip`).
/// A session that names itself as parent is not its own continuation, as
/// the loader reads it (`parse::Graph` leaves such a link out of the
/// children).
const HAS_CONTINUATION: &str = "EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id AND c.id IS NOT sessions.id AND json_extract(COALESCE(c.model_config, '{}'), '$._branched_from') IS NULL AND json_extract(COALESCE(c.model_config, '{}'), '$._delegate_from') IS NULL AND COALESCE(c.source, '') != 'tool')";

fn session_sql(conn: &Connection, schema: &Schema, sid: &str, c: &SessionChange) -> Result<()> {
    let locks = schema.tables.contains("compression_locks");
    match c {
        SessionChange::Reopen => {
            let cont = if schema.sessions.contains("model_config")
                && schema.sessions.contains("source")
            {
                HAS_CONTINUATION.to_string()
            } else {
                "EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id AND c.id IS NOT sessions.id)".into()
            };
            let n = conn.execute(
                &format!("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?1 AND end_reason = 'compression' AND NOT {cont}"),
                [sid],
            )?;
            if n != 1 {
                bail!("session {sid} was not reopened: it is not ended by compression, or a session continues it");
            }
            if locks {
                conn.execute("DELETE FROM compression_locks WHERE session_id = ?1", [sid])?;
            }
        }
        SessionChange::DropEmpty => {
            if schema.tables.contains("session_model_usage") {
                conn.execute(
                    "DELETE FROM session_model_usage WHERE session_id = ?1",
                    [sid],
                )?;
            }
            if locks {
                conn.execute("DELETE FROM compression_locks WHERE session_id = ?1", [sid])?;
            }
            let n = conn.execute(
                "DELETE FROM sessions WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ?1)",
                [sid],
            )?;
            if n != 1 {
                bail!("session {sid} was not removed: it holds messages or does not exist");
            }
        }
        SessionChange::ClearParent { old } => {
            let n = conn.execute(
                "UPDATE sessions SET parent_session_id = NULL WHERE id = ?1 AND parent_session_id = ?2",
                [sid, old.as_str()],
            )?;
            if n != 1 {
                bail!("session {sid}: its parent is no longer {old}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py_json_writes_like_python() {
        let v: Value =
            serde_json::from_str(r#"[{"type":"text","text":"é\"\n😀"},{"a":1,"b":[true,null]}]"#)
                .unwrap();
        assert_eq!(
            py_json(&v),
            r#"[{"type": "text", "text": "\u00e9\"\n\ud83d\ude00"}, {"a": 1, "b": [true, null]}]"#
        );
    }

    #[test]
    fn summaries_are_recognised_old_and_new_and_merged() {
        use super::super::parse::is_summary_text;
        assert!(is_summary_text(&summary_content("x", None)));
        assert_eq!(
            summary_body(&summary_content("x", Some("body"))),
            "x\n\nbody"
        );
        assert!(is_summary_text("  [CONTEXT SUMMARY]: old"));
        assert!(is_summary_text(
            "[PRIOR CONTEXT — for reference only; not a new message]\nold\n\n[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]\n\n[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. older text"
        ));
        assert!(!is_summary_text("hello [CONTEXT SUMMARY]:"));
    }

    #[test]
    fn truncation_and_stripping_edit_the_stored_row() {
        let items = r#"[{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]"#;
        let mut row = RowData {
            id: 3,
            role: "user".into(),
            content: Some(format!("{JSON_PREFIX}{items}")),
            api_content: Some("sent".into()),
            ..Default::default()
        };
        edit_row(
            &mut row,
            &Change::StripMedia {
                part_id: "3#1".into(),
                placeholder: "x".into(),
            },
        )
        .unwrap();
        assert_eq!(
            row.content.as_deref().unwrap(),
            format!("{JSON_PREFIX}[{{\"type\": \"text\", \"text\": \"look\"}}, {{\"type\": \"text\", \"text\": \"[Attached image \\u2014 stripped after compression]\"}}]")
        );
        assert_eq!(row.api_content, None);
        let mut row = RowData {
            id: 4,
            role: "assistant".into(),
            tool_calls: Some(r#"[{"id": "c1", "function": {"name": "terminal", "arguments": "{\"command\": \"0123456789abcdefghij\"}"}}]"#.into()),
            ..Default::default()
        };
        edit_row(
            &mut row,
            &Change::Truncate {
                part_id: "4#call0".into(),
                field: TextField::ToolInput,
                max_chars: 4,
            },
        )
        .unwrap();
        let v: Value = serde_json::from_str(row.tool_calls.as_deref().unwrap()).unwrap();
        let args: Value =
            serde_json::from_str(v[0]["function"]["arguments"].as_str().unwrap()).unwrap();
        assert!(args["command"]
            .as_str()
            .unwrap()
            .starts_with("01\n[... 16 characters removed"));
    }
}
