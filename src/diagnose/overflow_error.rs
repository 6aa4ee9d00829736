//! `overflow-error`: a stored provider error that says the request was too
//! big, classified into `tokens`, `wire` or `media` as docker-agent's
//! `classifyOverflow` does (pkg/modelerrors; docs/formats/docker-agent.md
//! section 8): structured signals first (`error.type == "request_too_large"` or
//! HTTP 413 -> wire, `error.code == "context_length_exceeded"` -> tokens),
//! then case-insensitive substrings, media before wire before tokens.

use super::{Code, Finding, Fix, Severity};
use crate::model::{Session, StoredError};
use serde_json::Value;

/// What overflowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowKind {
    /// The conversation exceeds the context window: compaction can help.
    Tokens,
    /// The request body is over a provider or gateway limit (HTTP 413).
    Wire,
    /// An image or PDF is over the provider's limits.
    Media,
    /// The agent stored an overflow without saying of what (opencode stores
    /// an HTTP 413 as `ContextOverflowError`): the request size tells.
    Unknown,
}

impl OverflowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OverflowKind::Tokens => "tokens",
            OverflowKind::Wire => "wire",
            OverflowKind::Media => "media",
            OverflowKind::Unknown => "unknown",
        }
    }

    /// For sentences: `a tokens overflow`, `an overflow of unknown kind`.
    pub fn phrase(self) -> &'static str {
        match self {
            OverflowKind::Tokens => "a tokens overflow",
            OverflowKind::Wire => "a wire (request size) overflow",
            OverflowKind::Media => "a media overflow",
            OverflowKind::Unknown => "an overflow of unknown kind",
        }
    }
}

const MEDIA: &[&str] = &["image exceeds", "image dimensions exceed", "pdf pages"];
const WIRE: &[&str] = &[
    "request_too_large",
    "request too large",
    "payload too large",
    "request entity too large",
];
const TOKENS: &[&str] = &[
    "prompt is too long",
    "prompt too long",
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "input is too long",
    "input token count",
    "exceeds the context window",
    "exceeds the available context size",
    "reduce the length of the messages",
    "exceeded model token limit",
    "context window exceeds limit",
    "model_context_window_exceeded",
    "max_tokens must be greater than",
    "maximum number of tokens",
    "content length exceeds",
    "exceeds the model's max token",
    "token limit",
    "reduce your prompt",
];

/// docker-agent's stored error codes (the `code` of an `error` item, which
/// session-doctor keeps as the error's name) and the texts its `FormatError`
/// stores for each overflow kind, which contain none of the substrings below
/// (docs/formats/docker-agent.md section 8).
const DOCKER_AGENT_CODES: &[(&str, OverflowKind)] = &[
    ("context_exceeded", OverflowKind::Tokens),
    ("request_too_large", OverflowKind::Wire),
    ("media_too_large", OverflowKind::Media),
];
const DOCKER_AGENT_TEXTS: &[(&str, OverflowKind)] = &[
    (
        "The conversation has exceeded the model's context window",
        OverflowKind::Tokens,
    ),
    (
        "Your message is too large for the AI provider",
        OverflowKind::Wire,
    ),
    (
        "An image or file in this conversation is too large for the AI provider",
        OverflowKind::Media,
    ),
];

/// The first JSON object inside `text`, if any.
fn first_json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    serde_json::Deserializer::from_str(text.get(start..)?)
        .into_iter::<Value>()
        .next()?
        .ok()
}

/// Classifies a stored error; `None` when it is not an overflow.
/// An error the agent itself named a context overflow (opencode
/// `ContextOverflowError`) with no more specific signal is
/// [`OverflowKind::Unknown`]: opencode stores an HTTP 413 under that name
/// too, so the failed request's size is judged in bytes.
pub fn classify(e: &StoredError) -> Option<OverflowKind> {
    if let Some((_, k)) = DOCKER_AGENT_CODES.iter().find(|(c, _)| *c == e.name) {
        return Some(*k);
    }
    if let Some((_, k)) = DOCKER_AGENT_TEXTS
        .iter()
        .find(|(t, _)| e.message.trim_start().starts_with(t))
    {
        return Some(*k);
    }
    let text = format!("{} {}", e.message, e.response_body.as_deref().unwrap_or(""));
    for src in [e.response_body.as_deref().unwrap_or(""), e.message.as_str()] {
        if let Some(v) = first_json_object(src) {
            if v.pointer("/error/type").and_then(Value::as_str) == Some("request_too_large") {
                return Some(OverflowKind::Wire);
            }
            if v.pointer("/error/code").and_then(Value::as_str) == Some("context_length_exceeded") {
                return Some(OverflowKind::Tokens);
            }
        }
    }
    if e.status_code == Some(413) {
        return Some(OverflowKind::Wire);
    }
    let lower = text.to_lowercase();
    for (list, kind) in [
        (MEDIA, OverflowKind::Media),
        (WIRE, OverflowKind::Wire),
        (TOKENS, OverflowKind::Tokens),
    ] {
        if list.iter().any(|p| lower.contains(p)) {
            return Some(kind);
        }
    }
    (e.name == "ContextOverflowError").then_some(OverflowKind::Unknown)
}

pub fn check(s: &Session) -> Vec<Finding> {
    s.messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let e = m.error()?;
            let kind = classify(e)?;
            // An overflow of the summary call itself: the agent's compaction is what fails.
            let during_compaction = m.summary();
            let j = super::stored_failure::judge(s, i, kind == OverflowKind::Tokens);
            let remedy = match (kind, during_compaction) {
                _ if j.resolved_by.is_some() => "none needed: the session no longer sends what failed",
                (_, true) => "the agent's own compaction overflowed and cannot help; shrink the session offline with `session-doctor compact` (strip media, truncate payload) before resuming",
                (OverflowKind::Tokens, false) => "compaction can help: let the agent compact, or shrink offline with `session-doctor compact`",
                (OverflowKind::Wire | OverflowKind::Media | OverflowKind::Unknown, false) => {
                    "the agent's compaction resends the same body and fails too; strip media or truncate payload with `session-doctor compact`"
                }
            };
            let size = format!(
                "the request that failed was ~{} bytes / {} tokens; a limit below that wedges it",
                j.failed_bytes, j.failed_tokens
            );
            let detail = match &j.resolved_by {
                Some(r) => format!(
                    "{} stored {} ({}); resolved: {r}",
                    m.id,
                    kind.phrase(),
                    e.name
                ),
                None => format!(
                    "{} stored {} ({}{}); {size}",
                    m.id,
                    kind.phrase(),
                    e.name,
                    if e.message.is_empty() { String::new() } else { format!(": {}", e.message) }
                ),
            };
            let mut f = Finding::new(
                Code::OverflowError,
                if j.resolved_by.is_some() { Severity::Info } else { Severity::Error },
                Some(&m.id),
                detail,
                remedy,
            )
            .with("kind", kind.as_str())
            .with("error_name", e.name.clone())
            .with("during_compaction", during_compaction)
            .with("failed_request_bytes", j.failed_bytes)
            .with("failed_request_tokens", j.failed_tokens)
            .with("next_request_bytes", j.next_bytes)
            .with("next_request_tokens", j.next_tokens)
            .with("judged_by", if j.by_tokens { "tokens" } else { "bytes" });
            if let Some(r) = &j.resolved_by {
                f = f.with("resolved_by", r.clone()).fixed_by(Fix::None);
            }
            if let Some(c) = e.status_code {
                f = f.with("status_code", c);
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(name: &str, code: Option<u16>, message: &str, body: Option<&str>) -> StoredError {
        StoredError {
            name: name.into(),
            status_code: code,
            message: message.into(),
            response_body: body.map(str::to_string),
        }
    }

    #[test]
    fn structured_signals_win() {
        let e = err(
            "APIError",
            Some(400),
            "bad",
            Some(r#"{"error":{"type":"request_too_large","message":"maximum context length"}}"#),
        );
        assert_eq!(classify(&e), Some(OverflowKind::Wire));
        let e = err(
            "APIError",
            Some(400),
            "x",
            Some(r#"{"error":{"code":"context_length_exceeded"}}"#),
        );
        assert_eq!(classify(&e), Some(OverflowKind::Tokens));
        assert_eq!(
            classify(&err("APIError", Some(413), "", None)),
            Some(OverflowKind::Wire)
        );
    }

    #[test]
    fn docker_agent_codes_then_format_error_texts() {
        let e = err("context_exceeded", None, "anything", None);
        assert_eq!(classify(&e), Some(OverflowKind::Tokens));
        let e = err("media_too_large", None, "", None);
        assert_eq!(classify(&e), Some(OverflowKind::Media));
        let e = err(
            "error",
            None,
            "Your message is too large for the AI provider. Try a smaller paste.",
            None,
        );
        assert_eq!(classify(&e), Some(OverflowKind::Wire));
        let e = err(
            "rate_limited",
            Some(429),
            "HTTP 429: rate_limit_error",
            None,
        );
        assert_eq!(classify(&e), None);
    }

    #[test]
    fn substrings_media_before_wire_before_tokens() {
        let e = err(
            "APIError",
            Some(400),
            "image exceeds 5 MB; request too large",
            None,
        );
        assert_eq!(classify(&e), Some(OverflowKind::Media));
        let e = err(
            "APIError",
            Some(400),
            "Payload Too Large, prompt is too long",
            None,
        );
        assert_eq!(classify(&e), Some(OverflowKind::Wire));
        let e = err(
            "APIError",
            Some(400),
            "This model's maximum context length is 8000 tokens",
            None,
        );
        assert_eq!(classify(&e), Some(OverflowKind::Tokens));
        assert_eq!(
            classify(&err(
                "APIError",
                Some(400),
                "stub: invalid request (FAIL400)",
                None
            )),
            None
        );
        // opencode stores an HTTP 413 as ContextOverflowError too: the kind
        // is unknown until the request size tells.
        assert_eq!(
            classify(&err("ContextOverflowError", None, "", None)),
            Some(OverflowKind::Unknown)
        );
    }
}
