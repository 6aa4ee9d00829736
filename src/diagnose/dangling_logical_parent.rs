//! `dangling-logical-parent` (warning): a `logicalParentUuid` (Claude Code's
//! informational link from a compaction boundary to the last message before
//! it) that names no message. The agent never follows it, but tools that
//! "continue the line" across a compaction do (docs/formats/claude-code.md
//! section 10; seen in real data).

use super::{Code, Facts, Finding, Severity};

pub fn check(f: &Facts<'_>) -> Vec<Finding> {
    let s = f.session;
    if !s.messages.iter().any(|m| m.logical_parent_id().is_some()) {
        return Vec::new();
    }
    let ids = f.ids();
    s.messages
        .iter()
        .filter_map(|m| {
            let lp = m.logical_parent_id()?;
            if ids.contains_key(lp) {
                return None;
            }
            let mut f = Finding::new(
                Code::DanglingLogicalParent,
                Severity::Warning,
                Some(&m.id),
                format!(
                    "message {} names logical parent {lp}, which is not a message of this session",
                    m.id
                ),
                "the agent never follows this link; tools that join the history across a compaction lose the thread here. No repair needed.",
            )
            .with("logical_parent_id", lp.to_string());
            if let Some(l) = m.line() {
                f = f.with("line", l.number());
            }
            Some(f)
        })
        .collect()
}
