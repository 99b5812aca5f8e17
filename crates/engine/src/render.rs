//! Renders a [`workload::Target`] to HTTP/1.1 request bytes, once, before the run.

use std::io::Write as _;

use workload::Target;

/// The `User-Agent` we send unless the target sets one.
pub(crate) const USER_AGENT: &str = concat!("loadlab/", env!("CARGO_PKG_VERSION"));

/// Wire bytes of one request.
pub(crate) fn render_request(target: &Target, keepalive: bool) -> Vec<u8> {
    let url = &target.url;
    let mut out = Vec::with_capacity(128 + target.body.len());
    let _ = write!(out, "{} {}", target.method, url.path());
    if let Some(query) = url.query() {
        let _ = write!(out, "?{query}");
    }
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    match target.host_override() {
        Some(host) => out.extend_from_slice(host.as_bytes()),
        None => out.extend_from_slice(host_header(url).as_bytes()),
    }
    out.extend_from_slice(b"\r\n");
    let has = |name: &str| {
        target
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(name))
    };
    if !has("user-agent") {
        let _ = write!(out, "User-Agent: {USER_AGENT}\r\n");
    }
    for header in target
        .headers
        .iter()
        .filter(|h| !h.name.eq_ignore_ascii_case("host"))
    {
        let _ = write!(out, "{}: {}\r\n", header.name, header.value);
    }
    let sends_body =
        !target.body.is_empty() || matches!(target.method.as_str(), "POST" | "PUT" | "PATCH");
    if sends_body && !has("content-length") && !has("transfer-encoding") {
        let _ = write!(out, "Content-Length: {}\r\n", target.body.len());
    }
    if !keepalive && !has("connection") {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&target.body);
    out
}

/// `host[:port]`, with the port only when it is not the scheme's default.
pub(crate) fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::Header;

    fn target(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Target {
        Target {
            method: method.to_owned(),
            url: url::Url::parse(url).unwrap(),
            headers: headers
                .iter()
                .map(|(n, v)| Header {
                    name: (*n).to_owned(),
                    value: (*v).to_owned(),
                })
                .collect(),
            body: body.to_vec(),
        }
    }

    #[test]
    fn renders_requests() {
        let ua = format!("User-Agent: {USER_AGENT}\r\n");
        let rows: Vec<(Target, bool, String)> = vec![
            (target("GET", "http://127.0.0.1:8080/a?b=1", &[], b""), true, format!("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{ua}\r\n")),
            (target("GET", "http://example.test/", &[("X-A", "1")], b""), false, format!("GET / HTTP/1.1\r\nHost: example.test\r\n{ua}X-A: 1\r\nConnection: close\r\n\r\n")),
            (target("POST", "https://[::1]:8443/p", &[("Host", "api.test"), ("User-Agent", "me")], b"hi"), true, "POST /p HTTP/1.1\r\nHost: api.test\r\nUser-Agent: me\r\nContent-Length: 2\r\n\r\nhi".to_owned()),
            (target("POST", "http://h/", &[], b""), true, format!("POST / HTTP/1.1\r\nHost: h\r\n{ua}Content-Length: 0\r\n\r\n")),
            (target("GET", "https://h:443/", &[], b""), true, format!("GET / HTTP/1.1\r\nHost: h\r\n{ua}\r\n")),
        ];
        for (target, keepalive, want) in rows {
            assert_eq!(
                String::from_utf8(render_request(&target, keepalive)).unwrap(),
                want
            );
        }
    }
}
