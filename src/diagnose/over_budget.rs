//! `over-budget`: the tokens the agent would send on the next turn (the
//! model-visible view: last reported context count plus the estimate of what
//! follows it, else the estimate) exceed the model's usable budget
//! (`context x 0.9 - max_output`, or the input-limit rule; see [`crate::budget`]).

use super::{Code, Finding, Options, Severity};
use crate::model::Session;
use crate::sizing::next_turn;

pub fn check(s: &Session, o: &Options) -> Vec<Finding> {
    let Ok(b) = &o.budget else { return Vec::new() };
    let nt = next_turn(s, None);
    if nt.tokens <= b.usable {
        return Vec::new();
    }
    let model = b.limits.model.clone().unwrap_or_else(|| "the model".into());
    let last = s.visible.last().map(|&i| s.messages[i].id.as_str());
    vec![Finding::new(
        Code::OverBudget,
        Severity::Error,
        last,
        format!(
            "the next turn carries {} tokens ({}), over the usable {} of {model} (context {}, max output {}; limits from {}); the agent itself compacts at {}",
            nt.tokens,
            if nt.reported { "reported" } else { "estimated" },
            b.usable,
            b.limits.context,
            b.limits.max_output,
            b.limits.source,
            b.agent_threshold
        ),
        "shrink the session offline with `session-doctor compact` against the model it resumes with",
    )
    .with("tokens", nt.tokens)
    .with("tokens_source", if nt.reported { "reported" } else { "estimated" })
    .with("tokens_estimated", nt.tokens_estimated)
    .with("usable", b.usable)
    .with("agent_threshold", b.agent_threshold)
    .with("context", b.limits.context)
    .with("max_output", b.limits.max_output)
    .with("input_limit", b.limits.input)
    .with("model", b.limits.model.clone())
    .with("limits_source", b.limits.source.clone())]
}
