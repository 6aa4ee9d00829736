//! What Codex sends the model when it resumes a rollout (docs/formats/codex.md
//! section 6): a `compacted` line replaces the history built so far with its
//! `replacement_history`.

use crate::model::Message;

/// The model-visible view: with no `compacted` line, every message; else the
/// newest `compacted` line's `replacement_history` messages, its marker, and
/// everything after it (what Codex rebuilds on resume: a `compacted` line
/// replaces the history built so far).
pub fn visible_view(messages: &[Message]) -> Vec<usize> {
    match messages.iter().rposition(|m| m.compaction().is_some()) {
        None => (0..messages.len()).collect(),
        Some(c) => {
            let prefix = format!("{}.rh", messages[c].id);
            let mut start = c;
            while start > 0 && messages[start - 1].id.starts_with(&prefix) {
                start -= 1;
            }
            (start..messages.len()).collect()
        }
    }
}
