//! What the next request of a session costs: tokens and bytes of the
//! model-visible view, and the agent's own overhead per request.

/// What the agent would send on the next turn, measured on the model-visible view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct NextTurn {
    /// Tokens the next request carries: the last reported context count plus
    /// the estimate of visible messages after it, or the estimate alone.
    pub tokens: u64,
    /// `true` when `tokens` starts from a reported count.
    pub reported: bool,
    /// Estimated tokens of the visible messages alone (characters / 4).
    pub tokens_estimated: u64,
    /// Tokens the agent adds beyond the messages (system prompt, tool schemas),
    /// derived as reported minus estimated at the last report; 0 without a report.
    pub overhead_tokens: u64,
    /// Bytes of the visible messages' content on the wire (base64 media included).
    pub wire_bytes: u64,
}

/// Measures the next turn of `s`. With `overhead`, uses that overhead instead
/// of deriving it.
pub fn next_turn(s: &crate::model::Session, overhead: Option<u64>) -> NextTurn {
    measure(s, overhead, &|_| true)
}

/// [`next_turn`] (no overhead given) of a copy of `s` that keeps only the
/// messages `kept` keeps, all of the model-visible view among them (the
/// cut of history an agent that replays its whole store gets from
/// `compact`, measured without making it): the view is the same, but a
/// count reported before `compact` changed the history calibrates on the
/// first turn the copy keeps.
pub fn next_turn_keeping(s: &crate::model::Session, kept: &dyn Fn(usize) -> bool) -> NextTurn {
    measure(s, None, kept)
}

/// [`next_turn`] on the messages of `s` that `kept` keeps.
fn measure(
    s: &crate::model::Session,
    overhead: Option<u64>,
    kept: &dyn Fn(usize) -> bool,
) -> NextTurn {
    use crate::model::Role;
    let est: Vec<u64> = s
        .visible
        .iter()
        .map(|&i| s.messages[i].tokens_estimated())
        .collect();
    let tokens_estimated: u64 = est.iter().sum();
    let wire_bytes = s.visible.iter().map(|&i| s.messages[i].wire_bytes()).sum();
    let last = s.visible.iter().rposition(|&i| {
        let m = &s.messages[i];
        m.role() == Role::Assistant && !m.summary() && !m.usage().is_zero()
    });
    // A count reported before `session-doctor compact` cut, stripped or
    // removed something it counted is about another history: it is not used
    // (the overhead then comes from the first turn, as for a copy).
    let rewritten_before = |k: usize| {
        s.visible[..=k]
            .iter()
            .any(|&i| s.messages[i].parts.iter().any(|p| p.rewritten))
    };
    let last = last.filter(|&k| !rewritten_before(k));
    let derived = last.map(|k| {
        let reported = s.messages[s.visible[k]].usage().overflow_count();
        reported.saturating_sub(est[..=k].iter().sum())
    });
    let stale = derived.is_none()
        && overhead.is_none()
        && s.visible.iter().any(|&i| {
            let m = &s.messages[i];
            m.role() == Role::Assistant && !m.summary() && !m.usage().is_zero()
        });
    let overhead_tokens = overhead
        .or(derived)
        .or_else(|| stale.then(|| first_overhead(s, kept)).flatten())
        .unwrap_or(0);
    NextTurn {
        tokens: tokens_estimated.saturating_add(overhead_tokens),
        reported: derived.is_some() && overhead.is_none(),
        tokens_estimated,
        overhead_tokens,
        wire_bytes,
    }
}

/// The agent's overhead measured at the first assistant with reported usage
/// whose history `session-doctor compact` did not change, among the
/// messages `kept` keeps.
fn first_overhead(s: &crate::model::Session, kept: &dyn Fn(usize) -> bool) -> Option<u64> {
    use crate::model::Role;
    let mut est = 0u64;
    for (i, m) in s.messages.iter().enumerate() {
        if !kept(i) {
            continue;
        }
        if m.parts.iter().any(|p| p.rewritten) {
            return None;
        }
        est = est.saturating_add(m.tokens_estimated());
        if m.role() == Role::Assistant && !m.summary() && !m.sidechain() && !m.usage().is_zero() {
            return Some(m.usage().overflow_count().saturating_sub(est));
        }
    }
    None
}

impl NextTurn {
    /// The same next turn with the agent's overhead at least `base`.
    pub fn at_least(self, base: u64) -> NextTurn {
        if self.overhead_tokens >= base {
            return self;
        }
        NextTurn {
            tokens: self.tokens_estimated.saturating_add(base),
            overhead_tokens: base,
            ..self
        }
    }
}

/// The most agent overhead [`next_turn`] (no overhead given) measures on a
/// copy of `s` whose edits only change parts (leaving `compact`'s markers)
/// and keep the messages `kept` keeps, the model-visible view among them:
/// the calibration on the last count while no changed part precedes it,
/// else on the first turn the copy keeps (unchanged when no changed part
/// precedes it), else none.
pub fn overhead_ceiling(s: &crate::model::Session, kept: &dyn Fn(usize) -> bool) -> u64 {
    next_turn(s, None)
        .overhead_tokens
        .max(first_overhead(s, &|_| true).unwrap_or(0))
        .max(first_overhead(s, kept).unwrap_or(0))
}

/// Tokens the agent adds to every request beyond the messages (system prompt,
/// tool schemas), calibrated where history is smallest: the first assistant
/// with reported usage (its count minus the estimate of the messages up to it),
/// and the last visible one; the smaller wins. 0 without any report.
pub fn agent_overhead(s: &crate::model::Session) -> u64 {
    use crate::model::Role;
    let has_usage = |m: &crate::model::Message| {
        m.role() == Role::Assistant && !m.summary() && !m.sidechain() && !m.usage().is_zero()
    };
    let first = s.messages.iter().position(has_usage).map(|a| {
        let est: u64 = s.messages[..=a].iter().map(|m| m.tokens_estimated()).sum();
        s.messages[a].usage().overflow_count().saturating_sub(est)
    });
    let last = next_turn(s, None);
    match (first, last.reported) {
        (Some(f), true) => f.min(last.overhead_tokens),
        (Some(f), false) => f,
        (None, _) => 0,
    }
}
