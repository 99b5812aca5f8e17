//! Which protocol a new connection speaks, decided once per connection: over TLS, ALPN
//! picks `h2` or HTTP/1.1; in cleartext, a peek at the first bytes spots HTTP/2's
//! prior-knowledge preface (h2c) and anything else is HTTP/1.1. So the HTTP/1.1 path
//! pays one `recv(MSG_PEEK)` per connection and nothing per request.

use std::rc::Rc;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::worker::Worker;

/// What an HTTP/2 client with prior knowledge sends first (RFC 9113 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Longest a client may take to finish its TLS handshake or its h2c preface.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often to look again at a preface that came in pieces. A peek returns at once
/// while unread bytes wait, so it cannot wait for more; this only happens to clients
/// whose first segment is shorter than 24 bytes.
const PEEK_AGAIN: Duration = Duration::from_millis(1);

/// Serves one accepted connection, counted in `loadlab_sim_connections`.
pub(crate) async fn serve(worker: Rc<Worker>, stream: TcpStream, peer_is_loopback: bool) {
    worker.stats.connections_delta(1);
    match worker.shared.tls.as_ref().map(|tls| tls.acceptor.clone()) {
        Some(acceptor) => serve_tls(Rc::clone(&worker), &acceptor, stream, peer_is_loopback).await,
        None => serve_cleartext(Rc::clone(&worker), stream, peer_is_loopback).await,
    }
    worker.stats.connections_delta(-1);
}

async fn serve_cleartext(worker: Rc<Worker>, stream: TcpStream, peer_is_loopback: bool) {
    match sniff(&stream).await {
        Ok(Some(Sniffed::Http2)) => crate::conn_h2::serve(worker, stream, peer_is_loopback).await,
        Ok(Some(Sniffed::Http1)) => crate::conn::serve(worker, stream, peer_is_loopback).await,
        // Closed before saying anything, a socket error, or a preface left unfinished.
        Ok(None) | Err(_) => {}
    }
}

async fn serve_tls(
    worker: Rc<Worker>,
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    peer_is_loopback: bool,
) {
    let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await else {
        return;
    };
    if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
        crate::conn_h2::serve(worker, tls, peer_is_loopback).await;
    } else {
        crate::conn::serve(worker, tls, peer_is_loopback).await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sniffed {
    Http1,
    Http2,
}

/// Peeks until the bytes seen differ from the preface or hold all of it. An idle client
/// may wait for its first bytes as long as it likes (as HTTP/1.1 keep-alive pools
/// do); a preface started and not finished within [`HANDSHAKE_TIMEOUT`] gives `None`,
/// as does a peer that closes before sending anything.
async fn sniff(stream: &TcpStream) -> std::io::Result<Option<Sniffed>> {
    let mut seen = [0u8; PREFACE.len()];
    let mut deadline = None;
    loop {
        let len = stream.peek(&mut seen).await?;
        if let Some(sniffed) = classify(&seen[..len]) {
            return Ok(Some(sniffed));
        }
        let deadline =
            *deadline.get_or_insert_with(|| std::time::Instant::now() + HANDSHAKE_TIMEOUT);
        if len == 0 || std::time::Instant::now() > deadline {
            return Ok(None);
        }
        tokio::time::sleep(PEEK_AGAIN).await;
    }
}

/// The protocol the first bytes of a connection show; `None` when they are a strict
/// prefix of the preface (or empty) and more are needed to tell.
fn classify(first: &[u8]) -> Option<Sniffed> {
    if first.len() >= PREFACE.len() && first[..PREFACE.len()] == PREFACE[..] {
        Some(Sniffed::Http2)
    } else if PREFACE.starts_with(first) {
        None
    } else {
        Some(Sniffed::Http1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_tell_h2c_from_http11() {
        let rows: &[(&[u8], Option<Sniffed>)] = &[
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Some(Sniffed::Http2)),
            (
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\x12\x04",
                Some(Sniffed::Http2),
            ),
            (b"GET / HTTP/1.1\r\n", Some(Sniffed::Http1)),
            (
                b"POST /_admin/add_recipe HTTP/1.1\r\n",
                Some(Sniffed::Http1),
            ),
            (b"PRI * HTTP/1.1\r\n\r\n", Some(Sniffed::Http1)),
            (b"P", None),
            (b"PRI * HTTP/2.0\r\n", None),
            (b"", None),
            (b"\x16\x03\x01\x02\x00", Some(Sniffed::Http1)),
        ];
        for (bytes, want) in rows {
            assert_eq!(
                classify(bytes),
                *want,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
