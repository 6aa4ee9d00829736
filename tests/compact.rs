//! `compact` and the size findings on the real opencode / Kilo data sets.

mod common;
use common::*;
use std::path::Path;

fn part_data(db: &Path, part_id: &str) -> serde_json::Value {
    let c = rusqlite::Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let s: String = c
        .query_row("SELECT data FROM part WHERE id = ?1", [part_id], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

fn compact(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = bin()
        .arg("compact")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), doc)
}

#[test]
fn prune_old_tool_outputs_are_truncated_newest_kept_longest() {
    let src = oc("prune");
    let before = snapshot(&src);
    let out = tempfile::tempdir().unwrap();
    let (rc, doc) = compact(&[
        src.to_str().unwrap(),
        "--session",
        "ses_dfd1d09a7ffe1KlO67vOWSZvri",
        "--out",
        out.path().to_str().unwrap(),
        "--max-request-bytes",
        "150000",
    ]);
    assert_eq!(before, snapshot(&src), "original untouched");
    assert_eq!(rc, Some(0), "{doc:#}");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["before"]["fits"], false);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{doc:#}");
    assert_eq!(steps[0]["step"], "truncate-tool-output");
    assert_eq!(steps[0]["after"]["fits"], true);
    assert!(steps[0]["after"]["request_bytes"].as_u64().unwrap() <= 150_000);
    assert!(
        steps[0]["after"]["payload_bytes"].as_u64().unwrap()
            < doc["before"]["payload_bytes"].as_u64().unwrap()
    );
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3);
    // Newest kept longest: caps halve going back in time.
    let caps: Vec<usize> = changes
        .iter()
        .map(|c| {
            let pid = c["part_id"].as_str().unwrap();
            let v = part_data(&out.path().join("opencode.db"), pid);
            let o = v["state"]["output"].as_str().unwrap();
            assert!(
                o.contains("characters removed by session-doctor compact"),
                "{o}"
            );
            o.chars().count()
        })
        .collect();
    assert!(caps[0] > caps[1] && caps[1] > caps[2], "{caps:?}");
    // The copy passes the same size check.
    bin()
        .args([
            "check",
            "--fail-on",
            "error",
            "--max-request-bytes",
            "150000",
        ])
        .arg(out.path())
        .assert()
        .code(0);
    bin()
        .args([
            "check",
            "--fail-on",
            "error",
            "--max-request-bytes",
            "150000",
        ])
        .arg(&src)
        .assert()
        .code(1);
}

#[test]
fn size_findings_on_prune() {
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--max-request-bytes",
        "40000",
        oc("prune").to_str().unwrap(),
    ]);
    let f = with_code(&doc, "payload-too-large");
    // The whole body, and every 45,000-character output alone.
    assert!(f
        .iter()
        .any(|f| f["request_bytes"].as_u64().unwrap() > 40_000));
    let single: Vec<_> = f.iter().filter(|f| f.get("part_id").is_some()).collect();
    // 4 of the 7 outputs are marked compacted: opencode sends a placeholder for them.
    assert_eq!(single.len(), 3, "{doc:#}");
    assert!(single
        .iter()
        .all(|f| f["part_bytes"].as_u64().unwrap() > 40_000));
}

#[test]
fn over_budget_uses_the_flags_and_says_where_limits_came_from() {
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--context",
        "2000",
        "--max-output",
        "200",
        oc("noprogress").to_str().unwrap(),
    ]);
    let f = with_code(&doc, "over-budget");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["usable"], 1600);
    assert_eq!(f[0]["tokens"], 1675);
    assert_eq!(f[0]["tokens_source"], "reported");
    assert_eq!(f[0]["limits_source"], "flags");
    assert_eq!(doc["sessions"][0]["budget"]["agent_threshold"], 1800);
    // Without limits for the stub model, over-budget is skipped and the reason given.
    let doc = json(&[
        "check",
        "--format",
        "json",
        oc("noprogress").to_str().unwrap(),
    ]);
    assert!(with_code(&doc, "over-budget").is_empty());
    assert!(doc["sessions"][0]["budget_unknown"]
        .as_str()
        .unwrap()
        .contains("stub/stub-small"));
}

#[test]
fn media_in_history_on_image_counts_the_same_png_once_with_its_repeats() {
    let doc = json(&["check", "--format", "json", oc("image").to_str().unwrap()]);
    let f = with_code(&doc, "media-in-history");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["media_count"], 1);
    assert_eq!(f[0]["media_bytes"], 27817);
    assert_eq!(f[0]["distinct_media"], 1);
    assert_eq!(f[0]["media"][0]["repeats"], 2);
    assert_eq!(f[0]["kept_message_id"], "msg_202e211fd001ON0VIDgCcEdXUF");
    // No compaction, no historical media: Kilo's and the legacy sessions keep theirs.
    for name in ["plain", "tools"] {
        let d = json(&["check", "--format", "json", oc(name).to_str().unwrap()]);
        assert!(with_code(&d, "media-in-history").is_empty());
    }
}

/// `image` with its summaries marked unfinished and no tail recorded on its
/// compactions (derived in a temp copy: what opencode leaves when the summary
/// call fails), so the agent would send the whole history, both PNG copies included.
fn image_without_cut(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let db = dir.join("opencode.db");
    std::fs::copy(oc("image").join("opencode.db"), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "UPDATE message SET data = json_remove(data, '$.finish') WHERE json_extract(data, '$.summary') = 1;
         UPDATE part SET data = json_remove(data, '$.tail_start_id') WHERE json_extract(data, '$.type') = 'compaction';",
    )
    .unwrap();
    drop(c);
    db
}

#[test]
fn historical_media_is_stripped_to_a_placeholder_and_the_newest_kept() {
    let t = tempfile::tempdir().unwrap();
    let db = image_without_cut(&t.path().join("src"));
    let out = t.path().join("out");
    let (rc, doc) = compact(&[
        db.to_str().unwrap(),
        "--session",
        "ses_dfd1e065effeRy7N0IMCxzViNy",
        "--out",
        out.to_str().unwrap(),
        "--max-request-bytes",
        "60000",
    ]);
    assert_eq!(rc, Some(0), "{doc:#}");
    assert_eq!(doc["steps"][0]["step"], "strip-media");
    assert_eq!(doc["steps"][0]["after"]["fits"], true);
    assert_eq!(doc["steps"][0]["after"]["media_bytes"], 27817);
    let copy = out.join("opencode.db");
    let p = part_data(&copy, "prt_202e1fde9003kHRSYYVf1355w0");
    assert_eq!(p["type"], "text", "same id, a text part now: {p}");
    let text = p["text"].as_str().unwrap();
    assert!(
        text.starts_with("[Attached image/png: pic.png - removed by session-doctor compact, 27817 bytes, sha256 "),
        "{text}"
    );
    // The read tool's attachment (the newest media) is kept.
    let tool = part_data(&copy, "prt_202e215c4001yLQwu1e3IDP2uV");
    assert_eq!(tool["state"]["attachments"].as_array().unwrap().len(), 1);
}

/// The legacy tree with its summaries marked unfinished (derived in a temp
/// copy), so its whole history, the PNG included, is sent again.
fn legacy_without_cut(dir: &Path) -> std::path::PathBuf {
    copy_dir(&oc("legacy-1.1.65"), dir);
    let msgs = dir.join("storage/message/ses_dfd1ae85effe5u4syGjAIhhhc2");
    for e in std::fs::read_dir(&msgs).unwrap() {
        let p = e.unwrap().path();
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        if v["summary"] == true {
            v.as_object_mut().unwrap().remove("finish");
            std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
    }
    dir.join("storage")
}

#[test]
fn keep_turns_cuts_history_with_a_note_on_noprogress_kilo_and_legacy() {
    let t = tempfile::tempdir().unwrap();
    let legacy = legacy_without_cut(&t.path().join("legacy"));
    for (name, src, id, context) in [
        (
            "noprogress",
            oc("noprogress").join("opencode.db"),
            "ses_dfd1d915fffeGQ4egBG5GGhlmd",
            "2000",
        ),
        (
            "kilo",
            oc("kilo").join("kilo.db"),
            "ses_dfd1699dfffeTGRV3habI8PCDk",
            "2400",
        ),
        (
            "legacy",
            legacy.clone(),
            "ses_dfd1ae85effe5u4syGjAIhhhc2",
            "2400",
        ),
    ] {
        let src_dir = src.parent().unwrap().to_path_buf();
        let before = snapshot(&src_dir);
        let out = tempfile::tempdir().unwrap();
        let (rc, doc) = compact(&[
            src.to_str().unwrap(),
            "--session",
            id,
            "--out",
            out.path().to_str().unwrap(),
            "--context",
            context,
            "--max-output",
            "200",
            "--keep-turns",
            "1",
        ]);
        assert_eq!(before, snapshot(&src_dir), "{name}: original untouched");
        assert_eq!(rc, Some(0), "{name}: {doc:#}");
        assert_eq!(doc["before"]["fits"], false, "{name}: {doc:#}");
        let last = doc["steps"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["step"], "cut-history", "{name}: {doc:#}");
        assert_eq!(last["after"]["fits"], true, "{name}");
        assert!(
            last["after"]["tokens_next_turn"].as_u64().unwrap()
                <= doc["budget"]["usable"].as_u64().unwrap()
        );
        let notes: Vec<_> = doc["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["field"] == "part" && c["new"].as_str().unwrap_or("").contains("were removed")
            })
            .collect();
        assert_eq!(notes.len(), 1, "{name}: {doc:#}");
        // The copy reads back with no dangling parents and the planned message count.
        // (Its stored usage still reports the pre-compaction context until the
        // agent's next turn; see README, `compact`.)
        let copy = out.path().join(src.file_name().unwrap());
        let d = json(&["check", "--format", "json", copy.to_str().unwrap()]);
        assert!(with_code(&d, "dangling-parent").is_empty(), "{name}: {d:#}");
        assert!(with_code(&d, "unreadable").is_empty(), "{name}: {d:#}");
        let l = json(&["list", "--format", "json", copy.to_str().unwrap()]);
        assert_eq!(
            l["sessions"][0]["messages"], last["after"]["messages"],
            "{name}"
        );
    }
}

#[test]
fn unreachable_budget_is_said_and_nothing_written() {
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("x");
    let o = bin()
        .args([
            "compact",
            "--session",
            "ses_dfd222799ffeZaEGZwxSj0AU0r",
            "--out",
        ])
        .arg(&dest)
        .args(["--max-request-bytes", "400", "--headroom", "0.5"])
        .arg(oc("plain"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not reachable") && err.contains("newest user message"),
        "{err}"
    );
    assert!(!dest.exists());
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("x");
    let (rc, doc) = compact(&[
        oc("prune").to_str().unwrap(),
        "--session",
        "ses_dfd1d09a7ffe1KlO67vOWSZvri",
        "--out",
        dest.to_str().unwrap(),
        "--max-request-bytes",
        "150000",
        "--dry-run",
    ]);
    assert_eq!(rc, Some(0));
    assert_eq!(doc["written"], false);
    assert_eq!(doc["changes"].as_array().unwrap().len(), 3);
    assert!(!dest.exists());
}

#[test]
fn overflow_errors_are_classified_on_a_413_copy_of_errors() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("opencode.db");
    std::fs::copy(oc("errors").join("opencode.db"), &db).unwrap();
    // Derived: the stored APIError of `errors` turned into a 413 request_too_large.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        r#"UPDATE message SET data = json_set(data, '$.error.data.statusCode', 413,
             '$.error.data.message', 'Request too large',
             '$.error.data.responseBody', '{"error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}')
           WHERE json_extract(data, '$.error.name') = 'APIError';"#,
    )
    .unwrap();
    drop(c);
    let doc = json(&["check", "--format", "json", db.to_str().unwrap()]);
    let f = with_code(&doc, "overflow-error");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["kind"], "wire");
    assert_eq!(f[0]["status_code"], 413);
    // Issue 10: a reply succeeded after it, so it is history, not a wedge.
    assert_eq!(f[0]["severity"], "info", "{doc:#}");
    assert!(f[0]["resolved_by"]
        .as_str()
        .unwrap()
        .contains("succeeded after it"));
    // The real data set's 400 "invalid request" is no overflow.
    let doc = json(&["check", "--format", "json", oc("errors").to_str().unwrap()]);
    assert!(with_code(&doc, "overflow-error").is_empty());
}

/// The session wedged by HTTP 413 with the real opencode 1.18.33
/// (fixtures/opencode/wedged-413/PROVENANCE.md): limit 150,000 bytes.
#[test]
fn wedged_413_is_diagnosed_and_compacted_under_the_limit() {
    let src = oc("wedged-413");
    let before = snapshot(&src);
    let doc = json(&[
        "check",
        "--format",
        "json",
        "--max-request-bytes",
        "150000",
        src.to_str().unwrap(),
    ]);
    let p = with_code(&doc, "payload-too-large");
    assert!(
        p.iter()
            .any(|f| f["request_bytes"].as_u64().unwrap() > 150_000),
        "{doc:#}"
    );
    assert!(
        p.iter()
            .any(|f| f["part_id"] == "prt_203a4bc7a001nuBHgrM03jxeVq"),
        "{doc:#}"
    );
    let c = with_code(&doc, "compaction-failed");
    assert_eq!(c.len(), 2, "{doc:#}");
    assert!(c[0]["remedy"].as_str().unwrap().contains("cannot help"));
    // Failed overflow compactions are not a no-progress loop.
    assert!(with_code(&doc, "compaction-loop").is_empty(), "{doc:#}");
    let o = with_code(&doc, "overflow-error");
    assert!(o.iter().all(|f| f["during_compaction"] == true), "{doc:#}");

    let out = tempfile::tempdir().unwrap();
    let (rc, plan) = compact(&[
        src.to_str().unwrap(),
        "--session",
        "ses_dfc5b7f4affeWobb3V494h48Lq",
        "--out",
        out.path().to_str().unwrap(),
        "--max-request-bytes",
        "150000",
    ]);
    assert_eq!(before, snapshot(&src), "original untouched");
    assert_eq!(rc, Some(0), "{plan:#}");
    assert_eq!(plan["before"]["fits"], false);
    let last = plan["steps"].as_array().unwrap().last().unwrap();
    assert_eq!(last["step"], "truncate-text", "{plan:#}");
    assert!(last["after"]["request_bytes"].as_u64().unwrap() <= 150_000);
    bin()
        .args([
            "check",
            "--fail-on",
            "error",
            "--max-request-bytes",
            "150000",
        ])
        .arg(out.path())
        .assert()
        .code(0); // the failed summaries stay in the copy, resolved (issue 10)
    let d = json(&[
        "check",
        "--format",
        "json",
        "--max-request-bytes",
        "150000",
        out.path().to_str().unwrap(),
    ]);
    assert!(with_code(&d, "payload-too-large").is_empty(), "{d:#}");
}
