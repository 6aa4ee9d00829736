//! Findings: one file per finding code, each a pure function of a [`Session`].

mod compaction_failed;
mod compaction_loop;
mod dangling_parent;
mod impossible_usage;
mod integrity;
mod media_history;
mod orphan_in_context;
mod over_budget;
mod overflow_error;
mod parent_cycle;
mod payload;
mod stale_parent;
mod torn_tail;
mod unfinished_tool_call;
mod unreadable;

pub use media_history::{historical_media, media_before_newest};
pub use overflow_error::{classify, OverflowKind};
pub use payload::{headroom_bytes, DEFAULT_HEADROOM, DEFAULT_MAX_REQUEST_BYTES};

/// What the size rules measure against.
#[derive(Debug, Clone)]
pub struct Options {
    /// The session's model budget, or why none is known (then `over-budget` is skipped).
    pub budget: Result<crate::budget::Budget, String>,
    /// Largest request body a provider or gateway accepts (bytes).
    pub max_request_bytes: u64,
    /// Share of `max_request_bytes` kept for what the agent adds to each
    /// request (system prompt, tool schemas): 0.25 by default.
    pub headroom: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            budget: Err("no model limits given".into()),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            headroom: DEFAULT_HEADROOM,
        }
    }
}

use crate::model::Session;
use serde::Serialize;
use serde_json::{Map, Value};

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One diagnosed fault in a session.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable code, e.g. `stale-parent`.
    pub code: &'static str,
    pub severity: Severity,
    /// Message concerned (or part/row id for load problems), when there is one.
    pub message_id: Option<String>,
    /// One sentence for people.
    pub detail: String,
    /// One-line remedy.
    pub remedy: String,
    /// The figures behind the finding, each as its own JSON field.
    #[serde(flatten)]
    pub figures: Map<String, Value>,
}

impl Finding {
    fn new(
        code: &'static str,
        severity: Severity,
        message_id: Option<&str>,
        detail: String,
        remedy: &str,
    ) -> Self {
        Finding {
            code,
            severity,
            message_id: message_id.map(str::to_string),
            detail,
            remedy: remedy.to_string(),
            figures: Map::new(),
        }
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.figures.insert(key.to_string(), value.into());
        self
    }
}

/// Every finding code with its severity and remedy, for docs and `--help`.
pub const CODES: &[(&str, Severity)] = &[
    ("stale-parent", Severity::Error),
    ("orphan-in-context", Severity::Warning),
    ("compaction-loop", Severity::Error),
    ("compaction-failed", Severity::Warning),
    ("dangling-parent", Severity::Error),
    ("parent-cycle", Severity::Error),
    ("orphan-part", Severity::Error),
    ("duplicate-id", Severity::Error),
    ("unfinished-tool-call", Severity::Warning),
    ("unreadable", Severity::Error),
    ("torn-tail", Severity::Error),
    ("dangling-logical-parent", Severity::Warning),
    ("impossible-usage", Severity::Warning),
    ("over-budget", Severity::Error),
    ("payload-too-large", Severity::Error),
    ("overflow-error", Severity::Error),
    ("media-in-history", Severity::Warning),
];

/// Runs every rule on `s`; findings come back in rule order, then message order.
pub fn diagnose(s: &Session, o: &Options) -> Vec<Finding> {
    let mut f = Vec::new();
    f.extend(unreadable::check(s));
    f.extend(torn_tail::check(s));
    f.extend(integrity::check(s));
    f.extend(dangling_parent::check(s));
    f.extend(parent_cycle::check(s));
    f.extend(dangling_parent::check_logical(s));
    f.extend(stale_parent::check(s));
    f.extend(orphan_in_context::check(s));
    f.extend(compaction_loop::check(s));
    f.extend(compaction_failed::check(s));
    f.extend(unfinished_tool_call::check(s));
    f.extend(overflow_error::check(s));
    f.extend(impossible_usage::check(s, o));
    f.extend(over_budget::check(s, o));
    f.extend(payload::check(s, o));
    f.extend(media_history::check(s));
    f
}

pub use dangling_parent::{
    dangling, suggested_parent as dangling_suggested_parent,
    suggested_parents as dangling_suggested_parents,
};
pub use parent_cycle::{cycles, Cycle};
pub use stale_parent::stale_parents;

/// Counts of findings by severity.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SeverityCounts {
    pub error: usize,
    pub warning: usize,
    pub info: usize,
}

impl SeverityCounts {
    pub fn of(findings: &[Finding]) -> Self {
        let mut c = SeverityCounts::default();
        for f in findings {
            match f.severity {
                Severity::Error => c.error += 1,
                Severity::Warning => c.warning += 1,
                Severity::Info => c.info += 1,
            }
        }
        c
    }
}
