//! Reading opencode's stored JSON into the model: a message info
//! ([`parse_message`]), a part ([`parse_part`]), and a session's messages
//! and parts put together ([`assemble`]). Shared by the SQLite and the
//! legacy JSON store. Shapes: docs/formats/opencode-kilo.md sections 4 to 9.

use super::view::visible_view;
use super::PARENT_FIELD;
use crate::formats::measured::{raw_int, raw_str, raw_true, Figures, Json};
use crate::formats::Required;
use crate::measure::parse_data_url;
use crate::model::*;
use serde_json::Value;
use std::borrow::Cow;

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    value_at(v, path)
        .and_then(|cur| {
            cur.as_u64()
                .or_else(|| cur.as_f64().map(|f| f.max(0.0) as u64))
        })
        .unwrap_or(0)
}

/// The value at `path` (object keys) under `v`.
fn value_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |cur, k| cur.get(k))
}

/// The paths of a message info's token counts, as [`BadCount::field`]
/// names them. opencode stores JSON numbers: a fraction is a count
/// (truncated), a negative number or any other value is not.
const COUNT_FIELDS: [(&[&str], &str); 5] = [
    (&["input"], "tokens.input"),
    (&["output"], "tokens.output"),
    (&["reasoning"], "tokens.reasoning"),
    (&["cache", "read"], "tokens.cache.read"),
    (&["cache", "write"], "tokens.cache.write"),
];

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// What [`parse_message`] reads of a message info. Two readers give it: a
/// tree ([`MessageInfo::of_value`]) and the JSON text itself
/// ([`MessageInfo::of_text`]), which gives the same or sends the row to the
/// tree reader.
struct MessageInfo<'a> {
    role: Option<Cow<'a, str>>,
    /// `time.created` (ms).
    created: Option<i64>,
    /// `time.completed` (ms).
    completed: Option<i64>,
    usage: Usage,
    error: Option<StoredError>,
    /// `provider/model`.
    model: Option<String>,
    parent: Option<Cow<'a, str>>,
    summary: bool,
    finish: Option<Cow<'a, str>>,
    /// Token counts that are not counts, in [`COUNT_FIELDS`] order.
    bad_counts: Vec<BadCount>,
}

impl<'a> MessageInfo<'a> {
    /// The fields of a message info tree (a JSON object).
    fn of_value(raw: &'a Value) -> MessageInfo<'a> {
        let s = |v: &'a Value, k: &str| str_at(v, k).map(Cow::Borrowed);
        let bad_counts = match raw.get("tokens") {
            Some(t) => COUNT_FIELDS
                .iter()
                .filter_map(|(path, field)| BadCount::of_value(field, value_at(t, path), true))
                .collect(),
            None => Vec::new(),
        };
        let usage = match raw.get("tokens") {
            Some(t) => Usage {
                input: u64_at(t, &["input"]),
                output: u64_at(t, &["output"]),
                reasoning: u64_at(t, &["reasoning"]),
                cache_read: u64_at(t, &["cache", "read"]),
                cache_write: u64_at(t, &["cache", "write"]),
                total: t.get("total").and_then(Value::as_u64),
            },
            None => Usage::default(),
        };
        let error = raw.get("error").filter(|e| !e.is_null()).map(|e| {
            let data = e.get("data").cloned().unwrap_or(Value::Null);
            StoredError {
                name: str_at(e, "name").unwrap_or("UnknownError").to_string(),
                status_code: data
                    .get("statusCode")
                    .and_then(Value::as_u64)
                    .map(|c| c as u16),
                message: str_at(&data, "message").unwrap_or("").to_string(),
                response_body: str_at(&data, "responseBody").map(str::to_string),
            }
        });
        let model = match (str_at(raw, "providerID"), str_at(raw, "modelID")) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            _ => match (
                raw.pointer("/model/providerID").and_then(Value::as_str),
                raw.pointer("/model/modelID").and_then(Value::as_str),
            ) {
                (Some(p), Some(m)) => Some(format!("{p}/{m}")),
                _ => None,
            },
        };
        MessageInfo {
            role: s(raw, "role"),
            created: raw.pointer("/time/created").and_then(Value::as_i64),
            completed: raw.pointer("/time/completed").and_then(Value::as_i64),
            usage,
            error,
            model,
            parent: s(raw, PARENT_FIELD),
            summary: raw.get("summary").and_then(Value::as_bool).unwrap_or(false),
            finish: s(raw, "finish"),
            bad_counts,
        }
    }

    /// The fields of a message info's JSON text, read without a tree;
    /// `None` when the tree reader must decide ([`fast::readable`], a
    /// stored error, a repeated key or a field it would read otherwise).
    fn of_text(text: &'a str) -> Option<MessageInfo<'a>> {
        use fast::*;
        if !readable(text) {
            return None;
        }
        let f: MessageFields<'a> = serde_json::from_str(text).ok()?;
        if f.error.is_some() {
            return None;
        }
        let t = f.tokens.0.unwrap_or_default();
        let cache = t.cache.0.unwrap_or_default();
        // A `tokens` that is not an object reads as all zero, as absent.
        let usage = Usage {
            input: num(t.input),
            output: num(t.output),
            reasoning: num(t.reasoning),
            cache_read: num(cache.read),
            cache_write: num(cache.write),
            total: raw_int::<u64>(t.total),
        };
        let bad_counts = [t.input, t.output, t.reasoning, cache.read, cache.write]
            .into_iter()
            .zip(COUNT_FIELDS)
            .filter_map(|(r, (_, field))| BadCount::of_raw(field, r.map(Json::get), true))
            .collect();
        let nested = f.model.0.unwrap_or_default();
        let model = match (raw_str(f.provider)?, raw_str(f.model_id)?) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            _ => match (raw_str(nested.provider)?, raw_str(nested.model)?) {
                (Some(p), Some(m)) => Some(format!("{p}/{m}")),
                _ => None,
            },
        };
        let time = f.time.0.unwrap_or_default();
        Some(MessageInfo {
            role: raw_str(f.role)?,
            created: raw_int::<i64>(time.created),
            completed: raw_int::<i64>(time.completed),
            usage,
            error: None,
            model,
            parent: raw_str(f.parent)?,
            summary: raw_true(f.summary),
            finish: raw_str(f.finish)?,
            bad_counts,
        })
    }

    /// The [`Message`]; errors name the field not read
    /// ([`parse_message`] says why from the stored JSON).
    fn message(
        self,
        id: &str,
        info_bytes: u64,
        time_created: Option<i64>,
    ) -> std::result::Result<Message, &'static Required> {
        let role = match self.role {
            Some(r) => Role::named(&r),
            None => return Err(&ROLE),
        };
        let time_created = match time_created.or(self.created) {
            Some(t) => t,
            None => return Err(&CREATED),
        };
        Ok(Message::from(MessageFields {
            id: id.into(),
            role,
            parent_id: self.parent.map(|p| (*p).into()),
            line: None,
            sidechain: false,
            parent_optional: false,
            response_id: None,
            time_created,
            time_completed: self.completed.into(),
            summary: self.summary,
            finish: self.finish.map(|f| sym(&f)),
            rare: Rare {
                error: self.error,
                bad_counts: self.bad_counts,
                ..Default::default()
            }
            .boxed(),
            usage: self.usage.boxed(),
            model: self.model.map(|m| sym(&m)),
            info_bytes,
            parts: crate::model::Parts::new(),
        }))
    }
}

/// A message info's `role`.
const ROLE: Required = Required {
    path: &["role"],
    kind: "string",
    expected: "a string",
    within: "",
};

/// A message info's `time.created` (ms), read when the store has no
/// `time_created` column.
const CREATED: Required = Required {
    path: &["time", "created"],
    kind: "number",
    expected: "an integer (milliseconds)",
    within: "",
};

/// A part's `type`.
const PART_TYPE: Required = Required {
    path: &["type"],
    kind: "string",
    expected: "a string",
    within: " in the part",
};

/// Builds a [`Message`] from an opencode message info (`raw`, as stored: with or
/// without `id`/`sessionID`). `time_created` is the stored column or `time.created`.
/// Errors name the missing or mistyped field.
pub(crate) fn parse_message(
    id: &str,
    raw: Value,
    info_bytes: u64,
    time_created: Option<i64>,
) -> std::result::Result<Message, String> {
    if !raw.is_object() {
        return Err("expected a JSON object for the message info".into());
    }
    MessageInfo::of_value(&raw)
        .message(id, info_bytes, time_created)
        .map_err(|field| field.error(&raw))
}

/// [`parse_message`] of a message info's JSON text, read without building
/// a tree; `None` when the text must be read as a tree and given to
/// [`parse_message`], which then decides (an error included).
pub(crate) fn message_of_text(
    id: &str,
    text: &str,
    info_bytes: u64,
    time_created: Option<i64>,
) -> Option<Message> {
    MessageInfo::of_text(text)?
        .message(id, info_bytes, time_created)
        .ok()
}

/// Placeholder opencode sends instead of a tool output marked compacted
/// (`toModelMessages`, docs/formats/opencode-kilo.md section 10).
const CLEARED_TOOL_OUTPUT: &str = "[Old tool result content cleared]";

/// What [`parse_part`] reads of a part, from a tree ([`PartInfo::of_value`])
/// or from the JSON text ([`PartInfo::of_text`]), as [`MessageInfo`].
struct PartInfo<'a> {
    kind_name: Option<Cow<'a, str>>,
    ignored: bool,
    /// `text` (a text or reasoning part); zero when not a string.
    text: Figures,
    url: Option<Cow<'a, str>>,
    filename: Option<Cow<'a, str>>,
    state: ToolState<'a>,
    tool: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    auto: bool,
    overflow: bool,
    tail_start_id: Option<Cow<'a, str>>,
    synthetic: bool,
}

/// What [`PartInfo`] reads of a tool part's `state`.
#[derive(Default)]
struct ToolState<'a> {
    status: Option<Cow<'a, str>>,
    /// `output`, else `error`, else empty.
    output: Figures,
    /// `input` as compact JSON (empty when absent).
    input: Figures,
    /// `time.compacted` is set: opencode sends a placeholder instead.
    cleared: bool,
    /// The `url` (when a string) and `filename` of each attachment.
    attachments: Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>,
}

impl<'a> PartInfo<'a> {
    /// The fields of a part tree.
    fn of_value(raw: &'a Value) -> PartInfo<'a> {
        let s = |v: &'a Value, k: &str| str_at(v, k).map(Cow::Borrowed);
        let b = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        let state = raw.get("state").map_or_else(ToolState::default, |st| {
            let output = str_at(st, "output")
                .or_else(|| str_at(st, "error"))
                .unwrap_or("");
            let input = st.get("input").map(|i| i.to_string()).unwrap_or_default();
            ToolState {
                status: s(st, "status"),
                output: Figures::of(output),
                input: Figures::of(&input),
                cleared: st.pointer("/time/compacted").is_some_and(|v| !v.is_null()),
                attachments: st
                    .get("attachments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| Some((s(a, "url")?, s(a, "filename"))))
                    .collect(),
            }
        });
        PartInfo {
            kind_name: s(raw, "type"),
            ignored: b(raw, "ignored"),
            text: Figures::of(str_at(raw, "text").unwrap_or("")),
            url: s(raw, "url"),
            filename: s(raw, "filename"),
            state,
            tool: s(raw, "tool"),
            call_id: s(raw, "callID"),
            auto: b(raw, "auto"),
            overflow: b(raw, "overflow"),
            tail_start_id: s(raw, "tail_start_id"),
            synthetic: b(raw, "synthetic"),
        }
    }

    /// The fields of a part's JSON text, read without a tree (its texts
    /// measured as they are read, not copied); `None` when the tree reader
    /// must decide ([`fast::readable`], attachments, a repeated key or a
    /// field it would read otherwise).
    fn of_text(text: &'a str) -> Option<PartInfo<'a>> {
        use fast::*;
        if !readable(text) {
            return None;
        }
        let f: PartFields<'a> = serde_json::from_str(text).ok()?;
        let state = match f.state.0 {
            None => ToolState::default(),
            Some(st) => {
                if st.attachments.is_some_and(|a| a.get() != "[]") {
                    return None;
                }
                let input = match st.input.0 {
                    Some(i) => {
                        Figures::of(&serde_json::from_str::<Value>(i.get()).ok()?.to_string())
                    }
                    None => Figures::default(),
                };
                ToolState {
                    status: raw_str(st.status)?,
                    output: st.output.str().or(st.error.str()).unwrap_or_default(),
                    input,
                    cleared: st.time.0.is_some_and(|t| t.compacted.is_some()),
                    attachments: Vec::new(),
                }
            }
        };
        Some(PartInfo {
            kind_name: raw_str(f.ty)?,
            ignored: raw_true(f.ignored),
            text: f.text.str().unwrap_or_default(),
            url: raw_str(f.url)?,
            filename: raw_str(f.filename)?,
            state,
            tool: raw_str(f.tool)?,
            call_id: raw_str(f.call_id)?,
            auto: raw_true(f.auto),
            overflow: raw_true(f.overflow),
            tail_start_id: raw_str(f.tail_start_id)?,
            synthetic: raw_true(f.synthetic),
        })
    }

    /// The [`Part`]; errors name the field not read ([`parse_part`] says
    /// why from the stored JSON).
    fn part(self, id: &str, payload_bytes: u64) -> std::result::Result<Part, &'static Required> {
        let kind_name = match &self.kind_name {
            Some(t) => sym(t),
            None => return Err(&PART_TYPE),
        };
        let kind = match &*kind_name {
            "text" => PartKind::Text,
            "reasoning" => PartKind::Reasoning,
            "tool" => PartKind::Tool,
            "file" => PartKind::File,
            "compaction" => PartKind::Compaction,
            "step-start" => PartKind::StepStart,
            "step-finish" => PartKind::StepFinish,
            "patch" => PartKind::Patch,
            _ => PartKind::Other,
        };
        let mut media = Vec::new();
        let mut tool = None;
        let mut compaction = None;
        let mut model_chars = 0;
        let mut rewritten = false;
        let mut wire_bytes = 0;
        match kind {
            // opencode leaves `ignored` text parts out of requests.
            PartKind::Text if !self.ignored => {
                model_chars = self.text.chars;
                wire_bytes = self.text.bytes;
                rewritten = self.text.marker;
            }
            PartKind::Reasoning => {
                model_chars = self.text.chars;
                wire_bytes = self.text.bytes;
            }
            PartKind::File => {
                let url = self.url.as_deref().unwrap_or("");
                wire_bytes = url.len() as u64;
                if let Some(m) = parse_data_url(url, self.filename.as_deref()) {
                    media.push(m);
                }
            }
            PartKind::Tool => {
                let state = self.state;
                let status = match state.status.as_deref() {
                    Some("pending") => ToolStatus::Pending,
                    Some("running") => ToolStatus::Running,
                    Some("completed") => ToolStatus::Completed,
                    Some("error") => ToolStatus::Error,
                    Some(o) => ToolStatus::Other(sym(o)),
                    None => ToolStatus::Other(sym("")),
                };
                let (output, input, cleared) = (state.output, state.input, state.cleared);
                let sent_output = if cleared {
                    Figures::of(CLEARED_TOOL_OUTPUT)
                } else {
                    output
                };
                rewritten = output.marker || input.marker;
                model_chars = input.chars + sent_output.chars;
                wire_bytes = input.bytes + sent_output.bytes;
                // opencode drops the attachments of a tool output marked compacted.
                for (url, filename) in &state.attachments {
                    if let Some(m) = parse_data_url(url, filename.as_deref()) {
                        if !cleared {
                            wire_bytes += m.encoded_bytes;
                        }
                        media.push(m);
                    }
                }
                tool = Some(Box::new(ToolCall {
                    name: sym(self.tool.as_deref().unwrap_or("")),
                    call_id: self.call_id.as_deref().unwrap_or("").into(),
                    status,
                    output_chars: ToolCall::chars(output.chars),
                    output_cleared: cleared,
                }));
            }
            PartKind::Compaction => {
                compaction = Some(Box::new(CompactionMarker {
                    auto: self.auto,
                    overflow: self.overflow,
                    tail_start_id: self.tail_start_id.map(Cow::into_owned),
                    ..Default::default()
                }))
            }
            _ => {}
        }
        let mut p = Part::empty(id, kind, "");
        p.kind_name = kind_name;
        p.synthetic = self.synthetic;
        p.rewritten = rewritten;
        p.tool = tool;
        p.set_payload_bytes(payload_bytes);
        p.set_model_chars(model_chars);
        p.set_wire_bytes(wire_bytes);
        p.set_media(media.into());
        p.set_compaction(compaction);
        Ok(p)
    }
}

/// Builds a [`Part`] from an opencode part (`raw`, as stored).
pub(crate) fn parse_part(
    id: &str,
    raw: Value,
    payload_bytes: u64,
) -> std::result::Result<Part, String> {
    PartInfo::of_value(&raw)
        .part(id, payload_bytes)
        .map_err(|field| field.error(&raw))
}

/// [`parse_part`] of a part's JSON text, read without building a tree;
/// `None` when the text must be read as a tree and given to [`parse_part`],
/// which then decides (an error included).
pub(crate) fn part_of_text(id: &str, text: &str, payload_bytes: u64) -> Option<Part> {
    PartInfo::of_text(text)?.part(id, payload_bytes).ok()
}

/// The typed readers of [`MessageInfo::of_text`] and [`PartInfo::of_text`]:
/// every field they need borrowed as raw JSON (`&RawValue`) or measured in
/// the same pass ([`Measured`]), never a tree. serde refuses a repeated
/// field, which sends the text to the tree reader (that keeps the last).
mod fast {
    use crate::formats::measured::{raw_int, Json, Lenient, Measured, Raw};
    use serde::Deserialize;

    /// Whether the typed readers may read `text` at all: a JSON object the
    /// tree reader would accept too. They skip what they do not need
    /// without decoding it, so they would take a text nested deeper than
    /// the tree reader's limit, a number it refuses as out of range or a
    /// lone surrogate escape (`\ud800`, which JSON.stringify writes and
    /// serde_json refuses) that the tree reader refuses.
    pub(super) fn readable(text: &str) -> bool {
        let b = text.as_bytes();
        if !text.starts_with('{') {
            return false;
        }
        let scan = crate::formats::prescan(b);
        !scan.too_deep(b)
            && !scan.number_out_of_range(b)
            && !crate::formats::may_hold_surrogate_escape(b)
    }

    /// A count as the tree reader's `u64_at` reads it: an integer, else a
    /// number's value clamped at 0 and truncated, else 0.
    pub(super) fn num(r: Raw<'_>) -> u64 {
        raw_int::<u64>(r)
            .or_else(|| raw_int::<f64>(r).map(|f| f.max(0.0) as u64))
            .unwrap_or(0)
    }

    /// A field whose `null` counts (`Value::get` gives it): only an absent
    /// field is `None`.
    #[derive(Default)]
    pub(super) struct Present<'a>(pub(super) Raw<'a>);

    impl<'de: 'a, 'a> Deserialize<'de> for Present<'a> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Json::deserialize(d).map(|r| Present(Some(r)))
        }
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct MessageFields<'a> {
        #[serde(borrow)]
        pub role: Raw<'a>,
        #[serde(borrow)]
        pub time: Lenient<TimeFields<'a>>,
        #[serde(borrow)]
        pub tokens: Lenient<TokenFields<'a>>,
        #[serde(borrow)]
        pub error: Raw<'a>,
        #[serde(borrow, rename = "providerID")]
        pub provider: Raw<'a>,
        #[serde(borrow, rename = "modelID")]
        pub model_id: Raw<'a>,
        #[serde(borrow)]
        pub model: Lenient<ModelFields<'a>>,
        /// [`super::PARENT_FIELD`].
        #[serde(borrow, rename = "parentID")]
        pub parent: Raw<'a>,
        #[serde(borrow)]
        pub summary: Raw<'a>,
        #[serde(borrow)]
        pub finish: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct TimeFields<'a> {
        #[serde(borrow)]
        pub created: Raw<'a>,
        #[serde(borrow)]
        pub completed: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct TokenFields<'a> {
        #[serde(borrow)]
        pub input: Raw<'a>,
        #[serde(borrow)]
        pub output: Raw<'a>,
        #[serde(borrow)]
        pub reasoning: Raw<'a>,
        #[serde(borrow)]
        pub cache: Lenient<CacheFields<'a>>,
        #[serde(borrow)]
        pub total: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct CacheFields<'a> {
        #[serde(borrow)]
        pub read: Raw<'a>,
        #[serde(borrow)]
        pub write: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct ModelFields<'a> {
        #[serde(borrow, rename = "providerID")]
        pub provider: Raw<'a>,
        #[serde(borrow, rename = "modelID")]
        pub model: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct PartFields<'a> {
        #[serde(borrow, rename = "type")]
        pub ty: Raw<'a>,
        #[serde(borrow)]
        pub ignored: Raw<'a>,
        pub text: Measured,
        #[serde(borrow)]
        pub url: Raw<'a>,
        #[serde(borrow)]
        pub filename: Raw<'a>,
        #[serde(borrow)]
        pub state: Lenient<StateFields<'a>>,
        #[serde(borrow)]
        pub tool: Raw<'a>,
        #[serde(borrow, rename = "callID")]
        pub call_id: Raw<'a>,
        #[serde(borrow)]
        pub auto: Raw<'a>,
        #[serde(borrow)]
        pub overflow: Raw<'a>,
        #[serde(borrow)]
        pub tail_start_id: Raw<'a>,
        #[serde(borrow)]
        pub synthetic: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct StateFields<'a> {
        #[serde(borrow)]
        pub status: Raw<'a>,
        pub output: Measured,
        pub error: Measured,
        #[serde(borrow)]
        pub time: Lenient<CompactedFields<'a>>,
        #[serde(borrow)]
        pub input: Present<'a>,
        #[serde(borrow)]
        pub attachments: Raw<'a>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct CompactedFields<'a> {
        #[serde(borrow)]
        pub compacted: Raw<'a>,
    }
}

/// Sorts messages chronologically (stored time, then ascending id) and
/// attaches parts; parts whose message is missing become orphans.
/// `parts` are `(message id, part)` pairs.
pub(super) fn assemble(session: &mut Session, mut parts: Vec<(String, Part)>) {
    sort_messages(session);
    parts.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    let mut sink = PartSink::new(&session.messages);
    for (message_id, p) in parts {
        sink.add(message_id, p);
    }
    let attached = sink.finish();
    attach(session, attached);
}

/// Sorts the messages of `session` chronologically (stored time, then
/// ascending id), the order [`PartSink`] indexes them in.
pub(super) fn sort_messages(session: &mut Session) {
    session
        .messages
        .sort_by(|a, b| (a.time_created(), &a.id).cmp(&(b.time_created(), &b.id)));
}

/// Collects parts, in any order, under the messages they name, while the
/// parts are read (no list of every part is held beside the messages).
///
/// The rows are read in the store's order, not sorted by SQLite: an
/// `ORDER BY id` over `part` sorts every row's `data` in a temporary b-tree
/// (1.7 s of a 1 GB database's 2.3 s read, most of it writing the temp
/// file). Each message's parts are put in id order at [`PartSink::finish`].
/// A repeated part id is a duplicate; a part whose message is missing is an
/// orphan.
pub(super) struct PartSink<'a> {
    messages: &'a [Message],
    /// Message id -> index of its first copy.
    index: rustc_hash::FxHashMap<&'a str, usize>,
    /// The parts of each message, by message index.
    lists: Vec<Vec<Part>>,
    orphans: Vec<OrphanPart>,
    duplicates: Vec<DuplicateId>,
    /// The id of the previous part (`None` before the first).
    prev: Option<String>,
    /// Whether every part so far came in ascending id (byte order), as
    /// opencode writes them; then a repeated id is the one just before it.
    in_order: bool,
}

/// What a [`PartSink`] collected: the parts of each message (by index, in
/// id order), orphan parts (in id order) and repeated part ids.
pub(super) struct Attached {
    lists: Vec<Vec<Part>>,
    orphans: Vec<OrphanPart>,
    duplicates: Vec<DuplicateId>,
}

fn repeated_part(id: &str, message_id: &str) -> DuplicateId {
    DuplicateId {
        id: id.to_string(),
        place: format!("part of message {message_id}"),
        lines: None,
        same_content: false,
    }
}

impl<'a> PartSink<'a> {
    /// A sink for the parts of `messages` (sorted by [`sort_messages`]).
    pub(super) fn new(messages: &'a [Message]) -> Self {
        let mut index = rustc_hash::FxHashMap::default();
        index.reserve(messages.len());
        for (i, m) in messages.iter().enumerate().rev() {
            index.insert(m.id.as_str(), i);
        }
        PartSink {
            messages,
            index,
            lists: std::iter::repeat_with(Vec::new)
                .take(messages.len())
                .collect(),
            orphans: Vec::new(),
            duplicates: Vec::new(),
            prev: None,
            in_order: true,
        }
    }

    /// Adds part `p` of message `message_id`.
    pub(super) fn add(&mut self, message_id: String, p: Part) {
        if self.in_order {
            match self.prev.as_deref().map(|prev| prev.cmp(p.id.as_str())) {
                Some(std::cmp::Ordering::Equal) => {
                    self.duplicates.push(repeated_part(&p.id, &message_id));
                }
                Some(std::cmp::Ordering::Greater) => {
                    // Found again at finish, from the sorted ids.
                    self.in_order = false;
                    self.duplicates.clear();
                }
                _ => {}
            }
            let prev = self.prev.get_or_insert_with(String::new);
            prev.clear();
            prev.push_str(&p.id);
        }
        match self.index.get(message_id.as_str()) {
            Some(&i) => self.lists[i].push(p),
            None => self.orphans.push(OrphanPart {
                message_id,
                part: p,
            }),
        }
    }

    /// What was collected, for [`attach`]: each list and the orphans sorted
    /// by part id (stable, so repeated ids keep their read order). When the
    /// parts did not come in id order, repeated ids are found by sorting
    /// references to every id (16 bytes and an index per part, for that
    /// moment); a repeat then counts after the copy in the earlier message
    /// (session order, orphans last).
    pub(super) fn finish(mut self) -> Attached {
        let by_id = |a: &Part, b: &Part| a.id.as_str().cmp(b.id.as_str());
        for l in &mut self.lists {
            if !l.is_sorted_by(|a, b| by_id(a, b).is_le()) {
                l.sort_by(by_id);
            }
        }
        self.orphans.sort_by(|a, b| by_id(&a.part, &b.part));
        if !self.in_order {
            let mut ids: Vec<(&str, usize)> = Vec::new();
            for (i, l) in self.lists.iter().enumerate() {
                ids.extend(l.iter().map(|p| (p.id.as_str(), i)));
            }
            let n = self.lists.len();
            ids.extend(
                self.orphans
                    .iter()
                    .enumerate()
                    .map(|(k, o)| (o.part.id.as_str(), n + k)),
            );
            ids.sort_unstable();
            for w in ids.windows(2) {
                if w[0].0 == w[1].0 {
                    let (id, at) = w[1];
                    let message_id = match self.messages.get(at) {
                        Some(m) => m.id.as_str(),
                        None => self.orphans[at - n].message_id.as_str(),
                    };
                    self.duplicates.push(repeated_part(id, message_id));
                }
            }
        }
        Attached {
            lists: self.lists,
            orphans: self.orphans,
            duplicates: self.duplicates,
        }
    }
}

/// Gives the messages of `session` the parts a [`PartSink`] collected,
/// records repeated part and message ids, and computes the visible view.
pub(super) fn attach(session: &mut Session, attached: Attached) {
    for (m, parts) in session.messages.iter_mut().zip(attached.lists) {
        if m.parts.is_empty() {
            m.parts = parts.into();
        } else {
            m.parts.append(&mut parts.into());
            m.parts.shrink_to_fit();
        }
    }
    session.orphan_parts.extend(attached.orphans);
    session.duplicate_ids.extend(attached.duplicates);
    let mut seen = rustc_hash::FxHashSet::default();
    let repeated: Vec<&str> = session
        .messages
        .iter()
        .map(|m| m.id.as_str())
        .filter(|id| !seen.insert(*id))
        .collect();
    let repeated: Vec<DuplicateId> = repeated
        .into_iter()
        .map(|id| DuplicateId {
            id: id.to_string(),
            place: "message".into(),
            lines: None,
            same_content: false,
        })
        .collect();
    session.duplicate_ids.extend(repeated);
    session.visible = visible_view(&session.messages);
}

#[cfg(test)]
mod part_sink_tests {
    use super::*;

    fn part(id: &str) -> Part {
        Part::empty(id.to_string(), PartKind::Text, "text")
    }

    /// A session of `messages` (id, role, `time_created`), in session order.
    fn session(messages: &[(&str, Role, i64)]) -> Session {
        let mut s = Session::new(Agent::Opencode, "ses_1", None, "opencode.db".into());
        s.messages = messages
            .iter()
            .map(|(id, role, t)| {
                let mut m = Message::new(*id, role.clone());
                m.set_time_created(*t);
                m
            })
            .collect();
        sort_messages(&mut s);
        s
    }

    /// Gives `s` the parts `parts` (message id, part id), read in that order.
    fn take_parts(s: &mut Session, parts: &[(&str, &str)]) {
        let mut sink = PartSink::new(&s.messages);
        for (message_id, part_id) in parts {
            sink.add(message_id.to_string(), part(part_id));
        }
        let attached = sink.finish();
        attach(s, attached);
    }

    /// The part ids of message `i` of `s`.
    fn part_ids(s: &Session, i: usize) -> Vec<&str> {
        s.messages[i].parts.iter().map(|p| p.id.as_str()).collect()
    }

    /// The repeated ids of `s`, with where each repeat is.
    fn repeats(s: &Session) -> Vec<(&str, &str)> {
        s.duplicate_ids
            .iter()
            .map(|d| (d.id.as_str(), d.place.as_str()))
            .collect()
    }

    /// Parts read in id order go under their message; a repeated part id is
    /// a duplicate (kept, as the agent would read both), a part of a missing
    /// message an orphan, and a repeated message id a duplicate too.
    #[test]
    fn parts_go_under_their_messages_as_they_are_read() {
        let mut s = session(&[
            ("msg_b", Role::Assistant, 2),
            ("msg_a", Role::User, 1),
            ("msg_a", Role::User, 3),
        ]);
        let ids: Vec<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["msg_a", "msg_b", "msg_a"]);
        take_parts(
            &mut s,
            &[
                ("msg_a", "prt_1"),
                ("msg_b", "prt_2"),
                ("msg_b", "prt_2"),
                ("msg_gone", "prt_3"),
            ],
        );
        // The first copy of a repeated message id gets its parts.
        assert_eq!(part_ids(&s, 0), ["prt_1"]);
        assert_eq!(part_ids(&s, 1), ["prt_2", "prt_2"]);
        assert!(part_ids(&s, 2).is_empty());
        assert_eq!(s.orphan_parts.len(), 1);
        assert_eq!(s.orphan_parts[0].message_id, "msg_gone");
        assert_eq!(
            repeats(&s),
            [("prt_2", "part of message msg_b"), ("msg_a", "message")]
        );
    }

    /// Parts read out of id order (as rows come from the `part` table) end
    /// up as if read in id order: each message's parts and the orphans
    /// sorted, and repeated ids found across messages, the copy in the
    /// later message counted as the repeat.
    #[test]
    fn parts_read_out_of_id_order_are_sorted_under_their_messages() {
        let mut s = session(&[("msg_a", Role::User, 1), ("msg_b", Role::Assistant, 2)]);
        take_parts(
            &mut s,
            &[
                ("msg_b", "prt_5"),
                ("msg_a", "prt_3"),
                ("msg_gone", "prt_9"),
                ("msg_b", "prt_4"),
                ("msg_a", "prt_1"),
                ("msg_b", "prt_1"),
                ("msg_gone", "prt_8"),
            ],
        );
        assert_eq!(part_ids(&s, 0), ["prt_1", "prt_3"]);
        assert_eq!(part_ids(&s, 1), ["prt_1", "prt_4", "prt_5"]);
        let orphans: Vec<&str> = s.orphan_parts.iter().map(|o| o.part.id.as_str()).collect();
        assert_eq!(orphans, ["prt_8", "prt_9"]);
        assert_eq!(repeats(&s), [("prt_1", "part of message msg_b")]);
    }
}

#[cfg(test)]
mod typed_reader_tests {
    use super::*;

    /// Reads `text` with both readers: whether the typed one read it, after
    /// checking that what it gave is what the tree reader gives.
    fn part_agrees(text: &str) -> bool {
        let tree = match serde_json::from_str::<Value>(text) {
            Ok(v) => format!("{:?}", parse_part("prt_1", v, 9)),
            Err(e) => format!("invalid JSON: {e}"),
        };
        let fast = part_of_text("prt_1", text, 9);
        if let Some(p) = &fast {
            assert_eq!(format!("Ok({p:?})"), tree, "{text}");
        }
        fast.is_some()
    }

    /// [`part_agrees`] for a message info, with and without a stored
    /// `time_created`.
    fn message_agrees(text: &str) -> bool {
        let mut read = true;
        for tc in [None, Some(7)] {
            let tree = match serde_json::from_str::<Value>(text) {
                Ok(v) => format!("{:?}", parse_message("msg_1", v, 9, tc)),
                Err(e) => format!("invalid JSON: {e}"),
            };
            let fast = message_of_text("msg_1", text, 9, tc);
            if let Some(m) = &fast {
                assert_eq!(format!("Ok({m:?})"), tree, "{text}");
            }
            read &= fast.is_some();
        }
        read
    }

    /// The parts the typed reader reads give what the tree gives: texts
    /// with escapes, non-string texts, files, tools (cleared or not, `null`
    /// or absent input, an error instead of an output), compactions,
    /// unknown types, escaped keys.
    #[test]
    fn the_typed_part_reader_gives_what_the_tree_gives() {
        for text in [
            r#"{"type":"text","text":"hi \"there\"\n é session-doctor compact"}"#,
            r#"{"type":"text","text":"x","ignored":true}"#,
            r#"{"type":"text","text":5,"synthetic":true}"#,
            r#"{"ty\u0070e":"te\u0078t","text":"a\u00e9"}"#,
            r#"{"type":"reasoning","text":"think"}"#,
            r#"{"type":"file","url":"data:image/png;base64,iVBORw0KGgo=","filename":"a.png"}"#,
            r#"{"type":"file","url":7}"#,
            r#"{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls","n":1.50,"s":"\u001b[0m"},"output":"out","time":{"start":1,"end":2}}}"#,
            r#"{"type":"tool","tool":"bash","state":{"status":"completed","input":{},"output":"out","time":{"compacted":123}}}"#,
            r#"{"type":"tool","state":{"status":"completed","input":null,"output":"o","time":{"compacted":null}}}"#,
            r#"{"type":"tool","state":{"status":"error","error":"boom session-doctor compact"}}"#,
            r#"{"type":"tool","state":{"status":"odd","output":{"a":1},"error":"e","attachments":[]}}"#,
            r#"{"type":"tool","state":[1,2]}"#,
            r#"{"type":"tool"}"#,
            r#"{"type":"compaction","auto":true,"overflow":false,"tail_start_id":"msg_x"}"#,
            r#"{"type":"weird","synthetic":true,"extra":{"deep":[1,{"x":null}]}}"#,
        ] {
            assert!(part_agrees(text), "the typed reader should read {text}");
        }
    }

    /// What the typed reader cannot decide alone goes to the tree reader:
    /// a repeated key (the tree keeps the last), attachments, a lone
    /// surrogate, a number out of range or nesting past the tree's limit in
    /// a field it skips, a missing type, anything but an object.
    #[test]
    fn the_typed_part_reader_leaves_what_it_cannot_decide_to_the_tree() {
        let deep = format!(
            r#"{{"type":"text","x":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for text in [
            r#"{"type":"text","text":"a","text":"bb"}"#,
            r#"{"type":"tool","state":{"status":"completed","output":"a","attachments":[{"url":"data:image/png;base64,AAAA","filename":"x.png"}]}}"#,
            r#"{"type":"text","text":"a","meta":"\ud800"}"#,
            r#"{"type":"text","text":"a","n":1e400}"#,
            deep.as_str(),
            r#"{"text":"a"}"#,
            r#"["type","text"]"#,
            r#" {"type":"text"}"#,
        ] {
            assert!(!part_agrees(text), "the tree reader should decide {text}");
        }
    }

    /// Message infos: opencode's own shapes, counts as the tree reads them
    /// (negative, fractional, huge or not numbers), `tokens` of other
    /// types, the model at the top or nested, summaries of both types.
    #[test]
    fn the_typed_message_reader_gives_what_the_tree_gives() {
        for text in [
            r#"{"role":"user","time":{"created":1790000000000},"agent":"build","model":{"providerID":"stub","modelID":"stub-small"},"summary":{"diffs":[]}}"#,
            r#"{"parentID":"msg_0c45","role":"assistant","mode":"build","path":{"cwd":"/p"},"cost":0.001624,"tokens":{"total":1583,"input":1542,"output":41,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"stub-small","providerID":"stub","time":{"created":1790000000821,"completed":1790000003102},"finish":"tool-calls"}"#,
            r#"{"role":"assistant","time":{"created":5},"tokens":{"input":-5,"output":2.7,"reasoning":"x","cache":{"read":1e3,"write":18446744073709551615},"total":-1}}"#,
            r#"{"role":"assistant","time":{"created":5},"tokens":"lots","summary":true,"error":null}"#,
            r#"{"role":"assistant","time":{"created":5},"tokens":null,"providerID":"p","model":{"providerID":"q","modelID":"m"}}"#,
            r#"{"role":"odd\u0021","time":{"created":5,"completed":1.5},"parentID":"msg_\"x\"","finish":"stop"}"#,
        ] {
            assert!(message_agrees(text), "the typed reader should read {text}");
        }
        // Without `time.created` the stored column decides.
        assert!(!message_agrees(r#"{"role":"user","time":{"created":1.5}}"#));
    }

    /// A stored error, a repeated key or a missing role go to the tree reader.
    #[test]
    fn the_typed_message_reader_leaves_what_it_cannot_decide_to_the_tree() {
        for text in [
            r#"{"role":"assistant","time":{"created":5},"error":{"name":"APIError","data":{"statusCode":413,"message":"too large"}}}"#,
            r#"{"role":"user","role":"assistant","time":{"created":5}}"#,
            r#"{"time":{"created":5}}"#,
            r#"{"role":"user","time":{"created":5},"x":"\uDBFF"}"#,
        ] {
            assert!(
                !message_agrees(text),
                "the tree reader should decide {text}"
            );
        }
    }

    /// Every message and part row of the fixtures' opencode and Kilo
    /// databases (and legacy files) reads the same both ways, and the typed
    /// reader reads nearly all of them (it is the fast path, not a detour).
    #[test]
    fn fixture_rows_read_the_same_both_ways() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        for (target, agrees) in [
            ("opencode_part", part_agrees as fn(&str) -> bool),
            ("opencode_message", message_agrees),
        ] {
            let rows = crate::fuzz::seeds(target, &fixtures);
            let texts: Vec<&str> = rows
                .iter()
                .filter_map(|r| std::str::from_utf8(r).ok())
                .collect();
            let read = texts.iter().filter(|t| agrees(t)).count();
            assert!(texts.len() >= 50, "{target}: {} rows", texts.len());
            println!("{target}: {read} of {} rows read typed", texts.len());
            assert!(
                read * 10 >= texts.len() * 9,
                "{target}: {read} of {} rows read typed",
                texts.len()
            );
        }
    }
}
