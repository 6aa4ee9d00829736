//! Command-line interface (clap derive). The structs stay dumb; accessors turn
//! raw flags into typed options.

use crate::diagnose::Severity;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Inspect, diagnose and repair stored AI coding-agent sessions (opencode,
/// Kilo CLI, Claude Code, Codex CLI) offline. Originals are never modified: repairs go to copies.
#[derive(Debug, Parser)]
#[command(name = "session-doctor", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per session: sizes, compactions, token totals, findings.
    List(ListArgs),
    /// One row per message of a session: sizes, tokens, parts, flags.
    Inspect(InspectArgs),
    /// Diagnose sessions; exit 1 when a finding reaches --fail-on.
    Check(CheckArgs),
    /// Write a repaired copy of the store(s) into --out.
    Repair(RepairArgs),
    /// Write a copy in which one session fits its model budget and request-size limit.
    Compact(CompactArgs),
    /// Print a shell completion script to stdout.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// Tables for people.
    #[default]
    Table,
    /// One JSON document with "schema_version": 1.
    Json,
}

/// Options every reading command shares.
#[derive(Debug, Args)]
pub struct Common {
    /// Stores to read: opencode.db / kilo.db files, data dirs, legacy storage/
    /// dirs, Claude Code <session>.jsonl files, project or projects/ dirs, Codex
    /// rollout-*.jsonl files, or folders containing them. Default: the opencode
    /// and Kilo data dirs under $XDG_DATA_HOME and $HOME/.local/share, Claude
    /// Code's projects/ under each dir of $CLAUDE_CONFIG_DIR (else
    /// $HOME/.config/claude and $HOME/.claude), and Codex's sessions/ and
    /// archived_sessions/ under $CODEX_HOME (else $HOME/.codex).
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Worker threads (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Model limits and request-size limits the size rules measure against.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Budget")]
pub struct BudgetArgs {
    /// Context window of the model the session resumes with (tokens).
    #[arg(long, value_name = "TOKENS", global = true, requires = "max_output",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub context: Option<u64>,
    /// Maximum output tokens of that model.
    #[arg(long, value_name = "TOKENS", global = true, requires = "context")]
    pub max_output: Option<u64>,
    /// Input limit of that model (tokens), when it has one.
    #[arg(long, value_name = "TOKENS", global = true)]
    pub input_limit: Option<u64>,
    /// Look the limits of this `provider/model` up in the models.dev JSON.
    #[arg(long, value_name = "PROVIDER/MODEL", global = true)]
    pub model: Option<String>,
    /// models.dev JSON (default: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json).
    #[arg(long, value_name = "PATH", global = true)]
    pub models_json: Option<PathBuf>,
    /// Largest request body the provider or gateway accepts (bytes; default 6 MiB).
    #[arg(long, value_name = "BYTES", global = true, default_value_t = crate::diagnose::DEFAULT_MAX_REQUEST_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: u64,
    /// Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95).
    #[arg(long, value_name = "SHARE", global = true, default_value_t = crate::diagnose::DEFAULT_HEADROOM,
          value_parser = parse_headroom)]
    pub headroom: f64,
}

/// `--headroom`: a finite share from 0 to 0.95 (above that, nothing of the
/// request limit is left for the history).
fn parse_headroom(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !v.is_finite() || !(0.0..=0.95).contains(&v) {
        return Err(format!(
            "`{s}` is out of range: expected a share from 0 to 0.95"
        ));
    }
    Ok(v)
}

impl BudgetArgs {
    /// The limit options for [`crate::budget::resolve`].
    pub fn limit_options(&self) -> crate::budget::LimitOptions {
        crate::budget::LimitOptions {
            context: self.context,
            max_output: self.max_output,
            input: self.input_limit,
            model: self.model.clone(),
            models_json: self.models_json.clone(),
        }
    }

    /// The diagnose options for a session resuming with `session_model`.
    pub fn options(&self, session_model: Option<&str>) -> crate::diagnose::Options {
        self.options_with_stored(session_model, None)
    }

    /// The diagnose options for `session`: its resume model, and the limits it
    /// stored itself when it stored any.
    pub fn options_for(&self, session: &crate::model::Session) -> crate::diagnose::Options {
        self.options_with_stored(session.resume_model(), session.stored_limits.as_ref())
    }

    fn options_with_stored(
        &self,
        session_model: Option<&str>,
        stored: Option<&crate::budget::Limits>,
    ) -> crate::diagnose::Options {
        crate::diagnose::Options {
            budget: crate::budget::resolve_with_stored(
                &self.limit_options(),
                session_model,
                stored,
            )
            .map(crate::budget::Budget::new),
            max_request_bytes: self.max_request_bytes,
            headroom: self.headroom.clamp(0.0, 0.95),
        }
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: Common,
    /// Only this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub common: Common,
    /// The session to inspect (an id or a unique prefix of one; optional
    /// when the stores hold one session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Also list the N largest parts (by stored bytes).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: Common,
    /// Only this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Exit 1 when a finding of this severity or worse exists (`never`: always 0).
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

impl CheckArgs {
    /// The lowest severity that fails the run, or `None` for `never`.
    pub fn fail_threshold(&self) -> Option<Severity> {
        match self.fail_on {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub common: Common,
    /// Folder to write the copies into (created if missing). Never the source
    /// folder or inside it.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Only repair this session (the whole store is still copied).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Print the changes, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace copies that already exist under --out.
    #[arg(long)]
    pub force: bool,
}

impl Common {
    /// Worker threads: `--jobs`, else the number of cores.
    pub fn jobs(&self) -> usize {
        self.jobs.map(usize::from).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
    }

    /// The paths to read: the given ones, else the default data dirs.
    pub fn paths(&self) -> Vec<PathBuf> {
        if self.paths.is_empty() {
            crate::formats::default_paths()
        } else {
            self.paths.clone()
        }
    }
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub common: Common,
    /// The session to compact (an id or a unique prefix of one). Without it,
    /// every session with a finding compact fixes is compacted, one copy
    /// per store.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Folder to write the copy into. Never the source folder or inside it.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// If cutting history is needed, keep only the last N user turns.
    #[arg(long, value_name = "N")]
    pub keep_turns: Option<usize>,
    /// Print the plan (steps, figures, changes), write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace a copy that already exists under --out.
    #[arg(long)]
    pub force: bool,
}
