//! JSON exporter: one document per run with `"schema_version": 1`.

use super::*;
use serde_json::json;

pub struct JsonExporter;

fn doc(key: &str, value: impl Serialize, problems: &Problems) -> String {
    let mut v = json!({ "schema_version": SCHEMA_VERSION });
    v[key] = serde_json::to_value(value).expect("report structs serialize");
    v["errors"] = json!(problems.errors);
    v["warnings"] = json!(problems.warnings);
    let mut s = serde_json::to_string_pretty(&v).expect("report structs serialize");
    s.push('\n');
    s
}

impl Exporter for JsonExporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        doc("sessions", rows, problems)
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        doc("sessions", sessions, problems)
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        doc("sessions", sessions, problems)
    }

    fn compact(&self, report: &CompactReport, problems: &Problems) -> String {
        let mut v = serde_json::to_value(report).expect("serializes");
        v["schema_version"] = json!(SCHEMA_VERSION);
        v["errors"] = json!(problems.errors);
        v["warnings"] = json!(problems.warnings);
        let mut s = serde_json::to_string_pretty(&v).expect("serializes");
        s.push('\n');
        s
    }

    fn compact_batch(
        &self,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let mut v = json!({
            "schema_version": SCHEMA_VERSION,
            "dry_run": sessions.first().is_some_and(|s| s.dry_run),
        });
        v["sessions"] = serde_json::to_value(sessions).expect("serializes");
        v["copies"] = serde_json::to_value(copies).expect("serializes");
        v["errors"] = json!(problems.errors);
        v["warnings"] = json!(problems.warnings);
        let mut s = serde_json::to_string_pretty(&v).expect("serializes");
        s.push('\n');
        s
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        let mut v = json!({ "schema_version": SCHEMA_VERSION, "dry_run": report.dry_run });
        v["changes"] = serde_json::to_value(&report.changes).expect("serializes");
        v["copies"] = serde_json::to_value(&report.copies).expect("serializes");
        v["errors"] = json!(problems.errors);
        v["warnings"] = json!(problems.warnings);
        let mut s = serde_json::to_string_pretty(&v).expect("serializes");
        s.push('\n');
        s
    }
}
