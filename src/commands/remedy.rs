//! The exact command that fixes a finding (`remedy_command`), printed with
//! it so a person or a CI log can run it as is.
//!
//! - `repair` and `compact` name the store the session was read from (as an
//!   absolute path, so the command works from any folder), the session
//!   (`--session=ID` when the id starts with `-`), and an output folder beside the store's layout root:
//!   `<copy base>.session-doctor/<session id>` (the copy base is the folder
//!   the agent's layout starts at: the db's folder, the Claude Code config
//!   dir, the Codex home), which is never inside an input or an agent's
//!   session folder, so the guard lets it through, and one folder per
//!   session, so two commands never collide.
//! - `compact` carries the budget flags and ignored codes the check ran
//!   with, from its flags or its config file (`--models-json` as an
//!   absolute path), and `--no-config` (so it
//!   measures and plans the same wherever it is run, whatever config file
//!   sits there), and for a stored failure the size of the request that
//!   failed as `--max-request-bytes` (a limit below it wedged the session).
//! - A command goes only with the findings it removes: the `compact` plan
//!   is judged by the rules of those findings' codes on the session as the
//!   plan leaves it (in memory), and a finding the copy would still have
//!   says why instead (a hermes-agent compaction loop is recorded by the
//!   earlier sessions of its chain, which the copy keeps).

use crate::config::Settings;
use crate::diagnose::{Code, Finding, Fix, Options, Severity};
use crate::formats::Store;
use crate::model::Session;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

fn quote(p: &Path) -> String {
    shell_words::quote(&p.display().to_string()).into_owned()
}

/// A folder name from a session id (ids are file-name safe in practice;
/// anything else becomes `_`).
fn safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where the `command` (`repair`, `compact`) remedy of session `id` in
/// `store` writes: `<copy base>.session-doctor/<command>/<id>`.
pub fn out_dir(store: &dyn Store, command: &str, id: &str) -> PathBuf {
    let base = absolute(&store.copier().copy_base());
    let mut name = base
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "sessions".into());
    name.push(".session-doctor");
    base.with_file_name(name).join(command).join(safe(id))
}

/// `p` absolute ([`crate::fsx::absolute`]): a printed command works from
/// any folder and names no path that starts with `-`.
fn absolute(p: &Path) -> PathBuf {
    crate::fsx::absolute(p)
}

/// The budget flags of `b` that differ from the defaults, and its ignored
/// codes that compact would otherwise act on (the others change nothing it
/// plans).
fn budget_flags(b: &Settings) -> Vec<String> {
    let mut v = Vec::new();
    if let (Some(c), Some(o)) = (b.limits.context, b.limits.max_output) {
        v.push(format!("--context {c} --max-output {o}"));
    }
    if let Some(i) = b.limits.input {
        v.push(format!("--input-limit {i}"));
    }
    if let Some(m) = &b.limits.model {
        v.push(format!("--model {}", shell_words::quote(m)));
    }
    if let Some(p) = &b.limits.models_json {
        // Absolute, as the store: a relative path (from the flag, or a
        // config file found through a relative path) names another file
        // once the command is run from another folder.
        v.push(format!("--models-json {}", quote(&absolute(p))));
    }
    if (b.headroom - crate::diagnose::DEFAULT_HEADROOM).abs() > f64::EPSILON {
        v.push(format!("--headroom {}", b.headroom));
    }
    for code in b.ignore.iter().filter(|c| c.fix() == Fix::Compact) {
        v.push(format!("--ignore {code}"));
    }
    v
}

/// Fills in `remedy_command` for the `findings` of `session` (diagnosed
/// with `options`) that a command fixes (at warning or above); the session
/// is used up by the planning. A compact command is printed only after planning
/// it: when compact cannot reach what the findings ask, the finding says
/// why instead; and only on the findings whose codes the planned copy no
/// longer reports (at warning or above), the others say so. A stored
/// failure of the request size suggests its size as `--max-request-bytes`
/// when that limit is reachable.
pub fn fill(
    store: &dyn Store,
    session: Session,
    findings: &mut [Finding],
    options: &Options,
    budget: &Settings,
) {
    let id = session.id.clone();
    // An id that starts with `-` would read as a flag after `--session `.
    let session_flag = if id.starts_with('-') {
        format!("--session={}", shell_words::quote(&id))
    } else {
        format!("--session {}", shell_words::quote(&id))
    };
    let head = |cmd: &str| {
        format!(
            "session-doctor {cmd} {} {session_flag} --out {}",
            quote(&absolute(store.path())),
            quote(&out_dir(store, cmd, &id))
        )
    };
    let wants_compact = findings
        .iter()
        .any(|f| f.fix == Fix::Compact && f.severity >= Severity::Warning);
    let mut compact_cmd: Result<String, Unreached> = Err(Unreached::default());
    // What the planned copy still reports, by code.
    let mut left: Vec<Finding> = Vec::new();
    if wants_compact {
        // Every setting the check ran with is carried as a flag: no config
        // file where the command is run may change what it plans.
        let mut c = head("compact") + " --no-config";
        for flag in budget_flags(budget) {
            c.push(' ');
            c.push_str(&flag);
        }
        let failed = findings
            .iter()
            .filter(|f| f.fix == Fix::Compact && f.severity >= Severity::Warning)
            .filter(|f| f.figures.get("judged_by").and_then(|v| v.as_str()) == Some("bytes"))
            .filter_map(|f| {
                f.figures
                    .get("failed_request_bytes")
                    .and_then(|v| v.as_u64())
            })
            .filter(|&b| b > 0)
            .min()
            .filter(|&b| b < budget.max_request_bytes);
        let user_limit = (budget.max_request_bytes != crate::diagnose::DEFAULT_MAX_REQUEST_BYTES)
            .then_some(budget.max_request_bytes);
        let target = |limit: Option<u64>| super::compact::target_of(options, findings, None, limit);
        let user = |session: Session| {
            reaches(store, Cow::Owned(session), &target(user_limit)).map(|planned| {
                let cmd = match user_limit {
                    Some(u) => format!("{c} --max-request-bytes {u}"),
                    None => c.clone(),
                };
                (cmd, planned)
            })
        };
        // The last plan edits the session itself (no copy of a huge
        // session is made only to find out whether compact can do it).
        let planned = match failed {
            Some(b) => match reaches(store, Cow::Borrowed(&session), &target(Some(b))) {
                Ok(planned) => Ok((format!("{c} --max-request-bytes {b}"), planned)),
                Err(_) => user(session),
            },
            None => user(session),
        };
        compact_cmd = planned.map(|(cmd, planned)| {
            if let Some(copy) = planned {
                left = still_reported(&copy, findings, options);
            }
            cmd
        });
    }
    for f in findings
        .iter_mut()
        .filter(|f| f.severity >= Severity::Warning)
    {
        f.remedy_command = match f.fix {
            Fix::None => None,
            Fix::Repair => Some(head("repair")),
            Fix::Compact => match &compact_cmd {
                Ok(c) => match left.iter().find(|g| g.code == f.code) {
                    None => Some(c.clone()),
                    Some(g) => {
                        f.remedy = format!(
                            "{} (session-doctor compact cannot clear it here: {})",
                            f.remedy,
                            left_why(g, &f.detail)
                        );
                        None
                    }
                },
                Err(u) => {
                    // The loop's own advice is to cut below the trigger,
                    // which the history already is: what is left is said
                    // alone, not after advice the figures rule out.
                    let under = u
                        .already_under
                        .filter(|_| f.code == Code::CompactionLoop)
                        .and_then(|(next, _)| crate::diagnose::remedy_already_under(f, next));
                    f.remedy = under.unwrap_or_else(|| {
                        format!(
                            "{} (session-doctor compact cannot do it here: {})",
                            f.remedy, u.why
                        )
                    });
                    if let Some((next, goal)) = u.already_under {
                        f.figures
                            .insert("compact_next_turn_tokens".into(), next.into());
                        f.figures.insert("compact_goal_tokens".into(), goal.into());
                    }
                    if let Some(short) = &u.shortfall {
                        f.figures.insert(
                            "compact_shortfall".into(),
                            serde_json::to_value(short).unwrap_or_default(),
                        );
                    }
                    None
                }
            },
        };
    }
}

/// The findings the copy `compact` plans would still report (one per code,
/// at warning or above), among the codes of `findings` that ask for compact:
/// their rules run on `copy`, the session as the plan left it in memory
/// (each rule a pure function of the session: no copy is written or read
/// back).
fn still_reported(copy: &Session, findings: &[Finding], options: &Options) -> Vec<Finding> {
    let mut codes: Vec<Code> = findings
        .iter()
        .filter(|f| f.fix == Fix::Compact && f.severity >= Severity::Warning)
        .map(|f| f.code)
        .collect();
    codes.sort_unstable();
    codes.dedup();
    let facts = crate::diagnose::Facts::new(copy);
    codes
        .into_iter()
        .filter_map(|code| {
            (crate::diagnose::rule(code).check)(&facts, options)
                .into_iter()
                .find(|g| g.severity >= Severity::Warning)
        })
        .collect()
}

/// Why the copy still has `left` (its finding of the code), and what to
/// do instead; its detail when it is not the original's (`detail`).
fn left_why(left: &Finding, detail: &str) -> String {
    let on_copy = if left.detail == detail {
        String::new()
    } else {
        format!(": {}", left.detail)
    };
    match left.code {
        Code::CompactionLoop => format!(
            "the copy it writes keeps the compactions of the loop, so it reports it too{on_copy}; resume the session and see whether the agent compacts again, else switch to a model with a larger context"
        ),
        _ => format!("the copy it writes still reports it{on_copy}"),
    }
}

/// Why `session-doctor compact` cannot reach what a session's findings ask:
/// the sentence, and its figures when the budget is out of reach.
#[derive(Debug, Default)]
struct Unreached {
    why: String,
    shortfall: Option<Box<crate::treat::compact::Shortfall>>,
    /// When compact would change nothing because the next turn is already
    /// under the token goal: (next-turn tokens, goal tokens).
    already_under: Option<(u64, u64)>,
}

impl Unreached {
    /// Compact's plan makes no edit: the next turn (`next_turn` tokens,
    /// overhead included) already meets every goal. Said with the figures
    /// when a token goal (`below`) set it, so the reader sees why.
    fn nothing_to_change(next_turn: u64, below: Option<u64>) -> Unreached {
        match below.filter(|&b| next_turn < b) {
            Some(b) => Unreached {
                why: format!(
                    "it would change nothing, as the next turn is already estimated at {next_turn} tokens, under the {b} a cut aims below"
                ),
                shortfall: None,
                already_under: Some((next_turn, b)),
            },
            None => Unreached {
                why: "it would change nothing".into(),
                ..Unreached::default()
            },
        }
    }
}

/// Whether `session-doctor compact` reaches its goals on `session` for
/// `target` (only that: the plan's edits are not described, compact itself
/// does that), with the session as the plan left it when it applied steps
/// (`None` when it answered without: strip-media alone surely fits); the
/// reason when it cannot.
fn reaches(
    store: &dyn Store,
    session: Cow<'_, Session>,
    target: &crate::treat::compact::Target,
) -> Result<Option<Session>, Unreached> {
    let (p, planned) =
        crate::treat::compact::plan_to_reach_keeping(store.copier(), session, target).map_err(
            |e| Unreached {
                why: crate::error::chain(&e),
                ..Unreached::default()
            },
        )?;
    match (p.unreachable, p.edits.is_empty()) {
        (Some(why), _) => Err(Unreached {
            why,
            shortfall: p.shortfall.map(Box::new),
            already_under: None,
        }),
        (None, true) => Err(Unreached::nothing_to_change(
            p.before.tokens_next_turn,
            target.goals.below_tokens,
        )),
        (None, false) => Ok(planned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan with no edit is said with its figures when a token goal is
    /// what the next turn already meets; otherwise in the short words.
    #[test]
    fn nothing_to_change_names_the_figures_of_a_met_token_goal() {
        let u = Unreached::nothing_to_change(1353, Some(57000));
        assert_eq!(u.already_under, Some((1353, 57000)));
        assert_eq!(
            u.why,
            "it would change nothing, as the next turn is already estimated at 1353 tokens, under the 57000 a cut aims below"
        );
        for (next, goal) in [(100, None), (57000, Some(57000)), (60000, Some(57000))] {
            let u = Unreached::nothing_to_change(next, goal);
            assert_eq!(
                (u.why.as_str(), u.already_under),
                ("it would change nothing", None)
            );
        }
    }
}
