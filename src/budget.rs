//! Model limits and the token budgets derived from them.
//!
//! Limits come from, in order: explicit flags (`--context`, `--max-output`,
//! `--input-limit`); `--model provider/model` looked up in a models.dev JSON
//! (`--models-json`, else `~/.cache/opencode/models.json`, else
//! `~/.cache/kilo/models.json`); the session's own model looked up the same
//! way; a small built-in table. A session that stored its own limits (Codex)
//! uses them after the flags and `--model`, before any lookup. Budget against the model the session resumes
//! with (its newest assistant's model), never a compaction agent's model.

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A model's limits, in tokens, and where they came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// `provider/model`, when known.
    pub model: Option<String>,
    /// Context window (tokens).
    pub context: u64,
    /// Maximum output tokens.
    pub max_output: u64,
    /// Input limit (tokens), when the provider has one separate from the context.
    pub input: Option<u64>,
    /// `flags`, `models.dev <path>`, or `built-in table (...)`.
    pub source: String,
}

/// Budgets derived from [`Limits`] (all in tokens).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub limits: Limits,
    /// What a session may send: `context x 0.9 - max_output` (Kilo's legacy
    /// rule: reserve the output plus 10% for system prompt, tool schemas and
    /// plugin context); with an input limit, `input - reserved - input / 10`.
    pub usable: u64,
    /// Where opencode itself compacts: `context - max_output`, or
    /// `input - reserved` (opencode 1.18.33 `isOverflow`).
    pub agent_threshold: u64,
    /// `min(20000, max_output)`: opencode's `compaction.reserved` default.
    pub reserved: u64,
    /// Budget for recent tool output: 20% of usable, floor 8000 clamped to usable.
    pub tool_output: u64,
    /// Budget of one oversized part or an overflow: 5% of usable, floor 2000 clamped to usable.
    pub overflow: u64,
}

/// opencode's `COMPACTION_BUFFER` (tokens).
pub const COMPACTION_BUFFER: u64 = 20_000;
/// Floor of the tool-output budget (tokens), clamped to usable.
pub const TOOL_OUTPUT_FLOOR: u64 = 8_000;
/// Floor of the overflow budget (tokens), clamped to usable.
pub const OVERFLOW_FLOOR: u64 = 2_000;

impl Budget {
    /// Computes the budgets of `limits`.
    pub fn new(limits: Limits) -> Budget {
        let reserved = COMPACTION_BUFFER.min(limits.max_output);
        let (usable, agent_threshold) = match limits.input {
            Some(input) => (
                input.saturating_sub(reserved).saturating_sub(input / 10),
                input.saturating_sub(reserved),
            ),
            None => (
                (limits.context * 9 / 10).saturating_sub(limits.max_output),
                limits.context.saturating_sub(limits.max_output),
            ),
        };
        Budget {
            usable,
            agent_threshold,
            reserved,
            tool_output: (usable / 5).max(TOOL_OUTPUT_FLOOR.min(usable)),
            overflow: (usable / 20).max(OVERFLOW_FLOOR.min(usable)),
            limits,
        }
    }
}

/// Built-in limits of common models (provider/model, context, input, output),
/// facts from models.dev `limit.{context,input,output}` as of 2025-10.
pub const BUILT_IN: &[(&str, u64, Option<u64>, u64)] = &[
    ("anthropic/claude-sonnet-4-5", 200_000, None, 64_000),
    ("anthropic/claude-sonnet-4", 200_000, None, 64_000),
    ("anthropic/claude-opus-4-1", 200_000, None, 32_000),
    ("anthropic/claude-haiku-4-5", 200_000, None, 64_000),
    ("openai/gpt-5", 400_000, Some(272_000), 128_000),
    ("openai/gpt-4.1", 1_047_576, None, 32_768),
    ("openai/gpt-4o", 128_000, None, 16_384),
    ("google/gemini-2.5-pro", 1_048_576, None, 65_536),
];

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct LimitOptions {
    pub context: Option<u64>,
    pub max_output: Option<u64>,
    pub input: Option<u64>,
    pub model: Option<String>,
    pub models_json: Option<PathBuf>,
}

/// The models.dev JSON files to try, in order.
fn models_json_paths(opts: &LimitOptions) -> Vec<PathBuf> {
    if let Some(p) = &opts.models_json {
        return vec![p.clone()];
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match cache {
        Some(c) => vec![c.join("opencode/models.json"), c.join("kilo/models.json")],
        None => Vec::new(),
    }
}

/// A models.dev JSON file, read and parsed once per run (every session of
/// a run looks its model up in the same parsed document), with the size cap
/// of [`crate::fsx::MAX_JSON_DOC_BYTES`] and regular files only (a path to
/// `/dev/zero` is refused by its type, not read).
pub fn models_dev(path: &Path) -> Result<std::sync::Arc<Value>, String> {
    type Cache = rustc_hash::FxHashMap<PathBuf, Result<std::sync::Arc<Value>, String>>;
    static CACHE: std::sync::OnceLock<std::sync::Mutex<Cache>> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(r) = cache.lock().ok().and_then(|c| c.get(path).cloned()) {
        return r;
    }
    let r = crate::fsx::read_capped(path, crate::fsx::MAX_JSON_DOC_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            serde_json::from_slice::<Value>(&b)
                .map_err(|e| format!("not a models.dev JSON document ({e})"))
        })
        .and_then(|v| {
            if v.is_object() {
                Ok(std::sync::Arc::new(v))
            } else {
                Err("not a models.dev JSON document (expected an object of providers)".into())
            }
        });
    if let Ok(mut c) = cache.lock() {
        c.insert(path.to_path_buf(), r.clone());
    }
    r
}

/// Checks the models.dev JSON named by `--models-json` once per run: `Err`
/// says why it cannot be used (the run reports it and goes on without it).
pub fn check_models_json(opts: &LimitOptions) -> Result<(), crate::error::InputError> {
    match &opts.models_json {
        Some(p) => models_dev(p)
            .map(|_| ())
            .map_err(|e| crate::error::InputError::new(p, e)),
        None => Ok(()),
    }
}

/// Looks `provider/model` up in a models.dev JSON
/// (`{provider: {models: {model: {limit: {context, input?, output}}}}}`).
pub fn lookup_models_dev(path: &Path, model: &str) -> Option<Limits> {
    let (provider, id) = model.split_once('/')?;
    let v = models_dev(path).ok()?;
    let limit = v.get(provider)?.get("models")?.get(id)?.get("limit")?;
    let context = limit.get("context")?.as_u64()?;
    if context == 0 {
        return None;
    }
    Some(Limits {
        model: Some(model.to_string()),
        context,
        max_output: limit.get("output").and_then(Value::as_u64).unwrap_or(0),
        input: limit
            .get("input")
            .and_then(Value::as_u64)
            .filter(|&i| i > 0),
        source: format!("models.dev {}", path.display()),
    })
}

/// `model` without a trailing `-YYYYMMDD` release date
/// (`anthropic/claude-sonnet-4-5-20250929` -> `anthropic/claude-sonnet-4-5`).
fn undated(model: &str) -> &str {
    match model.rsplit_once('-') {
        Some((base, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => model,
    }
}

fn built_in(model: &str) -> Option<Limits> {
    BUILT_IN
        .iter()
        .find(|(m, ..)| *m == model || *m == undated(model))
        .map(|(m, c, i, o)| Limits {
            model: Some(m.to_string()),
            context: *c,
            max_output: *o,
            input: *i,
            source: "built-in table (models.dev, 2025-10)".into(),
        })
}

fn lookup(opts: &LimitOptions, model: &str) -> Option<Limits> {
    models_json_paths(opts)
        .iter()
        .find_map(|p| lookup_models_dev(p, model))
        .or_else(|| built_in(model))
}

/// Resolves the limits for a session whose model is `session_model`.
/// `Err` says why none could be found (the caller tells the user which flags to pass).
pub fn resolve(opts: &LimitOptions, session_model: Option<&str>) -> Result<Limits, String> {
    resolve_with_stored(opts, session_model, None)
}

/// [`resolve`] for a session that stored its own limits (`stored`, e.g. Codex
/// `task_started.model_context_window`): flags first, then `--model`, then the
/// stored limits, then the session's model looked up.
pub fn resolve_with_stored(
    opts: &LimitOptions,
    session_model: Option<&str>,
    stored: Option<&Limits>,
) -> Result<Limits, String> {
    if let (Some(context), Some(max_output)) = (opts.context, opts.max_output) {
        return Ok(Limits {
            model: opts.model.clone().or(session_model.map(str::to_string)),
            context,
            max_output,
            input: opts.input,
            source: "flags".into(),
        });
    }
    if opts.context.is_some() || opts.max_output.is_some() {
        return Err("--context and --max-output go together".into());
    }
    if let Some(m) = &opts.model {
        return lookup(opts, m).ok_or_else(|| {
            format!("model {m} not found in models.dev JSON or the built-in table")
        });
    }
    if let Some(l) = stored {
        return Ok(l.clone());
    }
    match session_model {
        Some(m) => lookup(opts, m).ok_or_else(|| {
            format!("no limits known for the session's model {m}; pass --context N --max-output N (or --model, --models-json)")
        }),
        None => Err("the session names no model; pass --context N --max-output N".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(context: u64, max_output: u64, input: Option<u64>) -> Limits {
        Limits {
            model: None,
            context,
            max_output,
            input,
            source: "test".into(),
        }
    }

    #[test]
    fn usable_follows_kilo_rule_and_input_limit_rule() {
        let b = Budget::new(limits(200_000, 64_000, None));
        assert_eq!(b.usable, 116_000);
        assert_eq!(b.agent_threshold, 136_000);
        let b = Budget::new(limits(400_000, 128_000, Some(272_000)));
        assert_eq!(b.reserved, 20_000);
        assert_eq!(b.usable, 272_000 - 20_000 - 27_200);
        assert_eq!(b.agent_threshold, 252_000);
    }

    #[test]
    fn floors_never_exceed_usable_on_small_models() {
        // The opencode-gen stub model: context 8000, output 1000.
        let b = Budget::new(limits(8_000, 1_000, None));
        assert_eq!(b.usable, 6_200);
        assert_eq!(b.agent_threshold, 7_000);
        assert_eq!(b.tool_output, 6_200);
        assert_eq!(b.overflow, 2_000);
        let b = Budget::new(limits(4_096, 2_048, None));
        assert_eq!(b.usable, 1_638);
        assert!(b.tool_output <= b.usable && b.overflow <= b.usable);
    }

    #[test]
    fn flags_win_and_unknown_models_say_so() {
        let o = LimitOptions {
            context: Some(8000),
            max_output: Some(1000),
            ..Default::default()
        };
        assert_eq!(
            resolve(&o, Some("stub/stub-small")).unwrap().source,
            "flags"
        );
        let o = LimitOptions {
            models_json: Some(PathBuf::from("/nonexistent.json")),
            ..Default::default()
        };
        assert!(resolve(&o, Some("stub/stub-small"))
            .unwrap_err()
            .contains("--context"));
        assert_eq!(
            resolve(&o, Some("openai/gpt-5")).unwrap().input,
            Some(272_000)
        );
    }

    #[test]
    fn models_dev_json_is_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("models.json");
        std::fs::write(
            &p,
            r#"{"stub":{"id":"stub","models":{"stub-small":{"id":"stub-small","limit":{"context":8000,"output":1000}}}}}"#,
        )
        .unwrap();
        let o = LimitOptions {
            models_json: Some(p),
            ..Default::default()
        };
        let l = resolve(&o, Some("stub/stub-small")).unwrap();
        assert_eq!((l.context, l.max_output, l.input), (8000, 1000, None));
        assert!(l.source.starts_with("models.dev"));
    }
}
