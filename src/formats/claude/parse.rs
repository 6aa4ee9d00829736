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

use super::{field, file_name, view};
use crate::measure::media_from_base64;
use crate::model::*;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read, Seek};
use std::path::{Path, PathBuf};

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

use crate::measure::char_count as chars;

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp; 0 when absent or unparsable.
fn millis(ts: Option<&str>) -> i64 {
    ts.and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Serialized length of a JSON value (Claude Code writes compact JSON).
fn json_len(v: &Value) -> u64 {
    serde_json::to_string(v)
        .map(|s| s.len() as u64)
        .unwrap_or(0)
}

/// Text of a `tool_result.content` (a string, or the `text` blocks of an array).
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

/// A base64 `image` / `document` block's media.
fn block_media(b: &Value) -> Option<Media> {
    let src = b.get("source")?;
    if str_of(src, "type") != Some("base64") {
        return None;
    }
    let data = str_of(src, "data")?;
    Some(media_from_base64(
        str_of(src, "media_type").unwrap_or(""),
        data,
        None,
    ))
}

fn part(id: String, _message_id: &str, kind: PartKind, kind_name: &str) -> Part {
    Part::empty(id, kind, kind_name)
}

/// The parts of a line's `message.content` (a string, or blocks).
fn content_parts(uuid: &str, content: &Value, tool_use_result_bytes: u64) -> Vec<Part> {
    let mut out = Vec::new();
    match content {
        Value::String(s) => {
            let mut p = part(format!("{uuid}#0"), uuid, PartKind::Text, "text");
            p.model_chars = chars(s);
            p.wire_bytes = s.len() as u64;
            p.payload_bytes = json_len(content);
            out.push(p);
        }
        Value::Array(blocks) => {
            let mut tool_use_result = tool_use_result_bytes;
            for (k, b) in blocks.iter().enumerate() {
                let kind_name = str_of(b, "type").unwrap_or("");
                let id = format!("{uuid}#{k}");
                let mut p = match kind_name {
                    "text" => {
                        let t = str_of(b, "text").unwrap_or("");
                        let mut p = part(id, uuid, PartKind::Text, kind_name);
                        p.model_chars = chars(t);
                        p.wire_bytes = t.len() as u64;
                        p
                    }
                    "thinking" | "redacted_thinking" => {
                        let t = str_of(b, "thinking")
                            .or_else(|| str_of(b, "data"))
                            .unwrap_or("");
                        let mut p = part(id, uuid, PartKind::Reasoning, kind_name);
                        p.model_chars = chars(t);
                        p.wire_bytes = t.len() as u64;
                        p
                    }
                    "tool_use" | "server_tool_use" => {
                        let input = b.get("input").map(Value::to_string).unwrap_or_default();
                        let mut p = part(id, uuid, PartKind::Tool, kind_name);
                        p.model_chars = chars(&input);
                        p.wire_bytes = input.len() as u64;
                        p.tool = Some(Box::new(ToolCall {
                            name: str_of(b, "name").unwrap_or("").to_string(),
                            call_id: str_of(b, "id").unwrap_or("").to_string(),
                            // Resolved once every line is read (a result may come later).
                            status: ToolStatus::Pending,
                            output_chars: 0,
                            output_cleared: false,
                        }));
                        p
                    }
                    "tool_result" => {
                        let text = result_text(b.get("content"));
                        let mut p = part(id, uuid, PartKind::Tool, kind_name);
                        p.model_chars = chars(&text);
                        p.wire_bytes = text.len() as u64;
                        if let Some(Value::Array(inner)) = b.get("content") {
                            for m in inner.iter().filter_map(block_media) {
                                p.wire_bytes += m.encoded_bytes;
                                p.media.push(m);
                            }
                        }
                        p.tool = Some(Box::new(ToolCall {
                            name: String::new(),
                            call_id: str_of(b, "tool_use_id").unwrap_or("").to_string(),
                            status: if flag(b, "is_error") {
                                ToolStatus::Error
                            } else {
                                ToolStatus::Completed
                            },
                            output_chars: chars(&text),
                            output_cleared: false,
                        }));
                        // The structured copy of the output sits beside it in the line.
                        p.payload_bytes += std::mem::take(&mut tool_use_result);
                        p
                    }
                    "image" | "document" => {
                        let mut p = part(id, uuid, PartKind::File, kind_name);
                        if let Some(m) = block_media(b) {
                            p.wire_bytes = m.encoded_bytes;
                            p.media.push(m);
                        }
                        p
                    }
                    other => {
                        let s = b.to_string();
                        let mut p = part(id, uuid, PartKind::Other(other.to_string()), other);
                        p.model_chars = chars(&s);
                        p.wire_bytes = s.len() as u64;
                        p
                    }
                };
                p.payload_bytes += json_len(b);
                out.push(p);
            }
        }
        _ => {}
    }
    out
}

/// Builds the message of one transcript line `v`, stored at `line` (its
/// `bytes` are the message's stored bytes); `sidechain_file` is true for
/// sub-agent files. `None` for a line without a `uuid`.
pub(crate) fn parse_line(v: &Value, line: LineRef, sidechain_file: bool) -> Option<Message> {
    let uuid = str_of(v, field::UUID)?.to_string();
    let kind = str_of(v, "type").unwrap_or("");
    let subtype = str_of(v, "subtype").unwrap_or("");
    let role = Role::named(kind);
    let msg = v.get("message").filter(|m| m.is_object());
    let model_name = msg.and_then(|m| str_of(m, "model"));
    let synthetic_reply = model_name == Some("<synthetic>");
    let sidechain = sidechain_file || flag(v, "isSidechain");
    let time_created = millis(str_of(v, "timestamp"));
    let mut usage = Usage::default();
    let mut response_id = None;
    let mut finish = None;
    let mut error = None;
    if role == Role::Assistant {
        if let Some(u) = msg.and_then(|m| m.get("usage")) {
            usage = Usage {
                input: u64_of(u, "input_tokens"),
                output: u64_of(u, "output_tokens"),
                reasoning: 0,
                cache_read: u64_of(u, "cache_read_input_tokens"),
                cache_write: u64_of(u, "cache_creation_input_tokens"),
                total: None,
            };
            usage.total = Some(usage.input + usage.cache_write + usage.cache_read);
        }
        if let (Some(id), Some(req)) = (msg.and_then(|m| str_of(m, "id")), str_of(v, "requestId")) {
            if !id.is_empty() && !req.is_empty() {
                response_id = Some(format!("{id}:{req}"));
            }
        }
        if flag(v, "isApiErrorMessage") {
            let text = msg
                .and_then(|m| m.get("content"))
                .map(|c| result_text(Some(c)))
                .unwrap_or_default();
            error = Some(Box::new(StoredError {
                name: str_of(v, "error").unwrap_or("APIError").to_string(),
                status_code: v
                    .get("apiErrorStatus")
                    .and_then(Value::as_u64)
                    .map(|c| c as u16),
                message: text,
                response_body: None,
            }));
        } else if !synthetic_reply {
            // Claude Code writes each content block once it is complete;
            // `stop_reason` is mostly null in transcripts.
            finish = Some(
                msg.and_then(|m| str_of(m, "stop_reason"))
                    .unwrap_or("unknown")
                    .to_string(),
            );
        }
    }
    let tool_use_result_bytes = v.get("toolUseResult").map(json_len).unwrap_or(0);
    let mut parts = match msg.and_then(|m| m.get("content")) {
        Some(c) => content_parts(&uuid, c, tool_use_result_bytes),
        None => Vec::new(),
    };
    if kind == "attachment" {
        if let Some(a) = v.get("attachment") {
            let s = a.to_string();
            let mut p = part(
                format!("{uuid}#attachment"),
                &uuid,
                PartKind::Other("attachment".into()),
                "attachment",
            );
            p.model_chars = chars(&s);
            p.wire_bytes = s.len() as u64;
            p.payload_bytes = s.len() as u64;
            p.synthetic = true;
            parts.push(p);
        }
    }
    let boundary = kind == "system" && subtype == "compact_boundary";
    if boundary {
        let meta = v.get("compactMetadata").cloned().unwrap_or(Value::Null);
        let mut p = part(
            format!("{uuid}#compactMetadata"),
            &uuid,
            PartKind::Compaction,
            "compact_boundary",
        );
        p.payload_bytes = json_len(&meta);
        p.compaction = Some(Box::new(CompactionMarker {
            auto: str_of(&meta, "trigger") == Some("auto"),
            trigger_tokens: meta.get("preTokens").and_then(Value::as_u64),
            post_tokens: meta.get("postTokens").and_then(Value::as_u64),
            // Resolved against the other lines by `view::resolve_markers`.
            ..Default::default()
        }));
        parts.push(p);
    }
    if synthetic_reply || flag(v, "isMeta") {
        for p in &mut parts {
            p.synthetic = true;
        }
    }
    parts.shrink_to_fit();
    let parts_bytes: u64 = parts.iter().map(|p| p.payload_bytes).sum();
    let parent_optional = sidechain
        || matches!(kind, "progress" | "attachment")
        || (kind == "system" && matches!(subtype, "compact_boundary" | "local_command"));
    Some(Message {
        id: uuid,
        role,
        parent_id: str_of(v, field::PARENT).map(str::to_string),
        logical_parent_id: str_of(v, field::LOGICAL_PARENT).map(str::to_string),
        line: Some(line),
        sidechain,
        parent_optional,
        response_id,
        time_created,
        time_completed: (kind == "assistant").then_some(time_created),
        summary: flag(v, "isCompactSummary"),
        finish: finish.map(|f: String| sym(&f)),
        error,
        usage,
        model: model_name
            .filter(|m| !synthetic_reply && !m.is_empty())
            .map(|m| sym(&format!("anthropic/{m}"))),
        info_bytes: line.bytes.saturating_sub(parts_bytes),
        parts,
        // Only boundary lines keep their JSON (small, needed to resolve the
        // preserved segment); other lines are re-read by offset.
        raw: boundary.then(|| Box::new(v.clone())),
    })
}

/// Titles, by preference: `custom-title`, `ai-title`, legacy `summary`.
#[derive(Default)]
struct Titles {
    custom: Option<String>,
    ai: Option<String>,
    summary: Option<String>,
}

/// Content of a line with the bookkeeping fields that differ between
/// re-written copies removed (`slug`, `promptId`, `timestamp`).
fn fingerprint(v: &Value) -> String {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for k in ["slug", "promptId", "timestamp"] {
            o.remove(k);
        }
    }
    v.to_string()
}

/// Re-reads the line at `offset` (`bytes` long) of `path`.
pub(super) fn read_line_at(path: &Path, offset: u64, bytes: u64) -> Result<Vec<u8>> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    f.seek(std::io::SeekFrom::Start(offset))?;
    let mut buf = vec![0; bytes as usize];
    f.read_exact(&mut buf)
        .with_context(|| format!("{}: cannot read at byte {offset}", path.display()))?;
    Ok(buf)
}

/// The id a torn last line gets in [`LoadProblem::id`] (and in the edit that drops it).
pub(super) fn problem_id(path: &Path, line: u64) -> String {
    format!("{}:{line}", file_name(path))
}

/// Streams one file into `s` up to its size when opened (the snapshot's
/// length, returned). `fi` is the file's index in `s.files`.
fn read_file(s: &mut Session, fi: usize, path: &Path, titles: &mut Titles) -> Result<u64> {
    let f = crate::fsx::open_regular(path)
        .with_context(|| format!("{}: cannot open", path.display()))?;
    let file_len = f
        .metadata()
        .with_context(|| format!("{}: cannot read", path.display()))?
        .len();
    let mut r = std::io::BufReader::with_capacity(1 << 20, f.take(file_len));
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut n = 0u64;
    // uuid -> its first line in this file
    let mut seen: HashMap<String, LineRef> = HashMap::new();
    loop {
        buf.clear();
        let len = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("{}: cannot read after line {n}", path.display()))?
            as u64;
        if len == 0 {
            break;
        }
        n += 1;
        let line = LineRef {
            file: fi,
            line: n,
            offset,
            bytes: len,
        };
        offset += len;
        let has_newline = buf.last() == Some(&b'\n');
        let body = buf.trim_ascii_end();
        if body.is_empty() {
            s.other_bytes += len;
            continue;
        }
        let v: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                s.other_bytes += len;
                let torn = !has_newline;
                s.problems.push(LoadProblem {
                    location: format!("{}:line {n}", path.display()),
                    id: Some(problem_id(path, n)),
                    error: if torn {
                        format!("the last line ({len} bytes) has no newline and is not complete JSON ({e}): the agent stopped while writing it")
                    } else {
                        format!("invalid JSON: {e}")
                    },
                    kind: if torn {
                        ProblemKind::TornTail
                    } else {
                        ProblemKind::Unreadable
                    },
                    file: Some(fi),
                });
                continue;
            }
        };
        if !v.is_object() {
            s.other_bytes += len;
            s.problems.push(LoadProblem {
                location: format!("{}:line {n}", path.display()),
                id: Some(problem_id(path, n)),
                error: "expected a JSON object".into(),
                kind: ProblemKind::Unreadable,
                file: Some(fi),
            });
            continue;
        }
        match parse_line(&v, line, fi > 0) {
            Some(m) => {
                match seen.get(&m.id) {
                    Some(first) => {
                        let same = read_line_at(path, first.offset, first.bytes)
                            .ok()
                            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                            .is_some_and(|f| fingerprint(&f) == fingerprint(&v));
                        s.duplicate_ids.push(DuplicateId {
                            id: m.id.clone(),
                            place: format!(
                                "{} line {n}, first at line {}",
                                file_name(path),
                                first.line
                            ),
                            same_content: same,
                        });
                    }
                    None => {
                        seen.insert(m.id.clone(), line);
                    }
                }
                s.messages.push(m);
            }
            None => {
                s.other_bytes += len;
                if fi == 0 {
                    match str_of(&v, "type") {
                        Some("last-prompt") => {
                            if let Some(l) = str_of(&v, field::LEAF) {
                                s.leaf_id = Some(l.to_string());
                            }
                        }
                        Some("custom-title") => {
                            titles.custom = str_of(&v, "customTitle")
                                .or_else(|| str_of(&v, "title"))
                                .map(str::to_string)
                                .or(titles.custom.take());
                        }
                        Some("ai-title") => {
                            titles.ai = str_of(&v, "aiTitle")
                                .or_else(|| str_of(&v, "title"))
                                .map(str::to_string)
                                .or(titles.ai.take());
                        }
                        Some("summary") if titles.summary.is_none() => {
                            titles.summary = str_of(&v, "summary").map(str::to_string);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(file_len)
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

/// Everything that depends on all lines at once; run after loading and
/// after edits: tool call status, first lines of files (a resumed session
/// names its parent in the previous session's file), compaction markers,
/// the visible view, notes.
pub(super) fn finish(s: &mut Session) {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut results: HashMap<String, ToolStatus> = HashMap::new();
    for p in s.messages.iter().flat_map(|m| &m.parts) {
        if let Some(t) = &p.tool {
            if &*p.kind_name == "tool_result" {
                results.insert(t.call_id.clone(), t.status.clone());
            } else {
                names.insert(t.call_id.clone(), t.name.clone());
            }
        }
    }
    for p in s.messages.iter_mut().flat_map(|m| &mut m.parts) {
        let is_result = &*p.kind_name == "tool_result";
        if let Some(t) = &mut p.tool {
            if is_result {
                t.name = names.get(&t.call_id).cloned().unwrap_or_default();
            } else {
                t.status = results
                    .get(&t.call_id)
                    .cloned()
                    .unwrap_or(ToolStatus::Pending);
            }
        }
    }
    let mut first_seen: HashSet<usize> = HashSet::new();
    for m in &mut s.messages {
        if let Some(l) = m.line {
            if first_seen.insert(l.file) {
                m.parent_optional = true;
            }
        }
    }
    view::resolve_markers(s);
    // Claude Code relinks preserved messages under the summary on resume: a
    // copy that drops their stored parents is fine.
    let preserved: HashSet<String> = s
        .messages
        .iter()
        .filter_map(|m| m.compaction())
        .flat_map(|c| c.preserved.iter().cloned())
        .collect();
    for m in &mut s.messages {
        if preserved.contains(&m.id) {
            m.parent_optional = true;
        }
    }
    s.visible = view::visible_view(s);
    s.notes.clear();
    let boundaries = s.compactions();
    if boundaries > 0 {
        let compact_agents = s
            .files
            .iter()
            .skip(1)
            .filter(|f| file_name(f).starts_with("agent-acompact"))
            .count();
        s.notes.push(if compact_agents > 0 {
            format!("{boundaries} compaction(s): the usage of Claude Code's summarization calls is counted from {compact_agents} agent-acompact-* sub-agent file(s)")
        } else {
            format!("{boundaries} compaction(s): Claude Code stores no usage for its summarization calls, so tokens_total leaves them out")
        });
    }
}
