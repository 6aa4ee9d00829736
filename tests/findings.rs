//! Findings expected on the real opencode / Kilo data sets (fixtures/opencode,
//! copied from shared/real-sessions/opencode; see fixtures/README.md).

mod common;
use common::*;

fn check(name: &str) -> serde_json::Value {
    let p = oc(name);
    json(&["check", "--format", "json", p.to_str().unwrap()])
}

#[test]
fn noprogress_reports_compaction_loop_with_6_compactions_and_5_stalls() {
    let doc = check("noprogress");
    assert_eq!(doc["schema_version"], 1);
    let f = with_code(&doc, "compaction-loop");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(f[0]["compactions"], 6);
    assert_eq!(f[0]["stalls"], 5);
    assert_eq!(
        f[0]["tokens"],
        serde_json::json!([7612, 7612, 7612, 7612, 7612, 7612])
    );
}

#[test]
fn compact_with_progress_between_compactions_is_no_loop() {
    let doc = check("compact");
    assert!(with_code(&doc, "compaction-loop").is_empty(), "{doc:#}");
    assert!(findings(&doc).is_empty(), "{doc:#}");
}

#[test]
fn image_has_one_orphan_in_context() {
    let doc = check("image");
    let f = with_code(&doc, "orphan-in-context");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["message_id"], "msg_202e216a90011gotV4Cqdh7G0O");
    assert_eq!(f[0]["parent_id"], "msg_202e20e80001q1aRI2YziVpbxq");
    assert_eq!(f[0]["visible_messages"], 7);
}

#[test]
fn plain_has_nothing_at_warning_or_above() {
    bin()
        .args(["check", "--fail-on", "warning"])
        .arg(oc("plain"))
        .assert()
        .code(0);
    assert!(findings(&check("plain")).is_empty());
}

#[test]
fn healthy_data_sets_have_no_findings() {
    for name in [
        "tools",
        "prune",
        "errors",
        "kilo",
        "legacy-1.1.65",
        "migrated",
    ] {
        let doc = check(name);
        assert!(findings(&doc).is_empty(), "{name}: {doc:#}");
    }
}

#[test]
fn failed_compaction_summaries_are_reported() {
    let doc = check("errors-compaction-fails");
    let f = with_code(&doc, "compaction-failed");
    assert_eq!(f.len(), 2, "{doc:#}");
    // Issue 10: nothing succeeded after them and the next request is no
    // smaller than the one that failed: they still wedge the session.
    assert!(f
        .iter()
        .all(|f| f["error_name"] == "APIError" && f["severity"] == "error"));
    assert!(f
        .iter()
        .all(|f| f["failed_request_bytes"].as_u64().unwrap() > 0));
}

#[test]
fn derived_stale_parent_is_detected_with_the_suggested_parent() {
    let doc = check("stale-parent");
    let f = with_code(&doc, "stale-parent");
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["message_id"], "msg_202e0ffd60017nVpisxzgn4gh3");
    assert_eq!(f[0]["parent_id"], "msg_202e0f46a001umhV6p1DrAd6Bn");
    assert_eq!(
        f[0]["suggested_parent_id"],
        "msg_202e0ffc2001SCq7P2qczABGAs"
    );
    assert_eq!(f[0]["compaction_id"], "msg_202e0fea2001jFjxDrjY1XLdn1");
}

#[test]
fn check_exit_codes_follow_fail_on() {
    bin().args(["check"]).arg(oc("noprogress")).assert().code(1);
    bin()
        .args(["check", "--fail-on", "never"])
        .arg(oc("noprogress"))
        .assert()
        .code(0);
    bin().args(["check"]).arg(oc("image")).assert().code(0);
    bin()
        .args(["check", "--fail-on", "warning"])
        .arg(oc("image"))
        .assert()
        .code(1);
    bin()
        .args(["check", "--fail-on", "bogus"])
        .arg(oc("image"))
        .assert()
        .code(2);
}
