//! JSON exporter: one document per run. Every document starts with
//! `"schema_version": 1` and `"tool": {"name", "version"}`, and ends with
//! `"totals"` (sums over the document, see [`ListTotals`], [`InspectTotals`],
//! [`CheckTotals`], [`CopyTotals`]), `"errors"` and `"warnings"` (arrays of
//! `{"path", "reason"}`; a run stopped by an error has it last in `"errors"`,
//! in the command's document with nothing else in it). The shape of each document kind is
//! `schema/session-doctor.schema.json`.

use super::*;
use crate::error::InputError;

/// The JSON exporter.
pub struct JsonExporter;

/// One document, written straight from the report structs: no tree of the
/// whole document is built (a huge session's `inspect` has hundreds of
/// thousands of rows, its `compact` as many changes). Keys in this order:
/// the head (`schema_version`, `tool`), the body's own fields, then
/// `totals`, `errors` and `warnings`.
#[derive(Serialize)]
struct Doc<'a, B, T> {
    schema_version: u32,
    tool: Tool,
    #[serde(flatten)]
    body: B,
    totals: T,
    errors: Errors<'a>,
    warnings: &'a [InputError],
}

/// `"errors"`: the paths that could not be read or written, then the error
/// that stopped the run, if one did ([`Problems::stopped`]).
struct Errors<'a>(&'a Problems);

impl Serialize for Errors<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.errors.iter().chain(&self.0.stopped))
    }
}

/// The body of the documents whose payload is one array of sessions.
#[derive(Serialize)]
struct Sessions<V> {
    sessions: V,
}

/// The body of `compact` without `--session`.
#[derive(Serialize)]
struct CompactBatch<'a> {
    dry_run: bool,
    sessions: &'a [CompactReport],
    copies: &'a [CopyRow],
}

/// [`write_doc`] into a string. The report structs are plain data (strings,
/// numbers, maps with string keys), so this cannot fail on them; a failure
/// would print `{}` rather than stop the run.
fn doc(body: impl Serialize, totals: impl Serialize, problems: &Problems) -> String {
    let mut out = Vec::new();
    match write_doc(body, totals, problems, &mut out) {
        // serde_json writes UTF-8.
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| "{}\n".into()),
        Err(_) => "{}\n".into(),
    }
}

/// The document of `body` written (pretty, one trailing newline) to `out`
/// as it is serialized. Errors: `out`'s.
fn write_doc(
    body: impl Serialize,
    totals: impl Serialize,
    problems: &Problems,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::io::Write;
    let d = Doc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        body,
        totals,
        errors: Errors(problems),
        warnings: &problems.warnings,
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    serde_json::to_writer_pretty(&mut w, &d)?;
    w.write_all(b"\n")?;
    w.flush()
}

impl Exporter for JsonExporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        doc(Sessions { sessions: rows }, ListTotals::of(rows), problems)
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        doc(Sessions { sessions }, InspectTotals::of(sessions), problems)
    }

    fn write_inspect(
        &self,
        sessions: &[InspectSession],
        problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        write_doc(
            Sessions { sessions },
            InspectTotals::of(sessions),
            problems,
            out,
        )
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        doc(Sessions { sessions }, CheckTotals::of(sessions), problems)
    }

    fn compact(&self, report: &CompactReport, problems: &Problems) -> String {
        let mut out = Vec::new();
        match self.write_compact(report, problems, &mut out) {
            Ok(()) => String::from_utf8(out).unwrap_or_else(|_| "{}\n".into()),
            Err(_) => "{}\n".into(),
        }
    }

    fn write_compact(
        &self,
        report: &CompactReport,
        problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let totals = CopyTotals::compact(std::slice::from_ref(report), &[], true);
        write_doc(report, totals, problems, out)
    }

    fn compact_batch(
        &self,
        dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let body = CompactBatch {
            dry_run,
            sessions,
            copies,
        };
        doc(body, CopyTotals::compact(sessions, copies, false), problems)
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        doc(report, CopyTotals::repair(report), problems)
    }
}
