//! Reading docker-agent's stored items into the model, one item at a time
//! ([`Builder::push`]): a `message` item's `chat.Message` JSON, a `summary`,
//! `subsession`, `error` or `termination` item, from a `session_items` row
//! or from an entry of the legacy `sessions.messages` JSON array. Shapes:
//! docs/formats/docker-agent.md sections 3 to 5 and 8.
//!
//! A session keeps figures, not text: each item's JSON is parsed, measured
//! and dropped ([`Message::raw`] is only set for an item a treatment edited).
//! What the view, the tool-call pairing and the compactor rule need later is
//! kept per item as small [`Facts`].

use crate::measure::{char_count as chars, media_from_base64, parse_data_url};
use crate::model::*;
use serde_json::Value;

/// `chat.SummaryMessagePrefix`: docker-agent sends the last summary as a user
/// message with this prefix (docs/formats/docker-agent.md section 6).
pub const SUMMARY_PREFIX: &str = "Session Summary: ";
/// The result `sanitizeToolCalls` sends for a call without one.
pub const NO_RESULT: &str = "No result provided";
/// `model` of the summary items session-doctor's `compact` writes (no model
/// wrote them): such a summary is a manual compaction, never part of a loop.
pub const DOCTOR_MODEL: &str = "session-doctor";
/// Id prefix of items a treatment adds (they get a real row id in the copy).
pub const NEW_PREFIX: &str = "new-";

/// `item_type` of a stored item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Message,
    Subsession,
    Summary,
    Error,
    Termination,
    /// Any other `item_type`: docker-agent drops it silently on load.
    Other(String),
}

impl Kind {
    pub fn named(s: &str) -> Kind {
        match s {
            "message" => Kind::Message,
            "subsession" | "sub_session" => Kind::Subsession,
            "summary" => Kind::Summary,
            "error" => Kind::Error,
            "termination" => Kind::Termination,
            o => Kind::Other(o.to_string()),
        }
    }
}

/// One stored item with the columns docker-agent reads (a `session_items`
/// row, or a legacy JSON entry mapped onto the same columns).
#[derive(Debug, Clone)]
pub struct RawItem {
    /// `session_items.id` as text, or `json[k]` for a legacy entry.
    pub id: String,
    pub position: i64,
    pub kind: Kind,
    /// `message_json` (message, error and termination items), exact text.
    pub json: Option<String>,
    pub implicit: bool,
    /// `subsession_id`; for a legacy `sub_session` the embedded session's id.
    pub subsession: Option<String>,
    /// Whether `subsession` names a session of the store.
    pub sub_exists: bool,
    pub summary_text: String,
    pub first_kept: i64,
    pub model: String,
    pub usage_json: String,
    /// Where the item is, for load problems (`<db>: session_items row 40`).
    pub location: String,
}

impl RawItem {
    pub fn new(id: String, position: i64, kind: Kind, location: String) -> RawItem {
        RawItem {
            id,
            position,
            kind,
            json: None,
            implicit: false,
            subsession: None,
            sub_exists: false,
            summary_text: String::new(),
            first_kept: 0,
            model: String::new(),
            usage_json: String::new(),
            location,
        }
    }

    /// The columns of a summary item as one JSON object (what an edited or
    /// added summary keeps as its [`Message::raw`]).
    pub fn summary_object(&self) -> Value {
        serde_json::json!({
            "item_type": "summary",
            "position": self.position,
            "summary_text": self.summary_text,
            "first_kept_entry": self.first_kept,
            "model": self.model,
            "usage_json": self.usage_json,
        })
    }

    /// Puts back the columns of a summary object ([`RawItem::summary_object`]).
    pub fn set_summary_object(&mut self, v: &Value) {
        if let Some(t) = v.get("summary_text").and_then(Value::as_str) {
            self.summary_text = t.to_string();
        }
        if let Some(k) = v.get("first_kept_entry").and_then(Value::as_i64) {
            self.first_kept = k;
        }
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            self.model = m.to_string();
        }
        if let Some(u) = v.get("usage_json").and_then(Value::as_str) {
            self.usage_json = u.to_string();
        }
        if let Some(p) = v.get("position").and_then(Value::as_i64) {
            self.position = p;
        }
    }
}

/// Role of a `message` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgRole {
    User,
    Assistant,
    Tool,
    System,
    Other,
}

/// The figures the compactor's token estimate needs for a message
/// (`pkg/compaction`, docs/formats/docker-agent.md section 7).
#[derive(Debug, Clone, Default)]
pub struct Est {
    /// `int(bytes / 3.5) + 1500 per binary attachment + 5`, before calibration.
    pub heuristic: u64,
    /// `output_tokens - reasoning_tokens` (reasoning kept when the message
    /// stores `reasoning_content`); may be 0 or less.
    pub reported: i64,
    /// `input + cached_input + cached_write` of its usage (0 without usage).
    pub prompt: u64,
    /// `prompt + max(output - reasoning, 0)`.
    pub total: u64,
    /// `model` as stored.
    pub model: Option<Sym>,
}

/// What the later passes know of one item.
#[derive(Debug, Clone)]
pub enum What {
    Message {
        role: MsgRole,
        /// `normalizeMessageContent` drops it (whitespace only, nothing else).
        blank: bool,
        /// Tool call ids, with the index of each call's part.
        calls: Vec<(String, usize)>,
        /// The call a tool result answers.
        result_for: Option<String>,
        est: Est,
    },
    Summary {
        /// Bytes of `summary_text`; 0 is not a summary to docker-agent.
        text_bytes: u64,
        stored: i64,
        /// Written by session-doctor's `compact` (holds the previous
        /// summary and keeps the turns asked for).
        doctor: bool,
    },
    /// In docker-agent's item list but never sent: a sub-session reference,
    /// an error or termination item, an unreadable row.
    Silent,
}

/// One item: its message in the session and its place in docker-agent's
/// in-memory list (`None` when docker-agent skips it on load).
#[derive(Debug, Clone)]
pub struct Facts {
    pub msg: Option<usize>,
    pub slice: Option<usize>,
    pub what: What,
}

/// Milliseconds since the Unix epoch of an RFC 3339 time
/// (`2026-02-03T09:16:26+01:00`, fractions and `Z` accepted).
pub fn rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) && !t.is_empty() {
            t.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = s.get(start..i)?;
        let f3: String = frac.chars().chain("000".chars()).take(3).collect();
        ms = f3.parse().ok()?;
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') => 0,
        Some(&c @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let o = oh * 60 + om;
            if c == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60;
    Some(secs * 1000 + ms)
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn blank(s: Option<&str>) -> bool {
    s.is_none_or(|t| t.trim().is_empty())
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
        .unwrap_or(0)
}

/// A `chat.Usage` object in the model's terms: `input` = `input_tokens`
/// (cached tokens are counted apart), `cache_read` = `cached_input_tokens`,
/// `cache_write` = `cached_write_tokens`, `output` = `output_tokens`
/// (reasoning included), `reasoning` = `reasoning_tokens`. The overflow
/// count is then the context size docker-agent's session counters hold.
pub fn usage_of(u: &Value) -> Usage {
    Usage {
        input: u64_of(u, "input_tokens"),
        output: u64_of(u, "output_tokens"),
        reasoning: u64_of(u, "reasoning_tokens"),
        cache_read: u64_of(u, "cached_input_tokens"),
        cache_write: u64_of(u, "cached_write_tokens"),
        total: None,
    }
}

/// `provider/model` for a stored model id: docker-agent stores the bare id
/// (`claude-sonnet-4-5-20250929`); the provider is inferred from the id's
/// family so the built-in and models.dev limits can be found.
pub fn model_name(m: &str) -> Option<Sym> {
    if m.is_empty() {
        return None;
    }
    if m.contains('/') {
        return Some(sym(m));
    }
    let provider = if m.starts_with("claude") {
        Some("anthropic")
    } else if m.starts_with("gpt")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
    {
        Some("openai")
    } else if m.starts_with("gemini") {
        Some("google")
    } else {
        None
    };
    Some(match provider {
        Some(p) => sym(&format!("{p}/{m}")),
        None => sym(m),
    })
}

/// Id of part `name` of item `id` (`40#content`, `40#call1`, `40#mc2`).
pub fn part_id(id: &str, name: &str) -> String {
    format!("{id}#{name}")
}

fn part(id: &str, name: &str, kind: PartKind, kind_name: &str, wire: u64, chars_: u64) -> Part {
    let mut p = Part::empty(part_id(id, name), kind, kind_name);
    p.set_wire_bytes(wire);
    p.set_payload_bytes(wire);
    p.set_model_chars(chars_);
    p
}

/// The compactor's per-message heuristic (`pkg/compaction`
/// `EstimateMessageTokens` without calibration): bytes of content,
/// reasoning, text parts (a first text part equal to the content is not
/// counted twice), document inline text, tool-call names and arguments,
/// `/ 3.5`, plus 1500 per binary attachment and 5 per message.
fn heuristic(v: &Value) -> u64 {
    let content = str_at(v, "content").unwrap_or("");
    let mut bytes =
        content.len() as u64 + str_at(v, "reasoning_content").map_or(0, str::len) as u64;
    let mut attachments = 0u64;
    let mut skipped_mirror = content.is_empty();
    for p in v
        .get("multi_content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = str_at(p, "text");
        if !skipped_mirror && str_at(p, "type") == Some("text") && text == Some(content) {
            skipped_mirror = true;
            continue;
        }
        bytes += text.map_or(0, str::len) as u64;
        if let Some(doc) = p.get("document").filter(|d| !d.is_null()) {
            let src = doc.get("source").unwrap_or(&Value::Null);
            bytes += str_at(src, "inline_text").map_or(0, str::len) as u64;
            if str_at(src, "inline_data").is_some_and(|d| !d.is_empty()) {
                attachments += 1;
            }
        }
        if p.get("image_url").is_some_and(|x| !x.is_null())
            || p.get("file").is_some_and(|x| !x.is_null())
        {
            attachments += 1;
        }
    }
    let calls = v.get("tool_calls").and_then(Value::as_array);
    for f in calls
        .into_iter()
        .flatten()
        .map(|tc| tc.get("function").unwrap_or(&Value::Null))
        .chain(v.get("function_call").filter(|f| !f.is_null()))
    {
        bytes += str_at(f, "arguments").map_or(0, str::len) as u64
            + str_at(f, "name").map_or(0, str::len) as u64;
    }
    bytes * 2 / 7 + attachments * 1500 + 5
}

/// The compactor's figures of a message.
fn est_of(v: &Value) -> Est {
    let heuristic = heuristic(v);
    let Some(u) = v.get("usage").filter(|u| u.is_object()) else {
        return Est {
            heuristic,
            model: str_at(v, "model").filter(|m| !m.is_empty()).map(sym),
            ..Default::default()
        };
    };
    let out = u64_of(u, "output_tokens") as i64;
    let reasoning = u64_of(u, "reasoning_tokens") as i64;
    let has_reasoning = !str_at(v, "reasoning_content").unwrap_or("").is_empty();
    let prompt = u64_of(u, "input_tokens")
        + u64_of(u, "cached_input_tokens")
        + u64_of(u, "cached_write_tokens");
    Est {
        heuristic,
        reported: if has_reasoning { out } else { out - reasoning },
        prompt,
        total: prompt + (out - reasoning).max(0) as u64,
        model: str_at(v, "model").filter(|m| !m.is_empty()).map(sym),
    }
}

/// `normalizeMessageContent` drops this message (non-tool, whitespace-only
/// content, and no multi-content, tool call or function call; or only
/// whitespace text parts).
fn is_blank(v: &Value, role: MsgRole) -> bool {
    if role == MsgRole::Tool {
        return false;
    }
    let mc = v.get("multi_content").and_then(Value::as_array);
    match mc.filter(|a| !a.is_empty()) {
        Some(parts) => parts
            .iter()
            .all(|p| str_at(p, "type") == Some("text") && blank(str_at(p, "text"))),
        None => {
            blank(str_at(v, "content"))
                && v.get("tool_calls")
                    .and_then(Value::as_array)
                    .is_none_or(|a| a.is_empty())
                && v.get("function_call").is_none_or(Value::is_null)
        }
    }
}

/// A `chat.Message`'s `role`.
const ROLE: crate::formats::Required = crate::formats::Required {
    path: &["role"],
    kind: "string",
    expected: "a string",
    within: "",
};

/// Builds the message of a `message` item from its `chat.Message` JSON `v`,
/// stored in `bytes` bytes. The parts' bytes add up to `bytes`: the content
/// part also carries the JSON around the content (keys, usage, times).
pub fn message_item(
    item: &RawItem,
    v: &Value,
    bytes: u64,
    time: i64,
) -> std::result::Result<(Message, What), String> {
    if !v.is_object() {
        return Err("expected a JSON object (chat.Message)".into());
    }
    let id = item.id.as_str();
    let role_s = match str_at(v, "role") {
        Some(r) => r,
        // Absent or null, docker-agent reads an empty role; of another type, its
        // JSON decoder refuses the message.
        None if v.get("role").is_none_or(Value::is_null) => return Err(ROLE.error(v)),
        None => {
            return Err(format!(
                "{} (docker-agent cannot load this session)",
                ROLE.error(v)
            ))
        }
    };
    let role = match role_s {
        "user" => MsgRole::User,
        "assistant" => MsgRole::Assistant,
        "tool" => MsgRole::Tool,
        "system" => MsgRole::System,
        _ => MsgRole::Other,
    };
    let created = str_at(v, "created_at").and_then(rfc3339_ms);
    let content = str_at(v, "content").unwrap_or("");
    let mc = v.get("multi_content").and_then(Value::as_array);
    let has_mc = mc.is_some_and(|a| !a.is_empty());
    let mut parts: Vec<Part> = Vec::new();
    let mut calls = Vec::new();
    let mut result_for = None;
    if role == MsgRole::Tool {
        let call_id = str_at(v, "tool_call_id").unwrap_or("").to_string();
        let mut p = part(
            id,
            "result",
            PartKind::Tool,
            "tool_result",
            content.len() as u64,
            chars(content),
        );
        let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        p.tool = Some(Box::new(ToolCall {
            name: sym(""),
            call_id: call_id.as_str().into(),
            status: if is_error {
                ToolStatus::Error
            } else {
                ToolStatus::Completed
            },
            output_chars: ToolCall::chars(chars(content)),
            output_cleared: false,
        }));
        if !call_id.is_empty() {
            result_for = Some(call_id);
        }
        parts.push(p);
    } else {
        // With multi-content the provider adapters send the parts, not the
        // content (which mirrors the first text part).
        let c = if has_mc { 0 } else { chars(content) };
        parts.push(part(
            id,
            "content",
            PartKind::Text,
            "text",
            content.len() as u64,
            c,
        ));
    }
    for (k, p) in mc.into_iter().flatten().enumerate() {
        let name = format!("mc{k}");
        let ty = str_at(p, "type").unwrap_or("");
        match ty {
            "text" => {
                let t = str_at(p, "text").unwrap_or("");
                parts.push(part(
                    id,
                    &name,
                    PartKind::Text,
                    "text",
                    t.len() as u64,
                    chars(t),
                ));
            }
            "image_url" => {
                let url = p
                    .pointer("/image_url/url")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let mut x = part(id, &name, PartKind::File, "image_url", url.len() as u64, 0);
                x.media_mut().extend(parse_data_url(url, None));
                parts.push(x);
            }
            "document" => {
                let doc = p.get("document").unwrap_or(&Value::Null);
                let src = doc.get("source").unwrap_or(&Value::Null);
                let data = str_at(src, "inline_data").unwrap_or("");
                let text = str_at(src, "inline_text").unwrap_or("");
                let mut x = part(
                    id,
                    &name,
                    PartKind::File,
                    "document",
                    (data.len() + text.len()) as u64,
                    chars(text),
                );
                if !data.is_empty() {
                    x.media_mut().push(media_from_base64(
                        str_at(doc, "mime_type").unwrap_or(""),
                        data,
                        str_at(doc, "name"),
                    ));
                }
                parts.push(x);
            }
            other => {
                let kind_name = if other.is_empty() { "part" } else { other };
                parts.push(part(id, &name, PartKind::File, kind_name, 0, 0));
            }
        }
    }
    if let Some(r) = str_at(v, "reasoning_content").filter(|r| !r.is_empty()) {
        parts.push(part(
            id,
            "reasoning",
            PartKind::Reasoning,
            "reasoning",
            r.len() as u64,
            chars(r),
        ));
    }
    for (k, tc) in v
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = tc.get("function").unwrap_or(&Value::Null);
        let name = str_at(f, "name").unwrap_or("");
        let args = str_at(f, "arguments").unwrap_or("");
        let call_id = str_at(tc, "id").unwrap_or("").to_string();
        let mut p = part(
            id,
            &format!("call{k}"),
            PartKind::Tool,
            "tool_call",
            (name.len() + args.len()) as u64,
            chars(name) + chars(args),
        );
        p.tool = Some(Box::new(ToolCall {
            name: sym(name),
            call_id: call_id.as_str().into(),
            status: ToolStatus::Pending,
            output_chars: 0,
            output_cleared: false,
        }));
        calls.push((call_id, parts.len()));
        parts.push(p);
    }
    if let Some(td) = v.get("tool_definitions").filter(|t| !t.is_null()) {
        let n = serde_json::to_string(td).map_or(0, |s| super::edit::go_escaped_len(&s));
        parts.push(part(
            id,
            "tool_definitions",
            PartKind::Other,
            "tool_definitions",
            n,
            0,
        ));
    }
    // Text that session-doctor compact left in place of what it cut.
    let marked = crate::measure::has_compact_marker(content)
        || mc
            .into_iter()
            .flatten()
            .any(|p| str_at(p, "text").is_some_and(crate::measure::has_compact_marker));
    if marked {
        parts.iter_mut().for_each(|p| p.rewritten = true);
    }
    // The JSON around the content goes with the first part.
    let counted: u64 = parts.iter().map(|p| p.wire_bytes()).sum();
    if let Some(first) = parts.first_mut() {
        first.set_wire_bytes(first.wire_bytes() + bytes.saturating_sub(counted));
        first.set_payload_bytes(first.wire_bytes());
    }
    let implicit = item.implicit || v.get("implicit").and_then(Value::as_bool) == Some(true);
    if implicit {
        parts.iter_mut().for_each(|p| p.synthetic = true);
    }
    let usage = v
        .get("usage")
        .filter(|u| u.is_object())
        .map(usage_of)
        .unwrap_or_default();
    let finish = str_at(v, "finish_reason")
        .filter(|f| !f.is_empty())
        .map(sym)
        // Older docker-agent stores no finish reason: an assistant that has
        // usage is a finished response (the streaming row has none).
        .or_else(|| (role == MsgRole::Assistant && !usage.is_zero()).then(|| sym("completed")));
    let m = Message::from(MessageFields {
        id: id.into(),
        role: Role::named(role_s),
        parent_id: None,
        line: None,
        sidechain: false,
        parent_optional: false,
        response_id: None,
        time_created: created.unwrap_or(time),
        time_completed: created.into(),
        summary: false,
        finish,
        usage: usage.boxed(),
        model: if role == MsgRole::Assistant {
            str_at(v, "model").and_then(model_name)
        } else {
            None
        },
        info_bytes: 0,
        parts: parts.into(),
        rare: None,
    });
    let what = What::Message {
        role,
        blank: is_blank(v, role),
        calls,
        result_for,
        est: est_of(v),
    };
    Ok((m, what))
}

/// A message without parts (sub-session reference, error, termination,
/// other item types).
pub fn bare(id: &str, role: &str, time: i64, info_bytes: u64) -> Message {
    Message::from(MessageFields {
        time_created: time,
        info_bytes,
        ..MessageFields::new(id, Role::Other(sym(role)))
    })
}

/// The message of a `summary` item: a compaction marker whose part is what
/// docker-agent sends for it ("Session Summary: " + text, as a user message).
pub fn summary_item(item: &RawItem, time: i64) -> std::result::Result<(Message, What), String> {
    let usage = if item.usage_json.trim().is_empty() {
        Usage::default()
    } else {
        let u: Value = serde_json::from_str(&item.usage_json).map_err(|e| {
            format!("invalid JSON in `usage_json` (docker-agent cannot load this session): {e}")
        })?;
        usage_of(&u)
    };
    let mut m = bare(&item.id, "summary", time, item.usage_json.len() as u64);
    m.set_usage(usage);
    m.set_model(model_name(&item.model));
    let text = item.summary_text.as_str();
    let doctor = item.model == DOCTOR_MODEL;
    if !text.is_empty() {
        m.set_summary(true);
        m.set_time_completed(Some(time).into());
        let sent = SUMMARY_PREFIX.len() + text.len();
        let mut p = part(
            &item.id,
            "summary",
            PartKind::Compaction,
            "summary",
            sent as u64,
            chars(SUMMARY_PREFIX) + chars(text),
        );
        p.set_payload_bytes(text.len() as u64);
        p.synthetic = doctor;
        // session-doctor's own compaction: the counts reported before it
        // are about the history it cut (`check` on the copy calibrates on
        // the first turn, as compact planned it).
        p.rewritten = doctor;
        p.set_compaction(Some(Box::new(CompactionMarker {
            // docker-agent stores no manual/automatic distinction; the
            // summaries session-doctor writes are manual.
            auto: !doctor,
            prunes: true,
            ..Default::default()
        })));
        m.parts.push(p);
    } else {
        m.set_info_bytes(m.info_bytes() + text.len() as u64);
    }
    Ok((
        m,
        What::Summary {
            text_bytes: text.len() as u64,
            stored: item.first_kept,
            doctor,
        },
    ))
}

/// HTTP status named in a stored error text (`HTTP 413: …`, `413 Request …`,
/// `: 400 Bad Request`).
fn status_in(text: &str) -> Option<u16> {
    let code = |t: &str| -> Option<u16> {
        let d: String = t.chars().take(3).collect();
        (d.len() == 3
            && d.bytes().all(|b| b.is_ascii_digit())
            && t.get(3..).is_some_and(|r| r.starts_with([' ', ':'])))
        .then(|| d.parse().ok())
        .flatten()
        .filter(|c| (400..600).contains(c))
    };
    if let Some(i) = text.find("HTTP ") {
        if let Some(c) = text.get(i + 5..).and_then(code) {
            return Some(c);
        }
    }
    if let Some(c) = code(text) {
        return Some(c);
    }
    text.match_indices(": ")
        .find_map(|(i, _)| text.get(i + 2..).and_then(code))
}

/// The message of an `error` item: its stored error (`name` = docker-agent's
/// error `code`, else `error`), classified later by `overflow-error`.
pub fn error_item(item: &RawItem, time: i64) -> std::result::Result<Message, String> {
    let text = item.json.as_deref().unwrap_or("");
    let mut m = bare(&item.id, "error", time, text.len() as u64);
    if text.trim().is_empty() {
        m.rare_mut().error = Some(StoredError {
            name: "error".into(),
            status_code: None,
            message: String::new(),
            response_body: None,
        });
        return Ok(m);
    }
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON in `message_json`: {e}"))?;
    let message = str_at(&v, "message").unwrap_or("").to_string();
    let code = str_at(&v, "code").unwrap_or("");
    if let Some(t) = str_at(&v, "created_at").and_then(rfc3339_ms) {
        m.set_time_created(t);
    }
    m.rare_mut().error = Some(StoredError {
        name: if code.is_empty() { "error" } else { code }.to_string(),
        status_code: status_in(&message),
        message,
        response_body: None,
    });
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_with_offsets_and_fractions() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            rfc3339_ms("2026-02-03T09:16:26+01:00"),
            Some(1_770_106_586_000)
        );
        assert_eq!(
            rfc3339_ms("2026-02-03T09:16:26.5+01:00"),
            Some(1_770_106_586_500)
        );
        assert_eq!(rfc3339_ms("not a time"), None);
    }

    #[test]
    fn statuses_in_error_texts() {
        assert_eq!(status_in("HTTP 413: request_too_large: x"), Some(413));
        assert_eq!(status_in("413 Request Entity Too Large"), Some(413));
        assert_eq!(status_in("POST \"u\": 400 Bad Request {…}"), Some(400));
        assert_eq!(status_in("no status"), None);
    }

    #[test]
    fn heuristic_skips_the_mirrored_first_text_part() {
        let v: Value = serde_json::json!({"role":"user","content":"abcdefg",
            "multi_content":[{"type":"text","text":"abcdefg"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]});
        assert_eq!(heuristic(&v), 7 * 2 / 7 + 1500 + 5);
    }
}
