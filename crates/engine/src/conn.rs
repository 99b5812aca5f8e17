//! [`Conn`]: one connection slot: its socket (plain or TLS), what it speaks
//! ([`Wire`]), the request it carries, and the parser for its response. A slot is
//! reused for new sockets; `generation` tells a stale readiness event from a live one.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use rustls::ClientConnection;
use socket2::{Domain, SockAddr, Socket, Type};

use crate::arrival::Arrival;
use crate::h2::Session;
use crate::hosts::Address;
use crate::response::ResponseParser;

/// Not a flow request ([`InFlight::user`]).
pub(crate) const NO_USER: u32 = u32::MAX;

/// Sentinel for "no slot" in the in-flight list links.
pub(crate) const NO_SLOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Free,
    Connecting,
    Open,
}

/// Request bytes: shared with every other request to the same target, or owned
/// (a redirect's request, rendered when it happens).
pub(crate) enum RequestBytes {
    Shared(Arc<[u8]>),
    Owned(Vec<u8>),
}

impl RequestBytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            RequestBytes::Shared(bytes) => bytes,
            RequestBytes::Owned(bytes) => bytes,
        }
    }
}

/// The request a connection is carrying.
pub(crate) struct InFlight {
    /// Index of the attack (scenario) the request belongs to.
    pub attack: u16,
    pub seq: u64,
    /// Record id of the target.
    pub target: u32,
    /// Index in the attack's fixed targets; `u32::MAX` for a lazily read target.
    pub target_index: u32,
    pub intended_ns: u64,
    /// When the worker took the request up (the record's actual send time).
    pub dispatched_ns: u64,
    /// First response byte of the current hop; 0 until one arrives.
    pub first_byte_ns: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub redirects_left: i32,
    /// The URL and method of the current hop once a redirect was followed.
    pub hop: Option<Box<Hop>>,
    /// The target itself, for lazily read targets (fixed ones are looked up by id).
    pub lazy: Option<Box<workload::Target>>,
    /// Already retried once after a kept-alive connection turned out to be closed.
    pub retried: bool,
    /// What the request went over last (what it would have, until it goes).
    pub protocol: record::Protocol,
    /// The flow user that sent it (its slot in the attack's users), or
    /// [`NO_USER`].
    pub user: u32,
    /// What of a streamed gRPC call the worker's stream tally counted already; it
    /// goes with the request when it is sent again elsewhere, so a call opens once.
    pub call_tally: CallTally,
}

/// A streamed gRPC call's share of the worker's per-second stream figures
/// (`stream_tally.rs`), counted as it goes: open from its start, its messages sent
/// as they are let go.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallTally {
    pub open: bool,
    pub messages_out: u64,
    pub bytes_out: u64,
}

impl InFlight {
    /// Whether a flow user sent it.
    pub(crate) fn is_flow(&self) -> bool {
        self.user != NO_USER
    }
}

/// Where a followed redirect went.
pub(crate) struct Hop {
    pub url: url::Url,
    pub method: String,
}

/// What a slot speaks. Every exhaustive `match` on it is in `worker/protocol.rs`, so
/// a new protocol is a new variant there and a module beside `worker/h1.rs` and
/// `worker/h2.rs`, and the compiler names each place it must answer.
pub(crate) enum Wire {
    /// An HTTP/1.1 connection, one request at a time; also what a free slot is, and a
    /// connection whose HTTP/2 session has ended (ALPN chose HTTP/1.1, or it closes).
    Http1,
    /// An HTTP/2 connection: its session (its streams are other slots), and whether
    /// it has frames queued for the next flush.
    H2Conn {
        session: Box<Session>,
        flush_queued: bool,
    },
    /// An HTTP/2 stream: a request of its own, without a socket.
    H2Stream(StreamLink),
}

/// An HTTP/2 stream's link to the connection carrying it.
pub(crate) struct StreamLink {
    /// The connection's slot and its generation then.
    pub carrier: u32,
    pub carrier_generation: u32,
    /// The stream's id (0 until sent).
    pub id: u32,
    /// The bytes its frames took on the wire.
    pub bytes_out: u64,
}

pub(crate) enum ReadOutcome {
    Data(usize),
    WouldBlock,
    Eof,
    Failed(io::Error),
    Tls(rustls::Error),
}

pub(crate) enum WriteOutcome {
    Done,
    WouldBlock,
    Failed(io::Error),
}

pub(crate) struct Conn {
    pub generation: u32,
    pub phase: Phase,
    pub host: usize,
    pub socket: Option<Socket>,
    pub tls: Option<Box<ClientConnection>>,
    /// Has completed at least one request (so a failure before any byte may be a
    /// stale keep-alive connection, worth one retry).
    pub reused: bool,
    pub request: Option<InFlight>,
    pub parser: ResponseParser,
    out: RequestBytes,
    out_written: usize,
    /// In-flight list links, ordered by dispatch time.
    pub prev: u32,
    pub next: u32,
    pub wire: Wire,
    /// TLS: the socket's last read was short, so it is drained until epoll says
    /// otherwise (edge-triggered: the next data comes with an event, which clears it).
    pub tls_drained: bool,
    /// When the socket's last read bytes reached this host.
    pub arrival: Arrival,
}

impl Conn {
    pub(crate) fn new() -> Conn {
        Conn {
            generation: 0,
            phase: Phase::Free,
            host: 0,
            socket: None,
            tls: None,
            reused: false,
            request: None,
            parser: ResponseParser::new(),
            out: RequestBytes::Owned(Vec::new()),
            out_written: 0,
            prev: NO_SLOT,
            next: NO_SLOT,
            wire: Wire::Http1,
            tls_drained: false,
            arrival: Arrival::default(),
        }
    }

    /// An HTTP/2 connection's session.
    pub(crate) fn session(&self) -> Option<&Session> {
        match &self.wire {
            Wire::H2Conn { session, .. } => Some(session),
            _ => None,
        }
    }

    pub(crate) fn session_mut(&mut self) -> Option<&mut Session> {
        match &mut self.wire {
            Wire::H2Conn { session, .. } => Some(session),
            _ => None,
        }
    }

    /// Ends an HTTP/2 connection's session (the socket speaks HTTP/1.1 or closes).
    pub(crate) fn take_session(&mut self) -> Option<Box<Session>> {
        match std::mem::replace(&mut self.wire, Wire::Http1) {
            Wire::H2Conn { session, .. } => Some(session),
            other => {
                self.wire = other;
                None
            }
        }
    }

    /// An HTTP/2 stream's link to its connection.
    pub(crate) fn stream(&self) -> Option<&StreamLink> {
        match &self.wire {
            Wire::H2Stream(link) => Some(link),
            _ => None,
        }
    }

    pub(crate) fn stream_mut(&mut self) -> Option<&mut StreamLink> {
        match &mut self.wire {
            Wire::H2Stream(link) => Some(link),
            _ => None,
        }
    }

    /// An HTTP/2 connection's session and the buffer its frames are queued in
    /// (emptied first if everything in it was written).
    pub(crate) fn session_and_frames(&mut self) -> Option<(&mut Session, &mut Vec<u8>)> {
        // A stream's `out` is its request: only a connection's may be touched.
        let Wire::H2Conn { session, .. } = &mut self.wire else {
            return None;
        };
        if !matches!(self.out, RequestBytes::Owned(_)) {
            self.out = RequestBytes::Owned(Vec::new());
            self.out_written = 0;
        }
        let RequestBytes::Owned(frames) = &mut self.out else {
            return None;
        };
        if self.out_written == frames.len() {
            frames.clear();
            self.out_written = 0;
        }
        Some((session, frames))
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.phase == Phase::Open && self.request.is_none()
    }

    pub(crate) fn set_request_bytes(&mut self, bytes: RequestBytes) {
        self.out = bytes;
        self.out_written = 0;
    }

    /// An empty buffer to render a request into: the one this connection used last,
    /// if it owned one, so templated requests stop allocating once warmed up.
    pub(crate) fn spare_buffer(&mut self) -> Vec<u8> {
        match self.take_request_bytes() {
            RequestBytes::Owned(mut buffer) => {
                buffer.clear();
                buffer
            }
            RequestBytes::Shared(_) => Vec::new(),
        }
    }

    /// Takes the request bytes back (to send them again elsewhere).
    pub(crate) fn take_request_bytes(&mut self) -> RequestBytes {
        self.out_written = 0;
        std::mem::replace(&mut self.out, RequestBytes::Owned(Vec::new()))
    }

    /// The length of the request bytes the slot holds.
    pub(crate) fn request_bytes_len(&self) -> u64 {
        self.out.as_slice().len() as u64
    }

    /// Whether exactly the last `bytes` queued are unwritten (nothing before them, no
    /// TLS record pending).
    pub(crate) fn holds_only(&self, bytes: usize) -> bool {
        self.out.as_slice().len() - self.out_written == bytes
            && !self.tls.as_ref().is_some_and(|tls| tls.wants_write())
    }

    pub(crate) fn has_unwritten(&self) -> bool {
        self.out_written < self.out.as_slice().len()
            || self.tls.as_ref().is_some_and(|tls| tls.wants_write())
    }

    /// Drops the socket (closing it also removes it from epoll), or the stream.
    pub(crate) fn reset(&mut self) {
        self.socket = None;
        self.tls = None;
        self.arrival.disable();
        self.wire = Wire::Http1;
        self.tls_drained = false;
        self.phase = Phase::Free;
        self.reused = false;
        self.generation = self.generation.wrapping_add(1);
        self.out_written = 0;
        // Nothing unsent may reach the slot's next socket (an HTTP/2 connection's
        // frames especially); an owned buffer stays for reuse.
        match &mut self.out {
            RequestBytes::Owned(buffer) => buffer.clear(),
            RequestBytes::Shared(_) => self.out = RequestBytes::Owned(Vec::new()),
        }
    }

    /// Writes as much of the request as the socket takes.
    pub(crate) fn write_some(&mut self) -> WriteOutcome {
        let Some(socket) = self.socket.as_ref() else {
            return WriteOutcome::Failed(io::Error::from(io::ErrorKind::NotConnected));
        };
        let bytes = self.out.as_slice();
        match self.tls.as_mut() {
            None => loop {
                if self.out_written == bytes.len() {
                    return WriteOutcome::Done;
                }
                match (&*socket).write(&bytes[self.out_written..]) {
                    Ok(n) => self.out_written += n,
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        return WriteOutcome::WouldBlock;
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return WriteOutcome::Failed(err),
                }
            },
            Some(tls) => {
                if self.out_written < bytes.len() {
                    // rustls buffers plaintext until the handshake is done.
                    if let Err(err) = tls.writer().write_all(&bytes[self.out_written..]) {
                        return WriteOutcome::Failed(err);
                    }
                    self.out_written = bytes.len();
                }
                flush_tls(tls, socket)
            }
        }
    }

    /// Reads the next plaintext bytes into `buf`.
    pub(crate) fn read_some(&mut self, buf: &mut [u8]) -> ReadOutcome {
        let Some(socket) = self.socket.as_ref() else {
            return ReadOutcome::Eof;
        };
        let Some(tls) = self.tls.as_mut() else {
            return loop {
                match self.arrival.read(socket, buf) {
                    Ok(0) => break ReadOutcome::Eof,
                    Ok(n) => break ReadOutcome::Data(n),
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        break ReadOutcome::WouldBlock;
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => break ReadOutcome::Failed(err),
                }
            };
        };
        read_tls(tls, socket, &mut self.arrival, &mut self.tls_drained, buf)
    }
}

fn flush_tls(tls: &mut ClientConnection, socket: &Socket) -> WriteOutcome {
    while tls.wants_write() {
        match tls.write_tls(&mut &*socket) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return WriteOutcome::WouldBlock,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return WriteOutcome::Failed(err),
        }
    }
    WriteOutcome::Done
}

/// A socket that remembers whether its last read came back short, and its stamp.
struct ShortReads<'a> {
    socket: &'a Socket,
    arrival: &'a mut Arrival,
    short: bool,
}

impl Read for ShortReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.arrival.read(self.socket, buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

/// Plaintext from `tls`, reading the socket only while it may hold more: after a
/// short read it is drained, and asking again would only cost an EAGAIN.
fn read_tls(
    tls: &mut ClientConnection,
    socket: &Socket,
    arrival: &mut Arrival,
    drained: &mut bool,
    buf: &mut [u8],
) -> ReadOutcome {
    loop {
        match tls.reader().read(buf) {
            Ok(0) => return ReadOutcome::Eof,
            Ok(n) => return ReadOutcome::Data(n),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
            // The peer closed without close_notify: an end of stream all the same.
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return ReadOutcome::Eof,
            Err(err) => return ReadOutcome::Failed(err),
        }
        if *drained {
            return ReadOutcome::WouldBlock;
        }
        let mut source = ShortReads {
            socket,
            arrival: &mut *arrival,
            short: false,
        };
        match tls.read_tls(&mut source) {
            Ok(0) => return ReadOutcome::Eof,
            Ok(_) => {
                *drained = source.short;
                if let Err(err) = tls.process_new_packets() {
                    // Send the alert if we can; the connection is done either way.
                    let _ = flush_tls(tls, socket);
                    return ReadOutcome::Tls(err);
                }
                // Handshake replies and key updates go out as soon as they exist.
                if let WriteOutcome::Failed(err) = flush_tls(tls, socket) {
                    return ReadOutcome::Failed(err);
                }
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return ReadOutcome::WouldBlock,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return ReadOutcome::Failed(err),
        }
    }
}

/// Starts a non-blocking connect; completion shows as write readiness.
pub(crate) fn start_connect(address: &Address, local_ip: Option<IpAddr>) -> io::Result<Socket> {
    let (domain, target) = match address {
        Address::Tcp(addr) => (Domain::for_address(*addr), SockAddr::from(*addr)),
        Address::Unix(path) => (Domain::UNIX, SockAddr::unix(path)?),
    };
    let socket = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), None)?;
    if let Address::Tcp(_) = address {
        socket.set_tcp_nodelay(true)?;
        if let Some(ip) = local_ip {
            socket.bind(&SockAddr::from(SocketAddr::new(ip, 0)))?;
        }
    }
    match socket.connect(&target) {
        Ok(()) => Ok(socket),
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::INPROGRESS.raw_os_error()) => {
            Ok(socket)
        }
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(socket),
        Err(err) => Err(err),
    }
}
