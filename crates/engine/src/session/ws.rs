//! A WebSocket session: the upgrade (our rendered request, its answer checked against
//! the key), then the step's actions in order, each timed into an [`Outcome`]. The
//! first action that fails ends the session; the ones after it are not run.

use std::net::TcpStream;

use record::ErrorKind;
use tungstenite::error::ProtocolError;
use tungstenite::protocol::frame::CloseFrame;
use tungstenite::protocol::{Role, WebSocket};
use tungstenite::{Error, Message};
use workload::{Action, ActionKind, Answer, Stream};

use super::{
    Connection, Failure, Outcome, ReadWrite, SessionJob, io_failure, read_until, refused, spelled,
    timed_out,
};

type Socket = WebSocket<Box<dyn ReadWrite>>;

/// The socket under the WebSocket, for its read timeouts.
struct Session<'a> {
    ws: Socket,
    tcp: TcpStream,
    job: &'a SessionJob,
}

pub(super) fn run(job: &SessionJob) -> Vec<Outcome> {
    let Some(Stream::WebSocket(actions)) = &job.flow.steps[job.step].stream else {
        return Vec::new();
    };
    let clock = job.clock;
    let mut outcomes = Vec::with_capacity(actions.len() + 1);
    let mut connect = Outcome {
        target_index: job.step as u32,
        intended_ns: job.intended_ns,
        started_ns: clock.now_ns(),
        ..Outcome::default()
    };
    let upgraded = upgrade(job, &mut connect);
    connect.end_ns = clock.now_ns();
    let mut session = match upgraded {
        Ok(session) => session,
        Err(failure) => {
            connect.failure = Some(failure);
            outcomes.push(connect);
            return outcomes;
        }
    };
    // The upgrade did what it asked: 200, as a record's success reads it (101 would
    // read as a failure in every report).
    connect.status = 200;
    outcomes.push(connect);
    let mut sends = job.sends.iter();
    let mut closed = false;
    for (index, action) in actions.iter().enumerate() {
        let started_ns = clock.now_ns();
        let mut outcome = Outcome {
            target_index: action.target as u32,
            intended_ns: started_ns,
            started_ns,
            status: 200,
            ..Outcome::default()
        };
        let done = session.act(index, action, &mut sends, &mut outcome);
        outcome.end_ns = clock.now_ns();
        closed |= matches!(action.kind, ActionKind::Close(_));
        let failed = done.is_err();
        if let Err(failure) = done {
            outcome.status = 0;
            outcome.failure = Some(failure);
        }
        outcomes.push(outcome);
        if failed || closed || job.stop.is_aborting() {
            break;
        }
    }
    if !closed {
        // The step's actions are done: leave as a client should, without waiting.
        let _ = session.ws.close(None);
        let _ = session.ws.flush();
    }
    outcomes
}

fn upgrade<'a>(job: &'a SessionJob, outcome: &mut Outcome) -> Result<Session<'a>, Failure> {
    let (connection, head) = Connection::ask(job, outcome)?;
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
    let Connection { tcp, io } = connection;
    Ok(Session {
        ws: WebSocket::from_partially_read(io, head.rest, Role::Client, None),
        tcp,
        job,
    })
}

impl Session<'_> {
    fn act<'s>(
        &mut self,
        index: usize,
        action: &Action,
        sends: &mut impl Iterator<Item = &'s Vec<u8>>,
        outcome: &mut Outcome,
    ) -> Result<(), Failure> {
        let job = self.job;
        match &action.kind {
            ActionKind::Send(_) => {
                let bytes = sends.next().cloned().unwrap_or_default();
                outcome.bytes_out = bytes.len() as u64;
                let message = match String::from_utf8(bytes) {
                    Ok(text) => Message::text(text),
                    Err(e) => Message::binary(e.into_bytes()),
                };
                self.ws.send(message).map_err(|e| failure(&e))
            }
            ActionKind::Expect { check, within_ns } => {
                let within_ns = within_ns.unwrap_or(job.timeout_ns);
                let deadline_ns = outcome.started_ns.saturating_add(within_ns);
                let mut text = Vec::new();
                while let Some(message) = self.next_message(deadline_ns)? {
                    let body = message.into_data();
                    outcome.bytes_in += body.len() as u64;
                    let answer = Answer {
                        status: 200,
                        body: &body,
                        body_bytes: body.len() as u64,
                        latency_ns: job.clock.now_ns().saturating_sub(outcome.started_ns),
                        ..Answer::default()
                    };
                    if check.passes(&answer, &mut text) {
                        outcome.matched = Some((index, body.to_vec()));
                        return Ok(());
                    }
                }
                outcome.checks_failed = 1;
                Err((
                    ErrorKind::Timeout,
                    format!(
                        "no message passed {:?} within {}",
                        check.name,
                        spelled(within_ns)
                    ),
                ))
            }
            ActionKind::HoldNs(hold_ns) => {
                let deadline_ns = outcome.started_ns.saturating_add(*hold_ns);
                while let Some(message) = self.next_message(deadline_ns)? {
                    outcome.bytes_in += message.len() as u64;
                }
                Ok(())
            }
            ActionKind::Close(code) => self.close(*code, outcome),
        }
    }

    /// Sends a close frame and waits for the server's (the scenario's timeout).
    fn close(&mut self, code: u16, outcome: &Outcome) -> Result<(), Failure> {
        let frame = CloseFrame {
            code: code.into(),
            reason: "".into(),
        };
        self.ws.close(Some(frame)).map_err(|e| failure(&e))?;
        let deadline_ns = outcome.started_ns.saturating_add(self.job.timeout_ns);
        loop {
            if !read_until(&self.tcp, &self.job.clock, deadline_ns) {
                return Err((
                    ErrorKind::Timeout,
                    "no close frame answered ours within the timeout".to_owned(),
                ));
            }
            match self.ws.read() {
                Ok(_) => {}
                Err(Error::ConnectionClosed | Error::AlreadyClosed) => return Ok(()),
                Err(Error::Io(e)) if timed_out(&e) => {}
                Err(e) => return Err(failure(&e)),
            }
        }
    }

    /// The next data message before `deadline_ns` (pings are answered on the way),
    /// `None` when none came; a close from the server is an error.
    fn next_message(&mut self, deadline_ns: u64) -> Result<Option<Message>, Failure> {
        loop {
            if self.job.stop.is_aborting() || !read_until(&self.tcp, &self.job.clock, deadline_ns) {
                return Ok(None);
            }
            match self.ws.read() {
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
                Err(Error::Io(e)) if timed_out(&e) => {}
                Err(e) => return Err(failure(&e)),
            }
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
