//! `compaction-failed`: a summary message that ended in an error, so history
//! was not cut. Kilo's summaries carry only a text part and zero tokens by
//! design: that alone is not a failure.

use super::{Code, Finding, Severity};
use crate::model::{Role, Session};

pub fn check(s: &Session) -> Vec<Finding> {
    s.messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.summary)
        .filter_map(|m| {
            let e = m.error.as_ref()?;
            let mut f = Finding::new(
                Code::CompactionFailed,
                Severity::Warning,
                Some(&m.id),
                format!(
                    "compaction summary {} ended with {}{}; history before it was not cut",
                    m.id,
                    e.name,
                    if e.message.is_empty() { String::new() } else { format!(": {}", e.message) }
                ),
                "the agent's own compaction cannot help: it resends the same history and fails again; shrink the session offline (`session-doctor compact`) before resuming",
            )
            .with("error_name", e.name.clone());
            if let Some(c) = e.status_code {
                f = f.with("status_code", c);
            }
            if let Some(p) = &m.parent_id {
                f = f.with("compaction_id", p.clone());
            }
            Some(f)
        })
        .collect()
}
