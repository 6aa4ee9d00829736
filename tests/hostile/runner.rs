//! Runs the binary under a time bound and a memory bound: its own process
//! group, an address-space rlimit as a safety net, peak RSS from `wait4`, and
//! (when the test runs as root) as the unprivileged user 65534 via `setpriv`.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The uid/gid the binary runs as when the test runs as root.
pub const NOBODY: u32 = 65534;

/// How to start the binary.
#[derive(Clone, Debug)]
pub struct Launcher {
    pub bin: PathBuf,
    /// `Some(setpriv)` when the test runs as root and `setpriv` exists.
    pub setpriv: Option<PathBuf>,
}

impl Launcher {
    pub fn new(bin: PathBuf) -> Launcher {
        let root = unsafe { libc::geteuid() } == 0;
        let setpriv = if root {
            ["/usr/bin/setpriv", "/bin/setpriv", "/usr/sbin/setpriv"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        } else {
            None
        };
        Launcher { bin, setpriv }
    }

    /// Whether the binary runs as an unprivileged user (so chmod 000 means
    /// unreadable to it).
    pub fn unprivileged(&self) -> bool {
        self.setpriv.is_some() || unsafe { libc::geteuid() } != 0
    }

    /// The uid the corpus must be owned by (None: leave ownership alone).
    pub fn chown_to(&self) -> Option<u32> {
        self.setpriv.as_ref().map(|_| NOBODY)
    }
}

/// One process to run.
#[derive(Clone, Debug)]
pub struct Spec {
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(String, OsString)>,
    pub timeout: Duration,
    /// RLIMIT_AS in bytes (a safety net; the bound asserted is peak RSS).
    pub address_space: u64,
    /// Where stdout and stderr go (files; read back after the run).
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// What a run did.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub maxrss_kib: u64,
    pub elapsed: Duration,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The process could not be started at all (a harness error).
    pub spawn_error: Option<String>,
}

impl Outcome {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    /// A panic, or death by a signal we did not send.
    pub fn crashed(&self) -> bool {
        !self.timed_out
            && (self.code == Some(101)
                || self.signal.is_some()
                || self.stderr_str().contains("panicked at"))
    }
    /// One line saying how it ended.
    pub fn how(&self) -> String {
        if self.timed_out {
            return format!("hang: killed after {:.1}s", self.elapsed.as_secs_f64());
        }
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit {c}"),
            (_, Some(s)) => format!("killed by signal {s}"),
            _ => "unknown".into(),
        }
    }
}

/// A started process.
pub struct Running {
    pid: libc::pid_t,
    started: Instant,
    spec: Spec,
    spawn_error: Option<String>,
}

pub fn spawn(l: &Launcher, spec: &Spec) -> Running {
    let mut cmd = match &l.setpriv {
        Some(sp) => {
            let mut c = Command::new(sp);
            c.arg(format!("--reuid={NOBODY}"))
                .arg(format!("--regid={NOBODY}"))
                .arg("--clear-groups")
                .arg(&l.bin);
            c
        }
        None => Command::new(&l.bin),
    };
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    let out = File::create(&spec.stdout);
    let err = File::create(&spec.stderr);
    let (out, err) = match (out, err) {
        (Ok(o), Ok(e)) => (o, e),
        (o, e) => {
            return Running {
                pid: -1,
                started: Instant::now(),
                spec: spec.clone(),
                spawn_error: Some(format!(
                    "cannot create output files: {:?} {:?}",
                    o.err(),
                    e.err()
                )),
            }
        }
    };
    cmd.stdout(out).stderr(err).process_group(0);
    let limit = spec.address_space;
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_AS, &r);
            // No core files for the crashes we provoke.
            let z = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &z);
            Ok(())
        });
    }
    let started = Instant::now();
    match cmd.spawn() {
        Ok(child) => {
            let pid = child.id() as libc::pid_t;
            // Reaped with wait4 below; a std Child that is dropped does not wait.
            drop(child);
            Running {
                pid,
                started,
                spec: spec.clone(),
                spawn_error: None,
            }
        }
        Err(e) => Running {
            pid: -1,
            started,
            spec: spec.clone(),
            spawn_error: Some(format!("cannot start {}: {e}", l.bin.display())),
        },
    }
}

impl Running {
    /// Waits until it exits or its timeout passes (then kills its process
    /// group and reports a hang).
    pub fn wait(self) -> Outcome {
        let mut o = Outcome::default();
        if let Some(e) = self.spawn_error {
            o.spawn_error = Some(e);
            return o;
        }
        let mut status: libc::c_int = 0;
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let mut pause = Duration::from_millis(1);
        loop {
            let r = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == self.pid {
                break;
            }
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                o.spawn_error = Some(format!("wait4: {e}"));
                return o;
            }
            if self.started.elapsed() > self.spec.timeout {
                unsafe {
                    libc::kill(-self.pid, libc::SIGKILL);
                    libc::kill(self.pid, libc::SIGKILL);
                }
                loop {
                    let r = unsafe { libc::wait4(self.pid, &mut status, 0, &mut ru) };
                    if r == self.pid
                        || (r < 0
                            && std::io::Error::last_os_error().kind()
                                != std::io::ErrorKind::Interrupted)
                    {
                        break;
                    }
                }
                o.timed_out = true;
                break;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
        o.elapsed = self.started.elapsed();
        if libc::WIFEXITED(status) {
            o.code = Some(libc::WEXITSTATUS(status));
        } else if libc::WIFSIGNALED(status) {
            o.signal = Some(libc::WTERMSIG(status));
        }
        // Linux: ru_maxrss is in KiB.
        o.maxrss_kib = ru.ru_maxrss.max(0) as u64;
        o.stdout = read_capped(&self.spec.stdout);
        o.stderr = read_capped(&self.spec.stderr);
        if o.timed_out {
            // Whatever it left in its process group is gone too.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
        }
        o
    }
}

/// Reads an output file, keeping at most 256 MiB.
fn read_capped(p: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    if let Ok(f) = File::open(p) {
        let _ = f.take(256 << 20).read_to_end(&mut v);
    }
    v
}

/// Runs one process to completion.
pub fn run(l: &Launcher, spec: &Spec) -> Outcome {
    spawn(l, spec).wait()
}
