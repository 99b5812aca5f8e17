//! The request a log names: [`request`] splits and checks `METHOD URI PROTOCOL`,
//! [`method`] and [`target`] check each part, [`unescape`] undoes the escapes nginx
//! (`\xHH`) and Apache (`\"`, `\\`, `\n`) write, [`encode_path`] re-encodes nginx's
//! decoded `$uri`, [`authority`] is an absolute URL's host and [`logged_text`] a free
//! text field such as a user agent.

use std::borrow::Cow;

use super::fields::quoted;
use crate::HTTP_METHODS;

/// A logged request line, `GET /a?b=1 HTTP/1.1`, escapes undone: its method and target.
pub(super) fn request(raw: &[u8]) -> Result<(String, String), String> {
    let line = unescape(raw);
    let not_request = || format!("request {} is not METHOD URI PROTOCOL", quoted(raw));
    let first = line
        .iter()
        .position(|&b| b == b' ')
        .ok_or_else(not_request)?;
    let last = line
        .iter()
        .rposition(|&b| b == b' ')
        .ok_or_else(not_request)?;
    if last <= first + 1 || !line[last + 1..].starts_with(b"HTTP/") {
        return Err(not_request());
    }
    Ok((method(&line[..first])?, target(&line[first + 1..last])?))
}

/// A method, upper case, one of [`HTTP_METHODS`].
pub(super) fn method(text: &[u8]) -> Result<String, String> {
    HTTP_METHODS
        .iter()
        .find(|m| m.as_bytes().eq_ignore_ascii_case(text))
        .map(|m| (*m).to_owned())
        .ok_or_else(|| format!("method {} is not an HTTP method", quoted(text)))
}

/// A URI as a request line can carry it: origin form (`/path?query`) or an absolute
/// http(s) URL, bytes past ASCII percent-encoded; a control character or a space is
/// refused (no request line can hold it).
pub(super) fn target(uri: &[u8]) -> Result<String, String> {
    let absolute =
        starts_with_ignore_case(uri, b"http://") || starts_with_ignore_case(uri, b"https://");
    if uri.first() != Some(&b'/') && !absolute {
        return Err(format!(
            "uri {} is neither a path nor an http(s) URL",
            quoted(uri)
        ));
    }
    carried(uri, "uri")
}

/// A query string (nginx `$args`) as a request line carries it, like [`target`].
pub(super) fn query(args: &[u8]) -> Result<String, String> {
    carried(args, "args")
}

fn carried(text: &[u8], field: &str) -> Result<String, String> {
    if text.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(format!(
            "{field} {} holds a control character",
            quoted(text)
        ));
    }
    if text.contains(&b' ') {
        return Err(format!("{field} {} holds a space", quoted(text)));
    }
    Ok(percent_encode(text, |b| b.is_ascii()))
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// nginx's `$uri`, which it logs percent-decoded (`/a b`): encoded again so it can be
/// sent (everything but a path's own characters).
pub(super) fn encode_path(path: &[u8]) -> String {
    percent_encode(path, |b| {
        b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b)
    })
}

fn percent_encode(bytes: &[u8], keep: impl Fn(u8) -> bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if bytes.iter().all(|&b| keep(b)) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut out = String::with_capacity(bytes.len() + 16);
    for &b in bytes {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

/// `%HH` sequences decoded (CloudFront's user agents); a `%` without two hex digits
/// stays as it is.
pub(super) fn percent_decode(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.contains(&b'%') {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], hex_pair(text.get(i + 1..i + 3))) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

fn hex_pair(pair: Option<&[u8]>) -> Option<u8> {
    let pair = pair?;
    let hex = |b: u8| char::from(b).to_digit(16);
    let value = hex(*pair.first()?)? * 16 + hex(*pair.get(1)?)?;
    u8::try_from(value).ok()
}

/// A logged value with its escapes undone: `\xHH` (nginx), `\"` `\\` and C escapes
/// (Apache), `\uHHHH` (nginx `escape=json`). An unknown escape stays as written.
pub(super) fn unescape(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.contains(&b'\\') {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let (decoded, used) = escape_at(text, i);
        match decoded {
            Escape::Byte(b) => out.push(b),
            Escape::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
        i += used;
    }
    Cow::Owned(out)
}

enum Escape {
    Byte(u8),
    Char(char),
}

/// The byte or character at `i` and how many bytes it took.
fn escape_at(text: &[u8], i: usize) -> (Escape, usize) {
    let b = text[i];
    if b != b'\\' {
        return (Escape::Byte(b), 1);
    }
    let simple = |byte| (Escape::Byte(byte), 2);
    match text.get(i + 1) {
        Some(b'x' | b'X') => match hex_pair(text.get(i + 2..i + 4)) {
            Some(byte) => (Escape::Byte(byte), 4),
            None => (Escape::Byte(b'\\'), 1),
        },
        Some(b'u') => {
            let code = text
                .get(i + 2..i + 6)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .and_then(char::from_u32);
            match code {
                Some(c) => (Escape::Char(c), 6),
                None => (Escape::Byte(b'\\'), 1),
            }
        }
        Some(b'"') => simple(b'"'),
        Some(b'\\') => simple(b'\\'),
        Some(b'n') => simple(b'\n'),
        Some(b't') => simple(b'\t'),
        Some(b'r') => simple(b'\r'),
        _ => (Escape::Byte(b'\\'), 1),
    }
}

/// A free-text field (user agent, host): escapes undone, `-` or empty absent.
pub(super) fn logged_text(text: &[u8]) -> Option<String> {
    if text.is_empty() || text == b"-" {
        return None;
    }
    Some(String::from_utf8_lossy(&unescape(text)).into_owned())
}

/// An absolute URL's host and port, the scheme's default port left off
/// (`http://example.com:80/a` is `example.com`); `None` for an origin-form target.
pub(super) fn authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..end];
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        ":443"
    } else {
        ":80"
    };
    let host = host.strip_suffix(default_port).unwrap_or(host);
    (!host.is_empty()).then(|| host.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_give_method_and_target() {
        type Row = (
            &'static [u8],
            Result<(&'static str, &'static str), &'static str>,
        );
        let rows: &[Row] = &[
            (b"GET /a?b=1 HTTP/1.1", Ok(("GET", "/a?b=1"))),
            (b"post /form HTTP/2.0", Ok(("POST", "/form"))),
            (
                b"GET http://example.com/x HTTP/1.1",
                Ok(("GET", "http://example.com/x")),
            ),
            (b"GET /caf\\xC3\\xA9 HTTP/1.1", Ok(("GET", "/caf%C3%A9"))),
            (b"GET /q?\\x22x\\x22 HTTP/1.1", Ok(("GET", "/q?\"x\""))),
            (b"GET /q?\\\"x\\\" HTTP/1.0", Ok(("GET", "/q?\"x\""))),
            (
                b"GARBAGE",
                Err("request \"GARBAGE\" is not METHOD URI PROTOCOL"),
            ),
            (b"-", Err("request \"-\" is not METHOD URI PROTOCOL")),
            (
                b"GET /",
                Err("request \"GET /\" is not METHOD URI PROTOCOL"),
            ),
            (
                b"GET / FTP/1",
                Err("request \"GET / FTP/1\" is not METHOD URI PROTOCOL"),
            ),
            (
                b"BREW /pot HTTP/1.1",
                Err("method \"BREW\" is not an HTTP method"),
            ),
            (b"GET /a b HTTP/1.1", Err("uri \"/a b\" holds a space")),
            (
                b"GET /a\\x0Ab HTTP/1.1",
                Err("uri \"/a\\nb\" holds a control character"),
            ),
            (
                b"OPTIONS * HTTP/1.1",
                Err("uri \"*\" is neither a path nor an http(s) URL"),
            ),
            (
                b"\\x16\\x03\\x01\\x02\\x00\\x01",
                Err(
                    "request \"\\\\x16\\\\x03\\\\x01\\\\x02\\\\x00\\\\x01\" is not METHOD URI PROTOCOL",
                ),
            ),
        ];
        for (raw, want) in rows {
            let got = request(raw);
            let want = want
                .map(|(m, t)| (m.to_owned(), t.to_owned()))
                .map_err(str::to_owned);
            assert_eq!(got, want, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn decoded_paths_are_encoded_again() {
        assert_eq!(encode_path(b"/a b/caf\xc3\xa9"), "/a%20b/caf%C3%A9");
        assert_eq!(encode_path(b"/100%?"), "/100%25%3F");
        assert_eq!(encode_path(b"/plain/path.html"), "/plain/path.html");
    }

    #[test]
    fn escapes_and_percent_codes_are_undone() {
        assert_eq!(
            &*unescape(br"a\\b\x41\u00e9\q\x4"),
            "a\\bAé\\q\\x4".as_bytes()
        );
        assert_eq!(
            &*percent_decode(b"Mozilla/5.0%20(X11)%2"),
            b"Mozilla/5.0 (X11)%2"
        );
        assert_eq!(logged_text(b"-"), None);
        assert_eq!(
            logged_text(b"curl/8.0 \\x22x\\x22"),
            Some("curl/8.0 \"x\"".to_owned())
        );
    }

    #[test]
    fn authorities_drop_the_default_port() {
        let rows = [
            ("http://www.example.com:80/a", Some("www.example.com")),
            ("https://api.example.com:443/a?b", Some("api.example.com")),
            ("https://api.example.com:8443", Some("api.example.com:8443")),
            ("/origin/form", None),
        ];
        for (url, want) in rows {
            assert_eq!(authority(url).as_deref(), want, "{url}");
        }
    }
}
