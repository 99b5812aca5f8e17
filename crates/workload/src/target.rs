//! [`Target`]: one request template.

use url::Url;

/// The methods vegeta accepts in target files.
pub const HTTP_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE",
];

/// A header as written, name case preserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// One request to send: the engine renders it to wire bytes once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub method: String,
    pub url: Url,
    /// Global `-header` values first, then the target's own, in order.
    pub headers: Vec<Header>,
    pub body: Vec<u8>,
}

impl Target {
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

/// Parses and checks a target URL: absolute, http or https, with a host.
pub(crate) fn check_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|err| format!("bad URL {text:?}: {err}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("bad URL {text:?}: scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("bad URL {text:?}: no host"));
    }
    Ok(url)
}

/// Checks a header name: an HTTP token, so it cannot smuggle bytes onto the wire.
pub(crate) fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("bad header name {name:?}"));
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(format!("header {name:?} has a line break in its value"));
    }
    Ok(())
}
