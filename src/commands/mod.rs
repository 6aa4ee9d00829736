//! The commands: parse, load, diagnose, treat, report.

pub mod out;

use crate::cli::{Cli, Command, Common};
use crate::diagnose::{diagnose, Finding, SeverityCounts};
use crate::error::{InputError, Problems};
use crate::exit_codes::{code, ERROR, FINDINGS, HEALTHY};
use crate::formats::{discover, Store};
use crate::model::Session;
use crate::report::*;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs one command; returns the exit code (0 healthy, 1 findings at or above
/// `--fail-on`, 2 when any input or output failed). Per-store and per-row
/// errors do not stop the run: they are reported once, the rest is
/// processed, and the exit code is 2 at the end.
pub fn run(cli: Cli) -> Result<ExitCode> {
    crate::fsx::install_signal_cleanup();
    crate::fsx::reclaim_at_start();
    match cli.command {
        Command::List(a) => list(&a.common, a.session.as_deref()),
        Command::Inspect(a) => inspect(&a.common, &a.session, a.top),
        Command::Check(a) => check(&a),
        Command::Repair(a) => repair(&a),
        Command::Compact(a) => compact(&a),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "session-doctor", &mut std::io::stdout());
            Ok(code(HEALTHY))
        }
    }
}

/// A loaded session with the store it came from.
struct Loaded {
    store: usize,
    session: Session,
    findings: Vec<Finding>,
    options: crate::diagnose::Options,
}

struct Workspace {
    stores: Vec<Box<dyn Store>>,
    sessions: Vec<Loaded>,
    problems: Problems,
    /// The paths that were read (given or default).
    inputs: Vec<PathBuf>,
}

fn progress(len: u64) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} stores {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// Discovers stores under `paths` and loads their sessions (only `only` when given).
fn load(paths: &[PathBuf], only: Option<&str>, budget: &crate::cli::BudgetArgs) -> Workspace {
    let d = discover(paths);
    let mut problems = d.problems;
    if let Err(e) = crate::budget::check_models_json(&budget.limit_options()) {
        problems.error(e);
    }
    let d = crate::formats::Discovery {
        stores: d.stores,
        problems,
    };
    let mut ws = Workspace {
        stores: d.stores,
        sessions: Vec::new(),
        problems: d.problems,
        inputs: paths.to_vec(),
    };
    let pb = progress(ws.stores.len() as u64);
    for (si, store) in ws.stores.iter().enumerate() {
        pb.set_message(store.path().display().to_string());
        match store.session_ids() {
            Ok(ids) => {
                for id in ids.into_iter().filter(|id| only.is_none_or(|o| o == id)) {
                    match store.load(&id) {
                        Ok(session) => {
                            let options = budget.options_for(&session);
                            let findings = diagnose(&session, &options);
                            ws.sessions.push(Loaded {
                                store: si,
                                session,
                                findings,
                                options,
                            });
                        }
                        Err(e) => ws.problems.error(InputError::from_anyhow(store.path(), &e)),
                    }
                }
            }
            Err(e) => ws.problems.error(InputError::from_anyhow(store.path(), &e)),
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    ws
}

/// Loads; fails (exit 2) when no path was given and no data dir exists, or
/// when `--session` names a session no store holds.
fn load_or_fail(common: &Common, only: Option<&str>) -> Result<Workspace> {
    let paths = common.paths();
    if paths.is_empty() {
        bail!("no PATH given and no data dir found (opencode and Kilo under $XDG_DATA_HOME or $HOME/.local/share; Claude Code projects/ under $CLAUDE_CONFIG_DIR, $HOME/.config/claude or $HOME/.claude; Codex sessions/ and archived_sessions/ under $CODEX_HOME or $HOME/.codex)");
    }
    let ws = load(&paths, only, &common.budget);
    if let Some(id) = only {
        if ws.sessions.is_empty() {
            report_problems(common.format, &ws.problems);
            bail!("session {id} not found in {}", describe_paths(&paths));
        }
    }
    Ok(ws)
}

/// Prints errors and warnings once: on stderr for tables (the JSON document
/// carries them in `errors` and `warnings` instead).
fn report_problems(format: crate::cli::Format, p: &Problems) {
    if format != crate::cli::Format::Table {
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
fn finish(format: crate::cli::Format, p: &Problems, judged: u8) -> ExitCode {
    report_problems(format, p);
    code(if p.errors.is_empty() { judged } else { ERROR })
}

fn describe_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn emit(s: String) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}

fn list(common: &Common, only: Option<&str>) -> Result<ExitCode> {
    let ws = load_or_fail(common, only)?;
    let rows: Vec<ListRow> = ws
        .sessions
        .iter()
        .map(|l| {
            let s = &l.session;
            ListRow {
                agent: s.agent.name(),
                id: s.id.clone(),
                title: s.title.clone(),
                source: s.source.display().to_string(),
                messages: s.messages.len(),
                parts: s.part_count(),
                payload_bytes: s.payload_bytes(),
                media_bytes: s.media_bytes(),
                compactions: s.compactions(),
                context_tokens: s.context_tokens(),
                tokens_total: s.tokens_total(),
                findings: SeverityCounts::of(&l.findings),
                notes: s.notes.clone(),
            }
        })
        .collect();
    emit(exporter(common.format).list(&rows, &ws.problems))?;
    Ok(finish(common.format, &ws.problems, HEALTHY))
}

fn part_row(p: &crate::model::Part) -> PartRow {
    PartRow {
        id: p.id.clone(),
        message_id: p.message_id.clone(),
        kind: p.kind_name.clone(),
        payload_bytes: p.payload_bytes,
        media_bytes: p.media.iter().map(|m| m.decoded_bytes).sum(),
        media_count: p.media.len(),
        tokens_estimated: crate::measure::estimate_tokens(p.model_chars),
        synthetic: p.synthetic,
        tool: p.tool.as_ref().map(|t| t.name.clone()),
        tool_status: p
            .tool
            .as_ref()
            .map(|t| format!("{:?}", t.status).to_lowercase()),
    }
}

fn flags(s: &Session, visible: &[bool], i: usize) -> Vec<&'static str> {
    let m = &s.messages[i];
    let mut f = Vec::new();
    if m.compaction().is_some() {
        f.push("compaction");
    }
    if m.summary {
        f.push("summary");
    }
    if m.synthetic() {
        f.push("synthetic");
    }
    if m.error.is_some() {
        f.push("error");
    }
    if m.sidechain {
        f.push("sidechain");
    }
    f.push(if visible[i] { "visible" } else { "hidden" });
    f
}

fn inspect(common: &Common, id: &str, top: Option<usize>) -> Result<ExitCode> {
    let ws = load_or_fail(common, Some(id))?;
    let sessions: Vec<InspectSession> = ws
        .sessions
        .iter()
        .map(|l| {
            let s = &l.session;
            let visible = s.visible_mask();
            let messages = s
                .messages
                .iter()
                .enumerate()
                .map(|(i, m)| MessageRow {
                    index: i,
                    id: m.id.clone(),
                    role: m.role.as_str().to_string(),
                    parent_id: m.parent_id.clone(),
                    line: m.line.map(|l| l.line),
                    time_created: m.time_created,
                    payload_bytes: m.payload_bytes(),
                    media_bytes: m.media_bytes(),
                    media_count: m.media_count(),
                    tokens_estimated: m.tokens_estimated(),
                    tokens_reported: m.usage,
                    parts: m.parts.iter().map(part_row).collect(),
                    flags: flags(s, &visible, i),
                })
                .collect();
            let top_parts = top.map(|n| {
                let mut all: Vec<&crate::model::Part> =
                    s.messages.iter().flat_map(|m| &m.parts).collect();
                all.sort_by(|a, b| b.payload_bytes.cmp(&a.payload_bytes).then(a.id.cmp(&b.id)));
                all.into_iter().take(n).map(part_row).collect()
            });
            InspectSession {
                agent: s.agent.name(),
                id: s.id.clone(),
                source: s.source.display().to_string(),
                visible_messages: s.visible.len(),
                messages,
                top_parts,
            }
        })
        .collect();
    emit(exporter(common.format).inspect(&sessions, &ws.problems))?;
    Ok(finish(common.format, &ws.problems, HEALTHY))
}

fn check(a: &crate::cli::CheckArgs) -> Result<ExitCode> {
    let ws = load_or_fail(&a.common, a.session.as_deref())?;
    let threshold = a.fail_threshold();
    let mut failed = false;
    let sessions: Vec<CheckSession> = ws
        .sessions
        .into_iter()
        .map(|l| {
            if let Some(t) = threshold {
                failed |= l.findings.iter().any(|f| f.severity >= t);
            }
            CheckSession {
                agent: l.session.agent.name(),
                id: l.session.id.clone(),
                source: l.session.source.display().to_string(),
                budget: l.options.budget.as_ref().ok().cloned(),
                budget_unknown: l.options.budget.as_ref().err().cloned(),
                notes: l.session.notes.clone(),
                findings: l.findings,
            }
        })
        .collect();
    emit(exporter(a.common.format).check(&sessions, &ws.problems))?;
    Ok(finish(
        a.common.format,
        &ws.problems,
        if failed { FINDINGS } else { HEALTHY },
    ))
}

/// Deepest folder that holds every path in `dirs`.
fn common_ancestor(dirs: &[PathBuf]) -> PathBuf {
    let mut it = dirs.iter();
    let Some(first) = it.next() else {
        return PathBuf::new();
    };
    let mut acc = first.clone();
    for d in it {
        while !d.starts_with(&acc) {
            if !acc.pop() {
                return PathBuf::new();
            }
        }
    }
    acc
}

/// One store copy to write.
struct CopyPlan {
    store: usize,
    dest: PathBuf,
    edits: Vec<crate::formats::Edit>,
}

/// Where each store's copy goes under `out_dir`: `copy_path` for one store;
/// for several, each under its copy base's place relative to the bases'
/// common folder. Every path a copy writes is checked by `guard` first: any
/// collision with a source refuses the whole run before anything is written.
fn place_copies(
    ws: &Workspace,
    selected: &[usize],
    out_dir: &Path,
    guard: &out::Guard,
) -> Result<Vec<(usize, PathBuf, PathBuf)>> {
    let bases: Vec<PathBuf> = selected
        .iter()
        .map(|&i| out::resolved(&ws.stores[i].copy_base()))
        .collect();
    let common = common_ancestor(&bases);
    let mut placed: Vec<(usize, PathBuf, PathBuf)> = Vec::new();
    let mut taken: std::collections::HashMap<PathBuf, PathBuf> = Default::default();
    for (k, &i) in selected.iter().enumerate() {
        let store = &ws.stores[i];
        let rel = if selected.len() == 1 {
            store.copy_path()
        } else {
            bases[k]
                .strip_prefix(&common)
                .unwrap_or(Path::new(""))
                .join(store.copy_path())
        };
        let dest = out_dir.join(&rel);
        for t in store.copy_targets(&dest) {
            guard.check_dest(&t)?;
            if let Some(other) = taken.get(&t) {
                bail!(
                    "the copies of {} and {} would both be written to {}",
                    other.display(),
                    store.path().display(),
                    t.display()
                );
            }
            taken.insert(t, store.path().to_path_buf());
        }
        placed.push((i, rel, dest));
    }
    Ok(placed)
}

/// Writes the planned copies under the output folder's lock: a destination
/// that exists is replaced only with `force` and only when the folder's
/// manifest says this tool wrote it. A failed copy is reported and the other
/// stores are still written. Returns one row per copy.
fn write_copies(
    ws: &Workspace,
    out_dir: &Path,
    plans: Vec<CopyPlan>,
    force: bool,
    dry_run: bool,
    problems: &mut Problems,
) -> Vec<CopyRow> {
    let rel_of = |t: &Path| {
        t.strip_prefix(out_dir)
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    // Why a plan cannot be written into the folder as it is now, if it cannot.
    let refusal = |p: &CopyPlan, manifest: &crate::fsx::Manifest| -> Option<String> {
        let targets = ws.stores[p.store].copy_targets(&p.dest);
        let existing: Vec<&PathBuf> = targets
            .iter()
            .filter(|t| std::fs::symlink_metadata(t).is_ok())
            .collect();
        if existing.is_empty() {
            None
        } else if !force {
            Some(format!(
                "{} exists; pass --force to replace a previous copy",
                existing[0].display()
            ))
        } else {
            existing.iter().find(|t| !manifest.contains(&rel_of(t))).map(|t| format!(
                "{} exists and was not written by session-doctor (it is not in {}); --force only replaces previous copies: remove it yourself or choose another --out",
                t.display(),
                out_dir.join(crate::fsx::MANIFEST_NAME).display()
            ))
        }
    };
    let fail_all = |problems: &mut Problems, e: anyhow::Error| -> Vec<CopyRow> {
        problems.error(InputError::from_anyhow(out_dir, &e));
        plans
            .iter()
            .map(|p| copy_row(ws, p, false, Some(format!("{e:#}"))))
            .collect()
    };
    // A first look without the lock: nothing is created in the folder
    // (not even the lock) when nothing can be written.
    let manifest = match crate::fsx::Manifest::load(out_dir) {
        Ok(m) => m,
        Err(e) => return fail_all(problems, e),
    };
    let first: Vec<Option<String>> = plans.iter().map(|p| refusal(p, &manifest)).collect();
    if dry_run || first.iter().all(Option::is_some) {
        return plans
            .iter()
            .zip(first)
            .map(|(p, why)| {
                if let Some(w) = &why {
                    problems.error(InputError::new(&p.dest, w.clone()));
                }
                copy_row(ws, p, false, why)
            })
            .collect();
    }
    let lock = match crate::fsx::OutLock::acquire(out_dir) {
        Ok(l) => l,
        Err(e) => return fail_all(problems, e),
    };
    // Under the lock: the folder may have changed since the first look.
    let mut manifest = match crate::fsx::Manifest::load(out_dir) {
        Ok(m) => m,
        Err(e) => return fail_all(problems, e),
    };
    let mut rows = Vec::new();
    let mut changed = false;
    for p in &plans {
        let store = ws.stores[p.store].as_ref();
        if let Some(why) = refusal(p, &manifest) {
            problems.error(InputError::new(&p.dest, why.clone()));
            rows.push(copy_row(ws, p, false, Some(why)));
            continue;
        }
        let targets = store.copy_targets(&p.dest);
        let replace = targets.iter().any(|t| std::fs::symlink_metadata(t).is_ok());
        let res = p
            .dest
            .parent()
            .map(|d| {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("{}: cannot create", d.display()))
            })
            .unwrap_or(Ok(()))
            .and_then(|_| store.write_copy(&p.dest, &p.edits, replace));
        match res {
            Ok(()) => {
                for t in &targets {
                    manifest.insert(&rel_of(t));
                }
                changed = true;
                rows.push(copy_row(ws, p, true, None));
            }
            Err(e) => {
                problems.error(InputError::new(
                    store.path(),
                    format!("cannot write the copy {}: {e:#}", p.dest.display()),
                ));
                rows.push(copy_row(ws, p, false, Some(format!("{e:#}"))));
            }
        }
    }
    if changed {
        if let Err(e) = manifest.save(out_dir) {
            problems.error(InputError::from_anyhow(out_dir, &e));
        }
    }
    drop(lock);
    rows
}

fn copy_row(ws: &Workspace, p: &CopyPlan, written: bool, error: Option<String>) -> CopyRow {
    CopyRow {
        source: ws.stores[p.store].path().display().to_string(),
        dest: p.dest.display().to_string(),
        changes: p.edits.len(),
        written,
        error,
    }
}

/// The guard and resolved output folder for copies of `stores`; a refusal
/// is an error (exit 2) before anything is written.
fn guard_out(ws: &Workspace, stores: &[usize], out: &Path) -> Result<(out::Guard, PathBuf)> {
    let chosen: Vec<&dyn Store> = stores.iter().map(|&i| ws.stores[i].as_ref()).collect();
    let all: Vec<&dyn Store> = ws.stores.iter().map(|s| s.as_ref()).collect();
    // Every store read is protected, not only the ones copied.
    let guard = out::Guard::new(&ws.inputs, &all);
    let _ = chosen;
    let out_dir = guard.check_out_dir(out)?;
    Ok((guard, out_dir))
}

fn repair(a: &crate::cli::RepairArgs) -> Result<ExitCode> {
    let mut ws = load_or_fail(&a.common, a.session.as_deref())?;
    // Stores to copy: every store read, or only the ones holding --session.
    let mut selected: Vec<usize> = ws.sessions.iter().map(|l| l.store).collect();
    if a.session.is_none() {
        selected = (0..ws.stores.len()).collect();
    }
    selected.sort();
    selected.dedup();
    // A store that could not be read is not copied.
    let failed: std::collections::HashSet<PathBuf> =
        ws.problems.errors.iter().map(|e| e.path.clone()).collect();
    selected.retain(|&i| !failed.contains(ws.stores[i].path()));
    let (guard, out_dir) = guard_out(&ws, &selected, &a.out)?;
    let placed = place_copies(&ws, &selected, &out_dir, &guard)?;
    let mut report = RepairReport {
        dry_run: a.dry_run,
        changes: Vec::new(),
        copies: Vec::new(),
    };
    let mut plans = Vec::new();
    for (i, _rel, dest) in placed {
        let store = &ws.stores[i];
        let mut edits = Vec::new();
        for l in ws.sessions.iter().filter(|l| l.store == i) {
            let plan = crate::treat::repair::plan(&l.session);
            report.changes.extend(store.describe_all(&l.session, &plan));
            edits.extend(plan);
        }
        plans.push(CopyPlan {
            store: i,
            dest,
            edits,
        });
    }
    let mut problems = std::mem::take(&mut ws.problems);
    report.copies = write_copies(&ws, &out_dir, plans, a.force, a.dry_run, &mut problems);
    emit(exporter(a.common.format).repair(&report, &problems))?;
    Ok(finish(a.common.format, &problems, HEALTHY))
}

fn compact(a: &crate::cli::CompactArgs) -> Result<ExitCode> {
    let mut ws = load_or_fail(&a.common, Some(&a.session))?;
    if ws.sessions.len() > 1 {
        bail!(
            "session {} is in {} stores ({}); pass the one store to compact",
            a.session,
            ws.sessions.len(),
            ws.sessions
                .iter()
                .map(|l| l.session.source.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let si = ws.sessions[0].store;
    let (guard, out_dir) = guard_out(&ws, &[si], &a.out)?;
    let placed = place_copies(&ws, &[si], &out_dir, &guard)?;
    let (_, _rel, dest) = placed.into_iter().next().expect("one store placed");
    let l = &ws.sessions[0];
    let store = ws.stores[si].as_ref();
    let o = &l.options;
    let target = crate::treat::compact::Target {
        budget: o.budget.as_ref().ok().cloned(),
        max_request_bytes: o.max_request_bytes,
        headroom_bytes: crate::diagnose::headroom_bytes(o),
        keep_turns: a.keep_turns,
    };
    let plan = crate::treat::compact::plan(store, &l.session, &target)?;
    let write = plan.fits && !a.dry_run;
    let mut report = CompactReport {
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
        changes: store.describe_all(&l.session, &plan.edits),
    };
    let mut problems = std::mem::take(&mut ws.problems);
    if plan.fits {
        let rows = write_copies(
            &ws,
            &out_dir,
            vec![CopyPlan {
                store: si,
                dest,
                edits: plan.edits.clone(),
            }],
            a.force,
            !write,
            &mut problems,
        );
        report.written = rows.first().is_some_and(|r| r.written);
    }
    emit(exporter(a.common.format).compact(&report, &problems))?;
    if let Some(why) = &plan.unreachable {
        eprintln!("session-doctor: the budget is not reachable: {why}; no copy written");
        return Ok(finish(a.common.format, &problems, FINDINGS));
    }
    Ok(finish(a.common.format, &problems, HEALTHY))
}
