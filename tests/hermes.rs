//! hermes-agent `state.db` stores (issue 9, hermes half): list, inspect,
//! check, repair and compact on the real hermes-agent 0.19.0 databases in
//! fixtures/hermes (copies of ../shared/real-sessions/hermes{,-gen}; facts:
//! fixtures/hermes/hermes-gen/MANIFEST.md) and the derived fault fixtures
//! (fixtures/derive_hermes.py).

mod common;
use common::*;
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn hx(rel: &str) -> PathBuf {
    fixtures().join("hermes").join(rel)
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

/// `list --format json` of one store: sessions by id.
fn list(dir: &Path) -> Vec<Value> {
    let doc = json(&["list", "--format", "json", p(dir)]);
    assert_eq!(doc["errors"], serde_json::json!([]), "{doc:#}");
    doc["sessions"].as_array().unwrap().clone()
}

fn session<'a>(v: &'a [Value], id: &str) -> &'a Value {
    v.iter()
        .find(|s| s["id"].as_str().unwrap().ends_with(id))
        .unwrap_or_else(|| panic!("no session {id}"))
}

/// `(session suffix, code, severity)` of every finding of `check` on `dir`.
fn codes(dir: &Path, extra: &[&str]) -> Vec<(String, String, String)> {
    let mut args = vec!["check", "--format", "json", p(dir)];
    args.extend_from_slice(extra);
    let doc = json(&args);
    let mut out = Vec::new();
    for s in doc["sessions"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        for f in s["findings"].as_array().unwrap() {
            out.push((
                id[id.len() - 6..].to_string(),
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

fn finding(dir: &Path, sid: &str, code: &str, extra: &[&str]) -> Value {
    let mut args = vec!["check", "--format", "json", p(dir)];
    args.extend_from_slice(extra);
    let doc = json(&args);
    for s in doc["sessions"].as_array().unwrap() {
        if !s["id"].as_str().unwrap().ends_with(sid) {
            continue;
        }
        for f in s["findings"].as_array().unwrap() {
            if f["code"] == code {
                return f.clone();
            }
        }
    }
    panic!("no {code} on {sid}: {doc:#}")
}

fn t3(s: &str, c: &str, v: &str) -> (String, String, String) {
    (s.into(), c.into(), v.into())
}

/// Every shared hermes db with the session count the MANIFEST gives.
const DBS: &[(&str, usize)] = &[
    ("hermes/basic", 1),
    ("hermes/compress_inplace", 1),
    ("hermes/compress_rotate", 3),
    ("hermes/image", 1),
    ("hermes/image_native", 1),
    ("hermes-gen/basic_like", 1),
    ("hermes-gen/image_after_compress", 4),
    ("hermes-gen/inplace_twice", 1),
    ("hermes-gen/rotate_loop", 6),
    ("hermes-gen/tools_pairs", 1),
    ("hermes-gen/wedged_413", 3),
];

#[test]
fn token_totals_equal_ccusage_for_every_session() {
    let expected = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/hermes/ccusage_expected.txt"),
    )
    .unwrap();
    let mut checked = 0;
    for (db, n) in DBS {
        let sessions = list(&hx(db));
        assert_eq!(sessions.len(), *n, "{db}");
        for s in &sessions {
            assert_eq!(s["agent"], "hermes");
            let id = s["id"].as_str().unwrap();
            let t = &s["tokens_total"];
            let line = expected
                .lines()
                .find(|l| !l.starts_with('#') && l.contains(id) && l.starts_with(db));
            let want: Vec<u64> = match line {
                Some(l) => l
                    .split('\t')
                    .skip(2)
                    .take(5)
                    .map(|x| x.parse().unwrap())
                    .collect(),
                // Not reported by ccusage: every usage column is 0.
                None => vec![0; 5],
            };
            let got: Vec<u64> = ["input", "output", "cache_read", "cache_write", "reasoning"]
                .iter()
                .map(|k| t[k].as_u64().unwrap())
                .collect();
            assert_eq!(got, want, "{db} {id}");
            checked += 1;
        }
    }
    assert_eq!(checked, 23);
}

#[test]
fn chains_are_listed_with_root_position_and_tip() {
    let s = list(&hx("hermes-gen/rotate_loop"));
    let ids = ["52d5bf", "c5d41f", "d7c72a", "0bad99", "73e101", "66b4fb"];
    for (k, id) in ids.iter().enumerate() {
        let x = session(&s, id);
        let c = &x["chain"];
        assert!(c["root"].as_str().unwrap().ends_with("52d5bf"), "{x:#}");
        assert!(c["tip"].as_str().unwrap().ends_with("66b4fb"));
        assert!(c["resumes"].as_str().unwrap().ends_with("66b4fb"));
        assert_eq!(c["position"], k + 1);
        assert_eq!(c["length"], 6);
        // The tip carries every rotation of the chain; each other
        // continuation the one that started it.
        let want = if k == 5 { 5 } else { usize::from(k > 0) };
        assert_eq!(x["compactions"], want, "{id}");
        assert_eq!(x["context_tokens"], Value::Null);
    }
    // Rows plus one marker per compression.
    assert_eq!(session(&s, "66b4fb")["messages"], 15 + 5);
    let w = list(&hx("hermes-gen/wedged_413"));
    assert_eq!(session(&w, "e33e03")["chain"]["position"], 3);
    assert_eq!(session(&w, "e33e03")["compactions"], 2);
    let i = list(&hx("hermes-gen/inplace_twice"));
    let x = session(&i, "315866");
    assert_eq!(x["chain"]["length"], 1);
    assert_eq!(x["compactions"], 3);
    assert_eq!(x["messages"], 55 + 3);
    let i = list(&hx("hermes/compress_inplace"));
    assert_eq!(session(&i, "5577cb")["compactions"], 2);
}

#[test]
fn inline_images_and_auxiliary_usage_are_reported() {
    let s = list(&hx("hermes-gen/image_after_compress"));
    // Decoded PNG bytes of the two inline data URLs (MANIFEST: rows 14 and 36).
    assert_eq!(session(&s, "623f6d")["media_bytes"], 235_618);
    assert_eq!(session(&s, "e3af5b")["media_bytes"], 120_303);
    assert_eq!(session(&s, "6a1ea0")["media_bytes"], 0);
    let note = session(&s, "6a1ea0")["notes"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("compression: 1 call(s), 1656 input, 12 output"),
        "{note}"
    );
}

#[test]
fn check_gives_the_manifest_findings() {
    for db in [
        "hermes/basic",
        "hermes/image",
        "hermes/image_native",
        "hermes-gen/basic_like",
    ] {
        assert_eq!(codes(&hx(db), &[]), vec![], "{db}");
        bin().args(["check", p(&hx(db))]).assert().code(0);
    }
    // rotate_loop: 5 rotations, compressions 2-5 without progress; on the tip only.
    assert_eq!(
        codes(&hx("hermes-gen/rotate_loop"), &[]),
        vec![t3("66b4fb", "compaction-loop", "error")]
    );
    let f = finding(
        &hx("hermes-gen/rotate_loop"),
        "66b4fb",
        "compaction-loop",
        &[],
    );
    assert_eq!(f["compactions"], 5);
    assert_eq!(f["stalls"], 4);
    assert_eq!(
        f["tokens"],
        serde_json::json!([60000, 60000, 60000, 60000, 60000])
    );
    assert_eq!(f["compaction_ids"][0], "compression:20261123_152232_52d5bf");
    assert_eq!(f["last_progressed"], false);
    // The stub reports 60000 prompt tokens for every request, so hermes
    // rotated on a count that is not the history's size: the tip's next
    // turn is far under the trigger, compact would change nothing, and the
    // remedy says so with its figures instead of advising a cut.
    let (next, goal) = (
        f["compact_next_turn_tokens"].as_u64().unwrap(),
        f["compact_goal_tokens"].as_u64().unwrap(),
    );
    assert_eq!(goal, 57000, "95% of the last trigger: {f}");
    assert!(next > 0 && next < goal, "{f}");
    let remedy = f["remedy"].as_str().unwrap();
    assert!(
        remedy.starts_with(&format!(
            "the next turn is estimated at {next} tokens, already under 57000 (95% of the last trigger), so cutting history offline cannot help"
        )) && remedy.ends_with("switch to a model with a larger context"),
        "{remedy}"
    );
    assert!(!remedy.contains("session-doctor compact"), "{remedy}");
    assert!(f["remedy_command"].is_null(), "{f}");
    // image_after_compress: segment prompt sizes 155635/4, 141193/2, 65223/3; k=2 stalls.
    assert_eq!(
        codes(&hx("hermes-gen/image_after_compress"), &[]),
        vec![t3("e3af5b", "compaction-loop", "error")]
    );
    let f = finding(
        &hx("hermes-gen/image_after_compress"),
        "e3af5b",
        "compaction-loop",
        &[],
    );
    assert_eq!(f["stalls"], 1);
    assert_eq!(f["tokens"], serde_json::json!([38908, 70596, 21741]));
    // Its newest compaction made progress (21741 after 70596): the remedy
    // no longer says the agent will compact again on resume.
    assert_eq!(f["last_progressed"], true);
    let remedy = f["remedy"].as_str().unwrap();
    assert!(
        remedy.starts_with(
            "the newest compaction made progress (trigger 21741 tokens after 70596), so the loop may be over; the next turn is estimated at "
        ),
        "{remedy}"
    );
    assert_eq!(f["compact_goal_tokens"], 20653, "95% of 21741: {f}");
    // compress_rotate: 73371/8 then 120000/2: the second made no progress.
    let f = finding(
        &hx("hermes/compress_rotate"),
        "7db7eb",
        "compaction-loop",
        &[],
    );
    assert_eq!(
        (f["compactions"].as_u64(), f["stalls"].as_u64()),
        (Some(2), Some(1))
    );
    // In place: counted, never judged.
    assert_eq!(
        codes(&hx("hermes-gen/inplace_twice"), &[]),
        vec![t3("315866", "compaction-loop", "info")]
    );
    let f = finding(
        &hx("hermes-gen/inplace_twice"),
        "315866",
        "compaction-loop",
        &[],
    );
    assert_eq!(f["compactions"], 3);
    assert_eq!(f["progress"], "unknown");
    assert_eq!(
        codes(&hx("hermes/compress_inplace"), &[]),
        vec![t3("5577cb", "compaction-loop", "info")]
    );
    // tools_pairs: row 19's call was interrupted.
    let f = finding(
        &hx("hermes-gen/tools_pairs"),
        "9693e7",
        "unfinished-tool-call",
        &[],
    );
    assert_eq!(f["message_id"], "19");
    assert_eq!(f["call_id"], "call_f0931a06cf69");
    assert_eq!(codes(&hx("hermes-gen/tools_pairs"), &[]).len(), 1);
    // wedged_413: four user rows with no reply on the tip; the paste is the largest.
    assert_eq!(
        codes(&hx("hermes-gen/wedged_413"), &[]),
        vec![t3("e33e03", "unanswered-turns", "error")]
    );
    let f = finding(
        &hx("hermes-gen/wedged_413"),
        "e33e03",
        "unanswered-turns",
        &[],
    );
    assert_eq!(f["unanswered"], 4);
    assert_eq!(
        f["message_ids"],
        serde_json::json!(["16", "17", "18", "19"])
    );
    assert_eq!(f["largest_message_id"], "16");
    assert_eq!(f["largest_message_bytes"], 100_057);
    // Against the stub's 120,000-byte limit the next request is too large.
    let f = finding(
        &hx("hermes-gen/wedged_413"),
        "e33e03",
        "payload-too-large",
        &["--max-request-bytes", "120000"],
    );
    assert!(f["visible_bytes"].as_u64().unwrap() > 100_057);
}

/// The loop on the chain of an empty continuation is not judged on the
/// empty session's history (its next turn counts 0 tokens): the remedy
/// was "already under 57000 ... switch to a model with a larger context",
/// advice the empty session's figures cannot support. It now points to
/// `repair`, whose printed command drops the empty session; the copy's
/// check then reports no loop on the chain (it resumes on a980c8).
#[test]
fn a_loop_on_an_empty_continuation_points_to_repair_not_to_a_larger_model() {
    let src = hx("derived/empty_continuation");
    let f = finding(&src, "7db7eb", "compaction-loop", &[]);
    let remedy = f["remedy"].as_str().unwrap();
    assert!(
        remedy.starts_with("the session a resume lands on holds no message (empty-continuation)"),
        "{remedy}"
    );
    assert!(
        remedy.contains("what a resume of 20261122_104840_a980c8 then loads"),
        "{remedy}"
    );
    assert!(!remedy.contains("larger context"), "{remedy}");
    let cmd = f["remedy_command"].as_str().unwrap();
    assert!(cmd.starts_with("session-doctor repair "), "{cmd}");
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    bin()
        .args([
            "repair",
            p(&src),
            "--session",
            "20261122_104851_7db7eb",
            "--out",
            p(&out),
        ])
        .assert()
        .code(0);
    let after = codes(&out, &[]);
    assert!(
        !after
            .iter()
            .any(|(_, c, v)| c == "compaction-loop" && v == "error"),
        "{after:?}"
    );
    assert!(session(&list(&out), "a980c8")["chain"]["resumes"]
        .as_str()
        .unwrap()
        .ends_with("a980c8"));
}

#[test]
fn derived_faults_are_found() {
    assert_eq!(
        codes(&hx("derived/closed_compression"), &[]),
        vec![t3("a980c8", "closed-compression-session", "error")]
    );
    let e = codes(&hx("derived/empty_continuation"), &[]);
    assert!(
        e.contains(&t3("7db7eb", "empty-continuation", "error")),
        "{e:?}"
    );
    let f = finding(
        &hx("derived/empty_continuation"),
        "7db7eb",
        "empty-continuation",
        &[],
    );
    assert_eq!(f["parent_id"], "20261122_104840_a980c8");
    assert_eq!(
        codes(&hx("derived/dangling_parent"), &[]),
        vec![t3("a980c8", "dangling-parent", "error")]
    );
    let f = finding(
        &hx("derived/dangling_parent"),
        "a980c8",
        "dangling-parent",
        &[],
    );
    assert_eq!(f["parent_id"], "20261122_104644_ba457c");
    let f = finding(&hx("derived/unreadable"), "245c3a", "unreadable", &[]);
    assert_eq!(f["message_id"], "3");
    assert!(f["error"].as_str().unwrap().contains("not valid JSON"));
}

#[test]
fn inspect_shows_the_view_hermes_resumes_with() {
    let inspect = |dir: &str, sid: &str| {
        let doc = json(&["inspect", "--session", sid, "--format", "json", p(&hx(dir))]);
        doc["sessions"][0].clone()
    };
    let s = inspect("hermes-gen/rotate_loop", "20261123_152354_66b4fb");
    assert_eq!(s["visible_messages"], 15);
    let msgs = s["messages"].as_array().unwrap();
    let m0 = &msgs[0];
    assert_eq!(m0["role"], "compression");
    assert!(m0["flags"]
        .as_array()
        .unwrap()
        .contains(&"compaction".into()));
    let m52 = msgs.iter().find(|m| m["id"] == "52").unwrap();
    assert!(m52["flags"].as_array().unwrap().contains(&"summary".into()));
    assert!(m52["flags"].as_array().unwrap().contains(&"visible".into()));
    // A compressed parent: a resume goes to the tip, so it sends nothing.
    let s = inspect("hermes-gen/rotate_loop", "20261123_152232_52d5bf");
    assert_eq!(s["visible_messages"], 0);
    // In place: the active rows 46-55 only.
    let s = inspect("hermes-gen/inplace_twice", "20261123_152232_315866");
    assert_eq!(s["visible_messages"], 10);
    let visible: Vec<&str> = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["flags"].as_array().unwrap().contains(&"visible".into()))
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        visible,
        ["46", "47", "48", "49", "50", "51", "52", "53", "54", "55"]
    );
    let s = inspect("hermes-gen/image_after_compress", "20261123_152528_e3af5b");
    let m36 = s["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "36")
        .unwrap()
        .clone();
    assert_eq!(m36["media_count"], 1);
    assert_eq!(m36["payload_bytes"], 160_640);
}

/// `PRAGMA integrity_check`, both FTS5 integrity checks and a trigram
/// query on a copy.
fn verify_copy(db: &Path, query: &str) -> i64 {
    let c = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    for t in ["messages_fts", "messages_fts_trigram"] {
        c.execute(
            &format!("INSERT INTO {t}({t}) VALUES('integrity-check')"),
            [],
        )
        .unwrap_or_else(|e| panic!("{t}: {e}"));
    }
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1",
            [query],
            |r| r.get(0),
        )
        .unwrap();
    let ids: i64 = c
        .query_row(
            "SELECT count(*) FROM messages WHERE id NOT IN (SELECT rowid FROM messages_fts)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ids, 0, "every row is indexed");
    drop(c);
    for sfx in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{sfx}", db.display()));
    }
    n
}

#[test]
fn repair_fixes_the_session_faults_in_the_copy_only() {
    let t = tempfile::tempdir().unwrap();
    let before = snapshot(&hx(""));
    for (name, sid, fixed) in [
        ("closed_compression", "a980c8", "closed-compression-session"),
        ("empty_continuation", "7db7eb", "empty-continuation"),
        ("dangling_parent", "a980c8", "dangling-parent"),
    ] {
        let out = t.path().join(name);
        let doc = json(&[
            "repair",
            "--format",
            "json",
            p(&hx(&format!("derived/{name}"))),
            "--out",
            p(&out),
        ]);
        assert_eq!(doc["copies"][0]["written"], true, "{doc:#}");
        let copy = out.join("state.db");
        let after = codes(&out, &[]);
        assert!(
            !after.iter().any(|(s, c, _)| s == sid && c == fixed),
            "{name}: {after:?}"
        );
        assert!(verify_copy(&copy, "turn") > 0);
        let c = Connection::open(&copy).unwrap();
        match name {
            "closed_compression" => {
                let (end, reason): (Option<f64>, Option<String>) = c
                    .query_row(
                        "SELECT ended_at, end_reason FROM sessions WHERE id = '20261122_104840_a980c8'",
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                assert_eq!((end, reason), (None, None));
            }
            "empty_continuation" => {
                let n: i64 = c
                    .query_row(
                        "SELECT count(*) FROM sessions WHERE id = '20261122_104851_7db7eb'",
                        [],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(n, 0);
                let s = list(&out);
                assert!(session(&s, "a980c8")["chain"]["resumes"]
                    .as_str()
                    .unwrap()
                    .ends_with("a980c8"));
            }
            _ => {
                let parent: Option<String> = c
                    .query_row(
                        "SELECT parent_session_id FROM sessions WHERE id = '20261122_104840_a980c8'",
                        [],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(parent, None);
            }
        }
    }
    // Every shared db repairs to a verified copy (nothing to change in them).
    for (db, _) in DBS {
        let out = t.path().join("shared").join(db);
        bin()
            .args(["repair", p(&hx(db)), "--out", p(&out)])
            .assert()
            .code(0);
        verify_copy(&out.join("state.db"), "turn");
        assert_eq!(codes(&out, &[]), codes(&hx(db), &[]), "{db}");
    }
    assert_eq!(snapshot(&hx("")), before, "fixtures changed");
}

#[test]
fn image_rows_stay_editable_and_searchable_in_copies() {
    // Rows JSON-encoded with hermes' NUL prefix: SQLite 3.40 (hermes) and
    // the bundled 3.50 index them differently; the copy must pass both.
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    bin()
        .args([
            "repair",
            p(&hx("hermes-gen/image_after_compress")),
            "--out",
            p(&out),
        ])
        .assert()
        .code(0);
    let copy = out.join("state.db");
    verify_copy(&copy, "shot_c");
    let c = Connection::open(&copy).unwrap();
    c.execute(
        "UPDATE messages SET active = active WHERE id IN (14, 36)",
        [],
    )
    .unwrap();
}

#[test]
fn compact_of_the_wedged_session_fits_the_body_limit() {
    let t = tempfile::tempdir().unwrap();
    let src = hx("hermes-gen/wedged_413");
    let before = snapshot(&src);
    let out = t.path().join("o");
    let doc = json(&[
        "compact",
        p(&src),
        "--session",
        "20261123_152520_e33e03",
        "--out",
        p(&out),
        "--max-request-bytes",
        "120000",
        "--format",
        "json",
    ]);
    assert_eq!(doc["fits"], true, "{doc:#}");
    assert_eq!(doc["written"], true);
    assert!(doc["before"]["request_bytes"].as_u64().unwrap() > 120_000);
    let after = doc["steps"].as_array().unwrap().last().unwrap()["after"].clone();
    assert!(after["request_bytes"].as_u64().unwrap() <= 120_000);
    // The paste (row 16) is cut; the newest user row (19) is not.
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{doc:#}");
    assert_eq!(changes[0]["message_id"], "16");
    let copy = out.join("state.db");
    assert!(verify_copy(&copy, "production") > 0);
    let c = Connection::open(&copy).unwrap();
    let (len, api): (i64, Option<String>) = c
        .query_row(
            "SELECT length(content), api_content FROM messages WHERE id = 16",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(len < 9000 && api.is_none(), "{len}");
    drop(c);
    let left = codes(&out, &["--max-request-bytes", "120000"]);
    assert!(
        !left.iter().any(|(_, c, _)| c == "payload-too-large"),
        "{left:?}"
    );
    assert_eq!(snapshot(&src), before);
}

#[test]
fn keep_turns_compacts_in_place_as_hermes_does() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    let doc = json(&[
        "compact",
        p(&hx("hermes-gen/rotate_loop")),
        "--session",
        "20261123_152354_66b4fb",
        "--out",
        p(&out),
        "--max-request-bytes",
        "6500",
        "--headroom",
        "0.2",
        "--keep-turns",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(doc["written"], true, "{doc:#}");
    let copy = out.join("state.db");
    verify_copy(&copy, "turn");
    let c = Connection::open(&copy).unwrap();
    let rows: Vec<(i64, String, i64, i64, String)> = c
        .prepare("SELECT id, role, active, compacted, content FROM messages WHERE session_id = '20261123_152354_66b4fb' ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    // The 15 original rows are archived; a summary and the last turn are active.
    assert_eq!(rows.iter().filter(|r| r.2 == 0 && r.3 == 1).count(), 15);
    let active: Vec<_> = rows.iter().filter(|r| r.2 == 1).collect();
    assert_eq!(active.len(), 3);
    assert_eq!(active[0].1, "assistant");
    assert!(active[0]
        .4
        .starts_with("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted"));
    assert!(active[0].4.contains("[session-doctor compact:"));
    assert!(active[0].4.ends_with(
        "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
    ));
    assert_eq!(active[1].4, "turn 7: plain follow-up, no tools");
    let count: i64 = c
        .query_row(
            "SELECT message_count FROM sessions WHERE id = '20261123_152354_66b4fb'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, 3);
    drop(c);
    // The copy reads back as the plan said: one more (in-place) compaction.
    let s = list(&out);
    let x = session(&s, "66b4fb");
    assert_eq!(x["compactions"], 6);
    assert_eq!(
        x["messages"],
        doc["steps"].as_array().unwrap().last().unwrap()["after"]["messages"]
    );
}

#[test]
fn historical_images_are_stripped_with_hermes_placeholder() {
    // A second image turn after row 36 makes row 36's image historical.
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("src");
    std::fs::create_dir_all(&d).unwrap();
    let db = d.join("state.db");
    std::fs::copy(hx("hermes-gen/image_after_compress/state.db"), &db).unwrap();
    {
        let c = Connection::open(&db).unwrap();
        c.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, active, compacted) SELECT session_id, role, content, timestamp + 100, 1, 0 FROM messages WHERE id = 36",
            [],
        )
        .unwrap();
        c.pragma_update(None, "wal_checkpoint", "TRUNCATE").ok();
    }
    for sfx in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{sfx}", db.display()));
    }
    let out = t.path().join("o");
    let doc = json(&[
        "compact",
        p(&d),
        "--session",
        "20261123_152528_e3af5b",
        "--out",
        p(&out),
        "--max-request-bytes",
        "300000",
        "--format",
        "json",
    ]);
    assert_eq!(doc["written"], true, "{doc:#}");
    assert_eq!(doc["steps"][0]["step"], "strip-media");
    assert_eq!(doc["changes"][0]["message_id"], "36");
    let copy = out.join("state.db");
    verify_copy(&copy, "shot_c");
    let c = Connection::open(&copy).unwrap();
    let content: String = c
        .query_row("SELECT content FROM messages WHERE id = 36", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(content.starts_with("\u{0}json:["));
    assert!(content.contains("[Attached image \\u2014 stripped after compression]"));
    assert!(!content.contains("data:image/"));
    drop(c);
    let s = list(&out);
    assert_eq!(session(&s, "e3af5b")["media_bytes"], 120_303);
}

#[test]
fn discovery_by_name_by_tables_and_by_hermes_home() {
    let t = tempfile::tempdir().unwrap();
    // HERMES_HOME names the home: `list` with no PATH reads its state.db.
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(hx("hermes/basic/state.db"), home.join("state.db")).unwrap();
    let out = bin()
        .args(["list", "--format", "json"])
        .env("HERMES_HOME", &home)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["agent"] == "hermes"),
        "{doc:#}"
    );
    // Another name: read when given by name, skipped while walking.
    let other = t.path().join("walk");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(hx("hermes/basic/state.db"), other.join("backup.db")).unwrap();
    assert_eq!(list(&other.join("backup.db")).len(), 1);
    bin().args(["list", p(&other)]).assert().code(2);
}

#[test]
fn columns_are_read_by_name_in_an_older_layout() {
    // A database whose columns came in another order (ADD COLUMN) and that
    // lacks the later ones (active, compacted, api_content, session_model_usage).
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("state.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, parent_session_id TEXT, message_count INTEGER DEFAULT 0);
         ALTER TABLE sessions ADD COLUMN output_tokens INTEGER DEFAULT 0;
         ALTER TABLE sessions ADD COLUMN input_tokens INTEGER DEFAULT 0;
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL, tool_calls TEXT, tool_call_id TEXT);
         INSERT INTO sessions (id, source, model, started_at, output_tokens, input_tokens) VALUES ('s1', 'cli', 'm', 1, 7, 1000);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', 'hi', 1), ('s1', 'assistant', 'hello', 2);",
    )
    .unwrap();
    drop(c);
    let s = list(&db);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["tokens_total"]["input"], 1000);
    assert_eq!(s[0]["tokens_total"]["output"], 7);
    assert_eq!(s[0]["messages"], 2);
}

#[test]
fn a_running_hermes_wal_is_read_through_a_snapshot_and_left_alone() {
    // hermes keeps state.db in WAL mode; while it runs, rows sit in -wal.
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let db = home.join("state.db");
    std::fs::copy(hx("hermes/basic/state.db"), &db).unwrap();
    let c = Connection::open(&db).unwrap();
    c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    c.execute_batch(
        "INSERT INTO sessions (id, source, started_at, input_tokens, output_tokens) VALUES ('20261201_000000_abcdef', 'cli', 1900000000, 11, 2);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('20261201_000000_abcdef', 'user', 'still in the wal', 1900000000);",
    )
    .unwrap();
    assert!(home.join("state.db-wal").exists());
    let before = snapshot(&home);
    let s = list(&home);
    let x = session(&s, "abcdef");
    assert_eq!(x["messages"], 1);
    assert_eq!(x["tokens_total"]["input"], 11);
    let out = t.path().join("o");
    bin()
        .args(["repair", p(&home), "--out", p(&out)])
        .assert()
        .code(0);
    assert!(verify_copy(&out.join("state.db"), "wal") > 0);
    assert_eq!(snapshot(&home), before);
    drop(c);
}

/// The `hermes chat --resume` step printed after repairing an empty
/// continuation named the first session the repair changed: the empty
/// continuation itself, which the copy no longer holds, so hermes answered
/// "Session not found". The step now names a session the copy holds, the
/// one `list` says the copy resumes (the reopened parent).
#[test]
fn the_resume_step_after_dropping_an_empty_continuation_names_a_session_the_copy_holds() {
    let t = tempfile::tempdir().unwrap();
    let src = hx("derived/empty_continuation");
    let before = snapshot(&src);
    let out = t.path().join("o");
    let doc = json(&[
        "repair",
        "--format",
        "json",
        p(&src.join("state.db")),
        "--session",
        "20261122_104851_7db7eb",
        "--out",
        p(&out),
    ]);
    assert_eq!(doc["copies"][0]["written"], true, "{doc:#}");
    let steps: Vec<&str> = doc["copies"][0]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let resume = steps
        .iter()
        .find(|s| s.contains("hermes chat --resume"))
        .unwrap_or_else(|| panic!("{steps:?}"));
    let id = resume.rsplit(' ').next().unwrap();
    let c = Connection::open(out.join("state.db")).unwrap();
    let held: i64 = c
        .query_row("SELECT count(*) FROM sessions WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(held, 1, "{resume}: not a session of the copy");
    let s = list(&out);
    assert_eq!(session(&s, id)["chain"]["resumes"], id, "{resume}");
    assert_eq!(id, "20261122_104840_a980c8");
    assert_eq!(snapshot(&src), before);
}

/// The next steps told the user to `cp ~/.hermes/config.yaml ~/.hermes/.env`
/// into the copy's hermes home whatever home the db came from: for a db of
/// `$HERMES_HOME`, a profile or any other folder it copied another home's
/// settings and keys, or failed when `~/.hermes` has none. They now copy
/// from the folder holding the source `state.db` (the home hermes reads
/// it as), and say so in words when that folder holds neither file.
#[test]
fn the_settings_step_copies_from_the_hermes_home_the_db_is_in() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("hh");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(
        hx("derived/closed_compression/state.db"),
        home.join("state.db"),
    )
    .unwrap();
    std::fs::write(home.join("config.yaml"), "model: x\n").unwrap();
    std::fs::write(home.join(".env"), "KEY=x\n").unwrap();
    let before = snapshot(&home);
    let out = t.path().join("o");
    let o = bin()
        .env("HERMES_HOME", &home)
        .args(["repair", "--format", "json", p(&home), "--out", p(&out)])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["copies"][0]["written"], true, "{doc:#}");
    let steps: Vec<String> = doc["copies"][0]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert!(!steps.iter().any(|s| s.contains("~/.hermes")), "{steps:?}");
    let cp = format!(
        "cp {} {} {}/",
        home.join("config.yaml").display(),
        home.join(".env").display(),
        out.display()
    );
    let step = steps
        .iter()
        .find(|s| s.starts_with(&cp))
        .unwrap_or_else(|| panic!("{steps:?}"));
    let ran = std::process::Command::new("sh")
        .arg("-c")
        .arg(step)
        .status()
        .unwrap();
    assert!(ran.success(), "{step}");
    assert!(out.join("config.yaml").is_file() && out.join(".env").is_file());
    assert_eq!(snapshot(&home), before);

    // A db whose folder holds no settings: no `cp`, a sentence.
    let src = hx("derived/closed_compression");
    let before = snapshot(&src);
    let out2 = t.path().join("o2");
    let doc = json(&["repair", "--format", "json", p(&src), "--out", p(&out2)]);
    let steps: Vec<&str> = doc["copies"][0]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(!steps.iter().any(|s| s.starts_with("cp ")), "{steps:?}");
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with("put config.yaml and .env from the hermes home you use into ")),
        "{steps:?}"
    );
    assert_eq!(snapshot(&src), before);
}

/// A hermes-agent compaction loop is recorded by the rotations of the
/// session's chain (`compression:<parent id>` markers): the copy `compact`
/// writes of the tip keeps them, so it still reports the loop. When another
/// finding of the session asked for compact (payload-too-large under a
/// small request limit), `check` printed the compact command on the loop
/// too, and running it left the loop. Now the command goes only with the
/// findings the copy no longer has, and the loop says why compact cannot
/// clear it and what to do instead.
#[test]
fn a_loop_the_compacted_copy_keeps_gets_no_compact_command() {
    let fixtures_before = snapshot(&hx(""));
    let t = tempfile::tempdir().unwrap();
    for (db, sid, limit) in [
        ("hermes-gen/rotate_loop", "66b4fb", "6000"),
        ("hermes-gen/image_after_compress", "e3af5b", "200000"),
    ] {
        let dir = t.path().join(db.replace('/', "-"));
        copy_dir(&hx(db), &dir);
        let flags = ["--max-request-bytes", limit];
        // Every printed command removes the finding that printed it.
        let r = run_printed_remedies(&flags, &[&dir]);
        assert!(r.failures.is_empty(), "{db}: {}", r.failures.join("\n"));
        assert!(r.fixed.contains("payload-too-large"), "{db}: {:?}", r.fixed);
        // The loop: no command, the reason and the alternative instead.
        let loop_ = finding(&dir, sid, "compaction-loop", &flags);
        assert_eq!(loop_["severity"], "error");
        assert_eq!(loop_["remedy_command"], Value::Null, "{db}: {loop_:#}");
        let remedy = loop_["remedy"].as_str().unwrap();
        assert!(
            remedy.contains("session-doctor compact cannot clear it here")
                && remedy.contains("keeps the compactions of the loop")
                && remedy.contains("switch to a model with a larger context"),
            "{db}: {remedy}"
        );
        // The finding compact does fix still gets the command.
        let payload = finding(&dir, sid, "payload-too-large", &flags);
        assert!(payload["remedy_command"].is_string(), "{db}: {payload:#}");
    }
    assert_eq!(snapshot(&hx("")), fixtures_before, "fixtures changed");
}
