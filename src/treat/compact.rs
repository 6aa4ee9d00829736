//! Compact: shrink one session offline, with no model call, until its next
//! turn fits the model budget and the request-size limit. Steps, in order,
//! stopping as soon as the session fits:
//! 1. `strip-media`: keep the newest media message's media; replace older
//!    inline media by a text placeholder naming mime, file, bytes and hash;
//! 2. `truncate-tool-output`: keep the newest completed tool outputs within the
//!    tool-output budget (20% of usable); cut older ones to head + tail, newest
//!    kept longest;
//! 3. `truncate-text`: cut oversized text, reasoning and tool-input parts
//!    (over the overflow budget, 5% of usable) to head + tail; the newest user
//!    message is never cut;
//! 4. `cut-history`: drop what the agent no longer sends (before the latest
//!    completed compaction summary, as its own view does), or with
//!    `keep_turns` everything before the last N user turns, with a note.
//!
//! For a store whose agent re-reads everything on resume
//! ([`Applier::replays_everything`]: Codex), steps 1 and 4 always run,
//! `keep_turns` included. For a store whose agent indexes its history
//! ([`Applier::cuts_with_summary`]: docker-agent), step 4 keeps everything
//! stored and, with `keep_turns`, records a compaction the agent honours.
//!
//! Treatments never write: each step returns edits, the format module applies
//! them to a model copy to measure, and to the store copy to write.

use crate::budget::Budget;
use crate::diagnose::media_before_newest;
use crate::edit::{Applier, Change, Edit, StoredChange, TextField};
use crate::measure::estimate_tokens;
use crate::model::{Id, ParentLinks, PartKind, Role, Session, Sym, ToolStatus};
use crate::sizing::{agent_overhead, next_turn};
use anyhow::Result;
use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;

/// What the compacted session must fit.
#[derive(Debug, Clone)]
pub struct Target {
    /// The model budget, when limits are known.
    pub budget: Option<Budget>,
    /// Largest request body (bytes).
    pub max_request_bytes: u64,
    /// Bytes kept for what the agent adds to each request.
    pub headroom_bytes: u64,
    /// Keep only the last N user turns (cut-history always runs when set).
    pub keep_turns: Option<usize>,
    /// What the session's findings ask for even when it already fits.
    pub goals: Goals,
}

/// What a session's findings ask `compact` to do whatever the budget (so
/// that the command a finding prints fixes it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Goals {
    /// `media-in-history`: strip historical media (hermes-agent's rule: only
    /// the newest media message keeps its media).
    pub strip_media: bool,
    /// `compaction-loop`: keep only what follows the latest summary ...
    pub cut_history: bool,
    /// ... and fewer turns until the next turn is under this many tokens
    /// (95% of the last trigger: the agent would compact again above it;
    /// also a live stored overflow of the context window).
    pub below_tokens: Option<u64>,
    /// A live stored failure of the request size: the next request's
    /// history must be under this many bytes (the one that failed).
    pub below_history_bytes: Option<u64>,
}

impl Goals {
    /// The goals of a session's findings: `media-in-history` strips media;
    /// `compaction-loop` cuts history below 95% of its last trigger.
    pub fn of(findings: &[crate::diagnose::Finding]) -> Goals {
        use crate::diagnose::{Code, Severity};
        let mut g = Goals::default();
        for f in findings.iter().filter(|f| f.severity >= Severity::Warning) {
            match f.code {
                Code::MediaInHistory => g.strip_media = true,
                Code::CompactionFailed | Code::OverflowError | Code::UnansweredTurns
                    if f.fix == crate::diagnose::Fix::Compact =>
                {
                    let by_tokens =
                        f.figures.get("judged_by").and_then(|v| v.as_str()) == Some("tokens");
                    let key = if by_tokens {
                        "failed_request_tokens"
                    } else {
                        "failed_request_bytes"
                    };
                    if let Some(n) = f
                        .figures
                        .get(key)
                        .and_then(|v| v.as_u64())
                        .filter(|&n| n > 0)
                    {
                        if by_tokens {
                            g.below_tokens = Some(g.below_tokens.map_or(n, |b| b.min(n)));
                        } else {
                            g.below_history_bytes =
                                Some(g.below_history_bytes.map_or(n, |b| b.min(n)));
                        }
                    }
                }
                Code::CompactionLoop => {
                    g.cut_history = true;
                    if let Some(below) = crate::diagnose::compaction_loop_goal(f) {
                        g.below_tokens = Some(g.below_tokens.map_or(below, |b| b.min(below)));
                    }
                }
                _ => {}
            }
        }
        g
    }
}

impl Target {
    /// Bytes the visible history may take on the wire.
    pub fn max_history_bytes(&self) -> u64 {
        self.max_request_bytes.saturating_sub(self.headroom_bytes)
    }

    /// Usable tokens: the model's, capped by what the byte limit allows
    /// (about 4 bytes per token).
    pub fn usable(&self) -> u64 {
        let by_bytes = self.max_history_bytes() / 4;
        self.budget
            .as_ref()
            .map_or(by_bytes, |b| b.usable.min(by_bytes))
    }

    /// Tokens of recent tool output kept whole: 20% of usable, floor 8000 clamped to usable.
    pub fn tool_output_budget(&self) -> u64 {
        let u = self.usable();
        self.budget
            .as_ref()
            .map_or((u / 5).max(crate::budget::TOOL_OUTPUT_FLOOR.min(u)), |b| {
                b.tool_output.min(u)
            })
    }

    /// Tokens one part may keep once cut: 5% of usable, floor 2000 clamped to usable.
    pub fn overflow_budget(&self) -> u64 {
        let u = self.usable();
        self.budget
            .as_ref()
            .map_or((u / 20).max(crate::budget::OVERFLOW_FLOOR.min(u)), |b| {
                b.overflow.min(u)
            })
    }
}

/// The figures of one state of the session.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Estimated tokens of the visible messages.
    pub tokens_estimated: u64,
    /// Tokens of the next turn: the estimate plus the agent's overhead, as
    /// `check` measures it on this state (on a copy whose history compact
    /// changed, calibrated on its first turn), at least the original's
    /// calibration ([`Plan::overhead_tokens`]).
    pub tokens_next_turn: u64,
    /// The agent's overhead in `tokens_next_turn`.
    pub overhead_tokens: u64,
    /// Last reported context tokens of the session as stored.
    pub tokens_reported: Option<u64>,
    /// Bytes stored for all messages and parts.
    pub payload_bytes: u64,
    /// Estimated request body of the next turn (visible history + headroom).
    pub request_bytes: u64,
    /// Decoded bytes of inline media in the whole session.
    pub media_bytes: u64,
    pub messages: usize,
    pub visible_messages: usize,
    /// Parts changed by this step (0 for the starting state).
    pub parts_changed: usize,
    pub fits: bool,
}

/// One applied step.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub step: &'static str,
    pub edits: usize,
    pub after: Figures,
}

/// The whole plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub before: Figures,
    pub steps: Vec<StepReport>,
    pub edits: Vec<Edit>,
    pub fits: bool,
    /// Why the budget is not reachable, when it is not.
    pub unreachable: Option<String>,
    /// The figures of [`Plan::unreachable`], when it is set.
    pub shortfall: Option<Shortfall>,
    pub usable_tokens: u64,
    /// The agent's overhead calibrated on the original ([`agent_overhead`]):
    /// the least any state of the plan is measured with.
    pub overhead_tokens: u64,
    /// How each edit looks in storage, in the order of `edits`, when the
    /// plan was given a [`Describe`] (empty otherwise).
    pub changes: Vec<StoredChange>,
}

/// How a format describes edits in storage ([`crate::formats::Copier::describe`]),
/// appended to the list given: `plan` calls it on each step's edits with the
/// session as that step found it, so the original need not be kept beside
/// the edited copy (and the list grows in place: a cut of a huge session
/// describes hundreds of thousands of lines).
pub type Describe<'a> = dyn Fn(&Session, &[Edit], &mut Vec<StoredChange>) + 'a;

/// Whether a next turn of `tokens` (overhead included) and `wire_bytes` of
/// visible history (headroom excluded) fits `t`: within the model's usable
/// tokens, under the `below_*` goals, and with the headroom within the
/// request limit.
fn fits_target(t: &Target, tokens: u64, wire_bytes: u64) -> bool {
    t.budget.as_ref().is_none_or(|b| tokens <= b.usable)
        && t.goals.below_tokens.is_none_or(|b| tokens < b)
        && t.goals.below_history_bytes.is_none_or(|b| wire_bytes < b)
        && wire_bytes.saturating_add(t.headroom_bytes) <= t.max_request_bytes
}

/// The figures of `s` (the original, or a state of the plan: the copy as
/// it would be written), its next turn measured as `check` measures it on
/// that session, with the agent's overhead at least `base` (the original's
/// calibration, [`agent_overhead`]). A copy calibrates otherwise than its
/// original once compact changed the history its counts were reported on
/// (on its first turn, not its last count): planned with the original's
/// calibration throughout, docker-agent and Codex copies compact said fit
/// were still over budget for `check`.
fn figures(s: &Session, t: &Target, base: u64, parts_changed: usize) -> Figures {
    let nt = next_turn(s, None).at_least(base);
    let request_bytes = nt.wire_bytes.saturating_add(t.headroom_bytes);
    Figures {
        tokens_estimated: nt.tokens_estimated,
        tokens_next_turn: nt.tokens,
        overhead_tokens: nt.overhead_tokens,
        tokens_reported: s.context_tokens(),
        payload_bytes: s.payload_bytes(),
        request_bytes,
        media_bytes: s.media_bytes(),
        messages: s.messages.len(),
        visible_messages: s.visible.len(),
        parts_changed,
        fits: fits_target(t, nt.tokens, nt.wire_bytes),
    }
}

/// An edit of session `sid` (one shared id for all of a step's edits).
fn edit(sid: &Sym, message_id: impl Into<Id>, change: Change) -> Edit {
    Edit {
        session_id: sid.clone(),
        message_id: message_id.into(),
        change,
    }
}

/// Step 1: strip historical media. One edit per part id: a writer applies
/// an edit to every stored copy of its message id, so copies of one id
/// share it, with the placeholder of the last copy (the one the agent
/// keeps); two edits on one part would strip it twice.
pub(crate) fn strip_media(s: &Session) -> Vec<Edit> {
    let sid = Sym::from(s.id.as_str());
    let mut out: Vec<Edit> = Vec::new();
    // (message id, part id) -> its edit in `out`.
    let mut planned: rustc_hash::FxHashMap<(&str, &str), usize> = Default::default();
    for i in media_before_newest(s) {
        let m = &s.messages[i];
        for p in m.parts.iter().filter(|p| !p.media().is_empty()) {
            let placeholder = p
                .media()
                .iter()
                .map(|x| {
                    format!(
                        "[Attached {}: {} - removed by session-doctor compact, {} bytes, sha256 {}]",
                        x.mime,
                        x.filename.as_deref().unwrap_or("(unnamed)"),
                        x.decoded_bytes,
                        x.sha256.get(..12).unwrap_or(&x.sha256)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let change = Change::StripMedia {
                part_id: p.id.clone(),
                placeholder: placeholder.into(),
            };
            match planned.get(&(m.id.as_str(), p.id.as_str())) {
                Some(&k) => out[k].change = change,
                None => {
                    planned.insert((m.id.as_str(), p.id.as_str()), out.len());
                    out.push(edit(&sid, &m.id, change));
                }
            }
        }
    }
    out
}

/// The fewest characters truncate-tool-output keeps of a tool output
/// (its cap halves with each older output, down to this).
const MIN_TOOL_OUTPUT_CAP: usize = 400;

/// Step 2: truncate old completed tool outputs, newest kept longest.
fn truncate_tool_outputs(s: &Session, t: &Target) -> Vec<Edit> {
    let sid = Sym::from(s.id.as_str());
    let keep_tokens = t.tool_output_budget();
    let base_cap = (t.overflow_budget() * 4) as usize;
    let mut used = 0u64;
    let mut rank = 0u32;
    let mut out = Vec::new();
    for &i in s.visible.iter().rev() {
        let m = &s.messages[i];
        for p in m.parts.iter().rev() {
            let Some(tool) = &p.tool else { continue };
            if tool.status != ToolStatus::Completed || tool.output_cleared {
                continue;
            }
            let tokens = estimate_tokens(tool.output_chars());
            if used.saturating_add(tokens) <= keep_tokens {
                used = used.saturating_add(tokens);
                continue;
            }
            used = keep_tokens;
            let cap = (base_cap >> rank.min(8)).max(MIN_TOOL_OUTPUT_CAP);
            rank += 1;
            if tool.output_chars as usize > cap {
                out.push(edit(
                    &sid,
                    &m.id,
                    Change::Truncate {
                        part_id: p.id.clone(),
                        field: TextField::ToolOutput,
                        max_chars: cap,
                    },
                ));
            }
        }
    }
    out
}

/// Step 3: truncate oversized text, reasoning and tool-input parts.
fn truncate_text(s: &Session, t: &Target) -> Vec<Edit> {
    let sid = Sym::from(s.id.as_str());
    let cap = (t.overflow_budget() * 4) as usize;
    let newest_user = s.messages.iter().rposition(|m| m.is_prompt());
    let mut out = Vec::new();
    for &i in &s.visible {
        if Some(i) == newest_user {
            continue;
        }
        let m = &s.messages[i];
        for p in &m.parts {
            let field = match (&p.kind, &p.tool) {
                (PartKind::Text | PartKind::Reasoning, _) => TextField::Text,
                (PartKind::Tool, Some(_)) => TextField::ToolInput,
                _ => continue,
            };
            let chars = match field {
                TextField::Text => p.model_chars(),
                _ => p
                    .model_chars()
                    .saturating_sub(p.tool.as_ref().map_or(0, |t| t.output_chars())),
            };
            if chars as usize > cap {
                out.push(edit(
                    &sid,
                    &m.id,
                    Change::Truncate {
                        part_id: p.id.clone(),
                        field,
                        max_chars: cap,
                    },
                ));
            }
        }
    }
    out
}

/// Step 4: drop history the agent no longer sends, or all but the last N user turns.
///
/// Kept: the visible messages (from the Nth-last user turn on with
/// `--keep-turns N`), every message stored after the newest kept compaction
/// marker (or after the first kept message) even when the agent does not send
/// it (Claude Code progress and hook lines), and every sidechain (sub-agent)
/// message. A kept message whose parent is dropped gets a new parent: the
/// kept candidate before it in the agent's view (a user message for
/// user-turn links; a user or assistant message outside sidechains for
/// chains), when the session's messages name parents and it is in view;
/// else the newest kept candidate before it in stored order; else, for
/// user-turn links, the oldest kept user message (a chain's first kept
/// message is left a root). Messages the kept compaction preserves are
/// kept, in view or not, and left as they are: the agent relinks them itself.
///
/// A format that applies [`Change::DropThrough`] ([`Applier::drops_through`])
/// gets one edit per run of consecutive dropped messages, else one
/// [`Change::DropMessage`] per dropped id.
fn cut_history(store: &dyn Applier, s: &Session, keep_turns: Option<usize>) -> Vec<Edit> {
    let sid = Sym::from(s.id.as_str());
    let Some((is_dropped, unique)) = cut_drops(s, keep_turns) else {
        return Vec::new();
    };
    let dropped_count = is_dropped.iter().filter(|&&d| d).count();
    if dropped_count == 0 {
        return Vec::new();
    }
    let runs = store.drops_through() && unique;
    cut_edits(s, keep_turns, sid, is_dropped, unique, runs, dropped_count)
}

/// What [`cut_history`] drops: a flag per message (`true`: dropped) and
/// whether no two messages share an id; `None` when nothing is visible.
fn cut_drops(s: &Session, keep_turns: Option<usize>) -> Option<(Vec<bool>, bool)> {
    let visible: Vec<usize> = match keep_turns {
        None => s.visible.clone(),
        Some(n) => {
            let turns: Vec<usize> = s
                .visible
                .iter()
                .copied()
                .filter(|&i| s.messages[i].is_prompt())
                .collect();
            if turns.len() <= n {
                s.visible.clone()
            } else {
                let first = turns[turns.len() - n.max(1)];
                let pos = s.visible.iter().position(|&i| i == first).unwrap_or(0);
                s.visible[pos..].to_vec()
            }
        }
    };
    let anchor = visible
        .iter()
        .copied()
        .filter(|&i| s.messages[i].compaction().is_some())
        .max()
        .or_else(|| visible.iter().copied().min());
    // Nothing visible: the model sees nothing of this session, so a cut has
    // nothing to keep and must not drop every line (fuzz input whole_claude-6).
    let anchor = anchor?;
    let mut keep = vec![false; s.messages.len()];
    for &i in &visible {
        keep[i] = true;
    }
    // What a kept compaction preserves stays, in view or not: the agent
    // prunes at it only when every preserved message is there, so dropping
    // one out of view would change the view (fuzz input whole_claude-20: a
    // preserved uuid's copies were all out of view, and the history before
    // it came back). Every kept compaction counts, not only the anchor:
    // whole_claude-24, a boundary after the newest visible message (so not
    // the anchor) preserved two messages out of view, and dropping them
    // took the newest user message out of the copy's view.
    let preserved: HashSet<&str> = s
        .messages
        .iter()
        .enumerate()
        .filter(|&(i, _)| keep[i] || i >= anchor)
        .filter_map(|(_, m)| m.compaction())
        .flat_map(|c| c.preserved.iter().map(String::as_str))
        .collect();
    for (i, m) in s.messages.iter().enumerate() {
        if m.sidechain() || i > anchor || preserved.contains(m.id.as_str()) {
            keep[i] = true;
        }
    }
    // Every stored copy of a kept id stays (a format keeps one entry per id).
    // When no two messages share an id (every Codex rollout, most sessions),
    // that is `keep` itself: no set of every id is built, as a cut of a huge
    // session drops millions of messages. The dropped messages are a flag per
    // message, not a list of their indexes: a list of 2 million indexes
    // (16 MB, and twice that while it grew) was held at the peak of a cut of
    // the 1 GB rollout of benches/.
    let unique = s.ids_unique();
    let is_dropped: Vec<bool> = if unique {
        let mut d = keep;
        d.iter_mut().for_each(|k| *k = !*k);
        d
    } else {
        let kept_ids: HashSet<&str> = (0..s.messages.len())
            .filter(|&i| keep[i])
            .map(|i| s.messages[i].id.as_str())
            .collect();
        s.messages
            .iter()
            .map(|m| !kept_ids.contains(m.id.as_str()))
            .collect()
    };
    Some((is_dropped, unique))
}

/// The rest of [`cut_history`]: the edits that drop what `is_dropped`
/// flags (one [`Change::DropThrough`] per run of them when `runs`, which
/// needs every id stored once: `unique`) and re-parent what was left
/// without its parent.
fn cut_edits(
    s: &Session,
    keep_turns: Option<usize>,
    sid: Sym,
    is_dropped: Vec<bool>,
    unique: bool,
    runs: bool,
    dropped_count: usize,
) -> Vec<Edit> {
    let dropped = || (0..s.messages.len()).filter(|&i| is_dropped[i]);
    // The dropped ids a kept message's parent may name: none to look up
    // when no message names a parent (Codex).
    let dropped_ids: HashSet<&str> = if s.has_parents() {
        dropped().map(|i| s.messages[i].id.as_str()).collect()
    } else {
        HashSet::default()
    };
    // One drop per id: the edit names the id, which covers every copy. The
    // list is sized for the drops and a note; the parent changes after them
    // are gathered apart and added at one exact growth (a list of millions
    // of edits that outgrew its room would be copied into one twice its size).
    let mut out: Vec<Edit> = Vec::new();
    if runs {
        let mut i = 0;
        while i < is_dropped.len() {
            if !is_dropped[i] {
                i += 1;
                continue;
            }
            let first = i;
            while i + 1 < is_dropped.len() && is_dropped[i + 1] {
                i += 1;
            }
            let id = |k: usize| s.messages.get(k).map(|m| m.id.clone());
            out.push(edit(
                &sid,
                &s.messages[first].id,
                Change::DropThrough(Box::new(crate::edit::DropRun {
                    last: s.messages[i].id.clone(),
                    messages: i - first + 1,
                    prev: first.checked_sub(1).and_then(id),
                    next: id(i + 1),
                })),
            ));
            i += 1;
        }
    } else {
        out.reserve_exact(dropped_count + 1);
        let mut seen: HashSet<&str> = HashSet::default();
        for i in dropped() {
            let id = &s.messages[i].id;
            if unique || seen.insert(id.as_str()) {
                out.push(edit(&sid, id, Change::DropMessage));
            }
        }
    }
    let preserved: HashSet<&str> = s.preserved_ids();
    let kept_sorted: Vec<usize> = (0..s.messages.len()).filter(|&i| !is_dropped[i]).collect();
    let mut reparented: HashSet<&str> = HashSet::default();
    let mut reparents: Vec<Edit> = Vec::new();
    let is_candidate = |k: usize| {
        let c = &s.messages[k];
        match s.parent_links {
            ParentLinks::UserTurn => c.role() == Role::User,
            ParentLinks::Chain => {
                !c.sidechain() && matches!(c.role(), Role::User | Role::Assistant)
            }
        }
    };
    // The two oldest candidates (user turns fall back to the first one), and
    // the two newest seen so far: two, so a message can skip a copy of itself.
    let oldest: Vec<Option<usize>> = kept_sorted
        .iter()
        .copied()
        .filter(|&k| is_candidate(k))
        .take(2)
        .map(Some)
        .collect();
    let mut newest: [Option<usize>; 2] = [None, None];
    // Each visible message's position in the view (only when messages name
    // parents): a visible message whose parent is dropped continues at the
    // kept candidate before it in the view, as the agent walks it. File
    // order differs where the view relinks messages, as Claude Code's
    // preserved segment under its summary: there the newest candidate
    // before it in the file was the segment's head, and the copy lost the
    // rest of the segment from its view (fuzz input claude_transcript-6).
    let view_pos: Vec<u32> = if s.has_parents() {
        let mut v = vec![u32::MAX; s.messages.len()];
        for (k, &i) in s.visible.iter().enumerate() {
            v[i] = u32::try_from(k).unwrap_or(u32::MAX);
        }
        v
    } else {
        Vec::new()
    };
    for &i in &kept_sorted {
        let m = &s.messages[i];
        let pick = |cands: &[Option<usize>]| {
            cands
                .iter()
                .flatten()
                .copied()
                .find(|&k| k != i && s.messages[k].id != m.id)
        };
        let needs = m.parent_id().filter(|pid| {
            dropped_ids.contains(pid) && !m.sidechain() && !preserved.contains(m.id.as_str())
        });
        if let Some(pid) = needs {
            if reparented.insert(m.id.as_str()) {
                let in_view = view_pos
                    .get(i)
                    .filter(|&&k| k != u32::MAX)
                    .map(|&k| k as usize);
                let before_in_view =
                    in_view.and_then(|k| {
                        s.visible[..k].iter().rev().copied().find(|&j| {
                            !is_dropped[j] && is_candidate(j) && s.messages[j].id != m.id
                        })
                    });
                let new = before_in_view.or_else(|| pick(&newest)).or_else(|| {
                    match s.parent_links {
                        ParentLinks::UserTurn => pick(&oldest),
                        // The first kept message of a chain becomes a root-like
                        // entry: the agent stops its walk at a parent it does not have.
                        ParentLinks::Chain => None,
                    }
                });
                if let Some(k) = new {
                    reparents.push(edit(
                        &sid,
                        &m.id,
                        Change::SetParent {
                            old: Some(pid.into()),
                            new: s.messages[k].id.clone(),
                        },
                    ));
                }
            }
        }
        if is_candidate(i) {
            newest = [Some(i), newest[0]];
        }
    }
    out.reserve_exact(reparents.len() + usize::from(keep_turns.is_some()));
    out.append(&mut reparents);
    if keep_turns.is_some() {
        if let Some(&first_user) = kept_sorted.iter().find(|&&k| s.messages[k].is_prompt()) {
            let turns = dropped().filter(|&i| s.messages[i].is_prompt()).count();
            out.push(edit(
                &sid,
                &s.messages[first_user].id,
                Change::AddNote {
                    text: format!(
                        "[session-doctor compact: {} earlier messages ({turns} user turns) were removed from this session to fit the model budget]",
                        dropped_count
                    ),
                },
            ));
        }
    }
    out
}

/// Appends a step's `edits` to the plan's: moved when the plan has none yet,
/// else into a list grown to the exact total (a cut of a huge session is
/// millions of edits; doubling would hold up to twice as many slots).
fn append(all: &mut Vec<Edit>, edits: Vec<Edit>) {
    if all.is_empty() {
        *all = edits;
    } else {
        all.reserve_exact(edits.len());
        all.extend(edits);
    }
}

/// Step 4 for an agent that indexes its history and never resends what its
/// last compaction left out ([`Applier::cuts_with_summary`]: docker-agent):
/// history it no longer sends stays stored, as the agent keeps it; with
/// `keep_turns` N, one [`Change::CutBefore`] on the first message of the
/// Nth-last user turn records a compaction (a summary holding the previous
/// summary and a note) whose kept tail starts there.
fn cut_with_summary(s: &Session, keep_turns: Option<usize>) -> Vec<Edit> {
    let sid = Sym::from(s.id.as_str());
    let Some(n) = keep_turns else {
        return Vec::new();
    };
    let turns: Vec<usize> = s
        .visible
        .iter()
        .copied()
        .filter(|&i| s.messages[i].is_prompt())
        .collect();
    if turns.len() <= n.max(1) {
        return Vec::new();
    }
    let first = turns[turns.len() - n.max(1)];
    let pos = s.visible.iter().position(|&i| i == first).unwrap_or(0);
    let before = &s.visible[..pos];
    let messages = before.iter().filter(|&&i| !s.messages[i].summary()).count();
    let user_turns = before
        .iter()
        .filter(|&&i| s.messages[i].is_prompt())
        .count();
    vec![edit(
        &sid,
        &s.messages[first].id,
        Change::CutBefore {
            note: format!(
                "[session-doctor compact: the {messages} earlier messages ({user_turns} user turns) are no longer sent to the model, to fit the model budget; they stay stored in the session]"
            ),
        },
    )]
}

/// What is left of a session after every step of compact when it still
/// does not fit ([`Plan::shortfall`]): the figures [`Plan::unreachable`]
/// states, as fields (`shortfall` in `compact --format json`,
/// `compact_shortfall` on a finding whose remedy compact cannot reach).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    /// Tokens of the next turn after every step (estimate plus the
    /// agent's overhead).
    pub tokens: u64,
    /// Request bytes of the next turn after every step (visible history
    /// plus headroom).
    pub request_bytes: u64,
    /// Both figures are a floor, counting only what no step edits
    /// ([`Floor`]: the plan was answered without applying its steps).
    pub at_least: bool,
    /// The model's usable tokens, when the budget is known.
    pub usable_tokens: Option<u64>,
    /// The request limit the target holds the session to (bytes).
    pub max_request_bytes: u64,
    /// The newest user message, which no step cuts, and its tokens and
    /// bytes (at least, when `at_least`).
    pub newest_user_message_id: Option<String>,
    pub newest_user_tokens: Option<u64>,
    pub newest_user_bytes: Option<u64>,
}

impl Shortfall {
    /// The sentence [`Plan::unreachable`] gives.
    pub fn why(&self) -> String {
        let least = if self.at_least { "at least " } else { "" };
        let mut why = format!(
            "still {least}{} tokens and {} request bytes after every step{} (usable {} tokens, limit {} bytes)",
            self.tokens,
            self.request_bytes,
            if self.at_least {
                ", counting only what no step cuts"
            } else {
                ""
            },
            self.usable_tokens
                .map_or("unknown".to_string(), |u| u.to_string()),
            self.max_request_bytes
        );
        if let (Some(id), Some(tokens), Some(bytes)) = (
            &self.newest_user_message_id,
            self.newest_user_tokens,
            self.newest_user_bytes,
        ) {
            why.push_str(&format!(
                "; the newest user message {id} alone is {least}{tokens} tokens and {bytes} bytes and is never cut"
            ));
        }
        why
    }
}

/// Why the session cannot fit even after every step.
fn shortfall_after(s: &Session, t: &Target, f: &Figures) -> Shortfall {
    let newest_user = s
        .messages
        .iter()
        .rposition(|m| m.is_prompt())
        .map(|i| &s.messages[i]);
    Shortfall {
        tokens: f.tokens_next_turn,
        request_bytes: f.request_bytes,
        at_least: false,
        usable_tokens: t.budget.as_ref().map(|b| b.usable),
        max_request_bytes: t.max_request_bytes,
        newest_user_message_id: newest_user.map(|m| m.id.to_string()),
        newest_user_tokens: newest_user.map(|m| m.tokens_estimated()),
        newest_user_bytes: newest_user.map(|m| m.wire_bytes()),
    }
}

/// What no step of compact can take the next turn below
/// ([`floor_after_every_step`]): the figures of the visible messages
/// counting only the parts no step edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// Tokens of the next turn (estimate plus the agent's overhead).
    pub tokens_next_turn: u64,
    /// Request bytes of the next turn (visible history plus headroom).
    pub request_bytes: u64,
    /// The newest user message (never cut): its id, tokens and bytes
    /// counting only its parts no step edits.
    pub newest_user: Option<(Id, u64, u64)>,
}

impl Floor {
    /// Whether a session this far down could fit `t`: [`Figures::fits`]'s
    /// conditions on the floor's figures.
    pub fn may_fit(&self, t: &Target) -> bool {
        let history = self.request_bytes.saturating_sub(t.headroom_bytes);
        fits_target(t, self.tokens_next_turn, history)
    }

    /// Why compact cannot fit `t`, from the floor (`at least`: the steps'
    /// edited parts count nothing).
    fn shortfall(&self, t: &Target) -> Shortfall {
        Shortfall {
            tokens: self.tokens_next_turn,
            request_bytes: self.request_bytes,
            at_least: true,
            usable_tokens: t.budget.as_ref().map(|b| b.usable),
            max_request_bytes: t.max_request_bytes,
            newest_user_message_id: self.newest_user.as_ref().map(|(id, _, _)| id.to_string()),
            newest_user_tokens: self.newest_user.as_ref().map(|(_, t, _)| *t),
            newest_user_bytes: self.newest_user.as_ref().map(|(_, _, b)| *b),
        }
    }
}

/// Whether some step of compact's plan for `t` may edit part `p` (see
/// [`floor_after_every_step`]).
fn step_may_edit(p: &crate::model::Part, t: &Target) -> bool {
    !p.media().is_empty()
        || p.tool
            .as_ref()
            .is_some_and(|x| x.output_chars() > MIN_TOOL_OUTPUT_CAP as u64)
        || p.model_chars() > t.overflow_budget().saturating_mul(4)
}

/// A lower bound of the next turn after any steps of compact's plan, found
/// without applying them (applying re-reads every edited row or line: 0.7 s
/// of a 1 GB opencode session's `check`). A part counts nothing when some
/// step may edit it: it holds media (strip-media), a tool output over
/// [`MIN_TOOL_OUTPUT_CAP`] characters (truncate-tool-output's smallest cap),
/// or over `4 x overflow budget` characters in all (truncate-text). Every
/// other part of a visible message counts its figures as they are: no step
/// edits it, and no step drops a visible message when `t` keeps every turn
/// (no `keep_turns`, no `below_*` goal, whose loop keeps fewer turns) and
/// the format cuts by dropping what is outside the view (not
/// [`Applier::cuts_with_summary`]). `None` otherwise. `overhead` is the
/// least agent overhead a state of the plan is measured with
/// ([`Plan::overhead_tokens`]).
pub fn floor_after_every_step(
    store: &dyn Applier,
    s: &Session,
    t: &Target,
    overhead: u64,
) -> Option<Floor> {
    if t.keep_turns.is_some()
        || t.goals.below_tokens.is_some()
        || t.goals.below_history_bytes.is_some()
        || store.cuts_with_summary()
    {
        return None;
    }
    let kept = |m: &crate::model::Message| {
        let (mut chars, mut bytes) = (0u64, 0u64);
        for p in &m.parts {
            if !step_may_edit(p, t) {
                chars = chars.saturating_add(p.model_chars());
                bytes = bytes.saturating_add(p.wire_bytes());
            }
        }
        (crate::measure::estimate_tokens(chars), bytes)
    };
    let (mut tokens, mut wire) = (overhead, 0u64);
    for &i in &s.visible {
        let (k, b) = kept(&s.messages[i]);
        tokens = tokens.saturating_add(k);
        wire = wire.saturating_add(b);
    }
    let newest_user = s.messages.iter().rposition(|m| m.is_prompt()).map(|i| {
        let m = &s.messages[i];
        let (k, b) = kept(m);
        (m.id.clone(), k, b)
    });
    Some(Floor {
        tokens_next_turn: tokens,
        request_bytes: wire.saturating_add(t.headroom_bytes),
        newest_user,
    })
}

/// Characters and bytes [`ceiling_after_strip_media`] adds for each media
/// item of a stripped part beyond its placeholder text: room for what a
/// format writes around it.
const STRIP_SLACK: (u64, u64) = (16, 64);

/// The most placeholder text a writer puts in place of a part's `media`
/// items, as `(characters, bytes)`: the whole `placeholder` for one item;
/// for more, line k of it for item k, and the whole placeholder for an item
/// past its last line (a placeholder planned on another stored copy of the
/// id, which held fewer items).
fn placeholder_size(placeholder: &str, media: usize) -> (u64, u64) {
    if media <= 1 {
        return (placeholder.chars().count() as u64, placeholder.len() as u64);
    }
    let mut lines = placeholder.lines();
    (0..media).fold((0u64, 0u64), |(c, b), _| {
        let t = lines.next().unwrap_or(placeholder);
        (
            c.saturating_add(t.chars().count() as u64),
            b.saturating_add(t.len() as u64),
        )
    })
}

/// An upper bound of the next turn after strip-media's `edits` (what
/// [`strip_media`] gives for `s`), found without applying them (applying
/// re-reads and re-parses every line that held media: 0.46 s of a 1 GB
/// Claude Code transcript's `check`): `(tokens, wire bytes)`, the agent's
/// `overhead` tokens included (at least what `check` measures on the
/// stripped copy: [`crate::sizing::overhead_ceiling`]), the headroom not.
/// A stripped part counts its characters plus its placeholder text's
/// ([`placeholder_size`]), and its
/// bytes less its media's encoded bytes (which the wire counts as base64)
/// plus the placeholder text's, with [`STRIP_SLACK`] for each media item;
/// every other part as it is. The placeholder is the first edit's for the
/// part, the one a writer applies to each copy of the id. Strip-media
/// changes no other part and drops no message.
pub fn ceiling_after_strip_media(s: &Session, edits: &[Edit], overhead: u64) -> (u64, u64) {
    let mut stripped: rustc_hash::FxHashMap<&str, Vec<(&str, &str)>> = Default::default();
    for e in edits {
        if let Change::StripMedia {
            part_id,
            placeholder,
        } = &e.change
        {
            stripped
                .entry(e.message_id.as_str())
                .or_default()
                .push((&**part_id, &**placeholder));
        }
    }
    let (mut tokens, mut wire) = (overhead, 0u64);
    for &i in &s.visible {
        let m = &s.messages[i];
        let Some(parts) = stripped.get(m.id.as_str()) else {
            tokens = tokens.saturating_add(m.tokens_estimated());
            wire = wire.saturating_add(m.wire_bytes());
            continue;
        };
        let mut chars = 0u64;
        for p in &m.parts {
            let (mut c, mut b) = (p.model_chars(), p.wire_bytes());
            if let Some((_, text)) = parts.iter().find(|(id, _)| **id == *p.id) {
                let encoded: u64 = p.media().iter().map(|x| x.encoded_bytes).sum();
                let (tc, tb) = placeholder_size(text, p.media().len());
                let items = p.media().len().max(1) as u64;
                c = c
                    .saturating_add(tc)
                    .saturating_add(STRIP_SLACK.0.saturating_mul(items));
                b = b
                    .saturating_sub(encoded)
                    .saturating_add(tb)
                    .saturating_add(STRIP_SLACK.1.saturating_mul(items));
            }
            chars = chars.saturating_add(c);
            wire = wire.saturating_add(b);
        }
        tokens = tokens.saturating_add(estimate_tokens(chars));
    }
    (tokens, wire)
}

/// Whether `s`, which fits `t`, still fits it once [`cut_history`] (no
/// `keep_turns`) dropped the turns before the view, measured without
/// making the cut: the view is the same, but a copy whose history compact
/// changed calibrates on the first turn it keeps, which the cut may move.
fn fits_after_cut(s: &Session, t: &Target, base: u64) -> bool {
    if next_turn(s, None).reported {
        return true;
    }
    let Some((dropped, _)) = cut_drops(s, None) else {
        return true;
    };
    let nt = crate::sizing::next_turn_keeping(s, &|i| !dropped[i]).at_least(base);
    fits_target(t, nt.tokens, nt.wire_bytes)
}

/// Plans the compaction of `s`, measuring each step on the edited model.
/// A session given by value is edited in place (no copy of it is made; a
/// borrowed one is copied at the first step that edits it). With
/// `describe`, each step's edits are described against the session as that
/// step found it (a truncation after `strip-media` shows the stripped text
/// as its old value) into [`Plan::changes`].
pub fn plan(
    store: &dyn Applier,
    s: std::borrow::Cow<'_, Session>,
    t: &Target,
    describe: Option<&Describe<'_>>,
) -> Result<Plan> {
    plan_steps(store, s, t, describe, false).map(|(p, _)| p)
}

/// [`plan`] asked only whether compact reaches `t` (what `check` asks
/// before it prints a compact command): the answer is the full plan's
/// ([`Plan::fits`], whether [`Plan::unreachable`], and when it is not,
/// whether [`Plan::edits`] is empty), but its steps and edits may stop
/// short of it. When even the [`floor_after_every_step`] does not fit,
/// no step is applied: the reason gives the floor's figures (`at least`),
/// not the full plan's (on the 1 GB opencode session of benches/, the
/// full plan re-read 23,450 tool output rows to measure them). When the
/// [`ceiling_after_strip_media`] fits and no later step is asked for, the
/// answer is "reaches" with strip-media's edits, none applied. Left out: the
/// cut of history that only [`Applier::replays_everything`] asks for (no
/// finding, no `keep_turns`), once the session fits and an earlier step
/// edited it, when the session still fits without the turns it drops
/// ([`fits_after_cut`]). That cut drops only messages outside the agent's
/// view (it keeps every visible message and all after the newest visible
/// compaction): the view is the same, only the first turn a copy whose
/// history compact changed calibrates on may move; it was 2.4 million
/// dropped lines and 1.3 s of the 1 GB Codex rollout's `check`. The
/// ceiling of a store that replays everything counts that calibration too.
pub fn plan_to_reach(
    store: &dyn Applier,
    s: std::borrow::Cow<'_, Session>,
    t: &Target,
) -> Result<Plan> {
    plan_steps(store, s, t, None, true).map(|(p, _)| p)
}

/// [`plan_to_reach`], with the session as the plan left it when it
/// applied a step (what the copy holds, but for the cut it may leave out):
/// `None` when it answered without applying any (from the floor, or from
/// the ceiling with strip-media's edits). `check` judges on it whether the
/// copy still has a finding.
pub fn plan_to_reach_keeping(
    store: &dyn Applier,
    s: std::borrow::Cow<'_, Session>,
    t: &Target,
) -> Result<(Plan, Option<Session>)> {
    plan_steps(store, s, t, None, true)
}

/// [`plan`], or with `to_reach` [`plan_to_reach`].
fn plan_steps(
    store: &dyn Applier,
    s: std::borrow::Cow<'_, Session>,
    t: &Target,
    describe: Option<&Describe<'_>>,
    to_reach: bool,
) -> Result<(Plan, Option<Session>)> {
    // The original's calibration: the least overhead a state is measured
    // with (each state otherwise as `check` measures it, see `figures`).
    let base = agent_overhead(&s);
    let before = figures(&s, t, base, 0);
    let mut plan = Plan {
        fits: before.fits,
        before,
        steps: Vec::new(),
        edits: Vec::new(),
        unreachable: None,
        shortfall: None,
        usable_tokens: t.usable(),
        overhead_tokens: base,
        changes: Vec::new(),
    };
    // What `check` asks: a session that no steps can bring within `t` is
    // answered from the floor, without applying any.
    if to_reach && !plan.fits {
        if let Some(f) = floor_after_every_step(store, &s, t, base) {
            if !f.may_fit(t) {
                let short = f.shortfall(t);
                plan.unreachable = Some(short.why());
                plan.shortfall = Some(short);
                return Ok((plan, None));
            }
        }
    }
    // And one that strip-media alone surely brings within `t` (no later
    // step asked for, so none runs once it fits), without applying it.
    let always = store.replays_everything();
    if to_reach
        && (!plan.fits || t.goals.strip_media || always)
        && !t.goals.cut_history
        && t.keep_turns.is_none()
    {
        let edits = strip_media(&s);
        if !edits.is_empty() {
            // The most overhead `check` measures on the stripped copy (its
            // placeholders may leave it calibrating on its first turn) ...
            let most = crate::sizing::overhead_ceiling(&s, &|_| true).max(base);
            let (mut tokens, mut wire) = ceiling_after_strip_media(&s, &edits, most);
            // ... or, once the cut that always follows dropped the turns
            // before the view, on the first turn the copy keeps.
            if always && fits_target(t, tokens, wire) {
                if let Some((dropped, _)) = cut_drops(&s, None) {
                    let most = most.max(crate::sizing::overhead_ceiling(&s, &|i| !dropped[i]));
                    (tokens, wire) = ceiling_after_strip_media(&s, &edits, most);
                }
            }
            if fits_target(t, tokens, wire) {
                plan.fits = true;
                plan.edits = edits;
                return Ok((plan, None));
            }
        }
    }
    // The session as edited so far: borrowed until the first step edits it.
    let mut cur = s;
    type StepFn<'a> = Box<dyn Fn(&Session) -> Vec<Edit> + 'a>;
    let steps: Vec<(&'static str, StepFn)> = vec![
        ("strip-media", Box::new(strip_media)),
        (
            "truncate-tool-output",
            Box::new(|s| truncate_tool_outputs(s, t)),
        ),
        ("truncate-text", Box::new(|s| truncate_text(s, t))),
        (
            "cut-history",
            Box::new(|s| {
                if store.cuts_with_summary() {
                    cut_with_summary(s, t.keep_turns)
                } else {
                    cut_history(store, s, t.keep_turns)
                }
            }),
        ),
    ];
    for (name, step) in steps {
        let asked = (name == "strip-media" && t.goals.strip_media)
            || (name == "cut-history" && (t.goals.cut_history || t.keep_turns.is_some()));
        let forced = asked || (always && matches!(name, "strip-media" | "cut-history"));
        if plan.fits && !forced {
            continue;
        }
        if to_reach
            && plan.fits
            && !asked
            && name == "cut-history"
            && !plan.edits.is_empty()
            && fits_after_cut(&cur, t, base)
        {
            continue;
        }
        let edits = step(&cur);
        if edits.is_empty() {
            continue;
        }
        if let Some(d) = describe {
            d(&cur, &edits, &mut plan.changes);
        }
        cur = std::borrow::Cow::Owned(match cur {
            std::borrow::Cow::Borrowed(b) => store.apply(b, &edits)?,
            std::borrow::Cow::Owned(o) => store.apply_after(o, &plan.edits, &edits)?,
        });
        let parts_changed = edits
            .iter()
            .filter(|e| e.change.part_id().is_some())
            .count();
        let after = figures(&cur, t, base, parts_changed);
        plan.fits = after.fits;
        plan.steps.push(StepReport {
            step: name,
            edits: crate::edit::edit_count(&edits),
            after,
        });
        append(&mut plan.edits, edits);
    }
    // A loop is broken only when the kept tail is below the trigger: keep
    // fewer user turns until it is.
    if !plan.fits
        && (t.goals.below_tokens.is_some() || t.goals.below_history_bytes.is_some())
        && t.keep_turns.is_none()
    {
        let turns = cur
            .visible
            .iter()
            .filter(|&&i| cur.messages[i].is_prompt())
            .count();
        // The largest n of 1..turns whose cut fits, else 1. Fewer turns
        // kept is never larger, so the n tried go down from the top by
        // doubling steps, then halve the gap to the last that did not fit:
        // about 2 log2(turns) cuts, where one per n took time in the
        // square of the session's length (8,000 turns: 58 s). The same n as
        // trying each in turn from the top.
        let cut = |n: usize| {
            if store.cuts_with_summary() {
                cut_with_summary(&cur, Some(n))
            } else {
                cut_history(store, &cur, Some(n))
            }
        };
        // `None` when the cut with `n` drops nothing.
        let attempt = |n: usize| -> Result<Option<(Vec<Edit>, Session, Figures)>> {
            let edits = cut(n);
            if edits.is_empty() {
                return Ok(None);
            }
            let next = store.apply_after(cur.as_ref().clone(), &plan.edits, &edits)?;
            let after = figures(&next, t, base, 0);
            Ok(Some((edits, next, after)))
        };
        let mut chosen = None;
        if turns >= 2 {
            let (mut fits_at, mut fails_at) = (None, turns);
            let mut step = 1;
            loop {
                let n = turns.saturating_sub(step).max(1);
                match attempt(n)? {
                    Some(r) if r.2.fits => {
                        fits_at = Some((n, r));
                        break;
                    }
                    _ => fails_at = n,
                }
                if n == 1 {
                    break;
                }
                step = step.saturating_mul(2);
            }
            chosen = match fits_at {
                // The next n up did not fit: this is the one.
                Some((n, r)) if fails_at == n + 1 => Some(r),
                Some((lo, r)) => {
                    drop(r);
                    let (mut lo, mut hi) = (lo, fails_at);
                    while hi - lo > 1 {
                        let mid = lo + (hi - lo) / 2;
                        if attempt(mid)?.is_some_and(|r| r.2.fits) {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                    }
                    attempt(lo)?
                }
                None => attempt(1)?,
            };
        }
        if let Some((edits, next, after)) = chosen {
            if let Some(d) = describe {
                d(&cur, &edits, &mut plan.changes);
            }
            plan.fits = after.fits;
            plan.steps.push(StepReport {
                step: "cut-history",
                edits: crate::edit::edit_count(&edits),
                after,
            });
            append(&mut plan.edits, edits);
            cur = std::borrow::Cow::Owned(next);
        }
    }
    if !plan.fits {
        let last = plan.steps.last().map_or(&plan.before, |s| &s.after);
        let short = shortfall_after(&cur, t, last);
        plan.unreachable = Some(short.why());
        plan.shortfall = Some(short);
    }
    let planned = match cur {
        std::borrow::Cow::Owned(o) if !plan.steps.is_empty() => Some(o),
        _ => None,
    };
    Ok((plan, planned))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzz input whole_claude-24: a compaction kept because it comes after
    /// the anchor (here the oldest visible message, as no compaction is in
    /// view) keeps what it preserves, in view or not. Before, only the
    /// anchor's own preserved messages stayed, and dropping the others
    /// changed the agent's view of the copy.
    #[test]
    fn a_cut_keeps_what_every_kept_compaction_preserves() {
        use crate::model::{sym, Agent, CompactionMarker, Message, Part};
        let mut boundary = Message::new("b", Role::Other(sym("system")));
        let mut p = Part::empty("b#0", PartKind::Compaction, "compact_boundary");
        p.set_compaction(Some(Box::new(CompactionMarker {
            auto: true,
            preserved: vec!["x".into(), "y".into(), "u".into()],
            ..Default::default()
        })));
        boundary.parts.push(p);
        let mut s = Session::new(Agent::ClaudeCode, "s", None, "x".into());
        s.messages = vec![
            Message::new("x", Role::User),
            Message::new("y", Role::Assistant),
            Message::new("u", Role::User),
            boundary,
            Message::new("z", Role::Assistant),
        ];
        s.visible = vec![2, 4];
        let (dropped, unique) = cut_drops(&s, None).expect("messages are visible");
        assert!(unique);
        assert_eq!(dropped, vec![false; 5], "x and y are preserved by b");
        // What no kept compaction preserves is dropped, as before.
        if let Some(c) = s.messages[3].parts[0].compaction_mut() {
            c.preserved = vec!["u".into()];
        }
        let (dropped, _) = cut_drops(&s, None).expect("messages are visible");
        assert_eq!(dropped, vec![true, true, false, false, false]);
    }

    /// Copies of one id before the newest media, derived from the real
    /// image transcript up to its compaction: its newest line (a tool
    /// result with one image) stored twice more before it under id `x`, the
    /// second copy with two images.
    /// With `x` another id, strip-media plans one edit for both copies
    /// (the last copy's placeholder, two lines), which the writer applies
    /// to each; the ceiling stays over it. With `x` the newest line's own id, nothing of
    /// it is stripped: an edit names an id, and the newest media stays
    /// (fuzz input claude_transcript-5, both).
    #[test]
    fn strip_media_over_copies_of_an_id_keeps_the_newest_and_its_ceiling() {
        use serde_json::Value;
        let src = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/claude-code/claude-code-gen/image/projects/-home-dev-cc-dev-claude-image-proj/ada37aa8-fdfe-41e2-ae55-88cfa2a2c290.jsonl"
        );
        let text = std::fs::read_to_string(src).unwrap();
        let newest = "7a1ef385-aa1b-477e-a3c4-ca991c730ffa";
        for x in ["0b0b0b0b-0000-4000-8000-000000000001", newest] {
            // The lines before its compaction, which the model sees.
            let mut lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .take_while(|v| v["subtype"] != "compact_boundary")
                .collect();
            let k = lines.iter().position(|v| v["uuid"] == newest).unwrap();
            let mut one = lines[k].clone();
            one["uuid"] = x.into();
            let mut two = one.clone();
            let inner = two
                .pointer_mut("/message/content/0/content")
                .and_then(Value::as_array_mut)
                .unwrap();
            assert_eq!(inner.len(), 1, "one image in the real tool result");
            inner.push(inner[0].clone());
            lines[k]["parentUuid"] = x.into();
            lines.insert(k, two);
            lines.insert(k, one);
            let dir = tempfile::tempdir().unwrap();
            let file = dir
                .path()
                .join("projects/p/ada37aa8-fdfe-41e2-ae55-88cfa2a2c290.jsonl");
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let body: String = lines.iter().map(|v| format!("{v}\n")).collect();
            std::fs::write(&file, body).unwrap();
            let found = crate::formats::discover(&[file]);
            let store = &found.stores[0];
            let s = store.load("ada37aa8-fdfe-41e2-ae55-88cfa2a2c290").unwrap();
            let strip = strip_media(&s);
            let on_x = strip.iter().filter(|e| *e.message_id == *x).count();
            // One edit for the copies of `x`; none on copies of the newest id.
            let copies = usize::from(x != newest);
            assert_eq!(on_x, copies, "{x}: {strip:?}");
            let done = store.copier().apply(&s, &strip).unwrap();
            let kept: usize = done
                .messages
                .iter()
                .filter(|m| *m.id == *newest)
                .map(|m| m.media_count())
                .sum();
            let stored = if x == newest { 1 + 1 + 2 } else { 1 };
            assert_eq!(kept, stored, "{x}: the newest media stays");
            let base = agent_overhead(&s);
            let nt = next_turn(&done, None).at_least(base);
            let most = crate::sizing::overhead_ceiling(&s, &|_| true).max(base);
            let (tokens, wire) = ceiling_after_strip_media(&s, &strip, most);
            assert!(
                tokens >= nt.tokens && wire >= nt.wire_bytes,
                "{x}: ceiling ({tokens}, {wire}) under ({}, {})",
                nt.tokens,
                nt.wire_bytes
            );
        }
    }

    /// A plan that already has edits gets a step's edits after them, in order.
    #[test]
    fn append_keeps_the_order_of_steps() {
        let e = |id: &str| Edit {
            session_id: Sym::from("s"),
            message_id: id.into(),
            change: Change::DropMessage,
        };
        let mut all = Vec::new();
        append(&mut all, vec![e("a")]);
        append(&mut all, vec![e("b"), e("c")]);
        let ids: Vec<&str> = all.iter().map(|x| x.message_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    /// `plan_to_reach` answers as `plan` does (fits, unreachable, edits or
    /// none) on every real Codex rollout in `fixtures/` (the agent whose
    /// store replays everything), for limits from roomy to impossible, with
    /// and without the media goal; and it does leave the cut out somewhere.
    #[test]
    fn plan_to_reach_answers_as_the_full_plan() {
        use std::borrow::Cow;
        let (mut compared, mut shorter) = (0, 0);
        for e in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/codex")) {
            let e = e.unwrap();
            let name = e.path().display().to_string();
            if !name.ends_with(".jsonl") || name.contains("stub_requests") {
                continue;
            }
            let store = crate::formats::codex::open_file(e.path()).unwrap().unwrap();
            for id in store.session_ids().unwrap() {
                let s = store.load(&id).unwrap();
                let wire = next_turn(&s, None).wire_bytes;
                for max in [u64::MAX / 2, wire + 1, wire / 2, 100] {
                    for strip_media in [false, true] {
                        let t = Target {
                            budget: None,
                            max_request_bytes: max,
                            headroom_bytes: 0,
                            keep_turns: None,
                            goals: Goals {
                                strip_media,
                                ..Goals::default()
                            },
                        };
                        let full = plan(store.copier(), Cow::Borrowed(&s), &t, None).unwrap();
                        let reach = plan_to_reach(store.copier(), Cow::Borrowed(&s), &t).unwrap();
                        assert_eq!(answer(&reach), answer(&full), "{name} {max} {strip_media}");
                        compared += 1;
                        if reach.edits.len() < full.edits.len() {
                            shorter += 1;
                        }
                    }
                }
            }
        }
        assert!(compared >= 40, "{compared} plans compared");
        assert!(shorter > 0, "the cut was never left out");
    }

    /// What `check` compares of the two plans: whether the session fits,
    /// whether compact cannot reach it, and (when it can) whether it edits
    /// anything. The reason is the full plan's, or one from the floor
    /// (`at least`).
    fn answer(p: &Plan) -> (bool, bool, bool) {
        (
            p.fits,
            p.unreachable.is_some(),
            p.unreachable.is_none() && p.edits.is_empty(),
        )
    }

    /// Budgets for a session of `tokens` (next turn): none (the byte limit
    /// alone), two models' (`context x 0.9 - max_output`), and two whose
    /// tool output budget is one token and whose part cap is large or
    /// small, so that every older tool output is cut, to caps down to the
    /// smallest, while the cap of text parts leaves mid-sized ones alone.
    fn budgets(tokens: u64) -> Vec<Option<Budget>> {
        let model = |context: u64| {
            Budget::new(crate::budget::Limits {
                model: None,
                context,
                max_output: 1000,
                input: None,
                source: "test".into(),
            })
        };
        let cut_tools = |overflow: u64| Budget {
            usable: tokens / 2 + 1,
            tool_output: 1,
            overflow,
            ..model(30_000)
        };
        vec![
            None,
            Some(model(tokens / 2 + 2000)),
            Some(model(tokens / 4 + 1200)),
            Some(cut_tools(10_000)),
            Some(cut_tools(300)),
        ]
    }

    /// The floor of [`floor_after_every_step`] is below every state of the
    /// full plan (before any step and after each) on every session of the
    /// real fixtures of every format, for limits from roomy to impossible,
    /// with and without a model budget; every part the plan edits is one
    /// the floor leaves out, and no message it drops is one the agent
    /// sends. The ceiling of [`ceiling_after_strip_media`] is over the
    /// figures of strip-media applied. `plan_to_reach` gives the full
    /// plan's answer: from the floor where the floor is over the limit, from
    /// the ceiling where it fits (both happen), with the full plan's reason
    /// otherwise.
    #[test]
    fn floor_and_ceiling_bound_the_plan() {
        use std::borrow::Cow;
        let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"));
        let found = crate::formats::discover(&[root]);
        let (mut sessions, mut by_floor, mut by_plan, mut edited) = (0, 0, 0, 0);
        let (mut stripped, mut by_ceiling) = (0, 0);
        for store in &found.stores {
            let Ok(ids) = store.session_ids() else {
                continue;
            };
            for id in ids {
                let Ok(s) = store.load(&id) else { continue };
                sessions += 1;
                let wire = next_turn(&s, None).wire_bytes;
                let tokens = next_turn(&s, None).tokens;
                // The ceiling after strip-media is over its applied figures.
                let strip = strip_media(&s);
                let base = agent_overhead(&s);
                if !strip.is_empty() {
                    if let Ok(done) = store.copier().apply(&s, &strip) {
                        let nt = next_turn(&done, None).at_least(base);
                        let most = crate::sizing::overhead_ceiling(&s, &|_| true).max(base);
                        let (c_tokens, c_wire) = ceiling_after_strip_media(&s, &strip, most);
                        assert!(
                            c_tokens >= nt.tokens && c_wire >= nt.wire_bytes,
                            "{} {id}: ceiling ({c_tokens}, {c_wire}) under ({}, {})",
                            store.path().display(),
                            nt.tokens,
                            nt.wire_bytes
                        );
                        stripped += 1;
                    }
                }
                for max in [
                    u64::MAX / 2,
                    wire + 1,
                    wire / 2,
                    wire / 4,
                    160_064,
                    20_064,
                    4_064,
                    100,
                ] {
                    for (k, budget) in budgets(tokens).into_iter().enumerate() {
                        let t = Target {
                            budget: budget.clone(),
                            max_request_bytes: max,
                            headroom_bytes: 64,
                            keep_turns: None,
                            goals: Goals::default(),
                        };
                        let what = format!("{} {id} {max} budget {k}", store.path().display());
                        // A fixture whose stored JSON compact cannot edit (hermes
                        // content that is not JSON) has no plan to compare.
                        let Ok(full) = plan(store.copier(), Cow::Borrowed(&s), &t, None) else {
                            continue;
                        };
                        // docker-agent cuts by recording a compaction: no floor.
                        let Some(floor) =
                            floor_after_every_step(store.copier(), &s, &t, full.overhead_tokens)
                        else {
                            assert!(store.copier().cuts_with_summary(), "{what}: no floor");
                            continue;
                        };
                        for f in
                            std::iter::once(&full.before).chain(full.steps.iter().map(|x| &x.after))
                        {
                            assert!(
                                f.tokens_next_turn >= floor.tokens_next_turn,
                                "{what}: tokens {} under the floor {}",
                                f.tokens_next_turn,
                                floor.tokens_next_turn
                            );
                            assert!(
                                f.request_bytes >= floor.request_bytes,
                                "{what}: request {} under the floor {}",
                                f.request_bytes,
                                floor.request_bytes
                            );
                        }
                        // Each part the plan edits is one the floor leaves out,
                        // and no message the agent sends is dropped.
                        for e in &full.edits {
                            let m = s.messages.iter().position(|m| m.id == e.message_id);
                            if matches!(e.change, Change::DropMessage) {
                                assert!(
                                    m.is_none_or(|i| !s.visible.contains(&i)),
                                    "{what}: drops visible {}",
                                    e.message_id
                                );
                            }
                            let part = e.change.part_id().and_then(|pid| {
                                m.and_then(|i| s.messages[i].parts.iter().find(|p| *p.id == *pid))
                            });
                            if let Some(p) = part {
                                assert!(
                                    step_may_edit(p, &t),
                                    "{what}: {} edits part {}",
                                    e.change.name(),
                                    p.id
                                );
                                edited += 1;
                            }
                        }
                        let reach = plan_to_reach(store.copier(), Cow::Borrowed(&s), &t).unwrap();
                        assert_eq!(answer(&reach), answer(&full), "{what}");
                        if reach.fits && reach.steps.is_empty() && !reach.edits.is_empty() {
                            by_ceiling += 1;
                        }
                        if reach.unreachable != full.unreachable {
                            assert!(!floor.may_fit(&t), "{what}");
                            assert!(
                                reach
                                    .unreachable
                                    .as_deref()
                                    .unwrap_or_default()
                                    .contains("still at least"),
                                "{what}"
                            );
                            by_floor += 1;
                        } else if full.unreachable.is_some() {
                            by_plan += 1;
                        }
                    }
                }
            }
        }
        assert!(sessions >= 20, "{sessions} sessions");
        assert!(by_floor > 0, "the floor never answered");
        // Both ways of answering ran, and the plans edited parts to compare.
        assert!(by_plan > 0, "the full plan never answered unreachable");
        assert!(edited > 100, "{edited} edited parts compared");
        assert!(stripped >= 3, "{stripped} sessions stripped");
        assert!(by_ceiling > 0, "the ceiling never answered");
    }
}
