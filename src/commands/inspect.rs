//! `inspect`: one row per message of a session.

use super::pipeline::Engine;
use super::{emit_with, finish, stopped};
use crate::cli::InspectArgs;
use crate::exit_codes::HEALTHY;
use crate::report::{exporter, rows};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &InspectArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common, Default::default())?;
    let items = e
        .items(a.session.as_deref())
        .map_err(|x| stopped(x, &mut e.problems))?;
    if a.session.is_none() && items.len() > 1 {
        e.progress.finish();
        let err = anyhow::anyhow!(
            "{} sessions found; pass --session ID (an id or a unique prefix): {}",
            items.len(),
            items
                .iter()
                .take(10)
                .map(|it| it.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Err(stopped(err, &mut e.problems));
    }
    let sessions: Vec<_> = e
        .map(&items, |_, l| rows::inspect_session(l.session, a.top))
        .into_iter()
        .flatten()
        .collect();
    e.progress.finish();
    // On the worker pool: the table of a huge session is made on every core.
    e.install(|| {
        emit_with(|out| exporter(a.common.format).write_inspect(&sessions, &e.problems, out))
    })?;
    Ok(finish(a.common.format, &e.problems, HEALTHY))
}
