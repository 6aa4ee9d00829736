//! Applying [`Edit`]s to docker-agent's stored JSON (`chat.Message` in
//! `message_json` or in a legacy `messages` entry) and describing them.
//! Unchanged keys (unknown ones included) keep their order; an edited value
//! is written as Go's `encoding/json` writes it (compact, `<`, `>`, `&`,
//! U+2028 and U+2029 escaped), so only the edited fields change bytes.

use super::parse::DOCTOR_MODEL;
use crate::edit::{
    truncate_middle, truncate_strings, Change, ChangeFigures, Edit, StoredChange, TextField,
};
use crate::model::Session;
use serde_json::{json, Value};

/// Go's escaping applied to JSON text `s` (these characters only occur
/// inside strings, so the text stays valid JSON).
fn go_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Length of JSON text `s` once Go-escaped.
pub fn go_escaped_len(s: &str) -> u64 {
    s.len() as u64
        + s.chars()
            .map(|c| match c {
                '<' | '>' | '&' => 5,
                '\u{2028}' | '\u{2029}' => 3,
                _ => 0,
            })
            .sum::<u64>()
}

/// `v` as Go writes it.
pub fn go_json(v: &Value) -> String {
    go_escape(&serde_json::to_string(v).expect("JSON values serialize"))
}

/// The part name of a part id (`40#call1` -> `call1`).
pub fn part_name(part_id: &str) -> &str {
    part_id.rsplit_once('#').map_or(part_id, |(_, n)| n)
}

fn index_after(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

fn truncate_at(v: &mut Value, max_chars: usize) {
    if let Value::String(s) = v {
        if let Some(t) = truncate_middle(s, max_chars) {
            *s = t;
        }
    }
}

/// Applies a content change to a message's `chat.Message` JSON. Errors say
/// what the message lacks.
pub fn edit_message(v: &mut Value, change: &Change) -> Result<(), String> {
    if !v.is_object() {
        return Err("message_json is not a JSON object".into());
    }
    match change {
        Change::StripMedia {
            part_id,
            placeholder,
        } => {
            let k = index_after(part_name(part_id), "mc")
                .ok_or_else(|| format!("part {part_id} carries no media"))?;
            let p = v
                .get_mut("multi_content")
                .and_then(|a| a.get_mut(k))
                .ok_or_else(|| format!("part {part_id} not found"))?;
            *p = json!({"type": "text", "text": placeholder});
            Ok(())
        }
        Change::Truncate {
            part_id,
            field,
            max_chars,
        } => {
            let name = part_name(part_id);
            match (field, name) {
                (TextField::Text, "content") => {
                    let old = v.get("content").cloned();
                    truncate_at(&mut v["content"], *max_chars);
                    // Keep a multi-content text part mirroring the content in step.
                    if let Some(Value::Array(parts)) = v.get_mut("multi_content") {
                        if let Some(p) = parts.iter_mut().find(|p| p.get("text") == old.as_ref()) {
                            truncate_at(&mut p["text"], *max_chars);
                        }
                    }
                }
                (TextField::Text, "reasoning") => {
                    truncate_at(&mut v["reasoning_content"], *max_chars)
                }
                (TextField::Text, n) if n.starts_with("mc") => {
                    let k = index_after(n, "mc").ok_or("bad part id")?;
                    let p = v
                        .get_mut("multi_content")
                        .and_then(|a| a.get_mut(k))
                        .ok_or_else(|| format!("part {part_id} not found"))?;
                    if p.get("text").is_some() {
                        truncate_at(&mut p["text"], *max_chars);
                    } else if let Some(t) = p.pointer_mut("/document/source/inline_text") {
                        truncate_at(t, *max_chars);
                    }
                }
                (TextField::ToolOutput, "result") => truncate_at(&mut v["content"], *max_chars),
                (TextField::ToolInput, n) if n.starts_with("call") => {
                    let k = index_after(n, "call").ok_or("bad part id")?;
                    let args = v
                        .pointer_mut(&format!("/tool_calls/{k}/function/arguments"))
                        .ok_or_else(|| format!("part {part_id} not found"))?;
                    let text = args.as_str().unwrap_or("").to_string();
                    // The arguments are JSON text: cut the strings inside and
                    // keep it valid JSON; anything else is cut as text.
                    *args = match serde_json::from_str::<Value>(&text) {
                        Ok(mut a) if a.is_object() || a.is_array() => {
                            truncate_strings(&mut a, *max_chars);
                            Value::String(serde_json::to_string(&a).expect("JSON values serialize"))
                        }
                        _ => Value::String(truncate_middle(&text, *max_chars).unwrap_or(text)),
                    };
                }
                (TextField::ToolInput, "result") => {}
                _ => return Err(format!("part {part_id} has no {field:?} text")),
            }
            Ok(())
        }
        Change::AddNote { text } => {
            let content = v.get("content").and_then(Value::as_str).unwrap_or("");
            v["content"] = json!(format!("{text}\n\n{content}"));
            if let Some(Value::Array(parts)) = v.get_mut("multi_content") {
                if !parts.is_empty() {
                    parts.insert(0, json!({"type": "text", "text": text}));
                }
            }
            Ok(())
        }
        other => Err(format!(
            "{} is not a change of a message's content",
            other.name()
        )),
    }
}

/// How `edit` looks in storage, for the change list.
pub fn describe(ix: &crate::model::Lookup<'_>, edit: &Edit) -> StoredChange {
    let s = ix.session();
    let m = ix.message(&edit.message_id);
    let part = edit.change.part_id().and_then(|p| ix.part(p));
    let mut fig = ChangeFigures::default();
    let (field, old, new) = match &edit.change {
        Change::SetFirstKept { old, new } => {
            ("first_kept_entry".to_string(), json!(old), json!(new))
        }
        Change::CutBefore { note } => {
            let index = m.map(|_| kept_index(s, &edit.message_id)).unwrap_or(0);
            (
                "session_items".to_string(),
                Value::Null,
                json!({
                    "item_type": "summary",
                    "first_kept_entry": index,
                    "model": DOCTOR_MODEL,
                    "summary_text": format!("{}{note}", previous_summary_prefix(s)),
                }),
            )
        }
        Change::StripMedia { placeholder, .. } => {
            fig = ChangeFigures::media(part);
            let bytes = fig.media_bytes.unwrap_or(0);
            let what = part.map_or("part", |p| &*p.kind_name);
            (
                format!(
                    "message_json.multi_content[{}]",
                    part_name(edit.change.part_id().unwrap_or("")).trim_start_matches("mc")
                ),
                json!(format!("{what} with {bytes} bytes of inline media")),
                json!(placeholder),
            )
        }
        Change::Truncate {
            part_id, max_chars, ..
        } => {
            let name = part_name(part_id);
            let field = match name {
                "content" | "result" => "message_json.content".to_string(),
                "reasoning" => "message_json.reasoning_content".to_string(),
                n if n.starts_with("call") => format!(
                    "message_json.tool_calls[{}].function.arguments",
                    n.trim_start_matches("call")
                ),
                n => format!("message_json.multi_content[{}]", n.trim_start_matches("mc")),
            };
            let chars = part.map_or(0, |p| p.model_chars());
            fig = ChangeFigures::truncate(chars, *max_chars);
            (
                field,
                json!(format!("{chars} characters")),
                json!(format!(
                    "at most {max_chars} characters kept, head and tail"
                )),
            )
        }
        Change::DropMessage => (
            "session_items".to_string(),
            json!(format!(
                "sub-session reference to {}",
                m.and_then(|m| m.parent_id())
                    .filter(|p| !p.is_empty())
                    .unwrap_or("NULL")
            )),
            Value::Null,
        ),
        Change::AddNote { text } => ("message_json.content".to_string(), Value::Null, json!(text)),
        other => (other.name().to_string(), Value::Null, Value::Null),
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

/// The index in docker-agent's item list of message `id` (messages docker-agent
/// skips on load are not counted).
pub fn kept_index(s: &Session, id: &str) -> usize {
    s.messages
        .iter()
        .take_while(|m| m.id != id)
        .filter(|m| !skipped(m))
        .count()
}

/// A message docker-agent does not load: a sub-session reference whose
/// session is missing (the only items that name a "parent", the missing
/// session; item types docker-agent does not know are not messages).
pub fn skipped(m: &crate::model::Message) -> bool {
    m.parent_id().is_some()
}

/// The text a summary `compact` adds starts with: the last summary's text,
/// which the new summary replaces in the view.
pub fn previous_summary_prefix(s: &Session) -> String {
    s.messages
        .iter()
        .rev()
        .find(|m| m.summary() && m.compaction().is_some())
        .and_then(|m| {
            m.raw().and_then(|r| {
                r.get("summary_text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        })
        .map(|t| format!("{t}\n\n"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_json_escapes_like_go() {
        let v = json!({"b": "<a&b>", "a": 1});
        assert_eq!(go_json(&v), r#"{"b":"\u003ca\u0026b\u003e","a":1}"#);
        assert_eq!(go_escaped_len(r#""<a&b>""#), 22);
    }

    #[test]
    fn tool_arguments_stay_json() {
        let mut v = json!({"role":"assistant","content":"","tool_calls":[{"id":"x","type":"function",
            "function":{"name":"shell","arguments":format!("{{\"cmd\":\"{}\"}}", "a".repeat(5000))}}]});
        edit_message(
            &mut v,
            &Change::Truncate {
                part_id: "7#call0".into(),
                field: TextField::ToolInput,
                max_chars: 100,
            },
        )
        .unwrap();
        let args = v
            .pointer("/tool_calls/0/function/arguments")
            .unwrap()
            .as_str()
            .unwrap();
        let parsed: Value = serde_json::from_str(args).unwrap();
        assert!(parsed["cmd"]
            .as_str()
            .unwrap()
            .contains("characters removed"));
    }
}
