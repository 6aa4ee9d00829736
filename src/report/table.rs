//! Table exporter (comfy-table) for people. Colour only when stdout is a
//! terminal and `NO_COLOR` is unset.

use super::*;
use comfy_table::{
    presets::UTF8_FULL_CONDENSED, Cell, Color, ColumnConstraint, ContentArrangement, Table,
};
use std::io::IsTerminal;

pub struct TableExporter {
    color: bool,
}

impl TableExporter {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        TableExporter {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    fn table(&self, header: &[&str]) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header.iter().map(|h| Cell::new(*h)));
        if !self.color {
            t.force_no_tty();
        } else {
            t.enforce_styling();
        }
        t
    }

    fn severity_cell(&self, s: crate::diagnose::Severity) -> Cell {
        let c = Cell::new(s.as_str());
        if !self.color {
            return c;
        }
        match s {
            crate::diagnose::Severity::Error => c.fg(Color::Red),
            crate::diagnose::Severity::Warning => c.fg(Color::Yellow),
            crate::diagnose::Severity::Info => c.fg(Color::Cyan),
        }
    }
}

fn opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// A JSON value for a table cell, cut to 80 characters.
fn short(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

fn notes_block(out: &mut String, notes: &[String]) {
    for n in notes {
        out.push_str(&format!("  note: {n}\n"));
    }
}

/// `ses_dfd1e065effeRy7N0IMCxzViNy` stays whole; ids are what people copy.
fn time(ms: i64) -> String {
    // humantime formats years 1970 to 9999; anything else is shown as stored.
    if !(0..253_402_300_800_000).contains(&ms) {
        return ms.to_string();
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

impl Exporter for TableExporter {
    fn list(&self, rows: &[ListRow], _problems: &Problems) -> String {
        let mut t = self.table(&[
            "agent",
            "session",
            "title",
            "msgs",
            "parts",
            "stored B",
            "media B",
            "compactions",
            "context tok",
            "input",
            "output",
            "reasoning",
            "cache read",
            "cache write",
            "err",
            "warn",
            "info",
            "source",
        ]);
        for r in rows {
            t.add_row(vec![
                r.agent.to_string(),
                r.id.clone(),
                r.title.clone().unwrap_or_default(),
                r.messages.to_string(),
                r.parts.to_string(),
                r.payload_bytes.to_string(),
                r.media_bytes.to_string(),
                r.compactions.to_string(),
                opt(r.context_tokens),
                r.tokens_total.input.to_string(),
                r.tokens_total.output.to_string(),
                r.tokens_total.reasoning.to_string(),
                r.tokens_total.cache_read.to_string(),
                r.tokens_total.cache_write.to_string(),
                r.findings.error.to_string(),
                r.findings.warning.to_string(),
                r.findings.info.to_string(),
                r.source.clone(),
            ]);
        }
        let mut out = format!("{t}\n{} session(s)\n", rows.len());
        for r in rows {
            for n in &r.notes {
                out.push_str(&format!("note: {}: {n}\n", r.id));
            }
        }
        out
    }

    fn inspect(&self, sessions: &[InspectSession], _problems: &Problems) -> String {
        let mut out = String::new();
        for s in sessions {
            out.push_str(&format!(
                "{} session {} ({}): {} messages, {} visible to the model\n",
                s.agent,
                s.id,
                s.source,
                s.messages.len(),
                s.visible_messages
            ));
            let mut t = self.table(&[
                "#",
                "message",
                "role",
                "parent",
                "created (UTC)",
                "stored B",
                "media B (n)",
                "est tok",
                "in/out/reas/cr/cw",
                "parts",
                "flags",
            ]);
            for m in &s.messages {
                let u = &m.tokens_reported;
                let mut kinds: Vec<(String, usize)> = Vec::new();
                for p in &m.parts {
                    match kinds.iter_mut().find(|(k, _)| *k == p.kind) {
                        Some((_, n)) => *n += 1,
                        None => kinds.push((p.kind.clone(), 1)),
                    }
                }
                let kinds = kinds
                    .iter()
                    .map(|(k, n)| {
                        if *n > 1 {
                            format!("{k}x{n}")
                        } else {
                            k.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                t.add_row(vec![
                    m.index.to_string(),
                    m.id.clone(),
                    m.role.clone(),
                    m.parent_id.clone().unwrap_or_else(|| "-".into()),
                    time(m.time_created),
                    m.payload_bytes.to_string(),
                    format!("{} ({})", m.media_bytes, m.media_count),
                    m.tokens_estimated.to_string(),
                    format!(
                        "{}/{}/{}/{}/{}",
                        u.input, u.output, u.reasoning, u.cache_read, u.cache_write
                    ),
                    kinds,
                    m.flags.join(" "),
                ]);
            }
            out.push_str(&format!("{t}\n"));
            if let Some(top) = &s.top_parts {
                let mut t = self.table(&[
                    "part", "message", "kind", "stored B", "media B", "est tok", "tool",
                ]);
                for p in top {
                    t.add_row(vec![
                        p.id.clone(),
                        p.message_id.clone(),
                        p.kind.clone(),
                        p.payload_bytes.to_string(),
                        p.media_bytes.to_string(),
                        p.tokens_estimated.to_string(),
                        p.tool.clone().unwrap_or_default(),
                    ]);
                }
                out.push_str(&format!("largest parts:\n{t}\n"));
            }
        }
        out
    }

    fn check(&self, sessions: &[CheckSession], _problems: &Problems) -> String {
        let mut out = String::new();
        let mut total = 0;
        for s in sessions {
            if s.findings.is_empty() {
                out.push_str(&format!("{} {}: healthy\n", s.agent, s.id));
                notes_block(&mut out, &s.notes);
                continue;
            }
            total += s.findings.len();
            out.push_str(&format!("{} {} ({}):\n", s.agent, s.id, s.source));
            let mut t = self.table(&["severity", "code", "message", "detail", "remedy"]);
            // Ids stay whole; detail and remedy wrap at the terminal width (200 columns when piped).
            t.set_content_arrangement(ContentArrangement::Dynamic);
            if t.width().is_none() {
                t.set_width(200);
            }
            for i in 0..3 {
                if let Some(c) = t.column_mut(i) {
                    c.set_constraint(ColumnConstraint::ContentWidth);
                }
            }
            for f in &s.findings {
                t.add_row(vec![
                    self.severity_cell(f.severity),
                    Cell::new(f.code),
                    Cell::new(f.message_id.clone().unwrap_or_else(|| "-".into())),
                    Cell::new(&f.detail),
                    Cell::new(&f.remedy),
                ]);
            }
            out.push_str(&format!("{t}\n"));
            notes_block(&mut out, &s.notes);
        }
        out.push_str(&format!(
            "{} session(s), {total} finding(s)\n",
            sessions.len()
        ));
        out
    }

    fn compact(&self, r: &CompactReport, _problems: &Problems) -> String {
        let mut out = String::new();
        match &r.budget {
            Some(b) => out.push_str(&format!(
                "budget: {} (context {}, max output {}{}; from {}): usable {} tokens, the agent compacts at {}\n",
                b.limits.model.as_deref().unwrap_or("model"),
                b.limits.context,
                b.limits.max_output,
                b.limits.input.map(|i| format!(", input {i}")).unwrap_or_default(),
                b.limits.source,
                b.usable,
                b.agent_threshold
            )),
            None => out.push_str(&format!(
                "budget: no model limits ({}); sizing by request bytes only\n",
                r.budget_unknown.as_deref().unwrap_or("unknown")
            )),
        }
        out.push_str(&format!(
            "request limit {} bytes with {} bytes headroom; usable {} tokens; agent overhead {} tokens\n",
            r.max_request_bytes, r.headroom_bytes, r.usable_tokens, r.overhead_tokens
        ));
        let mut t = self.table(&[
            "step",
            "est tok",
            "next-turn tok",
            "reported tok",
            "stored B",
            "request B",
            "media B",
            "msgs",
            "visible",
            "parts changed",
            "fits",
        ]);
        let row = |name: &str, f: &crate::treat::compact::Figures| {
            vec![
                name.to_string(),
                f.tokens_estimated.to_string(),
                f.tokens_next_turn.to_string(),
                opt(f.tokens_reported),
                f.payload_bytes.to_string(),
                f.request_bytes.to_string(),
                f.media_bytes.to_string(),
                f.messages.to_string(),
                f.visible_messages.to_string(),
                f.parts_changed.to_string(),
                if f.fits { "yes" } else { "no" }.to_string(),
            ]
        };
        t.add_row(row("before", &r.before));
        for s in &r.steps {
            t.add_row(row(s.step, &s.after));
        }
        out.push_str(&format!("{t}\n"));
        if !r.changes.is_empty() {
            let mut c = self.table(&["message", "part", "field", "old", "new"]);
            for ch in &r.changes {
                c.add_row(vec![
                    ch.message_id.clone(),
                    ch.part_id.clone().unwrap_or_else(|| "-".into()),
                    ch.field.clone(),
                    short(&ch.old),
                    short(&ch.new),
                ]);
            }
            out.push_str(&format!("{} change(s):\n{c}\n", r.changes.len()));
        }
        if let Some(why) = &r.unreachable {
            out.push_str(&format!("NOT REACHABLE: {why}; no copy written\n"));
        } else if r.written {
            out.push_str(&format!("wrote {} from {}\n", r.dest, r.source));
            out.push_str(&next_steps(&r.next_steps));
        } else if r.dry_run {
            out.push_str(&format!(
                "dry run: would write {} from {}\n",
                r.dest, r.source
            ));
        } else if r.nothing_to_change {
            out.push_str("nothing to change: the session fits and no finding asks for a change; no copy written\n");
        } else {
            out.push_str("no copy written\n");
        }
        out
    }

    fn compact_batch(
        &self,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        _problems: &Problems,
    ) -> String {
        let mut out = String::new();
        if sessions.is_empty() {
            out.push_str("no session has a finding compact fixes: nothing to do\n");
            return out;
        }
        let mut t = self.table(&[
            "session",
            "steps",
            "next-turn tok",
            "",
            "request B",
            "",
            "fits",
            "copy",
        ]);
        for r in sessions {
            let last = r.steps.last().map_or(&r.before, |s| &s.after);
            let steps: Vec<&str> = r.steps.iter().map(|s| s.step).collect();
            t.add_row(vec![
                r.session_id.clone(),
                if steps.is_empty() {
                    "-".into()
                } else {
                    steps.join(", ")
                },
                r.before.tokens_next_turn.to_string(),
                format!("-> {}", last.tokens_next_turn),
                r.before.request_bytes.to_string(),
                format!("-> {}", last.request_bytes),
                if r.fits { "yes".into() } else { "no".into() },
                if r.written {
                    r.dest.clone()
                } else if r.unreachable.is_some() {
                    "not written: the budget is not reachable".into()
                } else if r.nothing_to_change {
                    "nothing to change".into()
                } else if r.dry_run {
                    format!("dry run: {}", r.dest)
                } else {
                    "not written".into()
                },
            ]);
        }
        out.push_str(&format!("{t}\n"));
        for c in copies {
            let verb = if c.written { "wrote" } else { "would write" };
            out.push_str(&format!(
                "{verb} {} ({} change(s)) from {}\n",
                c.dest, c.changes, c.source
            ));
            out.push_str(&next_steps(&c.next_steps));
        }
        out
    }

    fn repair(&self, r: &RepairReport, _problems: &Problems) -> String {
        let mut out = String::new();
        if r.changes.is_empty() {
            out.push_str("no repairable findings\n");
        } else {
            let mut t = self.table(&["session", "message", "field", "old", "new"]);
            for c in &r.changes {
                t.add_row(vec![
                    c.session_id.clone(),
                    c.message_id.clone(),
                    c.field.clone(),
                    c.old.to_string(),
                    c.new.to_string(),
                ]);
            }
            out.push_str(&format!("{t}\n"));
        }
        for c in &r.copies {
            let verb = if c.written { "wrote" } else { "would write" };
            out.push_str(&format!(
                "{verb} {} ({} change(s)) from {}\n",
                c.dest, c.changes, c.source
            ));
            out.push_str(&next_steps(&c.next_steps));
        }
        out
    }
}

/// "next:" lines under a written copy: how to make the agent load it.
fn next_steps(steps: &[String]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::from("  next:\n");
    for s in steps {
        out.push_str(&format!("    {s}\n"));
    }
    out
}
