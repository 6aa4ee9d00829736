//! Reports: the figures of each command as plain data, and one exporter per
//! output format. The table is never the only place a number lives: every
//! figure is a field of these structs, which the JSON exporter prints as is.

mod github;
mod json;
mod markdown;
pub mod rows;
mod sarif;
mod table;

use crate::diagnose::{Finding, SeverityCounts};
use crate::edit::StoredChange;
use crate::error::Problems;
use crate::model::Usage;
use serde::Serialize;

pub use github::GithubExporter;
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use sarif::SarifExporter;
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
    /// Newest time stored on a message of the session (created or
    /// completed) or on a stored line that holds none, milliseconds since
    /// the Unix epoch; `null` when it holds no message.
    pub last_activity: Option<i64>,
    /// `provider/model` (as the agent stores it) of the newest assistant
    /// message of the main history that names one, else the model the
    /// session resumes with; `null` when no message names a model.
    pub model: Option<String>,
    pub messages: usize,
    /// Stored lines that hold no message (Codex metadata lines, its header,
    /// blank and unreadable lines; [`crate::model::MetaLines`]); left out
    /// when 0 (formats that do not record them).
    #[serde(skip_serializing_if = "is_zero")]
    pub metadata_lines: usize,
    pub parts: usize,
    /// Stored bytes of all messages and parts, and of what is stored
    /// outside messages.
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
    /// The figures the notes state, by name (`summarization_requests`,
    /// `unfinished_tail_bytes`...).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub note_figures: std::collections::BTreeMap<String, u64>,
    /// Where the session sits among sessions that continue one another
    /// (hermes-agent compression chains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainRow>,
}

/// Serde's `skip_serializing_if` for counts shown only when set.
fn is_zero(n: &usize) -> bool {
    *n == 0
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
    pub id: crate::model::Id,
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
    pub id: crate::model::Id,
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

/// `inspect`: the message rows of one session, made from the loaded session
/// one [`MessageRow`] at a time as they are written ([`MessageRows::iter`]),
/// so a huge session is held once (loaded), not twice (loaded, then as
/// rows). Serializes as the array of rows.
#[derive(Debug)]
pub struct MessageRows {
    pub(crate) session: crate::model::Session,
    /// Per message: whether the model sees it on the next turn.
    pub(crate) visible: Vec<bool>,
}

impl Serialize for MessageRows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// `inspect`: one session.
#[derive(Debug, Serialize)]
pub struct InspectSession {
    pub agent: &'static str,
    pub id: String,
    pub source: String,
    /// Messages the model sees on the next turn.
    pub visible_messages: usize,
    pub messages: MessageRows,
    /// The largest parts by stored bytes (`--top N`), largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_parts: Option<Vec<PartRow>>,
    /// The stored lines that hold no message, by kind (lines and bytes):
    /// records the agent never sends the model (Codex `event_msg`,
    /// `turn_context`...), its header, blank and unreadable lines. Empty
    /// for formats that do not record them ([`crate::model::MetaLines`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata_lines: Vec<crate::model::MetaKindCount>,
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
    /// The figures the notes state, by name (`summarization_requests`,
    /// `unfinished_tail_bytes`...).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub note_figures: std::collections::BTreeMap<String, u64>,
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
    /// The figures `unreachable` states, as fields (null when it is null).
    pub shortfall: Option<crate::treat::compact::Shortfall>,
    /// The session fits and no finding asks for a change: no copy is written.
    pub nothing_to_change: bool,
    pub budget: Option<crate::budget::Budget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_unknown: Option<String>,
    /// Tokens the next turn may carry (the model's usable, capped by the byte limit / 4).
    pub usable_tokens: u64,
    /// Tokens the agent adds beyond the messages, as `check` measures the
    /// session (calibrated on the last reported count); each state's own in
    /// its figures.
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
    /// [`Exporter::inspect`] written to `out` (the same bytes); a format
    /// that can writes it as it is made, so a huge session's document is
    /// never held as one string. Errors: `out`'s.
    fn write_inspect(
        &self,
        sessions: &[InspectSession],
        problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        out.write_all(self.inspect(sessions, problems).as_bytes())
    }
    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String;
    fn repair(&self, report: &RepairReport, problems: &Problems) -> String;
    fn compact(&self, report: &CompactReport, problems: &Problems) -> String;
    /// [`Exporter::compact`] written to `out` (the same bytes), as it is
    /// made where the format can: a huge session's cut is hundreds of
    /// thousands of changes. Errors: `out`'s.
    fn write_compact(
        &self,
        report: &CompactReport,
        problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        out.write_all(self.compact(report, problems).as_bytes())
    }
    /// `compact` without `--session`: one row per session, and the copies
    /// (`dry_run`: `--dry-run` was given, whether or not a session is listed).
    fn compact_batch(
        &self,
        dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String;
    /// The document of a run of `command` that stopped on an error
    /// (`problems.stopped`) before its report was made: the command's own
    /// document with nothing in it (`compact`'s is the one without
    /// `--session`, whose fields do not depend on a session), so a reader of
    /// that format gets one whole document with the error in it. Not used
    /// for the table, which prints nothing on stdout then.
    fn stopped(&self, command: DocKind, dry_run: bool, problems: &Problems) -> String {
        match command {
            DocKind::List => self.list(&[], problems),
            DocKind::Inspect => self.inspect(&[], problems),
            DocKind::Check => self.check(&[], problems),
            DocKind::Repair => self.repair(
                &RepairReport {
                    dry_run,
                    changes: Vec::new(),
                    copies: Vec::new(),
                },
                problems,
            ),
            DocKind::Compact => self.compact_batch(dry_run, &[], &[], problems),
        }
    }
}

/// The command a document reports on, for [`Exporter::stopped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    List,
    Inspect,
    Check,
    Repair,
    Compact,
}

impl DocKind {
    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            DocKind::List => "list",
            DocKind::Inspect => "inspect",
            DocKind::Check => "check",
            DocKind::Repair => "repair",
            DocKind::Compact => "compact",
        }
    }
}

/// The exporter for `format`.
pub fn exporter(format: crate::cli::OutputFormat) -> Box<dyn Exporter> {
    match format {
        crate::cli::OutputFormat::Table => Box::new(TableExporter::from_env()),
        crate::cli::OutputFormat::Json => Box::new(JsonExporter),
        crate::cli::OutputFormat::Markdown => Box::new(MarkdownExporter),
        crate::cli::OutputFormat::Github => Box::new(GithubExporter),
        crate::cli::OutputFormat::Sarif => Box::new(SarifExporter),
    }
}

/// The program that wrote a document (`"tool"` of every JSON document).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Tool {
    /// Always `session-doctor`.
    pub name: &'static str,
    /// The crate version (semver).
    pub version: &'static str,
}

/// This program.
pub const TOOL: Tool = Tool {
    name: "session-doctor",
    version: env!("CARGO_PKG_VERSION"),
};

/// `list` totals: sums over the listed sessions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListTotals {
    pub sessions: usize,
    pub messages: usize,
    pub parts: usize,
    /// Stored bytes of all messages and parts.
    pub payload_bytes: u64,
    /// Decoded bytes of inline media.
    pub media_bytes: u64,
    /// Stored usage summed over every session (tokens, saturating).
    pub tokens: Usage,
    /// Findings of all sessions by severity.
    pub findings: SeverityCounts,
}

impl ListTotals {
    /// The sums of `rows`.
    pub fn of(rows: &[ListRow]) -> Self {
        let mut t = ListTotals {
            sessions: rows.len(),
            ..Default::default()
        };
        for r in rows {
            t.messages = t.messages.saturating_add(r.messages);
            t.parts = t.parts.saturating_add(r.parts);
            t.payload_bytes = t.payload_bytes.saturating_add(r.payload_bytes);
            t.media_bytes = t.media_bytes.saturating_add(r.media_bytes);
            t.tokens.add(&r.tokens_total);
            t.findings.error += r.findings.error;
            t.findings.warning += r.findings.warning;
            t.findings.info += r.findings.info;
        }
        t
    }
}

/// `inspect` totals: sums over the inspected sessions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InspectTotals {
    pub sessions: usize,
    pub messages: usize,
    pub parts: usize,
    /// Stored bytes of all messages and parts.
    pub payload_bytes: u64,
    /// Decoded bytes of inline media.
    pub media_bytes: u64,
    /// Estimated tokens of all messages (characters / 4).
    pub tokens_estimated: u64,
}

impl InspectTotals {
    /// The sums of `sessions`.
    pub fn of(sessions: &[InspectSession]) -> Self {
        let mut t = InspectTotals {
            sessions: sessions.len(),
            ..Default::default()
        };
        for m in sessions.iter().flat_map(|s| &s.messages.session.messages) {
            t.messages += 1;
            t.parts = t.parts.saturating_add(m.parts.len());
            t.payload_bytes = t.payload_bytes.saturating_add(m.payload_bytes());
            t.media_bytes = t.media_bytes.saturating_add(m.media_bytes());
            t.tokens_estimated = t.tokens_estimated.saturating_add(m.tokens_estimated());
        }
        t
    }
}

/// `check` totals: findings by severity and by code.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckTotals {
    pub sessions: usize,
    /// Sessions with at least one finding.
    pub sessions_with_findings: usize,
    pub findings: SeverityCounts,
    /// Findings per code (only codes that occur), keyed by the code's name.
    pub by_code: std::collections::BTreeMap<&'static str, usize>,
}

impl CheckTotals {
    /// The counts of `sessions`.
    pub fn of(sessions: &[CheckSession]) -> Self {
        let mut t = CheckTotals {
            sessions: sessions.len(),
            ..Default::default()
        };
        for s in sessions {
            if !s.findings.is_empty() {
                t.sessions_with_findings += 1;
            }
            let c = SeverityCounts::of(&s.findings);
            t.findings.error += c.error;
            t.findings.warning += c.warning;
            t.findings.info += c.info;
            for f in &s.findings {
                *t.by_code.entry(f.code.as_str()).or_default() += 1;
            }
        }
        t
    }
}

/// `repair` and `compact` totals: the copies and the changes in them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CopyTotals {
    /// Sessions planned (`compact`: those with a finding compact fixes, or the
    /// one `--session`; `repair`: sessions with at least one change).
    pub sessions: usize,
    /// Sessions whose budget is not reachable (`compact` exits 1); 0 for `repair`.
    pub unreachable: usize,
    /// Store copies planned.
    pub copies: usize,
    /// Store copies written (0 with `--dry-run`).
    pub copies_written: usize,
    /// Stored changes (one per changed field of a message or part; a run of
    /// dropped lines counts its lines, as the copies' rows do).
    pub changes: usize,
}

impl CopyTotals {
    /// The totals of a `repair` report.
    pub fn repair(r: &RepairReport) -> Self {
        let mut ids: Vec<&str> = r.changes.iter().map(|c| &*c.session_id).collect();
        ids.sort_unstable();
        ids.dedup();
        CopyTotals {
            sessions: ids.len(),
            unreachable: 0,
            copies: r.copies.len(),
            copies_written: r.copies.iter().filter(|c| c.written).count(),
            changes: crate::edit::edits_of(&r.changes),
        }
    }

    /// The totals of `compact` (`copies` is empty with `--session`: the
    /// report itself says whether its copy was written).
    pub fn compact(sessions: &[CompactReport], copies: &[CopyRow], single: bool) -> Self {
        let (n, written) = if single {
            let planned = sessions.iter().filter(|s| !s.changes.is_empty() && s.fits);
            let written = sessions.iter().filter(|s| s.written).count();
            (planned.count(), written)
        } else {
            (copies.len(), copies.iter().filter(|c| c.written).count())
        };
        CopyTotals {
            sessions: sessions.len(),
            unreachable: sessions.iter().filter(|s| s.unreachable.is_some()).count(),
            copies: n,
            copies_written: written,
            changes: sessions
                .iter()
                .map(|s| crate::edit::edits_of(&s.changes))
                .sum(),
        }
    }
}

/// A finding's detail, remedy and command as one text (GitHub annotations,
/// SARIF messages): `detail. Remedy: remedy`, then ` Fix: command` when a
/// command fixes it. The remedy is kept beside the command: it says what
/// is wrong and what the command leaves to a person.
pub(crate) fn finding_text(f: &crate::diagnose::Finding) -> String {
    let mut text = format!("{}{} Remedy: {}", f.detail, stop(&f.detail), f.remedy);
    if let Some(c) = &f.remedy_command {
        text.push_str(&format!("{} Fix: {c}", stop(&f.remedy)));
    }
    text
}

/// `.` when `text` does not already end a sentence, so the remedy that
/// follows it reads as its own sentence.
pub(crate) fn stop(text: &str) -> &'static str {
    if text.trim_end().ends_with(['.', '!', '?', ':']) {
        ""
    } else {
        "."
    }
}
