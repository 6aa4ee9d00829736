//! `payload-too-large`: the estimated request body of the next turn exceeds
//! `--max-request-bytes`. Estimated body = bytes of everything in the
//! model-visible view (text, tool input and output, base64 media as sent)
//! plus headroom for what the agent adds to every request (system prompt,
//! tool schemas): `--headroom`, a share of the limit. Also flags any single
//! part that alone exceeds the limit. Images are byte-heavy and token-light:
//! this is reported even when tokens are fine.

use super::{Code, Finding, Options, Severity};
use crate::model::Session;
use crate::sizing::next_turn;

/// 6 MiB: a common gateway cap on request bodies (others: Anthropic 32 MB per
/// request and 5 MB per image, 10 MiB on some gateways).
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 6 * 1024 * 1024;
/// 25% of the limit is kept for the system prompt and tool schemas.
pub const DEFAULT_HEADROOM: f64 = 0.25;

const REMEDY: &str = "the agent's own compaction resends the same history and fails too; strip media and truncate payload with `session-doctor compact --max-request-bytes N`";

/// Headroom in bytes for `o`.
pub fn headroom_bytes(o: &Options) -> u64 {
    (o.max_request_bytes as f64 * o.headroom).round() as u64
}

pub fn check(s: &Session, o: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    let nt = next_turn(s, None);
    let headroom = headroom_bytes(o);
    let body = nt.wire_bytes.saturating_add(headroom);
    let largest = s
        .visible
        .iter()
        .flat_map(|&i| &s.messages[i].parts)
        .max_by_key(|p| p.wire_bytes());
    if body > o.max_request_bytes {
        let mut f = Finding::new(
            Code::PayloadTooLarge,
            Severity::Error,
            s.visible.last().map(|&i| s.messages[i].id.as_str()),
            format!(
                "the next request body is about {body} bytes ({} of visible history + {headroom} headroom), over the {} byte limit",
                nt.wire_bytes, o.max_request_bytes
            ),
            REMEDY,
        )
        .with("request_bytes", body)
        .with("visible_bytes", nt.wire_bytes)
        .with("headroom_bytes", headroom)
        .with("max_request_bytes", o.max_request_bytes)
        .with("media_bytes", s.visible.iter().map(|&i| s.messages[i].media_bytes()).sum::<u64>());
        if let Some(p) = largest {
            f = f
                .with("largest_part_id", p.id.to_string())
                .with("largest_part_bytes", p.wire_bytes());
        }
        out.push(f);
    }
    for m in s.visible.iter().map(|&i| &s.messages[i]) {
        for p in m
            .parts
            .iter()
            .filter(|p| p.wire_bytes() > o.max_request_bytes)
        {
            out.push(
                Finding::new(
                    Code::PayloadTooLarge,
                    Severity::Error,
                    Some(&m.id),
                    format!(
                        "part {} ({}) alone puts {} bytes on the wire, over the {} byte limit",
                        p.id,
                        p.kind_name,
                        p.wire_bytes(),
                        o.max_request_bytes
                    ),
                    REMEDY,
                )
                .with("part_id", p.id.to_string())
                .with("part_bytes", p.wire_bytes())
                .with("max_request_bytes", o.max_request_bytes),
            );
        }
    }
    out
}
