//! `unanswered-turns`: the model-visible history ends with two or more user
//! turns that got no reply. hermes-agent 0.19.0 stores a failed turn's user
//! message and nothing else (no assistant row, no error): when every request
//! fails (HTTP 413 on a body its compression cannot shrink), user rows pile
//! up at the end; on resume hermes merges them into one message and sends the
//! same oversized history again (docs/formats/hermes.md sections 8 and 13,
//! `hermes-gen/wedged_413`). Messages without parts (metadata lines) are
//! skipped; any other message ends the run.
//!
//! Checked on hermes-agent sessions only: opencode and Kilo store an
//! assistant (with its error) for every turn, and Claude Code writes local
//! commands (`/model`, `/exit`) as user lines nobody answers.

use super::{Code, Finding, Fix, Severity};
use crate::model::{Agent, Role, Session};

/// Indexes of the user turns at the end of the visible view that no
/// assistant message follows (oldest first).
pub fn unanswered(s: &Session) -> Vec<usize> {
    let mut out = Vec::new();
    for &i in s.visible.iter().rev() {
        let m = &s.messages[i];
        if m.parts.is_empty() && !matches!(m.role(), Role::User | Role::Assistant) {
            continue;
        }
        if !m.is_prompt() || m.synthetic() {
            break;
        }
        out.push(i);
    }
    out.reverse();
    out
}

pub fn check(s: &Session) -> Vec<Finding> {
    if s.agent != Agent::Hermes {
        return Vec::new();
    }
    let idx = unanswered(s);
    if idx.len() < 2 {
        return Vec::new();
    }
    let Some(largest) = s
        .visible
        .iter()
        .map(|&i| &s.messages[i])
        .max_by_key(|m| m.wire_bytes())
    else {
        return Vec::new();
    };
    let visible_bytes: u64 = s.visible.iter().map(|&i| s.messages[i].wire_bytes()).sum();
    // Judged by the present: a history `session-doctor compact` rewrote is
    // no longer the one every request of those turns failed with.
    let rewritten = s
        .visible
        .iter()
        .any(|&i| s.messages[i].parts.iter().any(|p| p.rewritten));
    if rewritten {
        return vec![Finding::new(
            Code::UnansweredTurns,
            Severity::Info,
            Some(&s.messages[*idx.last().expect("two or more")].id),
            format!(
                "the history ends with {} user messages that got no reply; resolved: session-doctor compact rewrote the history since ({visible_bytes} bytes now)",
                idx.len()
            ),
            "none needed: resume the session",
        )
        .fixed_by(Fix::None)
        .with("unanswered", idx.len())
        .with("visible_bytes", visible_bytes)];
    }
    vec![Finding::new(
        Code::UnansweredTurns,
        Severity::Error,
        Some(&s.messages[*idx.last().expect("two or more")].id),
        format!(
            "the history ends with {} user messages that got no reply (every request of those turns failed; hermes-agent leaves only the user rows); the largest message the agent sends is {} ({} bytes of {} visible)",
            idx.len(),
            largest.id,
            largest.wire_bytes(),
            visible_bytes
        ),
        "resuming sends the same history again and fails the same way: shrink the session with `session-doctor compact --max-request-bytes N` (the provider's request limit), which cuts the largest message",
    )
    .with("unanswered", idx.len())
    .with(
        "message_ids",
        idx.iter().map(|&i| s.messages[i].id.to_string()).collect::<Vec<_>>(),
    )
    .with("largest_message_id", largest.id.to_string())
    .with("largest_message_bytes", largest.wire_bytes())
    .with("visible_bytes", visible_bytes)
    // Every request of those turns sent (at least) this history.
    .with("failed_request_bytes", visible_bytes)
    .with("judged_by", "bytes")]
}
