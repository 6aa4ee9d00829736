//! The neutral edit vocabulary: what a treatment asks to change in a copy,
//! in the model's terms ([`Edit`], [`Change`]), and how a change looks in
//! storage once a format describes it ([`StoredChange`]). Treatments produce
//! edits; only the format module that owns a session applies them. Nothing
//! here knows a storage format.

/// A change to make in a copy of a store. Treatments produce these; only the
/// format module that owns the session knows how to write them.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// Shared by every edit of a session (a cut of a huge session is
    /// millions of edits): one pointer, not a copy.
    pub session_id: crate::model::Sym,
    /// The message's id, shared with it (an [`crate::model::Id`]).
    pub message_id: crate::model::Id,
    pub change: Change,
}

/// A run of consecutive messages [`Change::DropThrough`] drops, from the
/// edit's message through `last`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropRun {
    /// The run's last message.
    pub last: crate::model::Id,
    /// Messages in the run, both ends included.
    pub messages: usize,
    /// The message stored just before the run, which stays (`None`: the run
    /// starts the session).
    pub prev: Option<crate::model::Id>,
    /// The message stored just after the run, which stays (`None`: the run
    /// ends the session).
    pub next: Option<crate::model::Id>,
}

/// Which text of a part a truncation applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The output of a completed tool call.
    ToolOutput,
    /// The string values of a tool call's input.
    ToolInput,
    /// The text of a text or reasoning part.
    Text,
}

/// What an [`Edit`] changes, in the model's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Point the message's parent at another message.
    SetParent {
        old: Option<Box<str>>,
        new: crate::model::Id,
    },
    /// Remove the message's parent: it becomes a root (breaks a parent cycle
    /// where no earlier message can be its parent).
    ClearParent { old: String },
    /// Replace the inline media of a part by `placeholder` text (one line per
    /// media item). The part keeps its id; its type only changes where the
    /// agent's schema has no room for text (a file part becomes a text part).
    StripMedia {
        part_id: crate::model::Id,
        placeholder: Box<str>,
    },
    /// Keep the first and last `max_chars / 2` characters of a text field,
    /// with a marker saying how many characters were removed in between.
    Truncate {
        part_id: crate::model::Id,
        field: TextField,
        max_chars: usize,
    },
    /// Remove the message and its parts from the copy. For a line-oriented
    /// store the message id may also name a load problem (a torn last line).
    DropMessage,
    /// Remove the message, every message after it through the run's last
    /// (in stored order), and whatever the store holds that is no message
    /// from just after the message before the run to just before the
    /// message after it ([`DropRun`]; Codex: metadata lines, blank and
    /// unreadable lines, not its header lines). One edit for a run of
    /// dropped messages: a history cut of a huge session drops millions,
    /// and one edit per message (64 bytes each) was 147 MiB of a cut of the
    /// 1 GB rollout of benches/. Only formats that say so apply it
    /// ([`Applier::drops_through`]); the others get [`Change::DropMessage`]s.
    DropThrough(Box<DropRun>),
    /// Remove every later stored copy of the message id, keeping the first
    /// (an agent that re-wrote lines with the same id).
    DropCopies,
    /// Add a synthetic text part with `text` at the start of the message (the
    /// format chooses the new part's id).
    AddNote { text: String },
    /// Point the message's compaction at another first kept entry of the
    /// agent's item list (docker-agent `first_kept_entry`).
    SetFirstKept { old: i64, new: i64 },
    /// Make the agent's view start at this message without removing stored
    /// history: the format records a compaction before it whose summary is
    /// `note` (docker-agent: a summary item whose `first_kept_entry` is this
    /// message, appended as the agent appends its own).
    CutBefore { note: String },
    /// A change to the session itself rather than to one of its messages
    /// (the edit's `message_id` is the session id). Only formats that store
    /// sessions as rows of their own apply these (hermes-agent); every
    /// other format refuses them.
    Session(SessionChange),
}

/// What a [`Change::Session`] changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    /// Clear the state of a session closed by a compaction that has no
    /// continuation (hermes-agent: `ended_at` and `end_reason` cleared, as
    /// its own `reopen_session` does; a stale compression lock removed).
    Reopen,
    /// Remove a session that holds no message (an empty continuation) from
    /// the copy, with its usage rows.
    DropEmpty,
    /// Make the session a root: its stored parent `old` names no session.
    ClearParent { old: String },
}

impl Change {
    /// Short name for reports (`set-parent`, `strip-media`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Change::SetParent { .. } => "set-parent",
            Change::ClearParent { .. } => "clear-parent",
            Change::StripMedia { .. } => "strip-media",
            Change::Truncate { .. } => "truncate",
            Change::DropMessage => "drop-message",
            Change::DropThrough(_) => "drop-through",
            Change::DropCopies => "drop-copies",
            Change::AddNote { .. } => "add-note",
            Change::SetFirstKept { .. } => "set-first-kept",
            Change::CutBefore { .. } => "cut-before",
            Change::Session(SessionChange::Reopen) => "reopen-session",
            Change::Session(SessionChange::DropEmpty) => "drop-empty-session",
            Change::Session(SessionChange::ClearParent { .. }) => "clear-session-parent",
        }
    }

    /// The part the change touches, if it touches one.
    pub fn part_id(&self) -> Option<&str> {
        match self {
            Change::StripMedia { part_id, .. } | Change::Truncate { part_id, .. } => Some(part_id),
            _ => None,
        }
    }
}

/// The marker a truncation leaves in the text.
pub fn truncation_marker(removed_chars: usize) -> String {
    format!("[... {removed_chars} characters removed by session-doctor compact ...]")
}

/// Keeps the first and last `max_chars / 2` characters of `text` with a
/// [`truncation_marker`] between them; `None` when `text` already fits.
pub fn truncate_middle(text: &str, max_chars: usize) -> Option<String> {
    let n = text.chars().count();
    if n <= max_chars {
        return None;
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let removed = n - head - tail;
    // Byte offsets of the kept head's end and the kept tail's start (both
    // on character boundaries): the text is copied in two slices, not
    // character by character.
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = match tail.checked_sub(1) {
        Some(k) => text.char_indices().nth_back(k).map_or(0, |(i, _)| i),
        None => text.len(),
    };
    let marker = truncation_marker(removed);
    let mut out = String::with_capacity(head_end + 2 + marker.len() + text.len() - tail_start);
    out.push_str(text.get(..head_end).unwrap_or_default());
    out.push('\n');
    out.push_str(&marker);
    out.push('\n');
    out.push_str(text.get(tail_start..).unwrap_or_default());
    Some(out)
}

/// [`truncate_middle`] on every string inside `v` (tool inputs, structured outputs).
pub fn truncate_strings(v: &mut serde_json::Value, max_chars: usize) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Some(t) = truncate_middle(s, max_chars) {
                *s = t;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| truncate_strings(x, max_chars)),
        Value::Object(o) => o.values_mut().for_each(|x| truncate_strings(x, max_chars)),
        _ => {}
    }
}

/// A change as it is stored: the stored field name with old and new values.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredChange {
    /// The edit's (shared, not copied).
    pub session_id: crate::model::Sym,
    pub message_id: crate::model::Id,
    /// The part changed, for part-level changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_id: Option<String>,
    /// Where in the stored record the change is (a JSON path or a column);
    /// a fixed name is not copied for each change.
    pub field: std::borrow::Cow<'static, str>,
    pub old: serde_json::Value,
    pub new: serde_json::Value,
    /// Set when this one change stands for a run of consecutive stored lines
    /// dropped together ([`LineRun`]); `message_id` is then the run's first
    /// message. Boxed: most changes are not runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<Box<LineRun>>,
    /// The figures `old` and `new` state, as fields ([`ChangeFigures`]);
    /// `None` for a change that states none. Boxed: few changes have them
    /// beside a cut's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Box<ChangeFigures>>,
}

/// The figures a [`StoredChange`]'s `old` and `new` describe (JSON
/// `figures`): each set where the change states it, from the same numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChangeFigures {
    /// Strip-media: inline media items replaced, and their bytes as stored
    /// (base64 text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_items: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_bytes: Option<u64>,
    /// Truncate: characters of the field before, and at most how many it
    /// keeps (head and tail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<u64>,
    /// A stored line (1-based) the change drops or keeps, in line stores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Bytes of what is dropped (a line, or an item of one), as stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Parts (content blocks) of a dropped message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<u64>,
    /// Drop-copies: later copies of the line dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copies: Option<u64>,
    /// Drop-through: messages of the run (the lines of its
    /// [`LineRun`] also count those that hold no message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
}

impl ChangeFigures {
    /// Strip-media figures of `part` (its inline media).
    pub fn media(part: Option<&crate::model::Part>) -> ChangeFigures {
        let media = part.map_or(&[][..], |p| p.media());
        ChangeFigures {
            media_items: Some(media.len() as u64),
            media_bytes: Some(media.iter().map(|m| m.encoded_bytes).sum()),
            ..Default::default()
        }
    }

    /// Truncate figures: `chars` before, `max_chars` kept at most.
    pub fn truncate(chars: u64, max_chars: usize) -> ChangeFigures {
        ChangeFigures {
            chars: Some(chars),
            max_chars: Some(max_chars as u64),
            ..Default::default()
        }
    }

    /// Boxed, or `None` when no figure is set.
    pub fn boxed(self) -> Option<Box<ChangeFigures>> {
        (self != ChangeFigures::default()).then(|| Box::new(self))
    }
}

impl StoredChange {
    /// How many edits this change stands for: the messages of a dropped
    /// run ([`ChangeFigures::messages`]), else the lines of its run, else 1.
    pub fn edits(&self) -> usize {
        if let Some(n) = self.figures.as_ref().and_then(|f| f.messages) {
            return n as usize;
        }
        self.run.as_ref().map_or(1, |r| r.lines as usize)
    }
}

/// How many edits `edits` stand for: a [`Change::DropThrough`] counts the
/// messages it drops, any other edit 1 (what a plan's step reports as its
/// edits, the same for a format that drops a run with one edit and one
/// that drops it message by message).
pub fn edit_count(edits: &[Edit]) -> usize {
    edits
        .iter()
        .map(|e| match &e.change {
            Change::DropThrough(r) => r.messages,
            _ => 1,
        })
        .sum()
}

/// How many edits `changes` stand for ([`StoredChange::edits`]): what reports
/// count as changes, so that a run of dropped lines counts its lines and the
/// count is the one a copy's row gives.
pub fn edits_of(changes: &[StoredChange]) -> usize {
    changes.iter().map(StoredChange::edits).sum()
}

/// Consecutive whole lines of one file dropped together, described as one
/// [`StoredChange`]: a history cut of a huge rollout drops millions of lines,
/// and one change per line made the change list (held until the report is
/// written) larger than the session itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LineRun {
    /// Id of the run's last message (its first is the change's `message_id`).
    pub last_message_id: crate::model::Id,
    /// First and last line numbers of the run (1-based, inclusive).
    pub first_line: u64,
    pub last_line: u64,
    /// Lines in the run (`last_line - first_line + 1`).
    pub lines: u64,
    /// Bytes of those lines, newlines included.
    pub bytes: u64,
}

/// Groups `edits` (in order) into what [`StoredChange`]s describe: a single
/// edit, or a run of two or more [`Change::DropMessage`] edits of messages
/// that each fill a whole stored line of their own (`whole_line` gives that
/// line, given the edit's index and the edit), the lines consecutive in one
/// file. `emit` gets the index of each single edit with `None`, of each
/// run's first edit with the run, in the edits' order.
pub fn describe_runs(
    edits: &[Edit],
    whole_line: impl Fn(usize, &Edit) -> Option<crate::model::LineRef>,
    mut emit: impl FnMut(usize, Option<LineRun>),
) {
    /// A run being gathered: its first edit, its last line, its figures.
    type Pending = Option<(usize, crate::model::LineRef, LineRun)>;
    let flush =
        |pending: &mut Pending, end: usize, emit: &mut dyn FnMut(usize, Option<LineRun>)| {
            if let Some((first, _, mut run)) = pending.take() {
                if run.lines == 1 {
                    emit(first, None);
                } else {
                    run.last_message_id = edits[end - 1].message_id.clone();
                    emit(first, Some(run));
                }
            }
        };
    let mut pending: Pending = None;
    for (i, e) in edits.iter().enumerate() {
        let line = match e.change {
            Change::DropMessage => whole_line(i, e),
            _ => None,
        };
        let Some(l) = line else {
            flush(&mut pending, i, &mut emit);
            emit(i, None);
            continue;
        };
        match &mut pending {
            Some((_, last, run))
                if last.file == l.file && last.line.checked_add(1) == Some(l.line) =>
            {
                *last = l;
                run.last_line = l.number();
                run.lines += 1;
                run.bytes = run.bytes.saturating_add(l.bytes);
            }
            _ => {
                flush(&mut pending, i, &mut emit);
                pending = Some((
                    i,
                    l,
                    LineRun {
                        last_message_id: crate::model::Id::new(),
                        first_line: l.number(),
                        last_line: l.number(),
                        lines: 1,
                        bytes: l.bytes,
                    },
                ));
            }
        }
    }
    flush(&mut pending, edits.len(), &mut emit);
}

/// What a treatment needs from the format that owns a session: the session
/// as it would be with some edits applied (to measure a plan before any
/// copy is written).
pub trait Applier {
    /// `session` with `edits` applied, every figure recomputed as the copy
    /// will hold it.
    fn apply(
        &self,
        session: &crate::model::Session,
        edits: &[Edit],
    ) -> anyhow::Result<crate::model::Session>;
    /// [`Applier::apply`] on a session the caller gives up: a format that
    /// edits in place saves a copy of the whole session (compact's plan
    /// applies each step to its own working copy). By default, `apply`.
    fn apply_owned(
        &self,
        session: crate::model::Session,
        edits: &[Edit],
    ) -> anyhow::Result<crate::model::Session> {
        self.apply(&session, edits)
    }
    /// [`Applier::apply_owned`] on a session that already has the `earlier`
    /// edits (a plan's previous steps, in order): a format that keeps
    /// figures, not edited text, re-applies a part's earlier edits when it
    /// edits that part again. By default, `apply_owned`.
    fn apply_after(
        &self,
        session: crate::model::Session,
        earlier: &[Edit],
        edits: &[Edit],
    ) -> anyhow::Result<crate::model::Session> {
        let _ = earlier;
        self.apply_owned(session, edits)
    }
    /// Whether `compact` always strips historical media and drops the
    /// history the agent no longer sends, even when the session fits: true
    /// where the agent re-reads the whole store on resume (Codex replays
    /// every rollout line).
    fn replays_everything(&self) -> bool {
        false
    }
    /// Whether the format applies [`Change::DropThrough`]: then a cut drops
    /// each run of consecutive messages with one edit, and what the store
    /// holds between them that is no message goes with them. By default
    /// `false`: one [`Change::DropMessage`] per message.
    fn drops_through(&self) -> bool {
        false
    }
    /// Whether `compact` cuts history by recording a compaction the agent
    /// honours ([`Change::CutBefore`] on the first kept message) rather than
    /// dropping messages: true where the agent indexes its history and never
    /// resends what its last compaction left out (docker-agent).
    fn cuts_with_summary(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LineRef;

    fn drop(id: &str) -> Edit {
        Edit {
            session_id: "s".into(),
            message_id: id.into(),
            change: Change::DropMessage,
        }
    }

    /// What [`describe_runs`] emits for `edits` whose messages sit on the
    /// lines `lines` gives (id -> (file, line)): `id` for a single edit,
    /// `first..last (lines, bytes)` for a run.
    fn runs(edits: &[Edit], lines: &[(&str, u32, u32)]) -> Vec<String> {
        let mut out = Vec::new();
        describe_runs(
            edits,
            |_, e| {
                lines
                    .iter()
                    .find(|(id, ..)| *id == e.message_id)
                    .map(|&(_, file, line)| LineRef {
                        file,
                        line: std::num::NonZeroU32::new(line).expect("lines count from 1"),
                        offset: 0,
                        bytes: u64::from(line) * 100,
                    })
            },
            |i, run| {
                let e = &edits[i];
                out.push(match run {
                    None => e.message_id.to_string(),
                    Some(r) => {
                        assert_eq!(r.lines, r.last_line - r.first_line + 1);
                        format!(
                            "{}..{} ({}, {})",
                            e.message_id, r.last_message_id, r.lines, r.bytes
                        )
                    }
                })
            },
        );
        out
    }

    /// The head and tail kept by [`truncate_middle`] are its first and last
    /// characters, multi-byte ones included, for even, odd, zero and one
    /// character budgets; a text that fits is left alone.
    #[test]
    fn truncate_middle_keeps_the_first_and_last_characters() {
        let by_chars = |t: &str, max: usize| {
            let n = t.chars().count();
            let (head, tail) = (max / 2, max - max / 2);
            let kept: String = t.chars().take(head).collect();
            let end: String = t.chars().skip(n - tail).collect();
            format!("{kept}\n{}\n{end}", truncation_marker(n - head - tail))
        };
        for t in ["abcdefghij", "é€😀aé€😀bé€😀", "😀😀😀😀😀", "a\nb\nc\nd"]
        {
            let n = t.chars().count();
            for max in 0..n {
                assert_eq!(truncate_middle(t, max), Some(by_chars(t, max)), "{t} {max}");
            }
            assert_eq!(truncate_middle(t, n), None);
            assert_eq!(truncate_middle(t, n + 3), None);
        }
        assert_eq!(
            truncate_middle("é€😀aé", 2).as_deref(),
            Some("é\n[... 3 characters removed by session-doctor compact ...]\né")
        );
    }

    /// A cut of a huge session is one edit per dropped message (2.4 million
    /// for the 1 GB Codex rollout of benches/): an edit's size is memory.
    #[test]
    fn edits_stay_small() {
        let edit = std::mem::size_of::<Edit>();
        assert!(edit <= 64, "Edit is {edit} bytes");
    }

    #[test]
    fn consecutive_whole_lines_dropped_together_are_one_run() {
        let lines = [
            ("a", 0, 1),
            ("b", 0, 2),
            ("c", 0, 3),
            ("d", 0, 5),
            ("e", 1, 6),
            ("f", 1, 7),
            ("g", 1, 8),
        ];
        let mut edits: Vec<Edit> = ["a", "b", "c", "d", "e", "f"].map(drop).to_vec();
        // A gap (4), another file (e), then a change that is not a drop.
        edits.push(Edit {
            change: Change::AddNote { text: "n".into() },
            ..drop("g")
        });
        edits.push(drop("g"));
        edits.push(drop("no-line"));
        assert_eq!(
            runs(&edits, &lines),
            ["a..c (3, 600)", "d", "e..f (2, 1300)", "g", "g", "no-line"]
        );
        // A single line is described as before; nothing is lost at the end.
        assert_eq!(runs(&[drop("d")], &lines), ["d"]);
        assert_eq!(runs(&[drop("b"), drop("c")], &lines), ["b..c (2, 500)"]);
        assert!(runs(&[], &lines).is_empty());
        // Out of order: no run.
        assert_eq!(runs(&[drop("b"), drop("a")], &lines), ["b", "a"]);
    }
}
