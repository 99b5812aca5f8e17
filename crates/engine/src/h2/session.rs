//! [`Session`]: the client's side of one HTTP/2 connection, free of I/O. It writes
//! the frames it wants sent into the caller's buffer and turns the frames read into
//! [`Event`]s for the worker; SETTINGS, PING and flow control it answers itself.
//!
//! Flow control: a load generator counts response bodies and throws them away, so
//! it has no memory to protect. It offers the largest windows there are (2^31 - 1
//! for every stream and for the connection) and tops them up once half is used:
//! the server is never throttled by the client, only by the network.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use record::GrpcStatus;

use super::frame::{self, ConnError, FrameHeader, FrameReader};
use super::hpack::HeaderDecoder;
use super::request;
use crate::response::GRPC_MESSAGE_BYTES;

/// Streams a connection carries at once until the server's SETTINGS say how many:
/// what most servers allow, and the usual client assumption.
const STREAMS_BEFORE_SETTINGS: u32 = 100;
/// The HPACK table we let the server's encoder use (the protocol's default).
const HEADER_TABLE_BYTES: usize = 4096;
/// Received bytes after which a window is topped up again.
const WINDOW_TOP_UP_BYTES: u64 = frame::MAX_WINDOW as u64 / 2;

/// Streams by id. The ids are ours (odd, in sequence; the server only looks them
/// up), so a multiplication spreads them as well as SipHash at a fraction of its cost.
type StreamMap = HashMap<u32, StreamEntry, BuildHasherDefault<StreamIdHasher>>;

#[derive(Default)]
pub(crate) struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id >> 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Not up yet (connecting, or TLS has not said which protocol the server
    /// chose): streams wait in `pending`.
    Starting,
    Open,
    /// The server sent GOAWAY: no new streams; the connection closes when empty.
    Draining,
}

/// One stream the server has been sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamEntry {
    /// The worker's slot for the request.
    pub slot: u32,
    /// How much request body the server will take now.
    send_window: i64,
    /// Where the request body starts in its HTTP/1.1 bytes.
    body_start: usize,
    /// Body bytes sent, released to go as the windows allow, and in all: the body
    /// [`BodyPlan::repeat`] times over (offsets in that repeated body).
    body_sent: u64,
    body_due: u64,
    body_total: u64,
    /// Response body bytes read (`-max-body`).
    pub body_read: u64,
    /// Received bytes the stream's window has not been topped up for.
    recv_unacked: u64,
    /// The server ended or reset the stream: nothing to cancel.
    pub remote_closed: bool,
}

/// How a request's body goes: a gRPC stream's messages `repeat` times over, and,
/// when `paced`, only as far as [`Session::release`] lets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyPlan {
    pub repeat: u32,
    pub paced: bool,
}

impl BodyPlan {
    /// The body once, all of it at once.
    pub(crate) const ONCE: BodyPlan = BodyPlan {
        repeat: 1,
        paced: false,
    };
}

/// What a frame meant for the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Handled here (settings, pings, window updates, priorities, unknown frames).
    Nothing,
    /// A PING answered: its ACK ([`frame::PING_ACK_BYTES`]) is all this frame wrote.
    PingAnswered,
    /// A whole header block: a response head (`status` > 0) or trailers (0).
    Head {
        stream: u32,
        status: u16,
        end_stream: bool,
        block_bytes: usize,
    },
    /// The server reset a stream.
    Reset { stream: u32, code: u32 },
    /// The server's first SETTINGS: its limits are known, waiting streams may go.
    Ready,
    /// The server will take no new streams; those above `last_stream` it never saw.
    GoAway { last_stream: u32, code: u32 },
    /// Request bodies waiting for window may go on.
    WindowOpened,
}

/// The most bytes of one header block's fields kept for a flow's checks.
pub(crate) const KEPT_FIELDS_BYTES: usize = 64 << 10;

/// Appends `name: value` to `fields` (pseudo-headers left out), within
/// [`KEPT_FIELDS_BYTES`]. A field holding CR, LF or NUL is malformed (RFC 9113,
/// 8.2.1) and left out, so each line is one field the server sent.
fn keep_field(fields: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let malformed = |bytes: &[u8]| bytes.iter().any(|b| matches!(b, b'\r' | b'\n' | 0));
    if name.starts_with(b":")
        || malformed(name)
        || malformed(value)
        || fields.len() + name.len() + value.len() + 4 > KEPT_FIELDS_BYTES
    {
        return;
    }
    fields.extend_from_slice(name);
    fields.extend_from_slice(b": ");
    fields.extend_from_slice(value);
    fields.extend_from_slice(b"\r\n");
}

pub(crate) struct Session {
    pub state: State,
    pub reader: FrameReader,
    decoder: HeaderDecoder,
    /// Streams sent, by id.
    pub streams: StreamMap,
    /// Slots of streams attached before the server's SETTINGS came, in order: until
    /// then its stream limit is unknown, and a stream past it would be refused.
    pub pending: Vec<u32>,
    settings_seen: bool,
    /// Streams sent or pending: what counts against the server's limit.
    pub attached: u32,
    /// Carries one stream and closes after it (`-keepalive=false`).
    pub single_use: bool,
    next_stream_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    recv_unacked: u64,
    /// A header block arriving in CONTINUATION frames: its stream and END_STREAM.
    continuing: Option<(u32, bool)>,
    block: Vec<u8>,
    /// The `location` of the last response head decoded.
    pub location: Vec<u8>,
    /// The `grpc-status` and `grpc-message` of the last header block decoded.
    pub grpc_status: Option<GrpcStatus>,
    pub grpc_message: Vec<u8>,
    /// The `grpc-encoding` of the last header block decoded (empty: none named).
    pub grpc_encoding: Vec<u8>,
    /// Keep every field of each block decoded (a flow's gRPC steps check and extract
    /// from an answer's metadata and trailers).
    pub keep_fields: bool,
    /// The last block's fields but pseudo-headers, as `name: value` lines, when
    /// `keep_fields` (at most [`KEPT_FIELDS_BYTES`]).
    pub fields: Vec<u8>,
    /// The header block of the last request sent, and the HTTP/1.1 head and scheme it
    /// was encoded from.
    encoded: Vec<u8>,
    encoded_from: Vec<u8>,
    encoded_https: bool,
}

impl Session {
    pub(crate) fn new(state: State) -> Session {
        Session {
            state,
            reader: FrameReader::new(),
            decoder: HeaderDecoder::new(HEADER_TABLE_BYTES),
            streams: StreamMap::default(),
            pending: Vec::new(),
            settings_seen: false,
            attached: 0,
            single_use: false,
            next_stream_id: 1,
            peer_max_streams: STREAMS_BEFORE_SETTINGS,
            peer_initial_window: i64::from(frame::DEFAULT_WINDOW),
            peer_max_frame: frame::DEFAULT_MAX_FRAME_BYTES as usize,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            recv_unacked: 0,
            continuing: None,
            block: Vec::new(),
            location: Vec::new(),
            grpc_status: None,
            grpc_message: Vec::new(),
            grpc_encoding: Vec::new(),
            keep_fields: false,
            fields: Vec::new(),
            encoded: Vec::new(),
            encoded_from: Vec::new(),
            encoded_https: false,
        }
    }

    /// Writes the connection preface, our SETTINGS and the connection window's top-up.
    pub(crate) fn start(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, frame::MAX_WINDOW),
            ],
        );
        frame::put_window_update(out, 0, frame::MAX_WINDOW - frame::DEFAULT_WINDOW);
        self.state = State::Open;
    }

    /// Whether streams must wait: the connection is not up, or the server's limits
    /// are not known yet.
    pub(crate) fn waiting(&self) -> bool {
        self.state == State::Starting || !self.settings_seen
    }

    /// Whether another stream may be sent now, with at most `cap` at once.
    pub(crate) fn may_send(&self, cap: u32) -> bool {
        self.streams.len() < self.stream_limit(cap) as usize
    }

    /// Whether another stream may be attached, with at most `cap` at once (0: the
    /// server's limit only).
    pub(crate) fn has_room(&self, cap: u32) -> bool {
        self.state != State::Draining && !self.single_use && self.attached < self.stream_limit(cap)
    }

    /// Streams at once: the server's limit, or `cap` below it (0: no cap).
    fn stream_limit(&self, cap: u32) -> u32 {
        match cap {
            0 => self.peer_max_streams,
            cap => cap.min(self.peer_max_streams),
        }
    }

    /// Encodes the head of `h1` into `self.encoded` unless it is the last request's
    /// head again (a static target's always is: the head ends at its blank line, so
    /// the same prefix parses the same). Returns where the body starts in `h1`.
    fn encode_head(&mut self, h1: &[u8], https: bool) -> Result<usize, &'static str> {
        let same = !self.encoded_from.is_empty() && self.encoded_https == https;
        if same && h1.starts_with(&self.encoded_from) {
            return Ok(self.encoded_from.len());
        }
        self.encoded_from.clear();
        let body_at = request::encode_head(h1, https, &mut self.encoded)?;
        self.encoded_from.extend_from_slice(&h1[..body_at]);
        self.encoded_https = https;
        Ok(body_at)
    }

    /// Sends the HTTP/1.1 request `h1` as a new stream for `slot`: its HEADERS (and
    /// CONTINUATION) frames and as much of its body as the windows allow. Returns
    /// the stream id.
    pub(crate) fn send_request(
        &mut self,
        slot: u32,
        h1: &[u8],
        https: bool,
        out: &mut Vec<u8>,
    ) -> Result<u32, &'static str> {
        self.send_request_with(slot, h1, https, BodyPlan::ONCE, out)
    }

    /// [`Session::send_request`], its body going as `plan` says.
    pub(crate) fn send_request_with(
        &mut self,
        slot: u32,
        h1: &[u8],
        https: bool,
        plan: BodyPlan,
        out: &mut Vec<u8>,
    ) -> Result<u32, &'static str> {
        let body_start = self.encode_head(h1, https)?;
        let id = self.next_stream_id;
        if id > frame::MAX_WINDOW {
            self.state = State::Draining;
            return Err("h2: stream ids used up on this connection");
        }
        self.next_stream_id += 2;
        let body_total = (h1.len() - body_start) as u64 * u64::from(plan.repeat);
        let end_stream = if body_total == 0 {
            frame::FLAG_END_STREAM
        } else {
            0
        };
        let mut chunks = self.encoded.chunks(self.peer_max_frame).peekable();
        let mut kind = frame::HEADERS;
        let mut flags = end_stream;
        while let Some(chunk) = chunks.next() {
            if chunks.peek().is_none() {
                flags |= frame::FLAG_END_HEADERS;
            }
            frame::put_header(out, chunk.len(), kind, flags, id);
            out.extend_from_slice(chunk);
            (kind, flags) = (frame::CONTINUATION, 0);
        }
        self.streams.insert(
            id,
            StreamEntry {
                slot,
                send_window: self.peer_initial_window,
                body_start,
                body_sent: 0,
                body_due: if plan.paced { 0 } else { body_total },
                body_total,
                body_read: 0,
                recv_unacked: 0,
                remote_closed: false,
            },
        );
        self.send_body(id, h1, out);
        Ok(id)
    }

    /// Lets `messages` more gRPC messages of stream `id`'s paced body go (each a
    /// 5-byte prefix, read from the body, and its payload), then sends what the
    /// windows allow of it. Returns the bytes let go.
    pub(crate) fn release(&mut self, id: u32, h1: &[u8], messages: u32, out: &mut Vec<u8>) -> u64 {
        let Some(entry) = self.streams.get_mut(&id) else {
            return 0;
        };
        let due_before = entry.body_due;
        let body = &h1[entry.body_start.min(h1.len())..];
        for _ in 0..messages {
            let at = entry.body_due.checked_rem(body.len() as u64).unwrap_or(0) as usize;
            let announced = body.get(at + 1..at + 5).map_or(u64::MAX, |len| {
                u64::from(u32::from_be_bytes([len[0], len[1], len[2], len[3]]))
            });
            entry.body_due = entry
                .body_due
                .saturating_add(announced.saturating_add(5))
                .min(entry.body_total);
        }
        let released = entry.body_due - due_before;
        self.send_body(id, h1, out);
        released
    }

    /// The bytes stream `id`'s body sends in all (every pass); 0 for no such stream.
    pub(crate) fn body_total(&self, id: u32) -> u64 {
        self.streams.get(&id).map_or(0, |e| e.body_total)
    }

    /// Sends what the windows allow of stream `id`'s released body; true when all
    /// of it is out.
    pub(crate) fn send_body(&mut self, id: u32, h1: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(entry) = self.streams.get_mut(&id) else {
            return true;
        };
        let body = &h1[entry.body_start.min(h1.len())..];
        while entry.body_sent < entry.body_due {
            let at = (entry.body_sent % body.len() as u64) as usize;
            let room = self.send_window.min(entry.send_window).max(0) as usize;
            // Up to the end of one pass over the body, the release and the windows.
            let len = (body.len() - at)
                .min((entry.body_due - entry.body_sent) as usize)
                .min(room)
                .min(self.peer_max_frame);
            if len == 0 {
                return false;
            }
            let last = entry.body_sent + len as u64 == entry.body_total;
            let flags = if last { frame::FLAG_END_STREAM } else { 0 };
            frame::put_header(out, len, frame::DATA, flags, id);
            out.extend_from_slice(&body[at..at + len]);
            entry.body_sent += len as u64;
            entry.send_window -= len as i64;
            self.send_window -= len as i64;
        }
        entry.body_sent == entry.body_total
    }

    /// Streams whose released request body is not all out: (id, slot).
    pub(crate) fn blocked_bodies(&self) -> Vec<(u32, u32)> {
        self.streams
            .iter()
            .filter(|(_, e)| e.body_sent < e.body_due)
            .map(|(id, e)| (*id, e.slot))
            .collect()
    }

    /// Accounts `len` DATA bytes for `stream`, topping windows up when due; the
    /// stream's entry if it is one of ours.
    pub(crate) fn on_data(
        &mut self,
        stream: u32,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<Option<&mut StreamEntry>, ConnError> {
        if stream == 0 {
            return Err(ConnError::protocol("h2: DATA on stream 0"));
        }
        if self.continuing.is_some() {
            return Err(ConnError::protocol("h2: DATA inside a header block"));
        }
        self.recv_unacked += len as u64;
        if self.recv_unacked >= WINDOW_TOP_UP_BYTES {
            frame::put_window_update(out, 0, self.recv_unacked as u32);
            self.recv_unacked = 0;
        }
        let Some(entry) = self.streams.get_mut(&stream) else {
            return Ok(None);
        };
        entry.body_read += len as u64;
        entry.recv_unacked += len as u64;
        if entry.recv_unacked >= WINDOW_TOP_UP_BYTES {
            frame::put_window_update(out, stream, entry.recv_unacked as u32);
            entry.recv_unacked = 0;
        }
        Ok(Some(entry))
    }

    /// Handles the whole frame `header` whose payload the reader holds.
    pub(crate) fn on_frame(
        &mut self,
        header: FrameHeader,
        out: &mut Vec<u8>,
    ) -> Result<Event, ConnError> {
        let payload = self.reader.take_payload();
        let event = self.handle(header, &payload, out);
        self.reader.put_back_payload(payload);
        event
    }

    fn handle(
        &mut self,
        header: FrameHeader,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Event, ConnError> {
        if self.continuing.is_some() && header.kind != frame::CONTINUATION {
            return Err(ConnError::protocol("h2: header block interrupted"));
        }
        let connection_only = matches!(header.kind, frame::SETTINGS | frame::PING | frame::GOAWAY);
        let stream_only = matches!(
            header.kind,
            frame::HEADERS | frame::CONTINUATION | frame::RST_STREAM
        );
        if (connection_only && header.stream != 0) || (stream_only && header.stream == 0) {
            return Err(ConnError::protocol("h2: frame on the wrong stream"));
        }
        match header.kind {
            frame::HEADERS | frame::CONTINUATION => self.on_headers(header, payload),
            frame::SETTINGS => self.on_settings(header, payload, out),
            frame::PING => on_ping(header, payload, out),
            frame::WINDOW_UPDATE => self.on_window_update(header, payload),
            frame::RST_STREAM => Ok(Event::Reset {
                stream: header.stream,
                code: only_u32(payload)?,
            }),
            frame::GOAWAY => {
                // Last stream and error code, then debug data we do not read.
                let head = payload
                    .first_chunk::<8>()
                    .ok_or(frame_size("h2: control frame of the wrong length"))?;
                let [s0, s1, s2, s3, c0, c1, c2, c3] = *head;
                self.state = State::Draining;
                Ok(Event::GoAway {
                    last_stream: u32::from_be_bytes([s0, s1, s2, s3]) & frame::MAX_WINDOW,
                    code: u32::from_be_bytes([c0, c1, c2, c3]),
                })
            }
            frame::PUSH_PROMISE => Err(ConnError::protocol(
                "h2: PUSH_PROMISE although push is disabled",
            )),
            // PRIORITY and frame types this client does not know are ignored.
            _ => Ok(Event::Nothing),
        }
    }

    fn on_headers(&mut self, header: FrameHeader, payload: &[u8]) -> Result<Event, ConnError> {
        let fragment = frame::header_fragment(&header, payload)?;
        let (stream, end_stream) = match (header.kind, self.continuing) {
            (frame::HEADERS, _) => (header.stream, header.has(frame::FLAG_END_STREAM)),
            (_, Some((stream, end))) if stream == header.stream => (stream, end),
            _ => return Err(ConnError::protocol("h2: CONTINUATION out of place")),
        };
        if !header.has(frame::FLAG_END_HEADERS) {
            if self.continuing.is_none() {
                self.block.clear();
            }
            self.block.extend_from_slice(fragment);
            self.continuing = Some((stream, end_stream));
            return Ok(Event::Nothing);
        }
        let block = if self.continuing.take().is_some() {
            self.block.extend_from_slice(fragment);
            std::mem::take(&mut self.block)
        } else {
            Vec::new()
        };
        let whole = if block.is_empty() { fragment } else { &block };
        let status = self.decode(whole)?;
        let block_bytes = whole.len();
        if !block.is_empty() {
            self.block = block;
        }
        Ok(Event::Head {
            stream,
            status,
            end_stream,
            block_bytes,
        })
    }

    /// Decodes a header block (every block, even of streams we dropped, keeps the
    /// HPACK table in step with the server's); returns `:status` (0 if none).
    fn decode(&mut self, block: &[u8]) -> Result<u16, ConnError> {
        let mut status = 0u16;
        let location = &mut self.location;
        location.clear();
        let grpc_status = &mut self.grpc_status;
        *grpc_status = None;
        let grpc_message = &mut self.grpc_message;
        grpc_message.clear();
        let grpc_encoding = &mut self.grpc_encoding;
        grpc_encoding.clear();
        let keep_fields = self.keep_fields;
        let fields = &mut self.fields;
        fields.clear();
        let wanted = |name: &[u8]| {
            keep_fields
                || matches!(
                    name,
                    b":status" | b"location" | b"grpc-status" | b"grpc-message" | b"grpc-encoding"
                )
        };
        self.decoder
            .decode(block, wanted, |name, value| {
                if keep_fields {
                    keep_field(fields, name, value);
                }
                match name {
                    b":status" => status = parse_status(value),
                    b"location" => location.extend_from_slice(value),
                    // A status that is not a number is UNKNOWN, as gRPC's clients take it.
                    b"grpc-status" => {
                        *grpc_status = Some(GrpcStatus::parse(value).unwrap_or(GrpcStatus(2)));
                    }
                    b"grpc-message" => {
                        let kept = value.len().min(GRPC_MESSAGE_BYTES);
                        grpc_message.extend_from_slice(&value[..kept]);
                    }
                    b"grpc-encoding" => {
                        let kept = value.len().min(GRPC_MESSAGE_BYTES);
                        grpc_encoding.extend_from_slice(&value[..kept]);
                    }
                    _ => {}
                }
            })
            .map_err(|reason| ConnError {
                code: frame::COMPRESSION_ERROR,
                reason,
            })?;
        Ok(status)
    }

    fn on_settings(
        &mut self,
        header: FrameHeader,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Event, ConnError> {
        if header.has(frame::FLAG_ACK) {
            return Ok(Event::Nothing);
        }
        if !payload.len().is_multiple_of(6) {
            return Err(frame_size("h2: SETTINGS length not a multiple of 6"));
        }
        for setting in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = value,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => self.set_initial_window(value)?,
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME_BYTES..=0xff_ffff).contains(&value) {
                        return Err(ConnError::protocol(
                            "h2: SETTINGS_MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer_max_frame = value as usize;
                }
                frame::SETTINGS_ENABLE_PUSH if value > 1 => {
                    return Err(ConnError::protocol("h2: SETTINGS_ENABLE_PUSH not 0 or 1"));
                }
                // SETTINGS_HEADER_TABLE_SIZE among them: our encoder never uses the
                // dynamic table, so its size is moot.
                _ => {}
            }
        }
        frame::put_settings_ack(out);
        if !self.settings_seen {
            self.settings_seen = true;
            return Ok(Event::Ready);
        }
        Ok(Event::WindowOpened)
    }

    fn set_initial_window(&mut self, value: u32) -> Result<(), ConnError> {
        if value > frame::MAX_WINDOW {
            return Err(ConnError {
                code: frame::FLOW_CONTROL_ERROR,
                reason: "h2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
            });
        }
        let delta = i64::from(value) - self.peer_initial_window;
        self.peer_initial_window = i64::from(value);
        for entry in self.streams.values_mut() {
            entry.send_window += delta;
        }
        Ok(())
    }

    fn on_window_update(
        &mut self,
        header: FrameHeader,
        payload: &[u8],
    ) -> Result<Event, ConnError> {
        let increment = i64::from(only_u32(payload)? & frame::MAX_WINDOW);
        let window = if header.stream == 0 {
            if increment == 0 {
                return Err(ConnError::protocol("h2: WINDOW_UPDATE of 0"));
            }
            &mut self.send_window
        } else {
            match self.streams.get_mut(&header.stream) {
                Some(entry) => &mut entry.send_window,
                None => return Ok(Event::Nothing),
            }
        };
        *window += increment;
        if *window > i64::from(frame::MAX_WINDOW) {
            return Err(ConnError {
                code: frame::FLOW_CONTROL_ERROR,
                reason: "h2: window above 2^31-1",
            });
        }
        Ok(Event::WindowOpened)
    }
}

fn on_ping(header: FrameHeader, payload: &[u8], out: &mut Vec<u8>) -> Result<Event, ConnError> {
    if payload.len() != 8 {
        return Err(frame_size("h2: PING not 8 bytes"));
    }
    if header.has(frame::FLAG_ACK) {
        return Ok(Event::Nothing);
    }
    frame::put_ping_ack(out, payload);
    Ok(Event::PingAnswered)
}

fn frame_size(reason: &'static str) -> ConnError {
    ConnError {
        code: frame::FRAME_SIZE_ERROR,
        reason,
    }
}

/// The payload of RST_STREAM and WINDOW_UPDATE: exactly one big-endian u32.
fn only_u32(payload: &[u8]) -> Result<u32, ConnError> {
    let bytes: [u8; 4] = payload
        .try_into()
        .map_err(|_| frame_size("h2: control frame of the wrong length"))?;
    Ok(u32::from_be_bytes(bytes))
}

/// `:status` as a number; 0 unless it is three digits.
fn parse_status(value: &[u8]) -> u16 {
    match value {
        [a, b, c] if value.iter().all(u8::is_ascii_digit) => {
            u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u8, flags: u8, stream: u32, len: usize) -> FrameHeader {
        FrameHeader {
            len: len as u32,
            kind,
            flags,
            stream,
        }
    }

    /// A session with stream 1 sent for slot 7.
    fn open_session() -> (Session, Vec<u8>) {
        let mut session = Session::new(State::Starting);
        let mut out = Vec::new();
        session.start(&mut out);
        assert!(session.waiting());
        let ready = session.handle(header(frame::SETTINGS, 0, 0, 0), &[], &mut out);
        assert_eq!((ready, session.waiting()), (Ok(Event::Ready), false));
        let id = session
            .send_request(7, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false, &mut out)
            .unwrap();
        assert_eq!(id, 1);
        (session, out)
    }

    fn handle(
        session: &mut Session,
        kind: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
    ) -> Result<Event, ConnError> {
        let mut out = Vec::new();
        session.handle(
            header(kind, flags, stream, payload.len()),
            payload,
            &mut out,
        )
    }

    #[test]
    fn a_head_is_encoded_again_only_when_it_or_the_scheme_changes() {
        let (mut session, _) = open_session();
        let rows: [(&[u8], bool); 6] = [
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
            (b"GET /b HTTP/1.1\r\nHost: a\r\n\r\n", false),
            (b"GET /b HTTP/1.1\r\nHost: a\r\n\r\n", true),
            (
                b"GET /b HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
                true,
            ),
            (
                b"GET /b HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nho",
                true,
            ),
            (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
        ];
        for (h1, https) in rows {
            let mut want = Vec::new();
            let body_at = request::encode_head(h1, https, &mut want).unwrap();
            let mut out = Vec::new();
            session.send_request(7, h1, https, &mut out).unwrap();
            let label = String::from_utf8_lossy(h1);
            assert_eq!(session.encoded, want, "{label} https={https}");
            // After the head, the body and only the body went out, in one DATA frame.
            let data = &out[frame::HEADER_BYTES + want.len()..];
            let body = data.get(frame::HEADER_BYTES..).unwrap_or_default();
            assert_eq!(body, &h1[body_at..], "{label}");
        }
    }

    #[test]
    fn sad_frames_are_connection_errors_naming_the_fault() {
        let rows: Vec<(u8, u8, u32, &[u8], &str)> = vec![
            (frame::SETTINGS, 0, 1, &[], "h2: frame on the wrong stream"),
            (
                frame::HEADERS,
                0x4,
                0,
                &[0x88],
                "h2: frame on the wrong stream",
            ),
            (
                frame::SETTINGS,
                0,
                0,
                &[0, 3, 0],
                "h2: SETTINGS length not a multiple of 6",
            ),
            (
                frame::SETTINGS,
                0,
                0,
                &[0, 4, 0x80, 0, 0, 0],
                "h2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
            ),
            (
                frame::SETTINGS,
                0,
                0,
                &[0, 5, 0, 0, 0, 1],
                "h2: SETTINGS_MAX_FRAME_SIZE out of range",
            ),
            (
                frame::SETTINGS,
                0,
                0,
                &[0, 2, 0, 0, 0, 2],
                "h2: SETTINGS_ENABLE_PUSH not 0 or 1",
            ),
            (frame::PING, 0, 0, &[1, 2, 3], "h2: PING not 8 bytes"),
            (
                frame::WINDOW_UPDATE,
                0,
                0,
                &[0, 0, 0, 0],
                "h2: WINDOW_UPDATE of 0",
            ),
            (
                frame::WINDOW_UPDATE,
                0,
                0,
                &[0x7f, 0xff, 0xff, 0xff],
                "h2: window above 2^31-1",
            ),
            (
                frame::WINDOW_UPDATE,
                0,
                0,
                &[0, 1],
                "h2: control frame of the wrong length",
            ),
            (
                frame::RST_STREAM,
                0,
                1,
                &[0, 0, 8],
                "h2: control frame of the wrong length",
            ),
            (
                frame::GOAWAY,
                0,
                0,
                &[0, 0, 0, 1],
                "h2: control frame of the wrong length",
            ),
            (
                frame::PUSH_PROMISE,
                0x4,
                1,
                &[0, 0, 0, 2, 0x88],
                "h2: PUSH_PROMISE although push is disabled",
            ),
            (
                frame::CONTINUATION,
                0x4,
                1,
                &[0x88],
                "h2: CONTINUATION out of place",
            ),
            (
                frame::HEADERS,
                0x4,
                1,
                &[0xff, 0x7f],
                "hpack: index past the tables",
            ),
        ];
        for (kind, flags, stream, payload, want) in rows {
            let (mut session, _) = open_session();
            let got = handle(&mut session, kind, flags, stream, payload);
            assert_eq!(
                got.map_err(|e| e.reason),
                Err(want),
                "frame {kind} on {stream}"
            );
        }
    }

    #[test]
    fn heads_arrive_whole_across_continuations_and_a_header_block_is_not_interrupted() {
        let (mut session, _) = open_session();
        // :status 302 (literal, indexed name 8), location /next.
        let block = [
            &[0x08, 0x03][..],
            b"302",
            &[0x00, 0x08],
            b"location",
            &[0x05],
            b"/next",
        ]
        .concat();
        let (first, rest) = block.split_at(4);
        assert_eq!(
            handle(&mut session, frame::HEADERS, 0, 1, first),
            Ok(Event::Nothing)
        );
        assert_eq!(
            handle(&mut session, frame::PING, 0, 0, &[0; 8]).map_err(|e| e.reason),
            Err("h2: header block interrupted")
        );
        let (mut session, _) = open_session();
        handle(
            &mut session,
            frame::HEADERS,
            frame::FLAG_END_STREAM,
            1,
            first,
        )
        .unwrap();
        let head = handle(
            &mut session,
            frame::CONTINUATION,
            frame::FLAG_END_HEADERS,
            1,
            rest,
        );
        assert_eq!(
            head,
            Ok(Event::Head {
                stream: 1,
                status: 302,
                end_stream: true,
                block_bytes: block.len(),
            })
        );
        assert_eq!(session.location, b"/next");
    }

    /// A literal field without indexing, its name spelled out.
    fn field(name: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = vec![0x00];
        for bytes in [name, value] {
            request::put_integer(&mut out, 7, 0, bytes.len());
            out.extend_from_slice(bytes);
        }
        out
    }

    #[test]
    fn grpc_statuses_are_read_from_trailers_and_trailers_only_answers() {
        let status_200 = [0x88u8]; // indexed :status 200
        /// A header block; the `:status`, gRPC status and message it gives.
        type Row<'a> = (Vec<u8>, u16, Option<u8>, &'a [u8]);
        let rows: &[Row<'_>] = &[
            // Trailers: no :status.
            (field(b"grpc-status", b"0"), 0, Some(0), b""),
            (
                [
                    field(b"grpc-status", b"14"),
                    field(b"grpc-message", b"no%20backend"),
                ]
                .concat(),
                0,
                Some(14),
                b"no%20backend",
            ),
            // Trailers-only: the head carries the status.
            (
                [&status_200[..], &field(b"grpc-status", b"12")].concat(),
                200,
                Some(12),
                b"",
            ),
            // Not a number: UNKNOWN, as gRPC's clients take it.
            (field(b"grpc-status", b"x"), 0, Some(2), b""),
            // A plain HTTP head: none.
            (status_200.to_vec(), 200, None, b""),
            (
                [
                    field(b"grpc-status", b"3"),
                    field(b"grpc-message", &[b'a'; 200]),
                ]
                .concat(),
                0,
                Some(3),
                &[b'a'; GRPC_MESSAGE_BYTES],
            ),
        ];
        for (block, status, code, message) in rows {
            let (mut session, _) = open_session();
            let head = handle(
                &mut session,
                frame::HEADERS,
                frame::FLAG_END_HEADERS | frame::FLAG_END_STREAM,
                1,
                block,
            );
            assert!(
                matches!(head, Ok(Event::Head { status: s, .. }) if s == *status),
                "{head:?}"
            );
            assert_eq!(session.grpc_status, code.map(GrpcStatus), "{block:?}");
            assert_eq!(session.grpc_message, *message, "{block:?}");
        }
    }

    #[test]
    fn metadata_and_trailers_are_kept_as_lines_when_asked_and_the_encoding_always() {
        let block = [
            vec![0x88], // :status 200, left out
            field(b"grpc-encoding", b"gzip"),
            field(b"x-token", b"abc"),
            field(b"x-evil", b"1\r\nx-token: forged"),
            field(b"x-nul", b"a\0b"),
        ]
        .concat();
        // (keep_fields, the lines kept)
        let rows: [(bool, &[u8]); 2] = [
            (true, b"grpc-encoding: gzip\r\nx-token: abc\r\n"),
            (false, b""),
        ];
        for (keep, want) in rows {
            let (mut session, _) = open_session();
            session.keep_fields = keep;
            let flags = frame::FLAG_END_HEADERS;
            let head = handle(&mut session, frame::HEADERS, flags, 1, &block);
            assert!(
                matches!(head, Ok(Event::Head { status: 200, .. })),
                "{head:?}"
            );
            assert_eq!(session.fields, want, "keep {keep}");
            assert_eq!(session.grpc_encoding, b"gzip");
        }
        let (mut session, _) = open_session();
        session.keep_fields = true;
        let big = field(b"x-big", &[b'a'; KEPT_FIELDS_BYTES]);
        let block = [big, field(b"x-small", b"1")].concat();
        let flags = frame::FLAG_END_HEADERS;
        let _ = handle(&mut session, frame::HEADERS, flags, 1, &block);
        assert_eq!(
            session.fields, b"x-small: 1\r\n",
            "a field past the bound is left out"
        );
    }

    /// DATA frames in `out`: (flags, payload).
    fn data_frames(mut out: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut frames = Vec::new();
        while out.len() >= frame::HEADER_BYTES {
            let len = u32::from_be_bytes([0, out[0], out[1], out[2]]) as usize;
            let (kind, flags) = (out[3], out[4]);
            let payload = &out[frame::HEADER_BYTES..frame::HEADER_BYTES + len];
            if kind == frame::DATA {
                frames.push((flags, payload.to_vec()));
            }
            out = &out[frame::HEADER_BYTES + len..];
        }
        frames
    }

    #[test]
    fn a_paced_body_goes_message_by_message_as_released_and_repeats() {
        let (mut session, _) = open_session();
        let h1 = b"POST /s HTTP/1.1\r\nHost: a\r\n\r\n\0\0\0\0\x01a\0\0\0\0\x02bc";
        let (one, two) = (&b"\0\0\0\0\x01a"[..], &b"\0\0\0\0\x02bc"[..]);
        let plan = BodyPlan {
            repeat: 2,
            paced: true,
        };
        let mut out = Vec::new();
        let id = session
            .send_request_with(9, h1, false, plan, &mut out)
            .unwrap();
        let head_flags = out[4];
        assert_eq!(head_flags & frame::FLAG_END_STREAM, 0, "a body to come");
        assert!(data_frames(&out).is_empty(), "nothing released yet");
        // Each row: messages released, the DATA frames that go.
        type Frames<'a> = Vec<(u8, &'a [u8])>;
        let rows: [(u32, Frames<'_>); 4] = [
            (1, vec![(0, one)]),
            (0, vec![]),
            (2, vec![(0, two), (0, one)]),
            (5, vec![(frame::FLAG_END_STREAM, two)]),
        ];
        for (messages, want) in rows {
            let mut out = Vec::new();
            let released = session.release(id, h1, messages, &mut out);
            let want_bytes: usize = want.iter().map(|(_, p)| p.len()).sum();
            assert_eq!(released, want_bytes as u64, "release {messages}");
            let want: Vec<(u8, Vec<u8>)> = want.iter().map(|(f, p)| (*f, p.to_vec())).collect();
            assert_eq!(data_frames(&out), want, "release {messages}");
        }
        assert!(session.blocked_bodies().is_empty());
    }

    #[test]
    fn settings_pings_and_windows_are_answered_and_applied() {
        let (mut session, _) = open_session();
        let mut out = Vec::new();
        let settings = [0, 3, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0];
        let event = session.handle(header(frame::SETTINGS, 0, 0, 12), &settings, &mut out);
        assert_eq!(event, Ok(Event::WindowOpened));
        assert_eq!(out, [0, 0, 0, frame::SETTINGS, frame::FLAG_ACK, 0, 0, 0, 0]);
        assert_eq!(session.peer_max_streams, 1);
        session.attached = 1; // as the worker counts stream 1
        assert!(!session.has_room(0), "one stream out of one");
        session.peer_max_streams = 100;
        assert!(
            session.has_room(2) && !session.has_room(1),
            "-max-streams caps below it"
        );
        session.attached = 0;
        // A zero initial window holds a body back until WINDOW_UPDATE opens it.
        let mut out = Vec::new();
        let post = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
        let id = session.send_request(9, post, false, &mut out).unwrap();
        assert_eq!(session.blocked_bodies(), vec![(id, 9)]);
        let update = [0, 0, 0, 5];
        session
            .handle(header(frame::WINDOW_UPDATE, 0, id, 4), &update, &mut out)
            .unwrap();
        let mut out = Vec::new();
        assert!(session.send_body(id, post, &mut out));
        assert_eq!(&out[9..], b"hello");
        assert!(session.blocked_bodies().is_empty());

        let mut out = Vec::new();
        session
            .handle(header(frame::PING, 0, 0, 8), &[9; 8], &mut out)
            .unwrap();
        assert_eq!(
            out,
            [
                &[0, 0, 8, frame::PING, frame::FLAG_ACK, 0, 0, 0, 0][..],
                &[9; 8]
            ]
            .concat()
        );
    }

    #[test]
    fn received_data_tops_the_windows_up_and_unknown_streams_are_ignored() {
        let (mut session, _) = open_session();
        let mut out = Vec::new();
        let half = WINDOW_TOP_UP_BYTES as usize;
        assert!(session.on_data(1, half - 1, &mut out).unwrap().is_some());
        assert!(out.is_empty());
        assert!(session.on_data(99, 1, &mut out).unwrap().is_none());
        // The connection's window is topped up; stream 99 is not ours.
        assert_eq!(out.len(), 13);
        assert!(session.on_data(1, 1, &mut out).unwrap().is_some());
        assert_eq!(out.len(), 26, "stream 1 is topped up too");
        assert_eq!(
            session
                .on_data(0, 1, &mut out)
                .map(|_| ())
                .map_err(|e| e.reason),
            Err("h2: DATA on stream 0")
        );
    }
}
