//! `dangling-parent`: a parent id that names no message of the session.
//! Messages the agent writes with parents it does not keep
//! ([`crate::model::Message::parent_optional`]: Claude Code progress and
//! attachment lines, compaction and local-command roots, sidechains, the
//! first line of a resumed session; claude-code-log's "expected roots") are
//! not reported.

use super::{Code, Facts, Finding, Links, Parent, Severity};
use crate::model::{ParentLinks, Role, Session, SUBSESSION_REF};
use rustc_hash::FxHashMap as HashMap;

/// Whether each message's parent walk reaches a root without a missing link
/// or a cycle (first copy of each id); a missing parent the agent expects
/// ([`crate::model::Message::parent_optional`]) counts as a root.
pub(super) fn resolves(s: &Session, links: &Links) -> Vec<bool> {
    if !s.has_parents() {
        return vec![true; s.messages.len()];
    }
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
            match links.parent(cur) {
                Parent::None => break true,
                Parent::At(pi) => cur = pi,
                Parent::Missing => break s.messages[cur].parent_optional(),
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
    suggested_parents(&Facts::new(s), &[index]).pop().flatten()
}

/// [`suggested_parent`] for several messages (`indexes` ascending) in one
/// pass over the session: O(n) however many there are.
pub fn suggested_parents(f: &Facts<'_>, indexes: &[usize]) -> Vec<Option<String>> {
    let s = f.session;
    let mut out = Vec::with_capacity(indexes.len());
    let mut want = indexes.iter().copied().peekable();
    match s.parent_links {
        ParentLinks::UserTurn => {
            // The newest user message, but never one from before the
            // latest compaction request (that would be a stale parent):
            // after a request, the newest user message at or after it, else
            // the request itself, as stale-parent's repair picks (fuzz input
            // whole_opencode_db-1).
            let mut last_user: Option<usize> = None;
            for (i, m) in s.messages.iter().enumerate() {
                while want.peek() == Some(&i) {
                    want.next();
                    out.push(last_user.map(|u| s.messages[u].id.to_string()));
                }
                if m.role() == Role::User || m.compaction().is_some() {
                    last_user = Some(i);
                }
            }
        }
        ParentLinks::Chain => {
            let links = f.links();
            let ok = resolves(s, links);
            let risky = f.risky();
            let mut copies: Option<HashMap<&str, Vec<usize>>> = None;
            // (file, sidechain) -> the newest valid candidates, newest
            // first (several, so a message can skip a copy of itself and
            // its own descendants).
            let mut last: HashMap<(Option<usize>, bool), Vec<usize>> = HashMap::default();
            for (i, m) in s.messages.iter().enumerate() {
                let key = (m.line().map(|l| l.file_index()), m.sidechain());
                while want.peek() == Some(&i) {
                    want.next();
                    let empty = Vec::new();
                    let c = last.get(&key).unwrap_or(&empty);
                    let pick = c
                        .iter()
                        .find(|&&k| {
                            s.messages[k].id != m.id
                                && !(risky.contains(m.id.as_str())
                                    && descends_from(
                                        s,
                                        copies.get_or_insert_with(|| all_copies(s)),
                                        k,
                                        &m.id,
                                    ))
                        })
                        .map(|&k| s.messages[k].id.to_string());
                    out.push(pick);
                }
                if !links.is_first(i) {
                    continue;
                }
                if !m.sidechain() && m.compaction().is_some() {
                    // A new chain starts at a compaction boundary: nothing
                    // before it may be a parent after it (that would be a
                    // stale parent); the boundary itself may.
                    last.insert(key, vec![i]);
                } else if ok[i] && matches!(m.role(), Role::User | Role::Assistant) {
                    let e = last.entry(key).or_default();
                    e.insert(0, i);
                    e.truncate(CANDIDATES);
                }
            }
        }
    }
    // Indexes past the end (never in practice) get no suggestion.
    out.resize(indexes.len(), None);
    out
}

/// How many of the newest valid messages of a history a suggestion may
/// choose from (the newest that is not the message itself or one of its
/// descendants).
const CANDIDATES: usize = 8;

/// Ids a re-parenting could close a cycle through: ids with several copies
/// (a parent set on one is set on every copy) and ids some earlier message
/// already names as its parent.
pub(super) fn risky_ids<'a>(s: &'a Session, links: &Links) -> rustc_hash::FxHashSet<&'a str> {
    let mut out = rustc_hash::FxHashSet::default();
    for (i, m) in s.messages.iter().enumerate() {
        if !links.is_first(i) {
            out.insert(m.id.as_str());
        }
        if let (Parent::At(pi), Some(p)) = (links.parent(i), m.parent_id()) {
            if pi > i {
                out.insert(p);
            }
        }
    }
    out
}

/// Id -> every index holding a copy of it.
pub(super) fn all_copies(s: &Session) -> HashMap<&str, Vec<usize>> {
    let mut m: HashMap<&str, Vec<usize>> = HashMap::default();
    for (i, x) in s.messages.iter().enumerate() {
        m.entry(x.id.as_str()).or_default().push(i);
    }
    m
}

/// Whether `id` is an ancestor of message `from` through the parent of any
/// copy of each id on the way (a walk over every copy, each message once).
pub(super) fn descends_from(
    s: &Session,
    copies: &HashMap<&str, Vec<usize>>,
    from: usize,
    id: &str,
) -> bool {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack = vec![from];
    while let Some(k) = stack.pop() {
        if !seen.insert(k) {
            continue;
        }
        let m = &s.messages[k];
        if m.id == id {
            return true;
        }
        if let Some(p) = m.parent_id() {
            if p == id {
                return true;
            }
            if let Some(v) = copies.get(p) {
                stack.extend(v.iter().copied());
            }
        }
    }
    false
}

/// Indexes of messages whose parent id names no message of the session
/// (messages whose missing parent is expected left out).
pub fn dangling(f: &Facts<'_>) -> Vec<usize> {
    let s = f.session;
    if !s.has_parents() {
        return Vec::new();
    }
    let links = f.links();
    s.messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            !m.parent_optional()
                && m.role().as_str() != SUBSESSION_REF
                && links.parent(*i) == Parent::Missing
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
        .filter(|(_, m)| m.role().as_str() == SUBSESSION_REF && m.parent_id().is_some())
        .map(|(i, _)| i)
        .collect()
}

fn orphan_reference_findings(s: &Session) -> Vec<Finding> {
    orphan_references(s)
        .into_iter()
        .map(|i| {
            let m = &s.messages[i];
            let child = m.parent_id().unwrap_or_default().to_string();
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

pub fn check(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    let mut out: Vec<Finding> = session_parent(s).into_iter().collect();
    out.extend(message_parents(f));
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

fn message_parents(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    let remedy = match s.parent_links {
        ParentLinks::UserTurn => {
            "run `session-doctor repair` to re-parent it to the newest earlier user message"
        }
        ParentLinks::Chain => {
            "run `session-doctor repair` to re-parent it to the last valid message before it on the same chain"
        }
    };
    let idx = dangling(f);
    let suggestions = suggested_parents(f, &idx);
    idx.into_iter()
        .zip(suggestions)
        .map(|(i, suggestion)| {
            let m = &s.messages[i];
            let pid = m.parent_id().unwrap_or_default().to_string();
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
            if let Some(l) = m.line() {
                f = f.with("line", l.number());
            }
            f
        })
        .collect()
}
