//! The commands: parse, load, diagnose, treat, report.

use crate::cli::{Cli, Command, Common};
use crate::diagnose::{diagnose, Finding, SeverityCounts};
use crate::exit_codes::{code, FINDINGS, HEALTHY};
use crate::formats::{discover, Store};
use crate::model::Session;
use crate::report::*;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs one command; returns the exit code (0 healthy, 1 findings at or above
/// `--fail-on`, 2 when nothing could be read). Per-store and per-row errors
/// do not stop the run: they are reported and the rest is processed.
pub fn run(cli: Cli) -> Result<ExitCode> {
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
    errors: Vec<String>,
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
    let mut ws = Workspace {
        stores: d.stores,
        sessions: Vec::new(),
        errors: d.errors,
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
                        Err(e) => ws.errors.push(format!("{e:#}")),
                    }
                }
            }
            Err(e) => ws.errors.push(format!("{e:#}")),
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    ws
}

/// Loads, then fails when nothing at all could be read.
fn load_or_fail(common: &Common, only: Option<&str>) -> Result<Workspace> {
    let paths = common.paths();
    if paths.is_empty() {
        bail!("no PATH given and no data dir found (opencode and Kilo under $XDG_DATA_HOME or $HOME/.local/share; Claude Code projects/ under $CLAUDE_CONFIG_DIR, $HOME/.config/claude or $HOME/.claude; Codex sessions/ and archived_sessions/ under $CODEX_HOME or $HOME/.codex)");
    }
    let ws = load(&paths, only, &common.budget);
    if ws.stores.is_empty() {
        for e in &ws.errors {
            eprintln!("session-doctor: error: {e}");
        }
        bail!("nothing could be read");
    }
    for e in &ws.errors {
        eprintln!("session-doctor: warning: {e}");
    }
    if let Some(id) = only {
        if ws.sessions.is_empty() {
            bail!("session {id} not found in {}", describe_paths(&paths));
        }
    }
    Ok(ws)
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
    emit(exporter(common.format).list(&rows, &ws.errors))?;
    Ok(code(HEALTHY))
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

fn flags(s: &Session, i: usize) -> Vec<&'static str> {
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
    f.push(if s.is_visible(i) { "visible" } else { "hidden" });
    f
}

fn inspect(common: &Common, id: &str, top: Option<usize>) -> Result<ExitCode> {
    let ws = load_or_fail(common, Some(id))?;
    let sessions: Vec<InspectSession> = ws
        .sessions
        .iter()
        .map(|l| {
            let s = &l.session;
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
                    flags: flags(s, i),
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
    emit(exporter(common.format).inspect(&sessions, &ws.errors))?;
    Ok(code(HEALTHY))
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
    emit(exporter(a.common.format).check(&sessions, &ws.errors))?;
    Ok(code(if failed { FINDINGS } else { HEALTHY }))
}

/// Absolute form of `p` with symlinks of its existing ancestors resolved, so
/// "is DIR inside the source" cannot be fooled by `..` or links.
fn resolved(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return abs,
        }
    }
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

use crate::formats::sidecar as side;

/// Writes a copy of `store` with `edits` to `dest` (which `--force` allowed to
/// replace): removes an old copy and its side files, then lets the format
/// write to a temp name and rename.
fn write_copy(store: &dyn Store, dest: &Path, edits: &[crate::formats::Edit]) -> Result<()> {
    let parent = dest.parent().expect("dest is under --out");
    std::fs::create_dir_all(parent)
        .with_context(|| format!("{}: cannot create", parent.display()))?;
    if dest.exists() {
        if dest.is_dir() {
            std::fs::remove_dir_all(dest)
        } else {
            std::fs::remove_file(dest)
        }
        .with_context(|| format!("{}: cannot replace", dest.display()))?;
    }
    for sfx in ["-wal", "-shm"] {
        let sf = side(dest, sfx);
        if sf.exists() {
            std::fs::remove_file(&sf)
                .with_context(|| format!("{}: cannot remove", sf.display()))?;
        }
    }
    store.write_copy(dest, edits).with_context(|| {
        format!(
            "{}: cannot write the copy {}",
            store.path().display(),
            dest.display()
        )
    })
}

/// Refuses `out` when it is, or is inside, the folder of a source.
fn refuse_inside_source(out: &Path, shown: &Path, stores: &[&dyn Store]) -> Result<PathBuf> {
    let out_dir = resolved(out);
    for s in stores {
        if out_dir.starts_with(resolved(&s.root())) {
            bail!(
                "refusing --out {}: it is inside the folder of the source {} (copies never go beside originals)",
                shown.display(),
                s.path().display()
            );
        }
    }
    Ok(out_dir)
}

fn repair(a: &crate::cli::RepairArgs) -> Result<ExitCode> {
    let ws = load_or_fail(&a.common, a.session.as_deref())?;
    let out_dir = resolved(&a.out);
    // Stores to copy: every store read, or only the one holding --session.
    let mut selected: Vec<usize> = ws.sessions.iter().map(|l| l.store).collect();
    if a.session.is_none() {
        selected = (0..ws.stores.len()).collect();
    }
    selected.sort();
    selected.dedup();
    let parents: Vec<PathBuf> = selected
        .iter()
        .map(|&i| resolved(&ws.stores[i].root()))
        .collect();
    let chosen: Vec<&dyn Store> = selected.iter().map(|&i| ws.stores[i].as_ref()).collect();
    refuse_inside_source(&a.out, &a.out, &chosen)?;
    let base = common_ancestor(&parents);
    let mut report = RepairReport {
        dry_run: a.dry_run,
        changes: Vec::new(),
        copies: Vec::new(),
    };
    let mut plans = Vec::new();
    for (k, &i) in selected.iter().enumerate() {
        let store = &ws.stores[i];
        let mut edits = Vec::new();
        for l in ws.sessions.iter().filter(|l| l.store == i) {
            let plan = crate::treat::repair::plan(&l.session);
            report
                .changes
                .extend(plan.iter().map(|e| store.describe(&l.session, e)));
            edits.extend(plan);
        }
        let dest = if selected.len() == 1 {
            out_dir.join(store.copy_name())
        } else {
            out_dir
                .join(parents[k].strip_prefix(&base).unwrap_or(Path::new("")))
                .join(store.copy_name())
        };
        if dest.exists() && !a.force {
            bail!("{} exists; pass --force to replace it", dest.display());
        }
        plans.push((i, dest, edits));
    }
    for (i, dest, edits) in plans {
        let store = &ws.stores[i];
        if !a.dry_run {
            write_copy(store.as_ref(), &dest, &edits)?;
        }
        report.copies.push(CopyRow {
            source: store.path().display().to_string(),
            dest: dest.display().to_string(),
            changes: edits.len(),
            written: !a.dry_run,
        });
    }
    emit(exporter(a.common.format).repair(&report, &ws.errors))?;
    Ok(code(HEALTHY))
}

fn compact(a: &crate::cli::CompactArgs) -> Result<ExitCode> {
    let ws = load_or_fail(&a.common, Some(&a.session))?;
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
    let l = &ws.sessions[0];
    let store = ws.stores[l.store].as_ref();
    let out_dir = refuse_inside_source(&a.out, &a.out, &[store])?;
    let dest = out_dir.join(store.copy_name());
    if dest.exists() && !a.force && !a.dry_run {
        bail!("{} exists; pass --force to replace it", dest.display());
    }
    let o = &l.options;
    let target = crate::treat::compact::Target {
        budget: o.budget.as_ref().ok().cloned(),
        max_request_bytes: o.max_request_bytes,
        headroom_bytes: crate::diagnose::headroom_bytes(o),
        keep_turns: a.keep_turns,
    };
    let plan = crate::treat::compact::plan(store, &l.session, &target)?;
    let write = plan.fits && !a.dry_run;
    if write {
        write_copy(store, &dest, &plan.edits)?;
    }
    let report = CompactReport {
        session_id: l.session.id.clone(),
        source: store.path().display().to_string(),
        dest: dest.display().to_string(),
        dry_run: a.dry_run,
        written: write,
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
        changes: plan
            .edits
            .iter()
            .map(|e| store.describe(&l.session, e))
            .collect(),
    };
    emit(exporter(a.common.format).compact(&report, &ws.errors))?;
    if let Some(why) = &plan.unreachable {
        eprintln!("session-doctor: the budget is not reachable: {why}; no copy written");
        return Ok(code(FINDINGS));
    }
    Ok(code(HEALTHY))
}
