//! Sessions: flow steps that hold a connection open (a WebSocket's actions, a
//! server-sent event stream; docs/STREAMING.md). The worker renders the step for its
//! user (the same templates, header rules and cookies as a request step) and hands it
//! to its session loop; the session hands back one [`Outcome`] per record when it
//! ends, and the loop wakes the worker through an eventfd.
//!
//! Why a loop of its own and not the worker's: a session lives for seconds or hours,
//! waits on its own deadlines (an `expect`'s `within`, a `hold`) and speaks frames, not
//! answers; the worker's slots, timeouts and watermarks are built around one request,
//! one answer. Each session is a non-blocking state machine ([`Session::drive`]) on
//! the loop's epoll, so a held connection costs a socket and a few hundred bytes of
//! state, not a thread and its stack.
//!
//! - `event_loop.rs`: the loop thread (epoll, deadlines, jobs in, outcomes out);
//! - `ws.rs`: the upgrade and the actions (what we send framed by `tungstenite`);
//! - `ws_read.rs`: the server's frames read, and permessage-deflate both ways;
//! - `sse.rs`: a `text/event-stream` answer read event by event.

mod event_loop;
mod sse;
mod ws;
mod ws_read;

use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Duration;

use record::ErrorKind;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use workload::Flow;

use crate::arrival::{Arrival, arrived_ns};
use crate::clock::Clock;
use crate::hosts::Address;
use crate::stop_handle::StopHandle;
use crate::stream_tally::StreamTally;

pub(crate) use event_loop::Runner;

/// Bytes of a refusing answer's body quoted in its error.
const QUOTED_BODY_BYTES: usize = 200;
/// The longest answer head read.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How often the loop looks whether the run is stopping while no session's deadline
/// is due.
const STOP_LOOK_NS: u64 = 100_000_000;

/// One stream step of one user, rendered and ready to run.
pub(crate) struct SessionJob {
    pub attack: u16,
    pub user: u32,
    /// The `seq` of the upgrade's (stream request's) record.
    pub seq: u64,
    pub step: usize,
    pub flow: Arc<Flow>,
    /// The upgrade or stream request's bytes.
    pub request: Vec<u8>,
    /// A WebSocket's `Sec-WebSocket-Key` (its answer must carry the matching accept).
    pub key: String,
    /// Each `send` action's message, rendered for the user, in order.
    pub sends: Vec<Send>,
    pub address: Address,
    /// The run's `-local-addr`, the source address of the connection.
    pub local_ip: Option<IpAddr>,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The scenario's timeout: connect, the answer's head, an `expect` without
    /// `within`, the gap between two events.
    pub timeout_ns: u64,
    pub intended_ns: u64,
    pub clock: Clock,
    pub stop: StopHandle,
    /// The worker's per-second stream figures, bumped as the session goes.
    pub tally: Arc<StreamTally>,
}

/// A `send` action's message, rendered for its user.
#[derive(Debug, Clone, Default)]
pub(crate) struct Send {
    pub bytes: Vec<u8>,
    /// Where its send time goes ([`SEND_TIME_DIGITS`] digits of unix ns), if it has one.
    pub stamp: Option<usize>,
}

/// Digits of a send time written into a message: unix nanoseconds, zero-padded (19
/// digits hold them until the year 2286), so the message's shape never depends on it.
pub(crate) const SEND_TIME_DIGITS: usize = 19;

impl Send {
    /// The message, its send time `unix_ns` written in.
    pub(crate) fn stamped(&self, unix_ns: u64) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        let digits = format!("{unix_ns:0width$}", width = SEND_TIME_DIGITS);
        let place = (self.stamp).and_then(|at| bytes.get_mut(at..at + SEND_TIME_DIGITS));
        if let Some(place) = place
            && digits.len() == SEND_TIME_DIGITS
        {
            place.copy_from_slice(digits.as_bytes());
        }
        bytes
    }
}

/// One record's worth of a session: the connect, an action, an event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// The target within its attack (the step's own, or an action's or events').
    pub target_index: u32,
    pub intended_ns: u64,
    pub started_ns: u64,
    pub end_ns: u64,
    /// When the first byte of the answer came (the connect's), 0 when none did.
    pub first_byte_ns: u64,
    /// 200 when it did what it asked; a refusing answer's status; 0 otherwise.
    pub status: u16,
    pub failure: Option<(ErrorKind, String)>,
    pub checks_failed: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The message an `expect` matched (for its extractions), and the action.
    pub matched: Option<(usize, Vec<u8>)>,
}

/// A session that ended: its user, its records and, when its connection opened, the
/// connection's merged figures.
pub(crate) struct SessionDone {
    pub attack: u16,
    pub user: u32,
    /// The `seq` of its first record (the upgrade's, the stream request's).
    pub seq: u64,
    pub intended_ns: u64,
    pub outcomes: Vec<Outcome>,
    pub held: Option<Held>,
}

/// What a connection that opened did, merged over its messages (docs/STREAMING.md,
/// "Records"): the worker stamps the record ids and turns the run's clock into unix
/// times. Its times here are on the run's clock.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub opened_ns: u64,
    pub closed_ns: u64,
    /// The counts, latencies and close; ids and times are the worker's to fill.
    pub figures: record::Connection,
    /// The worker's per-second figures, bumped beside the connection's own.
    tally: Arc<StreamTally>,
    closed: bool,
}

impl Held {
    /// A connection that opened now.
    pub(crate) fn opened(now_ns: u64, tally: &Arc<StreamTally>) -> Held {
        tally.opened();
        Held {
            opened_ns: now_ns,
            closed_ns: 0,
            figures: record::Connection::default(),
            tally: Arc::clone(tally),
            closed: false,
        }
    }

    /// It closed now, `by` whom and with `code` (0: none); counted once.
    pub(crate) fn close(&mut self, now_ns: u64, by: record::ClosedBy, code: u16) {
        if !self.closed {
            self.tally.closed();
            self.closed = true;
        }
        self.closed_ns = now_ns;
        self.figures.close = record::Close { by, code };
    }

    /// A message went out.
    pub(crate) fn sent(&mut self, bytes: u64) {
        self.figures.messages_out += 1;
        self.figures.bytes_out += bytes;
        self.tally.sent(1, bytes);
    }

    /// A message (an event) came in.
    pub(crate) fn received(&mut self, bytes: u64) {
        self.figures.messages_in += 1;
        self.figures.bytes_in += bytes;
        self.tally.received(1, bytes);
    }

    /// A message latency was timed (a round trip, a gap between events).
    pub(crate) fn timed(&mut self, latency_ns: u64) {
        self.figures.latency.add(latency_ns);
        self.tally.timed(latency_ns);
    }
}

/// Where sessions report back to their worker.
#[derive(Clone)]
pub(crate) struct Reply {
    pub done: Sender<SessionDone>,
    pub waker: Arc<OwnedFd>,
}

/// What a session waits for after [`Session::drive`].
pub(crate) enum Drive {
    /// Readiness of its socket, or this time (`u64::MAX`: none), whichever first.
    Wait(u64),
    /// It ended with these records.
    Done(Vec<Outcome>),
}

/// A failure: its kind and text.
pub(crate) type Failure = (ErrorKind, String);

/// A running session: the job and its state machine.
pub(crate) struct Session {
    job: SessionJob,
    machine: Machine,
}

enum Machine {
    Ws(Box<ws::Ws>),
    Sse(Box<sse::Sse>),
}

impl Session {
    /// Starts `job`: its connect is under way (or failed, said at the first drive).
    pub(crate) fn start(job: SessionJob) -> Option<Session> {
        let machine = match job.flow.steps[job.step].stream {
            Some(workload::Stream::WebSocket(_)) => Machine::Ws(Box::new(ws::Ws::start(&job))),
            Some(workload::Stream::Events(events)) => {
                Machine::Sse(Box::new(sse::Sse::start(&job, events)))
            }
            None => return None,
        };
        Some(Session { job, machine })
    }

    /// Runs the session as far as it goes without blocking.
    pub(crate) fn drive(&mut self) -> Drive {
        match &mut self.machine {
            Machine::Ws(ws) => ws.drive(&self.job),
            Machine::Sse(sse) => sse.drive(&self.job),
        }
    }

    /// The poller saw its socket ready: a read that found it drained may read again.
    pub(crate) fn readable(&mut self) {
        if let Machine::Ws(ws) = &mut self.machine {
            ws.readable();
        }
    }

    /// Its socket, to register once with the loop's epoll.
    pub(crate) fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.machine {
            Machine::Ws(ws) => ws.fd(),
            Machine::Sse(sse) => sse.fd(),
        }
    }

    pub(crate) fn job(&self) -> &SessionJob {
        &self.job
    }

    /// Whether the session made a new socket since the last call (a reconnect),
    /// which the loop must watch.
    pub(crate) fn take_new_socket(&mut self) -> bool {
        match &mut self.machine {
            Machine::Ws(_) => false,
            Machine::Sse(sse) => std::mem::take(&mut sse.new_socket),
        }
    }

    /// The connection's figures, once the session is done, if it opened.
    pub(crate) fn take_held(&mut self) -> Option<Held> {
        match &mut self.machine {
            Machine::Ws(ws) => ws.held.take(),
            Machine::Sse(sse) => sse.take_held(),
        }
    }
}

/// A connection, over TLS or not, non-blocking.
pub(crate) enum Wire {
    Plain(StampedTcp),
    Tls(Box<StreamOwned<ClientConnection, StampedTcp>>),
    /// `-unix-socket`: plain only.
    Unix(UnixStream),
}

/// A TCP stream that keeps when its last read's bytes reached this host (TLS reads
/// through it too), so what a late drive reads is timed by its arrival.
pub(crate) struct StampedTcp {
    tcp: TcpStream,
    /// The control buffer is this connection's, made once.
    arrival: Arrival,
}

impl StampedTcp {
    fn new(tcp: TcpStream) -> StampedTcp {
        let mut arrival = Arrival::default();
        arrival.enable(&tcp);
        StampedTcp { tcp, arrival }
    }
}

impl Read for StampedTcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arrival.read(&self.tcp, buf)
    }
}

impl Write for StampedTcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

impl Wire {
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Wire::Plain(plain) => plain.tcp.as_fd(),
            Wire::Tls(tls) => tls.get_ref().tcp.as_fd(),
            Wire::Unix(unix) => unix.as_fd(),
        }
    }

    /// When the bytes of the last read reached this host, on the run's clock at
    /// `now_ns`: the kernel's stamp, no later than now nor earlier than
    /// `not_before_ns` (what the time is measured from); now without a stamp.
    pub(crate) fn arrived_ns(&self, now_ns: u64, not_before_ns: u64) -> u64 {
        let age_ns = match self {
            Wire::Plain(plain) => plain.arrival.age_ns(),
            Wire::Tls(tls) => tls.get_ref().arrival.age_ns(),
            Wire::Unix(_) => 0,
        };
        arrived_ns(age_ns, now_ns, not_before_ns)
    }

    /// Whether it is a plain socket, whose short read means the kernel had no more.
    pub(crate) fn is_plain(&self) -> bool {
        matches!(self, Wire::Plain(_) | Wire::Unix(_))
    }

    /// A connect in progress is done (`Ok(true)`), still going, or failed.
    fn connected(&self) -> io::Result<bool> {
        let (error, peer) = match self {
            Wire::Plain(plain) => (plain.tcp.take_error(), plain.tcp.peer_addr().map(drop)),
            Wire::Unix(unix) => (unix.take_error(), unix.peer_addr().map(drop)),
            Wire::Tls(_) => return Ok(true),
        };
        if let Ok(Some(e)) | Err(e) = error {
            return Err(e);
        }
        match peer {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(plain) => plain.read(buf),
            Wire::Tls(tls) => tls.read(buf),
            Wire::Unix(unix) => unix.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(plain) => plain.write(buf),
            Wire::Tls(tls) => tls.write(buf),
            Wire::Unix(unix) => unix.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Wire::Plain(plain) => plain.flush(),
            Wire::Tls(tls) => tls.flush(),
            Wire::Unix(unix) => unix.flush(),
        }
    }
}

/// The connect, the request and its answer's head, one non-blocking step at a time.
pub(crate) struct Ask {
    /// When it started (a reconnect's own start).
    pub started_ns: u64,
    /// The request, when it is not the job's (a reconnect's, with `Last-Event-ID`).
    request: Option<Vec<u8>>,
    wire: Option<Wire>,
    connected: bool,
    written: usize,
    flushed: bool,
    buffer: Vec<u8>,
    first_byte_ns: u64,
}

impl Ask {
    /// Starts connecting to the job's address.
    pub(crate) fn start(job: &SessionJob) -> Result<Ask, Failure> {
        Ask::connect_for(job, None)
    }

    /// Starts connecting to send `request` instead of the job's.
    pub(crate) fn start_with(job: &SessionJob, request: Vec<u8>) -> Result<Ask, Failure> {
        Ask::connect_for(job, Some(request))
    }

    fn connect_for(job: &SessionJob, request: Option<Vec<u8>>) -> Result<Ask, Failure> {
        let socket = crate::conn::start_connect(&job.address, job.local_ip)
            .map_err(|e| (ErrorKind::Connect, io_text("connect", &e)))?;
        let wire = match job.address {
            Address::Tcp(_) => Wire::Plain(StampedTcp::new(socket.into())),
            Address::Unix(_) => Wire::Unix(socket.into()),
        };
        Ok(Ask {
            started_ns: job.clock.now_ns(),
            request,
            wire: Some(wire),
            connected: false,
            written: 0,
            flushed: false,
            buffer: Vec::new(),
            first_byte_ns: 0,
        })
    }

    pub(crate) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.wire.as_ref().map(Wire::fd)
    }

    /// Goes on connecting, sending the job's request and reading its answer's head,
    /// by the session's timeout from `outcome.started_ns`; `outcome` (the connect's
    /// record) counts the bytes and the first byte's time. `Ok(None)`: wait.
    pub(crate) fn poll(
        &mut self,
        job: &SessionJob,
        outcome: &mut Outcome,
    ) -> Result<Option<(Wire, Head)>, Failure> {
        let deadline_ns = outcome.started_ns.saturating_add(job.timeout_ns);
        let late = || job.stop.is_aborting() || job.clock.now_ns() >= deadline_ns;
        if !self.connected && !self.connect(job)? {
            return if late() {
                Err((
                    ErrorKind::ConnectTimeout,
                    "connect: connection timed out".to_owned(),
                ))
            } else {
                Ok(None)
            };
        }
        if !self.send(job, outcome)? || !self.read_head(job)? {
            return if late() {
                Err((
                    ErrorKind::Timeout,
                    "timeout awaiting response headers".to_owned(),
                ))
            } else {
                Ok(None)
            };
        }
        let end = self.buffer.windows(4).position(|w| w == b"\r\n\r\n");
        let end = end.map_or(self.buffer.len(), |end| end + 4);
        let mut head = parse_head(&self.buffer[..end])?;
        head.rest = self.buffer[end..].to_vec();
        head.bytes = self.buffer.len() as u64;
        head.first_byte_ns = self.first_byte_ns;
        outcome.first_byte_ns = head.first_byte_ns;
        outcome.bytes_in = head.bytes;
        let wire = self.wire.take().ok_or((ErrorKind::Io, String::new()))?;
        // The read that completed the head was the last.
        head.arrived_ns = wire.arrived_ns(job.clock.now_ns(), self.first_byte_ns);
        Ok(Some((wire, head)))
    }

    /// Whether the connect is done (then TLS wraps the socket if asked).
    fn connect(&mut self, job: &SessionJob) -> Result<bool, Failure> {
        let Some(wire) = self.wire.take() else {
            return Err((ErrorKind::Io, "connect: no socket".to_owned()));
        };
        match wire.connected() {
            Ok(true) => {}
            Ok(false) => {
                self.wire = Some(wire);
                return Ok(false);
            }
            Err(e) => return Err((ErrorKind::Connect, io_text("connect", &e))),
        }
        self.connected = true;
        self.wire = Some(match (&job.tls, wire) {
            (Some((config, name)), Wire::Plain(plain)) => {
                let client = ClientConnection::new(Arc::clone(config), name.clone())
                    .map_err(|e| (ErrorKind::Tls, format!("tls: {e}")))?;
                Wire::Tls(Box::new(StreamOwned::new(client, plain)))
            }
            (Some(_), Wire::Unix(_)) => {
                return Err((
                    ErrorKind::Tls,
                    "tls: ws and sse steps do not speak TLS over a unix socket".to_owned(),
                ));
            }
            (_, wire) => wire,
        });
        Ok(true)
    }

    /// Whether the whole request went out.
    fn send(&mut self, job: &SessionJob, outcome: &mut Outcome) -> Result<bool, Failure> {
        let Some(wire) = self.wire.as_mut() else {
            return Ok(false);
        };
        let request = self.request.as_deref().unwrap_or(&job.request);
        while self.written < request.len() {
            match wire.write(&request[self.written..]) {
                Ok(written) => self.written += written,
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err((ErrorKind::Io, io_text("write", &e))),
            }
        }
        if !self.flushed {
            match wire.flush() {
                Ok(()) => self.flushed = true,
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err((ErrorKind::Io, io_text("write", &e))),
            }
            outcome.bytes_out = request.len() as u64;
        }
        Ok(true)
    }

    /// Whether the answer's head is in.
    fn read_head(&mut self, job: &SessionJob) -> Result<bool, Failure> {
        let Some(wire) = self.wire.as_mut() else {
            return Ok(false);
        };
        let mut chunk = [0u8; 4096];
        loop {
            if self.buffer.windows(4).any(|w| w == b"\r\n\r\n") {
                return Ok(true);
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err((
                    ErrorKind::Protocol,
                    format!("the answer's head is over {MAX_HEAD_BYTES} bytes"),
                ));
            }
            match wire.read(&mut chunk) {
                Ok(0) => {
                    return Err((
                        ErrorKind::Closed,
                        "the server closed the connection before answering".to_owned(),
                    ));
                }
                Ok(read) => {
                    if self.first_byte_ns == 0 {
                        self.first_byte_ns = wire.arrived_ns(job.clock.now_ns(), self.started_ns);
                    }
                    self.buffer.extend_from_slice(&chunk[..read]);
                }
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(io_failure(&e)),
            }
        }
    }
}

/// The wait of a session blocked until `deadline_ns`, or the failure `late` when
/// that time passed (or the run is stopping at once).
pub(crate) fn wait_until(
    job: &SessionJob,
    deadline_ns: u64,
    late: impl FnOnce() -> Failure,
) -> Result<u64, Failure> {
    if job.stop.is_aborting() || job.clock.now_ns() >= deadline_ns {
        Err(late())
    } else {
        Ok(deadline_ns)
    }
}
/// An answer's head, and the bytes read past it.
pub(crate) struct Head {
    pub status: u16,
    /// The status line, for an error text.
    pub status_line: String,
    pub content_type: Option<String>,
    pub chunked: bool,
    /// The body's length, when `Content-Length` said (a chunked body's is ignored).
    pub content_length: Option<u64>,
    pub accept: Option<String>,
    /// The subprotocol a WebSocket server chose (`Sec-WebSocket-Protocol`).
    pub protocol: Option<String>,
    /// The extensions a WebSocket server agreed to (`Sec-WebSocket-Extensions`).
    pub extensions: Option<String>,
    pub rest: Vec<u8>,
    pub bytes: u64,
    pub first_byte_ns: u64,
    /// When its last bytes (and those of `rest`) reached this host.
    pub arrived_ns: u64,
}

fn parse_head(bytes: &[u8]) -> Result<Head, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    response
        .parse(bytes)
        .map_err(|e| (ErrorKind::Protocol, format!("malformed HTTP answer: {e}")))?;
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_owned())
    };
    let status = response.code.unwrap_or(0);
    Ok(Head {
        status,
        status_line: format!("{status} {}", response.reason.unwrap_or_default()),
        content_type: header("content-type"),
        chunked: header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked")),
        content_length: header("content-length").and_then(|v| v.parse().ok()),
        accept: header("sec-websocket-accept"),
        protocol: header("sec-websocket-protocol"),
        extensions: header("sec-websocket-extensions"),
        rest: Vec::new(),
        bytes: 0,
        first_byte_ns: 0,
        arrived_ns: 0,
    })
}

/// The error of an answer that is not the one asked for: its status line and the
/// start of its body, quoted.
pub(crate) fn refused(what: &str, head: &Head) -> Failure {
    let body = &head.rest[..head.rest.len().min(QUOTED_BODY_BYTES)];
    let body = String::from_utf8_lossy(body);
    let body = body.trim();
    let text = if body.is_empty() {
        format!("{what} refused: {}", head.status_line)
    } else {
        format!("{what} refused: {}: {body:?}", head.status_line)
    };
    (ErrorKind::Status, text)
}

/// Whether a non-blocking read or write has to wait for readiness.
pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

pub(crate) fn io_failure(e: &io::Error) -> Failure {
    let kind = match e.kind() {
        io::ErrorKind::ConnectionReset => ErrorKind::Reset,
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionAborted => ErrorKind::Closed,
        _ => ErrorKind::Io,
    };
    (kind, io_text("read", e))
}

/// `operation: what failed`, spelled as the engine's own transport errors are
/// (lowercase, without the errno), so equal causes read alike in the error set.
fn io_text(operation: &str, e: &io::Error) -> String {
    let message = e.to_string();
    let message = message.split(" (os error").next().unwrap_or(&message);
    format!("{operation}: {}", message.to_ascii_lowercase())
}

/// How long `ns` is, as a user writes it (`1s`, `250ms`).
pub(crate) fn spelled(ns: u64) -> String {
    units::GoDuration(Duration::from_nanos(ns)).to_string()
}

/// What the session tests share: a job for one step, and a drive that reads late.
#[cfg(test)]
pub(super) mod testing {
    use super::*;

    /// A job running `step` (its only step) against `address`, asking with `request`
    /// (a WebSocket's `key`) and sending `sends` in turn.
    pub(in crate::session) fn job(
        step: workload::StepFields,
        address: Address,
        (request, key): (&str, &str),
        sends: &[&str],
    ) -> SessionJob {
        let origin = workload::Origin::scenario("f.toml", 1, "f", std::path::Path::new("."));
        let flow = Flow::compile(
            &[step],
            workload::FlowOptions::default(),
            &[],
            &origin,
            &|_| Ok(Vec::new()),
        );
        let clock = Clock::start();
        SessionJob {
            attack: 0,
            user: 0,
            seq: 0,
            step: 0,
            flow: Arc::new(flow.unwrap()),
            request: request.as_bytes().to_vec(),
            key: key.to_owned(),
            sends: (sends.iter())
                .map(|text| Send {
                    bytes: text.as_bytes().to_vec(),
                    stamp: None,
                })
                .collect(),
            address,
            local_ip: None,
            tls: None,
            timeout_ns: 5_000_000_000,
            intended_ns: clock.now_ns(),
            clock,
            stop: StopHandle::new(),
            tally: Arc::default(),
        }
    }

    /// A socket that asks for receive stamps, kept while a test runs: the kernel
    /// turns stamping on a moment after the first socket asks, and off when none is
    /// left, and a test's own socket must not be the first.
    pub(in crate::session) fn stamping_on() -> std::net::UdpSocket {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        Arrival::default().enable(&socket);
        std::thread::sleep(Duration::from_millis(50));
        socket
    }

    /// Runs `job` to its end as a loop under a budget reads: every wait lasts
    /// `late`, whatever came meanwhile. Its records and connection.
    pub(in crate::session) fn run_late(
        job: SessionJob,
        late: Duration,
    ) -> (Vec<Outcome>, Option<Held>) {
        let mut session = Session::start(job).unwrap();
        for _ in 0..200 {
            match session.drive() {
                Drive::Done(outcomes) => return (outcomes, session.take_held()),
                Drive::Wait(_) => {
                    std::thread::sleep(late);
                    session.readable();
                }
            }
        }
        panic!("the session did not end");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_time_fills_its_place_and_nothing_else() {
        // (message, its send time's place, the time, the message sent)
        type Row<'a> = (&'a [u8], Option<usize>, u64, &'a [u8]);
        let rows: &[Row<'_>] = &[
            (
                b"{\"t\": 0000000000000000000}",
                Some(6),
                42,
                b"{\"t\": 0000000000000000042}",
            ),
            (
                b"0000000000000000000",
                Some(0),
                1_700_000_000_123_456_789,
                b"1700000000123456789",
            ),
            (b"plain", None, 42, b"plain"),
            // A place past the end (never made so) is left alone, not a panic.
            (b"short", Some(3), 42, b"short"),
            // Past the year 2286 the time no longer fits: left as zeros.
            (
                b"0000000000000000000",
                Some(0),
                u64::MAX,
                b"0000000000000000000",
            ),
        ];
        for (bytes, stamp, unix_ns, want) in rows {
            let send = Send {
                bytes: bytes.to_vec(),
                stamp: *stamp,
            };
            assert_eq!(send.stamped(*unix_ns), *want, "{bytes:?}");
        }
    }
}
