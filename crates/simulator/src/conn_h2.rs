//! One HTTP/2 connection (h2c, or TLS with ALPN `h2`), served by the `h2` crate. Each
//! stream is a request for the same routing as HTTP/1.1, in its own local task
//! ([`crate::respond_h2::serve_stream`]); the connection task drives the frames and
//! carries out what a stream's failure mode asks of the whole connection
//! ([`ConnAction`]: GOAWAY, an abort, garbage).
//!
//! Settings: `SETTINGS_MAX_CONCURRENT_STREAMS` from the options (`simulate
//! -max-streams`), and receive windows of [`STREAM_WINDOW_BYTES`] per stream and
//! [`CONNECTION_WINDOW_BYTES`] per connection, so a client's request bodies never wait
//! for a WINDOW_UPDATE. Response bodies are paced by the client's windows, which only
//! the client can widen.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::task::JoinSet;

use crate::respond_h2::{ConnAction, ConnControl};
use crate::worker::Worker;

/// Receive window per stream: 1 MiB, 16 times the RFC's default, so an upload
/// (`add_recipe`, a POST under test) streams without stopping for WINDOW_UPDATEs.
pub(crate) const STREAM_WINDOW_BYTES: u32 = 1 << 20;
/// Receive window per connection: 16 MiB, room for 16 such streams at once.
pub(crate) const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;
/// Longest a client may take to send its preface and SETTINGS.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest an aborted connection waits for its last frames to leave, and then for the
/// client to close its side.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// A DATA frame on stream 0, which RFC 9113 6.1 makes a connection error
/// (PROTOCOL_ERROR) for every client: the `malformed` failure mode's bytes.
const GARBAGE_FRAME: &[u8] = b"\x00\x00\x04\x00\x00\x00\x00\x00\x00junk";

/// The settings every HTTP/2 connection gets.
fn builder(max_concurrent_streams: u32) -> h2::server::Builder {
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(max_concurrent_streams)
        .initial_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES);
    builder
}

/// Serves one HTTP/2 connection until the client leaves or a failure mode ends it.
pub(crate) async fn serve<T>(worker: Rc<Worker>, io: T, peer_is_loopback: bool)
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let io = SharedIo(Rc::new(RefCell::new(io)));
    let handshake = builder(worker.shared.max_concurrent_streams).handshake::<_, Bytes>(io.clone());
    let Ok(Ok(mut conn)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await else {
        return;
    };
    let control = Rc::new(ConnControl::default());
    // Dropped on return, which aborts the streams still running and so returns their
    // pool workers at once, as a closed HTTP/1.1 connection does.
    let mut streams = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            action = control.asked() => match action {
                Some(ConnAction::Drain) => conn.graceful_shutdown(),
                Some(ConnAction::Abort(reason)) => {
                    conn.abrupt_shutdown(reason);
                    let flush = async { while conn.accept().await.is_some() {} };
                    let _ = tokio::time::timeout(CLOSE_TIMEOUT, flush).await;
                    drop(conn);
                    close_last(io, b"").await;
                    return;
                }
                Some(ConnAction::Garbage) => {
                    drop(conn);
                    close_last(io, GARBAGE_FRAME).await;
                    return;
                }
                None => {}
            },
            Some(_) = streams.join_next(), if !streams.is_empty() => {}
            accepted = conn.accept() => match accepted {
                Some(Ok((request, respond))) => {
                    streams.spawn_local(crate::respond_h2::serve_stream(
                        Rc::clone(&worker),
                        request,
                        respond,
                        Rc::clone(&control),
                        peer_is_loopback,
                    ));
                }
                Some(Err(_)) | None => return,
            },
        }
    }
}

/// Writes `last` straight to the socket (behind `h2`'s back), closes our side, and
/// reads until the client closes its side too (or [`CLOSE_TIMEOUT`]). Closing a socket
/// with unread bytes (the client's WINDOW_UPDATEs, say) would send a TCP reset, and the
/// client could lose the GOAWAY or the garbage before reading them.
async fn close_last<T: AsyncRead + AsyncWrite + Unpin>(io: SharedIo<T>, last: &[u8]) {
    // The connection (the other owner) is gone, so the stream is ours alone.
    let Ok(cell) = Rc::try_unwrap(io.0) else {
        return;
    };
    let mut stream = cell.into_inner();
    let _ = stream.write_all(last).await;
    let _ = stream.shutdown().await;
    let drain = async {
        let mut scratch = [0u8; 1024];
        while matches!(stream.read(&mut scratch).await, Ok(n) if n > 0) {}
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, drain).await;
}

/// The connection's byte stream, shared between `h2` and the connection task, so that
/// the `malformed` mode can write to it once `h2` has let go.
struct SharedIo<T>(Rc<RefCell<T>>);

impl<T> Clone for SharedIo<T> {
    fn clone(&self) -> Self {
        Self(Rc::clone(&self.0))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for SharedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SharedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.borrow().is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_garbage_is_a_data_frame_on_stream_zero() {
        let length = u32::from_be_bytes([0, GARBAGE_FRAME[0], GARBAGE_FRAME[1], GARBAGE_FRAME[2]]);
        assert_eq!(length as usize, GARBAGE_FRAME.len() - 9, "length field");
        assert_eq!(GARBAGE_FRAME[3], 0, "type DATA");
        assert_eq!(&GARBAGE_FRAME[5..9], &[0, 0, 0, 0], "stream 0");
    }
}
