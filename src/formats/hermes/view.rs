//! What hermes-agent 0.19.0 sends on `--resume` (docs/formats/hermes.md
//! sections 8 and 10): the active rows of the session the resume resolves
//! to, in id order (`get_messages_as_conversation`), after
//! `repair_message_sequence` dropped the tool rows no call of the nearest
//! assistant turn names (adjacent assistant rows are one turn, a user row
//! ends one; each id is answered once). Consecutive user rows are merged
//! into one message by hermes; their bytes are the same, so the view keeps
//! them as they are stored. A session whose resume lands on another (a
//! compressed parent) sends nothing of its own.

use super::parse::RowFacts;
use crate::model::Message;
use std::collections::{HashMap, HashSet};

/// Indexes of `messages` hermes sends when it resumes this session;
/// `resumed_here`: the resume lands on this session.
pub fn visible_view(
    messages: &[Message],
    facts: &HashMap<String, RowFacts>,
    resumed_here: bool,
) -> Vec<usize> {
    if !resumed_here {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut known: HashSet<&str> = HashSet::new();
    let mut last_role: Option<&str> = None;
    let mut last_interim = false;
    for (i, m) in messages.iter().enumerate() {
        let Some(f) = facts.get(m.id.as_str()) else {
            continue;
        };
        if !f.active {
            continue;
        }
        match f.role.as_str() {
            "assistant" => {
                let merged = last_role == Some("assistant") && !f.interim && !last_interim;
                if !merged {
                    known.clear();
                }
                known.extend(f.call_ids.iter().flatten().map(String::as_str));
                out.push(i);
            }
            "tool" => {
                let id = f.tool_call_id.as_deref().unwrap_or("");
                if !id.is_empty() && known.remove(id) {
                    out.push(i);
                }
            }
            "user" => {
                known.clear();
                out.push(i);
            }
            _ => out.push(i),
        }
        last_role = Some(f.role.as_str());
        last_interim = f.interim;
    }
    out
}
