//! Table exporter for people (comfy-table). Output fits the width of the
//! terminal when stdout is one, else `$COLUMNS` when it is set; a pipe
//! without `$COLUMNS` gets every column at full width. Colour only when
//! stdout is a terminal and `NO_COLOR` is unset or empty. Times are UTC.
//!
//! Tables give way column by column when they do not fit: each table lists
//! the steps it may take in order (a narrower form of a column, a column cut
//! or wrapped to a smaller width, a column left out) and takes them until
//! the table fits. Numbers are right-aligned with thousands separators;
//! narrow forms show bytes as decimal sizes (`1.7 MB` = 1,700,000 bytes).
//! Every figure stays exact in the JSON output.

use super::*;
use crate::diagnose::Severity;
use comfy_table::{
    presets::NOTHING, Attribute, Cell, CellAlignment, Color, ColumnConstraint, ContentArrangement,
    Table, TableComponent, Width,
};
use std::collections::HashMap;
use std::io::IsTerminal;

/// Below this width `list` shows its compact column set.
const WIDE_LIST: usize = 150;

/// A narrow `list` of more sessions than this counts their notes instead
/// of printing them.
const NOTES_UP_TO: usize = 10;

/// Spaces between two columns.
const GAP: usize = 2;

/// Rows a changes table shows before it says how many more there are: a
/// person reads a few dozen; the JSON document carries every change.
pub const MAX_CHANGE_ROWS: usize = 200;

/// The table exporter: colour and the width to fit.
pub struct TableExporter {
    color: bool,
    /// Columns to fit the output in; `None`: no limit.
    width: Option<usize>,
}

impl TableExporter {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    /// Width: the terminal's when stdout is a terminal (falling back to
    /// `$COLUMNS` when its size cannot be read), else `$COLUMNS` when it is a
    /// positive number, else unlimited.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let tty = std::io::stdout().is_terminal();
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&w| w > 0);
        let width = if tty {
            Table::new().width().map(usize::from).or(columns)
        } else {
            columns
        };
        TableExporter::new(!no_color && tty, width)
    }

    /// An exporter with colour on or off that fits `width` columns (`None`:
    /// no limit).
    pub fn new(color: bool, width: Option<usize>) -> Self {
        TableExporter {
            color,
            width: width.filter(|&w| w > 0),
        }
    }

    /// `text` in the colour of `s`, bold, when colour is on.
    fn paint(&self, s: Severity, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let code = match s {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// Prose wrapped at the width (see [`wrap`]).
    fn wrap(&self, first: &str, rest: &str, text: &str) -> String {
        wrap(text, self.width, first, rest)
    }
}

// ---------------------------------------------------------------------------
// Text helpers. Strings are cut at char boundaries; widths count chars.

/// Number of chars of `s`.
fn len(s: &str) -> usize {
    s.chars().count()
}

/// `s` with control characters (newlines, tabs, escape sequences stored in
/// user data) replaced by spaces: a cell or a line stays one line.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The first `n` chars of `s`.
fn head(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// `s` cut to `n` chars, the last of them `…` when something was cut.
fn cut_end(s: &str, n: usize) -> String {
    if len(s) <= n {
        return s.to_string();
    }
    format!("{}…", head(s, n.saturating_sub(1)))
}

/// `s` cut to `n` chars by replacing its middle with `…` (a third of the
/// room for the start, the rest for the end).
fn cut_middle(s: &str, n: usize) -> String {
    let l = len(s);
    if l <= n {
        return s.to_string();
    }
    let keep = n.saturating_sub(1);
    let start = keep / 3;
    let end = keep - start;
    let tail: String = s.chars().skip(l - end).collect();
    format!("{}…{tail}", head(s, start))
}

/// `n` with a comma every three digits: `1,733,197`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` bytes as a decimal size with one decimal: `779 B`, `84.1 kB`,
/// `1.7 MB` (1 kB = 1,000 bytes, as ccusage and most tools print them).
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    // Tenths of the unit, rounded; moving to the next unit when rounding
    // reaches 1000.0 (999,960 bytes is 1.0 MB, not 1000.0 kB).
    let mut unit = 0;
    let mut div: u128 = 1000;
    loop {
        let tenths = (u128::from(n) * 10 + div / 2) / div;
        if tenths < 10_000 || unit + 1 == UNITS.len() {
            return format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit]);
        }
        unit += 1;
        div *= 1000;
    }
}

/// A count with separators, `-` for none.
fn opt(v: Option<u64>) -> String {
    v.map(thousands).unwrap_or_else(|| "-".into())
}

/// A JSON value for a table cell, cut to 80 characters.
fn short(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    cut_end(&clean(&s), 80)
}

/// `ms` since the Unix epoch as UTC `YYYY-MM-DD hh:mm:ss.mmm`; times outside
/// the years 1970 to 9999 as the stored number.
fn timestamp(ms: i64) -> String {
    if !(0..253_402_300_800_000).contains(&ms) {
        return ms.to_string();
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    // 2026-11-22T12:07:50.123Z
    humantime::format_rfc3339_millis(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

/// The first `n` chars of [`timestamp`] (`10`: the date, `16`: to the
/// minute, `19`: to the second); a raw number stays whole.
fn time_to(ms: i64, n: usize) -> String {
    let t = timestamp(ms);
    if t.contains('-') {
        head(&t, n)
    } else {
        t
    }
}

/// [`timestamp`] as `MM-DD hh:mm` (a raw number stays whole).
fn month_day_time(ms: i64) -> String {
    let t = timestamp(ms);
    if t.contains('-') {
        t.chars().skip(5).take(11).collect()
    } else {
        t
    }
}

/// For every distinct id, the length in chars of its shortest prefix that no
/// other id of `ids` starts with (the whole id when another id starts with
/// all of it).
fn unique_prefixes<'a>(ids: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut v: Vec<&str> = ids.collect();
    v.sort_unstable();
    v.dedup();
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let mut out = HashMap::with_capacity(v.len());
    for (i, id) in v.iter().enumerate() {
        let before = i.checked_sub(1).map_or(0, |j| common(v[j], id));
        let after = v.get(i + 1).map_or(0, |n| common(n, id));
        out.insert(*id, (before.max(after) + 1).min(len(id)));
    }
    out
}

/// `id` shortened to a prefix of at least `min` chars that is still unique
/// among the ids `uniq` was computed over, marked with `…`; whole when that
/// is no shorter.
fn short_id(id: &str, uniq: &HashMap<&str, usize>, min: usize) -> String {
    let keep = uniq.get(id).copied().unwrap_or(usize::MAX).max(min);
    // Shortening by less than 3 chars is not worth the `…`.
    if keep.saturating_add(4) > len(id) {
        id.to_string()
    } else {
        format!("{}…", head(id, keep))
    }
}

/// The agent name in at most 8 chars (`claude-code` -> `claude`,
/// `docker-agent` -> `docker`).
fn short_agent(agent: &str) -> &str {
    match agent {
        "claude-code" => "claude",
        "docker-agent" => "docker",
        other => other,
    }
}

/// A model name as ccusage shows it: without its provider, a date suffix
/// and a leading `claude-` (`anthropic/claude-opus-4-5-20251101` ->
/// `opus-4-5`).
fn short_model(model: &str) -> String {
    let mut name: String = model.rsplit('/').next().unwrap_or(model).to_string();
    // A `-YYYYMMDD` (or `-YYYY-MM-DD`) suffix: ASCII only, so the byte
    // count of the suffix is its char count.
    for tail in [9, 11] {
        let bytes = name.as_bytes();
        if bytes.len() > tail && bytes[bytes.len() - tail] == b'-' {
            let rest = &bytes[bytes.len() - tail + 1..];
            let digits = rest.iter().filter(|b| b.is_ascii_digit()).count();
            let dashes = rest.iter().filter(|b| **b == b'-').count();
            if digits == 8 && digits + dashes == rest.len() {
                name = name.chars().take(len(&name) - tail).collect();
                break;
            }
        }
    }
    match name.strip_prefix("claude-") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => name,
    }
}

/// Whether a break may follow char `c` inside a word too long for a line
/// (paths break after `/`).
fn soft_break(c: char) -> bool {
    c == '/'
}

/// Splits `word` into pieces of at most `room` chars (the first of at most
/// `first_room`), preferring to break after a `/`.
fn split_word(word: &str, first_room: usize, room: usize) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut cap = first_room.max(1);
    while chars.len() - start > cap {
        let window = &chars[start..start + cap];
        let cut = window
            .iter()
            .rposition(|&c| soft_break(c))
            .filter(|&p| p + 1 >= cap / 2)
            .map_or(cap, |p| p + 1);
        pieces.push(window[..cut].iter().collect());
        start += cut;
        cap = room.max(1);
    }
    pieces.push(chars[start..].iter().collect());
    pieces
}

/// `text` (control characters made spaces) wrapped at `width` chars: the
/// first line starts with `first`, the others with `rest`; words break at
/// spaces, a word longer than a line after a `/` or anywhere. Runs of spaces
/// inside a line are kept. Every line ends with `\n`, without trailing
/// spaces. `width` `None`: one line.
fn wrap(text: &str, width: Option<usize>, first: &str, rest: &str) -> String {
    let text = clean(text);
    let Some(width) = width else {
        return format!("{}\n", format!("{first}{text}").trim_end());
    };
    // At least 16 chars of text per line, even in a very narrow terminal.
    let room = |prefix: &str| width.saturating_sub(len(prefix)).max(16);
    let next_cap = room(rest);
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_string();
    let mut used = 0; // chars of text on `line`
    let mut cap = room(first);
    let mut spaces = 0; // spaces seen before the next word
    for word in text.split(' ') {
        if word.is_empty() {
            spaces += 1;
            continue;
        }
        let mut gap = if used == 0 { 0 } else { spaces + 1 };
        spaces = 0;
        let w = len(word);
        if used + gap + w > cap && used > 0 && (w <= next_cap || cap < used + gap + 8) {
            // To the next line (a word longer than a line is split there).
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            used = 0;
            gap = 0;
            cap = next_cap;
        }
        line.extend(std::iter::repeat_n(' ', gap));
        used += gap;
        if used + w <= cap {
            line.push_str(word);
            used += w;
            continue;
        }
        for (i, piece) in split_word(word, cap - used, next_cap)
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                lines.push(std::mem::replace(&mut line, rest.to_string()));
                cap = next_cap;
                used = 0;
            }
            used += len(&piece);
            line.push_str(&piece);
        }
    }
    lines.push(line);
    let mut out = String::new();
    for l in lines {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// `parts` on lines of at most `width` chars, two spaces apart; a part
/// that does not fit the rest of a line starts the next one (`first` starts
/// the first line, `rest` the others), a part longer than a line wraps.
fn line_of_parts(parts: &[String], width: Option<usize>, first: &str, rest: &str) -> String {
    let Some(width) = width else {
        return format!("{first}{}\n", parts.join("  "));
    };
    let mut out = String::new();
    let mut line = String::new();
    for p in parts {
        let prefix = if out.is_empty() { first } else { rest };
        if line.is_empty() {
            line = p.clone();
        } else if len(prefix) + len(&line) + 2 + len(p) <= width {
            line.push_str("  ");
            line.push_str(p);
        } else {
            out.push_str(&wrap(&line, Some(width), prefix, rest));
            line = p.clone();
        }
    }
    let prefix = if out.is_empty() { first } else { rest };
    out.push_str(&wrap(&line, Some(width), prefix, rest));
    out
}

/// A shell command wrapped at `width` so that it still runs when copied:
/// every line but the last ends with `\` and the lines after the first start
/// at column 0 (a shell joins `\`-newline to nothing, inside a word or
/// between words). Breaks fall after a space, else after a `/`, else
/// anywhere, never inside single quotes (where `\`-newline is kept) or
/// after a `\`. The first line starts with `first`. `None`: one line.
fn wrap_command(cmd: &str, width: Option<usize>, first: &str) -> String {
    let cmd = clean(cmd);
    let Some(width) = width else {
        return format!("{first}{cmd}\n");
    };
    let chars: Vec<char> = cmd.chars().collect();
    // may_break[i]: a line may end after chars[i].
    let mut may_break = vec![false; chars.len()];
    let (mut single, mut escaped) = (false, false);
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !single {
            escaped = true;
        } else if c == '\'' {
            single = !single;
        }
        may_break[i] = !single && !escaped && c != '\'';
    }
    let mut out = String::new();
    let mut start = 0;
    let mut prefix = first.to_string();
    loop {
        // Room for text and the trailing `\`, at least 16 chars.
        let cap = width.saturating_sub(len(&prefix) + 1).max(16);
        if chars.len() - start <= cap + 1 {
            out.push_str(&prefix);
            out.extend(&chars[start..]);
            out.push('\n');
            return out;
        }
        let window = start..start + cap;
        let pick = |good: &dyn Fn(char) -> bool| {
            window
                .clone()
                .rev()
                .find(|&i| may_break[i] && good(chars[i]) && i + 1 < chars.len())
        };
        let end = pick(&|c| c == ' ')
            .filter(|&i| i + 1 - start >= cap / 3)
            .or_else(|| pick(&|c| c == '/'))
            .or_else(|| pick(&|_| true))
            // No break allowed in the line (a long quoted word): break at
            // the first place after it that allows one.
            .or_else(|| (start + cap..chars.len() - 1).find(|&i| may_break[i]));
        let Some(end) = end else {
            out.push_str(&prefix);
            out.extend(&chars[start..]);
            out.push('\n');
            return out;
        };
        out.push_str(&prefix);
        out.extend(&chars[start..=end]);
        out.push_str("\\\n");
        start = end + 1;
        prefix.clear();
    }
}

// ---------------------------------------------------------------------------
// Columns that give way.

/// How a column gets narrower when the table does not fit.
#[derive(Clone, Copy, PartialEq)]
enum Give {
    /// It does not.
    Not,
    /// Cells are cut, ending in `…`, down to this many chars.
    Cut(usize),
    /// Cells lose their middle, replaced by `…` (paths), down to this many
    /// chars.
    CutMiddle(usize),
    /// Cells wrap onto more lines, down to this many chars.
    Wrap(usize),
}

/// One column: a header and cells per form (widest first), alignment and
/// how it gives way.
/// Widest of `cells` and `header`, in display columns.
fn widest(header: &str, cells: &[String]) -> usize {
    cells
        .iter()
        .map(|c| len(c))
        .chain(std::iter::once(len(header)))
        .max()
        .unwrap_or(0)
}

struct Col {
    forms: Vec<(String, Vec<String>)>,
    /// Widest cell or header of each form, measured once (a huge session's
    /// `inspect` has hundreds of thousands of cells per column).
    naturals: Vec<usize>,
    form: usize,
    right: bool,
    give: Give,
    /// Width after a [`Step::Shrink`].
    limit: Option<usize>,
    dropped: bool,
}

impl Col {
    /// A left-aligned column that does not give way.
    fn new(header: &str, cells: Vec<String>) -> Col {
        Col {
            naturals: vec![widest(header, &cells)],
            forms: vec![(header.to_string(), cells)],
            form: 0,
            right: false,
            give: Give::Not,
            limit: None,
            dropped: false,
        }
    }

    /// The same column right-aligned (numbers).
    fn right(mut self) -> Col {
        self.right = true;
        self
    }

    /// The same column giving way as `give`.
    fn give(mut self, give: Give) -> Col {
        self.give = give;
        self
    }

    /// The same column with a narrower form (tried by [`Step::Next`]).
    fn or(mut self, header: &str, cells: Vec<String>) -> Col {
        self.naturals.push(widest(header, &cells));
        self.forms.push((header.to_string(), cells));
        self
    }

    fn header(&self) -> &str {
        &self.forms[self.form].0
    }

    fn cells(&self) -> &[String] {
        &self.forms[self.form].1
    }

    /// Widest cell or header of the current form.
    fn natural(&self) -> usize {
        self.naturals.get(self.form).copied().unwrap_or(0)
    }

    fn width(&self) -> usize {
        let n = self.natural();
        self.limit.map_or(n, |l| l.min(n))
    }
}

/// One way a table gets narrower, naming a column by its index.
#[derive(Clone, Copy)]
enum Step {
    /// Use the column's next narrower form.
    Next(usize),
    /// Cut or wrap the column as narrow as needed, down to its minimum.
    Shrink(usize),
    /// Leave the column out.
    Drop(usize),
}

/// Width of the shown columns with the gaps between them.
fn total(cols: &[Col]) -> usize {
    let shown: Vec<usize> = cols.iter().filter(|c| !c.dropped).map(Col::width).collect();
    shown.iter().sum::<usize>() + GAP * shown.len().saturating_sub(1)
}

/// Takes `steps` in order until the columns fit `width`, then gives the
/// room left back to the shrunk columns still shown, in the order they were
/// shrunk.
fn fit(cols: &mut [Col], steps: &[Step], width: Option<usize>) {
    let Some(width) = width else { return };
    let mut shrunk = Vec::new();
    for step in steps {
        let t = total(cols);
        if t <= width {
            break;
        }
        match *step {
            Step::Next(i) => {
                if cols[i].form + 1 < cols[i].forms.len() {
                    cols[i].form += 1;
                }
            }
            Step::Shrink(i) => {
                let c = &mut cols[i];
                let min = match c.give {
                    Give::Not => continue,
                    Give::Cut(m) | Give::CutMiddle(m) | Give::Wrap(m) => m.max(len(c.header())),
                };
                let now = c.width();
                let to = now.saturating_sub(t - width).max(min);
                if to < now {
                    c.limit = Some(to);
                    shrunk.push(i);
                }
            }
            Step::Drop(i) => cols[i].dropped = true,
        }
    }
    for i in shrunk {
        let slack = width.saturating_sub(total(cols));
        if cols[i].dropped || slack == 0 {
            continue;
        }
        let c = &mut cols[i];
        c.limit = Some((c.width() + slack).min(c.natural()));
    }
}

impl TableExporter {
    /// The columns as a table fitted to the width by `steps` (see [`fit`]);
    /// `total_row`: the last row is a total, ruled off from the others.
    /// `paint(col, row)` colours a cell. Lines end without spaces.
    fn grid(
        &self,
        cols: Vec<Col>,
        steps: &[Step],
        total_row: bool,
        paint: &dyn Fn(usize, usize) -> Option<Color>,
    ) -> String {
        self.grid_with(cols, steps, total_row, paint, false)
    }

    /// Writes to `out` the table of `rows` (a session's messages) that
    /// [`TableExporter::grid`] lays out from `build` of all of them at
    /// once, made `chunk` rows at a time: the widest cell of every form of
    /// every column, and the least width of an id column (`Give::Wrap`),
    /// are measured over every chunk first; then each chunk is built again
    /// and rendered with those widths, every column fixed to its fitted
    /// width, the header only above the first. Chunks are made on every
    /// core of the current rayon pool, two per core at a time, and written
    /// in order. What is held at once is those chunks' cells and text, not
    /// the cells of every message (the 1 GB opencode session of benches/,
    /// 197,400 messages, held 1.1 GB at its peak as one table). Errors:
    /// `out`'s.
    fn grid_chunked(
        &self,
        rows: &MessageRows,
        chunk: usize,
        build: &(dyn Fn(&[MessageRow]) -> Vec<Col> + Sync),
        steps: &[Step],
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        let none = &|_: usize, _: usize| None;
        let (n, chunk) = (rows.len(), chunk.max(1));
        if n <= chunk {
            let ms: Vec<MessageRow> = rows.iter().collect();
            return out.write_all(self.grid(build(&ms), steps, false, none).as_bytes());
        }
        let ranges: Vec<std::ops::Range<usize>> = (0..n)
            .step_by(chunk)
            .map(|a| a..a.saturating_add(chunk).min(n))
            .collect();
        let cols_of = |r: &std::ops::Range<usize>| {
            let ms: Vec<MessageRow> = rows.range(r.clone()).collect();
            build(&ms)
        };
        // Widths first: per chunk, then the widest of all.
        let measured: Vec<(Vec<Vec<usize>>, Vec<Give>)> = ranges
            .par_iter()
            .map(|r| {
                let cols = cols_of(r);
                (
                    cols.iter().map(|c| c.naturals.clone()).collect(),
                    cols.iter().map(|c| c.give).collect(),
                )
            })
            .collect();
        let mut all = measured.into_iter();
        let (mut naturals, mut gives) = all.next().unwrap_or_default();
        for (ns, gs) in all {
            for (a, b) in naturals.iter_mut().zip(ns) {
                for (x, y) in a.iter_mut().zip(b) {
                    *x = (*x).max(y);
                }
            }
            for (a, b) in gives.iter_mut().zip(gs) {
                if let (Give::Wrap(x), Give::Wrap(y)) = (a, b) {
                    *x = (*x).max(y);
                }
            }
        }
        // Then the rows, a few chunks per core at a time, written in order.
        let ranges: Vec<(usize, std::ops::Range<usize>)> = ranges.into_iter().enumerate().collect();
        for batch in ranges.chunks(rayon::current_num_threads().saturating_mul(2).max(1)) {
            let parts: Vec<String> = batch
                .par_iter()
                .map(|(k, r)| {
                    let mut cols = cols_of(r);
                    for ((c, ns), g) in cols.iter_mut().zip(&naturals).zip(&gives) {
                        c.naturals.clone_from(ns);
                        c.give = *g;
                    }
                    let part = self.grid_with(cols, steps, false, none, true);
                    // Every chunk's table starts with the header and its rule.
                    match k {
                        0 => part,
                        _ => part.splitn(3, '\n').nth(2).unwrap_or("").to_string(),
                    }
                })
                .collect();
            for p in parts {
                out.write_all(p.as_bytes())?;
            }
        }
        Ok(())
    }

    /// [`TableExporter::grid`]; `fixed`: every column is exactly its fitted
    /// width, however wide its cells here are (a chunk of a longer table).
    fn grid_with(
        &self,
        mut cols: Vec<Col>,
        steps: &[Step],
        total_row: bool,
        paint: &dyn Fn(usize, usize) -> Option<Color>,
        fixed: bool,
    ) -> String {
        fit(&mut cols, steps, self.width);
        let rows = cols.first().map_or(0, |c| c.cells().len());
        let shown: Vec<(usize, &Col)> = cols
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.dropped)
            .collect();
        let mut t = Table::new();
        t.load_preset(NOTHING)
            .set_style(TableComponent::HeaderLines, '─')
            .set_style(TableComponent::MiddleHeaderIntersections, '─')
            .set_content_arrangement(ContentArrangement::Disabled);
        if self.color {
            t.enforce_styling();
        } else {
            t.force_no_tty();
        }
        t.set_header(shown.iter().map(|(_, c)| {
            let h = Cell::new(c.header());
            if self.color {
                h.add_attribute(Attribute::Bold)
            } else {
                h
            }
        }));
        for r in 0..rows {
            t.add_row(shown.iter().map(|&(i, c)| {
                let text = c.cells().get(r).map_or("", String::as_str);
                let text = match c.give {
                    Give::Cut(_) => cut_end(text, c.width()),
                    Give::CutMiddle(_) => cut_middle(text, c.width()),
                    _ => text.to_string(),
                };
                let cell = Cell::new(text);
                match paint(i, r).filter(|_| self.color) {
                    Some(color) => cell.fg(color),
                    None => cell,
                }
            }));
        }
        let last = shown.len().saturating_sub(1);
        for (k, (_, c)) in shown.iter().enumerate() {
            let Some(col) = t.column_mut(k) else { continue };
            // A gap is the right padding plus the (blank) column separator.
            let pad = if k < last { GAP as u16 - 1 } else { 0 };
            col.set_padding((0, pad));
            if c.right {
                col.set_cell_alignment(CellAlignment::Right);
            }
            if fixed || (matches!(c.give, Give::Wrap(_)) && c.limit.is_some()) {
                let w = u16::try_from(c.width()).unwrap_or(u16::MAX);
                col.set_constraint(ColumnConstraint::Absolute(Width::Fixed(
                    w.saturating_add(pad),
                )));
            }
        }
        let mut lines: Vec<String> = t.trim_fmt().lines().map(str::to_string).collect();
        if total_row && rows > 1 && lines.len() > 2 {
            let rule = lines[1].clone();
            lines.insert(lines.len() - 1, rule);
        }
        let mut out = lines.join("\n");
        out.push('\n');
        out
    }
}

impl TableExporter {
    /// [`Exporter::inspect`], the message table rendered `chunk` rows at a
    /// time ([`TableExporter::grid_chunked`]).
    fn inspect_in_chunks(&self, sessions: &[InspectSession], chunk: usize) -> String {
        let mut v = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.inspect_to(sessions, chunk, &mut v);
        String::from_utf8_lossy(&v).into_owned()
    }

    /// [`TableExporter::inspect_in_chunks`] written to `out` as it is made.
    /// Errors: `out`'s.
    fn inspect_to(
        &self,
        sessions: &[InspectSession],
        chunk: usize,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        for s in sessions {
            out.write_all(
                self.wrap(
                    "",
                    "  ",
                    &format!(
                        "{} session {} ({}): {} messages, {} visible to the model",
                        s.agent,
                        s.id,
                        s.source,
                        thousands(s.messages.len() as u64),
                        thousands(s.visible_messages as u64)
                    ),
                )
                .as_bytes(),
            )?;
            if let Some(line) = metadata_sentence(&s.metadata_lines, thousands) {
                out.write_all(self.wrap("", "  ", &line).as_bytes())?;
            }
            let uniq = unique_prefixes(s.messages.ids());
            // A table needs every row at once (column widths): a session of
            // more than `chunk` messages is laid out from the widths of
            // every row, then rendered `chunk` rows at a time.
            let build = |ms: &[MessageRow]| -> Vec<Col> {
                let short_ids = column(ms, |m| clean(&short_id(&m.id, &uniq, 8)));
                let parent = |m: &MessageRow| m.parent_id.clone().unwrap_or_else(|| "-".into());
                let kinds = |m: &MessageRow| {
                    let mut kinds: Vec<(&str, usize)> = Vec::new();
                    for p in &m.parts {
                        match kinds.iter_mut().find(|(k, _)| *k == p.kind) {
                            Some((_, n)) => *n += 1,
                            None => kinds.push((&p.kind, 1)),
                        }
                    }
                    kinds
                        .iter()
                        .map(|(k, n)| {
                            if *n > 1 {
                                format!("{k}x{n}")
                            } else {
                                k.to_string()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let media = |m: &MessageRow, f: fn(u64) -> String| {
                    if m.media_count == 0 {
                        "-".to_string()
                    } else {
                        format!("{} ({})", f(m.media_bytes), m.media_count)
                    }
                };
                vec![
                    Col::new("#", column(ms, |m| m.index.to_string())).right(),
                    Col::new("message", column(ms, |m| clean(&m.id)))
                        .or("message", short_ids.clone())
                        .give(Give::Wrap(id_min(&short_ids, 20, 10))),
                    Col::new("role", column(ms, |m| clean(&m.role))).give(Give::Cut(5)),
                    Col::new("parent", column(ms, |m| clean(&parent(m))))
                        .or(
                            "parent",
                            column(ms, |m| clean(&short_id(&parent(m), &uniq, 8))),
                        )
                        .give(Give::Wrap(10)),
                    Col::new("created (UTC)", column(ms, |m| timestamp(m.time_created)))
                        .or("created (UTC)", column(ms, |m| time_to(m.time_created, 19)))
                        .or("created", column(ms, |m| time_to(m.time_created, 16)))
                        .or("created", column(ms, |m| month_day_time(m.time_created))),
                    Col::new("stored B", column(ms, |m| thousands(m.payload_bytes)))
                        .right()
                        .or("stored", column(ms, |m| human_bytes(m.payload_bytes))),
                    Col::new("media B (n)", column(ms, |m| media(m, thousands)))
                        .right()
                        .or("media", column(ms, |m| media(m, human_bytes))),
                    Col::new("est tok", column(ms, |m| thousands(m.tokens_estimated))).right(),
                    Col::new(
                        "in/out/reas/cr/cw",
                        column(ms, |m| {
                            let u = &m.tokens_reported;
                            format!(
                                "{}/{}/{}/{}/{}",
                                thousands(u.input),
                                thousands(u.output),
                                thousands(u.reasoning),
                                thousands(u.cache_read),
                                thousands(u.cache_write)
                            )
                        }),
                    )
                    .right()
                    .or(
                        "rep tok",
                        column(ms, |m| thousands(tokens(&m.tokens_reported))),
                    ),
                    Col::new("parts", column(ms, |m| clean(&kinds(m)))).give(Give::Cut(8)),
                    Col::new("flags", column(ms, |m| m.flags.join(" "))).give(Give::Wrap(9)),
                ]
            };
            let steps = [
                Step::Next(4),
                Step::Next(8),
                Step::Shrink(9),
                Step::Next(1),
                Step::Next(3),
                Step::Next(5),
                Step::Next(6),
                Step::Next(4),
                Step::Drop(3),
                Step::Drop(9),
                Step::Drop(6),
                Step::Drop(8),
                Step::Next(4),
                Step::Shrink(10),
                Step::Shrink(2),
                Step::Shrink(1),
                Step::Drop(7),
                Step::Drop(4),
            ];
            self.grid_chunked(&s.messages, chunk, &build, &steps, out)?;
            if let Some(top) = &s.top_parts {
                let ids = unique_prefixes(top.iter().map(|p| p.id.as_str()));
                let cols = vec![
                    Col::new("part", column(top, |p| clean(&p.id)))
                        .or("part", column(top, |p| clean(&short_id(&p.id, &ids, 8))))
                        .give(Give::Wrap(10)),
                    Col::new("message", column(top, |p| clean(&p.message_id)))
                        .or(
                            "message",
                            column(top, |p| clean(&short_id(&p.message_id, &uniq, 8))),
                        )
                        .give(Give::Wrap(10)),
                    Col::new("kind", column(top, |p| clean(&p.kind))).give(Give::Cut(6)),
                    Col::new("stored B", column(top, |p| thousands(p.payload_bytes)))
                        .right()
                        .or("stored", column(top, |p| human_bytes(p.payload_bytes))),
                    Col::new("media B", column(top, |p| thousands(p.media_bytes)))
                        .right()
                        .or("media", column(top, |p| human_bytes(p.media_bytes))),
                    Col::new("est tok", column(top, |p| thousands(p.tokens_estimated))).right(),
                    Col::new(
                        "tool",
                        column(top, |p| clean(p.tool.as_deref().unwrap_or(""))),
                    )
                    .give(Give::Cut(6)),
                ];
                let steps = [
                    Step::Next(0),
                    Step::Next(1),
                    Step::Next(3),
                    Step::Next(4),
                    Step::Shrink(6),
                    Step::Shrink(0),
                    Step::Shrink(1),
                    Step::Drop(6),
                ];
                out.write_all(b"largest parts:\n")?;
                out.write_all(self.grid(cols, &steps, false, &|_, _| None).as_bytes())?;
            }
        }
        Ok(())
    }
}

/// Messages of an `inspect` table rendered at a time
/// ([`TableExporter::grid_chunked`]).
const INSPECT_CHUNK: usize = 4096;

/// `1 session`, `2 sessions`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        thousands(n as u64),
        if n == 1 { one } else { many }
    )
}

/// Tokens of a usage as ccusage totals them: input + output + cache read +
/// cache write (reasoning is left out: Codex and Claude count it in output).
fn tokens(u: &Usage) -> u64 {
    u.input
        .saturating_add(u.output)
        .saturating_add(u.cache_read)
        .saturating_add(u.cache_write)
}

/// `E/W/I` counts.
fn ewi(c: &SeverityCounts) -> String {
    format!("{}/{}/{}", c.error, c.warning, c.info)
}

/// The colour of a findings cell: its worst severity.
fn ewi_color(c: &SeverityCounts) -> Option<Color> {
    if c.error > 0 {
        Some(Color::Red)
    } else if c.warning > 0 {
        Some(Color::Yellow)
    } else {
        None
    }
}

/// Sum over `rows` of `f`, saturating.
fn sum<T>(rows: &[T], f: impl Fn(&T) -> u64) -> u64 {
    rows.iter().fold(0, |a, r| a.saturating_add(f(r)))
}

/// Cells of a column: `f` of every row, then the total row's cell.
fn cells<T>(rows: &[T], f: impl Fn(&T) -> String, total: impl Into<String>) -> Vec<String> {
    rows.iter()
        .map(f)
        .chain(std::iter::once(total.into()))
        .collect()
}

/// Cells of a column without a total row.
fn column<T>(rows: &[T], f: impl Fn(&T) -> String) -> Vec<String> {
    rows.iter().map(f).collect()
}

/// The least width a column of shortened ids needs so that the ids of
/// `short` up to `cap` chars stay on one line (longer ones wrap), at least
/// `floor`.
fn id_min(short: &[String], cap: usize, floor: usize) -> usize {
    short
        .iter()
        .map(|s| len(s))
        .filter(|&l| l <= cap)
        .max()
        .unwrap_or(0)
        .max(floor)
}

/// "next:" lines under a written copy: how to make the agent load it.
/// Commands are shown as `$ command` (wrapped so that they still run when
/// copied, see [`wrap_command`]) with a trailing `# comment` on its own line
/// above; sentences (`or, ...`, `put ...`, `run ...`) are wrapped as prose.
fn next_steps(steps: &[String], width: Option<usize>) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::from("  next:\n");
    for s in steps {
        if s.starts_with("or, ") || s.starts_with("put ") || s.starts_with("run ") {
            out.push_str(&wrap(s, width, "    ", "      "));
            continue;
        }
        let (cmd, comment) = match s.split_once("   # ") {
            Some((c, m)) => (c.trim_end(), Some(m)),
            None => (s.as_str(), None),
        };
        if let Some(m) = comment {
            out.push_str(&wrap(m, width, "    # ", "    # "));
        }
        out.push_str(&wrap_command(cmd, width, "    $ "));
    }
    out
}

impl TableExporter {
    /// The session column of `list`: short ids, wrapping when needed.
    fn list_narrow(&self, rows: &[ListRow]) -> String {
        let uniq = unique_prefixes(rows.iter().map(|r| r.id.as_str()));
        let n = rows.len();
        let c = &rows.iter().fold(SeverityCounts::default(), |mut a, r| {
            a.error += r.findings.error;
            a.warning += r.findings.warning;
            a.info += r.findings.info;
            a
        });
        let label = plural(n, "session", "sessions");
        let ids = cells(rows, |r| short_id(&r.id, &uniq, 8), label.clone());
        let id_min = id_min(&ids, 20, len(&label));
        let cols = vec![
            Col::new("agent", cells(rows, |r| r.agent.to_string(), "total")).or(
                "agent",
                cells(rows, |r| short_agent(r.agent).to_string(), "total"),
            ),
            Col::new("session", cells(rows, |r| r.id.clone(), label.clone()))
                .or("session", ids)
                .give(Give::Wrap(id_min)),
            Col::new(
                "last (UTC)",
                cells(
                    rows,
                    |r| r.last_activity.map_or("-".into(), |t| time_to(t, 10)),
                    "",
                ),
            ),
            Col::new(
                "model",
                cells(
                    rows,
                    |r| {
                        r.model
                            .as_deref()
                            .map_or("-".into(), |m| clean(&short_model(m)))
                    },
                    "",
                ),
            )
            .give(Give::Cut(8)),
            Col::new(
                "msgs",
                cells(
                    rows,
                    |r| thousands(r.messages as u64),
                    thousands(sum(rows, |r| r.messages as u64)),
                ),
            )
            .right(),
            Col::new(
                "tokens",
                cells(
                    rows,
                    |r| thousands(tokens(&r.tokens_total)),
                    thousands(sum(rows, |r| tokens(&r.tokens_total))),
                ),
            )
            .right(),
            Col::new(
                "payload",
                cells(
                    rows,
                    |r| human_bytes(r.payload_bytes),
                    human_bytes(sum(rows, |r| r.payload_bytes)),
                ),
            )
            .right(),
            Col::new("E/W/I", cells(rows, |r| ewi(&r.findings), ewi(c))).right(),
        ];
        let steps = [
            Step::Next(1),
            Step::Next(0),
            Step::Shrink(1),
            Step::Shrink(3),
            Step::Drop(3),
            Step::Drop(4),
            Step::Drop(2),
            Step::Drop(0),
            Step::Drop(5),
        ];
        self.grid(cols, &steps, true, &|col, row| {
            (col == 7)
                .then(|| {
                    rows.get(row)
                        .map_or(ewi_color(c), |r| ewi_color(&r.findings))
                })
                .flatten()
        })
    }

    /// `list` with every figure.
    fn list_wide(&self, rows: &[ListRow]) -> String {
        let uniq = unique_prefixes(rows.iter().map(|r| r.id.as_str()));
        let n = rows.len();
        let c = &rows.iter().fold(SeverityCounts::default(), |mut a, r| {
            a.error += r.findings.error;
            a.warning += r.findings.warning;
            a.info += r.findings.info;
            a
        });
        let label = plural(n, "session", "sessions");
        let short = cells(rows, |r| short_id(&r.id, &uniq, 8), label.clone());
        let id_min = id_min(&short, 20, len(&label));
        let num = |header: &str, f: &dyn Fn(&ListRow) -> u64| {
            Col::new(
                header,
                cells(rows, |r| thousands(f(r)), thousands(sum(rows, f))),
            )
            .right()
        };
        let cols = vec![
            Col::new("agent", cells(rows, |r| r.agent.to_string(), "total")),
            Col::new("session", cells(rows, |r| r.id.clone(), label.clone()))
                .or("session", short)
                .give(Give::Wrap(id_min)),
            Col::new(
                "title",
                cells(rows, |r| clean(r.title.as_deref().unwrap_or("")), ""),
            )
            .give(Give::Cut(16)),
            Col::new(
                "last (UTC)",
                cells(
                    rows,
                    |r| r.last_activity.map_or("-".into(), |t| time_to(t, 16)),
                    "",
                ),
            ),
            Col::new(
                "model",
                cells(rows, |r| clean(r.model.as_deref().unwrap_or("-")), ""),
            )
            .or(
                "model",
                cells(
                    rows,
                    |r| {
                        r.model
                            .as_deref()
                            .map_or("-".into(), |m| clean(&short_model(m)))
                    },
                    "",
                ),
            )
            .give(Give::Cut(10)),
            num("msgs", &|r| r.messages as u64),
            num("parts", &|r| r.parts as u64),
            num("stored B", &|r| r.payload_bytes),
            num("media B", &|r| r.media_bytes),
            {
                let col = num("compactions", &|r| r.compactions as u64);
                let cells = col.cells().to_vec();
                col.or("cmp", cells)
            },
            Col::new("context tok", cells(rows, |r| opt(r.context_tokens), ""))
                .right()
                .or("ctx tok", cells(rows, |r| opt(r.context_tokens), "")),
            num("input", &|r| r.tokens_total.input),
            num("output", &|r| r.tokens_total.output),
            {
                let col = num("reasoning", &|r| r.tokens_total.reasoning);
                let cells = col.cells().to_vec();
                col.or("reas", cells)
            },
            {
                let col = num("cache read", &|r| r.tokens_total.cache_read);
                let cells = col.cells().to_vec();
                col.or("c.read", cells)
            },
            {
                let col = num("cache write", &|r| r.tokens_total.cache_write);
                let cells = col.cells().to_vec();
                col.or("c.write", cells)
            },
            Col::new("E/W/I", cells(rows, |r| ewi(&r.findings), ewi(c))).right(),
            Col::new("source", cells(rows, |r| clean(&r.source), "")).give(Give::CutMiddle(24)),
        ];
        let steps = [
            Step::Shrink(2),
            Step::Shrink(17),
            Step::Next(4),
            Step::Next(9),
            Step::Next(10),
            Step::Next(13),
            Step::Next(14),
            Step::Next(15),
            Step::Drop(2),
            Step::Drop(17),
            Step::Next(1),
            Step::Shrink(1),
            Step::Shrink(4),
            Step::Drop(6),
            Step::Drop(8),
            Step::Drop(13),
            Step::Drop(10),
        ];
        self.grid(cols, &steps, true, &|col, row| {
            (col == 16)
                .then(|| {
                    rows.get(row)
                        .map_or(ewi_color(c), |r| ewi_color(&r.findings))
                })
                .flatten()
        })
    }
}

impl Exporter for TableExporter {
    fn list(&self, rows: &[ListRow], _problems: &Problems) -> String {
        if rows.is_empty() {
            return "0 sessions\n".into();
        }
        let narrow = self.width.is_some_and(|w| w < WIDE_LIST);
        let mut out = if narrow {
            self.list_narrow(rows)
        } else {
            self.list_wide(rows)
        };
        out.push_str(&self.wrap(
            "",
            "",
            if narrow {
                "E/W/I: error/warning/info findings; tokens: input+output+cache; kB: 1,000 bytes"
            } else {
                "E/W/I: error/warning/info findings; stored B: bytes stored for messages and parts"
            },
        ));
        // Notes take lines: a narrow list of many sessions only counts them.
        let noted = rows.iter().filter(|r| !r.notes.is_empty()).count();
        if narrow && rows.len() > NOTES_UP_TO && noted > 0 {
            out.push_str(&self.wrap(
                "note: ",
                "  ",
                &format!(
                    "{} about stored figures: `list --session ID`, a wider terminal or --format json shows them",
                    plural(noted, "session has notes", "sessions have notes")
                ),
            ));
            return out;
        }
        let uniq = unique_prefixes(rows.iter().map(|r| r.id.as_str()));
        for r in rows {
            let id = if narrow {
                short_id(&r.id, &uniq, 8)
            } else {
                r.id.clone()
            };
            for n in &r.notes {
                out.push_str(&self.wrap(&format!("note: {id}: "), "  ", n));
            }
        }
        out
    }

    fn inspect(&self, sessions: &[InspectSession], _problems: &Problems) -> String {
        self.inspect_in_chunks(sessions, INSPECT_CHUNK)
    }

    /// Written as it is made: a huge session's table is never one string.
    fn write_inspect(
        &self,
        sessions: &[InspectSession],
        _problems: &Problems,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        self.inspect_to(sessions, INSPECT_CHUNK, out)
    }

    fn check(&self, sessions: &[CheckSession], _problems: &Problems) -> String {
        let w = self.width;
        let uniq = unique_prefixes(sessions.iter().map(|s| s.id.as_str()));
        let mut all: Vec<(&CheckSession, &Finding)> = sessions
            .iter()
            .flat_map(|s| s.findings.iter().map(move |f| (s, f)))
            .collect();
        // Errors first, then warnings, then info; otherwise as reported.
        all.sort_by_key(|(_, f)| std::cmp::Reverse(f.severity));
        let mut out = String::new();
        for (s, f) in &all {
            let sev = f.severity.as_str();
            let title = format!("{sev}[{}]: ", f.code.as_str());
            let block = wrap(&f.detail, w, &title, "  ");
            // Colour the `severity[code]` that starts the block.
            let tag = format!("{sev}[{}]", f.code.as_str());
            match block.strip_prefix(&tag) {
                Some(rest) => {
                    out.push_str(&self.paint(f.severity, &tag));
                    out.push_str(rest);
                }
                None => out.push_str(&block),
            }
            let l = &f.location;
            let mut file = clean(l.file.as_deref().unwrap_or(&s.source));
            if let Some(line) = l.line {
                file.push_str(&format!(":{line}"));
            }
            let mut parts = vec![
                file,
                format!("{} session {}", s.agent, short_id(&s.id, &uniq, 8)),
            ];
            if let Some(row) = &l.row {
                parts.push(clean(row));
            } else if let Some(m) = &l.message_id {
                parts.push(format!("message {}", clean(m)));
            }
            out.push_str(&line_of_parts(&parts, w, "  --> ", "      "));
            // What is wrong and what to do, then the command that does it
            // (JSON keeps both too): the command alone does not say why,
            // nor what it leaves for a person to do.
            out.push_str(&wrap(&f.remedy, w, "   = help: ", "           "));
            if let Some(cmd) = &f.remedy_command {
                out.push_str(&wrap_command(cmd, w, "   = fix: "));
            }
            out.push('\n');
        }
        // Summary: one line per severity with its codes, most frequent first.
        for sev in [Severity::Error, Severity::Warning, Severity::Info] {
            let mut codes: Vec<(&str, usize)> = Vec::new();
            for (_, f) in all.iter().filter(|(_, f)| f.severity == sev) {
                match codes.iter_mut().find(|(c, _)| *c == f.code.as_str()) {
                    Some((_, n)) => *n += 1,
                    None => codes.push((f.code.as_str(), 1)),
                }
            }
            if codes.is_empty() {
                continue;
            }
            codes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let n: usize = codes.iter().map(|(_, n)| n).sum();
            let word = match sev {
                Severity::Error => plural(n, "error", "errors"),
                Severity::Warning => plural(n, "warning", "warnings"),
                Severity::Info => plural(n, "info", "info"),
            };
            let list = codes
                .iter()
                .map(|(c, n)| format!("{c} ({n})"))
                .collect::<Vec<_>>()
                .join(", ");
            let line = wrap(&list, w, &format!("{word}: "), "  ");
            match line.strip_prefix(&word) {
                Some(rest) => {
                    out.push_str(&self.paint(sev, &word));
                    out.push_str(rest);
                }
                None => out.push_str(&line),
            }
        }
        let with = sessions.iter().filter(|s| !s.findings.is_empty()).count();
        out.push_str(&self.wrap(
            "",
            "  ",
            &match (sessions.len(), with) {
                (0, _) => "no session checked".to_string(),
                // One session: name it, so a healthy answer says which.
                (1, 0) => format!(
                    "1 session checked: {} session {} ({}) is healthy",
                    sessions[0].agent, sessions[0].id, sessions[0].source
                ),
                (n, 0) => format!("{} checked: all healthy", plural(n, "session", "sessions")),
                (n, k) => format!(
                    "{} checked: {} with findings, {} healthy",
                    plural(n, "session", "sessions"),
                    thousands(k as u64),
                    thousands((n - k) as u64)
                ),
            },
        ));
        let unknown = sessions
            .iter()
            .filter(|s| s.budget_unknown.is_some())
            .count();
        if unknown > 0 {
            out.push_str(&self.wrap(
                "note: ",
                "  ",
                &format!(
                    "over-budget not checked for {}: model limits unknown; pass --context and --max-output, or --model provider/model with --models-json",
                    plural(unknown, "session", "sessions")
                ),
            ));
        }
        let noted = sessions.iter().filter(|s| !s.notes.is_empty()).count();
        if noted > 0 {
            out.push_str(&self.wrap(
                "note: ",
                "  ",
                &format!(
                    "{} about stored figures: `session-doctor list` shows them (and --format json)",
                    plural(noted, "session has notes", "sessions have notes"),
                ),
            ));
        }
        out
    }

    fn compact(&self, r: &CompactReport, _problems: &Problems) -> String {
        let mut out = String::new();
        let budget = match &r.budget {
            Some(b) => format!(
                "budget: {} (context {}, max output {}{}; from {}): usable {} tokens, the agent compacts at {}",
                b.limits.model.as_deref().unwrap_or("model"),
                thousands(b.limits.context),
                thousands(b.limits.max_output),
                b.limits
                    .input
                    .map(|i| format!(", input {}", thousands(i)))
                    .unwrap_or_default(),
                b.limits.source,
                thousands(b.usable),
                thousands(b.agent_threshold)
            ),
            None => format!(
                "budget: no model limits ({}); sizing by request bytes only",
                r.budget_unknown.as_deref().unwrap_or("unknown")
            ),
        };
        out.push_str(&self.wrap("", "  ", &budget));
        // A copy whose history compact changed calibrates on its first
        // turn: its overhead may differ from the original's.
        let last = r.steps.last().map_or(&r.before, |s| &s.after);
        let after = if last.overhead_tokens == r.overhead_tokens {
            String::new()
        } else {
            format!(
                " ({} after the last step: the copy's counts were reported on the history compact changed, so it calibrates on its first turn)",
                thousands(last.overhead_tokens)
            )
        };
        out.push_str(&self.wrap(
            "",
            "  ",
            &format!(
                "request limit {} bytes with {} bytes headroom; usable {} tokens; agent overhead {} tokens{after}",
                thousands(r.max_request_bytes),
                thousands(r.headroom_bytes),
                thousands(r.usable_tokens),
                thousands(r.overhead_tokens)
            ),
        ));
        let mut figs: Vec<(&str, &crate::treat::compact::Figures)> = vec![("before", &r.before)];
        figs.extend(r.steps.iter().map(|s| (s.step, &s.after)));
        type Fig<'a> = (&'a str, &'a crate::treat::compact::Figures);
        let num = |header: &str, f: &dyn Fn(&Fig) -> u64| {
            Col::new(header, column(&figs, |x| thousands(f(x)))).right()
        };
        let bytes = |header: &str, short: &str, f: &dyn Fn(&Fig) -> u64| {
            Col::new(header, column(&figs, |x| thousands(f(x))))
                .right()
                .or(short, column(&figs, |x| human_bytes(f(x))))
        };
        let cols = vec![
            Col::new("step", column(&figs, |x| x.0.to_string())).give(Give::Wrap(8)),
            num("est tok", &|x| x.1.tokens_estimated),
            {
                let c = num("next-turn tok", &|x| x.1.tokens_next_turn);
                let cells = c.cells().to_vec();
                c.or("next tok", cells)
            },
            Col::new("reported tok", column(&figs, |x| opt(x.1.tokens_reported)))
                .right()
                .or("rep tok", column(&figs, |x| opt(x.1.tokens_reported))),
            bytes("stored B", "stored", &|x| x.1.payload_bytes),
            bytes("request B", "request", &|x| x.1.request_bytes),
            bytes("media B", "media", &|x| x.1.media_bytes),
            num("msgs", &|x| x.1.messages as u64),
            num("visible", &|x| x.1.visible_messages as u64),
            {
                let c = num("parts changed", &|x| x.1.parts_changed as u64);
                let cells = c.cells().to_vec();
                c.or("changed", cells)
            },
            Col::new(
                "fits",
                column(&figs, |x| if x.1.fits { "yes" } else { "no" }.to_string()),
            ),
        ];
        let steps = [
            Step::Next(2),
            Step::Next(3),
            Step::Next(9),
            Step::Next(4),
            Step::Next(5),
            Step::Next(6),
            Step::Drop(6),
            Step::Drop(1),
            Step::Drop(8),
            Step::Drop(4),
            Step::Shrink(0),
            Step::Drop(3),
        ];
        out.push_str(&self.grid(cols, &steps, false, &|col, row| {
            (col == 10)
                .then(|| {
                    figs.get(row)
                        .map(|x| if x.1.fits { Color::Green } else { Color::Red })
                })
                .flatten()
        }));
        if !r.changes.is_empty() {
            out.push_str(&format!(
                "{}:\n",
                plural(crate::edit::edits_of(&r.changes), "change", "changes")
            ));
            out.push_str(&self.changes(&r.changes, false));
        }
        if let Some(why) = &r.unreachable {
            out.push_str(&self.wrap("", "  ", &format!("NOT REACHABLE: {why}; no copy written")));
        } else if r.written {
            out.push_str(&self.wrap("", "  ", &format!("wrote {} from {}", r.dest, r.source)));
            out.push_str(&next_steps(&r.next_steps, self.width));
        } else if r.dry_run {
            out.push_str(&self.wrap(
                "",
                "  ",
                &format!("dry run: would write {} from {}", r.dest, r.source),
            ));
        } else if r.nothing_to_change {
            out.push_str(&self.wrap(
                "",
                "  ",
                "nothing to change: the session fits and no finding asks for a change; no copy written",
            ));
        } else {
            out.push_str("no copy written\n");
        }
        out
    }

    fn compact_batch(
        &self,
        _dry_run: bool,
        sessions: &[CompactReport],
        copies: &[CopyRow],
        problems: &Problems,
    ) -> String {
        let mut out = String::new();
        if sessions.is_empty() {
            // With errors (on stderr), no session may have been read: no
            // claim about sessions then.
            if problems.errors.is_empty() {
                out.push_str("no session has a finding compact fixes: nothing to do\n");
            }
            return out;
        }
        let uniq = unique_prefixes(sessions.iter().map(|r| r.session_id.as_str()));
        let last = |r: &CompactReport| r.steps.last().map_or(&r.before, |s| &s.after).clone();
        let copy = |r: &CompactReport| {
            if r.written {
                clean(&r.dest)
            } else if r.unreachable.is_some() {
                "not written: the budget is not reachable".into()
            } else if r.nothing_to_change {
                "nothing to change".into()
            } else if r.dry_run {
                format!("dry run: {}", clean(&r.dest))
            } else {
                "not written".into()
            }
        };
        let arrow = |a: String, b: String| format!("{a} → {b}");
        let cols = vec![
            Col::new("session", column(sessions, |r| clean(&r.session_id)))
                .or(
                    "session",
                    column(sessions, |r| clean(&short_id(&r.session_id, &uniq, 8))),
                )
                .give(Give::Wrap(10)),
            Col::new(
                "steps",
                column(sessions, |r| {
                    if r.steps.is_empty() {
                        "-".into()
                    } else {
                        r.steps
                            .iter()
                            .map(|s| s.step)
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                }),
            )
            .give(Give::Wrap(10)),
            Col::new(
                "next-turn tok",
                column(sessions, |r| {
                    arrow(
                        thousands(r.before.tokens_next_turn),
                        thousands(last(r).tokens_next_turn),
                    )
                }),
            )
            .right()
            .or(
                "tokens",
                column(sessions, |r| {
                    arrow(
                        thousands(r.before.tokens_next_turn),
                        thousands(last(r).tokens_next_turn),
                    )
                }),
            ),
            Col::new(
                "request B",
                column(sessions, |r| {
                    arrow(
                        thousands(r.before.request_bytes),
                        thousands(last(r).request_bytes),
                    )
                }),
            )
            .right()
            .or(
                "request",
                column(sessions, |r| {
                    arrow(
                        human_bytes(r.before.request_bytes),
                        human_bytes(last(r).request_bytes),
                    )
                }),
            ),
            Col::new(
                "fits",
                column(sessions, |r| if r.fits { "yes" } else { "no" }.to_string()),
            ),
            Col::new("copy", column(sessions, copy)).give(Give::Wrap(16)),
        ];
        let steps = [
            Step::Next(0),
            Step::Next(2),
            Step::Next(3),
            Step::Shrink(5),
            Step::Shrink(1),
            Step::Shrink(0),
        ];
        out.push_str(&self.grid(cols, &steps, false, &|col, row| {
            (col == 4)
                .then(|| {
                    sessions
                        .get(row)
                        .map(|r| if r.fits { Color::Green } else { Color::Red })
                })
                .flatten()
        }));
        for c in copies {
            out.push_str(&self.copy_line(c));
        }
        out
    }

    fn repair(&self, r: &RepairReport, problems: &Problems) -> String {
        let mut out = String::new();
        if r.changes.is_empty() {
            // No copy and errors (on stderr): no store was read whole, so
            // nothing is claimed about its findings.
            if problems.errors.is_empty() || !r.copies.is_empty() {
                out.push_str("no repairable findings\n");
            }
        } else {
            out.push_str(&self.changes(&r.changes, true));
        }
        for c in &r.copies {
            out.push_str(&self.copy_line(c));
        }
        out
    }
}

impl TableExporter {
    /// A table of stored changes (`with_session`: a session column first):
    /// the first [`MAX_CHANGE_ROWS`], then a line saying
    /// how many more there are (a cut of a huge session drops hundreds of
    /// thousands of lines; `--format json` lists every one).
    fn changes(&self, all: &[crate::edit::StoredChange], with_session: bool) -> String {
        let changes = &all[..all.len().min(MAX_CHANGE_ROWS)];
        let mut out = self.changes_grid(changes, with_session);
        if all.len() > changes.len() {
            out.push_str(&self.wrap(
                "  ",
                "    ",
                &format!(
                    "... and {} more not shown (--format json lists every change)",
                    thousands((all.len() - changes.len()) as u64)
                ),
            ));
        }
        out
    }

    fn changes_grid(&self, changes: &[crate::edit::StoredChange], with_session: bool) -> String {
        let ids = unique_prefixes(
            changes
                .iter()
                .flat_map(|c| [&*c.session_id, c.message_id.as_str()]),
        );
        let mut cols = Vec::new();
        if with_session {
            cols.push(
                Col::new("session", column(changes, |c| clean(&c.session_id)))
                    .or(
                        "session",
                        column(changes, |c| clean(&short_id(&c.session_id, &ids, 8))),
                    )
                    .give(Give::Wrap(10)),
            );
        }
        let o = cols.len();
        cols.push(
            Col::new("message", column(changes, |c| clean(&c.message_id)))
                .or(
                    "message",
                    column(changes, |c| clean(&short_id(&c.message_id, &ids, 8))),
                )
                .give(Give::Wrap(10)),
        );
        if !with_session {
            cols.push(
                Col::new(
                    "part",
                    column(changes, |c| clean(c.part_id.as_deref().unwrap_or("-"))),
                )
                .give(Give::Wrap(10)),
            );
        }
        let field = cols.len();
        cols.push(Col::new("field", column(changes, |c| clean(&c.field))).give(Give::Wrap(8)));
        let old = cols.len();
        cols.push(Col::new("old", column(changes, |c| short(&c.old))).give(Give::Wrap(12)));
        cols.push(Col::new("new", column(changes, |c| short(&c.new))).give(Give::Wrap(12)));
        let mut steps = vec![Step::Shrink(old), Step::Shrink(old + 1)];
        if with_session {
            steps.push(Step::Next(0));
        }
        steps.extend([Step::Next(o), Step::Shrink(o)]);
        if !with_session {
            steps.push(Step::Shrink(o + 1));
        }
        steps.push(Step::Shrink(field));
        if with_session {
            steps.push(Step::Shrink(0));
        }
        self.grid(cols, &steps, false, &|_, _| None)
    }

    /// `wrote DEST (N changes) from SOURCE`, the reason when it was not
    /// written, and the next steps under it.
    /// The reason of a copy not written is the run's error (stderr), not
    /// repeated here: each error is reported once.
    fn copy_line(&self, c: &CopyRow) -> String {
        let (verb, tail) = match (c.written, &c.error) {
            (true, _) => ("wrote", ""),
            (false, None) => ("would write", ""),
            (false, Some(_)) => ("did not write", " (the error says why)"),
        };
        let mut out = self.wrap(
            "",
            "  ",
            &format!(
                "{verb} {} ({}) from {}{tail}",
                c.dest,
                plural(c.changes, "change", "changes"),
                c.source
            ),
        );
        out.push_str(&next_steps(&c.next_steps, self.width));
        out
    }
}

/// The sentence that gives an inspected session's stored lines that hold
/// no message, by kind (`fmt` writes the counts); `None` when it records
/// none.
pub(crate) fn metadata_sentence(
    kinds: &[crate::model::MetaKindCount],
    fmt: fn(u64) -> String,
) -> Option<String> {
    if kinds.is_empty() {
        return None;
    }
    let lines: u64 = kinds.iter().map(|k| k.lines).sum();
    let bytes: u64 = kinds.iter().map(|k| k.bytes).sum();
    Some(format!(
        "{} stored lines hold no message ({} bytes; the agent never sends them): {}",
        fmt(lines),
        fmt(bytes),
        kinds
            .iter()
            .map(|k| format!("{} {} ({} B)", k.kind, fmt(k.lines), fmt(k.bytes)))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::StoredChange;

    /// A session of `n` messages whose cells differ in width from row to
    /// row (ids, parents, sizes, usage, part kinds, media), so that a
    /// chunk's widest cell is not every chunk's.
    fn varied_session(n: usize) -> crate::model::Session {
        use crate::model::{Agent, Message, Part, PartKind, Role, Session, Usage};
        let mut s = Session::new(Agent::ClaudeCode, "s", None, "x.jsonl".into());
        for i in 0..n {
            let role = if i % 3 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            let mut m = Message::new(format!("m{i}{}", "x".repeat(i * 7 % 23)), role);
            if i > 0 {
                m.set_parent_id(Some(format!("m{}", i - 1).into()));
            }
            m.set_time_created(1_700_000_000_000 + (i as i64) * 61_001);
            m.set_info_bytes((i as u64 * 7919).pow(2) % 10_000_019);
            if i % 4 == 1 {
                m.set_usage(Usage {
                    input: (i as u64).pow(3),
                    output: i as u64 * 13,
                    ..Default::default()
                });
            }
            for k in 0..(i % 4) {
                let kind = if k % 2 == 0 {
                    PartKind::Text
                } else {
                    PartKind::Tool
                };
                let mut p = Part::empty(
                    format!("p{i}.{k}"),
                    kind,
                    if k % 2 == 0 { "text" } else { "tool" },
                );
                p.set_payload_bytes((i * 31 + k) as u64 * 1_000);
                p.set_model_chars((i * 17) as u64);
                m.parts.push(p);
            }
            s.messages.push(m);
        }
        s.visible = (0..n).filter(|i| i % 5 != 0).collect();
        s
    }

    /// The message table of `inspect` made 7 (or 1, or 50) rows at a time
    /// is the table made at once, byte for byte, at every width the layout
    /// gives way at.
    #[test]
    fn an_inspect_table_made_in_chunks_is_the_table_made_at_once() {
        let s = || {
            vec![super::super::rows::inspect_session(
                varied_session(60),
                Some(3),
            )]
        };
        for width in [None, Some(60), Some(90), Some(120), Some(160), Some(400)] {
            let t = TableExporter::new(false, width);
            let whole = t.inspect_in_chunks(&s(), usize::MAX);
            assert!(whole.lines().count() > 60, "{whole}");
            for chunk in [1, 7, 50] {
                assert_eq!(
                    t.inspect_in_chunks(&s(), chunk),
                    whole,
                    "width {width:?}, chunk {chunk}"
                );
            }
        }
    }

    fn change(i: usize) -> StoredChange {
        StoredChange {
            session_id: "s1".into(),
            message_id: format!("L{i}").into(),
            part_id: None,
            field: "line".into(),
            old: serde_json::json!(format!("line {i}: user input_text (10 bytes)")),
            new: serde_json::Value::Null,
            run: None,
            figures: None,
        }
    }

    /// A cut of a huge session: the table shows the first rows and says how
    /// many more there are; a short list is shown whole.
    #[test]
    fn a_long_changes_table_shows_its_first_rows_and_counts_the_rest() {
        let t = TableExporter::new(false, Some(120));
        let long: Vec<StoredChange> = (1..=MAX_CHANGE_ROWS + 1234).map(change).collect();
        let text = t.changes(&long, false);
        assert!(text.contains(&format!("L{MAX_CHANGE_ROWS} ")), "{text}");
        assert!(!text.contains(&format!("L{} ", MAX_CHANGE_ROWS + 1)));
        assert!(
            text.contains("... and 1,234 more not shown (--format json lists every change)"),
            "{text}"
        );
        let short: Vec<StoredChange> = (1..=3).map(change).collect();
        let text = t.changes(&short, true);
        assert!(
            text.contains("L3 ") && !text.contains("more not shown"),
            "{text}"
        );
    }
}
