//! The engine every command runs on: discover stores, then stream sessions
//! through `load -> diagnose -> f` on a pool of worker threads.
//!
//! - **Bounded memory.** A session is loaded by one worker, turned by the
//!   command's function into a small result (a report row, an edit plan),
//!   and dropped before that worker takes the next one: at most `--jobs`
//!   sessions are in memory at once, whatever the size of the store.
//! - **Deterministic order.** Results come back in store order (the order
//!   stores were found: input paths as given, folders walked sorted by
//!   name), then session order within a store (oldest first), whatever the
//!   number of threads.
//! - **Parallel.** Listing sessions runs over stores, loading over sessions
//!   (rayon); each worker opens its own SQLite connection.
//! - **Errors.** A store that cannot list its sessions, or a session that
//!   cannot be loaded, becomes an [`InputError`]: the rest goes on and the
//!   exit code is 2 at the end.
//! - **Progress.** One bar on stderr, in bytes of input (what takes the
//!   time), drawn only when stderr is a terminal.

use crate::cli::Common;
use crate::config::Settings;
use crate::diagnose::{diagnose, Finding, Options};
use crate::error::{InputError, Problems};
use crate::formats::{discover, Store};
use crate::model::Session;
use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::PathBuf;

/// One session to process: its store (index into [`Engine::stores`]), its
/// id, and the bytes of input it stands for (progress).
#[derive(Debug, Clone)]
pub struct Item {
    pub store: usize,
    pub id: String,
    pub bytes: u64,
}

/// Up to five ids closest to `want` (the longest common prefix first, then
/// the smallest edit distance), for "not found" messages.
fn nearest<'a>(want: &str, ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(usize, usize, &str)> = ids
        .map(|id| {
            let common = id
                .chars()
                .zip(want.chars())
                .take_while(|(a, b)| a == b)
                .count();
            (usize::MAX - common, strsim::levenshtein(id, want), id)
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored
        .into_iter()
        .take(5)
        .map(|(_, _, id)| id.to_string())
        .collect()
}

/// A session loaded and diagnosed, handed to a command's function. Its
/// findings leave out the codes the settings ignore: every command sees the
/// same set (reports, exit codes, remedies, compact's goals).
pub struct Loaded {
    pub session: Session,
    pub findings: Vec<Finding>,
    pub options: Options,
}

/// A progress bar in bytes of input, on stderr when it is a terminal.
pub struct Progress {
    pb: ProgressBar,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if !std::io::stderr().is_terminal() {
            pb.set_draw_target(ProgressDrawTarget::hidden());
        }
        pb.set_style(
            ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} ({bytes_per_sec}, {eta}) {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress { pb }
    }

    /// Counts `bytes` more of work (reading or writing).
    pub fn inc(&self, bytes: u64) {
        self.pb.inc(bytes);
    }

    /// Adds `bytes` to the total (work discovered later, e.g. copies to write).
    pub fn grow(&self, bytes: u64) {
        self.pb.inc_length(bytes);
    }

    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// Stores found, the problems met so far, and the worker pool.
pub struct Engine {
    pub stores: Vec<Box<dyn Store>>,
    pub problems: Problems,
    /// The paths that were read (given, or the default data dirs).
    pub inputs: Vec<PathBuf>,
    /// The settings sessions are diagnosed with.
    pub settings: Settings,
    pool: rayon::ThreadPool,
    pub progress: Progress,
    /// Bytes of input of each store ([`crate::formats::Store::input_bytes`],
    /// by index into `stores`), asked once: each ask is a `stat` of every
    /// file of the store, and the progress bar, the per-session sizes and
    /// the copies' progress all need it (three `stat`s of each of the 5,900
    /// files of the many-sessions benchmark, where one does).
    store_bytes: Vec<u64>,
}

impl Engine {
    /// Discovers the stores of `common`'s paths (or the default data dirs),
    /// to diagnose with `settings`. Fails (exit 2) when no path was given and
    /// no data dir exists.
    pub fn open(common: &Common, settings: Settings) -> Result<Engine> {
        let paths = common.paths();
        if paths.is_empty() {
            bail!(
                "no PATH given and no data dir found ({})",
                crate::formats::default_places()
            );
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(common.jobs())
            .thread_name(|i| format!("session-doctor-{i}"))
            .build()?;
        let d = pool.install(|| discover(&paths));
        let mut problems = d.problems;
        if let Err(e) = crate::budget::check_models_json(&settings.limits) {
            problems.error(e);
        }
        let store_bytes: Vec<u64> =
            pool.install(|| d.stores.par_iter().map(|s| s.input_bytes()).collect());
        Ok(Engine {
            stores: d.stores,
            problems,
            inputs: paths,
            settings,
            pool,
            progress: Progress::new(store_bytes.iter().sum()),
            store_bytes,
        })
    }

    /// Bytes of input of store `i` (an index into [`Engine::stores`]) when
    /// the stores were found.
    pub fn store_bytes(&self, i: usize) -> u64 {
        self.store_bytes.get(i).copied().unwrap_or(0)
    }

    /// Every session of every store (or only `only`), in store order then
    /// session order. A store that cannot list its sessions is an error and
    /// is left out. `only` names no session: an error (exit 2). When one of
    /// them is huge ([`crate::memory::HUGE_SESSION_BYTES`] of input), freed
    /// memory is returned to the OS at once from here on.
    pub fn items(&mut self, only: Option<&str>) -> Result<Vec<Item>> {
        let items = self.select_items(only)?;
        if items
            .iter()
            .any(|it| it.bytes >= crate::memory::HUGE_SESSION_BYTES)
        {
            crate::memory::return_freed_memory_at_once();
        }
        Ok(items)
    }

    fn select_items(&mut self, only: Option<&str>) -> Result<Vec<Item>> {
        let listed: Vec<Result<Vec<String>>> = self
            .pool
            .install(|| self.stores.par_iter().map(|s| s.session_ids()).collect());
        let mut items = Vec::new();
        for (i, r) in listed.into_iter().enumerate() {
            let store = &self.stores[i];
            match r {
                Ok(ids) => {
                    let n = ids.len().max(1) as u64;
                    let bytes = self.store_bytes(i) / n;
                    for id in ids {
                        items.push(Item {
                            store: i,
                            id,
                            bytes,
                        });
                    }
                }
                Err(e) => self
                    .problems
                    .error(InputError::from_anyhow(store.path(), &e)),
            }
        }
        let Some(want) = only else {
            return Ok(items);
        };
        // An exact id, else a unique prefix (as git takes commit ids).
        let exact: Vec<Item> = items.iter().filter(|it| it.id == want).cloned().collect();
        if !exact.is_empty() {
            return Ok(exact);
        }
        let mut ids: Vec<&str> = items
            .iter()
            .filter(|it| it.id.starts_with(want))
            .map(|it| it.id.as_str())
            .collect();
        ids.dedup();
        match ids.len() {
            1 => {
                let id = ids[0].to_string();
                Ok(items.into_iter().filter(|it| it.id == id).collect())
            }
            0 => {
                self.progress.finish();
                let near = nearest(want, items.iter().map(|it| it.id.as_str()));
                // What could not be read may hold it: say so, not only "not found".
                let unread = match self.problems.errors.as_slice() {
                    [] => String::new(),
                    [e] => format!("; 1 input could not be read: {e}"),
                    [e, rest @ ..] => format!(
                        "; {} inputs could not be read: {e} (and {} more)",
                        rest.len() + 1,
                        rest.len()
                    ),
                };
                bail!(
                    "session {want} not found in {}{}{unread}",
                    self.inputs
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if near.is_empty() {
                        String::new()
                    } else {
                        format!("; nearest ids: {}", near.join(", "))
                    }
                );
            }
            n => {
                self.progress.finish();
                bail!(
                    "session {want} is ambiguous: {n} ids start with it ({}); give more of the id",
                    ids.iter().take(10).copied().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }

    /// Loads and diagnoses every item on the worker pool and maps it with
    /// `f`, keeping item order; at most one session per worker is alive at
    /// a time, the largest ([`Item::bytes`]) taken first. A session that
    /// cannot be loaded gives `None` (and an error).
    pub fn map<T: Send>(
        &mut self,
        items: &[Item],
        f: impl Fn(&dyn Store, Loaded) -> T + Sync + Send,
    ) -> Vec<Option<T>> {
        let stores = &self.stores;
        let settings = &self.settings;
        let progress = &self.progress;
        // The largest sessions start first, so that the run does not end
        // with one worker on a big session while the others have nothing
        // left; each result goes back to its item's place.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(items[i].bytes));
        let done: Vec<(usize, Result<T, InputError>)> = self.pool.install(|| {
            order
                .par_iter()
                .with_max_len(1)
                .map(|&i| {
                    let it = &items[i];
                    let store = stores[it.store].as_ref();
                    let huge = it.bytes >= crate::memory::HUGE_SESSION_BYTES;
                    if huge {
                        crate::memory::loading_huge_session();
                    }
                    let loaded = store.load(&it.id);
                    if huge {
                        crate::memory::return_freed_memory_at_once();
                    }
                    let r = loaded
                        .map_err(|e| InputError::from_anyhow(store.path(), &e))
                        .map(|session| {
                            let options = settings.options_for(&session);
                            let mut findings = diagnose(&session, &options);
                            findings.retain(|f| !settings.ignores(f.code));
                            f(
                                store,
                                Loaded {
                                    session,
                                    findings,
                                    options,
                                },
                            )
                        });
                    progress.inc(it.bytes);
                    (i, r)
                })
                .collect()
        });
        let mut results: Vec<Option<Result<T, InputError>>> =
            std::iter::repeat_with(|| None).take(items.len()).collect();
        for (i, r) in done {
            results[i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| match r? {
                Ok(t) => Some(t),
                Err(e) => {
                    self.problems.error(e);
                    None
                }
            })
            .collect()
    }

    /// Runs `f` on the worker pool (for work that is not per session, such
    /// as writing copies of several stores).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}
