//! What docker-agent does with a loaded item list, on stored data only
//! (docs/formats/docker-agent.md sections 6, 7 and 11):
//! - the model-visible view (`Session.GetMessages`: the last summary as a
//!   user message "Session Summary: …", then the message items from
//!   `first_kept_entry` when `0 < first_kept_entry < summary index`, else
//!   after the summary; `normalizeMessageContent`; `sanitizeToolCalls`);
//! - tool calls paired with their results (a call without a result before
//!   the next user or assistant message stays pending);
//! - each summary's trigger (context size of the last assistant usage
//!   before it) and its `first_kept_entry` judged against the view rule and
//!   the compactor's own rule (`compactor.RunLLM` / `ComputeFirstKeptEntry`,
//!   newest revision), earlier stale values corrected first.

use super::parse::{Est, Facts, MsgRole, What, NO_RESULT, SUMMARY_PREFIX};
use crate::model::{KeptEntry, KeptStale, Session, ToolStatus};

/// `compaction.SplitIndexForKeep`'s keep budget: `min(20000, context / 5)`,
/// 20000 when the limit is unknown and for every window of 100K tokens or
/// more (the context limit is not stored with the session).
pub const KEEP_BUDGET: u64 = 20_000;
const PER_MESSAGE: u64 = 5;

/// The items of docker-agent's in-memory list, in order.
fn slice(facts: &[Facts]) -> Vec<&Facts> {
    facts.iter().filter(|f| f.slice.is_some()).collect()
}

/// The start of the view after the summary at `last` with first kept entry
/// `kept` (`buildSessionSummaryMessages`).
pub fn start_after(last: usize, kept: i64) -> usize {
    if kept > 0 && (kept as u64) < last as u64 {
        kept as usize
    } else {
        last + 1
    }
}

/// Estimator calibration (`NewEstimator`): ratio of provider prompt deltas
/// between consecutive assistant usages (same model) to the heuristic
/// estimate of the messages between them, trusted above 512 heuristic
/// tokens, clamped to [0.75, 2.0].
fn scale(msgs: &[Est]) -> f64 {
    let (mut rep_sum, mut est_sum) = (0i64, 0i64);
    let (mut win_h, mut win_r) = (0i64, 0i64);
    let mut prev_total: i64 = -1;
    let mut prev_model: Option<&str> = None;
    for m in msgs {
        if m.prompt == 0 {
            if m.reported > 0 {
                win_r += m.reported + PER_MESSAGE as i64;
            } else {
                win_h += m.heuristic as i64;
            }
            continue;
        }
        let model = m.model.as_deref().unwrap_or("");
        let pm = prev_model.unwrap_or("");
        if prev_total >= 0 && win_h > 0 && (pm.is_empty() || model.is_empty() || pm == model) {
            let actual = m.prompt as i64 - prev_total - win_r;
            if actual > 0 {
                rep_sum += actual;
                est_sum += win_h;
            }
        }
        prev_total = m.total as i64;
        prev_model = Some(model);
        win_h = 0;
        win_r = 0;
    }
    if est_sum < 512 {
        return 1.0;
    }
    (rep_sum as f64 / est_sum as f64).clamp(0.75, 2.0)
}

fn estimate(m: &Est, scale: f64) -> u64 {
    if m.reported > 0 {
        m.reported as u64 + PER_MESSAGE
    } else {
        (m.heuristic as f64 * scale) as u64
    }
}

/// `SplitIndexForKeep`: walking back from the newest message, the index of
/// the last user or assistant message seen before the sum exceeds
/// `budget`; `len` when everything fits ("compact everything").
fn split_index_for_keep(msgs: &[(Est, bool)], budget: u64) -> usize {
    let ests: Vec<Est> = msgs.iter().map(|(e, _)| e.clone()).collect();
    let sc = scale(&ests);
    let mut tokens = 0u64;
    let mut last_valid = msgs.len();
    for i in (0..msgs.len()).rev() {
        tokens += estimate(&msgs[i].0, sc);
        if tokens > budget {
            return last_valid;
        }
        if msgs[i].1 {
            last_valid = i;
        }
    }
    msgs.len()
}

/// Heuristic figures of the synthetic "Session Summary: …" user message.
fn summary_est(text_bytes: u64) -> Est {
    Est {
        heuristic: (SUMMARY_PREFIX.len() as u64 + text_bytes) * 2 / 7 + PER_MESSAGE,
        ..Default::default()
    }
}

/// The compactor's `first_kept_entry` for a summary appended at index `at`
/// (`ComputeFirstKeptEntry` on `CompactionInput`): `at` itself ("keep
/// nothing") when the input fits the keep budget, else the item index of
/// the user or assistant message the kept tail starts at. `kept[k]` is the
/// (corrected) first kept entry of the summary at slice index `k`.
fn compactor_rule(items: &[&Facts], at: usize, kept: &[Option<i64>]) -> u64 {
    let last = (0..at)
        .rev()
        .find(|&k| matches!(items[k].what, What::Summary { text_bytes, .. } if text_bytes > 0));
    let mut msgs: Vec<(Est, bool)> = Vec::new();
    let mut idx: Vec<usize> = Vec::new();
    let start = match last {
        Some(l) => {
            if let What::Summary { text_bytes, .. } = items[l].what {
                msgs.push((summary_est(text_bytes), true));
                idx.push(l);
            }
            start_after(l, kept[l].unwrap_or(0))
        }
        None => 0,
    };
    for (k, f) in items.iter().enumerate().take(at).skip(start) {
        if let What::Message { role, est, .. } = &f.what {
            if *role != MsgRole::System {
                msgs.push((
                    est.clone(),
                    matches!(role, MsgRole::User | MsgRole::Assistant),
                ));
                idx.push(k);
            }
        }
    }
    let split = split_index_for_keep(&msgs, KEEP_BUDGET);
    if split >= idx.len() {
        at as u64
    } else {
        idx[split] as u64
    }
}

/// Judges every summary's stored `first_kept_entry`, oldest first; a stale
/// value is judged as replaced by the compactor's rule before the next one
/// is looked at (what `repair` writes). Returns (slice index, entry).
fn kept_entries(items: &[&Facts]) -> Vec<(usize, KeptEntry)> {
    let mut out = Vec::new();
    let mut corrected: Vec<Option<i64>> = vec![None; items.len()];
    let mut previous_start = 0u64;
    for (at, f) in items.iter().enumerate() {
        let What::Summary {
            text_bytes,
            stored,
            doctor,
        } = f.what
        else {
            continue;
        };
        if text_bytes == 0 {
            continue;
        }
        let rule = compactor_rule(items, at, &corrected);
        let effective_start = start_after(at, stored) as u64;
        let message_in = |from: u64, to: u64| {
            (from..to).any(|k| matches!(items[k as usize].what, What::Message { .. }))
        };
        let stale = if stored == 0 || stored == at as i64 {
            None
        } else if stored < 0 || stored > at as i64 {
            Some(KeptStale::OutOfRange)
        } else if !doctor
            && (stored as u64) < previous_start
            && message_in(stored as u64, previous_start)
        {
            Some(KeptStale::BeforePrevious)
        } else {
            let first_sent = (stored as usize..at).find_map(|k| match &items[k].what {
                What::Message { role, .. } => Some(*role),
                _ => None,
            });
            (first_sent == Some(MsgRole::Tool)).then_some(KeptStale::OnToolResult)
        };
        let value = if stale.is_some() { rule as i64 } else { stored };
        corrected[at] = Some(value);
        let corrected_start = start_after(at, value) as u64;
        out.push((
            at,
            KeptEntry {
                stored,
                index: at as u64,
                effective_start,
                previous_start,
                rule,
                corrected_start,
                stale,
            },
        ));
        previous_start = corrected_start;
    }
    out
}

/// Computes the view, tool-call statuses, summary triggers and kept entries
/// of `s` from its items' `facts`.
pub fn finish(s: &mut Session, facts: &[Facts]) {
    let items = slice(facts);
    // Tool calls answered before the next user or assistant message.
    let mut pending: Vec<(String, usize, usize)> = Vec::new();
    for f in &items {
        let (
            Some(mi),
            What::Message {
                role,
                calls,
                result_for,
                ..
            },
        ) = (f.msg, &f.what)
        else {
            continue;
        };
        match role {
            MsgRole::Tool => {
                let Some(id) = result_for else { continue };
                if let Some(k) = pending.iter().position(|(c, ..)| c == id) {
                    let (_, cm, cp) = pending.remove(k);
                    let name = s.messages[cm].parts[cp]
                        .tool
                        .as_ref()
                        .map(|t| t.name.clone())
                        .unwrap_or_else(|| crate::model::sym(""));
                    if let Some(t) = s.messages[cm].parts[cp].tool.as_mut() {
                        t.status = ToolStatus::Completed;
                    }
                    if let Some(t) = s.messages[mi]
                        .parts
                        .first_mut()
                        .and_then(|p| p.tool.as_mut())
                    {
                        t.name = name;
                    }
                }
            }
            MsgRole::User | MsgRole::Assistant => {
                pending.clear();
                pending.extend(calls.iter().map(|(c, p)| (c.clone(), mi, *p)));
            }
            _ => {}
        }
    }
    // Kept entries and triggers.
    let entries = kept_entries(&items);
    for (at, e) in entries {
        let Some(mi) = items[at].msg else { continue };
        let trigger = items[..at].iter().rev().find_map(|f| {
            let m = &s.messages[f.msg?];
            (m.role() == crate::model::Role::Assistant && !m.usage().is_zero())
                .then(|| m.usage().overflow_count())
        });
        let tail = (e.effective_start < at as u64)
            .then(|| items[e.effective_start as usize].msg)
            .flatten()
            .map(|i| s.messages[i].id.to_string());
        if let Some(c) = s.messages[mi]
            .parts
            .first_mut()
            .and_then(|p| p.compaction_mut())
        {
            c.trigger_tokens = trigger;
            c.tail_start_id = tail;
            c.kept_entry = Some(Box::new(e));
        }
    }
    // The view.
    s.visible = view(s, &items);
}

/// `GetMessages` on stored data: indexes into `s.messages`, in the order
/// sent. A call left without a result in the view gets docker-agent's
/// synthetic result, counted in its part's wire bytes.
fn view(s: &mut Session, items: &[&Facts]) -> Vec<usize> {
    let last = items
        .iter()
        .rposition(|f| matches!(f.what, What::Summary { text_bytes, .. } if text_bytes > 0));
    let mut out = Vec::new();
    let start = match last {
        Some(l) => {
            out.extend(items[l].msg);
            match items[l].what {
                What::Summary { stored, .. } => start_after(l, stored),
                _ => l + 1,
            }
        }
        None => 0,
    };
    let mut pending: Vec<(String, usize, usize)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let mut inject = Vec::new();
    let flush = |pending: &mut Vec<(String, usize, usize)>,
                 answered: &mut Vec<String>,
                 inject: &mut Vec<(usize, usize)>| {
        for (id, m, p) in pending.drain(..) {
            if !id.is_empty() && !answered.contains(&id) {
                inject.push((m, p));
            }
        }
        answered.clear();
    };
    for f in items.iter().skip(start) {
        let (
            Some(mi),
            What::Message {
                role,
                blank,
                calls,
                result_for,
                ..
            },
        ) = (f.msg, &f.what)
        else {
            continue;
        };
        if *blank {
            continue;
        }
        match role {
            MsgRole::Tool => {
                let id = result_for.clone().unwrap_or_default();
                if id.is_empty()
                    || !pending.iter().any(|(c, ..)| *c == id)
                    || answered.contains(&id)
                {
                    continue;
                }
                answered.push(id);
            }
            MsgRole::Assistant if !calls.is_empty() => {
                flush(&mut pending, &mut answered, &mut inject);
                pending.extend(calls.iter().map(|(c, p)| (c.clone(), mi, *p)));
            }
            MsgRole::User | MsgRole::Assistant => flush(&mut pending, &mut answered, &mut inject),
            _ => {}
        }
        out.push(mi);
    }
    flush(&mut pending, &mut answered, &mut inject);
    for (m, p) in inject {
        if let Some(part) = s.messages[m].parts.get_mut(p) {
            part.set_wire_bytes(part.wire_bytes() + NO_RESULT.len() as u64);
        }
    }
    out
}
