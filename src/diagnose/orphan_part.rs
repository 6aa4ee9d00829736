//! `orphan-part`: a part whose message does not exist (a crash between the
//! part's and the message's writes, or a message deleted without its parts).
//! The agent ignores the part; it still takes space.

use super::{Code, Finding, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    s.orphan_parts
        .iter()
        .map(|p| {
            Finding::new(
                Code::OrphanPart,
                Severity::Error,
                Some(&p.message_id),
                format!(
                    "part {} ({}) belongs to message {}, which does not exist",
                    p.part.id, p.part.kind_name, p.message_id
                ),
                "the agent ignores it; remove it from a copy or restore its message from a backup",
            )
            .with("part_id", p.part.id.to_string())
            .with("payload_bytes", p.part.payload_bytes())
        })
        .collect()
}
