//! opencode's model-visible view after compaction (`MessageV2.filterCompacted`,
//! opencode 1.18.33; docs/formats/opencode-kilo.md section 10).

use crate::model::{Message, Role};

/// A summary that cuts history: an assistant with `summary`, a finish reason and no error.
fn completed_summary(m: &Message) -> bool {
    m.role() == Role::Assistant && m.summary() && m.finish().is_some() && m.error().is_none()
}

/// Indexes of `messages` (chronological) the model sees, in the order sent.
///
/// Walks newest to oldest; a completed summary marks its parent compaction
/// request; reaching that request stops the walk (inclusive) or, when it has a
/// `tail_start_id`, continues to that message (inclusive). Then, for the newest
/// compaction with a tail, the view is reordered to
/// `[compaction, summary] + [tail before the compaction] + [after the summary]`.
pub fn visible_view(messages: &[Message]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut done: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    let mut tail: Option<&str> = None;
    for (i, m) in messages.iter().enumerate().rev() {
        out.push(i);
        if let Some(t) = tail {
            if m.id == t {
                break;
            }
            continue;
        }
        if m.role() == Role::User && done.contains(m.id.as_str()) {
            let Some(c) = m.compaction() else { continue };
            match c.tail_start_id.as_deref() {
                None => break,
                Some(t) if t == m.id => break,
                Some(t) => {
                    tail = Some(t);
                    continue;
                }
            }
        }
        if completed_summary(m) {
            if let Some(p) = m.parent_id() {
                done.insert(p);
            }
        }
    }
    out.reverse();
    let w = out.iter().rposition(|&i| {
        messages[i].role() == Role::User
            && messages[i]
                .compaction()
                .is_some_and(|c| c.tail_start_id.is_some())
    });
    if let Some(w) = w {
        let head = &messages[out[w]];
        let tail_id = head.compaction().and_then(|c| c.tail_start_id.clone());
        let j = out.iter().enumerate().position(|(k, &i)| {
            k > w
                && messages[i].role() == Role::Assistant
                && messages[i].summary()
                && messages[i].parent_id() == Some(head.id.as_str())
        });
        let v = out
            .iter()
            .position(|&i| Some(messages[i].id.as_str()) == tail_id.as_deref());
        if let (Some(j), Some(v)) = (j, v) {
            if v < w {
                let mut r = out[w..=j].to_vec();
                r.extend_from_slice(&out[v..w]);
                r.extend_from_slice(&out[j + 1..]);
                return r;
            }
        }
    }
    out
}
