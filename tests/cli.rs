//! Output shapes of `list` and `inspect` (insta snapshots of the JSON on the
//! shipped fixtures; paths are relative to the repo root, so they are stable).

mod common;
use common::*;

/// The real data sets copied from shared/real-sessions/opencode.
const REAL: &[&str] = &[
    "fixtures/opencode/plain",
    "fixtures/opencode/tools",
    "fixtures/opencode/compact",
    "fixtures/opencode/image",
    "fixtures/opencode/noprogress",
    "fixtures/opencode/prune",
    "fixtures/opencode/errors",
    "fixtures/opencode/errors-compaction-fails",
    "fixtures/opencode/kilo",
    "fixtures/opencode/legacy-1.1.65",
    "fixtures/opencode/migrated",
];

#[test]
fn list_json_on_all_fixtures() {
    let out = bin()
        .args(["list", "--format", "json"])
        .args(REAL)
        .output()
        .unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn list_table_on_all_fixtures() {
    let out = bin()
        .arg("list")
        .args(REAL)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        !s.contains('\u{1b}'),
        "no colour codes when NO_COLOR is set or stdout is not a terminal"
    );
    insta::assert_snapshot!(s);
}

#[test]
fn inspect_image_reports_sizes_media_and_flags_per_message() {
    let doc = json(&[
        "inspect",
        "--session",
        "ses_dfd1e065effeRy7N0IMCxzViNy",
        "--top",
        "2",
        "--format",
        "json",
        "fixtures/opencode/image",
    ]);
    assert_eq!(doc["schema_version"], 1);
    let s = &doc["sessions"][0];
    let msgs = s["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 15);
    assert_eq!(s["visible_messages"], 7);
    // The --file PNG: 27,817 decoded bytes, inline as a data URL.
    assert_eq!(msgs[0]["media_bytes"], 27817);
    assert_eq!(msgs[0]["media_count"], 1);
    assert_eq!(msgs[0]["flags"], serde_json::json!(["synthetic", "hidden"]));
    assert_eq!(
        msgs[2]["flags"],
        serde_json::json!(["compaction", "hidden"])
    );
    assert_eq!(msgs[3]["flags"], serde_json::json!(["summary", "hidden"]));
    assert_eq!(msgs[1]["tokens_reported"]["input"], 10858);
    // The largest part is the read-tool attachment of the same PNG.
    let top = s["top_parts"].as_array().unwrap();
    assert_eq!(top.len(), 2);
    assert_eq!(top[0]["kind"], "tool");
    assert_eq!(top[0]["payload_bytes"], 37629);
    assert_eq!(top[0]["media_bytes"], 27817);
    // Payload bytes are exactly the stored data columns.
    let total: u64 = msgs
        .iter()
        .map(|m| m["payload_bytes"].as_u64().unwrap())
        .sum();
    let list = json(&["list", "--format", "json", "fixtures/opencode/image"]);
    assert_eq!(list["sessions"][0]["payload_bytes"], total);
    assert_eq!(list["sessions"][0]["media_bytes"], 55634);
}

#[test]
fn completions_are_generated() {
    bin()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicates::str::contains("session-doctor"));
}

#[test]
fn shipped_completions_match_the_cli() {
    for shell in ["bash", "zsh", "fish"] {
        let out = bin().args(["completions", shell]).output().unwrap();
        let shipped = std::fs::read(format!(
            "{}/completions/session-doctor.{shell}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert!(
            out.stdout == shipped,
            "completions/session-doctor.{shell} is stale: regenerate with `session-doctor completions {shell}`"
        );
    }
}

/// The man pages in `man/` are what `session-doctor man` prints (they list
/// the finding codes of `--ignore`: a new code left them stale unnoticed).
#[test]
fn shipped_man_pages_match_the_cli() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut pages = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(stem) = name.strip_suffix(".1") else {
            continue;
        };
        let mut cmd = bin();
        cmd.arg("man");
        if let Some(sub) = stem.strip_prefix("session-doctor-") {
            cmd.arg(sub);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{name}");
        assert!(
            out.stdout == std::fs::read(&path).unwrap(),
            "man/{name} is stale: regenerate with `session-doctor man {}`",
            stem.strip_prefix("session-doctor-").unwrap_or("")
        );
        pages += 1;
    }
    assert_eq!(pages, 8, "one page per command and one for the tool");
}

/// Issue 8: the README's table of finding codes lists exactly the codes of
/// the rule registry, each with its severity.
#[test]
fn readme_finding_table_matches_the_rule_registry() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("## Finding codes")
        .expect("a finding codes section");
    let mut documented: Vec<(String, String)> = readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| code"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect();
    documented.sort();
    let mut registry: Vec<(String, String)> = session_doctor::diagnose::RULES
        .iter()
        .map(|r| (r.code.as_str().to_string(), r.severity.as_str().to_string()))
        .collect();
    registry.sort();
    assert_eq!(documented, registry);
}
