//! A server-sent event stream: the request, an answer that must be `200` and
//! `text/event-stream`, then its events (RFC-less but WHATWG HTML §9.2: `data:` lines
//! joined, dispatched at a blank line), each judged by the step's checks. Records: the
//! step's own is the time to the first event; the events' (`STEP events`), one per
//! stream, spans the first event to the stream's end and carries every check that
//! failed on any of them. Each event's gap since the one before goes into the
//! connection's figures ([`Held`]), not a record of its own: a stream of millions of
//! events costs two records and one entry.

use std::io::Read;
use std::os::fd::BorrowedFd;

use record::{ClosedBy, ErrorKind};
use wire::ChunkedDecoder;
use workload::{Answer, EventStream};

use super::{
    Ask, Drive, Failure, Head, Held, Outcome, SessionJob, Wire, io_failure, refused, spelled,
    would_block,
};

/// Reads a stream's body, chunked or not, and cuts it into events (or, for a
/// `stream` step's answer that is not an event stream, into pieces as they came).
struct Events {
    chunked: Option<ChunkedDecoder>,
    /// The body bytes still to come, when its `Content-Length` said.
    remaining: Option<u64>,
    /// Each read's body bytes are one piece (a chunk), not cut into events.
    pieces: bool,
    /// Decoded bytes not yet cut into lines.
    pending: Vec<u8>,
    /// The event being read: its `data:` lines joined by `\n`, and its `event:`
    /// type (empty: `message`).
    data: Vec<u8>,
    event_type: Vec<u8>,
    has_data: bool,
    /// The last `id:` field read, and the last event id as of the last event
    /// dispatched (what a reconnect sends as `Last-Event-ID`).
    id_buffer: Vec<u8>,
    last_id: Vec<u8>,
    /// The reconnection delay a `retry:` field set, milliseconds.
    retry_ms: Option<u64>,
}

/// The wait before a reconnect when the server set none (`retry:`).
const DEFAULT_RETRY_MS: u64 = 1_000;

/// What a piece of the stream did.
#[derive(PartialEq)]
enum Fed {
    More,
    /// Enough events were read.
    Done,
    /// The server ended the stream (its chunked body ended).
    Ended,
}

impl Events {
    /// Takes `input` off the wire; each complete event's type and data go to
    /// `on_event` (a piece's type is empty). `Ok(true)` when the body ended.
    fn feed(
        &mut self,
        input: &[u8],
        on_event: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<bool, Failure> {
        let ended = match (&mut self.chunked, &mut self.remaining) {
            (Some(decoder), _) => {
                let pending = &mut self.pending;
                let progress = decoder
                    .feed(input, |data| pending.extend_from_slice(data))
                    .map_err(|e| (ErrorKind::Protocol, format!("chunked body: {e}")))?;
                matches!(progress, wire::Progress::Done { .. })
            }
            (None, Some(remaining)) => {
                let take = input
                    .len()
                    .min(usize::try_from(*remaining).unwrap_or(usize::MAX));
                self.pending.extend_from_slice(&input[..take]);
                *remaining -= take as u64;
                *remaining == 0
            }
            (None, None) => {
                self.pending.extend_from_slice(input);
                false
            }
        };
        if self.pieces {
            if !self.pending.is_empty() {
                on_event(b"", &self.pending);
                self.pending.clear();
            }
            return Ok(ended);
        }
        // Out of `self` while its lines are read, so each can update the rest.
        let mut pending = std::mem::take(&mut self.pending);
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|&b| b == b'\n') {
            let line = &pending[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                self.last_id.clone_from(&self.id_buffer);
                if self.has_data {
                    let event_type = match self.event_type.as_slice() {
                        b"" => b"message",
                        named => named,
                    };
                    on_event(event_type, &self.data);
                }
                self.data.clear();
                self.event_type.clear();
                self.has_data = false;
            } else {
                self.field(line);
            }
            start += end + 1;
        }
        pending.drain(..start);
        self.pending = pending;
        Ok(ended)
    }

    /// One `field: value` line (WHATWG HTML 9.2.6); `:` comments are not read.
    fn field(&mut self, line: &[u8]) {
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // An id holding NUL is ignored; the rest goes back verbatim in a header,
            // which a line (cut at CR and LF) cannot break.
            b"event" => value.clone_into(&mut self.event_type),
            b"id" if !value.contains(&0) => self.id_buffer = value.to_vec(),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    /// A new connection's reader: its own framing, this stream's ids and retry.
    fn new(chunked: bool, before: Option<Events>) -> Events {
        Events::framed(chunked, None, false, before)
    }

    /// [`Events::new`] of a body `remaining` bytes long (when not chunked), read as
    /// `pieces` or as events.
    fn framed(
        chunked: bool,
        remaining: Option<u64>,
        pieces: bool,
        before: Option<Events>,
    ) -> Events {
        let (id_buffer, last_id, retry_ms) = before.map_or((Vec::new(), Vec::new(), None), |b| {
            (b.id_buffer, b.last_id, b.retry_ms)
        });
        Events {
            chunked: chunked.then(ChunkedDecoder::new),
            remaining,
            pieces,
            pending: Vec::new(),
            data: Vec::new(),
            event_type: Vec::new(),
            has_data: false,
            id_buffer,
            last_id,
            retry_ms,
        }
    }
}

/// An event stream's events counted by type, interned once per type: the first
/// [`record::EVENT_TYPES`] types by name, each name's room made once at its full
/// bound, so a server naming a new type at every event costs comparisons, never an
/// allocation; the rest (and a type named `other`, or one over
/// [`record::EVENT_TYPE_BYTES`]) are counted as `other`.
#[derive(Debug, Default)]
struct EventTypes {
    /// In name order.
    named: Vec<(Vec<u8>, u64)>,
    other: u64,
}

impl EventTypes {
    fn count(&mut self, event_type: &[u8]) {
        if event_type.len() > record::EVENT_TYPE_BYTES
            || event_type == record::OTHER_EVENTS.as_bytes()
        {
            self.other += 1;
            return;
        }
        let at = match self
            .named
            .binary_search_by(|(name, _)| name.as_slice().cmp(event_type))
        {
            Ok(at) => return self.named[at].1 += 1,
            Err(at) => at,
        };
        if self.named.len() < record::EVENT_TYPES {
            if self.named.is_empty() {
                self.named.reserve_exact(record::EVENT_TYPES);
            }
            let mut name = Vec::with_capacity(record::EVENT_TYPE_BYTES);
            name.extend_from_slice(event_type);
            self.named.insert(at, (name, 1));
        } else if at == self.named.len() {
            self.other += 1;
        } else if let Some((mut name, count)) = self.named.pop() {
            // A type before the last by name: the last one's events become `other`,
            // its room this type's.
            self.other += count;
            name.clear();
            name.extend_from_slice(event_type);
            self.named.insert(at, (name, 1));
        }
    }

    /// The counts as an entry keeps them (names read as UTF-8, as the stream is).
    fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        let mut counts = std::collections::BTreeMap::new();
        for (name, count) in &self.named {
            *counts
                .entry(String::from_utf8_lossy(name).into_owned())
                .or_default() += count;
        }
        if self.other > 0 {
            counts.insert(record::OTHER_EVENTS.to_owned(), self.other);
        }
        counts
    }
}

/// An event stream in progress.
pub(super) struct Sse {
    state: State,
    tally: Tally,
    /// A reconnect made a socket the loop has not watched yet.
    pub(super) new_socket: bool,
}

enum State {
    Asking(Ask),
    /// The connect could not even start: said at the first drive.
    Refused(Failure),
    Reading(Wire, Events),
    /// The server ended the stream early: a reconnect starts at this time.
    Waiting(u64, Events),
    /// A reconnect's request, with `Last-Event-ID`.
    Reconnecting(Ask, Events),
    Ended,
}

/// The stream's records and counts so far.
struct Tally {
    stream: EventStream,
    /// The step's own record: the time to the first event.
    first: Outcome,
    /// The events' record, from the first event on.
    events: Outcome,
    listen_end_ns: u64,
    /// The connection's figures, from the answer's head on.
    held: Option<Held>,
    /// The server ended the stream (its chunked body's end, or the connection's).
    server_ended: bool,
    /// The run ended while the stream was open: its entry says so.
    cut: bool,
    /// The first check an event failed, when failed checks fail requests.
    check_failure: Option<Failure>,
    /// When the last event (or the request) came.
    last_ns: u64,
    /// The first event every check passed on, when the step extracts.
    matched: Option<Vec<u8>>,
    count: u64,
    reconnects: u32,
    types: EventTypes,
}

impl Sse {
    pub(super) fn start(job: &SessionJob, stream: EventStream) -> Sse {
        let started_ns = job.clock.now_ns();
        let first = Outcome {
            target_index: job.step as u32,
            intended_ns: job.intended_ns,
            started_ns,
            ..Outcome::default()
        };
        let listen_end_ns = stream
            .listen_ns
            .map_or(u64::MAX, |ns| started_ns.saturating_add(ns));
        Sse {
            state: Ask::start(job).map_or_else(State::Refused, State::Asking),
            tally: Tally {
                stream,
                first,
                events: Outcome {
                    target_index: stream.event_target as u32,
                    status: 200,
                    ..Outcome::default()
                },
                listen_end_ns,
                held: None,
                server_ended: false,
                cut: false,
                check_failure: None,
                last_ns: started_ns,
                matched: None,
                count: 0,
                reconnects: 0,
                types: EventTypes::default(),
            },
            new_socket: false,
        }
    }

    /// The connection's figures, once the stream is done, if its answer came.
    pub(super) fn take_held(&mut self) -> Option<Held> {
        let mut held = self.tally.held.take()?;
        held.figures.events = self.tally.types.counts();
        Some(held)
    }

    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.state {
            State::Asking(ask) | State::Reconnecting(ask, _) => ask.fd(),
            State::Reading(wire, _) => Some(wire.fd()),
            State::Refused(_) | State::Waiting(..) | State::Ended => None,
        }
    }

    pub(super) fn drive(&mut self, job: &SessionJob) -> Drive {
        let read = match std::mem::replace(&mut self.state, State::Ended) {
            State::Refused(failure) => Err(failure),
            State::Asking(mut ask) => match ask.poll(job, &mut self.tally.first) {
                Ok(None) => {
                    self.state = State::Asking(ask);
                    let deadline_ns = self.tally.first.started_ns.saturating_add(job.timeout_ns);
                    return Drive::Wait(deadline_ns);
                }
                Ok(Some((wire, head))) => self.answered(job, wire, &head),
                Err(failure) => Err(failure),
            },
            State::Reading(wire, events) => self.read(job, wire, events),
            State::Waiting(at_ns, events) => self.reconnect(job, at_ns, events),
            State::Reconnecting(ask, events) => self.reconnecting(job, ask, events),
            State::Ended => Ok(None),
        };
        match read {
            Ok(Some(deadline_ns)) => Drive::Wait(deadline_ns),
            Ok(None) => self.tally.finish(job, Ok(())),
            Err(failure) => self.tally.finish(job, Err(failure)),
        }
    }

    /// The answer's head came: a 2xx `text/event-stream`, or the stream's failure.
    fn answered(&mut self, job: &SessionJob, wire: Wire, head: &Head) -> Progress {
        self.tally.first.status = head.status;
        let pieces = if self.tally.stream.whole_answer {
            if !(200..300).contains(&head.status) {
                return Err(refused("stream", head));
            }
            !is_event_stream_type(head)
        } else {
            is_event_stream(head)?;
            false
        };
        self.tally.held = Some(Held::opened(head.arrived_ns, &job.tally));
        let remaining = (!head.chunked).then_some(head.content_length).flatten();
        let mut events = Events::framed(head.chunked, remaining, pieces, None);
        if remaining == Some(0) {
            return self.server_ended(job, events);
        }
        // The head's bytes (those past it too) are counted already.
        match self
            .tally
            .take(job, &mut events, &head.rest, head.arrived_ns)?
        {
            Fed::More => self.read(job, wire, events),
            Fed::Done => Ok(None),
            Fed::Ended => self.server_ended(job, events),
        }
    }

    /// The server ended the stream: a reconnect when one is left and it is still
    /// wanted, else the end (an error when more events were asked for).
    fn server_ended(&mut self, job: &SessionJob, events: Events) -> Progress {
        let tally = &mut self.tally;
        let now = job.clock.now_ns();
        if tally.reconnects < tally.stream.max_reconnects && now < tally.listen_end_ns {
            let delay_ns = events.retry_ms.unwrap_or(DEFAULT_RETRY_MS) * 1_000_000;
            let at_ns = now.saturating_add(delay_ns);
            self.state = State::Waiting(at_ns, events);
            return Ok(Some(at_ns));
        }
        tally.ended_early().map(|()| None)
    }

    /// Starts the reconnect when its time came: the request again, with the last
    /// event id.
    fn reconnect(&mut self, job: &SessionJob, at_ns: u64, events: Events) -> Progress {
        if job.stop.is_stopping() {
            return Ok(None);
        }
        if job.clock.now_ns() < at_ns {
            self.state = State::Waiting(at_ns, events);
            return Ok(Some(at_ns));
        }
        let mut request = job.request.clone();
        if !events.last_id.is_empty() {
            // Before the head's closing blank line: the request has no body.
            let at = request.len().saturating_sub(2);
            let header = [b"Last-Event-ID: ", events.last_id.as_slice(), b"\r\n"].concat();
            request.splice(at..at, header);
        }
        self.tally.reconnects += 1;
        if let Some(held) = &mut self.tally.held {
            held.figures.reconnects += 1;
        }
        let ask = Ask::start_with(job, request)?;
        self.new_socket = true;
        self.reconnecting(job, ask, events)
    }

    /// A reconnect's answer: read on as the stream, or its failure.
    fn reconnecting(&mut self, job: &SessionJob, mut ask: Ask, events: Events) -> Progress {
        let mut scratch = Outcome {
            started_ns: ask.started_ns,
            ..Outcome::default()
        };
        let polled = ask.poll(job, &mut scratch);
        self.tally.first.bytes_out += scratch.bytes_out;
        let Some((wire, head)) = polled? else {
            let deadline_ns = ask.started_ns.saturating_add(job.timeout_ns);
            self.state = State::Reconnecting(ask, events);
            return Ok(Some(deadline_ns));
        };
        self.tally.first.bytes_in += head.bytes;
        is_event_stream(&head)?;
        let mut events = Events::new(head.chunked, Some(events));
        match self
            .tally
            .take(job, &mut events, &head.rest, head.arrived_ns)?
        {
            Fed::More => self.read(job, wire, events),
            Fed::Done => Ok(None),
            Fed::Ended => self.server_ended(job, events),
        }
    }
}

/// Whether `head` is a 2xx `text/event-stream`, else the stream's failure.
fn is_event_stream(head: &Head) -> Result<(), Failure> {
    if !(200..300).contains(&head.status) {
        return Err(refused("event stream", head));
    }
    if !is_event_stream_type(head) {
        let content_type = head.content_type.clone().unwrap_or_default();
        return Err((
            ErrorKind::Protocol,
            format!(
                "event stream: the answer is Content-Type {content_type:?}, not text/event-stream"
            ),
        ));
    }
    Ok(())
}

/// Whether `head` says `Content-Type: text/event-stream`.
fn is_event_stream_type(head: &Head) -> bool {
    let content_type = head.content_type.as_deref().unwrap_or_default();
    content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
}

impl Sse {
    /// Reads what the socket has; `Ok(None)` when the stream is done.
    fn read(&mut self, job: &SessionJob, mut wire: Wire, mut events: Events) -> Progress {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if job.stop.is_stopping() {
                // The run ends: the stream is still open.
                self.tally.cut = true;
                return Ok(None);
            }
            match wire.read(&mut chunk) {
                Ok(0) => return self.server_ended(job, events),
                Ok(read) => {
                    self.tally.first.bytes_in += read as u64;
                    let arrived_ns = wire.arrived_ns(job.clock.now_ns(), self.tally.last_ns);
                    match self
                        .tally
                        .take(job, &mut events, &chunk[..read], arrived_ns)?
                    {
                        Fed::More => {}
                        Fed::Done => return Ok(None),
                        Fed::Ended => return self.server_ended(job, events),
                    }
                }
                Err(e) if would_block(&e) => {
                    let deadline_ns = self
                        .tally
                        .last_ns
                        .saturating_add(job.timeout_ns)
                        .min(self.tally.listen_end_ns);
                    if job.clock.now_ns() >= deadline_ns {
                        return self.tally.quiet(job).map(|()| None);
                    }
                    self.state = State::Reading(wire, events);
                    return Ok(Some(deadline_ns));
                }
                Err(e) => return Err(io_failure(&e)),
            }
        }
    }
}

/// A read's progress: `Ok(Some(t))` waits (for the socket, or until `t`), `Ok(None)`
/// is done.
type Progress = Result<Option<u64>, Failure>;

impl Tally {
    /// Cuts `input`, arrived at `arrived_ns`, into events: done when enough came,
    /// ended when its chunked body did.
    fn take(
        &mut self,
        job: &SessionJob,
        events: &mut Events,
        input: &[u8],
        arrived_ns: u64,
    ) -> Result<Fed, Failure> {
        let ended = events.feed(input, &mut |event_type, data| {
            self.event(job, arrived_ns, event_type, data);
        })?;
        Ok(if self.enough() {
            Fed::Done
        } else if ended {
            Fed::Ended
        } else {
            Fed::More
        })
    }

    /// The records: the step's own, then the events' once one came; a failure goes
    /// on the step's before the first event, on the events' after it.
    fn finish(&mut self, job: &SessionJob, read: Result<(), Failure>) -> Drive {
        let now = job.clock.now_ns();
        let (by, code) = match &read {
            Ok(()) if self.server_ended => (ClosedBy::Server, 0),
            Ok(()) if self.cut => (ClosedBy::Open, 0),
            Ok(()) => (ClosedBy::Client, 0),
            Err((ErrorKind::Closed, _)) if self.server_ended => (ClosedBy::Server, 0),
            Err((ErrorKind::Timeout, _)) => (ClosedBy::Client, 0),
            Err(_) => (ClosedBy::Broken, 0),
        };
        if let Some(held) = &mut self.held {
            held.close(now, by, code);
        }
        if self.first.end_ns == 0 {
            self.first.end_ns = now;
        }
        let mut outcomes = Vec::with_capacity(2);
        if self.count == 0 {
            if let Err(failure) = read {
                if failure.0 != ErrorKind::Status {
                    self.first.status = 0;
                }
                self.first.failure = Some(failure);
            }
            outcomes.push(std::mem::take(&mut self.first));
            return Drive::Done(outcomes);
        }
        let events = &mut self.events;
        events.end_ns = now;
        match read {
            Err(failure) => {
                events.status = 0;
                events.failure = Some(failure);
            }
            Ok(()) => events.failure = self.check_failure.take(),
        }
        if !job.flow.steps[job.step].extractions.is_empty() {
            // None passed: the extractions find nothing, an `extract` error.
            events.matched = Some((0, self.matched.take().unwrap_or_default()));
        }
        outcomes.push(std::mem::take(&mut self.first));
        outcomes.push(std::mem::take(&mut self.events));
        Drive::Done(outcomes)
    }

    /// An event arrived at `arrived_ns`: judged by the step's checks, counted into the
    /// events' record and the connection's figures.
    fn event(&mut self, job: &SessionJob, arrived_ns: u64, event_type: &[u8], data: &[u8]) {
        if self.enough() {
            return;
        }
        // Never before the event (or the request) it is timed from.
        let at_ns = arrived_ns.max(self.last_ns);
        if self.count == 0 {
            self.first.end_ns = at_ns;
            (self.events.intended_ns, self.events.started_ns) = (at_ns, at_ns);
            // Where the body starts: its bytes a second are over the rest.
            if let Some(held) = &mut self.held {
                held.figures.first_message_ns = Some(at_ns.saturating_sub(held.opened_ns));
            }
        }
        self.count += 1;
        let flow = &job.flow;
        let step = &flow.steps[job.step];
        let gap_ns = at_ns - self.last_ns;
        let answer = Answer {
            status: 200,
            body: data,
            body_bytes: data.len() as u64,
            latency_ns: gap_ns,
            ..Answer::default()
        };
        let mut text = Vec::new();
        let mut checks_failed = 0u32;
        for (index, check) in step.checks.iter().enumerate() {
            // A check of another event type does not judge this one.
            let judged = (check.event.as_deref()).is_none_or(|t| t.as_bytes() == event_type);
            if judged && !check.passes(&answer, &mut text) {
                checks_failed |= 1 << index;
            }
        }
        // The step's extractions read the first event every check passed on.
        if checks_failed == 0 && self.matched.is_none() && !step.extractions.is_empty() {
            self.matched = Some(data.to_vec());
        }
        if checks_failed != 0 && flow.options.checks_fail_requests && self.check_failure.is_none() {
            let check = &step.checks[checks_failed.trailing_zeros() as usize];
            self.check_failure = Some((
                ErrorKind::Check,
                format!("step {:?}: check {:?} failed", step.name, check.name),
            ));
        }
        self.events.checks_failed |= checks_failed;
        self.events.bytes_in += data.len() as u64;
        // A chunk of an answer that is not an event stream has no type.
        if !event_type.is_empty() {
            self.types.count(event_type);
        }
        if let Some(held) = &mut self.held {
            held.received(data.len() as u64);
            held.timed(gap_ns);
            held.figures.messages_failed += u64::from(checks_failed != 0);
        }
        self.last_ns = at_ns;
    }

    fn enough(&self) -> bool {
        self.stream.max_events.is_some_and(|max| self.count >= max)
    }

    /// No event came by the deadline: the listening time is over, or the stream
    /// went quiet for longer than the timeout.
    fn quiet(&self, job: &SessionJob) -> Result<(), Failure> {
        let now = job.clock.now_ns();
        if now >= self.listen_end_ns && self.count > 0 {
            return Ok(());
        }
        let waited_ns = now.saturating_sub(self.last_ns);
        let text = if self.stream.whole_answer {
            format!(
                "the answer stalled: nothing within {} (after {} chunks or events)",
                spelled(waited_ns),
                self.count
            )
        } else {
            format!(
                "no event within {} (after {} events)",
                spelled(waited_ns),
                self.count
            )
        };
        Err((ErrorKind::Timeout, text))
    }

    /// The server ended the stream: an error when more events were asked for.
    fn ended_early(&mut self) -> Result<(), Failure> {
        self.server_ended = true;
        match self.stream.max_events {
            Some(max) if self.count < max => Err((
                ErrorKind::Closed,
                format!(
                    "the server ended the event stream after {} of {max} events",
                    self.count
                ),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;
    use crate::hosts::Address;

    /// The events of `wire`, fed `step` bytes at a time.
    fn events(wire: &[u8], chunked: bool, step: usize) -> (Vec<String>, bool) {
        let mut events = Events::new(chunked, None);
        let (mut seen, mut ended) = (Vec::new(), false);
        for piece in wire.chunks(step) {
            ended |= events
                .feed(piece, &mut |_, data| {
                    seen.push(String::from_utf8_lossy(data).into_owned());
                })
                .unwrap();
        }
        (seen, ended)
    }

    #[test]
    fn events_are_cut_at_blank_lines_however_the_bytes_arrive() {
        let rows: &[(&[u8], bool, &[&str], bool)] = &[
            (b"data: a\n\ndata: b\n\n", false, &["a", "b"], false),
            (b"data: a\r\ndata:b\r\n\r\n", false, &["a\nb"], false),
            (
                b": comment\nid: 1\nevent: x\ndata: a\n\n",
                false,
                &["a"],
                false,
            ),
            (b"id: 1\n\ndata\n\n", false, &[""][..], false),
            (b"data: a\n", false, &[], false),
            (
                b"8\r\ndata: a\n\r\n1\r\n\n\r\n0\r\n\r\n",
                true,
                &["a"],
                true,
            ),
        ];
        for (wire, chunked, want, ended) in rows {
            for step in [1, 3, wire.len()] {
                let got = events(wire, *chunked, step);
                assert_eq!(
                    got,
                    (want.iter().map(|s| (*s).to_owned()).collect(), *ended),
                    "{wire:?} by {step}"
                );
            }
        }
    }

    #[test]
    fn each_event_has_its_type_message_unless_named_and_only_its_own() {
        let wire = b"event: price\ndata: 1\n\ndata: 2\n\nevent: a\nevent: b\ndata: 3\n\nevent: x\n\ndata: 4\n\n";
        let mut events = Events::new(false, None);
        let mut seen = Vec::new();
        events
            .feed(wire, &mut |event_type, data| {
                seen.push(format!(
                    "{} {}",
                    String::from_utf8_lossy(event_type),
                    String::from_utf8_lossy(data)
                ));
            })
            .unwrap();
        // The last `event:` line wins; an event without data dispatches nothing and
        // its type does not carry over.
        assert_eq!(seen, ["price 1", "message 2", "b 3", "message 4"]);
    }

    #[test]
    fn a_plain_answer_is_read_as_pieces_to_its_length_or_chunked_end() {
        // (wire, chunked, Content-Length, pieces, ended), fed whole.
        type Row<'a> = (&'a [u8], bool, Option<u64>, &'a [&'a str], bool);
        let rows: &[Row<'_>] = &[
            (b"tok 1\ntok 2\n", false, None, &["tok 1\ntok 2\n"], false),
            (b"tok 1\ntok 2", false, Some(5), &["tok 1"], true),
            (b"tok", false, Some(5), &["tok"], false),
            (b"6\r\ntok 1\n\r\n0\r\n\r\n", true, None, &["tok 1\n"], true),
            (b"data: a\n\n", false, None, &["data: a\n\n"], false),
        ];
        for (wire, chunked, length, want, ended) in rows {
            let mut events = Events::framed(*chunked, *length, true, None);
            let mut seen = Vec::new();
            let got = events
                .feed(wire, &mut |_, data| {
                    seen.push(String::from_utf8_lossy(data).into_owned());
                })
                .unwrap();
            assert_eq!(
                (seen, got),
                (want.iter().map(|s| (*s).to_owned()).collect(), *ended),
                "{wire:?}"
            );
        }
    }

    #[test]
    fn ids_and_retry_are_kept_for_a_reconnect_and_bad_ones_ignored() {
        let mut events = Events::new(false, None);
        let wire = b"id: 7\nretry: 250\ndata: a\n\nid: 8\0x\nretry: soon\ndata: b\n\nid: 9\n";
        let mut seen = 0;
        events.feed(wire, &mut |_, _| seen += 1).unwrap();
        assert_eq!(seen, 2);
        // `id: 9` is not dispatched yet: the last event id is still 7.
        assert_eq!(
            (events.last_id.as_slice(), events.retry_ms),
            (&b"7"[..], Some(250))
        );
        let next = Events::new(true, Some(events));
        assert_eq!(
            (next.last_id.as_slice(), next.retry_ms),
            (&b"7"[..], Some(250))
        );
        assert!(next.chunked.is_some() && next.pending.is_empty());
    }

    #[test]
    fn events_are_counted_by_type_the_first_sixteen_by_name_the_rest_as_other() {
        let long = "x".repeat(record::EVENT_TYPE_BYTES + 1);
        let at_bound = "y".repeat(record::EVENT_TYPE_BYTES);
        let many: Vec<String> = (0..20).map(|i| format!("t{i:02}")).collect();
        // (types of the events in order, the counts kept)
        type Row<'a> = (Vec<&'a str>, Vec<(&'a str, u64)>);
        let rows: Vec<Row<'_>> = vec![
            // No `event:` field: `message`.
            (vec!["message"; 3], vec![("message", 3)]),
            (
                vec!["tick", "message", "tick"],
                vec![("message", 1), ("tick", 2)],
            ),
            // A name over the bound is `other`; one at it is its own type.
            (
                vec![&long, &at_bound, "message"],
                vec![("message", 1), ("other", 1), (&at_bound, 1)],
            ),
            // A type named `other` counts with the rest.
            (vec!["other", "a"], vec![("a", 1), ("other", 1)]),
            // 17 and more types: the first 16 by name, whatever order they came in.
            (
                many.iter().rev().map(String::as_str).collect(),
                many[..16]
                    .iter()
                    .map(|n| (n.as_str(), 1))
                    .chain([("other", 4)])
                    .collect(),
            ),
            (vec![], vec![]),
        ];
        for (seen, want) in rows {
            let mut types = EventTypes::default();
            for event_type in &seen {
                types.count(event_type.as_bytes());
            }
            let want: std::collections::BTreeMap<String, u64> =
                want.iter().map(|&(n, c)| (n.to_owned(), c)).collect();
            assert_eq!(types.counts(), want, "{seen:?}");
        }
    }

    #[test]
    fn counting_a_new_type_at_every_event_allocates_no_more_room() {
        let mut types = EventTypes::default();
        for i in 0..16 {
            types.count(format!("m{i:02}").as_bytes());
        }
        let room: Vec<*const u8> = types.named.iter().map(|(n, _)| n.as_ptr()).collect();
        // Each before the last by name: each pushes one out, into the room it left.
        for i in (0..16).rev() {
            types.count(format!("a{i:02}").as_bytes());
        }
        let mut after: Vec<*const u8> = types.named.iter().map(|(n, _)| n.as_ptr()).collect();
        let mut before = room;
        before.sort_unstable();
        after.sort_unstable();
        assert_eq!(after, before, "the same sixteen buffers");
        assert_eq!(types.other, 16);
        assert!(types.named.iter().all(|(n, _)| n.starts_with(b"a")));
    }

    #[test]
    fn a_broken_chunked_body_is_a_protocol_error() {
        let mut events = Events::new(true, None);
        let failure = events.feed(b"zz\r\n", &mut |_, _| {}).unwrap_err();
        assert_eq!(failure.0, ErrorKind::Protocol, "{}", failure.1);
    }

    #[test]
    fn events_read_late_are_timed_when_they_arrived() {
        let _stamping = super::super::testing::stamping_on();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let step = workload::StepFields {
            sse: Some("http://h/events".to_owned()),
            events: Some(2),
            ..workload::StepFields::default()
        };
        let address = Address::Tcp(listener.local_addr().unwrap());
        let job = super::super::testing::job(
            step,
            address,
            ("GET /events HTTP/1.1\r\nHost: h\r\n\r\n", ""),
            &[],
        );
        let clock = job.clock;
        // The head and the first event 10 ms after the request, the second 150 ms
        // after that; each time taken just before its write.
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
                head.push(byte[0]);
            }
            std::thread::sleep(Duration::from_millis(10));
            let first_ns = clock.now_ns();
            let answer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\n";
            stream.write_all(answer.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            let second_ns = clock.now_ns();
            stream.write_all(b"data: b\n\n").unwrap();
            // Open until the session has read both.
            let _ = stream.read(&mut byte);
            (first_ns, second_ns)
        });
        // Each wait lasts 100 ms: each event is read up to that much after it came.
        let (outcomes, held) = super::super::testing::run_late(job, Duration::from_millis(100));
        let (first_ns, second_ns) = server.join().unwrap();
        let [first, events] = &outcomes[..] else {
            panic!("{outcomes:?}");
        };
        assert_eq!(
            (first.failure.clone(), events.failure.clone()),
            (None, None)
        );
        let near = |at_ns: u64| at_ns.saturating_sub(2_000_000)..at_ns + 30_000_000;
        assert!(
            near(first_ns).contains(&first.end_ns),
            "the first event timed at {} ns, sent at {first_ns} ns",
            first.end_ns
        );
        let latency = held.unwrap().figures.latency;
        assert_eq!(latency.count(), 2);
        // The gap before the second event, the larger of the two.
        let gap_ns = latency.quantile(1.0).unwrap();
        let sent_gap_ns = second_ns - first_ns;
        assert!(
            near(sent_gap_ns).contains(&gap_ns),
            "a gap of {gap_ns} ns between events sent {sent_gap_ns} ns apart"
        );
    }
}
