//! A WebSocket session: the upgrade (our rendered request, its answer checked against
//! the key), then the step's actions in order, each timed into an [`Outcome`]. The
//! first action that fails ends the session; the ones after it are not run.
//!
//! Non-blocking: [`Ws::drive`] runs as far as the socket lets it and says what it
//! waits for; the action in progress keeps its place in [`Act`].

use std::collections::VecDeque;
use std::os::fd::BorrowedFd;

use record::{ClosedBy, ErrorKind};
use tungstenite::error::ProtocolError;
use tungstenite::protocol::frame::coding::{Data, OpCode};
use tungstenite::protocol::frame::{CloseFrame, Frame};
use tungstenite::protocol::{Role, WebSocket, WebSocketConfig};
use tungstenite::{Error, Message};
use workload::{Action, ActionKind, Answer, Stream, WebSocket as Session};

use super::ws_read::{Deflate, FrameReader, Incoming, agreed_deflate};
use super::{
    Ask, Drive, Failure, Head, Held, Outcome, SessionJob, Wire, io_failure, refused, spelled,
};

/// tungstenite frames what we send; what the server sends is read by [`FrameReader`].
type Socket = WebSocket<Wire>;

pub(super) struct Ws {
    state: State,
    outcomes: Vec<Outcome>,
    /// The record in progress: the upgrade's, then each action's.
    current: Outcome,
    /// The action in progress, and where it is.
    action: usize,
    act: Act,
    /// The next `send` action's message.
    sends: usize,
    /// The connection's figures, from the upgrade on.
    pub(super) held: Option<Held>,
    /// The code of the server's close frame, when it sent one.
    server_close: Option<u16>,
    /// When the bytes that completed the last data message reached this host.
    message_ns: u64,
    /// The last `send` action's message, for a paced send's repeats; and when it
    /// carries its send time, the message to stamp anew each time.
    message: Option<Message>,
    stamped: Option<super::Send>,
    /// The server's frames, read (from the upgrade on).
    reader: Option<FrameReader>,
    /// permessage-deflate for what we send, when the upgrade agreed it.
    deflate: Option<Deflate>,
    /// When the next ping is due (a step with `ping`).
    ping_next_ns: u64,
    /// The ping waiting for its pong: when it went, and its payload's number.
    ping_out: Option<(u64, u64)>,
    /// The run ended while the connection was open: its entry says so.
    cut: bool,
    /// With `round_trip = "in order"`: when each message not yet answered was due,
    /// oldest first (`None`: not paired, or more than [`MAX_UNANSWERED`] went
    /// unanswered and pairing stopped for this connection).
    unanswered: Option<VecDeque<u64>>,
}

/// Past this many messages unanswered, a connection's answers are no longer paired:
/// a server that does not echo would otherwise grow the queue without end.
const MAX_UNANSWERED: usize = 4096;

enum State {
    Asking(Ask),
    /// The connect could not even start: said at the first drive.
    Refused(Failure),
    Open(Box<Socket>),
    Ended,
}

/// Where the action in progress is.
#[derive(Clone, Copy, PartialEq)]
enum Act {
    Begin,
    /// A message (or our close frame) is queued: the socket must take it.
    Flush {
        deadline_ns: u64,
    },
    Expect {
        deadline_ns: u64,
    },
    Hold {
        deadline_ns: u64,
    },
    /// A paced `send`: messages sent so far (the next one's time follows from it).
    Paced {
        sent: u64,
    },
    Close {
        deadline_ns: u64,
    },
}

/// An action's progress: `Ok(Some(t))` waits (for the socket, or until `t`),
/// `Ok(None)` is done.
type Progress = Result<Option<u64>, Failure>;

impl Ws {
    pub(super) fn start(job: &SessionJob) -> Ws {
        let current = Outcome {
            target_index: job.step as u32,
            intended_ns: job.intended_ns,
            started_ns: job.clock.now_ns(),
            ..Outcome::default()
        };
        Ws {
            state: Ask::start(job).map_or_else(State::Refused, State::Asking),
            outcomes: Vec::new(),
            current,
            action: 0,
            act: Act::Begin,
            sends: 0,
            held: None,
            server_close: None,
            message_ns: 0,
            message: None,
            stamped: None,
            reader: None,
            deflate: None,
            ping_next_ns: u64::MAX,
            ping_out: None,
            cut: false,
            unanswered: round_trip(job).then(VecDeque::new),
        }
    }

    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.state {
            State::Asking(ask) => ask.fd(),
            State::Open(socket) => Some(socket.get_ref().fd()),
            State::Refused(_) | State::Ended => None,
        }
    }

    pub(super) fn drive(&mut self, job: &SessionJob) -> Drive {
        let Some(Stream::WebSocket(session)) = &job.flow.steps[job.step].stream else {
            return Drive::Done(Vec::new());
        };
        let actions = &session.actions;
        loop {
            match std::mem::replace(&mut self.state, State::Ended) {
                State::Refused(failure) => return self.refused(job, failure),
                State::Asking(mut ask) => match ask.poll(job, &mut self.current) {
                    Ok(None) => {
                        self.state = State::Asking(ask);
                        return Drive::Wait(self.current.started_ns.saturating_add(job.timeout_ns));
                    }
                    Ok(Some((wire, head))) => {
                        let answered_ns = head.arrived_ns;
                        match upgraded(session, wire, head, job, &mut self.current) {
                            Ok(upgrade) => {
                                self.reader = Some(upgrade.reader);
                                self.deflate = upgrade.deflate;
                                self.opened(job, upgrade.socket, session, answered_ns);
                                if let Some(held) = &mut self.held {
                                    held.figures.subprotocol = upgrade.chosen;
                                    held.figures.compression =
                                        self.deflate.as_ref().map(|_| "deflate".to_owned());
                                }
                            }
                            Err(failure) => return self.refused(job, failure),
                        }
                    }
                    Err(failure) => return self.refused(job, failure),
                },
                State::Open(mut socket) => {
                    let Some(action) = actions.get(self.action) else {
                        return self.end(job, socket, None);
                    };
                    // No ping once our close frame may be out: nothing follows it.
                    let ping_ns = match action.kind {
                        ActionKind::Close(_) => None,
                        _ => session.ping_ns,
                    };
                    let progress = self
                        .keep_alive(job, &mut socket, ping_ns)
                        .and_then(|ping_ns| {
                            let acted = self.act(job, &mut socket, action)?;
                            Ok(acted.map(|deadline_ns| deadline_ns.min(ping_ns)))
                        });
                    match progress {
                        Ok(Some(deadline_ns)) => {
                            self.state = State::Open(socket);
                            return Drive::Wait(deadline_ns);
                        }
                        Ok(None) => {
                            // An `expect` ended when its message arrived.
                            if self.current.end_ns == 0 {
                                self.current.end_ns = job.clock.now_ns();
                            }
                            self.outcomes.push(std::mem::take(&mut self.current));
                            if let ActionKind::Close(code) = action.kind {
                                return self.end(job, socket, Some(code));
                            }
                            if job.stop.is_stopping() {
                                // The run ends: the connection is still open.
                                self.cut = true;
                                return self.end(job, socket, None);
                            }
                            self.next_action(job, socket, actions);
                        }
                        Err(failure) => {
                            self.current.end_ns = job.clock.now_ns();
                            self.current.status = 0;
                            let broken = matches!(
                                failure.0,
                                ErrorKind::Closed
                                    | ErrorKind::Reset
                                    | ErrorKind::Io
                                    | ErrorKind::Protocol
                            );
                            self.current.failure = Some(failure);
                            self.outcomes.push(std::mem::take(&mut self.current));
                            if broken {
                                return self.broken(job, &mut socket);
                            }
                            let ours = match action.kind {
                                ActionKind::Close(code) => Some(code),
                                _ => None,
                            };
                            return self.end(job, socket, ours);
                        }
                    }
                }
                State::Ended => return Drive::Done(std::mem::take(&mut self.outcomes)),
            }
        }
    }

    /// The upgrade did what it asked (its answer came at `answered_ns`): 200, as a
    /// record's success reads it (101 would read as a failure in every report); the
    /// first action begins.
    fn opened(&mut self, job: &SessionJob, socket: Socket, session: &Session, answered_ns: u64) {
        self.current.status = 200;
        self.current.end_ns = answered_ns;
        self.held = Some(Held::opened(self.current.end_ns, &job.tally));
        if let Some(every_ns) = session.ping_ns {
            self.ping_next_ns = self.current.end_ns.saturating_add(every_ns);
        }
        self.outcomes.push(std::mem::take(&mut self.current));
        self.action = usize::MAX;
        self.next_action(job, Box::new(socket), &session.actions);
    }

    /// Sends a ping when one is due (one at a time) and fails the session when the
    /// one out has waited the timeout for its pong; `Ok(t)`: the next time to look.
    fn keep_alive(
        &mut self,
        job: &SessionJob,
        socket: &mut Socket,
        ping_ns: Option<u64>,
    ) -> Result<u64, Failure> {
        let Some(every_ns) = ping_ns else {
            return Ok(u64::MAX);
        };
        let now = job.clock.now_ns();
        let pong_late = |(sent_ns, _): (u64, u64)| sent_ns.saturating_add(job.timeout_ns);
        if self.ping_out.is_some_and(|out| now >= pong_late(out)) {
            if let Some(held) = &mut self.held {
                held.figures.pings_unanswered += 1;
            }
            return Err((
                ErrorKind::Timeout,
                format!("no pong answered a ping within {}", spelled(job.timeout_ns)),
            ));
        }
        if now >= self.ping_next_ns {
            if self.ping_out.is_none() {
                let number = self.held.as_ref().map_or(0, |h| h.figures.pings) + 1;
                let payload = number.to_be_bytes().to_vec();
                queued(socket.write(Message::Ping(payload.into())))?;
                queued(socket.flush())?;
                self.ping_out = Some((now, number));
                if let Some(held) = &mut self.held {
                    held.figures.pings += 1;
                }
            }
            self.ping_next_ns = now.saturating_add(every_ns);
        }
        Ok(self
            .ping_out
            .map_or(u64::MAX, pong_late)
            .min(self.ping_next_ns))
    }

    fn next_action(&mut self, job: &SessionJob, socket: Box<Socket>, actions: &[Action]) {
        self.action = self.action.wrapping_add(1);
        self.act = Act::Begin;
        let started_ns = job.clock.now_ns();
        self.current = Outcome {
            target_index: actions.get(self.action).map_or(0, |a| a.target as u32),
            intended_ns: started_ns,
            started_ns,
            status: 200,
            ..Outcome::default()
        };
        self.state = State::Open(socket);
    }

    /// The upgrade's record carries `failure`, and the session ends.
    fn refused(&mut self, job: &SessionJob, failure: Failure) -> Drive {
        self.current.end_ns = job.clock.now_ns();
        self.current.failure = Some(failure);
        self.outcomes.push(std::mem::take(&mut self.current));
        Drive::Done(std::mem::take(&mut self.outcomes))
    }

    /// The session ends: after the server's close frame, our `close` action's
    /// (`ours`), or else with a close frame of 1000 sent without waiting, as a client
    /// leaves (or as the run ends, the connection still open: `cut`).
    fn end(&mut self, job: &SessionJob, mut socket: Box<Socket>, ours: Option<u16>) -> Drive {
        let (by, code) = match (self.server_close, ours) {
            (Some(code), _) => (ClosedBy::Server, code),
            (None, Some(code)) => (ClosedBy::Client, code),
            (None, None) => {
                let frame = CloseFrame {
                    code: 1000.into(),
                    reason: "".into(),
                };
                let _ = socket.close(Some(frame));
                let _ = socket.flush();
                if self.cut {
                    (ClosedBy::Open, 0)
                } else {
                    (ClosedBy::Client, 1000)
                }
            }
        };
        if let Some(held) = &mut self.held {
            held.close(job.clock.now_ns(), by, code);
        }
        Drive::Done(std::mem::take(&mut self.outcomes))
    }

    /// The session ends on a connection that broke (or a close frame from the server).
    /// The server's close frame is answered with its code, as RFC 6455 5.5.1 asks
    /// (without a code when it gave none or one not to be sent).
    fn broken(&mut self, job: &SessionJob, socket: &mut Socket) -> Drive {
        let (by, code) = match self.server_close {
            Some(code) => {
                let echoed = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
                let frame = echoed.then(|| CloseFrame {
                    code: code.into(),
                    reason: "".into(),
                });
                let _ = socket.close(frame);
                let _ = socket.flush();
                (ClosedBy::Server, code)
            }
            None => (ClosedBy::Broken, 0),
        };
        if let Some(held) = &mut self.held {
            held.close(job.clock.now_ns(), by, code);
        }
        Drive::Done(std::mem::take(&mut self.outcomes))
    }

    fn act(&mut self, job: &SessionJob, socket: &mut Socket, action: &Action) -> Progress {
        let started_ns = self.current.started_ns;
        let timeout_ns = started_ns.saturating_add(job.timeout_ns);
        match (self.act, &action.kind) {
            (Act::Begin, ActionKind::Send(..)) => {
                let send = job.sends.get(self.sends).cloned().unwrap_or_default();
                self.sends += 1;
                let message = stamped_message(job, &send, started_ns);
                self.stamped = send.stamp.is_some().then_some(send);
                if action.pace.is_some() {
                    // Kept for the paced messages (a clone shares the bytes): each goes
                    // when it is due, the first too (a schedule may begin with a pause).
                    self.message = Some(message);
                    self.act = Act::Paced { sent: 0 };
                } else {
                    self.act = Act::Flush {
                        deadline_ns: timeout_ns,
                    };
                    self.send(socket, message, started_ns)?;
                }
                self.act(job, socket, action)
            }
            (Act::Paced { sent }, _) => self.paced(job, socket, action, sent),
            (Act::Begin, ActionKind::Expect { within_ns, .. }) => {
                let within_ns = within_ns.unwrap_or(job.timeout_ns);
                self.act = Act::Expect {
                    deadline_ns: started_ns.saturating_add(within_ns),
                };
                self.act(job, socket, action)
            }
            (Act::Begin, ActionKind::HoldNs(hold_ns)) => {
                self.act = Act::Hold {
                    deadline_ns: started_ns.saturating_add(*hold_ns),
                };
                self.act(job, socket, action)
            }
            (Act::Begin, ActionKind::Close(code)) => {
                let frame = CloseFrame {
                    code: (*code).into(),
                    reason: "".into(),
                };
                queued(socket.close(Some(frame)))?;
                self.act = Act::Close {
                    deadline_ns: timeout_ns,
                };
                self.act(job, socket, action)
            }
            (Act::Flush { deadline_ns }, _) => match socket.flush() {
                Ok(()) => Ok(None),
                Err(Error::Io(e)) if super::would_block(&e) => {
                    super::wait_until(job, deadline_ns, || {
                        (
                            ErrorKind::Timeout,
                            format!(
                                "the message was not taken within {}",
                                spelled(job.timeout_ns)
                            ),
                        )
                    })
                    .map(Some)
                }
                Err(e) => Err(failure(&e)),
            },
            (Act::Expect { deadline_ns }, ActionKind::Expect { check, within_ns }) => self.expect(
                job,
                socket,
                check,
                deadline_ns,
                within_ns.unwrap_or(job.timeout_ns),
            ),
            (Act::Hold { deadline_ns }, _) => loop {
                if job.stop.is_stopping() || job.clock.now_ns() >= deadline_ns {
                    return Ok(None);
                }
                match self.next_message(job, socket)? {
                    Some(bytes) => self.current.bytes_in += bytes,
                    None => return Ok(Some(deadline_ns)),
                }
            },
            (Act::Close { deadline_ns }, _) => loop {
                let Some(reader) = &mut self.reader else {
                    return Ok(None);
                };
                match reader.next(socket.get_mut()) {
                    Ok(Some(Incoming::Close { .. })) => {
                        // Done when the server's close frame arrived.
                        let now = job.clock.now_ns();
                        self.current.end_ns = socket.get_ref().arrived_ns(now, started_ns);
                        return Ok(None);
                    }
                    Err((ErrorKind::Closed, _)) => return Ok(None),
                    // What comes after our close frame is read and let go.
                    Ok(Some(_)) => {}
                    Ok(None) => {
                        return super::wait_until(job, deadline_ns, || {
                            (
                                ErrorKind::Timeout,
                                "no close frame answered ours within the timeout".to_owned(),
                            )
                        })
                        .map(Some);
                    }
                    Err(e) => return Err(e),
                }
            },
            (Act::Expect { .. }, _) => Ok(None),
        }
    }

    /// Queues `message` (a write that would block has queued it: a flush sends it),
    /// counted.
    /// With permessage-deflate agreed, the message goes compressed (RSV1 set).
    /// Sends `message`, due at `due_ns` (its round trip, when paired, counts from then).
    fn send(&mut self, socket: &mut Socket, message: Message, due_ns: u64) -> Result<(), Failure> {
        if let Some(unanswered) = &mut self.unanswered {
            if unanswered.len() < MAX_UNANSWERED {
                unanswered.push_back(due_ns);
            } else {
                self.unanswered = None;
            }
        }
        let bytes = message.len() as u64;
        self.current.bytes_out += bytes;
        if let Some(held) = &mut self.held {
            held.sent(bytes);
        }
        let message = match (&mut self.deflate, &message) {
            (Some(deflate), Message::Text(text)) => {
                compressed(deflate, text.as_bytes(), Data::Text)
            }
            (Some(deflate), Message::Binary(data)) => compressed(deflate, data, Data::Binary),
            _ => message,
        };
        queued(socket.write(message))
    }

    /// A paced `send`: each message at its time (a late one at once, in turn),
    /// reading what comes meanwhile, until its pace has no next message.
    fn paced(
        &mut self,
        job: &SessionJob,
        socket: &mut Socket,
        action: &Action,
        mut sent: u64,
    ) -> Progress {
        let Some(pace) = &action.pace else {
            return Ok(None);
        };
        loop {
            while let Some(bytes) = self.next_message(job, socket)? {
                self.current.bytes_in += bytes;
            }
            let now = job.clock.now_ns();
            if job.stop.is_stopping() {
                return Ok(None);
            }
            let due_ns = pace.offset_ns(sent);
            let Some(due_ns) =
                due_ns.map(|offset_ns| self.current.started_ns.saturating_add(offset_ns))
            else {
                self.act = Act::Flush {
                    deadline_ns: now.saturating_add(job.timeout_ns),
                };
                return self.act(job, socket, action);
            };
            if now < due_ns {
                queued(socket.flush())?;
                self.act = Act::Paced { sent };
                return Ok(Some(due_ns));
            }
            let message = match &self.stamped {
                // Sent late (behind, or within the precision budget): timed from
                // when it was due, as a late request is.
                Some(send) => stamped_message(job, send, due_ns),
                None => self.message.clone().unwrap_or_else(|| Message::text("")),
            };
            self.send(socket, message, due_ns)?;
            sent += 1;
        }
    }

    /// Reads messages until one passes `check` (done), none is left to read (wait),
    /// or the deadline passed (its check failed).
    fn expect(
        &mut self,
        job: &SessionJob,
        socket: &mut Socket,
        check: &workload::Check,
        deadline_ns: u64,
        within_ns: u64,
    ) -> Progress {
        let mut text = Vec::new();
        loop {
            if job.stop.is_aborting() || job.clock.now_ns() >= deadline_ns {
                self.current.checks_failed = 1;
                return Err((
                    ErrorKind::Timeout,
                    format!(
                        "no message passed {:?} within {}",
                        check.name,
                        spelled(within_ns)
                    ),
                ));
            }
            if self.next_message(job, socket)?.is_none() {
                return Ok(Some(deadline_ns));
            }
            let body = self.reader.as_ref().map_or(&[][..], FrameReader::message);
            self.current.bytes_in += body.len() as u64;
            // A message already read (or arrived) when the expect began is its start.
            let answered_ns = self.message_ns.max(self.current.started_ns);
            let answer = Answer {
                status: 200,
                body,
                body_bytes: body.len() as u64,
                latency_ns: answered_ns - self.current.started_ns,
                ..Answer::default()
            };
            if check.passes(&answer, &mut text) {
                // With `send_time` or `round_trip`, the histogram holds what they time.
                if let Some(held) = &mut self.held
                    && send_time(job).is_none()
                    && !round_trip(job)
                {
                    held.timed(answer.latency_ns);
                }
                self.current.matched = Some((self.action, body.to_vec()));
                self.current.end_ns = answered_ns;
                return Ok(None);
            }
        }
    }
}

impl Ws {
    /// The next data message's length, counted (its bytes are the reader's message;
    /// pings are answered on the way), `None` when none is there to read yet; a close
    /// from the server is an error, its code kept.
    fn next_message(
        &mut self,
        job: &SessionJob,
        socket: &mut Socket,
    ) -> Result<Option<u64>, Failure> {
        let Some(reader) = &mut self.reader else {
            return Ok(None);
        };
        loop {
            match reader.next(socket.get_mut())? {
                None => return Ok(None),
                Some(Incoming::Data { .. }) => {
                    let bytes = reader.message().len() as u64;
                    // Timed by when the bytes that completed it arrived, not by this
                    // read, which a budget's wait may have made late.
                    let now = job.clock.now_ns();
                    let opened_ns = self.held.as_ref().map_or(now, |held| held.opened_ns);
                    self.message_ns = socket.get_ref().arrived_ns(now, opened_ns);
                    let mut delay_ns = one_way_delay(job, reader.message(), self.message_ns)?;
                    if let Some(due_ns) = self.unanswered.as_mut().and_then(VecDeque::pop_front) {
                        delay_ns = Some(self.message_ns.saturating_sub(due_ns));
                    }
                    if let Some(held) = &mut self.held {
                        held.received(bytes);
                        if let Some(delay_ns) = delay_ns {
                            held.timed(delay_ns);
                        }
                    }
                    return Ok(Some(bytes));
                }
                Some(Incoming::Ping(payload)) => {
                    queued(socket.write(Message::Pong(payload.into())))?;
                    queued(socket.flush())?;
                }
                Some(Incoming::Pong(payload)) => {
                    let answers = |(_, number): (u64, u64)| payload == number.to_be_bytes();
                    if self.ping_out.is_some_and(answers) {
                        self.ping_out = None;
                    }
                }
                Some(Incoming::Close { code, reason }) => {
                    self.server_close = Some(code);
                    return Err((
                        ErrorKind::Closed,
                        format!("the server closed the websocket: code {code} {reason:?}"),
                    ));
                }
            }
        }
    }

    /// The poller saw the socket ready: the reader may read again.
    pub(super) fn readable(&mut self) {
        if let Some(reader) = &mut self.reader {
            reader.readable();
        }
    }
}

/// `send` as a message, its send time (if it carries one) the time it was due,
/// `due_ns` on the run's clock.
fn stamped_message(job: &SessionJob, send: &super::Send, due_ns: u64) -> Message {
    let bytes = send.stamped(job.clock.unix_ns(due_ns));
    match String::from_utf8(bytes) {
        Ok(text) => Message::text(text),
        Err(e) => Message::binary(e.into_bytes()),
    }
}

/// The step's `send_time`, where its messages carry the time they were sent.
fn send_time(job: &SessionJob) -> Option<&workload::SendTime> {
    match &job.flow.steps[job.step].stream {
        Some(Stream::WebSocket(session)) => session.send_time.as_ref(),
        _ => None,
    }
}

/// The step pairs each message that arrives with the oldest one not yet answered.
fn round_trip(job: &SessionJob) -> bool {
    matches!(&job.flow.steps[job.step].stream, Some(Stream::WebSocket(session)) if session.round_trip)
}

/// The one-way delay of `message`, arrived at `arrived_ns`, when it carries its send
/// time; one whose send time is not a number fails the session (an `extract` error).
fn one_way_delay(
    job: &SessionJob,
    message: &[u8],
    arrived_ns: u64,
) -> Result<Option<u64>, Failure> {
    let Some(send_time) = send_time(job) else {
        return Ok(None);
    };
    match job.flow.send_time_in(send_time, message) {
        None => Ok(None),
        Some(Ok(sent_unix_ns)) => {
            let arrived_unix_ns = job.clock.unix_ns(arrived_ns);
            Ok(Some(arrived_unix_ns.saturating_sub(sent_unix_ns)))
        }
        Some(Err(text)) => Err((ErrorKind::Extract, text)),
    }
}

/// `data` compressed, as one frame marked compressed.
fn compressed(deflate: &mut Deflate, data: &[u8], kind: Data) -> Message {
    let mut frame = Frame::message(deflate.compress(data), OpCode::Data(kind), true);
    frame.header_mut().rsv1 = true;
    Message::Frame(frame)
}

/// What a good upgrade hands over.
struct Upgrade {
    socket: Socket,
    reader: FrameReader,
    deflate: Option<Deflate>,
    /// The subprotocol chosen: one of those asked, or none when none was.
    chosen: Option<String>,
}

/// The socket over the upgraded connection, once the answer is a `101` with the
/// accept our key asks for, the subprotocol and the extensions as offered.
fn upgraded(
    session: &Session,
    wire: Wire,
    head: Head,
    job: &SessionJob,
    outcome: &mut Outcome,
) -> Result<Upgrade, Failure> {
    if head.status != 101 {
        outcome.status = head.status;
        return Err(refused("websocket upgrade", &head));
    }
    let accept = tungstenite::handshake::derive_accept_key(job.key.as_bytes());
    if head.accept.as_deref() != Some(accept.as_str()) {
        return Err((
            ErrorKind::Protocol,
            "websocket upgrade: Sec-WebSocket-Accept does not answer our key".to_owned(),
        ));
    }
    let asked = &session.subprotocols;
    match &head.protocol {
        Some(chosen) if !asked.contains(chosen) => {
            return Err((
                ErrorKind::Protocol,
                format!(
                    "websocket upgrade: the server chose subprotocol {chosen:?}, not one asked ({})",
                    if asked.is_empty() {
                        "none".to_owned()
                    } else {
                        asked.join(", ")
                    }
                ),
            ));
        }
        None if !asked.is_empty() => {
            return Err((
                ErrorKind::Protocol,
                format!(
                    "websocket upgrade: the server chose no subprotocol (asked: {})",
                    asked.join(", ")
                ),
            ));
        }
        _ => {}
    }
    let deflate = agreed_deflate(head.extensions.as_deref(), session.deflate)
        .map_err(|e| (ErrorKind::Protocol, format!("websocket upgrade: {e}")))?;
    let reader = FrameReader::new(&head.rest, deflate.is_some(), wire.is_plain());
    Ok(Upgrade {
        // Its reader is never used: no read buffer for it.
        socket: WebSocket::from_raw_socket(wire, Role::Client, Some(unread())),
        reader,
        deflate: deflate.map(Deflate::new),
        chosen: head.protocol,
    })
}

fn unread() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(0)
}

/// A write that queued its frame (the socket would block) counts as done.
fn queued(written: Result<(), Error>) -> Result<(), Failure> {
    match written {
        Err(Error::Io(e)) if super::would_block(&e) => Ok(()),
        other => other.map_err(|e| failure(&e)),
    }
}

fn failure(e: &Error) -> Failure {
    match e {
        Error::ConnectionClosed
        | Error::AlreadyClosed
        | Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => (
            ErrorKind::Closed,
            "the server closed the connection without a close frame".to_owned(),
        ),
        Error::Io(e) => io_failure(e),
        e => (ErrorKind::Protocol, format!("websocket: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::os::unix::net::UnixListener;
    use std::sync::Arc;
    use std::time::Duration;

    use rustls::pki_types::{PrivateKeyDer, ServerName};
    use workload::{ActionFields, StepFields, TlsOptions};

    use super::super::testing::{job, run_late, stamping_on};
    use super::super::{Held, Outcome, SessionJob};
    use crate::hosts::Address;

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
    const UPGRADE: &str = "GET /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    /// Each wait of the session lasts this long, whatever came meanwhile.
    const LATE: Duration = Duration::from_millis(100);

    /// Echoes each data message of one WebSocket connection 10 ms after it came (so
    /// after the session's read found nothing), until the connection ends.
    fn echo(stream: impl Read + Write) {
        let Ok(mut socket) = tungstenite::accept(stream) else {
            return;
        };
        while let Ok(message) = socket.read() {
            std::thread::sleep(Duration::from_millis(10));
            if (message.is_text() || message.is_binary()) && socket.send(message).is_err() {
                return;
            }
        }
    }

    /// An echo server on loopback for one connection, over TLS (a self-signed
    /// certificate for `localhost`) when `tls`.
    fn tcp_echo(tls: bool) -> Address {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = Address::Tcp(listener.local_addr().unwrap());
        let config = tls.then(|| {
            let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
            let private = PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![key.cert.der().clone()], private)
                .unwrap();
            Arc::new(config)
        });
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            match config {
                Some(config) => {
                    let server = rustls::ServerConnection::new(config).unwrap();
                    echo(rustls::StreamOwned::new(server, stream));
                }
                None => echo(stream),
            }
        });
        address
    }

    /// A step sending one message, expecting its echo and closing, with `fields`
    /// (pairing, send times).
    fn echo_step(fields: StepFields) -> StepFields {
        StepFields {
            ws: Some("ws://h/echo".to_owned()),
            actions: vec![
                ActionFields {
                    send: Some("hi".to_owned()),
                    ..ActionFields::default()
                },
                ActionFields {
                    expect: Some("body contains hi".to_owned()),
                    within: Some("5s".to_owned()),
                    ..ActionFields::default()
                },
                ActionFields {
                    close: Some(1000),
                    ..ActionFields::default()
                },
            ],
            ..fields
        }
    }

    /// Runs `job` reading late; its expect's and its close's times (checked they
    /// passed) and the one message latency its connection timed.
    fn expect_and_latency(name: &str, job: SessionJob) -> (u64, u64, u64) {
        let (outcomes, held): (Vec<Outcome>, Option<Held>) = run_late(job, LATE);
        let [upgrade, send, expect, close] = &outcomes[..] else {
            panic!("{name}: {outcomes:?}");
        };
        let failures = [send, expect, close].map(|outcome| outcome.failure.clone());
        assert_eq!(
            (upgrade.status, failures),
            (200, [None, None, None]),
            "{name}: {outcomes:?}"
        );
        let latency = held.unwrap().figures.latency;
        assert_eq!(latency.count(), 1, "{name}");
        (
            expect.end_ns - expect.started_ns,
            close.end_ns - close.started_ns,
            latency.quantile(1.0).unwrap(),
        )
    }

    #[test]
    fn an_echo_read_late_is_timed_when_it_arrived_where_the_kernel_stamps_it() {
        let dir = tempfile::tempdir().unwrap();
        let unix_path = dir.path().join("echo.sock");
        let unix = UnixListener::bind(&unix_path).unwrap();
        std::thread::spawn(move || echo(unix.accept().unwrap().0));
        let _stamping = stamping_on();
        // The echo comes 10 ms after the message (the expect began a moment after
        // it), the answer to our close frame 10 ms after it, and each is read 90 ms
        // late. TCP stamps what it receives, under TLS too: the expect, the round
        // trip and the close are the echo's and the answer's. A Unix socket does
        // not: they are timed at the read, as before.
        let stamped = (0..50_000_000, 10_000_000..50_000_000);
        let read = 90_000_000..2_000_000_000;
        let rows = [
            ("tcp", tcp_echo(false), false, stamped.clone()),
            ("tls", tcp_echo(true), true, stamped),
            (
                "unix",
                Address::Unix(unix_path),
                false,
                (read.clone(), read),
            ),
        ];
        for (name, address, tls, (want_expect_ns, want_round_trip_ns)) in rows {
            let paired = StepFields {
                round_trip: Some("in order".to_owned()),
                ..StepFields::default()
            };
            let mut job = job(echo_step(paired), address, (UPGRADE, KEY), &["hi"]);
            if tls {
                let insecure = TlsOptions {
                    insecure: true,
                    ..TlsOptions::default()
                };
                let config = crate::tls::client_config(&insecure, false).unwrap();
                job.tls = Some((config, ServerName::try_from("localhost").unwrap()));
            }
            let (expect_ns, close_ns, round_trip_ns) = expect_and_latency(name, job);
            assert!(
                want_expect_ns.contains(&expect_ns),
                "{name}: expect {expect_ns} ns"
            );
            assert!(
                want_round_trip_ns.contains(&round_trip_ns),
                "{name}: round trip {round_trip_ns} ns"
            );
            assert!(
                want_round_trip_ns.contains(&close_ns),
                "{name}: close {close_ns} ns"
            );
        }
    }

    #[test]
    fn a_one_way_delay_read_late_is_timed_when_the_message_arrived() {
        let _stamping = stamping_on();
        let timed = StepFields {
            send_time: Some("regex sent=([0-9]+)".to_owned()),
            ..StepFields::default()
        };
        let message = format!("hi sent={}", "0".repeat(super::super::SEND_TIME_DIGITS));
        let mut job = job(
            echo_step(timed),
            tcp_echo(false),
            (UPGRADE, KEY),
            &[&message],
        );
        job.sends[0].stamp = Some("hi sent=".len());
        // Sent when due, back 10 ms later, read 90 ms after that.
        let (expect_ns, _, one_way_ns) = expect_and_latency("one way", job);
        assert!(expect_ns < 50_000_000, "{expect_ns} ns");
        assert!(
            (10_000_000..50_000_000).contains(&one_way_ns),
            "one-way delay {one_way_ns} ns"
        );
    }
}
