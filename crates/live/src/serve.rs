//! [`Server`]: the small HTTP/1.1 server behind `-dashboard` and `-prometheus-addr`.
//!
//! It answers GETs from a handler, one short-lived thread per connection (capped), and
//! closes each connection after one answer: a browser polling once a second and a
//! Prometheus scraping every few seconds need no more. It never touches the engine;
//! handlers read what the collector published. A client that sends nothing is dropped
//! after a read timeout, so a stuck browser tab cannot pile up threads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::LiveError;

/// At most this many connections are answered at once; more wait in the backlog.
const MAX_CONNECTIONS: usize = 32;
/// A request head must arrive within this time, and fit in this many bytes.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD_BYTES: usize = 16 << 10;
/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// A GET the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The path, without the query.
    pub path: String,
    /// The query string after `?`, if any.
    pub query: Option<String>,
    /// The `Accept` header, if any (a scrape's content negotiation).
    pub accept: Option<String>,
}

impl Request {
    /// The query parameter `name`, decoded, if it is there.
    pub fn param(&self, name: &str) -> Option<String> {
        let query = self.query.as_deref().unwrap_or("");
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Body,
}

/// A response body: made for this answer, or shared with other answers. The
/// dashboard's page is a few MB served once a second to every open tab; sharing it
/// instead of copying it per connection keeps the process's memory flat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Made for this answer.
    Owned(Vec<u8>),
    /// Shared with other answers (the dashboard's cached page).
    Shared(Arc<String>),
}

impl Body {
    /// The bytes sent.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Owned(bytes) => bytes,
            Body::Shared(text) => text.as_bytes(),
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Body {
        Body::Owned(bytes)
    }
}

impl From<String> for Body {
    fn from(text: String) -> Body {
        Body::Owned(text.into_bytes())
    }
}

impl From<&str> for Body {
    fn from(text: &str) -> Body {
        Body::Owned(text.as_bytes().to_vec())
    }
}

impl From<Arc<String>> for Body {
    fn from(text: Arc<String>) -> Body {
        Body::Shared(text)
    }
}

impl Response {
    /// A 200 answer.
    pub fn ok(content_type: &'static str, body: impl Into<Body>) -> Response {
        Response {
            status: 200,
            content_type,
            body: body.into(),
        }
    }

    /// A 400 answer saying why.
    pub fn bad_request(why: &str) -> Response {
        Response {
            status: 400,
            content_type: "text/plain; charset=utf-8",
            body: format!("{why}\n").into(),
        }
    }

    /// A 404 answer naming the path.
    pub fn not_found(path: &str) -> Response {
        Response {
            status: 404,
            content_type: "text/plain; charset=utf-8",
            body: format!("not found: {path}\n").into(),
        }
    }
}

/// Answers requests; called on a connection thread.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// A running server; dropping it (or [`Server::stop`]) stops accepting.
pub struct Server {
    address: SocketAddr,
    stopped: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `address` ([`listen_address`]'s spellings) and starts answering with
    /// `handler`. `flag` names the option in the error when the address cannot be
    /// bound (taken, not local, refused).
    pub fn start(flag: &str, address: &str, handler: Handler) -> Result<Server, LiveError> {
        let address = listen_address(address);
        let address = address.as_str();
        let bind_error = |source| LiveError::Bind {
            flag: flag.to_owned(),
            address: address.to_owned(),
            source,
        };
        let listener = TcpListener::bind(address).map_err(bind_error)?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        let bound = listener.local_addr().map_err(bind_error)?;
        let stopped = Arc::new(AtomicBool::new(false));
        let accept = {
            let stopped = Arc::clone(&stopped);
            std::thread::Builder::new()
                .name("loadlab-serve".to_owned())
                .spawn(move || accept_loop(&listener, &stopped, &handler))?
        };
        Ok(Server {
            address: bound,
            stopped,
            accept: Some(accept),
        })
    }

    /// The address bound (the port chosen when asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting and waits for the accept loop; answers in progress finish.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// `:8088` and `8088` mean loopback (vegeta's `:8880` listens everywhere; metrics and
/// pages stay on this machine unless an address says otherwise, as `simulate -addr`);
/// anything else is bound as given.
pub fn listen_address(given: &str) -> String {
    let given = given.trim();
    if let Some(port) = given.strip_prefix(':') {
        return format!("127.0.0.1:{port}");
    }
    if !given.is_empty() && given.bytes().all(|b| b.is_ascii_digit()) {
        return format!("127.0.0.1:{given}");
    }
    given.to_owned()
}

fn accept_loop(listener: &TcpListener, stopped: &AtomicBool, handler: &Handler) {
    let busy = Arc::new(AtomicUsize::new(0));
    while !stopped.load(Ordering::Relaxed) {
        if busy.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            std::thread::sleep(ACCEPT_POLL);
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let handler = Arc::clone(handler);
                let connection_busy = Arc::clone(&busy);
                busy.fetch_add(1, Ordering::Relaxed);
                let spawned = std::thread::Builder::new()
                    .name("loadlab-serve-conn".to_owned())
                    .spawn(move || {
                        answer(stream, &handler);
                        connection_busy.fetch_sub(1, Ordering::Relaxed);
                    });
                if spawned.is_err() {
                    // No thread for it: the connection is dropped, the server goes on.
                    busy.fetch_sub(1, Ordering::Relaxed);
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
            }
            // A connection reset before accept, or out of descriptors: try again later.
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
}

/// Reads one request head and writes one answer; any failure just drops the client.
fn answer(mut stream: TcpStream, handler: &Handler) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let _ = stream.set_write_timeout(Some(READ_TIMEOUT));
    let response = match read_request(&mut stream) {
        Ok(request) => handler(&request),
        Err(response) => response,
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.as_bytes().len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(response.body.as_bytes()));
}

/// The request's head, or the error answer to give instead.
fn read_request(stream: &mut TcpStream) -> Result<Request, Response> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let read = stream
            .read(&mut chunk)
            .map_err(|_| Response::bad_request("no request"))?;
        if read == 0 {
            return Err(Response::bad_request("no request"));
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(request) = parse_head(&buffer)? {
            return Ok(request);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(Response::bad_request("request head too large"));
        }
    }
}

/// `None` while the head is incomplete.
fn parse_head(buffer: &[u8]) -> Result<Option<Request>, Response> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buffer) {
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(Response::bad_request("malformed request")),
        Ok(httparse::Status::Complete(_)) => {
            if !matches!(request.method, Some("GET" | "HEAD")) {
                return Err(Response {
                    status: 405,
                    content_type: "text/plain; charset=utf-8",
                    body: "only GET\n".into(),
                });
            }
            let target = request.path.unwrap_or("/");
            let (path, query) = match target.split_once('?') {
                Some((path, query)) => (path, Some(query.to_owned())),
                None => (target, None),
            };
            let accept = (request.headers.iter())
                .find(|h| h.name.eq_ignore_ascii_case("accept"))
                .map(|h| String::from_utf8_lossy(h.value).into_owned());
            Ok(Some(Request {
                path: path.to_owned(),
                query,
                accept,
            }))
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(address: SocketAddr, raw: &str) -> String {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream.write_all(raw.as_bytes()).expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        answer
    }

    fn echo_server() -> Server {
        let handler: Handler = Arc::new(|request: &Request| match request.path.as_str() {
            "/hello" => Response::ok("text/plain", format!("query={:?}", request.query)),
            path => Response::not_found(path),
        });
        Server::start("-dashboard", "127.0.0.1:0", handler).expect("bind")
    }

    #[test]
    fn answers_requests_and_errors() {
        let server = echo_server();
        let rows = [
            (
                "GET /hello?x=1 HTTP/1.1\r\n\r\n",
                "HTTP/1.1 200 OK",
                "query=Some(\"x=1\")",
            ),
            (
                "GET /hello HTTP/1.1\r\n\r\n",
                "HTTP/1.1 200 OK",
                "query=None",
            ),
            (
                "GET /nope HTTP/1.1\r\n\r\n",
                "HTTP/1.1 404",
                "not found: /nope",
            ),
            ("POST /hello HTTP/1.1\r\n\r\n", "HTTP/1.1 405", "only GET"),
            (
                "GET\x01 / HTTP/1.1\r\n\r\n",
                "HTTP/1.1 400",
                "malformed request",
            ),
        ];
        for (raw, status, body) in rows {
            let answer = get(server.address(), raw);
            assert!(answer.starts_with(status), "{raw:?}: {answer}");
            assert!(answer.trim_end().ends_with(body), "{raw:?}: {answer}");
        }
        server.stop();
    }

    #[test]
    fn a_bare_port_means_loopback() {
        let rows = [
            (":8088", "127.0.0.1:8088"),
            ("9000", "127.0.0.1:9000"),
            ("127.0.0.1:0", "127.0.0.1:0"),
            ("0.0.0.0:80", "0.0.0.0:80"),
            ("[::1]:0", "[::1]:0"),
            ("nonsense", "nonsense"),
        ];
        for (given, want) in rows {
            assert_eq!(listen_address(given), want, "{given}");
        }
    }

    #[test]
    fn a_taken_port_is_an_error_naming_the_flag() {
        let server = echo_server();
        let taken = server.address().to_string();
        let handler: Handler = Arc::new(|_: &Request| Response::ok("text/plain", ""));
        let error = Server::start("-prometheus-addr", &taken, handler)
            .err()
            .expect("second bind fails");
        let text = error.to_string();
        assert!(text.starts_with("-prometheus-addr "), "{text}");
        assert!(text.contains(&taken), "{text}");
    }

    #[test]
    fn a_silent_client_does_not_block_others() {
        let server = echo_server();
        let _silent = TcpStream::connect(server.address()).expect("connect");
        let answer = get(server.address(), "GET /hello HTTP/1.1\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    }
}
