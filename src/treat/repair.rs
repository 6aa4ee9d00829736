//! Repair: the edits that fix the repairable findings of a session.
//! - `stale-parent`: re-parent (user turns: to the newest user message at or
//!   after the compaction request that precedes the message; chains: to the
//!   boundary's last preserved message, else its summary). Preserved
//!   messages are never re-parented or dropped.
//! - `dangling-parent`: re-parent (user turns: to the newest earlier user
//!   message; chains: to the last valid ancestor on the same chain).
//! - `parent-cycle`: break the cycle at its oldest member: re-parent it as a
//!   dangling parent would be, or make it a root when no earlier message can
//!   be its parent (and always for an opencode user message).
//! - `torn-tail`: leave the torn last line out of the copy.
//! - `duplicate-id` copies that repeat the first one's content: keep the
//!   first line, drop the later copies. Lines of one split provider response
//!   have different ids and are never touched.

use crate::diagnose::{cycles, dangling, dangling_suggested_parents, stale_parents};
use crate::edit::{Change, Edit};
use crate::model::{ParentLinks, ProblemKind, Role, Session};
use rustc_hash::FxHashSet as HashSet;

/// Edits that repair `s`, in message order; empty when nothing is repairable.
pub fn plan(s: &Session) -> Vec<Edit> {
    let edit = |message_id: &str, change: Change| Edit {
        session_id: s.id.clone(),
        message_id: message_id.to_string(),
        change,
    };
    let preserved: HashSet<&str> = s.preserved_ids();
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for sp in stale_parents(s) {
        let id = s.messages[sp.index].id.as_str();
        if preserved.contains(id) {
            continue;
        }
        edits.push((
            sp.index,
            edit(
                id,
                Change::SetParent {
                    old: Some(sp.parent_id),
                    new: sp.suggested_parent_id,
                },
            ),
        ));
    }
    let mut touched: HashSet<String> = edits.iter().map(|(_, e)| e.message_id.clone()).collect();
    let idx = dangling(s);
    for (i, new) in idx.iter().zip(dangling_suggested_parents(s, &idx)) {
        let m = &s.messages[*i];
        if preserved.contains(m.id.as_str()) || touched.contains(&m.id) {
            continue;
        }
        if let Some(new) = new {
            touched.insert(m.id.clone());
            edits.push((
                *i,
                edit(
                    &m.id,
                    Change::SetParent {
                        old: m.parent_id.clone(),
                        new,
                    },
                ),
            ));
        }
    }
    let cyc = cycles(s);
    let oldest: Vec<usize> = cyc.iter().map(|c| c.oldest()).collect();
    for (&i, new) in oldest.iter().zip(dangling_suggested_parents(s, &oldest)) {
        let m = &s.messages[i];
        if touched.contains(&m.id) {
            continue;
        }
        let old = m.parent_id.clone().unwrap_or_default();
        let user_root = s.parent_links == ParentLinks::UserTurn && m.role == Role::User;
        let change = match new {
            Some(new) if !user_root && new != m.id => Change::SetParent {
                old: Some(old),
                new,
            },
            _ => Change::ClearParent { old },
        };
        touched.insert(m.id.clone());
        edits.push((i, edit(&m.id, change)));
    }
    let mut copies: HashSet<&str> = HashSet::default();
    for d in s.duplicate_ids.iter().filter(|d| d.same_content) {
        if copies.insert(d.id.as_str()) {
            let i = s.index_of(&d.id).unwrap_or(0);
            edits.push((i, edit(&d.id, Change::DropCopies)));
        }
    }
    for p in s
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::TornTail)
    {
        if let Some(id) = &p.id {
            edits.push((s.messages.len(), edit(id, Change::DropMessage)));
        }
    }
    edits.sort_by_key(|(i, _)| *i);
    edits.into_iter().map(|(_, e)| e).collect()
}
