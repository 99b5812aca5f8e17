//! A server-sent event stream: the request, an answer that must be `200` and
//! `text/event-stream`, then its events (RFC-less but WHATWG HTML §9.2: `data:` lines
//! joined, dispatched at a blank line), each judged by the step's checks. Records: the
//! step's own is the time to the first event; each event's (`STEP event`) is the gap
//! since the one before.

use std::io::Read;
use std::os::fd::BorrowedFd;

use record::ErrorKind;
use wire::ChunkedDecoder;
use workload::{Answer, EventStream};

use super::{
    Ask, Drive, Failure, Head, Outcome, SessionJob, Wire, io_failure, refused, spelled, would_block,
};

/// Reads a stream's body, chunked or not, and cuts it into events.
struct Events {
    chunked: Option<ChunkedDecoder>,
    /// Decoded bytes not yet cut into lines.
    pending: Vec<u8>,
    /// The event being read: its `data:` lines joined by `\n`.
    data: Vec<u8>,
    has_data: bool,
}

impl Events {
    /// Takes `input` off the wire; each complete event's data goes to `on_event`.
    /// `Ok(true)` when a chunked body ended.
    fn feed(&mut self, input: &[u8], on_event: &mut impl FnMut(&[u8])) -> Result<bool, Failure> {
        let ended = match &mut self.chunked {
            Some(decoder) => {
                let pending = &mut self.pending;
                let progress = decoder
                    .feed(input, |data| pending.extend_from_slice(data))
                    .map_err(|e| (ErrorKind::Protocol, format!("chunked body: {e}")))?;
                matches!(progress, wire::Progress::Done { .. })
            }
            None => {
                self.pending.extend_from_slice(input);
                false
            }
        };
        let mut start = 0;
        while let Some(end) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let line = &self.pending[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_data {
                    on_event(&self.data);
                }
                self.data.clear();
                self.has_data = false;
            } else if let Some(value) = line.strip_prefix(b"data") {
                let value = match value {
                    [b':', b' ', rest @ ..] | [b':', rest @ ..] => rest,
                    _ => &[][..],
                };
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // Other fields (`event`, `id`, `retry`) and `:` comments are not read yet.
            start += end + 1;
        }
        self.pending.drain(..start);
        Ok(ended)
    }
}

/// An event stream in progress.
pub(super) struct Sse {
    state: State,
    tally: Tally,
}

enum State {
    Asking(Ask),
    /// The connect could not even start: said at the first drive.
    Refused(Failure),
    Reading(Wire, Events),
    Ended,
}

/// The stream's records and counts so far.
struct Tally {
    stream: EventStream,
    /// The step's own record: the time to the first event.
    first: Outcome,
    /// The events' records.
    outcomes: Vec<Outcome>,
    listen_end_ns: u64,
    /// When the last event (or the request) came.
    last_ns: u64,
    count: u64,
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
                outcomes: Vec::new(),
                listen_end_ns,
                last_ns: started_ns,
                count: 0,
            },
        }
    }

    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.state {
            State::Asking(ask) => ask.fd(),
            State::Reading(wire, _) => Some(wire.fd()),
            State::Refused(_) | State::Ended => None,
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
        if !(200..300).contains(&head.status) {
            return Err(refused("event stream", head));
        }
        let content_type = head.content_type.clone().unwrap_or_default();
        if !content_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            return Err((
                ErrorKind::Protocol,
                format!(
                    "event stream: the answer is Content-Type {content_type:?}, not text/event-stream"
                ),
            ));
        }
        let mut events = Events {
            chunked: head.chunked.then(ChunkedDecoder::new),
            pending: Vec::new(),
            data: Vec::new(),
            has_data: false,
        };
        // The head's bytes (those past it too) are counted already.
        if self.tally.take(job, &mut events, &head.rest)? {
            return Ok(None);
        }
        self.read(job, wire, events)
    }

    /// Reads what the socket has; `Ok(None)` when the stream is done.
    fn read(&mut self, job: &SessionJob, mut wire: Wire, mut events: Events) -> Progress {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if job.stop.is_aborting() {
                return Ok(None);
            }
            match wire.read(&mut chunk) {
                Ok(0) => return self.tally.ended_early().map(|()| None),
                Ok(read) => {
                    self.tally.first.bytes_in += read as u64;
                    if self.tally.take(job, &mut events, &chunk[..read])? {
                        return Ok(None);
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
    /// Cuts `input` into events; `Ok(true)` when the stream is done (enough events,
    /// or its chunked body ended with all it was asked for).
    fn take(
        &mut self,
        job: &SessionJob,
        events: &mut Events,
        input: &[u8],
    ) -> Result<bool, Failure> {
        let ended = events.feed(input, &mut |data| self.event(job, data))?;
        if self.enough() {
            return Ok(true);
        }
        if ended {
            self.ended_early()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The records: the step's own first (it carries a failure before the first
    /// event; after it, an event's record does).
    fn finish(&mut self, job: &SessionJob, read: Result<(), Failure>) -> Drive {
        let now = job.clock.now_ns();
        if let Err(failure) = read {
            if self.count == 0 {
                if failure.0 != ErrorKind::Status {
                    self.first.status = 0;
                }
                self.first.failure = Some(failure);
            } else {
                self.outcomes.push(Outcome {
                    target_index: self.stream.event_target as u32,
                    intended_ns: now,
                    started_ns: now,
                    end_ns: now,
                    failure: Some(failure),
                    ..Outcome::default()
                });
            }
        }
        if self.first.end_ns == 0 {
            self.first.end_ns = now;
        }
        let mut outcomes = Vec::with_capacity(self.outcomes.len() + 1);
        outcomes.push(std::mem::take(&mut self.first));
        outcomes.append(&mut self.outcomes);
        Drive::Done(outcomes)
    }
    /// An event arrived: its record, judged by the step's checks.
    fn event(&mut self, job: &SessionJob, data: &[u8]) {
        if self.enough() {
            return;
        }
        let now = job.clock.now_ns();
        if self.count == 0 {
            self.first.end_ns = now;
        }
        self.count += 1;
        let flow = &job.flow;
        let step = &flow.steps[job.step];
        let answer = Answer {
            status: 200,
            body: data,
            body_bytes: data.len() as u64,
            latency_ns: now.saturating_sub(self.last_ns),
            ..Answer::default()
        };
        let mut text = Vec::new();
        let mut checks_failed = 0u32;
        for (index, check) in step.checks.iter().enumerate() {
            if !check.passes(&answer, &mut text) {
                checks_failed |= 1 << index;
            }
        }
        let failure = (checks_failed != 0 && flow.options.checks_fail_requests).then(|| {
            let check = &step.checks[checks_failed.trailing_zeros() as usize];
            (
                ErrorKind::Check,
                format!("step {:?}: check {:?} failed", step.name, check.name),
            )
        });
        self.outcomes.push(Outcome {
            target_index: self.stream.event_target as u32,
            intended_ns: self.last_ns,
            started_ns: self.last_ns,
            end_ns: now,
            status: 200,
            failure,
            checks_failed,
            bytes_in: data.len() as u64,
            ..Outcome::default()
        });
        self.last_ns = now;
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
        Err((
            ErrorKind::Timeout,
            format!(
                "no event within {} (after {} events)",
                spelled(waited_ns),
                self.count
            ),
        ))
    }

    /// The server ended the stream: an error when more events were asked for.
    fn ended_early(&self) -> Result<(), Failure> {
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
    use super::*;

    /// The events of `wire`, fed `step` bytes at a time.
    fn events(wire: &[u8], chunked: bool, step: usize) -> (Vec<String>, bool) {
        let mut events = Events {
            chunked: chunked.then(ChunkedDecoder::new),
            pending: Vec::new(),
            data: Vec::new(),
            has_data: false,
        };
        let (mut seen, mut ended) = (Vec::new(), false);
        for piece in wire.chunks(step) {
            ended |= events
                .feed(piece, &mut |data| {
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
    fn a_broken_chunked_body_is_a_protocol_error() {
        let mut events = Events {
            chunked: Some(ChunkedDecoder::new()),
            pending: Vec::new(),
            data: Vec::new(),
            has_data: false,
        };
        let failure = events.feed(b"zz\r\n", &mut |_| {}).unwrap_err();
        assert_eq!(failure.0, ErrorKind::Protocol, "{}", failure.1);
    }
}
