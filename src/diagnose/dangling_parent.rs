//! `dangling-parent`: a parent id that names no message of the session.
//! Messages the agent writes with parents it does not keep
//! ([`crate::model::Message::parent_optional`]: Claude Code progress and
//! attachment lines, compaction and local-command roots, sidechains, the
//! first line of a resumed session; claude-code-log's "expected roots") are
//! not reported.

use super::{Code, Finding, Severity};
use crate::model::{ParentLinks, Role, Session, SUBSESSION_REF};
use rustc_hash::FxHashMap as HashMap;

/// Whether each message's parent walk reaches a root without a missing link
/// or a cycle (first copy of each id); a missing parent the agent expects
/// ([`crate::model::Message::parent_optional`]) counts as a root.
pub(super) fn resolves(s: &Session) -> Vec<bool> {
    let first = s.id_index();
    // 0 unknown, 1 on the current walk, 2 resolves, 3 does not.
    let mut state: Vec<u8> = vec![0; s.messages.len()];
    let mut path = Vec::new();
    for start in 0..s.messages.len() {
        path.clear();
        let mut cur = start;
        let result = loop {
            match state[cur] {
                2 => break true,
                3 | 1 => break false,
                _ => {}
            }
            state[cur] = 1;
            path.push(cur);
            match s.messages[cur].parent_id.as_deref() {
                None => break true,
                Some(p) => match first.get(p) {
                    Some(&pi) => cur = pi,
                    None => break s.messages[cur].parent_optional,
                },
            }
        };
        for &i in &path {
            state[i] = if result { 2 } else { 3 };
        }
    }
    state.into_iter().map(|r| r == 2).collect()
}

/// The parent the repair sets for message `index`. User turns: the newest
/// earlier user message. Chains: the last valid ancestor on the same chain,
/// i.e. the newest earlier user or assistant message of the same history
/// (main or sidechain, same file) whose own parent walk reaches a root.
pub fn suggested_parent(s: &Session, index: usize) -> Option<String> {
    suggested_parents(s, &[index]).pop().flatten()
}

/// [`suggested_parent`] for several messages (`indexes` ascending) in one
/// pass over the session: O(n) however many there are.
pub fn suggested_parents(s: &Session, indexes: &[usize]) -> Vec<Option<String>> {
    let mut out = Vec::with_capacity(indexes.len());
    let mut want = indexes.iter().copied().peekable();
    match s.parent_links {
        ParentLinks::UserTurn => {
            let mut last_user: Option<usize> = None;
            for (i, m) in s.messages.iter().enumerate() {
                while want.peek() == Some(&i) {
                    want.next();
                    out.push(last_user.map(|u| s.messages[u].id.clone()));
                }
                if m.role == Role::User {
                    last_user = Some(i);
                }
            }
        }
        ParentLinks::Chain => {
            let ok = resolves(s);
            let first = s.id_index();
            // (file, sidechain) -> the two newest valid candidates (two, so
            // a message can skip a copy of itself).
            let mut last: HashMap<(Option<usize>, bool), [Option<usize>; 2]> = HashMap::default();
            for (i, m) in s.messages.iter().enumerate() {
                let key = (m.line.map(|l| l.file), m.sidechain);
                while want.peek() == Some(&i) {
                    want.next();
                    let c = last.get(&key).copied().unwrap_or([None, None]);
                    let pick = c
                        .iter()
                        .flatten()
                        .find(|&&k| s.messages[k].id != m.id)
                        .map(|&k| s.messages[k].id.clone());
                    out.push(pick);
                }
                if ok[i]
                    && matches!(m.role, Role::User | Role::Assistant)
                    && first.get(m.id.as_str()) == Some(&i)
                {
                    let e = last.entry(key).or_insert([None, None]);
                    *e = [Some(i), e[0]];
                }
            }
        }
    }
    // Indexes past the end (never in practice) get no suggestion.
    out.resize(indexes.len(), None);
    out
}

/// Indexes of messages whose parent id names no message of the session
/// (messages whose missing parent is expected left out).
pub fn dangling(s: &Session) -> Vec<usize> {
    let ids = s.id_index();
    s.messages
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            !m.parent_optional
                && m.role.as_str() != SUBSESSION_REF
                && m.parent_id.as_deref().is_some_and(|p| !ids.contains_key(p))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Indexes of references to child sessions that do not exist (docker-agent
/// `subsession` items whose `subsession_id` is NULL or names no session:
/// docker-agent skips them on load; older revisions failed the whole listing).
pub fn orphan_references(s: &Session) -> Vec<usize> {
    s.messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role.as_str() == SUBSESSION_REF && m.parent_id.is_some())
        .map(|(i, _)| i)
        .collect()
}

fn orphan_reference_findings(s: &Session) -> Vec<Finding> {
    orphan_references(s)
        .into_iter()
        .map(|i| {
            let m = &s.messages[i];
            let child = m.parent_id.clone().unwrap_or_default();
            let detail = if child.is_empty() {
                format!("sub-session reference {} has a NULL subsession_id (its session was deleted): docker-agent skips it, and every later item index shifts by one", m.id)
            } else {
                format!("sub-session reference {} names session {child}, which is not in the store: docker-agent skips it, and every later item index shifts by one", m.id)
            };
            Finding::new(
                Code::DanglingParent,
                Severity::Error,
                Some(&m.id),
                detail,
                "run `session-doctor repair` to remove the reference from the copy (docker-agent loads the same items without it)",
            )
            .with("parent_id", child.clone())
            .with("subsession_id", if child.is_empty() { serde_json::Value::Null } else { child.into() })
        })
        .collect()
}

pub fn check(s: &Session) -> Vec<Finding> {
    let mut out: Vec<Finding> = session_parent(s).into_iter().collect();
    out.extend(message_parents(s));
    out.extend(orphan_reference_findings(s));
    out
}

/// A session whose stored parent session is not in the store (hermes-agent
/// `parent_session_id`): hermes lists only sessions without a parent (and
/// branches), so the session drops out of `hermes sessions list`.
fn session_parent(s: &Session) -> Option<Finding> {
    let l = s.lineage.as_deref().filter(|l| l.parent_missing)?;
    let pid = l.parent.clone().unwrap_or_default();
    Some(
        Finding::new(
            Code::DanglingParent,
            Severity::Error,
            None,
            format!(
                "session {} names parent session {pid}, which is not in the store: the agent hides sessions that have a parent from its session list",
                s.id
            ),
            "run `session-doctor repair` to clear the parent in the copy: the session becomes a root and is listed again",
        )
        .with("parent_id", pid)
        .with("session_id", s.id.clone()),
    )
}

fn message_parents(s: &Session) -> Vec<Finding> {
    let remedy = match s.parent_links {
        ParentLinks::UserTurn => {
            "run `session-doctor repair` to re-parent it to the newest earlier user message"
        }
        ParentLinks::Chain => {
            "run `session-doctor repair` to re-parent it to the last valid message before it on the same chain"
        }
    };
    let idx = dangling(s);
    let suggestions = suggested_parents(s, &idx);
    idx.into_iter()
        .zip(suggestions)
        .map(|(i, suggestion)| {
            let m = &s.messages[i];
            let pid = m.parent_id.clone().unwrap_or_default();
            let mut f = Finding::new(
                Code::DanglingParent,
                Severity::Error,
                Some(&m.id),
                format!(
                    "message {} names parent {pid}, which is not a message of this session",
                    m.id
                ),
                remedy,
            )
            .with("parent_id", pid);
            if let Some(sug) = suggestion {
                f = f.with("suggested_parent_id", sug);
            }
            if let Some(l) = m.line {
                f = f.with("line", l.line);
            }
            f
        })
        .collect()
}
