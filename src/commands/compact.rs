//! `compact`: copies in which sessions fit their model budget and the
//! request-size limit, and no longer carry what their findings blame
//! (historical media, a compaction loop, a request that failed).
//!
//! With `--session`, one session (every step its findings or the budget
//! call for). Without, every session that has a finding `compact` fixes,
//! one copy per store holding all of its sessions' edits, and one summary
//! row per session. A session with nothing to change is said so and no copy
//! is written for it.

use super::copies::{self, CopyPlan};
use super::pipeline::{Engine, Loaded};
use super::{emit, emit_with, finish, stopped};
use crate::cli::CompactArgs;
use crate::diagnose::{Finding, Fix, Severity};
use crate::edit::{Edit, StoredChange};
use crate::exit_codes::{FINDINGS, HEALTHY};
use crate::formats::Store;
use crate::report::{exporter, CompactReport};
use crate::treat::compact::{Goals, Target};
use anyhow::{anyhow, Result};
use std::process::ExitCode;

/// One session's plan.
struct Planned {
    store: usize,
    report: CompactReport,
    edits: Vec<Edit>,
}

/// Whether a session has a finding `compact` fixes.
pub fn wants_compact(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| f.fix == Fix::Compact && f.severity >= Severity::Warning)
}

fn plan_one(a: &CompactArgs, store: &dyn Store, store_index: usize, l: Loaded) -> Result<Planned> {
    let (report, edits) = plan_session(store, l, a.keep_turns, a.dry_run, None)?;
    Ok(Planned {
        store: store_index,
        report,
        edits,
    })
}

/// What compacting `l` aims at: its findings give the goals, its options
/// the budget; `max_request_bytes` replaces the session's limit when given.
pub(crate) fn target(
    l: &Loaded,
    keep_turns: Option<usize>,
    max_request_bytes: Option<u64>,
) -> Target {
    target_of(&l.options, &l.findings, keep_turns, max_request_bytes)
}

/// [`target`] from a session's options and findings.
pub(crate) fn target_of(
    o: &crate::diagnose::Options,
    findings: &[crate::diagnose::Finding],
    keep_turns: Option<usize>,
    max_request_bytes: Option<u64>,
) -> Target {
    let max_request_bytes = max_request_bytes.unwrap_or(o.max_request_bytes);
    Target {
        budget: o.budget.as_ref().ok().cloned(),
        max_request_bytes,
        headroom_bytes: (max_request_bytes as f64 * o.headroom).round() as u64,
        keep_turns,
        goals: Goals::of(findings),
    }
}

/// The compaction of one loaded session (its findings give the goals),
/// with `max_request_bytes` instead of the session's limit when given. The
/// session is edited in place as the plan goes (no copy of it is kept), and
/// each step's edits are described against the session as that step found it.
pub(crate) fn plan_session(
    store: &dyn Store,
    l: Loaded,
    keep_turns: Option<usize>,
    dry_run: bool,
    max_request_bytes: Option<u64>,
) -> Result<(CompactReport, Vec<Edit>)> {
    let target = target(&l, keep_turns, max_request_bytes);
    let Loaded {
        session, options, ..
    } = l;
    let o = &options;
    let session_id = session.id.clone();
    let c = store.copier();
    let describe = |s: &crate::model::Session, edits: &[Edit], out: &mut Vec<StoredChange>| {
        c.describe_into(s, edits, out)
    };
    let plan = crate::treat::compact::plan(
        c,
        std::borrow::Cow::Owned(session),
        &target,
        Some(&describe),
    )?;
    let report = CompactReport {
        session_id,
        source: store.path().display().to_string(),
        dest: String::new(),
        dry_run,
        written: false,
        fits: plan.fits,
        unreachable: plan.unreachable.clone(),
        shortfall: plan.shortfall.clone(),
        nothing_to_change: plan.edits.is_empty(),
        budget: target.budget.clone(),
        budget_unknown: o.budget.as_ref().err().cloned(),
        usable_tokens: plan.usable_tokens,
        overhead_tokens: plan.before.overhead_tokens,
        max_request_bytes: target.max_request_bytes,
        headroom_bytes: target.headroom_bytes,
        before: plan.before.clone(),
        steps: plan.steps.clone(),
        changes: plan.changes,
        next_steps: Vec::new(),
    };
    Ok((report, plan.edits))
}

pub fn run(a: &CompactArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common, a.judging.settings()?)?;
    let single = a.session.is_some();
    let items = e
        .items(a.session.as_deref())
        .map_err(|x| stopped(x, &mut e.problems))?;
    if single && items.len() > 1 {
        let err = anyhow!(
            "session {} is in {} stores ({}); pass the one store to compact",
            a.session.as_deref().unwrap_or_default(),
            items.len(),
            items
                .iter()
                .map(|it| e.stores[it.store].path().display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Err(stopped(err, &mut e.problems));
    }
    // A dangerous --out is refused before anything is read, even when
    // nothing turns out to need a change.
    let (guard, out_dir) =
        copies::guard_out(&e, &a.out).map_err(|x| stopped(x, &mut e.problems))?;
    if single {
        let only: Vec<usize> = items.iter().map(|it| it.store).collect();
        copies::place(&e, &only, &out_dir, &guard).map_err(|x| stopped(x, &mut e.problems))?;
    }
    let results = e.map(&items, |store, l| -> Option<Result<Planned>> {
        if !single && !wants_compact(&l.findings) {
            return None;
        }
        // The store index is set from the item below.
        Some(plan_one(a, store, 0, l))
    });
    // Sessions loaded (a session that could not be loaded gives `None`).
    let read = results.iter().filter(|r| r.is_some()).count();
    let mut planned: Vec<Planned> = Vec::new();
    for (it, r) in items.iter().zip(results) {
        match r.flatten() {
            Some(Ok(mut p)) => {
                p.store = it.store;
                planned.push(p);
            }
            Some(Err(err)) => e.problems.error(crate::error::InputError::from_anyhow(
                e.stores[it.store].path(),
                &err,
            )),
            None => {}
        }
    }
    if single && planned.is_empty() {
        e.progress.finish();
        // The table says why on stderr; machine formats carry it in their
        // document, with the error.
        super::report_problems(a.common.format, &e.problems);
        let err = anyhow!(
            "session {} could not be read",
            a.session.as_deref().unwrap_or_default()
        );
        return Err(stopped(err, &mut e.problems));
    }
    // One copy per store, holding the edits of all its sessions that fit
    // and have something to change.
    let mut stores: Vec<usize> = planned
        .iter()
        .filter(|p| p.report.fits && !p.edits.is_empty())
        .map(|p| p.store)
        .collect();
    stores.sort_unstable();
    stores.dedup();
    let mut problems;
    let mut copies_rows = Vec::new();
    if stores.is_empty() {
        problems = std::mem::take(&mut e.problems);
    } else {
        let placed = copies::place(&e, &stores, &out_dir, &guard)
            .map_err(|x| stopped(x, &mut e.problems))?;
        // The edits move into the copies' plans (a huge session's cut is
        // hundreds of thousands of edits: not kept twice).
        let plans: Vec<CopyPlan> = placed
            .iter()
            .map(|(si, dest)| CopyPlan {
                store: *si,
                dest: dest.clone(),
                edits: planned
                    .iter_mut()
                    .filter(|p| p.store == *si && p.report.fits)
                    .flat_map(|p| std::mem::take(&mut p.edits))
                    .collect(),
            })
            .collect();
        problems = std::mem::take(&mut e.problems);
        copies_rows = copies::write(&e, &out_dir, plans, a.force, a.dry_run, &mut problems);
        for p in planned.iter_mut() {
            if let Some(((_, dest), row)) = placed
                .iter()
                .zip(&copies_rows)
                .find(|((si, _), _)| *si == p.store)
            {
                if p.report.fits && !p.report.nothing_to_change {
                    p.report.dest = dest.display().to_string();
                    p.report.written = row.written;
                    if row.written {
                        p.report.next_steps = e.stores[p.store]
                            .copier()
                            .next_steps(dest, std::slice::from_ref(&p.report.session_id));
                    }
                }
            }
        }
    }
    e.progress.finish();
    let unreachable = planned.iter().any(|p| p.report.unreachable.is_some());
    for p in planned.iter().filter(|p| p.report.unreachable.is_some()) {
        eprintln!(
            "session-doctor: session {}: the budget is not reachable: {}; no copy written for it",
            p.report.session_id,
            p.report.unreachable.as_deref().unwrap_or_default()
        );
    }
    if single {
        let report = planned.pop().map(|p| p.report).expect("one session");
        if report.nothing_to_change
            && report.fits
            && a.common.format == crate::cli::OutputFormat::Table
        {
            eprintln!(
                "session-doctor: session {}: nothing to change (it fits and no finding asks for a change); no copy written",
                report.session_id
            );
        }
        emit_with(|out| exporter(a.common.format).write_compact(&report, &problems, out))?;
    } else {
        let reports: Vec<CompactReport> = planned.into_iter().map(|p| p.report).collect();
        // When no session could be read, the errors are the whole outcome:
        // nothing is said about sessions.
        let none_read = read == 0 && !problems.errors.is_empty();
        if reports.is_empty() && !none_read && a.common.format == crate::cli::OutputFormat::Table {
            eprintln!("session-doctor: no session has a finding compact fixes; nothing written");
        }
        emit(exporter(a.common.format).compact_batch(
            a.dry_run,
            &reports,
            &copies_rows,
            &problems,
        ))?;
    }
    Ok(finish(
        a.common.format,
        &problems,
        if unreachable { FINDINGS } else { HEALTHY },
    ))
}
