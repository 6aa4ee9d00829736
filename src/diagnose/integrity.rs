//! `orphan-part` (a part whose message does not exist) and `duplicate-id`
//! (an id stored twice).

use super::{Finding, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    let mut out: Vec<Finding> = s
        .orphan_parts
        .iter()
        .map(|p| {
            Finding::new(
                "orphan-part",
                Severity::Error,
                Some(&p.message_id),
                format!(
                    "part {} ({}) belongs to message {}, which does not exist",
                    p.id, p.kind_name, p.message_id
                ),
                "the agent ignores it; remove it from a copy or restore its message from a backup",
            )
            .with("part_id", p.id.clone())
            .with("payload_bytes", p.payload_bytes)
        })
        .collect();
    out.extend(s.duplicate_ids.iter().map(|d| {
        if d.same_content {
            Finding::new(
                "duplicate-id",
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
                "duplicate-id",
                Severity::Error,
                Some(&d.id),
                format!("id {} is stored more than once ({})", d.id, d.place),
                "the agent keeps one of them; check which copy is current before resuming",
            )
            .with("id", d.id.clone())
        }
    }));
    out
}
