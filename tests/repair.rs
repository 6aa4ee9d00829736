//! `repair`: fixes stale and dangling parents in a copy, leaves every other
//! row byte-identical, and refuses unsafe destinations.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// message id -> stored `data` text of a db.
fn message_rows(db: &Path) -> BTreeMap<String, String> {
    let c = rusqlite::Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let mut st = c.prepare("SELECT id, data FROM message").unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows
}

#[test]
fn stale_parent_is_reparented_in_the_copy_only() {
    let out = tempfile::tempdir().unwrap();
    let doc = json(&[
        "repair",
        oc("stale-parent").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(doc["schema_version"], 1);
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{doc:#}");
    assert_eq!(changes[0]["session_id"], "ses_dfd1f60b1ffeUVxzisfNz0d8YX");
    assert_eq!(changes[0]["message_id"], "msg_202e0ffd60017nVpisxzgn4gh3");
    assert_eq!(changes[0]["field"], "parentID");
    assert_eq!(changes[0]["old"], "msg_202e0f46a001umhV6p1DrAd6Bn");
    assert_eq!(changes[0]["new"], "msg_202e0ffc2001SCq7P2qczABGAs");

    let copy = out.path().join("opencode.db");
    let before = message_rows(&oc("stale-parent").join("opencode.db"));
    let after = message_rows(&copy);
    assert_eq!(before.len(), after.len());
    for (id, data) in &before {
        if id == "msg_202e0ffd60017nVpisxzgn4gh3" {
            let v: serde_json::Value = serde_json::from_str(&after[id]).unwrap();
            assert_eq!(v["parentID"], "msg_202e0ffc2001SCq7P2qczABGAs");
            // Every other field is kept.
            let mut old: serde_json::Value = serde_json::from_str(data).unwrap();
            old["parentID"] = v["parentID"].clone();
            assert_eq!(old, v);
        } else {
            assert_eq!(data, &after[id], "row {id} changed");
        }
    }
    // The copy is healthy now, and equals the real data set it was derived from.
    bin().arg("check").arg(&copy).assert().code(0);
    assert_eq!(after, message_rows(&oc("compact").join("opencode.db")));
}

#[test]
fn dry_run_prints_the_changes_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("new");
    let doc = json(&[
        "repair",
        oc("stale-parent").to_str().unwrap(),
        "--out",
        dest.to_str().unwrap(),
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(doc["dry_run"], true);
    assert_eq!(doc["changes"].as_array().unwrap().len(), 1);
    assert!(!dest.exists());
}

#[test]
fn refuses_out_inside_the_source_and_existing_copies_without_force() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("data");
    copy_dir(&oc("stale-parent"), &src);
    let before = snapshot(t.path());
    bin()
        .arg("repair")
        .arg(&src)
        .arg("--out")
        .arg(&src)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("inside the input folder"));
    bin()
        .arg("repair")
        .arg(&src)
        .arg("--out")
        .arg(src.join("sub/dir"))
        .assert()
        .code(2);
    assert_eq!(before, snapshot(t.path()));

    let out = t.path().join("out");
    bin()
        .arg("repair")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let first = snapshot(&out);
    bin()
        .arg("repair")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
    bin()
        .arg("repair")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .arg("--force")
        .assert()
        .success();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        snapshot(&out).keys().collect::<Vec<_>>()
    );
    // No temp files are left behind: only the copy, its manifest and the lock.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".session-doctor-copies.json",
            ".session-doctor.lock",
            "opencode.db"
        ]
    );
}

#[test]
fn legacy_tree_stale_and_dangling_parents_are_repaired_in_the_copy() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("legacy");
    copy_dir(&oc("legacy-1.1.65"), &data);
    let msgs = data.join("storage/message/ses_dfd1ae85effe5u4syGjAIhhhc2");
    // Dangle one assistant's parent (derived in the test from the real tree).
    let victim = msgs.join("msg_202e5183c001cxCQ1pmRf0SZWd.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&victim).unwrap()).unwrap();
    let real_parent = v["parentID"].as_str().unwrap().to_string();
    v["parentID"] = "msg_doesnotexist".into();
    std::fs::write(&victim, serde_json::to_string_pretty(&v).unwrap()).unwrap();

    let doc = json(&["check", "--format", "json", data.to_str().unwrap()]);
    let d = with_code(&doc, "dangling-parent");
    assert_eq!(d.len(), 1, "{doc:#}");
    assert_eq!(d[0]["suggested_parent_id"], real_parent.as_str());

    let out = t.path().join("out");
    let before = snapshot(&data);
    let doc = json(&[
        "repair",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(before, snapshot(&data));
    assert_eq!(doc["changes"][0]["new"], real_parent.as_str(), "{doc:#}");
    let copy = out.join("storage");
    let fixed: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            copy.join("message/ses_dfd1ae85effe5u4syGjAIhhhc2/msg_202e5183c001cxCQ1pmRf0SZWd.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(fixed["parentID"], real_parent.as_str());
    // Every other file is byte-identical.
    let a = snapshot(&data.join("storage"));
    let b = snapshot(&copy);
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    let differing: Vec<_> = a
        .iter()
        .filter(|(k, v)| b[*k] != **v)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        differing,
        vec!["message/ses_dfd1ae85effe5u4syGjAIhhhc2/msg_202e5183c001cxCQ1pmRf0SZWd.json"]
    );
    bin()
        .args(["check", "--fail-on", "error"])
        .arg(&copy)
        .assert()
        .code(0);
}

#[test]
fn several_stores_keep_their_relative_layout_under_out() {
    let out = tempfile::tempdir().unwrap();
    let doc = json(&[
        "repair",
        oc("").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(out.path().join("stale-parent/opencode.db").is_file());
    assert!(out.path().join("kilo/kilo.db").is_file());
    assert!(out.path().join("legacy-1.1.65/storage/migration").is_file());
    assert_eq!(doc["changes"].as_array().unwrap().len(), 1, "{doc:#}");
}

/// Every text column of every table of `db` (full-text tables aside) with
/// `old` replaced by `new`: a store whose session is named `new`.
fn rename_in_db(db: &Path, old: &str, new: &str) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.pragma_update(None, "foreign_keys", false).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in tables {
        let cols: Vec<String> = c
            .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for col in cols {
            c.execute(
                &format!("UPDATE \"{t}\" SET \"{col}\" = replace(\"{col}\", ?1, ?2) WHERE typeof(\"{col}\") = 'text' AND instr(\"{col}\", ?1) > 0"),
                [old, new],
            )
            .unwrap();
        }
    }
}

/// The words of the shell command in `step` (its `   # comment` and any
/// `cd … &&` before it left out; in a sentence, the command between its
/// backticks); fails when the command does not parse as a shell line.
fn words(step: &str) -> Vec<String> {
    let cmd = match step.split_once('`') {
        Some((_, rest)) => rest.split('`').next().unwrap(),
        None => step,
    };
    let cmd = cmd.split("   # ").next().unwrap();
    let cmd = cmd.rsplit("&& ").next().unwrap();
    shell_words::split(cmd).unwrap_or_else(|e| panic!("{step}: {e}"))
}

/// Next steps printed the session id as it is (`claude --resume -x y'z`,
/// `codex resume`, `hermes chat --resume`, `opencode -s`), where remedy
/// commands quote it: an id holding a quote or a space made the printed
/// command fail to parse or pass another id, and one starting with `-`
/// read as a flag where the id is a positional argument (`codex resume`).
/// The id is now one quoted shell word, after `--` for `codex resume`.
#[test]
fn next_steps_pass_the_session_id_as_one_shell_word() {
    let id = "-x y'z";
    let t = tempfile::tempdir().unwrap();
    let steps_of = |doc: &serde_json::Value| -> Vec<String> {
        doc["copies"][0]["next_steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{doc:#}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    // The words after `flag` in the step that runs `bin flag`.
    let after = |steps: &[String], bin: &str, flag: &str| -> Vec<String> {
        let step = steps
            .iter()
            .find(|s| s.contains(&format!(" {bin} {flag} ")))
            .unwrap_or_else(|| panic!("no {bin} step: {steps:?}"));
        let w = words(step);
        let at = w
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("{step}"));
        w[at + 1..].to_vec()
    };
    let repair = |src: &Path, out: &str| {
        json(&[
            "repair",
            "--format",
            "json",
            src.to_str().unwrap(),
            "--out",
            t.path().join(format!("out-{out}")).to_str().unwrap(),
        ])
    };

    // Claude Code: the id is the file's name.
    let cfg = t.path().join("cfg");
    let proj = cfg.join("projects").join("-p q");
    std::fs::create_dir_all(&proj).unwrap();
    let cc = fixtures().join("claude-code/claude-code-gen/double_compact/projects/-home-dev-cc-dev-claude-double-compact-proj/0a40fb08-409e-47b5-867c-464f5acf52d8.jsonl");
    let file = proj.join(format!("{id}.jsonl"));
    std::fs::copy(&cc, &file).unwrap();
    let before = snapshot(&cfg);
    let steps = steps_of(&repair(&file, "claude"));
    assert_eq!(after(&steps, "claude", "--resume")[0], id, "{steps:?}");
    assert_eq!(snapshot(&cfg), before);

    // Codex: the id is session_meta's; a torn tail to repair.
    let home = t.path().join("codex");
    copy_dir(&fixtures().join("codex/codex-gen/noprogress"), &home);
    let rollout = walkdir::WalkDir::new(&home)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.to_string_lossy().contains("rollout-"))
        .unwrap();
    let text = std::fs::read_to_string(&rollout).unwrap();
    let text = text.replace("01a20327-ec1f-7132-af6f-feec204262bf", id);
    std::fs::write(&rollout, &text[..text.len() - 300]).unwrap();
    let before = snapshot(&home);
    let steps = steps_of(&repair(&rollout, "codex"));
    assert_eq!(
        after(&steps, "codex", "resume")[..2],
        ["--", id],
        "{steps:?}"
    );
    assert_eq!(snapshot(&home), before);

    // hermes: the reopened session of a closed compression.
    let hh = t.path().join("hh");
    std::fs::create_dir_all(&hh).unwrap();
    std::fs::copy(
        fixtures().join("hermes/derived/closed_compression/state.db"),
        hh.join("state.db"),
    )
    .unwrap();
    rename_in_db(&hh.join("state.db"), "20261122_104840_a980c8", id);
    let before = snapshot(&hh);
    let steps = steps_of(&repair(&hh, "hermes"));
    assert_eq!(after(&steps, "hermes chat", "--resume")[0], id, "{steps:?}");
    assert_eq!(snapshot(&hh), before);

    // opencode: a stale parent.
    let oc_dir = t.path().join("oc");
    copy_dir(&oc("stale-parent"), &oc_dir);
    rename_in_db(
        &oc_dir.join("opencode.db"),
        "ses_dfd1f60b1ffeUVxzisfNz0d8YX",
        id,
    );
    let before = snapshot(&oc_dir);
    let steps = steps_of(&repair(&oc_dir, "opencode"));
    assert_eq!(after(&steps, "opencode", "-s")[0], id, "{steps:?}");
    assert_eq!(snapshot(&oc_dir), before);
}
