//! `check`: findings per session; exit 1 when one reaches `--fail-on`.

use super::pipeline::Engine;
use super::{emit, finish};
use crate::cli::CheckArgs;
use crate::exit_codes::{FINDINGS, HEALTHY};
use crate::report::{exporter, rows};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &CheckArgs) -> Result<ExitCode> {
    let settings = a.judging.settings()?;
    let mut e = Engine::open(&a.common, settings.clone())?;
    let items = e.items(a.session.as_deref())?;
    let sessions: Vec<_> = e
        .map(&items, |store, mut l| {
            super::remedy::fill(store, &mut l, &settings);
            rows::check_session(&l.session, l.findings, &l.options)
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
