//! The config file, `session-doctor.toml`: defaults for the flags of the
//! commands that judge sessions (`list`, `check`, `compact`), as
//! `clippy.toml` is for clippy.
//!
//! - **Where.** `--config PATH`, else `./session-doctor.toml`, else
//!   `$XDG_CONFIG_HOME/session-doctor/config.toml` (else
//!   `$HOME/.config/session-doctor/config.toml`); the first that exists is
//!   read, files are never merged. `--no-config` reads none.
//! - **Keys.** `ignore`, `fail_on`, `context`, `max_output`, `input_limit`,
//!   `model`, `models_json`, `max_request_bytes`, `headroom`, each as its
//!   flag (see [`Config`]). An unknown key or a bad value is an error naming
//!   the file, the line and the key.
//! - **Flags win.** A flag overrides its key; `--ignore` adds to `ignore`; a
//!   command line naming the model's limits in any way (`--context`,
//!   `--max-output`, `--input-limit`, `--model`) replaces all four of the
//!   file's limit keys, so a file's `context` never outranks a `--model`.

use crate::cli::{check_headroom, FailOn, Judging};
use crate::diagnose::{Code, Options, RULES};
use anyhow::Result;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The name looked up in the current directory.
pub const FILE_NAME: &str = "session-doctor.toml";

/// The contents of a config file. Every key is optional; unknown keys are
/// errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Finding codes to leave out everywhere (as `--ignore`); checked by
    /// [`parse`], which names the line of an unknown one.
    #[serde(default)]
    pub ignore: Vec<Spanned<String>>,
    /// The severity that fails `check` (as `--fail-on`).
    pub fail_on: Option<FailOnName>,
    /// Context window of the model (tokens; as `--context`, with `max_output`).
    pub context: Option<Spanned<NonZeroU64>>,
    /// Maximum output tokens of the model (as `--max-output`, with `context`).
    pub max_output: Option<Spanned<u64>>,
    /// Input limit of the model (tokens; as `--input-limit`).
    pub input_limit: Option<u64>,
    /// `provider/model` to look the limits up for (as `--model`).
    pub model: Option<String>,
    /// models.dev JSON (as `--models-json`; relative to the config file's folder).
    pub models_json: Option<PathBuf>,
    /// Largest request body accepted (bytes; as `--max-request-bytes`).
    pub max_request_bytes: Option<NonZeroU64>,
    /// Share of the request limit kept for what the agent adds (as `--headroom`).
    pub headroom: Option<Headroom>,
}

/// A `--fail-on` value, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailOnName(pub FailOn);

impl<'de> Deserialize<'de> for FailOnName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use clap::ValueEnum;
        let s = String::deserialize(d)?;
        FailOn::from_str(&s, false).map(FailOnName).map_err(|_| {
            D::Error::custom(format!(
                "unknown severity `{s}`; expected one of: {}",
                FailOn::value_variants()
                    .iter()
                    .filter_map(|v| v.to_possible_value())
                    .map(|v| v.get_name().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

/// A `--headroom` value: a share from 0 to 0.95.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headroom(pub f64);

impl<'de> Deserialize<'de> for Headroom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        check_headroom(v)
            .map(Headroom)
            .map_err(|e| D::Error::custom(format!("{v} is {e}")))
    }
}

/// Where a config file is looked up when no `--config` is given, in order:
/// `./session-doctor.toml`, then `$XDG_CONFIG_HOME/session-doctor/config.toml`
/// (an absolute `$XDG_CONFIG_HOME`), else `$HOME/.config/session-doctor/config.toml`.
pub fn candidates() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(FILE_NAME)];
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(b) = base {
        v.push(b.join("session-doctor").join("config.toml"));
    }
    v
}

/// The config file to read: `explicit`, else the first of [`candidates`]
/// that exists; none with `disabled`.
pub fn find(explicit: Option<&Path>, disabled: bool) -> Option<PathBuf> {
    if disabled {
        return None;
    }
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    candidates()
        .into_iter()
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

/// Reads and checks the config file at `path`. Errors name the file, and
/// for a bad key or value its line, column and key.
pub fn load(path: &Path) -> Result<Config> {
    use crate::fsx::CappedError;
    let bytes = crate::fsx::read_capped(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        CappedError::Io(e) => anyhow::anyhow!("cannot read config file {}: {e}", path.display()),
        CappedError::TooLarge(n) => anyhow::anyhow!(
            "config file {}: {n} bytes, more than the {} KiB a config file may have",
            path.display(),
            MAX_CONFIG_BYTES >> 10
        ),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("config file {}: not UTF-8 text ({e})", path.display()))?;
    parse(&text, path)
}

/// The largest config file read (1 MiB, bytes): a config of a few lines is
/// never near it; a path naming something else (`/dev/zero`, a huge file)
/// is refused rather than read without end.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Parses `text`, the contents of the config file `path`.
pub fn parse(text: &str, path: &Path) -> Result<Config> {
    let mut c: Config = toml::from_str(text).map_err(|e| {
        anyhow::anyhow!(located(path, text, e.span().map(|s| s.start), e.message()))
    })?;
    if let Some(bad) = c.ignore.iter().find(|k| Code::parse(k.get_ref()).is_none()) {
        anyhow::bail!(located(
            path,
            text,
            Some(bad.span().start),
            &format!(
                "unknown finding code `{}`; valid codes: {}",
                bad.get_ref(),
                RULES
                    .iter()
                    .map(|r| r.code.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        ));
    }
    match (&c.context, &c.max_output) {
        (Some(k), None) => anyhow::bail!(located(
            path,
            text,
            Some(k.span().start),
            "needs `max_output` as well (the two go together)"
        )),
        (None, Some(k)) => anyhow::bail!(located(
            path,
            text,
            Some(k.span().start),
            "needs `context` as well (the two go together)"
        )),
        _ => {}
    }
    if let Some(p) = c.models_json.take() {
        let dir = path.parent().unwrap_or(Path::new(""));
        c.models_json = Some(dir.join(p));
    }
    Ok(c)
}

/// `path:line:column: key `k`: message` for the byte offset `at` of `text`.
fn located(path: &Path, text: &str, at: Option<usize>, message: &str) -> String {
    let Some(at) = at else {
        return format!("config file {}: {message}", path.display());
    };
    let before = text.as_bytes().get(..at).unwrap_or(text.as_bytes());
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = before
        .get(line_start..)
        .unwrap_or_default()
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count()
        + 1;
    let key = key_at(text, at)
        .map(|k| format!("key `{k}`: "))
        .unwrap_or_default();
    format!(
        "config file {}, line {line}, column {column}: {key}{message}",
        path.display()
    )
}

/// The top-level key whose entry (key through value) holds byte offset `at`.
fn key_at(text: &str, at: usize) -> Option<String> {
    let table = toml::de::DeTable::parse(text).ok()?;
    table
        .get_ref()
        .iter()
        .find(|(k, v)| k.span().start <= at && at < v.span().end.max(k.span().end))
        .map(|(k, _)| k.get_ref().to_string())
}

/// What the commands that judge sessions run with: the flags merged over
/// the config file, with the defaults for what neither gives.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Codes whose findings are dropped where findings are made.
    pub ignore: Vec<Code>,
    /// The model limits asked for (flags, else the file).
    pub limits: crate::budget::LimitOptions,
    /// Largest request body (bytes).
    pub max_request_bytes: u64,
    /// Share of `max_request_bytes` kept for the agent's additions.
    pub headroom: f64,
    /// The file's `fail_on` (`check` lets `--fail-on` override it).
    pub fail_on: Option<FailOn>,
    /// The config file read, if any.
    pub file: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            ignore: Vec::new(),
            limits: crate::budget::LimitOptions::default(),
            max_request_bytes: crate::diagnose::DEFAULT_MAX_REQUEST_BYTES,
            headroom: crate::diagnose::DEFAULT_HEADROOM,
            fail_on: None,
            file: None,
        }
    }
}

impl Settings {
    /// The settings of `j`: its config file (found as [`find`] says) read,
    /// then its flags merged over it. An error is about the config file
    /// ([`crate::error::About`]).
    pub fn resolve(j: &Judging) -> Result<Settings> {
        let file = find(j.config.config.as_deref(), j.config.no_config);
        let config = match &file {
            Some(p) => load(p).map_err(|e| crate::error::About::wrap(p, e))?,
            None => Config::default(),
        };
        Ok(Settings::merge(j, config, file))
    }

    /// The flags of `j` over `config` (read from `file`).
    pub fn merge(j: &Judging, config: Config, file: Option<PathBuf>) -> Settings {
        let b = &j.budget;
        let flags_name_limits = b.context.is_some()
            || b.max_output.is_some()
            || b.input_limit.is_some()
            || b.model.is_some();
        let mut limits = if flags_name_limits {
            crate::budget::LimitOptions {
                context: b.context,
                max_output: b.max_output,
                input: b.input_limit,
                model: b.model.clone(),
                models_json: None,
            }
        } else {
            crate::budget::LimitOptions {
                context: config.context.map(|c| c.into_inner().get()),
                max_output: config.max_output.map(Spanned::into_inner),
                input: config.input_limit,
                model: config.model,
                models_json: None,
            }
        };
        limits.models_json = b.models_json.clone().or(config.models_json);
        let mut ignore: Vec<Code> = config
            .ignore
            .iter()
            .filter_map(|c| Code::parse(c.get_ref()))
            .chain(j.ignore.iter().copied())
            .collect();
        ignore.sort_unstable();
        ignore.dedup();
        Settings {
            ignore,
            limits,
            max_request_bytes: b
                .max_request_bytes
                .or(config.max_request_bytes.map(NonZeroU64::get))
                .unwrap_or(crate::diagnose::DEFAULT_MAX_REQUEST_BYTES),
            headroom: b
                .headroom
                .or(config.headroom.map(|h| h.0))
                .unwrap_or(crate::diagnose::DEFAULT_HEADROOM),
            fail_on: config.fail_on.map(|f| f.0),
            file,
        }
    }

    /// Whether findings of `code` are left out.
    pub fn ignores(&self, code: Code) -> bool {
        self.ignore.contains(&code)
    }

    /// The diagnose options for a session resuming with `session_model`.
    pub fn options(&self, session_model: Option<&str>) -> Options {
        self.options_with_stored(session_model, None)
    }

    /// The diagnose options for `session`: its resume model, and the limits
    /// it stored itself when it stored any.
    pub fn options_for(&self, session: &crate::model::Session) -> Options {
        self.options_with_stored(session.resume_model(), session.stored_limits.as_ref())
    }

    fn options_with_stored(
        &self,
        session_model: Option<&str>,
        stored: Option<&crate::budget::Limits>,
    ) -> Options {
        Options {
            budget: crate::budget::resolve_with_stored(&self.limits, session_model, stored)
                .map(crate::budget::Budget::new),
            max_request_bytes: self.max_request_bytes,
            headroom: self.headroom.clamp(0.0, 0.95),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!("{:#}", parse(text, Path::new("x.toml")).unwrap_err())
    }

    #[test]
    fn every_key_parses() {
        let c = parse(
            "ignore = [\"orphan-in-context\"]\nfail_on = \"warning\"\ncontext = 200000\nmax_output = 32000\n\
             input_limit = 100000\nmodel = \"a/b\"\nmodels_json = \"m.json\"\nmax_request_bytes = 150000\nheadroom = 0\n",
            Path::new("/etc/sd/x.toml"),
        )
        .unwrap();
        assert_eq!(
            c.ignore
                .iter()
                .map(|c| c.get_ref().as_str())
                .collect::<Vec<_>>(),
            ["orphan-in-context"]
        );
        assert_eq!(c.fail_on, Some(FailOnName(FailOn::Warning)));
        assert_eq!(c.context.map(|c| c.into_inner().get()), Some(200_000));
        assert_eq!(c.models_json, Some(PathBuf::from("/etc/sd/m.json")));
        assert_eq!(c.headroom, Some(Headroom(0.0)));
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = err("context = 1\nmax_output = 1\n\ncolour = 1\n");
        assert!(e.contains("x.toml, line 4, column 1: key `colour`"), "{e}");
        assert!(e.contains("unknown field `colour`"), "{e}");
        let e = err("headroom = 0.99\n");
        assert!(e.contains("line 1, column 12: key `headroom`"), "{e}");
        let e = err("ignore = [\n  \"stale-parent\",\n  \"nope\",\n]\n");
        assert!(e.contains("line 3, column 3: key `ignore`"), "{e}");
        assert!(e.contains("unknown finding code `nope`"), "{e}");
        assert!(e.contains("media-in-history"), "{e}");
        let e = err("fail_on = \"fatal\"\n");
        assert!(e.contains("key `fail_on`") && e.contains("never"), "{e}");
        let e = err("max_request_bytes = 0\n");
        assert!(e.contains("key `max_request_bytes`"), "{e}");
        let e = err("# limits\nmax_output = 1000\n");
        assert!(
            e.contains("line 2, column 14: key `max_output`: needs `context`"),
            "{e}"
        );
        let e = err("context = \"big\"\nmax_output = 1\n");
        assert!(e.contains("line 1") && e.contains("key `context`"), "{e}");
    }
}
