//! SARIF exporter: one SARIF 2.1.0 log with one run, for code scanning.
//!
//! - `tool.driver`: name, version, and one rule per finding code of
//!   [`crate::diagnose::RULES`] (id, short description, help naming the
//!   command that fixes it, default level).
//! - `results` (`check` only): one per finding, with `ruleId`/`ruleIndex`,
//!   `level` (`error`, `warning`, `note` for info), the detail as message, a
//!   location whose `artifactLocation.uri` is the source file as given
//!   (relative paths stay relative; absolute ones become `file://` URIs) and
//!   `region.startLine` when the finding has a line, logical locations for
//!   the session and the message, and a property bag with the finding's
//!   figures, remedy and remedy command.
//! - `invocations[0]`: `executionSuccessful` is false when an input could
//!   not be read or the run stopped on an error; each such input is a
//!   `toolExecutionNotifications` entry (level `error`, `unreadable-input`;
//!   a copy refused or not written `unwritable-output`; skipped inputs
//!   `warning`), and so is the error that stopped the run (`run-stopped`,
//!   with no location when it is about no one path; the log is then the
//!   command's with no results and zero totals).
//! - `properties.totals`: the same totals as the JSON document; `repair` and
//!   `compact` also carry their copies there. Their findings are those of
//!   `check`, so they report no results.

use super::*;
use crate::diagnose::{Fix, Severity, RULES};
use serde_json::{json, Map, Value};

/// The SARIF exporter.
pub struct SarifExporter;

/// `$schema` of the log: the OASIS SARIF 2.1.0 schema (errata 01).
pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn value(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A path as a URI reference: relative paths stay relative, absolute ones
/// become `file://` URIs; every byte outside the unreserved set and `/` is
/// percent-encoded.
pub(crate) fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 8);
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// What fixes a finding, in a sentence.
fn fix_text(f: Fix) -> &'static str {
    match f {
        Fix::Repair => "Fixed by `session-doctor repair`, which writes a repaired copy of the store (the original is never modified).",
        Fix::Compact => "Fixed by `session-doctor compact`, which writes a copy in which the session fits its budget (the original is never modified).",
        Fix::None => "No command fixes it automatically; the finding's remedy says what to do.",
    }
}

/// `tool.driver.rules`: one per finding code, in registry order.
fn rules() -> Vec<Value> {
    RULES
        .iter()
        .map(|r| {
            let fix = r.code.fix();
            let help = format!("{}. {}", capitalise(r.summary), fix_text(fix));
            json!({
                "id": r.code.as_str(),
                "name": pascal(r.code.as_str()),
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": help},
                "help": {"text": help, "markdown": help},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {
                    "fix": fix,
                    "tags": ["session-doctor", format!("fix-{}", value(fix).as_str().unwrap_or("none"))],
                },
            })
        })
        .collect()
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `stale-parent` -> `StaleParent`.
fn pascal(s: &str) -> String {
    s.split('-').map(capitalise).collect()
}

/// The driver's `informationUri`: the crate's repository or homepage, when
/// Cargo.toml names one.
fn information_uri() -> Option<&'static str> {
    [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
        .into_iter()
        .find(|u| !u.is_empty())
}

/// One result per finding.
fn results(sessions: &[CheckSession]) -> Vec<Value> {
    let mut out = Vec::new();
    for s in sessions {
        for f in &s.findings {
            let loc = &f.location;
            let rule_index = RULES.iter().position(|r| r.code == f.code);
            let mut location = Map::new();
            if let Some(file) = &loc.file {
                let mut physical = json!({"artifactLocation": {"uri": uri(file)}});
                if let Some(line) = loc.line.filter(|&l| l >= 1) {
                    physical["region"] = json!({"startLine": line});
                }
                location.insert("physicalLocation".into(), physical);
            }
            let mut logical = vec![json!({
                "name": s.id,
                "fullyQualifiedName": s.id,
                "kind": "session",
            })];
            if let Some(m) = &loc.message_id {
                logical.push(json!({
                    "name": m,
                    "fullyQualifiedName": format!("{}/{m}", s.id),
                    "kind": "message",
                }));
            }
            if let Some(row) = &loc.row {
                logical.push(json!({
                    "name": row,
                    "fullyQualifiedName": format!("{}/{row}", s.id),
                    "kind": "row",
                }));
            }
            location.insert("logicalLocations".into(), Value::Array(logical));
            let mut props = f.figures.clone();
            props.remove("tags");
            for (k, v) in [
                ("agent", json!(s.agent)),
                ("session_id", json!(s.id)),
                ("source", json!(s.source)),
                ("message_id", json!(f.message_id)),
                ("row", json!(loc.row)),
                ("remedy", json!(f.remedy)),
                ("remedy_command", json!(f.remedy_command)),
                ("fix", value(f.fix)),
            ] {
                props.insert(k.into(), v);
            }
            let at = loc
                .message_id
                .clone()
                .or_else(|| loc.row.clone())
                .or_else(|| loc.line.map(|l| format!("line {l}")))
                .unwrap_or_default();
            let text = finding_text(f);
            let mut r = json!({
                "ruleId": f.code.as_str(),
                "level": level(f.severity),
                "message": {"text": text},
                "locations": [Value::Object(location)],
                "partialFingerprints": {
                    "sessionDoctorFinding/v1": format!("{}:{}:{}", f.code, s.id, at),
                },
                "properties": Value::Object(props),
            });
            if let Some(i) = rule_index {
                r["ruleIndex"] = json!(i);
            }
            out.push(r);
        }
    }
    out
}

/// `invocations`: whether every input was read, and a notification per
/// input that was not (or was skipped), then one for the error that stopped
/// the run (`run-stopped`; no location when it is about no one path).
fn invocations(p: &Problems) -> Value {
    let mut notes = Vec::new();
    use crate::error::EntryKind::*;
    for (kind, e, text) in p.each() {
        let (lvl, id) = match kind {
            Unreadable => ("error", "unreadable-input"),
            Unwritable => ("error", "unwritable-output"),
            Skipped => ("warning", "skipped-input"),
            Stopped => ("error", "run-stopped"),
        };
        let mut note = json!({
            "level": lvl,
            "descriptor": {"id": id},
            "message": {"text": text},
        });
        if !e.path.as_os_str().is_empty() {
            note["locations"] = json!([{
                "physicalLocation": {
                    "artifactLocation": {"uri": uri(&e.path.display().to_string())}
                }
            }]);
        }
        notes.push(note);
    }
    json!([{
        "executionSuccessful": p.errors.is_empty() && p.stopped.is_none(),
        "toolExecutionNotifications": notes,
    }])
}

/// The whole log: one run with `results` and run `properties`.
fn log(command: &str, results: Vec<Value>, properties: Value, p: &Problems) -> String {
    let mut driver = json!({
        "name": TOOL.name,
        "version": TOOL.version,
        "semanticVersion": TOOL.version,
        "rules": rules(),
    });
    if let Some(u) = information_uri() {
        driver["informationUri"] = json!(u);
    }
    let mut props = json!({"command": command});
    if let (Value::Object(dst), Value::Object(src)) = (&mut props, properties) {
        dst.extend(src);
    }
    let doc = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "invocations": invocations(p),
            "results": results,
            "properties": props,
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

impl Exporter for SarifExporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        log(
            "list",
            Vec::new(),
            json!({"totals": ListTotals::of(rows)}),
            problems,
        )
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        log(
            "inspect",
            Vec::new(),
            json!({"totals": InspectTotals::of(sessions)}),
            problems,
        )
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        log(
            "check",
            results(sessions),
            json!({"totals": CheckTotals::of(sessions)}),
            problems,
        )
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        log(
            "repair",
            Vec::new(),
            json!({
                "totals": CopyTotals::repair(report),
                "dry_run": report.dry_run,
                "copies": value(&report.copies),
            }),
            problems,
        )
    }

    fn compact(&self, report: &CompactReport, problems: &Problems) -> String {
        log(
            "compact",
            Vec::new(),
            json!({
                "totals": CopyTotals::compact(std::slice::from_ref(report), &[], true),
                "dry_run": report.dry_run,
                "session_id": report.session_id,
                "dest": report.dest,
                "written": report.written,
                "fits": report.fits,
                "unreachable": report.unreachable,
            }),
            problems,
        )
    }

    fn compact_batch(
        &self,
        dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        log(
            "compact",
            Vec::new(),
            json!({
                "totals": CopyTotals::compact(sessions, copies, false),
                "dry_run": dry_run,
                "copies": value(copies),
            }),
            problems,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_encoded() {
        assert_eq!(uri("fixtures/a b/x.db"), "fixtures/a%20b/x.db");
        assert_eq!(uri("/tmp/x:y.jsonl"), "file:///tmp/x%3Ay.jsonl");
        assert_eq!(uri("é"), "%C3%A9");
    }

    #[test]
    fn every_code_is_a_rule() {
        let r = rules();
        assert_eq!(r.len(), RULES.len());
        assert_eq!(r[0]["id"], "unreadable");
        assert_eq!(pascal("stale-first-kept"), "StaleFirstKept");
    }
}
