//! [`http_get`]: one blocking HTTP/1.1 GET under a deadline, enough for `/metrics`
//! scrapes: Content-Length, chunked and close-delimited bodies, a size cap, and errors
//! that say what went wrong (refused, timed out, status, too large).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Instant;

use wire::{ChunkedDecoder, Progress, WireError};

/// A body larger than this is refused: no exporter serves that much, garbage might.
pub(crate) const MAX_BODY_BYTES: usize = 32 << 20;
const MAX_HEAD_BYTES: usize = 64 << 10;

/// Fetches `url` (plain `http://`), returning the body of a 200 answer. Every step
/// (resolve, connect, write, each read) is bounded by `deadline`.
pub(crate) fn http_get(url: &url::Url, deadline: Instant) -> Result<Vec<u8>, String> {
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|err| format!("resolve {host}: {err}"))?
        .next()
        .ok_or_else(|| format!("resolve {host}: no address"))?;
    let mut stream = TcpStream::connect_timeout(&address, remaining(deadline)?)
        .map_err(|err| format!("connect: {err}"))?;
    let _ = stream.set_nodelay(true);
    stream
        .set_write_timeout(Some(remaining(deadline)?))
        .map_err(|e| e.to_string())?;
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: loadlab-monitor\r\n\
         Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\nAccept-Encoding: identity\r\n\
         Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|err| format!("send: {err}"))?;
    let mut buffer = Vec::with_capacity(16 << 10);
    let head_len = read_head(&mut stream, &mut buffer, deadline)?;
    let (status, body_kind) = parse_head(&buffer[..head_len])?;
    let body = read_body(&mut stream, buffer.split_off(head_len), body_kind, deadline)?;
    if status != 200 {
        return Err(format!("HTTP {status}"));
    }
    Ok(body)
}

fn remaining(deadline: Instant) -> Result<std::time::Duration, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err("timed out".to_owned())
    } else {
        Ok(left)
    }
}

/// Reads more bytes into `buffer`; 0 at the end of the stream.
fn read_more(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, String> {
    stream
        .set_read_timeout(Some(remaining(deadline)?))
        .map_err(|e| e.to_string())?;
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
            Err("timed out".to_owned())
        }
        Err(err) => Err(format!("read: {err}")),
    }
}

fn read_head(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, String> {
    loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(at + 4);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err("the response head is too large".to_owned());
        }
        if read_more(stream, buffer, deadline)? == 0 {
            return Err(if buffer.is_empty() {
                "the server closed the connection without answering".to_owned()
            } else {
                "not an HTTP response".to_owned()
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

fn parse_head(head: &[u8]) -> Result<(u16, BodyKind), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("not an HTTP response".to_owned()),
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
                .map_err(|_| format!("bad Content-Length {value:?}"))?;
            kind = BodyKind::Length(length);
        } else if header.name.eq_ignore_ascii_case("content-encoding")
            && !value.trim().eq_ignore_ascii_case("identity")
        {
            return Err(format!("the body is {value}-encoded; expected plain text"));
        }
    }
    if matches!(kind, BodyKind::Length(n) if n > MAX_BODY_BYTES) {
        return Err(format!("the body is larger than {MAX_BODY_BYTES} bytes"));
    }
    Ok((status, kind))
}

fn read_body(
    stream: &mut TcpStream,
    mut body: Vec<u8>,
    kind: BodyKind,
    deadline: Instant,
) -> Result<Vec<u8>, String> {
    let too_large = || format!("the body is larger than {MAX_BODY_BYTES} bytes");
    match kind {
        BodyKind::Length(length) => {
            while body.len() < length {
                if read_more(stream, &mut body, deadline)? == 0 {
                    return Err(format!(
                        "the body was cut at {} of {length} bytes",
                        body.len()
                    ));
                }
            }
            body.truncate(length);
            Ok(body)
        }
        BodyKind::UntilClose => {
            while read_more(stream, &mut body, deadline)? > 0 {
                if body.len() > MAX_BODY_BYTES {
                    return Err(too_large());
                }
            }
            Ok(body)
        }
        BodyKind::Chunked => {
            let mut decoder = Dechunker::default();
            loop {
                match decoder.decode(&body) {
                    Ok(Some(decoded)) => return Ok(decoded),
                    Ok(None) if body.len() > MAX_BODY_BYTES + MAX_HEAD_BYTES => {
                        return Err(too_large());
                    }
                    Ok(None) => {
                        if read_more(stream, &mut body, deadline)? == 0 {
                            return Err("the chunked body was cut short".to_owned());
                        }
                    }
                    Err(err) => return Err(err),
                }
            }
        }
    }
}

/// Decodes a chunked body as it arrives with the engine's decoder
/// ([`wire::ChunkedDecoder`]): each call feeds only the bytes the previous calls did not,
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
    fn decode(&mut self, raw: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let out = &mut self.out;
        let progress = self
            .decoder
            .feed(&raw[self.fed..], |data| out.extend_from_slice(data));
        self.fed = raw.len();
        match progress {
            Ok(Progress::More) => Ok(None),
            Ok(Progress::Done { .. }) => Ok(Some(std::mem::take(&mut self.out))),
            Err(WireError::ChunkSize(_)) => Err(format!(
                "bad chunk size {:?}",
                size_text(raw, self.decoder.size_line_start())
            )),
            Err(err) => Err(err.to_string()),
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
    Dechunker::default().decode(raw)
}

#[cfg(test)]
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
            match (parse_head(head.as_bytes()), want) {
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
        assert_eq!(decoder.decode(b"5\r\nhello\r\nz"), Ok(None));
        let err = decoder.decode(b"5\r\nhello\r\nzz\r\n").unwrap_err();
        assert!(err.contains("bad chunk size \"zz\""), "{err}");
        // An absurd size waits (the caller's size cap ends it) instead of overflowing.
        assert_eq!(dechunk(b"ffffffffffffffff\r\nab"), Ok(None));
    }
}
