//! Codex rollouts: findings, totals and views on the real rollouts in
//! fixtures/codex (copied from shared/real-sessions/codex-gen and
//! codex/localpush; see fixtures/README.md), damaged copies made at test time,
//! and originals left untouched by every command.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const MULTI: &str = "01a20327-d155-7513-b850-ad26df82d9ed";
const NOPROGRESS: &str = "01a20327-ec1f-7132-af6f-feec204262bf";
/// localpush: the rollout with a remote compaction and a 940,499-token record.
const COMPACTED: &str = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9";
/// localpush: the rollout that ends with a call without output.
const PENDING: &str = "019c8a53-a0dd-7130-bcd7-95445d84846a";
const SMALL: &str = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff";
const LEGACY: &str = "5e1c2a9b-0c1d-4e5f-8a9b-0c1d2e3f4a5b";

fn cx(rel: &str) -> PathBuf {
    fixtures().join("codex").join(rel)
}

fn gen(scenario: &str) -> PathBuf {
    cx(&format!("codex-gen/{scenario}"))
}

/// The only rollout file under `dir`.
fn rollout(dir: &Path) -> PathBuf {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rollout-")
        })
        .expect("a rollout")
}

fn localpush(id: &str) -> PathBuf {
    std::fs::read_dir(cx("localpush/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(id))
        .unwrap()
}

fn check(p: &Path) -> Value {
    json(&["check", "--format", "json", p.to_str().unwrap()])
}

fn list_row(p: &Path, id: &str) -> Value {
    let doc = json(&["list", "--format", "json", p.to_str().unwrap()]);
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {doc:#}"))
}

fn totals(row: &Value) -> [u64; 4] {
    let t = &row["tokens_total"];
    ["input", "output", "cache_read", "cache_write"].map(|k| t[k].as_u64().unwrap())
}

#[test]
fn noprogress_reports_its_back_to_back_compactions_as_a_loop() {
    let doc = check(&gen("noprogress"));
    let f = with_code(&doc, "compaction-loop");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(f[0]["compactions"], 7);
    // Compactions 2 to 6 follow a compaction whose context never dropped
    // (first non-zero count after each = 19006, 19008, ... in MANIFEST.md);
    // the 7th comes after a normal-sized summarization request.
    assert_eq!(f[0]["stalls"], 5);
    // Trigger = last request's last_token_usage.total_tokens before each
    // compacted line (input 19005, 19007, ... 7210 + output, MANIFEST.md).
    assert_eq!(
        f[0]["tokens"],
        json!([19058, 19060, 19062, 19064, 19066, 19068, 7263])
    );
    assert_eq!(
        f[0]["compaction_ids"],
        json!(["L44", "L59", "L74", "L89", "L104", "L119", "L136"])
    );
    // Nothing else: every call has its output, counts fit the 20k window.
    assert_eq!(findings(&doc).len(), 1, "{doc:#}");
}

#[test]
fn multi_compacts_twice_with_progress_and_is_healthy() {
    let doc = check(&gen("multi"));
    assert!(findings(&doc).is_empty(), "{doc:#}");
    let s = &doc["sessions"][0];
    assert_eq!(s["budget"]["limits"]["input"], 19000);
    assert_eq!(s["budget"]["limits"]["context"], 20000);
    bin()
        .args(["check", "--fail-on", "info"])
        .arg(gen("multi"))
        .assert()
        .code(0);
}

#[test]
fn list_totals_equal_ccusage_and_the_last_cumulative_total() {
    // ccusage 20.0.24 `codex session --offline --json` (MANIFEST.md for
    // codex-gen; the same command on copies of the localpush rollouts):
    // input (uncached), output, cache read, cache write.
    let cases: [(PathBuf, &str, [u64; 4]); 5] = [
        (gen("multi"), MULTI, [28194, 2141, 112752, 0]),
        (gen("noprogress"), NOPROGRESS, [56399, 642, 225560, 0]),
        (cx("localpush"), COMPACTED, [2188981, 133999, 31621504, 0]),
        (cx("localpush"), PENDING, [403949, 36950, 6337024, 0]),
        (cx("localpush"), SMALL, [59525, 1123, 238848, 0]),
    ];
    for (dir, id, want) in cases {
        let row = list_row(&dir, id);
        assert_eq!(totals(&row), want, "{id}: {row:#}");
        assert_eq!(row["agent"], "codex");
    }
    let row = list_row(&gen("noprogress"), NOPROGRESS);
    assert_eq!(row["compactions"], 7);
    assert_eq!(row["payload_bytes"], 211116, "every byte of the file");
    // Last request: 7064 input + 15 output.
    assert_eq!(row["context_tokens"], 7079);
    assert_eq!(row["title"], "Step 1: warm up. TOOL:sh pwd");
    let row = list_row(&gen("multi"), MULTI);
    assert_eq!(row["compactions"], 2);
    assert_eq!(row["payload_bytes"], 177219);
}

#[test]
fn the_report_says_the_running_total_includes_summarization_requests() {
    // Stub input over all requests 281959, over non-summarization requests
    // 160689 (MANIFEST.md): the 7 summarization requests took 121270.
    let doc = check(&gen("noprogress"));
    let notes = doc["sessions"][0]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| {
            let n = n.as_str().unwrap();
            n.contains("summarization") && n.contains("7 found") && n.contains("121270 input")
        }),
        "{notes:#?}"
    );
    // multi: 140946 - 123959 = 16987.
    let row = list_row(&gen("multi"), MULTI);
    assert!(
        row["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("2 found for 2 compaction(s), 16987 input")),
        "{row:#}"
    );
    let out = bin().args(["list"]).arg(gen("multi")).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("summarization"));
}

#[test]
fn new_line_types_are_kept_and_counted() {
    let row = list_row(&gen("multi"), MULTI);
    assert!(
        row["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "line types kept as metadata: token_usage_record 16, world_state 3"),
        "{row:#}"
    );
    // 138 lines: 36 hold messages (the response items, the 2 compacted
    // lines, 2 token_count estimates kept as usage records), plus the 17
    // items of the compacted lines' replacement_history; the other 102 hold
    // none (the session_meta header and the metadata Codex never sends).
    assert_eq!(row["messages"], 36 + 7 + 10);
    assert_eq!(row["metadata_lines"], 102);
}

#[test]
fn visible_view_starts_at_the_newest_replacement_history() {
    let p = gen("noprogress");
    let doc = json(&[
        "inspect",
        "--format",
        "json",
        "--session",
        NOPROGRESS,
        p.to_str().unwrap(),
    ]);
    let msgs = doc["sessions"][0]["messages"].as_array().unwrap();
    let visible: Vec<&str> = msgs
        .iter()
        .filter(|m| m["flags"].as_array().unwrap().contains(&json!("visible")))
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(visible[0], "L136.rh0");
    assert_eq!(visible[6], "L136");
    // Lines 146 to 148 (events) hold no message.
    assert_eq!(*visible.last().unwrap(), "L145");
    assert_eq!(doc["sessions"][0]["visible_messages"], visible.len());
    let marker = msgs.iter().find(|m| m["id"] == "L136").unwrap();
    assert_eq!(marker["role"], "compacted");
    assert_eq!(marker["line"], 136);
    assert!(marker["flags"]
        .as_array()
        .unwrap()
        .contains(&json!("compaction")));
    // The summarization answer before each compacted line is flagged summary.
    let answer = msgs.iter().find(|m| m["id"] == "L41").unwrap();
    assert!(answer["flags"]
        .as_array()
        .unwrap()
        .contains(&json!("summary")));
    // Its usage is the summarization request's (19005 input, 15204 cached).
    assert_eq!(answer["tokens_reported"]["cache_read"], 15204);
}

#[test]
fn a_call_without_output_is_an_unfinished_tool_call() {
    let doc = check(&localpush(PENDING));
    let f = with_code(&doc, "unfinished-tool-call");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["call_id"], "call_BpTazJ89W9PntRqGPwDNfwEY");
    assert_eq!(f[0]["tool"], "exec_command");
    assert_eq!(f[0]["message_id"], "L826");
}

#[test]
fn a_persisted_count_above_the_window_is_impossible_usage() {
    let doc = check(&localpush(COMPACTED));
    let f = with_code(&doc, "impossible-usage");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "warning");
    assert_eq!(f[0]["tokens"], 940499);
    // Stored window 258400 = 95% of the model's 272000.
    assert_eq!(f[0]["context"], 272000);
    assert_eq!(f[0]["message_ids"], json!(["L1787", "L1791"]));
    // One remote compaction: no loop; its trigger is the last request (212134).
    assert!(with_code(&doc, "compaction-loop").is_empty());
    assert_eq!(findings(&doc).len(), 1, "{doc:#}");
}

#[test]
fn the_older_envelope_less_format_loads() {
    let p = cx("legacy-format");
    let row = list_row(&p, LEGACY);
    // The header and 4 `record_type` lines hold no message.
    assert_eq!(row["messages"], 5);
    assert_eq!(row["metadata_lines"], 5);
    assert_eq!(row["media_bytes"], 66, "the 1x1 PNG, decoded");
    assert_eq!(row["title"], "Describe this image and list the files.");
    assert!(findings(&check(&p)).is_empty());
}

/// A temp copy of `src` with `edit` applied to its text.
fn damaged(src: &Path, edit: impl Fn(&str) -> String) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(src.file_name().unwrap());
    let text = std::fs::read_to_string(src).unwrap();
    std::fs::write(&p, edit(&text)).unwrap();
    (d, p)
}

#[test]
fn a_torn_last_line_and_a_bad_line_are_findings_and_the_rest_is_read() {
    let src = rollout(&gen("multi"));
    let (_d, p) = damaged(&src, |t| {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[9] = "{not json".into();
        let last = lines.pop().unwrap();
        format!("{}\n{}", lines.join("\n"), &last[..last.len() / 2])
    });
    let doc = check(&p);
    let torn = with_code(&doc, "torn-tail");
    assert_eq!(torn.len(), 1, "{doc:#}");
    assert_eq!(torn[0]["message_id"], "L138");
    assert!(torn[0]["place"].as_str().unwrap().ends_with(":line 138"));
    let bad = with_code(&doc, "unreadable");
    assert_eq!(bad.len(), 1, "{doc:#}");
    assert!(bad[0]["place"].as_str().unwrap().ends_with(":line 10"));
    // Everything else is read: both compactions, and every line is a message
    // line or one that holds none (the two damaged lines among those). The
    // call on line 10 is gone, so the token count after it stays on its own
    // line, a usage record: 36 message lines as in the original (whose 53
    // messages count 17 replacement_history items) and 102 other lines.
    let row = list_row(&p, MULTI);
    assert_eq!(row["messages"], 36 + 17);
    assert_eq!(row["metadata_lines"], 102);
    assert_eq!(row["compactions"], 2);
    assert_eq!(row["payload_bytes"], std::fs::metadata(&p).unwrap().len());
}

#[test]
fn default_paths_read_codex_home() {
    let home = tempfile::tempdir().unwrap();
    let codex = home.path().join("codex");
    copy_dir(&gen("multi").join("sessions"), &codex.join("sessions"));
    copy_dir(&cx("localpush/sessions"), &codex.join("archived_sessions"));
    let out = bin()
        .args(["list", "--format", "json"])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("none"))
        .env("CODEX_HOME", &codex)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4, "{doc:#}");
    assert!(ids.contains(&MULTI) && ids.contains(&COMPACTED));
}

#[test]
fn reading_commands_leave_originals_untouched() {
    let before = snapshot(&cx(""));
    for args in [
        vec!["list".to_string()],
        vec!["list".into(), "--format".into(), "json".into()],
        vec!["check".into(), "--format".into(), "json".into()],
        vec![
            "inspect".into(),
            "--session".into(),
            COMPACTED.into(),
            "--top".into(),
            "5".into(),
        ],
    ] {
        let o = bin().args(&args).arg(cx("")).output().unwrap();
        assert!(o.status.code().is_some_and(|c| c <= 1), "{args:?}");
        assert_eq!(snapshot(&cx("")), before, "{args:?} changed fixtures/codex");
    }
}

/// Runs `args` (JSON output) and returns the document.
fn run_json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    json(&a)
}

/// `compact --session id --out out` of the rollouts under `dir` (JSON), with
/// `extra` flags.
fn compact(dir: &Path, id: &str, out: &Path, extra: &[&str]) -> Value {
    let mut a = vec![
        "compact",
        dir.to_str().unwrap(),
        "--session",
        id,
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(extra);
    run_json(&a)
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn repair_drops_a_torn_tail_and_copies_every_other_line_byte_for_byte() {
    let src = rollout(&gen("noprogress"));
    let (d, p) = damaged(&src, |t| t[..t.len() - 300].to_string());
    let before = snapshot(d.path());
    let out = tempfile::tempdir().unwrap();
    let doc = run_json(&[
        "repair",
        p.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(
        snapshot(d.path()),
        before,
        "the damaged original is untouched"
    );
    let ch = doc["changes"].as_array().unwrap();
    assert_eq!(ch.len(), 1, "{doc:#}");
    assert_eq!(ch[0]["message_id"], "L148");
    // Not under a Codex home: laid out as Codex would, from the file name's date.
    let copy = out
        .path()
        .join("sessions/2026/11/22")
        .join(src.file_name().unwrap());
    assert_eq!(doc["copies"][0]["dest"], copy.to_str().unwrap());
    let text = std::fs::read_to_string(&p).unwrap();
    let kept = &text[..text.rfind('\n').unwrap() + 1];
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), kept);
    let doc = check(&copy);
    assert!(with_code(&doc, "torn-tail").is_empty(), "{doc:#}");
    assert_eq!(with_code(&doc, "compaction-loop").len(), 1);
}

#[test]
fn repair_of_healthy_rollouts_writes_identical_copies_in_the_same_layout() {
    let out = tempfile::tempdir().unwrap();
    let doc = run_json(&[
        "repair",
        cx("localpush").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(doc["changes"].as_array().unwrap().is_empty(), "{doc:#}");
    assert_eq!(doc["copies"].as_array().unwrap().len(), 3);
    assert_eq!(
        snapshot(&cx("localpush/sessions")),
        snapshot(&out.path().join("sessions"))
    );
    // --out inside the Codex home (the folder holding sessions/) is refused.
    let inside = cx("localpush").join("out");
    bin()
        .args(["repair", cx("localpush").to_str().unwrap(), "--out"])
        .arg(&inside)
        .assert()
        .code(2);
    assert!(!inside.exists());
}

#[test]
fn compact_keeps_session_meta_the_newest_compacted_line_and_what_follows() {
    let src = rollout(&gen("noprogress"));
    let before = snapshot(&cx(""));
    let out = tempfile::tempdir().unwrap();
    let doc = compact(&gen("noprogress"), NOPROGRESS, out.path(), &[]);
    assert_eq!(snapshot(&cx("")), before, "originals untouched");
    assert_eq!(doc["written"], true, "{doc:#}");
    let steps: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    // The session fits: only history goes, to the newest compacted line
    // (and, for its compaction loop, fewer turns until the kept tail is
    // below 95% of the last trigger).
    assert!(
        !steps.is_empty() && steps.iter().all(|s| *s == "cut-history"),
        "{steps:?}"
    );
    let copy = out
        .path()
        .join("sessions/2026/11/22")
        .join(src.file_name().unwrap());
    assert_eq!(doc["dest"], copy.to_str().unwrap());
    let orig = lines(&src);
    let got = lines(&copy);
    assert_eq!(got[0], orig[0], "session_meta");
    // Line 136, the newest compacted line (its replacement history cut to
    // fewer turns for the loop, with a note), and everything after it.
    assert!(got[1].contains("\"type\":\"compacted\""), "{}", got[1]);
    assert_eq!(
        got[2..],
        orig[136..],
        "what follows the newest compacted line"
    );
    // What the plan measured is what the copy holds.
    let after = &doc["steps"].as_array().unwrap().last().unwrap()["after"];
    let row = list_row(out.path(), NOPROGRESS);
    assert_eq!(row["payload_bytes"], after["payload_bytes"]);
    assert_eq!(row["messages"], after["messages"]);
    assert_eq!(
        row["payload_bytes"],
        std::fs::metadata(&copy).unwrap().len()
    );
    // One compaction left: no loop; the next turn is what it was.
    let c = check(out.path());
    assert!(findings(&c).is_empty(), "{c:#}");
    assert_eq!(row["compactions"], 1);
    assert_eq!(row["context_tokens"], 7079);
}

/// Issue 8: a history cut is one edit per run of dropped messages (a 1 GB
/// rollout's cut was 2.4 million edits), described as one change with the
/// lines it drops: its messages' lines and the lines among them that hold
/// no message (events, turn contexts); the runs name exactly the lines the
/// copy no longer holds.
#[test]
fn issue8_a_cut_is_described_as_runs_of_the_lines_the_copy_drops() {
    let src = rollout(&gen("noprogress"));
    let out = tempfile::tempdir().unwrap();
    let doc = compact(&gen("noprogress"), NOPROGRESS, out.path(), &[]);
    let orig = lines(&src);
    let mut dropped = std::collections::BTreeSet::new();
    let mut runs = 0;
    let mut stands_for = 0;
    for c in doc["changes"].as_array().unwrap() {
        if c["field"] != "line" {
            stands_for += 1;
            continue;
        }
        assert!(c["new"].is_null(), "{c:#}");
        // Every dropped line goes in a run: one edit for its messages.
        stands_for += c["figures"]["messages"].as_u64().unwrap();
        let Some(r) = c.get("run") else {
            // The second cut (fewer turns, for the loop) drops items of
            // the kept compacted line's history only.
            assert!(
                c["old"].as_str().unwrap().starts_with("items 0 to 3"),
                "{c:#}"
            );
            continue;
        };
        runs += 1;
        let (a, b) = (
            r["first_line"].as_u64().unwrap(),
            r["last_line"].as_u64().unwrap(),
        );
        let first: u64 = c["message_id"].as_str().unwrap()[1..].parse().unwrap();
        assert!(a <= first, "{c:#}");
        let last: u64 = r["last_message_id"].as_str().unwrap()[1..].parse().unwrap();
        assert!(last <= b, "{c:#}");
        assert_eq!(r["lines"], b - a + 1);
        let bytes: usize = (a..=b).map(|n| orig[n as usize - 1].len() + 1).sum();
        assert_eq!(r["bytes"], bytes as u64, "{c:#}");
        dropped.extend(a..=b);
    }
    assert_eq!(runs, 1, "{doc:#}");
    // Every edit of the plan is one change or a run's messages.
    let edits: u64 = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["edits"].as_u64().unwrap())
        .sum();
    assert_eq!(stands_for, edits);
    // The copy keeps session_meta and lines 136 on (136 rewritten): 2 to 135
    // go, the lines between the messages that hold none with them.
    assert_eq!(dropped, (2..=135).collect());
    let copy = out
        .path()
        .join("sessions/2026/11/22")
        .join(src.file_name().unwrap());
    assert_eq!(lines(&copy).len(), orig.len() - dropped.len());
}

#[test]
fn compact_strips_historical_images_and_keeps_one_copy() {
    let dir = cx("derived-image");
    let id = "01a20327-d155-7513-b850-ad26df82d9ee";
    let doc = check(&dir);
    let f = with_code(&doc, "media-in-history");
    assert_eq!(f.len(), 1, "{doc:#}");
    // One PNG stored 5 times: 2 response items, 1 copy in the first
    // replacement_history, 2 in the newest; the newest copy is kept.
    assert_eq!(f[0]["media_count"], 4);
    assert_eq!(f[0]["distinct_media"], 1);
    assert_eq!(f[0]["media"][0]["repeats"], 5);
    assert_eq!(f[0]["media"][0]["bytes"], 1795);
    assert_eq!(f[0]["kept_message_id"], "L111.rh4");
    assert_eq!(
        f[0]["message_ids"],
        json!(["L23", "L59.rh1", "L73", "L111.rh1"])
    );
    let out = tempfile::tempdir().unwrap();
    let plan = compact(&dir, id, out.path(), &[]);
    assert_eq!(plan["steps"][0]["step"], "strip-media");
    assert_eq!(plan["steps"][0]["edits"], 4);
    let row = list_row(out.path(), id);
    assert_eq!(row["media_bytes"], 1795, "one image left: the newest");
    let c = check(out.path());
    assert!(with_code(&c, "media-in-history").is_empty(), "{c:#}");
    let text = std::fs::read_to_string(rollout(out.path())).unwrap();
    assert_eq!(text.matches("data:image/png;base64,").count(), 1);
    assert_eq!(
        text.matches("removed by session-doctor compact, 1795 bytes")
            .count(),
        1,
        "the duplicate in the kept replacement_history became a placeholder"
    );
}

#[test]
fn compact_keep_turns_cuts_inside_the_replacement_history_with_a_note() {
    let src = rollout(&gen("multi"));
    let out = tempfile::tempdir().unwrap();
    let plan = compact(&gen("multi"), MULTI, out.path(), &["--keep-turns", "4"]);
    assert_eq!(plan["written"], true, "{plan:#}");
    let copy = rollout(out.path());
    let got = lines(&copy);
    assert_eq!(got[0], lines(&src)[0]);
    let compacted: Value = serde_json::from_str(&got[1]).unwrap();
    assert_eq!(compacted["type"], "compacted");
    let rh = compacted["payload"]["replacement_history"]
        .as_array()
        .unwrap();
    // The last 4 user turns are steps 6 to 9: of the 10 items, steps 1 to 5
    // are gone (the environment context and the summary are no turns).
    assert_eq!(rh.len(), 5, "{rh:#?}");
    // The per-item metadata Codex 0.169 keeps beside it follows.
    assert_eq!(
        compacted["payload"]["replacement_history_metadata"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        compacted["payload"]["replacement_history_metadata"][0]["retained_source"]["id"]
            ["message_id"],
        rh[0]["id"]
    );
    let first = &rh[0]["content"];
    assert!(first[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("[session-doctor compact:"));
    assert!(first[1]["text"].as_str().unwrap().starts_with("Step 6"));
    let row = list_row(out.path(), MULTI);
    assert_eq!(row["messages"], plan["steps"][0]["after"]["messages"]);
    assert_eq!(
        row["payload_bytes"],
        std::fs::metadata(&copy).unwrap().len()
    );
}

#[test]
fn compact_truncates_tool_output_and_arguments_keeping_arguments_json() {
    // A temp copy of multi whose last turn carries a 60k-character tool
    // output and 20k characters of arguments.
    let d = tempfile::tempdir().unwrap();
    let src = rollout(&gen("multi"));
    let dir = d.path().join("home/sessions/2026/11/22");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(src.file_name().unwrap());
    let mut out = String::new();
    for (i, l) in std::fs::read_to_string(&src).unwrap().lines().enumerate() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        let item = v["type"] == "response_item";
        let pl = &mut v["payload"];
        if i + 1 > 111 && item {
            if pl["type"] == "function_call_output" {
                let o = format!("{}{}END", pl["output"].as_str().unwrap(), "x".repeat(60000));
                pl["output"] = json!(o);
            } else if pl["type"] == "function_call" {
                pl["arguments"] =
                    json!(json!({"cmd": format!("echo {}", "y".repeat(20000))}).to_string());
            }
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    std::fs::write(&p, out).unwrap();
    let before = snapshot(d.path());
    let o = tempfile::tempdir().unwrap();
    // The copy calibrates on the first turn it keeps (4,319 tokens of
    // overhead on 5,029 estimated): 9,348 tokens, over an 8,000-token
    // context, which compact once said fits (planned with no overhead, the
    // original's last count lying under the estimate of what follows it).
    let flags = ["--context", "12000", "--max-output", "1000"];
    let plan = compact(&p, MULTI, o.path(), &flags);
    assert_eq!(snapshot(d.path()), before);
    let steps: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["truncate-tool-output", "truncate-text", "cut-history"],
        "{plan:#}"
    );
    assert_eq!(plan["fits"], true);
    let fields: Vec<&str> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .filter(|f| *f == "payload.output" || *f == "payload.arguments")
        .collect();
    assert_eq!(fields, ["payload.output", "payload.arguments"]);
    let copy = rollout(o.path());
    let text = std::fs::read_to_string(&copy).unwrap();
    assert_eq!(
        text.matches("characters removed by session-doctor compact")
            .count(),
        2
    );
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["payload"]["type"] == "function_call" {
            let args: Value =
                serde_json::from_str(v["payload"]["arguments"].as_str().unwrap()).unwrap();
            assert!(args["cmd"].as_str().unwrap().len() < 9000);
        }
    }
    // The plan's figures are what the copy holds.
    let last = &plan["steps"][2]["after"];
    let row = list_row(o.path(), MULTI);
    assert_eq!(row["payload_bytes"], last["payload_bytes"]);
    assert_eq!(
        row["payload_bytes"],
        std::fs::metadata(&copy).unwrap().len()
    );
    // Usage is untouched: the copy keeps its token_count lines after the cut.
    assert_eq!(row["context_tokens"], 7490);
    // Within the budget, as `check` measures the copy.
    let mut args = vec!["check", "--format", "json"];
    args.extend(flags);
    let copy_dir = o.path().display().to_string();
    args.push(&copy_dir);
    let again = json(&args);
    assert!(
        with_code(&again, "over-budget").is_empty(),
        "{:#?}",
        with_code(&again, "over-budget")
    );
}

#[test]
fn writing_commands_leave_originals_untouched() {
    let root = cx("");
    let before = snapshot(&root);
    let out = tempfile::tempdir().unwrap();
    let o = |n: &str| out.path().join(n).display().to_string();
    let r = root.display().to_string();
    let runs: Vec<Vec<String>> = vec![
        vec![
            "repair".into(),
            r.clone(),
            "--out".into(),
            o("r"),
            "--dry-run".into(),
        ],
        vec!["repair".into(), r.clone(), "--out".into(), o("r")],
        vec![
            "repair".into(),
            r.clone(),
            "--out".into(),
            o("r"),
            "--force".into(),
        ],
        vec![
            "compact".into(),
            gen("noprogress").display().to_string(),
            "--session".into(),
            NOPROGRESS.into(),
            "--out".into(),
            o("c"),
        ],
        vec![
            "compact".into(),
            localpush(COMPACTED).display().to_string(),
            "--session".into(),
            COMPACTED.into(),
            "--out".into(),
            o("c"),
            "--keep-turns".into(),
            "2".into(),
        ],
        vec![
            "compact".into(),
            cx("derived-image").display().to_string(),
            "--session".into(),
            "01a20327-d155-7513-b850-ad26df82d9ee".into(),
            "--out".into(),
            o("c"),
            "--dry-run".into(),
        ],
    ];
    for args in runs {
        let res = bin().args(&args).output().unwrap();
        assert_eq!(
            res.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        assert_eq!(snapshot(&root), before, "{args:?} changed fixtures/codex");
    }
    // repair without --session copies every rollout, each under its Codex home.
    assert!(out
        .path()
        .join("r/codex-gen/noprogress/sessions/2026/11/22")
        .is_dir());
    assert!(out.path().join("r/localpush/sessions").is_dir());
}

#[test]
fn size_rules_measure_codex_against_flags() {
    // A 8000-token model: the next turn (7079 reported + what follows) is over
    // its usable 6200, and the 19k counts the session stored are impossible.
    let p = gen("noprogress");
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--context",
        "8000",
        "--max-output",
        "1000",
        p.to_str().unwrap(),
    ]);
    let f = with_code(&doc, "over-budget");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["usable"], 6200);
    assert_eq!(f[0]["tokens_source"], "reported");
    assert!(f[0]["tokens"].as_u64().unwrap() > 6200);
    assert!(!with_code(&doc, "impossible-usage").is_empty());
    // An 8000-byte request limit: the image rollout's visible history (8947
    // bytes, two base64 copies of the image included) is over it.
    let p = cx("derived-image");
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--max-request-bytes",
        "8000",
        "--headroom",
        "0",
        p.to_str().unwrap(),
    ]);
    let f = with_code(&doc, "payload-too-large");
    assert!(!f.is_empty(), "{doc:#}");
    assert_eq!(f[0]["max_request_bytes"], 8000);
    assert_eq!(f[0]["visible_bytes"], 8947);
    // The kept image is counted in the visible media.
    assert_eq!(
        f[0]["media_bytes"], 3590,
        "two copies in the newest replacement_history"
    );
}

/// `next_steps` of a copy (compact's single-session document).
fn next_steps(doc: &Value) -> Vec<String> {
    doc["next_steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc:#}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The next steps told the user to `cp ~/.codex/config.toml
/// ~/.codex/auth.json` into the copy's Codex home whatever home the rollout
/// came from: for a rollout of `$CODEX_HOME` or any other Codex home it
/// copied another home's settings and login, or failed when `~/.codex` has
/// none. They now copy from the Codex home holding the rollout's
/// `sessions/` folder, and, for a rollout in no Codex home, say so in words
/// instead of printing a `cp` that cannot work.
#[test]
fn the_settings_step_copies_from_the_codex_home_the_rollout_is_in() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cx");
    copy_dir(&gen("noprogress"), &home);
    std::fs::write(home.join("config.toml"), "model = \"x\"\n").unwrap();
    std::fs::write(home.join("auth.json"), "{}\n").unwrap();
    let before = snapshot(&home);
    let out = t.path().join("o");
    let mut a = vec![
        "compact",
        home.to_str().unwrap(),
        "--session",
        NOPROGRESS,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    let o = bin().env("CODEX_HOME", &home).args(&a).output().unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["written"], true, "{doc:#}");
    let steps = next_steps(&doc);
    assert!(!steps.iter().any(|s| s.contains("~/.codex")), "{steps:?}");
    let cp = format!(
        "cp {} {} {}/",
        home.join("config.toml").display(),
        home.join("auth.json").display(),
        out.display()
    );
    assert!(steps[0].starts_with(&cp), "{steps:?}");
    let ran = std::process::Command::new("sh")
        .arg("-c")
        .arg(&steps[0])
        .status()
        .unwrap();
    assert!(ran.success(), "{}", steps[0]);
    assert!(out.join("config.toml").is_file() && out.join("auth.json").is_file());
    assert_eq!(snapshot(&home), before);

    // A lone rollout, in no Codex home: no `cp`, a sentence.
    let lone = t.path().join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    let src = rollout(&gen("noprogress"));
    std::fs::copy(&src, lone.join(src.file_name().unwrap())).unwrap();
    let before = snapshot(&lone);
    let out2 = t.path().join("o2");
    a[1] = lone.to_str().unwrap();
    a[5] = out2.to_str().unwrap();
    let doc = json(&a);
    assert_eq!(doc["written"], true, "{doc:#}");
    let steps = next_steps(&doc);
    assert!(!steps.iter().any(|s| s.starts_with("cp ")), "{steps:?}");
    assert!(
        steps[0].starts_with("put config.toml and auth.json from the Codex home you use into ")
            && steps[0].contains("is in no Codex home"),
        "{steps:?}"
    );
    assert_eq!(snapshot(&lone), before);
}
