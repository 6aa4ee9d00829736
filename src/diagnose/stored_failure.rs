//! Judging a failure stored in history by the present: a failed compaction
//! or an overflow the agent stored stays in the session forever, but it only
//! wedges the session while the next request would fail again. Shared by
//! `compaction-failed` and `overflow-error`.
//!
//! - The request that failed is estimated as the model-visible history
//!   before the failed message (its wire bytes and estimated tokens), what
//!   the agent had sent at that moment.
//! - The failure is **live** (an error) when nothing after it succeeded (no
//!   finished reply since) and the next request is not smaller than the one
//!   that failed; otherwise it is **resolved** (info), with what resolved it.
//!   A history `session-doctor compact` rewrote (its markers are in the view)
//!   is resolved: compact cut it below the size that failed.

use crate::model::{Role, Session};

/// A failed request and whether it still wedges the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Estimated bytes of the request that failed (history as sent).
    pub failed_bytes: u64,
    /// Tokens of the request that failed: the last count the provider
    /// reported before it, or the estimate of the history, the larger.
    pub failed_tokens: u64,
    /// Bytes of the next request's history now.
    pub next_bytes: u64,
    /// Tokens of the next request now.
    pub next_tokens: u64,
    /// Whether size is measured in tokens (a context-window overflow)
    /// rather than bytes (a body-size limit, or an unknown cause).
    pub by_tokens: bool,
    /// What resolved it, when it is resolved.
    pub resolved_by: Option<String>,
}

/// Judges the failure stored on message `i` of `s`; `by_tokens`: the
/// failure was a context-window overflow (compare tokens, not bytes).
pub fn judge(s: &Session, i: usize, by_tokens: bool) -> Judged {
    // What the agent sent then: the history since the last summary that
    // succeeded before it (the summary included), main history only. Later
    // changes (a compaction after it) do not change this estimate.
    let start = s.messages[..i]
        .iter()
        .rposition(|m| m.summary() && m.error().is_none())
        .unwrap_or(0);
    let mut failed_bytes = 0u64;
    let mut failed_tokens = 0u64;
    for m in s.messages[start..i].iter().filter(|m| !m.sidechain()) {
        failed_bytes = failed_bytes.saturating_add(m.wire_bytes());
        failed_tokens = failed_tokens.saturating_add(m.tokens_estimated());
    }
    let reported = s.messages[..i]
        .iter()
        .rev()
        .find(|m| {
            m.role() == Role::Assistant && !m.summary() && !m.sidechain() && !m.usage().is_zero()
        })
        .map(|m| m.usage().overflow_count())
        .unwrap_or(0);
    let failed_tokens = failed_tokens.max(reported);
    let next = crate::sizing::next_turn(s, None);
    let succeeded_after = s.messages[i + 1..]
        .iter()
        .find(|m| m.role() == Role::Assistant && !m.summary() && !m.sidechain() && m.finished());
    let rewritten = s
        .visible
        .iter()
        .any(|&k| s.messages[k].parts.iter().any(|p| p.rewritten));
    let resolved_by = if rewritten {
        // Only `session-doctor compact` leaves these markers, and it cuts the
        // history below the size that failed.
        Some(format!(
            "session-doctor compact rewrote the history since ({} bytes of history now)",
            next.wire_bytes
        ))
    } else if let Some(m) = succeeded_after {
        Some(format!("reply {} succeeded after it", m.id))
    } else if by_tokens && next.tokens < failed_tokens {
        Some(format!(
            "the next request is smaller ({} tokens against the ~{failed_tokens} that failed)",
            next.tokens
        ))
    } else if !by_tokens && next.wire_bytes < failed_bytes {
        Some(format!(
            "the next request is smaller ({} bytes of history against the ~{failed_bytes} that failed)",
            next.wire_bytes
        ))
    } else {
        None
    };
    Judged {
        failed_bytes,
        failed_tokens,
        next_bytes: next.wire_bytes,
        next_tokens: next.tokens,
        by_tokens,
        resolved_by,
    }
}
