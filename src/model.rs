//! Format-neutral session model.
//!
//! A [`Session`] is what every storage format loads into: an ordered list of
//! [`Message`]s, each with its [`Part`]s, plus what the loader could not read.
//! Every message and part keeps its raw JSON (`raw`) so writers can put back
//! unknown fields unchanged, and its stored size (`payload_bytes`) so reports
//! can show exactly what sits on disk.

use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

mod parts;
pub use parts::Parts;

/// Which agent wrote a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    /// opencode (SQLite `opencode.db`, or the legacy JSON `storage/` tree before 1.2.0).
    Opencode,
    /// Kilo CLI, the opencode fork (`kilo.db`).
    Kilo,
    /// Claude Code (`~/.claude/projects/<cwd>/<session>.jsonl`).
    ClaudeCode,
    /// OpenAI Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
    /// docker-agent, formerly cagent (SQLite `~/.cagent/session.db`).
    DockerAgent,
    /// NousResearch hermes-agent (SQLite `$HERMES_HOME/state.db`).
    Hermes,
}

impl Agent {
    /// Stable lowercase name used in tables and JSON (`opencode`, `kilo`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::Opencode => "opencode",
            Agent::Kilo => "kilo",
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::DockerAgent => "docker-agent",
            Agent::Hermes => "hermes",
        }
    }
}

/// A message or part id: 16 bytes, held inline up to 15 bytes (ecow's
/// `EcoString`), so the line ids of a Codex rollout (`L2415110`,
/// `L2415110#0`) allocate nothing, and shared (a clone counts a reference,
/// copies nothing) when longer, so the edits that name a message (millions
/// in a cut) do not copy its id. A `String` took 24 bytes and an allocation.
/// The price: a longer id's allocation also holds a 16-byte header (its
/// reference count and capacity), so a Claude Code UUID or an opencode id
/// costs 8 bytes more than as a `String` (the 1 GB Claude transcript
/// 209 -> 212 MiB, the 1 GB opencode.db 174 -> 182 MiB, while the 1 GB
/// rollout went from 757 to 684 MiB).
pub type Id = ecow::EcoString;

/// A short string many messages repeat (a role or part type name, a model,
/// a finish reason): shared, not copied per message ([`sym`]). One pointer
/// (8 bytes, and `Option<Sym>` too) where an `Arc<str>` takes 16: a huge
/// session holds three per message.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(std::sync::Arc<Box<str>>);

impl std::ops::Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Sym {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Sym {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Sym {
        Sym(std::sync::Arc::new(s.into()))
    }
}

impl From<String> for Sym {
    fn from(s: String) -> Sym {
        Sym(std::sync::Arc::new(s.into_boxed_str()))
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, o: &str) -> bool {
        **self.0 == *o
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, o: &&str) -> bool {
        **self.0 == **o
    }
}

impl std::fmt::Debug for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

impl serde::Serialize for Sym {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl std::fmt::Display for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The shared [`Sym`] for `s`. Each worker thread keeps up to 4,096
/// distinct strings (role and type names, models and finish reasons are a
/// handful per session); past that, strings are simply allocated.
pub fn sym(s: &str) -> Sym {
    thread_local! {
        static SYMS: std::cell::RefCell<rustc_hash::FxHashMap<Box<str>, Sym>> =
            Default::default();
    }
    SYMS.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(x) = m.get(s) {
            return x.clone();
        }
        let x: Sym = Sym::from(s);
        if m.len() < 4096 && s.len() <= 256 {
            m.insert(s.into(), x.clone());
        }
        x
    })
}

/// The [`Message::response_id`] of the provider response named by
/// `message_id` and `request_id` (Claude Code `message.id` and `requestId`):
/// a 64-bit SipHash of both, the same in every run. Two different responses
/// share a key with a chance of about n^2 / 2^65 for n responses (5e-9 for
/// the 453k lines of a 1 GB transcript); then one of them is not counted.
/// Never 0 (a hash of 0 becomes 1), so that `Option` of it takes 8 bytes.
pub fn response_key(message_id: &str, request_id: &str) -> std::num::NonZeroU64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    message_id.hash(&mut h);
    request_id.hash(&mut h);
    std::num::NonZeroU64::new(h.finish()).unwrap_or(std::num::NonZeroU64::MIN)
}

/// Author of a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Assistant,
    /// Any other stored role, kept verbatim.
    Other(Sym),
}

/// `m.role() == Role::User`: a message's role ([`Message::role`]) is a
/// reference.
impl PartialEq<Role> for &Role {
    fn eq(&self, o: &Role) -> bool {
        **self == *o
    }
}

impl Role {
    /// The role named `s` (`user`, `assistant`, or any other name).
    pub fn named(s: &str) -> Role {
        match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => Role::Other(sym(other)),
        }
    }
}

impl Role {
    pub fn as_str(&self) -> &str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other(s) => s,
        }
    }
}

/// Role of a stored reference to a child session (docker-agent `subsession`
/// items): never sent to the model. Its `parent_id` is set only when the
/// child session it names is missing (the id, or `""` for a NULL reference),
/// so `dangling-parent` reports it and `repair` removes it.
pub const SUBSESSION_REF: &str = "subsession";

/// Token usage as the provider reported it and the agent stored it (tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The agent's own stored total, when it stores one (opencode `tokens.total`),
    /// or the context size a format defines for the turn (Claude Code: input +
    /// cache creation + cache read, the prompt the model saw).
    #[serde(skip)]
    pub total: Option<u64>,
}

impl Usage {
    /// The count opencode compares with its overflow threshold:
    /// `tokens.total`, else `input + output + cache.read + cache.write`
    /// (opencode 1.18.33 `overflow` check, see docs/formats/opencode-kilo.md section 8.1).
    /// For Claude Code `total` is the context size of the turn
    /// (docs/formats/claude-code.md section 6).
    pub fn overflow_count(&self) -> u64 {
        match self.total {
            Some(t) if t > 0 => t,
            _ => self
                .input
                .saturating_add(self.output)
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_write),
        }
    }

    /// True when every figure is zero.
    pub fn is_zero(&self) -> bool {
        self.overflow_count() == 0 && self.reasoning == 0
    }

    /// The usage as [`Message::usage`] stores it: `None` for
    /// [`Usage::default`] (a stored total of 0 is kept).
    pub fn boxed(self) -> Option<Box<Usage>> {
        (self != Usage::default()).then(|| Box::new(self))
    }

    /// Field-wise sum, saturating (a corrupt store may hold `u64::MAX`).
    pub fn add(&mut self, o: &Usage) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.reasoning = self.reasoning.saturating_add(o.reasoning);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
}

/// A provider or agent error stored on a message.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredError {
    /// Error class name as stored (e.g. `APIError`, `ContextOverflowError`).
    pub name: String,
    /// HTTP status code when the agent stored one.
    pub status_code: Option<u16>,
    /// Human-readable message as stored (may be empty).
    pub message: String,
    /// Raw response body when stored.
    pub response_body: Option<String>,
}

pub use crate::measure::Media;

/// Kind of a part, in the field's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartKind {
    Text,
    Reasoning,
    /// A tool call with its result (opencode stores both in one part).
    Tool,
    /// A file or media attachment.
    File,
    /// A compaction request marker.
    Compaction,
    StepStart,
    StepFinish,
    Patch,
    /// Any other stored type; its name is the part's
    /// [`Part::kind_name`] (not repeated here: a huge session holds one
    /// part per content block).
    Other,
}

/// Status of a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Error,
    /// Any other stored status, kept verbatim.
    Other(Sym),
}

/// Tool call facts of a [`PartKind::Tool`] part: 64 bytes, with its id
/// (a huge session holds one per call and one per result: 662,000 in the
/// 1 GB rollout of benches/).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name: a [`Sym`], shared by every call of the tool (a
    /// huge session holds hundreds of thousands of calls of a dozen tools).
    pub name: Sym,
    /// The call's id as stored ([`CallId`]: held inline).
    pub call_id: CallId,
    pub status: ToolStatus,
    /// Characters of the tool output (or error text) as stored, at most
    /// `u32::MAX` ([`ToolCall::chars`]; no store a loader reads holds more
    /// in one value: JSONL lines are cut at 512 MiB, SQLite values at 1 GB).
    pub output_chars: u32,
    /// The agent already replaced this output by a placeholder when building
    /// requests (opencode `state.time.compacted`).
    pub output_cleared: bool,
}

impl ToolCall {
    /// `n` characters as [`ToolCall::output_chars`] holds them (at most
    /// `u32::MAX`).
    pub fn chars(n: u64) -> u32 {
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// [`ToolCall::output_chars`] as a count of characters.
    pub fn output_chars(&self) -> u64 {
        u64::from(self.output_chars)
    }
}

/// A tool call's id as stored: held inline up to 30 bytes (Codex `call_…`
/// ids are 29 bytes, Claude Code `toolu_…` ids 30), boxed when longer; 32
/// bytes, where a `Box<str>` took 16 and an allocation of its own (32 more,
/// and one more allocation per call). Reads as a `str`.
#[derive(Clone)]
pub struct CallId(CallIdRepr);

#[derive(Clone)]
enum CallIdRepr {
    Inline { len: u8, buf: [u8; CallId::INLINE] },
    Boxed(Box<str>),
}

impl CallId {
    /// Bytes held inline: 30.
    pub const INLINE: usize = 30;
}

impl From<&str> for CallId {
    fn from(s: &str) -> CallId {
        if s.len() <= CallId::INLINE {
            let mut buf = [0u8; CallId::INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            return CallId(CallIdRepr::Inline {
                len: s.len() as u8,
                buf,
            });
        }
        CallId(CallIdRepr::Boxed(s.into()))
    }
}

impl From<String> for CallId {
    fn from(s: String) -> CallId {
        CallId::from(s.as_str())
    }
}

impl From<std::borrow::Cow<'_, str>> for CallId {
    fn from(s: std::borrow::Cow<'_, str>) -> CallId {
        CallId::from(&*s)
    }
}

impl std::ops::Deref for CallId {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.0 {
            // Built from a `str` of `len` bytes: always UTF-8.
            CallIdRepr::Inline { len, buf } => {
                std::str::from_utf8(buf.get(..usize::from(*len)).unwrap_or_default())
                    .unwrap_or_default()
            }
            CallIdRepr::Boxed(s) => s,
        }
    }
}

impl std::borrow::Borrow<str> for CallId {
    fn borrow(&self) -> &str {
        self
    }
}

impl PartialEq for CallId {
    fn eq(&self, o: &CallId) -> bool {
        **self == **o
    }
}

impl Eq for CallId {}

impl std::hash::Hash for CallId {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl std::fmt::Debug for CallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for CallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// Compaction request facts of a [`PartKind::Compaction`] part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionMarker {
    /// Automatic (overflow-triggered) rather than a manual `/compact`.
    pub auto: bool,
    /// Requested because a request overflowed (opencode `overflow: true`).
    pub overflow: bool,
    /// First message of the retained tail (opencode `tail_start_id`).
    pub tail_start_id: Option<String>,
    /// Context tokens the agent recorded as the trigger of this compaction
    /// (Claude Code `compactMetadata.preTokens`; Codex: `last_token_usage.total_tokens`
    /// of the last request before the `compacted` line); `None` when it records none.
    pub trigger_tokens: Option<u64>,
    /// Context tokens the agent recorded right after it (Claude Code `postTokens`).
    pub post_tokens: Option<u64>,
    /// Ids of messages from before the compaction that the agent keeps after it,
    /// oldest first (Claude Code `compactMetadata.preservedMessages.uuids`, else
    /// the walk from `preservedSegment.tailUuid` up the parents to `headUuid`).
    pub preserved: Vec<String>,
    /// Whether the agent drops the history before this compaction when it
    /// resumes. Claude Code 2.1.197 prunes only when the preserved metadata is
    /// present and every preserved id resolves; opencode cuts at every
    /// completed summary, so its markers leave this `false`.
    pub prunes: bool,
    /// The agent records neither this compaction's trigger nor its usage
    /// apart (hermes-agent's in-place compression keeps one usage total per
    /// session): whether it made progress cannot be judged from the store,
    /// so no-progress rules leave it out.
    pub unjudged: bool,
    /// Where the kept tail starts when the agent records it as an index into
    /// its own item list (docker-agent `first_kept_entry`), judged by the format.
    pub kept_entry: Option<Box<KeptEntry>>,
}

/// Why a stored kept-entry index is stale (docker-agent `first_kept_entry`,
/// docs/formats/docker-agent.md section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptStale {
    /// Negative or beyond the compaction's own index: the agent silently
    /// ignores it and sends no kept tail.
    OutOfRange,
    /// Before the previous compaction's kept region: the agent honours it and
    /// resends history an earlier compaction had cut.
    BeforePrevious,
    /// The kept tail starts on a tool result whose call was summarized: the
    /// agent drops the result as an orphan.
    OnToolResult,
}

impl KeptStale {
    pub fn as_str(self) -> &'static str {
        match self {
            KeptStale::OutOfRange => "out-of-range",
            KeptStale::BeforePrevious => "before-previous-kept",
            KeptStale::OnToolResult => "on-tool-result",
        }
    }
}

/// A compaction's kept-tail index as the agent stores it, with where the
/// agent starts resending stored items after it (all indexes count the
/// agent's loaded item list, not stored positions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptEntry {
    /// The value as stored.
    pub stored: i64,
    /// The compaction's own index.
    pub index: u64,
    /// Where the agent starts after the summary with the stored value.
    pub effective_start: u64,
    /// Where the previous compaction's kept region starts (0 when none),
    /// earlier stale values taken as repaired.
    pub previous_start: u64,
    /// The value the agent's own compactor rule gives.
    pub rule: u64,
    /// Where the agent starts once a stale value is replaced by `rule`.
    pub corrected_start: u64,
    /// Why the stored value is stale; `None` when the agent handles it as intended.
    pub stale: Option<KeptStale>,
}

/// One stored part of a message (its message is the one that holds it).
/// 56 bytes: a huge session holds one per content item (1.17 million in
/// the 1 GB rollout of benches/). Its size figures are held in 32 bits (a
/// figure of 4 GiB or more is kept whole beside them, `PartExtra`), and
/// what few parts hold (media, a compaction marker, added JSON) is boxed
/// apart; both are read and set through methods.
#[derive(Debug, Clone)]
pub struct Part {
    pub id: Id,
    pub kind: PartKind,
    /// Type name exactly as stored.
    pub kind_name: Sym,
    /// [`Part::payload_bytes`].
    payload_bytes: u32,
    /// [`Part::model_chars`].
    model_chars: u32,
    /// [`Part::wire_bytes`].
    wire_bytes: u32,
    pub synthetic: bool,
    /// The part holds text `session-doctor compact` wrote where it cut,
    /// stripped or removed something ([`crate::measure::has_compact_marker`]).
    pub rewritten: bool,
    pub tool: Option<Box<ToolCall>>,
    /// What few parts hold ([`PartExtra`]); `None` for most.
    extra: Option<Box<PartExtra>>,
}

/// The fields of a [`Part`] that few parts set.
#[derive(Debug, Clone, Default)]
struct PartExtra {
    /// Inline media items.
    media: thin_vec::ThinVec<Media>,
    compaction: Option<Box<CompactionMarker>>,
    /// The JSON text of a part no stored row or line holds (one an edit
    /// added, such as a note), as it was added, so that later edits can
    /// rebuild it. `None` for a stored part: the format re-reads it by id
    /// when it must change it, so a session holds figures, not text.
    raw: Option<String>,
    /// The figures of 4 GiB or more (payload bytes, model characters, wire
    /// bytes), whose 32-bit fields hold `u32::MAX`.
    big: [u64; 3],
}

/// A part's figure as held: itself below `u32::MAX`, else `u32::MAX` with
/// the figure kept whole apart.
fn held(v: u64) -> (u32, bool) {
    match u32::try_from(v) {
        Ok(x) if x < u32::MAX => (x, false),
        _ => (u32::MAX, true),
    }
}

/// A stored part whose message does not exist.
#[derive(Debug, Clone)]
pub struct OrphanPart {
    /// The message id the part names.
    pub message_id: String,
    pub part: Part,
}

/// A time in milliseconds since the Unix epoch that may be absent, in 8
/// bytes where an `Option<i64>` takes 16 (one per message: 2.4 million in
/// the 1 GB Codex rollout of benches/). `i64::MIN` stands for none: a
/// stored time of `i64::MIN` ms (292 million years before the epoch) is
/// kept as one millisecond later.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OptMillis(i64);

impl OptMillis {
    /// No time.
    pub const NONE: OptMillis = OptMillis(i64::MIN);

    /// The time, or `None`.
    pub fn get(self) -> Option<i64> {
        (self.0 != i64::MIN).then_some(self.0)
    }

    /// Whether no time is set.
    pub fn is_none(self) -> bool {
        self.0 == i64::MIN
    }
}

impl From<Option<i64>> for OptMillis {
    fn from(t: Option<i64>) -> OptMillis {
        t.map_or(OptMillis::NONE, |t| OptMillis(t.max(i64::MIN + 1)))
    }
}

impl std::fmt::Debug for OptMillis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

/// The most lines of one JSONL file a session is read from (`u32::MAX`,
/// 4,294,967,295): [`LineRef`] keeps line numbers in 32 bits. A file of
/// more is refused with an error naming it, never read with wrong line
/// numbers.
pub const MAX_LINES: u64 = u32::MAX as u64;

/// Where a message sits in a line-oriented store (JSONL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRef {
    /// Index into [`Session::files`] ([`LineRef::file_index`]): 32 bits, as
    /// the line number, so that a `LineRef` takes 24 bytes, not 32 (one per
    /// message: 2.4 million in the 1 GB Codex rollout of benches/).
    pub file: u32,
    /// 1-based line number: never 0, so that `Option<LineRef>` takes no
    /// more room than a `LineRef` (`.get()` gives the number). A file of
    /// more lines than a `u32` holds is refused when read
    /// ([`MAX_LINES`]).
    pub line: std::num::NonZeroU32,
    /// Byte offset of the line's first byte in its file.
    pub offset: u64,
    /// Bytes of the line, its newline included.
    pub bytes: u64,
}

impl LineRef {
    /// [`LineRef::file`] as an index into [`Session::files`].
    pub fn file_index(&self) -> usize {
        self.file as usize
    }

    /// The 1-based line number.
    pub fn number(&self) -> u64 {
        u64::from(self.line.get())
    }
}

impl Part {
    /// A part with no content figures yet (bytes, characters, media all 0);
    /// loaders fill in what their format stores.
    pub fn empty(id: impl Into<Id>, kind: PartKind, kind_name: &str) -> Part {
        Part {
            id: id.into(),
            kind,
            kind_name: sym(kind_name),
            payload_bytes: 0,
            model_chars: 0,
            wire_bytes: 0,
            synthetic: false,
            rewritten: false,
            tool: None,
            extra: None,
        }
    }

    fn figure(&self, held: u32, k: usize) -> u64 {
        if held < u32::MAX {
            return u64::from(held);
        }
        self.extra.as_ref().map_or(u64::from(held), |e| e.big[k])
    }

    fn set_figure(&mut self, k: usize, v: u64) -> u32 {
        let (x, big) = held(v);
        if big {
            self.extra_mut().big[k] = v;
        }
        x
    }

    fn extra_mut(&mut self) -> &mut PartExtra {
        self.extra.get_or_insert_with(Default::default)
    }

    /// Bytes stored for this part (SQLite `part.data`, or the part file's size).
    pub fn payload_bytes(&self) -> u64 {
        self.figure(self.payload_bytes, 0)
    }

    pub fn set_payload_bytes(&mut self, v: u64) {
        self.payload_bytes = self.set_figure(0, v);
    }

    /// Characters of what the agent sends the model for this part (media data excluded).
    pub fn model_chars(&self) -> u64 {
        self.figure(self.model_chars, 1)
    }

    pub fn set_model_chars(&mut self, v: u64) {
        self.model_chars = self.set_figure(1, v);
    }

    /// Bytes of what the agent puts on the wire for this part: text and tool
    /// input/output as UTF-8, inline media as its base64 data URL.
    pub fn wire_bytes(&self) -> u64 {
        self.figure(self.wire_bytes, 2)
    }

    pub fn set_wire_bytes(&mut self, v: u64) {
        self.wire_bytes = self.set_figure(2, v);
    }

    /// Inline media items (few parts have any).
    pub fn media(&self) -> &[Media] {
        self.extra.as_ref().map_or(&[], |e| &e.media[..])
    }

    /// The media items, to change them (the part's rare fields are boxed on
    /// first use).
    pub fn media_mut(&mut self) -> &mut thin_vec::ThinVec<Media> {
        &mut self.extra_mut().media
    }

    /// Sets the media items (nothing is boxed for none).
    pub fn set_media(&mut self, media: thin_vec::ThinVec<Media>) {
        if media.is_empty() && self.extra.is_none() {
            return;
        }
        self.extra_mut().media = media;
    }

    /// The compaction marker, when this part is a compaction request.
    pub fn compaction(&self) -> Option<&CompactionMarker> {
        self.extra.as_ref()?.compaction.as_deref()
    }

    pub fn compaction_mut(&mut self) -> Option<&mut CompactionMarker> {
        self.extra.as_mut()?.compaction.as_deref_mut()
    }

    pub fn set_compaction(&mut self, c: Option<Box<CompactionMarker>>) {
        if c.is_none() && self.extra.is_none() {
            return;
        }
        self.extra_mut().compaction = c;
    }

    /// The JSON text of a part no stored row or line holds (`PartExtra`).
    pub fn raw(&self) -> Option<&String> {
        self.extra.as_ref()?.raw.as_ref()
    }

    pub fn set_raw(&mut self, raw: Option<String>) {
        if raw.is_none() && self.extra.is_none() {
            return;
        }
        self.extra_mut().raw = raw;
    }
}

/// The fields of a [`Message`], to build one ([`Message::from`]): a loader
/// fills these in, and the message packs them (one pointer for role, model
/// and finish, 32-bit sizes, what few messages set boxed apart).
#[derive(Debug, Clone)]
pub struct MessageFields {
    pub id: Id,
    pub role: Role,
    /// The stored parent's id: a `Box<str>` (16 bytes, where an
    /// `Option<String>` takes 24).
    pub parent_id: Option<Box<str>>,
    /// The line of a line-oriented store, `None` for rows and files. Several
    /// messages may share a line (Codex: the items of a `compacted` line's
    /// `replacement_history`).
    pub line: Option<LineRef>,
    /// A side conversation stored with the session (a sub-agent transcript):
    /// never part of the main history the model sees.
    pub sidechain: bool,
    /// The agent writes this kind of message with parents it does not keep
    /// (Claude Code progress and attachment lines, compaction roots, sidechains,
    /// the first line of a resumed session): a missing parent is expected.
    pub parent_optional: bool,
    /// Provider response this message belongs to, when one response is stored
    /// over several messages that repeat its usage (Claude Code writes one line
    /// per content block, all with the same `message.id` and `requestId`).
    /// [`Session::tokens_total`] counts each response once. Kept as the
    /// 64-bit key of the response's ids ([`response_key`]), not as text: a
    /// huge transcript holds one per assistant line.
    pub response_id: Option<std::num::NonZeroU64>,
    /// Creation time, milliseconds since the Unix epoch.
    pub time_created: i64,
    /// Completion time (ms) when stored ([`OptMillis::get`]).
    pub time_completed: OptMillis,
    /// Message that holds a compaction summary (opencode: the summary
    /// assistant; Claude Code: the `isCompactSummary` user line).
    pub summary: bool,
    /// Finish reason as stored (`stop`, `tool-calls`, ...), if any.
    pub finish: Option<Sym>,
    /// The usage stored on the message ([`Message::usage`]): `None` when
    /// it is all zero (most messages of a huge session), so a message pays
    /// 8 bytes for it, not 56. Set through [`Message::set_usage`].
    pub usage: Option<Box<Usage>>,
    /// `provider/model` this message was sent to or written for.
    pub model: Option<Sym>,
    /// Bytes stored for the message row or file itself, parts excluded.
    pub info_bytes: u64,
    /// The message's parts in stored order.
    pub parts: Parts,
    /// What few messages store ([`Rare`]): `None` when the message has none
    /// of it, so a huge session pays 8 bytes a message for these fields, not
    /// 40. Read through [`Message::logical_parent_id`], [`Message::error`]
    /// and [`Message::raw`]; set through [`Message::rare_mut`].
    pub rare: Option<Box<Rare>>,
}

/// One stored message. 128 bytes with one part (1.15 million in the 1 GB
/// rollout of benches/, where a message with its part took 264): role,
/// model and finish reason share one interned pointer (`Class`), sizes
/// are held in 32 bits (a size of 4 GiB or more is kept whole apart), and
/// what few messages set (a parent, a response id, a completion time other
/// than the creation time, an error) is boxed apart. Fields are read and
/// set through methods named after them; [`MessageFields`] builds one.
#[derive(Clone)]
pub struct Message {
    pub id: Id,
    /// The message's parts in stored order ([`Parts`]: one held inline).
    pub parts: Parts,
    /// Role, model and finish reason ([`Message::role`], [`Message::model`],
    /// [`Message::finish`]).
    class: Class,
    /// [`Message::time_created`].
    time_created: i64,
    /// [`LineRef::offset`] of [`Message::line`].
    line_offset: u64,
    /// [`LineRef::line`], 0 for none.
    line_number: u32,
    /// [`LineRef::bytes`]: `u32::MAX` when kept in [`MessageExt::big`].
    line_bytes: u32,
    /// [`Message::info_bytes`]: `u32::MAX` when kept in [`MessageExt::big`].
    info_bytes: u32,
    /// [`LineRef::file`]: `u16::MAX` when kept in [`MessageExt::big`].
    line_file: u16,
    /// [`Message::sidechain`], [`Message::parent_optional`],
    /// [`Message::summary`], and whether the completion time is the
    /// creation time.
    flags: u8,
    /// The usage stored on the message ([`Message::usage`]): `None` when
    /// it is all zero (most messages of a huge session), so a message pays
    /// 8 bytes for it, not 56. Set through [`Message::set_usage`].
    pub usage: Option<Box<Usage>>,
    /// What few messages set ([`MessageExt`]).
    ext: Option<Box<MessageExt>>,
}

const SIDECHAIN: u8 = 1;
const PARENT_OPTIONAL: u8 = 2;
const SUMMARY: u8 = 4;
/// The completion time is the creation time (no [`MessageExt::time_completed`]).
const COMPLETED_AT_CREATION: u8 = 8;

/// The fields of a [`Message`] few messages set.
#[derive(Debug, Clone, Default)]
struct MessageExt {
    parent_id: Option<Box<str>>,
    response_id: Option<std::num::NonZeroU64>,
    /// A completion time other than the creation time.
    time_completed: OptMillis,
    rare: Option<Box<Rare>>,
    /// Line bytes, info bytes and file index too large for their fields.
    big: [u64; 3],
}

impl Default for OptMillis {
    fn default() -> OptMillis {
        OptMillis::NONE
    }
}

/// Role, model and finish reason of a message, interned: one pointer per
/// message for the three (a huge session repeats a few combinations).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ClassData {
    role: Role,
    model: Option<Sym>,
    finish: Option<Sym>,
}

/// A shared [`ClassData`] ([`Class::of`]).
#[derive(Clone)]
struct Class(std::sync::Arc<ClassData>);

impl Class {
    /// The shared class of `d`. Each thread keeps up to 4,096 distinct
    /// classes (a session has a handful: roles times models times finish
    /// reasons); past that, classes are simply allocated.
    fn of(d: ClassData) -> Class {
        thread_local! {
            static CLASSES: std::cell::RefCell<rustc_hash::FxHashMap<ClassData, Class>> =
                Default::default();
        }
        CLASSES.with(|m| {
            let mut m = m.borrow_mut();
            if let Some(c) = m.get(&d) {
                return c.clone();
            }
            let c = Class(std::sync::Arc::new(d.clone()));
            if m.len() < 4096 {
                m.insert(d, c.clone());
            }
            c
        })
    }

    fn with(&self, f: impl FnOnce(&mut ClassData)) -> Class {
        let mut d = (*self.0).clone();
        f(&mut d);
        if d == *self.0 {
            return self.clone();
        }
        Class::of(d)
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id)
            .field("role", self.role())
            .field("parent_id", &self.parent_id())
            .field("line", &self.line())
            .field("sidechain", &self.sidechain())
            .field("parent_optional", &self.parent_optional())
            .field("response_id", &self.response_id())
            .field("time_created", &self.time_created)
            .field("time_completed", &self.time_completed())
            .field("summary", &self.summary())
            .field("finish", &self.finish())
            .field("usage", &self.usage)
            .field("model", &self.model())
            .field("info_bytes", &self.info_bytes())
            .field("parts", &self.parts)
            .field("rare", &self.ext.as_ref().and_then(|e| e.rare.as_ref()))
            .finish()
    }
}

impl From<MessageFields> for Message {
    fn from(f: MessageFields) -> Message {
        let mut m = Message {
            id: f.id,
            parts: f.parts,
            class: Class::of(ClassData {
                role: f.role,
                model: f.model,
                finish: f.finish,
            }),
            time_created: f.time_created,
            line_offset: 0,
            line_number: 0,
            line_bytes: 0,
            info_bytes: 0,
            line_file: 0,
            flags: 0,
            usage: f.usage,
            ext: None,
        };
        m.set_line(f.line);
        m.set_info_bytes(f.info_bytes);
        m.set_sidechain(f.sidechain);
        m.set_parent_optional(f.parent_optional);
        m.set_summary(f.summary);
        m.set_time_completed(f.time_completed);
        m.set_parent_id(f.parent_id);
        m.set_response_id(f.response_id);
        if f.rare.is_some() {
            m.ext_mut().rare = f.rare;
        }
        m
    }
}

impl MessageFields {
    /// The fields of a message `id` of `role` with nothing else (see [`Message::new`]).
    pub fn new(id: impl Into<Id>, role: Role) -> MessageFields {
        MessageFields {
            id: id.into(),
            role,
            parent_id: None,
            line: None,
            sidechain: false,
            parent_optional: false,
            response_id: None,
            time_created: 0,
            time_completed: OptMillis::NONE,
            summary: false,
            finish: None,
            usage: None,
            model: None,
            info_bytes: 0,
            parts: Parts::new(),
            rare: None,
        }
    }
}

/// The fields of a [`Message`] that few messages set.
#[derive(Debug, Clone, Default)]
pub struct Rare {
    /// A second, informational link the agent keeps beside the parent and
    /// never follows when it rebuilds the history (Claude Code
    /// `logicalParentUuid` on a compaction boundary).
    pub logical_parent_id: Option<String>,
    /// A provider or agent error stored on the message.
    pub error: Option<StoredError>,
    /// The stored JSON of the message info when a format keeps it (an edited
    /// message, a Claude Code compaction boundary); otherwise `None`: the
    /// format re-reads it by id when it must change it.
    pub raw: Option<Value>,
    /// Stored token counts that are not counts ([`BadCount`]), in the
    /// order the format's reader lists its count fields; each was read
    /// as 0.
    pub bad_counts: Vec<BadCount>,
}

impl Rare {
    /// The boxed fields, or `None` when none is set.
    pub fn boxed(self) -> Option<Box<Rare>> {
        (self.logical_parent_id.is_some()
            || self.error.is_some()
            || self.raw.is_some()
            || !self.bad_counts.is_empty())
        .then(|| Box::new(self))
    }
}

/// A stored token count that is not one: a negative number, a string, a
/// boolean, an array or an object where the agent writes an integer from
/// 0 up (each format's reader says which numbers it takes: Claude Code and
/// Codex write integers only; opencode and docker-agent counts are JSON
/// numbers, a fraction there is truncated as before). A `null` is read as
/// an absent count, not as a bad one. Read as 0, so the figures that add
/// it (usage totals, the context size a budget starts from) are low.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCount {
    /// The count's path in the stored message, e.g.
    /// `message.usage.input_tokens` (Claude Code) or `tokens.cache.read`
    /// (opencode).
    pub field: &'static str,
    /// The stored value as compact JSON, cut at [`BadCount::MAX_CHARS`]
    /// characters (an ellipsis marks a cut).
    pub stored: Box<str>,
}

impl BadCount {
    /// Characters of a stored value kept in [`BadCount::stored`]: 40.
    pub const MAX_CHARS: usize = 40;

    /// The bad count of `field` whose stored value is `value`, or `None`
    /// when `value` is a count: absent, `null`, an integer from 0 to
    /// `u64::MAX`, or (when `fractions` is true) any number from 0 up.
    pub fn of_value(field: &'static str, value: Option<&Value>, fractions: bool) -> Option<Self> {
        let v = value?;
        let count = match v {
            Value::Null => true,
            Value::Number(n) => {
                n.as_u64().is_some() || (fractions && n.as_f64().is_some_and(|f| f >= 0.0))
            }
            _ => false,
        };
        if count {
            return None;
        }
        let text = v.to_string();
        let stored = match text.char_indices().nth(Self::MAX_CHARS) {
            Some((cut, _)) => format!("{}\u{2026}", text.get(..cut).unwrap_or_default()),
            None => text,
        };
        Some(BadCount {
            field,
            stored: stored.into_boxed_str(),
        })
    }

    /// [`BadCount::of_value`] of a count kept as raw JSON text (`raw`, the
    /// value as stored; `None` when absent or `null`): the same
    /// answer as for its tree, so a typed reader and a tree reader of the
    /// same text agree.
    pub fn of_raw(field: &'static str, raw: Option<&str>, fractions: bool) -> Option<Self> {
        let t = raw?;
        // The common case, a plain integer, needs no tree.
        if t.bytes().all(|b| b.is_ascii_digit()) && t.parse::<u64>().is_ok() {
            return None;
        }
        let v: Value = serde_json::from_str(t).ok()?;
        Self::of_value(field, Some(&v), fractions)
    }
}

impl Message {
    /// A message `id` of `role` with nothing else: no parent, line, parts,
    /// usage or model; every flag false; times and sizes 0. Loaders fill in
    /// what their format stores.
    pub fn new(id: impl Into<Id>, role: Role) -> Message {
        Message::from(MessageFields::new(id, role))
    }

    fn ext_mut(&mut self) -> &mut MessageExt {
        self.ext.get_or_insert_with(Default::default)
    }

    /// Frees the box of rare fields once none is set.
    fn trim_ext(&mut self) {
        let empty = self.ext.as_ref().is_some_and(|e| {
            e.parent_id.is_none()
                && e.response_id.is_none()
                && e.time_completed.is_none()
                && e.rare.is_none()
                && e.big == [0; 3]
        });
        if empty {
            self.ext = None;
        }
    }

    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// Author of the message.
    pub fn role(&self) -> &Role {
        &self.class.0.role
    }

    pub fn set_role(&mut self, role: Role) {
        self.class = self.class.with(|d| d.role = role);
    }

    /// `provider/model` this message was sent to or written for.
    pub fn model(&self) -> Option<&str> {
        self.class.0.model.as_deref()
    }

    /// [`Message::model`] as its shared [`Sym`].
    pub fn model_sym(&self) -> Option<&Sym> {
        self.class.0.model.as_ref()
    }

    pub fn set_model(&mut self, model: Option<Sym>) {
        self.class = self.class.with(|d| d.model = model);
    }

    /// Finish reason as stored (`stop`, `tool-calls`, ...), if any.
    pub fn finish(&self) -> Option<&str> {
        self.class.0.finish.as_deref()
    }

    /// [`Message::finish`] as its shared [`Sym`].
    pub fn finish_sym(&self) -> Option<&Sym> {
        self.class.0.finish.as_ref()
    }

    pub fn set_finish(&mut self, finish: Option<Sym>) {
        self.class = self.class.with(|d| d.finish = finish);
    }

    /// The stored parent's id.
    pub fn parent_id(&self) -> Option<&str> {
        self.ext.as_ref()?.parent_id.as_deref()
    }

    pub fn set_parent_id(&mut self, parent: Option<Box<str>>) {
        if parent.is_none() && self.ext.is_none() {
            return;
        }
        self.ext_mut().parent_id = parent;
        self.trim_ext();
    }

    /// The line of a line-oriented store, `None` for rows and files. Several
    /// messages may share a line (Codex: the items of a `compacted` line's
    /// `replacement_history`).
    pub fn line(&self) -> Option<LineRef> {
        let line = std::num::NonZeroU32::new(self.line_number)?;
        let big = |k: usize| self.ext.as_ref().map_or(0, |e| e.big[k]);
        Some(LineRef {
            file: if self.line_file == u16::MAX {
                u32::try_from(big(2)).unwrap_or(u32::MAX)
            } else {
                u32::from(self.line_file)
            },
            line,
            offset: self.line_offset,
            bytes: if self.line_bytes == u32::MAX {
                big(0)
            } else {
                u64::from(self.line_bytes)
            },
        })
    }

    pub fn set_line(&mut self, line: Option<LineRef>) {
        let Some(l) = line else {
            self.line_number = 0;
            return;
        };
        self.line_number = l.line.get();
        self.line_offset = l.offset;
        let (bytes, big) = held(l.bytes);
        self.line_bytes = bytes;
        if big {
            self.ext_mut().big[0] = l.bytes;
        }
        match u16::try_from(l.file) {
            Ok(f) if f < u16::MAX => self.line_file = f,
            _ => {
                self.line_file = u16::MAX;
                self.ext_mut().big[2] = u64::from(l.file);
            }
        }
    }

    /// Bytes stored for the message row or file itself, parts excluded.
    pub fn info_bytes(&self) -> u64 {
        if self.info_bytes < u32::MAX {
            return u64::from(self.info_bytes);
        }
        self.ext.as_ref().map_or(u64::from(u32::MAX), |e| e.big[1])
    }

    pub fn set_info_bytes(&mut self, v: u64) {
        let (x, big) = held(v);
        self.info_bytes = x;
        if big {
            self.ext_mut().big[1] = v;
        }
    }

    /// A side conversation stored with the session (a sub-agent transcript):
    /// never part of the main history the model sees.
    pub fn sidechain(&self) -> bool {
        self.flag(SIDECHAIN)
    }

    pub fn set_sidechain(&mut self, on: bool) {
        self.set_flag(SIDECHAIN, on);
    }

    /// The agent writes this kind of message with parents it does not keep
    /// (Claude Code progress and attachment lines, compaction roots,
    /// sidechains, the first line of a resumed session): a missing parent is
    /// expected.
    pub fn parent_optional(&self) -> bool {
        self.flag(PARENT_OPTIONAL)
    }

    pub fn set_parent_optional(&mut self, on: bool) {
        self.set_flag(PARENT_OPTIONAL, on);
    }

    /// Message that holds a compaction summary (opencode: the summary
    /// assistant; Claude Code: the `isCompactSummary` user line).
    pub fn summary(&self) -> bool {
        self.flag(SUMMARY)
    }

    pub fn set_summary(&mut self, on: bool) {
        self.set_flag(SUMMARY, on);
    }

    /// Provider response this message belongs to, when one response is
    /// stored over several messages that repeat its usage (Claude Code
    /// writes one line per content block, all with the same `message.id`
    /// and `requestId`): the 64-bit key of the response's ids
    /// ([`response_key`]). [`Session::tokens_total`] counts each response once.
    pub fn response_id(&self) -> Option<std::num::NonZeroU64> {
        self.ext.as_ref()?.response_id
    }

    pub fn set_response_id(&mut self, r: Option<std::num::NonZeroU64>) {
        if r.is_none() && self.ext.is_none() {
            return;
        }
        self.ext_mut().response_id = r;
        self.trim_ext();
    }

    /// Completion time (ms) when stored ([`OptMillis::get`]).
    pub fn time_completed(&self) -> OptMillis {
        if self.flag(COMPLETED_AT_CREATION) {
            return OptMillis::from(Some(self.time_created));
        }
        self.ext
            .as_ref()
            .map_or(OptMillis::NONE, |e| e.time_completed)
    }

    /// Sets the completion time; one equal to the creation time is a flag
    /// (most messages that store one), not a box. Set it after
    /// [`Message::time_created`].
    pub fn set_time_completed(&mut self, t: OptMillis) {
        let at_creation = t.get() == Some(self.time_created);
        self.set_flag(COMPLETED_AT_CREATION, at_creation);
        if at_creation || t.is_none() {
            if let Some(e) = self.ext.as_mut() {
                e.time_completed = OptMillis::NONE;
            }
            self.trim_ext();
            return;
        }
        self.ext_mut().time_completed = t;
    }

    /// Creation time, milliseconds since the Unix epoch.
    pub fn time_created(&self) -> i64 {
        self.time_created
    }

    /// Sets the creation time, keeping the completion time as it was.
    pub fn set_time_created(&mut self, t: i64) {
        let done = self.time_completed();
        self.time_created = t;
        self.set_time_completed(done);
    }

    /// The usage stored on the message (all zero when it stores none).
    pub fn usage(&self) -> &Usage {
        static NONE: Usage = Usage {
            input: 0,
            output: 0,
            reasoning: 0,
            cache_read: 0,
            cache_write: 0,
            total: None,
        };
        self.usage.as_deref().unwrap_or(&NONE)
    }

    /// Stores `u` as the message's usage (boxed only when it is not
    /// [`Usage::default`]: a stored total of 0 is kept).
    pub fn set_usage(&mut self, u: Usage) {
        self.usage = u.boxed();
    }

    /// The compaction marker when this is a compaction request message.
    pub fn compaction(&self) -> Option<&CompactionMarker> {
        self.parts.iter().find_map(|p| p.compaction())
    }

    /// Bytes stored for the message and all its parts.
    pub fn payload_bytes(&self) -> u64 {
        self.info_bytes() + self.parts.iter().map(Part::payload_bytes).sum::<u64>()
    }

    /// Decoded bytes of inline media in all parts.
    pub fn media_bytes(&self) -> u64 {
        self.parts
            .iter()
            .flat_map(|p| p.media())
            .map(|m| m.decoded_bytes)
            .sum()
    }

    /// Number of inline media items in all parts.
    pub fn media_count(&self) -> usize {
        self.parts.iter().map(|p| p.media().len()).sum()
    }

    /// Estimated tokens the agent sends for this message (characters / 4, rounded,
    /// as opencode's `Token.estimate`).
    pub fn tokens_estimated(&self) -> u64 {
        crate::measure::estimate_tokens(self.parts.iter().map(Part::model_chars).sum())
    }

    /// Bytes this message puts on the wire (sum of its parts' `wire_bytes`).
    pub fn wire_bytes(&self) -> u64 {
        self.parts.iter().map(Part::wire_bytes).sum()
    }

    /// True for an assistant that finished (stored a finish reason and no error).
    pub fn finished(&self) -> bool {
        self.finish().is_some() && self.error().is_none()
    }

    /// [`Rare::logical_parent_id`].
    pub fn logical_parent_id(&self) -> Option<&str> {
        self.rare()?.logical_parent_id.as_deref()
    }

    /// [`Rare::error`].
    pub fn error(&self) -> Option<&StoredError> {
        self.rare()?.error.as_ref()
    }

    /// [`Rare::raw`].
    pub fn raw(&self) -> Option<&Value> {
        self.rare()?.raw.as_ref()
    }

    /// The rare fields ([`Rare`]), when the message sets any.
    pub fn rare(&self) -> Option<&Rare> {
        self.ext.as_ref()?.rare.as_deref()
    }

    /// The rare fields, to set one (boxed on first use).
    pub fn rare_mut(&mut self) -> &mut Rare {
        self.ext_mut().rare.get_or_insert_with(Default::default)
    }

    /// True when any part is marked synthetic (written by the agent, not the user).
    pub fn synthetic(&self) -> bool {
        self.parts.iter().any(|p| p.synthetic)
    }

    /// A user turn: a user message that is neither a compaction request, a
    /// summary, nor a carrier of tool results only (Claude Code stores tool
    /// results in user lines).
    pub fn is_prompt(&self) -> bool {
        *self.role() == Role::User
            && self.compaction().is_none()
            && !self.summary()
            && (self.parts.is_empty() || self.parts.iter().any(|p| p.kind != PartKind::Tool))
    }
}

/// What kind of load problem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProblemKind {
    /// Not valid JSON, or a required field is missing.
    #[default]
    Unreadable,
    /// The last line of a file has no newline and is not complete JSON: the
    /// agent was interrupted while writing it.
    TornTail,
}

/// Something a loader could not read: a row or file that is not valid JSON or
/// lacks a required field. The rest of the store is still read.
#[derive(Debug, Clone)]
pub struct LoadProblem {
    /// File path, plus `table` and row id for SQLite (e.g. `opencode.db: message row msg_x`).
    pub location: String,
    /// Message or part id concerned, when known.
    pub id: Option<String>,
    /// What was expected and what the parser said.
    pub error: String,
    pub kind: ProblemKind,
    /// Index into [`Session::files`] of the file the problem is in, for
    /// line-oriented stores.
    pub file: Option<usize>,
    /// 1-based line of that file, for line-oriented stores.
    pub line: Option<u64>,
    /// The database row (`<table> <id>`), for databases.
    pub row: Option<String>,
}

/// An id stored more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateId {
    pub id: String,
    /// Where the extra copy is (`message`, `part of message X`, `line 22 (first: line 16)`).
    pub place: String,
    /// 1-based line of the extra copy and of the first one, for
    /// line-oriented stores (the finding's fields `line` and `first_line`).
    pub lines: Option<(u64, u64)>,
    /// The copy repeats the first one's content (only bookkeeping fields
    /// differ): harmless, and a repair may drop it.
    pub same_content: bool,
}

/// How a format links messages to their parents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ParentLinks {
    /// Assistants name the user message they answer; users have no parent
    /// (opencode, Kilo).
    #[default]
    UserTurn,
    /// Every message names the previous message of its conversation, a chain
    /// the agent walks back from the newest message to rebuild the history
    /// (Claude Code `parentUuid`).
    Chain,
}

/// Id lookups over a session ([`Session::lookup`]). The message map is
/// built at once; the copy counts and the part map are built on first use
/// (a describe of hundreds of thousands of Codex or Claude Code edits never
/// asks for a part: two maps of every id it would not read).
#[derive(Debug)]
pub struct Lookup<'a> {
    session: &'a Session,
    /// Message id -> index of its first copy.
    messages: rustc_hash::FxHashMap<&'a str, usize>,
    /// Message id -> number of stored copies.
    copies: std::sync::OnceLock<rustc_hash::FxHashMap<&'a str, usize>>,
    /// Part id -> (message index, part index) of its first copy.
    parts: std::sync::OnceLock<rustc_hash::FxHashMap<&'a str, (usize, usize)>>,
}

impl<'a> Lookup<'a> {
    /// The session the lookups are over.
    pub fn session(&self) -> &'a Session {
        self.session
    }

    /// The first copy of message `id`.
    pub fn message(&self, id: &str) -> Option<&'a Message> {
        self.messages.get(id).map(|&i| &self.session.messages[i])
    }

    /// The stored line message `id` fills on its own: `None` when it has no
    /// line (rows, files), shares its line with a neighbour (Codex: the
    /// items of a `compacted` line's `replacement_history`), or its id is
    /// stored more than once (which copy a change means is then not one line).
    pub fn whole_line(&self, id: &str) -> Option<LineRef> {
        self.session.whole_line_at(*self.messages.get(id)?)
    }

    /// The first copy of part `id`.
    pub fn part(&self, id: &str) -> Option<&'a Part> {
        let parts = self.parts.get_or_init(|| {
            let mut map = rustc_hash::FxHashMap::default();
            for (i, m) in self.session.messages.iter().enumerate() {
                for (k, p) in m.parts.iter().enumerate() {
                    map.entry(p.id.as_str()).or_insert((i, k));
                }
            }
            map
        });
        parts
            .get(id)
            .map(|&(i, k)| &self.session.messages[i].parts[k])
    }

    /// How many stored messages have id `id` (0 for none).
    pub fn copies(&self, id: &str) -> usize {
        let copies = self.copies.get_or_init(|| {
            let mut map = rustc_hash::FxHashMap::default();
            for m in &self.session.messages {
                *map.entry(m.id.as_str()).or_insert(0) += 1;
            }
            map
        });
        copies.get(id).copied().unwrap_or(0)
    }
}

/// A loaded session.
#[derive(Debug, Clone)]
pub struct Session {
    pub agent: Agent,
    pub id: String,
    pub title: Option<String>,
    /// The store it came from (db file or `storage/` dir).
    pub source: PathBuf,
    /// Messages in stored chronological order: `(time_created, id)` ascending.
    pub messages: Vec<Message>,
    /// Parts whose message does not exist in the session.
    pub orphan_parts: Vec<OrphanPart>,
    /// Ids that were stored more than once (message or part ids).
    pub duplicate_ids: Vec<DuplicateId>,
    pub problems: Vec<LoadProblem>,
    /// Indexes into `messages` of what the model sees on the next turn, in the
    /// order the agent sends them (the agent's own compaction rule, computed by
    /// the format module).
    pub visible: Vec<usize>,
    /// Files of a line-oriented store the session was read from (main file
    /// first, then sub-agent files); [`LineRef::file`] indexes this.
    pub files: Vec<PathBuf>,
    /// Stored bytes outside messages (metadata lines, unreadable lines).
    pub other_bytes: u64,
    /// The stored lines of the session's main file that hold no message,
    /// for formats that record them one by one ([`MetaLines`]: Codex); their
    /// bytes are in [`Session::other_bytes`].
    pub meta_lines: MetaLines,
    /// The message the agent resumes from, when it stores one (Claude Code
    /// `last-prompt.leafUuid`).
    pub leaf_id: Option<String>,
    pub parent_links: ParentLinks,
    /// Facts about the data worth telling people (e.g. usage the agent does
    /// not store), printed with `list` and `check`; set through
    /// [`Session::note`].
    pub notes: Vec<String>,
    /// The figures the [`Session::notes`] state (counts, bytes, tokens), by
    /// name (`summarization_requests`, `unfinished_tail_bytes`...): what
    /// `--format json` gives as fields, never only inside a sentence.
    pub note_figures: std::collections::BTreeMap<String, u64>,
    /// Model limits the agent stored with the session itself (Codex
    /// `task_started.model_context_window`); used when no flag names limits.
    pub stored_limits: Option<crate::budget::Limits>,
    /// Usage the agent stores per session rather than per message
    /// (hermes-agent `sessions.input_tokens`...): added to [`Session::tokens_total`].
    pub session_usage: Usage,
    /// Where the session sits among sessions that continue one another,
    /// when the agent links sessions (hermes-agent `parent_session_id`).
    pub lineage: Option<Box<Lineage>>,
    /// The folder the agent worked in when the session started, as stored,
    /// for formats that find a session to resume by it (Claude Code: the
    /// `cwd` of the main file's first message line that has one; its next
    /// steps `cd` there). `None` when the session stores none or its
    /// format does not read it.
    pub project_dir: Option<PathBuf>,
}

/// The stored lines of a session's main file that hold no message: records
/// the agent writes beside the conversation and never sends the model
/// (Codex `event_msg`, `turn_context`, `world_state` and unknown line types),
/// its header, blank lines and lines it could not read. Kept as figures,
/// 12 bytes a line (number, kind, bytes), not as messages: 1.27 million of
/// the 2.4 million lines of the 1 GB rollout of benches/ are such lines, and
/// a message took 152 bytes. Lines are added in file order; a kind is an
/// index into a list of at most [`MetaLines::MAX_KINDS`] names (line types
/// are user data: past that, [`MetaLines::OTHER_KINDS`] stands for the rest).
#[derive(Debug, Clone, Default)]
pub struct MetaLines {
    kinds: Vec<Sym>,
    lines: Vec<MetaLine>,
    /// The bytes of lines of 4 GiB or more (whose [`MetaLine::bytes`]
    /// field holds `u32::MAX`), by line number, ascending.
    big: Vec<(u32, u64)>,
    /// Newest time stored on one of the lines (ms since the Unix epoch).
    newest: Option<i64>,
}

/// One line of [`MetaLines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaLine {
    /// 1-based line number in the session's main file.
    pub line: std::num::NonZeroU32,
    /// Index into the kind names ([`MetaLines::kind_name`]).
    pub kind: u16,
    /// Bytes of the line, its line ending included ([`MetaLines::bytes_of`]:
    /// `u32::MAX` stands for a line of 4 GiB or more).
    bytes: u32,
}

/// What [`MetaLines::by_kind`] gives for one kind: its name, how many lines
/// and their bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetaKindCount {
    pub kind: String,
    pub lines: u64,
    pub bytes: u64,
}

impl MetaLines {
    /// Most distinct kind names kept: 4,096.
    pub const MAX_KINDS: usize = 4096;
    /// The kind that stands for every kind past [`MetaLines::MAX_KINDS`].
    pub const OTHER_KINDS: &'static str = "(other line types)";

    /// Records `line` as a line of kind `kind`, stored at time `time` (ms)
    /// when it stores one. Lines come in file order.
    pub fn push(&mut self, line: LineRef, kind: &str, time: Option<i64>) {
        let kind = self.kind_index(kind);
        let (bytes, big) = held(line.bytes);
        if big {
            self.big.push((line.line.get(), line.bytes));
        }
        self.lines.push(MetaLine {
            line: line.line,
            kind,
            bytes,
        });
        if let Some(t) = time {
            self.newest = Some(self.newest.map_or(t, |n| n.max(t)));
        }
    }

    /// Room for `n` more lines: reserved up front from an estimate of the
    /// file's lines, room never used is never touched (address space, not
    /// memory), and the list is not copied as it grows (a copy of a list
    /// of a million lines held both at once).
    pub fn reserve(&mut self, n: usize) {
        let _ = self.lines.try_reserve_exact(n);
    }

    /// The bytes of `l`, a line of this list.
    pub fn bytes_of(&self, l: &MetaLine) -> u64 {
        if l.bytes < u32::MAX {
            return u64::from(l.bytes);
        }
        let n = l.line.get();
        match self.big.binary_search_by_key(&n, |&(k, _)| k) {
            Ok(i) => self.big[i].1,
            Err(_) => u64::from(l.bytes),
        }
    }

    fn kind_index(&mut self, kind: &str) -> u16 {
        // Newest first: a rollout repeats a dozen kinds.
        if let Some(k) = self.kinds.iter().rposition(|k| **k == *kind) {
            return k as u16;
        }
        if self.kinds.len() + 1 >= Self::MAX_KINDS {
            return self.kind_index_of_other();
        }
        self.kinds.push(sym(kind));
        (self.kinds.len() - 1) as u16
    }

    fn kind_index_of_other(&mut self) -> u16 {
        match self.kinds.iter().position(|k| **k == *Self::OTHER_KINDS) {
            Some(k) => k as u16,
            None => {
                self.kinds.push(sym(Self::OTHER_KINDS));
                (self.kinds.len() - 1) as u16
            }
        }
    }

    /// The name of kind `k` (`""` for an index no line uses).
    pub fn kind_name(&self, k: u16) -> &str {
        self.kinds.get(usize::from(k)).map_or("", |s| s)
    }

    /// The lines, in file order.
    pub fn lines(&self) -> &[MetaLine] {
        &self.lines
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Newest time stored on one of the lines (ms), if any.
    pub fn newest_time(&self) -> Option<i64> {
        self.newest
    }

    /// Lines and bytes of each kind, in the order kinds were first met.
    pub fn by_kind(&self) -> Vec<MetaKindCount> {
        let mut out: Vec<MetaKindCount> = self
            .kinds
            .iter()
            .map(|k| MetaKindCount {
                kind: k.to_string(),
                lines: 0,
                bytes: 0,
            })
            .collect();
        for l in &self.lines {
            if let Some(c) = out.get_mut(usize::from(l.kind)) {
                c.lines += 1;
                c.bytes += self.bytes_of(l);
            }
        }
        out.retain(|c| c.lines > 0);
        out
    }

    /// The lines numbered `first..=last` that `keep` does not keep (given
    /// the line's kind name): their count and bytes.
    pub fn in_range(&self, first: u64, last: u64, keep: impl Fn(&str) -> bool) -> (u64, u64) {
        let (mut n, mut bytes) = (0, 0);
        for l in self.range(first, last) {
            if !keep(self.kind_name(l.kind)) {
                n += 1;
                bytes += self.bytes_of(l);
            }
        }
        (n, bytes)
    }

    fn range(&self, first: u64, last: u64) -> &[MetaLine] {
        let a = self
            .lines
            .partition_point(|l| u64::from(l.line.get()) < first);
        let b = self
            .lines
            .partition_point(|l| u64::from(l.line.get()) <= last);
        self.lines.get(a..b.max(a)).unwrap_or_default()
    }

    /// Removes the lines `dropped` says are dropped (given the line number
    /// and kind name); answers the bytes removed.
    pub fn remove(&mut self, dropped: impl Fn(u64, &str) -> bool) -> u64 {
        let kinds = &self.kinds;
        let big = &self.big;
        let name = |k: u16| kinds.get(usize::from(k)).map_or("", |s| &**s);
        let bytes = |l: &MetaLine| match l.bytes {
            u32::MAX => big
                .binary_search_by_key(&l.line.get(), |&(k, _)| k)
                .map_or(u64::from(u32::MAX), |i| big[i].1),
            b => u64::from(b),
        };
        let mut removed = 0u64;
        self.lines.retain(|l| {
            let gone = dropped(u64::from(l.line.get()), name(l.kind));
            if gone {
                removed += bytes(l);
            }
            !gone
        });
        removed
    }
}

/// A huge session's messages are freed on every worker of the pool it is
/// dropped in (one core outside a pool, so that `--jobs` holds). Freeing
/// the 2.4 million messages of the 1 GB Codex rollout of benches/ took
/// 0.40 s of its `check`'s wall time on one core (perf: 201 of 5,305
/// samples), 0.25 s on two.
impl Drop for Session {
    fn drop(&mut self) {
        if self.messages.len() >= PARALLEL_DROP_MESSAGES && rayon::current_thread_index().is_some()
        {
            use rayon::prelude::*;
            let messages = std::mem::take(&mut self.messages);
            messages.into_par_iter().with_min_len(4096).for_each(drop);
        }
    }
}

/// Messages from which a dropped session's are freed on every worker
/// (65,536: below it, freeing takes milliseconds).
pub const PARALLEL_DROP_MESSAGES: usize = 65_536;

/// Where a session sits among the sessions an agent continues one another
/// with (hermes-agent: a compression ends a session and continues the
/// conversation in a child session; docs/formats/hermes.md section 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lineage {
    /// The session this one names as its parent, as stored.
    pub parent: Option<String>,
    /// `parent` names no session of the store.
    pub parent_missing: bool,
    /// First session of the compaction chain this session belongs to.
    pub root: String,
    /// 1-based position in the chain (1 = the root).
    pub position: usize,
    /// Sessions in the chain, root to tip.
    pub length: usize,
    /// The chain's newest session, what the agent continues.
    pub tip: String,
    /// The session the agent loads when asked to resume this one.
    pub resumes: String,
    /// The session was ended by a compaction that continues in a child.
    pub ended_by_compaction: bool,
    /// Child sessions that continue it after such a compaction.
    pub continuations: usize,
    /// The session is such a continuation of its parent.
    pub continuation: bool,
    /// Other sessions that continue the same parent after its compaction
    /// (siblings of a continuation; 0 when the session is none).
    pub sibling_continuations: usize,
    /// Message rows stored for the session, archived ones included.
    pub rows: usize,
}

impl Lineage {
    /// The lineage of session `id` is an empty continuation: a continuation
    /// with no message row that a resume of its chain lands on (what
    /// `empty-continuation` reports and `repair` drops).
    pub fn empty_continuation(&self, id: &str) -> bool {
        self.continuation && self.rows == 0 && self.resumes == id
    }
}

impl Session {
    /// An empty session.
    /// Adds note `text` and the figures it states, by name (a figure of a
    /// name already noted is added to it).
    pub fn note<K: Into<String>>(
        &mut self,
        text: String,
        figures: impl IntoIterator<Item = (K, u64)>,
    ) {
        self.notes.push(text);
        for (name, v) in figures {
            let f = self.note_figures.entry(name.into()).or_default();
            *f = f.saturating_add(v);
        }
    }

    pub fn new(agent: Agent, id: &str, title: Option<String>, source: PathBuf) -> Session {
        Session {
            agent,
            id: id.to_string(),
            title,
            source,
            messages: Vec::new(),
            orphan_parts: Vec::new(),
            duplicate_ids: Vec::new(),
            problems: Vec::new(),
            visible: Vec::new(),
            files: Vec::new(),
            other_bytes: 0,
            meta_lines: MetaLines::default(),
            leaf_id: None,
            parent_links: ParentLinks::UserTurn,
            notes: Vec::new(),
            note_figures: Default::default(),
            stored_limits: None,
            session_usage: Usage::default(),
            lineage: None,
            project_dir: None,
        }
    }

    /// Ids of every message a compaction keeps across it (its preserved
    /// messages; Claude Code), which repairs never re-parent or drop.
    pub fn preserved_ids(&self) -> rustc_hash::FxHashSet<&str> {
        self.messages
            .iter()
            .filter_map(|m| m.compaction())
            .flat_map(|c| c.preserved.iter().map(String::as_str))
            .collect()
    }

    /// Index of a message by id (its first copy).
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.messages.iter().position(|m| m.id == id)
    }

    /// Whether any message names a parent (Codex and hermes-agent store
    /// none): rules that follow parents return early without a map of every
    /// id when none does (at 2.4 million messages such a map is 130 MB).
    pub fn has_parents(&self) -> bool {
        self.messages.iter().any(|m| m.parent_id().is_some())
    }

    /// Id -> index of the first copy, for the given `ids` only: one pass
    /// over the messages, a map as large as `ids` (for a few lookups in a
    /// huge session). Ids no message has are left out.
    pub fn first_index_of<'i>(
        &self,
        ids: impl IntoIterator<Item = &'i str>,
    ) -> rustc_hash::FxHashMap<&'i str, usize> {
        let mut want: rustc_hash::FxHashMap<&'i str, Option<usize>> =
            ids.into_iter().map(|id| (id, None)).collect();
        if want.is_empty() {
            return rustc_hash::FxHashMap::default();
        }
        for (i, m) in self.messages.iter().enumerate() {
            if let Some(slot) = want.get_mut(m.id.as_str()) {
                slot.get_or_insert(i);
            }
        }
        want.into_iter()
            .filter_map(|(id, i)| Some((id, i?)))
            .collect()
    }

    /// The stored line message `i` (the first copy of its id) fills on its
    /// own ([`Lookup::whole_line`]); `None` for an index past the end.
    pub fn whole_line_at(&self, i: usize) -> Option<LineRef> {
        let ms = &self.messages;
        let l = ms.get(i)?.line()?;
        let same = |j: usize| {
            ms.get(j)
                .and_then(|m| m.line())
                .is_some_and(|o| o.file == l.file && o.line == l.line)
        };
        if (i > 0 && same(i - 1)) || same(i + 1) {
            return None;
        }
        if self.duplicate_ids.iter().any(|d| d.id == ms[i].id) {
            return None;
        }
        Some(l)
    }

    /// The index of each of `ids`, found by one walk over the messages when
    /// the ids name messages in stored order, each once at most (a cut's
    /// drops): no map of every id. `None` when the session stores an id
    /// more than once, or when an id is missing or out of order (then a
    /// [`Session::lookup`] answers).
    pub fn indices_in_order<'i>(
        &self,
        ids: impl IntoIterator<Item = &'i str>,
    ) -> Option<Vec<usize>> {
        // Not every format records its repeated ids: ask the messages.
        if !self.duplicate_ids.is_empty() || !self.ids_unique() {
            return None;
        }
        let ids = ids.into_iter();
        let mut out = Vec::with_capacity(ids.size_hint().0);
        let mut next = 0;
        for id in ids {
            let i = next + self.messages.get(next..)?.iter().position(|m| m.id == id)?;
            out.push(i);
            next = i + 1;
        }
        Some(out)
    }

    /// Whether no two messages share an id. Compares the sorted 64-bit
    /// hashes of the ids (8 bytes a message, not a set of every id); only
    /// when two hashes are equal are the ids compared as text.
    pub fn ids_unique(&self) -> bool {
        use std::hash::BuildHasher;
        let hasher = rustc_hash::FxBuildHasher;
        let mut hashes: Vec<u64> = self
            .messages
            .iter()
            .map(|m| hasher.hash_one(m.id.as_str()))
            .collect();
        hashes.sort_unstable();
        if hashes.windows(2).all(|w| w[0] != w[1]) {
            return true;
        }
        drop(hashes);
        let mut seen: rustc_hash::FxHashSet<&str> = Default::default();
        self.messages.iter().all(|m| seen.insert(m.id.as_str()))
    }

    /// Id -> index of its first copy, for rules that look many ids up.
    pub fn id_index(&self) -> rustc_hash::FxHashMap<&str, usize> {
        let mut map = rustc_hash::FxHashMap::with_capacity_and_hasher(
            self.messages.len(),
            Default::default(),
        );
        for (i, m) in self.messages.iter().enumerate() {
            map.entry(m.id.as_str()).or_insert(i);
        }
        map
    }

    /// [`Session::lookup`] whose message lookups answer for `ids` only
    /// (parts and copies are looked up over the whole session, built when
    /// first asked): a map as large as `ids`, for the few messages a repair
    /// changes in a session of millions.
    pub fn lookup_of<'s>(&'s self, ids: impl IntoIterator<Item = &'s str>) -> Lookup<'s> {
        Lookup {
            session: self,
            messages: self.first_index_of(ids),
            copies: std::sync::OnceLock::new(),
            parts: std::sync::OnceLock::new(),
        }
    }

    /// Id lookups built once, for code that looks many ids up.
    pub fn lookup(&self) -> Lookup<'_> {
        Lookup {
            session: self,
            messages: self.id_index(),
            copies: std::sync::OnceLock::new(),
            parts: std::sync::OnceLock::new(),
        }
    }

    /// Sum of stored usage over all messages; a provider response stored over
    /// several messages ([`Message::response_id`]) counts once, with its last
    /// message's usage (what ccusage does for Claude Code's split responses),
    /// plus the usage stored per session ([`Session::session_usage`]).
    pub fn tokens_total(&self) -> Usage {
        let mut last: rustc_hash::FxHashMap<std::num::NonZeroU64, usize> =
            rustc_hash::FxHashMap::default();
        for (i, m) in self.messages.iter().enumerate() {
            if let Some(r) = m.response_id() {
                last.insert(r, i);
            }
        }
        let mut u = Usage::default();
        for (i, m) in self.messages.iter().enumerate() {
            match m.response_id() {
                Some(r) if last.get(&r) != Some(&i) => {}
                _ => u.add(m.usage()),
            }
        }
        u.add(&self.session_usage);
        u
    }

    /// Number of compaction requests.
    pub fn compactions(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.compaction().is_some())
            .count()
    }

    /// Last context size the provider reported (tokens): the overflow count of the
    /// newest non-summary assistant of the main history with non-zero usage.
    pub fn context_tokens(&self) -> Option<u64> {
        self.messages
            .iter()
            .rev()
            .find(|m| {
                m.role() == Role::Assistant
                    && !m.summary()
                    && !m.sidechain()
                    && !m.usage().is_zero()
            })
            .map(|m| m.usage().overflow_count())
    }

    /// `provider/model` the session resumes with: the newest user message's
    /// model, else the newest non-summary assistant's of the main history
    /// (never a compaction agent's or a sub-agent's).
    pub fn resume_model(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role() == Role::User && m.model().is_some())
            .or_else(|| {
                self.messages.iter().rev().find(|m| {
                    m.role() == Role::Assistant
                        && !m.summary()
                        && !m.sidechain()
                        && m.model().is_some()
                })
            })
            .and_then(|m| m.model())
    }

    /// Whether message `i` is in the model-visible view (a linear scan: use
    /// [`Session::visible_mask`] in loops).
    pub fn is_visible(&self, i: usize) -> bool {
        self.visible.contains(&i)
    }

    /// For every message index, whether it is in the model-visible view.
    pub fn visible_mask(&self) -> Vec<bool> {
        let mut v = vec![false; self.messages.len()];
        for &i in &self.visible {
            if let Some(x) = v.get_mut(i) {
                *x = true;
            }
        }
        v
    }

    /// Stored bytes of the whole session: messages, parts, orphan parts and
    /// the bytes stored outside messages.
    pub fn payload_bytes(&self) -> u64 {
        self.other_bytes
            + self.messages.iter().map(|m| m.payload_bytes()).sum::<u64>()
            + self
                .orphan_parts
                .iter()
                .map(|p| p.part.payload_bytes())
                .sum::<u64>()
    }

    pub fn media_bytes(&self) -> u64 {
        self.messages.iter().map(|m| m.media_bytes()).sum()
    }

    pub fn part_count(&self) -> usize {
        self.messages.iter().map(|m| m.parts.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A huge session holds one `Message` per stored line that holds one
    /// (1.15 million for the 1 GB Codex rollout of benches/) and one `Part`
    /// per content item: their sizes are memory. Boxing what few messages
    /// and parts set, 32-bit part figures, one-pointer [`Sym`]s and one part
    /// held in its message ([`Parts`]) keep them here.
    #[test]
    fn messages_and_parts_stay_small() {
        let (message, part) = (std::mem::size_of::<Message>(), std::mem::size_of::<Part>());
        assert!(part <= 56, "Part is {part} bytes");
        // Its one part inline: no allocation for it.
        assert!(message <= 72 + part, "Message is {message} bytes");
        assert_eq!(std::mem::size_of::<Parts>(), part);
        // A tool call with its id inline: one allocation of 64 bytes.
        assert_eq!(std::mem::size_of::<CallId>(), 32);
        assert_eq!(std::mem::size_of::<ToolCall>(), 64);
        // An id is two words, and a line id of a huge rollout is inline.
        assert_eq!(std::mem::size_of::<Id>(), 16);
        assert!(crate::formats::codex::ids::part("L2415110", 12).is_inline());
        assert_eq!(std::mem::size_of::<Option<Box<Usage>>>(), 8);
        // What each field pays for being optional: nothing.
        assert_eq!(std::mem::size_of::<Option<Sym>>(), 8);
        assert_eq!(
            std::mem::size_of::<Option<LineRef>>(),
            std::mem::size_of::<LineRef>()
        );
        assert_eq!(std::mem::size_of::<Option<std::num::NonZeroU64>>(), 8);
        assert_eq!(std::mem::size_of::<LineRef>(), 24);
        assert_eq!(std::mem::size_of::<OptMillis>(), 8);
    }

    /// Lines that hold no message keep their kind, bytes and newest time;
    /// ranges count and remove them by line; kinds past the cap share one.
    #[test]
    fn meta_lines_count_kinds_and_remove_by_line() {
        let at = |n: u32, bytes: u64| LineRef {
            file: 0,
            line: std::num::NonZeroU32::new(n).expect("lines count from 1"),
            offset: 0,
            bytes,
        };
        let mut m = MetaLines::default();
        m.push(at(1, 10), "session_meta", None);
        m.push(at(3, 5), "event_msg/token_count", Some(7));
        m.push(at(4, 6), "turn_context", Some(3));
        m.push(at(9, 4), "event_msg/token_count", None);
        assert_eq!(std::mem::size_of::<MetaLine>(), 12);
        assert_eq!(m.len(), 4);
        assert_eq!(m.newest_time(), Some(7));
        let kinds: Vec<(String, u64, u64)> = m
            .by_kind()
            .into_iter()
            .map(|k| (k.kind, k.lines, k.bytes))
            .collect();
        assert_eq!(
            kinds,
            [
                ("session_meta".to_string(), 1, 10),
                ("event_msg/token_count".to_string(), 2, 9),
                ("turn_context".to_string(), 1, 6)
            ]
        );
        assert_eq!(m.in_range(1, 4, |k| k == "session_meta"), (2, 11));
        assert_eq!(m.in_range(5, 8, |_| false), (0, 0));
        assert_eq!(m.remove(|l, k| l <= 4 && k != "session_meta"), 11);
        assert_eq!(m.len(), 2);
        let mut many = MetaLines::default();
        for k in 0..MetaLines::MAX_KINDS + 10 {
            many.push(at(1, 1), &format!("kind{k}"), None);
        }
        let kinds = many.by_kind();
        assert_eq!(kinds.len(), MetaLines::MAX_KINDS);
        let other = kinds
            .iter()
            .find(|k| k.kind == MetaLines::OTHER_KINDS)
            .expect("the rest share one kind");
        // 4,095 kinds by name, then the other 11 under one.
        assert_eq!(other.lines, 11);
    }

    /// A call id reads back as stored, inline or boxed, and hashes and
    /// compares as its text (maps of ids are looked up by `str`).
    #[test]
    fn call_ids_read_back_inline_or_boxed() {
        use std::collections::HashMap;
        let short = "call_BpTazJ89W9PntRqGPwDNfwEY";
        let long = "x".repeat(CallId::INLINE + 1);
        let edge = "é".repeat(CallId::INLINE / 2);
        for s in [short, &long, &edge, "", "toolu_01ABCDEFGHIJKLMNOPQRSTUV"] {
            let c = CallId::from(s);
            assert_eq!(&*c, s);
            assert_eq!(c.to_string(), s);
            let mut m: HashMap<CallId, usize> = HashMap::new();
            m.insert(c.clone(), 1);
            assert_eq!(m.get(s), Some(&1));
            assert_eq!(c, CallId::from(s.to_string()));
        }
        assert!(matches!(CallId::from(short).0, CallIdRepr::Inline { .. }));
        assert!(matches!(
            CallId::from(long.as_str()).0,
            CallIdRepr::Boxed(_)
        ));
        assert_eq!(ToolCall::chars(u64::MAX), u32::MAX);
    }

    /// `OptMillis` gives back every time but `i64::MIN` (kept as one
    /// millisecond later) and tells none from 0.
    #[test]
    fn opt_millis_keeps_times_and_none() {
        for t in [0, 1, -1, 1_764_000_000_000, i64::MAX, i64::MIN + 1] {
            assert_eq!(OptMillis::from(Some(t)).get(), Some(t));
        }
        assert_eq!(OptMillis::from(Some(i64::MIN)).get(), Some(i64::MIN + 1));
        assert_eq!(OptMillis::from(None).get(), None);
        assert!(OptMillis::NONE.is_none() && !OptMillis::from(Some(0)).is_none());
        assert_eq!(format!("{:?}", OptMillis::from(Some(5))), "Some(5)");
    }

    /// An all-zero usage is not boxed; a stored total of 0 is (Codex tells
    /// a reported 0 from none).
    #[test]
    fn set_usage_boxes_only_what_is_not_the_default() {
        let mut m = Message::new("m", Role::Assistant);
        m.set_usage(Usage::default());
        assert!(m.usage.is_none());
        assert_eq!(*m.usage(), Usage::default());
        m.set_usage(Usage {
            total: Some(0),
            ..Usage::default()
        });
        assert_eq!(m.usage().total, Some(0));
        m.set_usage(Usage {
            input: 7,
            ..Usage::default()
        });
        assert_eq!(m.usage().input, 7);
        assert_eq!(m.usage().overflow_count(), 7);
    }

    /// A session of user messages with these ids, in this order.
    fn user_messages(ids: &[&str]) -> Session {
        let mut s = Session::new(Agent::Codex, "s", None, "x".into());
        s.messages = ids.iter().map(|&id| Message::new(id, Role::User)).collect();
        s
    }

    /// The lookups for a few ids find the first copy of each and leave out
    /// ids no message has; a session without parents says so.
    #[test]
    fn first_index_of_and_has_parents() {
        let mut s = user_messages(&["a", "b", "a", "c"]);
        let ix = s.first_index_of(["a", "c", "zz", "a"]);
        assert_eq!(ix.len(), 2);
        assert_eq!((ix["a"], ix["c"]), (0, 3));
        assert!(s.first_index_of(std::iter::empty()).is_empty());
        assert!(!s.has_parents());
        s.messages[3].set_parent_id(Some("b".into()));
        assert!(s.has_parents());
        // A lookup of a few ids answers for them only; parts for all.
        s.messages[1]
            .parts
            .push(Part::empty("p", PartKind::Text, "text"));
        let ix = s.lookup_of(["c"]);
        assert_eq!(ix.message("c").map(|m| m.parent_id()), Some(Some("b")));
        assert!(ix.message("a").is_none());
        assert_eq!(ix.part("p").map(|p| p.id.as_str()), Some("p"));
    }

    /// Ids named in stored order are found by one walk; anything else is
    /// left to a lookup.
    #[test]
    fn indices_in_order_walks_once_or_gives_up() {
        let mut s = user_messages(&["a", "b", "c", "d"]);
        assert_eq!(s.indices_in_order(["a", "c", "d"]), Some(vec![0, 2, 3]));
        assert_eq!(s.indices_in_order(["b"]), Some(vec![1]));
        assert_eq!(s.indices_in_order(std::iter::empty()), Some(vec![]));
        assert_eq!(s.indices_in_order(["c", "a"]), None, "out of order");
        assert_eq!(s.indices_in_order(["a", "a"]), None, "named twice");
        assert_eq!(s.indices_in_order(["a", "zz"]), None, "missing");
        // The walk agrees with the map of every id.
        let ix = s.id_index();
        assert_eq!(
            s.indices_in_order(["a", "b", "d"]),
            Some(vec![ix["a"], ix["b"], ix["d"]])
        );
        s.duplicate_ids.push(DuplicateId {
            id: "zz".into(),
            place: "line 9".into(),
            lines: None,
            same_content: true,
        });
        assert_eq!(s.indices_in_order(["a"]), None, "an id said stored twice");
        // A format that records no repeated ids: the messages tell.
        let s = user_messages(&["a", "b", "a", "c"]);
        assert_eq!(s.indices_in_order(["b", "c"]), None, "an id stored twice");
    }

    /// The cut skips its sets of every id only when no id repeats.
    #[test]
    fn ids_unique_tells_a_repeated_id() {
        assert!(user_messages(&[]).ids_unique());
        assert!(user_messages(&["L1", "L2", "L3"]).ids_unique());
        assert!(!user_messages(&["L1", "L2", "L1"]).ids_unique());
    }

    /// A message fills a whole line only when no neighbour shares it and its
    /// id is stored once.
    #[test]
    fn whole_line_is_a_line_no_other_message_shares() {
        let at = |id: &str, file: u32, line: u32| {
            let mut m = Message::new(id, Role::User);
            m.set_line(Some(LineRef {
                file,
                line: std::num::NonZeroU32::new(line).expect("lines count from 1"),
                offset: u64::from(line) * 10,
                bytes: 10,
            }));
            m
        };
        let mut s = Session::new(Agent::Codex, "s", None, "x".into());
        s.messages = vec![
            at("L1", 0, 1),
            at("L2.rh0", 0, 2),
            at("L2", 0, 2),
            at("L3", 0, 3),
            at("a", 1, 3),
            Message::new("row", Role::User),
            at("dup", 0, 4),
        ];
        s.duplicate_ids.push(DuplicateId {
            id: "dup".into(),
            place: "line 5".into(),
            lines: None,
            same_content: true,
        });
        let ix = s.lookup();
        let line = |id: &str| ix.whole_line(id).map(|l| (l.file, l.number()));
        assert_eq!(line("L1"), Some((0, 1)));
        assert_eq!(line("L2.rh0"), None, "shares line 2 with L2");
        assert_eq!(line("L2"), None, "shares line 2 with L2.rh0");
        assert_eq!(line("L3"), Some((0, 3)));
        assert_eq!(line("a"), Some((1, 3)), "same number, another file");
        assert_eq!(line("row"), None, "no line");
        assert_eq!(line("dup"), None, "stored twice");
        assert_eq!(line("missing"), None);
    }
}
