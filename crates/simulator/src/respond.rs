//! Writing HTTP/1.1 replies to the connection, including the failure modes that
//! misbehave on the wire (reset, close, stall, malformed, trickle, close mid-body,
//! chunked, and the HTTP/2 modes' nearest HTTP/1.1 forms). HTTP/2's twin is
//! `respond_h2`.
//!
//! Small responses are appended to the connection's output buffer and flushed by the
//! connection loop, so a pipelined batch goes out in one write; large bodies are written
//! straight from the recipe's memory.

use std::io;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::failure::Failure;
use crate::http::{BodyLength, append_simple, finish_head};
use crate::metrics::Protocol;
use crate::reply::{Reply, ReplyKind};
use crate::worker::Worker;

/// Bodies up to this size are copied into the output buffer; larger ones are written
/// from where they live.
const COPY_BODY_BYTES: usize = 16 * 1024;

/// Whether the connection survives the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    KeepOpen,
    Close,
}

/// A byte stream HTTP/1.1 is served over: plain TCP, or TLS over TCP. The TCP socket
/// underneath is what `reset` aborts.
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin {
    fn tcp(&self) -> &TcpStream;
}

impl Transport for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Transport for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// A connection's stream and output buffer.
pub(crate) struct ConnIo<S> {
    pub stream: S,
    pub out: Vec<u8>,
}

impl<S: Transport> ConnIo<S> {
    /// Writes the output buffer, and anything written straight to the stream before.
    pub async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            self.out.clear();
        }
        // TLS may keep back records the socket refused (a full send buffer) even after
        // `write_all` returned; they leave on flush. TCP's flush is a no-op.
        self.stream.flush().await
    }
}

/// Writes (or buffers) one reply and counts it.
pub(crate) async fn write_reply<S: Transport>(
    io: &mut ConnIo<S>,
    reply: Reply,
    worker: &Worker,
) -> io::Result<After> {
    let answer = match reply.kind {
        ReplyKind::Simple {
            status,
            content_type,
            body,
            close,
            count,
        } => {
            let close = close || !reply.keep_alive;
            append_simple(
                &mut io.out,
                (status, content_type),
                &body,
                reply.head_only,
                close,
            );
            if let Some((slot, label)) = count {
                let latency_ns = elapsed_ns(reply.arrival);
                worker
                    .stats
                    .record(slot, label, latency_ns, Protocol::Http1);
            }
            return Ok(if close || !reply.keep_alive {
                After::Close
            } else {
                After::KeepOpen
            });
        }
        ReplyKind::Outcome(answer) => answer,
    };
    let (route, outcome) = (answer.route(), answer.outcome());
    let close = !reply.keep_alive;
    let head = Head {
        prefix: &outcome.head_prefix,
        extra: answer.extra_head(),
    };
    let body = match answer.rendered_body() {
        Some(rendered) => rendered,
        None => outcome.body.pick(&mut *worker.rng.borrow_mut()),
    };
    let after = match &outcome.failure {
        None => plain(io, head, body, reply.head_only, close).await?,
        Some(failure) => misbehave(io, head, body, failure, reply.head_only, close).await?,
    };
    let latency_ns = elapsed_ns(reply.arrival);
    worker
        .stats
        .record(outcome.slot, route.label, latency_ns, Protocol::Http1);
    Ok(after)
}

pub(crate) fn elapsed_ns(since: Instant) -> u64 {
    since.elapsed().as_nanos() as u64
}

fn keep_or_close(close: bool) -> After {
    if close { After::Close } else { After::KeepOpen }
}

/// A response head: the outcome's fixed part, and the rendered template headers (empty
/// for a route without templates, which then costs what it did before templates).
#[derive(Clone, Copy)]
struct Head<'a> {
    prefix: &'a [u8],
    extra: &'a [u8],
}

impl Head<'_> {
    fn finish(self, out: &mut Vec<u8>, length: BodyLength, close: bool) {
        if self.extra.is_empty() {
            finish_head(out, self.prefix, length, close);
        } else {
            out.extend_from_slice(self.prefix);
            finish_head(out, self.extra, length, close);
        }
    }
}

async fn plain<S: Transport>(
    io: &mut ConnIo<S>,
    head: Head<'_>,
    body: &[u8],
    head_only: bool,
    close: bool,
) -> io::Result<After> {
    head.finish(&mut io.out, BodyLength::Bytes(body.len()), close);
    if !head_only {
        if body.len() <= COPY_BODY_BYTES {
            io.out.extend_from_slice(body);
        } else {
            io.flush().await?;
            io.stream.write_all(body).await?;
        }
    }
    Ok(keep_or_close(close))
}

async fn misbehave<S: Transport>(
    io: &mut ConnIo<S>,
    head: Head<'_>,
    body: &[u8],
    failure: &Failure,
    head_only: bool,
    close: bool,
) -> io::Result<After> {
    match *failure {
        // No streams in HTTP/1.1: the stream's reset is the connection's.
        Failure::Reset | Failure::RstStream { .. } => {
            io.flush().await?;
            crate::worker::arm_reset(io.stream.tcp());
            Ok(After::Close)
        }
        Failure::Close => {
            io.flush().await?;
            let _ = io.stream.shutdown().await;
            Ok(After::Close)
        }
        Failure::Stall { for_duration } => {
            io.flush().await?;
            stall(&mut io.stream, for_duration).await;
            Ok(After::Close)
        }
        Failure::Malformed => {
            io.out.extend_from_slice(b"HTTP/1.1 2x0 Simulated Garbage\r\nthis line is not a header\r\ncontent-length: -1\r\n\r\n\x00\x01");
            io.flush().await?;
            Ok(After::Close)
        }
        Failure::CloseMidBody { after_bytes } => {
            head.finish(&mut io.out, BodyLength::Bytes(body.len()), true);
            let cut = after_bytes
                .unwrap_or(body.len() / 2)
                .min(body.len().saturating_sub(1));
            io.out.extend_from_slice(&body[..cut]);
            io.flush().await?;
            Ok(After::Close)
        }
        Failure::Trickle { chunk_bytes, every } => {
            head.finish(&mut io.out, BodyLength::Bytes(body.len()), close);
            io.flush().await?;
            if !head_only {
                trickle(&mut io.stream, body, chunk_bytes, every).await?;
            }
            Ok(keep_or_close(close))
        }
        Failure::GoAway => plain(io, head, body, head_only, true).await,
        Failure::Chunked { chunk_bytes } => {
            head.finish(&mut io.out, BodyLength::Chunked, close);
            if !head_only {
                chunked(&mut io.out, body, chunk_bytes);
            }
            Ok(keep_or_close(close))
        }
    }
}

/// Holds the connection without answering until the client leaves or `limit` passes.
async fn stall(stream: &mut (impl AsyncRead + Unpin), limit: Option<Duration>) {
    let deadline = limit.map(|d| tokio::time::Instant::now() + d);
    let mut scratch = [0u8; 256];
    loop {
        let read = stream.read(&mut scratch);
        let outcome = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, read).await.ok(),
            None => Some(read.await),
        };
        match outcome {
            Some(Ok(n)) if n > 0 => continue,
            _ => return,
        }
    }
}

async fn trickle(
    stream: &mut (impl AsyncWrite + Unpin),
    body: &[u8],
    chunk_bytes: usize,
    every: Duration,
) -> io::Result<()> {
    for (i, piece) in body.chunks(chunk_bytes).enumerate() {
        if i > 0 {
            tokio::time::sleep(every).await;
        }
        stream.write_all(piece).await?;
        stream.flush().await?;
    }
    Ok(())
}

fn chunked(out: &mut Vec<u8>, body: &[u8], chunk_bytes: usize) {
    for piece in body.chunks(chunk_bytes) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
}
