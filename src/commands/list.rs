//! `list`: one row per session.

use super::pipeline::Engine;
use super::{emit, finish, stopped};
use crate::cli::ListArgs;
use crate::exit_codes::HEALTHY;
use crate::report::{exporter, rows};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &ListArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common, a.judging.settings()?)?;
    let items = e
        .items(a.session.as_deref())
        .map_err(|x| stopped(x, &mut e.problems))?;
    let rows: Vec<_> = e
        .map(&items, |_, l| rows::list_row(&l.session, &l.findings))
        .into_iter()
        .flatten()
        .collect();
    e.progress.finish();
    emit(exporter(a.common.format).list(&rows, &e.problems))?;
    Ok(finish(a.common.format, &e.problems, HEALTHY))
}
