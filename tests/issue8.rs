//! Issue 8: one huge session streams through bounded work. These tests pin
//! the shapes that used to grow with the square of a session's length (the
//! figures themselves are printed by `benches/`, never asserted here).

mod common;
use common::*;
use std::path::Path;

/// A real Claude Code transcript (`multi`, 89 lines) repeated `copies`
/// times into one file, every uuid suffixed per copy so nothing dedupes.
fn long_transcript(dir: &Path, copies: usize) -> (std::path::PathBuf, usize) {
    let src = fixtures().join(
        "claude-code/claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl",
    );
    let text = std::fs::read_to_string(&src).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let project = dir.join("projects/-home-dev-long");
    std::fs::create_dir_all(&project).unwrap();
    let out = project.join("0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl");
    let mut w = String::new();
    let mut messages = 0;
    for k in 0..copies {
        for v in &lines {
            let mut v = v.clone();
            for key in ["uuid", "parentUuid", "logicalParentUuid"] {
                if let Some(serde_json::Value::String(s)) = v.get_mut(key) {
                    s.push_str(&format!("-{k}"));
                }
            }
            if v.get("uuid").is_some() {
                messages += 1;
            }
            w.push_str(&v.to_string());
            w.push('\n');
        }
    }
    std::fs::write(&out, w).unwrap();
    (dir.join("projects"), messages)
}

/// `inspect` of a session of tens of thousands of messages prints every
/// row, as a table and as JSON. The table's column fitting measured every
/// cell again for each cell it cut (a 242k-line Codex rollout did not finish
/// in 8 minutes); JSON built a tree of the whole document first.
#[test]
fn issue8_inspect_of_a_long_session_prints_every_row_as_table_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (projects, messages) = long_transcript(tmp.path(), 250);
    assert!(messages > 10_000, "{messages} messages");
    let p = projects.to_str().unwrap();

    let doc = json(&["inspect", "--top", "5", "--format", "json", p]);
    let s = &doc["sessions"][0];
    let rows = s["messages"].as_array().unwrap();
    assert_eq!(rows.len(), messages);
    assert_eq!(s["top_parts"].as_array().unwrap().len(), 5);
    // Largest first.
    let top: Vec<u64> = s["top_parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["payload_bytes"].as_u64().unwrap())
        .collect();
    assert!(top.windows(2).all(|w| w[0] >= w[1]), "{top:?}");
    // Ids move into the rows in order.
    assert!(rows[0]["id"].as_str().unwrap().ends_with("-0"));
    assert!(rows[messages - 1]["id"].as_str().unwrap().ends_with("-249"));

    let out = bin()
        .args(["inspect", "--top", "5", p])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let last = rows[messages - 1]["id"].as_str().unwrap();
    // The id column may be cut to fit 80 columns: its tail ends the row.
    assert!(
        table
            .lines()
            .filter(|l| l.contains("-249") || l.contains(last))
            .count()
            >= 1,
        "last message row missing"
    );
    assert!(
        table.lines().count() > messages,
        "{} lines",
        table.lines().count()
    );
}

/// The lines of one file are read on every core, block by block; what
/// depends on earlier lines (duplicate ids, unreadable lines, titles) is
/// taken in file order, so `check`, `inspect` and `list` print the same documents
/// for one thread and for several (an unreadable line and a repeated
/// message line sit among thousands of lines).
#[test]
fn issue8_one_file_read_on_every_core_gives_what_one_core_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let (projects, messages) = long_transcript(tmp.path(), 60);
    let file = projects.join("-home-dev-long/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let middle = lines.len() / 2;
    let repeated = lines[middle..]
        .iter()
        .find(|l| l.contains(r#""type":"assistant""#) && l.contains(r#""uuid""#))
        .unwrap()
        .to_string();
    lines.insert(middle, "{\"type\":\"user\", not json");
    lines.insert(middle + 7, &repeated);
    lines.push(r#"{"type":"custom-title","customTitle":"Long one","sessionId":"x"}"#);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let p = projects.to_str().unwrap();
    for cmd in [
        vec!["check", "--format", "json", "--fail-on", "never"],
        vec!["inspect", "--top", "3", "--format", "json"],
        vec!["list", "--format", "json"],
    ] {
        let run = |jobs: &str| {
            let mut args = cmd.clone();
            args.extend(["--jobs", jobs, p]);
            json(&args)
        };
        let one = run("1");
        assert_eq!(run("2"), one, "{cmd:?}");
        assert_eq!(run("4"), one, "{cmd:?}");
        if cmd[0] == "inspect" {
            let s = &one["sessions"][0];
            assert_eq!(s["messages"].as_array().unwrap().len(), messages + 1);
        } else if cmd[0] == "list" {
            assert_eq!(one["sessions"][0]["title"], "Long one");
        } else {
            let codes: Vec<String> = findings(&one)
                .iter()
                .map(|f| f["code"].as_str().unwrap().to_string())
                .collect();
            assert!(codes.iter().any(|c| c == "unreadable"), "{codes:?}");
            assert!(codes.iter().any(|c| c == "duplicate-id"), "{codes:?}");
        }
    }
}

/// Sessions are loaded largest first (so that a run does not end on one
/// core with a big session), but every document lists them in store
/// order, the same for one thread and for several: a long transcript
/// between two short ones, by folder name.
#[test]
fn issue8_sessions_loaded_largest_first_are_listed_in_store_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (projects, _) = long_transcript(tmp.path(), 40);
    let small = fixtures().join(
        "claude-code/claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl",
    );
    for (dir, id) in [
        ("-home-dev-aaa", "11111111-1111-4111-8111-111111111111"),
        ("-home-dev-zzz", "22222222-2222-4222-8222-222222222222"),
    ] {
        std::fs::create_dir_all(projects.join(dir)).unwrap();
        std::fs::copy(&small, projects.join(dir).join(format!("{id}.jsonl"))).unwrap();
    }
    let p = projects.to_str().unwrap();
    for cmd in [
        vec!["list", "--format", "json"],
        vec!["check", "--format", "json", "--fail-on", "never"],
    ] {
        let run = |jobs: &str| {
            let mut args = cmd.clone();
            args.extend(["--jobs", jobs, p]);
            json(&args)
        };
        let one = run("1");
        let ids: Vec<&str> = one["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "11111111-1111-4111-8111-111111111111",
                "0acd6738-1c9b-460c-ba5f-185135e4ad7f",
                "22222222-2222-4222-8222-222222222222"
            ],
            "{cmd:?}"
        );
        assert_eq!(run("2"), one, "{cmd:?}");
    }
}

// ---------------------------------------------------------------------------
// Review of the output guard (stop 38).

/// A file given as input that no format could open was not protected:
/// `repair` reported it, went on with the other inputs, and `--force`
/// replaced it (a copy listed in the out folder's manifest, made unreadable
/// since) and removed its `-wal`, `-shm` and `-journal`.
#[test]
fn issue8_a_file_input_that_fails_to_open_is_never_replaced_nor_its_side_files() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::copy(oc("plain").join("opencode.db"), a.join("opencode.db")).unwrap();
    let out = t.path().join("out");
    bin()
        .arg("repair")
        .arg(a.join("opencode.db"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let copy = out.join("opencode.db");
    assert!(copy.is_file());
    // The copy is now an input that does not open, with side files.
    std::fs::write(&copy, b"garbage, not a database").unwrap();
    for sfx in ["-wal", "-shm", "-journal"] {
        std::fs::write(out.join(format!("opencode.db{sfx}")), sfx).unwrap();
    }
    let before = snapshot(&out);
    let o = bin()
        .arg("repair")
        .arg(&copy)
        .arg(a.join("opencode.db"))
        .arg("--out")
        .arg(&out)
        .arg("--force")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("opencode.db"), "{err}");
    assert!(
        err.contains("source"),
        "the refusal names the source: {err}"
    );
    assert_eq!(
        before,
        snapshot(&out),
        "the unreadable input and its side files are as they were"
    );
}

/// A WAL-mode database with a leftover, non-empty `-journal` and no `-wal`
/// was opened read-only in place, and SQLite created its `-wal` and `-shm`
/// beside the source.
#[test]
fn issue8_a_wal_database_with_a_leftover_journal_gets_no_side_files() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("store");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("opencode.db");
    std::fs::copy(oc("plain").join("opencode.db"), &db).unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let mode: String = c
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
    assert!(!dir.join("opencode.db-wal").exists(), "closed cleanly");
    std::fs::write(dir.join("opencode.db-journal"), vec![0u8; 600]).unwrap();
    let before = snapshot(&dir);
    let doc = json(&["list", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc:#}");
    assert!(
        doc["sessions"][0]["messages"].as_u64().unwrap() > 0,
        "{doc:#}"
    );
    assert_eq!(before, snapshot(&dir), "nothing created beside the source");
}

// ---------------------------------------------------------------------------
// Review of inputs that abort or read without end (stop 38).

/// The loaders reserved room for the lines a file's size suggested, about
/// 150 bytes a line: a 30 MiB transcript of blank lines asked for 6 GB at
/// once and aborted under an address-space limit (`ulimit -v`, as in CI).
#[cfg(unix)]
#[test]
fn issue8_a_file_of_blank_lines_does_not_abort_under_an_address_space_limit() {
    let t = tempfile::tempdir().unwrap();
    let claude = t.path().join("s2.jsonl");
    let first = r#"{"type":"user","uuid":"u1","sessionId":"s2","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}"#;
    let blank = vec![b'\n'; 30 << 20];
    std::fs::write(&claude, [first.as_bytes(), b"\n", &blank].concat()).unwrap();
    let codex = t
        .path()
        .join("rollout-2026-01-01T00-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
    let meta = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.1.0"}}"#;
    std::fs::write(&codex, [meta.as_bytes(), b"\n", &blank].concat()).unwrap();
    let bin_path = assert_cmd::cargo::cargo_bin("session-doctor");
    for f in [&claude, &codex] {
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 3000000 && exec \"$0\" check --no-config --format json --fail-on never \"$1\"")
            .arg(&bin_path)
            .arg(f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{}: {err}", f.display());
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc:#}");
    }
}

/// The config file was read whole whatever it was: `--config /dev/zero`
/// (or a `./session-doctor.toml` linking to it) grew without end, a FIFO
/// waited forever.
#[cfg(unix)]
#[test]
fn issue8_a_config_path_that_is_not_a_small_regular_file_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let big = t.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; 2 << 20]).unwrap();
    let fx = oc("plain");
    for (cfg, expect) in [
        (Path::new("/dev/zero"), "expected a regular file"),
        (
            big.as_path(),
            "more than the 1024 KiB a config file may have",
        ),
    ] {
        let o = bin()
            .arg("check")
            .arg("--config")
            .arg(cfg)
            .arg(&fx)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(expect) && err.contains(&*cfg.to_string_lossy()),
            "{err}"
        );
    }
}

/// Claude Code session of 200 turns after two automatic compactions that
/// made no progress (100,000 tokens each): the cut that breaks the loop must
/// keep the most turns below 95,000 tokens (the trigger times the 5%
/// no-progress ratio).
fn looping_session(dir: &Path) {
    use serde_json::json;
    let sid = "33333333-3333-4333-8333-333333333333";
    let mut lines = Vec::new();
    let mut prev: Option<String> = None;
    let mut n = 0u32;
    let mut add = |mut o: serde_json::Value, parent: Option<Option<String>>| {
        n += 1;
        let uuid = format!("{n:08x}-0000-4000-8000-{n:012x}");
        o["uuid"] = json!(uuid);
        o["parentUuid"] = json!(parent.unwrap_or(prev.clone()));
        o["sessionId"] = json!(sid);
        o["isSidechain"] = json!(false);
        o["timestamp"] = json!("2026-11-22T12:08:13.003Z");
        lines.push(o.to_string());
        prev = Some(uuid);
    };
    let user = |t: &str| json!({"type": "user", "message": {"role": "user", "content": t}});
    let asst = |t: String, k: u32, input: u64| {
        json!({"type": "assistant", "message": {"id": format!("msg_{k}"), "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": t}], "stop_reason": "end_turn",
            "usage": {"input_tokens": input, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
    };
    add(user("hi"), None);
    add(asst("a".into(), 0, 100_000), None);
    // Lines 3 and 5: the boundaries, each logically after the line before.
    for boundary in [3u32, 5] {
        let logical = format!("{0:08x}-0000-4000-8000-{0:012x}", boundary - 1);
        add(
            json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                   "logicalParentUuid": logical,
                   "compactMetadata": {"trigger": "auto", "preTokens": 100_000}}),
            Some(None),
        );
        add(
            json!({"type": "user", "isCompactSummary": true, "message": {"role": "user",
                   "content": "This session is being continued from a previous conversation. summary"}}),
            None,
        );
    }
    for t in 0..200u32 {
        add(user(&format!("q{t}")), None);
        add(asst(format!("r{t} ").repeat(800), t + 1, 10), None);
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{sid}.jsonl")), lines.join("\n") + "\n").unwrap();
}

/// Final figures of a `compact --dry-run` of `dir`: tokens, visible messages, fits.
fn compact_after(dir: &Path, extra: &[&str]) -> (u64, u64, bool) {
    let o = bin()
        .args([
            "compact",
            "--dry-run",
            "--no-config",
            "--format",
            "json",
            "--out",
        ])
        .arg(dir.with_extension("out"))
        .args(extra)
        .arg(dir)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &doc["sessions"][0];
    let after = &s["steps"].as_array().unwrap().last().unwrap()["after"];
    (
        after["tokens_estimated"].as_u64().unwrap(),
        after["visible_messages"].as_u64().unwrap(),
        s["fits"].as_bool().unwrap(),
    )
}

/// Breaking a compaction loop tried one cut per number of kept turns, from
/// the most down, each on a copy of the session: 8,000 turns took 58 s. The
/// search now halves the range; it must still find the most turns that fit.
#[test]
fn issue8_the_cut_that_breaks_a_loop_keeps_the_most_turns_that_fit() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("s");
    looping_session(&dir);
    let (tokens, visible, fits) = compact_after(&dir, &[]);
    assert!(fits && tokens < 95_000, "{tokens} {visible}");
    let kept_turns = visible / 2;
    assert!(
        (2..199).contains(&kept_turns),
        "a cut inside the range: {kept_turns}"
    );
    let k = kept_turns.to_string();
    assert_eq!(
        compact_after(&dir, &["--keep-turns", &k]).0,
        tokens,
        "the same cut as keeping {k} turns"
    );
    let more = (kept_turns + 1).to_string();
    let (over, _, _) = compact_after(&dir, &["--keep-turns", &more]);
    assert!(
        over >= 95_000,
        "one more turn ({more}) would not break the loop: {over}"
    );
}

/// Runs a printed remedy (`session-doctor ...`, shell words) with the built
/// binary from folder `cwd`, hermetic; answers its exit code and stderr.
fn run_printed(cmd: &str, cwd: &Path) -> (i32, String) {
    let words = shell_words::split(cmd).unwrap();
    assert_eq!(words[0], "session-doctor", "{cmd}");
    let out = bin().current_dir(cwd).args(&words[1..]).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Review of the error paths: a file named as an agent names its store
/// (`opencode.db`, `rollout-*.jsonl`, `state.db`) that no format opens was
/// skipped without a word while walking a folder (exit 0). Now the
/// agent-specific names are errors naming the file and what was expected
/// (exit 2 after the good store is listed); `state.db`, a name other
/// programs use too, is a warning.
#[test]
fn issue8_a_file_named_as_an_agent_names_its_store_that_is_not_one_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    for d in ["a", "b", "c", "d"] {
        std::fs::create_dir(r.join(d)).unwrap();
    }
    std::fs::write(r.join("a/state.db"), "").unwrap();
    std::fs::copy(
        fixtures().join("hermes/hermes/basic/state.db"),
        r.join("b/state.db"),
    )
    .unwrap();
    std::fs::copy(oc("plain").join("opencode.db"), r.join("c/opencode.db")).unwrap();
    rusqlite::Connection::open(r.join("c/opencode.db"))
        .unwrap()
        .execute_batch("PRAGMA journal_mode=DELETE; PRAGMA foreign_keys=off; DROP TABLE part;")
        .unwrap();
    // A JSON object of no Codex shape. (A `session_meta` line with no
    // `payload` was one here; since whole_codex-3 it makes a rollout whose
    // line 1 is named unreadable, as a first line that is not JSON does.)
    std::fs::write(
        r.join("d/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"),
        "{\"timestamp\":\"2026-02-23T19:34:26.098Z\",\"kind\":\"session_meta\"}\n",
    )
    .unwrap();
    let before = snapshot(r);
    let out = bin()
        .args(["list", "--format", "json", r.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    let errors = doc["errors"].as_array().unwrap();
    let error_of = |name: &str| {
        errors
            .iter()
            .find(|e| e["path"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no error for {name}: {errors:?}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(error_of("c/opencode.db").contains("without opencode's tables"));
    assert!(error_of("-bda6a9c575ff.jsonl").contains("line 1: not a Codex CLI line"));
    assert_eq!(errors.len(), 2, "{errors:?}");
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["path"].as_str().unwrap().ends_with("a/state.db")
                && w["reason"].as_str().unwrap().contains("an empty file")),
        "{warnings:?}"
    );
    // Given by name, the same empty state.db is an error.
    let out = bin()
        .args(["list", r.join("a/state.db").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "a/state.db: an empty file; expected a SQLite database with hermes-agent's tables"
        ),
        "{err}"
    );
    assert_eq!(snapshot(r), before);
}

/// Review of the error paths: a legacy opencode tree whose `part/` folder
/// cannot be listed (here a file stands where the folder should be) read
/// every session as healthy with no parts. Now each message's part folder
/// that cannot be listed is an `unreadable` finding naming it.
#[test]
fn issue8_a_legacy_part_folder_that_cannot_be_listed_is_an_unreadable_finding() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("l");
    copy_dir(&oc("legacy-1.1.65"), &root);
    std::fs::remove_dir_all(root.join("storage/part")).unwrap();
    std::fs::write(root.join("storage/part"), "x").unwrap();
    let before = snapshot(t.path());
    let doc = json(&["check", "--format", "json", root.to_str().unwrap()]);
    assert!(!doc["sessions"].as_array().unwrap().is_empty());
    let bad = with_code(&doc, "unreadable");
    assert!(!bad.is_empty(), "{doc}");
    assert!(
        bad.iter()
            .all(|f| f.to_string().contains("storage/part/msg_")
                && f.to_string().contains("cannot list the folder")),
        "{bad:?}"
    );
    assert_eq!(snapshot(t.path()), before);
}

/// Review of the error paths: `inspect --session` of a store that could
/// not be read said only "not found". Now it also says what could not be
/// read.
#[test]
fn issue8_inspect_of_a_session_in_a_store_that_cannot_be_read_says_so() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    let bytes = std::fs::read(oc("plain").join("opencode.db")).unwrap();
    std::fs::write(&db, &bytes[..bytes.len() / 2]).unwrap();
    let out = bin()
        .args(["inspect", "--session", "ses_x", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("session ses_x not found"), "{err}");
    assert!(err.contains("1 input could not be read:"), "{err}");
    assert!(err.contains("opencode.db"), "{err}");
}

/// Review of the printed remedies: a store given as a bare file name got a
/// relative `--out` inside the store's own folder (`sessions.session-doctor`),
/// a relative store path made the command work only from where `check` ran,
/// a session id starting with `-` read as a flag, and a config file where
/// the command runs could make it change nothing. Now paths are absolute,
/// such an id is `--session=ID`, and compact commands carry `--no-config`;
/// each printed command is run from another folder and fixes its finding.
#[test]
fn issue8_printed_remedies_work_from_any_folder() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    // A bare file name, from its own folder.
    let sp = root.join("sp");
    std::fs::create_dir(&sp).unwrap();
    std::fs::copy(
        oc("stale-parent").join("opencode.db"),
        sp.join("opencode.db"),
    )
    .unwrap();
    // A Claude Code transcript whose session id starts with `-`.
    let hy = root.join("hy");
    std::fs::create_dir(&hy).unwrap();
    std::fs::copy(
        fixtures().join("claude-code/claude-code-log/edge-fixtures/edge_cases.jsonl"),
        hy.join("-edge.jsonl"),
    )
    .unwrap();
    // A session with historical media, checked with --no-config where a
    // config file ignores that code.
    let im = root.join("im");
    copy_dir(&oc("image"), &im.join("image"));
    std::fs::write(
        im.join("session-doctor.toml"),
        "ignore = [\"media-in-history\"]\n",
    )
    .unwrap();
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let cases: [(&Path, &[&str], &str); 3] = [
        (&sp, &["opencode.db"], "stale-parent"),
        (&root, &["hy"], "dangling-parent"),
        (
            &im,
            &["--no-config", "--fail-on", "warning", "image"],
            "media-in-history",
        ),
    ];
    for (cwd, args, code) in cases {
        let mut a = vec!["check", "--format", "json"];
        a.extend_from_slice(args);
        let out = bin().current_dir(cwd).args(&a).output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let f = with_code(&doc, code);
        assert!(!f.is_empty(), "{code}: {doc}");
        let cmd = f[0]["remedy_command"].as_str().unwrap().to_string();
        let words = shell_words::split(&cmd).unwrap();
        let out_dir = words[words.iter().position(|w| w == "--out").unwrap() + 1].clone();
        assert!(Path::new(&words[2]).is_absolute(), "{cmd}");
        assert!(Path::new(&out_dir).is_absolute(), "{cmd}");
        assert!(
            !Path::new(&out_dir).starts_with(cwd.join(args.last().unwrap())),
            "{cmd}"
        );
        if code == "dangling-parent" {
            assert!(cmd.contains(" --session=-edge "), "{cmd}");
        }
        if code == "media-in-history" {
            assert!(cmd.contains(" --no-config"), "{cmd}");
        }
        let (rc, err) = run_printed(&cmd, &elsewhere);
        assert_eq!(rc, 0, "{cmd}: {err}");
        let again = json(&[
            "check",
            "--no-config",
            "--format",
            "json",
            "--fail-on",
            "never",
            &out_dir,
        ]);
        assert_eq!(again["sessions"].as_array().unwrap().len(), 1, "{again}");
        assert!(
            with_code(&again, code).is_empty(),
            "{code} still in {again}"
        );
    }
    // The bare file's folder holds only what it held.
    let names: Vec<_> = std::fs::read_dir(&sp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["opencode.db"]);
}

/// Review of the error paths: `repair --out F/x` where `F` is a file said
/// "would write" on a real run, blamed `.session-doctor-copies.json`, and
/// printed the error on stdout and stderr. Now `--out` is refused naming
/// the file, and a copy that is not written prints its error once (stderr),
/// its row saying only that it was not written.
#[test]
fn issue8_a_copy_not_written_is_reported_once_and_names_the_real_cause() {
    let t = tempfile::tempdir().unwrap();
    let afile = t.path().join("afile");
    std::fs::write(&afile, "").unwrap();
    let src = oc("stale-parent");
    let out = bin()
        .args([
            "repair",
            "--out",
            afile.join("x").to_str().unwrap(),
            src.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("afile is a regular file, not a folder"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("would write"));

    let o = t.path().join("o");
    bin()
        .args([
            "repair",
            "--out",
            o.to_str().unwrap(),
            src.to_str().unwrap(),
        ])
        .assert()
        .code(0);
    let out = bin()
        .args([
            "repair",
            "--out",
            o.to_str().unwrap(),
            src.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let why = "already exists; pass --force to replace a previous copy";
    assert!(stderr.contains(why), "{stderr}");
    assert!(!stdout.contains(why), "{stdout}");
    assert!(stdout.contains("did not write"), "{stdout}");
    assert!(!stdout.contains("would write"), "{stdout}");
}

/// Review of the error paths: while walking a folder, a link to nothing was
/// a warning (exit 0) but a link to itself an error (exit 2). Both are links
/// that cannot be followed: warnings, naming each.
#[test]
fn issue8_links_that_cannot_be_followed_while_walking_are_warnings() {
    let t = tempfile::tempdir().unwrap();
    let proj = t.path().join("projects/-p");
    std::fs::create_dir_all(&proj).unwrap();
    let src = fixtures().join(
        "claude-code/claude-code-gen/multi/projects/-home-dev-cc-dev-claude-multi-proj/0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl",
    );
    std::fs::copy(
        &src,
        proj.join("0acd6738-1c9b-460c-ba5f-185135e4ad7f.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/nonexistent", proj.join("3.jsonl")).unwrap();
    std::os::unix::fs::symlink("4.jsonl", proj.join("4.jsonl")).unwrap();
    let out = bin()
        .args(["list", "--format", "json", t.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert!(doc["errors"].as_array().unwrap().is_empty(), "{doc}");
    let warned: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["path"].as_str().unwrap())
        .collect();
    assert!(
        warned.iter().any(|p| p.ends_with("3.jsonl"))
            && warned.iter().any(|p| p.ends_with("4.jsonl")),
        "{warned:?}"
    );
}

/// Review of the error paths: a hermes-agent row whose text is not UTF-8
/// was read as healthy (decoded lossily), while hermes, reading rows with
/// Python's sqlite3, cannot decode it and fails to load the session. Now it
/// is an `unreadable` finding naming the row and the column.
#[test]
fn issue8_a_hermes_row_that_is_not_utf8_is_an_unreadable_finding() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("state.db");
    std::fs::copy(fixtures().join("hermes/hermes/basic/state.db"), &db).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "PRAGMA journal_mode=DELETE; UPDATE messages SET content = CAST(x'48656c6cff6f' AS TEXT) WHERE id = 2;",
        )
        .unwrap();
    let doc = json(&["check", "--format", "json", db.to_str().unwrap()]);
    let bad = with_code(&doc, "unreadable");
    assert_eq!(bad.len(), 1, "{doc}");
    let text = bad[0].to_string();
    assert!(
        text.contains("messages row 2") && text.contains("`content` not UTF-8"),
        "{text}"
    );
    // What hermes meets: Python's sqlite3 refuses the row (when python3 is here).
    if let Ok(out) = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys\ntry:\n sqlite3.connect(sys.argv[1]).execute('SELECT content FROM messages WHERE id=2').fetchall(); print('read')\nexcept sqlite3.OperationalError as e: print('refused', e)",
            db.to_str().unwrap(),
        ])
        .output()
    {
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.starts_with("refused"), "{said}");
    }
}

/// Review of the JSON output: the figures of a session's notes (counts of
/// lines, calls, tokens) were only inside their sentences. Now `list` and
/// `check` give them as fields in `note_figures`, the same numbers.
#[test]
fn issue8_the_figures_of_notes_are_fields() {
    let codex = fixtures().join("codex/localpush");
    let doc = json(&["list", "--format", "json", codex.to_str().unwrap()]);
    let s = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["note_figures"].is_object())
        .unwrap_or_else(|| panic!("no session with note_figures: {doc}"));
    let f = &s["note_figures"];
    let n = f["token_count_lines_without_request"].as_u64().unwrap();
    assert!(s["notes"].as_array().unwrap().iter().any(|t| t
        .as_str()
        .unwrap()
        .starts_with(&format!("{n} token_count line(s)"))));
    assert!(f["compactions"].as_u64().unwrap() >= 1, "{f}");
    let check = json(&[
        "check",
        "--format",
        "json",
        "--fail-on",
        "never",
        codex.to_str().unwrap(),
    ]);
    assert!(check["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["note_figures"] == *f));
    let hermes = json(&[
        "list",
        "--format",
        "json",
        fixtures().join("hermes").to_str().unwrap(),
    ]);
    let aux = hermes["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| s["note_figures"]["auxiliary.compression.calls"].as_u64());
    assert!(aux.is_some_and(|c| c >= 1), "{hermes}");
}

/// Review of the exit codes: a folder given twice, or a folder and a store
/// inside it, was read once (the store is deduplicated) but the second
/// path was then called "no session store found" and the run exited 2, in
/// one argument order and not the other. Each store is read once, no path
/// is an error, and the exit code is the findings'.
#[test]
fn issue8_an_input_given_twice_or_inside_another_is_read_once_without_error() {
    let t = tempfile::tempdir().unwrap();
    copy_dir(&oc("plain"), &t.path().join("oc/plain"));
    let root = t.path().join("oc");
    let plain = root.join("plain");
    let db = plain.join("opencode.db");
    let before = snapshot(t.path());
    let p = |p: &Path| p.to_str().unwrap().to_string();
    for args in [
        vec![p(&root), p(&root)],
        vec![p(&root), p(&plain)],
        vec![p(&plain), p(&root)],
        vec![p(&db), p(&plain)],
        vec![p(&plain), p(&db)],
    ] {
        for cmd in ["list", "check"] {
            let out = bin()
                .args([cmd, "--format", "json"])
                .args(&args)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{cmd} {args:?}: {out:?}");
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
            assert!(doc["errors"].as_array().unwrap().is_empty(), "{doc}");
        }
    }
    // A folder without a store beside one with a store is still an error.
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = bin()
        .args(["list", p(&root).as_str(), p(&empty).as_str()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session store found"));
    std::fs::remove_dir(&empty).unwrap();
    assert_eq!(snapshot(t.path()), before);
}

/// Review of the JSON output: figures that were only inside sentences are
/// fields. A duplicate's own line (`place` said "line 22, first at line
/// 16"; the location is the first copy's); the effective window and the
/// source of the limits `impossible-usage` judged against; what is left
/// after every step when compact cannot fit a session (`remedy` and
/// `unreachable` said "still 47 tokens and 1573118 request bytes ...").
#[test]
fn issue8_figures_stated_in_sentences_are_fields_too() {
    let fx = fixtures();
    let arg = |p: &str| fx.join(p).to_str().unwrap().to_string();
    let check = |p: &str| json(&["check", "--format", "json", "--fail-on", "never", &arg(p)]);
    let doc = check("claude-code/claude-code-gen/double_compact");
    let dup = &with_code(&doc, "duplicate-id")[0];
    let (copy, first) = (
        dup["copy_line"].as_u64().unwrap(),
        dup["first_line"].as_u64().unwrap(),
    );
    assert!(copy > first, "{dup}");
    assert_eq!(dup["location"]["line"].as_u64(), Some(first), "{dup}");
    assert!(
        dup["place"]
            .as_str()
            .unwrap()
            .ends_with(&format!("line {copy}, first at line {first}")),
        "{dup}"
    );

    let doc = check("codex/localpush");
    let imp = &with_code(&doc, "impossible-usage")[0];
    assert_eq!(imp["input_limit"].as_u64(), Some(258_400), "{imp}");
    let source = imp["limits_source"].as_str().unwrap();
    assert!(imp["detail"].as_str().unwrap().contains(source), "{imp}");

    // The docker-agent session whose newest user message carries more
    // media than any request may hold.
    let db = "docker-agent/derived/overflow-errors.db";
    let doc = check(db);
    let stuck: Vec<_> = findings(&doc)
        .into_iter()
        .filter(|f| f["compact_shortfall"].is_object())
        .collect();
    assert!(!stuck.is_empty(), "{doc}");
    for f in &stuck {
        let s = &f["compact_shortfall"];
        assert_eq!(f["remedy_command"], serde_json::Value::Null, "{f}");
        let remedy = f["remedy"].as_str().unwrap();
        for k in [
            "tokens",
            "request_bytes",
            "max_request_bytes",
            "newest_user_bytes",
        ] {
            let n = s[k].as_u64().unwrap_or_else(|| panic!("{k}: {s}"));
            assert!(remedy.contains(&n.to_string()), "{k} {n}: {remedy}");
        }
        let id = s["newest_user_message_id"].as_str().unwrap();
        assert!(
            remedy.contains(&format!("newest user message {id} ")),
            "{remedy}"
        );
    }
    let sid = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["compact_shortfall"].is_object())
        })
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let c = json(&[
        "compact",
        "--format",
        "json",
        "--dry-run",
        &arg(db),
        "--session",
        &sid,
        "--out",
        out.to_str().unwrap(),
    ]);
    let plan = &c["sessions"][0];
    let plan = if plan.is_object() { plan } else { &c };
    assert_eq!(plan["shortfall"], stuck[0]["compact_shortfall"], "{c}");
    assert!(!out.exists());

    // No PATH and no data dir: the error names where every agent's data is
    // looked for (hermes-agent and docker-agent were left out).
    let home = tempfile::tempdir().unwrap();
    let out = bin()
        .arg("list")
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("HERMES_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for place in [
        "$XDG_DATA_HOME",
        "$HERMES_HOME",
        ".cagent",
        "$CODEX_HOME",
        "$CLAUDE_CONFIG_DIR",
    ] {
        assert!(err.contains(place), "{place}: {err}");
    }
}

/// The changes of a `compact --format json` document: of its sessions (a
/// batch), else its own (one session).
fn changes_of(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    match doc["sessions"].as_array() {
        Some(s) => s
            .iter()
            .flat_map(|s| s["changes"].as_array().unwrap().clone())
            .collect(),
        None => doc["changes"].as_array().unwrap().clone(),
    }
}

/// Review of the JSON output: the changes `repair` and `compact` describe
/// gave their figures only inside `old` and `new` ("45000 characters",
/// "34756 bytes of base64 media", "line 3 and 1 later copies repeating
/// it"); each is now also a field of `figures`, with the number the text
/// states.
#[test]
fn issue8_the_figures_of_stored_changes_are_fields() {
    let t = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let before = snapshot(&fx.join("opencode/prune"));
    let out = |name: &str| t.path().join(name).to_str().unwrap().to_string();
    let text = |c: &serde_json::Value| format!("{} {}", c["old"], c["new"]);
    let states = |c: &serde_json::Value, k: &str| {
        let n = c["figures"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {c}"));
        assert!(
            text(c)
                .split(|ch: char| !ch.is_ascii_digit())
                .any(|w| w == n.to_string()),
            "{k} {n}: {c}"
        );
        n
    };
    // Truncation (the real prune session under a 150,000-byte limit).
    let doc = json(&[
        "compact",
        "--format",
        "json",
        "--dry-run",
        fx.join("opencode/prune").to_str().unwrap(),
        "--out",
        &out("a"),
        "--max-request-bytes",
        "150000",
    ]);
    let changes = changes_of(&doc);
    let cut: Vec<_> = changes
        .iter()
        .filter(|c| c["figures"]["max_chars"].is_u64())
        .collect();
    assert!(!cut.is_empty(), "{doc}");
    for c in cut {
        assert!(states(c, "chars") > states(c, "max_chars"), "{c}");
    }
    // Media stripped, a dropped line with its blocks, later copies dropped.
    let doc = json(&[
        "compact",
        "--format",
        "json",
        "--dry-run",
        fx.join("claude-code/claude-code-gen/image")
            .to_str()
            .unwrap(),
        "--out",
        &out("b"),
    ]);
    let all = changes_of(&doc);
    let media: Vec<_> = all
        .iter()
        .filter(|c| c["figures"]["media_bytes"].is_u64())
        .collect();
    assert!(!media.is_empty(), "{doc}");
    for c in media {
        states(c, "media_bytes");
        assert!(c["figures"]["media_items"].as_u64().unwrap() >= 1, "{c}");
    }
    let doc = json(&[
        "repair",
        "--format",
        "json",
        "--dry-run",
        fx.join("claude-code/claude-code-gen/double_compact")
            .to_str()
            .unwrap(),
        "--out",
        &out("c"),
    ]);
    let copies: Vec<_> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["figures"]["copies"].is_u64())
        .cloned()
        .collect();
    assert!(!copies.is_empty(), "{doc}");
    for c in &copies {
        states(c, "copies");
        states(c, "line");
    }
    assert_eq!(snapshot(&fx.join("opencode/prune")), before);
    assert!(
        std::fs::read_dir(t.path()).unwrap().next().is_none(),
        "a dry run wrote"
    );
}

/// The last step printed after an opencode or Kilo copy said to move
/// `~/.local/share/opencode/opencode.db` aside and put the copy there,
/// whatever store the copy was made from: after repairing a backup or
/// another `XDG_DATA_HOME`'s database, following it replaces a different
/// store with a copy of this one. It now names the store the copy was
/// made from, as the steps of the other agents do.
#[test]
fn issue8_the_put_in_place_step_names_the_store_the_copy_was_made_from() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("backup");
    copy_dir(&oc("stale-parent"), &src);
    let before = snapshot(&src);
    let out = t.path().join("out");
    let doc = json(&[
        "repair",
        "--format",
        "json",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let copies = doc["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 1, "{doc}");
    let steps: Vec<&str> = copies[0]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let source = copies[0]["source"].as_str().unwrap();
    assert!(source.starts_with(src.to_str().unwrap()), "{source}");
    let last = steps.last().unwrap();
    assert!(
        last.contains(&format!("move the original {source} ")),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| s.contains("~/.local/share")),
        "{steps:?}"
    );
    assert_eq!(snapshot(&src), before);
}
