//! `closed-compression-session`: a session ended by a compression that
//! rotates into a continuation (hermes-agent `end_reason='compression'`)
//! when no session continues it: a crash between ending the parent and
//! creating the child leaves it so (NousResearch/hermes-agent#80337).
//! hermes 0.19.0 reopens it when it is resumed; later versions refuse
//! every write to it ("closed by compression; adopt its live continuation")
//! and every version skips compressing it (docs/formats/hermes.md section 11).

use super::{Code, Finding, Severity};
use crate::model::Session;

pub fn check(s: &Session) -> Vec<Finding> {
    let Some(l) = s.lineage.as_deref() else {
        return Vec::new();
    };
    if !l.ended_by_compaction || l.continuations > 0 {
        return Vec::new();
    }
    vec![Finding::new(
        Code::ClosedCompressionSession,
        Severity::Error,
        None,
        format!(
            "session {} was ended by a compression (end_reason 'compression') but no session continues it (hermes-agent#80337): hermes 0.19.0 reopens it on resume, later versions refuse every write to it, and no version compresses it again",
            s.id
        ),
        "run `session-doctor repair`: the copy reopens it (ended_at and end_reason cleared, as hermes' own reopen_session does)",
    )
    .with("session_id", s.id.clone())
    .with("chain_root", l.root.clone())
    .with("position", l.position)]
}
