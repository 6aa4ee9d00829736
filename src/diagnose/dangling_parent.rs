//! `dangling-parent`: a parent id that names no message of the session.

use super::{Finding, Severity};
use crate::model::{Role, Session};

/// The parent the repair sets for message `index`: the newest earlier user message.
pub fn suggested_parent(s: &Session, index: usize) -> Option<String> {
    s.messages[..index]
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.id.clone())
}

/// Indexes of messages whose parent id names no message of the session.
pub fn dangling(s: &Session) -> Vec<usize> {
    s.messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.parent_id
                .as_deref()
                .is_some_and(|p| s.index_of(p).is_none())
        })
        .map(|(i, _)| i)
        .collect()
}

pub fn check(s: &Session) -> Vec<Finding> {
    dangling(s)
        .into_iter()
        .map(|i| {
            let m = &s.messages[i];
            let pid = m.parent_id.clone().unwrap_or_default();
            let mut f = Finding::new(
                "dangling-parent",
                Severity::Error,
                Some(&m.id),
                format!(
                    "message {} names parent {pid}, which is not a message of this session",
                    m.id
                ),
                "run `session-doctor repair` to re-parent it to the newest earlier user message",
            )
            .with("parent_id", pid);
            if let Some(sug) = suggested_parent(s, i) {
                f = f.with("suggested_parent_id", sug);
            }
            f
        })
        .collect()
}
