//! [`path_group`]: the group a logged request's path falls in for reports, with the
//! segments that are ids collapsed, so `/users/42` and `/users/43` are one row.

/// A logged target's group: its path without query and fragment (an absolute URL
/// keeps only its path), each segment that looks like an id collapsed: all digits to
/// `{n}`, a UUID to `{uuid}`, hex of 16 or more characters to `{hex}`, a long
/// base64-like token (24 or more characters, letters and digits mixed) to `{token}`.
///
/// `/users/42/orders?x=1` -> `/users/{n}/orders`. The query is dropped, so no secret
/// a query carried reaches a report through the group.
pub fn path_group(target: &str) -> String {
    let path = origin_form(target);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    if path.is_empty() {
        return "/".to_owned();
    }
    let mut group = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            group.push('/');
        }
        group.push_str(collapse(segment));
    }
    group
}

/// The path and query of a target: itself in origin form (`/a?b`), the part after
/// the authority of an absolute URL (`https://h/a?b` -> `/a?b`, `https://h` -> ``).
pub(super) fn origin_form(target: &str) -> &str {
    if target.starts_with('/') {
        return target;
    }
    let Some((_, rest)) = target.split_once("://") else {
        return target;
    };
    rest.find(['/', '?', '#']).map_or("", |at| &rest[at..])
}

/// A segment, or the name of the kind of id it looks like.
fn collapse(segment: &str) -> &str {
    if segment.is_empty() {
        segment
    } else if segment.bytes().all(|b| b.is_ascii_digit()) {
        "{n}"
    } else if is_uuid(segment) {
        "{uuid}"
    } else if segment.len() >= 16 && segment.bytes().all(|b| b.is_ascii_hexdigit()) {
        "{hex}"
    } else if is_token(segment) {
        "{token}"
    } else {
        segment
    }
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(segment: &str) -> bool {
    let lengths = [8, 4, 4, 4, 12];
    let mut parts = segment.split('-');
    lengths.iter().all(|&length| {
        parts
            .next()
            .is_some_and(|part| part.len() == length && part.bytes().all(|b| b.is_ascii_hexdigit()))
    }) && parts.next().is_none()
}

/// 24 or more characters of base64 (standard or URL-safe, with padding), letters
/// and digits both present (words have no digit). With a `-`, both cases too: a
/// slug (`top-10-load-tools-of-2026`) is lower case, a URL-safe token is mixed.
fn is_token(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    let has = |test: fn(&u8) -> bool| bytes.iter().any(test);
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || b"-_+=".contains(b);
    bytes.len() >= 24
        && bytes.iter().all(base64)
        && has(u8::is_ascii_digit)
        && has(u8::is_ascii_alphabetic)
        && (!bytes.contains(&b'-') || (has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_paths() {
        let rows: &[(&str, &str)] = &[
            ("/users/42/orders?x=1", "/users/{n}/orders"),
            ("/", "/"),
            ("", "/"),
            ("/search?q=shoes#top", "/search"),
            ("/a//b/", "/a//b/"),
            ("https://api.example.com/v1/items/7", "/v1/items/{n}"),
            ("https://api.example.com", "/"),
            ("https://api.example.com?x=1", "/"),
            ("http://h:8080/x?token=s3cret", "/x"),
            (
                "/orders/123e4567-e89b-12d3-a456-426614174000/lines",
                "/orders/{uuid}/lines",
            ),
            ("/o/123E4567-E89B-12D3-A456-426614174000", "/o/{uuid}"),
            ("/blobs/0123456789abcdef0123", "/blobs/{hex}"),
            ("/commit/DEADBEEFDEADBEEF", "/commit/{hex}"),
            ("/short/abcdef12", "/short/abcdef12"),
            ("/reset/eyJhbGciOiJIUzI1NiJ9abc123", "/reset/{token}"),
            ("/s/Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==", "/s/{token}"),
            (
                "/blog/all-about-load-testing-today",
                "/blog/all-about-load-testing-today",
            ),
            (
                "/blog/top-10-load-tools-of-2026-ranked",
                "/blog/top-10-load-tools-of-2026-ranked",
            ),
            ("/t/aB3-xY_9kLmN0pQrStUvWxYz12", "/t/{token}"),
            ("/t/aB3xY9kLmN0pQrStUvWxYz12", "/t/{token}"),
            ("/t/aB3xY9kLmN0pQrStUvWxYz1", "/t/aB3xY9kLmN0pQrStUvWxYz1"),
            ("/v2/items", "/v2/items"),
            ("/files/report.pdf", "/files/report.pdf"),
            (
                "/123e4567-e89b-12d3-a456-42661417400",
                "/123e4567-e89b-12d3-a456-42661417400",
            ),
            ("*", "*"),
        ];
        for (target, want) in rows {
            assert_eq!(path_group(target), *want, "{target}");
        }
    }

    #[test]
    fn finds_origin_form() {
        let rows: &[(&str, &str)] = &[
            ("/a?b", "/a?b"),
            ("https://h/a?b", "/a?b"),
            ("https://h?b", "?b"),
            ("https://h", ""),
            ("*", "*"),
        ];
        for (target, want) in rows {
            assert_eq!(origin_form(target), *want, "{target}");
        }
    }
}
