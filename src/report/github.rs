//! GitHub Actions exporter: workflow commands that become annotations.
//!
//! `check` prints one line per finding,
//! `::error file=PATH,line=N,title=CODE::message` (`warning`, and `notice`
//! for info findings); `line` only where the finding has one (JSONL stores),
//! while database findings name their row or message id in the title and the
//! message. Every input that could not be read is an `::error file=PATH::`
//! line (title `cannot read input`; a copy refused or not written: `copy not
//! written`), every skipped one a `::warning`, and an error that stopped the run
//! an `::error title=session-doctor stopped::` line (with `file` when it is
//! about one path), the summary then saying `stopped by an error`. The other commands print a
//! `::notice` per session with findings (`list`) or per copy
//! (`repair`, `compact`). The last line is always a plain summary starting
//! with `session-doctor <command>:`.
//!
//! Escaping follows the runner's rules: in the message `%`, `\r` and `\n`
//! become `%25`, `%0D`, `%0A`; in property values `:` and `,` also become
//! `%3A` and `%2C`.

use super::*;
use crate::diagnose::Severity;

/// The GitHub Actions exporter.
pub struct GithubExporter;

/// A workflow command's message, escaped.
pub(crate) fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value, escaped.
pub(crate) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One workflow command line: `::level key=value,...::message`. Properties
/// with an empty value are left out.
fn command(level: &str, props: &[(&str, String)], message: &str) -> String {
    let props: Vec<String> = props
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", escape_property(v)))
        .collect();
    let sep = if props.is_empty() { "" } else { " " };
    format!(
        "::{level}{sep}{}::{}\n",
        props.join(","),
        escape_data(message)
    )
}

/// The annotation level of a severity.
fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Errors and warnings about inputs, one line each, then the error that
/// stopped the run (no `file` when it is about no one path). An output
/// error that a failed row of `copies` already reports (its copy path is
/// the entry's path or named in its reason) is left to that row's line
/// ([`copy_lines`]): one annotation per copy not written.
fn problems_lines(out: &mut String, p: &Problems, copies: &[CopyRow]) {
    use crate::error::EntryKind::*;
    let covered = |e: &crate::error::InputError| {
        copies.iter().any(|c| {
            c.error.is_some()
                && (e.path.display().to_string() == c.dest || e.reason.contains(&c.dest))
        })
    };
    for (kind, e, message) in p.each() {
        if kind == Unwritable && covered(e) {
            continue;
        }
        let (lvl, title) = match kind {
            Unreadable => ("error", "cannot read input"),
            Unwritable => ("error", "copy not written"),
            Skipped => ("warning", "input skipped"),
            Stopped => ("error", "session-doctor stopped"),
        };
        out.push_str(&command(
            lvl,
            &[
                ("file", e.path.display().to_string()),
                ("title", title.to_string()),
            ],
            &message,
        ));
    }
}

/// The closing plain line; for a run stopped by an error, that it stopped.
fn summary(out: &mut String, command: &str, body: String, p: &Problems) {
    let body = if p.stopped.is_some() {
        "stopped by an error".to_string()
    } else {
        body
    };
    let unwritable = match p.unwritable() {
        0 => String::new(),
        n => format!("; {n} output error(s)"),
    };
    out.push_str(&format!(
        "session-doctor {command}: {body}; {} unreadable input(s){unwritable}\n",
        p.unreadable()
    ));
}

impl Exporter for GithubExporter {
    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, &[]);
        for r in rows {
            let f = &r.findings;
            if f.error + f.warning + f.info == 0 {
                continue;
            }
            out.push_str(&command(
                "notice",
                &[
                    ("file", r.source.clone()),
                    ("title", format!("session {}", r.id)),
                ],
                &format!(
                    "{} session {} has {} error(s), {} warning(s), {} info; run session-doctor check",
                    r.agent, r.id, f.error, f.warning, f.info
                ),
            ));
        }
        let t = ListTotals::of(rows);
        summary(
            &mut out,
            "list",
            format!(
                "{} session(s), {} message(s), {} stored bytes, {} error(s), {} warning(s), {} info",
                t.sessions,
                t.messages,
                t.payload_bytes,
                t.findings.error,
                t.findings.warning,
                t.findings.info
            ),
            problems,
        );
        out
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, &[]);
        let t = InspectTotals::of(sessions);
        summary(
            &mut out,
            "inspect",
            format!(
                "{} session(s), {} message(s), {} part(s), {} stored bytes, {} estimated tokens",
                t.sessions, t.messages, t.parts, t.payload_bytes, t.tokens_estimated
            ),
            problems,
        );
        out
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, &[]);
        for s in sessions {
            for f in &s.findings {
                let loc = &f.location;
                // Without a line, the row (or message id, or the session
                // for a finding about a whole session) goes in the title.
                let at = match (&loc.line, &loc.row, &loc.message_id) {
                    (Some(_), _, _) => None,
                    (None, Some(row), _) => Some(row.clone()),
                    (None, None, Some(m)) => Some(format!("message {m}")),
                    (None, None, None) => Some(format!("session {}", s.id)),
                };
                let title = match &at {
                    Some(at) => format!("{} ({at})", f.code),
                    None => f.code.to_string(),
                };
                let mut message = format!("{} session {}", s.agent, s.id);
                if let Some(at) = at.as_ref().filter(|a| !a.starts_with("session ")) {
                    message.push_str(&format!(", {at}"));
                }
                message.push_str(&format!(": {}", finding_text(f)));
                out.push_str(&command(
                    level(f.severity),
                    &[
                        ("file", loc.file.clone().unwrap_or_default()),
                        ("line", loc.line.map(|l| l.to_string()).unwrap_or_default()),
                        ("title", title),
                    ],
                    &message,
                ));
            }
        }
        let t = CheckTotals::of(sessions);
        summary(
            &mut out,
            "check",
            format!(
                "{} session(s), {} with findings; {} error(s), {} warning(s), {} info",
                t.sessions,
                t.sessions_with_findings,
                t.findings.error,
                t.findings.warning,
                t.findings.info
            ),
            problems,
        );
        out
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, &report.copies);
        copy_lines(&mut out, &report.copies, report.dry_run);
        let t = CopyTotals::repair(report);
        summary(
            &mut out,
            "repair",
            format!(
                "{} of {} copies written, {} change(s) in {} session(s){}",
                t.copies_written,
                t.copies,
                t.changes,
                t.sessions,
                if report.dry_run { " (dry run)" } else { "" }
            ),
            problems,
        );
        out
    }

    fn compact(&self, r: &CompactReport, problems: &Problems) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, &[]);
        if let Some(why) = &r.unreachable {
            out.push_str(&command(
                "warning",
                &[
                    ("file", r.source.clone()),
                    (
                        "title",
                        format!("session {} budget not reachable", r.session_id),
                    ),
                ],
                &format!(
                    "session {}: the budget is not reachable: {why}; no copy written",
                    r.session_id
                ),
            ));
        } else if r.written || (r.dry_run && !r.changes.is_empty() && r.fits) {
            let verb = if r.written {
                "written"
            } else {
                "would be written"
            };
            out.push_str(&command(
                "notice",
                &[
                    ("file", r.dest.clone()),
                    ("title", format!("compacted copy {verb}")),
                ],
                &format!(
                    "session {} from {}: compacted copy {verb} to {} ({} change(s))",
                    r.session_id,
                    r.source,
                    r.dest,
                    crate::edit::edits_of(&r.changes)
                ),
            ));
        }
        let t = CopyTotals::compact(std::slice::from_ref(r), &[], true);
        summary(
            &mut out,
            "compact",
            format!(
                "session {}: {} change(s), {} of {} copies written{}",
                r.session_id,
                t.changes,
                t.copies_written,
                t.copies,
                if r.dry_run { " (dry run)" } else { "" }
            ),
            problems,
        );
        out
    }

    fn compact_batch(
        &self,
        dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let mut out = String::new();
        problems_lines(&mut out, problems, copies);
        for r in sessions.iter().filter(|r| r.unreachable.is_some()) {
            out.push_str(&command(
                "warning",
                &[
                    ("file", r.source.clone()),
                    (
                        "title",
                        format!("session {} budget not reachable", r.session_id),
                    ),
                ],
                &format!(
                    "session {}: the budget is not reachable: {}; no copy written for it",
                    r.session_id,
                    r.unreachable.as_deref().unwrap_or_default()
                ),
            ));
        }
        copy_lines(&mut out, copies, dry_run);
        let t = CopyTotals::compact(sessions, copies, false);
        summary(
            &mut out,
            "compact",
            format!(
                "{} session(s) with a finding compact fixes, {} not reachable; {} of {} copies written, {} change(s){}",
                t.sessions,
                t.unreachable,
                t.copies_written,
                t.copies,
                t.changes,
                if dry_run { " (dry run)" } else { "" }
            ),
            problems,
        );
        out
    }
}

/// A notice per copy written (or that a dry run would write), an error per
/// copy that failed.
fn copy_lines(out: &mut String, copies: &[CopyRow], dry_run: bool) {
    for c in copies {
        if let Some(err) = &c.error {
            out.push_str(&command(
                "error",
                &[
                    ("file", c.dest.clone()),
                    ("title", "copy not written".to_string()),
                ],
                &format!("copy of {} not written to {}: {err}", c.source, c.dest),
            ));
            continue;
        }
        let verb = if c.written {
            "written"
        } else if dry_run {
            "would be written"
        } else {
            "not written"
        };
        let mut message = format!(
            "copy of {} {verb} to {} ({} change(s))",
            c.source, c.dest, c.changes
        );
        if !c.next_steps.is_empty() {
            message.push_str(&format!("; next: {}", c.next_steps.join("; ")));
        }
        out.push_str(&command(
            "notice",
            &[("file", c.dest.clone()), ("title", format!("copy {verb}"))],
            &message,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_runner() {
        assert_eq!(escape_data("100% a\r\nb: c, d"), "100%25 a%0D%0Ab: c, d");
        assert_eq!(escape_property("a:b,c%d\ne"), "a%3Ab%2Cc%25d%0Ae");
        assert_eq!(
            command(
                "error",
                &[
                    ("file", "x,y.jsonl".into()),
                    ("line", String::new()),
                    ("title", "t".into())
                ],
                "m:1"
            ),
            "::error file=x%2Cy.jsonl,title=t::m:1\n"
        );
        assert_eq!(command("notice", &[], "m"), "::notice::m\n");
    }
}
