//! `unreadable`: a row, file or line that is not valid JSON or lacks required
//! fields (a torn last line is `torn-tail`).

use super::{Code, Finding, Severity};
use crate::model::{ProblemKind, Session};

pub fn check(s: &Session) -> Vec<Finding> {
    s.problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Unreadable)
        .map(|p| {
            Finding::new(
                Code::Unreadable,
                Severity::Error,
                p.id.as_deref(),
                format!("{}: {}", p.location, p.error),
                "the rest of the session was read; fix or remove this row in a copy, the agent may fail to load it",
            )
            .with("place", p.location.clone())
            .with("error", p.error.clone())
        })
        .collect()
}
