//! Applying [`Edit`]s to Claude Code transcript lines. An edit names a uuid;
//! it applies to every line carrying that uuid (Claude Code keeps the last
//! copy's content), except [`Change::DropCopies`], which keeps the first line
//! of the uuid in each file and drops the later lines that repeat its content
//! ([`super::parse::content_key`]); a later line that differs stays. A line
//! no edit touches is written back byte for byte; an edited line keeps every
//! field it had, unknown ones included.

use super::field;
use super::parse::{content_key, fingerprint, finish, parse_line, problem_id};
use crate::edit::{truncate_strings, Change, ChangeFigures, Edit, StoredChange, TextField};
use crate::formats::LineFiles;
use crate::model::{Id, Message, ProblemKind, Session};
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// Block index of a part id `<uuid>#<k>`.
fn block_index(part_id: &str) -> Option<usize> {
    part_id.rsplit_once('#')?.1.parse().ok()
}

/// Replaces every `base64` string field under `v` (Claude Code's
/// `toolUseResult.file.base64` for images read from disk) by `placeholder`.
fn strip_base64_fields(v: &mut Value, placeholder: &str) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "base64" && x.is_string() {
                    *x = json!(placeholder);
                } else {
                    strip_base64_fields(x, placeholder);
                }
            }
        }
        Value::Array(a) => a
            .iter_mut()
            .for_each(|x| strip_base64_fields(x, placeholder)),
        _ => {}
    }
}

fn is_media_block(b: &Value) -> bool {
    matches!(
        b.get("type").and_then(Value::as_str),
        Some("image" | "document")
    ) && b.pointer("/source/type").and_then(Value::as_str) == Some("base64")
}

/// Replaces the media blocks of `blocks` by text blocks, one placeholder line each.
fn strip_blocks(blocks: &mut [Value], placeholder: &str) {
    let lines: Vec<&str> = placeholder.lines().collect();
    for (k, b) in blocks.iter_mut().filter(|b| is_media_block(b)).enumerate() {
        let text = lines.get(k).copied().unwrap_or(placeholder);
        *b = json!({"type": "text", "text": text});
    }
}

/// What [`edit_line`] answers when a change names a content block this
/// line does not hold (no `message.content`, or no block at that index, or
/// a strip-media on a block that holds no media here):
/// another stored copy of the same uuid may hold it (the change was planned
/// on that copy), so the line is left as it is. [`apply_owned`] checks that
/// some copy held it.
const NOT_IN_THIS_COPY: &str = "this copy holds no such content block";

/// Whether line `v` holds content block `k` (a string content is block 0).
fn holds_block(v: &Value, k: usize) -> bool {
    match v.pointer("/message/content") {
        Some(Value::String(_)) => k == 0,
        Some(Value::Array(a)) => k < a.len(),
        _ => false,
    }
}

/// Applies a content change to one line. Errors name what the line lacks
/// ([`NOT_IN_THIS_COPY`] for a block it does not hold).
fn edit_line(v: &mut Value, change: &Change) -> std::result::Result<(), String> {
    if let Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } = change {
        if block_index(part_id).is_some_and(|k| !holds_block(v, k)) {
            return Err(NOT_IN_THIS_COPY.into());
        }
    }
    match change {
        Change::Session(_) => {
            Err("Claude Code stores no session rows: session-level changes do not apply".into())
        }
        Change::SetFirstKept { .. } | Change::CutBefore { .. } => Err(format!(
            "Claude Code stores no first kept entry ({} is a docker-agent change)",
            change.name()
        )),
        Change::DropThrough(_) => Err(format!(
            "Claude Code copies drop messages one by one ({} is for formats that drop runs)",
            change.name()
        )),
        Change::SetParent { new, .. } => {
            let o = v.as_object_mut().ok_or("line is not an object")?;
            o.insert(field::PARENT.to_string(), json!(new));
            Ok(())
        }
        Change::ClearParent { .. } => {
            let o = v.as_object_mut().ok_or("line is not an object")?;
            o.insert(field::PARENT.to_string(), Value::Null);
            Ok(())
        }
        Change::StripMedia {
            part_id,
            placeholder,
        } => {
            let k = block_index(part_id).ok_or("part id has no block index")?;
            let block = v
                .pointer_mut(&format!("/message/content/{k}"))
                .ok_or("no such content block")?;
            if is_media_block(block) {
                *block = json!({"type": "text", "text": placeholder});
            } else if let Some(Value::Array(inner)) = block.get_mut("content") {
                strip_blocks(inner, placeholder);
                if let Some(r) = v.get_mut("toolUseResult") {
                    strip_base64_fields(r, placeholder);
                }
            } else {
                // Planned on another copy of the uuid, whose block k holds
                // media; `apply_owned` checks that some copy held it.
                return Err(NOT_IN_THIS_COPY.into());
            }
            Ok(())
        }
        Change::Truncate {
            part_id,
            field: which,
            max_chars,
        } => {
            let max = *max_chars;
            let k = block_index(part_id).ok_or("part id has no block index")?;
            let content = v
                .pointer_mut("/message/content")
                .ok_or("line has no message.content")?;
            if content.is_string() {
                truncate_strings(content, max);
                return Ok(());
            }
            let block = content.get_mut(k).ok_or("no such content block")?;
            // Only the named string fields: base64 `data` next to them stays whole.
            let cut = |v: Option<&mut Value>| {
                if let Some(x) = v.filter(|x| x.is_string()) {
                    truncate_strings(x, max);
                }
            };
            match which {
                TextField::Text => {
                    cut(block.get_mut("text"));
                    cut(block.get_mut("thinking"));
                }
                TextField::ToolInput => {
                    if let Some(input) = block.get_mut("input") {
                        truncate_strings(input, max);
                    }
                }
                TextField::ToolOutput => {
                    match block.get_mut("content") {
                        Some(Value::Array(inner)) => {
                            inner.iter_mut().for_each(|b| cut(b.get_mut("text")))
                        }
                        other => cut(other),
                    }
                    if let Some(r) = v.get_mut("toolUseResult") {
                        truncate_strings(r, max);
                    }
                }
            }
            Ok(())
        }
        Change::AddNote { text } => {
            // A note is for the model; a line with no message (Claude Code
            // sends none from it) carries none, and one with no content
            // gets the note as its content.
            let Some(msg) = v.get_mut("message").and_then(Value::as_object_mut) else {
                return Ok(());
            };
            let content = msg.entry("content").or_insert(Value::Null);
            if content.is_null() {
                *content = json!(text);
                return Ok(());
            }
            match content {
                Value::String(s) => *s = format!("{text}\n\n{s}"),
                Value::Array(a) => {
                    let note = json!({"type": "text", "text": text});
                    // tool_result blocks come first in a user message.
                    if a.iter()
                        .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    {
                        a.push(note);
                    } else {
                        a.insert(0, note);
                    }
                }
                // Content Claude Code cannot send carries no note.
                _ => {}
            }
            Ok(())
        }
        Change::DropMessage | Change::DropCopies => Err("not a content change".into()),
    }
}

/// Serializes an edited line like Claude Code does (compact JSON), ended
/// as the original was (`ending`: [`crate::formats::line_ending`]).
fn serialize(v: &Value, ending: &str) -> String {
    let mut s = serde_json::to_string(v).expect("JSON values serialize");
    s.push_str(ending);
    s
}

/// A line to edit as a JSON value. Bytes that are not UTF-8 are read as
/// U+FFFD, as Claude Code's own (Node.js) UTF-8 decoding reads them, so a
/// line the loader accepted can be edited.
///
/// A `\u` escape of a lone UTF-16 surrogate, which Claude Code's
/// `JSON.parse` accepts and serde_json does not, is read as U+FFFD too.
fn line_value(body: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice(body).or_else(|e| {
        let text = String::from_utf8_lossy(body);
        let fixed = without_lone_surrogates(&text);
        match (&text, &fixed) {
            (std::borrow::Cow::Borrowed(_), None) => Err(e),
            _ => serde_json::from_str(fixed.as_deref().unwrap_or(&text)),
        }
    })
}

/// `text` with each `\u` escape of a lone UTF-16 surrogate replaced by
/// `\ufffd`; `None` when it has none.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let h = b.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    let unit_at = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut lone: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit_at(i) {
            Some(u @ 0xD800..=0xDBFF) => {
                if matches!(unit_at(i + 6), Some(0xDC00..=0xDFFF)) {
                    let _ = u;
                    i += 12;
                } else {
                    lone.push(i);
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                lone.push(i);
                i += 6;
            }
            Some(_) => i += 6,
            // Any other escape is two bytes (`\\` included).
            None => i += 2,
        }
    }
    if lone.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for at in lone {
        out.push_str(text.get(last..at)?);
        out.push_str("\\ufffd");
        last = at + 6;
    }
    out.push_str(text.get(last..)?);
    Some(out)
}

/// The uuid of a line, read without building the whole value. A key given
/// twice counts once, the last one winning, as in Claude Code's
/// `JSON.parse` (and in the loader).
fn uuid_of(body: &[u8]) -> Option<String> {
    super::parse::line_uuid(body)
}

/// What the edits do, by uuid.
#[derive(Default)]
struct Plan<'a> {
    content: HashMap<&'a str, Vec<&'a Change>>,
    drop: HashSet<&'a str>,
    drop_copies: HashSet<&'a str>,
}

impl<'a> Plan<'a> {
    /// No line is dropped or changed: the copy is the source's bytes.
    fn changes_nothing(&self) -> bool {
        self.content.is_empty() && self.drop.is_empty() && self.drop_copies.is_empty()
    }

    fn new(edits: &[&'a Edit]) -> Plan<'a> {
        let mut p = Plan::default();
        for e in edits {
            let id = e.message_id.as_str();
            match &e.change {
                Change::DropMessage => {
                    p.drop.insert(id);
                }
                Change::DropCopies => {
                    p.drop_copies.insert(id);
                }
                // Copies of a re-used uuid are separate messages of the
                // model, so one change may arrive once per copy; it applies
                // to each line once.
                c => {
                    let v = p.content.entry(id).or_default();
                    if !v.contains(&c) {
                        v.push(c);
                    }
                }
            }
        }
        p
    }
}

/// Writes the first `len` bytes of `src` (the snapshot the session was read
/// from) with `edits` applied to a staged file for `target`; the caller
/// commits it.
pub fn write_file(
    src: &Path,
    len: u64,
    target: &Path,
    edits: &[&Edit],
) -> Result<crate::fsx::Staged> {
    use std::io::Read;
    let dir = target
        .parent()
        .ok_or_else(|| anyhow!("{}: no parent folder", target.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let (staged, mut file) = crate::fsx::Staged::file(target)?;
    let plan = Plan::new(edits);
    if plan.changes_nothing() {
        crate::formats::copy_unchanged(src, len, &mut file, staged.path())?;
        return Ok(staged);
    }
    let f =
        crate::fsx::open_regular(src).with_context(|| format!("{}: cannot open", src.display()))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f.take(len));
    let mut w = std::io::BufWriter::new(&mut file);
    let mut buf = Vec::new();
    let mut n = 0u64;
    // The first line of each uuid whose repeating copies go.
    let mut firsts = FirstCopies::default();
    let cannot_read = |n: u64| format!("{}: cannot read after line {n}", src.display());
    while let Some(whole) =
        crate::formats::read_line_bounded(&mut r, &mut buf).with_context(|| cannot_read(n))?
    {
        n += 1;
        if !whole {
            // A line longer than the loader holds (read as unreadable, so
            // it has no uuid): dropped or copied as it streams by.
            let keep = !plan.drop.contains(problem_id(src, n).as_str());
            if keep {
                w.write_all(&buf)?;
            }
            let out: Option<&mut dyn std::io::Write> = if keep { Some(&mut w) } else { None };
            crate::formats::copy_rest_of_line(&mut r, out).with_context(|| cannot_read(n))?;
            continue;
        }
        if plan.drop.contains(problem_id(src, n).as_str()) {
            continue;
        }
        let body = buf.trim_ascii_end();
        let Some(uuid) = uuid_of(body) else {
            w.write_all(&buf)?;
            continue;
        };
        if plan.drop.contains(uuid.as_str()) {
            continue;
        }
        // The line as written: edited (its JSON) or as stored.
        let edited = match plan.content.get(uuid.as_str()) {
            Some(changes) => {
                let mut v: Value =
                    line_value(body).with_context(|| format!("{}: line {n}", src.display()))?;
                for c in changes {
                    match edit_line(&mut v, c) {
                        Err(e) if e != NOT_IN_THIS_COPY => {
                            bail!("{}: line {n} ({uuid}): {e}", src.display())
                        }
                        _ => {}
                    }
                }
                Some(v)
            }
            None => None,
        };
        // Copies are compared as written: an edit can make a copy repeat
        // the first line (fuzz input whole_claude-21: a parent set on every
        // copy was all that differed).
        if plan.drop_copies.contains(uuid.as_str()) {
            let key = match &edited {
                Some(v) => Some(fingerprint(v)),
                None => content_key(body),
            };
            if firsts.repeats(uuid.clone(), key) {
                continue;
            }
        }
        match edited {
            Some(v) => w.write_all(serialize(&v, crate::formats::line_ending(&buf)).as_bytes())?,
            None => w.write_all(&buf)?,
        }
    }
    w.flush()
        .with_context(|| format!("{}: cannot write", staged.path().display()))?;
    drop(w);
    Ok(staged)
}

/// `s` with `edits` applied and every figure recomputed from the edited lines.
pub fn apply(s: &Session, edits: &[Edit]) -> Result<Session> {
    apply_owned(s.clone(), edits)
}

/// One copy of an edited message: its index, id and the changes of its id.
type EditJob<'a> = (usize, &'a str, &'a [&'a Change]);

/// Message `i` of `out` (a copy of `id`) as `changes` leave its line:
/// re-read from its file (or its kept JSON), edited, measured and parsed
/// again; it keeps the edited JSON. With it, which of `changes` this copy
/// held (a change to a content block it lacks is left to another copy).
fn edited_message(
    out: &Session,
    files: &LineFiles<'_>,
    i: usize,
    id: &str,
    changes: &[&Change],
) -> Result<(Message, Vec<bool>)> {
    let m = &out.messages[i];
    let line = m
        .line()
        .ok_or_else(|| anyhow!("message {id} has no line"))?;
    let path = &out.files[line.file_index()];
    let mut v: Value = match m.raw() {
        Some(raw) => raw.clone(),
        None => {
            let bytes = files.read(line)?;
            line_value(&bytes).with_context(|| format!("{}: line {}", path.display(), line.line))?
        }
    };
    let mut held = Vec::with_capacity(changes.len());
    for c in changes {
        match edit_line(&mut v, c) {
            Ok(()) => held.push(true),
            Err(e) if e == NOT_IN_THIS_COPY => held.push(false),
            Err(e) => bail!("{}: line {} ({id}): {e}", path.display(), line.line),
        }
    }
    let mut new_line = line;
    new_line.bytes = serialize(&v, "\n").len() as u64;
    let mut nm = parse_line(&v, new_line, line.file > 0)
        .ok_or_else(|| anyhow!("{}: line {} lost its uuid", path.display(), line.line))?;
    nm.set_parent_optional(nm.parent_optional() || m.parent_optional());
    nm.rare_mut().raw = Some(v);
    Ok((nm, held))
}

/// [`apply`] in place, on a session the caller gives up.
pub fn apply_owned(mut out: Session, edits: &[Edit]) -> Result<Session> {
    let edits: Vec<&Edit> = edits.iter().filter(|e| *e.session_id == *out.id).collect();
    let plan = Plan::new(&edits);
    let mut copies: HashMap<Id, Vec<usize>> = HashMap::default();
    for (i, m) in out.messages.iter().enumerate() {
        if plan.content.contains_key(m.id.as_str()) {
            copies.entry(m.id.clone()).or_default().push(i);
        }
    }
    // Each copy of an edited message is re-read, edited and parsed again
    // on every core (each is a function of its own line), in the plan's
    // order; the first error in that order is the one returned, as when
    // they ran one by one.
    let mut jobs: Vec<Result<EditJob<'_>>> = Vec::new();
    for (id, changes) in &plan.content {
        let idx = copies.remove(*id).unwrap_or_default();
        if idx.is_empty() {
            jobs.push(Err(anyhow!("message {id} not in session {}", out.id)));
            break;
        }
        jobs.extend(idx.into_iter().map(|i| Ok((i, *id, changes.as_slice()))));
    }
    type Edited<'a> = (usize, &'a str, Message, Vec<bool>);
    let files = LineFiles::new(&out.files);
    let edited: Vec<Result<Edited<'_>>> = jobs
        .into_par_iter()
        .map(|job| {
            let (i, id, changes) = job?;
            edited_message(&out, &files, i, id, changes).map(|(m, held)| (i, id, m, held))
        })
        .collect();
    drop(files);
    // Which changes of each id some copy of it held.
    let mut held: HashMap<&str, Vec<bool>> = HashMap::default();
    for e in edited {
        let (i, id, m, h) = e?;
        out.messages[i] = m;
        let any = held.entry(id).or_insert_with(|| vec![false; h.len()]);
        any.iter_mut().zip(&h).for_each(|(a, h)| *a |= h);
    }
    // Each change is held by some copy (in the plan's order).
    for (id, changes) in &plan.content {
        let any = held.get(*id).map(Vec::as_slice).unwrap_or_default();
        if let Some((c, _)) = changes.iter().zip(any).find(|(_, &h)| !h) {
            bail!(
                "message {id}: no stored copy holds the content block of {} {}",
                c.name(),
                c.part_id().unwrap_or_default()
            );
        }
    }
    // Compared as edited, as the writer compares them.
    let repeats = repeating_copies(&out, &plan);
    let mut i = 0;
    out.messages.retain(|m| {
        i += 1;
        !plan.drop.contains(m.id.as_str()) && !repeats.contains(&(i - 1))
    });
    out.problems.retain(|p| {
        !(p.kind == ProblemKind::TornTail
            && p.id.as_deref().is_some_and(|id| plan.drop.contains(id)))
    });
    out.duplicate_ids.retain(|d| {
        let id = d.id.as_str();
        let gone = plan.drop.contains(id) || (d.same_content && plan.drop_copies.contains(id));
        !gone
    });
    finish(&mut out);
    Ok(out)
}

/// Indexes of the messages [`Change::DropCopies`] drops: for each of its
/// uuids, the later copies in a file whose line, as edited (its kept JSON)
/// or else as stored, repeats the content of the uuid's first line in that
/// file, as [`write_file`] drops them.
fn repeating_copies(s: &Session, plan: &Plan<'_>) -> HashSet<usize> {
    let mut out = HashSet::default();
    if plan.drop_copies.is_empty() {
        return out;
    }
    let files = LineFiles::new(&s.files);
    let key = |m: &Message| match (m.raw(), m.line()) {
        (Some(v), _) => Some(fingerprint(v)),
        (None, Some(l)) => files.read(l).ok().and_then(|b| content_key(&b)),
        (None, None) => None,
    };
    let mut firsts = FirstCopies::default();
    for (i, m) in s.messages.iter().enumerate() {
        if !plan.drop_copies.contains(m.id.as_str()) {
            continue;
        }
        let file = m.line().map_or(0, |l| l.file_index());
        if firsts.repeats((file, m.id.as_str()), key(m)) {
            out.insert(i);
        }
    }
    out
}

/// The content key ([`content_key`], [`fingerprint`]) of the first copy of
/// each uuid [`Change::DropCopies`] names: [`write_file`] (by uuid, in the
/// file it writes) and [`repeating_copies`] (by file and uuid) ask it which
/// later copies repeat the first and go.
struct FirstCopies<K>(HashMap<K, Option<String>>);

impl<K> Default for FirstCopies<K> {
    fn default() -> Self {
        FirstCopies(HashMap::default())
    }
}

impl<K: Eq + std::hash::Hash> FirstCopies<K> {
    /// Whether a copy of `k` whose content key is `key` repeats the first
    /// copy of `k`. The first copy is recorded and never repeats; a copy
    /// with no key (a line that could not be read) repeats nothing.
    fn repeats(&mut self, k: K, key: Option<String>) -> bool {
        match self.0.entry(k) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(key);
                false
            }
            std::collections::hash_map::Entry::Occupied(e) => e.get().is_some() && *e.get() == key,
        }
    }
}

/// How `edit` looks in the transcript, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
    let s = ix.session();
    let m = ix.message(&edit.message_id);
    let part = edit
        .change
        .part_id()
        .and_then(|pid| m.and_then(|m| m.parts.iter().find(|p| p.id == pid)));
    let k = edit.change.part_id().and_then(block_index);
    let at = |what: &str| match k {
        Some(k) => format!("message.content[{k}]{what}"),
        None => format!("message.content{what}"),
    };
    let line = |m: Option<&crate::model::Message>| {
        m.and_then(|m| m.line())
            .map(|l| format!(" (line {})", l.line))
            .unwrap_or_default()
    };
    let mut fig = ChangeFigures::default();
    let (field, old, new) = match &edit.change {
        Change::SetParent { old, new } => (
            field::PARENT.to_string(),
            old.as_deref().map(Value::from).unwrap_or(Value::Null),
            json!(new),
        ),
        Change::ClearParent { old } => (field::PARENT.to_string(), json!(old), Value::Null),
        Change::StripMedia { placeholder, .. } => {
            fig = ChangeFigures::media(part);
            let bytes = fig.media_bytes.unwrap_or(0);
            (
                at(""),
                json!(format!("{bytes} bytes of base64 media")),
                json!(placeholder),
            )
        }
        Change::Truncate {
            field: which,
            max_chars,
            ..
        } => {
            let (name, n) = match (which, part) {
                (TextField::ToolOutput, Some(p)) => (
                    format!("{} and toolUseResult", at(".content")),
                    p.tool.as_ref().map_or(0, |t| t.output_chars as usize),
                ),
                (TextField::ToolInput, Some(p)) => (at(".input"), p.model_chars() as usize),
                (_, Some(p)) => (at(".text"), p.model_chars() as usize),
                (_, None) => (at(""), 0),
            };
            fig = ChangeFigures::truncate(n as u64, *max_chars);
            (
                name,
                json!(format!("{n} characters")),
                json!(format!(
                    "at most {max_chars} characters kept, head and tail"
                )),
            )
        }
        Change::DropMessage => match m {
            Some(m) => (
                {
                    fig.line = m.line().map(|l| l.number());
                    fig.parts = Some(m.parts.len() as u64);
                    "line".to_string()
                },
                json!(format!(
                    "{} line{} with {} blocks",
                    m.role().as_str(),
                    line(Some(m)),
                    m.parts.len()
                )),
                Value::Null,
            ),
            None => {
                let p = s
                    .problems
                    .iter()
                    .find(|p| p.id.as_deref() == Some(edit.message_id.as_str()));
                (
                    "line".to_string(),
                    json!(p.map_or_else(
                        || edit.message_id.to_string(),
                        |p| format!("{}: {}", p.location, p.error)
                    )),
                    Value::Null,
                )
            }
        },
        Change::DropCopies => {
            let n = s
                .duplicate_ids
                .iter()
                .filter(|d| d.same_content && d.id == *edit.message_id)
                .count();
            let first = m.and_then(|m| m.line()).map_or(0, |l| l.number());
            fig.line = Some(first);
            fig.copies = Some(n as u64);
            (
                "line".to_string(),
                json!(format!("line {first} and {n} later copies repeating it")),
                json!(format!("line {first}, no copy repeating it")),
            )
        }
        Change::AddNote { text } => (at(""), Value::Null, json!(text)),
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
        part_id: edit.change.part_id().map(str::to_string),
        field: field.into(),
        old,
        new,
        run: None,
        figures: fig.boxed(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::result_text;
    use super::*;

    #[test]
    fn lines_claude_code_reads_can_be_edited() {
        // A lone surrogate escape (JSON.parse accepts it; serde_json does not).
        let v = line_value(br#"{"uuid":"a","t":"x\ud800 y","ok":"\ud83d\ude00","e":"\\ud800"}"#)
            .unwrap();
        assert_eq!(v["t"], "x\u{fffd} y");
        assert_eq!(v["ok"], "\u{1f600}");
        // An escaped backslash before `ud800` is text, not an escape.
        assert_eq!(v["e"], "\\ud800");
        // A lone low surrogate at the end of the line.
        assert_eq!(line_value(br#"{"t":"\udc00"}"#).unwrap()["t"], "\u{fffd}");
        // Bytes that are not UTF-8.
        assert_eq!(
            line_value(b"{\"t\":\"a\xffb\"}").unwrap()["t"],
            "a\u{fffd}b"
        );
        // Still an error when it is not JSON at all.
        assert!(line_value(b"{\"t\":").is_err());
        // A key given twice: the last uuid names the line, as in JSON.parse.
        assert_eq!(
            uuid_of(br#"{"uuid":"first","x":1,"uuid":"last"}"#).as_deref(),
            Some("last")
        );
        assert_eq!(uuid_of(br#"{"uuid":7}"#), None);
    }

    #[test]
    fn tool_output_truncation_cuts_content_and_tool_use_result() {
        let long = "x".repeat(1000);
        let mut v = json!({"uuid":"u","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t","content":long.clone()}]},
            "toolUseResult":{"stdout":long.clone(),"interrupted":false}});
        edit_line(
            &mut v,
            &Change::Truncate {
                part_id: "u#0".into(),
                field: TextField::ToolOutput,
                max_chars: 100,
            },
        )
        .unwrap();
        let c = v
            .pointer("/message/content/0/content")
            .unwrap()
            .as_str()
            .unwrap();
        assert!(c.len() < 200 && c.contains("characters removed"));
        let o = v
            .pointer("/toolUseResult/stdout")
            .unwrap()
            .as_str()
            .unwrap();
        assert!(o.len() < 200);
        assert_eq!(v.pointer("/toolUseResult/interrupted"), Some(&json!(false)));
        assert_eq!(
            result_text(v.pointer("/message/content/0/content")).len(),
            c.len()
        );
    }

    #[test]
    fn media_in_a_tool_result_becomes_text_and_the_base64_copy_goes() {
        let mut v = json!({"uuid":"u","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t","content":[
                {"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}}]}]},
            "toolUseResult":{"type":"image","file":{"base64":"aGVsbG8=","type":"image/png"}}});
        edit_line(
            &mut v,
            &Change::StripMedia {
                part_id: "u#0".into(),
                placeholder: "[Attached image/png]".into(),
            },
        )
        .unwrap();
        assert_eq!(
            v.pointer("/message/content/0/content/0"),
            Some(&json!({"type":"text","text":"[Attached image/png]"}))
        );
        assert_eq!(
            v.pointer("/toolUseResult/file/base64"),
            Some(&json!("[Attached image/png]"))
        );
    }

    #[test]
    fn a_note_goes_after_tool_results_and_before_text() {
        let mut v = json!({"message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}});
        edit_line(&mut v, &Change::AddNote { text: "n".into() }).unwrap();
        assert_eq!(v.pointer("/message/content/1/text"), Some(&json!("n")));
        let mut v = json!({"message":{"content":"hello"}});
        edit_line(&mut v, &Change::AddNote { text: "n".into() }).unwrap();
        assert_eq!(v.pointer("/message/content"), Some(&json!("n\n\nhello")));
    }
}
