//! `compact`: a copy in which one session fits its model budget and the
//! request-size limit.

use super::copies::{self, CopyPlan};
use super::pipeline::Engine;
use super::{emit, finish};
use crate::cli::CompactArgs;
use crate::exit_codes::{FINDINGS, HEALTHY};
use crate::report::{exporter, CompactReport};
use anyhow::{bail, Result};
use std::process::ExitCode;

pub fn run(a: &CompactArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common)?;
    let items = e.items(Some(&a.session))?;
    if items.len() > 1 {
        bail!(
            "session {} is in {} stores ({}); pass the one store to compact",
            a.session,
            items.len(),
            items
                .iter()
                .map(|it| e.stores[it.store].path().display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let si = items[0].store;
    let (guard, out_dir) = copies::guard_out(&e, &a.out)?;
    let placed = copies::place(&e, &[si], &out_dir, &guard)?;
    let dest = placed[0].1.clone();
    let keep_turns = a.keep_turns;
    let planned = e
        .map(
            &items,
            |store, l| -> Result<(CompactReport, Vec<crate::edit::Edit>)> {
                let o = &l.options;
                let target = crate::treat::compact::Target {
                    budget: o.budget.as_ref().ok().cloned(),
                    max_request_bytes: o.max_request_bytes,
                    headroom_bytes: crate::diagnose::headroom_bytes(o),
                    keep_turns,
                };
                let c = store.copier();
                let plan = crate::treat::compact::plan(c, &l.session, &target)?;
                let report = CompactReport {
                    session_id: l.session.id.clone(),
                    source: store.path().display().to_string(),
                    dest: dest.display().to_string(),
                    dry_run: a.dry_run,
                    written: false,
                    fits: plan.fits,
                    unreachable: plan.unreachable.clone(),
                    budget: target.budget.clone(),
                    budget_unknown: o.budget.as_ref().err().cloned(),
                    usable_tokens: plan.usable_tokens,
                    overhead_tokens: plan.overhead_tokens,
                    max_request_bytes: target.max_request_bytes,
                    headroom_bytes: target.headroom_bytes,
                    before: plan.before.clone(),
                    steps: plan.steps.clone(),
                    changes: c.describe_all(&l.session, &plan.edits),
                };
                Ok((report, plan.edits))
            },
        )
        .pop()
        .flatten();
    let Some(planned) = planned else {
        e.progress.finish();
        let p = std::mem::take(&mut e.problems);
        super::report_problems(a.common.format, &p);
        bail!("session {} could not be read", a.session);
    };
    let (mut report, edits) = planned?;
    let mut problems = std::mem::take(&mut e.problems);
    if report.fits {
        let rows = copies::write(
            &e,
            &out_dir,
            vec![CopyPlan {
                store: si,
                dest,
                edits,
            }],
            a.force,
            a.dry_run,
            &mut problems,
        );
        report.written = rows.first().is_some_and(|r| r.written);
    }
    e.progress.finish();
    emit(exporter(a.common.format).compact(&report, &problems))?;
    if let Some(why) = &report.unreachable {
        eprintln!("session-doctor: the budget is not reachable: {why}; no copy written");
        return Ok(finish(a.common.format, &problems, FINDINGS));
    }
    Ok(finish(a.common.format, &problems, HEALTHY))
}
