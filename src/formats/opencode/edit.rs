//! Applying [`Edit`]s to opencode's stored JSON, for both the SQLite and the
//! legacy JSON store. Unchanged fields (unknown ones included) are kept.

use super::parse::{parse_message, parse_part};
use super::{visible_view, PARENT_FIELD};
use crate::edit::{truncate_middle, truncate_strings, Change, Edit, StoredChange, TextField};
use crate::model::Session;
use anyhow::{anyhow, Result};
use serde_json::{json, Map, Value};

/// How a store serializes JSON (for exact byte counts of edited rows/files).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `message.data` / `part.data` columns: compact JSON without the id fields.
    Sqlite,
    /// Legacy files: 2-space pretty JSON with `id`, `sessionID`, `messageID`.
    Legacy,
}

impl Layout {
    pub fn serialize(self, v: &Value) -> String {
        match self {
            Layout::Sqlite => serde_json::to_string(v).expect("JSON values serialize"),
            Layout::Legacy => serde_json::to_string_pretty(v).expect("JSON values serialize"),
        }
    }
}

/// Id of the note part [`Change::AddNote`] adds to `message_id`: the
/// message's own 12 time digits, so it sorts before the message's other parts.
pub fn note_part_id(message_id: &str) -> String {
    let hex: String = message_id
        .trim_start_matches("msg_")
        .chars()
        .take(12)
        .collect();
    format!("prt_{hex}00000000000000")
}

/// The `k`-th candidate id of the note part of `message_id`: candidate 0 is
/// [`note_part_id`]; later ones (used only when an earlier one is already
/// a part id: fuzz input whole_opencode_db-2) count up in the last digits,
/// so they still sort before the message's other parts.
pub fn note_part_id_candidate(message_id: &str, k: u32) -> String {
    let id = note_part_id(message_id);
    if k == 0 {
        return id;
    }
    let digits = k.to_string();
    let keep = id.len().saturating_sub(digits.len());
    format!("{}{digits}", id.get(..keep).unwrap_or(&id))
}

/// The stored JSON of a note part.
pub fn note_part(
    layout: Layout,
    session_id: &str,
    message_id: &str,
    part_id: &str,
    text: &str,
) -> Value {
    let mut v = Map::new();
    if layout == Layout::Legacy {
        v.insert("id".into(), json!(part_id));
        v.insert("sessionID".into(), json!(session_id));
        v.insert("messageID".into(), json!(message_id));
    }
    v.insert("type".into(), json!("text"));
    v.insert("text".into(), json!(text));
    v.insert("synthetic".into(), json!(true));
    Value::Object(v)
}

/// Applies a message-level change to a stored message info.
pub fn edit_message(info: &mut Value, change: &Change) {
    match (change, info.as_object_mut()) {
        (Change::SetParent { new, .. }, Some(o)) => {
            o.insert(PARENT_FIELD.to_string(), Value::from(&**new));
        }
        (Change::ClearParent { .. }, Some(o)) => {
            o.remove(PARENT_FIELD);
        }
        _ => {}
    }
}

fn is_data_url(v: &Value) -> bool {
    v.get("url")
        .and_then(Value::as_str)
        .is_some_and(|u| u.starts_with("data:"))
}

/// Applies a part-level change to a stored part. Errors name what the part lacks.
pub fn edit_part(part: &mut Value, change: &Change) -> std::result::Result<(), String> {
    let kind = part
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match change {
        Change::StripMedia { placeholder, .. } => match kind.as_str() {
            "file" => {
                let mut v = Map::new();
                for k in ["id", "sessionID", "messageID"] {
                    if let Some(x) = part.get(k) {
                        v.insert(k.into(), x.clone());
                    }
                }
                v.insert("type".into(), json!("text"));
                v.insert("text".into(), json!(placeholder));
                v.insert("synthetic".into(), json!(true));
                *part = Value::Object(v);
                Ok(())
            }
            "tool" => {
                let state = part
                    .get_mut("state")
                    .and_then(Value::as_object_mut)
                    .ok_or("tool part has no state")?;
                if let Some(Value::Array(atts)) = state.get_mut("attachments") {
                    atts.retain(|a| !is_data_url(a));
                }
                let out = state
                    .get("output")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                state.insert("output".into(), json!(format!("{out}\n{placeholder}")));
                Ok(())
            }
            other => Err(format!("a {other} part carries no media")),
        },
        Change::Truncate {
            field, max_chars, ..
        } => {
            match field {
                TextField::Text => {
                    let t = part
                        .get("text")
                        .and_then(Value::as_str)
                        .ok_or("part has no text")?;
                    if let Some(new) = truncate_middle(t, *max_chars) {
                        part["text"] = json!(new);
                    }
                }
                TextField::ToolOutput => {
                    let state = part.get_mut("state").ok_or("tool part has no state")?;
                    for ptr in ["/output", "/metadata/output"] {
                        if let Some(Value::String(s)) = state.pointer_mut(ptr) {
                            if let Some(new) = truncate_middle(s, *max_chars) {
                                *s = new;
                            }
                        }
                    }
                }
                TextField::ToolInput => {
                    let state = part.get_mut("state").ok_or("tool part has no state")?;
                    if let Some(input) = state.get_mut("input") {
                        truncate_strings(input, *max_chars);
                    }
                }
            }
            Ok(())
        }
        _ => Err("not a part-level change".into()),
    }
}

/// Where [`apply`] re-reads the stored JSON of a message or part it must
/// change (a session keeps figures, not the stored text).
pub trait RawRows {
    /// The stored info of message `message_id` of `session_id`.
    fn message(&self, session_id: &str, message_id: &str) -> Result<Value>;
    /// The stored JSON of part `part_id` of `message_id`.
    fn part(&self, message_id: &str, part_id: &str) -> Result<Value>;
}

/// `s` with `edits` applied, every changed message and part re-parsed.
pub fn apply(s: &Session, edits: &[Edit], layout: Layout, rows: &dyn RawRows) -> Result<Session> {
    apply_after(s.clone(), &[], edits, layout, rows)
}

/// [`apply`] in place, on a session the caller gives up (no copy of a huge
/// session is made), after the `earlier` edits that session already has.
/// An edited part keeps figures, not its edited JSON: a part edited again
/// is re-read (or rebuilt from [`Part::raw`], for a part no row holds) and
/// gets its earlier edits first, then the new one. A compact of a huge
/// session truncates hundreds of thousands of tool outputs; their edited
/// text would be held until the plan ends.
pub fn apply_after(
    mut out: Session,
    earlier: &[Edit],
    edits: &[Edit],
    layout: Layout,
    rows: &dyn RawRows,
) -> Result<Session> {
    let sid = out.id.clone();
    // The part-level changes each part already has, in order.
    let mut history: rustc_hash::FxHashMap<&str, Vec<&Change>> = rustc_hash::FxHashMap::default();
    for e in earlier.iter().filter(|e| *e.session_id == *sid) {
        if let Some(pid) = e.change.part_id() {
            history.entry(pid).or_default().push(&e.change);
        }
    }
    let mut dropped = rustc_hash::FxHashSet::default();
    let index: rustc_hash::FxHashMap<crate::model::Id, usize> = out
        .messages
        .iter()
        .enumerate()
        .rev()
        .map(|(i, m)| (m.id.clone(), i))
        .collect();
    for e in edits.iter().filter(|e| *e.session_id == *sid) {
        let mi = *index
            .get(&e.message_id)
            .ok_or_else(|| anyhow!("message {} not in session {}", e.message_id, sid))?;
        let m = &mut out.messages[mi];
        match &e.change {
            Change::SetParent { .. } | Change::ClearParent { .. } => {
                let mut raw = match m.raw() {
                    Some(r) => r.clone(),
                    None => rows.message(&sid, &m.id)?,
                };
                edit_message(&mut raw, &e.change);
                let bytes = layout.serialize(&raw).len() as u64;
                let parts = std::mem::take(&mut m.parts);
                *m = parse_message(&m.id, raw.clone(), bytes, Some(m.time_created))
                    .map_err(|err| anyhow!(err))?;
                m.parts = parts;
                m.rare_mut().raw = Some(raw);
            }
            Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } => {
                let p = m
                    .parts
                    .iter_mut()
                    .find(|p| *p.id == **part_id)
                    .ok_or_else(|| anyhow!("part {part_id} not in message {}", e.message_id))?;
                let mut raw = match &p.raw {
                    Some(r) => serde_json::from_str(r)
                        .map_err(|err| anyhow!("part {part_id}: added JSON: {err}"))?,
                    None => rows.part(&e.message_id, &p.id)?,
                };
                let past = history.entry(&**part_id).or_default();
                for c in past.iter().copied().chain([&e.change]) {
                    edit_part(&mut raw, c).map_err(|err| anyhow!("part {part_id}: {err}"))?;
                }
                past.push(&e.change);
                let bytes = layout.serialize(&raw).len() as u64;
                let added = p.raw.take();
                *p = parse_part(&p.id, raw, bytes).map_err(|err| anyhow!(err))?;
                p.raw = added;
            }
            Change::DropMessage => {
                dropped.insert(m.id.clone());
            }
            // A message id is a primary key (SQLite) or a file name (legacy tree):
            // the store cannot hold two copies to choose from.
            Change::DropCopies => {
                anyhow::bail!("message {}: opencode stores hold one copy per id", m.id)
            }
            Change::AddNote { text } => {
                let pid = note_part_id(&m.id);
                let raw = note_part(layout, &sid, &m.id, &pid, text);
                let text = layout.serialize(&raw);
                let mut p = parse_part(&pid, raw, text.len() as u64).map_err(|err| anyhow!(err))?;
                p.raw = Some(Box::new(text));
                m.parts.insert(0, p);
            }
            Change::Session(_) => {
                anyhow::bail!("session {}: opencode stores no session-level changes", sid)
            }
            Change::SetFirstKept { .. } | Change::CutBefore { .. } => anyhow::bail!(
                "message {}: opencode stores no first kept entry ({} is a docker-agent change)",
                m.id,
                e.change.name()
            ),
        }
    }
    out.messages.retain(|m| !dropped.contains(&m.id));
    out.visible = visible_view(&out.messages);
    Ok(out)
}

/// How `edit` looks in storage, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
    let part = edit.change.part_id().and_then(|pid| ix.part(pid));
    let (field, old, new) = match &edit.change {
        Change::SetParent { old, new } => (
            PARENT_FIELD.to_string(),
            old.as_deref().map(Value::from).unwrap_or(Value::Null),
            json!(new),
        ),
        Change::ClearParent { old } => (PARENT_FIELD.to_string(), json!(old), Value::Null),
        Change::StripMedia { placeholder, .. } => {
            let (field, what) = match part.map(|p| &*p.kind_name) {
                Some("file") => ("url", "file part"),
                _ => ("state.attachments", "tool attachments"),
            };
            let bytes: u64 = part
                .map(|p| p.media.iter().map(|m| m.encoded_bytes).sum())
                .unwrap_or(0);
            (
                field.to_string(),
                json!(format!("{what} with {bytes} bytes of inline media")),
                json!(placeholder),
            )
        }
        Change::Truncate {
            field, max_chars, ..
        } => {
            let output = part
                .and_then(|p| p.tool.as_ref())
                .map_or(0, |t| t.output_chars);
            let total = part.map_or(0, |p| p.model_chars);
            let (name, chars) = match field {
                TextField::Text => ("text", total),
                TextField::ToolOutput => ("state.output", output),
                TextField::ToolInput => ("state.input", total.saturating_sub(output)),
            };
            (
                name.to_string(),
                json!(format!("{chars} characters")),
                json!(format!(
                    "at most {max_chars} characters kept, head and tail"
                )),
            )
        }
        Change::DropMessage => {
            let m = ix.message(&edit.message_id);
            (
                "message".to_string(),
                json!(m
                    .map(|m| format!("{} message with {} parts", m.role.as_str(), m.parts.len()))
                    .unwrap_or_default()),
                Value::Null,
            )
        }
        Change::AddNote { text } => ("part".to_string(), Value::Null, json!(text)),
        Change::DropCopies => ("message".to_string(), json!("later copies"), Value::Null),
        Change::Session(_) => (
            "session".to_string(),
            Value::Null,
            json!(edit.change.name()),
        ),
        Change::SetFirstKept { .. } | Change::CutBefore { .. } => {
            (edit.change.name().to_string(), Value::Null, Value::Null)
        }
    };
    StoredChange {
        session_id: edit.session_id.clone(),
        message_id: edit.message_id.clone(),
        part_id: match &edit.change {
            Change::AddNote { .. } => Some(note_part_id(&edit.message_id)),
            c => c.part_id().map(str::to_string),
        },
        field: field.into(),
        old,
        new,
        run: None,
    }
}

#[cfg(test)]
mod note_id_tests {
    use super::{note_part_id, note_part_id_candidate};

    /// Later candidates keep the message's time digits and the length, so
    /// they still sort before the message's own parts (whole_opencode_db-2).
    #[test]
    fn note_part_id_candidates_are_distinct_and_sort_first() {
        let m = "msg_202f77907001ttE8o0E04KSE6W";
        let first = note_part_id(m);
        assert_eq!(note_part_id_candidate(m, 0), first);
        let later: Vec<String> = (1..=12).map(|k| note_part_id_candidate(m, k)).collect();
        for c in &later {
            assert_eq!(c.len(), first.len());
            assert_ne!(c, &first);
            assert!(c.as_str() < "prt_202f77907001A");
        }
        let mut uniq = later.clone();
        uniq.dedup();
        assert_eq!(uniq.len(), later.len());
    }
}

#[cfg(test)]
mod apply_tests {
    use super::*;
    use crate::formats::opencode::parse::{parse_message, parse_part};
    use crate::model::{Agent, Session};

    /// Rows that answer with one stored part and one stored message.
    struct OneRow {
        message: Value,
        part: Value,
    }
    impl RawRows for OneRow {
        fn message(&self, _: &str, _: &str) -> Result<Value> {
            Ok(self.message.clone())
        }
        fn part(&self, _: &str, _: &str) -> Result<Value> {
            Ok(self.part.clone())
        }
    }

    fn edit(change: Change) -> Edit {
        Edit {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            change,
        }
    }

    /// A tool part with an inline image and a long output, edited by two
    /// steps (strip-media, then truncate-tool-output): the second step
    /// re-reads the row and re-applies the first step's edit, so its figures
    /// are those of both edits, as when one call applies both.
    #[test]
    fn a_part_edited_again_gets_its_earlier_edits_first() {
        let image = format!("data:image/png;base64,{}", "A".repeat(40_000));
        let output = "x".repeat(20_000);
        let part = json!({
            "id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
            "callID": "call_1", "tool": "read",
            "state": {"status": "completed", "input": {}, "output": output,
                      "attachments": [{"type": "file", "mime": "image/png", "url": image}]}
        });
        let message = json!({"id": "msg_1", "sessionID": "ses_1", "role": "assistant",
                             "time": {"created": 1}});
        let rows = OneRow {
            message: message.clone(),
            part: part.clone(),
        };
        let layout = Layout::Sqlite;
        let mut s = Session::new(Agent::Opencode, "ses_1", None, "opencode.db".into());
        let mut m = parse_message("msg_1", message.clone(), 100, Some(1)).unwrap();
        let bytes = layout.serialize(&part).len() as u64;
        m.parts.push(parse_part("prt_1", part, bytes).unwrap());
        s.messages.push(m);
        let strip = edit(Change::StripMedia {
            part_id: "prt_1".into(),
            placeholder: "[image removed]".into(),
        });
        let cut = edit(Change::Truncate {
            part_id: "prt_1".into(),
            field: TextField::ToolOutput,
            max_chars: 1_000,
        });
        let stripped =
            apply_after(s.clone(), &[], std::slice::from_ref(&strip), layout, &rows).unwrap();
        assert!(stripped.messages[0].parts[0].media.is_empty());
        assert!(
            stripped.messages[0].parts[0].raw.is_none(),
            "no edited JSON kept"
        );
        let both_steps = apply_after(
            stripped,
            std::slice::from_ref(&strip),
            std::slice::from_ref(&cut),
            layout,
            &rows,
        )
        .unwrap();
        let one_call = apply(&s, &[strip, cut.clone()], layout, &rows).unwrap();
        let only_cut = apply(&s, &[cut], layout, &rows).unwrap();
        let (a, b, c) = (
            &both_steps.messages[0].parts[0],
            &one_call.messages[0].parts[0],
            &only_cut.messages[0].parts[0],
        );
        assert_eq!(a.payload_bytes, b.payload_bytes);
        assert_eq!(a.model_chars, b.model_chars);
        assert!(a.media.is_empty());
        assert!(a.payload_bytes < 5_000, "{} bytes", a.payload_bytes);
        // Without the earlier edit, the image would still be there.
        assert_eq!(c.media.len(), 1);
        assert!(c.payload_bytes > 40_000);
    }
}
