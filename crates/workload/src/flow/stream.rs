//! Steps that hold a connection open (docs/STREAMING.md): a WebSocket session (`ws`,
//! with its `actions`) or a server-sent event stream (`sse`). Each is checked here into
//! a [`Stream`]: its upgrade or stream request is an ordinary [`Target`] (the same
//! placeholder rules as a request step), and every action, and an event stream's
//! events, gets a target of its own after the flow's steps ([`StreamTarget`]), so
//! reports split them by name.

use std::path::Path;

use crate::check::Check;
use crate::step_fields::{ActionFields, StepFields};
use crate::target::{Header, Target};
use crate::template::Place;
use crate::{Origin, Schedule, Template};

use super::{Extraction, Flow, Source, parse_request};

/// What a step that holds a connection open does.
#[derive(Debug, Clone)]
pub enum Stream {
    /// A WebSocket session: the upgrade, then its actions in order.
    WebSocket(WebSocket),
    /// A `text/event-stream` answer read event by event.
    Events(EventStream),
}

/// A WebSocket session: its actions, and what goes on beside them.
#[derive(Debug, Clone)]
pub struct WebSocket {
    /// The actions, in order.
    pub actions: Vec<Action>,
    /// A ping is sent this often while connected (`None`: never).
    pub ping_ns: Option<u64>,
    /// The subprotocols asked for (the server must choose one); empty: none asked.
    pub subprotocols: Vec<String>,
    /// permessage-deflate is offered (used when the server agrees).
    pub deflate: bool,
    /// Where messages carry their send time, read back as one-way delays.
    pub send_time: Option<SendTime>,
    /// Each message that arrives answers the oldest one sent and not yet answered
    /// (`round_trip = "in order"`): the round trips are the entry's message latency.
    pub round_trip: bool,
}

/// Where a message carries the unix nanoseconds it was sent at (`send_time =
/// "json $.sent_ns"`): [`Flow::send_time_in`] reads it.
#[derive(Debug, Clone)]
pub struct SendTime {
    /// As written, for errors.
    pub text: String,
    source: Source,
}

/// The placeholder a `send` writes its message's send time with (unix ns).
pub const SEND_TIME_PLACEHOLDER: &str = "{{send_time_ns}}";

/// One action of a WebSocket session.
#[derive(Debug, Clone)]
pub struct Action {
    /// Its name within its step (`send 1`, or as given).
    pub name: String,
    /// What it does.
    pub kind: ActionKind,
    /// Variables taken from the message an `expect` matched.
    pub extractions: Vec<Extraction>,
    /// A `send` repeated: every this many nanoseconds, this many messages in all
    /// (`None`: one message).
    pub pace: Option<Pace>,
    /// Its target: an index into the attack's targets ([`Flow::stream_targets`]).
    pub target: usize,
}

/// A `send` repeated: at most `count` messages, each at its time from the action's
/// start, a pure function of its index (so a late message never moves the next ones).
#[derive(Debug, Clone, PartialEq)]
pub struct Pace {
    /// Messages in all, at most (a schedule may end first).
    pub count: u64,
    /// When each message is due.
    pub times: PaceTimes,
}

/// How a [`Pace`]'s messages are spaced.
#[derive(Debug, Clone, PartialEq)]
pub enum PaceTimes {
    /// `every`: this many nanoseconds apart, the first at once.
    Every(u64),
    /// `schedule`: messages per second over time, as a scenario's `schedule`.
    Schedule(Schedule),
}

impl Pace {
    /// When message `k` (0-based) is due, in nanoseconds from the action's start;
    /// `None` once `count` went out or the schedule ended.
    pub fn offset_ns(&self, k: u64) -> Option<u64> {
        if k >= self.count {
            return None;
        }
        match &self.times {
            PaceTimes::Every(every_ns) => Some(every_ns.saturating_mul(k)),
            PaceTimes::Schedule(schedule) => schedule.intended_ns(k),
        }
    }
}

/// What an action does.
#[derive(Debug, Clone)]
pub enum ActionKind {
    /// Sends a text message, rendered for the user like a request body; with a
    /// second template, the send time goes between the two (`{{send_time_ns}}`).
    Send(Template, Option<Template>),
    /// Waits for a message the check passes on (others are skipped), at most
    /// `within_ns` (`None`: the scenario's timeout).
    Expect {
        /// The check a message must pass.
        check: Check,
        /// How long to wait.
        within_ns: Option<u64>,
    },
    /// Keeps the connection open this long.
    HoldNs(u64),
    /// Closes the connection with this code.
    Close(u16),
}

/// When an event stream stops being read: after `max_events`, or `listen_ns`, at
/// least one of them given.
#[derive(Debug, Clone, Copy)]
pub struct EventStream {
    /// Events read before it stops.
    pub max_events: Option<u64>,
    /// How long it is read.
    pub listen_ns: Option<u64>,
    /// Times it reconnects (with `Last-Event-ID`) when the server ends it early.
    pub max_reconnects: u32,
    /// A `stream` step: any 2xx answer is read to its end (its events when it is
    /// `text/event-stream`, else its chunks), and its end is no error.
    pub whole_answer: bool,
    /// The target of each event's record (index into the attack's targets).
    pub event_target: usize,
}

/// A target past the flow's steps: a WebSocket action or an event stream's events.
#[derive(Debug, Clone)]
pub struct StreamTarget {
    /// The step it belongs to.
    pub step: usize,
    /// Its name in reports: the step's, then the action's (`chat send 1`).
    pub name: String,
    /// Its checks' names (an `expect`'s check, an event's checks).
    pub checks: Vec<String>,
}

/// A `send`'s pace from `every` and `count`, or `schedule` (and at most `count`).
fn pace(
    fields: &ActionFields,
    duration: impl Fn(&str, &str) -> Result<u64, String>,
) -> Result<Option<Pace>, String> {
    let times = match (&fields.send, fields.every.as_deref(), &fields.schedule) {
        (_, None, None) if fields.count.is_none() => return Ok(None),
        (None, ..) => return Err(": every, schedule and count go with send".to_owned()),
        (Some(_), Some(_), Some(_)) => return Err(": every or schedule, not both".to_owned()),
        (Some(_), None, None) => return Err(": count goes with every or schedule".to_owned()),
        (Some(_), Some(_), None) if fields.count.is_none() => {
            return Err(": every and count go together".to_owned());
        }
        (Some(_), Some(every), None) => match duration("every", every)? {
            0 => return Err(".every: must be above 0".to_owned()),
            every_ns => PaceTimes::Every(every_ns),
        },
        (Some(_), None, Some(text)) => {
            PaceTimes::Schedule(Schedule::parse(text).map_err(|e| format!(".schedule: {e}"))?)
        }
    };
    match fields.count {
        Some(0) => Err(".count: must be at least 1".to_owned()),
        count => Ok(Some(Pace {
            count: count.unwrap_or(u64::MAX),
            times,
        })),
    }
}

/// Close codes a client may send (RFC 6455 7.4.1 and the IANA registry; 1004-1006
/// and 1015 are never sent, 3000-4999 are the applications').
fn sendable_close(code: i64) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// The step's URL line and header lines as a `GET` request, the URL's scheme mapped
/// by `schemes` (`ws` -> `http`); errors name `field`.
fn stream_request(
    text: &str,
    field: &str,
    schemes: &[(&str, &str)],
    headers: &[Header],
    known: &[String],
    origin: &Origin,
) -> Result<Target, String> {
    let mut lines = text.trim_start().splitn(2, '\n');
    let url = lines.next().unwrap_or_default().trim();
    if url.is_empty() {
        return Err(format!("{field}: empty (want a URL, then header lines)"));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("{field}: {url:?}: want a URL"));
    };
    let Some((_, http)) = schemes.iter().find(|(from, _)| *from == scheme) else {
        let want: Vec<&str> = schemes.iter().map(|(from, _)| *from).collect();
        return Err(format!(
            "{field}: {url:?}: the scheme is {scheme:?}, want {}",
            want.join(" or ")
        ));
    };
    let request = format!("GET {http}://{rest}\n{}", lines.next().unwrap_or_default());
    parse_request(&request, None, headers, known, origin, &|_| Ok(Vec::new()))
        .map_err(|reason| reason.replacen("request:", &format!("{field}:"), 1))
}

impl Flow {
    /// The `ws`, `sse` or `stream` step `fields`: its request and stream.
    pub(super) fn stream_step(
        &mut self,
        fields: &StepFields,
        headers: &[Header],
        known: &[String],
        origin: &Origin,
        read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
    ) -> Result<(Target, Stream), String> {
        if fields.body.is_some() && fields.stream.is_none() {
            return Err("body: a ws or sse step sends no body (a stream step does)".to_owned());
        }
        if !fields.extract.is_empty() && fields.ws.is_some() {
            return Err("extract: a ws step extracts in its expect actions".to_owned());
        }
        match (
            fields.ws.as_deref(),
            fields.sse.as_deref(),
            fields.stream.as_deref(),
        ) {
            (Some(ws), None, None) => self.websocket(ws, fields, headers, known, origin),
            (None, Some(sse), None) => {
                let target = stream_request(
                    sse,
                    "sse",
                    &[("http", "http"), ("https", "https")],
                    headers,
                    known,
                    origin,
                )?;
                events(target, fields, false)
            }
            (None, None, Some(text)) => {
                let target = parse_request(
                    text,
                    fields.body.as_deref(),
                    headers,
                    known,
                    origin,
                    read_body,
                )
                .map_err(|reason| reason.replacen("request:", "stream:", 1))?;
                events(target, fields, true)
            }
            _ => Err("ws: a step has one of request, ws, sse and stream".to_owned()),
        }
    }

    fn websocket(
        &mut self,
        text: &str,
        fields: &StepFields,
        headers: &[Header],
        known: &[String],
        origin: &Origin,
    ) -> Result<(Target, Stream), String> {
        if !fields.checks.is_empty() {
            return Err("checks: a ws step checks its messages in expect actions".to_owned());
        }
        if fields.events.is_some() || fields.listen.is_some() || fields.reconnect.is_some() {
            return Err(
                "events, listen, reconnect: for sse steps; a ws step has actions".to_owned(),
            );
        }
        let ping_ns = fields
            .ping
            .as_deref()
            .map(|text| match units::parse_duration(text.trim()) {
                Ok(d) if !d.is_zero() => Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
                Ok(_) => Err("ping: must be above 0".to_owned()),
                Err(e) => Err(format!("ping: {e}")),
            })
            .transpose()?;
        let subprotocols = subprotocols(&fields.subprotocols)?;
        let send_time = fields
            .send_time
            .as_deref()
            .map(|text| match self.source(text) {
                Ok(source @ (Source::Json(_) | Source::Regex(_))) => Ok(SendTime {
                    text: text.trim().to_owned(),
                    source,
                }),
                Ok(_) => Err(format!(
                    "send_time: {text:?}: want json PATH or regex REGEX"
                )),
                Err(reason) => Err(format!("send_time: {reason}")),
            })
            .transpose()?;
        let round_trip = match fields.round_trip.as_deref().map(str::trim) {
            None => false,
            Some("in order") if send_time.is_some() => {
                return Err(
                    "round_trip, send_time: one or the other (both time what arrives)".to_owned(),
                );
            }
            Some("in order") => true,
            Some(other) => {
                return Err(format!(
                    "round_trip: {other:?}: want \"in order\" (each message that arrives \
                     answers the oldest one not yet answered, as an echo)"
                ));
            }
        };
        let deflate = match fields.compression.as_deref() {
            None => false,
            Some("deflate") => true,
            Some(other) => {
                return Err(format!(
                    "compression: {other:?} is not a WebSocket compression (deflate)"
                ));
            }
        };
        let mut target = stream_request(
            text,
            "ws",
            &[("ws", "http"), ("wss", "https")],
            headers,
            known,
            origin,
        )?;
        let asked = subprotocols.join(", ");
        let mut written = vec![
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"),
        ];
        if !subprotocols.is_empty() {
            written.push(("Sec-WebSocket-Protocol", asked.as_str()));
        }
        if deflate {
            written.push(("Sec-WebSocket-Extensions", "permessage-deflate"));
        } else if target
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("Sec-WebSocket-Extensions"))
        {
            return Err(
                "ws: Sec-WebSocket-Extensions: loadlab writes this header itself (compression = \"deflate\")"
                    .to_owned(),
            );
        }
        for (name, value) in written {
            if target
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case(name))
            {
                return Err(format!("ws: {name}: loadlab writes this header itself"));
            }
            target.headers.push(Header {
                name: name.to_owned(),
                value: value.to_owned(),
            });
        }
        let actions = fields
            .actions
            .iter()
            .enumerate()
            .map(|(index, action)| {
                self.action(index, action, known)
                    .map_err(|reason| format!("actions[{index}]{reason}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let session = WebSocket {
            actions,
            ping_ns,
            subprotocols,
            deflate,
            send_time,
            round_trip,
        };
        Ok((target, Stream::WebSocket(session)))
    }

    /// Action `index` as written; errors start with `.FIELD: ` or `: `.
    fn action(
        &mut self,
        index: usize,
        fields: &ActionFields,
        known: &[String],
    ) -> Result<Action, String> {
        let duration = |field: &str, text: &str| {
            units::parse_duration(text.trim())
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .map_err(|e| format!(".{field}: {e}"))
        };
        let given = [
            fields.send.is_some(),
            fields.expect.is_some(),
            fields.hold.is_some(),
            fields.close.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(": want exactly one of send, expect, hold, close".to_owned());
        }
        if fields.expect.is_none() && (fields.within.is_some() || !fields.extract.is_empty()) {
            return Err(": within and extract go with expect".to_owned());
        }
        let pace = pace(fields, duration)?;
        let (verb, kind) = if let Some(text) = &fields.send {
            let template = |text: &str| {
                Template::parse_with(text, Some(known))
                    .map(|t| t.placed(Place::Body))
                    .map_err(|reason| format!(".send: {reason}"))
            };
            let (before, after) = match text.split_once(SEND_TIME_PLACEHOLDER) {
                Some((_, after)) if after.contains(SEND_TIME_PLACEHOLDER) => {
                    return Err(format!(".send: {SEND_TIME_PLACEHOLDER} at most once"));
                }
                Some((before, after)) => (template(before)?, Some(template(after)?)),
                None => (template(text)?, None),
            };
            ("send", ActionKind::Send(before, after))
        } else if let Some(expect) = &fields.expect {
            let check = Check::parse(expect, fields.name.as_deref())
                .map_err(|reason| format!(".expect: {reason}"))?;
            if check.event.is_some() {
                return Err(".expect: a WebSocket message has no event type".to_owned());
            }
            let within_ns = fields
                .within
                .as_deref()
                .map(|text| duration("within", text))
                .transpose()?;
            ("expect", ActionKind::Expect { check, within_ns })
        } else if let Some(hold) = &fields.hold {
            ("hold", ActionKind::HoldNs(duration("hold", hold)?))
        } else {
            let code = fields.close.unwrap_or(1000);
            if !sendable_close(code) {
                return Err(format!(
                    ".close: {code} is not a code a client may send (1000 to 1003, 1007 to 1014, 3000 to 4999)"
                ));
            }
            ("close", ActionKind::Close(code as u16))
        };
        let name = match fields.name.as_deref().map(str::trim) {
            Some("") => return Err(".name: an action's name cannot be empty".to_owned()),
            Some(name) if name.contains(": ") => {
                return Err(format!(".name: {name:?} cannot hold \": \""));
            }
            Some(name) => name.to_owned(),
            None => format!("{verb} {}", index + 1),
        };
        let extractions = self
            .extractions(&fields.extract)
            .map_err(|reason| format!(".{reason}"))?;
        Ok(Action {
            name,
            kind,
            extractions,
            pace,
            target: 0,
        })
    }

    /// Numbers the targets of every stream step's actions and events, after the
    /// steps' own (called once the steps are compiled).
    pub(super) fn number_stream_targets(&mut self) {
        let mut next = self.steps.len();
        let mut targets = Vec::new();
        for (index, step) in self.steps.iter_mut().enumerate() {
            let checks = step.checks.iter().map(|c| c.name.clone()).collect();
            match &mut step.stream {
                Some(Stream::WebSocket(session)) => {
                    for action in &mut session.actions {
                        action.target = next;
                        next += 1;
                        let checks = match &action.kind {
                            ActionKind::Expect { check, .. } => vec![check.name.clone()],
                            _ => Vec::new(),
                        };
                        targets.push(StreamTarget {
                            step: index,
                            name: format!("{} {}", step.name, action.name),
                            checks,
                        });
                    }
                }
                Some(Stream::Events(events)) => {
                    events.event_target = next;
                    next += 1;
                    let what = if events.whole_answer {
                        "body"
                    } else {
                        "events"
                    };
                    targets.push(StreamTarget {
                        step: index,
                        name: format!("{} {what}", step.name),
                        checks,
                    });
                }
                None => {}
            }
        }
        self.stream_targets = targets;
    }

    /// The unix-nanosecond send time `message` carries where `send_time` says:
    /// `None` when it has none there, `Err` with what is there when that is not a
    /// whole number.
    pub fn send_time_in(
        &self,
        send_time: &SendTime,
        message: &[u8],
    ) -> Option<Result<u64, String>> {
        let found = match &send_time.source {
            Source::Json(path) => path.find(message, &mut |_| 0)?,
            Source::Regex(index) => {
                let captures = self.regexes[*index].captures(message)?;
                captures.get(1).or_else(|| captures.get(0))?.as_bytes()
            }
            Source::Header(_) | Source::Cookie(_) => return None,
        };
        // A JSON string holding the digits is read as the number.
        let digits = found
            .strip_prefix(b"\"")
            .and_then(|f| f.strip_suffix(b"\""))
            .unwrap_or(found);
        let number = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok());
        Some(number.ok_or_else(|| {
            let shown = String::from_utf8_lossy(&found[..found.len().min(40)]).into_owned();
            format!(
                "send_time {:?}: {shown:?} is not unix nanoseconds",
                send_time.text
            )
        }))
    }

    /// The variables a stream step's messages read, as bits.
    pub(super) fn stream_needs(stream: &Stream) -> u64 {
        let Stream::WebSocket(session) = stream else {
            return 0;
        };
        session
            .actions
            .iter()
            .filter_map(|a| match &a.kind {
                ActionKind::Send(before, after) => Some(std::iter::once(before).chain(after)),
                _ => None,
            })
            .flatten()
            .flat_map(Template::variables)
            .fold(0, |bits, v| bits | (1 << v))
    }
}

/// The subprotocols as asked: tokens (RFC 6455 4.1, RFC 7230 3.2.6), each once.
fn subprotocols(asked: &[String]) -> Result<Vec<String>, String> {
    let token = |name: &str| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    for (index, name) in asked.iter().enumerate() {
        if !token(name) {
            return Err(format!(
                "subprotocols[{index}]: {name:?} is not a token (letters, digits, !#$%&'*+-.^_`|~)"
            ));
        }
        if asked[..index].contains(name) {
            return Err(format!("subprotocols[{index}]: {name:?} is asked twice"));
        }
    }
    Ok(asked.to_vec())
}

/// An `sse` step (`whole_answer` false) or a `stream` step's reading of `target`'s
/// answer.
fn events(
    mut target: Target,
    fields: &StepFields,
    whole_answer: bool,
) -> Result<(Target, Stream), String> {
    if !fields.actions.is_empty() {
        let step = if whole_answer { "a stream" } else { "an sse" };
        return Err(format!(
            "actions: for ws steps; {step} step reads its answer"
        ));
    }
    if fields.ping.is_some()
        || !fields.subprotocols.is_empty()
        || fields.compression.is_some()
        || fields.send_time.is_some()
        || fields.round_trip.is_some()
    {
        return Err(
            "ping, subprotocols, compression, send_time, round_trip: for ws steps".to_owned(),
        );
    }
    if whole_answer && fields.reconnect.is_some() {
        return Err(
            "reconnect: for sse steps (a stream step's request is not sent again)".to_owned(),
        );
    }
    if !whole_answer
        && !target
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("accept"))
    {
        target.headers.push(Header {
            name: "Accept".to_owned(),
            value: "text/event-stream".to_owned(),
        });
    }
    let listen_ns = fields
        .listen
        .as_deref()
        .map(|text| {
            units::parse_duration(text.trim())
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .map_err(|e| format!("listen: {e}"))
        })
        .transpose()?;
    if fields.events == Some(0) {
        return Err("events: must be at least 1".to_owned());
    }
    if !whole_answer && fields.events.is_none() && listen_ns.is_none() {
        return Err("sse: give events = N or listen = DURATION (when to stop reading)".to_owned());
    }
    Ok((
        target,
        Stream::Events(EventStream {
            max_events: fields.events,
            listen_ns,
            max_reconnects: fields.reconnect.unwrap_or(0),
            whole_answer,
            event_target: 0,
        }),
    ))
}
