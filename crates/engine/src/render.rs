//! [`RequestTemplate`]: a [`workload::Target`] as HTTP/1.1 request parts, with the
//! header rules (Host, User-Agent, Content-Length, Connection) decided once. A static
//! target is a template without placeholders, rendered to bytes once before the run;
//! a templated one is rendered per request into a buffer the connection keeps, so
//! steady state allocates nothing (it formats its placeholders and `Content-Length`).

use std::io::Write as _;
use std::sync::Arc;

use workload::{
    GrpcMessage, Place, RenderContext, TRACEPARENT, TRACEPARENT_IDS_AT, TRACEPARENT_LINE,
    TRACESTATE, Target, Template, TraceIds, TraceState,
};

/// The `User-Agent` header line we send unless the target sets one, as bytes to copy
/// per request.
const USER_AGENT_LINE: &[u8] =
    concat!("User-Agent: loadlab/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes();

/// `host[:port]`, with the port only when it is not the scheme's default.
pub(crate) fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Why a templated request may not be sent: its header `header` (in the target's
/// order) would take an outside value at placeholder `part` that it cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub header: usize,
    pub part: usize,
}

/// A request parsed once: its parts as templates (literal ones for a static target)
/// and which headers we add.
#[derive(Debug)]
pub(crate) struct RequestTemplate {
    method: String,
    path: Template,
    host: String,
    headers: Vec<(String, Template)>,
    body: Body,
    user_agent: bool,
    content_length: bool,
    /// The target states its own length (`Content-Length`, `Transfer-Encoding`).
    length_given: bool,
    close: bool,
    /// The target sets its own `traceparent`: ours is never added (theirs wins).
    own_traceparent: bool,
    /// The `tracestate` line sent after our `traceparent` (`-trace-state`); `None`
    /// when not given or when the target sets its own (theirs wins).
    trace_state: Option<Arc<[u8]>>,
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
        let body = match (&target.grpc_message, std::str::from_utf8(&target.body)) {
            (Some(message), _) => Body::Grpc(Arc::clone(message)),
            (None, Ok(text)) => Body::Text(parse(text)?),
            // Not text, so no placeholders: the bytes go out as they are.
            (None, Err(_)) => Body::Text(Template::literal(&target.body)),
        };
        let path = match &target.templated_path {
            Some(path) => parse(path)?,
            None => parse(&path_and_query(&target.url))?,
        }
        .placed(Place::Path);
        let headers = sent_headers(target)
            .map(|h| parse(&h.value).map(|t| (h.name.clone(), t.placed(Place::Header))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RequestTemplate {
            path,
            headers,
            body,
            templated: true,
            ..RequestTemplate::literal(target, keepalive)
        })
    }

    /// The request of `target` with every part literal (placeholders sent as they
    /// are written: a redirect's next hop).
    pub(crate) fn literal(target: &Target, keepalive: bool) -> RequestTemplate {
        let url = &target.url;
        let has = |name: &str| {
            target
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case(name))
        };
        RequestTemplate {
            method: target.method.clone(),
            path: Template::literal(path_and_query(url).as_bytes()).placed(Place::Path),
            host: target
                .host_override()
                .map_or_else(|| host_header(url), str::to_owned),
            headers: sent_headers(target)
                .map(|h| {
                    let value = Template::literal(h.value.as_bytes());
                    (h.name.clone(), value.placed(Place::Header))
                })
                .collect(),
            body: Body::Text(Template::literal(&target.body)),
            user_agent: !has("user-agent"),
            // A gRPC stream's body sent more than once (`repeat`) says no length:
            // the stream's end is its end, as gRPC's own clients send it.
            content_length: !has("content-length")
                && !has("transfer-encoding")
                && target.grpc_stream.is_none_or(|s| s.repeat <= 1),
            length_given: has("content-length") || has("transfer-encoding"),
            close: !keepalive && !has("connection"),
            own_traceparent: has(TRACEPARENT),
            trace_state: None,
            templated: false,
        }
    }

    /// Sends `state` after each `traceparent` this request carries, unless the target
    /// sets its own `tracestate`.
    pub(crate) fn with_trace_state(mut self, state: Option<&TraceState>) -> RequestTemplate {
        let own = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        self.trace_state = state
            .filter(|_| !own(TRACESTATE))
            .map(|s| Arc::clone(s.line()));
        self
    }

    /// Why this request cannot be sent as written, whatever its values: a method or
    /// header name that is no token, a host or header text holding CR, LF or NUL, a
    /// path holding a space or a control character. Judged once, before the run
    /// (docs/FLOWS.md, "Values from outside a request").
    pub(crate) fn unsafe_text(&self) -> Option<String> {
        if !is_token(&self.method) {
            return Some(format!("method {:?} is not an HTTP token", self.method));
        }
        if self.host.bytes().any(workload::breaks_header) {
            return Some(format!("host {:?} holds CR, LF or NUL", self.host));
        }
        if let Some(why) = self.path.unsafe_text() {
            return Some(format!("the path {why}"));
        }
        // A length the file states cannot hold for a body whose values vary: the next
        // request would start inside this one's body.
        if self.length_given && !self.body.is_static() {
            return Some(
                "the body has placeholders, so loadlab counts its length: leave Content-Length and Transfer-Encoding out"
                    .to_owned(),
            );
        }
        self.headers.iter().find_map(|(name, value)| {
            if !is_token(name) {
                return Some(format!("header name {name:?} is not an HTTP token"));
            }
            value
                .unsafe_text()
                .map(|why| format!("header {name}: the value {why}"))
        })
    }

    /// The header and placeholder whose value from outside (a data row, an extracted
    /// variable) would change this request's shape: it must not be sent. Judged per
    /// request before a connection is taken; reads the values, allocates nothing.
    pub(crate) fn refusal(&self, context: &RenderContext<'_>) -> Option<Refusal> {
        self.headers
            .iter()
            .enumerate()
            .find_map(|(header, (_, value))| {
                value.refusal(context).map(|part| Refusal { header, part })
            })
    }

    /// A [`Self::refusal`] in words (`{{token}} in header Authorization holds CR, LF or
    /// NUL`), described once per run; `variables` are the flow's.
    pub(crate) fn refusal_text(&self, refusal: Refusal, variables: &[String]) -> String {
        let (name, value) = &self.headers[refusal.header];
        format!(
            "{} in header {name} holds CR, LF or NUL: not sent",
            value.placeholder(refusal.part, variables)
        )
    }

    /// Whether the request differs per request (else [`Self::render_once`] it).
    pub(crate) fn is_templated(&self) -> bool {
        self.templated
    }

    /// The bytes of a request without placeholders, rendered once.
    pub(crate) fn render_once(&self) -> Vec<u8> {
        let context = RenderContext::plain(0, 0, None);
        let (mut out, mut body) = (Vec::new(), Vec::new());
        self.render(&context, &mut out, &mut body, &[], None);
        out
    }

    /// The bytes of a request without placeholders with a `traceparent` whose ids
    /// are zeros, and where those ids start: rendered once, the ids overwritten per
    /// request ([`TraceIds::write_hex`]). `None` when the target sets its own.
    pub(crate) fn render_traced_once(&self) -> Option<(Vec<u8>, usize)> {
        let context = RenderContext::plain(0, 0, None);
        let (mut out, mut body) = (Vec::new(), Vec::new());
        let zero = TraceIds {
            trace_id: 0,
            span_id: 0,
        };
        let at = self.render(&context, &mut out, &mut body, &[], Some(zero))?;
        Some((out, at))
    }

    /// Renders request `context.seq` into `out` (cleared first); `body` is scratch;
    /// `extra_headers` (whole CRLF-ended lines: a flow user's `Cookie`) go last; a
    /// `traceparent` with `trace`'s ids (and the run's `tracestate`) before them,
    /// unless the target sets its own.
    /// Returns where the trace ids' digits start in `out`, when they were written.
    pub(crate) fn render(
        &self,
        context: &RenderContext<'_>,
        out: &mut Vec<u8>,
        body: &mut Vec<u8>,
        extra_headers: &[u8],
        trace: Option<TraceIds>,
    ) -> Option<usize> {
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
        let ids_at = trace.filter(|_| !self.own_traceparent).map(|ids| {
            let at = out.len() + TRACEPARENT_IDS_AT;
            out.extend_from_slice(TRACEPARENT_LINE);
            ids.write_hex(&mut out[at..]);
            if let Some(state) = &self.trace_state {
                out.extend_from_slice(state);
            }
            at
        });
        out.extend_from_slice(extra_headers);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        ids_at
    }
}

/// A request body: text with placeholders, or a gRPC message split at its string
/// fields that hold them.
#[derive(Debug)]
enum Body {
    Text(Template),
    Grpc(Arc<GrpcMessage>),
}

impl Body {
    fn render(&self, context: &RenderContext<'_>, out: &mut Vec<u8>) {
        match self {
            Body::Text(template) => template.render(context, out),
            Body::Grpc(message) => message.render(context, out),
        }
    }

    fn is_static(&self) -> bool {
        matches!(self, Body::Text(t) if t.is_static())
    }
}

/// The request target: the path, and `?query` if there is one.
fn path_and_query(url: &url::Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

/// An HTTP token (RFC 9110 §5.6.2): what a method or a header name must be.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
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
            grpc_message: None,
            grpc_stream: None,
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
        dynamic.render(
            &RenderContext::plain(1, 42, None),
            &mut out,
            &mut body,
            &[],
            None,
        );
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
            None,
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
    fn requests_that_cannot_be_sent_as_written_are_named_once() {
        let variables = ["token".to_owned()];
        // (method, url, headers, body, what the refusal says)
        type Row<'a> = (
            &'a str,
            &'a str,
            &'a [(&'a str, &'a str)],
            &'a [u8],
            Option<&'a str>,
        );
        let rows: &[Row<'_>] = &[
            ("GET", "http://h/a", &[("X-A", "1")], b"", None),
            ("POST", "http://h/a", &[], b"{{token}}", None),
            (
                "G T",
                "http://h/a",
                &[],
                b"",
                Some("method \"G T\" is not an HTTP token"),
            ),
            (
                "GET\r\nX: y",
                "http://h/a",
                &[],
                b"",
                Some("is not an HTTP token"),
            ),
            (
                "GET",
                "http://h/a",
                &[("X A", "1")],
                b"",
                Some("header name \"X A\" is not an HTTP token"),
            ),
            (
                "GET",
                "http://h/a",
                &[("X-A", "a\rb")],
                b"",
                Some("header X-A: the value holds CR, LF or NUL"),
            ),
            (
                "GET",
                "http://h/a",
                &[("X-A", "{{pick a \"b\nc\"}}")],
                b"",
                Some("header X-A: the value holds CR, LF or NUL"),
            ),
            (
                "GET",
                "http://h/a",
                &[("Host", "h\r\nX: y")],
                b"",
                Some("host \"h\\r\\nX: y\" holds CR, LF or NUL"),
            ),
            (
                "POST",
                "http://h/a",
                &[("Content-Length", "5")],
                b"{{token}}",
                Some("the body has placeholders"),
            ),
            (
                "POST",
                "http://h/a",
                &[("Transfer-Encoding", "chunked")],
                b"{{token}}",
                Some("the body has placeholders"),
            ),
            (
                "POST",
                "http://h/a",
                &[("Content-Length", "5")],
                b"hello",
                None,
            ),
        ];
        for (method, url, headers, body, want) in rows {
            let template =
                RequestTemplate::for_step(&target(method, url, headers, body), true, &variables)
                    .unwrap();
            let why = template.unsafe_text();
            match want {
                None => assert_eq!(why, None, "{method} {headers:?}"),
                Some(want) => assert!(
                    why.as_deref().is_some_and(|w| w.contains(want)),
                    "{method} {headers:?}: {why:?}"
                ),
            }
        }
        let mut path = target("GET", "http://h/", &[], b"");
        path.templated_path = Some("/a b/{{token}}".to_owned());
        let template = RequestTemplate::for_step(&path, true, &variables).unwrap();
        assert_eq!(
            template.unsafe_text().as_deref(),
            Some("the path holds a space or a control character")
        );
    }

    #[test]
    fn a_traced_request_carries_its_ids_in_one_fixed_slot_unless_the_target_sets_its_own() {
        let ids = TraceIds {
            trace_id: 0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c,
            span_id: 0xb7ad_6b71_6920_3331,
        };
        let line = "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n";
        // A static target: rendered once with zeros, the ids written over them.
        let plain = RequestTemplate::new(&target("GET", "http://h/a", &[], b""), true).unwrap();
        let (mut bytes, at) = plain.render_traced_once().unwrap();
        ids.write_hex(&mut bytes[at..]);
        let want = format!("GET /a HTTP/1.1\r\nHost: h\r\nUser-Agent: {USER_AGENT}\r\n{line}\r\n");
        assert_eq!(String::from_utf8(bytes).unwrap(), want);
        // A templated one: the same line, beside a flow's cookies.
        let mut templated = target("POST", "http://h/p", &[], b"{{seq}}");
        templated.templated_path = Some("/p".to_owned());
        let dynamic = RequestTemplate::new(&templated, true).unwrap();
        let (mut out, mut body) = (Vec::new(), Vec::new());
        let context = RenderContext::plain(1, 7, None);
        let at = dynamic.render(&context, &mut out, &mut body, b"Cookie: a=1\r\n", Some(ids));
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(&format!("Content-Length: 1\r\n{line}Cookie: a=1\r\n\r\n7")),
            "{text}"
        );
        assert_eq!(&text[at.unwrap()..at.unwrap() + 4], "0af7");
        // The user's own header wins: sent as written, ours left out.
        let own = target("GET", "http://h/", &[("TraceParent", "00-1-2-01")], b"");
        let template = RequestTemplate::new(&own, true).unwrap();
        assert_eq!(template.render_traced_once(), None);
        let (mut out, mut body) = (Vec::new(), Vec::new());
        assert_eq!(
            template.render(&context, &mut out, &mut body, &[], Some(ids)),
            None
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.to_lowercase().matches("traceparent").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn the_tracestate_follows_our_traceparent_unless_the_target_sets_either() {
        let ids = TraceIds {
            trace_id: 1,
            span_id: 2,
        };
        let state = TraceState::parse("vendor=abc").unwrap();
        let context = RenderContext::plain(1, 7, None);
        // (the target's headers, the lines sent about trace context, lowercase)
        type Row<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
        let rows: [Row<'_>; 3] = [
            (
                &[],
                &[
                    "traceparent: 00-00000000000000000000000000000001-0000000000000002-01",
                    "tracestate: vendor=abc",
                ],
            ),
            (
                &[("TraceState", "theirs=1")],
                &[
                    "tracestate: theirs=1",
                    "traceparent: 00-00000000000000000000000000000001-0000000000000002-01",
                ],
            ),
            (&[("traceparent", "00-1-2-01")], &["traceparent: 00-1-2-01"]),
        ];
        for (headers, want) in rows {
            let plain = RequestTemplate::new(&target("GET", "http://h/", headers, b""), true)
                .unwrap()
                .with_trace_state(Some(&state));
            let mut templated = target("GET", "http://h/", headers, b"");
            templated.templated_path = Some("/{{seq}}".to_owned());
            let dynamic = RequestTemplate::new(&templated, true)
                .unwrap()
                .with_trace_state(Some(&state));
            let (mut once, mut out, mut body) = (Vec::new(), Vec::new(), Vec::new());
            if let Some((bytes, at)) = plain.render_traced_once() {
                once = bytes;
                ids.write_hex(&mut once[at..]);
            }
            dynamic.render(&context, &mut out, &mut body, &[], Some(ids));
            for bytes in [once, out].iter().filter(|b| !b.is_empty()) {
                let text = String::from_utf8_lossy(bytes).to_lowercase();
                let sent: Vec<&str> = (text.lines()).filter(|l| l.starts_with("trace")).collect();
                assert_eq!(sent, want, "{headers:?}");
            }
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
                String::from_utf8(RequestTemplate::literal(&target, keepalive).render_once())
                    .unwrap(),
                want
            );
        }
    }
}
