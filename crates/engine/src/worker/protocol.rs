//! The protocol seam: every event whose handling depends on what a slot speaks
//! ([`Wire`]) or what a host speaks ([`Proto`]) is one exhaustive `match` here, which
//! hands it to `h1.rs` or `h2.rs`. What every protocol shares (records, retries,
//! redirects, timeouts, closing a socket) stays in `exchange.rs`. A new protocol is a
//! new variant and a new module: the compiler names every `match` it must join.
//!
//! This module names no item of `h1.rs` or `h2.rs` (it calls their `Worker` methods),
//! so they may use its types. A `match` costs what the `Option` tests it replaced.

use record::Protocol;

use super::Worker;
use crate::conn::{Conn, Phase, Wire};
use crate::errors::Cause;

/// Which protocol a host's connections speak, as far as this worker knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Proto {
    Http1,
    Http2,
    /// https with h2 offered in ALPN: each handshake tells.
    Negotiate,
}

/// Why a connection's requests fail with it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Why {
    Cause(Cause),
    /// An error already interned (TLS errors).
    Id(u32),
}

impl Worker {
    /// The protocol of `host`'s connections (decided on first use).
    pub(super) fn proto(&mut self, host: usize) -> Proto {
        if let Some(proto) = self.pools[host].proto {
            return proto;
        }
        let tls = self.hosts.hosts[host].tls_name.is_some();
        let grpc = self.hosts.hosts[host].grpc;
        let proto = match (tls, self.shared.http2 || grpc, self.shared.h2c || grpc) {
            (true, true, _) => Proto::Negotiate,
            (false, _, true) => Proto::Http2,
            _ => Proto::Http1,
        };
        self.pools[host].proto = Some(proto);
        proto
    }

    /// What a request to `host` says it went over until it goes (one that never goes,
    /// for want of a connection, still says what it asked for).
    pub(super) fn asked_protocol(&mut self, host: usize) -> Protocol {
        match self.proto(host) {
            Proto::Http1 | Proto::Negotiate => Protocol::Http1,
            Proto::Http2 => Protocol::Http2,
        }
    }

    /// Connections to open to `host` before time zero at most.
    pub(super) fn prewarm_cap(&mut self, host: usize) -> usize {
        match self.proto(host) {
            Proto::Http1 => self.max_per_host,
            // One HTTP/2 connection carries many streams: others open when it is full.
            Proto::Http2 | Proto::Negotiate => 1,
        }
    }

    /// A slot for a request to `host`: an idle or new connection (HTTP/1.1) or a
    /// stream, or `None` at the host's connection cap. Without `keepalive`, an HTTP/2
    /// request gets a connection of its own, closed after it (as Go's client); an
    /// HTTP/1.1 one asks for `Connection: close`.
    pub(super) fn acquire(&mut self, host: usize, keepalive: bool) -> Result<Option<usize>, Cause> {
        match self.proto(host) {
            Proto::Http1 => self.acquire_connection(host),
            Proto::Http2 | Proto::Negotiate => self.acquire_stream(host, keepalive),
        }
    }

    /// A new connection's slot takes its host's protocol.
    pub(super) fn attach_protocol(&mut self, host: usize, slot: usize) {
        match self.proto(host) {
            Proto::Http1 => {}
            Proto::Http2 | Proto::Negotiate => self.new_session(host, slot),
        }
    }

    /// The connect (and TLS setup) is done: what the connection does first.
    pub(super) fn opened(&mut self, slot: usize) {
        match self.conns[slot].wire {
            Wire::Http1 => self.h1_opened(slot),
            Wire::H2Conn { .. } => self.h2_opened(slot),
            // A stream has no socket of its own.
            Wire::H2Stream(_) => {}
        }
    }

    /// A request was attached to `slot`: send it.
    pub(super) fn send(&mut self, slot: usize) {
        match &self.conns[slot].wire {
            Wire::H2Stream(link) => {
                let carrier = link.carrier as usize;
                self.send_stream(slot, carrier);
            }
            // A connection slot of HTTP/2 carries no request: only HTTP/1.1 gets here.
            Wire::Http1 | Wire::H2Conn { .. } => {
                if self.conns[slot].phase == Phase::Open {
                    self.write(slot);
                }
            }
        }
    }

    /// Feeds `n` bytes of `read_buf`; false when the connection needs no more reading.
    pub(super) fn on_data(&mut self, slot: usize, n: usize) -> bool {
        match self.conns[slot].wire {
            Wire::Http1 => self.h1_read(slot, n),
            Wire::H2Conn { .. } => self.h2_read(slot, n),
            Wire::H2Stream(_) => false,
        }
    }

    /// The peer closed the connection.
    pub(super) fn on_eof(&mut self, slot: usize) {
        match self.conns[slot].wire {
            Wire::Http1 => self.h1_eof(slot),
            Wire::H2Conn { ref session, .. } => {
                // A TLS server read our preface as a broken handshake and hung up
                // (grpc-go's does so without a word).
                let tls_port = session.waiting() && self.conns[slot].tls.is_none();
                let operation = if tls_port {
                    "h2: connection closed before the server's SETTINGS (a TLS port? then https://HOST:PORT)"
                } else {
                    "h2: connection closed"
                };
                let cause = Cause::new(record::ErrorKind::Closed, operation);
                self.fail_carrier(slot, Why::Cause(cause));
            }
            Wire::H2Stream(_) => {}
        }
    }

    /// After a read: a TLS handshake may end without data, and ALPN has then said what
    /// to speak. False when the connection stopped speaking what it spoke (the caller
    /// lets it be).
    pub(super) fn negotiated(&mut self, slot: usize) -> bool {
        match self.conns[slot].wire {
            Wire::H2Conn { .. } => self.negotiate(slot),
            Wire::Http1 | Wire::H2Stream(_) => true,
        }
    }

    /// The transport failed: a connection's requests fail (or go once more, as on a
    /// kept-alive connection the server had closed). Failures stay out of the code of
    /// the paths that meet them (a write, a read).
    #[inline(never)]
    pub(super) fn fail_or_retry(&mut self, slot: usize, cause: Cause) {
        match self.conns[slot].wire {
            Wire::H2Conn { .. } => self.fail_carrier(slot, Why::Cause(cause)),
            Wire::Http1 | Wire::H2Stream(_) => self.retry_if_stale(slot, cause),
        }
    }

    /// The request of `slot` (every request, on an HTTP/2 connection) fails with an
    /// interned error.
    #[inline(never)]
    pub(super) fn fail_with_id(&mut self, slot: usize, error: u32) {
        match self.conns[slot].wire {
            Wire::H2Conn { .. } => self.fail_carrier(slot, Why::Id(error)),
            Wire::Http1 | Wire::H2Stream(_) => self.record_failure(slot, error),
        }
    }

    /// The response is complete and its request taken off: the slot is free for the
    /// next (`reusable`: the server keeps the connection), or closes.
    pub(super) fn released(&mut self, slot: usize, reusable: bool) {
        match &self.conns[slot].wire {
            Wire::H2Stream(link) => {
                let carrier = link.carrier as usize;
                self.conns[carrier].reused = true;
                self.end_stream(slot);
            }
            // A connection slot of HTTP/2 carries no request: only HTTP/1.1 gets here.
            Wire::Http1 | Wire::H2Conn { .. } => self.h1_released(slot, reusable),
        }
    }

    /// Ends what `slot` is: a stream, a connection with its streams, or a socket.
    pub(super) fn close(&mut self, slot: usize) {
        if self.conns[slot].phase == Phase::Free {
            return;
        }
        match self.conns[slot].wire {
            Wire::H2Stream(_) => self.end_stream(slot),
            Wire::H2Conn { .. } => {
                let cause = Cause::new(record::ErrorKind::Closed, "h2: connection closed");
                self.fail_carrier(slot, Why::Cause(cause));
            }
            Wire::Http1 => self.close_socket(slot),
        }
    }

    /// Whether the connection carrying `slot`'s request is still connecting (its
    /// timeout is then a connect timeout).
    pub(super) fn connecting(&self, slot: usize) -> bool {
        let conn = &self.conns[slot];
        let carrier = match &conn.wire {
            Wire::H2Stream(link) => &self.conns[link.carrier as usize],
            Wire::Http1 | Wire::H2Conn { .. } => conn,
        };
        carrier.phase == Phase::Connecting
    }
}

/// Whether a connection offers h2 in ALPN (its TLS configuration).
pub(super) fn offers_h2(conn: &Conn) -> bool {
    match conn.wire {
        Wire::H2Conn { .. } => true,
        Wire::Http1 | Wire::H2Stream(_) => false,
    }
}

/// What a request attached to `conn` goes over.
pub(super) fn record_protocol(conn: &Conn) -> Protocol {
    match conn.wire {
        Wire::H2Stream(_) => Protocol::Http2,
        Wire::Http1 | Wire::H2Conn { .. } => Protocol::Http1,
    }
}

/// The request's bytes on the wire (its frames', for an HTTP/2 stream).
pub(super) fn request_len(conn: &Conn) -> u64 {
    match &conn.wire {
        Wire::H2Stream(link) => link.bytes_out,
        Wire::Http1 | Wire::H2Conn { .. } => conn.request_bytes_len(),
    }
}

/// The reason phrase of the response `conn` received with `status`.
pub(super) fn reason_phrase(conn: &Conn, status: u16) -> &[u8] {
    match conn.wire {
        // HTTP/2 has no reason phrase; Go's client (vegeta) names the status.
        Wire::H2Stream(_) => canonical_reason(status),
        Wire::Http1 | Wire::H2Conn { .. } => conn.parser.reason(),
    }
}

/// The reason phrase HTTP/1.1 would send with `status` (empty if it has none).
fn canonical_reason(status: u16) -> &'static [u8] {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .map_or(b"", str::as_bytes)
}
