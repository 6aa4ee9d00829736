//! What Claude Code 2.1.197 sends when it resumes a transcript, observed by
//! resuming real transcripts against the loopback stub and reading the
//! request (scripts/claude_resume_check.sh; docs/formats/claude-code.md section 8):
//!
//! 1. Lines go into a map by uuid: a re-used uuid keeps its first line's
//!    position and takes the last line's content.
//! 2. The latest `compact_boundary`'s preserved messages
//!    (`compactMetadata.preservedMessages.uuids`, else the walk from
//!    `preservedSegment.tailUuid` up `parentUuid` to `headUuid`) are relinked
//!    under its summary (the segment's `anchorUuid`, the `isCompactSummary`
//!    line) and every other entry positioned before the boundary is dropped.
//!    If a preserved uuid is missing or the walk breaks, or the boundary has
//!    no preserved metadata (versions before about 2.1.100), nothing is
//!    dropped.
//! 3. The history is the walk up `parentUuid` from the leaf
//!    (`last-prompt.leafUuid`, else the last message); `logicalParentUuid` is
//!    never followed. After pruning, a link to a dropped entry continues at
//!    the preserved tail (else the summary), and the summary's other children
//!    hang below the preserved tail: the request is `[summary, preserved...,
//!    what follows]`.
//!
//! Observed (scripts/claude_resume_check.sh and by hand; messages in the
//! first request, the new prompt included): `claude-code-gen/double_compact`
//! as stored, 12 (summary, preserved reply, the rest); with the preserved
//! metadata removed, 10 (no preserved reply; the summary merges into the next
//! user message); that file with a post-boundary line re-pointed to a
//! pre-boundary entry, 25 (the whole pre-compaction history, no summary), and
//! 12 when the metadata is kept (neutralised); `multi` 21 with the metadata
//! (summary + 8 preserved), 15 without; a 2.1.39 spotter session (no
//! metadata): the summary and what follows.

use crate::model::{Message, Role, Session};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde_json::Value;

/// uuid -> (first index, last index) of the main file's messages. Sized
/// for every message at once: growing it step by step holds the old table
/// beside the new one (at 453k messages, 25 MB at the last step instead of
/// 17 MB).
struct Entries<'a> {
    map: HashMap<&'a str, (usize, usize)>,
    /// No uuid of the main file repeats (one entry per main-file message).
    unique: bool,
}

fn entries(s: &Session) -> Entries<'_> {
    let mut map: HashMap<&str, (usize, usize)> =
        HashMap::with_capacity_and_hasher(s.messages.len(), Default::default());
    let mut main = 0;
    for (i, m) in s.messages.iter().enumerate() {
        if !in_main(m) {
            continue;
        }
        main += 1;
        map.entry(m.id.as_str())
            .and_modify(|e| e.1 = i)
            .or_insert((i, i));
    }
    let unique = map.len() == main;
    Entries { map, unique }
}

/// Whether message `m` is read from the session's main file.
fn in_main(m: &Message) -> bool {
    m.line().is_none_or(|l| l.file == 0)
}

impl<'a> Entries<'a> {
    fn get(&self, uuid: &str) -> Option<&(usize, usize)> {
        self.map.get(uuid)
    }

    fn contains_key(&self, uuid: &str) -> bool {
        self.map.contains_key(uuid)
    }

    /// [`Entries::get`], answered without a lookup when `uuid` is the id
    /// of message `near` of the main file and no uuid repeats (a walk up a
    /// chain: the parent is most often the previous line, and at 453k
    /// messages each lookup is a cache miss).
    fn get_near(&self, s: &Session, uuid: &str, near: Option<usize>) -> Option<(usize, usize)> {
        if let Some(k) = near.filter(|_| self.unique) {
            if s.messages
                .get(k)
                .is_some_and(|m| in_main(m) && m.id == uuid)
            {
                return Some((k, k));
            }
        }
        self.map.get(uuid).copied()
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What [`resolve`] finds, to be set on the session by [`View::apply`].
pub struct View {
    /// Each boundary's marker, in message order.
    markers: Vec<Marker>,
    /// The visible view ([`crate::model::Session::visible`]).
    visible: Vec<usize>,
}

/// A boundary's resolved [`crate::model::CompactionMarker::preserved`] and
/// `prunes`.
struct Marker {
    /// The boundary's message index.
    index: usize,
    preserved: Vec<String>,
    prunes: bool,
}

/// Resolves each boundary's preserved messages from its stored
/// `compactMetadata` and the lines present now, and the indexes of the
/// messages Claude Code sends on resume, in the order sent (module doc),
/// with one uuid map for both. For a re-used uuid, the index of its last
/// line (its content).
pub fn resolve(s: &Session) -> View {
    let map = entries(s);
    let markers = markers(s, &map);
    let visible = visible_view(s, &map, &markers);
    View { markers, visible }
}

impl View {
    /// Sets each boundary's `preserved` and `prunes`, marks the preserved
    /// messages' parents optional (Claude Code relinks them under the
    /// summary on resume: a copy that drops their stored parents is fine)
    /// and sets the visible view.
    pub fn apply(self, s: &mut Session) {
        let preserved: HashSet<&str> = self
            .markers
            .iter()
            .flat_map(|m| m.preserved.iter().map(String::as_str))
            .collect();
        for m in &mut s.messages {
            if preserved.contains(m.id.as_str()) {
                m.set_parent_optional(true);
            }
        }
        drop(preserved);
        for m in self.markers {
            for p in &mut s.messages[m.index].parts {
                if let Some(c) = p.compaction_mut() {
                    c.preserved = m.preserved.clone();
                    c.prunes = m.prunes;
                }
            }
        }
        s.visible = self.visible;
    }
}

/// The marker of each boundary, in message order.
fn markers(s: &Session, map: &Entries<'_>) -> Vec<Marker> {
    let mut resolved: Vec<Marker> = Vec::new();
    for (i, m) in s.messages.iter().enumerate() {
        if m.compaction().is_none() {
            continue;
        }
        let meta = m.raw().and_then(|r| r.get("compactMetadata"));
        let uuids = strings(meta.and_then(|x| x.pointer("/preservedMessages/uuids")));
        let seg = meta.and_then(|x| x.get("preservedSegment"));
        let (preserved, prunes) = if !uuids.is_empty() {
            let ok = uuids.iter().all(|u| map.contains_key(u.as_str()));
            (uuids, ok)
        } else if let Some(seg) = seg {
            let head = seg.get("headUuid").and_then(Value::as_str);
            let tail = seg.get("tailUuid").and_then(Value::as_str);
            let mut walk = Vec::new();
            let mut ok = false;
            let mut cur = tail;
            let mut seen = HashSet::default();
            while let Some(u) = cur {
                let Some(&(_, last)) = map.get(u) else { break };
                if !seen.insert(u) {
                    break;
                }
                walk.push(u.to_string());
                if Some(u) == head {
                    ok = true;
                    break;
                }
                cur = s.messages[last].parent_id();
            }
            walk.reverse();
            (walk, ok && head.is_some())
        } else {
            (Vec::new(), false)
        };
        resolved.push(Marker {
            index: i,
            preserved,
            prunes,
        });
    }
    resolved
}

/// Whether a message on the history walk is sent to the model: user and
/// assistant lines, attachments (sent as system reminders), and the boundary
/// itself (no content, kept so the view shows where history starts).
fn sent(m: &Message) -> bool {
    match &m.role() {
        Role::User | Role::Assistant => true,
        Role::Other(t) => &**t == "attachment" || m.compaction().is_some(),
    }
}

/// Indexes of the messages Claude Code sends on resume ([`resolve`]), the
/// boundaries' preserved messages taken from `markers`.
fn visible_view(s: &Session, map: &Entries<'_>, markers: &[Marker]) -> Vec<usize> {
    let boundary = s.messages.iter().enumerate().rfind(|(i, m)| {
        m.compaction().is_some() && map.get(m.id.as_str()).map(|e| e.0) == Some(*i)
    });
    let (bpos, bid) = match boundary {
        Some((i, m)) => (i, Some(m.id.as_str())),
        None => (0, None),
    };
    let marker = boundary.and_then(|_| markers.iter().find(|m| m.index == bpos));
    let prunes = marker.is_some_and(|m| m.prunes);
    let preserved: &[String] = marker.map_or(&[], |m| m.preserved.as_slice());
    let anchor = bid.and_then(|b| {
        s.messages[bpos..]
            .iter()
            .find(|m| m.summary() && m.parent_id() == Some(b))
            .map(|m| m.id.as_str())
    });
    let head = preserved.first().map(String::as_str);
    let tail = preserved.last().map(String::as_str);
    let leaf = s
        .leaf_id
        .as_deref()
        .filter(|l| map.contains_key(l))
        .or_else(|| {
            s.messages
                .iter()
                .enumerate()
                .rev()
                .find(|(i, m)| {
                    matches!(m.role(), Role::User | Role::Assistant)
                        && !m.sidechain()
                        && map.get(m.id.as_str()).map(|e| e.0) == Some(*i)
                })
                .map(|(_, m)| m.id.as_str())
        });
    let mut path: Vec<usize> = Vec::new();
    // Walked uuids, by the index of their last line (one uuid, one index):
    // a bit per message instead of a set of ids.
    let mut seen = vec![false; s.messages.len()];
    let mut cur = leaf;
    // Where `cur` most likely is: the line before the message that names
    // it as its parent.
    let mut near: Option<usize> = None;
    while let Some(u) = cur {
        let Some((_, last)) = map.get_near(s, u, near) else {
            break;
        };
        if std::mem::replace(&mut seen[last], true) {
            break;
        }
        path.push(last);
        near = last.checked_sub(1);
        let mut parent = s.messages[last].parent_id();
        if prunes {
            if Some(u) == head {
                parent = anchor;
                near = None;
            } else if let Some(p) = parent {
                let dropped = match map.get_near(s, p, near) {
                    None => true,
                    Some(e) => e.0 < bpos && !preserved.iter().any(|x| x == p),
                };
                let below_anchor = Some(p) == anchor && tail.is_some();
                if dropped || below_anchor {
                    parent = tail.or(anchor);
                }
            }
        }
        cur = parent;
    }
    path.reverse();
    path.into_iter().filter(|&i| sent(&s.messages[i])).collect()
}
