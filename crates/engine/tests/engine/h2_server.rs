//! HTTP/2 servers on loopback for the engine's tests.
//!
//! [`H2Server`] is the `h2` crate's server (another implementation than ours):
//! h2c with prior knowledge or TLS with ALPN (`h2`, and HTTP/1.1 answered by hand
//! for clients that do not offer h2). Paths: `/ok`, `/slow/MS`, `/stall`,
//! `/status/NNN`, `/t/ANY...`, `/redirect` (to `/ok`), `/reset` (RST_STREAM INTERNAL_ERROR),
//! `/big/BYTES`, `/echo` (reads the whole body), `/grpc/N/END` (a gRPC server stream:
//! N messages of 3 bytes 2ms apart, then END: `ok` trailers, `reset` (RST_STREAM
//! INTERNAL_ERROR) or `big` (a message announcing 5 MiB)), `/grpc-echo` (a
//! bidirectional gRPC stream answering each message as it comes, with itself).
//!
//! [`RawServer`] speaks frames by hand, for what a real server would not do on
//! demand: refusing streams, GOAWAY mid-run, broken frames, answering in HTTP/1.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A request's fields: name, value.
pub type Fields = Vec<(String, Vec<u8>)>;

#[derive(Default)]
pub struct H2Stats {
    pub connections: AtomicUsize,
    pub h2_requests: AtomicUsize,
    pub h1_requests: AtomicUsize,
    /// Most streams one connection had open at once.
    pub max_concurrent_streams: AtomicUsize,
    /// Streams the client reset (`/stall` ones it gave up on).
    pub client_resets: AtomicUsize,
    /// Request body bytes read by `/echo`.
    pub body_bytes: AtomicUsize,
    /// When each message `/grpc-echo` read came whole, in arrival order.
    pub message_arrivals: std::sync::Mutex<Vec<std::time::Instant>>,
    /// Every path and query served over h2, in arrival order.
    pub paths: std::sync::Mutex<Vec<String>>,
    /// Every request's fields as the server decoded them (`:method`, `:path`, then
    /// the headers), in arrival order.
    pub fields: std::sync::Mutex<Vec<Fields>>,
}

pub struct H2Server {
    pub addr: SocketAddr,
    pub stats: Arc<H2Stats>,
    runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Default, Clone, Copy)]
pub struct H2Options {
    pub tls: bool,
    pub max_concurrent_streams: Option<u32>,
}

impl H2Server {
    pub fn start(options: H2Options) -> H2Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(H2Stats::default());
        let acceptor = options.tls.then(tls_acceptor);
        let accept_stats = Arc::clone(&stats);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                // As real servers (grpc-go) do: small frames go at once, not held for an ACK.
                let _ = socket.set_nodelay(true);
                accept_stats.connections.fetch_add(1, Ordering::SeqCst);
                let (stats, acceptor) = (Arc::clone(&accept_stats), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        None => serve_h2(socket, options, stats).await,
                        Some(acceptor) => {
                            let Ok(tls) = acceptor.accept(socket).await else {
                                return;
                            };
                            if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                                serve_h2(tls, options, stats).await;
                            } else {
                                serve_h1(tls, stats).await;
                            }
                        }
                    }
                });
            }
        });
        H2Server {
            addr,
            stats,
            runtime: Some(runtime),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let private =
        rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![key.cert.der().clone()], private)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

async fn serve_h2<S>(io: S, options: H2Options, stats: Arc<H2Stats>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    if let Some(max) = options.max_concurrent_streams {
        builder.max_concurrent_streams(max);
    }
    let Ok(mut connection) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let open = Arc::new(AtomicUsize::new(0));
    while let Some(Ok((request, respond))) = connection.accept().await {
        stats.h2_requests.fetch_add(1, Ordering::SeqCst);
        let now = open.fetch_add(1, Ordering::SeqCst) + 1;
        stats
            .max_concurrent_streams
            .fetch_max(now, Ordering::SeqCst);
        let (stats, open) = (Arc::clone(&stats), Arc::clone(&open));
        tokio::spawn(async move {
            answer(request, respond, &stats).await;
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    stats: &H2Stats,
) {
    let path = request.uri().path().to_owned();
    let query = request
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    stats.paths.lock().unwrap().push(format!("{path}{query}"));
    let mut fields = vec![
        (
            ":method".to_owned(),
            request.method().as_str().as_bytes().to_vec(),
        ),
        (":path".to_owned(), format!("{path}{query}").into_bytes()),
    ];
    fields.extend(
        request
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec())),
    );
    stats.fields.lock().unwrap().push(fields);
    let head = |status: u16| http::Response::builder().status(status).body(()).unwrap();
    let (status, body) = match path.split('/').collect::<Vec<_>>()[1..] {
        ["ok"] | ["t", ..] => (200, Bytes::from_static(b"ok")),
        ["slow", ms] => {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
            (200, Bytes::from_static(b"slow"))
        }
        ["stall"] => {
            let reset = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
            if reset.is_ok() {
                stats.client_resets.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
        ["status", code] => (code.parse().unwrap(), Bytes::from_static(b"status")),
        ["redirect"] => {
            let response = http::Response::builder()
                .status(302)
                .header("location", "/ok")
                .body(())
                .unwrap();
            let _ = respond.send_response(response, true);
            return;
        }
        ["reset"] => return respond.send_reset(h2::Reason::INTERNAL_ERROR),
        ["grpc-echo"] => return grpc_echo(request.into_body(), respond, stats).await,
        ["grpc", count, end] => return grpc_stream(respond, count.parse().unwrap(), end).await,
        ["big", bytes] => (200, Bytes::from(vec![b'x'; bytes.parse().unwrap()])),
        ["echo"] => {
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                stats.body_bytes.fetch_add(chunk.len(), Ordering::SeqCst);
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            (200, Bytes::from_static(b"echo"))
        }
        _ => (404, Bytes::from_static(b"no such path")),
    };
    let Ok(mut stream) = respond.send_response(head(status), false) else {
        return;
    };
    send_all(&mut stream, body).await;
}

/// Sends a gRPC answer's head; the stream to send its messages on.
fn grpc_head(respond: &mut h2::server::SendResponse<Bytes>) -> Option<h2::SendStream<Bytes>> {
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    respond.send_response(head, false).ok()
}

/// A gRPC server stream: `count` messages 2ms apart, each its own DATA frame, then
/// `end` (see the module documentation).
async fn grpc_stream(mut respond: h2::server::SendResponse<Bytes>, count: usize, end: &str) {
    let Some(mut stream) = grpc_head(&mut respond) else {
        return;
    };
    for _ in 0..count {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let message = Bytes::from_static(&[0, 0, 0, 0, 3, b'a', b'b', b'c']);
        if stream.send_data(message, false).is_err() {
            return;
        }
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    match end {
        "reset" => stream.send_reset(h2::Reason::INTERNAL_ERROR),
        "big" => {
            let _ = stream.send_data(Bytes::from_static(&[0, 0, 0x50, 0, 0, b'x']), false);
            // Held open: the client must give up on its own.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        _ => {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let _ = stream.send_trailers(trailers);
        }
    }
}

/// A bidirectional gRPC stream: each message read is answered at once with itself;
/// the client's end ends the call with `OK` trailers.
async fn grpc_echo(
    mut body: h2::RecvStream,
    mut respond: h2::server::SendResponse<Bytes>,
    stats: &H2Stats,
) {
    let Some(mut stream) = grpc_head(&mut respond) else {
        return;
    };
    let mut pending = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        pending.extend_from_slice(&chunk);
        while pending.len() >= 5 {
            let len = u32::from_be_bytes(pending[1..5].try_into().unwrap()) as usize;
            if pending.len() < 5 + len {
                break;
            }
            stats
                .message_arrivals
                .lock()
                .unwrap()
                .push(std::time::Instant::now());
            let message: Vec<u8> = pending.drain(..5 + len).collect();
            if stream.send_data(Bytes::from(message), false).is_err() {
                return;
            }
        }
    }
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let _ = stream.send_trailers(trailers);
}

/// Sends `body` as the window allows, then ends the stream.
async fn send_all(stream: &mut h2::SendStream<Bytes>, mut body: Bytes) {
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let Some(Ok(capacity)) = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await else {
            return;
        };
        let chunk = body.split_to(capacity.min(body.len()));
        if stream.send_data(chunk, false).is_err() {
            return;
        }
    }
    let _ = stream.send_data(Bytes::new(), true);
}

/// HTTP/1.1 by hand for TLS clients that did not choose h2: `200 OK` to anything.
async fn serve_h1<S>(mut io: S, stats: Arc<H2Stats>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            buffer.drain(..end + 4);
            stats.h1_requests.fetch_add(1, Ordering::SeqCst);
            let response = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if io.write_all(response).await.is_err() {
                return;
            }
        }
        match io.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// What a [`RawServer`] does with each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raw {
    /// The first stream of each connection is refused; the others answered 200.
    RefuseFirst,
    /// Every stream is refused.
    RefuseAll,
    /// The first stream is answered 200; any later one gets GOAWAY(last = first)
    /// and the connection closes once the client's streams are in.
    GoAwayAfterFirst,
    /// DATA on stream 0 in answer to the first request.
    DataOnStreamZero,
    /// A response head HPACK cannot decode.
    BadHpack,
    /// An HTTP/1.1 server's answer to the h2c preface.
    Http1,
    /// Each answer followed by a connection WINDOW_UPDATE and a PING, as grpc-go's
    /// (it gives back the window our request took, and pings to size its own).
    PingEachAnswer,
}

pub struct RawServer {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicUsize>,
    /// Per PING ACK read (`PingEachAnswer`): whether more frames had come with it
    /// (were readable at once), in arrival order.
    pub ping_acks: Arc<std::sync::Mutex<Vec<bool>>>,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    pub fn start(behaviour: Raw) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let ping_acks = Arc::default();
        let (stop_accept, count) = (Arc::clone(&stop), Arc::clone(&connections));
        let acks = Arc::clone(&ping_acks);
        std::thread::spawn(move || {
            while !stop_accept.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        let acks = Arc::clone(&acks);
                        std::thread::spawn(move || serve_raw(stream, behaviour, &acks));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        RawServer {
            addr,
            connections,
            ping_acks,
            stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
/// `:status: 200` (static table entry 8), END_STREAM | END_HEADERS.
fn ok_head(stream: u32) -> Vec<u8> {
    frame(HEADERS, 0x5, stream, &[0x88])
}

fn serve_raw(mut stream: TcpStream, behaviour: Raw, ping_acks: &std::sync::Mutex<Vec<bool>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // Each frame leaves at once: answers must not wait for the client's ACKs.
    stream.set_nodelay(true).unwrap();
    let mut preface = [0u8; 24];
    if stream.read_exact(&mut preface).is_err() {
        return;
    }
    if behaviour == Raw::Http1 {
        // Take what the client sent after the preface, answer, and let the answer be
        // read before closing (else the client may see a reset first).
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let _ = stream.read(&mut [0u8; 4096]);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        std::thread::sleep(Duration::from_millis(200));
        return;
    }
    let _ = stream.write_all(&frame(SETTINGS, 0, 0, &[]));
    let mut first_stream = None;
    loop {
        let mut head = [0u8; 9];
        if stream.read_exact(&mut head).is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        if stream.read_exact(&mut payload).is_err() {
            return;
        }
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
        let reply = match (head[3], head[4]) {
            (SETTINGS, 0) => frame(SETTINGS, 1, 0, &[]),
            (PING, 1) => {
                stream.set_nonblocking(true).unwrap();
                let together = stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
                stream.set_nonblocking(false).unwrap();
                ping_acks.lock().unwrap().push(together);
                continue;
            }
            (HEADERS, _) => {
                let first = *first_stream.get_or_insert(id) == id;
                raw_answer(behaviour, id, first, first_stream.unwrap_or(id))
            }
            _ => continue,
        };
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

fn raw_answer(behaviour: Raw, id: u32, first: bool, first_id: u32) -> Vec<u8> {
    let refused = frame(RST_STREAM, 0, id, &7u32.to_be_bytes());
    match behaviour {
        Raw::RefuseFirst if first => refused,
        Raw::RefuseAll => refused,
        Raw::GoAwayAfterFirst if !first => {
            let mut payload = first_id.to_be_bytes().to_vec();
            payload.extend_from_slice(&0u32.to_be_bytes());
            frame(GOAWAY, 0, 0, &payload)
        }
        Raw::DataOnStreamZero => frame(0, 0, 0, b"junk"),
        // An indexed field past the end of both tables.
        Raw::BadHpack => frame(HEADERS, 0x5, id, &[0xff, 0x7f]),
        Raw::PingEachAnswer => [
            ok_head(id),
            frame(WINDOW_UPDATE, 0, 0, &64u32.to_be_bytes()),
            frame(PING, 0, 0, &u64::from(id).to_be_bytes()),
        ]
        .concat(),
        _ => ok_head(id),
    }
}
