//! [`Target`]: one request template.

use std::sync::Arc;

use url::Url;

use crate::grpc_template::GrpcMessage;

/// The content type of gRPC over HTTP/2 (the protobuf encoding): a target with it is
/// a gRPC call.
pub const GRPC_CONTENT_TYPE: &str = "application/grpc";

/// The methods vegeta accepts in target files.
pub const HTTP_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE",
];

/// A header as written, name case preserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header name, as written.
    pub name: String,
    /// The value, trimmed.
    pub value: String,
}

/// One request to send. A static target is rendered to wire bytes once; one with
/// `{{ ... }}` placeholders (see [`crate::Template`]) is rendered per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The HTTP method, one of [`HTTP_METHODS`].
    pub method: String,
    /// Scheme, host and port (where connections go), with the path when it is static.
    pub url: Url,
    /// Global `-header` values first, then the target's own, in order.
    pub headers: Vec<Header>,
    /// The request body (may hold placeholders).
    pub body: Vec<u8>,
    /// The path and query as written, when they hold placeholders.
    pub templated_path: Option<String>,
    /// A gRPC call's message when it holds placeholders (its `body` is then the empty
    /// message's frame): split once, rendered per call.
    pub grpc_message: Option<Arc<GrpcMessage>>,
    /// A gRPC call that streams either way: the engine counts its messages and times
    /// each (docs/GRPC.md).
    pub grpc_stream: Option<GrpcStream>,
}

/// What a streaming gRPC call sends: its `body` holds every message, each behind its
/// length prefix, sent `repeat` times over, as the flow control allows or one message
/// each `every_ns` (docs/GRPC.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcStream {
    /// Messages in the body (1 for a server-streaming call's request).
    pub messages_out: u32,
    /// Their payload bytes (without the prefixes).
    pub bytes_out: u64,
    /// Passes over the body's messages (`repeat N`; 1 unless said).
    pub repeat: u32,
    /// The time between two messages' sends (`every 10ms`), the first at the call's
    /// send; 0: each as soon as the flow control allows.
    pub every_ns: u64,
    /// A bidirectional call: its `k`-th answer is timed against its `k`-th message.
    pub bidi: bool,
}

impl Default for GrpcStream {
    fn default() -> GrpcStream {
        GrpcStream {
            messages_out: 0,
            bytes_out: 0,
            repeat: 1,
            every_ns: 0,
            bidi: false,
        }
    }
}

impl GrpcStream {
    /// Messages the call sends in all (every pass).
    pub fn total_messages(&self) -> u64 {
        u64::from(self.messages_out) * u64::from(self.repeat)
    }

    /// Their payload bytes in all.
    pub fn total_bytes(&self) -> u64 {
        self.bytes_out * u64::from(self.repeat)
    }
}

impl Target {
    /// A static `METHOD URL` target with no headers or body.
    pub fn get(method: &str, url: Url) -> Target {
        Target {
            method: method.to_owned(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
            templated_path: None,
            grpc_message: None,
            grpc_stream: None,
        }
    }

    /// The URL as written (placeholders included), with passwords and secret-looking
    /// query parameters redacted ([`units::redact_url`]): the target's name in record
    /// files, reports and error texts.
    pub fn display_url(&self) -> String {
        let written = match &self.templated_path {
            Some(path) => format!("{}{path}", self.url.as_str().trim_end_matches('/')),
            None => self.url.to_string(),
        };
        units::redact_url(&written)
    }

    /// True when any part renders differently per request.
    pub fn is_templated(&self) -> bool {
        self.templated_path.is_some()
            || self.grpc_message.is_some()
            || self.headers.iter().any(|h| h.value.contains("{{"))
            || std::str::from_utf8(&self.body).is_ok_and(|b| b.contains("{{"))
    }

    /// The parts that hold placeholders: header values, the path and query, the body.
    pub fn template_texts(&self) -> impl Iterator<Item = &str> {
        self.headers
            .iter()
            .map(|h| h.value.as_str())
            .chain(self.templated_path.as_deref())
            .chain(std::str::from_utf8(&self.body).ok())
            .chain(self.grpc_message.iter().flat_map(|m| m.texts()))
            .filter(|t| t.contains("{{"))
    }

    /// The CSV columns the target's placeholders read.
    pub fn template_columns(&self) -> Vec<String> {
        self.template_texts()
            .filter_map(|t| crate::Template::parse(t).ok())
            .flat_map(|t| t.columns().map(str::to_owned).collect::<Vec<_>>())
            .collect()
    }

    /// The same request sent to `base`'s scheme, host and port (a plan variant's
    /// `base_url`): path, query, headers and body kept.
    pub fn rebased(mut self, base: &Url) -> Target {
        let origin = &base[..url::Position::BeforePath];
        let path = &self.url[url::Position::BeforePath..];
        if let Ok(url) = Url::parse(&format!("{origin}{path}")) {
            self.url = url;
        }
        self
    }

    /// True for a gRPC call (its content type is `application/grpc...`): it goes over
    /// HTTP/2, and its answer's `grpc-status` judges it.
    pub fn is_grpc(&self) -> bool {
        self.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-type")
                && h.value.to_ascii_lowercase().starts_with(GRPC_CONTENT_TYPE)
        })
    }

    /// The `Host` header the user set, if any (it overrides the URL's host on the wire).
    pub fn host_override(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("host"))
            .map(|h| h.value.as_str())
    }
}

/// Checks a method token; returns why it is not acceptable.
pub(crate) fn check_method(method: &str) -> Result<(), String> {
    if HTTP_METHODS.contains(&method) {
        Ok(())
    } else {
        Err(format!(
            "unknown method {method:?} (want one of {})",
            HTTP_METHODS.join(", ")
        ))
    }
}

/// Parses and checks a target URL: absolute, http or https, with a host. Placeholders
/// may appear in the path and query only; returns the templated path separately.
pub(crate) fn check_target_url(text: &str) -> Result<(Url, Option<String>), String> {
    check_target_url_with(text, None)
}

/// [`check_target_url`] of a flow step, whose placeholders may name `variables`.
pub(crate) fn check_target_url_with(
    text: &str,
    variables: Option<&[String]>,
) -> Result<(Url, Option<String>), String> {
    if !text.contains("{{") {
        return Ok((check_url(text)?, None));
    }
    let authority_start = text.find("://").map_or(0, |i| i + 3);
    let path_start = text[authority_start..]
        .find(['/', '?'])
        .map_or(text.len(), |i| authority_start + i);
    let (base, path) = text.split_at(path_start);
    if base.contains("{{") {
        return Err(format!(
            "bad URL {:?}: placeholders are allowed in the path and query, not in the scheme, host or port",
            units::redact_url(text)
        ));
    }
    crate::Template::parse_with(path, variables)?;
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok((check_url(&format!("{base}/"))?, Some(path)))
}

/// Checks a body's placeholders, if it is text that has any.
pub(crate) fn check_body(body: &[u8]) -> Result<(), String> {
    check_body_with(body, None)
}

/// [`check_body`] of a flow step, whose placeholders may name `variables`.
pub(crate) fn check_body_with(body: &[u8], variables: Option<&[String]>) -> Result<(), String> {
    match std::str::from_utf8(body) {
        Ok(text) if text.contains("{{") => crate::Template::parse_with(text, variables)
            .map(|_| ())
            .map_err(|r| format!("body: {r}")),
        _ => Ok(()),
    }
}

/// Parses and checks a URL without placeholders.
fn check_url(text: &str) -> Result<Url, String> {
    // Errors quote the URL as written, less its secrets.
    let bad =
        |reason: &dyn std::fmt::Display| format!("bad URL {:?}: {reason}", units::redact_url(text));
    let url = Url::parse(text).map_err(|err| bad(&err))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(&"scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(&"no host"));
    }
    Ok(url)
}

/// Checks a header name: an HTTP token, so it cannot smuggle bytes onto the wire.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), String> {
    check_header_with(name, value, None)
}

/// [`check_header`] of a flow step, whose placeholders may name `variables`.
pub(crate) fn check_header_with(
    name: &str,
    value: &str,
    variables: Option<&[String]>,
) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("bad header name {name:?}"));
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(format!("header {name:?} has a line break in its value"));
    }
    if value.contains("{{") {
        crate::Template::parse_with(value, variables)
            .map_err(|r| format!("header {name:?}: {r}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebasing_keeps_methods_paths_queries_and_templates() {
        let base = Url::parse("http://127.0.0.1:9").unwrap();
        let rows = [
            (
                "https://prod.example:8080/v3/info?x=1",
                "http://127.0.0.1:9/v3/info?x=1",
            ),
            ("http://h", "http://127.0.0.1:9/"),
            ("http://h//double/slash", "http://127.0.0.1:9//double/slash"),
            (
                "http://h:8080/search?q={{rand.lower 5}}",
                "http://127.0.0.1:9/search?q={{rand.lower 5}}",
            ),
        ];
        for (url, want) in rows {
            let (parsed, templated_path) = check_target_url(url).unwrap();
            let target = Target {
                templated_path,
                ..Target::get("POST", parsed)
            }
            .rebased(&base);
            assert_eq!(target.method, "POST");
            let shown = match &target.templated_path {
                Some(path) => format!("{}{path}", target.url.as_str().trim_end_matches('/')),
                None => target.url.to_string(),
            };
            assert_eq!(shown, want, "{url}");
        }
    }
}
