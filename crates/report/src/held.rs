//! Held steps judged apart (issue 39). A flow step that holds its connection open
//! writes records whose time is the session's by design: a `ws` step's upgrade and
//! actions (a paced send lasts its sends, a `hold` its time), an `sse` step's stream and
//! events, a `stream` step's body (the first chunk to the end), a gRPC call that
//! streams (its trailers ending the stream). Read as requests, a 2 s
//! session is a slow answer and events arriving after their stream began are a
//! throughput that fell behind, so a healthy run reads as saturated.
//!
//! [`HeldSteps`] says, once per target, whose records those are (the one rule, read
//! from the record file's targets, [`holds`], and for gRPC calls from their
//! `grpc_call` connection entries); the diagnosis's evidence keeps them out of the
//! request signals. [`Refusals`] is what their own records say instead: the
//! upgrades (streams) a server refused with a status and the held connections it cut,
//! per target, which [`Refusals::limits`] lines up with the connections held at once
//! into the typed connection limit ([`Resource::Connections`]).

use analysis::diagnosis::{Crossing, Note, Resource, Watched};
use record::{Connection, EntryKind, ErrorKind, Record, RunTables, TargetInfo};

use crate::connections::Connections;

/// The `method` the engine gives a `ws` step's targets, and an `sse` step's.
const HELD_METHODS: [&str; 2] = ["WS", "SSE"];
/// The `method` of a gRPC call's target.
const GRPC_METHOD: &str = "GRPC";
/// The suffix of a `stream` step's body target's step name (`llm body` beside `llm`).
const BODY_SUFFIX: &str = " body";

/// How a target's records are judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Judged {
    /// A request's answer: the request signals read it.
    #[default]
    Request,
    /// A held session's, by design: kept out of them.
    Held,
    /// A gRPC call's, not known yet to stream: a call that streams either way writes a
    /// `grpc_call` connection entry, read beside the records in no fixed order, so
    /// its records wait apart until the entries say ([`HeldSteps::learn_calls`]).
    Call,
}

/// Per target id, how its records are judged; see the module documentation. Grows
/// with the run's targets; judging a record is an index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldSteps {
    targets: Vec<Judged>,
    /// Per target id, its step's own target (the upgrade's, the stream request's):
    /// where an action's or the events' record counts its cut.
    heads: Vec<u32>,
    /// gRPC targets whose calls stream (few: one per streaming method called).
    streamed: Vec<u32>,
}

impl HeldSteps {
    /// Judges the targets `tables` added since the last call.
    pub fn learn(&mut self, tables: &RunTables) {
        for id in self.targets.len()..tables.targets.len() {
            let target = &tables.targets[id];
            let judged = if holds(target, &tables.targets[..id]) {
                Judged::Held
            } else if target.method == GRPC_METHOD {
                Judged::Call
            } else {
                Judged::Request
            };
            self.targets.push(judged);
            let head = (judged == Judged::Held)
                .then(|| tables.targets[..id].iter().position(|h| is_head(h, target)))
                .flatten();
            self.heads.push(head.map_or(id as u32, |h| h as u32));
        }
    }

    /// `target`'s step's own target (itself for a step's own, or a target not learnt).
    pub fn head(&self, target: u32) -> u32 {
        self.heads.get(target as usize).copied().unwrap_or(target)
    }

    /// Learns from connection entries which gRPC targets' calls stream.
    pub fn learn_calls(&mut self, entries: &[Connection]) {
        for entry in entries.iter().filter(|e| e.kind == EntryKind::GrpcCall) {
            if !self.streamed.contains(&entry.target) {
                self.streamed.push(entry.target);
            }
        }
    }

    /// How `target`'s records are judged (a target not learnt yet: a request's).
    #[inline]
    pub fn judge(&self, target: u32) -> Judged {
        match self.targets.get(target as usize) {
            Some(Judged::Call) if self.streams(target) => Judged::Held,
            Some(&judged) => judged,
            None => Judged::Request,
        }
    }

    /// Whether `target`'s gRPC calls stream, as their entries said so far.
    pub fn streams(&self, target: u32) -> bool {
        self.streamed.contains(&target)
    }
}

/// The rule: a `ws` or `sse` step's target (its method says so), or a `stream` step's
/// body: step `S body` beside an `earlier` target of step `S` with the same method
/// and URL (the engine numbers a flow's stream targets after its steps). A `stream`
/// step's own record, the time to its first chunk, is a request's answer time.
pub fn holds(target: &TargetInfo, earlier: &[TargetInfo]) -> bool {
    if HELD_METHODS.contains(&target.method.as_str()) {
        return true;
    }
    let Some(step) = target
        .step
        .as_deref()
        .and_then(|s| s.strip_suffix(BODY_SUFFIX))
    else {
        return false;
    };
    earlier.iter().any(|head| {
        head.step.as_deref() == Some(step) && head.method == target.method && head.url == target.url
    })
}

/// Whether `head` is the own target of `target`'s step: the same method and URL, and
/// `target`'s step is `head`'s (`chat`) or one of its actions or events (`chat send 1`,
/// `ticks events`).
fn is_head(head: &TargetInfo, target: &TargetInfo) -> bool {
    let (Some(step), Some(of)) = (head.step.as_deref(), target.step.as_deref()) else {
        return false;
    };
    let of_step = of == step
        || of
            .strip_prefix(step)
            .is_some_and(|rest| rest.starts_with(' '));
    of_step && head.method == target.method && head.url == target.url
}

/// One held step's refusals and cuts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Refused {
    refused: u64,
    cut: u64,
    /// The first refusal's intended time, unix ns, its status and its error id.
    first_unix_ns: u64,
    status: u16,
    error: u32,
}

/// What the held steps' records say of a connection limit; see the module
/// documentation. Adding a record allocates only for a target not seen refusing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusals {
    /// By target id, in the order first seen (few: one per held step).
    by_target: Vec<(u32, Refused)>,
}

impl Refusals {
    /// Adds one held step's record, counted for `head`, its step's own target: a
    /// status outside 200..400 is a refusal (the upgrade's, or the stream's, answer: a
    /// session that went on records 200), a reset or a close mid-session a cut.
    pub fn add(&mut self, record: &Record, head: u32, tables: &RunTables) {
        if record.is_success() {
            return;
        }
        let refused = record.status != 0 && !(200..400).contains(&record.status);
        let kind = tables.error(record.error).map(|e| e.kind);
        let cut = matches!(kind, Some(ErrorKind::Reset | ErrorKind::Closed));
        if !refused && !cut {
            return;
        }
        let at = match self.by_target.iter().position(|(t, _)| *t == head) {
            Some(at) => at,
            None => {
                self.by_target.push((head, Refused::default()));
                self.by_target.len() - 1
            }
        };
        let tally = &mut self.by_target[at].1;
        if !refused {
            tally.cut += 1;
            return;
        }
        if tally.refused == 0 || record.intended_unix_ns < tally.first_unix_ns {
            tally.first_unix_ns = record.intended_unix_ns;
            tally.status = record.status;
            tally.error = record.error;
        } else if record.status == tally.status && says_more(record.error, tally.error, tables) {
            // The same refusal with its body read (the head alone came first, at times):
            // the body says why ("connection limit reached (30 open)").
            tally.error = record.error;
        }
        tally.refused += 1;
    }

    /// Each held target that refused connections, as a connection limit: the most of
    /// its `connections` open at once, and when the refusals began, from
    /// `start_unix_ns` (the run's first intended send); `tables` names the target and
    /// quotes the first refusal.
    pub fn limits(
        &self,
        connections: &Connections,
        tables: &RunTables,
        start_unix_ns: u64,
    ) -> Vec<Watched> {
        let mut limits: Vec<Watched> = (self.by_target.iter())
            .filter(|(_, tally)| tally.refused > 0)
            .map(|&(target, tally)| limit(target, tally, connections, tables, start_unix_ns))
            .collect();
        limits.sort_by_key(|w| w.crossed.map(|c| c.at_ns));
        limits
    }
}

/// Whether error `error`'s text holds error `than`'s and more.
fn says_more(error: u32, than: u32, tables: &RunTables) -> bool {
    let text = |id| tables.error(id).map_or("", |e| e.text.as_str());
    error != than && text(error).len() > text(than).len() && text(error).starts_with(text(than))
}

/// One target's connection limit; see [`Refusals::limits`].
fn limit(
    target: u32,
    tally: Refused,
    connections: &Connections,
    tables: &RunTables,
    start_unix_ns: u64,
) -> Watched {
    let info = tables.targets.get(target as usize);
    let held = connections.merged(|_, t| t == target);
    // Without entries (none opened, or a file cut before they were written) the most
    // held is not known: the refusals are said alone.
    let peak = held.map(|held| {
        let at_ns = held.peak_held_at_unix_ns.saturating_sub(start_unix_ns);
        (held.peak_held as f64, at_ns)
    });
    let step = info.and_then(|i| i.step.as_deref()).unwrap_or_default();
    Watched {
        name: info.map_or_else(String::new, |i| i.url.clone()),
        resource: Resource::Connections,
        series: format!("connections of step {step:?}"),
        limit: peak.map(|(most, _)| most),
        unit: "connections",
        peak: peak.map_or(0.0, |(most, _)| most),
        peak_at_ns: peak.map_or(0, |(_, at_ns)| at_ns),
        crossed: Some(Crossing {
            at_ns: tally.first_unix_ns.saturating_sub(start_unix_ns),
            value: peak.map_or(0.0, |(most, _)| most),
        }),
        brief: None,
        example: tables.error(tally.error).map(|e| e.text.clone()),
        note: Some(Note::Refused {
            refused: tally.refused,
            status: tally.status,
            cut: tally.cut,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::ErrorEntry;

    const S: u64 = 1_000_000_000;

    fn target(method: &str, url: &str, step: Option<&str>) -> TargetInfo {
        TargetInfo {
            method: method.to_owned(),
            url: url.to_owned(),
            step: step.map(str::to_owned),
            checks: Vec::new(),
        }
    }

    #[test]
    fn held_steps_are_told_by_their_method_or_as_a_streams_body() {
        let llm = "http://127.0.0.1:8080/v1/chat";
        let tables = RunTables {
            targets: vec![
                target("POST", "http://127.0.0.1:8080/login", Some("login")),
                target("WS", "ws://127.0.0.1:8080/chat", Some("chat")),
                target("SSE", "http://127.0.0.1:8080/ticks", Some("ticks")),
                target("POST", llm, Some("llm")),
                target("WS", "ws://127.0.0.1:8080/chat", Some("chat send 1")),
                target("SSE", "http://127.0.0.1:8080/ticks", Some("ticks events")),
                target("POST", llm, Some("llm body")),
                // A plain step named like a body, beside no step of its own name.
                target("GET", "http://127.0.0.1:8080/a", Some("page body")),
                // Beside a step of that name, but another URL: a plain step.
                target("GET", "http://127.0.0.1:8080/other", Some("login body")),
                // Beside it with another method: a plain step.
                target("GET", llm, Some("llm body")),
                target("GET", "http://127.0.0.1:8080/", None),
            ],
            ..RunTables::default()
        };
        let mut held = HeldSteps::default();
        held.learn(&tables);
        // (target, held?)
        let rows = [
            (0, false),
            (1, true),
            (2, true),
            (3, false),
            (4, true),
            (5, true),
            (6, true),
            (7, false),
            (8, false),
            (9, false),
            (10, false),
            (11, false),
        ];
        for (id, want) in rows {
            assert_eq!(held.judge(id) == Judged::Held, want, "target {id}");
        }
        // An action's, the events' and a body's records count for their step's own.
        let heads: Vec<u32> = (0..11).map(|id| held.head(id)).collect();
        assert_eq!(heads, [0, 1, 2, 3, 1, 2, 3, 7, 8, 9, 10]);
        // Targets learnt later (a dictionary block) are judged as they come.
        let mut more = tables.clone();
        more.targets
            .push(target("WS", "ws://127.0.0.1:8080/late", Some("late")));
        held.learn(&more);
        assert_eq!(held.judge(11), Judged::Held);
        // A gRPC call waits for its entries: a `grpc_call` one makes its target's
        // calls held; a `ws` connection's entry says nothing of a call.
        more.targets
            .push(target("GRPC", "127.0.0.1:50051 a.B/List", None));
        more.targets
            .push(target("GRPC", "127.0.0.1:50051 a.B/Get", None));
        held.learn(&more);
        assert_eq!(
            (held.judge(12), held.judge(13)),
            (Judged::Call, Judged::Call)
        );
        let entry = |target, kind| Connection {
            target,
            kind,
            ..Connection::default()
        };
        held.learn_calls(&[
            entry(12, EntryKind::GrpcCall),
            entry(13, EntryKind::Connection),
        ]);
        assert_eq!(
            (held.judge(12), held.judge(13)),
            (Judged::Held, Judged::Call)
        );
    }

    fn record(target: u32, at_ms: u64, status: u16, error: u32) -> Record {
        Record {
            target,
            intended_unix_ns: 100 * S + at_ms * 1_000_000,
            latency_ns: 1_000_000,
            status,
            error,
            ..Record::default()
        }
    }

    fn connection(target: u32, opened_s: u64, closed_s: u64) -> Connection {
        Connection {
            target,
            opened_unix_ns: opened_s * S,
            closed_unix_ns: closed_s * S,
            ..Connection::default()
        }
    }

    #[test]
    fn refused_upgrades_past_the_most_held_are_a_connection_limit() {
        let refused = "websocket upgrade refused: 503 Service Unavailable";
        let tables = RunTables {
            targets: vec![
                target("WS", "ws://127.0.0.1:8080/chat", Some("chat")),
                target("SSE", "http://127.0.0.1:8080/ticks", Some("ticks")),
            ],
            errors: vec![
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: refused.to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Reset,
                    text: "read: connection reset by peer".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Timeout,
                    text: "no event within 5s (after 3 events)".to_owned(),
                },
                ErrorEntry {
                    kind: ErrorKind::Status,
                    text: format!("{refused}: \"connection limit reached (3 open)\""),
                },
            ],
            ..RunTables::default()
        };
        let mut refusals = Refusals::default();
        // (record, what it is)
        let rows = [
            (record(0, 0, 200, 0), "a session that went on"),
            (record(0, 3_000, 503, 1), "a refusal"),
            (record(0, 2_500, 503, 1), "an earlier refusal, read later"),
            (record(0, 3_500, 503, 4), "a later one, its body read"),
            (record(0, 4_000, 0, 2), "a cut"),
            (record(1, 5_000, 0, 3), "a timeout: neither"),
            (record(1, 5_000, 200, 0), "an event stream that went on"),
        ];
        for (record, _) in &rows {
            refusals.add(record, record.target, &tables);
        }
        let mut connections = Connections::default();
        // Three at once on the chat route from 102 s, two on the ticks route.
        connections.add(&[
            connection(0, 101, 103),
            connection(0, 102, 104),
            connection(0, 102, 105),
            connection(1, 101, 109),
            connection(1, 101, 109),
        ]);
        // Without the entries, the most held is not known.
        let unknown = refusals.limits(&Connections::default(), &tables, 100 * S);
        assert_eq!((unknown[0].limit, unknown[0].peak), (None, 0.0));
        let limits = refusals.limits(&connections, &tables, 100 * S);
        assert_eq!(limits.len(), 1, "{limits:?}");
        let chat = &limits[0];
        assert_eq!(chat.resource, Resource::Connections);
        assert_eq!(chat.name, "ws://127.0.0.1:8080/chat");
        assert_eq!((chat.limit, chat.peak), (Some(3.0), 3.0));
        assert_eq!(chat.peak_at_ns, 2 * S);
        assert_eq!(chat.crossed.map(|c| c.at_ns), Some(2_500_000_000));
        assert_eq!(
            chat.example.as_deref(),
            Some(
                "websocket upgrade refused: 503 Service Unavailable: \"connection limit \
                  reached (3 open)\""
            )
        );
        assert_eq!(
            chat.note,
            Some(Note::Refused {
                refused: 3,
                status: 503,
                cut: 1
            })
        );
        // Cuts alone, or no refusal at all: no limit to name.
        let mut cuts = Refusals::default();
        cuts.add(&record(0, 4_000, 0, 2), 0, &tables);
        assert!(cuts.limits(&connections, &tables, 100 * S).is_empty());
        assert!(
            Refusals::default()
                .limits(&connections, &tables, 0)
                .is_empty()
        );
    }
}
