//! `impossible-usage`: a stored token count above the model's context window
//! (the limits the session is measured against: flags, else what the agent
//! stored, else the model lookup). No request to that model can have produced
//! it: the session ran on another model, or the agent stored a figure that is
//! not a request's count. Codex 0.104 persisted such counts: a `token_count`
//! whose `last_token_usage` is all zero except `total_tokens` = 940,499 in a
//! 258,400-token window, right before and after a remote compaction
//! (the codex/localpush fixtures; docs/formats/codex.md section 9). Warning: size figures that start
//! from such a count are off.
//!
//! Counted: every message's stored usage (`Usage::overflow_count`) and every
//! compaction's recorded trigger and post-compaction count (Claude Code
//! `preTokens`/`postTokens`); the lines of one split response repeat the
//! same usage and are grouped. Equal counts are reported once, with every
//! message that stores them.

use super::{Code, Finding, Options, Severity};
use crate::model::{Role, Session};

pub fn check(s: &Session, o: &Options) -> Vec<Finding> {
    let Ok(b) = &o.budget else { return Vec::new() };
    let window = b.limits.context;
    let model = b.limits.model.clone().unwrap_or_else(|| "the model".into());
    // (what, tokens) -> message ids, in first-seen order.
    let mut seen: Vec<(&'static str, u64, Vec<String>)> = Vec::new();
    let mut note = |what: &'static str, tokens: u64, id: &str| {
        if tokens <= window {
            return;
        }
        match seen.iter_mut().find(|(w, t, _)| *w == what && *t == tokens) {
            Some(e) => e.2.push(id.to_string()),
            None => seen.push((what, tokens, vec![id.to_string()])),
        }
    };
    for m in &s.messages {
        if !m.usage().is_zero() {
            let what = if m.role() == Role::Assistant {
                "context of a model call"
            } else {
                "usage record"
            };
            note(what, m.usage().overflow_count(), &m.id);
        }
        if let Some(c) = m.compaction() {
            if let Some(t) = c.trigger_tokens {
                note("compaction trigger", t, &m.id);
            }
            if let Some(t) = c.post_tokens {
                note("after compaction", t, &m.id);
            }
        }
    }
    seen.into_iter()
        .map(|(what, tokens, ids)| {
            Finding::new(
                Code::ImpossibleUsage,
                Severity::Warning,
                ids.first().map(String::as_str),
                format!(
                    "{} stored {tokens} tokens ({what}), above the {window}-token context window of {model} (limits from {})",
                    if ids.len() == 1 {
                        format!("message {}", ids[0])
                    } else {
                        format!("{} messages", ids.len())
                    },
                    b.limits.source
                ),
                "no request to this model can report that much: check which model the session ran on (pass --context/--model for it); size figures that start from this count are off",
            )
            .with("tokens", tokens)
            .with("what", what)
            .with("context", window)
            .with("input_limit", b.limits.input)
            .with("model", model.clone())
            .with("limits_source", b.limits.source.clone())
            .with("message_ids", ids)
        })
        .collect()
}
