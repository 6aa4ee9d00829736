//! Helpers shared by the integration tests.
#![allow(dead_code)]

use assert_cmd::Command;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repo's `fixtures/` dir.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// `fixtures/opencode/<name>`.
pub fn oc(name: &str) -> PathBuf {
    fixtures().join("opencode").join(name)
}

/// A private home for the binary under test: `HOME`, `XDG_*`, `CODEX_HOME`,
/// `CLAUDE_CONFIG_DIR` and `HERMES_HOME` point inside it, so nothing of the user's machine
/// (a `~/.cache/opencode/models.json`, real sessions) leaks into a test.
pub fn test_home() -> &'static Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().expect("temp home"))
        .path()
}

/// Sets the hermetic environment of [`test_home`] on a command.
pub fn hermetic(c: &mut std::process::Command) {
    let h = test_home();
    c.env("HOME", h)
        .env("XDG_DATA_HOME", h.join("data"))
        .env("XDG_CACHE_HOME", h.join("cache"))
        .env("XDG_CONFIG_HOME", h.join("config"))
        .env("XDG_STATE_HOME", h.join("state"))
        .env("CODEX_HOME", h.join("codex"))
        .env("CLAUDE_CONFIG_DIR", h.join("claude"))
        .env("HERMES_HOME", h.join("hermes"))
        .env_remove("NO_COLOR");
}

/// The built binary, run from the repo root in the hermetic environment.
pub fn bin() -> Command {
    let mut std_cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("session-doctor"));
    std_cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    hermetic(&mut std_cmd);
    Command::from_std(std_cmd)
}

/// Every file and folder under `root` (relative path -> sha256 of the bytes,
/// or "dir"; a symbolic link: its target, and the sha256 of what it leads to
/// when that is a file that can be read), to compare before and after a
/// command.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.expect("walk");
        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
        if e.file_type().is_dir() {
            m.insert(rel, "dir".to_string());
        } else if e.file_type().is_symlink() {
            let target = std::fs::read_link(e.path()).expect("read link");
            let through = std::fs::read(e.path())
                .map(|b| format!(" {:x}", Sha256::digest(&b)))
                .unwrap_or_default();
            m.insert(rel, format!("link to {}{through}", target.display()));
        } else {
            let bytes = std::fs::read(e.path()).expect("read");
            m.insert(rel, format!("{:x}", Sha256::digest(&bytes)));
        }
    }
    m
}

/// Copies a folder recursively (fixtures are never modified in place by tests
/// that need to change them).
pub fn copy_dir(src: &Path, dst: &Path) {
    for e in walkdir::WalkDir::new(src) {
        let e = e.unwrap();
        let t = dst.join(e.path().strip_prefix(src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&t).unwrap();
        } else {
            std::fs::copy(e.path(), &t).unwrap();
            let mut perm = std::fs::metadata(&t).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&t, perm).unwrap();
        }
    }
}

/// Runs the binary with `args` and parses stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = bin().args(args).output().expect("runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Findings of the only session in a `check --format json` document.
pub fn findings(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["findings"].as_array().unwrap().clone())
        .collect()
}

/// Findings with `code`.
pub fn with_code(doc: &serde_json::Value, code: &str) -> Vec<serde_json::Value> {
    findings(doc)
        .into_iter()
        .filter(|f| f["code"] == code)
        .collect()
}

/// Runs the binary with `args` (any exit code): the exit code, stdout
/// parsed as JSON (`null` when it is not) and stderr.
pub fn run_any(args: &[String]) -> (Option<i32>, serde_json::Value, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What running every printed remedy of a `check` gave.
pub struct Remedies {
    /// Commands run.
    pub tried: usize,
    /// Codes whose printed command ran and fixed them.
    pub fixed: std::collections::BTreeSet<String>,
    pub failures: Vec<String>,
}

/// Runs `check --format json <flags> <inputs>`, then every distinct
/// `remedy_command` it printed, as printed, and `check <flags>` on the
/// command's `--out`: the session is there (gone only when one of its
/// findings is `empty-continuation`, whose repair drops the empty session),
/// that check reads everything (exit 0 or 1, never 2), and the finding's
/// code is no longer reported at warning or above for that session (for
/// any session of the copy when the session was dropped: the chain it
/// continued is what is judged then). The inputs are
/// hashed before and after (every file and folder, but the
/// `*.session-doctor` folders the commands write beside a store): a
/// change is a failure.
pub fn run_printed_remedies(flags: &[&str], inputs: &[&Path]) -> Remedies {
    let s = |p: &Path| p.display().to_string();
    let run = run_any;
    // The commands write `<copy base>.session-doctor/…`, inside an input
    // that holds its stores in subfolders: left out of the comparison.
    let hashed = |p: &Path| {
        let mut m = snapshot(p);
        m.retain(|k, _| !k.contains(".session-doctor"));
        m
    };
    let before: Vec<_> = inputs.iter().map(|p| hashed(p)).collect();
    let mut args: Vec<String> = vec!["check".into(), "--format".into(), "json".into()];
    args.extend(flags.iter().map(|f| f.to_string()));
    args.extend(inputs.iter().map(|p| s(p)));
    let (_, doc, err) = run(&args);
    assert!(doc["sessions"].as_array().is_some(), "{err}");
    let mut r = Remedies {
        tried: 0,
        fixed: Default::default(),
        failures: Vec::new(),
    };
    // Each command once, with every finding that printed it.
    let mut by_cmd: std::collections::BTreeMap<
        String,
        (serde_json::Value, Vec<serde_json::Value>),
    > = Default::default();
    for sess in doc["sessions"].as_array().unwrap() {
        for f in sess["findings"].as_array().unwrap() {
            if let Some(cmd) = f["remedy_command"].as_str() {
                by_cmd
                    .entry(cmd.to_string())
                    .or_insert_with(|| (sess["id"].clone(), Vec::new()))
                    .1
                    .push(f.clone());
            }
        }
    }
    for (cmd, (sid, fs)) in &by_cmd {
        r.tried += 1;
        let words = shell_words::split(cmd).unwrap();
        assert_eq!(words[0], "session-doctor", "{cmd}");
        let (code, _, err) = run(&words[1..]);
        if code != Some(0) {
            r.failures.push(format!("{cmd}: exit {code:?}: {err}"));
            continue;
        }
        let out = words
            .iter()
            .position(|w| w == "--out")
            .map(|i| PathBuf::from(&words[i + 1]))
            .unwrap();
        let mut again: Vec<String> = vec!["check".into(), "--format".into(), "json".into()];
        again.extend(flags.iter().map(|f| f.to_string()));
        again.push(s(&out));
        let (code, after, err) = run(&again);
        let Some(sessions) = after["sessions"].as_array() else {
            r.failures
                .push(format!("{cmd}: check on the copy printed no JSON: {err}"));
            continue;
        };
        if code == Some(2) {
            r.failures
                .push(format!("{cmd}: check on the copy could not read it: {err}"));
            continue;
        }
        let present = sessions.iter().any(|x| x["id"] == *sid);
        let drops = fs.iter().any(|f| f["code"] == "empty-continuation");
        if present == drops {
            r.failures.push(format!(
                "{cmd}: session {sid} is {} the copy",
                if present { "still in" } else { "missing from" }
            ));
            continue;
        }
        for f in fs {
            let still: Vec<&serde_json::Value> = sessions
                .iter()
                .filter(|x| drops || x["id"] == *sid)
                .flat_map(|x| x["findings"].as_array().unwrap())
                .filter(|g| g["code"] == f["code"] && g["severity"] != "info")
                .collect();
            if still.is_empty() {
                r.fixed.insert(f["code"].as_str().unwrap().to_string());
            } else {
                r.failures.push(format!(
                    "{cmd}: {} still reported on the copy: {}",
                    f["code"], still[0]["detail"]
                ));
            }
        }
    }
    for (p, b) in inputs.iter().zip(before) {
        if hashed(p) != b {
            r.failures.push(format!("{} changed", p.display()));
        }
    }
    r
}
