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
    /// Estimated tokens of the request that failed.
    pub failed_tokens: u64,
    /// Bytes of the next request's history now.
    pub next_bytes: u64,
    /// What resolved it, when it is resolved.
    pub resolved_by: Option<String>,
}

/// Judges the failure stored on message `i` of `s`.
pub fn judge(s: &Session, i: usize) -> Judged {
    let mut failed_bytes = 0u64;
    let mut failed_tokens = 0u64;
    for &k in s.visible.iter().filter(|&&k| k < i) {
        let m = &s.messages[k];
        failed_bytes = failed_bytes.saturating_add(m.wire_bytes());
        failed_tokens = failed_tokens.saturating_add(m.tokens_estimated());
    }
    // Nothing visible before it (the view moved on): everything before it.
    if failed_bytes == 0 {
        for m in &s.messages[..i] {
            failed_bytes = failed_bytes.saturating_add(m.wire_bytes());
            failed_tokens = failed_tokens.saturating_add(m.tokens_estimated());
        }
    }
    let next = crate::sizing::next_turn(s, None);
    let succeeded_after = s.messages[i + 1..]
        .iter()
        .find(|m| m.role == Role::Assistant && !m.summary && !m.sidechain && m.finished());
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
    } else if next.wire_bytes < failed_bytes {
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
        resolved_by,
    }
}
