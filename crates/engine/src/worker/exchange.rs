//! What happens on a connection, whatever it speaks: the connect completes, the
//! request goes out, the response comes back (or does not), and the request ends as
//! a record: followed to its `Location`, sent once more, or failed. What differs by
//! protocol goes through `protocol.rs`.

use std::sync::Arc;

use record::{Close, ClosedBy, EntryKind, ErrorKind, GrpcStatus, Record};

use super::Worker;
use super::dispatch::connect_error_kind;
use super::protocol::{offers_h2, reason_phrase, request_len};
use crate::arrival::arrived_ns;
use crate::conn::{CallTally, Hop, InFlight, Phase, ReadOutcome, RequestBytes, WriteOutcome};
use crate::errors::Cause;
use crate::redirect::{self, Next};
use crate::stream_tally::StreamTally;

impl Worker {
    /// The connect finished; true if the connection is now open.
    pub(super) fn finish_connect(&mut self, slot: usize) -> bool {
        let conn = &mut self.conns[slot];
        let failure = match conn.socket.as_ref().map(socket2::Socket::take_error) {
            Some(Ok(None)) => None,
            Some(Ok(Some(err)) | Err(err)) => {
                Some(Cause::io(connect_error_kind(&err), "connect", &err))
            }
            None => Some(Cause::new(ErrorKind::Io, "connect: no socket")),
        };
        if let Some(cause) = failure {
            self.fail(slot, cause);
            return false;
        }
        let offer_h2 = offers_h2(conn);
        let shared_config = if offer_h2 {
            &self.shared.tls_h2
        } else {
            &self.shared.tls
        };
        let tls_config = match (shared_config, &self.hosts.hosts[conn.host].tls_name) {
            // A redirect from http to https in a run that had no https target.
            (None, Some(_)) => {
                crate::tls::client_config(&crate::TlsOptions::default(), offer_h2).ok()
            }
            (config, _) => config.clone(),
        };
        let host_name = self.hosts.hosts[conn.host].tls_name.as_ref();
        let name = host_name.map(|name| self.shared.tls_server_name.as_ref().unwrap_or(name));
        if let (Some(config), Some(name)) = (&tls_config, name) {
            match rustls::ClientConnection::new(Arc::clone(config), name.clone()) {
                Ok(tls) => conn.tls = Some(Box::new(tls)),
                Err(err) => {
                    let id = self.errors.tls(&err);
                    self.fail_with_id(slot, id);
                    return false;
                }
            }
        }
        conn.phase = Phase::Open;
        self.opened(slot);
        self.conns[slot].phase == Phase::Open
    }

    pub(super) fn write(&mut self, slot: usize) {
        if let WriteOutcome::Failed(err) = self.conns[slot].write_some() {
            let cause = Cause::io(transport_error_kind(&err), "write", &err);
            self.fail_or_retry(slot, cause);
        }
    }

    /// Reads until the socket is drained. Edge-triggered epoll reports new data once,
    /// so a short read means "drained" unless the peer also closed (`to_end`).
    pub(super) fn read(&mut self, slot: usize, to_end: bool) {
        loop {
            let drained_on_short_read = self.conns[slot].tls.is_none() && !to_end;
            if to_end {
                // Read on to the end of stream, past what looked drained.
                self.conns[slot].tls_drained = false;
            }
            match self.conns[slot].read_some(&mut self.read_buf) {
                ReadOutcome::Data(n) => {
                    self.arrival_age_ns = self.conns[slot].arrival.age_ns();
                    let more = self.on_data(slot, n);
                    self.arrival_age_ns = 0;
                    let drained = n < self.read_buf.len() && drained_on_short_read;
                    if (!more && !to_end) || drained || self.conns[slot].phase == Phase::Free {
                        return;
                    }
                }
                ReadOutcome::WouldBlock => return,
                ReadOutcome::Eof => return self.on_eof(slot),
                ReadOutcome::Failed(err) => {
                    let cause = Cause::io(transport_error_kind(&err), "read", &err);
                    return self.fail_or_retry(slot, cause);
                }
                ReadOutcome::Tls(err) => {
                    let id = self.errors.tls(&err);
                    return self.fail_with_id(slot, id);
                }
            }
        }
    }

    /// The response is complete: record it (or follow it) and free the connection.
    pub(super) fn complete(&mut self, slot: usize, now: u64) {
        let conn = &mut self.conns[slot];
        let Some(attack) = conn.request.as_ref().map(|r| r.attack as usize) else {
            return;
        };
        let options = &self.shared.attacks[attack];
        let status = conn.parser.status;
        let follow = redirect::is_redirect(status)
            && options.redirects >= 0
            && !conn.parser.location.is_empty();
        let location = if follow {
            std::mem::take(&mut conn.parser.location)
        } else {
            Vec::new()
        };
        let grpc_status = conn.parser.grpc_status;
        let error = match (status, grpc_status) {
            (200..400, None | Some(GrpcStatus::OK)) => 0,
            (200..400, Some(code)) => self.errors.grpc(code, &conn.parser.grpc_message),
            _ => self.errors.status(status, reason_phrase(conn, status)),
        };
        let reusable = !conn.parser.close && options.keepalive;
        if conn.request.as_ref().is_some_and(InFlight::is_flow) {
            self.take_kept_answer(slot);
        }
        let Some(mut request) = self.take_request(slot) else {
            return;
        };
        self.push_call_figures(slot, &mut request, now, ClosedBy::Server);
        self.released(slot, reusable);
        if follow {
            if request.is_flow() {
                self.keep_redirect_cookies(&request, now);
            }
            self.follow_redirect(request, status, &location, now);
        } else {
            self.push_answer(&request, now, status, error, grpc_status);
        }
    }

    /// Sends the request on to its `Location`, or records why it cannot go.
    fn follow_redirect(&mut self, mut request: InFlight, status: u16, location: &[u8], now: u64) {
        let shared = Arc::clone(&self.shared);
        let options = &shared.attacks[request.attack as usize];
        if request.redirects_left <= 0 {
            let id = self.errors.redirect_limit(options.redirects);
            return self.push_record(&request, now, 0, id);
        }
        request.redirects_left -= 1;
        let base = match request.lazy.as_deref() {
            Some(target) => target,
            None => &options.targets[request.target_index as usize].target,
        };
        let (url, method) = request
            .hop
            .as_ref()
            .map_or((&base.url, base.method.as_str()), |hop| {
                (&hop.url, hop.method.as_str())
            });
        let trace = (shared.trace.as_ref())
            .and_then(|t| t.ids(request.attack, request.seq))
            .map(|ids| redirect::HopTrace {
                ids,
                state: shared.trace_state.as_ref(),
            });
        let (url, method, mut bytes) = match redirect::next_hop(
            base,
            (url, method),
            status,
            location,
            options.keepalive,
            trace,
        ) {
            Next::Follow { url, method, bytes } => (url, method, bytes),
            Next::Refuse(why) => {
                return self.record_cause(&request, now, Cause::new(ErrorKind::Redirect, why));
            }
        };
        let Ok(host) = self.hosts.resolve(&url, shared.unix_socket.as_ref()) else {
            return self.record_cause(
                &request,
                now,
                Cause::new(
                    ErrorKind::Redirect,
                    "redirect: cannot resolve the Location host",
                ),
            );
        };
        self.pools
            .resize_with(self.hosts.hosts.len(), super::Pool::default);
        let head_only = method == "HEAD";
        if request.is_flow() {
            self.add_hop_cookies(&request, &url, &mut bytes, now);
        }
        request.hop = Some(Box::new(Hop { url, method }));
        match self.acquire(host, options.keepalive) {
            Ok(Some(slot)) => self.begin(slot, request, RequestBytes::Owned(bytes), head_only),
            Ok(None) => self.record_cause(
                &request,
                now,
                Cause::new(ErrorKind::Redirect, "redirect: connection limit reached"),
            ),
            Err(cause) => self.record_cause(&request, now, cause),
        }
    }

    /// A failure after the request went out on a kept-alive connection, before any
    /// response byte, usually means the server closed the idle connection first:
    /// send it once more on a new connection, keeping its times (like Go's client).
    pub(super) fn retry_if_stale(&mut self, slot: usize, cause: Cause) {
        let conn = &self.conns[slot];
        let retryable = conn.reused
            && matches!(
                cause.kind,
                ErrorKind::Reset | ErrorKind::Closed | ErrorKind::Io
            )
            && conn
                .request
                .as_ref()
                .is_some_and(|r| !r.retried && r.first_byte_ns == 0);
        if !retryable {
            return self.fail(slot, cause);
        }
        self.resend(slot, cause, true);
    }

    /// A request the server refused or never saw (HTTP/2's REFUSED_STREAM and
    /// GOAWAY) is safe to send again, once.
    pub(super) fn retry_once(&mut self, slot: usize, cause: Cause) {
        match &self.conns[slot].request {
            Some(request) if !request.retried => self.resend(slot, cause, true),
            _ => self.fail(slot, cause),
        }
    }

    /// Sends the request of `slot` once more on another connection, keeping its
    /// times; records `cause` if no connection takes it.
    pub(super) fn resend(&mut self, slot: usize, cause: Cause, retry: bool) {
        let (host, head_only) = (self.conns[slot].host, self.conns[slot].parser.head_only());
        let Some(mut request) = self.take_request(slot) else {
            return;
        };
        let bytes = self.conns[slot].take_request_bytes();
        self.close(slot);
        request.retried |= retry;
        let now = self.clock.now_ns();
        let keepalive = self.shared.attacks[request.attack as usize].keepalive;
        match self.acquire(host, keepalive) {
            Ok(Some(new_slot)) => self.begin(new_slot, request, bytes, head_only),
            Ok(None) => self.record_cause(&request, now, cause),
            Err(connect) => self.record_cause(&request, now, connect),
        }
    }

    pub(super) fn fail(&mut self, slot: usize, cause: Cause) {
        let id = self.errors.cause(cause);
        self.fail_with_id(slot, id);
    }

    /// The request of `slot` ends with `error`, and its connection (or stream) closes.
    pub(super) fn record_failure(&mut self, slot: usize, error: u32) {
        if let Some(mut request) = self.take_request(slot) {
            let now = self.clock.now_ns();
            self.push_call_figures(slot, &mut request, now, ClosedBy::Broken);
            self.push_record(&request, now, 0, error);
        }
        self.close(slot);
    }

    /// A streaming gRPC call's messages, one entry beside its record (docs/GRPC.md):
    /// its times from its send, so the first message and the end compare.
    fn push_call_figures(&mut self, slot: usize, request: &mut InFlight, now: u64, by: ClosedBy) {
        let counter = &self.conns[slot].parser.messages;
        if !counter.on {
            return;
        }
        let sent_ns = request.dispatched_ns;
        let ended_ns = arrived_ns(self.arrival_age_ns, now, sent_ns);
        let (messages_out, bytes_out) = counter.sent_out();
        // The per-second figures had its messages as they came and went; what it
        // sent and they did not have yet (its body, once it went) joins them now.
        let tallied = &mut request.call_tally;
        tally_sent(&self.tally, tallied, (messages_out, bytes_out));
        if std::mem::take(tallied).open {
            self.tally.closed();
        }
        self.connections.push(record::Connection {
            kind: EntryKind::GrpcCall,
            attack: request.attack,
            target: request.target,
            seq: request.seq,
            opened_unix_ns: self.clock.unix_ns(sent_ns),
            closed_unix_ns: self.clock.unix_ns(ended_ns.max(sent_ns)),
            first_message_ns: (counter.messages > 0)
                .then(|| counter.first_ns.saturating_sub(sent_ns)),
            messages_out,
            bytes_out,
            messages_in: counter.messages,
            bytes_in: counter.payload_bytes,
            latency: counter.gaps.clone(),
            round_trips: counter.round_trips.clone(),
            close: Close { by, code: 0 },
            ..record::Connection::default()
        });
    }

    fn record_cause(&mut self, request: &InFlight, now: u64, cause: Cause) {
        // A streamed call sent again that found no connection has no entry: it
        // closes in the per-second figures too.
        if request.call_tally.open {
            self.tally.closed();
        }
        let id = self.errors.cause(cause);
        self.push_record(request, now, 0, id);
    }

    fn take_request(&mut self, slot: usize) -> Option<InFlight> {
        let mut request = self.conns[slot].request.take()?;
        let state = &mut self.attacks[request.attack as usize];
        state.in_flight.remove(&mut self.conns, slot);
        state.in_flight_count -= 1;
        request.bytes_out += request_len(&self.conns[slot]);
        Some(request)
    }

    /// The request has ended at `now`: one record, and its user thinks again. Its
    /// latency ends when the answer arrived, if it ended in a read (`arrival.rs`);
    /// its user goes on from now, when the worker saw it.
    pub(super) fn push_record(&mut self, request: &InFlight, now: u64, status: u16, error: u32) {
        self.push_answer(request, now, status, error, None);
    }

    /// [`Worker::push_record`] of an answer, with its gRPC status if it had one.
    fn push_answer(
        &mut self,
        request: &InFlight,
        now: u64,
        status: u16,
        error: u32,
        grpc_status: Option<GrpcStatus>,
    ) {
        let answered_ns = arrived_ns(self.arrival_age_ns, now, request.dispatched_ns);
        let (error, checks_failed) = if request.is_flow() {
            self.flow_answered(request, now, answered_ns, (status, grpc_status), error)
        } else {
            (error, 0)
        };
        self.batch.push(Record {
            attack: request.attack,
            target: request.target,
            seq: request.seq,
            intended_unix_ns: self.clock.unix_ns(request.intended_ns),
            send_lag_ns: request.dispatched_ns.saturating_sub(request.intended_ns),
            latency_ns: answered_ns.saturating_sub(request.intended_ns),
            ttfb_ns: if request.first_byte_ns == 0 {
                0
            } else {
                request.first_byte_ns.saturating_sub(request.dispatched_ns)
            },
            status,
            error,
            bytes_in: request.bytes_in,
            bytes_out: request.bytes_out,
            protocol: request.protocol,
            checks_failed,
            grpc_status,
        });
        self.counters.completed += 1;
        let attack = request.attack as usize;
        let state = &mut self.attacks[attack];
        state.completed += 1;
        if state.flow.is_none() {
            let split = state.split;
            state.user_finished(&self.shared.attacks[attack].plan, now, split);
        }
    }

    /// Closes the socket of `slot` (closing removes it from epoll) and frees the slot.
    pub(super) fn close_socket(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        self.pools[conn.host].open -= 1;
        self.counters.connections_open -= 1;
        conn.reset();
        self.free.push(slot as u32);
    }
}

fn transport_error_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
            ErrorKind::Reset
        }
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
        std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::Io,
    }
}

/// Counts in `tally` what a streamed call sent (`sent_out`: messages and payload
/// bytes so far) that `tallied` says it has not counted yet.
pub(super) fn tally_sent(tally: &StreamTally, tallied: &mut CallTally, sent_out: (u64, u64)) {
    let (messages, bytes) = sent_out;
    tally.sent(
        messages.saturating_sub(tallied.messages_out),
        bytes.saturating_sub(tallied.bytes_out),
    );
    tallied.messages_out = tallied.messages_out.max(messages);
    tallied.bytes_out = tallied.bytes_out.max(bytes);
}
