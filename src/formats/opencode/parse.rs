//! Reading opencode's stored JSON into the model: a message info
//! ([`parse_message`]), a part ([`parse_part`]), and a session's messages
//! and parts put together ([`assemble`]). Shared by the SQLite and the
//! legacy JSON store. Shapes: docs/formats/opencode-kilo.md sections 4 to 9.

use super::view::visible_view;
use super::PARENT_FIELD;
use crate::measure::{has_compact_marker, parse_data_url};
use crate::model::*;
use serde_json::Value;

use crate::measure::char_count as chars;

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for k in path {
        match cur.get(k) {
            Some(x) => cur = x,
            None => return 0,
        }
    }
    cur.as_u64()
        .or_else(|| cur.as_f64().map(|f| f.max(0.0) as u64))
        .unwrap_or(0)
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

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
    let role = match str_at(&raw, "role") {
        Some(r) => Role::named(r),
        None => return Err("missing string field `role`".into()),
    };
    let time_created =
        match time_created.or_else(|| raw.pointer("/time/created").and_then(Value::as_i64)) {
            Some(t) => t,
            None => return Err("missing number field `time.created`".into()),
        };
    let tokens = raw.get("tokens");
    let usage = match tokens {
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
    let model = match (str_at(&raw, "providerID"), str_at(&raw, "modelID")) {
        (Some(p), Some(m)) => Some(format!("{p}/{m}")),
        _ => match (
            raw.pointer("/model/providerID").and_then(Value::as_str),
            raw.pointer("/model/modelID").and_then(Value::as_str),
        ) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            _ => None,
        },
    }
    .map(|m| sym(&m));
    Ok(Message {
        id: id.into(),
        role,
        parent_id: str_at(&raw, PARENT_FIELD).map(Into::into),
        line: None,
        sidechain: false,
        parent_optional: false,
        response_id: None,
        time_created,
        time_completed: raw.pointer("/time/completed").and_then(Value::as_i64),
        summary: raw.get("summary").and_then(Value::as_bool).unwrap_or(false),
        finish: str_at(&raw, "finish").map(sym),
        rare: Rare {
            error,
            ..Default::default()
        }
        .boxed(),
        usage: usage.boxed(),
        model,
        info_bytes,
        parts: thin_vec::ThinVec::new(),
    })
}

/// Placeholder opencode sends instead of a tool output marked compacted
/// (`toModelMessages`, docs/formats/opencode-kilo.md section 10).
const CLEARED_TOOL_OUTPUT: &str = "[Old tool result content cleared]";

/// Builds a [`Part`] from an opencode part (`raw`, as stored).
pub(crate) fn parse_part(
    id: &str,
    raw: Value,
    payload_bytes: u64,
) -> std::result::Result<Part, String> {
    let kind_name = match str_at(&raw, "type") {
        Some(t) => sym(t),
        None => return Err("missing string field `type` in the part".into()),
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
        PartKind::Text if !raw.get("ignored").and_then(Value::as_bool).unwrap_or(false) => {
            let t = str_at(&raw, "text").unwrap_or("");
            model_chars = chars(t);
            wire_bytes = t.len() as u64;
            rewritten = has_compact_marker(t);
        }
        PartKind::Reasoning => {
            let t = str_at(&raw, "text").unwrap_or("");
            model_chars = chars(t);
            wire_bytes = t.len() as u64;
        }
        PartKind::File => {
            let url = str_at(&raw, "url").unwrap_or("");
            wire_bytes = url.len() as u64;
            if let Some(m) = parse_data_url(url, str_at(&raw, "filename")) {
                media.push(m);
            }
        }
        PartKind::Tool => {
            let state = raw.get("state").cloned().unwrap_or(Value::Null);
            let status = match str_at(&state, "status") {
                Some("pending") => ToolStatus::Pending,
                Some("running") => ToolStatus::Running,
                Some("completed") => ToolStatus::Completed,
                Some("error") => ToolStatus::Error,
                Some(o) => ToolStatus::Other(o.to_string()),
                None => ToolStatus::Other(String::new()),
            };
            let output = str_at(&state, "output")
                .or_else(|| str_at(&state, "error"))
                .unwrap_or("");
            let cleared = state
                .pointer("/time/compacted")
                .is_some_and(|v| !v.is_null());
            let input = state
                .get("input")
                .map(|i| i.to_string())
                .unwrap_or_default();
            let sent_output = if cleared { CLEARED_TOOL_OUTPUT } else { output };
            rewritten = has_compact_marker(output) || has_compact_marker(&input);
            model_chars = chars(&input) + chars(sent_output);
            wire_bytes = (input.len() + sent_output.len()) as u64;
            // opencode drops the attachments of a tool output marked compacted.
            if let Some(atts) = state.get("attachments").and_then(Value::as_array) {
                for a in atts {
                    if let Some(m) =
                        str_at(a, "url").and_then(|u| parse_data_url(u, str_at(a, "filename")))
                    {
                        if !cleared {
                            wire_bytes += m.encoded_bytes;
                        }
                        media.push(m);
                    }
                }
            }
            tool = Some(Box::new(ToolCall {
                name: str_at(&raw, "tool").unwrap_or("").to_string(),
                call_id: str_at(&raw, "callID").unwrap_or("").to_string(),
                status,
                output_chars: chars(output),
                output_cleared: cleared,
            }));
        }
        PartKind::Compaction => {
            compaction = Some(Box::new(CompactionMarker {
                auto: raw.get("auto").and_then(Value::as_bool).unwrap_or(false),
                overflow: raw
                    .get("overflow")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                tail_start_id: str_at(&raw, "tail_start_id").map(str::to_string),
                ..Default::default()
            }))
        }
        _ => {}
    }
    Ok(Part {
        id: id.into(),
        kind,
        kind_name,
        payload_bytes,
        model_chars,
        wire_bytes,
        synthetic: raw
            .get("synthetic")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        rewritten,
        media: media.into(),
        tool,
        compaction,
        raw: None,
    })
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
        .sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
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
            .map(|(id, role, t)| Message {
                time_created: *t,
                ..Message::new(*id, role.clone())
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
