//! [`http_get`]: one blocking GET of a `/metrics` page under a deadline, over
//! [`wire::client`] (which reads Content-Length, chunked and close-delimited bodies up
//! to a size cap); anything but a 200 is an error naming the status.

use std::time::Instant;

/// A body larger than this is refused: no exporter serves that much, garbage might.
const MAX_BODY_BYTES: usize = 32 << 20;

/// Fetches `url` (plain `http://`), returning the body of a 200 answer. Every step
/// (resolve, connect, write, each read) is bounded by `deadline`.
pub(crate) fn http_get(url: &url::Url, deadline: Instant) -> Result<Vec<u8>, String> {
    let request = wire::client::Request {
        method: "GET",
        url,
        headers: &[
            ("User-Agent", "loadlab-monitor"),
            ("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"),
            ("Accept-Encoding", "identity"),
        ],
        body: &[],
        max_body_bytes: MAX_BODY_BYTES,
        tls: None,
    };
    let answer = wire::client::send(&request, deadline).map_err(|err| err.to_string())?;
    if answer.status != 200 {
        return Err(format!("HTTP {}", answer.status));
    }
    Ok(answer.body)
}
