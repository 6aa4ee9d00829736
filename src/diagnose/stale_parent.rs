//! `stale-parent`: an assistant message created after a compaction request C
//! whose parent is a user message created before C. Follow-up output keeps
//! pointing at a pre-compaction turn (the bug fixed by Kilo PR "keep
//! post-compaction replies ordered"). Chronology is stored order
//! (`time_created`, then ascending id), never a projected view.

use super::{Finding, Severity};
use crate::model::{Role, Session};

/// A stale parent: message index, its parent id, the compaction request index,
/// and the parent the repair should set.
#[derive(Debug, Clone, PartialEq)]
pub struct StaleParent {
    pub index: usize,
    pub parent_id: String,
    pub compaction_index: usize,
    pub suggested_parent_id: String,
}

/// Finds every stale parent of `s`. Suggested parent: the newest user message
/// at or after the compaction request that precedes the message (the continue
/// or replayed user message, else the request itself).
pub fn stale_parents(s: &Session) -> Vec<StaleParent> {
    let mut out = Vec::new();
    let mut last_compaction: Option<usize> = None;
    for (a, m) in s.messages.iter().enumerate() {
        if m.compaction().is_some() {
            last_compaction = Some(a);
            continue;
        }
        let (Some(c), Role::Assistant, Some(pid)) =
            (last_compaction, &m.role, m.parent_id.as_deref())
        else {
            continue;
        };
        let Some(p) = s.index_of(pid) else { continue };
        if p >= c || s.messages[p].role != Role::User {
            continue;
        }
        let suggested = (c..a)
            .rev()
            .find(|&i| s.messages[i].role == Role::User)
            .unwrap_or(c);
        out.push(StaleParent {
            index: a,
            parent_id: pid.to_string(),
            compaction_index: c,
            suggested_parent_id: s.messages[suggested].id.clone(),
        });
    }
    out
}

pub fn check(s: &Session) -> Vec<Finding> {
    stale_parents(s)
        .into_iter()
        .map(|sp| {
            let m = &s.messages[sp.index];
            let c = &s.messages[sp.compaction_index];
            Finding::new(
                "stale-parent",
                Severity::Error,
                Some(&m.id),
                format!(
                    "assistant {} was written after compaction {} but its parent {} is a user turn from before it",
                    m.id, c.id, sp.parent_id
                ),
                "run `session-doctor repair` to re-parent it to the newest user message after the compaction",
            )
            .with("parent_id", sp.parent_id.clone())
            .with("suggested_parent_id", sp.suggested_parent_id.clone())
            .with("compaction_id", c.id.clone())
        })
        .collect()
}
