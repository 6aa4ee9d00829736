//! JSON exporter: one document per run with `"schema_version": 1`.

use super::*;
use serde_json::json;

pub struct JsonExporter;

fn doc(key: &str, value: impl Serialize, errors: &[String]) -> String {
    let mut v = json!({ "schema_version": SCHEMA_VERSION });
    v[key] = serde_json::to_value(value).expect("report structs serialize");
    v["errors"] = json!(errors);
    let mut s = serde_json::to_string_pretty(&v).expect("report structs serialize");
    s.push('\n');
    s
}

impl Exporter for JsonExporter {
    fn list(&self, rows: &[ListRow], errors: &[String]) -> String {
        doc("sessions", rows, errors)
    }

    fn inspect(&self, sessions: &[InspectSession], errors: &[String]) -> String {
        doc("sessions", sessions, errors)
    }

    fn check(&self, sessions: &[CheckSession], errors: &[String]) -> String {
        doc("sessions", sessions, errors)
    }

    fn compact(&self, report: &CompactReport, errors: &[String]) -> String {
        let mut v = serde_json::to_value(report).expect("serializes");
        v["schema_version"] = json!(SCHEMA_VERSION);
        v["errors"] = json!(errors);
        let mut s = serde_json::to_string_pretty(&v).expect("serializes");
        s.push('\n');
        s
    }

    fn repair(&self, report: &RepairReport, errors: &[String]) -> String {
        let mut v = json!({ "schema_version": SCHEMA_VERSION, "dry_run": report.dry_run });
        v["changes"] = serde_json::to_value(&report.changes).expect("serializes");
        v["copies"] = serde_json::to_value(&report.copies).expect("serializes");
        v["errors"] = json!(errors);
        let mut s = serde_json::to_string_pretty(&v).expect("serializes");
        s.push('\n');
        s
    }
}
