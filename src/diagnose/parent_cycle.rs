//! `parent-cycle`: messages whose parent links form a loop (a message that
//! is its own parent, or A -> B -> A). An agent that walks up the parents to
//! rebuild the history (Claude Code from its leaf; opencode when it renders a
//! turn) never reaches a root: it stops at whatever guard it has, or loops.
//! Found in the audit's hostile inputs for Claude Code and opencode.
//!
//! Each cycle is reported once, on its oldest member (lowest stored
//! position), with the ids in walk order from it. `repair` breaks the cycle
//! at that member: it is re-parented as a dangling parent would be (user
//! turns: the newest earlier user message; chains: the last valid message
//! before it on the same chain), or made a root when there is none (or when
//! it is an opencode user message, which has no parent).

use super::{Code, Facts, Finding, Severity};

/// One cycle: indexes of its members in walk order, starting at the oldest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    pub members: Vec<usize>,
}

impl Cycle {
    /// The oldest member (where repair breaks the cycle).
    pub fn oldest(&self) -> usize {
        self.members[0]
    }
}

/// Every parent cycle of `s` (over the first copy of each id), oldest member
/// first, in O(n).
pub fn cycles(f: &Facts<'_>) -> Vec<Cycle> {
    let s = f.session;
    if !s.has_parents() {
        return Vec::new();
    }
    let links = f.links();
    let n = s.messages.len();
    let next = |i: usize| -> Option<usize> { links.parent(i).at() };
    // 0 unvisited, 1 on the current walk, 2 done.
    let mut state = vec![0u8; n];
    let mut out = Vec::new();
    let mut path: Vec<usize> = Vec::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        path.clear();
        let mut cur = Some(start);
        while let Some(c) = cur {
            match state[c] {
                0 => {
                    state[c] = 1;
                    path.push(c);
                    cur = next(c);
                }
                1 => {
                    // The walk came back to a node on it: a new cycle.
                    let at = path.iter().position(|&x| x == c).unwrap_or(0);
                    let mut members = path[at..].to_vec();
                    let k = members
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, &m)| m)
                        .map(|(k, _)| k)
                        .unwrap_or(0);
                    members.rotate_left(k);
                    out.push(Cycle { members });
                    break;
                }
                _ => break,
            }
        }
        for &p in &path {
            state[p] = 2;
        }
    }
    out.sort_by_key(Cycle::oldest);
    out
}

pub fn check(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    cycles(f)
        .into_iter()
        .map(|c| {
            let ids: Vec<String> = c
                .members
                .iter()
                .map(|&i| s.messages[i].id.to_string())
                .collect();
            let m = &s.messages[c.oldest()];
            let shown = if ids.len() == 1 {
                format!("message {} is its own parent", ids[0])
            } else {
                format!(
                    "messages {} -> {} form a parent cycle",
                    ids.join(" -> "),
                    ids[0]
                )
            };
            let mut f = Finding::new(
                Code::ParentCycle,
                Severity::Error,
                Some(&m.id),
                format!(
                    "{shown}: a walk up the parents never reaches the start of the conversation"
                ),
                "run `session-doctor repair` to break the cycle at its oldest member",
            )
            .with("cycle_ids", ids.clone())
            .with("length", ids.len());
            if let Some(l) = m.line() {
                f = f.with("line", l.number());
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::Parent;
    use crate::model::{Agent, Message, MessageFields, Role, Session};

    fn msg(id: &str, parent: Option<&str>) -> Message {
        Message::from(MessageFields {
            parent_id: parent.map(Into::into),
            ..MessageFields::new(id, Role::User)
        })
    }

    fn session(links: &[(&str, Option<&str>)]) -> Session {
        let mut s = Session::new(Agent::ClaudeCode, "s", None, "x".into());
        s.messages = links.iter().map(|(i, p)| msg(i, *p)).collect();
        s
    }

    #[test]
    fn self_parent_and_two_cycles_are_found_once_each_from_the_oldest() {
        let s = session(&[
            ("a", None),
            ("b", Some("a")),
            ("c", Some("d")),
            ("d", Some("c")),
            ("e", Some("e")),
            ("f", Some("c")),
        ]);
        let c = cycles(&Facts::new(&s));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].members, vec![2, 3]);
        assert_eq!(c[1].members, vec![4]);
        let f = check(&Facts::new(&s));
        assert_eq!(f[0].figures["cycle_ids"], serde_json::json!(["c", "d"]));
        assert!(f[1].detail.contains("its own parent"));
    }

    #[test]
    fn a_long_chain_without_cycles_is_linear() {
        let ids: Vec<String> = (0..100_000).map(|i| format!("m{i}")).collect();
        // Parents point forward: the worst case for naive walks.
        let mut links: Vec<(&str, Option<&str>)> = ids
            .windows(2)
            .map(|w| (w[0].as_str(), Some(w[1].as_str())))
            .collect();
        links.push((ids[ids.len() - 1].as_str(), None));
        let s = session(&links);
        assert!(cycles(&Facts::new(&s)).is_empty());
    }

    /// A re-used id links to its first copy, and a parent is followed to
    /// the first copy of the id it names; an unknown parent is missing.
    #[test]
    fn links_lead_to_first_copies_and_tell_no_parent_from_a_missing_one() {
        let s = session(&[
            ("a", None),
            ("b", Some("a")),
            ("a", Some("b")),
            ("c", Some("gone")),
            ("d", Some("c")),
        ]);
        let f = Facts::new(&s);
        let l = f.links();
        let firsts: Vec<bool> = (0..5).map(|i| l.is_first(i)).collect();
        assert_eq!(firsts, [true, true, false, true, true]);
        let parents: Vec<Parent> = (0..5).map(|i| l.parent(i)).collect();
        assert_eq!(
            parents,
            [
                Parent::None,
                Parent::At(0),
                Parent::At(1),
                Parent::Missing,
                Parent::At(3)
            ]
        );
        assert_eq!(Parent::Missing.at(), None);
        let risky: Vec<&str> = {
            let mut r: Vec<&str> = f.risky().iter().copied().collect();
            r.sort();
            r
        };
        // "a" has two copies; no parent named before its first copy.
        assert_eq!(risky, ["a"]);
    }

    /// Where the parent is the message just before (answered without a
    /// lookup), a later copy of the parent id still leads to its first
    /// copy; with no id repeated, each message is its own first copy.
    #[test]
    fn a_parent_just_before_leads_to_its_first_copy() {
        let s = session(&[
            ("a", None),
            ("b", Some("a")),
            ("a", Some("b")),
            ("c", Some("a")),
        ]);
        let f = Facts::new(&s);
        assert_eq!(f.links().parent(3), Parent::At(0));
        let s = session(&[("a", None), ("b", Some("a")), ("c", Some("b"))]);
        let f = Facts::new(&s);
        let l = f.links();
        assert!((0..3).all(|i| l.is_first(i)));
        assert_eq!([l.parent(1), l.parent(2)], [Parent::At(0), Parent::At(1)]);
    }
}
