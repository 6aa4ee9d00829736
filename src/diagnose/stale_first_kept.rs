//! `stale-first-kept`: a compaction whose stored kept-tail index (docker-agent
//! `first_kept_entry`, an index into the agent's loaded item list) makes the
//! agent send something other than what its compaction meant to keep
//! (docs/formats/docker-agent.md sections 6 and 7). The format judges each
//! stored value ([`crate::model::KeptEntry`]); this rule reports the stale
//! ones:
//! - out of range (negative, or beyond the summary's own index): docker-agent
//!   silently ignores it and sends no kept tail;
//! - before the previous summary's kept region: honoured, so a resume
//!   resends history an earlier compaction had cut (the value the
//!   intermediate runtime's `mapToSessionIndex` wrote: the docker-agent
//!   analogue of a stale cross-compaction parent);
//! - the kept tail starts on a tool result whose call was summarized:
//!   honoured, and `sanitizeToolCalls` drops the result as an orphan.
//!
//! Not stale: 0 (no kept region), the summary's own index (the compactor's
//! "keep nothing"), a user or assistant message inside the current region
//! even when it differs from the compactor's rule, a stored system message
//! (docker-agent sends stored system messages), a non-message item (skipped).
//! Error when the repair changes what the next request sends; warning when it
//! does not (an out-of-range value where the rule keeps nothing anyway, an
//! older summary a newer one superseded).

use super::{Code, Finding, Severity};
use crate::model::{KeptStale, Session};

pub fn check(s: &Session) -> Vec<Finding> {
    let last = s
        .messages
        .iter()
        .rposition(|m| m.compaction().is_some_and(|c| c.kept_entry.is_some()));
    s.messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let e = m.compaction()?.kept_entry.as_deref()?;
            let why = e.stale?;
            let changes_view = Some(i) == last && e.corrected_start != e.effective_start;
            let detail = match why {
                KeptStale::OutOfRange => format!(
                    "summary {} stores first_kept_entry {} but is item {} of the session: docker-agent ignores the value and sends no kept tail (resends from item {}); its compactor keeps from item {}",
                    m.id, e.stored, e.index, e.effective_start, e.rule
                ),
                KeptStale::BeforePrevious => format!(
                    "summary {} keeps from item {}, before item {} where the previous summary's kept region starts: docker-agent resends history that compaction had cut; its compactor keeps from item {}",
                    m.id, e.stored, e.previous_start, e.rule
                ),
                KeptStale::OnToolResult => format!(
                    "summary {} keeps from item {}, a tool result whose call was summarized: docker-agent drops it as an orphan; its compactor keeps from item {}",
                    m.id, e.stored, e.rule
                ),
            };
            let remedy = if changes_view {
                "run `session-doctor repair` to set first_kept_entry to the compactor's value"
            } else {
                "harmless for the next request; `session-doctor repair` sets first_kept_entry to the compactor's value"
            };
            Some(
                Finding::new(
                    Code::StaleFirstKept,
                    if changes_view {
                        Severity::Error
                    } else {
                        Severity::Warning
                    },
                    Some(&m.id),
                    detail,
                    remedy,
                )
                .with("kind", why.as_str())
                .with("stored", e.stored)
                .with("correct", e.rule)
                .with("summary_index", e.index)
                .with("effective_start", e.effective_start)
                .with("corrected_start", e.corrected_start)
                .with("previous_summary_kept_from", e.previous_start),
            )
        })
        .collect()
}
