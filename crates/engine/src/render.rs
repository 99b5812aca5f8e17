//! [`RequestTemplate`]: a [`workload::Target`] as HTTP/1.1 request parts, with the
//! header rules (Host, User-Agent, Content-Length, Connection) decided once. A static
//! target is a template without placeholders, rendered to bytes once before the run;
//! a templated one is rendered per request into a buffer the connection keeps, so
//! steady state allocates nothing (it formats its placeholders and `Content-Length`).

use std::io::Write as _;

use workload::{RenderContext, Target, Template};

/// The `User-Agent` header line we send unless the target sets one, as bytes to copy
/// per request.
const USER_AGENT_LINE: &[u8] =
    concat!("User-Agent: loadlab/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

/// Wire bytes of a target, placeholders (if any) sent as they are written: a
/// redirect's next hop.
pub(crate) fn render_request(target: &Target, keepalive: bool) -> Vec<u8> {
    RequestTemplate::literal(target, keepalive).render_once()
}

/// `host[:port]`, with the port only when it is not the scheme's default.
pub(crate) fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// A request parsed once: its parts as templates (literal ones for a static target)
/// and which headers we add.
#[derive(Debug)]
pub(crate) struct RequestTemplate {
    method: String,
    path: Template,
    host: String,
    headers: Vec<(String, Template)>,
    body: Template,
    user_agent: bool,
    content_length: bool,
    close: bool,
    /// Some part has placeholders: it renders differently per request.
    templated: bool,
}

impl RequestTemplate {
    /// The request of `target`, its placeholders parsed if it has any.
    pub(crate) fn new(target: &Target, keepalive: bool) -> Result<RequestTemplate, String> {
        if !target.is_templated() {
            return Ok(RequestTemplate::literal(target, keepalive));
        }
        RequestTemplate::parsed(target, keepalive, None)
    }

    /// The request of a flow step, whose placeholders may name the flow's
    /// `variables`: always rendered per request (its user's cookies go with it).
    pub(crate) fn for_step(
        target: &Target,
        keepalive: bool,
        variables: &[String],
    ) -> Result<RequestTemplate, String> {
        RequestTemplate::parsed(target, keepalive, Some(variables))
    }

    fn parsed(
        target: &Target,
        keepalive: bool,
        variables: Option<&[String]>,
    ) -> Result<RequestTemplate, String> {
        let parse = |text: &str| Template::parse_with(text, variables);
        let body = match std::str::from_utf8(&target.body) {
            Ok(text) => parse(text)?,
            // Not text, so no placeholders: the bytes go out as they are.
            Err(_) => Template::literal(&target.body),
        };
        let path = match &target.templated_path {
            Some(path) => parse(path)?,
            None => parse(&path_and_query(&target.url))?,
        };
        let headers = sent_headers(target)
            .map(|h| parse(&h.value).map(|t| (h.name.clone(), t)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RequestTemplate {
            path,
            headers,
            body,
            templated: true,
            ..RequestTemplate::literal(target, keepalive)
        })
    }

    /// The request of `target` with every part literal.
    fn literal(target: &Target, keepalive: bool) -> RequestTemplate {
        let url = &target.url;
        let has = |name: &str| {
            target
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case(name))
        };
        RequestTemplate {
            method: target.method.clone(),
            path: Template::literal(path_and_query(url).as_bytes()),
            host: target
                .host_override()
                .map_or_else(|| host_header(url), str::to_owned),
            headers: sent_headers(target)
                .map(|h| (h.name.clone(), Template::literal(h.value.as_bytes())))
                .collect(),
            body: Template::literal(&target.body),
            user_agent: !has("user-agent"),
            content_length: !has("content-length") && !has("transfer-encoding"),
            close: !keepalive && !has("connection"),
            templated: false,
        }
    }

    /// Whether the request differs per request (else [`Self::render_once`] it).
    pub(crate) fn is_templated(&self) -> bool {
        self.templated
    }

    /// The bytes of a request without placeholders, rendered once.
    pub(crate) fn render_once(&self) -> Vec<u8> {
        let context = RenderContext::plain(0, 0, None);
        let (mut out, mut body) = (Vec::new(), Vec::new());
        self.render(&context, &mut out, &mut body, &[]);
        out
    }

    /// Renders request `context.seq` into `out` (cleared first); `body` is scratch;
    /// `extra_headers` (whole CRLF-ended lines: a flow user's `Cookie`) go last.
    pub(crate) fn render(
        &self,
        context: &RenderContext<'_>,
        out: &mut Vec<u8>,
        body: &mut Vec<u8>,
        extra_headers: &[u8],
    ) {
        out.clear();
        body.clear();
        self.body.render(context, body);
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        self.path.render(context, out);
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(self.host.as_bytes());
        out.extend_from_slice(b"\r\n");
        if self.user_agent {
            out.extend_from_slice(USER_AGENT_LINE);
        }
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            value.render(context, out);
            out.extend_from_slice(b"\r\n");
        }
        let sends_body =
            !body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH");
        if self.content_length && sends_body {
            let _ = write!(out, "Content-Length: {}\r\n", body.len());
        }
        if self.close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(extra_headers);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
    }
}

/// The request target: the path, and `?query` if there is one.
fn path_and_query(url: &url::Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// The target's headers we send as they are: all but `Host` (it has its own line).
fn sent_headers(target: &Target) -> impl Iterator<Item = &workload::Header> {
    target
        .headers
        .iter()
        .filter(|h| !h.name.eq_ignore_ascii_case("host"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER_AGENT: &str = concat!("loadlab/", env!("CARGO_PKG_VERSION"));
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
            templated_path: None,
        }
    }

    #[test]
    fn renders_templates_per_request_like_static_targets() {
        let mut templated = target(
            "POST",
            "http://127.0.0.1:8080/",
            &[("X-Id", "{{seq}}")],
            b"{\"q\":\"{{rand.lower 5}}\"}",
        );
        templated.templated_path = Some("/search?q={{seq}}".to_owned());
        let dynamic = RequestTemplate::new(&templated, false).unwrap();
        assert!(dynamic.is_templated());
        let (mut out, mut body) = (Vec::new(), Vec::new());
        dynamic.render(&RenderContext::plain(1, 42, None), &mut out, &mut body, &[]);
        let text = String::from_utf8(out).unwrap();
        let head = format!(
            "POST /search?q=42 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: {USER_AGENT}\r\nX-Id: 42\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{{\"q\":\""
        );
        assert!(text.starts_with(&head), "{text}");
        assert_eq!(text.len(), head.len() + 5 + 2);
        // Without placeholders the static path applies, with the same bytes.
        let plain = target("GET", "http://127.0.0.1:8080/a?b=1", &[("X-A", "1")], b"");
        assert!(!RequestTemplate::new(&plain, true).unwrap().is_templated());
    }

    #[test]
    fn a_templated_target_sends_a_binary_body_as_it_is() {
        let body = b"\xff\x00{{seq}}\xfe";
        let templated = target("POST", "http://h/p", &[("X-Id", "{{seq}}")], body);
        let dynamic = RequestTemplate::new(&templated, true).unwrap();
        assert!(dynamic.is_templated());
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        dynamic.render(
            &RenderContext::plain(1, 7, None),
            &mut out,
            &mut scratch,
            b"Cookie: a=1\r\n",
        );
        let mut want = format!(
            "POST /p HTTP/1.1\r\nHost: h\r\nUser-Agent: {USER_AGENT}\r\nX-Id: 7\r\nContent-Length: {}\r\nCookie: a=1\r\n\r\n",
            body.len()
        )
        .into_bytes();
        want.extend_from_slice(body);
        assert_eq!(out, want);
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
