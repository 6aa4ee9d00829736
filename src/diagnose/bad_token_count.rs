//! `bad-token-count`: a message stores a token count that is not one (a
//! negative number, a string, a boolean, an array or an object where the
//! agent writes an integer; [`crate::model::BadCount`]). The loaders read
//! it as 0, as they did before this rule, so every figure that adds it is
//! low: the session's usage totals and the context size the budget rules
//! start from. No agent we read writes such a count; a hand edit, another
//! tool's rewrite or a provider that reported no number leaves one. One
//! finding per message, with every such count of it.

use super::{Code, Finding, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in &s.messages {
        let Some(bad) = m.rare().as_ref().map(|r| &r.bad_counts) else {
            continue;
        };
        let Some(first) = bad.first() else { continue };
        let more = match bad.len() {
            1 => String::new(),
            2 => " and 1 more count".to_string(),
            n => format!(" and {} more counts", n - 1),
        };
        out.push(
            Finding::new(
                Code::BadTokenCount,
                Severity::Warning,
                Some(&m.id),
                format!(
                    "message {} stores {} = {}{more}, not a token count: read as 0",
                    m.id, first.field, first.stored
                ),
                "usage totals and the context size that include it are low; the message's other figures are unaffected (no command rewrites a count: the right number is not stored anywhere)",
            )
            .with("count", bad.len())
            .with(
                "fields",
                bad.iter()
                    .map(|b| serde_json::json!({"field": b.field, "stored": &*b.stored}))
                    .collect::<Vec<_>>(),
            ),
        );
    }
    out
}
