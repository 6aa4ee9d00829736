//! Reading Claude Code transcripts into the model, line by line.
//!
//! - Every line with a `uuid` is a [`Message`]; its stored bytes are the
//!   line's bytes (newline included). Lines without one (`queue-operation`,
//!   `last-prompt`, `file-history-snapshot`, `mode`, legacy `summary`, ...)
//!   count in [`Session::other_bytes`]; `last-prompt.leafUuid` becomes
//!   [`Session::leaf_id`], titles come from `custom-title`, `ai-title` or a
//!   legacy `summary` line.
//! - Content blocks are parts (`<uuid>#<block index>`): `text`, `thinking`,
//!   `tool_use` and `tool_result` (tool parts, the result's status from
//!   `is_error`, the call's from whether a result exists), base64 `image` and
//!   `document` blocks (media, also inside `tool_result.content`). A line's
//!   `toolUseResult` (the structured copy of a tool output) counts in its
//!   tool_result part's stored bytes.
//! - Usage: `message.usage` on assistant lines; the lines of one API response
//!   share `message.id` and `requestId` ([`Message::response_id`]) and repeat
//!   the usage, which [`Session::tokens_total`] counts once. Context tokens of
//!   a turn = input + cache creation + cache read ([`crate::model::Usage::total`]).
//! - A line that is not JSON is an `unreadable` problem at `file:line N`; a
//!   last line with no newline that is not JSON is a torn tail.

use super::{file_name, view};
use crate::formats::json_scan::{Key, Scan};
use crate::formats::{prescan, MAX_DEPTH};
use crate::measure::media_from_base64;
use crate::model::*;
use anyhow::{Context, Result};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(test)]
fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

use crate::formats::measured::{raw_int, raw_str, raw_true, Figures, Json, Lenient, Measured, Raw};
use crate::measure::char_count as chars;

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp; 0 when absent or unparsable.
fn millis(ts: Option<&str>) -> i64 {
    ts.and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Reading a line without building a JSON tree: every field this module needs
// is borrowed from the line as raw JSON ([`Raw`]) and decoded only when used,
// so a line costs one validating scan, not a tree of allocations. A field of
// an unexpected type reads as absent (as the tree-based reader did). The scan
// is [`Fields::scan`] (the crate's own, `json_scan`: 64 bytes a step through
// strings); a line it gives up on (a repeated or escaped key, a number that
// may be out of range, ...) is read by serde_json into the same struct
// ([`Fields::read`]), and content blocks likewise ([`BlockFields::scan`]).

/// The top-level fields of a transcript line this module reads.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Fields<'a> {
    #[serde(borrow)]
    uuid: Raw<'a>,
    #[serde(borrow, rename = "parentUuid")]
    parent: Raw<'a>,
    #[serde(borrow, rename = "logicalParentUuid")]
    logical_parent: Raw<'a>,
    #[serde(borrow, rename = "type")]
    ty: Raw<'a>,
    #[serde(borrow)]
    subtype: Raw<'a>,
    #[serde(borrow, rename = "isSidechain")]
    sidechain: Raw<'a>,
    #[serde(borrow, rename = "isMeta")]
    meta: Raw<'a>,
    #[serde(borrow, rename = "isCompactSummary")]
    compact_summary: Raw<'a>,
    #[serde(borrow, rename = "isApiErrorMessage")]
    api_error: Raw<'a>,
    #[serde(borrow)]
    timestamp: Raw<'a>,
    #[serde(borrow, rename = "requestId")]
    request_id: Raw<'a>,
    #[serde(borrow)]
    error: Raw<'a>,
    #[serde(borrow, rename = "apiErrorStatus")]
    api_error_status: Raw<'a>,
    #[serde(borrow, rename = "leafUuid")]
    leaf: Raw<'a>,
    #[serde(borrow, rename = "customTitle")]
    custom_title: Raw<'a>,
    #[serde(borrow, rename = "aiTitle")]
    ai_title: Raw<'a>,
    #[serde(borrow)]
    title: Raw<'a>,
    #[serde(borrow)]
    summary: Raw<'a>,
    #[serde(borrow)]
    message: Lenient<MessageFields<'a>>,
    #[serde(borrow, rename = "toolUseResult")]
    tool_use_result: Raw<'a>,
    #[serde(borrow, rename = "compactMetadata")]
    compact_metadata: Raw<'a>,
    #[serde(borrow)]
    attachment: Raw<'a>,
    /// The folder Claude Code ran in when it wrote the line.
    #[serde(borrow)]
    cwd: Raw<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageFields<'a> {
    /// The blocks of an array `content` with the text of each, read in
    /// the line's own scan ([`Fields::scan`]); `None` when read otherwise
    /// (serde, or a block [`block_at`] does not read exactly), and the
    /// blocks are then read from `content`.
    #[serde(skip)]
    blocks: Option<Vec<(&'a str, MeasuredBlock<'a>)>>,
    #[serde(borrow)]
    id: Raw<'a>,
    #[serde(borrow)]
    model: Raw<'a>,
    #[serde(borrow)]
    content: Raw<'a>,
    #[serde(borrow)]
    usage: Raw<'a>,
    #[serde(borrow)]
    stop_reason: Raw<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageFields<'a> {
    #[serde(borrow)]
    input_tokens: Raw<'a>,
    #[serde(borrow)]
    output_tokens: Raw<'a>,
    #[serde(borrow)]
    cache_read_input_tokens: Raw<'a>,
    #[serde(borrow)]
    cache_creation_input_tokens: Raw<'a>,
}

/// A content block's fields. Its texts (`text`, `thinking`, `data`) are
/// raw JSON here; [`MeasuredBlock`] reads them as their figures.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct BlockFields<'a, T = Raw<'a>> {
    #[serde(borrow, rename = "type")]
    ty: Raw<'a>,
    text: T,
    thinking: T,
    data: T,
    #[serde(borrow)]
    name: Raw<'a>,
    #[serde(borrow)]
    id: Raw<'a>,
    #[serde(borrow)]
    input: Raw<'a>,
    #[serde(borrow)]
    tool_use_id: Raw<'a>,
    #[serde(borrow)]
    is_error: Raw<'a>,
    #[serde(borrow)]
    content: Raw<'a>,
    #[serde(borrow)]
    source: Raw<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SourceFields<'a> {
    #[serde(borrow, rename = "type")]
    ty: Raw<'a>,
    #[serde(borrow)]
    media_type: Raw<'a>,
    #[serde(borrow)]
    data: Raw<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompactFields<'a> {
    #[serde(borrow)]
    trigger: Raw<'a>,
    #[serde(borrow, rename = "preTokens")]
    pre_tokens: Raw<'a>,
    #[serde(borrow, rename = "postTokens")]
    post_tokens: Raw<'a>,
}

/// The figures of a raw JSON string (`None` for any other value, or a
/// string [`rstr`] does not read: one with a lone surrogate escape).
fn rfig(r: Raw<'_>) -> Option<Figures> {
    let t = r?.get();
    if !t.starts_with('"') {
        return None;
    }
    if let Some(f) = Scan::new(t).string().and_then(Figures::of_json) {
        return Some(f);
    }
    serde_json::from_str::<Measured>(t)
        .ok()
        .and_then(Measured::str)
}

/// A content block read in one pass with its texts measured ([`Measured`]);
/// a block this read refuses (a repeated key, a text [`rstr`] does not
/// read) is read again as [`BlockFields`], which decides as before.
type MeasuredBlock<'a> = BlockFields<'a, Measured>;

impl<'a> BlockFields<'a, Measured> {
    /// The block `raw` (an object; anything else reads as the default block).
    fn read(raw: &'a str) -> MeasuredBlock<'a> {
        if !raw.starts_with('{') {
            return MeasuredBlock::default();
        }
        if let Some(b) = Self::scan(raw) {
            return b;
        }
        if let Ok(b) = serde_json::from_str::<MeasuredBlock<'a>>(raw) {
            return b;
        }
        let b: BlockFields<'a> = serde_json::from_str(raw).unwrap_or_default();
        let fig = |r: Raw<'_>| rstr(r).map_or(Measured::Absent, |t| Measured::Str(Figures::of(&t)));
        MeasuredBlock {
            ty: b.ty,
            text: fig(b.text),
            thinking: fig(b.thinking),
            data: fig(b.data),
            name: b.name,
            id: b.id,
            input: b.input,
            tool_use_id: b.tool_use_id,
            is_error: b.is_error,
            content: b.content,
            source: b.source,
        }
    }
}

impl<'a> BlockFields<'a, Measured> {
    /// The block `raw` read by [`Scan`] ([`block_at`]), or `None` where
    /// serde may read it otherwise (a repeated or escaped key, a text that
    /// does not decode) or [`Scan`] gives it up.
    fn scan(raw: &'a str) -> Option<MeasuredBlock<'a>> {
        let mut s = Scan::new(raw);
        let (b, exact) = block_at(&mut s)?;
        s.end()?;
        exact.then_some(b)
    }
}

/// The content block at the cursor, read as [`MeasuredBlock::read`] reads
/// it (a value that is not an object is the default block), and whether
/// that read is exact: `false` when serde may read the block otherwise (a
/// repeated or escaped key, a text that does not decode), for the caller
/// to read it again with serde. `None` when the text is not JSON or
/// [`Scan`] gives it up.
fn block_at<'a>(s: &mut Scan<'a>) -> Option<(MeasuredBlock<'a>, bool)> {
    let mut b = MeasuredBlock::default();
    if s.peek()? != b'{' {
        s.value()?;
        return Some((b, true));
    }
    let mut exact = true;
    let mut seen = 0u32;
    s.object_with(&mut |key, s| {
        let Key::Plain(key) = key else {
            exact = false;
            return s.value().map(drop);
        };
        let (bit, slot) = match key {
            "type" => (0, &mut b.ty),
            "name" => (1, &mut b.name),
            "id" => (2, &mut b.id),
            "input" => (3, &mut b.input),
            "tool_use_id" => (4, &mut b.tool_use_id),
            "is_error" => (5, &mut b.is_error),
            "content" => (6, &mut b.content),
            "source" => (7, &mut b.source),
            "text" | "thinking" | "data" => {
                let (bit, m) = match key {
                    "text" => (8, &mut b.text),
                    "thinking" => (9, &mut b.thinking),
                    _ => (10, &mut b.data),
                };
                if take(&mut seen, bit).is_none() {
                    exact = false;
                }
                *m = measured_at(s, &mut exact)?;
                return Some(());
            }
            _ => return s.value().map(drop),
        };
        if take(&mut seen, bit).is_none() {
            exact = false;
        }
        *slot = not_null(s.value()?);
        Some(())
    })?;
    Some((b, exact))
}

/// The value at the cursor read as [`Measured`] reads it. A string with a
/// `\u` escape is decoded by serde (`exact` set to false when serde
/// refuses it: a lone surrogate).
fn measured_at(s: &mut Scan<'_>, exact: &mut bool) -> Option<Measured> {
    Some(match s.peek()? {
        b'"' => {
            let (raw, js) = s.spanned(|s| s.string())?;
            match Figures::of_json(js) {
                Some(f) => Measured::Str(f),
                None => serde_json::from_str::<Measured>(raw.get()).unwrap_or_else(|_| {
                    *exact = false;
                    Measured::Absent
                }),
            }
        }
        b'[' | b'{' => {
            s.value()?;
            Measured::Nested
        }
        _ => {
            s.value()?;
            Measured::Absent
        }
    })
}

/// A JSON string field, borrowed when it holds no escapes; `None` when
/// absent, not a string or not decodable ([`raw_str`]).
fn rstr<'a>(r: Raw<'a>) -> Option<Cow<'a, str>> {
    raw_str(r).flatten()
}

/// An object field of type `T` (all of whose fields are optional), or its
/// default when the field is absent or not an object.
fn robj<'a, T: Deserialize<'a> + Default>(r: Raw<'a>) -> T {
    match r {
        Some(r) if r.get().starts_with('{') => serde_json::from_str(r.get()).unwrap_or_default(),
        _ => T::default(),
    }
}

/// The elements of an array field.
fn rarr<'a>(r: Raw<'a>) -> Vec<Json<'a>> {
    match r {
        Some(r) if r.get().starts_with('[') => serde_json::from_str(r.get()).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Bytes of a raw field as stored.
fn rlen(r: Raw<'_>) -> u64 {
    r.map_or(0, |r| r.get().len() as u64)
}

/// The uuid of a transcript line, read exactly as the loader reads it (the
/// last `uuid` key; `None` for a line the loader reports as unreadable, too
/// deep, without a string uuid or with a `parentUuid` that is not an id), so
/// a copy's writer edits only the lines that were loaded as messages (fuzz
/// input whole_claude-13: a line with a byte that is not UTF-8 inside a
/// string is unreadable and stays as it is).
pub(crate) fn line_uuid(body: &[u8]) -> Option<String> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first != Some(b'{') {
        return None;
    }
    let mut scratch = None;
    let f = match Fields::scan(body) {
        Some(f) => f,
        None => {
            let scan = prescan(body);
            if scan.too_deep(body) || scan.number_out_of_range(body) {
                return None;
            }
            Fields::read(body, &mut scratch).ok()?
        }
    };
    if parent_not_an_id(&f).is_some() || message_not_usable(&f, body).is_some() {
        return None;
    }
    rstr(f.uuid).map(Cow::into_owned)
}

impl<'a> Fields<'a> {
    /// The fields of one line read by [`crate::formats::json_scan`], or
    /// `None` when it gives the line up (not JSON, a repeated key, an
    /// escaped key, a `message` that is neither an object nor a plain value,
    /// bytes that are not UTF-8, a number that may be out of range, deep
    /// nesting): the same fields [`Fields::read`] gives, and a line the
    /// prescan checks ([`crate::formats::Prescan`]) pass.
    pub(crate) fn scan(body: &'a [u8]) -> Option<Fields<'a>> {
        let text = crate::formats::utf8(body)?;
        let mut f = Fields::default();
        let mut seen = 0u32;
        let mut s = Scan::new(text);
        s.object(&mut |key, s| {
            let (bit, slot) = match key {
                "uuid" => (0, &mut f.uuid),
                "parentUuid" => (1, &mut f.parent),
                "logicalParentUuid" => (2, &mut f.logical_parent),
                "type" => (3, &mut f.ty),
                "subtype" => (4, &mut f.subtype),
                "isSidechain" => (5, &mut f.sidechain),
                "isMeta" => (6, &mut f.meta),
                "isCompactSummary" => (7, &mut f.compact_summary),
                "isApiErrorMessage" => (8, &mut f.api_error),
                "timestamp" => (9, &mut f.timestamp),
                "requestId" => (10, &mut f.request_id),
                "error" => (11, &mut f.error),
                "apiErrorStatus" => (12, &mut f.api_error_status),
                "leafUuid" => (13, &mut f.leaf),
                "customTitle" => (14, &mut f.custom_title),
                "aiTitle" => (15, &mut f.ai_title),
                "title" => (16, &mut f.title),
                "summary" => (17, &mut f.summary),
                "toolUseResult" => (18, &mut f.tool_use_result),
                "compactMetadata" => (19, &mut f.compact_metadata),
                "attachment" => (20, &mut f.attachment),
                "cwd" => (21, &mut f.cwd),
                "message" => {
                    take(&mut seen, 22)?;
                    f.message = Lenient(message_scan(s)?);
                    return Some(());
                }
                _ => return s.value().map(drop),
            };
            read_raw(s, &mut seen, bit, slot)
        })?;
        s.end()?;
        Some(f)
    }

    /// The fields of one line. A line with repeated keys (which the tree
    /// reader took the last of) is read through a tree, then again.
    pub(crate) fn read(
        body: &'a [u8],
        scratch: &'a mut Option<String>,
    ) -> serde_json::Result<Fields<'a>> {
        match crate::formats::from_line::<Fields<'a>>(body) {
            Ok(f) => Ok(f),
            Err(e) => {
                // Bytes that are not UTF-8 are read as U+FFFD, as Claude
                // Code (Node.js) reads its transcripts: such a line is a
                // message to the agent, and reading it as unreadable made
                // its children dangling and `repair` re-parent them around
                // it (review of stop 41).
                if std::str::from_utf8(body).is_err() {
                    let text = String::from_utf8_lossy(body).into_owned();
                    if serde_json::from_str::<Fields<'_>>(&text).is_ok() {
                        *scratch = Some(text);
                    } else {
                        let v: Value = serde_json::from_str(&text).map_err(|_| e)?;
                        *scratch = Some(v.to_string());
                    }
                    return serde_json::from_str(scratch.as_deref().unwrap_or("{}"));
                }
                let v: Value = serde_json::from_slice(body).map_err(|_| e)?;
                *scratch = Some(v.to_string());
                serde_json::from_str(scratch.as_deref().unwrap_or("{}"))
            }
        }
    }

    pub(crate) fn str(&self, which: &str) -> Option<Cow<'a, str>> {
        rstr(match which {
            "type" => self.ty,
            "leafUuid" => self.leaf,
            "customTitle" => self.custom_title,
            "aiTitle" => self.ai_title,
            "title" => self.title,
            "summary" => self.summary,
            "uuid" => self.uuid,
            _ => None,
        })
    }
}

/// Marks field `bit` of a [`Fields::scan`] as read; `None` when it was
/// already (a repeated key, which serde refuses and the tree reader takes
/// the last of).
fn take(seen: &mut u32, bit: u32) -> Option<()> {
    let was = *seen;
    *seen |= 1 << bit;
    (was & (1 << bit) == 0).then_some(())
}

/// Reads the value at the cursor into `slot`, field `bit` of `seen`
/// ([`take`]): `None` when the field was read already or the value is not
/// JSON.
fn read_raw<'a>(s: &mut Scan<'a>, seen: &mut u32, bit: u32, slot: &mut Raw<'a>) -> Option<()> {
    take(seen, bit)?;
    *slot = not_null(s.value()?);
    Some(())
}

/// A raw field as serde reads an `Option` of it: `null` is absent.
fn not_null(v: Json<'_>) -> Raw<'_> {
    (v.get() != "null").then_some(v)
}

/// `message` read by [`Fields::scan`] as [`Lenient`] reads it: an object's
/// fields, or none for any other value; `None` (give the line up) for a
/// repeated or escaped key or a string with an escape (which the lenient
/// read decodes, and may refuse).
fn message_scan<'a>(s: &mut Scan<'a>) -> Option<Option<MessageFields<'a>>> {
    if s.peek()? != b'{' {
        let v = s.value()?;
        return (!(v.get().starts_with('"') && v.get().contains('\\'))).then_some(None);
    }
    let mut m = MessageFields::default();
    let mut seen = 0u32;
    s.object(&mut |key, s| {
        let (bit, slot) = match key {
            "id" => (0, &mut m.id),
            "model" => (1, &mut m.model),
            "content" if s.peek()? == b'[' => {
                take(&mut seen, 2)?;
                let mut blocks = Vec::new();
                let mut exact = true;
                let (raw, ()) = s.spanned(|s| {
                    s.array(&mut |s| {
                        let (text, (b, ok)) = s.spanned(block_at)?;
                        exact &= ok;
                        blocks.push((text.get(), b));
                        Some(())
                    })
                })?;
                m.content = Some(raw);
                m.blocks = exact.then_some(blocks);
                return Some(());
            }
            "content" => (2, &mut m.content),
            "usage" => (3, &mut m.usage),
            "stop_reason" => (4, &mut m.stop_reason),
            _ => return s.value().map(drop),
        };
        read_raw(s, &mut seen, bit, slot)
    })?;
    Some(Some(m))
}

/// Text of a `tool_result.content` (a string, or the `text` blocks of an array).
fn result_text_raw(content: Raw<'_>) -> String {
    match content {
        Some(r) if r.get().starts_with('"') => {
            rstr(Some(r)).map(Cow::into_owned).unwrap_or_default()
        }
        Some(r) if r.get().starts_with('[') => {
            let mut out: Vec<Cow<'_, str>> = Vec::new();
            for b in rarr(Some(r)) {
                let f: BlockFields<'_> = robj(Some(b));
                if rstr(f.ty).as_deref() == Some("text") {
                    if let Some(t) = rstr(f.text) {
                        out.push(t);
                    }
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}

/// Text of a `tool_result.content` value (tests hold values).
#[cfg(test)]
pub(super) fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter(|b| str_of(b, "type") == Some("text"))
            .filter_map(|b| str_of(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A base64 `image` / `document` block's media (its `source` field).
fn block_media(source: Raw<'_>) -> Option<Media> {
    let src: SourceFields<'_> = robj(source);
    if rstr(src.ty).as_deref() != Some("base64") {
        return None;
    }
    let data = rstr(src.data)?;
    Some(media_from_base64(
        rstr(src.media_type).as_deref().unwrap_or(""),
        &data,
        None,
    ))
}

/// Figures of a `tool_result.content` (a string, or the `text` blocks of an
/// array joined by line feeds, as [`result_text_raw`] reads it) and the
/// media of its blocks.
fn result_figures(content: Raw<'_>) -> (Figures, Vec<Media>) {
    let Some(r) = content else {
        return Default::default();
    };
    let t = r.get();
    if t.starts_with('"') {
        return (rfig(content).unwrap_or_default(), Vec::new());
    }
    let mut texts = Vec::new();
    let mut media = Vec::new();
    for b in crate::formats::array_items(t) {
        let b = MeasuredBlock::read(b);
        if rstr(b.ty).as_deref() == Some("text") {
            texts.extend(b.text.str());
        }
        media.extend(block_media(b.source));
    }
    let f = Figures::joined(texts);
    (f, media)
}

fn part(id: String, kind: PartKind, kind_name: &str) -> Part {
    Part::empty(id, kind, kind_name)
}

/// The id of a line's part: `{uuid}#{suffix}`, allocated at its length (a
/// `format!` whose text starts with an argument reserves about twice it: 72
/// bytes for a 38-byte id, once per part of a huge transcript).
pub(super) fn part_id(uuid: &str, suffix: &str) -> String {
    let mut id = String::with_capacity(uuid.len() + 1 + suffix.len());
    id.push_str(uuid);
    id.push('#');
    id.push_str(suffix);
    id
}

/// [`part_id`] of block `k` of a line's content.
pub(super) fn block_id(uuid: &str, k: usize) -> String {
    match "0123456789".get(k..k + 1) {
        Some(digit) => part_id(uuid, digit),
        None => part_id(uuid, &k.to_string()),
    }
}

/// The parts of a line's `message.content` (a string, or blocks).
fn content_parts(
    uuid: &str,
    content: Json<'_>,
    blocks: Option<&[(&str, MeasuredBlock<'_>)]>,
    tool_use_result_bytes: u64,
) -> Parts {
    let mut out = Parts::new();
    let text = content.get();
    if text.starts_with('"') {
        let f = rfig(Some(content)).unwrap_or_default();
        let mut p = part(part_id(uuid, "0"), PartKind::Text, "text");
        p.rewritten = f.marker;
        p.set_model_chars(f.chars);
        p.set_wire_bytes(f.bytes);
        p.set_payload_bytes(text.len() as u64);
        out.push(p);
        return out;
    }
    if !text.starts_with('[') {
        return out;
    }
    let mut tool_use_result = tool_use_result_bytes;
    let read;
    let items = match blocks {
        Some(b) => b,
        None => {
            read = crate::formats::array_items(text)
                .into_iter()
                .map(|raw| (raw, MeasuredBlock::read(raw)))
                .collect::<Vec<_>>();
            &read[..]
        }
    };
    for (k, &(raw, b)) in items.iter().enumerate() {
        let ty = rstr(b.ty);
        let kind_name = ty.as_deref().unwrap_or("");
        let id = block_id(uuid, k);
        let mut p = match kind_name {
            "text" => {
                let t = b.text.str().unwrap_or_default();
                let mut p = part(id, PartKind::Text, kind_name);
                p.rewritten = t.marker;
                p.set_model_chars(t.chars);
                p.set_wire_bytes(t.bytes);
                p
            }
            "thinking" | "redacted_thinking" => {
                let t = b.thinking.str().or(b.data.str()).unwrap_or_default();
                let mut p = part(id, PartKind::Reasoning, kind_name);
                p.set_model_chars(t.chars);
                p.set_wire_bytes(t.bytes);
                p
            }
            "tool_use" | "server_tool_use" => {
                let input = b.input.map_or("", |r| r.get());
                let mut p = part(id, PartKind::Tool, kind_name);
                p.set_model_chars(chars(input));
                p.set_wire_bytes(input.len() as u64);
                p.tool = Some(Box::new(ToolCall {
                    name: sym(rstr(b.name).as_deref().unwrap_or_default()),
                    call_id: rstr(b.id).as_deref().unwrap_or_default().into(),
                    // Resolved once every line is read (a result may come later).
                    status: ToolStatus::Pending,
                    output_chars: 0,
                    output_cleared: false,
                }));
                p
            }
            "tool_result" => {
                let (f, media) = result_figures(b.content);
                let mut p = part(id, PartKind::Tool, kind_name);
                p.rewritten = f.marker;
                p.set_model_chars(f.chars);
                p.set_wire_bytes(f.bytes);
                for m in media {
                    p.set_wire_bytes(p.wire_bytes() + m.encoded_bytes);
                    p.media_mut().push(m);
                }
                p.tool = Some(Box::new(ToolCall {
                    name: sym(""),
                    call_id: rstr(b.tool_use_id).as_deref().unwrap_or_default().into(),
                    status: if raw_true(b.is_error) {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Completed
                    },
                    output_chars: ToolCall::chars(f.chars),
                    output_cleared: false,
                }));
                // The structured copy of the output sits beside it in the line.
                p.set_payload_bytes(p.payload_bytes() + std::mem::take(&mut tool_use_result));
                p
            }
            "image" | "document" => {
                let mut p = part(id, PartKind::File, kind_name);
                if let Some(m) = block_media(b.source) {
                    p.set_wire_bytes(m.encoded_bytes);
                    p.media_mut().push(m);
                }
                p
            }
            other => {
                let mut p = part(id, PartKind::Other, other);
                p.set_model_chars(chars(raw));
                p.set_wire_bytes(raw.len() as u64);
                p
            }
        };
        p.set_payload_bytes(p.payload_bytes() + raw.len() as u64);
        out.push(p);
    }
    out
}

/// Builds the message of one transcript line `v` (a JSON value: an edited
/// line), stored at `line`; see [`parse_fields`].
pub(crate) fn parse_line(v: &Value, line: LineRef, sidechain_file: bool) -> Option<Message> {
    let text = v.to_string();
    let mut scratch = None;
    let f = Fields::read(text.as_bytes(), &mut scratch).ok()?;
    parse_fields(&f, text.as_bytes(), line, sidechain_file)
}

/// Builds the message of one transcript line (its `fields`, read from
/// `body`), stored at `line` (its `bytes` are the message's stored bytes);
/// `sidechain_file` is true for sub-agent files. `None` for a line without a
/// `uuid`.
pub(crate) fn parse_fields(
    v: &Fields<'_>,
    body: &[u8],
    line: LineRef,
    sidechain_file: bool,
) -> Option<Message> {
    let uuid = rstr(v.uuid)?.into_owned();
    let kind_c = rstr(v.ty);
    let kind = kind_c.as_deref().unwrap_or("");
    let subtype_c = rstr(v.subtype);
    let subtype = subtype_c.as_deref().unwrap_or("");
    let role = Role::named(kind);
    let msg: Option<&MessageFields<'_>> = v.message.0.as_ref();
    let model_c = msg.and_then(|m| rstr(m.model));
    let model_name = model_c.as_deref();
    let synthetic_reply = model_name == Some("<synthetic>");
    let sidechain = sidechain_file || raw_true(v.sidechain);
    let time_created = millis(rstr(v.timestamp).as_deref());
    let mut usage = Usage::default();
    let mut bad_counts = Vec::new();
    let mut response_id = None;
    let mut finish = None;
    let mut error = None;
    if role == Role::Assistant {
        if let Some(u) = msg
            .as_ref()
            .and_then(|m| m.usage)
            .filter(|u| u.get().starts_with('{'))
        {
            let u: UsageFields<'_> = robj(Some(u));
            bad_counts = [
                ("message.usage.input_tokens", u.input_tokens),
                ("message.usage.output_tokens", u.output_tokens),
                (
                    "message.usage.cache_read_input_tokens",
                    u.cache_read_input_tokens,
                ),
                (
                    "message.usage.cache_creation_input_tokens",
                    u.cache_creation_input_tokens,
                ),
            ]
            .into_iter()
            .filter_map(|(field, r)| BadCount::of_raw(field, r.map(Json::get), false))
            .collect();
            usage = Usage {
                input: raw_int::<u64>(u.input_tokens).unwrap_or(0),
                output: raw_int::<u64>(u.output_tokens).unwrap_or(0),
                reasoning: 0,
                cache_read: raw_int::<u64>(u.cache_read_input_tokens).unwrap_or(0),
                cache_write: raw_int::<u64>(u.cache_creation_input_tokens).unwrap_or(0),
                total: None,
            };
            usage.total = Some(
                usage
                    .input
                    .saturating_add(usage.cache_write)
                    .saturating_add(usage.cache_read),
            );
        }
        if let (Some(id), Some(req)) = (msg.and_then(|m| rstr(m.id)), rstr(v.request_id)) {
            if !id.is_empty() && !req.is_empty() {
                response_id = Some(crate::model::response_key(&id, &req));
            }
        }
        if raw_true(v.api_error) {
            let text = result_text_raw(msg.and_then(|m| m.content));
            error = Some(StoredError {
                name: rstr(v.error)
                    .map(Cow::into_owned)
                    .unwrap_or_else(|| "APIError".to_string()),
                status_code: raw_int::<u64>(v.api_error_status).map(|c| c as u16),
                message: text,
                response_body: None,
            });
        } else if !synthetic_reply {
            // Claude Code writes each content block once it is complete;
            // `stop_reason` is mostly null in transcripts.
            finish = Some(sym(msg
                .as_ref()
                .and_then(|m| rstr(m.stop_reason))
                .as_deref()
                .unwrap_or("unknown")));
        }
    }
    let tool_use_result_bytes = rlen(v.tool_use_result);
    let mut parts = match msg.and_then(|m| m.content) {
        Some(c) => content_parts(
            &uuid,
            c,
            msg.and_then(|m| m.blocks.as_deref()),
            tool_use_result_bytes,
        ),
        None => Parts::new(),
    };
    if kind == "attachment" {
        if let Some(a) = v.attachment {
            let s = a.get();
            let mut p = part(part_id(&uuid, "attachment"), PartKind::Other, "attachment");
            p.set_model_chars(chars(s));
            p.set_wire_bytes(s.len() as u64);
            p.set_payload_bytes(s.len() as u64);
            p.synthetic = true;
            parts.push(p);
        }
    }
    let boundary = kind == "system" && subtype == "compact_boundary";
    if boundary {
        let meta: CompactFields<'_> = robj(v.compact_metadata);
        let mut p = part(
            part_id(&uuid, "compactMetadata"),
            PartKind::Compaction,
            "compact_boundary",
        );
        p.set_payload_bytes(v.compact_metadata.map_or(4, |r| r.get().len() as u64));
        p.set_compaction(Some(Box::new(CompactionMarker {
            auto: rstr(meta.trigger).as_deref() == Some("auto"),
            trigger_tokens: raw_int::<u64>(meta.pre_tokens),
            post_tokens: raw_int::<u64>(meta.post_tokens),
            // Resolved against the other lines by `view::resolve_markers`.
            ..Default::default()
        })));
        parts.push(p);
    }
    if synthetic_reply || raw_true(v.meta) {
        for p in parts.iter_mut() {
            p.synthetic = true;
        }
    }
    let parts_bytes: u64 = parts.iter().map(|p| p.payload_bytes()).sum();
    let parent_optional = sidechain
        || matches!(kind, "progress" | "attachment")
        || (kind == "system" && matches!(subtype, "compact_boundary" | "local_command"));
    Some(Message::from(crate::model::MessageFields {
        id: uuid.into(),
        role,
        parent_id: rstr(v.parent).map(Into::into),
        line: Some(line),
        sidechain,
        parent_optional,
        response_id,
        time_created,
        time_completed: (kind == "assistant").then_some(time_created).into(),
        summary: raw_true(v.compact_summary),
        finish,
        usage: usage.boxed(),
        model: model_name
            .filter(|m| !synthetic_reply && !m.is_empty())
            .map(|m| sym(&format!("anthropic/{m}"))),
        info_bytes: line.bytes.saturating_sub(parts_bytes),
        parts,
        rare: Rare {
            logical_parent_id: rstr(v.logical_parent).map(Cow::into_owned),
            error,
            // Only boundary lines keep their JSON (small, needed to resolve
            // the preserved segment); other lines are re-read by offset.
            raw: if boundary {
                serde_json::from_slice::<Value>(body).ok()
            } else {
                None
            },
            bad_counts,
        }
        .boxed(),
    }))
}

/// Titles, by preference: `custom-title`, `ai-title`, legacy `summary`.
#[derive(Default)]
struct Titles {
    custom: Option<String>,
    ai: Option<String>,
    summary: Option<String>,
}

/// What two copies of a uuid must share to repeat each other: the line's
/// JSON with the bookkeeping fields that differ between re-written copies
/// removed ([`fingerprint`]); `None` for a line that is not JSON (it
/// repeats nothing). The loader's `same_content` and the writer's
/// [`crate::edit::Change::DropCopies`] both compare copies by it.
pub(super) fn content_key(line: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(line.trim_ascii_end())
        .ok()
        .map(fingerprint_owned)
}

/// Content of a line with the bookkeeping fields that differ between
/// re-written copies removed (`slug`, `promptId`, `timestamp`).
pub(super) fn fingerprint(v: &Value) -> String {
    fingerprint_owned(v.clone())
}

/// [`fingerprint`] of a line's JSON the caller no longer needs (not copied).
fn fingerprint_owned(mut v: Value) -> String {
    if let Some(o) = v.as_object_mut() {
        for k in ["slug", "promptId", "timestamp"] {
            o.remove(k);
        }
    }
    v.to_string()
}

/// The id a torn last line gets in [`LoadProblem::id`] (and in the edit that drops it).
pub(super) fn problem_id(path: &Path, line: u64) -> String {
    format!("{}:{line}", file_name(path))
}

/// What one line of a transcript holds, read from the line alone (no
/// session state), so the lines of one block can be read on every core.
enum LineRead {
    /// Only whitespace.
    Blank,
    /// Not a JSON object the loader can use: the reader's message (empty
    /// when the line is JSON but not an object).
    Unreadable(String),
    /// A message line, with its `cwd` when it was asked for
    /// ([`read_line`]'s `want_cwd`) and the line has one.
    Message(Box<Message>, Option<Box<str>>),
    /// Any other line: what the session takes from it (main file only).
    Other(Meta),
    /// A line longer than [`crate::formats::max_line_bytes`], passed over.
    TooLong,
    /// A JSON object whose fields the loader cannot use: what is wrong.
    Bad(String),
}

/// What a line that is not a message gives the session.
enum Meta {
    None,
    /// `last-prompt`: the leaf the agent resumes from.
    Leaf(String),
    /// `custom-title` (the user's).
    CustomTitle(Option<String>),
    /// `ai-title` (the agent's).
    AiTitle(Option<String>),
    /// `summary` (older transcripts' title).
    Summary(Option<String>),
}

/// The first message of each id in one file, for duplicate ids: keyed by
/// the id's 64-bit hash and holding the message's index, so no copy of
/// every id is kept (at 1 GB, 453k ids: a map of 16-byte entries instead
/// of a copy of each id plus a line reference). An id whose hash an
/// earlier, different id holds goes to a map by id.
#[derive(Default)]
struct FirstIds<S> {
    by_hash: HashMap<u64, usize>,
    clashes: HashMap<String, usize>,
    hasher: S,
}

impl<S: std::hash::BuildHasher> FirstIds<S> {
    /// The index in `messages` of the first message with id `id`, or
    /// `None` when there is none yet; then the message about to be pushed
    /// (index `messages.len()`) is recorded as the first.
    fn first_or_insert(&mut self, messages: &[Message], id: &str) -> Option<usize> {
        let next = messages.len();
        match self.by_hash.entry(self.hasher.hash_one(id)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(next);
                None
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                let i = *o.get();
                if messages.get(i).is_some_and(|m| m.id == id) {
                    return Some(i);
                }
                match self.clashes.get(id) {
                    Some(&i) => Some(i),
                    None => {
                        self.clashes.insert(id.to_string(), next);
                        None
                    }
                }
            }
        }
    }
}

/// Why a message line (a string `uuid`) whose `parentUuid` is neither a
/// string nor null (5, {}, [..]) is not read as a message; `None` for any
/// other line. It read as a root with no word (review of stop 41); it is
/// now unreadable, named by line, as a line whose `uuid` is not a string
/// is ([`read_line`]; [`line_uuid`] agrees, so copies leave it as stored).
fn parent_not_an_id(v: &Fields<'_>) -> Option<String> {
    rstr(v.uuid)?;
    let p = v.parent?.get();
    if p.starts_with('"') || p == "null" {
        return None;
    }
    let found = serde_json::from_str::<Value>(p).map_or_else(
        |_| p.chars().take(40).collect(),
        |v| crate::formats::json_found(&v),
    );
    Some(format!(
        "`parentUuid` is {found}, expected a string or null (the parent message's id): the line is not read as a message"
    ))
}

/// Why a `user` or `assistant` message line (a string `uuid`) whose
/// `message` is not an object ("x", 5, null, [..]), or whose
/// `message.content` is neither a string nor an array of blocks (7, {},
/// null), is not read as a message; `None` for any other line. Such a line
/// read as a message with no content, with no word; Claude Code reads
/// `message.content` of such a line to send it to the model (and cannot),
/// so it is now unreadable, named by line and field, as a `parentUuid`
/// that is not an id is ([`parent_not_an_id`]; [`line_uuid`] agrees, so
/// copies keep the line as stored). `body` is the line `v` was read from.
fn message_not_usable(v: &Fields<'_>, body: &[u8]) -> Option<String> {
    rstr(v.uuid)?;
    if !matches!(rstr(v.ty).as_deref(), Some("user" | "assistant")) {
        return None;
    }
    let found = |r: Json<'_>| {
        let t = r.get();
        serde_json::from_str::<Value>(t).map_or_else(
            |_| t.chars().take(40).collect(),
            |v| match v {
                Value::String(_) => "a string".to_string(),
                v => crate::formats::json_found(&v),
            },
        )
    };
    match v.message.0.as_ref() {
        Some(m) => {
            let c = m.content?;
            if c.get().starts_with('"') || c.get().starts_with('[') {
                return None;
            }
            Some(format!(
                "`message.content`: expected a string or an array of content blocks, found {}: the line is not read as a message",
                found(c)
            ))
        }
        None => {
            // Absent, or not an object (the lenient read gives none for
            // both): read the field again, a rare case.
            #[derive(Deserialize)]
            struct Only<'a> {
                #[serde(borrow, default)]
                message: Raw<'a>,
            }
            let shown = match crate::formats::from_line::<Only<'_>>(body) {
                Ok(only) => found(only.message?),
                // Repeated keys (the last is read) or bytes that are not
                // UTF-8 (read as U+FFFD), as [`Fields::read`] reads them.
                Err(_) => {
                    let mut t: Value = serde_json::from_str(&String::from_utf8_lossy(body)).ok()?;
                    let m = t.get_mut("message")?.take();
                    match m {
                        Value::String(_) => "a string".to_string(),
                        m => crate::formats::json_found(&m),
                    }
                }
            };
            Some(format!(
                "`message`: expected a JSON object, found {shown}: the line is not read as a message"
            ))
        }
    }
}

/// How Claude Code reads a transcript line, for a line it cannot read
/// either ([`crate::formats::line_json_error`]).
const CLAUDE_READS: &str = "Claude Code (JSON.parse of each line)";

/// Reads one line (`buf`, its newline included) of file `fi` at `line`.
fn read_line(buf: &[u8], line: LineRef, fi: usize, want_cwd: bool) -> LineRead {
    let body = buf.trim_ascii_end();
    if body.is_empty() {
        return LineRead::Blank;
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let mut scratch = None;
    // Most lines: one validating scan that also answers the prescan checks.
    let fast = (first == Some(b'{')).then(|| Fields::scan(body)).flatten();
    let scan = (first == Some(b'{') && fast.is_none()).then(|| prescan(body));
    let parsed = if let Some(f) = fast {
        Ok(f)
    } else if let Some(scan) = scan {
        if scan.too_deep(body) {
            Err(format!(
                "nesting deeper than {MAX_DEPTH} levels (the JSON reader's limit: the line could not be edited)"
            ))
        } else if scan.number_out_of_range(body) {
            Err("a number out of range (beyond what a 64-bit float holds: the line could not be edited)".into())
        } else {
            Fields::read(body, &mut scratch)
                .map_err(|e| crate::formats::line_json_error(&e, body, line.number(), CLAUDE_READS))
        }
    } else {
        // Not an object: say whether it is JSON at all.
        Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                Ok(_) => String::new(),
                Err(e) => crate::formats::line_json_error(&e, body, line.number(), CLAUDE_READS),
            },
        )
    };
    let v = match parsed {
        Ok(v) => v,
        Err(e) => return LineRead::Unreadable(e),
    };
    if let Some(e) = parent_not_an_id(&v) {
        return LineRead::Bad(e);
    }
    if let Some(e) = message_not_usable(&v, body) {
        return LineRead::Bad(e);
    }
    if let Some(m) = parse_fields(&v, body, line, fi > 0) {
        let cwd = want_cwd
            .then(|| rstr(v.cwd))
            .flatten()
            .filter(|c| !c.is_empty())
            .map(|c| c.into());
        return LineRead::Message(Box::new(m), cwd);
    }
    // A `uuid` that is not a string: the line was taken for a line of
    // another kind and left out in silence (review of stop 41). A `null`
    // one is a line without a uuid, as Claude Code writes some.
    if let Some(u) = v.uuid.filter(|_| rstr(v.uuid).is_none()) {
        let shown: String = u.get().chars().take(40).collect();
        return LineRead::Bad(format!(
            "`uuid` is {shown}, expected a string (the message id): the line is not read as a message"
        ));
    }
    if fi > 0 {
        return LineRead::Other(Meta::None);
    }
    let owned = |c: Option<Cow<'_, str>>| c.map(Cow::into_owned);
    LineRead::Other(match v.str("type").as_deref() {
        Some("last-prompt") => v
            .str("leafUuid")
            .map_or(Meta::None, |l| Meta::Leaf(l.into_owned())),
        Some("custom-title") => {
            Meta::CustomTitle(owned(v.str("customTitle").or_else(|| v.str("title"))))
        }
        Some("ai-title") => Meta::AiTitle(owned(v.str("aiTitle").or_else(|| v.str("title")))),
        Some("summary") => Meta::Summary(owned(v.str("summary"))),
        _ => Meta::None,
    })
}

/// The lines of one block read ([`read_line`]).
type Block = crate::formats::ReadBlock<LineRead>;

/// Streams one file into `s` up to its size when opened (the snapshot's
/// length, returned). `fi` is the file's index in `s.files`. Two stages
/// overlap: while the lines of one block are taken into the session in
/// file order (what depends on earlier lines: duplicate ids, load
/// problems, titles), the next block is read and its lines parsed on every
/// core of the current thread pool ([`crate::formats::read_block`]), so the
/// session is the same for any number of threads.
fn read_file(s: &mut Session, fi: usize, path: &Path, titles: &mut Titles) -> Result<u64> {
    let (f, file_len) = crate::fsx::open_regular_sized(path)
        .with_context(|| format!("{}: cannot open", path.display()))?;
    let lines = crate::formats::estimate_lines(&f, file_len)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    // An estimate, possibly far too high (a file of blank lines): a
    // reservation refused under an address-space limit is left out, never
    // an abort.
    let _ = s.messages.try_reserve(usize::try_from(lines).unwrap_or(0));
    // The lines of a repeated uuid are read again from this open file (not
    // by its path, which may name another file by then), by offset, while
    // the line reader reads it in order.
    let again = crate::formats::LineFiles::of_open(fi, path, &f);
    let mut r = crate::formats::LineReader::new((&f).take(file_len), file_len);
    let mut offset = 0u64;
    let mut n = 0u64;
    // uuid -> its first message in this file
    let mut seen = FirstIds::<rustc_hash::FxBuildHasher>::default();
    let cannot_read = |n: u64| format!("{}: cannot read after line {n}", path.display());
    // The session's project folder: the `cwd` of the main file's first
    // message line that has one. Lines are parsed a block ahead of being
    // taken, so the lines of at most one block after it is found still
    // copy theirs out.
    let cwd_found = std::sync::atomic::AtomicBool::new(fi > 0 || s.project_dir.is_some());
    let want_cwd = || !cwd_found.load(std::sync::atomic::Ordering::Relaxed);
    let read = |line: LineRef, l: &[u8]| read_line(l, line, fi, want_cwd());
    let too_long = |_| LineRead::TooLong;
    let mut pending = crate::formats::read_block(&mut r, fi, &mut n, &mut offset, read, too_long)
        .with_context(|| cannot_read(0))?;
    while let Some(block) = pending {
        let before = n;
        let (next, ()) = rayon::join(
            || crate::formats::read_block(&mut r, fi, &mut n, &mut offset, read, too_long),
            || take_block(s, block, path, &again, &mut seen, titles, &cwd_found),
        );
        pending = next.with_context(|| cannot_read(before))?;
    }
    Ok(file_len)
}

/// Takes the lines of one block read ([`crate::formats::read_block`]) into
/// `s`, in file order.
fn take_block(
    s: &mut Session,
    block: Block,
    path: &Path,
    again: &crate::formats::LineFiles<'_>,
    seen: &mut FirstIds<rustc_hash::FxBuildHasher>,
    titles: &mut Titles,
    cwd_found: &std::sync::atomic::AtomicBool,
) {
    for (line, complete, read) in block {
        let (len, n) = (line.bytes, line.number());
        match read {
            LineRead::Blank => s.other_bytes += len,
            LineRead::TooLong | LineRead::Bad(_) => {
                s.other_bytes += len;
                s.problems.push(LoadProblem {
                    location: format!("{}:line {n}", path.display()),
                    id: Some(problem_id(path, n)),
                    error: match &read {
                        LineRead::Bad(e) => e.clone(),
                        _ => crate::formats::overlong_line_error(len),
                    },
                    // A whole JSON line without its last line feed is not
                    // torn; a long line without one is.
                    kind: if complete || matches!(read, LineRead::Bad(_)) {
                        ProblemKind::Unreadable
                    } else {
                        ProblemKind::TornTail
                    },
                    file: Some(line.file_index()),
                    line: Some(n),
                    row: None,
                });
            }
            LineRead::Unreadable(e) => {
                s.other_bytes += len;
                let torn = !complete && !e.is_empty();
                s.problems.push(LoadProblem {
                    location: format!("{}:line {n}", path.display()),
                    id: Some(problem_id(path, n)),
                    error: if e.is_empty() {
                        "expected a JSON object".into()
                    } else if torn {
                        format!("the last line ({len} bytes) has no newline and is not complete JSON ({e}): the agent stopped while writing it")
                    } else {
                        format!("invalid JSON: {e}")
                    },
                    kind: if torn {
                        ProblemKind::TornTail
                    } else {
                        ProblemKind::Unreadable
                    },
                    file: Some(line.file_index()),
                    line: Some(n),
                    row: None,
                });
            }
            LineRead::Message(m, cwd) => {
                if let Some(c) = cwd.filter(|_| s.project_dir.is_none()) {
                    s.project_dir = Some(PathBuf::from(String::from(c)));
                    cwd_found.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let first = seen
                    .first_or_insert(&s.messages, &m.id)
                    .and_then(|i| s.messages.get(i))
                    .and_then(|f| f.line());
                if let Some(first) = first {
                    // Both lines are read again (a repeated id is rare):
                    // the block's buffer is not kept.
                    let key = |l: LineRef| again.read(l).ok().and_then(|b| content_key(&b));
                    let same = key(first).is_some_and(|f| Some(f) == key(line));
                    s.duplicate_ids.push(DuplicateId {
                        id: m.id.to_string(),
                        place: format!(
                            "{} line {n}, first at line {}",
                            file_name(path),
                            first.line
                        ),
                        lines: Some((n, u64::from(first.line.get()))),
                        same_content: same,
                    });
                }
                s.messages.push(*m);
            }
            LineRead::Other(meta) => {
                s.other_bytes += len;
                match meta {
                    Meta::None => {}
                    Meta::Leaf(l) => s.leaf_id = Some(l),
                    Meta::CustomTitle(t) => titles.custom = t.or(titles.custom.take()),
                    Meta::AiTitle(t) => titles.ai = t.or(titles.ai.take()),
                    Meta::Summary(t) => {
                        if titles.summary.is_none() {
                            titles.summary = t;
                        }
                    }
                }
            }
        }
    }
}

/// Loads session `id` from `files` (main file first, then sub-agent files);
/// returns it with the snapshot length of each file (bytes read).
pub fn load(id: &str, files: &[PathBuf]) -> Result<(Session, Vec<u64>)> {
    let main = files.first().context("no file")?;
    let mut s = Session::new(Agent::ClaudeCode, id, None, main.clone());
    s.parent_links = ParentLinks::Chain;
    s.files = files.to_vec();
    let mut titles = Titles::default();
    let mut lens = Vec::with_capacity(files.len());
    for (fi, f) in files.iter().enumerate() {
        let len = read_file(&mut s, fi, f, &mut titles)?;
        lens.push(crate::formats::settle_growing_tail(&mut s, f, fi, len));
    }
    s.title = titles.custom.or(titles.ai).or(titles.summary);
    finish(&mut s);
    Ok((s, lens))
}

/// What a tool part takes from its partner ([`tool_links`]).
enum Took {
    /// A result's name: its call's (shared, not copied).
    Name(Sym),
    /// A call's status: its result's.
    Status(ToolStatus),
}

/// For each tool part, in part order: a result takes its call's name and a
/// call its result's status (the last of a repeated call id; no result:
/// pending). The maps borrow the call ids.
fn tool_links(s: &Session) -> Vec<Took> {
    let tools = || {
        s.messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| Some((&*p.kind_name == "tool_result", p.tool.as_deref()?)))
    };
    let mut names: HashMap<&str, &Sym> = HashMap::default();
    let mut results: HashMap<&str, &ToolStatus> = HashMap::default();
    for (is_result, t) in tools() {
        if is_result {
            results.insert(&t.call_id, &t.status);
        } else {
            names.insert(&t.call_id, &t.name);
        }
    }
    tools()
        .map(|(is_result, t)| match is_result {
            true => Took::Name(
                names
                    .get(&*t.call_id)
                    .map_or_else(|| sym(""), |&n| n.clone()),
            ),
            false => Took::Status(
                results
                    .get(&*t.call_id)
                    .map_or(ToolStatus::Pending, |&r| r.clone()),
            ),
        })
        .collect()
}

/// Everything that depends on all lines at once; run after loading and
/// after edits: tool call status, first lines of files (a resumed session
/// names its parent in the previous session's file), compaction markers,
/// the visible view, notes.
pub(super) fn finish(s: &mut Session) {
    // The tool links and the view read different fields of the session:
    // both are found at once (on two cores when the pool has them), then
    // set.
    let (took, view) = rayon::join(|| tool_links(s), || view::resolve(s));
    for (t, took) in s
        .messages
        .iter_mut()
        .flat_map(|m| &mut m.parts)
        .filter_map(|p| p.tool.as_deref_mut())
        .zip(took)
    {
        match took {
            Took::Name(name) => t.name = name,
            Took::Status(status) => t.status = status,
        }
    }
    let mut first_seen: HashSet<usize> = HashSet::default();
    for m in &mut s.messages {
        if let Some(l) = m.line() {
            if first_seen.insert(l.file_index()) {
                m.set_parent_optional(true);
            }
        }
    }
    view.apply(s);
    s.notes.clear();
    let boundaries = s.compactions();
    if boundaries > 0 {
        let compact_agents = s
            .files
            .iter()
            .skip(1)
            .filter(|f| file_name(f).starts_with("agent-acompact"))
            .count();
        let text = if compact_agents > 0 {
            format!("{boundaries} compaction(s): the usage of Claude Code's summarization calls is counted from {compact_agents} agent-acompact-* sub-agent file(s)")
        } else {
            format!("{boundaries} compaction(s): Claude Code stores no usage for its summarization calls, so tokens_total leaves them out")
        };
        s.note(
            text,
            [
                ("compactions", boundaries as u64),
                ("summarization_agent_files", compact_agents as u64),
            ],
        );
    }
}

#[cfg(test)]
mod one_pass_tests {
    use super::*;

    /// A block's fields as read: raw ones, then the measured texts.
    fn block_key<'a>(b: &MeasuredBlock<'a>) -> (Vec<Option<&'a str>>, [Measured; 3]) {
        let raw = [
            b.ty,
            b.name,
            b.id,
            b.input,
            b.tool_use_id,
            b.is_error,
            b.content,
            b.source,
        ];
        (
            raw.into_iter().map(|r| r.map(Json::get)).collect(),
            [b.text, b.thinking, b.data],
        )
    }

    /// Every field of a line as read, raw, in one list.
    fn field_texts<'a>(f: &Fields<'a>) -> Vec<Option<&'a str>> {
        let m = f.message.0.as_ref();
        let mut v: Vec<Raw<'a>> = vec![
            f.uuid,
            f.parent,
            f.logical_parent,
            f.ty,
            f.subtype,
            f.sidechain,
            f.meta,
            f.compact_summary,
            f.api_error,
            f.timestamp,
            f.request_id,
            f.error,
            f.api_error_status,
            f.leaf,
            f.custom_title,
            f.ai_title,
            f.title,
            f.summary,
            f.tool_use_result,
            f.compact_metadata,
            f.attachment,
            f.cwd,
        ];
        v.extend([
            m.and_then(|m| m.id),
            m.and_then(|m| m.model),
            m.and_then(|m| m.content),
            m.and_then(|m| m.usage),
            m.and_then(|m| m.stop_reason),
        ]);
        let mut out: Vec<Option<&str>> = v.into_iter().map(|r| r.map(Json::get)).collect();
        out.push(m.map(|_| "message is an object"));
        out
    }

    /// [`Fields::scan`] reads every line it accepts into the fields serde
    /// reads, and accepts most lines of the real transcripts (so the loader
    /// takes the fast path, and these lines test it); the lines it gives
    /// up are read by serde as before.
    #[test]
    fn the_line_scan_reads_the_fields_serde_reads() {
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/claude-code"))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        {
            let bytes = std::fs::read(e.path()).unwrap();
            lines.extend(
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
        let real = lines.len();
        assert!(real >= 500, "{real} lines");
        for l in [
            &br#"{"uuid":"a","uuid":"b"}"#[..],
            br#"{"uuid":"a","message":{"content":"x","content":"y"}}"#,
            br#"{"uu\u0069d":"a"}"#,
            br#"{"uuid":"a","parentUuid":null,"message":"a \ud800 string"}"#,
            br#"{"uuid":"a","message":[1,2],"n":1e400}"#,
            br#"{"uuid":"a","message":7,"isMeta":true}"#,
            br#"{"uuid":"a","message":null}"#,
            b"{\"uuid\":\"a\",\"bad\":\"\xff\"}",
            br#"{"uuid":"a","toolUseResult":{"x":[1,{"y":"\"q\" \\ \n"}]}} "#,
            br#"{"uuid":"a",}"#,
            br#"{"uuid":"a","message":{"content":[{"type":"text","text":"ansi \u001b[0m"},"s",3]}}"#,
            br#"{"uuid":"a","message":{"content":[{"type":"text","text":"a","text":"b"}]}}"#,
            br#"{"uuid":"a","message":{"content":[{"typ\u0065":"text","text":"a"}]}}"#,
            br#"{"uuid":"a","message":{"content":[{"type":"text","text":"\ud800"}]}}"#,
        ] {
            lines.push(l.to_vec());
        }
        let mut scanned = 0;
        let mut with_blocks = 0;
        for (n, l) in lines.iter().enumerate() {
            let serde = crate::formats::from_line::<Fields<'_>>(l);
            match Fields::scan(l) {
                Some(f) => {
                    scanned += usize::from(n < real);
                    let want = serde.unwrap_or_else(|e| {
                        panic!(
                            "line {n}: scanned, serde refuses ({e}): {}",
                            String::from_utf8_lossy(l)
                        )
                    });
                    assert_eq!(field_texts(&f), field_texts(&want), "line {n}");
                    // The blocks read in the same scan are those read
                    // from `content` afterwards, text by text.
                    if let Some(blocks) = f.message.0.as_ref().and_then(|m| m.blocks.as_ref()) {
                        let content = f.message.0.as_ref().and_then(|m| m.content).unwrap();
                        let want: Vec<_> = crate::formats::array_items(content.get())
                            .into_iter()
                            .map(|raw| (raw, block_key(&MeasuredBlock::read(raw))))
                            .collect();
                        let got: Vec<_> =
                            blocks.iter().map(|(raw, b)| (*raw, block_key(b))).collect();
                        assert_eq!(got, want, "line {n}");
                        with_blocks += 1;
                    }
                    let scan = prescan(l);
                    assert!(
                        !scan.too_deep(l) && !scan.number_out_of_range(l),
                        "line {n}"
                    );
                }
                // serde also reads a struct from an array (`[1]`), which
                // the loader never asks it to: it reads objects only.
                None => assert!(
                    n >= real || serde.is_err() || !l.starts_with(b"{"),
                    "line {n}: serde reads a real line the scan gives up: {}",
                    String::from_utf8_lossy(l)
                ),
            }
        }
        assert!(
            scanned * 100 >= real * 95,
            "{scanned} of {real} lines scanned"
        );
        assert!(
            with_blocks >= 150,
            "{with_blocks} of {real} lines with their blocks"
        );
        assert_eq!(
            lines[real..]
                .iter()
                .map(|l| Fields::scan(l).is_some())
                .collect::<Vec<_>>(),
            [
                false, false, false, false, false, true, true, false, true, false, true, true,
                true, true
            ]
        );
        // Blocks read exactly in the line's scan, or left to serde.
        let blocks_of = |l: &[u8]| {
            Fields::scan(l)
                .and_then(|f| f.message.0)
                .and_then(|m| m.blocks)
                .map(|b| b.len())
        };
        let n = lines.len();
        assert_eq!(
            lines[n - 4..]
                .iter()
                .map(|l| blocks_of(l))
                .collect::<Vec<_>>(),
            [Some(3), None, None, None]
        );
    }

    /// The figures of a block as the field reader reads them: the block's
    /// fields captured raw, each text decoded into its own string.
    fn reference(raw: &str) -> (Option<String>, [Option<Figures>; 3], Figures, usize) {
        let b: BlockFields<'_> = if raw.starts_with('{') {
            serde_json::from_str(raw).unwrap_or_default()
        } else {
            BlockFields::default()
        };
        let fig = |r: Raw<'_>| rstr(r).map(|t| Figures::of(&t));
        let result = Figures::of(&result_text_raw(b.content));
        let media = rarr(b.content)
            .into_iter()
            .filter(|i| block_media(robj::<BlockFields<'_>>(Some(*i)).source).is_some())
            .count();
        (
            rstr(b.ty).map(Cow::into_owned),
            [fig(b.text), fig(b.thinking), fig(b.data)],
            result,
            media,
        )
    }

    fn one_pass(raw: &str) -> (Option<String>, [Option<Figures>; 3], Figures, usize) {
        let b = MeasuredBlock::read(raw);
        let (result, media) = result_figures(b.content);
        (
            rstr(b.ty).map(Cow::into_owned),
            [b.text.str(), b.thinking.str(), b.data.str()],
            result,
            media.len(),
        )
    }

    #[test]
    fn one_pass_block_figures_match_the_field_reader() {
        let mut blocks: Vec<String> = Vec::new();
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/claude-code"))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        {
            let bytes = std::fs::read(e.path()).unwrap();
            for line in bytes.split(|&b| b == b'\n') {
                let mut scratch = None;
                let Ok(f) = Fields::read(line, &mut scratch) else {
                    continue;
                };
                if let Some(c) = f.message.0.as_ref().and_then(|m| m.content) {
                    blocks.extend(
                        crate::formats::array_items(c.get())
                            .into_iter()
                            .map(str::to_string),
                    );
                }
            }
        }
        assert!(blocks.len() >= 200, "{} blocks read", blocks.len());
        let fixtures = blocks.len();
        // Shapes the one-pass read refuses or reads differently.
        blocks.extend(
            [
                r#"{"type":"text","text":"a \ud800 lone surrogate"}"#,
                r#"{"type":"text","text":"one","text":"two"}"#,
                r#"{"type":"text","text":["not","a","string"]}"#,
                r#"{"type":"thinking","thinking":{"x":1},"data":"redacted \n text"}"#,
                r#"{"type":"tool_result","content":"session-doctor compact: cut \u00e9"}"#,
                r#"{"type":"tool_result","content":[{"type":"text","text":"a"},{"type":"text","text":"b\nc"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}},7,"s"]}"#,
                r#"{"type":"tool_result","content":[{"type":"text","text":"\udc00"},{"type":"text","text":"ok"}]}"#,
                r#"["not","an","object"]"#,
                r#""text""#,
            ]
            .map(str::to_string),
        );
        let mut differing = 0;
        for b in &blocks {
            if reference(b) != one_pass(b) {
                differing += 1;
                eprintln!("differs: {b}\n  {:?}\n  {:?}", reference(b), one_pass(b));
            }
        }
        assert_eq!(
            differing,
            0,
            "of {} blocks ({fixtures} from fixtures)",
            blocks.len()
        );
    }
}

#[cfg(test)]
mod first_ids_tests {
    use super::*;

    /// Every id hashes to the same value: each new id clashes.
    #[derive(Default)]
    struct OneHash;
    impl std::hash::BuildHasher for OneHash {
        type Hasher = OneHasher;
        fn build_hasher(&self) -> OneHasher {
            OneHasher
        }
    }
    struct OneHasher;
    impl std::hash::Hasher for OneHasher {
        fn finish(&self) -> u64 {
            7
        }
        fn write(&mut self, _: &[u8]) {}
    }

    fn message(id: &str) -> Message {
        let line = format!(
            r#"{{"type":"user","uuid":"{id}","parentUuid":null,"sessionId":"s","message":{{"role":"user","content":"hi"}}}}"#
        );
        let at = LineRef {
            file: 0,
            line: std::num::NonZeroU32::MIN,
            offset: 0,
            bytes: line.len() as u64,
        };
        match read_line(line.as_bytes(), at, 0, false) {
            LineRead::Message(m, _) => *m,
            _ => panic!("not a message: {line}"),
        }
    }

    /// The first message of each id is found again by id, whether ids
    /// share a hash or not.
    fn first_ids_find_first_copies<S: std::hash::BuildHasher + Default>() {
        let mut seen = FirstIds::<S>::default();
        let mut messages = Vec::new();
        let mut found = Vec::new();
        for id in ["a", "b", "a", "c", "b", "b", "d"] {
            found.push(seen.first_or_insert(&messages, id));
            messages.push(message(id));
        }
        assert_eq!(found, [None, None, Some(0), None, Some(1), Some(1), None],);
    }

    #[test]
    fn first_ids_find_first_copies_with_distinct_hashes() {
        first_ids_find_first_copies::<rustc_hash::FxBuildHasher>();
    }

    #[test]
    fn first_ids_find_first_copies_when_every_hash_clashes() {
        first_ids_find_first_copies::<OneHash>();
    }
}
