//! `media-in-history`: inline media in messages older than the newest message
//! whose media the provider receives as user input (a user message or a tool
//! result), after at least one compaction (hermes-agent's historical-media
//! rule: only the newest media stays useful; older images are resent on every
//! turn). Identical media are counted once, with their repeat count.

use super::{Code, Finding, Severity};
use crate::model::Session;

/// Indexes of messages whose media is historical: every message carrying
/// media before the newest one that carries media. Empty before the first
/// compaction.
pub fn historical_media(s: &Session) -> Vec<usize> {
    if s.compactions() == 0 {
        return Vec::new();
    }
    media_before_newest(s)
}

/// Indexes of every message carrying media before the newest one that
/// carries media, compaction or not (what `compact` strips first). An
/// earlier copy of the newest one's id is left out: an edit names an id and
/// applies to every stored copy of it, so stripping that copy would strip
/// the newest media too (fuzz input claude_transcript-5).
pub fn media_before_newest(s: &Session) -> Vec<usize> {
    let Some(anchor) = s.messages.iter().rposition(|m| m.media_count() > 0) else {
        return Vec::new();
    };
    let newest = &s.messages[anchor].id;
    (0..anchor)
        .filter(|&i| s.messages[i].media_count() > 0 && s.messages[i].id != *newest)
        .collect()
}

pub fn check(s: &Session) -> Vec<Finding> {
    let idx = historical_media(s);
    if idx.is_empty() {
        return Vec::new();
    }
    // sha256 -> (decoded bytes, repeats)
    let mut distinct: Vec<(String, u64, usize)> = Vec::new();
    let mut count = 0;
    let mut bytes = 0;
    for &i in &idx {
        for m in s.messages[i].parts.iter().flat_map(|p| p.media()) {
            count += 1;
            bytes += m.decoded_bytes;
            match distinct.iter_mut().find(|(h, ..)| *h == m.sha256) {
                Some(d) => d.2 += 1,
                None => distinct.push((m.sha256.clone(), m.decoded_bytes, 1)),
            }
        }
    }
    // Repeats of the kept media count too: the newest copy is what stays.
    let anchor = s
        .messages
        .iter()
        .rposition(|m| m.media_count() > 0)
        .expect("media exists");
    for m in s.messages[anchor].parts.iter().flat_map(|p| p.media()) {
        if let Some(d) = distinct.iter_mut().find(|(h, ..)| *h == m.sha256) {
            d.2 += 1;
        }
    }
    let distinct_bytes: u64 = distinct.iter().map(|d| d.1).sum();
    vec![Finding::new(
        Code::MediaInHistory,
        Severity::Warning,
        Some(&s.messages[idx[0]].id),
        format!(
            "{count} inline media item(s), {bytes} decoded bytes ({} distinct, {distinct_bytes} bytes), sit in history older than the newest media message {}",
            distinct.len(),
            s.messages[anchor].id
        ),
        "strip historical media with `session-doctor compact` (keeps the newest media message)",
    )
    .with("media_count", count)
    .with("media_bytes", bytes)
    .with("distinct_media", distinct.len())
    .with("distinct_media_bytes", distinct_bytes)
    .with(
        "media",
        distinct
            .iter()
            .map(|(h, b, n)| serde_json::json!({"sha256": h, "bytes": b, "repeats": n}))
            .collect::<Vec<_>>(),
    )
    .with("message_ids", idx.iter().map(|&i| s.messages[i].id.to_string()).collect::<Vec<_>>())
    .with("kept_message_id", s.messages[anchor].id.to_string())]
}
