//! `stale-parent`: a message written after a compaction whose parent points
//! back to before it. Two shapes, by how the format links parents
//! ([`ParentLinks`]):
//!
//! - **User turns** (opencode, Kilo): an assistant message created after a
//!   compaction request C whose parent is a user message created before C.
//!   Follow-up output keeps pointing at a pre-compaction turn (the bug fixed
//!   by Kilo PR "keep post-compaction replies ordered"). Chronology is stored
//!   order (`time_created`, then ascending id), never a projected view.
//! - **Chains** (Claude Code): an entry positioned after a compaction that
//!   starts a new chain (a `compact_boundary`) whose parent is positioned
//!   before that boundary and is not one of its preserved messages. A re-used
//!   id is positioned at its first line and takes its last line's parent
//!   (Claude Code 2.1.197 keeps entries in a map by uuid; see
//!   `formats/claude/view.rs`). The boundary's own `logicalParentUuid` is not a
//!   parent. Severity, from resuming real transcripts with 2.1.197: **error**
//!   when the latest boundary does not prune (no preserved metadata, a missing
//!   preserved id, a broken preserved walk): the walk from the leaf follows
//!   the stale link into the pre-compaction history, which is sent whole, and
//!   the summaries are dropped; **warning** when the latest boundary prunes:
//!   the old entries are dropped and the link is neutralised.

use super::{Code, Facts, Finding, Severity};
use crate::model::{ParentLinks, Role};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A stale parent: message index, its parent id, the compaction index, and
/// the parent the repair should set.
#[derive(Debug, Clone, PartialEq)]
pub struct StaleParent {
    pub index: usize,
    pub parent_id: String,
    pub compaction_index: usize,
    pub suggested_parent_id: String,
    /// The agent's own pruning on resume drops the stale link's target
    /// (chains only): the link is harmless until the file is resumed by an
    /// older version.
    pub neutralised: bool,
    /// The message is on the history the agent sends on resume
    /// ([`Session::visible`]), so the link is followed now.
    pub on_resume_path: bool,
}

/// Finds every stale parent of `s`.
///
/// Suggested parent, user turns: the newest user message at or after the
/// compaction request that precedes the message (the continue or replayed
/// user message, else the request itself). Chains: the boundary's last
/// preserved message, else its summary, else the boundary.
pub fn stale_parents(f: &Facts<'_>) -> Vec<StaleParent> {
    if !f.session.has_parents() {
        return Vec::new();
    }
    match f.session.parent_links {
        ParentLinks::UserTurn => user_turn(f),
        ParentLinks::Chain => chain(f),
    }
}

fn user_turn(f: &Facts<'_>) -> Vec<StaleParent> {
    let s = f.session;
    let links = f.links();
    let visible: HashSet<usize> = s.visible.iter().copied().collect();
    let mut out = Vec::new();
    let mut last_compaction: Option<usize> = None;
    // The newest user message at or after the last compaction request.
    let mut last_user_since: Option<usize> = None;
    for (a, m) in s.messages.iter().enumerate() {
        if m.compaction().is_some() {
            last_compaction = Some(a);
            last_user_since = (m.role() == Role::User).then_some(a);
            continue;
        }
        let newest_user = last_user_since;
        if m.role() == Role::User && last_compaction.is_some() {
            last_user_since = Some(a);
        }
        let (Some(c), Role::Assistant, Some(pid)) = (last_compaction, &m.role(), m.parent_id())
        else {
            continue;
        };
        let Some(p) = links.parent(a).at() else {
            continue;
        };
        if p >= c || s.messages[p].role() != Role::User {
            continue;
        }
        let suggested = newest_user.unwrap_or(c);
        out.push(StaleParent {
            index: a,
            parent_id: pid.to_string(),
            compaction_index: c,
            suggested_parent_id: s.messages[suggested].id.to_string(),
            neutralised: false,
            on_resume_path: visible.contains(&a),
        });
    }
    out
}

fn chain(f: &Facts<'_>) -> Vec<StaleParent> {
    let s = f.session;
    // Ids whose copies or parents make a walk risky.
    let risky = f.risky();
    // (first index, last index) of each id over the main history, by the
    // index of the id's first copy in the session ([`super::Links::first`]):
    // read by index, no id hashed.
    let links = f.links();
    let ids = f.ids();
    let mut span: Vec<Option<(usize, usize)>> = vec![None; s.messages.len()];
    for (i, _) in s
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.sidechain())
    {
        let e = &mut span[links.first(i)];
        match e {
            Some(e) => e.1 = i,
            None => *e = Some((i, i)),
        }
    }
    // The span of the copies of message `i`'s id, of the first copy of
    // message `i`'s parent, and of any id.
    let pos_of = |i: usize| span[links.first(i)];
    let pos_of_parent = |i: usize| links.parent(i).at().and_then(|r| span[r]);
    let pos = |id: &str| ids.get(id).and_then(|&r| span[r]);
    let boundaries: Vec<usize> = s
        .messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            !m.sidechain() && m.compaction().is_some() && pos_of(*i).map(|e| e.0) == Some(*i)
        })
        .map(|(i, _)| i)
        .collect();
    let Some(&latest) = boundaries.last() else {
        return Vec::new();
    };
    let prunes = s.messages[latest].compaction().is_some_and(|c| c.prunes);
    let visible: HashSet<usize> = s.visible.iter().copied().collect();
    // Boundary id -> the first summary after it that names it as parent.
    let mut summary_of: HashMap<&str, usize> = HashMap::default();
    for (i, m) in s.messages.iter().enumerate() {
        if let (true, Some(p)) = (m.summary(), m.parent_id()) {
            if let Some((bf, _)) = pos_of_parent(i) {
                if bf <= i && s.messages[bf].compaction().is_some() {
                    summary_of.entry(p).or_insert(i);
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut copies = None;
    for (i, m) in s.messages.iter().enumerate() {
        let Some((first, last)) = pos_of(i) else {
            continue;
        };
        if first != i || m.compaction().is_some() {
            continue;
        }
        let k = boundaries.partition_point(|&b| b < first);
        let Some(&b) = k.checked_sub(1).and_then(|k| boundaries.get(k)) else {
            continue;
        };
        let Some(pid) = s.messages[last].parent_id() else {
            continue;
        };
        let Some((pfirst, _)) = pos_of_parent(last) else {
            continue;
        };
        let marker = s.messages[b].compaction().expect("a boundary");
        if pfirst >= b || marker.preserved.iter().any(|x| x == pid) {
            continue;
        }
        let bid = s.messages[b].id.as_str();
        // A suggestion sits after the boundary (or is preserved by it) and
        // is not the message itself or one of its descendants (an entry
        // after it in the file, e.g. a preserved one, or any entry when a
        // re-used uuid links backwards; fuzz input whole_claude-12); the
        // boundary itself always qualifies.
        let mut fits = |k: usize| {
            s.messages[k].id != m.id
                && !((k > i || risky.contains(m.id.as_str()))
                    && super::dangling_parent::descends_from(
                        s,
                        copies.get_or_insert_with(|| super::dangling_parent::all_copies(s)),
                        k,
                        &m.id,
                    ))
        };
        let suggested = marker
            .preserved
            .iter()
            .rev()
            .filter_map(|x| pos(x).map(|p| p.0))
            .find(|&k| fits(k))
            .or_else(|| {
                summary_of
                    .get(bid)
                    .and_then(|&x| pos_of(x))
                    .map(|p| p.0)
                    .filter(|&k| k >= b && fits(k))
            })
            .map(|k| s.messages[k].id.to_string())
            .unwrap_or_else(|| bid.to_string());
        out.push(StaleParent {
            index: last,
            parent_id: pid.to_string(),
            compaction_index: b,
            suggested_parent_id: suggested,
            neutralised: prunes,
            on_resume_path: visible.contains(&last),
        });
    }
    out
}

pub fn check(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    stale_parents(f)
        .into_iter()
        .map(|sp| {
            let m = &s.messages[sp.index];
            let c = &s.messages[sp.compaction_index];
            let mut f = match s.parent_links {
                ParentLinks::UserTurn => Finding::new(
                    Code::StaleParent,
                    Severity::Error,
                    Some(&m.id),
                    format!(
                        "assistant {} was written after compaction {} but its parent {} is a user turn from before it",
                        m.id, c.id, sp.parent_id
                    ),
                    "run `session-doctor repair` to re-parent it to the newest user message after the compaction",
                ),
                ParentLinks::Chain if sp.neutralised => Finding::new(
                    Code::StaleParent,
                    Severity::Warning,
                    Some(&m.id),
                    format!(
                        "{} {} sits after compaction {} but its parent {} is from before it and not preserved; the latest compaction prunes the old history on resume, which neutralises the link",
                        m.role().as_str(), m.id, c.id, sp.parent_id
                    ),
                    "harmless while the latest compaction's preserved metadata resolves; `session-doctor repair` re-points it to the compaction's preserved tail or summary",
                ),
                ParentLinks::Chain => Finding::new(
                    Code::StaleParent,
                    Severity::Error,
                    Some(&m.id),
                    format!(
                        "{} {} sits after compaction {} but its parent {} is from before it and not preserved; the latest compaction does not prune on resume, so the link stays live{}",
                        m.role().as_str(), m.id, c.id, sp.parent_id,
                        if sp.on_resume_path {
                            " and is on the resume path: the agent follows it, resends the pre-compaction history and drops the summaries"
                        } else {
                            ": a resume from a leaf below it follows it into the pre-compaction history"
                        }
                    ),
                    "run `session-doctor repair` to re-point it to the compaction's preserved tail or summary",
                ),
            }
            .with("parent_id", sp.parent_id.clone())
            .with("suggested_parent_id", sp.suggested_parent_id.clone())
            .with("compaction_id", c.id.to_string());
            if s.parent_links == ParentLinks::Chain {
                f = f
                    .with("pruned_on_resume", sp.neutralised)
                    .with("on_resume_path", sp.on_resume_path);
                if let Some(l) = m.line() {
                    f = f.with("line", l.number());
                }
            }
            f
        })
        .collect()
}
