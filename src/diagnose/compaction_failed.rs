//! `compaction-failed`: a summary message that ended in an error, so history
//! was not cut. Kilo's summaries carry only a text part and zero tokens by
//! design: that alone is not a failure.

use super::{Code, Finding, Fix, Severity};
use crate::model::{Role, Session};

pub fn check(s: &Session) -> Vec<Finding> {
    s.messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role() == Role::Assistant && m.summary())
        .filter_map(|(i, m)| {
            let e = m.error()?;
            // Only an overflow is about size: another failure (a 400 on
            // something in the history) is not fixed by shrinking.
            let kind = super::overflow_error::classify(e);
            let by_tokens = kind == Some(super::overflow_error::OverflowKind::Tokens);
            let j = super::stored_failure::judge(s, i, by_tokens);
            let (severity, detail, remedy) = match &j.resolved_by {
                Some(r) => (
                    Severity::Info,
                    format!(
                        "compaction summary {} ended with {}; resolved: {r}",
                        m.id, e.name
                    ),
                    "none needed: the session no longer sends what failed",
                ),
                None => (
                    Severity::Error,
                    format!(
                        "compaction summary {} ended with {}{}; history before it was not cut; the request that failed was ~{} bytes / {} tokens; a limit below that wedges it",
                        m.id,
                        e.name,
                        if e.message.is_empty() { String::new() } else { format!(": {}", e.message) },
                        j.failed_bytes,
                        j.failed_tokens
                    ),
                    "the agent's own compaction cannot help: it resends the same history and fails again; shrink the session offline (`session-doctor compact`) before resuming",
                ),
            };
            let mut f = Finding::new(Code::CompactionFailed, severity, Some(&m.id), detail, remedy)
                .with("error_name", e.name.clone())
                .with("failed_request_bytes", j.failed_bytes)
                .with("failed_request_tokens", j.failed_tokens)
                .with("next_request_bytes", j.next_bytes)
                .with("next_request_tokens", j.next_tokens)
                .with("judged_by", if j.by_tokens { "tokens" } else { "bytes" })
                .with("overflow", kind.map(|k| k.as_str()));
            if kind.is_none() && j.resolved_by.is_none() {
                f.remedy = format!(
                    "the summary call failed with {} (not a size overflow): shrinking the session does not address it; read the stored error, fix its cause, then let the agent compact again",
                    e.name
                );
                f = f.fixed_by(Fix::None);
            }
            if let Some(r) = &j.resolved_by {
                f = f.with("resolved_by", r.clone()).fixed_by(Fix::None);
            }
            if let Some(c) = e.status_code {
                f = f.with("status_code", c);
            }
            if let Some(p) = &m.parent_id() {
                f = f.with("compaction_id", p.to_string());
            }
            Some(f)
        })
        .collect()
}
