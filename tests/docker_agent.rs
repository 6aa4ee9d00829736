//! docker-agent (formerly cagent): list, inspect, check, repair and compact on
//! every database in fixtures/docker-agent (real e2e databases with their
//! `-wal`, the same brought to the newest schema, and derived scenarios; see
//! fixtures/docker-agent/PROVENANCE.md), against the facts of its
//! `expected.json`. Copies are checked by scripts/check_docker_agent_copy.py
//! (no docker-agent binary can run here): integrity, foreign keys, identical
//! `migrations` and schema, every row not reported as edited byte-identical,
//! and the view docker-agent's `GetMessages` rebuilds.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const SESSION_DB: &str = "87ff468b-ffa0-4785-9649-7c9d3ff94482";
const DESKTOP_ROOT: &str = "be093bbe-4feb-4231-b868-77ae0d72c1ca";
const TRANSFER_ROOT: &str = "15874f47-5e7b-4e60-84fb-7905fc4cddce";
const TWO_SESSIONS: &str = "9bd7326a-1f38-4000-adc9-514ac8ef07b7";
const RAW_ERRORS: &str = "0d0d0d0d-0000-4000-8000-00000000000d";
const ONE_SESSION: &str = "d52cfacd-23f8-4109-b196-8b075baddc2b";

fn da(rel: &str) -> PathBuf {
    fixtures().join("docker-agent").join(rel)
}

fn expected() -> &'static Value {
    static E: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    E.get_or_init(|| {
        serde_json::from_str(&std::fs::read_to_string(da("expected.json")).unwrap()).unwrap()
    })
}

/// Every fixture database: (group, file name).
fn every_db() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (group, files) in expected().as_object().unwrap() {
        for f in files.as_object().unwrap().keys() {
            out.push((group.clone(), f.clone()));
        }
    }
    out
}

fn facts(group: &str, file: &str) -> &'static Value {
    &expected()[group][file]
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn check_doc(path: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(p(path));
    json(&args)
}

/// Findings of session `sid` in a `check` document.
fn session_findings(doc: &Value, sid: &str) -> Vec<Value> {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == sid)
        .flat_map(|s| s["findings"].as_array().unwrap().clone())
        .collect()
}

/// An expected `view_sources` entry as a message id.
fn source_id(v: &Value, summaries: &[Value]) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) if s == "summary" => summaries.last().unwrap()["item_id"].to_string(),
        Value::String(s) => s.clone(),
        _ => panic!("{v}"),
    }
}

#[test]
fn list_counts_sessions_items_and_summaries_of_every_fixture() {
    for (group, file) in every_db() {
        let path = da(&format!("{group}/{file}"));
        let doc = json(&["list", "--format", "json", p(&path)]);
        assert_eq!(doc["errors"], serde_json::json!([]), "{file}");
        let rows = doc["sessions"].as_array().unwrap();
        let want = facts(&group, &file)["sessions"].as_object().unwrap();
        let got: BTreeSet<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
        let want_ids: BTreeSet<&str> = want.keys().map(String::as_str).collect();
        assert_eq!(got, want_ids, "{group}/{file}");
        for r in rows {
            assert_eq!(r["agent"], "docker-agent");
            let w = &want[r["id"].as_str().unwrap()];
            let skipped = w["skipped"].as_array().unwrap().len() as u64;
            assert_eq!(
                r["messages"].as_u64().unwrap(),
                w["items"].as_u64().unwrap() + skipped,
                "{group}/{file} {}",
                r["id"]
            );
            assert_eq!(
                r["compactions"].as_u64().unwrap(),
                w["summaries"].as_array().unwrap().len() as u64,
                "{group}/{file} {}",
                r["id"]
            );
        }
    }
}

/// The view session-doctor computes is the one the verifier rebuilds
/// (expected.json): the same stored items, in the same number, with the
/// same bytes (message JSON as stored, the summary as "Session Summary: "
/// plus its text, 18 bytes per injected "No result provided").
#[test]
fn the_view_matches_the_rebuild_of_get_messages_on_every_fixture() {
    for (group, file) in every_db() {
        let path = da(&format!("{group}/{file}"));
        for (sid, w) in facts(&group, &file)["sessions"].as_object().unwrap() {
            let doc = json(&["inspect", "--format", "json", "--session", sid, p(&path)]);
            let s = &doc["sessions"][0];
            let injected = w["view_injected_tool_results"].as_u64().unwrap();
            assert_eq!(
                s["visible_messages"].as_u64().unwrap() + injected,
                w["view_messages"].as_u64().unwrap(),
                "{group}/{file} {sid}"
            );
            let summaries = w["summaries"].as_array().unwrap();
            let want: BTreeSet<String> = w["view_sources"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| *v != "synthetic-tool-result")
                .map(|v| source_id(v, summaries))
                .collect();
            let mut got = BTreeSet::new();
            let mut bytes = injected * 18;
            for m in s["messages"].as_array().unwrap() {
                let flags: Vec<&str> = m["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect();
                if !flags.contains(&"visible") {
                    continue;
                }
                got.insert(m["id"].as_str().unwrap().to_string());
                bytes += if flags.contains(&"summary") {
                    "Session Summary: ".len() as u64
                        + m["parts"][0]["payload_bytes"].as_u64().unwrap()
                } else {
                    m["payload_bytes"].as_u64().unwrap()
                };
            }
            assert_eq!(got, want, "{group}/{file} {sid}");
            assert_eq!(
                bytes,
                w["view_bytes"].as_u64().unwrap(),
                "{group}/{file} {sid}"
            );
        }
    }
}

#[test]
fn healthy_fixtures_have_no_findings() {
    for (group, file) in [
        ("real", "desktop.db"),
        ("real", "one-session.db"),
        ("real", "session.db"),
        ("real", "transfer-task.db"),
        ("real", "two-sessions.db"),
        ("migrated", "desktop.db"),
        ("migrated", "session.db"),
        ("migrated", "transfer-task.db"),
        ("derived", "compacted-healthy.db"),
        ("derived", "compacted-keep-nothing.db"),
    ] {
        let doc = check_doc(&da(&format!("{group}/{file}")), &[]);
        assert!(findings(&doc).is_empty(), "{group}/{file}: {:#}", doc);
    }
}

#[test]
fn stale_first_kept_entries_are_found_with_the_compactor_value() {
    for file in [
        "stale-fke-beyond.db",
        "stale-fke-before-kept.db",
        "stale-fke-tool-result.db",
    ] {
        let doc = check_doc(&da(&format!("derived/{file}")), &[]);
        let got = with_code(&doc, "stale-first-kept");
        let want = facts("derived", file)["expected_findings"]["findings"]
            .as_array()
            .unwrap();
        assert_eq!(got.len(), want.len(), "{file}: {got:#?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g["severity"], "error", "{file}");
            assert_eq!(g["message_id"], w["summary_item_id"].to_string());
            assert_eq!(g["stored"], w["stored"], "{file}");
            assert_eq!(g["correct"], w["correct"], "{file}");
            assert_eq!(g["effective_start"], w["effective_start"], "{file}");
            if let Some(prev) = w.get("previous_summary_kept_from") {
                assert_eq!(&g["previous_summary_kept_from"], prev, "{file}");
            }
        }
        // Every summary's compactor value is the fixture's rule value.
        let summaries = facts("derived", file)["expected_findings"]["summaries"]
            .as_array()
            .unwrap();
        assert!(summaries
            .iter()
            .all(|s| s["rule_first_kept_entry"].is_u64()));
    }
    let kinds: Vec<String> = [
        "stale-fke-beyond.db",
        "stale-fke-before-kept.db",
        "stale-fke-tool-result.db",
    ]
    .iter()
    .map(|f| {
        with_code(
            &check_doc(&da(&format!("derived/{f}")), &[]),
            "stale-first-kept",
        )[0]["kind"]
            .as_str()
            .unwrap()
            .to_string()
    })
    .collect();
    assert_eq!(
        kinds,
        ["out-of-range", "before-previous-kept", "on-tool-result"]
    );
}

/// The verified corrections: first_kept_entry equal to the summary's index
/// keeps nothing and is valid; a value the rule would not give but that
/// docker-agent honours inside the kept region is valid; an out-of-range
/// value where the rule keeps nothing anyway is only a warning.
#[test]
fn valid_first_kept_values_are_not_reported() {
    let doc = check_doc(&da("derived/compacted-keep-nothing.db"), &[]);
    assert!(with_code(&doc, "stale-first-kept").is_empty());
    let doc = check_doc(&da("derived/compaction-loop.db"), &[]);
    assert!(with_code(&doc, "stale-first-kept").is_empty());
    let doc = check_doc(&da("real/synthetic_latest_schema.db"), &[]);
    let st = with_code(&doc, "stale-first-kept");
    assert_eq!(st.len(), 1, "{st:#?}");
    assert_eq!(st[0]["message_id"], "10");
    assert_eq!(st[0]["severity"], "warning");
    assert_eq!(st[0]["stored"], 42);
    assert_eq!(st[0]["correct"], 9);
    assert_eq!(st[0]["effective_start"], st[0]["corrected_start"]);
}

#[test]
fn compaction_loop_over_consecutive_summaries() {
    let doc = check_doc(&da("derived/compaction-loop.db"), &[]);
    let want = &facts("derived", "compaction-loop.db")["expected_findings"]["findings"][0];
    let got = with_code(&doc, "compaction-loop");
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["stalls"], want["stalls"]);
    assert_eq!(got[0]["tokens"], want["trigger_tokens"]);
    let ids: Vec<String> = want["summary_item_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(got[0]["compaction_ids"], serde_json::json!(ids));
    let of = with_code(&doc, "overflow-error");
    assert_eq!(of.len(), 1);
    assert_eq!(of[0]["message_id"], "45");
    assert_eq!(of[0]["kind"], "tokens");
    assert_eq!(of[0]["error_name"], "context_exceeded");
}

#[test]
fn overflow_errors_classified_by_code_format_error_text_and_raw_text() {
    let doc = check_doc(&da("derived/overflow-errors.db"), &[]);
    let got: Vec<(String, String)> = with_code(&doc, "overflow-error")
        .iter()
        .map(|f| {
            (
                f["message_id"].as_str().unwrap().to_string(),
                f["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = facts("derived", "overflow-errors.db")["expected_findings"]
        ["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["item_id"].to_string(),
                f["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut g = got.clone();
    g.sort();
    let mut w = want;
    w.sort();
    assert_eq!(g, w);
    assert!(
        !got.iter().any(|(id, _)| id == "20"),
        "the 429 is not an overflow"
    );
    assert_eq!(session_findings(&doc, RAW_ERRORS).len(), 5);
    assert_eq!(session_findings(&doc, ONE_SESSION).len(), 3);
}

#[test]
fn orphan_subsession_references_are_dangling_parents() {
    for (file, sub) in [
        (
            "orphan-subsession-dangling.db",
            Value::from("43b02aea-b0f2-4d68-930a-aecac29cdade"),
        ),
        ("orphan-subsession-null.db", Value::Null),
    ] {
        let doc = check_doc(&da(&format!("derived/{file}")), &[]);
        let got = with_code(&doc, "dangling-parent");
        assert_eq!(got.len(), 1, "{file}");
        assert_eq!(got[0]["message_id"], "38");
        assert_eq!(got[0]["subsession_id"], sub, "{file}");
        assert_eq!(findings(&doc).len(), 1, "{file}");
    }
}

#[test]
fn unfinished_tool_calls_mid_history_and_at_the_tail() {
    let doc = check_doc(&da("derived/unfinished-tool-call.db"), &[]);
    let got: Vec<(String, String)> = with_code(&doc, "unfinished-tool-call")
        .iter()
        .map(|f| {
            (
                f["message_id"].as_str().unwrap().to_string(),
                f["call_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("8".to_string(), "toolu_derived_f2".to_string()),
            ("11".to_string(), "toolu_derived_f3".to_string())
        ]
    );
}

/// The request body counts every visible message's JSON as stored, base64
/// media and repeated tool definitions included: exactly the view bytes.
#[test]
fn payload_too_large_counts_media_and_tool_definitions() {
    let path = da("derived/oversized-payload.db");
    let view = facts("derived", "oversized-payload.db")["sessions"][DESKTOP_ROOT]["view_bytes"]
        .as_u64()
        .unwrap();
    let over = (view - 1).to_string();
    let doc = check_doc(&path, &["--max-request-bytes", &over, "--headroom", "0"]);
    let got = session_findings(&doc, DESKTOP_ROOT)
        .into_iter()
        .filter(|f| f["code"] == "payload-too-large")
        .collect::<Vec<_>>();
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["visible_bytes"], view);
    assert_eq!(got[0]["media_bytes"], 2 * 442_955);
    let exact = view.to_string();
    let doc = check_doc(&path, &["--max-request-bytes", &exact, "--headroom", "0"]);
    assert!(with_code(&doc, "payload-too-large").is_empty());
    let list = json(&["list", "--format", "json", p(&path)]);
    let row = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == DESKTOP_ROOT)
        .unwrap()
        .clone();
    assert_eq!(row["media_bytes"], 2 * 442_955);
    assert!(row["notes"][0]
        .as_str()
        .unwrap()
        .contains("tool definitions"));
}

/// Runs the no-client verifier on a copy; returns its JSON report.
fn verify(original: &Path, copy: &Path, expect: &[String]) -> Value {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/check_docker_agent_copy.py"
    ))
    .arg(original)
    .arg(copy)
    .arg("--json")
    .arg("--allow-preexisting-fk");
    for e in expect {
        cmd.arg("--expect").arg(e);
    }
    let out = cmd.output().expect("python3 runs");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verifier output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "verifier failed on {}: {:#}",
        copy.display(),
        doc["failures"]
    );
    doc
}

fn differing(report: &Value) -> BTreeSet<String> {
    report["row_differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}",
                d["table"].as_str().unwrap(),
                d["key"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn repair_fixes_what_the_format_notes_say_and_verifies() {
    let before = snapshot(&da(""));
    let out = tempfile::tempdir().unwrap();
    for (group, file) in every_db() {
        let src = da(&format!("{group}/{file}"));
        let dest = out.path().join(&group);
        let doc = json(&["repair", "--format", "json", "--out", p(&dest), p(&src)]);
        assert_eq!(doc["errors"], serde_json::json!([]), "{group}/{file}");
        let copy = dest.join(&file);
        let expect: Vec<String> = doc["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("session_items:{}", c["message_id"].as_str().unwrap()))
            .collect();
        let report = verify(&src, &copy, &expect);
        let diff = differing(&report);
        assert_eq!(
            diff,
            expect.iter().cloned().collect::<BTreeSet<_>>(),
            "{group}/{file}"
        );
        for v in report["views"].as_object().unwrap().values() {
            assert!(v["copy"]["load_error"].is_null());
        }
        // The repaired copy holds none of the repaired faults.
        let after = check_doc(&copy, &[]);
        assert!(with_code(&after, "dangling-parent").is_empty(), "{file}");
        assert!(
            with_code(&after, "stale-first-kept").is_empty(),
            "{file}: {:#?}",
            with_code(&after, "stale-first-kept")
        );
        // The view of a repaired stale entry starts where the compactor's rule says.
        if file.starts_with("stale-fke") {
            let want = &facts(&group, &file)["expected_findings"]["findings"][0];
            let v = &report["views"][SESSION_DB]["copy"]["stats"];
            assert_eq!(v["start_index"], want["correct"], "{file}");
            assert_eq!(v["dropped_orphan_tool_results"], 0, "{file}");
        }
        if file.starts_with("orphan-subsession") {
            assert_eq!(report["foreign_key_violations_copy"], serde_json::json!([]));
            assert_eq!(report["views"][TRANSFER_ROOT]["same_view"], true);
        }
    }
    assert_eq!(before, snapshot(&da("")), "fixtures changed");
}

#[test]
fn compact_strips_historical_media_and_verifies() {
    let src = da("derived/oversized-payload.db");
    let before = snapshot(&da(""));
    let out = tempfile::tempdir().unwrap();
    let doc = json(&[
        "compact",
        "--format",
        "json",
        "--session",
        DESKTOP_ROOT,
        "--out",
        p(out.path()),
        "--max-request-bytes",
        "1000000",
        p(&src),
    ]);
    assert_eq!(doc["written"], true, "{doc:#}");
    assert_eq!(doc["steps"][0]["step"], "strip-media");
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["message_id"], "19");
    let copy = out.path().join("oversized-payload.db");
    let report = verify(&src, &copy, &["session_items:19".to_string()]);
    assert_eq!(
        differing(&report),
        BTreeSet::from(["session_items:19".to_string()])
    );
    let view = &report["views"][DESKTOP_ROOT]["copy"]["stats"];
    assert_eq!(view["messages"], 49);
    assert_eq!(
        view["bytes"],
        doc["steps"][0]["after"]["request_bytes"].as_u64().unwrap()
            - doc["headroom_bytes"].as_u64().unwrap()
    );
    let again = check_doc(&copy, &["--max-request-bytes", "1000000"]);
    assert!(with_code(&again, "payload-too-large").is_empty());
    assert_eq!(before, snapshot(&da("")), "fixtures changed");
}

/// `--keep-turns` on the newest schema appends a summary whose
/// first_kept_entry starts the view at the kept turn (what docker-agent's own
/// compaction writes), keeps the previous summary's text, and writes the
/// session counters as PersistCompaction does; nothing stored is deleted.
#[test]
fn compact_keep_turns_appends_a_summary_with_a_correct_first_kept_entry() {
    let src = da("derived/stale-fke-before-kept.db");
    let out = tempfile::tempdir().unwrap();
    let doc = json(&[
        "compact",
        "--format",
        "json",
        "--session",
        SESSION_DB,
        "--out",
        p(out.path()),
        // The copy calibrates on the session's first turn (16,549 tokens of
        // system prompt and tools): a 9,000-token context never fit it
        // (compact said it did; `check` on the copy found 50,104 tokens).
        "--context",
        "20000",
        "--max-output",
        "1000",
        "--keep-turns",
        "1",
        p(&src),
    ]);
    assert_eq!(doc["written"], true, "{doc:#}");
    let steps: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps.last(), Some(&"cut-history"));
    let cut = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "session_items")
        .unwrap()
        .clone();
    assert_eq!(cut["message_id"], "45", "the last user turn");
    assert_eq!(cut["new"]["first_kept_entry"], 44);
    let copy = out.path().join("stale-fke-before-kept.db");
    let report = verify(&src, &copy, &[]);
    let edited: BTreeSet<String> = doc["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["field"] != "session_items")
        .map(|c| format!("session_items:{}", c["message_id"].as_str().unwrap()))
        .collect();
    for d in report["row_differences"].as_array().unwrap() {
        let key = format!(
            "{}:{}",
            d["table"].as_str().unwrap(),
            d["key"].as_str().unwrap()
        );
        match (d["table"].as_str().unwrap(), d["change"].as_str().unwrap()) {
            ("session_items", "changed") => assert!(edited.contains(&key), "{key}"),
            ("session_items", "added") => {
                assert_eq!(d["item_type"], "summary");
                assert_eq!(d["position"], 47);
            }
            ("sessions", "changed") | ("sqlite_sequence", "changed") => {}
            other => panic!("unexpected difference {other:?} {key}"),
        }
    }
    let v = &report["views"][SESSION_DB]["copy"];
    assert_eq!(v["stats"]["start_index"], 44);
    assert_eq!(v["stats"]["messages"], 3);
    assert_eq!(v["items"], 48);
    // The new summary is session-doctor's own (manual): no loop, not stale;
    // the superseded stale summary stays a warning.
    let again = check_doc(&copy, &[]);
    let st = with_code(&again, "stale-first-kept");
    assert_eq!(st.len(), 1, "{st:#?}");
    assert_eq!(st[0]["message_id"], "47");
    assert_eq!(st[0]["severity"], "warning");
    assert!(with_code(&again, "compaction-loop").is_empty());
    // Within the budget compact planned for, as `check` measures the copy.
    let again = check_doc(&copy, &["--context", "20000", "--max-output", "1000"]);
    assert!(
        with_code(&again, "over-budget").is_empty(),
        "{:#?}",
        with_code(&again, "over-budget")
    );
}

/// Legacy stores have no first_kept_entry: cutting history is refused with
/// a clear reason and nothing is written.
#[test]
fn compact_keep_turns_on_a_legacy_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A legacy session with two user turns, made from the real desktop.db.
    let db = tmp.path().join("src").join("legacy.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(da("real/desktop.db"), &db).unwrap();
    std::fs::copy(
        da("real/desktop.db-wal"),
        tmp.path().join("src/legacy.db-wal"),
    )
    .unwrap();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let raw: String = c
            .query_row(
                "SELECT messages FROM sessions WHERE id = ?1",
                [DESKTOP_ROOT],
                |r| r.get(0),
            )
            .unwrap();
        let mut v: Value = serde_json::from_str(&raw).unwrap();
        let first = v[0].clone();
        let last = v[15].clone();
        let a = v.as_array_mut().unwrap();
        a.push(first);
        a.push(last);
        c.execute(
            "UPDATE sessions SET messages = ?1 WHERE id = ?2",
            [serde_json::to_string(&v).unwrap(), DESKTOP_ROOT.to_string()],
        )
        .unwrap();
    }
    let out = tmp.path().join("out");
    let o = bin()
        .args([
            "compact",
            "--session",
            DESKTOP_ROOT,
            "--out",
            p(&out),
            "--context",
            "7000",
            "--max-output",
            "100",
            "--keep-turns",
            "1",
            p(&db),
        ])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("first_kept_entry"), "{err}");
    assert!(!out.join("legacy.db").exists());
}

#[test]
fn originals_and_their_wal_are_untouched_by_every_command() {
    let before = snapshot(&da(""));
    let out = tempfile::tempdir().unwrap();
    for args in [
        vec!["list"],
        vec!["check"],
        vec!["inspect", "--session", TWO_SESSIONS],
    ] {
        let mut a = args.clone();
        let real = da("real");
        a.push(p(&real));
        let _ = bin().args(&a).output().unwrap();
    }
    let o = out.path().join("r");
    let _ = bin()
        .args(["repair", "--out", p(&o), p(&da("real"))])
        .output()
        .unwrap();
    let c = out.path().join("c");
    let _ = bin()
        .args([
            "compact",
            "--session",
            TWO_SESSIONS,
            "--out",
            p(&c),
            p(&da("real/two-sessions.db")),
        ])
        .output()
        .unwrap();
    assert_eq!(before, snapshot(&da("")), "fixtures changed");
    // The copies of WAL databases hold the rows of the -wal, with no side files.
    assert!(o.join("desktop.db").exists());
    assert!(!o.join("desktop.db-wal").exists());
    let r = verify(&da("real/desktop.db"), &o.join("desktop.db"), &[]);
    assert!(differing(&r).is_empty());
}

/// docker-agent's own test data is found by walking a folder (any `*.db`
/// whose tables are docker-agent's), next to other SQLite files it skips.
#[test]
fn discovery_by_tables_skips_other_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join(".cagent");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(da("migrated/one-session.db"), d.join("session.db")).unwrap();
    rusqlite::Connection::open(d.join("tui_state.db"))
        .unwrap()
        .execute("CREATE TABLE state(k TEXT, v TEXT)", [])
        .unwrap();
    std::fs::write(d.join("notes.db"), b"not sqlite").unwrap();
    let doc = json(&["list", "--format", "json", p(tmp.path())]);
    assert_eq!(doc["errors"], serde_json::json!([]));
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ONE_SESSION]);
    // The default data dir is ~/.cagent.
    let o = bin()
        .env("HOME", tmp.path())
        .args(["list", "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["sessions"][0]["id"], ONE_SESSION, "{doc:#}");
}

/// A copy of legacy fixture `rel` (with its `-wal`) in which `f` changed the
/// `messages` JSON of session row `row`.
fn legacy_copy(dir: &Path, rel: &str, row: &str, f: impl FnOnce(&mut Value)) -> PathBuf {
    let name = Path::new(rel).file_name().unwrap();
    let db = dir.join("src").join(name);
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(da(rel), &db).unwrap();
    let wal = da(&format!("{rel}-wal"));
    if wal.exists() {
        let mut w = db.as_os_str().to_owned();
        w.push("-wal");
        std::fs::copy(wal, PathBuf::from(w)).unwrap();
    }
    let c = rusqlite::Connection::open(&db).unwrap();
    let raw: String = c
        .query_row("SELECT messages FROM sessions WHERE id = ?1", [row], |r| {
            r.get(0)
        })
        .unwrap();
    let mut v: Value = serde_json::from_str(&raw).unwrap();
    f(&mut v);
    c.execute(
        "UPDATE sessions SET messages = ?1 WHERE id = ?2",
        [serde_json::to_string(&v).unwrap(), row.to_string()],
    )
    .unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    db
}

/// Truncations land inside the legacy JSON array (a root session and a
/// sub-session embedded in it); only that `sessions` row changes.
#[test]
fn compact_edits_legacy_json_roots_and_embedded_sub_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let big = "0123456789abcdef\n".repeat(12_000);
    let db = legacy_copy(tmp.path(), "real/transfer-task.db", TRANSFER_ROOT, |v| {
        v[4]["message"]["message"]["content"] = Value::from(big.clone());
        v[8]["sub_session"]["messages"][4]["message"]["message"]["content"] =
            Value::from(big.clone());
    });
    for (k, sid, item) in [
        (0, TRANSFER_ROOT, "json[4]"),
        (1, "43b02aea-b0f2-4d68-930a-aecac29cdade", "json[4]"),
    ] {
        let out = tmp.path().join(format!("out{k}"));
        let doc = json(&[
            "compact",
            "--format",
            "json",
            "--session",
            sid,
            "--out",
            p(&out),
            "--context",
            "40000",
            "--max-output",
            "1000",
            p(&db),
        ]);
        assert_eq!(doc["written"], true, "{doc:#}");
        assert!(doc["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["message_id"] == item && c["field"] == "message_json.content"));
        let copy = out.join("transfer-task.db");
        let report = verify(&db, &copy, &["sessions:1".to_string()]);
        assert_eq!(
            differing(&report),
            BTreeSet::from(["sessions:1".to_string()])
        );
        for (s, v) in report["views"].as_object().unwrap() {
            assert!(v["copy"]["load_error"].is_null(), "{s}");
            assert_eq!(v["same_view"], s != sid, "{s}");
        }
        let list = json(&["list", "--format", "json", p(&copy)]);
        assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    }
}

/// A `message_json` docker-agent cannot parse is `unreadable` (docker-agent
/// fails the whole session's load on it); it still counts in the item list,
/// so the summary's first_kept_entry keeps pointing where it did, and a
/// copy keeps the row as it is.
#[test]
fn an_unreadable_row_keeps_later_indexes_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("src/compacted-healthy.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(da("derived/compacted-healthy.db"), &db).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE session_items SET message_json = '{not json' WHERE id = 5",
            [],
        )
        .unwrap();
    let doc = check_doc(&db, &[]);
    let codes: Vec<String> = findings(&doc)
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes, ["unreadable"], "{doc:#}");
    let ins = json(&[
        "inspect",
        "--format",
        "json",
        "--session",
        SESSION_DB,
        p(&db),
    ]);
    assert_eq!(ins["sessions"][0]["visible_messages"], 22);
    let out = tmp.path().join("out");
    let r = json(&["repair", "--format", "json", "--out", p(&out), p(&db)]);
    assert_eq!(r["changes"], serde_json::json!([]));
    // The verifier fails a copy whose session does not load, as the
    // original does not: that is the only failure, and no row differs.
    let o = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/check_docker_agent_copy.py"
        ))
        .arg(&db)
        .arg(out.join("compacted-healthy.db"))
        .arg("--json")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(differing(&report).is_empty());
    let failures = report["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(failures[0].as_str().unwrap().contains("does not load"));
}

/// A copy `compact` says fits is one `check` finds within the budget, and
/// the command `check` prints for `over-budget` removes it. The derived
/// session calibrates its overhead at 5,293 tokens on its last count and at
/// 16,549 on its first turn (16,663 reported with 114 estimated): compact
/// planned every step with the smaller, while `check` on the copy (whose
/// counts were reported on the history compact truncated) calibrates on the
/// first turn, so at `--context 25000` the copy compact wrote was still over
/// budget (22,630 tokens against 18,500 usable). With `--keep-turns 1` the
/// copy even kept using the last count (50,104 tokens, reported on the
/// history before the summary compact appends) where compact planned 5,491.
#[test]
fn a_compacted_copy_that_fits_is_not_over_budget_for_check() {
    let fixtures_before = snapshot(&da(""));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("src");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("stale-fke-before-kept.db");
    std::fs::copy(da("derived/stale-fke-before-kept.db"), &src).unwrap();
    let src_before = snapshot(&dir);
    let (mut written, mut refused, mut printed) = (0, 0, 0);
    for context in ["9000", "20000", "25000", "30000", "35000", "45000"] {
        let flags = ["--context", context, "--max-output", "4000"];
        let doc = check_doc(&src, &flags);
        let f = with_code(&doc, "over-budget");
        assert_eq!(f.len(), 1, "{context}: {doc:#}");
        // The printed command, as printed, removes the finding.
        if let Some(cmd) = f[0]["remedy_command"].as_str() {
            printed += 1;
            let words = shell_words::split(cmd).unwrap();
            let o = bin().args(&words[1..]).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{cmd}");
            let out = PathBuf::from(&words[words.iter().position(|w| w == "--out").unwrap() + 1]);
            let copy = out.join("stale-fke-before-kept.db");
            let again = check_doc(&copy, &flags);
            assert!(
                with_code(&again, "over-budget").is_empty(),
                "{context}: {cmd} left {:#?}",
                with_code(&again, "over-budget")
            );
            std::fs::remove_dir_all(&out).unwrap();
        }
        // compact itself, and with --keep-turns 1 (a summary session-doctor
        // appends: the counts before it no longer apply either): a copy
        // only when `check` finds it fitting.
        for keep in [&[][..], &["--keep-turns", "1"][..]] {
            let out = tmp.path().join(format!("out-{context}-{}", keep.len()));
            let o = bin()
                .args([
                    "compact",
                    "--format",
                    "json",
                    "--session",
                    SESSION_DB,
                    "--out",
                ])
                .arg(&out)
                .args(flags)
                .args(keep)
                .arg(&src)
                .output()
                .unwrap();
            let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(snapshot(&dir), src_before, "{context}: the source changed");
            if plan["written"] == true {
                written += 1;
                let last = &plan["steps"].as_array().unwrap().last().unwrap()["after"];
                assert!(
                    last["tokens_next_turn"].as_u64() <= plan["budget"]["usable"].as_u64(),
                    "{plan:#}"
                );
                let again = check_doc(&out.join("stale-fke-before-kept.db"), &flags);
                assert!(
                    with_code(&again, "over-budget").is_empty(),
                    "{context} {keep:?}: compact said it fits with {} tokens; check on the copy: {:#?}",
                    last["tokens_next_turn"],
                    with_code(&again, "over-budget")
                );
            } else {
                refused += 1;
                assert_eq!(o.status.code(), Some(1), "{plan:#}");
                assert!(plan["unreachable"].is_string(), "{plan:#}");
                assert!(!out.join("stale-fke-before-kept.db").exists());
            }
        }
    }
    // Both outcomes occur: the test judges copies, not only refusals.
    assert!(
        written >= 2 && printed >= 2,
        "{written} written, {printed} printed"
    );
    assert!(refused >= 1, "no context was out of reach");
    assert_eq!(snapshot(&da("")), fixtures_before, "fixtures changed");
}
