//! `unfinished-tool-call`: a tool call left pending or running in a message
//! that finished (the agent crashed or was killed mid-call).

use super::{Code, Finding, Severity};
use crate::model::{Session, ToolStatus};

pub fn check(s: &Session) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in &s.messages {
        if m.finish().is_none() && m.time_completed().is_none() {
            continue;
        }
        for p in &m.parts {
            let Some(t) = &p.tool else { continue };
            let status = match t.status {
                ToolStatus::Pending => "pending",
                ToolStatus::Running => "running",
                _ => continue,
            };
            out.push(
                Finding::new(
                    Code::UnfinishedToolCall,
                    Severity::Warning,
                    Some(&m.id),
                    format!("tool call {} ({}) is still {status} in a finished message", t.call_id, t.name),
                    "the agent reports it as interrupted on resume; no action needed unless the provider rejects the history",
                )
                .with("part_id", p.id.to_string())
                .with("call_id", &*t.call_id)
                .with("tool", &*t.name)
                .with("status", status),
            );
        }
    }
    out
}
