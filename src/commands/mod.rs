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
use crate::error::Problems;
use crate::exit_codes::{code, ERROR, HEALTHY};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;

/// Runs one command; returns the exit code (0 healthy, 1 findings at or above
/// `--fail-on`, 2 when any input or output failed). Per-store and per-row
/// errors do not stop the run: they are reported once, the rest is
/// processed, and the exit code is 2 at the end.
pub fn run(cli: Cli) -> Result<ExitCode> {
    crate::fsx::install_signal_cleanup();
    crate::fsx::reclaim_at_start();
    match cli.command {
        Command::List(a) => list::run(&a),
        Command::Inspect(a) => inspect::run(&a),
        Command::Check(a) => check::run(&a),
        Command::Repair(a) => repair::run(&a),
        Command::Compact(a) => compact::run(&a),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "session-doctor", &mut std::io::stdout());
            Ok(code(HEALTHY))
        }
        Command::Man { command } => {
            emit(man_page(command.as_deref())?)?;
            Ok(code(HEALTHY))
        }
    }
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
    match write(&mut out).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}
