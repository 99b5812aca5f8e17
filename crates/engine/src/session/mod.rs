//! Sessions: flow steps that hold a connection open (a WebSocket's actions, a
//! server-sent event stream; docs/STREAMING.md). The worker renders the step for its
//! user (the same templates, header rules and cookies as a request step) and hands it
//! here; each session runs on a thread of its own with blocking sockets and hands back
//! one [`Outcome`] per record, then wakes its worker through an eventfd.
//!
//! Why not the worker's own loop: a session lives for seconds, waits on its own
//! deadlines (an `expect`'s `within`, a `hold`) and speaks frames, not answers; the
//! loop's slots, timeouts and watermarks are built around one request, one answer. A
//! thread per session is the first working slice; holding tens of thousands of idle
//! connections cheaply needs them in the loop (docs/STREAMING.md says what is missing).
//!
//! - `ws.rs`: the upgrade and the actions (RFC 6455 framing by `tungstenite`);
//! - `sse.rs`: a `text/event-stream` answer read event by event.

mod sse;
mod ws;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Duration;

use record::ErrorKind;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use workload::Flow;

use crate::clock::Clock;
use crate::stop_handle::StopHandle;

/// Bytes of a refusing answer's body quoted in its error.
const QUOTED_BODY_BYTES: usize = 200;
/// The longest answer head read.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How often a session waiting on a deadline looks whether the run is stopping.
const STOP_LOOK_NS: u64 = 100_000_000;

/// One stream step of one user, rendered and ready to run.
pub(crate) struct SessionJob {
    pub attack: u16,
    pub user: u32,
    pub step: usize,
    pub flow: Arc<Flow>,
    /// The upgrade or stream request's bytes.
    pub request: Vec<u8>,
    /// A WebSocket's `Sec-WebSocket-Key` (its answer must carry the matching accept).
    pub key: String,
    /// Each `send` action's message, rendered for the user, in order.
    pub sends: Vec<Vec<u8>>,
    pub address: SocketAddr,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The scenario's timeout: connect, the answer's head, an `expect` without
    /// `within`, the gap between two events.
    pub timeout_ns: u64,
    pub intended_ns: u64,
    pub clock: Clock,
    pub stop: StopHandle,
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

/// A session that ended: its user and its records.
pub(crate) struct SessionDone {
    pub attack: u16,
    pub user: u32,
    pub intended_ns: u64,
    pub outcomes: Vec<Outcome>,
}

/// Where sessions report back to their worker.
#[derive(Clone)]
pub(crate) struct Reply {
    pub done: Sender<SessionDone>,
    pub waker: Arc<OwnedFd>,
}

/// Starts `job` on a thread of its own; it reports to `reply` when it ends.
pub(crate) fn spawn(job: SessionJob, reply: Reply) -> io::Result<()> {
    std::thread::Builder::new()
        .name("loadlab-session".to_owned())
        // Frames and events are read into heap buffers: a small stack is plenty.
        .stack_size(256 * 1024)
        .spawn(move || {
            let (attack, user, intended_ns) = (job.attack, job.user, job.intended_ns);
            let outcomes = run(&job);
            let done = SessionDone {
                attack,
                user,
                intended_ns,
                outcomes,
            };
            if reply.done.send(done).is_ok() {
                let _ = rustix::io::write(reply.waker.as_ref(), &1u64.to_ne_bytes());
            }
        })
        .map(|_| ())
}

fn run(job: &SessionJob) -> Vec<Outcome> {
    match job.flow.steps[job.step].stream {
        Some(workload::Stream::WebSocket(_)) => ws::run(job),
        Some(workload::Stream::Events(events)) => sse::run(job, events),
        None => Vec::new(),
    }
}

/// A connection, over TLS or not, with the socket kept to set its read timeouts.
pub(crate) struct Connection {
    pub tcp: TcpStream,
    pub io: Box<dyn ReadWrite>,
}

pub(crate) trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

/// A failure of the connect: its kind and text.
pub(crate) type Failure = (ErrorKind, String);

impl Connection {
    /// Connects (TCP, then TLS if asked) within the session's timeout.
    pub(crate) fn open(job: &SessionJob) -> Result<Connection, Failure> {
        let timeout = Duration::from_nanos(job.timeout_ns.max(1));
        let tcp = TcpStream::connect_timeout(&job.address, timeout).map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::TimedOut {
                ErrorKind::ConnectTimeout
            } else {
                ErrorKind::Connect
            };
            (kind, io_text("connect", &e))
        })?;
        let _ = tcp.set_nodelay(true);
        let reader = tcp
            .try_clone()
            .map_err(|e| (ErrorKind::Io, io_text("socket", &e)))?;
        let io: Box<dyn ReadWrite> = match &job.tls {
            Some((config, name)) => {
                let client = ClientConnection::new(Arc::clone(config), name.clone())
                    .map_err(|e| (ErrorKind::Tls, format!("tls: {e}")))?;
                Box::new(StreamOwned::new(client, reader))
            }
            None => Box::new(reader),
        };
        Ok(Connection { tcp, io })
    }

    /// Connects, sends the job's request and reads its answer's head, by the
    /// session's timeout; `outcome` (the connect's record) counts the bytes and the
    /// first byte's time.
    pub(crate) fn ask(
        job: &SessionJob,
        outcome: &mut Outcome,
    ) -> Result<(Connection, Head), Failure> {
        let mut connection = Connection::open(job)?;
        connection
            .io
            .write_all(&job.request)
            .and_then(|()| connection.io.flush())
            .map_err(|e| (ErrorKind::Io, io_text("write", &e)))?;
        outcome.bytes_out = job.request.len() as u64;
        let deadline_ns = outcome.started_ns.saturating_add(job.timeout_ns);
        let head = read_head(&mut connection, job, deadline_ns)?;
        outcome.first_byte_ns = head.first_byte_ns;
        outcome.bytes_in = head.bytes;
        Ok((connection, head))
    }
}

/// Sets the next read's timeout so it ends by `deadline_ns`; false once that passed.
pub(crate) fn read_until(tcp: &TcpStream, clock: &Clock, deadline_ns: u64) -> bool {
    let left_ns = deadline_ns.saturating_sub(clock.now_ns());
    if left_ns == 0 {
        return false;
    }
    // A session looks at the stop handle at least this often.
    let wait = Duration::from_nanos(left_ns.min(STOP_LOOK_NS));
    tcp.set_read_timeout(Some(wait)).is_ok()
}

/// An answer's head, read off `connection`, and the bytes read past it.
pub(crate) struct Head {
    pub status: u16,
    /// The status line, for an error text.
    pub status_line: String,
    pub content_type: Option<String>,
    pub chunked: bool,
    pub accept: Option<String>,
    pub rest: Vec<u8>,
    pub bytes: u64,
    pub first_byte_ns: u64,
}

/// Reads an answer's head by `deadline_ns`.
fn read_head(
    connection: &mut Connection,
    job: &SessionJob,
    deadline_ns: u64,
) -> Result<Head, Failure> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut first_byte_ns = 0;
    loop {
        if job.stop.is_aborting() || !read_until(&connection.tcp, &job.clock, deadline_ns) {
            return Err((
                ErrorKind::Timeout,
                "timeout awaiting response headers".to_owned(),
            ));
        }
        match connection.io.read(&mut chunk) {
            Ok(0) => {
                return Err((
                    ErrorKind::Closed,
                    "the server closed the connection before answering".to_owned(),
                ));
            }
            Ok(read) => {
                if first_byte_ns == 0 {
                    first_byte_ns = job.clock.now_ns();
                }
                buffer.extend_from_slice(&chunk[..read]);
            }
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(io_failure(&e)),
        }
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let mut head = parse_head(&buffer[..end + 4])?;
            head.rest = buffer[end + 4..].to_vec();
            head.bytes = buffer.len() as u64;
            head.first_byte_ns = first_byte_ns;
            return Ok(head);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err((
                ErrorKind::Protocol,
                format!("the answer's head is over {MAX_HEAD_BYTES} bytes"),
            ));
        }
    }
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
        accept: header("sec-websocket-accept"),
        rest: Vec::new(),
        bytes: 0,
        first_byte_ns: 0,
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

pub(crate) fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
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
