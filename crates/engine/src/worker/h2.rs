//! HTTP/2 in the worker. A connection slot carries a [`Session`] (`Wire::H2Conn`);
//! each request is a stream slot of its own (`Wire::H2Stream`), linked to its
//! connection, so the in-flight lists, timeouts, retries, redirects and records
//! treat it as they treat an HTTP/1.1 request. Frames for a connection are queued
//! and written once per pass of the loop (`flush_queued`), so one write carries
//! every stream that became due.
//!
//! Streams go on the first connection of their host with room (as Go's client):
//! a new connection opens only when every open one is at the server's (or
//! `-max-streams`') limit, up to `-connections`. Over TLS the handshake's ALPN
//! decides: streams attached before it ends wait, and move to HTTP/1.1
//! connections if the server did not choose h2.

use record::ErrorKind;

use super::Worker;
use super::exchange::tally_sent;
use super::protocol::{Proto, Why};
use crate::arrival::arrived_ns;
use crate::conn::{Phase, StreamLink, Wire};
use crate::errors::Cause;
use crate::h2::frame::{self, ConnError, Piece};
use crate::h2::{BodyPlan, Event, Session, State};

/// Recorded for a stream moved off its connection when no other takes it.
const NO_CONNECTION: Cause = Cause {
    kind: ErrorKind::Connect,
    operation: "h2: no connection for the request",
    errno: 0,
};

/// Whether an answer's `grpc-encoding` is one we offer in `grpc-accept-encoding`
/// (gzip; none or `identity` is no compression).
fn grpc_encoding(name: &[u8]) -> Result<(), &'static str> {
    match name {
        b"" | b"identity" | b"gzip" => Ok(()),
        _ => Err("grpc: the answer's grpc-encoding is not one we accept (identity, gzip)"),
    }
}

/// How a request's body goes: a gRPC call's streamed messages `repeat` times over,
/// at a pace when it has one; anything else's all at once.
fn body_plan(counter: &crate::grpc_messages::MessageCounter) -> BodyPlan {
    if !counter.on {
        return BodyPlan::ONCE;
    }
    BodyPlan {
        repeat: counter.sent.repeat.max(1),
        paced: counter.sent.every_ns > 0,
    }
}

/// A gRPC server over TLS that did not choose h2.
const NO_H2_IN_ALPN: Cause = Cause {
    kind: ErrorKind::Tls,
    operation: "tls: the server did not choose h2 in ALPN (gRPC needs HTTP/2)",
    errno: 0,
};

/// How long a PING ACK may wait for its connection's next write
/// ([`Worker::release_ping_acks`]): far below any keepalive's timeout, and a
/// round trip a server measures by its PINGs grows by at most this.
const PING_ACK_WAIT_NS: u64 = 2_000_000;

/// The largest gRPC message a streamed call takes, as grpc-go's default receive limit.
const MAX_MESSAGE_BYTES: u64 = 4 << 20;

/// Recorded for a streamed call whose next message announces more than that.
const MESSAGE_TOO_LARGE: Cause = Cause {
    kind: ErrorKind::Grpc,
    operation: "RESOURCE_EXHAUSTED: a message over the 4 MiB receive limit",
    errno: 0,
};

impl Worker {
    /// A stream slot on a connection to `host` with room (opened if need be and
    /// allowed); `None` at the host's connection cap. Without `keepalive` the stream
    /// gets a new connection that carries nothing else.
    pub(super) fn acquire_stream(
        &mut self,
        host: usize,
        keepalive: bool,
    ) -> Result<Option<usize>, Cause> {
        let cap = self.shared.max_streams;
        let shared_carriers = if keepalive {
            &self.pools[host].carriers[..]
        } else {
            &[]
        };
        let room = shared_carriers.iter().copied().find(|&carrier| {
            self.conns[carrier as usize]
                .session()
                .is_some_and(|session| session.has_room(cap))
        });
        let carrier = match room {
            Some(carrier) => carrier as usize,
            None if self.pools[host].open >= self.max_per_host => return Ok(None),
            None => self.open_connection(host)?,
        };
        let slot = self.new_slot();
        let (generation, reused) = (self.conns[carrier].generation, self.conns[carrier].reused);
        if let Some(session) = self.conns[carrier].session_mut() {
            session.attached += 1;
            session.single_use |= !keepalive;
        }
        let stream = &mut self.conns[slot];
        stream.phase = Phase::Open;
        stream.host = host;
        stream.wire = Wire::H2Stream(StreamLink {
            carrier: carrier as u32,
            carrier_generation: generation,
            id: 0,
            bytes_out: 0,
        });
        stream.reused = reused;
        Ok(Some(slot))
    }

    /// Sends a stream's request on `carrier`, or queues it until the connection is up.
    pub(super) fn send_stream(&mut self, slot: usize, carrier: usize) {
        let https = self.hosts.hosts[self.conns[slot].host].tls_name.is_some();
        let bytes = self.conns[slot].take_request_bytes();
        let plan = body_plan(&self.conns[slot].parser.messages);
        let Some((session, frames)) = self.conns[carrier].session_and_frames() else {
            self.conns[slot].set_request_bytes(bytes);
            return;
        };
        if session.waiting() {
            session.pending.push(slot as u32);
            self.conns[slot].set_request_bytes(bytes);
            return;
        }
        let before = frames.len();
        let sent = session.send_request_with(slot as u32, bytes.as_slice(), https, plan, frames);
        let wire_bytes = (frames.len() - before) as u64;
        let stream = &mut self.conns[slot];
        stream.set_request_bytes(bytes);
        match sent {
            Ok(id) => {
                if let Some(link) = stream.stream_mut() {
                    link.id = id;
                    link.bytes_out = wire_bytes;
                }
                self.queue_flush(carrier);
                let body_bytes = (self.conns[carrier].session()).map_or(0, |s| s.body_total(id));
                let conn = &mut self.conns[slot];
                let counter = &mut conn.parser.messages;
                if counter.on && !plan.paced {
                    counter.released_bytes = body_bytes;
                    if let Some(request) = conn.request.as_mut() {
                        tally_sent(&self.tally, &mut request.call_tally, counter.sent_out());
                    }
                }
                if plan.paced {
                    self.paced.push(slot as u32);
                    let now = self.clock.now_ns();
                    self.paced_wake_ns = self.paced_wake_ns.min(now);
                }
            }
            Err(reason) => self.fail(slot, Cause::new(ErrorKind::Protocol, reason)),
        }
    }

    /// Lets go the messages of paced gRPC calls that are due (message `k` of a call
    /// at its send plus `k` times its `every`: a pure function of the call's start,
    /// so a late pass sends every message due at once), and notes when the next is.
    pub(super) fn send_paced(&mut self, now: u64) {
        if self.paced_wake_ns > now {
            return;
        }
        let mut paced = std::mem::take(&mut self.paced);
        let mut wake_ns = u64::MAX;
        paced.retain(|&slot| match self.release_due(slot as usize, now) {
            Some(next_ns) => {
                wake_ns = wake_ns.min(next_ns);
                true
            }
            None => false,
        });
        self.paced = paced;
        self.paced_wake_ns = wake_ns;
    }

    /// Lets go the messages of `slot`'s paced call due by `now`; when the next one is
    /// due, `None` once all are out (or the slot holds no such call now).
    fn release_due(&mut self, slot: usize, now: u64) -> Option<u64> {
        let conn = &self.conns[slot];
        let (request, counter, link) = (
            conn.request.as_ref()?,
            &conn.parser.messages,
            conn.stream()?,
        );
        let (every_ns, total) = (counter.sent.every_ns, counter.sent.total_messages());
        if !counter.on || every_ns == 0 || link.id == 0 {
            return None;
        }
        let start_ns = request.dispatched_ns;
        let due = (now.saturating_sub(start_ns) / every_ns + 1).min(total);
        let (carrier, id, released) = (link.carrier as usize, link.id, counter.released);
        if self.conns[carrier].generation != link.carrier_generation {
            return None;
        }
        if due > released {
            let bytes = self.conns[slot].take_request_bytes();
            if let Some((session, frames)) = self.conns[carrier].session_and_frames() {
                let before = frames.len();
                let more = u32::try_from(due - released).unwrap_or(u32::MAX);
                let let_go = session.release(id, bytes.as_slice(), more, frames);
                let wire_bytes = (frames.len() - before) as u64;
                self.conns[slot].parser.messages.released_bytes += let_go;
                if let Some(link) = self.conns[slot].stream_mut() {
                    link.bytes_out += wire_bytes;
                }
            }
            let conn = &mut self.conns[slot];
            conn.set_request_bytes(bytes);
            conn.parser.messages.released = due;
            if let Some(request) = conn.request.as_mut() {
                let sent_out = conn.parser.messages.sent_out();
                tally_sent(&self.tally, &mut request.call_tally, sent_out);
            }
            self.queue_flush(carrier);
        }
        (due < total).then(|| start_ns.saturating_add(due.saturating_mul(every_ns)))
    }

    /// The connection is up: over TLS the hello goes and ALPN decides the rest
    /// ([`Worker::negotiate`]); in cleartext (h2c) the session starts.
    pub(super) fn h2_opened(&mut self, carrier: usize) {
        if self.conns[carrier].tls.is_some() {
            self.write(carrier);
        } else {
            self.start_session(carrier);
        }
    }

    /// The connection is up (h2c) or TLS chose h2: the preface goes; streams wait
    /// for the server's SETTINGS.
    pub(super) fn start_session(&mut self, carrier: usize) {
        let Some((session, frames)) = self.conns[carrier].session_and_frames() else {
            return;
        };
        session.start(frames);
        self.queue_flush(carrier);
    }

    /// The server's limits are known: waiting streams go, as many as it takes; the
    /// rest look for room on other connections.
    fn send_pending(&mut self, carrier: usize) {
        let cap = self.shared.max_streams;
        let Some(session) = self.conns[carrier].session_mut() else {
            return;
        };
        for slot in std::mem::take(&mut session.pending) {
            let room = self.conns[carrier]
                .session()
                .is_some_and(|session| session.may_send(cap));
            if room {
                self.send_stream(slot as usize, carrier);
            } else {
                let cause = NO_CONNECTION;
                self.resend(slot as usize, cause, false);
            }
        }
    }

    /// After a TLS read: once the handshake is done, speak h2 if the server chose
    /// it, else turn the connection (and the host) to HTTP/1.1. True while the
    /// connection still speaks HTTP/2 (or may).
    pub(super) fn negotiate(&mut self, carrier: usize) -> bool {
        let conn = &mut self.conns[carrier];
        let starting = conn.session().is_some_and(|s| s.state == State::Starting);
        let Some(tls) = conn.tls.as_ref().filter(|_| starting) else {
            return conn.session().is_some();
        };
        if tls.is_handshaking() {
            return true;
        }
        let host = conn.host;
        if tls.alpn_protocol() == Some(b"h2") {
            self.pools[host].proto = Some(Proto::Http2);
            self.start_session(carrier);
            return true;
        }
        if self.hosts.hosts[host].grpc {
            // gRPC has no HTTP/1.1 to fall back to.
            self.fail_carrier(carrier, Why::Cause(NO_H2_IN_ALPN));
            return false;
        }
        self.pools[host].proto = Some(Proto::Http1);
        self.pools[host].carriers.retain(|&c| c as usize != carrier);
        let pending = conn.take_session().map(|s| s.pending).unwrap_or_default();
        self.make_idle(carrier);
        for slot in pending {
            let cause = NO_CONNECTION;
            self.resend(slot as usize, cause, false);
        }
        false
    }

    /// `n` bytes of `read_buf` arrived on an HTTP/2 connection; false when it is gone.
    /// Out of line, as each protocol's read path: inlined through the seam (its one
    /// caller) into the event loop, it made the loop's code worse (callgrind: +43
    /// instructions per HTTP/1.1 request).
    #[inline(never)]
    pub(super) fn h2_read(&mut self, carrier: usize, n: usize) -> bool {
        if !self.negotiate(carrier) {
            // Now HTTP/1.1, and these bytes came before any request did.
            return self.on_data(carrier, n);
        }
        let buffer = std::mem::take(&mut self.read_buf);
        let mut input = &buffer[..n];
        let now = self.clock.now_ns();
        let unwritten_before = self.conns[carrier].has_unwritten();
        let mut ack_bytes = 0;
        // Until the connection is gone (its slot may be a new one's by then).
        let generation = self.conns[carrier].generation;
        while self.conns[carrier].generation == generation
            && let Some((session, frames)) = self.conns[carrier].session_and_frames()
        {
            match session.reader.next(&mut input) {
                Ok(None) => break,
                Ok(Some(Piece::Data {
                    stream,
                    len,
                    end_stream,
                    data: (start, end),
                })) => {
                    let read = n - input.len();
                    let data = &buffer[read - len..read][start..end];
                    self.h2_data(carrier, stream, (len, data), end_stream, now);
                }
                Ok(Some(Piece::Frame(header))) => match session.on_frame(header, frames) {
                    Ok(Event::PingAnswered) => ack_bytes += frame::PING_ACK_BYTES,
                    Ok(event) => self.h2_event(carrier, event, now),
                    Err(err) => self.h2_connection_error(carrier, err),
                },
                Err(err) => self.h2_connection_error(carrier, err),
            }
        }
        self.read_buf = buffer;
        let alive = self.conns[carrier].generation == generation;
        let only_acks =
            !unwritten_before && ack_bytes > 0 && self.conns[carrier].holds_only(ack_bytes);
        if alive && only_acks {
            self.hold_ping_acks(carrier, now);
        } else if alive {
            self.queue_flush(carrier);
        }
        alive
    }

    /// Lets the PING ACKs just queued on `carrier` wait for the connection's next
    /// write (the next request's frames) instead of writing them alone: grpc-go pings
    /// with every answer (to size its window), and a write of their own cost a
    /// `sendto` and a wake-up of the server per call (at 5k calls/s on loopback, most
    /// of the generator's CPU was the kernel waking the server). They wait at most
    /// [`PING_ACK_WAIT_NS`] ([`Worker::release_ping_acks`]).
    fn hold_ping_acks(&mut self, carrier: usize, now: u64) {
        if self.acks_waiting.is_empty() {
            self.acks_waiting_since_ns = now;
        }
        let held = (carrier as u32, self.conns[carrier].generation);
        if self.acks_waiting.last() != Some(&held) {
            self.acks_waiting.push(held);
        }
    }

    /// Writes the held PING ACKs when waiting `wait_ns` more (and a precision budget)
    /// would keep the first of them past [`PING_ACK_WAIT_NS`].
    pub(super) fn release_ping_acks(&mut self, now: u64, wait_ns: u64) {
        if self.acks_waiting.is_empty()
            || now
                .saturating_add(wait_ns)
                .saturating_add(self.precision_ns)
                < self.acks_waiting_since_ns + PING_ACK_WAIT_NS
        {
            return;
        }
        let mut held = std::mem::take(&mut self.acks_waiting);
        for &(carrier, generation) in &held {
            if self.conns[carrier as usize].generation == generation {
                self.queue_flush(carrier as usize);
            }
        }
        held.clear();
        self.acks_waiting = held;
        self.flush_queued();
    }

    /// `len` bytes of a DATA frame on `stream`, `data` of them its data (a flow's
    /// gRPC step keeps them for its checks).
    fn h2_data(
        &mut self,
        carrier: usize,
        stream: u32,
        (len, data): (usize, &[u8]),
        end_stream: bool,
        now: u64,
    ) {
        let Some((session, frames)) = self.conns[carrier].session_and_frames() else {
            return;
        };
        let entry = match session.on_data(stream, len, frames) {
            Ok(Some(entry)) => entry,
            Ok(None) => return,
            Err(err) => return self.h2_connection_error(carrier, err),
        };
        entry.remote_closed |= end_stream;
        let (slot, body_read) = (entry.slot as usize, entry.body_read);
        let conn = &mut self.conns[slot];
        let Some(request) = conn.request.as_mut() else {
            return;
        };
        request.bytes_in += len as u64;
        conn.parser.keep_data(data);
        if conn.parser.messages.on {
            let at_ns = arrived_ns(self.arrival_age_ns, now, request.dispatched_ns);
            conn.parser.messages.feed(data, at_ns, &self.tally);
            if conn.parser.messages.announced_len() > Some(MAX_MESSAGE_BYTES) {
                return self.fail(slot, MESSAGE_TOO_LARGE);
            }
        }
        if conn.parser.status == 0 {
            let cause = Cause::new(ErrorKind::Protocol, "h2: DATA before the response head");
            return self.fail(slot, cause);
        }
        let body_limit = self.shared.attacks[request.attack as usize].body_limit;
        if end_stream || body_read >= body_limit {
            self.complete(slot, now);
        }
    }

    fn h2_event(&mut self, carrier: usize, event: Event, now: u64) {
        match event {
            Event::Nothing | Event::PingAnswered => {}
            Event::Head {
                stream,
                status,
                end_stream,
                block_bytes,
            } => self.h2_head(carrier, stream, status, end_stream, block_bytes, now),
            Event::Reset { stream, code } => {
                let Some(slot) = self.remote_closed(carrier, stream) else {
                    return;
                };
                let cause = Cause::new(ErrorKind::Stream, frame::rst_stream_text(code));
                if code == frame::REFUSED_STREAM {
                    self.retry_once(slot, cause);
                } else {
                    self.fail(slot, cause);
                }
            }
            Event::Ready => self.send_pending(carrier),
            Event::GoAway { last_stream, code } => self.h2_goaway(carrier, last_stream, code),
            Event::WindowOpened => self.send_blocked_bodies(carrier),
        }
    }

    /// Marks a stream ended by the server; its slot, if it is one of ours.
    fn remote_closed(&mut self, carrier: usize, stream: u32) -> Option<usize> {
        let entry = self.conns[carrier]
            .session_mut()?
            .streams
            .get_mut(&stream)?;
        entry.remote_closed = true;
        Some(entry.slot as usize)
    }

    fn h2_head(
        &mut self,
        carrier: usize,
        stream: u32,
        status: u16,
        end_stream: bool,
        block_bytes: usize,
        now: u64,
    ) {
        let age_ns = self.arrival_age_ns;
        let grpc = self.hosts.hosts[self.conns[carrier].host].grpc;
        let Some(session) = self.conns[carrier].session_mut() else {
            return;
        };
        let Some(entry) = session.streams.get_mut(&stream) else {
            return;
        };
        entry.remote_closed |= end_stream;
        let slot = entry.slot as usize;
        let mut location = std::mem::take(&mut session.location);
        let grpc_status = session.grpc_status.take();
        let mut grpc_message = std::mem::take(&mut session.grpc_message);
        let encoding = if grpc {
            grpc_encoding(&session.grpc_encoding)
        } else {
            Ok(())
        };
        let fields = std::mem::take(&mut session.fields);
        let conn = &mut self.conns[slot];
        conn.parser.keep_fields(&fields);
        if let Some(session) = self.conns[carrier].session_mut() {
            session.fields = fields;
        }
        let conn = &mut self.conns[slot];
        let Some(request) = conn.request.as_mut() else {
            return;
        };
        if request.first_byte_ns == 0 {
            request.first_byte_ns = arrived_ns(age_ns, now, request.dispatched_ns);
        }
        request.bytes_in += block_bytes as u64;
        // Trailers, or a trailers-only answer, carry a gRPC call's status.
        if grpc_status.is_some() {
            conn.parser.grpc_status = grpc_status;
            std::mem::swap(&mut conn.parser.grpc_message, &mut grpc_message);
        }
        let failure = match status {
            // A gRPC answer in an encoding never offered cannot be read.
            200..=299 if encoding.is_err() => encoding.err(),
            // Interim heads (100 Continue, 103 Early Hints): the answer is still to come.
            100..=199 if !end_stream => None,
            100..=199 => Some("h2: stream ended after an interim head"),
            0 if conn.parser.status == 0 => Some("h2: response head without :status"),
            0 if !end_stream => Some("h2: trailers without END_STREAM"),
            0 => None,
            status => {
                conn.parser.status = status;
                std::mem::swap(&mut conn.parser.location, &mut location);
                None
            }
        };
        if let Some(session) = self.conns[carrier].session_mut() {
            location.clear();
            session.location = location;
            grpc_message.clear();
            session.grpc_message = grpc_message;
        }
        match failure {
            Some(reason) => self.fail(slot, Cause::new(ErrorKind::Protocol, reason)),
            None if end_stream && !(100..200).contains(&status) => self.complete(slot, now),
            None => {}
        }
    }

    /// The server takes no new streams on this connection: those it never saw go
    /// once more elsewhere; the rest finish, then the connection closes.
    fn h2_goaway(&mut self, carrier: usize, last_stream: u32, code: u32) {
        let host = self.conns[carrier].host;
        self.pools[host].carriers.retain(|&c| c as usize != carrier);
        let Some(session) = self.conns[carrier].session_mut() else {
            return;
        };
        let mut unseen: Vec<(u32, u32)> = session
            .streams
            .iter_mut()
            .filter(|(id, _)| **id > last_stream)
            .map(|(id, entry)| {
                entry.remote_closed = true;
                (*id, entry.slot)
            })
            .collect();
        unseen.sort_unstable();
        let attached = session.attached;
        for (_, slot) in unseen {
            self.retry_once(
                slot as usize,
                Cause::new(ErrorKind::GoAway, frame::goaway_text(code)),
            );
        }
        if attached == 0 {
            self.close(carrier);
        }
    }

    /// Request bodies that were waiting for window go on as far as it allows.
    fn send_blocked_bodies(&mut self, carrier: usize) {
        let Some(session) = self.conns[carrier].session() else {
            return;
        };
        let mut sent_bytes = 0;
        for (id, slot) in session.blocked_bodies() {
            let slot = slot as usize;
            let bytes = self.conns[slot].take_request_bytes();
            if let Some((session, frames)) = self.conns[carrier].session_and_frames() {
                let before = frames.len();
                session.send_body(id, bytes.as_slice(), frames);
                let wire_bytes = (frames.len() - before) as u64;
                if let Some(link) = self.conns[slot].stream_mut() {
                    link.bytes_out += wire_bytes;
                }
                sent_bytes += wire_bytes;
            }
            self.conns[slot].set_request_bytes(bytes);
        }
        // A window opened with no body waiting (grpc-go tops windows up with every
        // answer) writes nothing, and must not carry a held PING ACK off early.
        if sent_bytes > 0 {
            self.queue_flush(carrier);
        }
    }

    /// The server broke the protocol: say so in a GOAWAY and fail every stream.
    fn h2_connection_error(&mut self, carrier: usize, err: ConnError) {
        if let Some((_, frames)) = self.conns[carrier].session_and_frames() {
            frame::put_goaway(frames, 0, err.code);
            let _ = self.conns[carrier].write_some();
        }
        self.fail_carrier(
            carrier,
            Why::Cause(Cause::new(ErrorKind::Protocol, err.reason)),
        );
    }

    /// The connection is gone: its streams fail with it (or go once more, as on a
    /// kept-alive HTTP/1.1 connection), oldest first, and the socket closes.
    pub(super) fn fail_carrier(&mut self, carrier: usize, why: Why) {
        let Some(mut session) = self.conns[carrier].take_session() else {
            return;
        };
        let host = self.conns[carrier].host;
        self.pools[host].carriers.retain(|&c| c as usize != carrier);
        let mut sent: Vec<(u32, u32)> = session
            .streams
            .iter()
            .map(|(id, e)| (*id, e.slot))
            .collect();
        sent.sort_unstable();
        let streams: Vec<u32> = sent
            .into_iter()
            .map(|(_, slot)| slot)
            .chain(session.pending.drain(..))
            .collect();
        self.close(carrier);
        for slot in streams {
            match why {
                Why::Cause(cause) => self.fail_or_retry(slot as usize, cause),
                Why::Id(id) => self.fail_with_id(slot as usize, id),
            }
        }
    }

    /// Frees a stream slot; a stream the server has not ended is cancelled.
    pub(super) fn end_stream(&mut self, slot: usize) {
        let stream = &mut self.conns[slot];
        let Some(link) = stream.stream() else {
            return;
        };
        let (carrier, generation, id) = (link.carrier as usize, link.carrier_generation, link.id);
        stream.reset();
        self.free.push(slot as u32);
        let Some(conn) = self
            .conns
            .get_mut(carrier)
            .filter(|c| c.generation == generation)
        else {
            return;
        };
        let Some((session, frames)) = conn.session_and_frames() else {
            return;
        };
        session.attached = session.attached.saturating_sub(1);
        if id == 0 {
            session.pending.retain(|&s| s as usize != slot);
        } else if let Some(entry) = session.streams.remove(&id)
            && !entry.remote_closed
        {
            frame::put_rst_stream(frames, id, frame::CANCEL);
            self.queue_flush(carrier);
        }
        let drained = self.conns[carrier]
            .session()
            .is_some_and(|s| (s.state == State::Draining || s.single_use) && s.attached == 0);
        if drained {
            self.close(carrier);
        }
    }

    pub(super) fn queue_flush(&mut self, carrier: usize) {
        if let Wire::H2Conn { flush_queued, .. } = &mut self.conns[carrier].wire
            && !*flush_queued
        {
            *flush_queued = true;
            self.flushes.push(carrier as u32);
        }
    }

    /// Writes what HTTP/2 connections queued: one write for all of a pass's frames.
    pub(super) fn flush_queued(&mut self) {
        let mut flushes = std::mem::take(&mut self.flushes);
        for &carrier in &flushes {
            let conn = &mut self.conns[carrier as usize];
            let Wire::H2Conn { flush_queued, .. } = &mut conn.wire else {
                continue;
            };
            if !*flush_queued {
                continue;
            }
            *flush_queued = false;
            if conn.phase == Phase::Open && conn.has_unwritten() {
                self.write(carrier as usize);
            }
        }
        // Held ACKs went out with whatever else was written on their connection.
        self.acks_waiting
            .retain(|(carrier, _)| !flushes.contains(carrier));
        flushes.clear();
        self.flushes = flushes;
    }

    /// Whether `slot`'s unwritten bytes are PING ACKs held for its next write.
    pub(super) fn holds_ping_acks(&self, slot: usize) -> bool {
        let held = (slot as u32, self.conns[slot].generation);
        self.acks_waiting.contains(&held)
    }

    /// A new connection to `host` carries an HTTP/2 session.
    pub(super) fn new_session(&mut self, host: usize, slot: usize) {
        let mut session = Box::new(Session::new(State::Starting));
        // A flow's gRPC steps check and extract from metadata and trailers.
        let flows = self.shared.attacks.iter().any(|a| a.flow.is_some());
        session.keep_fields = flows && self.hosts.hosts[host].grpc;
        self.conns[slot].wire = Wire::H2Conn {
            session,
            flush_queued: false,
        };
        self.pools[host].carriers.push(slot as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::grpc_encoding;

    #[test]
    fn only_the_encodings_offered_are_read() {
        let rows: [(&[u8], bool); 6] = [
            (b"", true),
            (b"identity", true),
            (b"gzip", true),
            (b"br", false),
            (b"GZIP", false),
            (b"gzip, br", false),
        ];
        for (name, read) in rows {
            assert_eq!(grpc_encoding(name).is_ok(), read, "{name:?}");
        }
        assert_eq!(
            grpc_encoding(b"snappy"),
            Err("grpc: the answer's grpc-encoding is not one we accept (identity, gzip)")
        );
    }
}
