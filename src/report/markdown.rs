//! Markdown exporter: a GitHub-flavoured Markdown job summary (append it to
//! `$GITHUB_STEP_SUMMARY`). One `##` heading per document, a summary line,
//! then tables. Table cells are escaped: `|` as `\|`, line breaks as `<br>`
//! (a space inside code spans), and Markdown punctuation outside code spans
//! with a backslash, so stored text cannot break the table or inject markup.
//! Inputs that could not be read and copies not written are listed at the
//! end (this format carries them: nothing is printed on stderr for it). A
//! run stopped by an error prints the heading, the error's message in a
//! fenced block, and those inputs ([`Exporter::stopped`]).

use super::*;
use crate::diagnose::{Location, Severity};

/// The Markdown exporter.
pub struct MarkdownExporter;

/// Characters escaped with a backslash outside code spans: every one that
/// can start inline markup in GitHub's Markdown (emphasis, links, HTML,
/// entities, strikethrough, math, tables).
const PUNCT: &[char] = &[
    '\\', '*', '_', '[', ']', '<', '>', '&', '~', '$', '|', '!', '#',
];

/// Plain text for a table cell. Code spans written in the text (`` `cmd` ``)
/// stay code spans; everything else is escaped.
pub(crate) fn cell(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            // A span whose text holds `\|` cannot be kept: GitHub would read
            // that pipe as a cell border; it is escaped as plain text instead.
            let span = closing_run(&chars, i + run, run)
                .filter(|&end| !chars[i + run..end].windows(2).any(|w| w == ['\\', '|']));
            if let Some(end) = span {
                out.extend(std::iter::repeat_n('`', run));
                for &c in &chars[i + run..end] {
                    match c {
                        '|' => out.push_str("\\|"),
                        '\n' => out.push(' '),
                        c => out.push(c),
                    }
                }
                out.extend(std::iter::repeat_n('`', run));
                i = end + run;
            } else {
                for _ in 0..run {
                    out.push_str("\\`");
                }
                i += run;
            }
            continue;
        }
        match c {
            '\n' => out.push_str("<br>"),
            c if PUNCT.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Index of the next run of exactly `n` backticks at or after `from`.
fn closing_run(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '`' {
            let run = chars[j..].iter().take_while(|&&c| c == '`').count();
            if run == n {
                return Some(j);
            }
            j += run;
        } else {
            j += 1;
        }
    }
    None
}

/// `text` as one code span for a table cell (empty for empty text).
pub(crate) fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    if text.contains("\\|") {
        // GitHub reads `\|` inside a code span as a backslash and a cell
        // border: such text goes in as escaped plain text.
        return cell(text);
    }
    let body: String = text
        .chars()
        .map(|c| if matches!(c, '\n' | '\r') { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// A table: header and rows of already escaped cells.
fn table(out: &mut String, header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) {
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!(
        "|{}\n",
        header.iter().map(|_| " --- |").collect::<String>()
    ));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out.push('\n');
}

/// Where a finding is, as one line: `file:line`, or `file (row)`.
pub(crate) fn place(loc: &Location) -> String {
    let file = loc.file.as_deref().unwrap_or("");
    match (loc.line, &loc.row, &loc.message_id) {
        (Some(l), _, _) => format!("{file}:{l}"),
        (None, Some(row), _) => format!("{file} ({row})"),
        (None, None, Some(m)) => format!("{file} (message {m})"),
        (None, None, None) => file.to_string(),
    }
}

/// `n word`, with an `s` when `n` is not 1.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The inputs that could not be read, the copies that could not be
/// written (or were refused), and the inputs skipped.
fn problems_block(out: &mut String, p: &Problems) {
    use crate::error::InputError;
    let (outputs, inputs): (Vec<InputError>, Vec<InputError>) =
        p.errors.iter().cloned().partition(|e| e.output);
    for (title, list) in [
        ("Inputs that could not be read", &inputs),
        ("Copies not written", &outputs),
        ("Warnings", &p.warnings),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("### {title}\n\n"));
        table(
            out,
            &["path", "reason"],
            list.iter()
                .map(|e| vec![code(&e.path.display().to_string()), cell(&e.reason)]),
        );
    }
}

/// The summary's tail about unreadable inputs and copies not written
/// (empty when none).
fn unread(p: &Problems) -> String {
    let inputs = match p.unreadable() {
        0 => String::new(),
        1 => "; **1 input could not be read**".into(),
        n => format!("; **{n} inputs could not be read**"),
    };
    let outputs = match p.unwritable() {
        0 => String::new(),
        1 => "; **1 copy not written**".into(),
        n => format!("; **{n} copies not written**"),
    };
    inputs + &outputs
}

/// Milliseconds since the epoch as RFC 3339 UTC, or as stored when out of
/// range.
fn time(ms: i64) -> String {
    if !(0..253_402_300_800_000).contains(&ms) {
        return ms.to_string();
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.unsigned_abs());
    humantime::format_rfc3339_millis(t).to_string()
}

/// A JSON value shortened to 80 characters, as a code span.
fn short(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        code(&format!("{}...", s.chars().take(77).collect::<String>()))
    } else {
        code(&s)
    }
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// Next steps of written copies, as a list under a heading.
fn next_steps_block(out: &mut String, copies: &[(&str, &[String])]) {
    let with: Vec<_> = copies.iter().filter(|(_, s)| !s.is_empty()).collect();
    if with.is_empty() {
        return;
    }
    out.push_str("### Next steps\n\n");
    for (dest, steps) in with {
        out.push_str(&format!("- {}\n", code(dest)));
        for s in steps.iter() {
            out.push_str(&format!("  - {}\n", cell(s)));
        }
    }
    out.push('\n');
}

/// The copies table of `repair` and batch `compact`.
fn copies_table(out: &mut String, copies: &[CopyRow]) {
    if copies.is_empty() {
        return;
    }
    out.push_str("### Copies\n\n");
    table(
        out,
        &["source", "copy", "changes", "written", "error"],
        copies.iter().map(|c| {
            vec![
                code(&c.source),
                code(&c.dest),
                c.changes.to_string(),
                yes(c.written),
                c.error.as_deref().map(cell).unwrap_or_default(),
            ]
        }),
    );
}

/// The changes table of `repair` and `compact`.
fn changes_table(out: &mut String, changes: &[StoredChange]) {
    if changes.is_empty() {
        return;
    }
    out.push_str("### Changes\n\n");
    table(
        out,
        &["session", "message", "part", "field", "old", "new"],
        changes.iter().map(|c| {
            vec![
                code(&c.session_id),
                code(&c.message_id),
                c.part_id.as_deref().map(code).unwrap_or_default(),
                code(&c.field),
                short(&c.old),
                short(&c.new),
            ]
        }),
    );
}

impl Exporter for MarkdownExporter {
    /// The heading, the message of the error that stopped the run verbatim
    /// in a fenced block (longer than any run of backticks in it), then the
    /// inputs that could not be read: no summary of sessions that were not
    /// reported.
    fn stopped(&self, command: DocKind, _dry_run: bool, problems: &Problems) -> String {
        let mut out = format!("## session-doctor {}\n\n", command.name());
        if let Some(e) = &problems.stopped {
            let longest = e
                .reason
                .split(|c| c != '`')
                .map(str::len)
                .max()
                .unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            out.push_str(&format!(
                "**Stopped by an error** (exit 2):\n\n{fence}text\n{}\n{fence}\n\n",
                e.reason
            ));
        }
        problems_block(&mut out, problems);
        out
    }

    fn list(&self, rows: &[ListRow], problems: &Problems) -> String {
        let t = ListTotals::of(rows);
        let mut out = String::from("## session-doctor list\n\n");
        out.push_str(&format!(
            "{}, {}, {}; {} stored bytes, {} media bytes; findings: {} errors, {} warnings, {} info{}\n\n",
            count(t.sessions, "session"),
            count(t.messages, "message"),
            count(t.parts, "part"),
            t.payload_bytes,
            t.media_bytes,
            t.findings.error,
            t.findings.warning,
            t.findings.info,
            unread(problems),
        ));
        if !rows.is_empty() {
            table(
                &mut out,
                &[
                    "agent",
                    "session",
                    "title",
                    "messages",
                    "parts",
                    "stored bytes",
                    "media bytes",
                    "compactions",
                    "context tokens",
                    "errors",
                    "warnings",
                    "info",
                    "source",
                ],
                rows.iter().map(|r| {
                    vec![
                        r.agent.to_string(),
                        code(&r.id),
                        r.title.as_deref().map(cell).unwrap_or_default(),
                        r.messages.to_string(),
                        r.parts.to_string(),
                        r.payload_bytes.to_string(),
                        r.media_bytes.to_string(),
                        r.compactions.to_string(),
                        r.context_tokens.map(|c| c.to_string()).unwrap_or_default(),
                        r.findings.error.to_string(),
                        r.findings.warning.to_string(),
                        r.findings.info.to_string(),
                        code(&r.source),
                    ]
                }),
            );
        }
        problems_block(&mut out, problems);
        out
    }

    fn inspect(&self, sessions: &[InspectSession], problems: &Problems) -> String {
        let t = InspectTotals::of(sessions);
        let mut out = String::from("## session-doctor inspect\n\n");
        out.push_str(&format!(
            "{}, {}, {}; {} stored bytes, {} media bytes, {} estimated tokens{}\n\n",
            count(t.sessions, "session"),
            count(t.messages, "message"),
            count(t.parts, "part"),
            t.payload_bytes,
            t.media_bytes,
            t.tokens_estimated,
            unread(problems),
        ));
        for s in sessions {
            out.push_str(&format!(
                "### {} {}\n\n{} from {}: {}, {} visible to the model\n\n",
                s.agent,
                code(&s.id),
                s.agent,
                code(&s.source),
                count(s.messages.len(), "message"),
                s.visible_messages
            ));
            if let Some(line) =
                super::table::metadata_sentence(&s.metadata_lines, |n| n.to_string())
            {
                out.push_str(&format!("{line}\n\n"));
            }
            table(
                &mut out,
                &[
                    "#",
                    "message",
                    "role",
                    "parent",
                    "created (UTC)",
                    "stored bytes",
                    "media bytes",
                    "estimated tokens",
                    "parts",
                    "flags",
                ],
                s.messages.iter().map(|m| {
                    vec![
                        m.index.to_string(),
                        code(&m.id),
                        cell(&m.role),
                        m.parent_id.as_deref().map(code).unwrap_or_default(),
                        time(m.time_created),
                        m.payload_bytes.to_string(),
                        m.media_bytes.to_string(),
                        m.tokens_estimated.to_string(),
                        m.parts.len().to_string(),
                        cell(&m.flags.join(" ")),
                    ]
                }),
            );
        }
        problems_block(&mut out, problems);
        out
    }

    fn check(&self, sessions: &[CheckSession], problems: &Problems) -> String {
        let t = CheckTotals::of(sessions);
        let mut out = String::from("## session-doctor check\n\n");
        let errors = count(t.findings.error, "error");
        out.push_str(&format!(
            "{}, {}, {} info in {} ({} with findings){}\n\n",
            if t.findings.error > 0 {
                format!("**{errors}**")
            } else {
                errors
            },
            count(t.findings.warning, "warning"),
            t.findings.info,
            count(t.sessions, "session"),
            t.sessions_with_findings,
            unread(problems),
        ));
        if !t.by_code.is_empty() {
            let by: Vec<String> = t
                .by_code
                .iter()
                .map(|(c, n)| format!("{} {n}", code(c)))
                .collect();
            out.push_str(&format!("By code: {}\n\n", by.join(", ")));
        }
        let findings: Vec<(&CheckSession, &Finding)> = sessions
            .iter()
            .flat_map(|s| s.findings.iter().map(move |f| (s, f)))
            .collect();
        if findings.is_empty() {
            out.push_str("No findings.\n\n");
        } else {
            table(
                &mut out,
                &["severity", "code", "session", "where", "detail", "remedy"],
                findings.iter().map(|(s, f)| {
                    vec![
                        match f.severity {
                            Severity::Error => "**error**".to_string(),
                            other => other.as_str().to_string(),
                        },
                        code(f.code.as_str()),
                        code(&s.id),
                        code(&place(&f.location)),
                        cell(&f.detail),
                        // The remedy, then the command that does it.
                        match &f.remedy_command {
                            Some(c) => format!("{}<br>{}", cell(&f.remedy), code(c)),
                            None => cell(&f.remedy),
                        },
                    ]
                }),
            );
        }
        problems_block(&mut out, problems);
        out
    }

    fn repair(&self, report: &RepairReport, problems: &Problems) -> String {
        let t = CopyTotals::repair(report);
        let mut out = String::from("## session-doctor repair\n\n");
        out.push_str(&format!(
            "{}{} of {} written, {} in {}{}\n\n",
            if report.dry_run {
                "Dry run (nothing written): "
            } else {
                ""
            },
            t.copies_written,
            count(t.copies, "copy"),
            count(t.changes, "change"),
            count(t.sessions, "session"),
            unread(problems),
        ));
        copies_table(&mut out, &report.copies);
        changes_table(&mut out, &report.changes);
        let steps: Vec<(&str, &[String])> = report
            .copies
            .iter()
            .map(|c| (c.dest.as_str(), c.next_steps.as_slice()))
            .collect();
        next_steps_block(&mut out, &steps);
        problems_block(&mut out, problems);
        out
    }

    fn compact(&self, r: &CompactReport, problems: &Problems) -> String {
        let mut out = String::from("## session-doctor compact\n\n");
        let outcome = if let Some(why) = &r.unreachable {
            format!(
                "**the budget is not reachable**: {}; no copy written",
                cell(why)
            )
        } else if r.written {
            format!("copy written to {}", code(&r.dest))
        } else if r.nothing_to_change {
            "nothing to change (it fits and no finding asks for a change); no copy written".into()
        } else if r.dry_run {
            format!("dry run: would write {}", code(&r.dest))
        } else {
            "no copy written".into()
        };
        out.push_str(&format!(
            "Session {} from {}: {}; {}{}\n\n",
            code(&r.session_id),
            code(&r.source),
            count(crate::edit::edits_of(&r.changes), "change"),
            outcome,
            unread(problems),
        ));
        let row = |name: &str, f: &crate::treat::compact::Figures| {
            vec![
                cell(name),
                f.tokens_next_turn.to_string(),
                f.request_bytes.to_string(),
                f.payload_bytes.to_string(),
                f.media_bytes.to_string(),
                f.messages.to_string(),
                f.visible_messages.to_string(),
                f.parts_changed.to_string(),
                yes(f.fits),
            ]
        };
        table(
            &mut out,
            &[
                "step",
                "next-turn tokens",
                "request bytes",
                "stored bytes",
                "media bytes",
                "messages",
                "visible",
                "parts changed",
                "fits",
            ],
            std::iter::once(row("before", &r.before))
                .chain(r.steps.iter().map(|s| row(s.step, &s.after))),
        );
        changes_table(&mut out, &r.changes);
        next_steps_block(&mut out, &[(r.dest.as_str(), r.next_steps.as_slice())]);
        problems_block(&mut out, problems);
        out
    }

    fn compact_batch(
        &self,
        dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let t = CopyTotals::compact(sessions, copies, false);
        let mut out = String::from("## session-doctor compact\n\n");
        out.push_str(&format!(
            "{}{} with a finding compact fixes ({} not reachable); {} of {} written, {}{}\n\n",
            if dry_run {
                "Dry run (nothing written): "
            } else {
                ""
            },
            count(t.sessions, "session"),
            t.unreachable,
            t.copies_written,
            count(t.copies, "copy"),
            count(t.changes, "change"),
            unread(problems),
        ));
        if !sessions.is_empty() {
            table(
                &mut out,
                &[
                    "session",
                    "steps",
                    "next-turn tokens",
                    "request bytes",
                    "fits",
                    "changes",
                    "copy",
                ],
                sessions.iter().map(|r| {
                    let last = r.steps.last().map_or(&r.before, |s| &s.after);
                    let steps: Vec<&str> = r.steps.iter().map(|s| s.step).collect();
                    vec![
                        code(&r.session_id),
                        cell(&steps.join(", ")),
                        format!("{} → {}", r.before.tokens_next_turn, last.tokens_next_turn),
                        format!("{} → {}", r.before.request_bytes, last.request_bytes),
                        yes(r.fits),
                        crate::edit::edits_of(&r.changes).to_string(),
                        if r.written {
                            code(&r.dest)
                        } else if let Some(why) = &r.unreachable {
                            format!("not written: budget not reachable ({})", cell(why))
                        } else if r.nothing_to_change {
                            "nothing to change".into()
                        } else if r.dry_run {
                            format!("dry run: {}", code(&r.dest))
                        } else {
                            "not written".into()
                        },
                    ]
                }),
            );
        }
        copies_table(&mut out, copies);
        let steps: Vec<(&str, &[String])> = copies
            .iter()
            .map(|c| (c.dest.as_str(), c.next_steps.as_slice()))
            .collect();
        next_steps_block(&mut out, &steps);
        problems_block(&mut out, problems);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_pipes_newlines_and_markup() {
        assert_eq!(cell("a|b\nc"), "a\\|b<br>c");
        assert_eq!(cell("*x* <b> [l](u)"), "\\*x\\* \\<b\\> \\[l\\](u)");
        assert_eq!(cell("run `a|b` now"), "run `a\\|b` now");
        assert_eq!(cell("one ` tick"), "one \\` tick");
        assert_eq!(cell("a\r\nb"), "a<br>b");
        assert_eq!(cell("`a\\|b`"), "\\`a\\\\\\|b\\`");
    }

    #[test]
    fn code_spans_hold_backticks_and_pipes() {
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
        assert_eq!(code(""), "");
        assert_eq!(code("a\\|b"), "a\\\\\\|b");
    }
}
