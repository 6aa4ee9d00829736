//! `torn-tail`: the last line of a line-oriented store (JSONL) has no newline
//! and is not complete JSON: the agent stopped while writing it (crash, kill,
//! full disk). Error: an agent that appends its next line to the fragment
//! turns that line into garbage too. Works from [`ProblemKind::TornTail`]
//! load problems, so every line-oriented format reports it the same way.

use super::{Code, Finding, Severity};
use crate::model::{ProblemKind, Session};

pub fn check(s: &Session) -> Vec<Finding> {
    s.problems
        .iter()
        .filter(|p| p.kind == ProblemKind::TornTail)
        .map(|p| {
            Finding::new(
                Code::TornTail,
                Severity::Error,
                p.id.as_deref(),
                format!("{}: {}", p.location, p.error),
                "run `session-doctor repair`: the copy leaves the torn line out, so the agent's next line starts clean",
            )
            .with("place", p.location.clone())
            .with("error", p.error.clone())
        })
        .collect()
}
