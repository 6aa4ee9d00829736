//! `empty-continuation`: the session a resume lands on continues a
//! compressed parent but holds no message (hermes-agent: a crash after the
//! continuation row was created and before its rows were written). hermes
//! resolves every session of the chain to it and, finding no row, starts a
//! fresh conversation: the parent's transcript is silently left out
//! (docs/formats/hermes.md section 10, "the empty-continuation trap").

use super::{Code, Finding, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    let Some(l) = s.lineage.as_deref() else {
        return Vec::new();
    };
    if !l.continuation || l.rows > 0 || l.resumes != s.id {
        return Vec::new();
    }
    let parent = l.parent.clone().unwrap_or_default();
    vec![Finding::new(
        Code::EmptyContinuation,
        Severity::Error,
        None,
        format!(
            "continuation session {} of {parent} holds no message: resuming any session of the chain loads it and starts with an empty history, leaving {parent}'s transcript out",
            s.id
        ),
        "run `session-doctor repair`: the copy drops the empty continuation and reopens its parent, which then resumes with its transcript",
    )
    .with("session_id", s.id.clone())
    .with("parent_id", parent)
    .with("chain_root", l.root.clone())]
}
