//! `impossible-usage`: a stored token count above the model's context window
//! (the context of an assistant turn, or a compaction's recorded trigger or
//! post-compaction count). The provider cannot have reported it for this
//! model: the session ran on another model than the one it resumes with, or
//! the stored figures are wrong (a proxy, a stub, an edited file). Warning:
//! size rules that start from the last reported count are off too.

use super::{Finding, Options, Severity};
use crate::model::{Role, Session};
use std::collections::HashSet;

pub fn check(s: &Session, o: &Options) -> Vec<Finding> {
    let Ok(b) = &o.budget else { return Vec::new() };
    let window = b.limits.context;
    let model = b.limits.model.clone().unwrap_or_else(|| "the model".into());
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for m in &s.messages {
        let mut counts: Vec<(&str, u64)> = Vec::new();
        if m.role == Role::Assistant && !m.usage.is_zero() {
            let fresh = m.response_id.as_deref().is_none_or(|r| seen.insert(r));
            if fresh {
                counts.push(("context", m.usage.overflow_count()));
            }
        }
        if let Some(c) = m.compaction() {
            counts.extend(c.trigger_tokens.map(|t| ("compaction trigger", t)));
            counts.extend(c.post_tokens.map(|t| ("after compaction", t)));
        }
        for (what, tokens) in counts.into_iter().filter(|(_, t)| *t > window) {
            out.push(
                Finding::new(
                    "impossible-usage",
                    Severity::Warning,
                    Some(&m.id),
                    format!(
                        "message {} stores {tokens} tokens ({what}), above the {window}-token context window of {model}",
                        m.id
                    ),
                    "check which model the session really ran on (pass --context/--model for it); size figures that start from this count are off",
                )
                .with("tokens", tokens)
                .with("what", what)
                .with("context", window)
                .with("model", model.clone()),
            );
        }
    }
    out
}
