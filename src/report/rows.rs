//! Report rows built from a loaded session: the small figures each command
//! keeps once the session itself is dropped.

use super::*;
use crate::diagnose::Options;
use crate::model::{Message, Part, Role, Session};

/// `list`: the row of one session.
pub fn list_row(s: &Session, findings: &[Finding]) -> ListRow {
    ListRow {
        agent: s.agent.name(),
        id: s.id.clone(),
        title: s.title.clone(),
        source: s.source.display().to_string(),
        last_activity: last_activity(s),
        model: model(s),
        messages: s.messages.len(),
        metadata_lines: s.meta_lines.len(),
        parts: s.part_count(),
        payload_bytes: s.payload_bytes(),
        media_bytes: s.media_bytes(),
        compactions: s.compactions(),
        context_tokens: s.context_tokens(),
        tokens_total: s.tokens_total(),
        findings: SeverityCounts::of(findings),
        notes: s.notes.clone(),
        note_figures: s.note_figures.clone(),
        chain: s.lineage.as_deref().map(|l| ChainRow {
            root: l.root.clone(),
            position: l.position,
            length: l.length,
            tip: l.tip.clone(),
            resumes: l.resumes.clone(),
            parent: l.parent.clone(),
        }),
    }
}

/// Newest time stored on a message (created or completed, ms since the
/// Unix epoch), `None` for a session without messages.
fn last_activity(s: &Session) -> Option<i64> {
    s.messages
        .iter()
        .map(|m| {
            m.time_completed()
                .get()
                .map_or(m.time_created(), |t| t.max(m.time_created()))
        })
        .chain(s.meta_lines.newest_time())
        .max()
}

/// The model of the newest assistant of the main history that names one
/// (compaction summaries and sub-agents left out, as
/// [`Session::resume_model`] leaves them out), else the resume model.
fn model(s: &Session) -> Option<String> {
    s.messages
        .iter()
        .rev()
        .find(|m| {
            m.role() == Role::Assistant && !m.summary() && !m.sidechain() && m.model().is_some()
        })
        .and_then(|m| m.model())
        .or_else(|| s.resume_model())
        .map(str::to_string)
}

/// `check`: the findings of one session with the budget they were measured against.
pub fn check_session(s: &Session, findings: Vec<Finding>, options: &Options) -> CheckSession {
    CheckSession {
        agent: s.agent.name(),
        id: s.id.clone(),
        source: s.source.display().to_string(),
        budget: options.budget.as_ref().ok().cloned(),
        budget_unknown: options.budget.as_ref().err().cloned(),
        notes: s.notes.clone(),
        note_figures: s.note_figures.clone(),
        findings,
    }
}

/// `inspect`: one part of message `message_id`.
pub fn part_row(message_id: &str, p: &Part) -> PartRow {
    PartRow {
        id: p.id.clone(),
        message_id: message_id.to_string(),
        kind: p.kind_name.to_string(),
        payload_bytes: p.payload_bytes(),
        media_bytes: p.media().iter().map(|m| m.decoded_bytes).sum(),
        media_count: p.media().len(),
        tokens_estimated: crate::measure::estimate_tokens(p.model_chars()),
        synthetic: p.synthetic,
        tool: p.tool.as_ref().map(|t| t.name.to_string()),
        tool_status: p
            .tool
            .as_ref()
            .map(|t| format!("{:?}", t.status).to_lowercase()),
    }
}

/// Flags of message `m` (`visible`: whether the model sees it next turn).
fn flags(m: &Message, visible: bool) -> Vec<&'static str> {
    let mut f = Vec::new();
    if m.compaction().is_some() {
        f.push("compaction");
    }
    if m.summary() {
        f.push("summary");
    }
    if m.synthetic() {
        f.push("synthetic");
    }
    if m.error().is_some() {
        f.push("error");
    }
    if m.sidechain() {
        f.push("sidechain");
    }
    f.push(if visible { "visible" } else { "hidden" });
    f
}

/// The positions `(message index, part index)` of the `n` largest parts of
/// `s`, largest first: by payload bytes (descending), then part id, then
/// position (ascending), a total order, so the result is the first `n` of
/// the whole list sorted that way.
///
/// For `n` up to [`TOP_BY_INSERTION`], one pass over the parts in stored
/// order keeps the best `n` in a sorted list, and most parts are turned
/// away by one comparison of sizes with the `n`th; a larger `n` selects
/// from every position in linear time (`select_nth_unstable_by`) and sorts
/// only the `n`. Sorting every position instead cost `inspect --top 20` of
/// the 1 GB Codex rollout (1.17 million parts, each compared through two
/// lookups) 13% of its time, and grew faster than the session.
pub fn largest_parts(s: &Session, n: usize) -> Vec<(usize, usize)> {
    let part = |&(i, k): &(usize, usize)| &s.messages[i].parts[k];
    let order = |a: &(usize, usize), b: &(usize, usize)| {
        let (pa, pb) = (part(a), part(b));
        pb.payload_bytes()
            .cmp(&pa.payload_bytes())
            .then_with(|| pa.id.cmp(&pb.id))
            .then_with(|| a.cmp(b))
    };
    let positions = s
        .messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| (0..m.parts.len()).map(move |k| (i, k)));
    if n == 0 {
        return Vec::new();
    }
    if n <= TOP_BY_INSERTION {
        let mut best: Vec<(usize, usize)> = Vec::with_capacity(n + 1);
        for pos in positions {
            if best.len() == n && order(&pos, &best[n - 1]).is_gt() {
                continue;
            }
            let at = best.partition_point(|b| order(b, &pos).is_lt());
            best.insert(at, pos);
            best.truncate(n);
        }
        return best;
    }
    let mut all: Vec<(usize, usize)> = positions.collect();
    if n < all.len() {
        all.select_nth_unstable_by(n - 1, order);
        all.truncate(n);
    }
    all.sort_unstable_by(order);
    all
}

/// Largest `--top` kept by insertion into a sorted list
/// ([`largest_parts`]); above it, a selection over every position.
const TOP_BY_INSERTION: usize = 256;

/// `inspect`: the rows of every message, and the `top` largest parts. Keeps
/// the session: its message rows are made as they are written
/// ([`MessageRows`]), so no second copy of a huge session is held.
pub fn inspect_session(s: Session, top: Option<usize>) -> InspectSession {
    let visible = s.visible_mask();
    let metadata_lines = s.meta_lines.by_kind();
    let top_parts = top.map(|n| {
        largest_parts(&s, n)
            .into_iter()
            .map(|(i, k)| part_row(&s.messages[i].id, &s.messages[i].parts[k]))
            .collect()
    });
    InspectSession {
        agent: s.agent.name(),
        id: s.id.clone(),
        source: s.source.display().to_string(),
        visible_messages: s.visible.len(),
        messages: MessageRows {
            session: s,
            visible,
        },
        top_parts,
        metadata_lines,
    }
}

impl MessageRows {
    /// Number of messages (of rows).
    pub fn len(&self) -> usize {
        self.session.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.session.messages.is_empty()
    }

    /// The id of each message, in stored order (what [`MessageRow::id`] holds).
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.session.messages.iter().map(|m| m.id.as_str())
    }

    /// The row of each message, in stored order, made as it is asked for.
    pub fn iter(&self) -> impl Iterator<Item = MessageRow> + '_ {
        self.range(0..self.len())
    }

    /// The rows of the messages at `range` (indexes in stored order; a
    /// range past the end gives the rows up to it).
    pub fn range(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = MessageRow> + '_ {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let ms = self.session.messages.get(start..end).unwrap_or_default();
        ms.iter().enumerate().map(move |(k, m)| {
            let i = start + k;
            let visible = self.visible.get(i).copied().unwrap_or(false);
            MessageRow {
                index: i,
                id: m.id.clone(),
                role: m.role().as_str().to_string(),
                parent_id: m.parent_id().map(str::to_string),
                line: m.line().map(|l| l.number()),
                time_created: m.time_created(),
                payload_bytes: m.payload_bytes(),
                media_bytes: m.media_bytes(),
                media_count: m.media_count(),
                tokens_estimated: m.tokens_estimated(),
                tokens_reported: *m.usage(),
                parts: m.parts.iter().map(|p| part_row(&m.id, p)).collect(),
                flags: flags(m, visible),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, PartKind};

    /// The selected parts are the first `n` of every part sorted by (bytes
    /// descending, id), ties in stored order: the full stable sort they
    /// replace, on parts with many equal sizes and repeated ids.
    #[test]
    fn largest_parts_are_the_head_of_the_stable_sort() {
        let mut s = Session::new(Agent::ClaudeCode, "s", None, "x".into());
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for i in 0..300 {
            let mut m = Message::new(format!("m{i}"), Role::Assistant);
            for _ in 0..next() % 4 {
                let mut p = Part::empty(format!("p{}", next() % 25), PartKind::Text, "text");
                p.set_payload_bytes(next() % 6);
                m.parts.push(p);
            }
            s.messages.push(m);
        }
        let mut all: Vec<(usize, usize)> = s
            .messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| (0..m.parts.len()).map(move |k| (i, k)))
            .collect();
        let part = |&(i, k): &(usize, usize)| &s.messages[i].parts[k];
        all.sort_by(|a, b| {
            let (pa, pb) = (part(a), part(b));
            pb.payload_bytes()
                .cmp(&pa.payload_bytes())
                .then(pa.id.cmp(&pb.id))
        });
        assert!(all.len() > TOP_BY_INSERTION + 2, "{} parts", all.len());
        for n in (0..all.len() + 2).chain([TOP_BY_INSERTION, TOP_BY_INSERTION + 1]) {
            let want: Vec<_> = all.iter().copied().take(n).collect();
            assert_eq!(largest_parts(&s, n), want, "top {n}");
        }
    }
}
