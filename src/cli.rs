//! Command-line interface (clap derive). The structs stay dumb; accessors turn
//! raw flags into typed options.

use crate::config::Settings;
use crate::diagnose::{Code, Severity, RULES};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Inspect, diagnose and repair the sessions AI coding agents store on disk
/// (opencode, Kilo CLI, Claude Code, Codex CLI, hermes-agent, docker-agent),
/// offline. Originals are never modified: repairs go to copies. (The help's
/// one-line summary is the Cargo.toml `description`.)
#[derive(Debug, Parser)]
#[command(name = "session-doctor", version, about, long_about = None, after_help = TOP_AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per session: sizes, compactions, token totals, findings.
    #[command(after_help = LIST_AFTER_HELP)]
    List(ListArgs),
    /// One row per message of a session: sizes, tokens, parts, flags.
    #[command(after_help = INSPECT_AFTER_HELP)]
    Inspect(InspectArgs),
    /// Diagnose sessions; exit 1 when a finding reaches --fail-on.
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(CheckArgs),
    /// Write a repaired copy of the store(s) into --out.
    #[command(after_help = REPAIR_AFTER_HELP)]
    Repair(RepairArgs),
    /// Write a copy in which a session (without --session: every session a finding asks for) fits its model budget and request-size limit.
    #[command(after_help = COMPACT_AFTER_HELP)]
    Compact(CompactArgs),
    /// Print a shell completion script to stdout.
    #[command(after_help = COMPLETIONS_AFTER_HELP)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of session-doctor or of one command to stdout.
    #[command(after_help = MAN_AFTER_HELP)]
    Man {
        /// The command whose page to print (default: the top-level page).
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
}

const TOP_AFTER_HELP: &str = "\
Examples:
  session-doctor list                      # the agents' default data dirs
  session-doctor check fixtures/           # findings; exit 1 on an error
  session-doctor check --fail-on warning --ignore orphan-in-context ~/.hermes
  session-doctor repair ~/.claude/projects --out /tmp/fixed --dry-run
  session-doctor compact ~/.local/share/opencode --session ses_abc --out /tmp/small --max-request-bytes 150000

Configuration:
  list, check and compact read defaults for their flags from ./session-doctor.toml,
  else $XDG_CONFIG_HOME/session-doctor/config.toml (else ~/.config/session-doctor/config.toml);
  flags override it. --config PATH names the file, --no-config reads none.

Exit codes:
  0  healthy: no finding at or above --fail-on, or a command that does not judge
  1  check: a finding at or above --fail-on; compact: a budget it cannot reach
  2  usage error, or an input or output could not be read or written";

const LIST_AFTER_HELP: &str = "\
Examples:
  session-doctor list
  session-doctor list --format json ~/.local/share/opencode
  session-doctor list --model anthropic/claude-sonnet-4 ~/.claude/projects

Exit codes:
  0  the sessions were listed (findings are counted, not judged)
  2  usage error, or an input could not be read";

const INSPECT_AFTER_HELP: &str = "\
Examples:
  session-doctor inspect fixtures/opencode/image --session ses_dfd1e065 --top 3
  session-doctor inspect --format json ~/.hermes/state.db --session 20250101_120000

Exit codes:
  0  the session was shown
  2  usage error, no or several sessions matched, or an input could not be read";

const CHECK_AFTER_HELP: &str = "\
Examples:
  session-doctor check fixtures/
  session-doctor check --fail-on warning --format json ~/.local/share/opencode
  session-doctor check --ignore orphan-in-context --ignore media-in-history ~/.hermes
  session-doctor check --context 200000 --max-output 32000 --max-request-bytes 150000 ~/.codex/sessions

Exit codes:
  0  no finding at or above --fail-on (default: error)
  1  a finding at or above --fail-on
  2  usage error, or an input could not be read";

const REPAIR_AFTER_HELP: &str = "\
Examples:
  session-doctor repair fixtures/opencode/stale-parent --out /tmp/fixed
  session-doctor repair ~/.local/share/opencode --session ses_abc --out /tmp/fixed --dry-run

Exit codes:
  0  the copies were written (with --dry-run: planned)
  2  usage error, an input could not be read, or a copy could not be written";

const COMPACT_AFTER_HELP: &str = "\
Examples:
  session-doctor compact fixtures/opencode/prune --session ses_dfd1d09a --out /tmp/small --max-request-bytes 150000
  session-doctor compact ~/.local/share/opencode --session ses_abc --out /tmp/small --model anthropic/claude-sonnet-4 --dry-run
  session-doctor compact ~/.hermes --out /tmp/small     # every session with a finding compact fixes

Exit codes:
  0  the copies were written, or nothing needed a change
  1  a session's budget cannot be reached (no copy is written for it)
  2  usage error, an input could not be read, or a copy could not be written";

const MAN_AFTER_HELP: &str = "\
Examples:
  session-doctor man | man -l -
  session-doctor man check > ~/.local/share/man/man1/session-doctor-check.1
  for c in '' list inspect check repair compact completions man; do
    session-doctor man $c > man/session-doctor${c:+-$c}.1; done    # the pages in man/

Exit codes:
  0  the page was printed
  2  usage error, or no such command";

const COMPLETIONS_AFTER_HELP: &str = "\
Examples:
  session-doctor completions bash > ~/.local/share/bash-completion/completions/session-doctor
  session-doctor completions zsh > ~/.zfunc/_session-doctor
  session-doctor completions fish > ~/.config/fish/completions/session-doctor.fish

Exit codes:
  0  the script was printed
  2  usage error";

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// Tables for people.
    #[default]
    Table,
    /// One JSON document with "schema_version": 1 (schema/session-doctor.schema.json).
    Json,
    /// A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY).
    Markdown,
    /// GitHub Actions workflow commands: one ::error/::warning/::notice line per finding.
    Github,
    /// One SARIF 2.1.0 log (code scanning upload).
    Sarif,
}

/// Options every reading command shares: the stores, the output format,
/// the worker threads.
#[derive(Debug, Args)]
pub struct Common {
    /// Stores to read, or folders holding them (default: every agent's data
    /// dirs).
    ///
    /// A store is an opencode.db / kilo.db file, an opencode or Kilo data dir
    /// or legacy storage/ dir, a Claude Code <session>.jsonl file, project
    /// or projects/ dir, a Codex rollout-*.jsonl file, a hermes-agent
    /// state.db or a docker-agent session.db. Default: the opencode and
    /// Kilo data dirs under $XDG_DATA_HOME and $HOME/.local/share, Claude
    /// Code's projects/ under each dir of $CLAUDE_CONFIG_DIR (else
    /// $HOME/.config/claude and $HOME/.claude), Codex's sessions/ and
    /// archived_sessions/ under $CODEX_HOME (else $HOME/.codex), $HERMES_HOME
    /// (else $HOME/.hermes) and $HOME/.cagent.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Worker threads (default: the number of cores).
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

/// What the commands that judge sessions (`list`, `check`, `compact`)
/// share: the finding codes to leave out, the model budget and request-size
/// limit, and the config file that gives their defaults.
#[derive(Debug, Args, Clone)]
pub struct Judging {
    /// Leave out findings with this code (repeatable; adds to the config
    /// file's `ignore`).
    ///
    /// Ignored findings are not reported, not counted in the exit code, and
    /// not fixed by compact.
    #[arg(long, value_name = "CODE", help_heading = "Findings", value_parser = code_parser())]
    pub ignore: Vec<Code>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `--ignore`: one of the finding codes of [`RULES`], each listed with its
/// summary in the long help.
fn code_parser() -> impl TypedValueParser<Value = Code> {
    PossibleValuesParser::new(
        RULES
            .iter()
            .map(|r| PossibleValue::new(r.code.as_str()).help(r.summary)),
    )
    .try_map(|s| Code::parse(&s).ok_or("not a finding code"))
}

impl Judging {
    /// The settings to run with: the config file (unless `--no-config`)
    /// with these flags over it. A bad config file is an error.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        Settings::resolve(self)
    }
}

/// Model limits and request-size limits the size rules measure against.
/// Every one is optional here: the config file or the defaults fill in
/// what is not given ([`Settings`]).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Budget")]
pub struct BudgetArgs {
    /// Context window of the model the session resumes with (tokens).
    #[arg(long, value_name = "TOKENS", requires = "max_output",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub context: Option<u64>,
    /// Maximum output tokens of that model.
    #[arg(long, value_name = "TOKENS", requires = "context")]
    pub max_output: Option<u64>,
    /// Input limit of that model (tokens), when it has one.
    #[arg(long, value_name = "TOKENS")]
    pub input_limit: Option<u64>,
    /// Look the limits of this `provider/model` up in the models.dev JSON.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// models.dev JSON (default: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json).
    #[arg(long, value_name = "PATH")]
    pub models_json: Option<PathBuf>,
    /// Largest request body the provider or gateway accepts (bytes; default: 6291456, 6 MiB).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_request_bytes: Option<u64>,
    /// Share of --max-request-bytes kept for the system prompt and tool
    /// schemas the agent adds (0 to 0.95; default: 0.25).
    #[arg(long, value_name = "SHARE", value_parser = parse_headroom)]
    pub headroom: Option<f64>,
}

/// Where the defaults of the flags above come from.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Configuration")]
pub struct ConfigArgs {
    /// Read this config file instead of looking one up (./session-doctor.toml,
    /// else $XDG_CONFIG_HOME/session-doctor/config.toml, else
    /// ~/.config/session-doctor/config.toml). Flags override it.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Read no config file.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
}

/// `--headroom`: a finite share from 0 to 0.95 (above that, nothing of the
/// request limit is left for the history).
fn parse_headroom(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    check_headroom(v).map_err(|e| format!("`{s}` is {e}"))
}

/// A headroom share is finite and from 0 to 0.95 (`--headroom` and the
/// config file's `headroom`).
pub(crate) fn check_headroom(v: f64) -> Result<f64, String> {
    if !v.is_finite() || !(0.0..=0.95).contains(&v) {
        return Err("out of range: expected a share from 0 to 0.95".into());
    }
    Ok(v)
}

/// `list`'s own flags, after the shared ones.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: Common,
    /// Only this session.
    #[arg(long, value_name = "ID", help_heading = "List")]
    pub session: Option<String>,
    #[command(flatten)]
    pub judging: Judging,
}

/// `inspect`'s flags: it reports sizes, never findings, so it takes no
/// budget.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub common: Common,
    /// The session to inspect (an id or a unique prefix of one; optional
    /// when the stores hold one session).
    #[arg(long, value_name = "ID", help_heading = "Inspect")]
    pub session: Option<String>,
    /// Also list the N largest parts (by stored bytes).
    #[arg(long, value_name = "N", help_heading = "Inspect")]
    pub top: Option<usize>,
}

/// `check`'s flags.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: Common,
    /// Only this session.
    #[arg(long, value_name = "ID", help_heading = "Check")]
    pub session: Option<String>,
    /// Exit 1 when a finding of this severity or worse exists (`never`:
    /// always 0; default: the config file's `fail_on`, else error).
    #[arg(long, value_enum, help_heading = "Check")]
    pub fail_on: Option<FailOn>,
    #[command(flatten)]
    pub judging: Judging,
}

/// The severity that fails `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// An error.
    Error,
    /// A warning or an error.
    Warning,
    /// Any finding.
    Info,
    /// Nothing: always exit 0 (unless an input cannot be read).
    Never,
}

impl CheckArgs {
    /// The lowest severity that fails the run (`--fail-on`, else the
    /// config file's `fail_on` in `settings`, else error), or `None` for
    /// `never`.
    pub fn fail_threshold(&self, settings: &Settings) -> Option<Severity> {
        match self.fail_on.or(settings.fail_on).unwrap_or(FailOn::Error) {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// `repair`'s flags: it fixes what it finds in the stored links, whatever
/// the budget, so it takes no budget.
#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub common: Common,
    /// Folder to write the copies into (created if missing). Never the source
    /// folder or inside it.
    #[arg(long, value_name = "DIR", help_heading = "Repair")]
    pub out: PathBuf,
    /// Only repair this session (the whole store is still copied).
    #[arg(long, value_name = "ID", help_heading = "Repair")]
    pub session: Option<String>,
    /// Print the changes, write nothing.
    #[arg(long, help_heading = "Repair")]
    pub dry_run: bool,
    /// Replace copies that already exist under --out.
    #[arg(long, help_heading = "Repair")]
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

/// `compact`'s flags.
#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub common: Common,
    /// The session to compact (an id or a unique prefix of one). Without it,
    /// every session with a finding compact fixes is compacted, one copy
    /// per store.
    #[arg(long, value_name = "ID", help_heading = "Compact")]
    pub session: Option<String>,
    /// Folder to write the copy into. Never the source folder or inside it.
    #[arg(long, value_name = "DIR", help_heading = "Compact")]
    pub out: PathBuf,
    /// If cutting history is needed, keep only the last N user turns.
    #[arg(long, value_name = "N", help_heading = "Compact")]
    pub keep_turns: Option<usize>,
    /// Print the plan (steps, figures, changes), write nothing.
    #[arg(long, help_heading = "Compact")]
    pub dry_run: bool,
    /// Replace a copy that already exists under --out.
    #[arg(long, help_heading = "Compact")]
    pub force: bool,
    #[command(flatten)]
    pub judging: Judging,
}
