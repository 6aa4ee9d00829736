//! `inspect`: one row per message of a session.

use super::pipeline::Engine;
use super::{emit, finish};
use crate::cli::InspectArgs;
use crate::exit_codes::HEALTHY;
use crate::report::{exporter, rows};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &InspectArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common)?;
    let items = e.items(Some(&a.session))?;
    let sessions: Vec<_> = e
        .map(&items, |_, l| rows::inspect_session(&l.session, a.top))
        .into_iter()
        .flatten()
        .collect();
    e.progress.finish();
    emit(exporter(a.common.format).inspect(&sessions, &e.problems))?;
    Ok(finish(a.common.format, &e.problems, HEALTHY))
}
