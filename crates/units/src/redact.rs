//! Secrets out of everything loadlab echoes: URLs in labels, record files, reports and
//! error texts, and header values in error texts (DESIGN.md principle 6).
//!
//! The rule, in one place so that every crate applies the same one:
//! - **URL userinfo**: `scheme://user:password@host` keeps the user and shows
//!   `user:REDACTED@host`. A user alone (`postgres://app@db`) is kept: it names an
//!   account, and a password-less login is not a secret.
//! - **Parameters** `name=value` after `?`, `&`, `;`, `#` or a space (query strings,
//!   fragments such as OAuth's `#access_token=`, and libpq's `key=value` strings): the
//!   value becomes `REDACTED` when the name looks secret ([`is_secret_name`]). Names are
//!   compared percent-decoded and case-insensitively; an empty value is left empty.
//! - **Headers**: the value of a header whose name looks secret (`Authorization`,
//!   `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`, `X-Auth-Token`, ...)
//!   becomes `REDACTED` ([`redact_header_value`]).
//!
//! Redact at the source, before a string enters a record file or an error: the readers
//! then need no rule of their own.

/// What a secret is shown as.
pub const REDACTED: &str = "REDACTED";

/// Whole words (between `_`, `-` or `.`) that mark a secret parameter or header name.
const SECRET_WORDS: &[&str] = &["key", "sig", "pwd", "pw", "pass", "cookie", "jwt", "otp"];
/// Parts of a word that mark a secret name wherever they appear (`access_token`,
/// `X-Amz-Credential`, `sessionid`, `authorization`, `apiKey`).
const SECRET_PARTS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "credential",
    "signature",
    "session",
    "apikey",
    "auth",
    "privatekey",
];

/// True when a parameter or header name looks like it holds a secret: one of its words
/// (split on `_`, `-`, `.`) is in `key, sig, pwd, pw, pass, cookie, jwt, otp`, or holds
/// `token, secret, passw(or)d, credential, signature, session, apikey, auth, privatekey`.
/// Case-insensitive; percent-escapes in the name are decoded first.
pub fn is_secret_name(name: &str) -> bool {
    let name = percent_decode(name).to_ascii_lowercase();
    name.split(['_', '-', '.', ' '])
        .any(|word| SECRET_WORDS.contains(&word) || SECRET_PARTS.iter().any(|p| word.contains(p)))
}

/// `value`, or [`REDACTED`] when the header `name` looks secret.
pub fn redact_header_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_name(name) {
        REDACTED
    } else {
        value
    }
}

/// A raw header line (`Name: value`, or a malformed one quoted in an error) with the
/// value redacted when the name looks secret. A line without a colon is judged by its
/// first word, so `Authorization Bearer x` (a typo) does not leak either.
pub fn redact_header_line(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if is_secret_name(name.trim()) => format!("{name}: {REDACTED}"),
        Some(_) => line.to_owned(),
        None => {
            let first = line.split_whitespace().next().unwrap_or("");
            if is_secret_name(first) {
                format!("{first} {REDACTED}")
            } else {
                line.to_owned()
            }
        }
    }
}

/// `text` (a URL, or any text quoting URLs or `key=value` parameters) with passwords in
/// userinfo and the values of secret-looking parameters replaced by [`REDACTED`]:
/// `http://u:pw@h/m?token=abc&x=1` -> `http://u:REDACTED@h/m?token=REDACTED&x=1`.
/// Text with nothing secret comes back unchanged.
pub fn redact_url(text: &str) -> String {
    redact_params(&redact_userinfo(text))
}

/// Every `scheme://user:password@` in `text` becomes `scheme://user:REDACTED@`.
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(scheme_end) = rest.find("://") {
        let (head, tail) = rest.split_at(scheme_end + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        // The last '@' ends the userinfo: passwords may hold an unescaped '@'.
        match authority
            .rfind('@')
            .and_then(|at| Some((at, authority[..at].find(':')?)))
        {
            Some((at, colon)) => {
                out.push_str(&authority[..=colon]);
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// Values of secret-looking `name=value` parameters become [`REDACTED`]. A name starts
/// after `?`, `&`, `;`, `#`, `/` or a space; a value ends at `&`, `;`, `#` or a space.
fn redact_params(text: &str) -> String {
    let is_value_end = |c: char| matches!(c, '&' | ';' | '#') || c.is_whitespace();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // `text[..copied]` is already in `out`. Every index below sits on an ASCII byte or
    // at a `find` result, so slicing never splits a character.
    let mut copied = 0;
    let mut name_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'?' | b'&' | b';' | b'#' | b'/' => name_start = i + 1,
            b if b.is_ascii_whitespace() => name_start = i + 1,
            b'=' => {
                let value_start = i + 1;
                let value_end = value_end(text, value_start, is_value_end);
                if value_end > value_start && is_secret_name(&text[name_start..i]) {
                    out.push_str(&text[copied..value_start]);
                    out.push_str(REDACTED);
                    copied = value_end;
                }
                name_start = value_end;
                i = value_end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// Where the value starting at `start` ends: at the closing quote of a quoted value
/// (libpq's `password='a b'`), else at `is_end`, not counting punctuation that closes
/// the sentence around it (`?key=1: refused`, `"http://h/?token=t"`).
fn value_end(text: &str, start: usize, is_end: impl Fn(char) -> bool) -> usize {
    let rest = &text[start..];
    if let Some(quote @ ('\'' | '"')) = rest.chars().next()
        && let Some(close) = rest[1..].find(quote)
    {
        return start + close + 2;
    }
    let end = rest.find(is_end).unwrap_or(rest.len());
    let trimmed = rest[..end].trim_end_matches(['"', '\'', ')', ',', ':', '.']);
    start
        + if trimmed.is_empty() {
            end
        } else {
            trimmed.len()
        }
}

/// `%XX` escapes decoded (bad escapes kept as written), for comparing names.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_secrets_and_keep_the_rest() {
        let rows: &[(&str, &str)] = &[
            // Userinfo.
            (
                "postgres://loadlab:s3cret@127.0.0.1:5432/loadlab",
                "postgres://loadlab:REDACTED@127.0.0.1:5432/loadlab",
            ),
            (
                "postgresql://u:p@ss@host/db?sslmode=disable",
                "postgresql://u:REDACTED@host/db?sslmode=disable",
            ),
            ("postgres://user@host/db", "postgres://user@host/db"),
            (
                "http://admin:pw@127.0.0.1:9100/metrics?x=1",
                "http://admin:REDACTED@127.0.0.1:9100/metrics?x=1",
            ),
            ("http://:pw@h/", "http://:REDACTED@h/"),
            ("http://u:@h/", "http://u:REDACTED@h/"),
            // Query parameters.
            (
                "http://127.0.0.1:1/metrics?token=s3cr3t",
                "http://127.0.0.1:1/metrics?token=REDACTED",
            ),
            (
                "http://h/m?a=1&api_key=k&b=2",
                "http://h/m?a=1&api_key=REDACTED&b=2",
            ),
            (
                "http://h/m?apiKey=k&X-Amz-Signature=abc&X-Amz-Credential=c",
                "http://h/m?apiKey=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED",
            ),
            (
                "http://h/?access_token=t&sessionid=s&sig=x&pwd=y&passwd=z",
                "http://h/?access_token=REDACTED&sessionid=REDACTED&sig=REDACTED&pwd=REDACTED&passwd=REDACTED",
            ),
            (
                "http://h/?Authorization=Basic%20x&client_secret=c",
                "http://h/?Authorization=REDACTED&client_secret=REDACTED",
            ),
            (
                "postgres://host/db?user=u&password=hunter2&sslmode=disable",
                "postgres://host/db?user=u&password=REDACTED&sslmode=disable",
            ),
            (
                "host=127.0.0.1 user=u Password=hunter2 dbname=d",
                "host=127.0.0.1 user=u Password=REDACTED dbname=d",
            ),
            // Sad rows: nothing to hide, or nothing that looks secret.
            (
                "http://127.0.0.1:9113/metrics",
                "http://127.0.0.1:9113/metrics",
            ),
            (
                "http://h/search?q=monkey&design=1&keyword=x",
                "http://h/search?q=monkey&design=1&keyword=x",
            ),
            ("http://h/?token=", "http://h/?token="),
            ("http://h/?token=&x=1", "http://h/?token=&x=1"),
            ("http://h/?token", "http://h/?token"),
            ("http://h/?=v", "http://h/?=v"),
            ("", ""),
            ("://@", "://@"),
            ("no url here", "no url here"),
            // Encoded names, fragments, several URLs in one text.
            (
                "http://h/?acc%65ss_token=t&%74oken=u",
                "http://h/?acc%65ss_token=REDACTED&%74oken=REDACTED",
            ),
            (
                "http://h/cb#access_token=t&state=s",
                "http://h/cb#access_token=REDACTED&state=s",
            ),
            ("http://h/p?x=1#frag", "http://h/p?x=1#frag"),
            (
                "http://h/p?token=a#token=b",
                "http://h/p?token=REDACTED#token=REDACTED",
            ),
            (
                "get http://a:b@h/?key=1: refused; retry http://c:d@i/",
                "get http://a:REDACTED@h/?key=REDACTED: refused; retry http://c:REDACTED@i/",
            ),
            ("é=1&clé=2&token=ü", "é=1&clé=2&token=REDACTED"),
            (
                "bad target \"GET http://h/?token=abc\": want",
                "bad target \"GET http://h/?token=REDACTED\": want",
            ),
            (
                "host=h password='a b' user=u",
                "host=h password=REDACTED user=u",
            ),
            ("password=\"unclosed quote", "password=REDACTED quote"),
        ];
        for (input, want) in rows {
            assert_eq!(redact_url(input), *want, "{input}");
        }
    }

    #[test]
    fn secret_headers_are_redacted() {
        let rows: &[(&str, bool)] = &[
            ("Authorization", true),
            ("proxy-authorization", true),
            ("Cookie", true),
            ("Set-Cookie", true),
            ("X-Api-Key", true),
            ("x-auth-token", true),
            ("X-Amz-Security-Token", true),
            ("Content-Type", false),
            ("Host", false),
            ("Accept", false),
            ("X-Request-Id", false),
        ];
        for (name, secret) in rows {
            assert_eq!(is_secret_name(name), *secret, "{name}");
            let want = if *secret { REDACTED } else { "v" };
            assert_eq!(redact_header_value(name, "v"), want, "{name}");
        }
        let lines: &[(&str, &str)] = &[
            ("Authorization: Bearer abc", "Authorization: REDACTED"),
            ("Authorization Bearer abc", "Authorization REDACTED"),
            ("X-Trace: 1", "X-Trace: 1"),
            ("garbage line", "garbage line"),
            ("", ""),
        ];
        for (line, want) in lines {
            assert_eq!(redact_header_line(line), *want, "{line}");
        }
    }
}
