//! [`HttpLink`]: a [`ShardLink`] over plain HTTP/1.1 to a shard's `-steer` address.
//! The shard's server answers one GET per connection with a `Content-Length`, so a
//! connect, one write and a read to the end are the whole client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::shard::ShardLink;

/// Connect and answer timeouts: well under the one-second poll budget.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(700);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// A shard's answer holds at most ten minutes of seconds: a few MB.
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// A shard at `host:port` (or `http://host:port`).
pub struct HttpLink {
    given: String,
    address: SocketAddr,
}

impl HttpLink {
    /// The link to `given`, resolved now; the error names the address.
    pub fn new(given: &str) -> Result<HttpLink, String> {
        let bare = given
            .strip_prefix("http://")
            .unwrap_or(given)
            .trim_end_matches('/');
        if bare.is_empty() || bare.contains('/') {
            return Err(format!("{given}: want HOST:PORT or http://HOST:PORT"));
        }
        let address = (bare.to_socket_addrs())
            .map_err(|err| format!("{given}: {err}"))?
            .next()
            .ok_or_else(|| format!("{given}: no address"))?;
        Ok(HttpLink {
            given: bare.to_owned(),
            address,
        })
    }
}

impl ShardLink for HttpLink {
    fn get(&mut self, path_and_query: &str) -> Result<Vec<u8>, String> {
        let mut stream = TcpStream::connect_timeout(&self.address, CONNECT_TIMEOUT)
            .map_err(|err| err.to_string())?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(ANSWER_TIMEOUT)))
            .map_err(|err| err.to_string())?;
        let head = format!(
            "GET {path_and_query} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.given
        );
        stream
            .write_all(head.as_bytes())
            .map_err(|err| err.to_string())?;
        let mut answer = Vec::new();
        (&mut stream)
            .take(MAX_ANSWER_BYTES)
            .read_to_end(&mut answer)
            .map_err(|err| err.to_string())?;
        body_of(&answer)
    }

    fn address(&self) -> String {
        self.given.clone()
    }
}

/// The body of a 200 answer; else the status and the body's first line.
fn body_of(answer: &[u8]) -> Result<Vec<u8>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(answer) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Err("the answer was cut short".to_owned()),
        Err(err) => return Err(format!("not an HTTP answer: {err}")),
    };
    let body = &answer[head_len..];
    match response.code {
        Some(200) => Ok(body.to_vec()),
        code => {
            let text = String::from_utf8_lossy(body);
            let first = text.lines().next().unwrap_or("").trim();
            Err(format!("HTTP {}: {first}", code.unwrap_or(0)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer and its body, or why it was refused.
    type Row = (&'static [u8], Result<&'static [u8], &'static str>);

    #[test]
    fn answers_are_read_or_refused_with_why() {
        let rows: [Row; 4] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", Ok(b"{}")),
            (
                b"HTTP/1.1 404 Not Found\r\n\r\nno such page: /x\nmore",
                Err("HTTP 404: no such page: /x"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-",
                Err("the answer was cut short"),
            ),
            (
                b"SSH-2.0-OpenSSH\r\n\r\n",
                Err("not an HTTP answer: invalid HTTP version"),
            ),
        ];
        for (answer, want) in rows {
            let got = body_of(answer);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                want,
                "{}",
                String::from_utf8_lossy(answer)
            );
        }
    }

    #[test]
    fn addresses_are_checked() {
        assert!(HttpLink::new("http://127.0.0.1:9/").is_ok());
        let err = HttpLink::new("http://127.0.0.1:9/seconds")
            .err()
            .unwrap_or_default();
        assert!(err.contains("want HOST:PORT"), "{err}");
        assert!(HttpLink::new("nowhere-without-port").is_err());
    }
}
