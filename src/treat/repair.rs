//! Repair: the edits that fix the repairable findings of a session.
//! - `stale-parent`: re-parent to the newest user message at or after the
//!   compaction request that precedes the message;
//! - `dangling-parent`: re-parent to the newest earlier user message;
//! - `torn-tail`: leave the torn last line out of the copy (a `DropMessage`
//!   naming the load problem's id).

use crate::diagnose::{dangling_suggested_parent, stale_parents};
use crate::formats::{Change, Edit};
use crate::model::{ProblemKind, Session};

/// Edits that repair `s`, in message order; empty when nothing is repairable.
pub fn plan(s: &Session) -> Vec<Edit> {
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for sp in stale_parents(s) {
        edits.push((
            sp.index,
            Edit {
                session_id: s.id.clone(),
                message_id: s.messages[sp.index].id.clone(),
                change: Change::SetParent {
                    old: Some(sp.parent_id),
                    new: sp.suggested_parent_id,
                },
            },
        ));
    }
    for (i, m) in s.messages.iter().enumerate() {
        let Some(pid) = m.parent_id.as_deref() else {
            continue;
        };
        if s.index_of(pid).is_some() {
            continue;
        }
        if let Some(new) = dangling_suggested_parent(s, i) {
            edits.push((
                i,
                Edit {
                    session_id: s.id.clone(),
                    message_id: m.id.clone(),
                    change: Change::SetParent {
                        old: Some(pid.to_string()),
                        new,
                    },
                },
            ));
        }
    }
    for p in s
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::TornTail)
    {
        if let Some(id) = &p.id {
            edits.push((
                s.messages.len(),
                Edit {
                    session_id: s.id.clone(),
                    message_id: id.clone(),
                    change: Change::DropMessage,
                },
            ));
        }
    }
    edits.sort_by_key(|(i, _)| *i);
    edits.into_iter().map(|(_, e)| e).collect()
}
