//! Fetching a recipe's `origin` once, at load, with a small blocking HTTP/1.1 client.
//!
//! Only `http://` is fetched: TLS would pull a TLS stack into the simulator for a
//! one-off download, and a page saved with `curl -o page.html` serves the same bytes
//! through `body_file`. Errors say which of those steps failed.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::duration_size::format_size;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// Room for the status line and headers on top of the body cap.
const HEAD_ALLOWANCE_BYTES: u64 = 64 * 1024;

/// GETs `url` and returns the body of a 2xx answer of at most `max_body_bytes`.
pub(crate) fn fetch(url: &str, max_body_bytes: u64) -> Result<Vec<u8>, String> {
    if url.starts_with("https://") {
        return Err(format!(
            "{url}: https origins are not fetched; save the page (curl -o page.html {url}) and use \"body_file\""
        ));
    }
    let (host_port, path) = split_url(url)?;
    let response = get(url, &host_port, &path, max_body_bytes)?;
    let body = parse_response(url, &response)?;
    if body.len() as u64 > max_body_bytes {
        return Err(too_large(url, max_body_bytes));
    }
    Ok(body)
}

fn too_large(url: &str, max_body_bytes: u64) -> String {
    format!(
        "{url}: the body is larger than the {} it may hold (simulate -max-body-size, -max-recipe-memory)",
        format_size(max_body_bytes)
    )
}

/// `http://host[:port]/path?q` -> (`host:port`, `/path?q`).
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: not an http:// url"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{url}: expected http://host[:port]/path"));
    }
    let has_port = authority.rsplit_once(':').is_some_and(|(host, port)| {
        !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && (!host.starts_with('[') || host.ends_with(']'))
    });
    let host_port = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok((host_port, path.to_owned()))
}

fn get(url: &str, host_port: &str, path: &str, max_body_bytes: u64) -> Result<Vec<u8>, String> {
    let addrs: Vec<_> = host_port
        .to_socket_addrs()
        .map_err(|e| format!("{url}: cannot resolve {host_port}: {e}"))?
        .collect();
    let mut last_error = format!("{url}: {host_port} resolves to no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(stream) => return exchange(url, stream, (host_port, path), max_body_bytes),
            Err(e) => last_error = format!("{url}: unreachable ({addr}: {e})"),
        }
    }
    Err(last_error)
}

fn exchange(
    url: &str,
    mut stream: TcpStream,
    (host_port, path): (&str, &str),
    max_body_bytes: u64,
) -> Result<Vec<u8>, String> {
    let io = |e: std::io::Error| format!("{url}: {e}");
    stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(io)?;
    let host = host_port.strip_suffix(":80").unwrap_or(host_port);
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {host}\r\naccept-encoding: identity\r\nuser-agent: loadlab-simulate\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut response = Vec::new();
    let limit_bytes = max_body_bytes.saturating_add(HEAD_ALLOWANCE_BYTES + 1);
    stream
        .take(limit_bytes)
        .read_to_end(&mut response)
        .map_err(io)?;
    if response.len() as u64 >= limit_bytes {
        return Err(too_large(url, max_body_bytes));
    }
    Ok(response)
}

fn parse_response(url: &str, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            return Err(format!("{url}: the answer ended inside its headers"));
        }
        Err(e) => return Err(format!("{url}: not an HTTP answer ({e})")),
    };
    let status = response.code.unwrap_or(0);
    if !(200..300).contains(&status) {
        return Err(format!(
            "{url}: answered {status}, want 2xx (redirects are not followed)"
        ));
    }
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    let rest = &bytes[head_len..];
    if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        return crate::http::decode_chunked(rest)
            .ok_or_else(|| format!("{url}: malformed chunked body"))
            .map(|(body, _)| body);
    }
    match header("content-length").map(|v| v.trim().parse::<usize>()) {
        Some(Ok(len)) if rest.len() >= len => Ok(rest[..len].to_vec()),
        Some(Ok(len)) => Err(format!(
            "{url}: body cut short ({} of {len} bytes)",
            rest.len()
        )),
        Some(Err(_)) => Err(format!("{url}: bad content-length")),
        None => Ok(rest.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves `answer` once to whoever connects, on a loopback port.
    fn one_shot(answer: &'static [u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(answer);
            }
        });
        format!("http://{addr}/page")
    }

    #[test]
    fn fetches_and_rejects() {
        type Row = (&'static [u8], Result<&'static [u8], &'static str>);
        let rows: &[Row] = &[
            (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", Ok(b"hello")),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", Ok(b"until close")),
            (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", Ok(b"abcde")),
            (b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", Err("answered 404")),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", Err("cut short")),
            (b"garbage\r\n\r\n", Err("not an HTTP answer")),
        ];
        let big = one_shot(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world");
        assert!(fetch(&big, 10).unwrap_err().contains("larger than the 10b"));
        for (answer, want) in rows {
            let url = one_shot(answer);
            match (fetch(&url, 1 << 20), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got[..], *want),
                (Err(got), Err(want)) => assert!(got.contains(want), "{got}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn unreachable_and_unsupported_origins() {
        // Bind then drop, so the port is (almost surely) closed.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = fetch(&format!("http://127.0.0.1:{port}/"), 1 << 20).unwrap_err();
        assert!(err.contains("unreachable"), "{err}");
        assert!(
            fetch("https://www.bbc.co.uk/news", 1 << 20)
                .unwrap_err()
                .contains("body_file")
        );
        assert!(
            fetch("http:///x", 1 << 20)
                .unwrap_err()
                .contains("expected http://host")
        );
        assert_eq!(
            split_url("http://h/p?q").unwrap(),
            ("h:80".to_owned(), "/p?q".to_owned())
        );
        assert_eq!(
            split_url("http://h:81").unwrap(),
            ("h:81".to_owned(), "/".to_owned())
        );
        assert_eq!(split_url("http://[::1]").unwrap().0, "[::1]:80");
    }
}
