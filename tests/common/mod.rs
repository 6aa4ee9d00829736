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
/// or "dir"), to compare before and after a command.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.expect("walk");
        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
        if e.file_type().is_dir() {
            m.insert(rel, "dir".to_string());
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
