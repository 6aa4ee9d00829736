//! Claude Code transcripts: totals, findings, repair and compact on the real
//! data copied into fixtures/claude-code (see fixtures/README.md; the facts
//! come from fixtures/claude-code/claude-code-gen/MANIFEST.md), bad lines,
//! and originals left untouched by every command.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const DOUBLE: &str = "0a40fb08-409e-47b5-867c-464f5acf52d8";
const IMAGE: &str = "ada37aa8-fdfe-41e2-ae55-88cfa2a2c290";
const MULTI: &str = "0acd6738-1c9b-460c-ba5f-185135e4ad7f";
const NOPROGRESS: &str = "fbfaaf41-f446-468b-a40a-48c11b34a4a1";
const WITH_AGENTS: &str = "5ed31c36-bca8-40fd-8d24-f1a1f0af7901";

/// `fixtures/claude-code/<rel>`.
fn cc(rel: &str) -> PathBuf {
    fixtures().join("claude-code").join(rel)
}

/// `fixtures/claude-code/claude-code-gen/<scenario>`.
fn gen(scenario: &str) -> PathBuf {
    cc("claude-code-gen").join(scenario)
}

/// The session file of a generated scenario.
fn gen_file(scenario: &str) -> PathBuf {
    let projects = gen(scenario).join("projects");
    let project = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_dir(project)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn check(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(p(path));
    json(&args)
}

fn session<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no session {id} in {doc:#}"))
}

/// Lines of a file (with their newline), to compare copies line by line.
fn lines(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn list_totals_equal_ccusage_on_the_generated_sessions() {
    // ccusage 20.0.24 `claude session --offline --json` (MANIFEST.md):
    // input / output / cache creation / cache read.
    let expected = [
        (DOUBLE, "double_compact", [39, 1190, 30852, 173924], 2),
        (IMAGE, "image", [18, 142, 32566, 98129], 1),
        (MULTI, "multi", [48, 1295, 36202, 226657], 2),
        (NOPROGRESS, "noprogress", [21, 238, 18571, 790366], 3),
    ];
    for (id, scenario, t, compactions) in expected {
        let doc = json(&["list", "--format", "json", p(&gen(scenario))]);
        let s = session(&doc, id);
        assert_eq!(s["agent"], "claude-code");
        let got = &s["tokens_total"];
        assert_eq!(
            [
                got["input"].as_u64().unwrap(),
                got["output"].as_u64().unwrap(),
                got["cache_write"].as_u64().unwrap(),
                got["cache_read"].as_u64().unwrap()
            ],
            t,
            "{scenario}: {s:#}"
        );
        assert_eq!(s["compactions"], compactions, "{scenario}");
        // Stored bytes are the file's bytes, line by line.
        let size = std::fs::metadata(gen_file(scenario)).unwrap().len();
        assert_eq!(s["payload_bytes"], size, "{scenario}");
        // Claude Code stores no usage for its summarization calls: the report says so.
        assert!(
            s["notes"][0]
                .as_str()
                .unwrap()
                .contains("stores no usage for its summarization calls"),
            "{s:#}"
        );
    }
}

#[test]
fn context_tokens_are_input_plus_cache_of_the_last_turn() {
    let doc = json(&["list", "--format", "json", p(&gen("multi"))]);
    // Last assistant of multi: input 3, cache creation 2033, cache read 14846.
    assert_eq!(session(&doc, MULTI)["context_tokens"], 3 + 2033 + 14846);
}

#[test]
fn image_blocks_count_as_media_also_inside_tool_results() {
    let doc = json(&[
        "inspect",
        "--session",
        IMAGE,
        "--format",
        "json",
        p(&gen("image")),
    ]);
    let msgs = doc["sessions"][0]["messages"].as_array().unwrap();
    // The pasted PNG (line 13) and the Read tool's result (line 23): 26,065 bytes each.
    let media: Vec<(u64, u64)> = msgs
        .iter()
        .filter(|m| m["media_count"].as_u64().unwrap() > 0)
        .map(|m| {
            (
                m["line"].as_u64().unwrap(),
                m["media_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(media, vec![(13, 26065), (23, 26065)]);
    let tool_result = msgs.iter().find(|m| m["line"] == 23).unwrap();
    assert_eq!(tool_result["parts"][0]["kind"], "tool_result");
    assert_eq!(tool_result["parts"][0]["tool"], "Read");
    let f = with_code(&check(&gen("image"), &[]), "media-in-history");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["media_bytes"], 26065);
    assert_eq!(
        f[0]["message_ids"],
        json!(["c88339d6-6fc8-467f-b0f7-4d9df1cb5f51"])
    );
}

#[test]
fn noprogress_is_a_compaction_loop_triggered_by_pre_tokens() {
    let doc = check(&gen("noprogress"), &[]);
    let f = with_code(&doc, "compaction-loop");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(f[0]["compactions"], 3);
    assert_eq!(f[0]["stalls"], 2);
    assert_eq!(f[0]["tokens"], json!([190359, 190571, 190066]));
    // Each compaction by itself made progress (postTokens far below preTokens):
    // the context refilled between them.
    assert_eq!(f[0]["post_tokens"], json!([793, 803, 803]));
    assert_eq!(f[0]["no_progress_ids"], json!([]));
    bin().arg("check").arg(gen("noprogress")).assert().code(1);
}

#[test]
fn a_manual_compaction_breaks_the_chain_and_multi_is_healthy() {
    let doc = check(&gen("multi"), &[]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
    bin()
        .args(["check", "--fail-on", "warning"])
        .arg(gen("multi"))
        .assert()
        .code(0);
}

#[test]
fn rewritten_uuids_are_harmless_duplicates_and_split_responses_are_not() {
    let doc = check(&gen("double_compact"), &[]);
    let d = with_code(&doc, "duplicate-id");
    // MANIFEST: 12 uuids written more than once, 15 extra lines.
    assert_eq!(d.len(), 15, "{doc:#}");
    assert!(d
        .iter()
        .all(|f| f["severity"] == "warning" && f["same_content"] == true));
    let ids: std::collections::BTreeSet<&str> =
        d.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 12);
    // With its preserved metadata, the latest boundary prunes: no stale parent.
    assert!(with_code(&doc, "stale-parent").is_empty(), "{doc:#}");
    assert_eq!(findings(&doc).len(), 15);
}

#[test]
fn derived_fixture_without_preserved_metadata_has_a_stale_parent_error() {
    let doc = check(&gen("double_compact_nometa"), &[]);
    let f = with_code(&doc, "stale-parent");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "error");
    // Line 28, written after boundary 1 (line 26), points to line 19.
    assert_eq!(f[0]["message_id"], "53971763-661d-4d43-8d2a-630fa944bb8b");
    assert_eq!(f[0]["line"], 28);
    assert_eq!(f[0]["parent_id"], "b721d162-9695-4faf-8eb1-a9e20667e7eb");
    assert_eq!(
        f[0]["compaction_id"],
        "ea00730b-e30d-4340-94b9-47ba2dcb02d6"
    );
    // Nothing preserved any more: the boundary's isCompactSummary line (27).
    assert_eq!(
        f[0]["suggested_parent_id"],
        "e9e1c541-b47f-472f-9b52-c130f5a97209"
    );
    assert_eq!(f[0]["pruned_on_resume"], false);
}

#[test]
fn a_stale_parent_under_a_pruning_boundary_is_a_warning() {
    // The same link as in the derived fixture, but in a copy of the original
    // whose latest boundary keeps its metadata: re-point line 69 (after
    // boundary 2) to line 47 (before it, not preserved).
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("double_compact");
    let dst = t.path().join(src.file_name().unwrap());
    let mut ls = lines(&src);
    let mut v: Value = serde_json::from_slice(&ls[68]).unwrap();
    let target: Value = serde_json::from_slice(&ls[46]).unwrap();
    v["parentUuid"] = target["uuid"].clone();
    ls[68] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    std::fs::write(&dst, ls.concat()).unwrap();
    let f = with_code(&check(&dst, &[]), "stale-parent");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["severity"], "warning");
    assert_eq!(f[0]["pruned_on_resume"], true);
    assert_eq!(f[0]["line"], 69);
    // Boundary 2 preserves line 51: that is where the link goes.
    assert_eq!(
        f[0]["suggested_parent_id"],
        "fb335d7a-aeed-43e8-a3bf-37148b75b659"
    );
}

#[test]
fn resume_view_is_summary_preserved_then_what_follows() {
    let doc = json(&[
        "inspect",
        "--session",
        DOUBLE,
        "--format",
        "json",
        p(&gen("double_compact")),
    ]);
    let s = &doc["sessions"][0];
    let visible: Vec<u64> = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["flags"].as_array().unwrap().contains(&json!("visible")))
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    // The boundary (67), its summary (68), the preserved reply (51), and the
    // chain from there to the leaf; nothing else from before the boundary.
    assert_eq!(
        visible,
        vec![51, 67, 68, 69, 70, 71, 72, 73, 76, 77, 80, 81, 82, 83, 84, 88, 89, 90]
    );
    assert_eq!(s["visible_messages"], 18);
}

#[test]
fn sub_agent_files_belong_to_their_session_in_both_layouts() {
    let project = cc("claude-code-log/projects/-Users-dain-workspace-danieldemmel-me-next");
    let doc = json(&["list", "--format", "json", p(&project)]);
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    // agent-*.jsonl beside the sessions are no sessions of their own.
    assert!(!ids.iter().any(|i| i.starts_with("agent-")), "{ids:?}");
    // 5ed31c36 (main: 43/3/4330/44742 in ccusage) + agent-c3d572ee + agent-c63fe96c.
    let s = session(&doc, WITH_AGENTS);
    assert_eq!(s["tokens_total"]["input"], 43 + 3 + 1366);
    assert_eq!(s["tokens_total"]["output"], 3 + 62 + 190);
    assert_eq!(s["tokens_total"]["cache_read"], 44742 + 1374);
    // The 0-byte session file keeps its two agent files.
    let empty = session(&doc, "7864f562-717b-4d70-a1cb-b588f7826a1a");
    assert_eq!(empty["messages"], 4);
    // 2.1.x layout: the same files under <id>/subagents/ (one named like a
    // compaction sub-agent) give the same totals.
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("projects/p");
    std::fs::create_dir_all(d.join(WITH_AGENTS).join("subagents")).unwrap();
    std::fs::copy(
        project.join(format!("{WITH_AGENTS}.jsonl")),
        d.join(format!("{WITH_AGENTS}.jsonl")),
    )
    .unwrap();
    for (from, to) in [
        ("agent-c3d572ee.jsonl", "agent-acompact-c3d572ee.jsonl"),
        ("agent-c63fe96c.jsonl", "agent-c63fe96c.jsonl"),
    ] {
        std::fs::copy(
            project.join(from),
            d.join(WITH_AGENTS).join("subagents").join(to),
        )
        .unwrap();
    }
    let doc2 = json(&["list", "--format", "json", p(t.path())]);
    assert_eq!(doc2["sessions"].as_array().unwrap().len(), 1, "{doc2:#}");
    assert_eq!(doc2["sessions"][0]["tokens_total"], s["tokens_total"]);
    let inspect = json(&[
        "inspect",
        "--session",
        WITH_AGENTS,
        "--format",
        "json",
        p(t.path()),
    ]);
    let side = inspect["sessions"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["flags"].as_array().unwrap().contains(&json!("sidechain")))
        .count();
    assert_eq!(side, 4);
}

#[test]
fn an_agent_file_without_its_session_is_a_session_of_its_own() {
    let doc = json(&[
        "list",
        "--format",
        "json",
        p(&cc(
            "claude-code-log/projects/-Users-dain-workspace-claude-code-log-sample",
        )),
    ]);
    let s = session(&doc, "agent-3be551df");
    assert_eq!(s["tokens_total"]["input"], 3811);
}

#[test]
fn legacy_summary_lines_give_the_title() {
    let doc = json(&[
        "list",
        "--format",
        "json",
        p(&cc(
            "claude-code-log/projects/-Users-dain-workspace-danieldemmel-me-next",
        )),
    ]);
    assert_eq!(
        session(&doc, "3680252d-d4e3-4416-bddd-8f5b5b4fdb7f")["title"],
        "CSS Details Margin Styling"
    );
}

#[test]
fn healthy_real_sessions_have_nothing_at_warning_or_above() {
    for path in [cc("claude-code-log/projects"), gen("multi")] {
        bin()
            .args(["check", "--fail-on", "warning"])
            .arg(&path)
            .assert()
            .code(0);
    }
}

/// A session no edit changes is copied as it is (the kernel's file copy,
/// `formats::copy_unchanged`): every copied file is the original's bytes,
/// sub-agent files included, in the same layout.
#[test]
fn repair_of_healthy_sessions_writes_identical_copies() {
    for (src, sessions) in [(gen("multi"), 1), (cc("claude-code-log"), 3)] {
        let out = tempfile::tempdir().unwrap();
        let doc = json(&[
            "repair",
            "--format",
            "json",
            p(&src.join("projects")),
            "--out",
            p(out.path()),
        ]);
        assert!(doc["changes"].as_array().unwrap().is_empty(), "{doc:#}");
        let copies = doc["copies"].as_array().unwrap();
        assert!(copies.len() >= sessions, "{doc:#}");
        assert!(copies.iter().all(|c| c["written"] == true), "{doc:#}");
        let copied = snapshot(&out.path().join("projects"));
        let originals = snapshot(&src.join("projects"));
        let files: Vec<&String> = copied.keys().filter(|k| k.ends_with(".jsonl")).collect();
        assert!(!files.is_empty(), "{copied:?}");
        for f in files {
            assert_eq!(copied.get(f), originals.get(f), "{f}");
        }
    }
}

#[test]
fn bad_lines_are_unreadable_with_their_line_and_the_rest_is_read() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("multi");
    let dst = t.path().join(src.file_name().unwrap());
    let mut ls = lines(&src);
    let n = ls.len();
    ls[9] = b"{\"type\":\"last-prompt\", broken\n".to_vec();
    ls[20] = b"[1,2,3]\n".to_vec();
    std::fs::write(&dst, ls.concat()).unwrap();
    let doc = check(&dst, &[]);
    let u = with_code(&doc, "unreadable");
    assert_eq!(u.len(), 2, "{doc:#}");
    assert!(u[0]["place"].as_str().unwrap().ends_with(":line 10"));
    assert!(u[0]["error"].as_str().unwrap().contains("invalid JSON"));
    assert!(u[1]["place"].as_str().unwrap().ends_with(":line 21"));
    assert!(u[1]["error"]
        .as_str()
        .unwrap()
        .contains("expected a JSON object"));
    assert!(with_code(&doc, "torn-tail").is_empty());
    // Neither line was a message: all 55 messages are still read.
    let list = json(&["list", "--format", "json", p(&dst)]);
    assert_eq!(list["sessions"][0]["messages"], 55);
    assert_eq!(n, 89);
}

#[test]
fn a_torn_last_line_is_torn_tail_and_repair_leaves_it_out() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("image");
    let projects = t.path().join("in/projects/p");
    std::fs::create_dir_all(&projects).unwrap();
    let dst = projects.join(src.file_name().unwrap());
    let mut bytes = std::fs::read(&src).unwrap();
    bytes.extend_from_slice(b"{\"parentUuid\":\"c800a109-1b4e\",\"type\":\"assis");
    std::fs::write(&dst, &bytes).unwrap();
    let doc = check(&dst, &[]);
    let f = with_code(&doc, "torn-tail");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "error");
    assert!(f[0]["place"].as_str().unwrap().ends_with(":line 45"));
    assert!(with_code(&doc, "unreadable").is_empty());

    let out = t.path().join("out");
    let before = snapshot(&t.path().join("in"));
    let r = json(&[
        "repair",
        "--format",
        "json",
        p(&t.path().join("in")),
        "--out",
        p(&out),
    ]);
    assert_eq!(before, snapshot(&t.path().join("in")));
    let torn: Vec<&Value> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["field"] == "line" && c["new"].is_null())
        .collect();
    assert_eq!(torn.len(), 1, "{r:#}");
    let copy = out.join("projects/p").join(src.file_name().unwrap());
    // The copy is the original file, byte for byte.
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&src).unwrap());
    assert!(with_code(&check(&copy, &[]), "torn-tail").is_empty());
}

#[test]
fn dangling_parents_are_reported_except_expected_roots() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("multi");
    let dst = t.path().join(src.file_name().unwrap());
    let mut ls = lines(&src);
    // Line 22 (user "Step 3") loses its parent; line 4 (an attachment) too;
    // the boundary at line 60 names a logical parent that does not exist.
    for (i, key) in [
        (21, "parentUuid"),
        (3, "parentUuid"),
        (59, "logicalParentUuid"),
    ] {
        let mut v: Value = serde_json::from_slice(&ls[i]).unwrap();
        v[key] = json!("00000000-0000-4000-8000-000000000000");
        ls[i] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    }
    std::fs::write(&dst, ls.concat()).unwrap();
    let doc = check(&dst, &[]);
    let d = with_code(&doc, "dangling-parent");
    assert_eq!(d.len(), 1, "{doc:#}");
    assert_eq!(d[0]["line"], 22);
    // The last valid message before it on the same chain: line 17, the
    // assistant that ended turn 2.
    let want: Value = serde_json::from_slice(&lines(&src)[16]).unwrap();
    assert_eq!(d[0]["suggested_parent_id"], want["uuid"]);
    let l = with_code(&doc, "dangling-logical-parent");
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["severity"], "warning");
    assert_eq!(l[0]["line"], 60);
}

#[test]
fn stored_counts_above_the_window_are_impossible_usage() {
    let doc = check(
        &gen("noprogress"),
        &["--context", "100000", "--max-output", "8000"],
    );
    let f = with_code(&doc, "impossible-usage");
    assert!(!f.is_empty(), "{doc:#}");
    assert!(f.iter().all(|f| f["severity"] == "warning"
        && f["context"] == 100000
        && f["tokens"].as_u64().unwrap() > 100000));
    // The three compaction triggers (preTokens ~190k) are among them.
    assert_eq!(
        f.iter()
            .filter(|f| f["what"] == "compaction trigger")
            .count(),
        3
    );
    assert!(with_code(&check(&gen("noprogress"), &[]), "impossible-usage").is_empty());
}

#[test]
fn a_tool_call_without_result_is_unfinished_but_parallel_siblings_are_not() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("multi");
    let dst = t.path().join(src.file_name().unwrap());
    let mut ls = lines(&src);
    // Line 8 carries the result of line 7's Bash call: point it elsewhere.
    let mut v: Value = serde_json::from_slice(&ls[7]).unwrap();
    v["message"]["content"][0]["tool_use_id"] = json!("toolu_nowhere");
    ls[7] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    std::fs::write(&dst, ls.concat()).unwrap();
    let f = with_code(&check(&dst, &[]), "unfinished-tool-call");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["tool"], "Bash");
    assert_eq!(f[0]["status"], "pending");
}

#[test]
fn walking_folders_skips_other_jsonl_and_a_named_one_says_why() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("stream.jsonl"),
        "{\"type\":\"system\",\"session_id\":\"s\",\"uuid\":\"u\"}\n",
    )
    .unwrap();
    std::fs::copy(gen_file("multi"), t.path().join(format!("{MULTI}.jsonl"))).unwrap();
    let doc = json(&["list", "--format", "json", p(t.path())]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(doc["errors"], json!([]));
    bin()
        .args(["list"])
        .arg(t.path().join("stream.jsonl"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a session store"));
}

#[test]
fn claude_config_dir_is_a_default_path() {
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let projects = a.join("projects/p");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::copy(gen_file("multi"), projects.join(format!("{MULTI}.jsonl"))).unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = bin()
        .args(["list", "--format", "json"])
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env(
            "CLAUDE_CONFIG_DIR",
            format!("{},{}", a.display(), t.path().join("missing").display()),
        )
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"][0]["id"], MULTI, "{doc:#}");
}

#[test]
fn repair_of_the_derived_fixture_reparents_and_drops_rewritten_copies_only() {
    let t = tempfile::tempdir().unwrap();
    let src_dir = gen("double_compact_nometa");
    let before = snapshot(&src_dir);
    let out = t.path().join("fixed");
    let r = json(&["repair", "--format", "json", p(&src_dir), "--out", p(&out)]);
    assert_eq!(before, snapshot(&src_dir), "the original is untouched");
    let changes = r["changes"].as_array().unwrap();
    let reparent: Vec<&Value> = changes
        .iter()
        .filter(|c| c["field"] == "parentUuid")
        .collect();
    assert_eq!(reparent.len(), 1, "{r:#}");
    assert_eq!(
        reparent[0]["message_id"],
        "53971763-661d-4d43-8d2a-630fa944bb8b"
    );
    assert_eq!(reparent[0]["old"], "b721d162-9695-4faf-8eb1-a9e20667e7eb");
    assert_eq!(reparent[0]["new"], "e9e1c541-b47f-472f-9b52-c130f5a97209");
    // 12 re-written uuids: their later copies go, the first lines stay.
    assert_eq!(changes.iter().filter(|c| c["field"] == "line").count(), 12);
    // Same layout under --out: DIR/projects/<encoded cwd>/<id>.jsonl.
    let rel = gen_file("double_compact_nometa")
        .strip_prefix(&src_dir)
        .unwrap()
        .to_path_buf();
    assert_eq!(
        r["copies"][0]["dest"].as_str().unwrap(),
        out.join(&rel).to_str().unwrap()
    );
    let copy = out.join(&rel);
    let doc = check(&copy, &[]);
    assert!(findings(&doc).is_empty(), "{doc:#}");
    // Line by line: the copy is the original minus the 15 copies, with line 28
    // changed in parentUuid only; every other line is byte-identical.
    let orig = lines(&gen_file("double_compact_nometa"));
    let fixed = lines(&copy);
    assert_eq!(fixed.len(), orig.len() - 15);
    let changed: Vec<&Vec<u8>> = fixed.iter().filter(|l| !orig.contains(l)).collect();
    assert_eq!(changed.len(), 1);
    let mut a: Value = serde_json::from_slice(changed[0]).unwrap();
    let mut b: Value = serde_json::from_slice(&orig[27]).unwrap();
    assert_eq!(a["parentUuid"], "e9e1c541-b47f-472f-9b52-c130f5a97209");
    a["parentUuid"] = Value::Null;
    b["parentUuid"] = Value::Null;
    assert_eq!(a, b, "every other field of the line is kept");
    // Token totals are unchanged: only copies and a parent link changed.
    let l1 = json(&["list", "--format", "json", p(&copy)]);
    let l0 = json(&["list", "--format", "json", p(&src_dir)]);
    assert_eq!(
        l1["sessions"][0]["tokens_total"],
        l0["sessions"][0]["tokens_total"]
    );
    // A second run refuses to overwrite, --force replaces.
    bin()
        .args(["repair", p(&src_dir), "--out", p(&out)])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
    bin()
        .args(["repair", p(&src_dir), "--out", p(&out), "--force"])
        .assert()
        .code(0);
    // --out inside the source's config dir is refused.
    bin()
        .args(["repair", p(&src_dir), "--out"])
        .arg(src_dir.join("projects/elsewhere"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("refusing --out"));
}

/// Fuzz input whole_claude-19: a later line re-using a uuid with other
/// content (there, a compaction boundary) was dropped with the copies that
/// repeat the first line, and the chain lost what that line held.
#[test]
fn issue7_drop_copies_keeps_a_later_copy_with_other_content() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("double_compact");
    let doc = check(&src, &[]);
    let id = with_code(&doc, "duplicate-id")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ls = lines(&src);
    let first = ls
        .iter()
        .position(|l| serde_json::from_slice::<Value>(l).unwrap()["uuid"] == id.as_str())
        .unwrap();
    let mut v: Value = serde_json::from_slice(&ls[first]).unwrap();
    v["isMeta"] = json!(true);
    let other = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    ls.insert(first + 1, other.clone());
    let dir = t.path().join("in/projects/p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(src.file_name().unwrap()), ls.concat()).unwrap();
    let doc = check(&t.path().join("in"), &[]);
    let d = with_code(&doc, "duplicate-id");
    assert_eq!(d.len(), 16, "{doc:#}");
    assert_eq!(d.iter().filter(|f| f["severity"] == "error").count(), 1);
    let out = t.path().join("out");
    let r = json(&[
        "repair",
        "--format",
        "json",
        p(&t.path().join("in")),
        "--out",
        p(&out),
    ]);
    let copy = out.join("projects/p").join(src.file_name().unwrap());
    // The 15 repeating copies go; the line with other content stays as it was.
    let fixed = lines(&copy);
    assert_eq!(fixed.len(), ls.len() - 15, "{r:#}");
    assert!(fixed.contains(&other));
    let left = findings(&check(&copy, &[]));
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0]["code"], "duplicate-id");
    assert_eq!(left[0]["severity"], "error");
    assert_eq!(left[0]["id"], id.as_str());
}

/// Two lines re-using one uuid before the newest media, each with an image
/// in the same content block but not the same image (derived from the real
/// image transcript). Compact planned a strip-media edit per line; the
/// writer applies an edit to every line of its uuid, so the second found
/// the block stripped already and compact failed, while `check` printed it
/// as the remedy. Now the printed command runs and the finding is gone.
#[test]
fn issue7_compact_strips_media_of_copies_of_a_uuid_that_differ() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("image");
    let mut ls = lines(&src);
    let k = ls
        .iter()
        .position(|l| {
            let v: Value = serde_json::from_slice(l).unwrap();
            v["uuid"] == "c88339d6-6fc8-467f-b0f7-4d9df1cb5f51"
        })
        .unwrap();
    let mut v: Value = serde_json::from_slice(&ls[k]).unwrap();
    let data = v["message"]["content"][1]["source"]["data"]
        .as_str()
        .unwrap()
        .to_string();
    // Another image: the first base64 quad changed.
    v["message"]["content"][1]["source"]["data"] = json!(format!("AAAA{}", &data[4..]));
    ls.insert(
        k + 1,
        format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes(),
    );
    let input = t.path().join("in");
    let dir = input.join("projects/p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(src.file_name().unwrap()), ls.concat()).unwrap();
    let before = snapshot(&input);
    let doc = check(&input, &[]);
    let f = with_code(&doc, "media-in-history");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["media_count"], 2, "{doc:#}");
    assert_eq!(f[0]["distinct_media"], 2, "{doc:#}");
    let cmd = f[0]["remedy_command"].as_str().unwrap();
    let words = shell_words::split(cmd).unwrap();
    assert_eq!(words[1], "compact", "{cmd}");
    let o = bin().args(&words[1..]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(before, snapshot(&input), "the original is untouched");
    let out = &words[words.iter().position(|w| w == "--out").unwrap() + 1];
    let after = check(Path::new(out), &[]);
    assert!(
        with_code(&after, "media-in-history").is_empty(),
        "{after:#}"
    );
}

#[test]
fn repair_of_a_dangling_parent_links_to_the_last_valid_message() {
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("multi");
    let dir = t.path().join("in/projects/p");
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join(src.file_name().unwrap());
    let mut ls = lines(&src);
    let mut v: Value = serde_json::from_slice(&ls[21]).unwrap();
    v["parentUuid"] = json!("00000000-0000-4000-8000-000000000000");
    ls[21] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    std::fs::write(&dst, ls.concat()).unwrap();
    let out = t.path().join("out");
    bin()
        .args(["repair", p(&t.path().join("in")), "--out", p(&out)])
        .assert()
        .code(0);
    let copy = out.join("projects/p").join(src.file_name().unwrap());
    assert!(findings(&check(&copy, &[])).is_empty());
    // The repaired copy equals the real file: line 22's parent was line 17.
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&src).unwrap());
}

#[test]
fn repair_keeps_sub_agent_files_in_their_places() {
    let t = tempfile::tempdir().unwrap();
    let src = cc("claude-code-log");
    let out = t.path().join("out");
    bin()
        .args(["repair", p(&src.join("projects")), "--out", p(&out)])
        .assert()
        .code(0);
    let project = "projects/-Users-dain-workspace-danieldemmel-me-next";
    for f in [
        "5ed31c36-bca8-40fd-8d24-f1a1f0af7901.jsonl",
        "agent-c3d572ee.jsonl",
        "agent-c63fe96c.jsonl",
        "7864f562-717b-4d70-a1cb-b588f7826a1a.jsonl",
        "agent-3ea04571.jsonl",
    ] {
        assert_eq!(
            std::fs::read(out.join(project).join(f)).unwrap(),
            std::fs::read(src.join(project).join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn compact_keeps_from_the_latest_boundary_and_strips_old_images() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("small");
    let src_dir = gen("image");
    let before = snapshot(&src_dir);
    let r = json(&[
        "compact",
        p(&src_dir),
        "--session",
        IMAGE,
        "--out",
        p(&out),
        "--format",
        "json",
        "--context",
        "19000",
        "--max-output",
        "1000",
        "--keep-turns",
        "1",
    ]);
    assert_eq!(before, snapshot(&src_dir));
    assert_eq!(r["written"], true, "{r:#}");
    let steps: Vec<&str> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, vec!["strip-media", "cut-history"], "{r:#}");
    let strip = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["part_id"] == "c88339d6-6fc8-467f-b0f7-4d9df1cb5f51#1")
        .unwrap();
    assert!(strip["new"].as_str().unwrap().starts_with(
        "[Attached image/png: (unnamed) - removed by session-doctor compact, 26065 bytes"
    ));
    let copy = out.join(gen_file("image").strip_prefix(&src_dir).unwrap());
    let list = json(&["list", "--format", "json", p(&copy)]);
    assert_eq!(list["sessions"][0]["media_bytes"], 0);
    let doc = check(&copy, &[]);
    assert!(
        findings(&doc).iter().all(|f| f["severity"] != "error"),
        "{doc:#}"
    );
    // The last turn is kept whole; the note says what went.
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(text.contains("Step 5: after compacting"));
    assert!(text.contains("[session-doctor compact: "));
    // Message lines from before it are gone (queue-operation lines, which
    // repeat prompts, are metadata and stay).
    assert!(!text
        .lines()
        .any(|l| l.contains("\"type\":\"user\"") && l.contains("Step 1: is there a diagram")));
}

#[test]
fn compact_truncates_old_tool_results_and_their_tool_use_result() {
    // A copy of multi whose early Read result is long: cut it in the copy.
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("multi");
    let dir = t.path().join("in/projects/p");
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join(src.file_name().unwrap());
    let mut ls = lines(&src);
    // Lines 65 and 73 hold tool results after the latest boundary.
    let long = "0123456789abcdef".repeat(4000);
    for i in [64, 72] {
        let mut v: Value = serde_json::from_slice(&ls[i]).unwrap();
        v["message"]["content"][0]["content"] = json!(long.clone());
        v["toolUseResult"] = json!({"stdout": long.clone(), "stderr": "", "interrupted": false});
        ls[i] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    }
    std::fs::write(&dst, ls.concat()).unwrap();
    let out = t.path().join("out");
    let r = json(&[
        "compact",
        p(&t.path().join("in")),
        "--session",
        MULTI,
        "--out",
        p(&out),
        "--format",
        "json",
        "--max-request-bytes",
        "150000",
    ]);
    assert_eq!(r["written"], true, "{r:#}");
    assert_eq!(r["steps"][0]["step"], "truncate-tool-output", "{r:#}");
    let copy = out.join("projects/p").join(src.file_name().unwrap());
    let fixed = lines(&copy);
    let v: Value = serde_json::from_slice(&fixed[64]).unwrap();
    let c = v["message"]["content"][0]["content"].as_str().unwrap();
    assert!(c.len() < long.len() && c.contains("characters removed by session-doctor compact"));
    let o = v["toolUseResult"]["stdout"].as_str().unwrap();
    assert!(o.len() < long.len());
    assert_eq!(v["toolUseResult"]["interrupted"], false);
    // The newest tool output within the budget stays whole.
    let w: Value = serde_json::from_slice(&fixed[72]).unwrap();
    assert_eq!(w["message"]["content"][0]["content"], json!(long));
}

#[test]
fn originals_are_untouched_by_every_command() {
    let t = tempfile::tempdir().unwrap();
    let root = cc("");
    let before = snapshot(&root);
    let o = |s: &str| t.path().join(s).display().to_string();
    let r = p(&root).to_string();
    let nometa = p(&gen("double_compact_nometa")).to_string();
    let runs: Vec<Vec<String>> = vec![
        vec!["list".into(), r.clone()],
        vec!["list".into(), "--format".into(), "json".into(), r.clone()],
        vec![
            "inspect".into(),
            "--session".into(),
            DOUBLE.into(),
            "--top".into(),
            "3".into(),
            nometa.clone(),
        ],
        vec!["check".into(), "--format".into(), "json".into(), r.clone()],
        vec![
            "repair".into(),
            r.clone(),
            "--out".into(),
            o("dry"),
            "--dry-run".into(),
        ],
        vec!["repair".into(), r.clone(), "--out".into(), o("copy")],
        vec![
            "repair".into(),
            r.clone(),
            "--out".into(),
            o("copy"),
            "--force".into(),
        ],
        vec![
            "compact".into(),
            nometa.clone(),
            "--session".into(),
            DOUBLE.into(),
            "--out".into(),
            o("c"),
            "--context".into(),
            "19000".into(),
            "--max-output".into(),
            "1000".into(),
            "--keep-turns".into(),
            "1".into(),
        ],
        vec![
            "compact".into(),
            nometa,
            "--session".into(),
            DOUBLE.into(),
            "--out".into(),
            o("c"),
            "--force".into(),
            "--context".into(),
            "19000".into(),
            "--max-output".into(),
            "1000".into(),
            "--dry-run".into(),
        ],
    ];
    for args in runs {
        let out = bin().args(&args).output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(before, snapshot(&root), "{args:?} changed the fixtures");
    }
    assert!(!t.path().join("dry").exists());
    assert!(t.path().join("c").exists());
}

#[test]
fn a_stale_parent_on_the_resume_path_is_an_error_and_repair_fixes_it() {
    // The derived fixture with line 69 (after boundary 2) re-pointed to line 47
    // (before it): Claude Code 2.1.197 then sends the whole pre-compaction
    // history (scripts/claude_resume_check.sh, case `onpath`).
    let t = tempfile::tempdir().unwrap();
    let src = gen_file("double_compact_nometa");
    let dir = t.path().join("in/projects/p");
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join(src.file_name().unwrap());
    let mut ls = lines(&src);
    let mut v: Value = serde_json::from_slice(&ls[68]).unwrap();
    let target: Value = serde_json::from_slice(&ls[46]).unwrap();
    v["parentUuid"] = target["uuid"].clone();
    ls[68] = format!("{}\n", serde_json::to_string(&v).unwrap()).into_bytes();
    std::fs::write(&dst, ls.concat()).unwrap();
    let f = with_code(&check(&dst, &[]), "stale-parent");
    let on_path: Vec<&Value> = f.iter().filter(|f| f["line"] == 69).collect();
    assert_eq!(on_path.len(), 1, "{f:#?}");
    assert_eq!(on_path[0]["severity"], "error");
    assert_eq!(on_path[0]["on_resume_path"], true);
    // Nothing preserved: boundary 2's summary (line 68).
    assert_eq!(
        on_path[0]["suggested_parent_id"],
        "379d6f3a-ef14-47fc-b79c-92e413417dc2"
    );
    let out = t.path().join("out");
    bin()
        .args(["repair", p(&t.path().join("in")), "--out", p(&out)])
        .assert()
        .code(0);
    let copy = out.join("projects/p").join(src.file_name().unwrap());
    let doc = check(&copy, &[]);
    assert!(with_code(&doc, "stale-parent").is_empty(), "{doc:#}");
    // The resume view of the copy starts at boundary 2 again.
    let i = json(&["inspect", "--session", DOUBLE, "--format", "json", p(&copy)]);
    let first_visible = i["sessions"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["flags"].as_array().unwrap().contains(&json!("visible")))
        .unwrap()["line"]
        .as_u64()
        .unwrap();
    let list = lines(&copy);
    let boundary = list
        .iter()
        .rposition(|l| String::from_utf8_lossy(l).contains("compact_boundary"))
        .unwrap() as u64
        + 1;
    assert_eq!(first_visible, boundary);
}

/// The `(original, copy)` pairs the put-in-place step among `steps` names
/// ("move the original(s) A, B aside and put the cop(y|ies) A', B' in
/// its/their place(s)"; "the copy" alone is `dest`).
fn put_in_place_pairs(steps: &[String], dest: &Path) -> Vec<(PathBuf, PathBuf)> {
    let step = steps
        .iter()
        .find(|s| s.starts_with("or, with Claude Code closed, move the original"))
        .unwrap_or_else(|| panic!("no put-in-place step: {steps:?}"));
    let paths = |list: &str| -> Vec<PathBuf> {
        list.split(", ")
            .map(|w| {
                let w = shell_words::split(w).unwrap_or_else(|e| panic!("{step}: {e}"));
                assert_eq!(w.len(), 1, "{step}");
                PathBuf::from(&w[0])
            })
            .collect()
    };
    let rest = step
        .strip_prefix("or, with Claude Code closed, move the original")
        .unwrap();
    let rest = rest.strip_prefix('s').unwrap_or(rest).trim_start();
    let (originals, rest) = rest.split_once(" aside and put the cop").unwrap();
    let originals = paths(originals);
    let copies = rest
        .trim_start_matches("y")
        .trim_start_matches("ies")
        .trim_end_matches(" in its place")
        .trim_end_matches(" in their places")
        .trim();
    let copies = if copies.is_empty() {
        vec![dest.to_path_buf()]
    } else {
        paths(copies)
    };
    assert_eq!(originals.len(), copies.len(), "{step}");
    originals.into_iter().zip(copies).collect()
}

/// After a repair that edits only a sub-agent file (a torn tail in an
/// older version's `agent-*.jsonl` beside the session), the put-in-place
/// step moved the main file alone, so following it left the fault in
/// place. The step now names every file of the session the copy changed
/// with its copy; following it leaves `check` with no torn tail.
#[test]
fn the_put_in_place_step_moves_a_repaired_sub_agent_file_too() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("cfg");
    let project = cfg.join("projects/-Users-dain-workspace-danieldemmel-me-next");
    copy_dir(
        &cc("claude-code-log/projects/-Users-dain-workspace-danieldemmel-me-next"),
        &project,
    );
    let agent = project.join("agent-c3d572ee.jsonl");
    let mut bytes = std::fs::read(&agent).unwrap();
    bytes.extend_from_slice(br#"{"type":"user","uuid":"torn"#);
    std::fs::write(&agent, bytes).unwrap();
    let torn = |cfg: &Path| {
        with_code(
            &json(&["check", "--format", "json", cfg.to_str().unwrap()]),
            "torn-tail",
        )
    };
    assert_eq!(torn(&cfg).len(), 1);

    let before = snapshot(&cfg);
    let main = project.join(format!("{WITH_AGENTS}.jsonl"));
    let doc = json(&[
        "repair",
        "--format",
        "json",
        main.to_str().unwrap(),
        "--session",
        WITH_AGENTS,
        "--out",
        t.path().join("out").to_str().unwrap(),
    ]);
    assert_eq!(snapshot(&cfg), before);
    let copy = &doc["copies"][0];
    let steps: Vec<String> = copy["next_steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc:#}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let pairs = put_in_place_pairs(&steps, Path::new(copy["dest"].as_str().unwrap()));
    assert!(pairs.iter().any(|(o, _)| *o == agent), "{steps:?}");

    // Follow the step: each original aside, its copy in its place.
    let aside = t.path().join("aside");
    std::fs::create_dir_all(&aside).unwrap();
    for (k, (original, copy)) in pairs.iter().enumerate() {
        std::fs::rename(original, aside.join(k.to_string())).unwrap();
        std::fs::copy(copy, original).unwrap();
    }
    assert_eq!(torn(&cfg), Vec::<Value>::new(), "{steps:?}");
}

/// A stand-in for `claude` on PATH that finds a session as Claude Code
/// does: `--resume ID` reads `$CLAUDE_CONFIG_DIR/projects/<cwd>/ID.jsonl`,
/// `<cwd>` the folder it runs in with every character but a letter or a
/// digit replaced by `-`. Returns the folder holding it.
fn fake_claude(root: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(
        &claude,
        r#"#!/bin/sh
[ "$1" = "--resume" ] || { echo "usage: claude --resume ID" >&2; exit 64; }
enc=$(pwd -P | sed 's/[^A-Za-z0-9]/-/g')
f="$CLAUDE_CONFIG_DIR/projects/$enc/$2.jsonl"
[ -f "$f" ] || { echo "No conversation found with session ID: $2 ($f)" >&2; exit 1; }
echo "resumed $f"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// The next steps of the one copy of a `repair --format json` document.
fn copy_steps(doc: &Value) -> Vec<String> {
    doc["copies"][0]["next_steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc:#}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The Claude Code resume step said `cd <the session's project folder> &&
/// CLAUDE_CONFIG_DIR=… claude --resume ID`: a placeholder (a shell syntax
/// error as printed), although every transcript line stores its `cwd`.
/// Now, when the stored cwd encodes to the folder the transcript is in (as
/// Claude Code looks a session up), the step is `cd <cwd, quoted> && …`,
/// and run as printed it resumes the copy; when it does not (a fixture
/// whose folder was renamed), the step is words naming the folder, with no
/// command that cannot work. Inputs are hashed before and after.
#[test]
fn the_resume_step_cds_into_the_stored_project_folder_and_resumes_as_printed() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let bin = fake_claude(&root);
    // A project folder that needs quoting and encoding (`.`, space, quote).
    let project = root.join("work.dir").join("my proj's");
    std::fs::create_dir_all(&project).unwrap();
    let enc: String = project
        .to_str()
        .unwrap()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    // double_compact (duplicate uuids, so repair writes a copy), its cwd
    // made the project folder.
    let text = std::fs::read_to_string(gen_file("double_compact")).unwrap();
    let stored = r#""cwd":"/home/dev/cc-dev/claude/double_compact/proj""#;
    assert!(text.contains(stored));
    let cwd_json = serde_json::to_string(project.to_str().unwrap()).unwrap();
    let text = text.replace(stored, &format!(r#""cwd":{cwd_json}"#));
    let cfg = root.join("cfg");
    let dir = cfg.join("projects").join(&enc);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{DOUBLE}.jsonl"));
    std::fs::write(&file, text).unwrap();
    let before = snapshot(&cfg);
    let out = root.join("out");
    let doc = json(&["repair", "--format", "json", p(&file), "--out", p(&out)]);
    assert_eq!(snapshot(&cfg), before, "an input was touched");
    let steps = copy_steps(&doc);
    let resume = steps
        .iter()
        .find(|s| s.contains("claude --resume"))
        .unwrap_or_else(|| panic!("{steps:?}"));
    assert!(resume.starts_with("cd "), "{resume}");
    assert!(!resume.contains('<'), "no placeholder: {resume}");
    // Run as printed, from another folder, with `claude` on PATH.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = std::process::Command::new("sh")
        .arg("-c")
        .arg(resume)
        .current_dir(&root)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{resume}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let resumed = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        resumed.trim(),
        format!(
            "resumed {}",
            out.join("projects")
                .join(&enc)
                .join(format!("{DOUBLE}.jsonl"))
                .display()
        ),
    );
    assert_eq!(snapshot(&cfg), before, "an input was touched");

    // A folder the stored cwd does not encode to (fixtures/…/-experiments-ideas
    // holds a session whose lines name /home/user/project): a torn tail to
    // repair, then words, no `cd`, no placeholder.
    let ideas = cfg.join("projects").join("-experiments-ideas");
    copy_dir(&cc("claude-code-log/projects/-experiments-ideas"), &ideas);
    let f = std::fs::read_dir(&ideas)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let mut bytes = std::fs::read(&f).unwrap();
    bytes.extend_from_slice(br#"{"type":"user","uuid":"torn"#);
    std::fs::write(&f, bytes).unwrap();
    let before = snapshot(&cfg);
    let doc = json(&[
        "repair",
        "--format",
        "json",
        p(&f),
        "--out",
        p(&root.join("out2")),
    ]);
    assert_eq!(snapshot(&cfg), before, "an input was touched");
    let steps = copy_steps(&doc);
    let resume = steps
        .iter()
        .find(|s| s.contains("claude --resume"))
        .unwrap_or_else(|| panic!("{steps:?}"));
    assert!(!resume.starts_with("cd "), "{resume}");
    assert!(!resume.contains("&&"), "{resume}");
    assert!(!resume.contains("<the session"), "{resume}");
    assert!(resume.contains("-experiments-ideas"), "{resume}");
    assert!(resume.contains("/home/user/project"), "{resume}");
}

/// A transcript kept outside a Claude Code `projects/` folder: its copy
/// cannot be laid out as Claude Code reads it, so the step says where to put
/// it. It named `~/.claude/projects` only, although Claude Code reads
/// `$CLAUDE_CONFIG_DIR/projects` when that is set; it now names both, with
/// the project folder the stored cwd encodes to.
#[test]
fn the_step_for_a_copy_outside_projects_names_claude_config_dir() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let src = root.join("loose");
    std::fs::create_dir_all(&src).unwrap();
    let file = src.join(format!("{DOUBLE}.jsonl"));
    std::fs::copy(gen_file("double_compact"), &file).unwrap();
    let before = snapshot(&src);
    let doc = json(&[
        "repair",
        "--format",
        "json",
        p(&file),
        "--out",
        p(&root.join("out")),
    ]);
    assert_eq!(snapshot(&src), before, "an input was touched");
    let steps = copy_steps(&doc);
    let put = steps
        .iter()
        .find(|s| s.starts_with("put the copy at"))
        .unwrap_or_else(|| panic!("{steps:?}"));
    assert!(
        put.contains(&format!(
            "~/.claude/projects/-home-dev-cc-dev-claude-double-compact-proj/{DOUBLE}.jsonl"
        )),
        "{put}"
    );
    assert!(put.contains("$CLAUDE_CONFIG_DIR/projects"), "{put}");
    assert!(
        put.contains("cd /home/dev/cc-dev/claude/double_compact/proj && claude --resume"),
        "{put}"
    );
}
