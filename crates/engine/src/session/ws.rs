//! A WebSocket session: the upgrade (our rendered request, its answer checked against
//! the key), then the step's actions in order, each timed into an [`Outcome`]. The
//! first action that fails ends the session; the ones after it are not run.
//!
//! Non-blocking: [`Ws::drive`] runs as far as the socket lets it and says what it
//! waits for; the action in progress keeps its place in [`Act`].

use std::os::fd::BorrowedFd;

use record::ErrorKind;
use tungstenite::error::ProtocolError;
use tungstenite::protocol::frame::CloseFrame;
use tungstenite::protocol::{Role, WebSocket, WebSocketConfig};
use tungstenite::{Error, Message};
use workload::{Action, ActionKind, Answer, Stream};

use super::{Ask, Drive, Failure, Head, Outcome, SessionJob, Wire, io_failure, refused, spelled};

/// The frame reader's buffer. Small on purpose: tungstenite fills its whole read
/// buffer with zeros before each read, and its default (128 KiB) would make every
/// held connection cost that much; a bigger message grows the buffer as it comes.
const READ_BUFFER_BYTES: usize = 4096;

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
}

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
        let Some(Stream::WebSocket(actions)) = &job.flow.steps[job.step].stream else {
            return Drive::Done(Vec::new());
        };
        loop {
            match std::mem::replace(&mut self.state, State::Ended) {
                State::Refused(failure) => return self.refused(job, failure),
                State::Asking(mut ask) => match ask.poll(job, &mut self.current) {
                    Ok(None) => {
                        self.state = State::Asking(ask);
                        return Drive::Wait(self.current.started_ns.saturating_add(job.timeout_ns));
                    }
                    Ok(Some((wire, head))) => match upgraded(job, wire, head, &mut self.current) {
                        Ok(socket) => self.opened(job, socket, actions),
                        Err(failure) => return self.refused(job, failure),
                    },
                    Err(failure) => return self.refused(job, failure),
                },
                State::Open(mut socket) => {
                    let Some(action) = actions.get(self.action) else {
                        return self.end(socket, false);
                    };
                    match self.act(job, &mut socket, action) {
                        Ok(Some(deadline_ns)) => {
                            self.state = State::Open(socket);
                            return Drive::Wait(deadline_ns);
                        }
                        Ok(None) => {
                            self.current.end_ns = job.clock.now_ns();
                            self.outcomes.push(std::mem::take(&mut self.current));
                            if matches!(action.kind, ActionKind::Close(_)) {
                                return self.end(socket, true);
                            }
                            if job.stop.is_aborting() {
                                return self.end(socket, false);
                            }
                            self.next_action(job, socket, actions);
                        }
                        Err(failure) => {
                            self.current.end_ns = job.clock.now_ns();
                            self.current.status = 0;
                            self.current.failure = Some(failure);
                            self.outcomes.push(std::mem::take(&mut self.current));
                            let closed = matches!(action.kind, ActionKind::Close(_));
                            return self.end(socket, closed);
                        }
                    }
                }
                State::Ended => return Drive::Done(std::mem::take(&mut self.outcomes)),
            }
        }
    }

    /// The upgrade did what it asked: 200, as a record's success reads it (101 would
    /// read as a failure in every report); the first action begins.
    fn opened(&mut self, job: &SessionJob, socket: Socket, actions: &[Action]) {
        self.current.status = 200;
        self.current.end_ns = job.clock.now_ns();
        self.outcomes.push(std::mem::take(&mut self.current));
        self.action = usize::MAX;
        self.next_action(job, Box::new(socket), actions);
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

    /// The session ends; one its actions did not close leaves as a client should,
    /// without waiting.
    fn end(&mut self, mut socket: Box<Socket>, closed: bool) -> Drive {
        if !closed {
            let _ = socket.close(None);
            let _ = socket.flush();
        }
        Drive::Done(std::mem::take(&mut self.outcomes))
    }

    fn act(&mut self, job: &SessionJob, socket: &mut Socket, action: &Action) -> Progress {
        let started_ns = self.current.started_ns;
        let timeout_ns = started_ns.saturating_add(job.timeout_ns);
        match (self.act, &action.kind) {
            (Act::Begin, ActionKind::Send(_)) => {
                let bytes = job.sends.get(self.sends).cloned().unwrap_or_default();
                self.sends += 1;
                self.current.bytes_out = bytes.len() as u64;
                let message = match String::from_utf8(bytes) {
                    Ok(text) => Message::text(text),
                    Err(e) => Message::binary(e.into_bytes()),
                };
                // A write that would block has queued the message: the flush sends it.
                queued(socket.write(message))?;
                self.act = Act::Flush {
                    deadline_ns: timeout_ns,
                };
                self.act(job, socket, action)
            }
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
                if job.stop.is_aborting() || job.clock.now_ns() >= deadline_ns {
                    return Ok(None);
                }
                match next_message(socket)? {
                    Some(message) => self.current.bytes_in += message.len() as u64,
                    None => return Ok(Some(deadline_ns)),
                }
            },
            (Act::Close { deadline_ns }, _) => loop {
                match socket.read() {
                    Ok(_) => {}
                    Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(None),
                    Err(Error::Io(e)) if super::would_block(&e) => {
                        return super::wait_until(job, deadline_ns, || {
                            (
                                ErrorKind::Timeout,
                                "no close frame answered ours within the timeout".to_owned(),
                            )
                        })
                        .map(Some);
                    }
                    Err(e) => return Err(failure(&e)),
                }
            },
            (Act::Expect { .. }, _) => Ok(None),
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
            let Some(message) = next_message(socket)? else {
                return Ok(Some(deadline_ns));
            };
            let body = message.into_data();
            self.current.bytes_in += body.len() as u64;
            let answer = Answer {
                status: 200,
                body: &body,
                body_bytes: body.len() as u64,
                latency_ns: job.clock.now_ns().saturating_sub(self.current.started_ns),
                ..Answer::default()
            };
            if check.passes(&answer, &mut text) {
                self.current.matched = Some((self.action, body.to_vec()));
                return Ok(None);
            }
        }
    }
}

/// The socket over the upgraded connection, once the answer is a `101` with the
/// accept our key asks for.
fn upgraded(
    job: &SessionJob,
    wire: Wire,
    head: Head,
    outcome: &mut Outcome,
) -> Result<Socket, Failure> {
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
    let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES);
    Ok(WebSocket::from_partially_read(
        wire,
        head.rest,
        Role::Client,
        Some(config),
    ))
}

/// A write that queued its frame (the socket would block) counts as done.
fn queued(written: Result<(), Error>) -> Result<(), Failure> {
    match written {
        Err(Error::Io(e)) if super::would_block(&e) => Ok(()),
        other => other.map_err(|e| failure(&e)),
    }
}

/// The next data message (pings are answered on the way), `None` when none is there
/// to read yet; a close from the server is an error.
fn next_message(socket: &mut Socket) -> Result<Option<Message>, Failure> {
    loop {
        match socket.read() {
            Ok(message @ (Message::Text(_) | Message::Binary(_))) => return Ok(Some(message)),
            Ok(Message::Close(frame)) => {
                let (code, reason) = frame.map_or((1005, String::new()), |f| {
                    (u16::from(f.code), f.reason.to_string())
                });
                return Err((
                    ErrorKind::Closed,
                    format!("the server closed the websocket: code {code} {reason:?}"),
                ));
            }
            Ok(_) => {}
            Err(Error::Io(e)) if super::would_block(&e) => return Ok(None),
            Err(e) => return Err(failure(&e)),
        }
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
