//! `check`: findings per session; exit 1 when one reaches `--fail-on`.

use super::pipeline::{Engine, Loaded};
use super::{emit, finish, stopped};
use crate::cli::CheckArgs;
use crate::exit_codes::{FINDINGS, HEALTHY};
use crate::report::{exporter, rows};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &CheckArgs) -> Result<ExitCode> {
    let settings = a.judging.settings()?;
    let mut e = Engine::open(&a.common, settings.clone())?;
    let items = e
        .items(a.session.as_deref())
        .map_err(|x| stopped(x, &mut e.problems))?;
    let sessions: Vec<_> = e
        .map(&items, |store, l| {
            let Loaded {
                session,
                mut findings,
                options,
            } = l;
            let mut row = rows::check_session(&session, Vec::new(), &options);
            super::remedy::fill(store, session, &mut findings, &options, &settings);
            row.findings = findings;
            row
        })
        .into_iter()
        .flatten()
        .collect();
    e.progress.finish();
    let failed = a.fail_threshold(&settings).is_some_and(|t| {
        sessions
            .iter()
            .any(|s| s.findings.iter().any(|f| f.severity >= t))
    });
    emit(exporter(a.common.format).check(&sessions, &e.problems))?;
    Ok(finish(
        a.common.format,
        &e.problems,
        if failed { FINDINGS } else { HEALTHY },
    ))
}
