//! Applying [`Edit`]s to opencode's stored JSON, for both the SQLite and the
//! legacy JSON store. Unchanged fields (unknown ones included) are kept.

use super::parse::{parse_message, parse_part};
use super::{visible_view, PARENT_FIELD};
use crate::edit::{
    truncate_middle, truncate_strings, Change, ChangeFigures, Edit, StoredChange, TextField,
};
use crate::model::{Part, Session};
use anyhow::{anyhow, Result};
use rayon::prelude::*;
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
    /// Appends the stored JSON text of part `part_id` of `message_id` to
    /// `text`, read but not parsed (parsing and editing it can then run on
    /// any core, and one buffer serves many parts); returns what names the
    /// row or file in errors (for example `opencode.db: part row prt_1`).
    fn part(&self, message_id: &str, part_id: &str, text: &mut Vec<u8>) -> Result<String>;
}

/// Parses stored JSON `bytes` of the row or file `what` names.
fn parse_stored(bytes: &[u8], what: &str) -> Result<Value> {
    serde_json::from_slice(bytes).map_err(|e| anyhow!("{what}: invalid JSON: {e}"))
}

/// Part `id` as `changes` leave its stored JSON `raw`: edited in order,
/// measured as `layout` stores it (bytes), and parsed again.
fn edited_part(id: &str, mut raw: Value, changes: &[&Change], layout: Layout) -> Result<Part> {
    for c in changes {
        edit_part(&mut raw, c).map_err(|err| anyhow!("part {id}: {err}"))?;
    }
    let bytes = layout.serialize(&raw).len() as u64;
    parse_part(id, raw, bytes).map_err(|err| anyhow!(err))
}

/// About this many bytes of stored part JSON are read per chunk of part
/// edits computed ahead on every core (see [`apply_after`]).
const AHEAD_BYTES: usize = 8 << 20;

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
    // A part edited once here, that a row holds, is edited the same way
    // wherever that runs: those edits (by index in `edits`) are computed
    // ahead, a chunk at a time, each part's JSON parsed, edited, measured
    // and parsed again on the pool while the next chunk's rows are read;
    // each result (or error) is taken when the loop reaches its edit. The
    // others run in the loop.
    let mut times: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for e in edits.iter().filter(|e| *e.session_id == *sid) {
        if let Some(pid) = e.change.part_id() {
            *times.entry(pid).or_default() += 1;
        }
    }
    let ahead: Vec<usize> = (0..edits.len())
        .filter(|&k| {
            let e = &edits[k];
            let Some(pid) = e.change.part_id() else {
                return false;
            };
            *e.session_id == *sid
                && times.get(pid) == Some(&1)
                && index.get(&e.message_id).is_some_and(|&mi| {
                    out.messages[mi]
                        .parts
                        .iter()
                        .find(|p| *p.id == *pid)
                        .is_some_and(|p| p.raw().is_none())
                })
        })
        .collect();
    let mut next = 0;
    let mut ready: rustc_hash::FxHashMap<usize, Result<Part>> = rustc_hash::FxHashMap::default();
    // The stored text of the chunk being edited and of the one read
    // meanwhile; two buffers for every chunk: a new one per part cost a
    // page fault per 4 KiB read.
    let (mut text, mut next_text) = (Vec::new(), Vec::new());
    let mut read: Option<Chunk> = None;
    for (k, e) in edits.iter().enumerate() {
        if *e.session_id != *sid {
            continue;
        }
        if ahead.get(next) == Some(&k) {
            if !ready.contains_key(&k) {
                // This chunk's rows (read while the previous chunk was
                // edited, else now) are edited on the pool while this
                // thread reads the next chunk's rows: the connection
                // stays on this thread.
                let jobs = match read.take() {
                    Some(jobs) => {
                        std::mem::swap(&mut text, &mut next_text);
                        jobs
                    }
                    None => read_ahead(&ahead[next..], edits, rows, &mut text),
                };
                let rest = ahead.get(next + jobs.len()..).unwrap_or_default();
                let (chunk, past, done) = (&text, &history, &mut ready);
                rayon::in_place_scope(|scope| {
                    scope.spawn(|_| *done = edit_ahead(jobs, chunk, edits, past, layout));
                    if !rest.is_empty() {
                        read = Some(read_ahead(rest, edits, rows, &mut next_text));
                    }
                });
            }
            next += 1;
        }
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
                *m = parse_message(&m.id, raw.clone(), bytes, Some(m.time_created()))
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
                if let Some(new) = ready.remove(&k) {
                    *p = new?;
                    history.entry(&**part_id).or_default().push(&e.change);
                    continue;
                }
                let raw = match p.raw() {
                    Some(r) => serde_json::from_str(r)
                        .map_err(|err| anyhow!("part {part_id}: added JSON: {err}"))?,
                    None => {
                        let mut text = Vec::new();
                        let what = rows.part(&e.message_id, &p.id, &mut text)?;
                        parse_stored(&text, &what)?
                    }
                };
                let past = history.entry(&**part_id).or_default();
                past.push(&e.change);
                let added = p.raw().cloned();
                *p = edited_part(&p.id, raw, past, layout)?;
                p.set_raw(added);
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
                p.set_raw(Some(text));
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
            Change::DropThrough(_) => anyhow::bail!(
                "message {}: opencode copies drop messages one by one ({} is for formats that drop runs)",
                m.id,
                e.change.name()
            ),
        }
    }
    out.messages.retain(|m| !dropped.contains(&m.id));
    out.visible = visible_view(&out.messages);
    Ok(out)
}

/// The rows of a chunk of part edits computed ahead: each edit's index
/// with where its row's JSON is in the chunk's text and the row's name for
/// errors (or why the row could not be read).
type Chunk = Vec<(usize, Result<(std::ops::Range<usize>, String)>)>;

/// The rows of the first edits of `ahead` (indices into `edits`, each a part
/// edited once), read in order into `text` (cleared first) up to about
/// [`AHEAD_BYTES`].
fn read_ahead(ahead: &[usize], edits: &[Edit], rows: &dyn RawRows, text: &mut Vec<u8>) -> Chunk {
    text.clear();
    let mut jobs = Vec::new();
    for &k in ahead {
        let e = &edits[k];
        let pid = e.change.part_id().unwrap_or_default();
        let at = text.len();
        let raw = rows
            .part(&e.message_id, pid, text)
            .map(|what| (at..text.len(), what));
        jobs.push((k, raw));
        if text.len() >= AHEAD_BYTES {
            break;
        }
    }
    jobs
}

/// The parts a [`Chunk`] (its rows in `text`) gives, by edit index: each
/// row parsed, given its `history` (earlier edits) and its edit, measured
/// and parsed again, on every core.
fn edit_ahead(
    jobs: Chunk,
    text: &[u8],
    edits: &[Edit],
    history: &rustc_hash::FxHashMap<&str, Vec<&Change>>,
    layout: Layout,
) -> rustc_hash::FxHashMap<usize, Result<Part>> {
    jobs.into_par_iter()
        .map(|(k, raw)| {
            let e = &edits[k];
            let pid = e.change.part_id().unwrap_or_default();
            let changes: Vec<&Change> = history
                .get(pid)
                .into_iter()
                .flatten()
                .copied()
                .chain([&e.change])
                .collect();
            let part = raw.and_then(|(at, what)| {
                let v = parse_stored(text.get(at).unwrap_or_default(), &what)?;
                edited_part(pid, v, &changes, layout)
            });
            (k, part)
        })
        .collect()
}

/// How `edit` looks in storage, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
    let part = edit.change.part_id().and_then(|pid| ix.part(pid));
    let mut fig = ChangeFigures::default();
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
            fig = ChangeFigures::media(part);
            let bytes = fig.media_bytes.unwrap_or(0);
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
                .map_or(0, |t| t.output_chars());
            let total = part.map_or(0, |p| p.model_chars());
            let (name, chars) = match field {
                TextField::Text => ("text", total),
                TextField::ToolOutput => ("state.output", output),
                TextField::ToolInput => ("state.input", total.saturating_sub(output)),
            };
            fig = ChangeFigures::truncate(chars, *max_chars);
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
            fig.parts = m.map(|m| m.parts.len() as u64);
            (
                "message".to_string(),
                json!(m
                    .map(|m| format!("{} message with {} parts", m.role().as_str(), m.parts.len()))
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
        Change::SetFirstKept { .. } | Change::CutBefore { .. } | Change::DropThrough(_) => {
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
        figures: fig.boxed(),
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
        fn part(&self, _: &str, part_id: &str, text: &mut Vec<u8>) -> Result<String> {
            text.extend_from_slice(self.part.to_string().as_bytes());
            Ok(format!("part row {part_id}"))
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
        assert!(stripped.messages[0].parts[0].media().is_empty());
        assert!(
            stripped.messages[0].parts[0].raw().is_none(),
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
        assert_eq!(a.payload_bytes(), b.payload_bytes());
        assert_eq!(a.model_chars(), b.model_chars());
        assert!(a.media().is_empty());
        assert!(a.payload_bytes() < 5_000, "{} bytes", a.payload_bytes());
        // Without the earlier edit, the image would still be there.
        assert_eq!(c.media().len(), 1);
        assert!(c.payload_bytes() > 40_000);
    }
}
