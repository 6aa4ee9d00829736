//! JSON exporter: one document per run. Every document starts with
//! `"schema_version": 1` and `"tool": {"name", "version"}`, and ends with
//! `"totals"` (sums over the document, see [`ListTotals`], [`InspectTotals`],
//! [`CheckTotals`], [`CopyTotals`]), `"errors"` and `"warnings"` (arrays of
//! `{"path", "reason"}`). The shape of each document kind is
//! `schema/session-doctor.schema.json`.

use super::*;
use serde_json::{json, Map, Value};

/// The JSON exporter.
pub struct JsonExporter;

/// A value as JSON; the report structs are plain data (strings, numbers,
/// maps with string keys), so this cannot fail on them, and a failure would
/// print `null` rather than stop the run.
fn value(v: impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The document head: `schema_version` and `tool`.
fn head() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("schema_version".into(), json!(SCHEMA_VERSION));
    m.insert("tool".into(), value(TOOL));
    m
}

/// Appends `totals`, `errors` and `warnings` and prints the document.
fn finish(mut m: Map<String, Value>, totals: impl Serialize, problems: &Problems) -> String {
    m.insert("totals".into(), value(totals));
    m.insert("errors".into(), value(&problems.errors));
    m.insert("warnings".into(), value(&problems.warnings));
    let mut s = serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// A document whose payload is one array under `key`, written straight
/// from the rows: no tree of the whole document is built (a huge session's
/// `inspect` has hundreds of thousands of rows). The same text as a tree
/// printed by [`finish`] (keys in this order).
struct Doc<'a, V, T> {
    key: &'a str,
    v: V,
    totals: T,
    problems: &'a Problems,
}

impl<V: Serialize, T: Serialize> Serialize for Doc<'_, V, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (k, v) in head() {
            m.serialize_entry(&k, &v)?;
        }
        m.serialize_entry(self.key, &self.v)?;
        m.serialize_entry("totals", &self.totals)?;
        m.serialize_entry("errors", &self.problems.errors)?;
        m.serialize_entry("warnings", &self.problems.warnings)?;
        m.end()
    }
}

fn doc(key: &str, v: impl Serialize, totals: impl Serialize, problems: &Problems) -> String {
    let mut out = Vec::new();
    match write_doc(key, v, totals, problems, &mut out) {
        // serde_json writes UTF-8.
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| "{}\n".into()),
        Err(_) => "{}\n".into(),
    }
}

/// [`doc`] written to `out` as it is serialized.
fn write_doc(
    key: &str,
    v: impl Serialize,
    totals: impl Serialize,
    problems: &Problems,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::io::Write;
    let d = Doc {
        key,
        v,
        totals,
        problems,
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    serde_json::to_writer_pretty(&mut w, &d)?;
    w.write_all(b"\n")?;
    w.flush()
}

impl Exporter for JsonExporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        doc("sessions", rows, ListTotals::of(rows), problems)
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        doc("sessions", sessions, InspectTotals::of(sessions), problems)
    }

    fn write_inspect(
        &self,
        sessions: &[InspectSession],
        problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        write_doc(
            "sessions",
            sessions,
            InspectTotals::of(sessions),
            problems,
            out,
        )
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        doc("sessions", sessions, CheckTotals::of(sessions), problems)
    }

    fn compact(&self, report: &CompactReport, problems: &Problems) -> String {
        let mut m = head();
        if let Value::Object(fields) = value(report) {
            m.extend(fields);
        }
        let totals = CopyTotals::compact(std::slice::from_ref(report), &[], true);
        finish(m, totals, problems)
    }

    fn compact_batch(
        &self,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let mut m = head();
        m.insert(
            "dry_run".into(),
            json!(sessions.first().is_some_and(|s| s.dry_run)),
        );
        m.insert("sessions".into(), value(sessions));
        m.insert("copies".into(), value(copies));
        finish(m, CopyTotals::compact(sessions, copies, false), problems)
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        let mut m = head();
        m.insert("dry_run".into(), json!(report.dry_run));
        m.insert("changes".into(), value(&report.changes));
        m.insert("copies".into(), value(&report.copies));
        finish(m, CopyTotals::repair(report), problems)
    }
}
