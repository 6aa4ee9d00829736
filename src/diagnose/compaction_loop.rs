//! `compaction-loop`: repeated automatic compactions that make no progress.
//!
//! The rule of opencode PR #29150 ("break auto-compact loop when compaction
//! makes no progress", issue #27924), applied to stored data:
//! - trigger count of a compaction request = the agent's overflow count
//!   (`Usage::overflow_count`) of the last finished non-summary assistant before it;
//! - a compaction *stalls* when no finished non-summary assistant since the
//!   previous compaction reported less than 95% of the previous trigger count,
//!   and its own trigger count is above 95% of the previous one; two
//!   consecutive zero trigger counts also stall;
//! - a manual compaction (`auto: false`) neither stalls nor continues a chain.
//!
//! Where the agent records the trigger itself ([`crate::model::CompactionMarker::trigger_tokens`];
//! Codex: the last request's `token_count` before the `compacted` line, or
//! its `latest_token_usage_record`), that
//! is the trigger count. Counts the agent stores that report no request
//! (Codex's zero `token_count` right after a `compacted` line, which carries
//! its estimate of the new history) are not messages with usage, so they never
//! count as progress.

use super::{Finding, Severity};
use crate::model::{Message, Role, Session};

/// 95%: a compaction that does not bring the count below this share of the
/// previous trigger made no progress (5% threshold of opencode PR #29150).
pub const PROGRESS_RATIO: f64 = 0.95;

fn counts(m: &Message) -> bool {
    m.role == Role::Assistant && !m.summary && m.finished()
}

/// One chain of consecutive automatic compactions.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Chain {
    /// Indexes of the compaction requests.
    pub compactions: Vec<usize>,
    /// Trigger count of each, in tokens.
    pub tokens: Vec<u64>,
    /// Number of compactions that stalled.
    pub stalls: usize,
}

/// Splits the session's compactions into chains and counts stalls.
pub fn chains(s: &Session) -> Vec<Chain> {
    let mut out: Vec<Chain> = Vec::new();
    let mut cur: Option<Chain> = None;
    for (c, m) in s.messages.iter().enumerate() {
        let Some(marker) = m.compaction() else {
            continue;
        };
        if !marker.auto {
            out.extend(cur.take());
            continue;
        }
        let trigger = marker.trigger_tokens.unwrap_or_else(|| {
            s.messages[..c]
                .iter()
                .rev()
                .find(|m| counts(m))
                .map(|m| m.usage.overflow_count())
                .unwrap_or(0)
        });
        let chain = cur.get_or_insert_with(Chain::default);
        if let (Some(&pc), Some(&pt)) = (chain.compactions.last(), chain.tokens.last()) {
            let limit = pt as f64 * PROGRESS_RATIO;
            let stalled = if pt == 0 {
                trigger == 0
            } else {
                let progressed = s.messages[pc + 1..c]
                    .iter()
                    .any(|m| counts(m) && (m.usage.overflow_count() as f64) < limit);
                !progressed && trigger as f64 > limit
            };
            if stalled {
                chain.stalls += 1;
            }
        }
        chain.compactions.push(c);
        chain.tokens.push(trigger);
    }
    out.extend(cur);
    out
}

pub fn check(s: &Session) -> Vec<Finding> {
    chains(s)
        .into_iter()
        .filter(|c| c.stalls > 0)
        .map(|c| {
            let last = &s.messages[*c.compactions.last().expect("chain is never empty")];
            Finding::new(
                "compaction-loop",
                Severity::Error,
                Some(&last.id),
                format!(
                    "{} automatic compactions in a row, {} without progress (trigger tokens {:?})",
                    c.compactions.len(),
                    c.stalls,
                    c.tokens
                ),
                "the agent will compact again on resume; shrink the session offline (`session-doctor compact`) or switch to a model with a larger context",
            )
            .with("compactions", c.compactions.len())
            .with("stalls", c.stalls)
            .with("tokens", c.tokens.clone())
            .with(
                "compaction_ids",
                c.compactions.iter().map(|&i| s.messages[i].id.clone()).collect::<Vec<_>>(),
            )
        })
        .collect()
}
