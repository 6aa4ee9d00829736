//! `empty-continuation`: the session a resume lands on continues a
//! compressed parent but holds no message (hermes-agent: a crash after the
//! continuation row was created and before its rows were written). hermes
//! resolves every session of the chain to it and, finding no row, starts a
//! fresh conversation: the parent's transcript is silently left out
//! (docs/formats/hermes.md section 10, "the empty-continuation trap").

use super::{Code, Finding, Severity};
use crate::model::Session;

/// The parent `s` continues (empty when the store names none) when `s` is
/// an empty continuation: a continuation session with no message row that
/// a resume of its chain lands on. `None` otherwise (no lineage, a session
/// with rows, or one a resume does not land on).
pub(super) fn parent_of_empty(s: &Session) -> Option<String> {
    empty(s).map(|l| l.parent.clone().unwrap_or_default())
}

/// The lineage of `s` when it is an empty continuation ([`parent_of_empty`]).
fn empty(s: &Session) -> Option<&crate::model::Lineage> {
    s.lineage.as_deref().filter(|l| l.empty_continuation(&s.id))
}

pub fn check(s: &Session) -> Vec<Finding> {
    let Some(l) = empty(s) else {
        return Vec::new();
    };
    let parent = l.parent.clone().unwrap_or_default();
    let remedy = if l.sibling_continuations == 0 {
        "run `session-doctor repair`: the copy drops the empty continuation and reopens its parent, which then resumes with its transcript"
    } else {
        // repair does not reopen a parent another session continues.
        "run `session-doctor repair`: the copy drops the empty continuation; its parent keeps its other continuation, which a resume of the parent loads"
    };
    vec![Finding::new(
        Code::EmptyContinuation,
        Severity::Error,
        None,
        format!(
            "continuation session {} of {parent} holds no message: resuming any session of the chain loads it and starts with an empty history, leaving {parent}'s transcript out",
            s.id
        ),
        remedy,
    )
    .with("session_id", s.id.clone())
    .with("parent_id", parent)
    .with("chain_root", l.root.clone())
    .with("sibling_continuations", l.sibling_continuations)]
}
