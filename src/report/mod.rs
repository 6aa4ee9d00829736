//! Reports: the figures of each command as plain data, and one exporter per
//! output format. The table is never the only place a number lives: every
//! figure is a field of these structs, which the JSON exporter prints as is.

mod json;
pub mod rows;
mod table;

use crate::diagnose::{Finding, SeverityCounts};
use crate::edit::StoredChange;
use crate::error::Problems;
use crate::model::Usage;
use serde::Serialize;

pub use json::JsonExporter;
pub use table::TableExporter;

/// JSON schema version of every document.
pub const SCHEMA_VERSION: u32 = 1;

/// `list`: one row per session.
#[derive(Debug, Serialize)]
pub struct ListRow {
    pub agent: &'static str,
    pub id: String,
    pub title: Option<String>,
    pub source: String,
    pub messages: usize,
    pub parts: usize,
    /// Stored bytes of all messages and parts.
    pub payload_bytes: u64,
    /// Decoded bytes of inline media.
    pub media_bytes: u64,
    pub compactions: usize,
    /// Last reported context size (tokens), if any assistant reported usage.
    pub context_tokens: Option<u64>,
    pub tokens_total: Usage,
    pub findings: SeverityCounts,
    /// Facts about the data worth knowing (e.g. usage the agent does not store,
    /// or what the agent's own token totals include).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Where the session sits among sessions that continue one another
    /// (hermes-agent compression chains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainRow>,
}

/// `list`: a session's place in its chain.
#[derive(Debug, Serialize)]
pub struct ChainRow {
    /// First session of the chain.
    pub root: String,
    /// 1-based position (1 = the root).
    pub position: usize,
    /// Sessions in the chain.
    pub length: usize,
    /// The chain's newest session, what the agent resumes.
    pub tip: String,
    /// The session the agent loads when asked to resume this one.
    pub resumes: String,
    /// The parent session as stored.
    pub parent: Option<String>,
}

/// `inspect`: one part of a message.
#[derive(Debug, Serialize)]
pub struct PartRow {
    pub id: String,
    pub message_id: String,
    pub kind: String,
    pub payload_bytes: u64,
    pub media_bytes: u64,
    pub media_count: usize,
    pub tokens_estimated: u64,
    pub synthetic: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_status: Option<String>,
}

/// `inspect`: one message.
#[derive(Debug, Serialize)]
pub struct MessageRow {
    pub index: usize,
    pub id: String,
    pub role: String,
    pub parent_id: Option<String>,
    /// 1-based line number in its file, for line-oriented stores (JSONL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Milliseconds since the Unix epoch.
    pub time_created: i64,
    pub payload_bytes: u64,
    pub media_bytes: u64,
    pub media_count: usize,
    pub tokens_estimated: u64,
    pub tokens_reported: Usage,
    pub parts: Vec<PartRow>,
    pub flags: Vec<&'static str>,
}

/// `inspect`: one session.
#[derive(Debug, Serialize)]
pub struct InspectSession {
    pub agent: &'static str,
    pub id: String,
    pub source: String,
    /// Messages the model sees on the next turn.
    pub visible_messages: usize,
    pub messages: Vec<MessageRow>,
    /// The largest parts by stored bytes (`--top N`), largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_parts: Option<Vec<PartRow>>,
}

/// `check`: one session.
#[derive(Debug, Serialize)]
pub struct CheckSession {
    pub agent: &'static str,
    pub id: String,
    pub source: String,
    /// The model budget the size rules used, or null.
    pub budget: Option<crate::budget::Budget>,
    /// Why no budget is known (then `over-budget` is not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_unknown: Option<String>,
    pub findings: Vec<Finding>,
    /// Facts about the data worth knowing (e.g. usage the agent does not store,
    /// or what the agent's own token totals include).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `repair`: one store copy.
#[derive(Debug, Serialize)]
pub struct CopyRow {
    pub source: String,
    /// Where the copy was (or, with `--dry-run`, would be) written.
    pub dest: String,
    pub changes: usize,
    pub written: bool,
    /// Why the copy was not written, when it was not (and not a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How to make the agent load the written copy: shell commands and
    /// sentences, one per entry (empty when nothing was written).
    pub next_steps: Vec<String>,
}

/// `repair`: everything that was changed.
#[derive(Debug, Serialize)]
pub struct RepairReport {
    pub dry_run: bool,
    pub changes: Vec<StoredChange>,
    pub copies: Vec<CopyRow>,
}

/// `compact`: the plan and its figures.
#[derive(Debug, Serialize)]
pub struct CompactReport {
    pub session_id: String,
    pub source: String,
    pub dest: String,
    pub dry_run: bool,
    pub written: bool,
    pub fits: bool,
    /// Why the budget is not reachable, when it is not.
    pub unreachable: Option<String>,
    /// The session fits and no finding asks for a change: no copy is written.
    pub nothing_to_change: bool,
    pub budget: Option<crate::budget::Budget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_unknown: Option<String>,
    /// Tokens the next turn may carry (the model's usable, capped by the byte limit / 4).
    pub usable_tokens: u64,
    /// Tokens the agent adds beyond the messages, calibrated on the last reported count.
    pub overhead_tokens: u64,
    pub max_request_bytes: u64,
    pub headroom_bytes: u64,
    pub before: crate::treat::compact::Figures,
    pub steps: Vec<crate::treat::compact::StepReport>,
    pub changes: Vec<StoredChange>,
    /// How to make the agent load the written copy (empty when nothing was
    /// written).
    pub next_steps: Vec<String>,
}

/// One output format. Each method prints one whole document to stdout;
/// `problems` are the paths that could not be read or written (errors) and
/// those skipped on purpose (warnings). Formats that go to people leave
/// them to stderr (printed once by the command); machine formats carry them.
pub trait Exporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String;
    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String;
    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String;
    fn repair(&self, report: &RepairReport, problems: &Problems) -> String;
    fn compact(&self, report: &CompactReport, problems: &Problems) -> String;
    /// `compact` without `--session`: one row per session, and the copies.
    fn compact_batch(
        &self,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String;
}

/// The exporter for `format`.
pub fn exporter(format: crate::cli::OutputFormat) -> Box<dyn Exporter> {
    match format {
        crate::cli::OutputFormat::Table => Box::new(TableExporter::from_env()),
        crate::cli::OutputFormat::Json => Box::new(JsonExporter),
    }
}
