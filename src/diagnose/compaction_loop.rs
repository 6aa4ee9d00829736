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
//! - a manual compaction (`auto: false`) neither stalls nor continues a chain;
//! - a compaction whose summary failed (and none succeeded) is not a
//!   no-progress compaction: it is `compaction-failed`'s, and is left out of
//!   the chain (a session wedged by HTTP 413 retries failing overflow compactions).
//!
//! Where the agent records the trigger itself (Claude Code
//! `compactMetadata.preTokens`; Codex: the last request's `token_count`
//! before the `compacted` line, or its `latest_token_usage_record`), that is
//! the trigger count; only `trigger: auto` boundaries chain. Counts the agent
//! stores that report no request (Codex's zero `token_count` right after a
//! `compacted` line) are not messages with usage, so they never count as
//! progress. A compaction that records its result
//! (`postTokens`) no lower than 95% of its trigger made no progress by
//! itself: it stalls too, and is listed in `no_progress_ids`.

use super::{Code, Finding, Severity};
use crate::model::{Message, Role, Session};

/// 95%: a compaction that does not bring the count below this share of the
/// previous trigger made no progress (5% threshold of opencode PR #29150).
pub const PROGRESS_RATIO: f64 = 0.95;

fn m_id(s: &Session, i: usize) -> &str {
    &s.messages[i].id
}

fn counts(m: &Message) -> bool {
    m.role() == Role::Assistant && !m.summary() && m.finished()
}

/// One chain of consecutive automatic compactions.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Chain {
    /// Indexes of the compaction requests.
    pub compactions: Vec<usize>,
    /// Trigger count of each, in tokens.
    pub tokens: Vec<u64>,
    /// Recorded count right after each, when the agent records one.
    pub post_tokens: Vec<Option<u64>>,
    /// Compactions whose recorded result is not 5% below their trigger.
    pub no_progress: Vec<usize>,
    /// Number of compactions that stalled.
    pub stalls: usize,
    /// Whether each compaction stalled (as counted in `stalls`).
    pub stalled: Vec<bool>,
}

/// Splits the session's compactions into chains and counts stalls.
pub fn chains(s: &Session) -> Vec<Chain> {
    let mut out: Vec<Chain> = Vec::new();
    let mut cur: Option<Chain> = None;
    // Per parent id, the newest summary answering it that failed and the
    // newest that succeeded (built once, not one scan per compaction: a
    // session can hold thousands of compactions).
    type Newest = (Option<usize>, Option<usize>);
    let mut answers: rustc_hash::FxHashMap<&str, Newest> = Default::default();
    for (i, m) in s.messages.iter().enumerate() {
        if m.role() == Role::Assistant && m.summary() {
            if let Some(p) = m.parent_id() {
                let a = answers.entry(p).or_default();
                if m.error().is_some() {
                    a.0 = Some(i);
                } else {
                    a.1 = Some(i);
                }
            }
        }
    }
    // The newest message before the current one whose usage counts: kept as
    // the walk goes, not searched for at each compaction (a session of
    // compactions with no usage between them took time in the square of
    // its length).
    let mut newest_counted: Option<usize> = None;
    for (c, m) in s.messages.iter().enumerate() {
        let before = newest_counted;
        if counts(m) {
            newest_counted = Some(c);
        }
        let Some(marker) = m.compaction() else {
            continue;
        };
        // A manual compaction, or one whose progress the store cannot show,
        // ends the chain.
        if !marker.auto || marker.unjudged {
            out.extend(cur.take());
            continue;
        }
        // Only summaries after the compaction answer it.
        let (failed, succeeded) = answers.get(m_id(s, c)).map_or((false, false), |&(f, ok)| {
            (f.is_some_and(|i| i > c), ok.is_some_and(|i| i > c))
        });
        if failed && !succeeded {
            continue;
        }
        let trigger = marker
            .trigger_tokens
            .unwrap_or_else(|| before.map_or(0, |k| s.messages[k].usage().overflow_count()));
        let chain = cur.get_or_insert_with(Chain::default);
        let own_stall = marker
            .post_tokens
            .is_some_and(|p| trigger > 0 && p as f64 >= trigger as f64 * PROGRESS_RATIO);
        if own_stall {
            chain.no_progress.push(c);
        }
        let mut this_stalled = false;
        if let (Some(&pc), Some(&pt)) = (chain.compactions.last(), chain.tokens.last()) {
            let limit = pt as f64 * PROGRESS_RATIO;
            let stalled = if pt == 0 {
                trigger == 0
            } else {
                let progressed = s.messages[pc + 1..c]
                    .iter()
                    .any(|m| counts(m) && (m.usage().overflow_count() as f64) < limit);
                !progressed && trigger as f64 > limit
            };
            if stalled && !own_stall {
                chain.stalls += 1;
                this_stalled = true;
            }
        }
        if own_stall {
            chain.stalls += 1;
            this_stalled = true;
        }
        chain.stalled.push(this_stalled);
        chain.compactions.push(c);
        chain.tokens.push(trigger);
        chain.post_tokens.push(marker.post_tokens);
    }
    out.extend(cur);
    out
}

pub fn check(s: &Session) -> Vec<Finding> {
    let mut out = judged(s);
    out.extend(unjudged(s));
    out
}

/// Compactions the agent records no trigger or usage for
/// ([`crate::model::CompactionMarker::unjudged`]: hermes-agent's in-place
/// compressions): their count, as `info`; their progress is never guessed.
fn unjudged(s: &Session) -> Option<Finding> {
    let idx: Vec<usize> = (0..s.messages.len())
        .filter(|&i| s.messages[i].compaction().is_some_and(|c| c.unjudged))
        .collect();
    let last = &s.messages[*idx.last()?];
    Some(
        Finding::new(
            Code::CompactionLoop,
            Severity::Info,
            Some(&last.id),
            format!(
                "{} compaction(s) whose progress cannot be judged from the store: the agent records neither their trigger nor the usage around them (hermes-agent's in-place compression keeps one usage total per session)",
                idx.len()
            ),
            "none needed; if the session keeps compacting, shrink it offline (`session-doctor compact`)",
        )
        .with("compactions", idx.len())
        .with("progress", "unknown")
        .with(
            "compaction_ids",
            idx.iter().map(|&i| s.messages[i].id.to_string()).collect::<Vec<_>>(),
        ),
    )
}

/// "the newest compaction made progress (trigger T tokens after P), so the
/// loop may be over", of a chain's trigger counts (`tokens`, two or more).
fn progress_lead(tokens: &[u64]) -> String {
    let n = tokens.len();
    format!(
        "the newest compaction made progress (trigger {} tokens after {}), so the loop may be over",
        tokens[n - 1],
        tokens[n - 2]
    )
}

/// The trigger counts of a chain finding `f` (its `tokens` figure).
fn trigger_tokens(f: &Finding) -> Vec<u64> {
    f.figures
        .get("tokens")
        .and_then(|t| t.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
        .unwrap_or_default()
}

/// What `session-doctor compact` cuts the next turn of chain finding `f`
/// below, in tokens: 95% of the chain's last trigger ([`PROGRESS_RATIO`]:
/// the agent would compact again above it); `None` when that trigger is 0
/// or missing.
pub fn cut_goal(f: &Finding) -> Option<u64> {
    let last = *trigger_tokens(f).last().filter(|&&t| t > 0)?;
    Some((last as f64 * PROGRESS_RATIO) as u64)
}

/// The remedy of an open-chain finding `f` when `session-doctor compact`
/// would change nothing because the next turn (`next_turn` tokens, the
/// agent's overhead included) is already under 95% of the chain's last
/// trigger (its `tokens` figure): the advice to cut below the trigger is
/// ruled out by those figures, so only what is left is said (after the
/// progress the chain made, when its newest compaction made some). `None`
/// when the finding has no trigger above 0 or the next turn is not under
/// 95% of it.
pub fn remedy_already_under(f: &Finding, next_turn: u64) -> Option<String> {
    let goal = cut_goal(f).filter(|&g| next_turn < g)?;
    let tokens = trigger_tokens(f);
    let progressed = f.figures.get("last_progressed").and_then(|v| v.as_bool()) == Some(true)
        && tokens.len() >= 2;
    let lead = if progressed {
        format!("{}; ", progress_lead(&tokens))
    } else {
        String::new()
    };
    Some(format!(
        "{lead}the next turn is estimated at {next_turn} tokens, already under {goal} (95% of the last trigger), so cutting history offline cannot help; if the agent still compacts on resume, what it counts is not this history (the provider's reported usage, for one): switch to a model with a larger context"
    ))
}

/// The remedy of an open chain whose session is an empty continuation of
/// `parent` ([`super::empty_continuation`]): the history the loop would be
/// judged on is not there (the next turn counts 0 tokens), so neither a cut
/// nor a larger model is the advice; `repair` drops the empty session, and
/// the chain then resumes on `parent`'s transcript (or on another
/// continuation of it, when there is one).
fn remedy_after_empty_continuation(parent: &str) -> String {
    format!(
        "the session a resume lands on holds no message (empty-continuation), so the loop cannot be judged on its history: run `session-doctor repair`, which drops it; `session-doctor check` on the copy judges the loop again on what a resume of {parent} then loads"
    )
}

/// A chain is over (history, `info`) when another compaction came after it:
/// a later chain, or a manual compaction (`session-doctor compact` writes
/// its own as manual ones where the agent keeps every summary).
fn judged(s: &Session) -> Vec<Finding> {
    let all = chains(s);
    let last_compaction = (0..s.messages.len())
        .rev()
        .find(|&i| s.messages[i].compaction().is_some_and(|c| !c.unjudged));
    all.into_iter()
        .filter(|c| c.stalls > 0)
        .map(|c| {
            let end = *c.compactions.last().expect("chain is never empty");
            let over = last_compaction.is_some_and(|l| l > end);
            // The chain's newest compaction made progress: a stall earlier
            // in the chain, then a count that fell. The loop may be over;
            // the store cannot tell whether the agent compacts again.
            let last_progressed = c.stalled.last() == Some(&false) && c.tokens.len() >= 2;
            let last = &s.messages[end];
            let empty = if over {
                None
            } else {
                super::empty_continuation::parent_of_empty(s)
            };
            let remedy = if over {
                "none needed: the loop ended".to_string()
            } else if let Some(parent) = &empty {
                remedy_after_empty_continuation(parent)
            } else if last_progressed {
                format!(
                    "{}; if the agent keeps compacting on resume, cut history offline below the trigger (`session-doctor compact`) or switch to a model with a larger context",
                    progress_lead(&c.tokens)
                )
            } else {
                "the agent will compact again on resume; cut history offline below the trigger (`session-doctor compact`) or switch to a model with a larger context".to_string()
            };
            let mut f = Finding::new(
                Code::CompactionLoop,
                if over { Severity::Info } else { Severity::Error },
                Some(&last.id),
                format!(
                    "{} automatic compactions in a row, {} without progress (trigger tokens {:?}){}",
                    c.compactions.len(),
                    c.stalls,
                    c.tokens,
                    if over { "; over: a later compaction ended the chain" } else { "" }
                ),
                &remedy,
            )
            .with("compactions", c.compactions.len())
            .with("stalls", c.stalls)
            .with("last_progressed", last_progressed)
            .with("tokens", c.tokens.clone())
            .with(
                "compaction_ids",
                c.compactions.iter().map(|&i| s.messages[i].id.to_string()).collect::<Vec<_>>(),
            );
            if over {
                f = f.fixed_by(crate::diagnose::Fix::None);
            } else if empty.is_some() {
                f = f.fixed_by(crate::diagnose::Fix::Repair);
            }
            if c.post_tokens.iter().any(Option::is_some) {
                f = f.with("post_tokens", c.post_tokens.clone()).with(
                    "no_progress_ids",
                    c.no_progress.iter().map(|&i| s.messages[i].id.to_string()).collect::<Vec<_>>(),
                );
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_chain(tokens: &[u64], last_progressed: bool) -> Finding {
        Finding::new(
            Code::CompactionLoop,
            Severity::Error,
            None,
            String::new(),
            "",
        )
        .with("tokens", tokens.to_vec())
        .with("last_progressed", last_progressed)
    }

    /// Said only under 95% of the chain's own last trigger, after the
    /// chain's progress when its newest compaction made some.
    #[test]
    fn remedy_already_under_needs_the_next_turn_under_the_chains_goal() {
        let f = open_chain(&[60000, 60000], false);
        let r = remedy_already_under(&f, 1353).unwrap();
        assert!(
            r.starts_with("the next turn is estimated at 1353 tokens, already under 57000 (95% of the last trigger)"),
            "{r}"
        );
        assert_eq!(remedy_already_under(&f, 57000), None);
        assert_eq!(remedy_already_under(&open_chain(&[0, 0], false), 0), None);
        assert_eq!(remedy_already_under(&open_chain(&[], false), 0), None);
        let r = remedy_already_under(&open_chain(&[70596, 21741], true), 795).unwrap();
        assert!(
            r.starts_with("the newest compaction made progress (trigger 21741 tokens after 70596), so the loop may be over; the next turn is estimated at 795 tokens, already under 20653"),
            "{r}"
        );
    }
}
