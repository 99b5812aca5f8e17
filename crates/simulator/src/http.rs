//! HTTP/1.1 wire format: request heads (via httparse), request bodies (length or
//! chunked), and response heads.
//!
//! Response heads are rendered in two parts: a prefix fixed at recipe load (status line,
//! recipe headers, content type), and a suffix per response (date, length, connection),
//! appended by [`finish_head`] with no allocation.

use std::ops::Range;
use std::time::Instant;

use crate::request::RequestHeaders;

/// A request as routing sees it, whichever protocol carried it: HTTP/1.1 borrows it
/// from the read buffer, HTTP/2 from the stream's head and collected body.
pub(crate) struct Incoming<'a> {
    pub method: Method,
    /// The path, without the query string.
    pub path: &'a [u8],
    /// The `authorization` header's value, for the admin API's token check.
    pub authorization: Option<&'a [u8]>,
    /// The query string, without the `?` (templates read it).
    pub query: &'a [u8],
    /// Every header, looked up only by routes that read them (templates, `requires`).
    pub headers: RequestHeaders<'a>,
    pub body: &'a [u8],
    /// HTTP/1.1's keep-alive; always true over HTTP/2, where one answer never closes
    /// the connection.
    pub keep_alive: bool,
    pub arrival: Instant,
    /// Whether the client connected from this machine (who may use `/_admin`).
    pub peer_is_loopback: bool,
}

/// Longest request head we buffer before answering 431.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body we accept (recipes are the only bodies we read).
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
const MAX_HEADERS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    Post,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(usize),
    Chunked,
}

/// A parsed request head. `path` indexes the read buffer (query string excluded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestHead {
    pub method: Method,
    pub path: Range<usize>,
    /// The query string, without the `?`; empty when there is none.
    pub query: Range<usize>,
    pub head_len: usize,
    pub keep_alive: bool,
    pub framing: Framing,
    pub expect_continue: bool,
    /// The `authorization` header's value, for the admin API's token check.
    pub authorization: Option<Range<usize>>,
}

/// A request we refuse, answered with `status` and then the connection closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestError {
    pub status: u16,
    pub reason: &'static str,
}

const fn refuse(status: u16, reason: &'static str) -> RequestError {
    RequestError { status, reason }
}

/// Parses a request head at the start of `buf`; `Ok(None)` means more bytes are needed.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<RequestHead>, RequestError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) if len > MAX_HEAD_BYTES => {
            return Err(refuse(431, "request head too large"));
        }
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(refuse(431, "request head too large"));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(refuse(431, "too many headers")),
        Err(_) => return Err(refuse(400, "malformed request")),
    };
    let method = match request.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    let target = request.path.unwrap_or("/");
    let start = target.as_ptr() as usize - buf.as_ptr() as usize;
    let path = path_of(target);
    let query = query_of(target, path.end);
    let path = start + path.start..start + path.end;
    let query = start + query.start..start + query.end;
    let http10 = request.version == Some(0);
    let mut keep_alive = !http10;
    let mut framing = Framing::None;
    let mut expect_continue = false;
    let mut authorization = None;
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("connection") {
            keep_alive = connection_keeps_alive(header.value, keep_alive);
        } else if name.eq_ignore_ascii_case("content-length") {
            framing = content_length(header.value, framing)?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            framing = transfer_encoding(header.value, framing)?;
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue = header.value.eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("authorization") {
            let start = header.value.as_ptr() as usize - buf.as_ptr() as usize;
            authorization = Some(start..start + header.value.len());
        }
    }
    Ok(Some(RequestHead {
        method,
        path,
        query,
        head_len,
        keep_alive,
        framing,
        expect_continue,
        authorization,
    }))
}

/// Where a complete request's body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BodyRef {
    None,
    /// Bytes of the read buffer (a `content-length` body).
    Range(Range<usize>),
    /// A decoded chunked body.
    Owned(Vec<u8>),
}

impl BodyRef {
    pub fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self {
            BodyRef::None => &[],
            BodyRef::Range(range) => &buf[range.clone()],
            BodyRef::Owned(bytes) => bytes,
        }
    }
}

/// A whole request: head, body, and how many buffer bytes it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub head: RequestHead,
    pub body: BodyRef,
    pub total_len: usize,
}

impl Request {
    /// The request as routing sees it; `buf` is the buffer it was parsed from.
    pub fn incoming<'a>(
        &'a self,
        buf: &'a [u8],
        arrival: Instant,
        peer_is_loopback: bool,
    ) -> Incoming<'a> {
        let head = &self.head;
        Incoming {
            method: head.method,
            path: &buf[head.path.clone()],
            authorization: head.authorization.clone().map(|range| &buf[range]),
            query: &buf[head.query.clone()],
            headers: RequestHeaders::Raw(&buf[..head.head_len]),
            body: self.body.bytes(buf),
            keep_alive: head.keep_alive,
            arrival,
            peer_is_loopback,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    Complete(Request),
    /// More bytes needed; `expect_continue` when the head is in and asked for a 100.
    Incomplete {
        expect_continue: bool,
    },
}

/// Parses the request at the start of `buf`, head and body.
pub(crate) fn next_request(buf: &[u8]) -> Result<Next, RequestError> {
    let Some(head) = parse_head(buf)? else {
        return Ok(Next::Incomplete {
            expect_continue: false,
        });
    };
    let waiting = Next::Incomplete {
        expect_continue: head.expect_continue,
    };
    let start = head.head_len;
    let (body, total_len) = match head.framing {
        Framing::None => (BodyRef::None, start),
        Framing::Length(len) if len > MAX_BODY_BYTES => {
            return Err(refuse(413, "request body too large"));
        }
        Framing::Length(len) if buf.len() < start + len => return Ok(waiting),
        Framing::Length(len) => (BodyRef::Range(start..start + len), start + len),
        Framing::Chunked => match decode_chunked_partial(&buf[start..])? {
            Some((bytes, used)) => (BodyRef::Owned(bytes), start + used),
            None => return Ok(waiting),
        },
    };
    Ok(Next::Complete(Request {
        head,
        body,
        total_len,
    }))
}

/// The path part of a request target: absolute-form loses scheme and authority, and the
/// query string is dropped (routes match on the path, as in origin_simulator).
fn path_of(target: &str) -> Range<usize> {
    let mut start = 0;
    if let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        let offset = target.len() - rest.len();
        start = rest.find('/').map_or(target.len(), |i| offset + i);
    }
    let end = target[start..]
        .find(['?', '#'])
        .map_or(target.len(), |i| start + i);
    start..end
}

/// The query string of a request target whose path ends at `path_end`: after the `?`,
/// up to a `#`.
fn query_of(target: &str, path_end: usize) -> Range<usize> {
    let rest = &target[path_end..];
    let Some(after) = rest.strip_prefix('?') else {
        return path_end..path_end;
    };
    let end = after.find('#').map_or(target.len(), |i| path_end + 1 + i);
    path_end + 1..end
}

/// Whether the comma-separated header `value` lists `token` (ASCII case-insensitive).
fn lists_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn connection_keeps_alive(value: &[u8], default: bool) -> bool {
    if lists_token(value, b"close") {
        false
    } else if lists_token(value, b"keep-alive") {
        true
    } else {
        default
    }
}

fn content_length(value: &[u8], framing: Framing) -> Result<Framing, RequestError> {
    let text = std::str::from_utf8(value).map_err(|_| refuse(400, "bad content-length"))?;
    let len: usize = text
        .trim()
        .parse()
        .map_err(|_| refuse(400, "bad content-length"))?;
    match framing {
        Framing::None => Ok(Framing::Length(len)),
        Framing::Length(previous) if previous == len => Ok(framing),
        // Two lengths, or a length beside chunked: a request-smuggling shape; refuse it.
        _ => Err(refuse(400, "conflicting body framing")),
    }
}

fn transfer_encoding(value: &[u8], framing: Framing) -> Result<Framing, RequestError> {
    // The last coding must be chunked: nothing else is decoded here.
    let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
    if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
        return Err(refuse(501, "unsupported transfer-encoding"));
    }
    match framing {
        Framing::None => Ok(Framing::Chunked),
        _ => Err(refuse(400, "conflicting body framing")),
    }
}

/// Decodes a chunked body at the start of `bytes`: `Ok(Some((body, consumed)))` when
/// complete, `Ok(None)` when more bytes are needed.
///
/// A second decoder beside `wire::ChunkedDecoder` (the engine's and the monitor's) on
/// purpose: the simulator depends on none of our crates, so the server the engine is
/// measured against cannot be tuned to flatter it.
pub(crate) fn decode_chunked_partial(
    bytes: &[u8],
) -> Result<Option<(Vec<u8>, usize)>, RequestError> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let (size_len, size) = match httparse::parse_chunk_size(&bytes[at..]) {
            Ok(httparse::Status::Complete(found)) => found,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(refuse(400, "bad chunk size")),
        };
        at += size_len;
        if size == 0 {
            return Ok(skip_trailers(&bytes[at..]).map(|len| (body, at + len)));
        }
        let size = usize::try_from(size)
            .ok()
            .filter(|s| body.len() + s <= MAX_BODY_BYTES);
        let Some(size) = size else {
            return Err(refuse(413, "request body too large"));
        };
        if bytes.len() < at + size + 2 {
            return Ok(None);
        }
        if &bytes[at + size..at + size + 2] != b"\r\n" {
            return Err(refuse(400, "bad chunk terminator"));
        }
        body.extend_from_slice(&bytes[at..at + size]);
        at += size + 2;
    }
}

/// Length of the trailer section (ending in an empty line), if complete.
fn skip_trailers(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line_end = bytes[at..].windows(2).position(|w| w == b"\r\n")?;
        at += line_end + 2;
        if line_end == 0 {
            return Some(at);
        }
    }
}

/// Decodes a complete chunked body (the origin client's use).
pub(crate) fn decode_chunked(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    decode_chunked_partial(bytes).ok().flatten()
}

/// The fixed part of a response head: status line, server, content type, recipe headers.
pub(crate) fn head_prefix(
    status: u16,
    content_type: Option<&str>,
    headers: &[(String, String)],
) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nserver: loadlab-simulate\r\n",
        reason(status)
    )
    .into_bytes();
    if let Some(content_type) = content_type {
        out.extend_from_slice(format!("content-type: {content_type}\r\n").as_bytes());
    }
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out
}

/// How the body of a response is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyLength {
    Bytes(usize),
    Chunked,
}

/// Appends prefix, date, framing and connection lines and the blank line to `out`.
pub(crate) fn finish_head(out: &mut Vec<u8>, prefix: &[u8], length: BodyLength, close: bool) {
    out.extend_from_slice(prefix);
    crate::date::append_date_header(out);
    match length {
        BodyLength::Bytes(len) => {
            out.extend_from_slice(b"content-length: ");
            append_decimal(out, len);
            out.extend_from_slice(b"\r\n");
        }
        BodyLength::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    // Saying keep-alive on every answer, as nginx does, is what HTTP/1.0 clients with
    // keep-alive (ab -k) need to reuse the connection; HTTP/1.1 clients ignore it.
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    } else {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn append_decimal(out: &mut Vec<u8>, mut value: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends a whole small response (admin answers, 406s, refusals); for a HEAD request
/// the head only, with the length the body would have had.
pub(crate) fn append_simple(
    out: &mut Vec<u8>,
    (status, content_type): (u16, &str),
    body: &[u8],
    head_only: bool,
    close: bool,
) {
    finish_head(
        out,
        &head_prefix(status, Some(content_type), &[]),
        BodyLength::Bytes(body.len()),
        close,
    );
    if !head_only {
        out.extend_from_slice(body);
    }
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<RequestHead>, RequestError> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn request_heads() {
        let head = parse("GET /news/x?q=1 HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.method, Method::Get);
        assert_eq!(
            &"GET /news/x?q=1 HTTP/1.1\r\n"[head.path.clone()],
            "/news/x"
        );
        assert!(head.keep_alive);
        assert_eq!(head.framing, Framing::None);

        let text =
            "POST http://h:1/a/b HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc";
        let head = parse(text).unwrap().unwrap();
        assert_eq!(&text[head.path.clone()], "/a/b");
        assert!(!head.keep_alive);
        assert!(head.expect_continue);
        assert_eq!(head.framing, Framing::Length(3));
        assert_eq!(head.head_len, text.len() - 3);

        let rows: &[(&str, Result<bool, u16>)] = &[
            ("GET / HTTP/1.1\r\nHost: a\r\n", Ok(false)),
            ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Ok(true)),
            ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", Ok(true)),
            (
                "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                Ok(true),
            ),
            ("GET\x01 / HTTP/1.1\r\n\r\n", Err(400)),
            ("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", Err(400)),
            (
                "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                Err(400),
            ),
            (
                "GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                Err(400),
            ),
            (
                "GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
                Err(501),
            ),
        ];
        for (input, want) in rows {
            match (parse(input), want) {
                (Ok(got), Ok(complete)) => assert_eq!(got.is_some(), *complete, "{input:?}"),
                (Err(got), Err(status)) => assert_eq!(got.status, *status, "{input:?}"),
                (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
            }
        }
        let many: String = (0..70).map(|i| format!("x{i}: y\r\n")).collect();
        assert_eq!(
            parse(&format!("GET / HTTP/1.1\r\n{many}\r\n"))
                .unwrap_err()
                .status,
            431
        );
        let huge = format!("GET / HTTP/1.1\r\nx: {}", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(parse(&huge).unwrap_err().status, 431);
    }

    #[test]
    fn connection_and_transfer_encoding_values() {
        let rows: &[(&[u8], bool, bool)] = &[
            (b"close", true, false),
            (b"keep-alive", false, true),
            (b"Keep-Alive", false, true),
            (b" CLOSE ", true, false),
            (b"\tclose\t", true, false),
            (b"keep-alive, close", true, false),
            (b"Upgrade,\tKeep-Alive", false, true),
            (b"upgrade", true, true),
            (b"upgrade", false, false),
            (b"", true, true),
            (b"closed", true, true),
            (b"\xffclose", true, true),
        ];
        for (value, default, want) in rows {
            assert_eq!(
                connection_keeps_alive(value, *default),
                *want,
                "{:?} default {default}",
                String::from_utf8_lossy(value)
            );
        }
        let rows: &[(&[u8], Result<Framing, u16>)] = &[
            (b"chunked", Ok(Framing::Chunked)),
            (b"Chunked", Ok(Framing::Chunked)),
            (b"gzip, CHUNKED ", Ok(Framing::Chunked)),
            (b"gzip,\tchunked", Ok(Framing::Chunked)),
            (b"chunked, gzip", Err(501)),
            (b"gzip", Err(501)),
            (b"", Err(501)),
            (b"chunked,", Err(501)),
            (b"\xffchunked", Err(501)),
        ];
        for (value, want) in rows {
            let got = transfer_encoding(value, Framing::None).map_err(|e| e.status);
            assert_eq!(got, *want, "{:?}", String::from_utf8_lossy(value));
        }
        assert_eq!(
            transfer_encoding(b"chunked", Framing::Length(1)).map_err(|e| e.status),
            Err(400)
        );
    }

    #[test]
    fn whole_requests() {
        let text = b"POST /a HTTP/1.1\r\ncontent-length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n";
        let Next::Complete(first) = next_request(text).unwrap() else {
            panic!("complete")
        };
        assert_eq!(first.body.bytes(text), b"abc");
        let Next::Complete(second) = next_request(&text[first.total_len..]).unwrap() else {
            panic!("complete")
        };
        assert_eq!(second.total_len, text.len() - first.total_len);
        let chunked = b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        let Next::Complete(request) = next_request(chunked).unwrap() else {
            panic!("complete")
        };
        assert_eq!(
            (request.body.bytes(chunked), request.total_len),
            (&b"hi"[..], chunked.len())
        );
        let rows: &[(&[u8], Result<Next, u16>)] = &[
            (
                b"POST / HTTP/1.1\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\nab",
                Ok(Next::Incomplete {
                    expect_continue: true,
                }),
            ),
            (
                b"POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nab",
                Ok(Next::Incomplete {
                    expect_continue: false,
                }),
            ),
            (
                b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
                Ok(Next::Incomplete {
                    expect_continue: false,
                }),
            ),
            (
                b"POST / HTTP/1.1\r\ncontent-length: 99999999999\r\n\r\n",
                Err(413),
            ),
        ];
        for (input, want) in rows {
            match (next_request(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want),
                (Err(got), Err(status)) => assert_eq!(got.status, *status),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn chunked_bodies() {
        type Decoded<'a> = Result<Option<(&'a [u8], usize)>, u16>;
        let rows: &[(&[u8], Decoded<'_>)] = &[
            (b"3\r\nabc\r\n0\r\n\r\n", Ok(Some((b"abc", 13)))),
            (
                b"3\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\nNEXT",
                Ok(Some((b"abc", 27))),
            ),
            (b"3\r\nabc\r\n", Ok(None)),
            (b"3\r\nab", Ok(None)),
            (b"zz\r\n", Err(400)),
            (b"3\r\nabcXY0\r\n\r\n", Err(400)),
            (b"FFFFFFFF\r\n", Err(413)),
        ];
        for (input, want) in rows {
            let got = decode_chunked_partial(input);
            match (got, want) {
                (Ok(Some((body, used))), Ok(Some((want_body, want_used)))) => {
                    assert_eq!((&body[..], used), (*want_body, *want_used));
                }
                (Ok(None), Ok(None)) => {}
                (Err(e), Err(status)) => assert_eq!(e.status, *status),
                (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn response_heads() {
        let prefix = head_prefix(503, Some("text/html"), &[("x-a".into(), "b".into())]);
        let mut out = Vec::new();
        finish_head(&mut out, &prefix, BodyLength::Bytes(1234), true);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\nserver: loadlab-simulate\r\n")
        );
        assert!(text.contains("content-type: text/html\r\nx-a: b\r\ndate: "));
        assert!(
            text.ends_with("content-length: 1234\r\nconnection: close\r\n\r\n"),
            "{text}"
        );
        let mut out = Vec::new();
        finish_head(&mut out, b"", BodyLength::Bytes(0), false);
        let text = String::from_utf8(out).unwrap();
        let want = "content-length: 0\r\nconnection: keep-alive\r\n\r\n";
        assert!(text.ends_with(want), "{text}");
    }
}
