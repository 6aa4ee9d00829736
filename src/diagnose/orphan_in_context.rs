//! `orphan-in-context`: in the model-visible view after compaction (the agent's
//! own rule, computed by the format module into `Session::visible`), a message
//! whose parent is not visible. opencode 1.18.33 produces this itself when it
//! splits a turn at `tail_start_id` (docs/formats/opencode-kilo.md sections 9 and 14).
//! Not checked for chain-linked sessions (Claude Code): their view is itself
//! a walk up the parents, and the agent relinks preserved messages on purpose.

use super::{stale_parents, Code, Facts, Finding, Severity};
use crate::model::ParentLinks;

pub fn check(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    if s.parent_links == ParentLinks::Chain || !s.has_parents() {
        return Vec::new();
    }
    let stale: rustc_hash::FxHashSet<usize> =
        stale_parents(f).into_iter().map(|sp| sp.index).collect();
    let visible = s.visible_mask();
    let ids = f.ids();
    s.visible
        .iter()
        .filter_map(|&i| {
            let m = &s.messages[i];
            let pid = m.parent_id()?;
            let p = *ids.get(pid)?;
            if visible[p] || stale.contains(&i) {
                return None;
            }
            Some(
                Finding::new(
                    Code::OrphanInContext,
                    Severity::Warning,
                    Some(&m.id),
                    format!(
                        "message {} is sent to the model after compaction but its parent {pid} is not",
                        m.id
                    ),
                    "usually harmless (the agent split a turn at the retained tail); if replies render out of order, compact the session again",
                )
                .with("parent_id", pid.to_string())
                .with("visible_messages", s.visible.len()),
            )
        })
        .collect()
}
