//! Machine output formats for CI: JSON documents of every command checked
//! against `schema/session-doctor.schema.json`, `check --format sarif`
//! against the official SARIF 2.1.0 schema (tests/schemas), the syntax of
//! `--format github` workflow commands, the Markdown job summary's findings
//! table, and the exit codes of every format.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Every value of `--format`.
const FORMATS: &[&str] = &["table", "json", "markdown", "github", "sarif"];

/// A session of fixtures/opencode/image (inspect) and one of
/// fixtures/opencode/wedged-413 (compact --session).
const INSPECT_ID: &str = "ses_dfd1e065effeRy7N0IMCxzViNy";
const COMPACT_ID: &str = "ses_dfc5b7f4affeWobb3V494h48Lq";

fn read_json(path: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

/// Our schema (draft 2020-12).
fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| read_json("schema/session-doctor.schema.json"))
}

/// A validator for one document kind: `$defs/<kind>` of our schema.
fn validator(kind: &str) -> jsonschema::Validator {
    let root = schema();
    assert!(
        root["$defs"].get(kind).is_some(),
        "the schema has no $defs/{kind}"
    );
    let sub = json!({
        "$schema": root["$schema"],
        "$defs": root["$defs"],
        "$ref": format!("#/$defs/{kind}"),
    });
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&sub)
        .expect("the schema compiles")
}

/// The validation errors of `doc` against `$defs/<kind>`, as text.
fn errors(kind: &str, doc: &Value) -> Vec<String> {
    validator(kind)
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn assert_valid(kind: &str, doc: &Value) {
    let errs = errors(kind, doc);
    assert!(
        errs.is_empty(),
        "{kind} document does not match the schema: {errs:#?}"
    );
    let root = jsonschema::draft202012::options()
        .build(schema())
        .expect("the schema compiles");
    assert!(
        root.is_valid(doc),
        "{kind} document does not match the root schema"
    );
}

/// Runs the binary; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn parse(stdout: &str, what: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {stdout}"))
}

/// `check --format json fixtures/`, run once for every test that compares
/// with it.
fn check_json() -> &'static Value {
    static D: OnceLock<Value> = OnceLock::new();
    D.get_or_init(|| {
        let (code, out, err) = run(&["check", "--format", "json", "fixtures/"]);
        assert_eq!(code, 1, "the fixtures hold errors: {err}");
        parse(&out, "check --format json")
    })
}

#[test]
fn the_schema_is_valid_draft_2020_12_and_names_every_finding_code() {
    jsonschema::meta::validate(schema()).expect("a valid 2020-12 schema");
    let mut in_schema: Vec<&str> = schema()["$defs"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let mut registry: Vec<&str> = session_doctor::diagnose::RULES
        .iter()
        .map(|r| r.code.as_str())
        .collect();
    in_schema.sort_unstable();
    registry.sort_unstable();
    assert_eq!(in_schema, registry, "$defs/code lists the rule registry");
    for kind in [
        "list",
        "inspect",
        "check",
        "repair",
        "compact",
        "compact_batch",
        "problem",
        "finding",
        "location",
    ] {
        assert!(schema()["$defs"].get(kind).is_some(), "$defs/{kind}");
    }
}

#[test]
fn json_of_every_command_matches_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).display().to_string();
    let (repair_out, compact_out, single_out) = (out("repair"), out("compact"), out("single"));
    let cases: Vec<(&str, Vec<&str>, i32)> = vec![
        ("list", vec!["list", "fixtures/"], 0),
        (
            "inspect",
            vec![
                "inspect",
                "--session",
                INSPECT_ID,
                "--top",
                "3",
                "fixtures/",
            ],
            0,
        ),
        ("check", vec!["check", "fixtures/"], 1),
        (
            "repair",
            vec!["repair", "fixtures/", "--out", &repair_out],
            0,
        ),
        // One session's budget is not reachable: compact exits 1.
        (
            "compact_batch",
            vec!["compact", "fixtures/", "--out", &compact_out],
            1,
        ),
        (
            "compact",
            vec![
                "compact",
                "--session",
                COMPACT_ID,
                "--dry-run",
                "fixtures/",
                "--out",
                &single_out,
            ],
            0,
        ),
    ];
    for (kind, args, want) in cases {
        let (code, stdout, stderr) = run(&[args.as_slice(), &["--format", "json"]].concat());
        assert_eq!(code, want, "{args:?}: {stderr}");
        let doc = parse(&stdout, kind);
        assert_valid(kind, &doc);
        assert_eq!(doc["schema_version"], 1);
        assert_eq!(
            doc["tool"],
            json!({"name": "session-doctor", "version": env!("CARGO_PKG_VERSION")})
        );
        assert_eq!(doc["errors"], json!([]), "{kind}");
        // The totals add up to what the document lists.
        let t = &doc["totals"];
        match kind {
            "list" => {
                let rows = doc["sessions"].as_array().unwrap();
                assert_eq!(t["sessions"], rows.len());
                let sum = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
                assert_eq!(t["messages"], sum("messages"));
                assert_eq!(t["payload_bytes"], sum("payload_bytes"));
                let input: u64 = rows
                    .iter()
                    .map(|r| r["tokens_total"]["input"].as_u64().unwrap())
                    .sum();
                assert_eq!(t["tokens"]["input"], input);
            }
            "inspect" => {
                assert_eq!(t["sessions"], 1);
                assert_eq!(
                    t["messages"],
                    doc["sessions"][0]["messages"].as_array().unwrap().len()
                );
            }
            "check" => {
                let f = findings(&doc);
                assert!(!f.is_empty());
                let n = |sev: &str| f.iter().filter(|x| x["severity"] == sev).count();
                assert_eq!(t["findings"]["error"], n("error"));
                assert_eq!(t["findings"]["warning"], n("warning"));
                assert_eq!(t["findings"]["info"], n("info"));
                let by_code: u64 = t["by_code"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
                    .sum();
                assert_eq!(by_code as usize, f.len());
                assert_eq!(
                    t["by_code"]["stale-parent"],
                    f.iter().filter(|x| x["code"] == "stale-parent").count()
                );
            }
            "repair" | "compact_batch" => {
                let copies = doc["copies"].as_array().unwrap();
                assert!(!copies.is_empty(), "{kind} writes copies of the fixtures");
                assert_eq!(t["copies"], copies.len());
                assert_eq!(
                    t["copies_written"],
                    copies.iter().filter(|c| c["written"] == true).count()
                );
                if kind == "repair" {
                    assert_eq!(t["changes"], doc["changes"].as_array().unwrap().len());
                } else {
                    assert_eq!(t["sessions"], doc["sessions"].as_array().unwrap().len());
                    assert_eq!(t["unreachable"], 1);
                }
            }
            "compact" => {
                assert_eq!(t["sessions"], 1);
                assert_eq!(t["copies_written"], 0, "a dry run writes nothing");
                assert_eq!(t["changes"], doc["changes"].as_array().unwrap().len());
            }
            _ => unreachable!(),
        }
    }
}

/// A test that cannot fail is a defect: the schema rejects a renamed, a
/// missing or an unknown field, on the documents and inside them.
#[test]
fn the_schema_catches_renamed_missing_and_unknown_fields() {
    let check = check_json().clone();
    assert!(errors("check", &check).is_empty());
    let (_, list, _) = run(&["list", "--format", "json", "fixtures/opencode/plain"]);
    let list = parse(&list, "list");
    assert!(errors("list", &list).is_empty());

    type Edit = fn(&mut Value);
    let broken: &[(&str, &str, Edit)] = &[
        ("check", "totals removed", |d| {
            d.as_object_mut().unwrap().remove("totals");
        }),
        ("check", "tool renamed", |d| {
            let o = d.as_object_mut().unwrap();
            let t = o.remove("tool").unwrap();
            o.insert("tools".into(), t);
        }),
        ("check", "unknown top-level field", |d| {
            d["extra"] = json!(1);
        }),
        ("check", "finding location renamed", |d| {
            let f = d["sessions"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|s| !s["findings"].as_array().unwrap().is_empty())
                .unwrap();
            let f = f["findings"][0].as_object_mut().unwrap();
            let l = f.remove("location").unwrap();
            f.insert("loc".into(), l);
        }),
        ("check", "location line missing", |d| {
            let s = d["sessions"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|s| !s["findings"].as_array().unwrap().is_empty())
                .unwrap();
            s["findings"][0]["location"]
                .as_object_mut()
                .unwrap()
                .remove("line");
        }),
        ("check", "errors as strings", |d| {
            d["errors"] = json!(["/x: no such file"]);
        }),
        ("check", "error reason renamed", |d| {
            d["errors"] = json!([{"path": "/x", "why": "gone"}]);
        }),
        ("check", "unknown finding code", |d| {
            let s = d["sessions"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|s| !s["findings"].as_array().unwrap().is_empty())
                .unwrap();
            s["findings"][0]["code"] = json!("no-such-code");
        }),
        ("list", "row field renamed", |d| {
            let r = d["sessions"][0].as_object_mut().unwrap();
            let v = r.remove("payload_bytes").unwrap();
            r.insert("payload_byte".into(), v);
        }),
        ("list", "totals field missing", |d| {
            d["totals"].as_object_mut().unwrap().remove("tokens");
        }),
    ];
    for (kind, what, edit) in broken {
        let mut doc = if *kind == "check" {
            check.clone()
        } else {
            list.clone()
        };
        edit(&mut doc);
        assert!(
            !errors(kind, &doc).is_empty(),
            "the schema accepts a {kind} document with {what}"
        );
    }
}

/// The `language` pattern of the official schema (`run` and
/// `toolComponent`), with a stray `]`.
const SARIF_LANGUAGE_PATTERN: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";

/// The official SARIF 2.1.0 schema (draft-07), vendored unchanged in
/// tests/schemas. Its two `language` patterns hold an unescaped `]`, which
/// the draft-07 meta-schema's `regex` format (ECMA 262, Unicode mode)
/// rejects, so the schema would not compile; in memory only, that `]` is
/// escaped (`\]`: the same strings match). Every format of the log (`uri`,
/// `uri-reference`, `date-time`) is checked.
fn sarif_validator() -> jsonschema::Validator {
    let mut s = read_json("tests/schemas/sarif-schema-2.1.0.json");
    assert_eq!(
        s["title"],
        "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    );
    for def in ["run", "toolComponent"] {
        let pattern = &mut s["definitions"][def]["properties"]["language"]["pattern"];
        assert_eq!(
            *pattern, SARIF_LANGUAGE_PATTERN,
            "the vendored schema changed"
        );
        *pattern = json!(SARIF_LANGUAGE_PATTERN.replace("]?$", "\\]?$"));
    }
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&s)
        .expect("the SARIF schema compiles")
}

fn sarif_errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn sarif_of_check_matches_the_sarif_schema_and_the_json_findings() {
    let v = sarif_validator();
    let (code, out, err) = run(&["check", "--format", "sarif", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    let log = parse(&out, "check --format sarif");
    let errs = sarif_errors(&v, &log);
    assert!(errs.is_empty(), "invalid SARIF: {errs:#?}");
    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run0 = &runs[0];
    let driver = &run0["tool"]["driver"];
    assert_eq!(driver["name"], "session-doctor");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let rules: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = session_doctor::diagnose::RULES
        .iter()
        .map(|r| r.code.as_str())
        .collect();
    assert_eq!(rules, registry);
    for r in driver["rules"].as_array().unwrap() {
        let help = r["help"]["text"].as_str().unwrap();
        assert!(
            help.contains("session-doctor repair")
                || help.contains("session-doctor compact")
                || help.contains("No command fixes it"),
            "the help names the fix: {help}"
        );
    }
    assert_eq!(run0["invocations"][0]["executionSuccessful"], true);

    // One result per JSON finding, in the same order, with its level,
    // file, line and session.
    let json_findings: Vec<(Value, Value)> = check_json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |f| (s["id"].clone(), f.clone()))
        })
        .collect();
    let results = run0["results"].as_array().unwrap();
    assert_eq!(results.len(), json_findings.len());
    let mut with_line = 0;
    for (r, (session, f)) in results.iter().zip(&json_findings) {
        assert_eq!(r["ruleId"], f["code"]);
        assert_eq!(
            rules[r["ruleIndex"].as_u64().unwrap() as usize],
            r["ruleId"].as_str().unwrap()
        );
        let level = match f["severity"].as_str().unwrap() {
            "error" => "error",
            "warning" => "warning",
            _ => "note",
        };
        assert_eq!(r["level"], level);
        let loc = &r["locations"][0];
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"], f["location"]["file"],
            "fixture paths need no encoding"
        );
        match f["location"]["line"].as_u64() {
            Some(l) => {
                with_line += 1;
                assert_eq!(loc["physicalLocation"]["region"]["startLine"], l);
            }
            None => assert!(loc["physicalLocation"].get("region").is_none()),
        }
        assert_eq!(loc["logicalLocations"][0]["name"], *session);
        assert_eq!(r["properties"]["session_id"], *session);
        if let Some(m) = f["location"]["message_id"].as_str() {
            assert_eq!(loc["logicalLocations"][1]["name"], m);
        }
        assert_eq!(r["properties"]["remedy_command"], f["remedy_command"]);
    }
    assert!(
        with_line > 0 && with_line < results.len(),
        "JSONL and SQLite findings"
    );

    // The validator does reject a broken log.
    let mut bad = log.clone();
    bad["runs"][0]["results"][0]["level"] = json!("fatal");
    assert!(!sarif_errors(&v, &bad).is_empty());
}

#[test]
fn sarif_of_every_other_command_is_valid() {
    let v = sarif_validator();
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).display().to_string();
    let (a, b, c) = (out("repair"), out("compact"), out("single"));
    let missing = tmp.path().join("missing.db").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["list", "fixtures/opencode"],
        vec![
            "inspect",
            "--session",
            INSPECT_ID,
            "fixtures/opencode/image",
        ],
        vec!["repair", "fixtures/opencode", "--out", &a],
        vec!["compact", "fixtures/opencode", "--out", &b],
        vec![
            "compact",
            "--session",
            COMPACT_ID,
            "--dry-run",
            "fixtures/opencode",
            "--out",
            &c,
        ],
        vec!["check", &missing, "fixtures/opencode/plain"],
    ];
    for args in cases {
        let (_, stdout, stderr) = run(&[args.as_slice(), &["--format", "sarif"]].concat());
        let log = parse(&stdout, &format!("{args:?}: {stderr}"));
        let errs = sarif_errors(&v, &log);
        assert!(errs.is_empty(), "{args:?}: invalid SARIF: {errs:#?}");
        assert_eq!(log["runs"][0]["properties"]["command"], args[0]);
    }
}

/// Whether `line` is `^::(error|warning|notice)( [a-z]+=[^,:]*(,[a-z]+=[^,:]*)*)?::.*$`.
fn is_workflow_command(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("::") else {
        return false;
    };
    let Some((level, rest)) = ["error", "warning", "notice"]
        .iter()
        .find_map(|l| rest.strip_prefix(l).map(|r| (l, r)))
    else {
        return false;
    };
    let _ = level;
    let message = if let Some(m) = rest.strip_prefix("::") {
        m
    } else if let Some(props) = rest.strip_prefix(' ') {
        // Property values hold no `:`, so the first `:` ends them.
        let Some(end) = props.find(':') else {
            return false;
        };
        let (props, m) = props.split_at(end);
        let Some(m) = m.strip_prefix("::") else {
            return false;
        };
        let props_ok = props.split(',').all(|p| match p.split_once('=') {
            Some((k, _)) => !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase()),
            None => false,
        });
        if !props_ok {
            return false;
        }
        m
    } else {
        return false;
    };
    !message.contains(['\n', '\r'])
}

/// A property value escaped as the runner wants it.
fn escape(v: &str) -> String {
    v.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// The properties of a workflow command line, unescaped.
fn properties(line: &str) -> Vec<(String, String)> {
    let Some(rest) = line.strip_prefix("::") else {
        return Vec::new();
    };
    let Some((_, rest)) = rest.split_once(' ') else {
        return Vec::new();
    };
    let Some((props, _)) = rest.split_once("::") else {
        return Vec::new();
    };
    props
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| {
            let v = v
                .replace("%3A", ":")
                .replace("%2C", ",")
                .replace("%0A", "\n")
                .replace("%0D", "\r")
                .replace("%25", "%");
            (k.to_string(), v)
        })
        .collect()
}

#[test]
fn workflow_command_matcher_rejects_what_the_pattern_rejects() {
    assert!(is_workflow_command(
        "::error file=a.jsonl,line=3,title=x::m: n, o"
    ));
    assert!(is_workflow_command("::notice::m"));
    assert!(!is_workflow_command("::error file=a:b::m"));
    assert!(!is_workflow_command("::error file=a,b::m"));
    assert!(!is_workflow_command("::fatal::m"));
    assert!(!is_workflow_command("::error File=a::m"));
    assert!(!is_workflow_command("::error file=a"));
    assert!(!is_workflow_command("session-doctor check: 1"));
}

/// A folder whose name needs escaping everywhere (`|`, `,`, `:`, `%`), with
/// a copy of an SQLite fixture (stale-parent) and of a Claude Code one
/// (duplicate lines, so findings with a line).
fn awkward_fixtures() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("ci|runs,a:b%2C");
    copy_dir(&oc("stale-parent"), &root.join("stale-parent"));
    copy_dir(
        &fixtures().join("claude-code/claude-code-gen/double_compact"),
        &root.join("double_compact"),
    );
    (t, root)
}

#[test]
fn github_output_is_one_workflow_command_per_finding() {
    // On the fixtures: every line an annotation but the closing summary,
    // one per JSON finding, with the finding's file and line.
    let (code, out, err) = run(&["check", "--format", "github", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let (summary, annotations) = lines.split_last().expect("output");
    assert!(
        summary.starts_with("session-doctor check: "),
        "summary line: {summary}"
    );
    for l in annotations {
        assert!(is_workflow_command(l), "not a workflow command: {l}");
    }
    let f: Vec<(String, Value)> = check_json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            let id = s["id"].as_str().unwrap().to_string();
            s["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |f| (id.clone(), f.clone()))
        })
        .collect();
    assert_eq!(annotations.len(), f.len());
    for (l, (session, f)) in annotations.iter().zip(&f) {
        let level = match f["severity"].as_str().unwrap() {
            "error" => "::error ",
            "warning" => "::warning ",
            _ => "::notice ",
        };
        assert!(l.starts_with(level), "{l}");
        let props = properties(l);
        let get = |k: &str| props.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
        assert_eq!(get("file"), f["location"]["file"].as_str());
        assert_eq!(
            get("line").map(|l| l.parse::<u64>().unwrap()),
            f["location"]["line"].as_u64()
        );
        let title = get("title").unwrap();
        assert!(title.starts_with(f["code"].as_str().unwrap()), "{title}");
        if f["location"]["line"].is_null() {
            // SQLite: the row or message id is in the title and the message.
            let row = f["location"]["row"]
                .as_str()
                .map(str::to_string)
                .or_else(|| {
                    f["location"]["message_id"]
                        .as_str()
                        .map(|m| format!("message {m}"))
                })
                .unwrap_or_else(|| format!("session {session}"));
            assert!(title.contains(&row), "{title} names {row}");
            let message = l
                .split_once(&format!("title={}::", escape(title)))
                .unwrap()
                .1;
            assert!(message.contains(&row), "{message} names {row}");
        }
    }

    // Paths that need escaping: every property value escaped.
    let (_t, root) = awkward_fixtures();
    let root_s = root.display().to_string();
    let (code, out, err) = run(&["check", "--format", "github", &root_s]);
    assert_eq!(code, 1, "{err}");
    let doc = parse(
        &run(&["check", "--format", "json", &root_s]).1,
        "check --format json",
    );
    let f = findings(&doc);
    assert!(!f.is_empty());
    let lines: Vec<&str> = out.lines().collect();
    let (_, annotations) = lines.split_last().unwrap();
    assert_eq!(annotations.len(), f.len());
    for (l, f) in annotations.iter().zip(&f) {
        assert!(is_workflow_command(l), "not a workflow command: {l}");
        assert!(
            l.contains("file=") && l.contains("%2C") && l.contains("%3A") && l.contains("%252C"),
            "{l}"
        );
        let props = properties(l);
        assert_eq!(
            props
                .iter()
                .find(|(k, _)| k == "file")
                .map(|(_, v)| v.as_str()),
            f["location"]["file"].as_str()
        );
    }
}

/// The cells of a GitHub Markdown table row: split at `|` not escaped by a
/// backslash (GitHub's rule, code spans included).
fn cells(row: &str) -> Vec<String> {
    let inner = row
        .trim()
        .strip_prefix('|')
        .and_then(|r| r.strip_suffix('|'))
        .unwrap_or_else(|| panic!("not a table row: {row}"));
    let mut out = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let last = out.last_mut().unwrap();
                last.push(c);
                if let Some(n) = chars.next() {
                    last.push(n);
                }
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The rows of the findings table of a `check --format markdown` summary.
fn finding_rows(md: &str) -> Vec<Vec<String>> {
    let header = "| severity | code | session | where | detail | remedy |";
    let mut lines = md.lines().skip_while(|l| *l != header);
    assert_eq!(lines.next(), Some(header), "a findings table: {md}");
    let sep = lines.next().unwrap();
    assert_eq!(cells(sep).len(), 6);
    assert!(cells(sep).iter().all(|c| c == "---"));
    lines
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let c = cells(l);
            assert_eq!(c.len(), 6, "six cells: {l}");
            c
        })
        .collect()
}

#[test]
fn markdown_summary_has_a_row_per_finding_with_pipes_escaped() {
    let (code, md, err) = run(&["check", "--format", "markdown", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    assert!(md.starts_with("## session-doctor check\n"));
    let t = &check_json()["totals"]["findings"];
    assert!(
        md.contains(&format!("**{} errors**", t["error"])),
        "summary line with counts per severity"
    );
    let rows = finding_rows(&md);
    let f = findings(check_json());
    assert_eq!(rows.len(), f.len());
    for (r, f) in rows.iter().zip(&f) {
        assert_eq!(r[1], format!("`{}`", f["code"].as_str().unwrap()));
        // The remedy, then (when one fixes it) the command in backticks.
        match f["remedy_command"].as_str() {
            Some(cmd) => assert!(r[5].ends_with(&format!("<br>`{cmd}`")), "{}", r[5]),
            None => assert!(!r[5].contains("<br>`"), "{}", r[5]),
        }
    }

    // A folder with `|` in its name: escaped, the table keeps six cells.
    let (_t, root) = awkward_fixtures();
    let root_s = root.display().to_string();
    let (code, md, err) = run(&["check", "--format", "markdown", &root_s]);
    assert_eq!(code, 1, "{err}");
    let doc = parse(
        &run(&["check", "--format", "json", &root_s]).1,
        "check --format json",
    );
    let rows = finding_rows(&md);
    assert_eq!(rows.len(), findings(&doc).len());
    assert!(rows.iter().all(|r| r[3].contains("ci\\|runs")), "{rows:#?}");
}

/// The table of `check` gives every finding's remedy (what is wrong, what to
/// do) and, under it, the command that does it when there is one: the
/// command alone hid the remedy text a person needs (JSON has both).
#[test]
fn check_table_shows_the_remedy_and_the_command_of_each_finding() {
    let (code, table, err) = run(&["check", "--format", "table", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    let f = findings(check_json());
    let helps: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("   = help: "))
        .collect();
    let fixes: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("   = fix: "))
        .collect();
    assert_eq!(helps.len(), f.len(), "one help line per finding:\n{table}");
    let with_cmd: Vec<&Value> = f
        .iter()
        .filter(|f| f["remedy_command"].is_string())
        .collect();
    assert!(!with_cmd.is_empty());
    assert_eq!(fixes.len(), with_cmd.len(), "{table}");
    // Each command comes right after its finding's remedy.
    for f in with_cmd {
        let block = format!(
            "   = help: {}\n   = fix: {}\n",
            f["remedy"].as_str().unwrap(),
            f["remedy_command"].as_str().unwrap()
        );
        assert!(table.contains(&block), "{block}not in\n{table}");
    }
}

#[test]
fn exit_codes_are_the_same_in_every_format() {
    for format in FORMATS {
        let (healthy, _, err) = run(&["check", "--format", format, "fixtures/opencode/plain"]);
        assert_eq!(healthy, 0, "{format}: {err}");
        let (faulty, _, err) = run(&[
            "check",
            "--format",
            format,
            "fixtures/opencode/stale-parent",
        ]);
        assert_eq!(faulty, 1, "{format}: {err}");
        let (never, _, err) = run(&[
            "check",
            "--format",
            format,
            "--fail-on",
            "never",
            "fixtures/opencode/stale-parent",
        ]);
        assert_eq!(never, 0, "{format}: {err}");
        let (usage, _, _) = run(&["check", "--format", format, "--fail-on", "sometimes"]);
        assert_eq!(usage, 2, "{format}: a usage error");
    }
}

#[test]
fn an_unreadable_input_exits_2_and_is_reported_in_every_format() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("no-such-store.db");
    let m = missing.display().to_string();
    for command in ["check", "list"] {
        for format in FORMATS {
            let (code, out, err) = run(&[
                command,
                "--format",
                format,
                &m,
                "fixtures/opencode/stale-parent",
            ]);
            assert_eq!(code, 2, "{command} --format {format}: {err}");
            match *format {
                "table" => assert!(err.contains(&m), "table: the error goes to stderr: {err}"),
                "json" => {
                    let doc = parse(&out, "json");
                    assert_eq!(doc["errors"][0]["path"], m.as_str());
                    assert!(doc["errors"][0]["reason"]
                        .as_str()
                        .unwrap()
                        .contains("no such file"));
                    assert_valid(command, &doc);
                    assert!(
                        !doc["sessions"].as_array().unwrap().is_empty(),
                        "the other input is read"
                    );
                }
                "sarif" => {
                    let log = parse(&out, "sarif");
                    let inv = &log["runs"][0]["invocations"][0];
                    assert_eq!(inv["executionSuccessful"], false);
                    let n = &inv["toolExecutionNotifications"][0];
                    assert_eq!(n["level"], "error");
                    assert!(n["message"]["text"].as_str().unwrap().contains(&m));
                    assert!(
                        n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                            .as_str()
                            .unwrap()
                            .ends_with("/no-such-store.db")
                    );
                }
                "github" => {
                    let line = out
                        .lines()
                        .find(|l| l.starts_with("::error file="))
                        .unwrap_or_else(|| panic!("an ::error line: {out}"));
                    assert!(is_workflow_command(line));
                    let props = properties(line);
                    assert_eq!(props[0], ("file".to_string(), m.clone()));
                    assert!(out
                        .lines()
                        .last()
                        .unwrap()
                        .ends_with("1 unreadable input(s)"));
                }
                "markdown" => {
                    assert!(out.contains("### Inputs that could not be read"), "{out}");
                    assert!(out.contains(&format!("`{m}`")), "{out}");
                }
                _ => unreachable!(),
            }
        }
    }
}

/// A run that stops on an error after its arguments were parsed (an
/// unknown `--session`, `inspect` of several sessions, a refused `--out`, a
/// bad config file, no input at all) printed nothing on stdout, while the
/// README promises one JSON document with an `"errors"` array. Now every
/// machine format prints its whole document, the command's own with
/// nothing in it and the error in it (JSON: last entry of `errors`, `path`
/// the file it is about or ""); the table prints nothing on stdout; the
/// message is on stderr once in every format, the exit code 2, and the
/// inputs and the output folder are untouched.
#[test]
fn a_run_that_stops_on_an_error_prints_one_whole_document() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("in");
    copy_dir(&fixtures().join("opencode"), &root);
    // A store that cannot be read, given beside the readable ones.
    let bad = t.path().join("broken.db");
    std::fs::write(&bad, b"not a database").unwrap();
    let cfg = t.path().join("bad.toml");
    std::fs::write(&cfg, "max-request-bytes = 3\n").unwrap();
    let r = root.display().to_string();
    let inside = root.join("out").display().to_string();
    let (b, c) = (bad.display().to_string(), cfg.display().to_string());
    let before = snapshot(t.path());
    let listing = |p: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let listed = listing(&root);
    // (document kind, args, what the reason says, the path of the entry,
    // how many earlier errors come before it)
    let cases: Vec<(&str, Vec<&str>, &str, &str, usize)> = vec![
        (
            "check",
            vec!["check", "--session", "ses_nope", &r, &b],
            "session ses_nope not found",
            "",
            1,
        ),
        (
            "inspect",
            vec!["inspect", &r, &b],
            "sessions found; pass --session",
            "",
            1,
        ),
        (
            "repair",
            vec!["repair", "--dry-run", &r, &b, "--out", &inside],
            "refusing --out",
            &inside,
            1,
        ),
        (
            "compact_batch",
            vec![
                "compact",
                "--session",
                COMPACT_ID,
                "--dry-run",
                &r,
                &b,
                "--out",
                &inside,
            ],
            "refusing --out",
            &inside,
            1,
        ),
        (
            "list",
            vec!["list", "--config", &c, &r],
            "unknown field `max-request-bytes`",
            &c,
            0,
        ),
        (
            "list",
            vec!["list"],
            "no PATH given and no data dir found",
            "",
            0,
        ),
        (
            "check",
            vec!["check", "--session", "ses_nope", &b],
            "session ses_nope not found",
            "",
            1,
        ),
    ];
    for (kind, args, says, path, earlier) in cases {
        for format in FORMATS {
            let all = [args.as_slice(), &["--format", format]].concat();
            let (code, out, err) = run(&all);
            assert_eq!(code, 2, "{all:?}: {err}");
            assert_eq!(
                err.matches("session-doctor: error: ").count(),
                1,
                "{all:?}: the message once on stderr: {err}"
            );
            assert!(err.contains(says), "{all:?}: {err}");
            match *format {
                "table" => assert_eq!(out, "", "{all:?}: the table prints nothing"),
                "json" => {
                    let doc = parse(&out, &format!("{all:?}"));
                    assert_valid(kind, &doc);
                    assert_eq!(doc["schema_version"], 1);
                    let errors = doc["errors"].as_array().unwrap();
                    assert_eq!(errors.len(), earlier + 1, "{all:?}: {errors:#?}");
                    let last = &errors[earlier];
                    assert_eq!(last["path"], path, "{all:?}");
                    let reason = last["reason"].as_str().unwrap();
                    assert!(reason.contains(says), "{all:?}: {reason}");
                    assert!(
                        err.contains(reason),
                        "{all:?}: the reason is the stderr message: {err}"
                    );
                    if earlier == 1 {
                        assert_eq!(errors[0]["path"], b.as_str(), "{all:?}");
                    }
                    if kind == "repair" || kind == "compact_batch" {
                        assert_eq!(doc["dry_run"], true, "{all:?}");
                    }
                }
                "sarif" => {
                    let log = parse(&out, &format!("{all:?}"));
                    let errs = sarif_errors(&sarif_validator(), &log);
                    assert!(errs.is_empty(), "{all:?}: invalid SARIF: {errs:#?}");
                    let inv = &log["runs"][0]["invocations"][0];
                    assert_eq!(inv["executionSuccessful"], false);
                    let notes = inv["toolExecutionNotifications"].as_array().unwrap();
                    let last = notes.last().unwrap();
                    assert_eq!(last["level"], "error");
                    assert!(
                        last["message"]["text"].as_str().unwrap().contains(says),
                        "{all:?}: {last}"
                    );
                }
                "github" => {
                    let lines: Vec<&str> = out.lines().collect();
                    let (summary, commands) = lines.split_last().expect("lines");
                    assert!(summary.starts_with(&format!("session-doctor {}:", args[0])));
                    assert!(commands.iter().all(|l| is_workflow_command(l)), "{out}");
                    assert!(
                        commands
                            .iter()
                            .any(|l| l.starts_with("::error") && l.contains(says)),
                        "{all:?}: {out}"
                    );
                }
                "markdown" => {
                    assert!(
                        out.starts_with(&format!("## session-doctor {}\n", args[0])),
                        "{out}"
                    );
                    assert!(out.contains(says), "{all:?}: {out}");
                }
                _ => unreachable!(),
            }
        }
    }
    // `dry_run` is the flag's, also when no session is listed (it was
    // taken from the first session's report, so false then).
    let plain = root.join("plain").display().to_string();
    let o = t.path().join("o").display().to_string();
    let (code, out, err) = run(&[
        "compact",
        "--dry-run",
        &plain,
        "--out",
        &o,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc = parse(&out, "compact --dry-run");
    assert_valid("compact_batch", &doc);
    assert_eq!(doc["sessions"], json!([]));
    assert_eq!(doc["dry_run"], true);
    assert_eq!(snapshot(t.path()), before, "an input was touched");
    assert_eq!(listing(&root), listed, "no output folder was made");
}

/// GitHub annotations, SARIF messages and Markdown rows gave only the
/// command when a finding had one, dropping its remedy (what is wrong, what
/// to do, what the command leaves to a person), as the table did before
/// cd7022c. Each now gives the remedy, then the command.
#[test]
fn machine_formats_give_the_remedy_beside_the_command() {
    let f = findings(check_json());
    let with_cmd: Vec<&Value> = f
        .iter()
        .filter(|f| f["remedy_command"].is_string())
        .collect();
    assert!(!with_cmd.is_empty());

    let (code, sarif, err) = run(&["check", "--format", "sarif", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    let sarif = parse(&sarif, "check --format sarif");
    let texts: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), f.len());
    for f in &with_cmd {
        let remedy = format!("Remedy: {}", f["remedy"].as_str().unwrap());
        let fix = format!("Fix: {}", f["remedy_command"].as_str().unwrap());
        assert!(
            texts
                .iter()
                .any(|t| t.contains(&remedy) && t.contains(&fix)),
            "SARIF: no message with\n{remedy}\n{fix}"
        );
    }

    let (code, github, err) = run(&["check", "--format", "github", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    let annotations: Vec<&str> = github
        .lines()
        .filter(|l| {
            l.starts_with("::error ") || l.starts_with("::warning ") || l.starts_with("::notice ")
        })
        .filter(|l| !l.contains("title=cannot read input") && !l.contains("title=input skipped"))
        .collect();
    assert_eq!(annotations.len(), f.len(), "{github}");
    assert!(
        annotations.iter().all(|l| l.contains(" Remedy: ")),
        "{github}"
    );
    assert_eq!(
        annotations.iter().filter(|l| l.contains(" Fix: ")).count(),
        with_cmd.len(),
        "{github}"
    );

    let (code, md, err) = run(&["check", "--format", "markdown", "fixtures/"]);
    assert_eq!(code, 1, "{err}");
    for f in &with_cmd {
        let cmd = f["remedy_command"].as_str().unwrap();
        let row = md
            .lines()
            .find(|l| l.contains(&format!("`{cmd}`")))
            .unwrap_or_else(|| panic!("Markdown: no row with `{cmd}`\n{md}"));
        assert!(
            row.contains("<br>`"),
            "Markdown: the remedy is missing before the command: {row}"
        );
    }
}

/// A copy refused (it exists, no `--force`) was listed by the GitHub
/// format as `cannot read input` (beside its own `copy not written` line,
/// so twice), by SARIF as `unreadable-input` and by Markdown under "Inputs
/// that could not be read", with the summary counting it as an unreadable
/// input. It is now a copy not written in each, once in GitHub; the input,
/// which was read, is not counted as unreadable.
#[test]
fn a_copy_not_written_is_not_called_an_unreadable_input() {
    let t = tempfile::tempdir().unwrap();
    let out_dir = t.path().join("out");
    let o = out_dir.to_str().unwrap();
    let store = "fixtures/opencode/stale-parent";
    let before = snapshot(std::path::Path::new(store));
    let (code, _, err) = run(&["repair", store, "--out", o]);
    assert_eq!(code, 0, "{err}");
    let dest = out_dir.join("opencode.db").display().to_string();

    let (code, out, _) = run(&["repair", store, "--out", o, "--format", "github"]);
    assert_eq!(code, 2, "{out}");
    assert!(!out.contains("cannot read input"), "{out}");
    let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("::error")).collect();
    assert_eq!(errors.len(), 1, "one annotation for the copy: {out}");
    assert!(errors[0].contains("title=copy not written"), "{out}");
    assert_eq!(properties(errors[0])[0], ("file".to_string(), dest.clone()));
    assert!(
        out.lines()
            .last()
            .unwrap()
            .ends_with("; 0 unreadable input(s); 1 output error(s)"),
        "{out}"
    );

    let (code, out, _) = run(&["repair", store, "--out", o, "--format", "sarif"]);
    assert_eq!(code, 2);
    let log = parse(&out, "sarif");
    let inv = &log["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    let notes = inv["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{inv}");
    assert_eq!(notes[0]["descriptor"]["id"], "unwritable-output");

    let (code, out, _) = run(&["repair", store, "--out", o, "--format", "markdown"]);
    assert_eq!(code, 2);
    assert!(!out.contains("Inputs that could not be read"), "{out}");
    assert!(!out.contains("input could not be read"), "{out}");
    assert!(out.contains("**1 copy not written**"), "{out}");
    assert!(out.contains("### Copies not written"), "{out}");
    assert!(out.contains(&format!("`{dest}`")), "{out}");
    assert_eq!(
        snapshot(std::path::Path::new(store)),
        before,
        "an input was touched"
    );
}
