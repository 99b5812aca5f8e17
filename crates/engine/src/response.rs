//! [`ResponseParser`]: an incremental HTTP/1.1 response parser. Heads go through
//! `httparse`; bodies are framed by Content-Length, chunked encoding or connection
//! close (chunked through [`wire::ChunkedDecoder`], shared with the monitor), and are
//! counted, never stored. A head split across reads is the only thing ever copied,
//! except for a flow step's answer: its head and the start of its body are kept for
//! its checks and extractions ([`ResponseParser::keep`]), in buffers the parser reuses.

use record::GrpcStatus;
use wire::{ChunkedDecoder, Progress};

use crate::grpc_messages::MessageCounter;

/// Why a response could not be parsed. Static text: parsing never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub &'static str);

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Feed {
    /// Everything was consumed; the response goes on.
    More,
    /// The response ended after `used` bytes of this input.
    Done { used: usize },
}

/// A response head is read up to this size, whatever its number of headers (a
/// thousand `Set-Cookie`s fit); a larger one is the error "response head larger
/// than 64 KiB", counted by kind like any.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Headers `httparse` reads into an array on the stack; a head with more is read
/// again line by line ([`parse_long_head`]), off the common path.
const MAX_HEADERS: usize = 96;
const REASON_BYTES: usize = 48;
/// The most of a `grpc-message` kept (for the error's text, like a status's reason).
pub(crate) const GRPC_MESSAGE_BYTES: usize = 128;

#[derive(Debug)]
enum State {
    Head,
    Body(Framing),
    Done,
}

#[derive(Debug, Clone, Copy)]
enum Framing {
    Length(u64),
    /// Decoded by the parser's `chunks`.
    Chunked,
    UntilClose,
}

pub(crate) struct ResponseParser {
    state: State,
    /// Head bytes carried over from earlier reads (empty on the fast path).
    carried: Vec<u8>,
    pub status: u16,
    reason: [u8; REASON_BYTES],
    reason_len: usize,
    /// The `Location` header of a redirect, when asked for.
    pub location: Vec<u8>,
    /// The connection cannot carry another request after this response.
    pub close: bool,
    /// A gRPC call's `grpc-status` (HTTP/2 trailers, or a trailers-only answer).
    pub grpc_status: Option<GrpcStatus>,
    /// Its `grpc-message`, as sent (percent-encoded), at most [`GRPC_MESSAGE_BYTES`].
    pub grpc_message: Vec<u8>,
    /// A streaming gRPC call's messages, counted as its DATA frames arrive.
    pub messages: MessageCounter,
    head_only: bool,
    want_location: bool,
    body_limit: u64,
    body_read: u64,
    chunks: ChunkedDecoder,
    /// A flow step's answer: its head (the last, past any 1xx) and body bytes kept.
    pub kept_head: Vec<u8>,
    pub kept_body: Vec<u8>,
    keep_head: bool,
    keep_body_bytes: usize,
}

/// What the head said, extracted without holding a borrow of the input.
struct HeadInfo {
    length: usize,
    status: u16,
    reason: ([u8; REASON_BYTES], usize),
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
    location: Option<(usize, usize)>,
}

impl ResponseParser {
    pub(crate) fn new() -> ResponseParser {
        ResponseParser {
            state: State::Done,
            carried: Vec::new(),
            status: 0,
            reason: [0; REASON_BYTES],
            reason_len: 0,
            location: Vec::new(),
            grpc_status: None,
            grpc_message: Vec::new(),
            messages: MessageCounter::default(),
            close: false,
            head_only: false,
            want_location: false,
            body_limit: u64::MAX,
            body_read: 0,
            chunks: ChunkedDecoder::new(),
            kept_head: Vec::new(),
            kept_body: Vec::new(),
            keep_head: false,
            keep_body_bytes: 0,
        }
    }

    /// Keeps this response's head, and its first `body_bytes` body bytes (after
    /// [`ResponseParser::start`], which keeps nothing).
    pub(crate) fn keep(&mut self, body_bytes: usize) {
        self.keep_head = true;
        self.keep_body_bytes = body_bytes;
    }

    /// An HTTP/2 answer's header block (its head, then its trailers), as `name: value`
    /// lines: kept after what came before when [`ResponseParser::keep`] asked.
    pub(crate) fn keep_fields(&mut self, fields: &[u8]) {
        if self.keep_head {
            self.kept_head.extend_from_slice(fields);
        }
    }

    /// The whole body's size so far (kept or not).
    pub(crate) fn body_read(&self) -> u64 {
        self.body_read
    }

    /// Body bytes an HTTP/2 stream's DATA frames carried (the session frames and
    /// counts them): kept as far as [`ResponseParser::keep`] asked, and counted.
    pub(crate) fn keep_data(&mut self, data: &[u8]) {
        keep_body(&mut self.kept_body, self.keep_body_bytes, data);
        self.body_read += data.len() as u64;
    }

    /// Prepares for the response to a new request.
    pub(crate) fn start(&mut self, head_only: bool, want_location: bool, body_limit: u64) {
        self.state = State::Head;
        self.carried.clear();
        self.status = 0;
        self.reason_len = 0;
        self.location.clear();
        self.close = false;
        self.grpc_status = None;
        self.grpc_message.clear();
        self.messages.start(None, 0);
        self.head_only = head_only;
        self.want_location = want_location;
        self.body_limit = body_limit;
        self.body_read = 0;
        self.keep_head = false;
        self.keep_body_bytes = 0;
        self.kept_head.clear();
        self.kept_body.clear();
    }

    /// The server's reason phrase (truncated to 48 bytes).
    pub(crate) fn reason(&self) -> &[u8] {
        &self.reason[..self.reason_len]
    }

    /// Whether the request was a HEAD (its response has no body).
    pub(crate) fn head_only(&self) -> bool {
        self.head_only
    }

    /// True when the body was cut at the caller's limit (the rest was not read).
    #[cfg(test)]
    fn truncated(&self) -> bool {
        self.body_read >= self.body_limit && self.body_limit != u64::MAX
    }

    pub(crate) fn feed(&mut self, data: &[u8]) -> Result<Feed, ProtocolError> {
        let mut at = 0;
        loop {
            match self.state {
                State::Done => return Ok(Feed::Done { used: at }),
                State::Head => match self.feed_head(&data[at..])? {
                    Some(used) => at += used,
                    None => return Ok(Feed::More),
                },
                State::Body(framing) => {
                    let (used, next) = self.feed_body(framing, &data[at..])?;
                    at += used;
                    self.state = next;
                }
            }
            if at == data.len() && !matches!(self.state, State::Done) {
                return Ok(Feed::More);
            }
        }
    }

    /// The peer closed the connection: the response is complete only if its length
    /// was "until close".
    pub(crate) fn eof(&mut self) -> Result<(), ProtocolError> {
        match self.state {
            State::Body(Framing::UntilClose) => {
                self.state = State::Done;
                Ok(())
            }
            State::Done => Ok(()),
            _ => Err(ProtocolError(
                "connection closed before the response was complete",
            )),
        }
    }

    /// Parses the head; `Some(used)` once it is complete (1xx heads are skipped).
    fn feed_head(&mut self, data: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let carried_len = self.carried.len();
        let parsed = if carried_len == 0 {
            parse_head(data, self.want_location)?
        } else {
            self.carried.extend_from_slice(data);
            parse_head(&self.carried, self.want_location)?
        };
        let Some(head) = parsed else {
            if carried_len == 0 {
                self.carried.extend_from_slice(data);
            }
            if self.carried.len() > MAX_HEAD_BYTES {
                return Err(ProtocolError("response head larger than 64 KiB"));
            }
            return Ok(None);
        };
        let used = head.length - carried_len;
        if let Some((start, end)) = head.location {
            let source = if carried_len == 0 {
                data
            } else {
                &self.carried[..]
            };
            self.location.clear();
            self.location.extend_from_slice(&source[start..end]);
        }
        if self.keep_head {
            let source = if carried_len == 0 {
                &data[..used]
            } else {
                &self.carried[..head.length]
            };
            self.kept_head.clear();
            self.kept_head.extend_from_slice(source);
        }
        self.carried.clear();
        if (100..200).contains(&head.status) && head.status != 101 {
            return Ok(Some(used));
        }
        self.apply_head(&head);
        Ok(Some(used))
    }

    fn apply_head(&mut self, head: &HeadInfo) {
        self.status = head.status;
        (self.reason, self.reason_len) = head.reason;
        self.close = head.close;
        let no_body =
            self.head_only || matches!(head.status, 204 | 304) || (100..200).contains(&head.status);
        self.state = if no_body {
            State::Done
        } else if head.chunked {
            self.chunks = ChunkedDecoder::new();
            State::Body(Framing::Chunked)
        } else {
            match head.content_length {
                Some(0) => State::Done,
                Some(length) => State::Body(Framing::Length(length)),
                None => {
                    self.close = true;
                    State::Body(Framing::UntilClose)
                }
            }
        };
    }

    /// Consumes body bytes; returns the bytes used and the next state.
    fn feed_body(
        &mut self,
        framing: Framing,
        data: &[u8],
    ) -> Result<(usize, State), ProtocolError> {
        let allowed = (self.body_limit - self.body_read).min(data.len() as u64) as usize;
        let data = &data[..allowed];
        let (used, next) = match framing {
            Framing::Length(remaining) => {
                let take = remaining.min(data.len() as u64);
                keep_body(
                    &mut self.kept_body,
                    self.keep_body_bytes,
                    &data[..take as usize],
                );
                self.body_read += take;
                let left = remaining - take;
                (
                    take as usize,
                    if left == 0 {
                        State::Done
                    } else {
                        State::Body(Framing::Length(left))
                    },
                )
            }
            Framing::UntilClose => {
                keep_body(&mut self.kept_body, self.keep_body_bytes, data);
                self.body_read += data.len() as u64;
                (data.len(), State::Body(Framing::UntilClose))
            }
            Framing::Chunked => {
                let (body_read, kept, keep) = (
                    &mut self.body_read,
                    &mut self.kept_body,
                    self.keep_body_bytes,
                );
                let progress = self
                    .chunks
                    .feed(data, |bytes| {
                        keep_body(kept, keep, bytes);
                        *body_read += bytes.len() as u64;
                    })
                    .map_err(|err| ProtocolError(err.reason()))?;
                match progress {
                    Progress::More => (data.len(), State::Body(Framing::Chunked)),
                    Progress::Done { used } => (used, State::Done),
                }
            }
        };
        if self.body_read >= self.body_limit && !matches!(next, State::Done) {
            self.close = true;
            return Ok((used, State::Done));
        }
        Ok((used, next))
    }
}

/// Appends what fits of `bytes` to `kept`, which holds at most `limit` bytes.
fn keep_body(kept: &mut Vec<u8>, limit: usize, bytes: &[u8]) {
    let room = limit.saturating_sub(kept.len());
    if room > 0 {
        kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }
}

/// Parses a complete head, or returns `None` if more bytes are needed.
fn parse_head(bytes: &[u8], want_location: bool) -> Result<Option<HeadInfo>, ProtocolError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return parse_long_head(bytes, want_location),
        Err(_) => return Err(ProtocolError("malformed response head")),
    };
    let http10 = response.version == Some(0);
    let mut info = HeadInfo::new(length, response.code.unwrap_or(0), http10);
    info.set_reason(response.reason.unwrap_or("").as_bytes());
    for header in response.headers.iter() {
        info.header(
            bytes,
            header.name.as_bytes(),
            header.value,
            http10,
            want_location,
        )?;
    }
    Ok(Some(info))
}

/// A head with more headers than [`MAX_HEADERS`], read line by line: the status line
/// `HTTP/1.x NNN reason`, then `name: value` lines (no obsolete line folding).
fn parse_long_head(bytes: &[u8], want_location: bool) -> Result<Option<HeadInfo>, ProtocolError> {
    const MALFORMED: ProtocolError = ProtocolError("malformed response head");
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let mut lines = bytes[..end]
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let status_line = lines.next().unwrap_or_default();
    let (http10, code, reason) = match status_line {
        [
            b'H',
            b'T',
            b'T',
            b'P',
            b'/',
            b'1',
            b'.',
            minor @ (b'0' | b'1'),
            b' ',
            a,
            b,
            c,
            rest @ ..,
        ] if [a, b, c].iter().all(|d| d.is_ascii_digit())
            && (rest.is_empty() || rest[0] == b' ') =>
        {
            let code = [a, b, c]
                .iter()
                .fold(0u16, |n, d| n * 10 + u16::from(**d - b'0'));
            (*minor == b'0', code, rest.trim_ascii_start())
        }
        _ => return Err(MALFORMED),
    };
    let mut info = HeadInfo::new(end + 4, code, http10);
    info.set_reason(reason);
    for line in lines {
        let colon = line.iter().position(|&b| b == b':').ok_or(MALFORMED)?;
        let name = &line[..colon];
        let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
        if name.is_empty() || !name.iter().all(token) {
            return Err(MALFORMED);
        }
        let value = line[colon + 1..].trim_ascii();
        info.header(bytes, name, value, http10, want_location)?;
    }
    Ok(Some(info))
}

impl HeadInfo {
    fn new(length: usize, status: u16, http10: bool) -> HeadInfo {
        HeadInfo {
            length,
            status,
            reason: ([0; REASON_BYTES], 0),
            content_length: None,
            chunked: false,
            close: http10,
            location: None,
        }
    }

    fn set_reason(&mut self, reason: &[u8]) {
        let len = reason.len().min(REASON_BYTES);
        self.reason.0[..len].copy_from_slice(&reason[..len]);
        self.reason.1 = len;
    }

    /// Takes in one header of the head `bytes` (`value` lies within them).
    fn header(
        &mut self,
        bytes: &[u8],
        name: &[u8],
        value: &[u8],
        http10: bool,
        want_location: bool,
    ) -> Result<(), ProtocolError> {
        if name.eq_ignore_ascii_case(b"content-length") {
            let length = parse_content_length(value)?;
            if self.content_length.is_some_and(|v| v != length) {
                return Err(ProtocolError("conflicting Content-Length headers"));
            }
            self.content_length = Some(length);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.chunked = last_token(value).eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                    self.close = false;
                }
            }
        } else if want_location && name.eq_ignore_ascii_case(b"location") {
            let start = value.as_ptr() as usize - bytes.as_ptr() as usize;
            self.location = Some((start, start + value.len()));
        }
        Ok(())
    }
}

fn parse_content_length(value: &[u8]) -> Result<u64, ProtocolError> {
    let text = value.trim_ascii();
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) || text.len() > 19 {
        return Err(ProtocolError("bad Content-Length"));
    }
    Ok(text.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

fn last_token(value: &[u8]) -> &[u8] {
    value
        .rsplit(|&b| b == b',')
        .next()
        .unwrap_or(value)
        .trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; returns status, used bytes of the last
    /// piece and whether the connection must close.
    fn parse_in_steps(
        input: &[u8],
        step: usize,
        head_only: bool,
    ) -> Result<(u16, usize, bool), ProtocolError> {
        let mut parser = ResponseParser::new();
        parser.start(head_only, false, u64::MAX);
        let mut offset = 0;
        while offset < input.len() {
            let end = (offset + step).min(input.len());
            if let Feed::Done { used } = parser.feed(&input[offset..end])? {
                return Ok((parser.status, offset + used, parser.close));
            }
            offset = end;
        }
        parser.eof()?;
        Ok((parser.status, input.len(), parser.close))
    }

    #[test]
    fn parses_responses_whatever_the_read_boundaries() {
        type Row = (&'static [u8], bool, (u16, usize, bool));
        let rows: &[Row] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA", false, (200, 43, false)),
            (b"HTTP/1.1 204 No Content\r\n\r\n", false, (204, 27, false)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, (200, 38, false)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\nNEXT", false, (200, 84, false)),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", false, (201, 89, true)),
            (b"HTTP/1.0 200 OK\r\n\r\nuntil the end", false, (200, 32, true)),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", false, (200, 63, false)),
            (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", false, (503, 55, false)),
        ];
        for &(input, head_only, want) in rows {
            for step in [1, 2, 7, input.len()] {
                assert_eq!(
                    parse_in_steps(input, step, head_only),
                    Ok(want),
                    "{:?} step {step}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    }

    /// A head of `count` `Set-Cookie`s around the given headers.
    fn many_headers(status_line: &str, count: usize, headers: &str) -> Vec<u8> {
        let mut head = format!("{status_line}\r\n");
        for i in 0..count {
            head.push_str(&format!("Set-Cookie: c{i}=v{i}; Path=/\r\n"));
        }
        head.push_str(headers);
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// A head, the body after it, and the status and close wanted.
    type ManyRow = (Vec<u8>, &'static [u8], (u16, bool));

    #[test]
    fn reads_a_head_of_a_thousand_headers() {
        let rows: &[ManyRow] = &[
            (
                many_headers("HTTP/1.1 200 OK", 1000, "Content-Length: 5\r\n"),
                b"helloNEXT",
                (200, false),
            ),
            (
                many_headers(
                    "HTTP/1.1 302 Found",
                    97,
                    "Location: /n\r\nContent-Length: 0\r\n",
                ),
                b"",
                (302, false),
            ),
            (
                many_headers(
                    "HTTP/1.1 200 OK",
                    500,
                    "Transfer-Encoding: chunked\r\nConnection: close\r\n",
                ),
                b"2\r\nok\r\n0\r\n\r\n",
                (200, true),
            ),
            (
                many_headers(
                    "HTTP/1.0 503 Service Unavailable",
                    200,
                    "Connection: keep-alive\r\nContent-Length: 1\r\n",
                ),
                b"x",
                (503, false),
            ),
        ];
        for (head, body, (status, close)) in rows {
            let input = [head.as_slice(), body].concat();
            let used = head.len() + body.len() - usize::from(body.ends_with(b"NEXT")) * 4;
            // Each read parses the head carried so far again: not byte by byte here.
            for step in [999, 4096, input.len()] {
                assert_eq!(
                    parse_in_steps(&input, step, false),
                    Ok((*status, used, *close)),
                    "{} header bytes, step {step}",
                    head.len()
                );
            }
        }
        let mut parser = ResponseParser::new();
        parser.start(false, true, u64::MAX);
        let input = many_headers(
            "HTTP/1.1 301 Moved",
            300,
            "Location: /there\r\nContent-Length: 0\r\n",
        );
        assert_eq!(parser.feed(&input), Ok(Feed::Done { used: input.len() }));
        assert_eq!(parser.location, b"/there");
        // Beyond the head's bound, and malformed lines, whatever the count.
        let rows: &[(Vec<u8>, &str)] = &[
            (many_headers("HTTP/1.1 200 OK", 3000, ""), "64 KiB"),
            (
                many_headers("HTTP/1.1 200 OK", 100, "no colon\r\n"),
                "malformed",
            ),
            (
                many_headers("HTTP/1.1 200 OK", 100, "Bad Name: x\r\n"),
                "malformed",
            ),
            (many_headers("HTTP/1.1 2000 OK", 100, ""), "malformed"),
            (many_headers("HTTP/2.0 200 OK", 100, ""), "malformed"),
            (
                many_headers(
                    "HTTP/1.1 200 OK",
                    100,
                    "Content-Length: 1\r\nContent-Length: 2\r\n",
                ),
                "conflicting",
            ),
        ];
        for (input, want) in rows {
            let err = parse_in_steps(input, 4096, false).unwrap_err();
            assert!(err.0.contains(want), "{want}: {err:?}");
        }
    }

    #[test]
    fn rejects_garbage() {
        let rows: &[(&[u8], &str)] = &[
            (b"garbage\r\n\r\n", "malformed"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "bad Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "conflicting",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "not hexadecimal",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
                "longer than its size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
                "too large",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                "closed before",
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Le", "closed before"),
        ];
        for &(input, want) in rows {
            let err = parse_in_steps(input, 3, false).unwrap_err();
            assert!(
                err.0.contains(want),
                "{:?}: {err:?}",
                String::from_utf8_lossy(input)
            );
        }
        let mut huge = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', 70_000));
        huge.extend_from_slice(b"\r\n\r\n");
        assert!(
            parse_in_steps(&huge, 4096, false)
                .unwrap_err()
                .0
                .contains("64 KiB")
        );
    }

    #[test]
    fn keeps_a_flow_steps_head_and_body_start_whatever_the_reads() {
        let rows: &[(&[u8], usize, &[u8])] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 3, b"hel"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 64, b"abcde"),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\n\r\nuntil close", 64, b"until close"),
        ];
        for &(input, keep, body) in rows {
            for step in [1, 5, input.len()] {
                let mut parser = ResponseParser::new();
                parser.start(false, false, u64::MAX);
                parser.keep(keep);
                for piece in input.chunks(step) {
                    if let Ok(Feed::Done { .. }) = parser.feed(piece) {
                        break;
                    }
                }
                let _ = parser.eof();
                assert_eq!(parser.kept_body, body, "step {step}");
                let head = String::from_utf8_lossy(&parser.kept_head);
                assert!(
                    head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
                    "{head:?}"
                );
                // The next response keeps nothing unless asked.
                parser.start(false, false, u64::MAX);
                assert!(parser.kept_head.is_empty() && parser.kept_body.is_empty());
            }
        }
    }

    #[test]
    fn keeps_reason_location_and_body_limit() {
        let mut parser = ResponseParser::new();
        parser.start(false, true, 4);
        let input =
            b"HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 10\r\n\r\n0123456789";
        assert_eq!(parser.feed(&input[..20]), Ok(Feed::More));
        assert_eq!(
            parser.feed(&input[20..]),
            Ok(Feed::Done {
                used: input.len() - 20 - 6
            })
        );
        assert_eq!(
            (parser.status, parser.reason(), parser.location.as_slice()),
            (302, &b"Found"[..], &b"/next"[..])
        );
        assert!(parser.truncated() && parser.close);
    }
}
