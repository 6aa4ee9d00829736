//! Issue 10 item 7 (second half) and item 8: `--ignore CODE` and the config
//! file `session-doctor.toml` (found in the current directory, then under
//! $XDG_CONFIG_HOME or ~/.config; `--config`, `--no-config`; flags win).

mod common;
use common::*;
use predicates::str::contains;
use std::path::{Path, PathBuf};

/// The shipped fixture with one `stale-parent` error and nothing else.
fn stale() -> PathBuf {
    oc("stale-parent")
}

/// The shipped fixture with warnings only (`orphan-in-context`,
/// `media-in-history`): exit 0 by default, 1 with `fail_on = "warning"`.
fn image() -> PathBuf {
    oc("image")
}

/// A folder holding `session-doctor.toml` with `text`.
fn dir_with_config(text: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("session-doctor.toml"), text).unwrap();
    d
}

/// `check --format json PATH extra...` run in `cwd`: (exit code, document, stderr).
fn check_in(cwd: &Path, path: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let out = bin()
        .current_dir(cwd)
        .args(["check", "--format", "json"])
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap(), doc, err)
}

fn codes(doc: &serde_json::Value) -> Vec<String> {
    findings(doc)
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ignored_code_is_gone_from_check_and_list_and_the_exit_code_follows() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, doc, err) = check_in(here, &stale(), &[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(codes(&doc), ["stale-parent"]);
    let (code, doc, err) = check_in(here, &stale(), &["--ignore", "stale-parent"]);
    assert_eq!(code, 0, "{err}");
    assert!(codes(&doc).is_empty(), "{doc:#}");
    // Warnings: --fail-on warning fails on either code; both ignored, it passes.
    let (code, _, _) = check_in(here, &image(), &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    let (code, doc, _) = check_in(
        here,
        &image(),
        &["--fail-on", "warning", "--ignore", "media-in-history"],
    );
    assert_eq!((code, codes(&doc)), (1, vec!["orphan-in-context".into()]));
    let (code, doc, _) = check_in(
        here,
        &image(),
        &[
            "--fail-on",
            "warning",
            "--ignore",
            "media-in-history",
            "--ignore",
            "orphan-in-context",
        ],
    );
    assert_eq!((code, codes(&doc)), (0, vec![]));
    // list counts the same set.
    let count = |extra: &[&str]| {
        let mut args = vec!["list", "--format", "json"];
        args.extend_from_slice(extra);
        let p = stale();
        args.push(p.to_str().unwrap());
        json(&args)["sessions"][0]["findings"]["error"].clone()
    };
    assert_eq!(count(&[]), 1);
    assert_eq!(count(&["--ignore", "stale-parent"]), 0);
}

#[test]
fn an_unknown_code_is_a_usage_error_listing_the_valid_ones() {
    for cmd in ["list", "check", "compact"] {
        let mut c = bin();
        c.args([cmd, "--ignore", "stale-parents"]);
        if cmd == "compact" {
            c.args(["--out", "/nonexistent/out"]);
        }
        c.arg(stale())
            .assert()
            .code(2)
            .stderr(contains("stale-parents"))
            .stderr(contains("stale-parent,"))
            .stderr(contains("media-in-history"));
    }
}

#[test]
fn an_ignored_code_is_no_goal_of_compact_and_rides_along_in_remedies() {
    // image's only finding compact fixes is media-in-history: ignored, a
    // batch compact finds nothing to do and writes nothing.
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    bin()
        .args(["compact", "--ignore", "media-in-history", "--out"])
        .arg(&out)
        .arg(image())
        .assert()
        .success()
        .stderr(contains("no session has a finding compact fixes"));
    assert!(!out.exists());
    bin()
        .args(["compact", "--format", "json", "--out"])
        .arg(&out)
        .arg(image())
        .assert()
        .success();
    assert!(out.exists(), "without --ignore the media are stripped");
    // A remedy command plans what the check judged: it carries the codes.
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--ignore",
        "overflow-error",
        "fixtures/opencode/wedged-413",
    ]);
    assert!(with_code(&doc, "overflow-error").is_empty());
    let f = with_code(&doc, "compaction-failed");
    assert!(!f.is_empty(), "{doc:#}");
    let cmd = f[0]["remedy_command"].as_str().unwrap_or_default();
    assert!(cmd.contains("--ignore overflow-error"), "{f:#?}");
}

#[test]
fn the_config_file_in_the_current_directory_is_applied() {
    let d = dir_with_config("# CI\nignore = [\"stale-parent\"]\n");
    let (code, doc, err) = check_in(d.path(), &stale(), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(codes(&doc).is_empty(), "{doc:#}");
    let d = dir_with_config("fail_on = \"warning\"\n");
    assert_eq!(check_in(d.path(), &image(), &[]).0, 1);
    // Budget keys reach the size rules and the reports.
    let d = dir_with_config("context = 100000\nmax_output = 8000\nmax_request_bytes = 100\n");
    let (_, doc, err) = check_in(d.path(), &image(), &[]);
    let s = &doc["sessions"][0];
    assert_eq!(s["budget"]["limits"]["context"], 100000, "{doc:#} {err}");
    assert_eq!(
        with_code(&doc, "payload-too-large")[0]["max_request_bytes"],
        100
    );
}

#[test]
fn flags_override_the_file() {
    let d = dir_with_config("fail_on = \"warning\"\nmax_request_bytes = 100\n");
    let (code, doc, _) = check_in(d.path(), &image(), &[]);
    assert_eq!(code, 1);
    assert!(!with_code(&doc, "payload-too-large").is_empty());
    let (code, doc, _) = check_in(
        d.path(),
        &image(),
        &["--fail-on", "error", "--max-request-bytes", "100000000"],
    );
    assert_eq!(code, 0);
    assert!(with_code(&doc, "payload-too-large").is_empty(), "{doc:#}");
    // --ignore adds to the file's list.
    let d = dir_with_config("fail_on = \"warning\"\nignore = [\"media-in-history\"]\n");
    assert_eq!(check_in(d.path(), &image(), &[]).0, 1);
    assert_eq!(
        check_in(d.path(), &image(), &["--ignore", "orphan-in-context"]).0,
        0
    );
    // A --model on the command line outranks the file's explicit limits.
    let d = dir_with_config("context = 100000\nmax_output = 8000\n");
    let (_, doc, _) = check_in(
        d.path(),
        &image(),
        &["--model", "anthropic/claude-sonnet-4"],
    );
    let limits = &doc["sessions"][0]["budget"]["limits"];
    assert_eq!(limits["context"], 200000, "{doc:#}");
}

#[test]
fn unknown_keys_and_bad_values_name_the_file_line_and_key() {
    let d = dir_with_config("ignore = []\n\nmax-request-bytes = 1000\n");
    let (code, _, err) = check_in(d.path(), &image(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("session-doctor.toml, line 3"), "{err}");
    assert!(err.contains("key `max-request-bytes`"), "{err}");
    assert!(err.contains("unknown field"), "{err}");
    let d = dir_with_config("headroom = 2\n");
    let (code, _, err) = check_in(d.path(), &image(), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("line 1") && err.contains("key `headroom`"),
        "{err}"
    );
    let d = dir_with_config("ignore = [\n  \"stale-parent\",\n  \"stale-parents\",\n]\n");
    let (code, _, err) = check_in(d.path(), &image(), &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("line 3") && err.contains("`stale-parents`"),
        "{err}"
    );
    assert!(err.contains("media-in-history"), "the valid codes: {err}");
    // Commands that take no config never read it.
    bin()
        .current_dir(d.path())
        .args(["inspect", "--format", "json"])
        .arg(image())
        .assert()
        .success();
}

#[test]
fn no_config_reads_none_and_config_names_one() {
    let d = dir_with_config("ignore = [\"stale-parent\"]\n");
    let (code, doc, _) = check_in(d.path(), &stale(), &["--no-config"]);
    assert_eq!((code, codes(&doc)), (1, vec!["stale-parent".into()]));
    // --config names a file anywhere; it replaces the lookup.
    let other = dir_with_config("fail_on = \"never\"\n");
    let named = other.path().join("session-doctor.toml");
    let (code, doc, _) = check_in(d.path(), &stale(), &["--config", named.to_str().unwrap()]);
    assert_eq!((code, codes(&doc)), (0, vec!["stale-parent".into()]));
    let missing = other.path().join("nope.toml");
    let (code, _, err) = check_in(d.path(), &stale(), &["--config", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("nope.toml"), "{err}");
    bin()
        .args(["check", "--no-config", "--config", "x.toml"])
        .arg(stale())
        .assert()
        .code(2);
}

#[test]
fn the_user_config_is_found_under_xdg_config_home_then_home() {
    let home = tempfile::tempdir().unwrap();
    let xdg = home.path().join("xdg");
    let write = |dir: &Path, text: &str| {
        std::fs::create_dir_all(dir.join("session-doctor")).unwrap();
        std::fs::write(dir.join("session-doctor").join("config.toml"), text).unwrap();
    };
    write(&xdg, "ignore = [\"stale-parent\"]\n");
    write(&home.path().join(".config"), "fail_on = \"never\"\n");
    let run = |cwd: &Path, xdg_set: bool| {
        let mut c = bin();
        c.current_dir(cwd).env("HOME", home.path());
        if xdg_set {
            c.env("XDG_CONFIG_HOME", &xdg);
        } else {
            c.env_remove("XDG_CONFIG_HOME");
        }
        let out = c
            .args(["check", "--format", "json"])
            .arg(stale())
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code().unwrap(), codes(&doc))
    };
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(run(empty.path(), true), (0, vec![]), "XDG_CONFIG_HOME's");
    assert_eq!(
        run(empty.path(), false),
        (0, vec!["stale-parent".into()]),
        "~/.config's"
    );
    // The current directory's file comes first.
    let cwd = dir_with_config("fail_on = \"error\"\n");
    assert_eq!(run(cwd.path(), true), (1, vec!["stale-parent".into()]));
}

#[test]
fn the_shipped_example_config_is_valid_and_names_every_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = root.join("session-doctor.example.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    // Every key, commented out or not, is documented in the README.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("\n## Configuration\n")
        .nth(1)
        .expect("a Configuration section")
        .split("\n## ")
        .next()
        .unwrap();
    for key in [
        "ignore",
        "fail_on",
        "context",
        "max_output",
        "input_limit",
        "model",
        "models_json",
        "max_request_bytes",
        "headroom",
    ] {
        assert!(text.contains(&format!("{key} =")), "example lacks {key}");
        assert!(section.contains(&format!("`{key}`")), "README lacks {key}");
    }
    // It loads as is (its active keys are valid).
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(&example, d.path().join("session-doctor.toml")).unwrap();
    let (code, _, err) = check_in(d.path(), &image(), &[]);
    assert!(code == 0 || code == 1, "{err}");
}

/// A relative `--models-json` (or a config file's `models_json` read
/// through a relative `--config`) was carried into the printed remedy
/// command as given: run from any other folder, the command could not find
/// the file and failed. The command now names it as an absolute path (the
/// current folder of the check prepended), and runs as printed from
/// anywhere.
#[test]
fn a_relative_models_json_is_absolute_in_the_printed_remedy_command() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().join("w");
    copy_dir(&oc("prune"), &w.join("prune"));
    std::fs::write(
        w.join("models.json"),
        r#"{"stub":{"id":"stub","models":{"stub-small":{"id":"stub-small","limit":{"context":30000,"output":4000}}}}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(w.join("cfg")).unwrap();
    std::fs::write(w.join("cfg/sd.toml"), "models_json = \"../models.json\"\n").unwrap();
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let before = snapshot(&w.join("prune"));
    for extra in [
        ["--no-config", "--models-json", "models.json"].as_slice(),
        ["--config", "cfg/sd.toml"].as_slice(),
    ] {
        let mut args = vec!["--model", "stub/stub-small"];
        args.extend_from_slice(extra);
        let (_, doc, err) = check_in(&w, Path::new("prune"), &args);
        let cmd = findings(&doc)
            .iter()
            .find_map(|f| f["remedy_command"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("{args:?}: no remedy command: {doc:#} {err}"));
        let words = shell_words::split(&cmd).unwrap();
        let at = words.iter().position(|a| a == "--models-json").unwrap();
        let named = Path::new(&words[at + 1]);
        assert!(named.is_absolute(), "{cmd}");
        assert!(named.is_file(), "{cmd}");
        // As printed, from another folder (the copy of the previous run
        // removed first: both print the same --out).
        let out = &words[words.iter().position(|a| a == "--out").unwrap() + 1];
        let _ = std::fs::remove_dir_all(out);
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("session-doctor"));
        hermetic(&mut c);
        let run = c
            .current_dir(&elsewhere)
            .args(&words[1..])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    assert_eq!(snapshot(&w.join("prune")), before);
}
