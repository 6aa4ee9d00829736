//! `dangling-parent`: a parent id that names no message of the session.
//! Messages the agent writes with parents it does not keep
//! ([`crate::model::Message::parent_optional`]: Claude Code progress and
//! attachment lines, compaction and local-command roots, sidechains, the
//! first line of a resumed session; claude-code-log's "expected roots") are
//! not reported.
//!
//! `dangling-logical-parent` (warning): a `logicalParentUuid` (Claude Code's
//! informational link from a compaction boundary to the last message before
//! it) that names no message. The agent never follows it, but tools that
//! "continue the line" across a compaction do (shared/formats/claude-code-codex.md
//! section 1.5, S2; seen in real data).

use super::{Finding, Severity};
use crate::model::{ParentLinks, Role, Session};
use std::collections::HashMap;

/// Whether each message's parent walk reaches a root without a missing link
/// or a cycle (first copy of each id); a missing parent the agent expects
/// ([`crate::model::Message::parent_optional`]) counts as a root.
fn resolves(s: &Session) -> Vec<bool> {
    let first: HashMap<&str, usize> = s
        .messages
        .iter()
        .enumerate()
        .rev()
        .map(|(i, m)| (m.id.as_str(), i))
        .collect();
    let mut memo: Vec<Option<bool>> = vec![None; s.messages.len()];
    for start in 0..s.messages.len() {
        let mut path = Vec::new();
        let mut cur = start;
        let result = loop {
            if let Some(r) = memo[cur] {
                break r;
            }
            if path.contains(&cur) {
                break false;
            }
            path.push(cur);
            match s.messages[cur].parent_id.as_deref() {
                None => break true,
                Some(p) => match first.get(p) {
                    Some(&pi) => cur = pi,
                    None => break s.messages[cur].parent_optional,
                },
            }
        };
        for i in path {
            memo[i] = Some(result);
        }
    }
    memo.into_iter().map(|r| r.unwrap_or(false)).collect()
}

/// The parent the repair sets for message `index`. User turns: the newest
/// earlier user message. Chains: the last valid ancestor on the same chain,
/// i.e. the newest earlier user or assistant message of the same history
/// (main or sidechain) whose own parent walk reaches a root.
pub fn suggested_parent(s: &Session, index: usize) -> Option<String> {
    let m = &s.messages[index];
    match s.parent_links {
        ParentLinks::UserTurn => s.messages[..index]
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.id.clone()),
        ParentLinks::Chain => {
            let ok = resolves(s);
            let first = s.id_index();
            let file = m.line.map(|l| l.file);
            (0..index)
                .rev()
                .find(|&i| {
                    let c = &s.messages[i];
                    ok[i]
                        && c.id != m.id
                        && c.sidechain == m.sidechain
                        && c.line.map(|l| l.file) == file
                        && matches!(c.role, Role::User | Role::Assistant)
                        && first.get(c.id.as_str()) == Some(&i)
                })
                .map(|i| s.messages[i].id.clone())
        }
    }
}

/// Indexes of messages whose parent id names no message of the session
/// (messages whose missing parent is expected left out).
pub fn dangling(s: &Session) -> Vec<usize> {
    let ids = s.id_index();
    s.messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            !m.parent_optional && m.parent_id.as_deref().is_some_and(|p| !ids.contains_key(p))
        })
        .map(|(i, _)| i)
        .collect()
}

pub fn check(s: &Session) -> Vec<Finding> {
    let remedy = match s.parent_links {
        ParentLinks::UserTurn => {
            "run `session-doctor repair` to re-parent it to the newest earlier user message"
        }
        ParentLinks::Chain => {
            "run `session-doctor repair` to re-parent it to the last valid message before it on the same chain"
        }
    };
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
                remedy,
            )
            .with("parent_id", pid);
            if let Some(sug) = suggested_parent(s, i) {
                f = f.with("suggested_parent_id", sug);
            }
            if let Some(l) = m.line {
                f = f.with("line", l.line);
            }
            f
        })
        .collect()
}

/// `dangling-logical-parent`: see the module doc.
pub fn check_logical(s: &Session) -> Vec<Finding> {
    let ids = s.id_index();
    s.messages
        .iter()
        .filter_map(|m| {
            let lp = m.logical_parent_id.as_deref()?;
            if ids.contains_key(lp) {
                return None;
            }
            let mut f = Finding::new(
                "dangling-logical-parent",
                Severity::Warning,
                Some(&m.id),
                format!(
                    "message {} names logical parent {lp}, which is not a message of this session",
                    m.id
                ),
                "the agent never follows this link; tools that join the history across a compaction lose the thread here. No repair needed.",
            )
            .with("logical_parent_id", lp.to_string());
            if let Some(l) = m.line {
                f = f.with("line", l.line);
            }
            Some(f)
        })
        .collect()
}
