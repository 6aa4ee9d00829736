//! `duplicate-id`: an id stored more than once. A copy that repeats the first
//! one's content (only bookkeeping fields differ; Claude Code rewrites lines
//! when two `/compact` run in one process) is a warning that `repair`
//! removes; any other copy is an error: the agent keeps one of them.
//! Fields: `id`, `place`, `same_content` (warnings), and in line-oriented
//! stores `copy_line` (the extra copy's line) and `first_line`.

use super::{Code, Finding, Fix, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    s.duplicate_ids.iter().map(|d| {
        let f = if d.same_content {
            Finding::new(
                Code::DuplicateId,
                Severity::Warning,
                Some(&d.id),
                format!(
                    "id {} is stored more than once ({}); the copy repeats the first one's content",
                    d.id, d.place
                ),
                "harmless (the agent keeps one entry per id); `session-doctor repair` drops the extra copies and keeps the first",
            )
            .with("id", d.id.clone())
            .with("place", d.place.clone())
            .with("same_content", true)
        } else {
            Finding::new(
                Code::DuplicateId,
                Severity::Error,
                Some(&d.id),
                format!("id {} is stored more than once ({})", d.id, d.place),
                "the agent keeps one of them; check which copy is current before resuming",
            )
            .fixed_by(Fix::None)
            .with("id", d.id.clone())
            .with("place", d.place.clone())
        };
        // The lines of a line-oriented store as fields, not only in `place`.
        match d.lines {
            Some((copy, first)) => f.with("copy_line", copy).with("first_line", first),
            None => f,
        }
    })
    .collect()
}
