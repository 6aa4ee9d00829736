//! Streaming a rollout into the model. One pass, line by line, bounded by the
//! longest line: a line's JSON is dropped once its message is built, and is
//! re-read by its byte offset when a copy must change it.
//!
//! Mapping (docs/formats/codex.md sections 2 to 5):
//! - `session_meta` (and the older envelope-less first line
//!   `{id, timestamp, instructions, git}`): the session's header, not a
//!   message (its bytes count in [`Session::other_bytes`]); never dropped.
//! - `response_item`: one message per line, id `L<line>`: `message` items with
//!   their role (`developer` and `system` kept verbatim; the user messages
//!   Codex writes itself, such as `<environment_context>`, get `user-context`),
//!   one part per content item (`L<line>#<k>`); model output items (`reasoning`, `function_call`,
//!   `custom_tool_call`, `local_shell_call`, `web_search_call`, ...) are
//!   assistant messages with one part; `*_output` items are `tool` messages.
//! - `compacted`: its `replacement_history` items become messages
//!   `L<line>.rh<k>` (flagged by their id), followed by the compaction marker
//!   message `L<line>` (role `compacted`, flagged summary: it holds
//!   `message`, the summary text). Without a `replacement_history` (older
//!   versions), the marker itself carries `message` as what Codex sends.
//! - every other line (`event_msg`, `turn_context`, `world_state`,
//!   `token_usage_record`, unknown types, older `record_type` lines) holds
//!   no message: it sends nothing to the model, and is kept as figures in
//!   [`Session::meta_lines`] (kind `event_msg/<type>` for events, else the
//!   line type), as are the header, blank and unreadable lines. Unknown
//!   types are kept and counted, never an error.
//! - `event_msg` `token_count`: a count whose cumulative `total_token_usage`
//!   changed reports one request; its `last_token_usage` goes to the newest
//!   model output item (or `compacted` line: a summarization request) since
//!   the previous request, else stays on the `token_count` line, which is
//!   then a message without parts (role `event_msg/token_count`). A count
//!   whose `last_token_usage` is all zero but `total_tokens` is Codex's
//!   estimate of the history (written around a compaction), whatever its
//!   total did: kept on its own line as such a usage record, never as
//!   context. Any other count whose total did not change is a repeat; a
//!   count that gives nothing to its line holds no message.

use super::ids;
pub use super::view::visible_view;
use crate::budget::Limits;
use crate::formats::measured::{
    map_len, raw_str, seq_len, written_len, written_scalars, CaptureIn, Captured, Json, Measured,
    Raw, Str, Texts,
};
use crate::measure::{has_compact_marker, parse_data_url};
use crate::model::*;
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Share of the model's context window Codex reports as `model_context_window`
/// (its effective window): the stub config's 20,000 is stored as 19,000
/// (the codex-gen fixtures; docs/formats/codex.md section 4), gpt-5-codex's 272,000-token
/// input as 258,400 (codex/localpush).
pub const EFFECTIVE_WINDOW_PERCENT: u64 = 95;

/// Prefix Codex puts before the summary in `compacted.message` and in the
/// summary user message of `replacement_history`.
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem";

/// Marker key on a content item that a note edit inserted into a message in
/// memory (never written to a copy): its part gets the id `<message>#note`.
pub const NOTE_MARKER: &str = "__session_doctor_note";

/// Role given to the user messages Codex writes itself (environment,
/// AGENTS.md, instructions): sent with role `user`, but no user turn; their
/// parts are synthetic.
pub const CONTEXT_ROLE: &str = "user-context";

/// Kind of a header line (`session_meta`, or the older envelope-less first
/// line) among the lines that hold no message ([`crate::model::MetaLines`]).
pub const HEADER_KIND: &str = "session_meta";
/// Kind of a line of whitespace only.
pub const BLANK_KIND: &str = "blank";
/// Kind of a line the loader could not read (a load problem names it).
pub const UNREADABLE_KIND: &str = "unreadable";

/// Text prefixes of the user messages Codex writes itself.
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
];

/// Model output items: assistant messages that may own a request's usage.
const OUTPUT_ITEMS: &[&str] = &[
    "reasoning",
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "image_generation_call",
    "tool_search_call",
    "mcp_tool_call",
];

/// What a line is.
pub enum Line<'a> {
    /// `session_meta` (or the older first line): the header.
    Meta(&'a Value),
    /// A `response_item` payload (or a bare item in the older format).
    Item(&'a Value),
    /// A `compacted` payload.
    Compacted(&'a Value),
    /// Anything else: the line type, the event type when there is one.
    Other { ty: String, sub: Option<String> },
}

fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// Classifies a parsed line. `first`: the file's first line (the older
/// format's header has no `type`).
pub fn classify(v: &Value, first: bool) -> Line<'_> {
    let ty = str_at(v, "type");
    if let (Some(ty), Some(payload)) = (ty, v.get("payload")) {
        return match ty {
            "session_meta" => Line::Meta(payload),
            "response_item" => Line::Item(payload),
            "compacted" => Line::Compacted(payload),
            _ => Line::Other {
                ty: ty.to_string(),
                sub: str_at(payload, "type").map(str::to_string),
            },
        };
    }
    if let Some(r) = str_at(v, "record_type") {
        return Line::Other {
            ty: "record_type".into(),
            sub: Some(r.to_string()),
        };
    }
    match ty {
        Some(_) => Line::Item(v),
        None if first && v.get("id").is_some() && v.get("timestamp").is_some() => Line::Meta(v),
        None => Line::Other {
            ty: "unknown".into(),
            sub: None,
        },
    }
}

/// Whether line `body` (no line ending) is a header the loader reads
/// (`session_meta`, or with `first` the older envelope-less first line):
/// [`Line::Meta`] of the line's tree, as [`pre_read`] gives it. A copy keeps
/// a header inside a run of dropped lines ([`crate::edit::Change::DropThrough`]).
/// Only a line that names `session_meta` (or holds a `\u` escape that
/// could spell it), or a first line, is parsed.
pub fn is_header_line(body: &[u8], first: bool) -> bool {
    let named = |k: &[u8]| memchr::memmem::find(body, k).is_some();
    if !first && !named(b"session_meta") && !named(b"\\u") {
        return false;
    }
    let dummy = LineRef {
        file: 0,
        line: std::num::NonZeroU32::MIN,
        offset: 0,
        bytes: body.len() as u64,
    };
    match pre_read(body, false, dummy) {
        Pre::Tree(v) => matches!(classify(&v, first), Line::Meta(_)),
        _ => false,
    }
}

/// True when the first line of a file has the shape of a Codex rollout line.
/// An envelope-less header (`{id, timestamp, ...}`) holding Claude Code's
/// `parentUuid` is a damaged Claude Code line, not a Codex header: a
/// compacted Claude Code copy whose cut left such a line first was read as
/// a Codex rollout (fuzz input whole_claude-18).
///
/// A `session_meta` envelope (without `parentUuid`) is one whatever its
/// payload holds: a rollout whose first line is a response item may hold a
/// damaged `session_meta` after it, and a compacted copy that cuts the
/// items before it starts with that line; the copy was not found as a
/// Codex rollout (fuzz input whole_codex-2).
///
/// So is a line of a `RolloutItem` type with no `payload` (and no
/// `parentUuid`), which the loader names as unreadable ([`shape_problem`]):
/// a compacted copy that cut the readable lines before such a line starts
/// with it, and was not found as a rollout (fuzz input whole_codex-3).
pub fn looks_like_codex(v: &Value) -> bool {
    if v.get("payload").is_none()
        && v.get("parentUuid").is_none()
        && str_at(v, "type").is_some_and(|t| ENVELOPE_TYPES.contains(&t))
    {
        return true;
    }
    match classify(v, true) {
        Line::Meta(p) => {
            let enveloped = str_at(v, "type") == Some("session_meta") && v.get("payload").is_some();
            (enveloped || p.get("id").is_some()) && v.get("parentUuid").is_none()
        }
        Line::Other { ty, .. } => {
            v.get("payload").is_some() && matches!(ty.as_str(), "event_msg" | "turn_context")
        }
        Line::Item(_) | Line::Compacted(_) => v.get("payload").is_some(),
    }
}

/// Bytes of `v` serialized as compact JSON (what Codex and the writer write).
pub fn json_len(v: &Value) -> u64 {
    written_len(v)
}

use crate::measure::char_count as chars;

/// Milliseconds since the epoch of an RFC 3339 timestamp.
pub fn time_ms(v: &Value) -> Option<i64> {
    time_ms_of(str_at(v, "timestamp")?)
}

/// Milliseconds since the epoch of an RFC 3339 timestamp text.
fn time_ms_of(t: &str) -> Option<i64> {
    let st = humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok()?;
    st.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as i64)
}

fn part(id: Id, _message_id: &str, kind: PartKind, kind_name: &str, bytes: u64) -> Part {
    let mut p = Part::empty(id, kind, kind_name);
    p.set_payload_bytes(bytes);
    p
}

fn message(id: &str, role: Role, line: LineRef, time: i64) -> Message {
    Message::from(MessageFields {
        line: Some(line),
        time_created: time,
        ..MessageFields::new(id, role)
    })
}

/// Text of an image content item's `image_url` (a string, or `{url}`).
fn image_url(c: &Value) -> &str {
    match c.get("image_url") {
        Some(Value::String(s)) => s,
        Some(o) => str_at(o, "url").unwrap_or(""),
        None => "",
    }
}

/// The part for one content item's tree (message content or tool output
/// content) that takes `bytes` on disk: [`item_part`] of what it holds.
fn content_part(c: &Value, id: Id, message_id: &str, bytes: u64) -> Part {
    let field = |k: &str| str_at(c, k).map(Cow::Borrowed);
    let item = ContentItem {
        len: bytes,
        ty: field("type"),
        text: field("text"),
        refusal: field("refusal"),
        url: Some(Cow::Borrowed(image_url(c))),
    };
    item_part(&item, id, message_id)
}

/// Whether a content item of type `ty` is text (a text part).
fn is_text_item(ty: &str) -> bool {
    matches!(
        ty,
        "input_text" | "output_text" | "text" | "summary_text" | "refusal"
    )
}

/// What a user message whose first text part starts with `first` is: a
/// summary Codex wrote after a compaction, or context Codex writes itself
/// (role [`CONTEXT_ROLE`], parts synthetic).
fn mark_user_message(m: &mut Message, first: &str) {
    let first = first.trim_start();
    if first.starts_with(SUMMARY_PREFIX) {
        m.set_summary(true);
    } else if CONTEXT_PREFIXES.iter().any(|p| first.starts_with(p)) {
        m.set_role(Role::Other(sym(CONTEXT_ROLE)));
        m.parts.iter_mut().for_each(|p| p.synthetic = true);
    }
}

/// The session title a user message with `text` gives (its first line, 80
/// characters at most), unless Codex wrote it (a summary or context).
fn title_of(text: &str) -> Option<String> {
    let t = text.trim_start();
    (!t.starts_with(SUMMARY_PREFIX) && !CONTEXT_PREFIXES.iter().any(|p| t.starts_with(p))).then(
        || {
            t.lines()
                .next()
                .unwrap_or("")
                .trim()
                .chars()
                .take(80)
                .collect()
        },
    )
}

/// Text chars and media of a tool output (`output` as a string, an array of
/// content items, or `{content}`), with its wire bytes.
fn output_facts(o: Option<&Value>) -> (u64, u64, Vec<Media>) {
    match o {
        Some(Value::String(s)) => (chars(s), s.len() as u64, Vec::new()),
        Some(Value::Array(items)) => {
            let (mut c, mut w, mut m) = (0, 0, Vec::new());
            for it in items {
                if let Some(t) = str_at(it, "text") {
                    c += chars(t);
                    w += t.len() as u64;
                } else {
                    let url = image_url(it);
                    w += url.len() as u64;
                    m.extend(parse_data_url(url, None));
                }
            }
            (c, w, m)
        }
        Some(Value::Object(_)) => output_facts(o.and_then(|v| v.get("content"))),
        _ => (0, 0, Vec::new()),
    }
}

fn texts(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| str_at(x, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// Builds the message of one response item. `total`: the bytes the item
/// takes on disk (the line, or its share of a `compacted` line).
pub fn item_message(item: &Value, id: &str, line: LineRef, time: i64, total: u64) -> Message {
    let ty = str_at(item, "type").unwrap_or("");
    let pid = |k: usize| ids::part(id, k);
    let mut m;
    match ty {
        "message" => {
            let role = match str_at(item, "role") {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some(r) => Role::named(r),
                None => Role::Other(sym("message")),
            };
            m = message(id, role, line, time);
            match item.get("content") {
                Some(Value::Array(content)) => {
                    let mut shift = 0;
                    for (k, c) in content.iter().enumerate() {
                        if c.get(NOTE_MARKER).is_some() {
                            let mut clean = c.clone();
                            if let Some(o) = clean.as_object_mut() {
                                o.remove(NOTE_MARKER);
                            }
                            let mut p =
                                content_part(&clean, ids::note_part(id), id, json_len(&clean));
                            p.synthetic = true;
                            m.parts.push(p);
                            shift += 1;
                            continue;
                        }
                        m.parts
                            .push(content_part(c, pid(k - shift), id, json_len(c)));
                    }
                }
                Some(Value::String(s)) => {
                    let mut p = part(pid(0), id, PartKind::Text, "text", s.len() as u64 + 2);
                    p.set_model_chars(chars(s));
                    p.set_wire_bytes(s.len() as u64);
                    m.parts.push(p);
                }
                _ => {}
            }
            let text = m
                .parts
                .iter()
                .find(|p| p.kind == PartKind::Text)
                .map(|p| p.id.clone());
            if m.role() == Role::User {
                if let Some(first) = text.and_then(|pid| {
                    let k = ids::parse_part(&pid)?.1?;
                    item.get("content")?.get(k)?.get("text")?.as_str()
                }) {
                    mark_user_message(&mut m, first);
                }
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            m = message(id, Role::Assistant, line, time);
            let name = str_at(item, "name").unwrap_or(if ty == "local_shell_call" {
                "local_shell"
            } else {
                ""
            });
            let input = match ty {
                "function_call" => str_at(item, "arguments").unwrap_or("").to_string(),
                "custom_tool_call" => str_at(item, "input").unwrap_or("").to_string(),
                _ => item.get("action").map(Value::to_string).unwrap_or_default(),
            };
            let mut p = part(pid(0), id, PartKind::Tool, ty, 0);
            p.set_model_chars(chars(name) + chars(&input));
            p.set_wire_bytes((name.len() + input.len()) as u64);
            p.tool = Some(Box::new(ToolCall {
                name: sym(name),
                call_id: str_at(item, "call_id")
                    .or_else(|| str_at(item, "id"))
                    .unwrap_or("")
                    .into(),
                status: ToolStatus::Pending,
                output_chars: 0,
                output_cleared: false,
            }));
            m.parts.push(p);
        }
        t if t.ends_with("_output") => {
            m = message(id, Role::Other(sym("tool")), line, time);
            let (c, w, media) = output_facts(item.get("output"));
            let mut p = part(pid(0), id, PartKind::Tool, ty, 0);
            p.rewritten = match item.get("output") {
                Some(Value::String(s)) => has_compact_marker(s),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|x| str_at(x, "text"))
                    .any(has_compact_marker),
                Some(o) => o
                    .get("content")
                    .and_then(Value::as_str)
                    .is_some_and(has_compact_marker),
                None => false,
            };
            p.set_model_chars(c);
            p.set_wire_bytes(w);
            p.set_media(media.into());
            p.tool = Some(Box::new(ToolCall {
                name: sym(""),
                call_id: str_at(item, "call_id").unwrap_or("").into(),
                status: ToolStatus::Completed,
                output_chars: ToolCall::chars(c),
                output_cleared: false,
            }));
            m.parts.push(p);
        }
        "reasoning" => {
            m = message(id, Role::Assistant, line, time);
            let t = [texts(item.get("summary")), texts(item.get("content"))].join("");
            let enc = str_at(item, "encrypted_content").map_or(0, str::len) as u64;
            let mut p = part(pid(0), id, PartKind::Reasoning, ty, 0);
            p.set_model_chars(chars(&t));
            p.set_wire_bytes(t.len() as u64 + enc);
            m.parts.push(p);
        }
        "compaction" | "compaction_summary" => {
            // The remote compaction's summary, encrypted: bytes on the wire,
            // tokens unknown (the next reported count covers them).
            m = message(id, Role::Assistant, line, time);
            m.set_summary(true);
            let mut p = part(pid(0), id, PartKind::Other, ty, 0);
            p.set_wire_bytes(str_at(item, "encrypted_content").map_or(0, str::len) as u64);
            m.parts.push(p);
        }
        "ghost_snapshot" => {
            // Codex's undo snapshot: stored, never sent.
            m = message(id, Role::Other(sym(ty)), line, time);
            m.parts.push(part(pid(0), id, PartKind::Other, ty, 0));
        }
        other => {
            let role = if OUTPUT_ITEMS.contains(&other) {
                Role::Assistant
            } else {
                Role::Other(sym(if other.is_empty() { "item" } else { other }))
            };
            m = message(id, role, line, time);
            // Sent back as it is stored: counted whole (an over-estimate).
            let n = json_len(item);
            let mut p = part(pid(0), id, PartKind::Other, other, 0);
            p.set_model_chars(n);
            p.set_wire_bytes(n);
            m.parts.push(p);
        }
    }
    finish_item(&mut m, time, total);
    m
}

/// What every item message ends with: its completion time, and its stored
/// bytes (`total`) shared between the message and its parts (a single part
/// without bytes of its own takes them all).
fn finish_item(m: &mut Message, time: i64, total: u64) {
    m.set_time_completed(Some(time).into());
    m.parts.shrink_to_fit();
    if m.parts.len() == 1 && m.parts[0].payload_bytes() == 0 {
        m.parts[0].set_payload_bytes(total);
    }
    let parts: u64 = m.parts.iter().map(|p| p.payload_bytes()).sum();
    m.set_info_bytes(total.saturating_sub(parts));
}

/// The messages of one parsed line, in stored order; `None` for the header.
/// Carries no cross-line state (usage, tool pairing, model): the loader adds it.
pub fn line_messages(v: &Value, first: bool, line: LineRef, time: i64) -> Option<Vec<Message>> {
    let id = ids::line(line.number());
    match classify(v, first) {
        Line::Meta(_) => None,
        Line::Item(item) => Some(vec![item_message(item, &id, line, time, line.bytes)]),
        Line::Compacted(p) => {
            let mut out = Vec::new();
            let mut rh_bytes = 0;
            let rh = p.get("replacement_history").and_then(Value::as_array);
            if let Some(rh) = rh {
                for (k, item) in rh.iter().enumerate() {
                    if item.is_null() {
                        continue; // dropped by an edit (in memory only)
                    }
                    let total = json_len(item) + 1;
                    rh_bytes += total;
                    out.push(item_message(item, &ids::rh(&id, k), line, time, total));
                }
            }
            let text = str_at(p, "message").unwrap_or("");
            let mut m = message(&id, Role::Other(sym("compacted")), line, time);
            m.set_summary(true);
            m.set_time_completed(Some(time).into());
            let mut c = part(
                ids::part(&id, 0),
                &id,
                PartKind::Compaction,
                "compacted",
                text.len() as u64 + 2,
            );
            if rh.is_none() {
                c.set_model_chars(chars(text));
                c.set_wire_bytes(text.len() as u64);
            }
            c.set_compaction(Some(Box::new(CompactionMarker {
                // Codex stores no manual/auto distinction: treated as automatic.
                auto: true,
                ..Default::default()
            })));
            m.set_info_bytes(
                line.bytes
                    .saturating_sub(rh_bytes)
                    .saturating_sub(c.payload_bytes()),
            );
            m.parts.push(c);
            out.push(m);
            Some(out)
        }
        Line::Other { ty, sub } => {
            // No part: these lines send nothing, and a rollout holds many of them.
            let role = match sub {
                Some(sub) if ty == "event_msg" => format!("{ty}/{sub}"),
                _ => ty,
            };
            let mut m = message(&id, Role::Other(sym(&role)), line, time);
            m.set_info_bytes(line.bytes);
            Some(vec![m])
        }
    }
}

/// One usage object (`{input_tokens, cached_input_tokens,
/// cache_write_input_tokens, output_tokens, reasoning_output_tokens,
/// total_tokens}`) in the model's terms. `cached_input_tokens` (and
/// `cache_write_input_tokens`, 0 in all data seen) are subsets of
/// `input_tokens`: `input` is the uncached rest, as ccusage reports it.
/// `reasoning_output_tokens` is a subset of `output`. `total` is the
/// request's `total_tokens` (input + output): the context count.
pub fn usage_of(u: &Value) -> Usage {
    counts_of(u).usage()
}

/// The counts of a usage tree `u`, with the ones that are not counts
/// ([`BadCount`], fields named as in a `token_count` event's
/// `last_token_usage`).
fn counts_of(u: &Value) -> Counts {
    let mut c = Counts::default();
    for (key, field) in COUNT_FIELDS {
        let v = u.get(key);
        *c.slot(key).unwrap_or(&mut 0) = v.and_then(Value::as_u64).unwrap_or(0);
        if let Some(b) = BadCount::of_value(field, v, false) {
            c.bad.push(b);
        }
    }
    c
}

/// The count keys of a usage object, with the path [`BadCount::field`]
/// names them by (in a `token_count` event, where Codex stores them).
const COUNT_FIELDS: [(&str, &str); 6] = [
    ("input_tokens", "payload.info.last_token_usage.input_tokens"),
    (
        "cached_input_tokens",
        "payload.info.last_token_usage.cached_input_tokens",
    ),
    (
        "cache_write_input_tokens",
        "payload.info.last_token_usage.cache_write_input_tokens",
    ),
    (
        "output_tokens",
        "payload.info.last_token_usage.output_tokens",
    ),
    (
        "reasoning_output_tokens",
        "payload.info.last_token_usage.reasoning_output_tokens",
    ),
    ("total_tokens", "payload.info.last_token_usage.total_tokens"),
];

/// What the loader reads of a line that is not a header, response item or
/// compaction (`event_msg`, `turn_context`, ...): the rest is measured, not kept.
/// Borrowed from a line's tree, or owned from its typed read (which drops
/// the line's buffer before the loader takes it).
struct Other<'a> {
    ty: Cow<'a, str>,
    /// `payload.type` (the event type of an `event_msg`).
    sub: Option<Cow<'a, str>>,
    /// `payload.model` (a `turn_context`'s model).
    model: Option<Cow<'a, str>>,
    /// `payload.model_context_window` (a `task_started` event's).
    window: Option<u64>,
    /// `payload.info` (a `token_count` event's usage), when not null.
    info: Option<TokenInfo<'a>>,
}

/// What the loader reads of a `token_count` event's `info`, from its tree
/// ([`TokenInfo::of_tree`]) or from the typed read ([`Info`]).
struct TokenInfo<'a> {
    /// `model_context_window`, when an unsigned integer.
    window: Option<u64>,
    /// `total_token_usage`, when present (whatever its value, null included):
    /// a request when it differs from the previous count's.
    total: Option<Total<'a>>,
    /// `last_token_usage` read by [`usage_of`] (all zero when absent or not
    /// an object).
    last: Usage,
    /// Its counts that are not counts (read as 0).
    bad: Vec<BadCount>,
}

/// A count's `total_token_usage`: from the typed read, read as a
/// [`FlatTotal`] where it has that shape (on the worker that parsed the
/// line, so the loader's in-order pass neither copies nor parses it), else
/// the text of its JSON; or its tree.
enum Total<'a> {
    Flat(FlatTotal),
    Raw(Cow<'a, str>),
    Tree(&'a Value),
}

/// A `total_token_usage` in the shape Codex writes: an object of these
/// counts (any of them absent), each a JSON integer from 0 to `u64::MAX`,
/// read without building a tree. Any other shape (another or a repeated
/// key, a null, a negative or fractional number) fails this read and is
/// read as a tree; two totals of this shape are equal exactly when their
/// trees are.
#[derive(serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct FlatTotal {
    #[serde(default, deserialize_with = "present_u64")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    cached_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    reasoning_output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    total_tokens: Option<u64>,
}

/// A count that is present: a null fails (its tree differs from an absent key's).
fn present_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    <u64 as serde::Deserialize>::deserialize(d).map(Some)
}

impl FlatTotal {
    /// `raw` read as a total of this shape: an object only (serde would
    /// also take an array of the counts in field order).
    fn read(raw: &str) -> Option<FlatTotal> {
        if !raw.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(raw).ok()
    }

    /// The tree this total reads as.
    fn tree(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (k, v) in [
            ("input_tokens", self.input_tokens),
            ("cached_input_tokens", self.cached_input_tokens),
            ("output_tokens", self.output_tokens),
            ("reasoning_output_tokens", self.reasoning_output_tokens),
            ("total_tokens", self.total_tokens),
        ] {
            if let Some(v) = v {
                m.insert(k.to_string(), Value::from(v));
            }
        }
        Value::Object(m)
    }
}

/// The previous count's `total_token_usage` ([`Loader::new_total`]).
#[derive(Debug)]
enum SeenTotal {
    Flat(FlatTotal),
    Tree(Value),
}

impl SeenTotal {
    /// Whether both are the same JSON value.
    fn same(&self, o: &SeenTotal) -> bool {
        match (self, o) {
            (SeenTotal::Flat(a), SeenTotal::Flat(b)) => a == b,
            (SeenTotal::Tree(a), SeenTotal::Tree(b)) => a == b,
            (SeenTotal::Flat(f), SeenTotal::Tree(v)) | (SeenTotal::Tree(v), SeenTotal::Flat(f)) => {
                f.tree() == *v
            }
        }
    }
}

impl<'a> TokenInfo<'a> {
    fn of_tree(info: &'a Value) -> TokenInfo<'a> {
        TokenInfo {
            window: info.get("model_context_window").and_then(Value::as_u64),
            total: info.get("total_token_usage").map(Total::Tree),
            last: Usage::default(),
            bad: Vec::new(),
        }
        .with_last(counts_of(
            info.get("last_token_usage").unwrap_or(&Value::Null),
        ))
    }

    /// The same info with `last_token_usage` read as `c`.
    fn with_last(mut self, c: Counts) -> TokenInfo<'a> {
        self.last = c.usage();
        self.bad = c.bad;
        // In [`COUNT_FIELDS`] order whatever order the keys were stored in
        // (the tree reader goes through that list).
        self.bad
            .sort_by_key(|b| COUNT_FIELDS.iter().position(|(_, f)| *f == b.field));
        self
    }
}

/// A `token_count` event's `info` read without a tree (a rollout's most
/// frequent line, a third of its bytes): `total_token_usage` kept as text,
/// `last_token_usage` as its counts ([`Counts`]). Only an object is taken;
/// a repeated key, or a `last_token_usage` that is neither an object nor
/// null, is refused (the line is then read as a tree).
struct Info<'a> {
    window: Option<u64>,
    total: Raw<'a>,
    last: Option<Counts>,
}

/// Any JSON value read as `Value::as_u64` reads it: an unsigned integer,
/// else `None` (negative, fractional, or not a number), without a tree.
#[derive(Default, Clone, Copy)]
struct AsU64(Option<u64>);

impl<'de> serde::Deserialize<'de> for AsU64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        StoredCount::deserialize(d).map(|c| AsU64(c.0.ok().flatten()))
    }
}

/// Any JSON value read as a count: `Ok(Some(n))` for an unsigned integer,
/// `Ok(None)` for `null`, else `Err` with its tree (the value a tree
/// reader would hold, built only for such a value), for a [`BadCount`].
struct StoredCount(std::result::Result<Option<u64>, Value>);

impl<'de> serde::Deserialize<'de> for StoredCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde::de::{MapAccess, SeqAccess, Visitor};
        use serde::Deserialize;
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StoredCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(Ok(Some(v))))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(
                    u64::try_from(v).map(Some).map_err(|_| v.into()),
                ))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(Err(v.into())))
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(Err(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(Err(v.into())))
            }
            fn visit_unit<E>(self) -> std::result::Result<StoredCount, E> {
                Ok(StoredCount(Ok(None)))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                a: A,
            ) -> std::result::Result<StoredCount, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(a)).map(|v| StoredCount(Err(v)))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<StoredCount, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(m)).map(|v| StoredCount(Err(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The token counts of a usage object, each as `Value::as_u64` reads it
/// (absent or not an unsigned integer: 0): from a tree ([`usage_of`]) or
/// from the typed read.
#[derive(Default)]
struct Counts {
    input: u64,
    cached: u64,
    cache_write: u64,
    output: u64,
    reasoning: u64,
    total: u64,
    /// The counts that are not counts, in stored order.
    bad: Vec<BadCount>,
}

impl Counts {
    /// The count of usage key `key`, if it is one.
    fn slot(&mut self, key: &str) -> Option<&mut u64> {
        Some(match key {
            "input_tokens" => &mut self.input,
            "cached_input_tokens" => &mut self.cached,
            "cache_write_input_tokens" => &mut self.cache_write,
            "output_tokens" => &mut self.output,
            "reasoning_output_tokens" => &mut self.reasoning,
            "total_tokens" => &mut self.total,
            _ => return None,
        })
    }

    /// The usage these counts report (see [`usage_of`]).
    fn usage(&self) -> Usage {
        let (input, cached, cw, total) = (self.input, self.cached, self.cache_write, self.total);
        Usage {
            input: input.saturating_sub(cached).saturating_sub(cw),
            output: self.output,
            reasoning: self.reasoning,
            cache_read: cached,
            cache_write: cw,
            total: Some(if total > 0 {
                total
            } else {
                input.saturating_add(self.output)
            }),
        }
    }
}

/// A visitor that takes a JSON object only, each key at most once, fields
/// read by `field` (which answers `false` for a key it skips).
fn visit_object<'de, A, T>(
    mut m: A,
    mut out: T,
    mut field: impl FnMut(&str, &mut T, &mut A) -> std::result::Result<bool, A::Error>,
) -> std::result::Result<T, A::Error>
where
    A: serde::de::MapAccess<'de>,
{
    use serde::de::{Error, IgnoredAny};
    let mut seen: Vec<Str<'de>> = Vec::new();
    while let Some(k) = m.next_key::<Str<'de>>()? {
        if seen.contains(&k) {
            return Err(A::Error::custom(format_args!("duplicate field `{}`", &*k)));
        }
        if !field(&k, &mut out, &mut m)? {
            m.next_value::<IgnoredAny>()?;
        }
        seen.push(k);
    }
    Ok(out)
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Info<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{MapAccess, Visitor};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Info<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a token_count info object")
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> std::result::Result<Info<'a>, A::Error> {
                let info = Info {
                    window: None,
                    total: None,
                    last: None,
                };
                visit_object(m, info, |k, info, m| {
                    match k {
                        "model_context_window" => info.window = m.next_value::<AsU64>()?.0,
                        "total_token_usage" => info.total = Some(m.next_value::<Json<'de>>()?),
                        "last_token_usage" => info.last = m.next_value()?,
                        _ => return Ok(false),
                    }
                    Ok(true)
                })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

impl<'de> serde::Deserialize<'de> for Counts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Counts;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("token counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> std::result::Result<Counts, A::Error> {
                visit_object(m, Counts::default(), |k, c, m| {
                    let Some(slot) = c.slot(k) else {
                        return Ok(false);
                    };
                    let read = m.next_value::<StoredCount>()?.0;
                    *slot = read.as_ref().ok().copied().flatten().unwrap_or(0);
                    if let Err(v) = read {
                        let field = COUNT_FIELDS.iter().find(|(key, _)| *key == k);
                        if let Some(b) =
                            field.and_then(|f| BadCount::of_value(f.1, Some(&v), false))
                        {
                            c.bad.push(b);
                        }
                    }
                    Ok(true)
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// The fields of a response item read typed (see [`typed`]): tool calls,
/// tool outputs given as a string, reasoning, and `message` items (their
/// content items measured, see [`ContentItem`]). Any other
/// item type, a repeated key or a string that cannot be read is refused,
/// and the line is read as a tree.
struct ItemFields<'a> {
    ty: std::borrow::Cow<'a, str>,
    name: Raw<'a>,
    arguments: Measured,
    input: Measured,
    call_id: Raw<'a>,
    id: Raw<'a>,
    output: Measured,
    summary: Texts,
    content: Texts,
    encrypted_content: Measured,
    /// A `message` item's `role`.
    role: Raw<'a>,
    /// A `message` item's `content` (read only once the type is known).
    message: Option<MessageContent<'a>>,
}

/// Whether items of type `ty` are read typed.
fn typed_item_type(ty: &str) -> bool {
    matches!(
        ty,
        "function_call" | "custom_tool_call" | "reasoning" | "message"
    ) || ty.ends_with("_output")
}

impl<'de> serde::Deserialize<'de> for ItemFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ItemFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a response item object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<ItemFields<'de>, A::Error> {
                let mut ty: Option<std::borrow::Cow<'de, str>> = None;
                let mut f = ItemFields {
                    ty: "".into(),
                    name: None,
                    arguments: Measured::Absent,
                    input: Measured::Absent,
                    call_id: None,
                    id: None,
                    output: Measured::Absent,
                    summary: Texts::default(),
                    content: Texts::default(),
                    encrypted_content: Measured::Absent,
                    role: None,
                    message: None,
                };
                let mut seen = [false; 11];
                while let Some(k) = m.next_key::<Str<'de>>()? {
                    let slot = match &*k {
                        "type" => 0,
                        "name" => 1,
                        "arguments" => 2,
                        "input" => 3,
                        "call_id" => 4,
                        "id" => 5,
                        "output" => 6,
                        "summary" => 7,
                        "content" => 8,
                        "encrypted_content" => 9,
                        "role" => 10,
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(A::Error::custom("a repeated key: read as a tree"));
                    }
                    match slot {
                        0 => {
                            let t: Str<'de> = m.next_value()?;
                            if !typed_item_type(&t) {
                                return Err(A::Error::custom("read as a tree"));
                            }
                            ty = Some(t.0);
                        }
                        1 => f.name = m.next_value()?,
                        2 => f.arguments = m.next_value()?,
                        3 => f.input = m.next_value()?,
                        4 => f.call_id = m.next_value()?,
                        5 => f.id = m.next_value()?,
                        6 => f.output = m.next_value()?,
                        7 => f.summary = m.next_value()?,
                        8 if ty.as_deref() == Some("message") => f.message = Some(m.next_value()?),
                        8 => f.content = m.next_value()?,
                        9 => f.encrypted_content = m.next_value()?,
                        _ => f.role = m.next_value()?,
                    }
                }
                f.ty = ty.ok_or_else(|| A::Error::custom("no type: read as a tree"))?;
                if f.ty == "message" && seen[8] && f.message.is_none() {
                    return Err(A::Error::custom("content before type: read as a tree"));
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// One item of a `message` item's `content` array read typed: its length
/// as its tree writes it back (`JsonLen`, bytes) and the fields
/// [`content_part`] reads, each only when a string (as `str_at` reads
/// them). An item that carries [`NOTE_MARKER`] (only ever in memory) is
/// refused, and the line read as a tree.
struct ContentItem<'a> {
    len: u64,
    ty: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
    refusal: Option<Cow<'a, str>>,
    /// `image_url` as [`image_url`] reads it: the string, or its `url`.
    url: Option<Cow<'a, str>>,
}

impl<'a> ContentItem<'a> {
    fn sized(len: u64) -> ContentItem<'a> {
        ContentItem {
            len,
            ty: None,
            text: None,
            refusal: None,
            url: None,
        }
    }
}

impl<'de> serde::Deserialize<'de> for ContentItem<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ContentItem<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<ContentItem<'de>, E> {
                Ok(ContentItem::sized(written_len(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                q: A,
            ) -> std::result::Result<ContentItem<'de>, A::Error> {
                seq_len(q).map(ContentItem::sized)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<ContentItem<'de>, A::Error> {
                let mut c = ContentItem::sized(0);
                c.len = map_len(m, |k, m| {
                    let slot = match k {
                        "type" => &mut c.ty,
                        "text" => &mut c.text,
                        "refusal" => &mut c.refusal,
                        // [`image_url`]: the URL itself, or its `url`.
                        "image_url" => {
                            let u = m.next_value_seed(CaptureIn(Some("url")))?;
                            c.url = u.text;
                            return Ok(Some(u.len));
                        }
                        NOTE_MARKER => return Err(A::Error::custom("a note: read as a tree")),
                        _ => return Ok(None),
                    };
                    let v: Captured = m.next_value()?;
                    *slot = v.text;
                    Ok(Some(v.len))
                })?;
                Ok(c)
            }
            written_scalars!(ContentItem<'de>, ContentItem::sized);
        }
        d.deserialize_any(V)
    }
}

/// A `message` item's `content` read typed: an array of items, a string,
/// or anything else (no parts, no text).
enum MessageContent<'a> {
    Items(Vec<ContentItem<'a>>),
    Text(Cow<'a, str>),
    None,
}

impl<'de> serde::Deserialize<'de> for MessageContent<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageContent<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(
                self,
                s: &'de str,
            ) -> std::result::Result<MessageContent<'de>, E> {
                Ok(MessageContent::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<MessageContent<'de>, E> {
                Ok(MessageContent::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut q: A,
            ) -> std::result::Result<MessageContent<'de>, A::Error> {
                let mut v = Vec::new();
                while let Some(c) = q.next_element()? {
                    v.push(c);
                }
                Ok(MessageContent::Items(v))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                m: A,
            ) -> std::result::Result<MessageContent<'de>, A::Error> {
                map_len(m, |_, _| Ok(None)).map(|_| MessageContent::None)
            }
            written_scalars!(MessageContent<'de>, |_| MessageContent::None);
        }
        d.deserialize_any(V)
    }
}

/// The part for one content item (read typed, or a view of its tree:
/// [`content_part`]).
fn item_part(c: &ContentItem<'_>, id: Id, message_id: &str) -> Part {
    let ty = c.ty.as_deref().unwrap_or("");
    match ty {
        _ if is_text_item(ty) => {
            let t = c.text.as_deref().or(c.refusal.as_deref()).unwrap_or("");
            let mut p = part(id, message_id, PartKind::Text, ty, c.len);
            p.rewritten = has_compact_marker(t);
            p.set_model_chars(chars(t));
            p.set_wire_bytes(t.len() as u64);
            p
        }
        "input_image" | "image" => {
            let url = c.url.as_deref().unwrap_or("");
            let mut p = part(id, message_id, PartKind::File, ty, c.len);
            p.set_wire_bytes(url.len() as u64);
            p.media_mut().extend(parse_data_url(url, None));
            p
        }
        other => {
            let mut p = part(id, message_id, PartKind::Other, other, c.len);
            p.set_wire_bytes(c.len);
            p
        }
    }
}

/// What the loader takes from a `message` item read typed besides its
/// message, as [`Loader::line`] reads it from the tree: an assistant's text
/// (the answer a following `compacted` line may carry) and, for a user
/// message Codex did not write itself, the session title it would give.
fn typed_message_texts(item: &ItemFields<'_>) -> Option<(Option<String>, Option<String>)> {
    let text = || match &item.message {
        Some(MessageContent::Items(c)) => c
            .iter()
            .filter_map(|c| c.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n"),
        Some(MessageContent::Text(s)) => s.to_string(),
        _ => String::new(),
    };
    Some(match raw_str(item.role)?.as_deref() {
        Some("assistant") => (Some(text()), None),
        Some("user") => (None, title_of(&text())),
        _ => (None, None),
    })
}

/// The message of a response item read typed ([`ItemFields`]), as
/// [`item_message`] builds it from the item's tree; `None` when the item
/// needs the tree (a tool output that is not a string, a string that
/// cannot be read).
fn typed_item_message(
    item: &ItemFields<'_>,
    id: &str,
    line: LineRef,
    time: i64,
) -> Option<Message> {
    let ty = &*item.ty;
    let pid = |k: usize| ids::part(id, k);
    let mut m;
    match ty {
        "message" => {
            let role = match raw_str(item.role)?.as_deref() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some(r) => Role::named(r),
                None => Role::Other(sym("message")),
            };
            m = message(id, role, line, time);
            match &item.message {
                Some(MessageContent::Items(content)) => {
                    for (k, c) in content.iter().enumerate() {
                        m.parts.push(item_part(c, pid(k), id));
                    }
                    let first = content
                        .iter()
                        .find(|c| is_text_item(c.ty.as_deref().unwrap_or("")))
                        .and_then(|c| c.text.as_deref());
                    if let Some(first) = first.filter(|_| m.role() == Role::User) {
                        mark_user_message(&mut m, first);
                    }
                }
                Some(MessageContent::Text(s)) => {
                    let mut p = part(pid(0), id, PartKind::Text, "text", s.len() as u64 + 2);
                    p.set_model_chars(chars(s));
                    p.set_wire_bytes(s.len() as u64);
                    m.parts.push(p);
                }
                Some(MessageContent::None) | None => {}
            }
        }
        "function_call" | "custom_tool_call" => {
            m = message(id, Role::Assistant, line, time);
            let name = raw_str(item.name)?;
            let name = name.as_deref().unwrap_or("");
            let input = match ty {
                "function_call" => item.arguments,
                _ => item.input,
            }
            .str()
            .unwrap_or_default();
            let mut p = part(pid(0), id, PartKind::Tool, ty, 0);
            p.set_model_chars(chars(name) + input.chars);
            p.set_wire_bytes(name.len() as u64 + input.bytes);
            let call_id = match raw_str(item.call_id)? {
                Some(c) => Some(c),
                None => raw_str(item.id)?,
            };
            p.tool = Some(Box::new(ToolCall {
                name: sym(name),
                call_id: call_id.as_deref().unwrap_or_default().into(),
                status: ToolStatus::Pending,
                output_chars: 0,
                output_cleared: false,
            }));
            m.parts.push(p);
        }
        "reasoning" => {
            m = message(id, Role::Assistant, line, time);
            let (s, c) = (item.summary.figures(), item.content.figures());
            let enc = item.encrypted_content.str().map_or(0, |e| e.bytes);
            let mut p = part(pid(0), id, PartKind::Reasoning, ty, 0);
            p.set_model_chars(s.chars + c.chars);
            p.set_wire_bytes(s.bytes + c.bytes + enc);
            m.parts.push(p);
        }
        _ => {
            // `*_output`: a string output, or none.
            let out = match item.output {
                Measured::Nested => return None,
                o => o.str().unwrap_or_default(),
            };
            m = message(id, Role::Other(sym("tool")), line, time);
            let mut p = part(pid(0), id, PartKind::Tool, ty, 0);
            p.rewritten = out.marker;
            p.set_model_chars(out.chars);
            p.set_wire_bytes(out.bytes);
            let call_id = raw_str(item.call_id)?;
            p.tool = Some(Box::new(ToolCall {
                name: sym(""),
                call_id: call_id.as_deref().unwrap_or_default().into(),
                status: ToolStatus::Completed,
                output_chars: ToolCall::chars(out.chars),
                output_cleared: false,
            }));
            m.parts.push(p);
        }
    }
    finish_item(&mut m, time, line.bytes);
    Some(m)
}

/// A line's envelope read without a tree (most of a rollout's bytes are
/// `token_count` events and `turn_context` lines; building their trees took
/// most of the load time), its payload read in the same pass: a
/// `response_item` payload as [`ItemFields`] when the line's `type` comes
/// first (as Codex writes it). The read stops at a header or compaction,
/// and at an item type [`ItemFields`] does not take, so the lines the tree
/// reader takes cost next to nothing here.
struct Envelope<'a> {
    ty: Option<std::borrow::Cow<'a, str>>,
    payload: Option<Payload<'a>>,
    /// The payload of a `response_item` line whose item is read typed.
    /// Boxed: unboxed, these 264 bytes were copied again at each step of
    /// the read that returned them; boxing took `pre_read`'s copies from 12
    /// to 5 a line and 3% off a rollout's instructions (callgrind).
    item: Option<Box<ItemFields<'a>>>,
    timestamp: Raw<'a>,
}

/// Line types the tree reader takes ([`Loader::line`]); a response item
/// of a type [`typed_item_type`] names is read typed instead.
const TREE_TYPES: [&str; 3] = ["session_meta", "response_item", "compacted"];

impl<'de> serde::Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Envelope<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a rollout line object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Envelope<'de>, A::Error> {
                let mut e = Envelope {
                    ty: None,
                    payload: None,
                    item: None,
                    timestamp: None,
                };
                let (mut ty, mut payload, mut timestamp) = (false, false, false);
                let once = |seen: &mut bool, k: &str| {
                    if std::mem::replace(seen, true) {
                        Err(A::Error::custom(format_args!("duplicate field `{k}`")))
                    } else {
                        Ok(())
                    }
                };
                while let Some(k) = m.next_key::<Str<'de>>()? {
                    match &*k {
                        "type" => {
                            once(&mut ty, "type")?;
                            e.ty = m.next_value::<Option<Str<'de>>>()?.map(|t| t.0);
                            let tree = match e.ty.as_deref() {
                                // Its item is read typed when the type comes first.
                                Some("response_item") => payload,
                                Some(t) => TREE_TYPES.contains(&t),
                                None => false,
                            };
                            if tree {
                                return Err(A::Error::custom("read as a tree"));
                            }
                        }
                        "payload" => {
                            once(&mut payload, "payload")?;
                            if e.ty.as_deref() == Some("response_item") {
                                e.item = Some(Box::new(m.next_value()?));
                            } else {
                                e.payload = m.next_value()?;
                            }
                        }
                        "timestamp" => {
                            once(&mut timestamp, "timestamp")?;
                            e.timestamp = m.next_value()?;
                        }
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// The fields of an envelope's payload the loader reads (see [`Other`]).
#[derive(serde::Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow)]
    ty: Raw<'a>,
    #[serde(borrow)]
    model: Raw<'a>,
    #[serde(default)]
    model_context_window: AsU64,
    #[serde(borrow)]
    info: Option<Info<'a>>,
}

/// The key of a call id in [`Loader::call_names`]: a 64-bit SipHash, the
/// same in every run. Two of n call ids share a key with a chance of about
/// n^2 / 2^65 (3e-9 for the 330k calls of the 1 GB rollout of benches/);
/// then an output may show the other call's tool name.
fn call_key(call_id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    call_id.hash(&mut h);
    h.finish()
}

/// Cross-line state of one pass over a rollout.
struct Loader {
    s: Session,
    first: bool,
    provider: Option<String>,
    model: Option<String>,
    /// `provider/model` (or the model alone) as the [`Sym`] every user and
    /// assistant message gets: made when either changes
    /// ([`Loader::remake_model_sym`]), not once per message (a format and a symbol
    /// lookup for each of the 1.1 million items of the 1 GB rollout of benches/).
    model_sym: Option<Sym>,
    /// The roles [`Loader::other`] gave, by line type and event type (a
    /// rollout has a dozen kinds): a line of a kind met before reuses its
    /// role without formatting `event_msg/<type>`.
    other_roles: Vec<(String, Option<String>, Role)>,
    /// Newest message that may own the next request's usage.
    candidate: Option<usize>,
    prev_total: Option<SeenTotal>,
    /// The text `prev_total` was read from, when the typed read gave it.
    prev_total_raw: Option<Box<str>>,
    /// `total_tokens` of the last request reported.
    last_request: Option<u64>,
    /// Calls without an output yet: call id -> (message, part) index.
    open_calls: HashMap<CallId, (usize, usize)>,
    /// The tool name of every call seen, by the 64-bit key of its call id
    /// ([`call_key`]): an output takes its call's name. Kept for the whole
    /// rollout (an output may repeat a closed call's id), so its entry is
    /// 16 bytes, not two strings: the 1 GB rollout of benches/ has 330k
    /// calls.
    call_names: HashMap<u64, Sym>,
    /// Newest assistant `message` item and its text (a summarization answer
    /// when the next `compacted` line carries it).
    last_answer: Option<(usize, String)>,
    window: Option<u64>,
    extra_types: BTreeMap<String, usize>,
    estimates: usize,
    time: i64,
}

impl Loader {
    fn push(&mut self, mut m: Message) -> usize {
        if matches!(m.role(), Role::User | Role::Assistant) {
            m.set_model(self.model_sym.clone());
        }
        let i = self.s.messages.len();
        for (k, p) in m.parts.iter_mut().enumerate() {
            let Some(t) = p.tool.as_mut() else { continue };
            if t.status == ToolStatus::Pending {
                if !t.call_id.is_empty() {
                    self.open_calls.insert(t.call_id.clone(), (i, k));
                    self.call_names.insert(call_key(&t.call_id), t.name.clone());
                }
            } else if let Some(name) = self.call_names.get(&call_key(&t.call_id)) {
                t.name = name.clone();
                if let Some((mi, pk)) = self.open_calls.remove(&t.call_id) {
                    if let Some(call) = self.s.messages[mi].parts[pk].tool.as_mut() {
                        call.status = ToolStatus::Completed;
                    }
                }
            }
        }
        self.s.messages.push(m);
        i
    }

    /// Sets the provider (session header) and, when it changed,
    /// [`Loader::model_sym`].
    fn set_provider(&mut self, provider: &str) {
        if self.provider.as_deref() != Some(provider) {
            self.provider = Some(provider.to_string());
            self.remake_model_sym();
        }
    }

    /// Sets the model (`turn_context`) and, when it changed,
    /// [`Loader::model_sym`].
    fn set_model(&mut self, model: &str) {
        if self.model.as_deref() != Some(model) {
            self.model = Some(model.to_string());
            self.remake_model_sym();
        }
    }

    fn remake_model_sym(&mut self) {
        self.model_sym = match (&self.provider, &self.model) {
            (Some(p), Some(md)) => Some(sym(&format!("{p}/{md}"))),
            (None, Some(md)) => Some(sym(md)),
            _ => None,
        };
    }

    fn line(&mut self, v: &Value, line: LineRef) {
        self.time = time_ms(v).unwrap_or(self.time);
        let first = std::mem::replace(&mut self.first, false);
        let mut answer_text: Option<String> = None;
        match classify(v, first) {
            Line::Meta(p) => {
                self.s.other_bytes += line.bytes;
                self.s.meta_lines.push(line, HEADER_KIND, None);
                if let Some(id) = str_at(p, "id") {
                    if self.s.id.is_empty() {
                        self.s.id = id.to_string();
                    }
                }
                if let Some(provider) = str_at(p, "model_provider") {
                    self.set_provider(provider);
                }
                return;
            }
            Line::Other { ty, sub } => {
                let p = v.get("payload");
                let payload = |k: &str| p.and_then(|p| p.get(k));
                self.other(
                    Other {
                        ty: Cow::Borrowed(&ty),
                        sub: sub.as_deref().map(Cow::Borrowed),
                        model: payload("model").and_then(Value::as_str).map(Cow::Borrowed),
                        window: payload("model_context_window").and_then(Value::as_u64),
                        info: payload("info")
                            .filter(|i| !i.is_null())
                            .map(TokenInfo::of_tree),
                    },
                    line,
                );
                return;
            }
            Line::Compacted(p) => {
                let text = str_at(p, "message").unwrap_or("");
                if let Some((i, answer)) = self.last_answer.take() {
                    if !answer.trim().is_empty() && text.contains(answer.trim()) {
                        self.s.messages[i].set_summary(true);
                    }
                }
            }
            Line::Item(item) => {
                self.last_answer = None;
                if str_at(item, "type") == Some("message") {
                    let text = texts(item.get("content"));
                    match str_at(item, "role") {
                        Some("assistant") => answer_text = Some(text),
                        Some("user") if self.s.title.is_none() => self.s.title = title_of(&text),
                        _ => {}
                    }
                }
            }
        }
        let Some(msgs) = line_messages(v, first, line, self.time) else {
            return;
        };
        // Codex 0.169 records the summarization request's usage on the
        // compacted line itself; it is the last request before it.
        let trigger = match classify(v, false) {
            Line::Compacted(p) => p
                .pointer("/latest_token_usage_record/usage")
                .map(|u| usage_of(u).total)
                .unwrap_or(self.last_request),
            _ => self.last_request,
        };
        self.take(msgs, trigger, answer_text);
    }

    /// Adds the messages of one line: a compaction marker gets the request
    /// that triggered it (`trigger`); a model output becomes the owner of the
    /// next reported usage, and an assistant message's text (`answer_text`)
    /// the answer a following `compacted` line may carry.
    fn take(
        &mut self,
        msgs: impl IntoIterator<Item = Message>,
        trigger: Option<u64>,
        mut answer_text: Option<String>,
    ) {
        for mut m in msgs {
            let is_marker = m.compaction().is_some();
            if is_marker {
                if let Some(c) = m.parts[0].compaction_mut() {
                    c.trigger_tokens = trigger;
                }
            }
            // Of the message ids ([`ids`]), only a `replacement_history`
            // item's (`L12.rh3`) holds a dot: one byte searched, not a
            // substring (0.6% of a rollout's instructions, callgrind).
            let top_level = !m.id.as_bytes().contains(&b'.');
            let output = m.role() == Role::Assistant && top_level;
            let i = self.push(m);
            if output || is_marker {
                self.candidate = Some(i);
            }
            if output {
                if let Some(t) = answer_text.take() {
                    self.last_answer = Some((i, t));
                }
            }
        }
    }

    /// A line that is not a header, response item or compaction (see the
    /// module notes): a line that holds no message (a `token_count` that
    /// keeps a usage record holds one), and what the loader learns from it
    /// (the model, the context window, a request's usage).
    fn other(&mut self, o: Other<'_>, line: LineRef) {
        let ty = &*o.ty;
        if !matches!(ty, "event_msg" | "turn_context" | "record_type") {
            *self.extra_types.entry(ty.to_string()).or_default() += 1;
        }
        if ty == "turn_context" {
            if let Some(md) = o.model {
                self.set_model(&md);
            }
        }
        if ty == "event_msg" {
            match o.sub.as_deref() {
                Some("task_started") => {
                    if let Some(w) = o.window {
                        self.window = Some(w);
                    }
                }
                Some("token_count") => return self.token_count(o.info, line),
                _ => {}
            }
        }
        let role = self.other_role(ty, o.sub.as_deref().filter(|_| ty == "event_msg"));
        self.meta(line, role.as_str());
    }

    /// A line that holds no message ([`crate::model::MetaLines`]): its
    /// bytes count outside messages.
    fn meta(&mut self, line: LineRef, kind: &str) {
        self.s.other_bytes += line.bytes;
        self.s.meta_lines.push(line, kind, Some(self.time));
    }

    /// The role of a line of type `ty` (event type `sub`): `event_msg/<sub>`,
    /// else `ty`.
    fn other_role(&mut self, ty: &str, sub: Option<&str>) -> Role {
        let known = self
            .other_roles
            .iter()
            .find(|(t, s, _)| t == ty && s.as_deref() == sub);
        if let Some((_, _, r)) = known {
            return r.clone();
        }
        let r = Role::Other(sym(&match sub {
            Some(sub) => format!("{ty}/{sub}"),
            None => ty.to_string(),
        }));
        if self.other_roles.len() < 64 {
            let key = (ty.to_string(), sub.map(str::to_string), r.clone());
            self.other_roles.push(key);
        }
        r
    }

    /// Whether a count's `total_token_usage` differs from the previous
    /// count's (then it reports a request), keeping it as the previous. The
    /// same text is the same value; other text is compared as JSON values.
    /// A total in the shape Codex writes ([`FlatTotal`]) is read and
    /// compared without a tree.
    fn new_total(&mut self, t: Total<'_>) -> bool {
        let cur = match t {
            Total::Flat(f) => {
                self.prev_total_raw = None;
                SeenTotal::Flat(f)
            }
            // Not of the flat shape (the typed read tried it).
            Total::Raw(raw) => {
                if self.prev_total_raw.as_deref() == Some(&*raw) {
                    return false;
                }
                // The typed read took this text as JSON, so it parses.
                let v = serde_json::from_str(&raw).unwrap_or(Value::Null);
                self.prev_total_raw = Some(raw.into_owned().into_boxed_str());
                SeenTotal::Tree(v)
            }
            Total::Tree(v) => {
                self.prev_total_raw = None;
                SeenTotal::Tree(v.clone())
            }
        };
        let new = self.prev_total.as_ref().is_none_or(|p| !p.same(&cur));
        self.prev_total = Some(cur);
        new
    }

    fn token_count(&mut self, info: Option<TokenInfo<'_>>, line: LineRef) {
        let id = ids::line(line.number());
        let role = self.other_role("event_msg", Some("token_count"));
        let mut m = message(&id, role, line, self.time);
        m.set_info_bytes(line.bytes);
        if let Some(mut info) = info {
            if let Some(w) = info.window {
                self.window.get_or_insert(w);
            }
            if !info.bad.is_empty() {
                m.rare_mut().bad_counts = std::mem::take(&mut info.bad);
            }
            let request = info.total.is_some_and(|t| self.new_total(t));
            let u = info.last;
            // Codex's estimate of the history (written around a compaction):
            // never a request, whether or not the running total moved, so a
            // copy whose cut left it the first count reads it as the
            // original does.
            let estimate = u.input == 0
                && u.cache_read == 0
                && u.cache_write == 0
                && u.output == 0
                && u.total.unwrap_or(0) > 0;
            if request && !estimate {
                self.last_request = u.total;
                match self.candidate.take() {
                    Some(c) => {
                        let owner = &mut self.s.messages[c];
                        owner.set_usage(u);
                        if owner.role() == Role::Assistant {
                            owner.set_finish(Some(sym("completed")));
                        }
                    }
                    None => m.set_usage(u),
                }
            } else if estimate {
                self.estimates += 1;
                m.set_usage(Usage {
                    total: u.total,
                    ..Default::default()
                });
            }
        }
        // A count that stays on its own line (a request with no model
        // output before it, an estimate, a count that is not one) is a
        // usage record the rules read; any other is a line of figures
        // already given to their owner, or of none.
        if m.usage.is_none() && m.rare().is_none() {
            return self.meta(line, m.role().as_str());
        }
        self.push(m);
    }

    fn finish(mut self) -> Session {
        let s = &mut self.s;
        s.visible = visible_view(&s.messages);
        let resume_model = s.resume_model().map(str::to_string);
        if let Some(w) = self.window {
            s.stored_limits = Some(Limits {
                model: resume_model,
                context: w.saturating_mul(100).div_ceil(EFFECTIVE_WINDOW_PERCENT),
                max_output: 0,
                input: Some(w),
                source: format!(
                    "Codex model_context_window {w} (its effective window, {EFFECTIVE_WINDOW_PERCENT}% of the model's)"
                ),
            });
        }
        let compactions = s.compactions();
        if compactions > 0 {
            let mut sum = Usage::default();
            let mut n = 0;
            for m in s
                .messages
                .iter()
                .filter(|m| m.summary() && !m.usage().is_zero())
            {
                if m.usage()
                    .input
                    .saturating_add(m.usage().cache_read)
                    .saturating_add(m.usage().output)
                    > 0
                {
                    sum.add(m.usage());
                    n += 1;
                }
            }
            let input = sum
                .input
                .saturating_add(sum.cache_read)
                .saturating_add(sum.cache_write);
            let text = if n > 0 {
                format!(
                    "tokens_total is Codex's running total_token_usage, which includes its own compaction (summarization) requests: {n} found for {compactions} compaction(s), {input} input ({} cached) and {} output tokens",
                    sum.cache_read,
                    sum.output
                )
            } else {
                format!(
                    "tokens_total is Codex's running total_token_usage, which includes a compaction's summarization request when Codex reports one; none of the {compactions} compaction(s) in this file left one (a remote compaction reports none; a compacted copy no longer holds it)"
                )
            };
            s.note(
                text,
                [
                    ("compactions", compactions as u64),
                    ("summarization_requests", n as u64),
                    ("summarization_input_tokens", input),
                    ("summarization_cache_read_tokens", sum.cache_read),
                    ("summarization_output_tokens", sum.output),
                ],
            );
        }
        if self.estimates > 0 {
            s.note(
                format!(
                    "{} token_count line(s) report no request (cumulative total unchanged, only total_tokens set: Codex's estimate of the history); kept as usage records, never as context",
                    self.estimates
                ),
                [("token_count_lines_without_request", self.estimates as u64)],
            );
        }
        if !self.extra_types.is_empty() {
            let text = format!(
                "line types kept as metadata: {}",
                self.extra_types
                    .iter()
                    .map(|(t, n)| format!("{t} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let figures = self
                .extra_types
                .iter()
                .map(|(t, n)| (format!("metadata_lines.{t}"), *n as u64));
            s.note(text, figures);
        }
        self.s
    }
}

/// Reads a whole rollout from `r`: `path` names it in problems, `id` is the
/// session id when the header names none.
pub fn load(r: impl Read + Send, path: &Path, id: &str) -> std::io::Result<Session> {
    load_lines(r, path, id, true, 0, 1 << 20).map(|(s, _)| s)
}

/// [`load`] of a rollout of `bytes` bytes and about `lines` lines (an
/// estimate on the high side): room for one message per line reserved up
/// front (more for a `compacted` line's history), reads sized to the file.
pub fn load_sized(
    r: impl Read + Send,
    path: &Path,
    id: &str,
    lines: u64,
    bytes: u64,
) -> std::io::Result<Session> {
    load_lines(r, path, id, true, lines, bytes).map(|(s, _)| s)
}

/// The typed read of one line (`body`, no line ending), without building
/// its tree: `None` for a blank line or one the typed read does not take
/// (see [`typed`]). Reads no loader state, so the lines of a
/// block are read on every core.
fn envelope(body: &[u8]) -> Option<Envelope<'_>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // The typed read skips what it does not keep at any depth (serde_json
    // checks neither nesting, numbers, UTF-8 nor escapes in what it skips);
    // a line the tree reader refuses must stay refused.
    let text = crate::formats::utf8(body)?;
    let scan = crate::formats::prescan(body);
    if scan.too_deep(body)
        || scan.number_out_of_range(body)
        || crate::formats::may_hold_surrogate_escape(body)
    {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// What one line of a rollout gives, read from the line alone (no loader
/// state), so the lines of a block are read on every core; owns nothing of
/// the block's buffer, so the next block is read while this one is taken in.
enum Pre {
    /// Only whitespace.
    Blank,
    /// A response item read typed ([`ItemFields`]): its message, built with
    /// the line's own timestamp (`time`, ms), or with 0 when it has none
    /// the loader can read (the loader's current time then replaces it).
    /// A `message` item also gives what [`typed_message_texts`] reads.
    Item {
        time: Option<i64>,
        m: Message,
        answer: Option<String>,
        title: Option<String>,
    },
    /// Any other line read typed, with the line's own timestamp (`time`,
    /// ms) when it has one the loader can read.
    Other {
        time: Option<i64>,
        o: Other<'static>,
    },
    /// A JSON object the typed read does not take: its tree.
    Tree(Value),
    /// Not a JSON object: the reader's message.
    Bad(String),
}

/// A timestamp read typed: `Some(None)` when absent or not a time the
/// loader reads, `None` when its string cannot be read.
fn raw_time(t: Raw<'_>) -> Option<Option<i64>> {
    match t {
        Some(t) => Some(raw_str(Some(t))?.as_deref().and_then(time_ms_of)),
        None => Some(None),
    }
}

/// A line taken from its typed read ([`envelope`]): `None` when it needs
/// its tree (a header, compaction, or response item [`ItemFields`] does
/// not take, or any shape the typed read does not take, such as repeated
/// keys; the tree reader then decides).
fn typed(e: Envelope<'_>, line: LineRef) -> Option<Pre> {
    let ty = e.ty?;
    if let Some(item) = &e.item {
        let time = raw_time(e.timestamp)?;
        let id = ids::line(line.number());
        let m = typed_item_message(item, &id, line, time.unwrap_or(0))?;
        let (answer, title) = match &*item.ty {
            "message" => typed_message_texts(item)?,
            _ => (None, None),
        };
        return Some(Pre::Item {
            time,
            m,
            answer,
            title,
        });
    }
    // A header, compaction or item left to the tree was refused by the
    // envelope's read; what is left here is every other line type.
    let p = e.payload?;
    let sub = raw_str(p.ty)?;
    let time = raw_time(e.timestamp)?;
    let model = raw_str(p.model)?;
    let owned = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
    Some(Pre::Other {
        time,
        o: Other {
            ty: line_type_name(ty),
            sub: sub.map(line_type_name),
            model: model.map(owned),
            window: p.model_context_window.0,
            info: p.info.map(|i| {
                TokenInfo {
                    window: i.window,
                    total: i.total.map(|t| match FlatTotal::read(t.get()) {
                        Some(f) => Total::Flat(f),
                        None => Total::Raw(Cow::Owned(t.get().to_string())),
                    }),
                    last: Usage::default(),
                    bad: Vec::new(),
                }
                .with_last(i.last.unwrap_or_default())
            }),
        },
    })
}

/// The line and event types Codex writes on most of a rollout's lines
/// (every `event_msg` and `turn_context` line of the 1 GB rollout of
/// benches/ has one of these).
const COMMON_TYPES: [&str; 10] = [
    "event_msg",
    "turn_context",
    "token_count",
    "agent_message",
    "agent_reasoning",
    "task_started",
    "task_complete",
    "user_message",
    "item_completed",
    "thread_settings_applied",
];

/// A line's or event's type `t` as [`Other`] keeps it past the line's
/// buffer: a [`COMMON_TYPES`] name borrowed from that list (no allocation;
/// an event line allocated two names before), any other one copied.
fn line_type_name(t: Cow<'_, str>) -> Cow<'static, str> {
    match COMMON_TYPES.iter().find(|c| **c == t) {
        Some(c) => Cow::Borrowed(c),
        None => Cow::Owned(t.into_owned()),
    }
}

/// The line types of Codex's `RolloutItem` (serde: `type` names the
/// variant, `payload` holds its fields; docs/formats/codex.md section 2).
pub(crate) const ENVELOPE_TYPES: [&str; 5] = [
    "session_meta",
    "response_item",
    "compacted",
    "turn_context",
    "event_msg",
];

/// Why Codex cannot read a line (an object `v`) the loader would
/// otherwise take with no word; `None` for any other line. Codex reads each
/// line as a `RolloutLine` (serde: the `type` names the variant, `payload`
/// holds its fields), so a line whose `payload` is not an object (5, "x",
/// null), or a `session_meta` whose `id` is not a string (the thread id),
/// is a line it refuses: these read as an empty event or a header without
/// its id, in silence. The typed read ([`envelope`]) takes neither (its
/// payload must be an object and a header goes to the tree), so both
/// reads come here and agree.
fn shape_problem(v: &Value) -> Option<String> {
    let ty = v.get("type")?.as_str()?;
    let Some(p) = v.get("payload") else {
        // An envelope type with no payload: Codex cannot read its variant
        // either. Older rollouts' lines without an envelope (`{"type":
        // "message", ...}`, `record_type`) have other types.
        return ENVELOPE_TYPES.contains(&ty).then(|| {
            format!(
                "`payload`: missing, expected a JSON object (the `{ty}` line's fields): the line is not read"
            )
        });
    };
    if !p.is_object() {
        return Some(format!(
            "`payload`: expected a JSON object (the `{ty}` line's fields), found {}: the line is not read",
            crate::formats::json_found(p)
        ));
    }
    if ty == "session_meta" {
        if let Some(id) = p.get("id").filter(|id| !id.is_string()) {
            return Some(format!(
                "`payload.id`: expected a string (the session id), found {}: the line is not read",
                crate::formats::json_found(id)
            ));
        }
    }
    None
}

/// [`Pre`] of one line (`body`, no line ending): typed when `fast` and the
/// typed read takes it, else its tree.
fn pre_read(body: &[u8], fast: bool, line: LineRef) -> Pre {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Pre::Blank;
    }
    if let Some(p) = fast
        .then(|| envelope(body))
        .flatten()
        .and_then(|e| typed(e, line))
    {
        return p;
    }
    match crate::formats::from_line::<Value>(body) {
        Ok(v) if v.is_object() => match shape_problem(&v) {
            Some(e) => Pre::Bad(e),
            None => Pre::Tree(v),
        },
        Ok(_) => Pre::Bad("expected a JSON object".to_string()),
        Err(e) => Pre::Bad(format!(
            "invalid JSON: {}",
            crate::formats::line_json_error(&e, body, line.number(), "Codex (serde_json)")
        )),
    }
}

/// The lines of one block read ([`pre_read`]).
type Block = crate::formats::ReadBlock<Pre>;

impl Loader {
    /// Takes the lines of one block ([`crate::formats::read_block`]) in file order; answers
    /// how many were taken from their typed read.
    fn take_block(&mut self, block: Block, path: &Path) -> u64 {
        let mut typed = 0;
        for (line, complete, pre) in block {
            let (n, read) = (line.number(), line.bytes);
            match pre {
                Pre::Blank => {
                    self.s.other_bytes += read;
                    self.s.meta_lines.push(line, BLANK_KIND, None);
                }
                Pre::Item {
                    time,
                    mut m,
                    answer,
                    title,
                } => {
                    typed += 1;
                    let time = time.unwrap_or_else(|| {
                        m.set_time_created(self.time);
                        m.set_time_completed(Some(self.time).into());
                        self.time
                    });
                    self.time = time;
                    self.first = false;
                    self.last_answer = None;
                    if self.s.title.is_none() {
                        self.s.title = title;
                    }
                    let trigger = self.last_request;
                    self.take(std::iter::once(m), trigger, answer);
                }
                Pre::Other { time, o } => {
                    typed += 1;
                    if let Some(t) = time {
                        self.time = t;
                    }
                    self.first = false;
                    self.other(o, line);
                }
                Pre::Tree(v) => self.line(&v, line),
                Pre::Bad(err) => {
                    self.s.other_bytes += read;
                    self.s.meta_lines.push(line, UNREADABLE_KIND, None);
                    self.first = false;
                    let torn = !complete;
                    self.s.problems.push(LoadProblem {
                        location: format!("{}:line {n}", path.display()),
                        id: Some(ids::line(n).to_string()),
                        error: if torn {
                            format!("last line has no newline and is not complete JSON ({read} bytes): {err}")
                        } else {
                            err
                        },
                        kind: if torn {
                            ProblemKind::TornTail
                        } else {
                            ProblemKind::Unreadable
                        },
                        file: Some(0),
                        line: Some(n),
                        row: None,
                    });
                }
            }
        }
        typed
    }
}

/// [`load`], with the typed read of non-item lines and of the items
/// [`ItemFields`] takes (`fast`), or every line through a tree (the two must agree: a test loads every fixture both ways).
/// Also answers how many lines the typed read took. Two stages overlap:
/// while one block's lines are taken in file order (what depends on
/// earlier lines: usage owners, tool pairing, the model, times), the next
/// block is read and its lines parsed on every core
/// ([`crate::formats::read_block`]), so the session is the same for any
/// number of threads.
fn load_lines(
    r: impl Read + Send,
    path: &Path,
    id: &str,
    fast: bool,
    lines: u64,
    size_hint: u64,
) -> std::io::Result<(Session, u64)> {
    let mut typed = 0u64;
    let mut l = Loader {
        s: Session::new(Agent::Codex, "", None, path.to_path_buf()),
        first: true,
        provider: None,
        model: None,
        model_sym: None,
        other_roles: Vec::new(),
        candidate: None,
        prev_total: None,
        prev_total_raw: None,
        last_request: None,
        open_calls: HashMap::default(),
        call_names: HashMap::default(),
        last_answer: None,
        window: None,
        extra_types: BTreeMap::new(),
        estimates: 0,
        time: 0,
    };
    // One message per line, and room for a quarter more: the items of
    // `compacted` lines' histories. Growing past a reservation copies the
    // whole list into one twice its size; room never used is never touched,
    // so it costs address space, not memory. The estimate may be far too
    // high (a file of blank lines): a reservation refused under an
    // address-space limit is left out, never an abort.
    let lines = usize::try_from(lines).unwrap_or(0);
    let _ =
        l.s.messages
            .try_reserve_exact(lines.saturating_add(lines / 4));
    l.s.meta_lines.reserve(lines);
    let mut r = crate::formats::LineReader::new(r, size_hint);
    let mut offset = 0u64;
    let mut n = 0u64;
    let read = |line: LineRef, buf: &[u8]| pre_read(trim_eol(buf), fast, line);
    let too_long = |l: LineRef| Pre::Bad(crate::formats::overlong_line_error(l.bytes));
    let mut pending = crate::formats::read_block(&mut r, 0, &mut n, &mut offset, read, too_long)?;
    while let Some(block) = pending {
        let (next, took) = rayon::join(
            || crate::formats::read_block(&mut r, 0, &mut n, &mut offset, read, too_long),
            || l.take_block(block, path),
        );
        typed += took;
        pending = next?;
    }
    if l.s.id.is_empty() {
        l.s.id = id.to_string();
    }
    // No line but blank ones (an empty file): Codex refuses to resume it
    // ("empty session file"); it read as a healthy session with no message
    // (review of stop 41).
    if l.first {
        l.s.problems.push(LoadProblem {
            location: path.display().to_string(),
            id: None,
            error: format!(
                "{}: Codex refuses to resume it (\"empty session file\")",
                if offset == 0 {
                    "the rollout is empty".to_string()
                } else {
                    format!("the rollout holds only blank lines ({offset} bytes)")
                }
            ),
            kind: ProblemKind::Unreadable,
            file: Some(0),
            line: None,
            row: None,
        });
    }
    Ok((l.finish(), typed))
}

/// The session `bytes` loads as with the typed read and as through trees
/// only (the fuzz targets check that the two agree).
pub(crate) fn load_both_ways(bytes: &[u8], path: &Path) -> std::io::Result<(Session, Session)> {
    let n = bytes.len() as u64;
    let (fast, _) = load_lines(bytes, path, "fuzz", true, 0, n)?;
    let (tree, _) = load_lines(bytes, path, "fuzz", false, 0, n)?;
    Ok((fast, tree))
}

/// `buf` without its line ending.
pub fn trim_eol(buf: &[u8]) -> &[u8] {
    let mut b = buf;
    while let [rest @ .., b'\n' | b'\r'] = b {
        b = rest;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::load_lines;
    use std::path::Path;

    /// Lines of every kind the typed read takes or refuses, mixed into a
    /// real rollout: repeated keys, a payload that is not an object, a null
    /// payload or info, a non-string type or timestamp, escapes, a line
    /// nested too deep.
    const ODD_LINES: &[&str] = &[
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"total_tokens":9},"last_token_usage":{"input_tokens":5,"output_tokens":4,"total_tokens":9},"model_context_window":1000}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"event_msg","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"turn_context","payload":"not an object"}"#,
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"turn_context","payload":null}"#,
        r#"{"timestamp":12,"type":"turn_context","payload":{"model":"m\u00e9"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:05Z","type":7,"payload":{"type":"x"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:06Z","type":"event_msg","payload":{"type":"task_started","model_context_window":2.5}}"#,
        r#"{"timestamp":"2026-01-01T00:00:07Z","type":"event_msg","payload":{"type":"task_started","model_context_window":4000,"model_context_window":5000}}"#,
        r#"{"timestamp":"2026-01-01T00:00:08Z","type":"world_state","payload":{"type":["a"]}}"#,
        r#"{"record_type":"state"}"#,
        r#"["2026-01-01T00:00:09Z","event_msg",{"type":"agent_message"}]"#,
        r#"{"timestamp":"2026-01-01T00:00:10Z","payload":{"type":"agent_message"},"type":"event_msg","timestamp":"x"}"#,
        r#"{"payload":{"type":"message","role":"user","content":"late type"},"type":"response_item"}"#,
        r#"{"timestamp":"2026-01-01T00:00:11Z","type":"response_item","payload":{"type":"function_call","name":"f","arguments":{"a":1},"call_id":7,"id":"fc_1"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:12Z","type":"response_item","payload":{"type":"function_call_output","call_id":"fc_1","output":[{"type":"input_text","text":"x"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:13Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c","output":{"content":"session-doctor compact"}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:14Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":null}}"#,
        r#"{"timestamp":"2026-01-01T00:00:15Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"a\u00e9"},7,{"text":3},{"text":"b"}],"content":"c","encrypted_content":"gAAA"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:16Z","type":"response_item","payload":{"type":"reasoning","summary":[{"text":"a","text":"b"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:17Z","type":"response_item","payload":{"type":"custom_tool_call","name":"n","name":"m","input":"i"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:18Z","payload":{"type":"function_call","name":"late","arguments":"{}"},"type":"response_item"}"#,
        r#"{"timestamp":"2026-01-01T00:00:19Z","type":"response_item","payload":{"type":"function_call","name":"f","arguments":"\ud800"}}"#,
        r#"{"timestamp":7,"type":"response_item","payload":{"type":"local_shell_call_output","call_id":"c","output":"session-doctor compact \n done"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:20Z","type":"response_item","payload":{"name":"no type"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:21Z","type":"response_item","payload":"not an object"}"#,
        r#"{"timestamp":"2026-01-01T00:00:22Z","type":"event_msg","payload":["agent_message","m",7]}"#,
        // token_count info: a repeat (same total, other spacing and key
        // order), a null, a string or a repeated total, odd counts, a
        // repeated key at each level, an info that is not an object.
        r#"{"timestamp":"2026-01-01T00:00:23Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"total_tokens":9},"last_token_usage":{"input_tokens":5,"output_tokens":4,"total_tokens":9}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:24Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{ "total_tokens":9, "input_tokens":5 },"last_token_usage":{"total_tokens":9}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:25Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":null,"model_context_window":null}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:26Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":null,"last_token_usage":{"input_tokens":-3,"output_tokens":2.5,"total_tokens":"7","cached_input_tokens":1e2}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:27Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":"x","last_token_usage":{"total_tokens":0,"input_tokens":0},"model_context_window":-1}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:28Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":[1,{"a":2}],"last_token_usage":{"total_tokens":40},"model_context_window":3000}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:29Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":8},"total_token_usage":{"input_tokens":9},"last_token_usage":{"input_tokens":8}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:30Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10},"last_token_usage":{"input_tokens":8,"input_tokens":9,"extra":{"x":[1]}}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:31Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":11},"last_token_usage":7}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:32Z","type":"event_msg","payload":{"type":"token_count","info":[{"total_token_usage":{"input_tokens":12}}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:33Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":13},"last_token_usage":{"input_tokens":13},"rate":{"a":null}},"rate_limits":{"primary":{"used_percent":1.0}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:34Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":13},"last_token_usage":{"input_tokens":0,"total_tokens":500}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:35Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":13.0},"last_token_usage":{"input_tokens":1}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:36Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":77}}}}"#,
    ];

    /// `message` items of every shape the typed read takes or refuses: a
    /// rollout of them alone (its title from the first user message read
    /// typed) loads as the tree reader loads it.
    const MESSAGE_LINES: &[&str] = &[
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s1","model_provider":"openai"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"  Fix the build\nplease, caf\u00e9 \"now\"\t\u0001 and make it long enough to be cut at eighty characters for the title"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done.\nAll good."},{"type":"output_text","text":"second"},{"type":"refusal","refusal":"no"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"compacted","payload":{"message":"Done.\nAll good.\nsecond"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="},{"type":"input_image","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ","detail":"high"}},{"type":"image","image_url":7},{"type":"input_text","text":"look"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"message","role":"user","content":"plain string content"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:06Z","type":"response_item","payload":{"type":"message","role":"user","content":{"type":"input_text","text":"an object"}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:07Z","type":"response_item","payload":{"type":"message","role":"user","content":null}}"#,
        r#"{"timestamp":"2026-01-01T00:00:08Z","type":"response_item","payload":{"type":"message","role":"user","content":["x",3,1.0,1e2,-0,null,true,[],{},{"type":"other","n":18446744073709551616}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:09Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Another language model started to solve this problem: summary"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:10Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:11Z","type":"response_item","payload":{"type":"message","role":7,"content":[{"type":"input_text","text":"odd role"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:12Z","type":"response_item","payload":{"type":"message","content":[{"type":"input_text","text":"no role"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:13Z","type":"response_item","payload":{"content":[{"type":"input_text","text":"content first"}],"type":"message","role":"user"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:14Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:15Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"x","__session_doctor_note":true}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:16Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"x","$serde_json::private::RawValue":"1"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:17Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"x","meta":{"a":1,"a":2}}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:18Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"<!-- session-doctor compact --> kept","annotations":[],"logprobs":[{"p":-0.25}]}],"id":"msg_1","end_turn":true}}"#,
        r#"{"timestamp":"2026-01-01T00:00:19Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"\ud83d\ude00 \/ \u00e9"}],"role":"user"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:21Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"bad \ud800 surrogate"}]}}"#,
        r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"no time"}]}}"#,
    ];

    /// `message` items read typed load what their trees load: parts, bytes,
    /// roles, the summary and context flags, the title, the answer a
    /// `compacted` line carries; the lines the typed read refuses go to the
    /// tree.
    #[test]
    fn typed_message_items_match_the_tree_reader() {
        let text = MESSAGE_LINES.join("\n") + "\n";
        let typed = both_ways(text.as_bytes(), "messages.jsonl");
        assert!(typed >= 14, "{typed} lines read typed");
        let (s, _) = load_lines(text.as_bytes(), Path::new("m.jsonl"), "x", true, 0, 64).unwrap();
        assert!(s
            .title
            .as_deref()
            .is_some_and(|t| t.starts_with("Fix the build")));
        assert!(s
            .messages
            .iter()
            .any(|m| m.summary() && m.role() == crate::model::Role::Assistant));
    }

    /// Loads `bytes` both ways; answers how many lines the typed read took.
    fn both_ways(bytes: &[u8], name: &str) -> u64 {
        let (fast, typed) = load_lines(bytes, Path::new(name), "x", true, 0, 64).unwrap();
        let (tree, none) = load_lines(bytes, Path::new(name), "x", false, 0, 64).unwrap();
        assert!(!fast.messages.is_empty(), "{name}: nothing loaded");
        assert_eq!(none, 0);
        assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "{name}");
        typed
    }

    /// The typed read of non-item lines loads exactly what the tree reader
    /// loads, on every Codex fixture and on odd lines mixed into one.
    #[test]
    fn typed_read_of_other_lines_matches_the_tree_reader() {
        let (mut n, mut typed_files) = (0, 0);
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/codex")) {
            let e = e.unwrap();
            let name = e.path().display().to_string();
            if !name.ends_with(".jsonl") || name.contains("stub_requests") {
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap();
            if both_ways(&bytes, &name) > 0 {
                typed_files += 1;
            }
            let mut odd = bytes.clone();
            let mut deep = String::from(r#"{"type":"event_msg","payload":{"type":"x","y":"#);
            deep.push_str(&"[".repeat(200));
            deep.push_str(&"]".repeat(200));
            deep.push_str("}}");
            for l in ODD_LINES.iter().copied().chain([deep.as_str()]) {
                odd.extend_from_slice(l.as_bytes());
                odd.push(b'\n');
            }
            assert!(both_ways(&odd, &format!("{name} + odd lines")) >= 3);
            n += 1;
        }
        assert!(n >= 5, "{n} rollouts");
        assert!(typed_files >= 4, "{typed_files} of {n} rollouts read typed");
    }

    /// Two `total_token_usage` texts are the same total as read without a
    /// tree ([`super::FlatTotal`]) exactly when their trees are equal, for
    /// every pair of these shapes (reordered, partial, null, float,
    /// negative, `-0`, exponent, repeated or unknown key, escaped key,
    /// `u64::MAX` and past it); and Codex's own shape takes the flat read.
    #[test]
    fn flat_totals_are_equal_exactly_when_their_trees_are() {
        use super::{FlatTotal, SeenTotal};
        use serde_json::Value;
        let texts = [
            r#"{"input_tokens":5,"cached_input_tokens":0,"output_tokens":4,"reasoning_output_tokens":1,"total_tokens":9}"#,
            r#"{"total_tokens":9,"output_tokens":4,"input_tokens":5,"reasoning_output_tokens":1,"cached_input_tokens":0}"#,
            r#"{"input_tokens":5,"cached_input_tokens":0,"output_tokens":4,"reasoning_output_tokens":1,"total_tokens":10}"#,
            r#"{"input_tokens":5,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":5,"cached_input_tokens":null,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":5.0,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":5,"output_tokens":4,"total_tokens":9,"total_tokens":9}"#,
            r#"{"input_tokens":5,"output_tokens":4,"total_tokens":9,"extra":1}"#,
            r#"{"input_tokens":5,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":-0,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":0,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":-5,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":5e0,"output_tokens":4,"total_tokens":9}"#,
            r#"{"input_tokens":18446744073709551615}"#,
            r#"{"input_tokens":18446744073709551616}"#,
            r#"{}"#,
            r#"[]"#,
            r#"[5,0,4,1,9]"#,
            r#" {"input_tokens":5,"output_tokens":4,"total_tokens":9}"#,
            r#"7"#,
        ];
        let seen = |t: &str| match FlatTotal::read(t) {
            Some(f) => SeenTotal::Flat(f),
            None => SeenTotal::Tree(serde_json::from_str(t).unwrap()),
        };
        let mut flat = 0;
        for a in texts {
            flat += usize::from(matches!(seen(a), SeenTotal::Flat(_)));
            for b in texts {
                let (va, vb): (Value, Value) = (
                    serde_json::from_str(a).unwrap(),
                    serde_json::from_str(b).unwrap(),
                );
                assert_eq!(seen(a).same(&seen(b)), va == vb, "{a} vs {b}");
            }
        }
        assert!(matches!(seen(texts[0]), SeenTotal::Flat(_)));
        assert_eq!(flat, 9, "texts read flat");
    }

    /// The lines of a block are read on every core: a rollout of
    /// thousands of lines (a real one and the odd lines, repeated) loads
    /// the same on one thread, on four, and through trees.
    #[test]
    fn a_rollout_read_on_every_core_loads_what_one_core_loads() {
        let real = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/codex/codex-gen/multi/sessions/2026/11/22/rollout-2026-11-22T12-07-50-01a20327-d155-7513-b850-ad26df82d9ed.jsonl"
        ))
        .unwrap();
        let mut text = Vec::new();
        while text.len() < 1 << 21 {
            text.extend_from_slice(&real);
            for l in ODD_LINES {
                text.extend_from_slice(l.as_bytes());
                text.push(b'\n');
            }
        }
        let load = |threads: usize, fast: bool| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let n = text.len() as u64;
            let (s, _) = pool
                .install(|| load_lines(text.as_slice(), Path::new("r.jsonl"), "x", fast, 0, n))
                .unwrap();
            format!("{s:?}")
        };
        let one = load(1, true);
        assert!(one.len() > 100_000);
        assert_eq!(load(4, true), one);
        assert_eq!(load(4, false), one);
    }
}
