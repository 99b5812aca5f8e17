//! [`send`]: one blocking HTTP/1.1 request under a deadline, for the tools around a
//! run (the monitor's `/metrics` scrapes, Prometheus remote write, OTLP pushes, trace
//! store reads), never the engine. It reads Content-Length, chunked and
//! close-delimited bodies up to a size cap, and its errors say what went wrong
//! (refused, timed out, too large). `https://` goes over the caller's rustls client
//! configuration (the engine's), not a TLS stack of its own.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{ChunkedDecoder, Progress, WireError};

const MAX_HEAD_BYTES: usize = 64 << 10;
/// Why an `https://` URL without a TLS configuration is not sent.
const NO_TLS: &str = "https:// needs a TLS configuration";

/// What to send: `method` to a plain `http://` URL, with these headers and body.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// Where to; its host, port, path and query are used.
    pub url: &'a url::Url,
    /// Extra headers (Host, Content-Length and `Connection: close` are added).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body; sent with a Content-Length unless empty on a GET.
    pub body: &'a [u8],
    /// Answers with a larger body fail with [`ClientError::TooLarge`].
    pub max_body_bytes: usize,
    /// The TLS client configuration an `https://` URL is sent over; such a URL
    /// without one fails with [`ClientError::Tls`].
    pub tls: Option<&'a Arc<rustls::ClientConfig>>,
}

/// The answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

/// Why a request got no answer. Texts are what the monitor shows as gaps.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL has no host.
    #[error("the URL has no host")]
    NoHost,
    /// The host did not resolve.
    #[error("resolve {host}: {reason}")]
    Resolve {
        /// The host as written.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// The connection could not be made.
    #[error("connect: {0}")]
    Connect(std::io::Error),
    /// The deadline passed.
    #[error("timed out")]
    TimedOut,
    /// Writing the request failed.
    #[error("send: {0}")]
    Send(std::io::Error),
    /// Reading the answer failed.
    #[error("read: {0}")]
    Read(std::io::Error),
    /// The server closed the connection before a byte of answer.
    #[error("the server closed the connection without answering")]
    NoAnswer,
    /// What came back is not HTTP.
    #[error("not an HTTP response")]
    NotHttp,
    /// The response head is over 64 KiB.
    #[error("the response head is too large")]
    HeadTooLarge,
    /// A Content-Length that is not a number.
    #[error("bad Content-Length {0:?}")]
    BadLength(String),
    /// A compressed body (we ask for identity).
    #[error("the body is {0}-encoded; expected plain text")]
    Encoded(String),
    /// The body is over the cap.
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    /// The connection closed inside a Content-Length body.
    #[error("the body was cut at {got} of {want} bytes")]
    Cut {
        /// Bytes received.
        got: usize,
        /// Bytes announced.
        want: usize,
    },
    /// The connection closed inside a chunked body.
    #[error("the chunked body was cut short")]
    ChunkedCut,
    /// A chunk-size line is not hexadecimal.
    #[error("bad chunk size {0:?}")]
    ChunkSize(String),
    /// Chunked framing is broken.
    #[error("{0}")]
    Chunked(WireError),
    /// A socket option could not be set.
    #[error("socket: {0}")]
    Socket(std::io::Error),
    /// An `https://` URL that cannot be sent over TLS.
    #[error("tls: {0}")]
    Tls(String),
}

/// The connection: plain TCP, or TLS over it.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    /// `stream`, wrapped in TLS for an `https://` URL.
    fn new(stream: TcpStream, request: &Request<'_>, host: &str) -> Result<Conn, ClientError> {
        if request.url.scheme() != "https" {
            return Ok(Conn::Plain(stream));
        }
        let config = request
            .tls
            .ok_or_else(|| ClientError::Tls(NO_TLS.to_owned()))?;
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|_| ClientError::Tls(format!("{host:?} is not a server name")))?;
        let tls = rustls::ClientConnection::new(Arc::clone(config), name)
            .map_err(|err| ClientError::Tls(err.to_string()))?;
        Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(tls, stream))))
    }

    fn socket(&self) -> &TcpStream {
        match self {
            Conn::Plain(stream) => stream,
            Conn::Tls(tls) => &tls.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(stream) => stream.read(buf),
            // A server that closes after its answer without TLS's close_notify has
            // still sent the whole of a close-delimited body.
            Conn::Tls(tls) => match tls.read(buf) {
                Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
                read => read,
            },
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(stream) => stream.write(buf),
            Conn::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(stream) => stream.flush(),
            Conn::Tls(tls) => tls.flush(),
        }
    }
}

/// Sends `request` and reads the whole answer. Every step (resolve, connect, write,
/// each read) is bounded by `deadline`.
pub fn send(request: &Request<'_>, deadline: Instant) -> Result<Answer, ClientError> {
    let url = request.url;
    let host = url.host_str().ok_or(ClientError::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(80);
    if url.scheme() == "https" && request.tls.is_none() {
        return Err(ClientError::Tls(NO_TLS.to_owned()));
    }
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|err| ClientError::Resolve {
            host: host.to_owned(),
            reason: err.to_string(),
        })?
        .next()
        .ok_or_else(|| ClientError::Resolve {
            host: host.to_owned(),
            reason: "no address".to_owned(),
        })?;
    let stream =
        TcpStream::connect_timeout(&address, remaining(deadline)?).map_err(ClientError::Connect)?;
    let _ = stream.set_nodelay(true);
    // The TLS handshake reads while the request is written: both bounded.
    let left = remaining(deadline)?;
    stream
        .set_write_timeout(Some(left))
        .and_then(|()| stream.set_read_timeout(Some(left)))
        .map_err(ClientError::Socket)?;
    let mut stream = Conn::new(stream, request, host)?;
    stream
        .write_all(&head(request, host, port))
        .and_then(|()| stream.write_all(request.body))
        .and_then(|()| stream.flush())
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ClientError::TimedOut,
            _ => ClientError::Send(err),
        })?;
    let mut buffer = Vec::with_capacity(16 << 10);
    let head_len = read_head(&mut stream, &mut buffer, deadline)?;
    let (status, body_kind) = parse_head(&buffer[..head_len], request.max_body_bytes)?;
    let body = read_body(
        &mut stream,
        buffer.split_off(head_len),
        body_kind,
        request.max_body_bytes,
        deadline,
    )?;
    Ok(Answer { status, body })
}

/// The request line and headers.
fn head(request: &Request<'_>, host: &str, port: u16) -> Vec<u8> {
    let url = request.url;
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let mut head = format!(
        "{} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n",
        request.method
    );
    for (name, value) in request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !request.body.is_empty() || request.method != "GET" {
        head.push_str(&format!("Content-Length: {}\r\n", request.body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    head.into_bytes()
}

fn remaining(deadline: Instant) -> Result<Duration, ClientError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(ClientError::TimedOut)
    } else {
        Ok(left)
    }
}

/// Reads more bytes into `buffer`; 0 at the end of the stream.
fn read_more(
    stream: &mut Conn,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ClientError> {
    stream
        .socket()
        .set_read_timeout(Some(remaining(deadline)?))
        .map_err(ClientError::Socket)?;
    let mut chunk = [0u8; 16 << 10];
    match stream.read(&mut chunk) {
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            Ok(n)
        }
        Err(err)
            if matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err(ClientError::TimedOut)
        }
        Err(err) => Err(ClientError::Read(err)),
    }
}

fn read_head(
    stream: &mut Conn,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ClientError> {
    loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(at + 4);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(ClientError::HeadTooLarge);
        }
        if read_more(stream, buffer, deadline)? == 0 {
            return Err(if buffer.is_empty() {
                ClientError::NoAnswer
            } else {
                ClientError::NotHttp
            });
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Length(usize),
    Chunked,
    UntilClose,
}

fn parse_head(head: &[u8], max_body_bytes: usize) -> Result<(u16, BodyKind), ClientError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(ClientError::NotHttp),
    }
    let status = response.code.unwrap_or(0);
    let mut kind = BodyKind::UntilClose;
    for header in response.headers.iter() {
        let value = String::from_utf8_lossy(header.value);
        if header.name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            kind = BodyKind::Chunked;
        } else if header.name.eq_ignore_ascii_case("content-length") && kind != BodyKind::Chunked {
            let length = value
                .trim()
                .parse::<usize>()
                .map_err(|_| ClientError::BadLength(value.to_string()))?;
            kind = BodyKind::Length(length);
        } else if header.name.eq_ignore_ascii_case("content-encoding")
            && !value.trim().eq_ignore_ascii_case("identity")
        {
            return Err(ClientError::Encoded(value.to_string()));
        }
    }
    if matches!(kind, BodyKind::Length(n) if n > max_body_bytes) {
        return Err(ClientError::TooLarge(max_body_bytes));
    }
    Ok((status, kind))
}

fn read_body(
    stream: &mut Conn,
    mut body: Vec<u8>,
    kind: BodyKind,
    max_body_bytes: usize,
    deadline: Instant,
) -> Result<Vec<u8>, ClientError> {
    match kind {
        BodyKind::Length(length) => {
            while body.len() < length {
                if read_more(stream, &mut body, deadline)? == 0 {
                    return Err(ClientError::Cut {
                        got: body.len(),
                        want: length,
                    });
                }
            }
            body.truncate(length);
            Ok(body)
        }
        BodyKind::UntilClose => {
            while read_more(stream, &mut body, deadline)? > 0 {
                if body.len() > max_body_bytes {
                    return Err(ClientError::TooLarge(max_body_bytes));
                }
            }
            Ok(body)
        }
        BodyKind::Chunked => {
            let mut decoder = Dechunker::default();
            loop {
                match decoder.decode(&body)? {
                    Some(decoded) => return Ok(decoded),
                    None if body.len() > max_body_bytes + MAX_HEAD_BYTES => {
                        return Err(ClientError::TooLarge(max_body_bytes));
                    }
                    None => {
                        if read_more(stream, &mut body, deadline)? == 0 {
                            return Err(ClientError::ChunkedCut);
                        }
                    }
                }
            }
        }
    }
}

/// Decodes a chunked body as it arrives with the engine's decoder
/// ([`ChunkedDecoder`]): each call feeds only the bytes the previous calls did not,
/// so a large body costs one pass, not one pass per read.
#[derive(Debug, Default)]
struct Dechunker {
    decoder: ChunkedDecoder,
    /// How many bytes of the raw body the decoder has had.
    fed: usize,
    /// The chunks decoded so far.
    out: Vec<u8>,
}

impl Dechunker {
    /// The decoded body once `raw` (all bytes received so far, a prefix of the next
    /// call's) holds the whole chunked encoding, `None` if not yet.
    fn decode(&mut self, raw: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        let out = &mut self.out;
        let progress = self
            .decoder
            .feed(&raw[self.fed..], |data| out.extend_from_slice(data));
        self.fed = raw.len();
        match progress {
            Ok(Progress::More) => Ok(None),
            Ok(Progress::Done { .. }) => Ok(Some(std::mem::take(&mut self.out))),
            Err(WireError::ChunkSize(_)) => Err(ClientError::ChunkSize(size_text(
                raw,
                self.decoder.size_line_start(),
            ))),
            Err(err) => Err(ClientError::Chunked(err)),
        }
    }
}

/// The size of the chunk-size line at `start` of `raw`, without its extensions.
fn size_text(raw: &[u8], start: u64) -> String {
    let line = raw
        .get(usize::try_from(start).unwrap_or(usize::MAX)..)
        .unwrap_or_default();
    let end = line
        .iter()
        .position(|&b| matches!(b, b'\r' | b'\n' | b';'))
        .unwrap_or(line.len());
    String::from_utf8_lossy(&line[..end]).trim().to_owned()
}

/// The decoded body once `raw` holds the whole chunked encoding, `None` if not yet.
#[cfg(test)]
fn dechunk(raw: &[u8]) -> Result<Option<Vec<u8>>, String> {
    Dechunker::default()
        .decode(raw)
        .map_err(|err| err.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_response_heads() {
        type Want = Result<(u16, BodyKind), &'static str>;
        let rows: &[(&str, Want)] = &[
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n",
                Ok((200, BodyKind::Length(12))),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                Ok((200, BodyKind::Chunked)),
            ),
            (
                "HTTP/1.0 503 Service Unavailable\r\n\r\n",
                Ok((503, BodyKind::UntilClose)),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                Err("bad Content-Length"),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n",
                Err("gzip-encoded"),
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n",
                Err("larger than"),
            ),
            ("SSH-2.0-OpenSSH_9.2\r\n\r\n", Err("not an HTTP response")),
        ];
        for (head, want) in rows {
            match (
                parse_head(head.as_bytes(), 32 << 20).map_err(|err| err.to_string()),
                want,
            ) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{head}"),
                (Err(err), Err(want)) => assert!(err.contains(want), "{head}: {err}"),
                (got, want) => panic!("{head}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn decodes_chunks() {
        type Want = Result<Option<&'static [u8]>, &'static str>;
        let rows: &[(&[u8], Want)] = &[
            (
                b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n",
                Ok(Some(b"hello world")),
            ),
            (b"5\r\nhel", Ok(None)),
            (b"5\r\nhello\r\n", Ok(None)),
            (b"zz\r\nhello\r\n", Err("bad chunk size")),
            (b"0\r\n\r\n", Ok(Some(b""))),
        ];
        for (raw, want) in rows {
            let got = dechunk(raw);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got.as_deref(), *want),
                (Err(err), Err(want)) => assert!(err.contains(want), "{err}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn decodes_chunks_arriving_in_pieces() {
        let mut raw = Vec::new();
        let mut want = Vec::new();
        for (i, size) in [1usize, 17, 300, 4096, 5].into_iter().enumerate() {
            let data = vec![b'a' + i as u8; size];
            raw.extend_from_slice(format!("{size:x};ext=1\r\n").as_bytes());
            raw.extend_from_slice(&data);
            raw.extend_from_slice(b"\r\n");
            want.extend_from_slice(&data);
        }
        raw.extend_from_slice(b"0\r\n\r\n");
        for piece in [1, 2, 3, 7, 64, 1000, raw.len()] {
            let mut decoder = Dechunker::default();
            let mut received = Vec::new();
            let mut got = None;
            // (Like `dechunk`, the decoder is done at the empty line after the last chunk.)
            for part in raw.chunks(piece) {
                received.extend_from_slice(part);
                got = decoder.decode(&received).unwrap();
                if got.is_some() {
                    break;
                }
            }
            assert_eq!(got.as_deref(), Some(want.as_slice()), "pieces of {piece}");
        }
        // A bad size line is found however the bytes arrive.
        let mut decoder = Dechunker::default();
        assert_eq!(
            decoder
                .decode(b"5\r\nhello\r\nz")
                .map_err(|e| e.to_string()),
            Ok(None)
        );
        let err = decoder
            .decode(b"5\r\nhello\r\nzz\r\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad chunk size \"zz\""), "{err}");
        // An absurd size waits (the caller's size cap ends it) instead of overflowing.
        assert_eq!(dechunk(b"ffffffffffffffff\r\nab"), Ok(None));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod send_tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use super::*;

    /// A one-connection server on loopback that reads the request then answers
    /// `answer` (or nothing, holding the connection, when `None`); returns its URL
    /// and the request it read.
    fn one_shot(answer: Option<&'static str>) -> (url::Url, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url =
            url::Url::parse(&format!("http://{}/push", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            while !got.ends_with(b"body!") {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
            match answer {
                Some(answer) => stream.write_all(answer.as_bytes()).unwrap(),
                None => std::thread::sleep(Duration::from_millis(800)),
            }
            got
        });
        (url, server)
    }

    fn post(url: &url::Url, timeout: Duration) -> Result<Answer, ClientError> {
        let request = Request {
            method: "POST",
            url,
            headers: &[("Content-Type", "application/x-protobuf")],
            body: b"body!",
            tls: None,
            max_body_bytes: 1024,
        };
        send(&request, Instant::now() + timeout)
    }

    #[test]
    fn posts_and_reads_any_status() {
        let rows = [
            ("HTTP/1.1 204 No Content\r\n\r\n", 204, ""),
            (
                "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nfail",
                500,
                "fail",
            ),
        ];
        for (answer, status, body) in rows {
            let (url, server) = one_shot(Some(answer));
            let got = post(&url, Duration::from_secs(2)).unwrap();
            assert_eq!((got.status, got.body.as_slice()), (status, body.as_bytes()));
            let request = String::from_utf8(server.join().unwrap()).unwrap();
            assert!(request.starts_with("POST /push HTTP/1.1\r\n"), "{request}");
            assert!(
                request.contains("\r\nContent-Type: application/x-protobuf\r\n"),
                "{request}"
            );
            assert!(request.contains("\r\nContent-Length: 5\r\n"), "{request}");
            assert!(request.ends_with("\r\n\r\nbody!"), "{request}");
        }
    }

    /// A one-connection TLS server on loopback (a self-signed `localhost`), answering
    /// `answer` and closing without close_notify; returns its URL and the client
    /// configuration that trusts it.
    fn tls_one_shot(answer: &'static str) -> (url::Url, Arc<rustls::ClientConfig>) {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let private =
            rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![key.cert.der().clone()], private)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(key.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = Arc::new(server);
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let connection = rustls::ServerConnection::new(server).unwrap();
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            while !got.ends_with(b"body!") {
                match tls.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = tls.write_all(answer.as_bytes());
            let _ = tls.flush();
        });
        let url = url::Url::parse(&format!("https://localhost:{port}/push")).unwrap();
        (url, Arc::new(client))
    }

    #[test]
    fn https_goes_over_the_callers_tls_configuration() {
        // A close-delimited body: the server's close without close_notify ends it.
        for answer in [
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\n\r\nuntil close",
        ] {
            let (url, tls) = tls_one_shot(answer);
            let request = Request {
                method: "POST",
                url: &url,
                headers: &[],
                body: b"body!",
                max_body_bytes: 1024,
                tls: Some(&tls),
            };
            let got = send(&request, Instant::now() + Duration::from_secs(5)).unwrap();
            assert_eq!(got.status, 200);
            assert!(answer.ends_with(std::str::from_utf8(&got.body).unwrap()));
        }
        // Without a configuration, or with one that does not trust the server: an error.
        let (url, _) = tls_one_shot("HTTP/1.1 200 OK\r\n\r\n");
        let request = |tls| Request {
            method: "GET",
            url: &url,
            headers: &[],
            body: b"",
            max_body_bytes: 1024,
            tls,
        };
        let err = send(&request(None), Instant::now() + Duration::from_secs(2)).unwrap_err();
        assert_eq!(err.to_string(), "tls: https:// needs a TLS configuration");
        let (_, other) = tls_one_shot("");
        let err = send(
            &request(Some(&other)),
            Instant::now() + Duration::from_secs(2),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("certificate"), "{err}");
    }

    #[test]
    fn a_server_that_hangs_or_is_gone_is_an_error() {
        let (url, _server) = one_shot(None);
        let started = Instant::now();
        let err = post(&url, Duration::from_millis(200)).unwrap_err();
        assert_eq!(err.to_string(), "timed out");
        assert!(started.elapsed() < Duration::from_secs(2));
        let closed = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        };
        let url = url::Url::parse(&format!("http://{closed}/push")).unwrap();
        let err = post(&url, Duration::from_secs(2)).unwrap_err();
        assert!(err.to_string().starts_with("connect: "), "{err}");
    }
}
