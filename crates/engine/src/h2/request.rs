//! An HTTP/1.1 request as HTTP/2 fields: the engine renders every request (static,
//! templated or a redirect's hop) as HTTP/1.1 bytes once, and an HTTP/2 connection
//! re-frames them. The head becomes an HPACK header block of literals that never
//! touch the dynamic table and are never Huffman-coded: the server decodes them
//! without state, the client keeps none, and encoding is a copy.

/// The most header lines a request may have (ours are rendered by the engine).
const MAX_HEADERS: usize = 128;

// Static table indices (RFC 7541 Appendix A).
const AUTHORITY: usize = 1;
const METHOD_GET: usize = 2;
const METHOD_POST: usize = 3;
const METHOD: usize = 2;
const PATH_ROOT: usize = 4;
const PATH: usize = 4;
const SCHEME_HTTP: usize = 6;
const SCHEME_HTTPS: usize = 7;

/// Headers that mean something only to an HTTP/1.1 connection (RFC 9113 §8.2.2).
const CONNECTION_HEADERS: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Writes the header block of the HTTP/1.1 request `h1` into `block` (cleared
/// first) and returns where its body starts in `h1`.
pub(crate) fn encode_head(
    h1: &[u8],
    https: bool,
    block: &mut Vec<u8>,
) -> Result<usize, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let body_at = match request.parse(h1) {
        Ok(httparse::Status::Complete(at)) => at,
        Ok(httparse::Status::Partial) => return Err("h2: request head incomplete"),
        Err(_) => return Err("h2: request head unreadable"),
    };
    block.clear();
    match request.method.unwrap_or("GET") {
        "GET" => put_indexed(block, METHOD_GET),
        "POST" => put_indexed(block, METHOD_POST),
        method => put_literal(block, METHOD, method.as_bytes()),
    }
    put_indexed(block, if https { SCHEME_HTTPS } else { SCHEME_HTTP });
    if let Some(host) = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
    {
        put_literal(block, AUTHORITY, host.value);
    }
    match request.path.unwrap_or("/") {
        "/" => put_indexed(block, PATH_ROOT),
        path => put_literal(block, PATH, path.as_bytes()),
    }
    for header in request.headers.iter() {
        let skip = CONNECTION_HEADERS
            .iter()
            .any(|name| header.name.eq_ignore_ascii_case(name))
            || (header.name.eq_ignore_ascii_case("te") && header.value != b"trailers");
        if !skip {
            put_new_name(block, header.name.as_bytes(), header.value);
        }
    }
    Ok(body_at)
}

/// An integer with an `prefix_bits`-bit prefix, the first byte's other bits `flags`.
pub(super) fn put_integer(out: &mut Vec<u8>, prefix_bits: u32, flags: u8, mut value: usize) {
    let max_prefix = (1usize << prefix_bits) - 1;
    if value < max_prefix {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix as u8);
    value -= max_prefix;
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    put_integer(out, 7, 0, bytes.len());
    out.extend_from_slice(bytes);
}

fn put_indexed(out: &mut Vec<u8>, index: usize) {
    put_integer(out, 7, 0x80, index);
}

/// A literal field without indexing whose name is the static table's `name_index`.
fn put_literal(out: &mut Vec<u8>, name_index: usize, value: &[u8]) {
    put_integer(out, 4, 0, name_index);
    put_string(out, value);
}

/// A literal field without indexing with its name spelled out, in lowercase.
fn put_new_name(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    put_integer(out, 7, 0, name.len());
    out.extend(name.iter().map(u8::to_ascii_lowercase));
    put_string(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut decoder = loona_hpack::Decoder::new();
        decoder
            .decode(block)
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    fn fields(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn requests_become_the_fields_a_decoder_reads_back() {
        let long_path = format!("/{}", "a".repeat(300));
        let long_request = format!("GET {long_path} HTTP/1.1\r\nHost: h\r\n\r\n");
        /// The request, https, the fields decoded back, the body's length.
        type Row = (&'static str, bool, Vec<(&'static str, &'static str)>, usize);
        let rows: Vec<Row> = vec![
            (
                "GET / HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: loadlab\r\n\r\n",
                false,
                vec![
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":authority", "example.com:8080"),
                    (":path", "/"),
                    ("user-agent", "loadlab"),
                ],
                0,
            ),
            (
                "POST /api?q=1 HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello",
                true,
                vec![
                    (":method", "POST"),
                    (":scheme", "https"),
                    (":authority", "a"),
                    (":path", "/api?q=1"),
                    ("content-type", "text/plain"),
                    ("content-length", "5"),
                ],
                5,
            ),
            (
                "DELETE /x HTTP/1.1\r\nHost: a\r\nTE: gzip\r\nTransfer-Encoding: chunked\r\nUpgrade: h2c\r\n\r\n",
                false,
                vec![
                    (":method", "DELETE"),
                    (":scheme", "http"),
                    (":authority", "a"),
                    (":path", "/x"),
                ],
                0,
            ),
            (
                "GET /t HTTP/1.1\r\nHost: a\r\nte: trailers\r\n\r\n",
                false,
                vec![
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":authority", "a"),
                    (":path", "/t"),
                    ("te", "trailers"),
                ],
                0,
            ),
        ];
        for (h1, https, want, body_len) in rows {
            let mut block = Vec::new();
            let body_at = encode_head(h1.as_bytes(), https, &mut block).unwrap();
            assert_eq!(decode(&block), fields(&want), "{h1:?}");
            assert_eq!(h1.len() - body_at, body_len, "{h1:?}");
        }
        let mut block = Vec::new();
        encode_head(long_request.as_bytes(), false, &mut block).unwrap();
        assert_eq!(decode(&block)[3], (":path".to_owned(), long_path));
    }

    #[test]
    fn unreadable_heads_are_errors() {
        let rows: Vec<(&[u8], &str)> = vec![
            (
                b"GET / HTTP/1.1\r\nHost: a\r\n",
                "h2: request head incomplete",
            ),
            (
                b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                "h2: request head unreadable",
            ),
        ];
        for (h1, want) in rows {
            assert_eq!(encode_head(h1, false, &mut Vec::new()), Err(want));
        }
    }
}
