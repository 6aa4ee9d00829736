//! Applying [`Edit`]s to a rollout: to the model (to measure a plan) and to a
//! copy of the file. Both go through [`edit_line`], so the model of an edited
//! line is what the copy holds. Unchanged fields (unknown ones included) are
//! kept; a line without edits is copied byte for byte.
//!
//! Where edits land (ids: [`super::ids`]):
//! - `StripMedia` on an `input_image` content item (of a message, or of a
//!   tool output's content array): the item becomes
//!   `{"type":"input_text","text":<placeholder>}`;
//! - `Truncate`: `content[k].text` of a message, every `summary[].text` and
//!   `content[].text` of a reasoning item, `arguments` of a `function_call`
//!   (the string values inside its JSON when it parses), `input` of a
//!   `custom_tool_call`, `output` of a `*_output` item (a string, or the text
//!   items of a content array), `message` of a `compacted` line without
//!   `replacement_history`;
//! - `DropMessage` on `L<n>`: line `n` is left out (a torn last line too);
//!   on `L<n>.rh<k>`: item `k` is removed from the line's `replacement_history`
//!   (and from `replacement_history_metadata` when that holds one entry per item);
//! - `AddNote` on a message item: `{"type":"input_text","text":<note>}` is
//!   inserted at `content[0]`;
//! - `SetParent`: Codex has no parent links; refused.

use super::ids;
use super::parse::{
    is_header_line, json_len, line_messages, visible_view, HEADER_KIND, NOTE_MARKER,
};
use crate::edit::{
    truncate_middle, truncate_strings, Change, ChangeFigures, Edit, StoredChange, TextField,
};
use crate::model::{LineRef, Message, Session};
use anyhow::{anyhow, bail, Context, Result};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::path::Path;

/// Whether an edited line is for the model (dropped `replacement_history`
/// items become `null` and notes carry [`NOTE_MARKER`], so ids stay stable for
/// later edits) or for the copy (items removed, no marker).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Model,
    Write,
}

/// What the edits do to each line: lines dropped whole, items of a
/// `replacement_history` dropped from lines that stay, and the other edits
/// of the lines that stay (a dropped line's other edits are moot). Drops are
/// sorted ranges, not map entries: a cut of a huge rollout drops millions of
/// lines, with one [`Change::DropThrough`] per run.
struct LinePlans<'a> {
    /// Lines dropped whole: disjoint inclusive ranges, ascending. A header
    /// line inside one stays ([`super::parse::is_header_line`]).
    drops: Vec<(u64, u64)>,
    /// `replacement_history` items dropped, by line (lines that stay).
    item_drops: BTreeMap<u64, Vec<usize>>,
    /// Edits of the lines that stay, by line.
    edits: BTreeMap<u64, Vec<&'a Edit>>,
}

impl LinePlans<'_> {
    fn dropped(&self, line: u64) -> bool {
        let k = self.drops.partition_point(|&(_, last)| last < line);
        self.drops.get(k).is_some_and(|&(first, _)| first <= line)
    }

    /// Whether line `line` has anything to do: edits or item drops.
    fn edited(&self, line: u64) -> bool {
        self.edits.contains_key(&line) || self.item_drops.contains_key(&line)
    }

    /// The lines with something to do but no whole drop, ascending.
    fn edited_lines(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .edits
            .keys()
            .chain(self.item_drops.keys())
            .copied()
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The edits and item drops of line `line`.
    fn of(&self, line: u64) -> (&[&Edit], &[usize]) {
        (
            self.edits.get(&line).map_or(&[][..], Vec::as_slice),
            self.item_drops.get(&line).map_or(&[][..], Vec::as_slice),
        )
    }

    /// The last line any edit names.
    fn last_line(&self) -> Option<u64> {
        // A run that ends the session names its first line only.
        self.drops
            .last()
            .map(|&(f, l)| if l == u64::MAX { f } else { l })
            .max(self.edits.keys().next_back().copied())
            .max(self.item_drops.keys().next_back().copied())
    }
}

/// `(line, replacement_history index)` of message id `id`. Errors: an id
/// that is not a Codex one (`L<line>`, `L<line>.rh<k>`).
fn message_at(id: &str) -> Result<(u64, Option<usize>)> {
    ids::parse_message(id).ok_or_else(|| anyhow!("{id} is not a Codex message id"))
}

/// What a [`Change::DropThrough`] of `run` from message `first` drops: the
/// lines dropped whole (inclusive; the end is `u64::MAX` for a run that ends
/// the session), and the `replacement_history` items dropped from a line
/// that stays. The messages of a line are its history items, then its own
/// message: a run past a line holds that line's message, which drops the
/// whole line; a run that ends on a history item drops that line's items up
/// to it. The lines between the kept neighbours (`prev`, `next`) and the run
/// hold no message: they go with it. Errors: ids that are not Codex ones, a
/// run whose ends are out of order.
#[allow(clippy::type_complexity)]
fn run_span(
    first: &str,
    run: &crate::edit::DropRun,
) -> Result<(
    Option<(u64, u64)>,
    Option<(u64, std::ops::RangeInclusive<usize>)>,
)> {
    let (a, ka) = message_at(first)?;
    let (b, kb) = message_at(&run.last)?;
    if b < a || (b == a && kb.is_some() && kb < ka) {
        bail!(
            "a run from {first} through {}: its last message comes before its first",
            run.last
        );
    }
    // From the line after the kept message before the run (its own line when
    // it shares the run's first line: an item of the same history, dropped
    // with the line's message as before).
    let start = match &run.prev {
        None => 1,
        Some(p) => {
            let (pl, _) = message_at(p)?;
            if pl >= a {
                a
            } else {
                pl + 1
            }
        }
    };
    Ok(match kb {
        Some(j) => {
            let items = (b, if b == a { ka.unwrap_or(0) } else { 0 }..=j);
            let whole = (b > start).then_some((start, b - 1));
            (whole, Some(items))
        }
        None => {
            let end = match &run.next {
                None => u64::MAX,
                Some(n) => message_at(n)?.0.saturating_sub(1).max(b),
            };
            (Some((start, end)), None)
        }
    })
}

/// Errors: an edit whose message id is not a Codex one (`L<line>`,
/// `L<line>.<item>`), a run whose last message comes before its first.
fn plan_lines<'a>(edits: impl IntoIterator<Item = &'a Edit>) -> Result<LinePlans<'a>> {
    let mut out = LinePlans {
        drops: Vec::new(),
        item_drops: BTreeMap::new(),
        edits: BTreeMap::new(),
    };
    let mut items = |line: u64, ks: std::ops::RangeInclusive<usize>| {
        out.item_drops.entry(line).or_default().extend(ks);
    };
    let mut drops = Vec::new();
    let mut by_line: BTreeMap<u64, Vec<&'a Edit>> = BTreeMap::new();
    for e in edits {
        let (line, rh) = message_at(&e.message_id)?;
        match (&e.change, rh) {
            (Change::DropMessage, None) => drops.push((line, line)),
            (Change::DropMessage, Some(k)) => items(line, k..=k),
            (Change::DropThrough(run), _) => {
                let (whole, items_of) = run_span(&e.message_id, run)?;
                if let Some(w) = whole {
                    drops.push(w);
                }
                if let Some((l, ks)) = items_of {
                    items(l, ks);
                }
            }
            _ => by_line.entry(line).or_default().push(e),
        }
    }
    drops.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(drops.len());
    for (a, b) in drops {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    out.drops = merged;
    for ks in out.item_drops.values_mut() {
        ks.sort_unstable();
        ks.dedup();
    }
    let (drops, item_drops) = (&out.drops, &mut out.item_drops);
    let in_drops = |l: u64| {
        let k = drops.partition_point(|&(_, last)| last < l);
        drops.get(k).is_some_and(|&(first, _)| first <= l)
    };
    item_drops.retain(|&l, _| !in_drops(l));
    by_line.retain(|&l, _| !in_drops(l));
    out.edits = by_line;
    Ok(out)
}

/// The payload of a line (`payload` of an envelope, the line itself in the
/// older format).
fn payload_mut(v: &mut Value) -> &mut Value {
    if v.get("payload").is_some() && v.get("type").is_some() {
        &mut v["payload"]
    } else {
        v
    }
}

fn item_mut(payload: &mut Value, rh: Option<usize>) -> Result<&mut Value> {
    match rh {
        None => Ok(payload),
        Some(k) => payload
            .get_mut("replacement_history")
            .and_then(|a| a.get_mut(k))
            .filter(|i| !i.is_null())
            .ok_or_else(|| anyhow!("replacement_history has no item {k}")),
    }
}

fn truncate_str(s: &mut String, max: usize) {
    if let Some(t) = truncate_middle(s, max) {
        *s = t;
    }
}

fn text_field(v: &mut Value, key: &str, max: usize) {
    if let Some(Value::String(s)) = v.get_mut(key) {
        truncate_str(s, max);
    }
}

fn is_image(c: &Value) -> bool {
    matches!(
        c.get("type").and_then(Value::as_str),
        Some("input_image" | "image")
    )
}

fn text_item(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}

/// Content index `k` of a message item in memory (a note inserted in memory
/// sits before the stored items).
fn content_index(item: &Value, k: usize) -> usize {
    let noted = item
        .pointer("/content/0")
        .is_some_and(|c| c.get(NOTE_MARKER).is_some());
    k + usize::from(noted)
}

/// Applies a part-level change to part `k` of `item`.
fn edit_part(item: &mut Value, k: usize, change: &Change) -> Result<()> {
    let ty = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match change {
        Change::StripMedia { placeholder, .. } => {
            if ty == "message" {
                let k = content_index(item, k);
                let c = item
                    .get_mut("content")
                    .and_then(|c| c.get_mut(k))
                    .filter(|c| is_image(c))
                    .ok_or_else(|| anyhow!("content[{k}] is not an image"))?;
                *c = text_item(placeholder);
                return Ok(());
            }
            let Some(Value::Array(out)) = item.get_mut("output") else {
                bail!("a {ty} item carries no media");
            };
            let lines: Vec<&str> = placeholder.lines().collect();
            let mut n = 0;
            for c in out.iter_mut().filter(|c| is_image(c)) {
                *c = text_item(lines.get(n).copied().unwrap_or(placeholder));
                n += 1;
            }
            if n == 0 {
                bail!("the {ty} output carries no image");
            }
            Ok(())
        }
        Change::Truncate {
            field, max_chars, ..
        } => {
            let max = *max_chars;
            match (ty.as_str(), field) {
                ("message", TextField::Text) => {
                    let k = content_index(item, k);
                    match item.get_mut("content") {
                        Some(Value::String(s)) => truncate_str(s, max),
                        Some(c) => text_field(
                            c.get_mut(k).ok_or_else(|| anyhow!("no content[{k}]"))?,
                            "text",
                            max,
                        ),
                        None => bail!("the message has no content"),
                    }
                }
                ("reasoning", TextField::Text) => {
                    for key in ["summary", "content"] {
                        if let Some(Value::Array(a)) = item.get_mut(key) {
                            a.iter_mut().for_each(|x| text_field(x, "text", max));
                        }
                    }
                }
                ("function_call", TextField::ToolInput) => {
                    if let Some(Value::String(args)) = item.get_mut("arguments") {
                        match serde_json::from_str::<Value>(args) {
                            Ok(mut parsed) if parsed.is_object() || parsed.is_array() => {
                                truncate_strings(&mut parsed, max);
                                *args = parsed.to_string();
                            }
                            _ => truncate_str(args, max),
                        }
                    }
                }
                ("custom_tool_call", TextField::ToolInput) => text_field(item, "input", max),
                ("local_shell_call", TextField::ToolInput) => {
                    if let Some(a) = item.get_mut("action") {
                        truncate_strings(a, max);
                    }
                }
                (t, TextField::ToolOutput) if t.ends_with("_output") => {
                    let out = item
                        .get_mut("output")
                        .ok_or_else(|| anyhow!("the {t} item has no output"))?;
                    match out {
                        Value::String(s) => truncate_str(s, max),
                        Value::Array(a) => a.iter_mut().for_each(|x| text_field(x, "text", max)),
                        Value::Object(_) => text_field(out, "content", max),
                        _ => {}
                    }
                }
                ("", TextField::Text) if item.get("message").is_some() => {
                    text_field(item, "message", max)
                }
                (t, f) => bail!(
                    "cannot truncate {f:?} of a {} item",
                    if t.is_empty() { "compacted" } else { t }
                ),
            }
            Ok(())
        }
        _ => bail!("not a part-level change"),
    }
}

/// Applies the edits of one line (none of them a drop of the whole line) to
/// its parsed JSON: part edits, then notes, then the drops of the
/// `replacement_history` items `item_drops` names (ascending indexes).
fn edit_line(v: &mut Value, edits: &[&Edit], item_drops: &[usize], mode: Mode) -> Result<()> {
    let payload = payload_mut(v);
    for e in edits {
        let Some(pid) = e.change.part_id() else {
            continue;
        };
        let (mid, k) = ids::parse_part(pid).ok_or_else(|| anyhow!("{pid} is not a part id"))?;
        let k = k.ok_or_else(|| anyhow!("{pid}: a note cannot be edited"))?;
        let (_, rh) =
            ids::parse_message(mid).ok_or_else(|| anyhow!("{mid} is not a message id"))?;
        edit_part(item_mut(payload, rh)?, k, &e.change).with_context(|| format!("part {pid}"))?;
    }
    for e in edits {
        match &e.change {
            Change::AddNote { text } => {
                let (_, rh) = ids::parse_message(&e.message_id).unwrap_or((0, None));
                let item = item_mut(payload, rh)?;
                let mut note = text_item(text);
                if mode == Mode::Model {
                    note[NOTE_MARKER] = json!(true);
                }
                // A message with no content (or null) gets the note as its
                // content; content of another type is left alone, without
                // the note (fuzz input whole_codex-1).
                let Some(obj) = item.as_object_mut() else {
                    continue;
                };
                match obj.get_mut("content") {
                    Some(Value::Array(c)) => c.insert(0, note),
                    Some(Value::String(s)) => {
                        let old = text_item(s);
                        obj.insert("content".into(), json!([note, old]));
                    }
                    None | Some(Value::Null) => {
                        obj.insert("content".into(), json!([note]));
                    }
                    Some(_) => {}
                }
            }
            Change::SetParent { .. } | Change::ClearParent { .. } => {
                bail!(
                    "Codex rollouts have no parent links (message {})",
                    e.message_id
                )
            }
            Change::Session(_) => bail!(
                "session {}: Codex rollouts store no session-level changes",
                e.session_id
            ),
            Change::SetFirstKept { .. } | Change::CutBefore { .. } => bail!(
                "message {}: Codex rollouts store no first kept entry ({} is a docker-agent change)",
                e.message_id,
                e.change.name()
            ),
            _ => {}
        }
    }
    // Highest index first, so removing one leaves the next in place.
    let drops = item_drops.iter().rev().copied();
    if !item_drops.is_empty() {
        let n = match payload.get("replacement_history") {
            Some(Value::Array(rh)) => rh.len(),
            _ => bail!("the line has no replacement_history"),
        };
        // Codex 0.169 keeps one `replacement_history_metadata` entry per item.
        let parallel = payload
            .get(RH_METADATA)
            .and_then(Value::as_array)
            .is_some_and(|m| m.len() == n);
        for k in drops {
            if k >= n {
                bail!("replacement_history has no item {k}");
            }
            for key in ["replacement_history", RH_METADATA] {
                if key == RH_METADATA && !parallel {
                    continue;
                }
                if let Some(Value::Array(a)) = payload.get_mut(key) {
                    match mode {
                        Mode::Write => {
                            a.remove(k);
                        }
                        Mode::Model => a[k] = Value::Null,
                    }
                }
            }
        }
    }
    Ok(())
}

/// The per-item metadata array Codex 0.169 keeps beside `replacement_history`.
const RH_METADATA: &str = "replacement_history_metadata";

/// `v` as the copy will hold it: no `null` history items, no note markers.
fn cleaned(v: &Value) -> Value {
    let mut v = v.clone();
    let p = payload_mut(&mut v);
    let strip = |item: &mut Value| {
        if let Some(Value::Array(c)) = item.get_mut("content") {
            for x in c.iter_mut() {
                if let Some(o) = x.as_object_mut() {
                    o.remove(NOTE_MARKER);
                }
            }
        }
    };
    strip(p);
    if let Some(Value::Array(rh)) = p.get_mut("replacement_history") {
        rh.retain(|x| !x.is_null());
        rh.iter_mut().for_each(strip);
    }
    if let Some(Value::Array(m)) = p.get_mut(RH_METADATA) {
        m.retain(|x| !x.is_null());
    }
    v
}

/// Reads line `l` of the rollout (`files`, its one file `path`) by its byte
/// offset.
fn read_line(files: &crate::formats::LineFiles<'_>, path: &Path, l: LineRef) -> Result<Value> {
    let buf = files
        .read(l)
        .with_context(|| format!("{}: cannot re-read line {}", path.display(), l.line))?;
    serde_json::from_slice(super::parse::trim_eol(&buf))
        .with_context(|| format!("{}:line {}: no longer valid JSON", path.display(), l.line))
}

/// Keeps what only the whole-file pass knows (usage, tool pairing, model,
/// summary flags, triggers) when a line's messages are rebuilt.
fn carry(old: &[Message], new: &mut [Message]) {
    for m in new.iter_mut() {
        let Some(o) = old.iter().find(|o| o.id == m.id) else {
            continue;
        };
        m.usage = o.usage.clone();
        m.set_finish(o.finish_sym().cloned());
        m.set_summary(o.summary());
        m.set_model(o.model_sym().cloned());
        m.set_time_created(o.time_created());
        m.set_time_completed(o.time_completed());
        for p in m.parts.iter_mut() {
            let Some(op) = o.parts.iter().find(|x| x.id == p.id) else {
                continue;
            };
            if let (Some(t), Some(ot)) = (p.tool.as_mut(), op.tool.as_ref()) {
                t.name = ot.name.clone();
                t.status = ot.status.clone();
            }
            if let (Some(c), Some(oc)) = (p.compaction_mut(), op.compaction()) {
                c.trigger_tokens = oc.trigger_tokens;
            }
        }
    }
}

/// `s` with `edits` applied: edited lines are re-read (or taken from the
/// edited JSON an earlier call kept in the line's last message `raw`),
/// edited, and rebuilt; ids stay those of `s`.
pub fn apply(s: &Session, edits: &[Edit]) -> Result<Session> {
    apply_owned(s.clone(), edits)
}

/// [`apply`] in place, on a session the caller gives up.
pub fn apply_owned(mut out: Session, edits: &[Edit]) -> Result<Session> {
    let plans = plan_lines(edits.iter().filter(|e| *e.session_id == *out.id))?;
    // The messages of each edited line (only those: a cut's drops need none).
    let mut ranges: HashMap<u64, (usize, usize)> = HashMap::default();
    for (i, m) in out.messages.iter().enumerate() {
        if let Some(l) = m.line().filter(|l| plans.edited(l.number())) {
            ranges
                .entry(l.number())
                .and_modify(|r| r.1 = i)
                .or_insert((i, i));
        }
    }
    let mut todo: Vec<(u64, usize, usize)> = Vec::new();
    for line in plans.edited_lines() {
        let &(a, b) = ranges
            .get(&line)
            .ok_or_else(|| anyhow!("line {line} holds no message of session {}", out.id))?;
        todo.push((line, a, b));
    }
    todo.sort_by_key(|t| std::cmp::Reverse(t.1));
    let files = crate::formats::LineFiles::new(std::slice::from_ref(&out.source));
    for (line, a, b) in todo {
        let lr = out.messages[b]
            .line()
            .expect("messages of a line have a line ref");
        let mut v = match out.messages[b].raw() {
            Some(raw) => raw.clone(),
            None => read_line(&files, &out.source, lr)?,
        };
        let (es, items) = plans.of(line);
        edit_line(&mut v, es, items, Mode::Model)?;
        let nl = LineRef {
            bytes: json_len(&cleaned(&v)) + 1,
            ..lr
        };
        let time = out.messages[b].time_created();
        let mut msgs = line_messages(&v, line == 1, nl, time)
            .ok_or_else(|| anyhow!("line {line} is not a message line"))?;
        carry(&out.messages[a..=b], &mut msgs);
        if let Some(last) = msgs.last_mut() {
            last.rare_mut().raw = Some(v);
        }
        out.messages.splice(a..=b, msgs);
    }
    if !plans.drops.is_empty() {
        out.messages
            .retain(|m| !m.line().is_some_and(|l| plans.dropped(l.number())));
        out.problems.retain(|p| {
            !p.id
                .as_deref()
                .and_then(ids::parse_message)
                .is_some_and(|(l, _)| plans.dropped(l))
        });
        // The lines of the runs that hold no message go too, but for a
        // header, which the copy keeps as the writer does.
        let removed = out
            .meta_lines
            .remove(|l, kind| kind != HEADER_KIND && plans.dropped(l));
        out.other_bytes = out.other_bytes.saturating_sub(removed);
    }
    out.visible = visible_view(&out.messages);
    Ok(out)
}

/// Writes the copy of `src` with `edits` to `dest` (which must not exist):
/// to a temp file beside it, then renamed into place.
/// Writes the first `len` bytes of `src` (the snapshot the session was read
/// from) with `edits` applied to `dest`, staged and moved into place.
pub fn write_copy(src: &Path, len: u64, dest: &Path, edits: &[Edit], replace: bool) -> Result<()> {
    let plans = plan_lines(edits)?;
    let (staged, mut file) = crate::fsx::Staged::file(dest)?;
    if plans.drops.is_empty() && plans.edits.is_empty() && plans.item_drops.is_empty() {
        crate::formats::copy_unchanged(src, len, &mut file, staged.path())?;
        drop(file);
        return staged.commit(crate::formats::copy_mode(src), replace);
    }
    let f =
        crate::fsx::open_regular(src).with_context(|| format!("{}: cannot open", src.display()))?;
    let mut r = BufReader::with_capacity(1 << 20, f.take(len));
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut file);
        let mut buf = Vec::new();
        let mut n = 0u64;
        let cannot_read = |n: u64| format!("{}: cannot read after line {n}", src.display());
        while let Some(whole) =
            crate::formats::read_line_bounded(&mut r, &mut buf).with_context(|| cannot_read(n))?
        {
            n += 1;
            if !whole {
                // A line longer than the loader holds (read as unreadable):
                // dropped or copied as it streams by, never held.
                let keep = !plans.dropped(n);
                if keep && plans.edited(n) {
                    bail!("{}: line {n} is too long to edit", src.display());
                }
                if keep {
                    w.write_all(&buf)?;
                }
                let out: Option<&mut dyn Write> = if keep { Some(&mut w) } else { None };
                crate::formats::copy_rest_of_line(&mut r, out).with_context(|| cannot_read(n))?;
                continue;
            }
            // A header inside a dropped run stays, as in the model.
            if plans.dropped(n) && !is_header_line(super::parse::trim_eol(&buf), n == 1) {
                continue;
            }
            match plans.edited(n).then(|| plans.of(n)) {
                Some((es, items)) => {
                    let mut v: Value = serde_json::from_slice(super::parse::trim_eol(&buf))
                        .with_context(|| format!("{}:line {n}: not valid JSON", src.display()))?;
                    edit_line(&mut v, es, items, Mode::Write)
                        .with_context(|| format!("{}:line {n}", src.display()))?;
                    serde_json::to_writer(&mut w, &v)?;
                    // Its own ending (`\r\n` in a CRLF rollout); a last
                    // line without one gets `\n`, as before.
                    let ending = match crate::formats::line_ending(&buf) {
                        "" => "\n",
                        e => e,
                    };
                    w.write_all(ending.as_bytes())?;
                }
                None => w
                    .write_all(&buf)
                    .with_context(|| format!("{}: cannot write", staged.path().display()))?,
            }
        }
        if let Some(last) = plans.last_line() {
            if last > n {
                bail!(
                    "{}: an edit names line {last}, the file has {n}",
                    src.display()
                );
            }
        }
        w.flush()
            .with_context(|| format!("{}: cannot write", staged.path().display()))?;
    }
    drop(file);
    staged.commit(crate::formats::copy_mode(src), replace)
}

/// The stored field a part lives in, e.g. `payload.content[2]`,
/// `payload.replacement_history[3].output`.
fn part_field(m: Option<&Message>, part_id: &str, leaf: &str) -> String {
    let (mid, k) = ids::parse_part(part_id).unwrap_or((part_id, Some(0)));
    let base = match ids::parse_message(mid) {
        Some((_, Some(rh))) => format!("payload.replacement_history[{rh}]"),
        _ => "payload".to_string(),
    };
    let p = m.and_then(|m| m.parts.iter().find(|p| p.id == part_id));
    let kind = p.map(|p| &*p.kind_name).unwrap_or("");
    let field = match kind {
        "input_text" | "output_text" | "text" | "summary_text" | "refusal" | "input_image"
        | "image" => format!("content[{}]{leaf}", k.unwrap_or(0)),
        "function_call" => "arguments".into(),
        "custom_tool_call" => "input".into(),
        "local_shell_call" => "action".into(),
        "reasoning" => "summary[].text".into(),
        "compacted" => "message".into(),
        k if k.ends_with("_output") => "output".into(),
        _ => "content".into(),
    };
    format!("{base}.{field}")
}

/// Lines and bytes of lines `first..=last` of `s`'s rollout that a run
/// drops: the lines its messages fill and the lines that hold no message,
/// but for the headers, which stay.
fn run_lines(s: &Session, first: u64, last: u64) -> (u64, u64) {
    let line_of = |m: &Message| m.line().map_or(0, |l| l.number());
    let start = s.messages.partition_point(|m| line_of(m) < first);
    let (mut lines, mut bytes, mut prev) = (0u64, 0u64, None);
    for m in s.messages.get(start..).unwrap_or_default() {
        let Some(l) = m.line().filter(|l| l.number() <= last) else {
            break;
        };
        if prev != Some(l.number()) {
            prev = Some(l.number());
            lines += 1;
            bytes = bytes.saturating_add(l.bytes);
        }
    }
    let (n, b) = s.meta_lines.in_range(first, last, |k| k == HEADER_KIND);
    (lines + n, bytes.saturating_add(b))
}

/// How a [`Change::DropThrough`] `e` of `run` looks in the rollout: one
/// change for the lines it drops whole (with their [`crate::edit::LineRun`]),
/// naming the history items it drops from a line that stays.
fn describe_run(s: &Session, e: &Edit, run: &crate::edit::DropRun) -> StoredChange {
    let (whole, items) = run_span(&e.message_id, run).unwrap_or((None, None));
    // The lines the copy leaves out: a header at either end stays, and a
    // range the session no longer holds (cut by an earlier step) is none.
    let whole = whole.and_then(|(a, b)| dropped_bounds(s, a, b));
    let (lines, bytes) = whole.map_or((0, 0), |(a, b)| run_lines(s, a, b));
    let items = items.map_or(String::new(), |(l, ks)| {
        format!(
            "{}items {} to {} of the replacement_history of line {l}",
            if whole.is_some() { ", and " } else { "" },
            ks.start(),
            ks.end()
        )
    });
    let lines_text = whole.map_or(String::new(), |(a, b)| {
        format!(
            "lines {a}-{b} ({lines} lines, {bytes} bytes: {} messages and the lines among them that hold no message)",
            run.messages
        )
    });
    StoredChange {
        session_id: e.session_id.clone(),
        message_id: e.message_id.clone(),
        part_id: None,
        field: "line".into(),
        old: json!(format!("{lines_text}{items}")),
        new: Value::Null,
        run: whole.map(|(a, b)| {
            Box::new(crate::edit::LineRun {
                last_message_id: run.last.clone(),
                first_line: a,
                last_line: b,
                lines,
                bytes,
            })
        }),
        figures: ChangeFigures {
            messages: Some(run.messages as u64),
            ..Default::default()
        }
        .boxed(),
    }
}

/// The first and last line of `first..=last` that `s` holds and a run
/// drops (a message line, or one that holds no message but a header);
/// `None` when there is none.
fn dropped_bounds(s: &Session, first: u64, last: u64) -> Option<(u64, u64)> {
    let line_of = |m: &Message| m.line().map_or(0, |l| l.number());
    let start = s.messages.partition_point(|m| line_of(m) < first);
    let end = s.messages.partition_point(|m| line_of(m) <= last);
    let msgs = s.messages.get(start..end.max(start)).unwrap_or_default();
    let meta = s
        .meta_lines
        .lines()
        .iter()
        .filter(|l| (first..=last).contains(&u64::from(l.line.get())))
        .filter(|l| s.meta_lines.kind_name(l.kind) != HEADER_KIND)
        .map(|l| u64::from(l.line.get()));
    let all = msgs.iter().map(line_of).chain(meta);
    let (mut lo, mut hi) = (None::<u64>, None::<u64>);
    for l in all {
        lo = Some(lo.map_or(l, |x| x.min(l)));
        hi = Some(hi.map_or(l, |x| x.max(l)));
    }
    Some((lo?, hi?))
}

/// How `e` looks in the rollout, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, e: &Edit) -> StoredChange {
    let s = ix.session();
    if let Change::DropThrough(run) = &e.change {
        return describe_run(s, e, run);
    }
    let m = ix.message(&e.message_id);
    let part = e
        .change
        .part_id()
        .and_then(|pid| m.and_then(|m| m.parts.iter().find(|p| p.id == pid)));
    let mut fig = ChangeFigures::default();
    let (field, old, new): (std::borrow::Cow<'static, str>, Value, Value) = match &e.change {
        Change::SetParent { old, new } => (
            "parent".into(),
            old.as_deref().map(Value::from).unwrap_or(Value::Null),
            json!(new),
        ),
        Change::ClearParent { old } => ("parent".into(), json!(old), Value::Null),
        Change::StripMedia {
            part_id,
            placeholder,
        } => {
            fig = ChangeFigures::media(part);
            let bytes = fig.media_bytes.unwrap_or(0);
            (
                part_field(m, part_id, "").into(),
                json!(format!(
                    "{} with {bytes} bytes of inline media",
                    part.map(|p| &*p.kind_name).unwrap_or("part")
                )),
                json!(placeholder),
            )
        }
        Change::Truncate {
            part_id,
            field,
            max_chars,
        } => {
            let chars = part.map_or(0, |p| match field {
                TextField::ToolOutput => p
                    .tool
                    .as_ref()
                    .map_or(p.model_chars(), |t| t.output_chars()),
                _ => p.model_chars(),
            });
            fig = ChangeFigures::truncate(chars, *max_chars);
            (
                part_field(m, part_id, ".text").into(),
                json!(format!("{chars} characters")),
                json!(format!(
                    "at most {max_chars} characters kept, head and tail"
                )),
            )
        }
        Change::DropMessage => match (m, ids::parse_message(&e.message_id)) {
            (Some(m), Some((line, Some(k)))) => (
                {
                    fig.line = Some(line);
                    fig.bytes = Some(m.payload_bytes());
                    format!("payload.replacement_history[{k}]").into()
                },
                json!(format!(
                    "{} item of the compacted line {line} ({} bytes)",
                    m.role().as_str(),
                    m.payload_bytes()
                )),
                Value::Null,
            ),
            (Some(m), Some((line, None))) => (
                {
                    fig.line = Some(line);
                    fig.bytes = Some(m.line().map_or(0, |l| l.bytes));
                    "line".into()
                },
                json!(match m.parts.first() {
                    Some(p) => format!(
                        "line {line}: {} {} ({} bytes)",
                        m.role().as_str(),
                        p.kind_name,
                        m.line().map_or(0, |l| l.bytes)
                    ),
                    None => format!(
                        "line {line}: {} ({} bytes)",
                        m.role().as_str(),
                        m.line().map_or(0, |l| l.bytes)
                    ),
                }),
                Value::Null,
            ),
            _ => {
                let p = s
                    .problems
                    .iter()
                    .find(|p| p.id.as_deref() == Some(e.message_id.as_str()));
                (
                    "line".into(),
                    json!(p.map_or_else(
                        || format!("line {}", e.message_id),
                        |p| format!("{}: {}", p.location, p.error)
                    )),
                    Value::Null,
                )
            }
        },
        // Described above, with its run.
        Change::DropThrough(_) => ("line".into(), Value::Null, Value::Null),
        // Codex rewrites no line with a reused id: repair never plans this.
        Change::DropCopies => (
            "line".into(),
            json!("later copies of a rewritten line"),
            Value::Null,
        ),
        Change::AddNote { text } => {
            let base = match ids::parse_message(&e.message_id) {
                Some((_, Some(k))) => format!("payload.replacement_history[{k}]"),
                _ => "payload".to_string(),
            };
            (
                format!("{base}.content[0]").into(),
                Value::Null,
                json!(text),
            )
        }
        Change::Session(_) => ("session".into(), Value::Null, json!(e.change.name())),
        Change::SetFirstKept { .. } | Change::CutBefore { .. } => {
            (e.change.name().into(), Value::Null, Value::Null)
        }
    };
    StoredChange {
        session_id: e.session_id.clone(),
        message_id: e.message_id.clone(),
        part_id: match &e.change {
            Change::AddNote { .. } => Some(ids::note_part(&e.message_id).to_string()),
            c => c.part_id().map(str::to_string),
        },
        field,
        old,
        new,
        run: None,
        figures: fig.boxed(),
    }
}
