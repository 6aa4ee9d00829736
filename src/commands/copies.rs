//! Writing copies of stores under `--out`, shared by `repair` and `compact`:
//! where each copy goes, the guard against every source, the output
//! folder's lock and manifest, and one row per copy.

use super::out;
use super::pipeline::Engine;
use crate::edit::Edit;
use crate::error::{About, InputError, Problems};
use crate::report::CopyRow;
use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

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
pub struct CopyPlan {
    pub store: usize,
    pub dest: PathBuf,
    pub edits: Vec<Edit>,
}

/// The guard over every store read and the resolved output folder; a
/// refusal is an error (exit 2) before anything is written, about `out`.
pub fn guard_out(e: &Engine, out: &Path) -> Result<(out::Guard, PathBuf)> {
    let all: Vec<&dyn crate::formats::Store> = e.stores.iter().map(|s| s.as_ref()).collect();
    let guard = out::Guard::new(&e.inputs, &all);
    let out_dir = guard.check_out_dir(out).map_err(|x| About::wrap(out, x))?;
    Ok((guard, out_dir))
}

/// Where each selected store's copy goes under `out_dir`: its `copy_path`
/// for one store; for several, each under its copy base's place relative to
/// the bases' common folder. Every path a copy writes is checked by `guard`
/// first: any collision with a source, or two copies on one path, refuses
/// the whole run before anything is written (an error about the path that
/// would have been written). Returns `(store, dest)`.
pub fn place(
    e: &Engine,
    selected: &[usize],
    out_dir: &Path,
    guard: &out::Guard,
) -> Result<Vec<(usize, PathBuf)>> {
    let bases: Vec<PathBuf> = selected
        .iter()
        .map(|&i| out::resolved(&e.stores[i].copier().copy_base()))
        .collect();
    let common = common_ancestor(&bases);
    let mut placed = Vec::new();
    let mut taken: rustc_hash::FxHashMap<PathBuf, PathBuf> = Default::default();
    for (k, &i) in selected.iter().enumerate() {
        let store = &e.stores[i];
        let c = store.copier();
        let rel = if selected.len() == 1 {
            c.copy_path()
        } else {
            bases[k]
                .strip_prefix(&common)
                .unwrap_or(Path::new(""))
                .join(c.copy_path())
        };
        let dest = out_dir.join(&rel);
        for t in c.copy_targets(&dest) {
            guard.check_dest(&t).map_err(|x| About::wrap(&t, x))?;
            if let Some(other) = taken.get(&t) {
                return Err(About::wrap(
                    &t,
                    anyhow!(
                        "the copies of {} and {} would both be written to {}",
                        other.display(),
                        store.path().display(),
                        t.display()
                    ),
                ));
            }
            taken.insert(t, store.path().to_path_buf());
        }
        placed.push((i, dest));
    }
    Ok(placed)
}

fn copy_row(e: &Engine, p: &CopyPlan, written: bool, error: Option<String>) -> CopyRow {
    CopyRow {
        source: e.stores[p.store].path().display().to_string(),
        dest: p.dest.display().to_string(),
        changes: p.edits.len(),
        written,
        error,
        // A copy that changes nothing needs no steps: the original loads.
        next_steps: if written && !p.edits.is_empty() {
            e.stores[p.store]
                .copier()
                .next_steps(&p.dest, &edited_sessions(&p.edits))
        } else {
            Vec::new()
        },
    }
}

/// The sessions `edits` change, in first-seen order.
pub fn edited_sessions(edits: &[Edit]) -> Vec<String> {
    let mut seen = rustc_hash::FxHashSet::default();
    edits
        .iter()
        .filter(|e| seen.insert(&*e.session_id))
        .map(|e| e.session_id.to_string())
        .collect()
}

/// Writes the planned copies under the output folder's lock, in parallel: a
/// destination that exists is replaced only with `force` and only when the
/// folder's manifest says this tool wrote it. A failed copy is reported and
/// the other stores are still written. Nothing is created in the folder
/// (not even the lock) when nothing can be written. Returns one row per
/// copy, in plan order.
pub fn write(
    e: &Engine,
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
        let targets = e.stores[p.store].copier().copy_targets(&p.dest);
        let existing: Vec<&PathBuf> = targets
            .iter()
            .filter(|t| std::fs::symlink_metadata(t).is_ok())
            .collect();
        // The error is about the copy (`p.dest`): a side file is named.
        let which = |t: &Path| {
            if t == p.dest {
                "already".to_string()
            } else {
                format!("{} already", t.display())
            }
        };
        if existing.is_empty() {
            None
        } else if !force {
            Some(format!(
                "{} exists; pass --force to replace a previous copy",
                which(existing[0])
            ))
        } else {
            existing.iter().find(|t| !manifest.contains(&rel_of(t))).map(|t| format!(
                "{} exists and was not written by session-doctor (it is not in {}); --force only replaces previous copies: remove it yourself or choose another --out",
                which(t),
                out_dir.join(crate::fsx::MANIFEST_NAME).display()
            ))
        }
    };
    let fail_all = |problems: &mut Problems, err: anyhow::Error| -> Vec<CopyRow> {
        problems.error(InputError::output(out_dir, crate::error::chain(&err)));
        plans
            .iter()
            .map(|p| copy_row(e, p, false, Some(crate::error::chain(&err))))
            .collect()
    };
    let manifest = match crate::fsx::Manifest::load(out_dir) {
        Ok(m) => m,
        Err(err) => return fail_all(problems, err),
    };
    let first: Vec<Option<String>> = plans.iter().map(|p| refusal(p, &manifest)).collect();
    if dry_run || first.iter().all(Option::is_some) {
        return plans
            .iter()
            .zip(first)
            .map(|(p, why)| {
                if let Some(w) = &why {
                    problems.error(InputError::output(&p.dest, w.clone()));
                }
                copy_row(e, p, false, why)
            })
            .collect();
    }
    let lock = match crate::fsx::OutLock::acquire(out_dir) {
        Ok(l) => l,
        Err(err) => return fail_all(problems, err),
    };
    // Under the lock: the folder may have changed since the first look.
    let mut manifest = match crate::fsx::Manifest::load(out_dir) {
        Ok(m) => m,
        Err(err) => return fail_all(problems, err),
    };
    let refused: Vec<Option<String>> = plans.iter().map(|p| refusal(p, &manifest)).collect();
    let copy_bytes: u64 = plans
        .iter()
        .zip(&refused)
        .filter(|(_, r)| r.is_none())
        .map(|(p, _)| e.store_bytes(p.store))
        .sum();
    e.progress.grow(copy_bytes);
    // Err((refused, why)): refused by the folder's state, or failed while writing.
    let results: Vec<Result<(), (bool, String)>> = e.install(|| {
        plans
            .par_iter()
            .zip(refused.par_iter())
            .map(|(p, why)| {
                if let Some(w) = why {
                    return Err((true, w.clone()));
                }
                let store = e.stores[p.store].as_ref();
                let c = store.copier();
                let replace = c
                    .copy_targets(&p.dest)
                    .iter()
                    .any(|t| std::fs::symlink_metadata(t).is_ok());
                let r = p
                    .dest
                    .parent()
                    .map(|d| {
                        std::fs::create_dir_all(d)
                            .with_context(|| format!("{}: cannot create", d.display()))
                    })
                    .unwrap_or(Ok(()))
                    .and_then(|_| c.write_copy(&p.dest, &p.edits, replace))
                    .map_err(|err| (false, crate::error::chain(&err)));
                e.progress.inc(e.store_bytes(p.store));
                r
            })
            .collect()
    });
    let mut rows = Vec::new();
    let mut changed = false;
    for (p, r) in plans.iter().zip(results) {
        let store = e.stores[p.store].as_ref();
        match r {
            Ok(()) => {
                for t in store.copier().copy_targets(&p.dest) {
                    manifest.insert(&rel_of(&t));
                }
                changed = true;
                rows.push(copy_row(e, p, true, None));
            }
            Err((refused, why)) => {
                let err = if refused {
                    InputError::output(&p.dest, why.clone())
                } else {
                    InputError::output(
                        store.path(),
                        format!("cannot write the copy {}: {why}", p.dest.display()),
                    )
                };
                problems.error(err);
                rows.push(copy_row(e, p, false, Some(why)));
            }
        }
    }
    if changed {
        if let Err(err) = manifest.save(out_dir) {
            problems.error(InputError::output(out_dir, crate::error::chain(&err)));
        }
    }
    drop(lock);
    rows
}
