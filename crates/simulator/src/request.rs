//! What an answer may read of its request beyond the path: query parameters, headers
//! and cookies, for templates and `requires`. Looked up only when a route asks, so a
//! plain route pays nothing for it: HTTP/1.1 keeps the raw head (scanned on demand),
//! HTTP/2 the header map `h2` already built.

/// A request's headers, as the protocol that carried it holds them.
#[derive(Clone, Copy)]
pub(crate) enum RequestHeaders<'a> {
    /// HTTP/1.1: the whole head, request line first, as httparse accepted it.
    Raw(&'a [u8]),
    /// HTTP/2: the decoded header block.
    Map(&'a http::HeaderMap),
}

impl<'a> RequestHeaders<'a> {
    /// The first value of header `name` (lowercase) for which `pick` says something.
    pub fn find_map<T>(
        &self,
        name: &str,
        mut pick: impl FnMut(&'a [u8]) -> Option<T>,
    ) -> Option<T> {
        match *self {
            RequestHeaders::Raw(head) => raw_lines(head)
                .filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
                .find_map(|(_, v)| pick(v)),
            RequestHeaders::Map(map) => map.get_all(name).iter().find_map(|v| pick(v.as_bytes())),
        }
    }

    /// The first value of header `name` (lowercase).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.find_map(name, Some)
    }

    /// The value of cookie `name`, from any `cookie` header (HTTP/2 may split them).
    pub fn cookie(&self, name: &str) -> Option<&'a [u8]> {
        self.find_map("cookie", |value| pair_value(value, b';', name.as_bytes()))
    }
}

/// Header lines of a raw HTTP/1.1 head as (name, trimmed value). httparse accepted the
/// head, so every line past the first is `name: value`, ended by CRLF or a bare LF.
fn raw_lines(head: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    head.split(|&b| b == b'\n').skip(1).filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        Some((&line[..colon], line[colon + 1..].trim_ascii()))
    })
}

/// The value of `name` in `a=1<sep>b=2`, as sent (not percent-decoded: a decoded value
/// could hold a line break, and templates put values into headers).
pub(crate) fn pair_value<'a>(list: &'a [u8], separator: u8, name: &[u8]) -> Option<&'a [u8]> {
    list.split(|&b| b == separator).find_map(|pair| {
        let pair = pair.trim_ascii();
        let (key, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &pair[pair.len()..]),
        };
        (key == name).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_heads_are_read_by_name_case_insensitively() {
        let head = b"GET /a?x=1 HTTP/1.1\r\nHost: h\r\nX-Token:  abc \r\nCookie: a=1; session=s3; b\nCOOKIE: late=9\r\n\r\n";
        let headers = RequestHeaders::Raw(head);
        let rows: &[(&str, Option<&[u8]>)] = &[
            ("x-token", Some(b"abc")),
            ("host", Some(b"h")),
            ("missing", None),
            ("get /a?x=1 http/1.1", None),
        ];
        for (name, want) in rows {
            assert_eq!(headers.get(name), *want, "{name}");
        }
        let cookies: &[(&str, Option<&[u8]>)] = &[
            ("session", Some(b"s3")),
            ("a", Some(b"1")),
            ("b", Some(b"")),
            ("late", Some(b"9")),
            ("sess", None),
        ];
        for (name, want) in cookies {
            assert_eq!(headers.cookie(name), *want, "cookie {name}");
        }
    }

    #[test]
    fn header_maps_are_read_too() {
        let mut map = http::HeaderMap::new();
        map.append("cookie", http::HeaderValue::from_static("a=1"));
        map.append("cookie", http::HeaderValue::from_static("session=xyz"));
        map.append("authorization", http::HeaderValue::from_static("Bearer t"));
        let headers = RequestHeaders::Map(&map);
        assert_eq!(headers.cookie("session"), Some(&b"xyz"[..]));
        assert_eq!(headers.get("authorization"), Some(&b"Bearer t"[..]));
        assert_eq!(headers.get("x"), None);
        assert_eq!(
            RequestHeaders::Raw(b"GET / HTTP/1.1\r\n\r\n").cookie("a"),
            None
        );
    }

    #[test]
    fn query_pairs() {
        type Row<'a> = (&'a [u8], &'a str, Option<&'a [u8]>);
        let rows: &[Row<'_>] = &[
            (b"a=1&b=2", "b", Some(b"2")),
            (b"a=1&b=2", "c", None),
            (b"flag&a=", "flag", Some(b"")),
            (b"a=x%20y", "a", Some(b"x%20y")),
            (b"", "a", None),
            (b"aa=1", "a", None),
        ];
        for (list, name, want) in rows {
            assert_eq!(pair_value(list, b'&', name.as_bytes()), *want, "{name}");
        }
    }
}
