//! Issue 10 "done when": the README's three quick starts (a wedged session,
//! a folder in one run, CI) run exactly as the README shows them, in a
//! scratch folder holding a copy of `fixtures/`. Each command line carries
//! `# exit N`; a block with no such line fails, so the test cannot pass
//! vacuously when the README changes shape.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fenced block after `<!-- readme-test: NAME -->`: its language and lines.
fn block(name: &str) -> (String, Vec<String>) {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let marker = format!("<!-- readme-test: {name} -->");
    let at = readme
        .find(&marker)
        .unwrap_or_else(|| panic!("README.md has no {marker}"));
    let rest = &readme[at + marker.len()..];
    let open = rest.find("```").expect("a fenced block after the marker");
    let rest = &rest[open + 3..];
    let (lang, body) = rest.split_once('\n').expect("a fence line");
    let end = body.find("\n```").expect("a closing fence");
    (
        lang.trim().to_string(),
        body[..end].lines().map(str::to_string).collect(),
    )
}

/// Commands with their expected exit code: shell lines (`\` continuations
/// joined) or a workflow's `- run:` lines; only lines with `# exit N`.
fn commands(lang: &str, lines: &[String]) -> Vec<(String, i32)> {
    let mut joined: Vec<String> = Vec::new();
    let mut cur = String::new();
    for l in lines {
        let l = if lang == "yaml" {
            match l.trim_start().strip_prefix("- run:") {
                Some(r) => r.trim().to_string(),
                None => continue,
            }
        } else {
            l.clone()
        };
        if let Some(head) = l.strip_suffix('\\') {
            cur.push_str(head);
            continue;
        }
        cur.push_str(&l);
        joined.push(std::mem::take(&mut cur));
    }
    joined
        .into_iter()
        .filter_map(|l| {
            let (cmd, comment) = l.rsplit_once("# exit ")?;
            let code = comment.trim().parse().ok()?;
            Some((cmd.trim().to_string(), code))
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A scratch folder with `fixtures/` copied in, and the binary on PATH.
fn scratch() -> (tempfile::TempDir, String) {
    let t = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &t.path().join("fixtures"),
    );
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_session-doctor"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (t, path)
}

/// Runs every command of block `name` in the scratch folder; returns the
/// outputs (stdout) in order.
fn run_block(name: &str, dir: &Path, path: &str, env: &[(&str, &Path)]) -> Vec<String> {
    let (lang, lines) = block(name);
    let cmds = commands(&lang, &lines);
    assert!(
        !cmds.is_empty(),
        "block {name} has no command with `# exit N`"
    );
    let mut outs = Vec::new();
    for (cmd, want) in cmds {
        assert!(
            cmd.starts_with("session-doctor ") || cmd.starts_with("cargo "),
            "{cmd}"
        );
        if cmd.starts_with("cargo ") {
            continue;
        }
        let mut c = Command::new("sh");
        c.arg("-c").arg(&cmd).current_dir(dir).env("PATH", path);
        c.env("NO_COLOR", "1").env("COLUMNS", "80");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        assert_eq!(
            o.status.code(),
            Some(want),
            "README block {name}: `{cmd}` exited {:?}, the README says {want}\nstdout:\n{stdout}\nstderr:\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
        outs.push(stdout);
    }
    outs
}

#[test]
fn readme_quick_start_1_wedged_session_found_with_defaults_and_fixed_by_its_fix_line() {
    let (t, path) = scratch();
    let outs = run_block("wedged", t.path(), &path, &[]);
    assert_eq!(outs.len(), 3);
    // The README's compact line is the fix `check` prints (its --out is
    // printed absolute: the scratch folder's path).
    let (_, lines) = block("wedged");
    let readme_fix = commands("sh", &lines)[1].0.clone();
    let json = Command::new(env!("CARGO_BIN_EXE_session-doctor"))
        .args(["check", "--format", "json", "fixtures/opencode/wedged-413"])
        .current_dir(t.path())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let root = t.path().canonicalize().unwrap();
    let printed: Vec<String> = doc["sessions"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["remedy_command"].as_str())
        .map(|c| c.replace(&format!("{}/", root.display()), ""))
        .collect();
    assert!(
        printed.contains(&readme_fix),
        "the README's fix line is not what check prints: {readme_fix}\nprinted: {printed:#?}"
    );
    assert!(
        outs[0].contains("a limit below that wedges it"),
        "{}",
        outs[0]
    );
    assert!(outs[1].contains("wrote "), "{}", outs[1]);
}

#[test]
fn readme_quick_start_2_a_folder_repaired_and_compacted_then_checked_clean() {
    let (t, path) = scratch();
    let outs = run_block("batch", t.path(), &path, &[]);
    assert_eq!(outs.len(), 4);
    assert!(t.path().join("sd-fixed").is_dir());
    assert!(t.path().join("sd-small").is_dir());
    assert!(outs[3].contains("sessions checked"), "{}", outs[3]);
}

#[test]
fn readme_quick_start_3_ci_workflow_formats() {
    let (t, path) = scratch();
    let summary = t.path().join("summary.md");
    std::fs::write(&summary, "").unwrap();
    let outs = run_block(
        "ci",
        t.path(),
        &path,
        &[("GITHUB_STEP_SUMMARY", summary.as_path())],
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("## session-doctor check"), "{md}");
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("session-doctor.sarif")).unwrap())
            .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(!sarif["runs"][0]["results"].as_array().unwrap().is_empty());
    let gh = outs.last().unwrap();
    assert!(!gh.is_empty());
    // One workflow command per finding, then one plain summary line.
    let last = gh.trim_end().lines().last().unwrap();
    assert!(last.starts_with("session-doctor check:"), "{gh}");
    for l in gh
        .lines()
        .filter(|l| !l.starts_with("session-doctor check:"))
    {
        assert!(
            l.starts_with("::error ") || l.starts_with("::warning ") || l.starts_with("::notice "),
            "not a workflow command: {l}"
        );
        assert!(
            !l.contains("[duplicate-id]") && !l.contains("title=duplicate-id"),
            "{l}"
        );
    }
}
