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
//! - `stale-first-kept`: set the compaction's first kept entry to the value
//!   the agent's own compactor rule gives (docker-agent).
//! - `dangling-parent` on a reference to a missing child session
//!   (docker-agent `subsession` item): remove the reference.
//! - `duplicate-id` copies that repeat the first one's content: keep the
//!   first line, drop the later copies. Lines of one split provider response
//!   have different ids and are never touched.
//! - Sessions linked as rows (hermes-agent), after the message edits:
//!   `closed-compression-session`: reopen the session; `empty-continuation`:
//!   drop the empty session, then reopen its parent; `dangling-parent` on
//!   the session's own parent: clear it (the session becomes a root).

use crate::diagnose::{
    cycles, dangling, dangling_suggested_parents, orphan_references, stale_parents, Facts,
};
use crate::edit::{Change, Edit, SessionChange};
use crate::model::{Id, ParentLinks, ProblemKind, Role, Session};
use rustc_hash::FxHashSet as HashSet;

/// Edits that repair `s`, in message order; empty when nothing is repairable.
pub fn plan(s: &Session) -> Vec<Edit> {
    let sid = crate::model::Sym::from(s.id.as_str());
    let edit = |message_id: &str, change: Change| Edit {
        session_id: sid.clone(),
        message_id: Id::from(message_id),
        change,
    };
    let preserved: HashSet<&str> = s.preserved_ids();
    // The session's id index, built once for the rules' functions below.
    let f = &Facts::new(s);
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for sp in stale_parents(f) {
        let id = s.messages[sp.index].id.as_str();
        if preserved.contains(id) {
            continue;
        }
        edits.push((
            sp.index,
            edit(
                id,
                Change::SetParent {
                    old: Some(sp.parent_id.into()),
                    new: sp.suggested_parent_id.into(),
                },
            ),
        ));
    }
    let mut touched: HashSet<crate::model::Id> =
        edits.iter().map(|(_, e)| e.message_id.clone()).collect();
    let idx = dangling(f);
    for (i, new) in idx.iter().zip(dangling_suggested_parents(f, &idx)) {
        let m = &s.messages[*i];
        if preserved.contains(m.id.as_str()) || touched.contains(m.id.as_str()) {
            continue;
        }
        if let Some(new) = new {
            touched.insert(m.id.clone());
            edits.push((
                *i,
                edit(
                    &m.id,
                    Change::SetParent {
                        old: m.parent_id().map(Into::into),
                        new: new.into(),
                    },
                ),
            ));
        }
    }
    let cyc = cycles(f);
    let oldest: Vec<usize> = cyc.iter().map(|c| c.oldest()).collect();
    for (&i, new) in oldest.iter().zip(dangling_suggested_parents(f, &oldest)) {
        let m = &s.messages[i];
        if touched.contains(m.id.as_str()) {
            continue;
        }
        let old = m.parent_id().unwrap_or_default().to_string();
        let user_root = s.parent_links == ParentLinks::UserTurn && m.role() == Role::User;
        let change = match new {
            Some(new) if !user_root && new != m.id => Change::SetParent {
                old: Some(old.into()),
                new: new.into(),
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
    for (i, m) in s.messages.iter().enumerate() {
        let Some(k) = m.compaction().and_then(|c| c.kept_entry.as_deref()) else {
            continue;
        };
        if k.stale.is_some() {
            let change = Change::SetFirstKept {
                old: k.stored,
                new: k.rule as i64,
            };
            edits.push((i, edit(&m.id, change)));
        }
    }
    for i in orphan_references(s) {
        edits.push((i, edit(&s.messages[i].id, Change::DropMessage)));
    }
    edits.sort_by_key(|(i, _)| *i);
    let cycle_ids: HashSet<&str> = oldest.iter().map(|&i| s.messages[i].id.as_str()).collect();
    let mut out: Vec<Edit> =
        no_new_cycles(s, edits.into_iter().map(|(_, e)| e).collect(), &cycle_ids);
    out.extend(session_edits(s));
    out
}

/// Each suggestion avoids the message's own descendants in the stored
/// graph, but two re-parentings together can still close a loop (A to B
/// while B's dangling parent becomes C, a child of A; fuzz input
/// whole_claude-14). With every edit applied, a re-parented message that
/// sits in a cycle keeps its stored parent (its edit is dropped), or, when
/// its edit was the one breaking a stored cycle (`cycle_ids`), becomes a
/// root.
fn no_new_cycles(s: &Session, edits: Vec<Edit>, cycle_ids: &HashSet<&str>) -> Vec<Edit> {
    use rustc_hash::FxHashMap as HashMap;
    if !edits
        .iter()
        .any(|e| matches!(e.change, Change::SetParent { .. }))
    {
        return edits;
    }
    // id -> the parents of every stored copy of it.
    let mut parents: HashMap<String, Vec<String>> = HashMap::default();
    for m in &s.messages {
        let e = parents.entry(m.id.to_string()).or_default();
        if let Some(p) = &m.parent_id() {
            e.push(p.to_string());
        }
    }
    let stored = parents.clone();
    for e in &edits {
        match &e.change {
            Change::SetParent { new, .. } => {
                parents.insert(e.message_id.to_string(), vec![new.to_string()]);
            }
            Change::ClearParent { .. } => {
                parents.insert(e.message_id.to_string(), Vec::new());
            }
            _ => {}
        }
    }
    let in_cycle = |parents: &HashMap<String, Vec<String>>, id: &str| {
        let mut stack: Vec<&str> = parents
            .get(id)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        let mut seen: HashSet<&str> = HashSet::default();
        while let Some(p) = stack.pop() {
            if p == id {
                return true;
            }
            if seen.insert(p) {
                stack.extend(parents.get(p).into_iter().flatten().map(String::as_str));
            }
        }
        false
    };
    let mut out = Vec::with_capacity(edits.len());
    for mut e in edits {
        if let Change::SetParent { old, .. } = &e.change {
            if in_cycle(&parents, &e.message_id) {
                if cycle_ids.contains(e.message_id.as_str()) {
                    parents.insert(e.message_id.to_string(), Vec::new());
                    e.change = Change::ClearParent {
                        old: old.as_deref().unwrap_or_default().to_string(),
                    };
                } else {
                    let back = stored
                        .get(e.message_id.as_str())
                        .cloned()
                        .unwrap_or_default();
                    parents.insert(e.message_id.to_string(), back);
                    continue;
                }
            }
        }
        out.push(e);
    }
    out
}

/// The session-level edits of a session linked to others as a row
/// ([`crate::model::Lineage`]; the finding rules say when they apply).
fn session_edits(s: &Session) -> Vec<Edit> {
    let Some(l) = s.lineage.as_deref() else {
        return Vec::new();
    };
    let on = |sid: &str, c: SessionChange| Edit {
        session_id: sid.into(),
        message_id: sid.into(),
        change: Change::Session(c),
    };
    let mut out = Vec::new();
    if l.parent_missing {
        if let Some(p) = &l.parent {
            out.push(on(&s.id, SessionChange::ClearParent { old: p.clone() }));
        }
    }
    if l.ended_by_compaction && l.continuations == 0 {
        out.push(on(&s.id, SessionChange::Reopen));
    }
    if l.empty_continuation(&s.id) {
        out.push(on(&s.id, SessionChange::DropEmpty));
        // The parent is reopened only when no other session continues it
        // (hermes then resumes that one; the writer refuses the reopen).
        if let Some(p) = l.parent.as_ref().filter(|_| l.sibling_continuations == 0) {
            out.push(on(p, SessionChange::Reopen));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, Lineage};

    /// An empty continuation `c` of parent `p` that a resume lands on, with
    /// `siblings` other continuations of `p`.
    fn empty_continuation(siblings: usize) -> Session {
        let mut s = Session::new(Agent::Hermes, "c", None, "state.db".into());
        s.lineage = Some(Box::new(Lineage {
            parent: Some("p".into()),
            root: "p".into(),
            position: 2,
            length: 2,
            tip: "c".into(),
            resumes: "c".into(),
            continuation: true,
            sibling_continuations: siblings,
            ..Lineage::default()
        }));
        s
    }

    /// The drop of an empty continuation reopens its parent only when no
    /// other session continues it: the writer refuses to reopen a parent
    /// with a continuation (fuzz input whole_hermes-2: `repair` exited 2).
    #[test]
    fn dropping_an_empty_continuation_reopens_a_parent_nothing_else_continues() {
        let changes = |s: &Session| -> Vec<(String, &'static str)> {
            plan(s)
                .iter()
                .map(|e| (e.message_id.to_string(), e.change.name()))
                .collect()
        };
        assert_eq!(
            changes(&empty_continuation(0)),
            [
                ("c".to_string(), "drop-empty-session"),
                ("p".to_string(), "reopen-session")
            ]
        );
        assert_eq!(
            changes(&empty_continuation(1)),
            [("c".to_string(), "drop-empty-session")]
        );
    }
}
