//! Findings: one file per finding code, each a pure function of a [`Session`].

mod bad_token_count;
mod closed_compression;
mod compaction_failed;
mod compaction_loop;
mod dangling_logical_parent;
mod dangling_parent;
mod duplicate_id;
mod empty_continuation;
mod impossible_usage;
mod media_history;
mod orphan_in_context;
mod orphan_part;
mod over_budget;
mod overflow_error;
mod parent_cycle;
mod payload;
mod stale_first_kept;
mod stale_parent;
pub mod stored_failure;
mod torn_tail;
mod unanswered_turns;
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

/// Every finding code. Serialized as its kebab-case name (`stale-parent`),
/// which is stable: CI configurations and `--ignore` name codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    Unreadable,
    TornTail,
    OrphanPart,
    DuplicateId,
    DanglingParent,
    DanglingLogicalParent,
    ParentCycle,
    ClosedCompressionSession,
    EmptyContinuation,
    StaleParent,
    StaleFirstKept,
    OrphanInContext,
    CompactionLoop,
    CompactionFailed,
    UnfinishedToolCall,
    OverflowError,
    UnansweredTurns,
    ImpossibleUsage,
    BadTokenCount,
    OverBudget,
    PayloadTooLarge,
    MediaInHistory,
}

impl Code {
    /// The stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Unreadable => "unreadable",
            Code::TornTail => "torn-tail",
            Code::OrphanPart => "orphan-part",
            Code::DuplicateId => "duplicate-id",
            Code::DanglingParent => "dangling-parent",
            Code::DanglingLogicalParent => "dangling-logical-parent",
            Code::ParentCycle => "parent-cycle",
            Code::ClosedCompressionSession => "closed-compression-session",
            Code::EmptyContinuation => "empty-continuation",
            Code::StaleParent => "stale-parent",
            Code::StaleFirstKept => "stale-first-kept",
            Code::OrphanInContext => "orphan-in-context",
            Code::CompactionLoop => "compaction-loop",
            Code::CompactionFailed => "compaction-failed",
            Code::UnfinishedToolCall => "unfinished-tool-call",
            Code::OverflowError => "overflow-error",
            Code::UnansweredTurns => "unanswered-turns",
            Code::ImpossibleUsage => "impossible-usage",
            Code::BadTokenCount => "bad-token-count",
            Code::OverBudget => "over-budget",
            Code::PayloadTooLarge => "payload-too-large",
            Code::MediaInHistory => "media-in-history",
        }
    }

    /// The command that fixes a finding of this code, as a rule: `repair`
    /// re-points links and drops broken lines; `compact` shrinks what the
    /// agent sends. A rule may say otherwise for one finding (a
    /// `duplicate-id` whose copies differ has no automatic fix).
    pub fn fix(self) -> Fix {
        match self {
            Code::TornTail
            | Code::DuplicateId
            | Code::DanglingParent
            | Code::ParentCycle
            | Code::ClosedCompressionSession
            | Code::EmptyContinuation
            | Code::StaleParent
            | Code::StaleFirstKept => Fix::Repair,
            Code::CompactionLoop
            | Code::CompactionFailed
            | Code::OverflowError
            | Code::UnansweredTurns
            | Code::OverBudget
            | Code::PayloadTooLarge
            | Code::MediaInHistory => Fix::Compact,
            Code::Unreadable
            | Code::OrphanPart
            | Code::DanglingLogicalParent
            | Code::OrphanInContext
            | Code::UnfinishedToolCall
            | Code::ImpossibleUsage
            | Code::BadTokenCount => Fix::None,
        }
    }

    /// The code named `s`, if there is one.
    pub fn parse(s: &str) -> Option<Code> {
        RULES.iter().map(|r| r.code).find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Id -> index of the first copy of each message id ([`Session::id_index`]).
pub type IdIndex<'s> = rustc_hash::FxHashMap<&'s str, usize>;

/// A session and what several of its rules look up, built once, when a
/// rule first asks (the rules run on every core: one builds it, the others
/// wait for it). Six rules looked message ids up in their own index: at
/// 453k messages each index is about 17 MB and 60 ms of one core.
pub struct Facts<'s> {
    pub session: &'s Session,
    ids: std::sync::OnceLock<IdIndex<'s>>,
    links: std::sync::OnceLock<Links>,
    risky: std::sync::OnceLock<rustc_hash::FxHashSet<&'s str>>,
}

impl<'s> Facts<'s> {
    pub fn new(session: &'s Session) -> Self {
        Facts {
            session,
            ids: std::sync::OnceLock::new(),
            links: std::sync::OnceLock::new(),
            risky: std::sync::OnceLock::new(),
        }
    }

    /// The session's [`IdIndex`].
    pub fn ids(&self) -> &IdIndex<'s> {
        self.ids.get_or_init(|| self.session.id_index())
    }

    /// Each message's first copy and parent, by index: two lookups per
    /// message in [`Facts::ids`] instead of one per rule that follows
    /// parents (about eight at 453k messages).
    pub fn links(&self) -> &Links {
        self.links
            .get_or_init(|| Links::new(self.session, self.ids()))
    }

    /// Ids a re-parenting could close a cycle through
    /// ([`dangling_parent::risky_ids`]), for the two rules that suggest
    /// parents.
    pub fn risky(&self) -> &rustc_hash::FxHashSet<&'s str> {
        self.risky
            .get_or_init(|| dangling_parent::risky_ids(self.session, self.links()))
    }
}

/// Where a message's parent id leads ([`Links::parent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parent {
    /// The message names no parent.
    None,
    /// No message of the session has the parent id.
    Missing,
    /// The index of the first copy of the parent id.
    At(usize),
}

impl Parent {
    /// The parent's index, when it is in the session.
    pub fn at(self) -> Option<usize> {
        match self {
            Parent::At(i) => Some(i),
            Parent::None | Parent::Missing => None,
        }
    }
}

/// Per message, by index: the first copy of its id and where its parent id
/// leads, over the first copy of each id ([`Facts::links`]). 16 bytes a
/// message.
pub struct Links {
    first: Vec<usize>,
    /// [`NO_PARENT`], [`MISSING`] or an index.
    parent: Vec<usize>,
}

const NO_PARENT: usize = usize::MAX;
const MISSING: usize = usize::MAX - 1;

impl Links {
    /// Looks ids up in `ids` only where the neighbours do not answer: when
    /// the map holds one entry per message no id repeats, so each message
    /// is its own first copy; and a parent that is the previous message's
    /// id, that message being the first copy of it, needs no lookup (a
    /// chain's usual case: at 453k messages each lookup is a cache miss,
    /// and the lookups grew 26x from 100 MB to 1 GB).
    fn new(s: &Session, ids: &IdIndex<'_>) -> Links {
        let unique = ids.len() == s.messages.len();
        let mut first: Vec<usize> = Vec::with_capacity(s.messages.len());
        let mut parent = Vec::with_capacity(s.messages.len());
        for (i, m) in s.messages.iter().enumerate() {
            first.push(if unique {
                i
            } else {
                ids.get(m.id.as_str()).copied().unwrap_or(i)
            });
            parent.push(match m.parent_id() {
                None => NO_PARENT,
                Some(p) => match i.checked_sub(1) {
                    Some(k) if first[k] == k && s.messages[k].id == p => k,
                    _ => ids.get(p).copied().unwrap_or(MISSING),
                },
            });
        }
        Links { first, parent }
    }

    /// The index of the first copy of message `i`'s id: one index for
    /// every copy of an id.
    pub fn first(&self, i: usize) -> usize {
        self.first[i]
    }

    /// Whether message `i` is the first copy of its id.
    pub fn is_first(&self, i: usize) -> bool {
        self.first[i] == i
    }

    /// Where the parent id of message `i` leads.
    pub fn parent(&self, i: usize) -> Parent {
        match self.parent[i] {
            NO_PARENT => Parent::None,
            MISSING => Parent::Missing,
            p => Parent::At(p),
        }
    }
}

/// One rule of the registry: a finding code, its usual severity (a rule may
/// report a milder one when the fault is neutralised), a one-line summary,
/// and the check that finds it. `check` is a pure function of the session.
pub struct Rule {
    pub code: Code,
    pub severity: Severity,
    pub summary: &'static str,
    pub check: fn(&Facts<'_>, &Options) -> Vec<Finding>,
}

/// Every rule, in the order findings are reported. The README's table of
/// finding codes is checked against this list by a test.
pub static RULES: &[Rule] = &[
    Rule {
        code: Code::Unreadable,
        severity: Severity::Error,
        summary: "a row, file or line that is not valid JSON or lacks a required field",
        check: |f, _| unreadable::check(f.session),
    },
    Rule {
        code: Code::TornTail,
        severity: Severity::Error,
        summary: "the last line of a JSONL file is an unfinished write",
        check: |f, _| torn_tail::check(f.session),
    },
    Rule {
        code: Code::OrphanPart,
        severity: Severity::Error,
        summary: "a part whose message does not exist",
        check: |f, _| orphan_part::check(f.session),
    },
    Rule {
        code: Code::DuplicateId,
        severity: Severity::Error,
        summary: "an id stored more than once",
        check: |f, _| duplicate_id::check(f.session),
    },
    Rule {
        code: Code::DanglingParent,
        severity: Severity::Error,
        summary: "a parent id that names no message of the session",
        check: |f, _| dangling_parent::check(f),
    },
    Rule {
        code: Code::DanglingLogicalParent,
        severity: Severity::Warning,
        summary: "a Claude Code logicalParentUuid that names no message",
        check: |f, _| dangling_logical_parent::check(f),
    },
    Rule {
        code: Code::ParentCycle,
        severity: Severity::Error,
        summary: "parent links that form a loop",
        check: |f, _| parent_cycle::check(f),
    },
    Rule {
        code: Code::ClosedCompressionSession,
        severity: Severity::Error,
        summary: "a session ended by a compression that no session continues",
        check: |f, _| closed_compression::check(f.session),
    },
    Rule {
        code: Code::EmptyContinuation,
        severity: Severity::Error,
        summary: "the session a resume lands on continues a compaction but holds no message",
        check: |f, _| empty_continuation::check(f.session),
    },
    Rule {
        code: Code::StaleParent,
        severity: Severity::Error,
        summary: "a message after a compaction whose parent is from before it",
        check: |f, _| stale_parent::check(f),
    },
    Rule {
        code: Code::StaleFirstKept,
        severity: Severity::Error,
        summary: "a compaction's stored first kept entry the agent ignores, or that resends cut or orphaned history",
        check: |f, _| stale_first_kept::check(f.session),
    },
    Rule {
        code: Code::OrphanInContext,
        severity: Severity::Warning,
        summary: "a message the model sees whose parent it does not see",
        check: |f, _| orphan_in_context::check(f),
    },
    Rule {
        code: Code::CompactionLoop,
        severity: Severity::Error,
        summary: "repeated automatic compactions that make no progress",
        check: |f, _| compaction_loop::check(f.session),
    },
    Rule {
        code: Code::CompactionFailed,
        severity: Severity::Error,
        summary: "a compaction summary that ended in an error",
        check: |f, _| compaction_failed::check(f.session),
    },
    Rule {
        code: Code::UnfinishedToolCall,
        severity: Severity::Warning,
        summary: "a tool call left without a result",
        check: |f, _| unfinished_tool_call::check(f.session),
    },
    Rule {
        code: Code::OverflowError,
        severity: Severity::Error,
        summary: "a stored provider error that says the request was too big",
        check: |f, _| overflow_error::check(f.session),
    },
    Rule {
        code: Code::UnansweredTurns,
        severity: Severity::Error,
        summary: "the history ends with two or more user turns that got no reply",
        check: |f, _| unanswered_turns::check(f.session),
    },
    Rule {
        code: Code::ImpossibleUsage,
        severity: Severity::Warning,
        summary: "a stored token count above the model's context window",
        check: |f, o| impossible_usage::check(f.session, o),
    },
    Rule {
        code: Code::BadTokenCount,
        severity: Severity::Warning,
        summary: "a stored token count that is not a count (read as 0)",
        check: |f, _| bad_token_count::check(f.session),
    },
    Rule {
        code: Code::OverBudget,
        severity: Severity::Error,
        summary: "the next turn does not fit the model's usable budget",
        check: |f, o| over_budget::check(f.session, o),
    },
    Rule {
        code: Code::PayloadTooLarge,
        severity: Severity::Error,
        summary: "the next request body exceeds the request-size limit",
        check: |f, o| payload::check(f.session, o),
    },
    Rule {
        code: Code::MediaInHistory,
        severity: Severity::Warning,
        summary: "inline media older than the newest media message, resent every turn",
        check: |f, _| media_history::check(f.session),
    },
];

/// The rule of `code`.
pub fn rule(code: Code) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.code == code)
        .expect("every code has a rule")
}

/// Which command fixes a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fix {
    /// No command fixes it (harmless, or it needs a person).
    #[default]
    None,
    /// `session-doctor repair`.
    Repair,
    /// `session-doctor compact`.
    Compact,
}

/// Where a finding is, in one shape for every store: the file, the line
/// (line-oriented stores), the row (databases: `<table> <id>`) and the
/// message id, each `null` when it does not apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Location {
    pub file: Option<String>,
    pub line: Option<u64>,
    pub row: Option<String>,
    pub message_id: Option<String>,
}

/// One diagnosed fault in a session.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable code, e.g. `stale-parent`.
    pub code: Code,
    pub severity: Severity,
    /// Message concerned (or part/row id for load problems), when there is one.
    pub message_id: Option<String>,
    /// Where the finding is ([`diagnose`] fills it in).
    pub location: Location,
    /// One sentence for people.
    pub detail: String,
    /// One-line remedy.
    pub remedy: String,
    /// Which command fixes it.
    pub fix: Fix,
    /// The exact command that fixes it, when one does (filled in by the
    /// command that reports the finding: it knows the store and the flags).
    pub remedy_command: Option<String>,
    /// The figures behind the finding, each as its own JSON field.
    #[serde(flatten)]
    pub figures: Map<String, Value>,
}

impl Finding {
    fn new(
        code: Code,
        severity: Severity,
        message_id: Option<&str>,
        detail: String,
        remedy: &str,
    ) -> Self {
        Finding {
            code,
            severity,
            message_id: message_id.map(str::to_string),
            location: Location::default(),
            detail,
            remedy: remedy.to_string(),
            fix: code.fix(),
            remedy_command: None,
            figures: Map::new(),
        }
    }

    /// The same finding with another fix (or none).
    fn fixed_by(mut self, fix: Fix) -> Self {
        self.fix = fix;
        self
    }

    fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.figures.insert(key.to_string(), value.into());
        self
    }
}

/// Runs every rule of [`RULES`] on `s`, the rules spread over the cores of
/// the current thread pool (each rule is a pure function of the session);
/// findings come back in rule order, then message order, each with its
/// [`Location`], the same for any number of threads.
pub fn diagnose(s: &Session, o: &Options) -> Vec<Finding> {
    use rayon::prelude::*;
    let facts = Facts::new(s);
    let mut out: Vec<Finding> = RULES
        .par_iter()
        .map(|r| (r.check)(&facts, o))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect();
    if !out.is_empty() {
        locate(s, &mut out);
    }
    out
}

/// Fills in where each finding is: its message's file and line (JSONL), or
/// the store file and the message's row (databases); a load problem's own
/// file and line.
fn locate(s: &Session, findings: &mut [Finding]) {
    // Only the ids the findings name are looked up (a few, in a session
    // that may hold millions).
    let at: Vec<Option<usize>> = {
        let ids = s.first_index_of(findings.iter().filter_map(|f| f.message_id.as_deref()));
        findings
            .iter()
            .map(|f| f.message_id.as_deref().and_then(|id| ids.get(id).copied()))
            .collect()
    };
    let source = s.source.display().to_string();
    let database = s.files.is_empty() && s.source.is_file();
    for (f, at) in findings.iter_mut().zip(at) {
        let mut loc = Location {
            file: Some(source.clone()),
            message_id: f.message_id.clone(),
            ..Default::default()
        };
        let problem = s.problems.iter().find(|p| {
            p.id.is_some()
                && p.id == f.message_id
                && matches!(f.code, Code::Unreadable | Code::TornTail)
        });
        if let Some(p) = problem {
            if let Some(fi) = p.file.and_then(|i| s.files.get(i)) {
                loc.file = Some(fi.display().to_string());
            }
            loc.line = p.line;
            loc.row = p.row.clone();
            loc.message_id = None;
        } else if let Some(i) = at {
            let m = &s.messages[i];
            if let Some(l) = m.line() {
                if let Some(fi) = s.files.get(l.file_index()) {
                    loc.file = Some(fi.display().to_string());
                }
                loc.line = Some(l.number());
            } else if database {
                loc.row = Some(format!("message {}", m.id));
            }
        }
        f.location = loc;
    }
}

pub use compaction_loop::{cut_goal as compaction_loop_goal, remedy_already_under, PROGRESS_RATIO};
pub use dangling_parent::{
    dangling, orphan_references, suggested_parent as dangling_suggested_parent,
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
