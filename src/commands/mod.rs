//! The commands, one file each, on one engine ([`pipeline`]): discover
//! stores, stream sessions through load -> diagnose -> a small result, then
//! report (and, for `repair` and `compact`, write copies).

mod check;
pub(crate) mod compact;
mod copies;
mod inspect;
mod list;
pub mod out;
pub mod pipeline;
pub mod remedy;
mod repair;

use crate::cli::{Cli, Command, OutputFormat};
use crate::error::{About, InputError, Problems};
use crate::exit_codes::{code, ERROR, HEALTHY};
use crate::report::{exporter, DocKind};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs one command; returns the exit code (0 healthy, 1 findings at or above
/// `--fail-on`, 2 when any input or output failed). Per-store and per-row
/// errors do not stop the run: they are reported once, the rest is
/// processed, and the exit code is 2 at the end. An error that stops the
/// run is returned (the caller prints it on stderr and exits 2); in a
/// machine format its document is printed first ([`print_stopped`]).
pub fn run(cli: Cli) -> Result<ExitCode> {
    crate::fsx::install_signal_cleanup();
    crate::fsx::reclaim_at_start();
    let (kind, format, dry_run, r) = match &cli.command {
        Command::List(a) => (DocKind::List, a.common.format, false, list::run(a)),
        Command::Inspect(a) => (DocKind::Inspect, a.common.format, false, inspect::run(a)),
        Command::Check(a) => (DocKind::Check, a.common.format, false, check::run(a)),
        Command::Repair(a) => (DocKind::Repair, a.common.format, a.dry_run, repair::run(a)),
        Command::Compact(a) => (
            DocKind::Compact,
            a.common.format,
            a.dry_run,
            compact::run(a),
        ),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "session-doctor", &mut std::io::stdout());
            return Ok(code(HEALTHY));
        }
        Command::Man { command } => {
            emit(man_page(command.as_deref())?)?;
            return Ok(code(HEALTHY));
        }
    };
    if let Err(e) = &r {
        print_stopped(kind, format, dry_run, e);
    }
    r
}

/// Whether anything was written to stdout ([`emit_with`]): a run that
/// stops after that prints no second document.
static STDOUT_USED: AtomicBool = AtomicBool::new(false);

/// An error that stopped a command, with the problems recorded before it
/// (machine formats report them with it) and the path it is about
/// ([`About`]). Shown as the error it wraps.
#[derive(Debug)]
pub(crate) struct Stopped {
    error: anyhow::Error,
    path: Option<PathBuf>,
    earlier: Problems,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::error::chain(&self.error))
    }
}

/// No source: the wrapped chain is already in the message.
impl std::error::Error for Stopped {}

/// `error`, which stopped a command after `earlier` were recorded (taken).
pub(crate) fn stopped(error: anyhow::Error, earlier: &mut Problems) -> anyhow::Error {
    let earlier = std::mem::take(earlier);
    let path = About::path_of(&error).map(PathBuf::from);
    anyhow::Error::new(Stopped {
        error,
        path,
        earlier,
    })
}

/// For a machine format, the document of a run of `kind` stopped by `e`:
/// the command's own with nothing in it, the problems recorded before and
/// the error (its whole message, as on stderr) in it. Nothing when the
/// format is the table (the message on stderr says it all) or when
/// something was already written to stdout (no half document followed by
/// another).
fn print_stopped(kind: DocKind, format: OutputFormat, dry_run: bool, e: &anyhow::Error) {
    if format == OutputFormat::Table || STDOUT_USED.load(Ordering::SeqCst) {
        return;
    }
    let s = e.downcast_ref::<Stopped>();
    let mut p = s.map(|s| s.earlier.clone()).unwrap_or_default();
    let path = s
        .and_then(|s| s.path.clone())
        .or_else(|| About::path_of(e).map(PathBuf::from))
        .unwrap_or_default();
    p.stopped = Some(InputError {
        path,
        reason: crate::error::chain(e),
        output: false,
    });
    // A closed pipe or a full disk: the message is still on stderr.
    let _ = emit(exporter(format).stopped(kind, dry_run, &p));
}

/// The man page (roff) of the top-level command, or of subcommand `name`,
/// rendered by clap_mangen from the clap definition.
fn man_page(name: Option<&str>) -> Result<String> {
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let page = match name {
        None => cmd,
        Some(n) => cmd
            .get_subcommands()
            .find(|s| s.get_name() == n)
            .cloned()
            .with_context(|| {
                format!(
                    "no command {n}; commands: {}",
                    cmd.get_subcommands()
                        .filter(|s| !s.is_hide_set())
                        .map(|s| s.get_name().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    String::from_utf8(out).context("the man page is not UTF-8")
}

/// Prints errors and warnings once: on stderr for tables (machine formats
/// carry them in their document instead).
fn report_problems(format: OutputFormat, p: &Problems) {
    if format != OutputFormat::Table {
        return;
    }
    for w in &p.warnings {
        eprintln!("session-doctor: warning: {w}");
    }
    for e in &p.errors {
        eprintln!("session-doctor: error: {e}");
    }
}

/// The exit code: 2 when an input or output failed, else `judged`.
fn finish(format: OutputFormat, p: &Problems, judged: u8) -> ExitCode {
    report_problems(format, p);
    code(if p.errors.is_empty() { judged } else { ERROR })
}

/// Writes a whole document to stdout; a closed pipe is not an error.
fn emit(s: String) -> Result<()> {
    emit_with(|out| out.write_all(s.as_bytes()))
}

/// Writes a document to stdout with `write`, as it is made; a closed pipe
/// is not an error.
fn emit_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    STDOUT_USED.store(true, Ordering::SeqCst);
    match write(&mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}
