//! The hostile-input corpus (issue 7, "Keep it that way"): every command on
//! every case, built at test time from the fixtures. See tests/hostile/README.md
//! for the cases and what each pins.
//!
//! For each run: no panic and no signal, exit code in {0,1,2} (and the one the
//! case documents), bad input named in the output, every input byte-identical
//! with nothing new beside it, within a time bound and a peak-RSS bound; no
//! private temp copy left behind. All failures are collected and printed as
//! one table at the end.
//!
//! `SD_HOSTILE_BIG=1`: full-size big cases (100k messages, a 200 MB line, a
//! 50 MB image); otherwise moderate sizes. `SD_HOSTILE_ONLY=a,b`: only cases
//! whose name contains one of these. `SD_HOSTILE_KEEP=1`: keep the temp dir.

#[path = "hostile/cases.rs"]
mod cases;
#[path = "hostile/runner.rs"]
mod runner;
#[path = "hostile/snap.rs"]
mod snap;
#[path = "hostile/util.rs"]
mod util;

use runner::{Launcher, Outcome, Spec};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the builders know.
pub struct Ctx {
    pub fixtures: PathBuf,
    pub big: bool,
    /// Private scratch space for intermediate files (not an input).
    pub scratch: PathBuf,
    /// The binary runs unprivileged, so chmod 000 is really unreadable to it.
    pub unprivileged: bool,
}

impl Ctx {
    pub fn fx(&self, rel: &str) -> PathBuf {
        self.fixtures.join(rel)
    }
    /// Moderate size by default, full size with SD_HOSTILE_BIG=1.
    pub fn size(&self, moderate: usize, big: usize) -> usize {
        if self.big {
            big
        } else {
            moderate
        }
    }
}

/// A check on one run's outcome (`out`: the run's --out dir, if any).
pub type Check = Box<dyn Fn(&Outcome, &Path) -> Result<(), String> + Send + Sync>;

/// Exit codes a case documents, per command (None: any of 0, 1, 2).
#[derive(Clone, Copy, Default, Debug)]
pub struct Expect {
    pub list: Option<i32>,
    pub check: Option<i32>,
    pub inspect: Option<i32>,
    pub repair: Option<i32>,
    pub compact: Option<i32>,
}

impl Expect {
    pub fn all(c: i32) -> Expect {
        Expect {
            list: Some(c),
            check: Some(c),
            inspect: Some(c),
            repair: Some(c),
            compact: Some(c),
        }
    }
}

/// An extra run a case defines (the --out edge cases).
pub struct Run {
    pub label: String,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub expect: Option<i32>,
    /// Fragments the output (stdout + stderr) must contain.
    pub names: Vec<String>,
    /// An output folder this run may create inside the case's folders (issue
    /// 10: a new folder beside a source file given by name is allowed); it is
    /// left out of the before/after comparison and removed after the run.
    pub out_allowed: Option<PathBuf>,
}

pub enum Special {
    /// Two `repair` runs started together into one --out without --force,
    /// `rounds` times; each source's copy is told apart by its session id.
    ConcurrentRepair {
        a: (PathBuf, String),
        b: (PathBuf, String),
        rounds: usize,
    },
    /// `repair` into one --out twice without --force: the second must exit 2
    /// and leave the first copy as it was.
    RepairTwice { source: PathBuf },
}

pub struct Case {
    pub name: String,
    /// The PATH arguments.
    pub inputs: Vec<OsString>,
    /// Folders whose every entry must be unchanged after every run.
    pub roots: Vec<PathBuf>,
    /// A session id known to be in the input (inspect/compact use a missing
    /// one otherwise, and then expect 2).
    pub session: Option<String>,
    /// Flags added to every command.
    pub flags: Vec<OsString>,
    pub expect: Expect,
    /// Paths that cannot be read: list, check and repair must name them.
    pub bad_path: Vec<String>,
    /// Damage inside a store: check must name it.
    pub bad_item: Vec<String>,
    pub extra: Vec<Run>,
    /// Checks on standard runs, by label (e.g. "list-json").
    pub checks: Vec<(&'static str, Check)>,
    pub mem_mib: u64,
    pub timeout: Duration,
    pub cwd: Option<PathBuf>,
    /// HOME for the hermetic environment (default: an empty one per case).
    pub home: Option<PathBuf>,
    /// Run the standard commands (list, check, inspect, repair, compact).
    pub standard: bool,
    pub special: Option<Special>,
}

impl Case {
    pub fn new(name: &str, dir: &Path) -> Case {
        Case {
            name: name.to_string(),
            inputs: vec![],
            roots: vec![dir.to_path_buf()],
            session: None,
            flags: vec![],
            expect: Expect::default(),
            bad_path: vec![],
            bad_item: vec![],
            extra: vec![],
            checks: vec![],
            mem_mib: 256,
            timeout: Duration::from_secs(15),
            cwd: None,
            home: None,
            standard: true,
            special: None,
        }
    }
    pub fn input(mut self, p: impl Into<OsString>) -> Case {
        self.inputs.push(p.into());
        self
    }
    pub fn session(mut self, s: &str) -> Case {
        self.session = Some(s.to_string());
        self
    }
    pub fn expect(mut self, e: Expect) -> Case {
        self.expect = e;
        self
    }
    pub fn bad_path(mut self, s: &str) -> Case {
        self.bad_path.push(s.to_string());
        self
    }
    pub fn bad_item(mut self, s: &str) -> Case {
        self.bad_item.push(s.to_string());
        self
    }
    pub fn check(mut self, label: &'static str, c: Check) -> Case {
        self.checks.push((label, c));
        self
    }
    pub fn flag(mut self, f: &str) -> Case {
        self.flags.push(f.into());
        self
    }
    pub fn heavy(mut self, mem_mib: u64, secs: u64) -> Case {
        self.mem_mib = mem_mib;
        self.timeout = Duration::from_secs(secs);
        self
    }
    pub fn run(mut self, label: &str, args: Vec<OsString>, expect: Option<i32>) -> Case {
        self.extra.push(Run {
            label: label.to_string(),
            args,
            cwd: None,
            expect,
            names: vec![],
            out_allowed: None,
        });
        self
    }
    /// A run whose `--out` (inside the case's folders) is allowed to appear.
    pub fn run_out_allowed(mut self, label: &str, args: Vec<OsString>, out: &Path) -> Case {
        self.extra.push(Run {
            label: label.to_string(),
            args,
            cwd: None,
            expect: Some(0),
            names: vec![],
            out_allowed: Some(out.to_path_buf()),
        });
        self
    }
}

pub type Builder = Box<dyn Fn(&Ctx, &Path) -> Case + Send + Sync>;

#[derive(Debug, Clone)]
struct Failure {
    case: String,
    run: String,
    what: String,
}

#[derive(Default)]
struct Counts {
    cases: usize,
    runs: usize,
    panics: usize,
    inputs_changed: usize,
    side_files: usize,
    hangs: usize,
    memory: usize,
    exit_codes: usize,
    not_named: usize,
    other: usize,
}

struct Harness {
    ctx: Ctx,
    launcher: Launcher,
    corpus: PathBuf,
    runs: PathBuf,
    failures: Mutex<Vec<Failure>>,
    counts: Mutex<Counts>,
}

fn main_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_session-doctor"))
}

#[test]
fn hostile_corpus_every_command_every_case() {
    let t0 = Instant::now();
    let keep = std::env::var_os("SD_HOSTILE_KEEP").is_some();
    let tmp = tempfile::Builder::new()
        .prefix("sd-hostile-")
        .tempdir()
        .unwrap();
    let base = tmp.path().to_path_buf();
    let launcher = Launcher::new(main_bin());
    let ctx = Ctx {
        fixtures: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        big: std::env::var("SD_HOSTILE_BIG").is_ok_and(|v| v == "1"),
        scratch: base.join("scratch"),
        unprivileged: launcher.unprivileged(),
    };
    util::mkdir(&ctx.scratch);
    let h = Harness {
        corpus: base.join("corpus"),
        runs: base.join("runs"),
        ctx,
        launcher,
        failures: Mutex::new(vec![]),
        counts: Mutex::new(Counts::default()),
    };
    util::mkdir(&h.corpus);
    util::mkdir(&h.runs);
    if let Some(uid) = h.launcher.chown_to() {
        util::chown_tree(&base, uid);
    }
    let only: Vec<String> = std::env::var("SD_HOSTILE_ONLY")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let all: Vec<(String, Builder)> = cases::all()
        .into_iter()
        .filter(|(n, _)| only.is_empty() || only.iter().any(|o| n.contains(o.as_str())))
        .collect();
    {
        let mut names: Vec<&String> = all.iter().map(|(n, _)| n).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "case names must be unique");
    }
    eprintln!(
        "hostile: {} cases, {} mode, binary runs as {}",
        all.len(),
        if h.ctx.big { "BIG" } else { "moderate" },
        if h.launcher.setpriv.is_some() {
            "uid 65534 (setpriv)"
        } else {
            "the current user"
        }
    );
    if unsafe { libc::geteuid() } == 0 && h.launcher.setpriv.is_none() {
        h.fail(
            "-",
            "-",
            "running as root without setpriv: chmod 000 cases are not meaningful".into(),
        );
    }
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((name, b)) = all.get(i) else { break };
                let t = Instant::now();
                let before = h.failures.lock().unwrap().len();
                h.run_case(name, b);
                let after = h.failures.lock().unwrap().len();
                eprintln!(
                    "hostile: {name}: {:.1}s{}",
                    t.elapsed().as_secs_f64(),
                    if after > before {
                        format!(" ({} failures so far)", after)
                    } else {
                        String::new()
                    }
                );
            });
        }
    });
    let failures = h.failures.into_inner().unwrap();
    let c = h.counts.into_inner().unwrap();
    let mut report = String::new();
    if !failures.is_empty() {
        report.push_str(&table(&failures));
    }
    report.push_str(&format!(
        "\nhostile summary: cases {}, runs {}, panics {}, inputs changed {}, side files {}, hangs {}, \
         over memory {}, wrong exit codes {}, not named {}, other {}; {} failures; {:.1}s\n",
        c.cases,
        c.runs,
        c.panics,
        c.inputs_changed,
        c.side_files,
        c.hangs,
        c.memory,
        c.exit_codes,
        c.not_named,
        c.other,
        failures.len(),
        t0.elapsed().as_secs_f64()
    ));
    eprintln!("{report}");
    if keep {
        let p = tmp.keep();
        eprintln!("hostile: corpus kept in {}", p.display());
    } else {
        util::remove_tree(&base);
    }
    assert!(
        failures.is_empty(),
        "{} hostile-input failures (table above)",
        failures.len()
    );
}

fn table(f: &[Failure]) -> String {
    let w1 = f
        .iter()
        .map(|x| x.case.len())
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    let w2 = f
        .iter()
        .map(|x| x.run.len())
        .max()
        .unwrap_or(7)
        .clamp(7, 34);
    let mut s = format!(
        "\n{:<w1$}  {:<w2$}  what failed\n{}\n",
        "case",
        "command",
        "-".repeat(w1 + w2 + 60)
    );
    for x in f {
        let what: String = x.what.replace('\n', " | ");
        let what: String = what.chars().take(400).collect();
        s.push_str(&format!("{:<w1$}  {:<w2$}  {}\n", x.case, x.run, what));
    }
    s
}

/// First line of stderr that says something (the panic message, the error).
fn gist(o: &Outcome) -> String {
    let e = o.stderr_str();
    let line = e
        .lines()
        .find(|l| l.contains("panicked at"))
        .map(|l| {
            // The panic message is on the next line since Rust 1.73.
            let mut it = e.lines().skip_while(|x| *x != l);
            let a = it.next().unwrap_or("");
            let b = it.next().unwrap_or("");
            format!("{a} {b}")
        })
        .or_else(|| e.lines().find(|l| !l.trim().is_empty()).map(str::to_string))
        .unwrap_or_default();
    line.chars().take(300).collect()
}

impl Harness {
    fn fail(&self, case: &str, run: &str, what: String) {
        self.failures.lock().unwrap().push(Failure {
            case: case.into(),
            run: run.into(),
            what,
        });
    }

    fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.lock().unwrap())
    }

    fn build(&self, name: &str, b: &Builder, dir: &Path) -> Option<Case> {
        util::remove_tree(dir);
        util::mkdir(dir);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b(&self.ctx, dir)));
        match r {
            Ok(c) => {
                if let Some(uid) = self.launcher.chown_to() {
                    util::chown_tree(dir, uid);
                    if let Some(h) = &c.home {
                        util::chown_tree(h, uid);
                    }
                }
                Some(c)
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                self.fail(name, "(builder)", format!("corpus builder failed: {msg}"));
                self.count(|c| c.other += 1);
                None
            }
        }
    }

    fn run_case(&self, name: &str, b: &Builder) {
        let dir = self.corpus.join(name);
        let rdir = self.runs.join(name);
        util::mkdir(&rdir);
        let Some(mut case) = self.build(name, b, &dir) else {
            return;
        };
        self.count(|c| c.cases += 1);
        let home = rdir.join("home");
        let tmpd = rdir.join("tmp");
        util::mkdir(&home);
        util::mkdir(&tmpd);
        if let Some(uid) = self.launcher.chown_to() {
            util::chown_tree(&rdir, uid);
        }
        let mut before: Vec<snap::Snapshot> =
            case.roots.iter().map(|r| snap::snapshot(r, true)).collect();
        let mut runs = self.standard_runs(&case);
        runs.append(&mut std::mem::take(&mut case.extra));
        let mut timeout = case.timeout;
        let mut shortened = false;
        for (i, r) in runs.iter().enumerate() {
            let label = r.label.clone();
            let slot = rdir.join(format!("{i:02}-{}", label));
            util::mkdir(&slot);
            if let Some(uid) = self.launcher.chown_to() {
                util::chown_tree(&slot, uid);
            }
            // The fresh --out of standard runs is `slot/out`.
            let args: Vec<OsString> = r
                .args
                .iter()
                .map(|a| {
                    if a == "@OUT" {
                        slot.join("out").into_os_string()
                    } else {
                        a.clone()
                    }
                })
                .collect();
            let spec = Spec {
                args,
                cwd: r.cwd.clone().or(case.cwd.clone()).unwrap_or(dir.clone()),
                env: self.env(case.home.as_deref().unwrap_or(&home), &tmpd),
                timeout,
                address_space: (case.mem_mib * 2 + 1024) << 20,
                stdout: slot.join("stdout"),
                stderr: slot.join("stderr"),
            };
            let o = runner::run(&self.launcher, &spec);
            let bound = timeout;
            self.count(|c| c.runs += 1);
            if o.timed_out && !shortened {
                // Later runs of a hanging case get a shorter bound (still
                // reported as hangs) to keep the suite's time in check.
                shortened = true;
                timeout = timeout.min(Duration::from_secs(if case.timeout.as_secs() > 15 {
                    20
                } else {
                    4
                }));
            }
            if o.elapsed > Duration::from_secs(5) && !o.timed_out {
                eprintln!(
                    "hostile: {name}: {label} took {:.1}s, peak RSS {} MiB",
                    o.elapsed.as_secs_f64(),
                    o.maxrss_kib / 1024
                );
            }
            self.judge(&case, r, &label, &o, &slot.join("out"), bound);
            // Temp copies left behind in $TMPDIR.
            if !o.timed_out {
                let left: Vec<_> = std::fs::read_dir(&tmpd)
                    .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
                    .unwrap_or_default();
                if !left.is_empty() {
                    self.fail(
                        name,
                        &label,
                        format!("left {} entries in $TMPDIR: {:?}", left.len(), left),
                    );
                    self.count(|c| c.other += 1);
                }
            }
            util::remove_tree(&tmpd);
            util::mkdir(&tmpd);
            if let Some(uid) = self.launcher.chown_to() {
                util::chown_tree(&tmpd, uid);
            }
            // Inputs unchanged, nothing new beside them (but an allowed --out).
            let mut dirty = false;
            for (k, root) in case.roots.iter().enumerate() {
                let after = snap::snapshot(root, false);
                let mut d = snap::diff(&before[k], &after);
                if let Some(out) = &r.out_allowed {
                    // The copy, and the output folder's lock and manifest.
                    let meta = |a: &PathBuf| {
                        a.file_name().is_some_and(|n| {
                            n == ".session-doctor.lock" || n == ".session-doctor-copies.json"
                        })
                    };
                    if let Ok(rel) = out.strip_prefix(root) {
                        d.added.retain(|a| !a.starts_with(rel) && !meta(a));
                    }
                }
                if !d.is_empty() {
                    dirty = true;
                    self.report_diff(name, &label, root, &d);
                }
            }
            if dirty {
                // Restore the corpus so later runs see the case as built.
                if let Some(c) = self.build(name, b, &dir) {
                    case.roots = c.roots;
                    before = case.roots.iter().map(|r| snap::snapshot(r, true)).collect();
                }
            }
            if let Some(out) = &r.out_allowed {
                util::remove_tree(out);
                if let Some(parent) = out.parent() {
                    for m in [".session-doctor.lock", ".session-doctor-copies.json"] {
                        let _ = std::fs::remove_file(parent.join(m));
                    }
                }
            }
            // Drop big outputs as we go (disk).
            let _ = std::fs::remove_file(slot.join("stdout"));
            util::remove_tree(&slot.join("out"));
        }
        // Large files: full hash at the end.
        for (k, root) in case.roots.iter().enumerate() {
            let after = snap::snapshot(root, true);
            let d = snap::diff(&before[k], &after);
            if !d.is_empty() {
                self.report_diff(name, "(end of case, full hash)", root, &d);
            }
        }
        if let Some(sp) = &case.special {
            self.special(&case, sp, &rdir, &home, &tmpd);
            for (k, root) in case.roots.iter().enumerate() {
                let after = snap::snapshot(root, true);
                let d = snap::diff(&before[k], &after);
                if !d.is_empty() {
                    self.report_diff(name, "(special runs)", root, &d);
                }
            }
        }
        util::remove_tree(&dir);
        util::remove_tree(&rdir);
    }

    fn report_diff(&self, name: &str, label: &str, root: &Path, d: &snap::Diff) {
        let show = |p: &PathBuf| {
            if p.as_os_str().is_empty() {
                root.display().to_string()
            } else {
                p.display().to_string()
            }
        };
        if !d.added.is_empty() {
            self.count(|c| c.side_files += 1);
            let l: Vec<String> = d.added.iter().take(6).map(show).collect();
            self.fail(
                name,
                label,
                format!(
                    "new file(s) beside the inputs in {}: {}{}",
                    root.file_name().unwrap_or_default().to_string_lossy(),
                    l.join(", "),
                    if d.added.len() > 6 { ", ..." } else { "" }
                ),
            );
        }
        if !d.removed.is_empty() || !d.changed.is_empty() {
            self.count(|c| c.inputs_changed += 1);
            let mut l: Vec<String> = d
                .removed
                .iter()
                .take(6)
                .map(|p| format!("{} REMOVED", show(p)))
                .collect();
            l.extend(
                d.changed
                    .iter()
                    .take(6)
                    .map(|(p, why)| format!("{} {why}", show(p))),
            );
            self.fail(name, label, format!("inputs changed: {}", l.join(", ")));
        }
    }

    fn env(&self, home: &Path, tmp: &Path) -> Vec<(String, OsString)> {
        vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), home.into()),
            ("XDG_DATA_HOME".into(), home.join(".local/share").into()),
            ("XDG_CACHE_HOME".into(), home.join(".cache").into()),
            ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
            ("CODEX_HOME".into(), home.join(".codex").into()),
            ("CLAUDE_CONFIG_DIR".into(), home.join(".claude").into()),
            ("TMPDIR".into(), tmp.into()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }

    fn standard_runs(&self, c: &Case) -> Vec<Run> {
        if !c.standard {
            return vec![];
        }
        let sid = c.session.clone();
        let s = sid.clone().unwrap_or_else(|| "ses_no_such_session".into());
        let missing = sid.is_none().then_some(2);
        let mk = |label: &str, head: &[&str], expect: Option<i32>, names: Vec<String>| {
            let mut args: Vec<OsString> = head.iter().map(OsString::from).collect();
            args.extend(c.inputs.iter().cloned());
            args.extend(c.flags.iter().cloned());
            Run {
                label: label.into(),
                args,
                cwd: None,
                expect,
                names,
                out_allowed: None,
            }
        };
        let bp = c.bad_path.clone();
        let mut check_names = c.bad_path.clone();
        check_names.extend(c.bad_item.iter().cloned());
        let e = c.expect;
        vec![
            mk("list", &["list"], e.list, bp.clone()),
            mk(
                "list-json",
                &["list", "--format", "json"],
                e.list,
                bp.clone(),
            ),
            mk("check", &["check"], e.check, check_names.clone()),
            mk(
                "check-json",
                &["check", "--format", "json"],
                e.check,
                check_names,
            ),
            mk(
                "inspect",
                &["inspect", "--session", &s, "--top", "3"],
                e.inspect.or(missing),
                vec![],
            ),
            mk(
                "inspect-json",
                &["inspect", "--format", "json", "--session", &s],
                e.inspect.or(missing),
                vec![],
            ),
            mk(
                "repair-dry",
                &["repair", "--dry-run", "--out", "@OUT"],
                e.repair,
                bp.clone(),
            ),
            mk(
                "repair-json",
                &["repair", "--format", "json", "--out", "@OUT"],
                e.repair,
                bp,
            ),
            mk(
                "compact-dry",
                &["compact", "--dry-run", "--session", &s, "--out", "@OUT"],
                e.compact.or(missing),
                vec![],
            ),
            mk(
                "compact-json",
                &[
                    "compact",
                    "--format",
                    "json",
                    "--session",
                    &s,
                    "--out",
                    "@OUT",
                ],
                e.compact.or(missing),
                vec![],
            ),
        ]
    }

    fn judge(&self, c: &Case, r: &Run, label: &str, o: &Outcome, out: &Path, bound: Duration) {
        let name = &c.name;
        if let Some(e) = &o.spawn_error {
            self.fail(name, label, format!("harness: {e}"));
            self.count(|c| c.other += 1);
            return;
        }
        if o.timed_out {
            self.count(|c| c.hangs += 1);
            let note = if bound < c.timeout {
                format!(
                    " (shortened bound after an earlier hang in this case; bound {:?})",
                    c.timeout
                )
            } else {
                String::new()
            };
            self.fail(name, label, format!("{}{note}", o.how()));
            return;
        }
        let rss_mib = o.maxrss_kib / 1024;
        if o.crashed() {
            self.count(|c| c.panics += 1);
            let mem = if o.stderr_str().contains("memory allocation of") {
                " (allocation failed under the address-space limit)"
            } else {
                ""
            };
            self.fail(name, label, format!("CRASH {}{mem}: {}", o.how(), gist(o)));
            return;
        }
        let code = o.code.unwrap_or(-1);
        if !(0..=2).contains(&code) {
            self.count(|c| c.exit_codes += 1);
            self.fail(
                name,
                label,
                format!("exit {code} not in 0,1,2: {}", gist(o)),
            );
        } else if let Some(want) = r.expect {
            if code != want {
                self.count(|c| c.exit_codes += 1);
                self.fail(
                    name,
                    label,
                    format!("exit {code}, expected {want}: {}", gist(o)),
                );
            }
        }
        if rss_mib > c.mem_mib {
            self.count(|c| c.memory += 1);
            self.fail(
                name,
                label,
                format!("peak RSS {rss_mib} MiB over the bound {} MiB", c.mem_mib),
            );
        }
        let all = format!("{}\n{}", o.stdout_str(), o.stderr_str());
        for n in &r.names {
            if !all.contains(n.as_str()) {
                self.count(|c| c.not_named += 1);
                self.fail(
                    name,
                    label,
                    format!(
                        "output does not name `{n}` (exit {code}; stderr: {})",
                        gist(o)
                    ),
                );
            }
        }
        if label.ends_with("-json") && (code == 0 || code == 1) {
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&o.stdout) {
                self.count(|c| c.other += 1);
                self.fail(name, label, format!("stdout is not one JSON document: {e}"));
            }
        }
        // A pinned exit code that was missed is reported already.
        let missed = r.expect.is_some_and(|w| w != code);
        for (l, chk) in &c.checks {
            if *l == label && !missed {
                if let Err(e) = chk(o, out) {
                    self.count(|c| c.other += 1);
                    let e = if code == 2 {
                        format!("exit 2 ({}); {e}", gist(o))
                    } else {
                        e
                    };
                    self.fail(name, label, e);
                }
            }
        }
    }

    fn special(&self, c: &Case, sp: &Special, rdir: &Path, home: &Path, tmpd: &Path) {
        let env = self.env(home, tmpd);
        let spec = |args: Vec<OsString>, tag: &str| Spec {
            args,
            cwd: rdir.to_path_buf(),
            env: env.clone(),
            timeout: Duration::from_secs(30),
            address_space: 2048 << 20,
            stdout: rdir.join(format!("{tag}.out")),
            stderr: rdir.join(format!("{tag}.err")),
        };
        match sp {
            Special::ConcurrentRepair { a, b, rounds } => {
                for round in 0..*rounds {
                    let out = rdir.join(format!("conc-out-{round}"));
                    let args = |src: &Path| -> Vec<OsString> {
                        vec![
                            "repair".into(),
                            "--format".into(),
                            "json".into(),
                            src.into(),
                            "--out".into(),
                            out.clone().into(),
                        ]
                    };
                    let ra = runner::spawn(&self.launcher, &spec(args(&a.0), "ca"));
                    let rb = runner::spawn(&self.launcher, &spec(args(&b.0), "cb"));
                    let oa = ra.wait();
                    let ob = rb.wait();
                    self.count(|c| c.runs += 2);
                    let label = format!("concurrent repair #{round}");
                    let mut bad = false;
                    for (o, who) in [(&oa, "first"), (&ob, "second")] {
                        if o.timed_out || o.crashed() || o.spawn_error.is_some() {
                            self.count(|c| {
                                if o.timed_out {
                                    c.hangs += 1
                                } else {
                                    c.panics += 1
                                }
                            });
                            self.fail(&c.name, &label, format!("{who}: {} {}", o.how(), gist(o)));
                            bad = true;
                        }
                    }
                    if bad {
                        continue;
                    }
                    let landed = cases::session_ids_in_db(&out.join("opencode.db"));
                    let (ca, cb) = (oa.code.unwrap_or(-1), ob.code.unwrap_or(-1));
                    let what = match (ca, cb) {
                        (0, 0) => Some(format!(
                            "both runs exited 0 into one --out without --force: one copy silently \
                             replaced the other (landed: {landed:?})"
                        )),
                        (0, 2) if landed != vec![a.1.clone()] => Some(format!(
                            "the run that exited 0 does not own the copy (landed: {landed:?})"
                        )),
                        (2, 0) if landed != vec![b.1.clone()] => Some(format!(
                            "the run that exited 0 does not own the copy (landed: {landed:?})"
                        )),
                        (0, 2) | (2, 0) => None,
                        _ => Some(format!(
                            "exit codes {ca} and {cb}: expected one 0 and one 2 ({} | {})",
                            gist(&oa),
                            gist(&ob)
                        )),
                    };
                    if let Some(w) = what {
                        self.count(|c| c.exit_codes += 1);
                        self.fail(&c.name, &label, w);
                    }
                }
            }
            Special::RepairTwice { source } => {
                let out = rdir.join("twice-out");
                let args: Vec<OsString> = vec![
                    "repair".into(),
                    source.into(),
                    "--out".into(),
                    out.clone().into(),
                ];
                let o1 = runner::run(&self.launcher, &spec(args.clone(), "t1"));
                let snap1 = snap::snapshot(&out, true);
                let o2 = runner::run(&self.launcher, &spec(args, "t2"));
                self.count(|c| c.runs += 2);
                if o1.code != Some(0) {
                    self.fail(&c.name, "repair #1", format!("{}: {}", o1.how(), gist(&o1)));
                    self.count(|c| c.exit_codes += 1);
                }
                if o2.code != Some(2) {
                    self.fail(
                        &c.name,
                        "repair #2 (same --out, no --force)",
                        format!("{}, expected exit 2: {}", o2.how(), gist(&o2)),
                    );
                    self.count(|c| c.exit_codes += 1);
                }
                let d = snap::diff(&snap1, &snap::snapshot(&out, true));
                if !d.is_empty() {
                    self.fail(
                        &c.name,
                        "repair #2 (same --out, no --force)",
                        format!("the first copy was changed: {d:?}"),
                    );
                    self.count(|c| c.other += 1);
                }
            }
        }
    }
}
