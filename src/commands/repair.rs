//! `repair`: a copy of each store with the repairable findings fixed.

use super::copies::{self, CopyPlan};
use super::pipeline::Engine;
use super::{emit, finish, stopped};
use crate::cli::RepairArgs;
use crate::exit_codes::HEALTHY;
use crate::report::{exporter, RepairReport};
use anyhow::Result;
use std::process::ExitCode;

pub fn run(a: &RepairArgs) -> Result<ExitCode> {
    let mut e = Engine::open(&a.common, Default::default())?;
    let items = e
        .items(a.session.as_deref())
        .map_err(|x| stopped(x, &mut e.problems))?;
    // Each session's edits and how they look in storage; the session is
    // dropped once its plan is made.
    let plans = e.map(&items, |store, l| {
        let edits = crate::treat::repair::plan(&l.session);
        let described = store.copier().describe_all(&l.session, &edits);
        (edits, described)
    });
    // Stores to copy: every store read, or only the ones holding --session;
    // never a store that could not be read.
    let mut selected: Vec<usize> = if a.session.is_some() {
        items.iter().map(|it| it.store).collect()
    } else {
        (0..e.stores.len()).collect()
    };
    selected.dedup();
    let failed: rustc_hash::FxHashSet<std::path::PathBuf> =
        e.problems.errors.iter().map(|x| x.path.clone()).collect();
    selected.retain(|&i| !failed.contains(e.stores[i].path()));
    let (guard, out_dir) =
        copies::guard_out(&e, &a.out).map_err(|x| stopped(x, &mut e.problems))?;
    let placed =
        copies::place(&e, &selected, &out_dir, &guard).map_err(|x| stopped(x, &mut e.problems))?;
    let mut report = RepairReport {
        dry_run: a.dry_run,
        changes: Vec::new(),
        copies: Vec::new(),
    };
    let mut by_store: Vec<Vec<crate::edit::Edit>> = vec![Vec::new(); e.stores.len()];
    for (it, plan) in items.iter().zip(plans) {
        if let Some((edits, described)) = plan {
            report.changes.extend(described);
            by_store[it.store].extend(edits);
        }
    }
    let plans: Vec<CopyPlan> = placed
        .into_iter()
        .map(|(store, dest)| CopyPlan {
            store,
            dest,
            edits: std::mem::take(&mut by_store[store]),
        })
        .collect();
    let mut problems = std::mem::take(&mut e.problems);
    report.copies = copies::write(&e, &out_dir, plans, a.force, a.dry_run, &mut problems);
    e.progress.finish();
    emit(exporter(a.common.format).repair(&report, &problems))?;
    Ok(finish(a.common.format, &problems, HEALTHY))
}
