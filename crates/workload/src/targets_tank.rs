//! Yandex.Tank's ammo files as targets, so a Tank user brings the files they have:
//! [`TankAmmoReader`] reads the three formats of [`TankAmmo`].
//!
//! `uri`: `[Name: value]` lines set a header for the requests after them (a later one
//! with the same name replaces it), then one `PATH [tag]` per line, sent as GET:
//!
//! ```text
//! [Host: example.org]
//! [Connection: close]
//! /search?q=1 search
//! /
//! ```
//! `uripost`: header lines as in `uri`; `SIZE PATH [tag]` then exactly SIZE bytes of
//! body, sent as POST:
//!
//! ```text
//! [Host: example.org]
//! 5 /things create
//! hello
//! ```
//! `phantom`: `SIZE [tag]` then exactly SIZE bytes of a whole HTTP/1 request; its
//! method, path, headers and body are sent (the body is Content-Length bytes long, or
//! what remains). A size of 0 ends the ammo, as it ends Tank's pass over the file.
//!
//! Ammo has no scheme or host: requests go to the base URL when one is given, else to
//! `http://` + their `Host` header. Tags are read and dropped: a target has no name of
//! its own yet.

use std::io::{BufRead, Read};

use url::Url;

use crate::WorkloadError;
use crate::lines::{LineError, MAX_TARGET_BYTES};
use crate::target::{Header, Target, check_body, check_method, check_target_url};
use crate::targets_http::parse_header_line;

/// Which of Yandex.Tank's ammo formats a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TankAmmo {
    /// `uri`: `[Name: value]` header lines, then one `PATH [tag]` GET per line.
    Uri,
    /// `uripost`: header lines as in `uri`, then `SIZE PATH [tag]` and SIZE bytes of a
    /// POST body.
    UriPost,
    /// `phantom`: `SIZE [tag]` then SIZE bytes of a raw HTTP request.
    Phantom,
}

/// Reads targets from Tank ammo one at a time (lazily, like the other readers).
/// Errors name the input, the line and the field; after one, the reader ends.
pub struct TankAmmoReader<R: BufRead> {
    input: R,
    ammo: TankAmmo,
    source_name: String,
    /// The last line read, 1-based; bytes read by size count their line ends too.
    line_number: u64,
    global_headers: Vec<Header>,
    /// The `[Name: value]` headers so far, in the order first written.
    ammo_headers: Vec<Header>,
    default_body: Vec<u8>,
    base_url: Option<Url>,
    done: bool,
}

impl<R: BufRead> TankAmmoReader<R> {
    /// A reader of `input` in the `ammo` format, named `source_name` in errors.
    /// `global_headers` (`-header`) come first in each target; `default_body` (`-body`)
    /// serves `uri` targets; requests go to `base_url` when given, else to their
    /// `Host` header.
    pub fn new(
        input: R,
        source_name: &str,
        ammo: TankAmmo,
        global_headers: &[Header],
        default_body: &[u8],
        base_url: Option<&Url>,
    ) -> Self {
        TankAmmoReader {
            input,
            ammo,
            source_name: source_name.to_owned(),
            line_number: 0,
            global_headers: global_headers.to_vec(),
            ammo_headers: Vec::new(),
            default_body: default_body.to_vec(),
            base_url: base_url.cloned(),
            done: false,
        }
    }

    /// The error at `line`; the reader ends with it.
    fn fail(&mut self, line: u64, reason: String) -> WorkloadError {
        self.done = true;
        WorkloadError::Target {
            source_name: self.source_name.clone(),
            line,
            reason,
        }
    }

    fn fail_read(&mut self, source: std::io::Error) -> WorkloadError {
        self.done = true;
        WorkloadError::Read {
            source_name: self.source_name.clone(),
            source,
        }
    }

    /// The next line without its line end, `None` at the end of the input. Capped at
    /// [`MAX_TARGET_BYTES`] like every target line, so a file without line ends is
    /// refused instead of read whole.
    fn next_line(&mut self) -> Result<Option<String>, WorkloadError> {
        let mut buffer = Vec::new();
        let limit = MAX_TARGET_BYTES as u64 + 2; // room for "\r\n"
        let read = (&mut self.input).take(limit).read_until(b'\n', &mut buffer);
        match read {
            Err(source) => return Err(self.fail_read(source)),
            Ok(0) => return Ok(None),
            Ok(_) => self.line_number += 1,
        }
        if buffer.last() == Some(&b'\n') {
            buffer.pop();
        }
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
        if buffer.len() > MAX_TARGET_BYTES {
            return Err(self.fail(self.line_number, LineError::too_long_reason()));
        }
        String::from_utf8(buffer)
            .map(Some)
            .map_err(|_| self.fail(self.line_number, "line is not UTF-8 text".to_owned()))
    }

    /// Exactly `size` bytes after the size line `at`: a body or a raw request.
    fn read_sized(&mut self, size: u64, at: u64) -> Result<Vec<u8>, WorkloadError> {
        let mut bytes = Vec::new();
        // Grows as bytes arrive: a wrong SIZE does not allocate it up front.
        if let Err(source) = (&mut self.input).take(size).read_to_end(&mut bytes) {
            return Err(self.fail_read(source));
        }
        let missing = size - bytes.len() as u64;
        if missing > 0 {
            return Err(self.fail(
                at,
                format!(
                    "the request of SIZE {size} bytes starting here is cut short: the input ends {missing} bytes early"
                ),
            ));
        }
        self.line_number += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(bytes)
    }

    /// Handles one line that is not blank; `Some` when it completes a target.
    fn take_line(&mut self, line: &str) -> Result<Option<Target>, WorkloadError> {
        let at = self.line_number;
        if self.ammo != TankAmmo::Phantom && line.starts_with('[') {
            let header = parse_bracket_header(line).map_err(|r| self.fail(at, r))?;
            self.set_header(header);
            return Ok(None);
        }
        let mut fields = line.split_whitespace();
        let request = match self.ammo {
            TankAmmo::Uri => AmmoRequest {
                method: "GET".to_owned(),
                path: fields.next().unwrap_or_default().to_owned(),
                headers: self.ammo_headers.clone(),
                body: self.default_body.clone(),
            },
            TankAmmo::UriPost => {
                let size =
                    parse_size(fields.next(), "SIZE PATH [tag]").map_err(|r| self.fail(at, r))?;
                let Some(path) = fields.next().map(str::to_owned) else {
                    let reason = format!("{line:?} has no PATH: want 'SIZE PATH [tag]'");
                    return Err(self.fail(at, reason));
                };
                AmmoRequest {
                    method: "POST".to_owned(),
                    path,
                    headers: self.ammo_headers.clone(),
                    body: self.read_sized(size, at)?,
                }
            }
            TankAmmo::Phantom => {
                let size = parse_size(fields.next(), "SIZE [tag]").map_err(|r| self.fail(at, r))?;
                if size == 0 {
                    self.done = true;
                    return Ok(None);
                }
                let raw = self.read_sized(size, at)?;
                parse_raw_request(&raw).map_err(|(index, r)| self.fail(at + 1 + index, r))?
            }
        };
        // A phantom request's path and Host are on the lines after its size.
        let request_line = at + u64::from(self.ammo == TankAmmo::Phantom);
        self.target(request)
            .map(Some)
            .map_err(|r| self.fail(request_line, r))
    }

    /// A later `[Name: value]` replaces the earlier one of that name.
    fn set_header(&mut self, header: Header) {
        match self
            .ammo_headers
            .iter_mut()
            .find(|h| h.name.eq_ignore_ascii_case(&header.name))
        {
            Some(old) => *old = header,
            None => self.ammo_headers.push(header),
        }
    }

    /// The target of `request`: the global headers first, its URL from the base URL
    /// or its Host header.
    fn target(&self, request: AmmoRequest) -> Result<Target, String> {
        let mut headers = self.global_headers.clone();
        headers.extend(request.headers);
        let (url, templated_path) = ammo_url(&request.path, &headers, self.base_url.as_ref())?;
        check_body(&request.body)?;
        Ok(Target {
            method: request.method,
            url,
            headers,
            body: request.body,
            templated_path,
            grpc_message: None,
            grpc_stream: None,
        })
    }
}

impl<R: BufRead> Iterator for TankAmmoReader<R> {
    type Item = Result<Target, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let line = match self.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(err) => return Some(Err(err)),
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match self.take_line(line) {
                Ok(Some(target)) => return Some(Ok(target)),
                Ok(None) => {}
                Err(err) => return Some(Err(err)),
            }
        }
        self.done = true;
        None
    }
}

/// Reads every target; an input without any is an error. Only the tests read a whole
/// file at once; the run streams with [`TankAmmoReader`].
#[cfg(test)]
fn parse_tank_ammo(
    input: impl BufRead,
    source_name: &str,
    ammo: TankAmmo,
    base_url: Option<&Url>,
) -> Result<Vec<Target>, WorkloadError> {
    let targets = TankAmmoReader::new(input, source_name, ammo, &[], b"", base_url)
        .collect::<Result<Vec<_>, _>>()?;
    if targets.is_empty() {
        return Err(WorkloadError::NoTargets {
            source_name: source_name.to_owned(),
        });
    }
    Ok(targets)
}

/// The SIZE field of a size line.
fn parse_size(field: Option<&str>, want: &str) -> Result<u64, String> {
    let field = field.unwrap_or_default();
    field
        .parse()
        .map_err(|_| format!("SIZE {field:?} is not a number of bytes: want '{want}'"))
}

/// `[Name: value]`.
fn parse_bracket_header(line: &str) -> Result<Header, String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(|| {
            format!(
                "bad header line {:?}: want '[Name: value]'",
                units::redact_header_line(line)
            )
        })?;
    parse_header_line(inner)
}

/// Where a request goes: the base URL's scheme, host and port, else `http://` and the
/// first `Host` header (the one sent); the path as written.
fn ammo_url(
    path: &str,
    headers: &[Header],
    base_url: Option<&Url>,
) -> Result<(Url, Option<String>), String> {
    if !path.starts_with('/') {
        return Err(format!(
            "bad PATH {:?}: want a path starting with '/'",
            units::redact_url(path)
        ));
    }
    let host = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value.as_str());
    let origin = match (base_url, host) {
        (Some(base), _) => base[..url::Position::BeforePath].to_owned(),
        // Characters that end a URL's host would send the request elsewhere.
        (None, Some(host)) if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) => {
            return Err(format!("bad Host header {host:?}: want host[:port]"));
        }
        (None, Some(host)) => format!("http://{host}"),
        (None, None) => {
            return Err(format!(
                "{:?} needs -base-url or a Host header to say where it goes",
                units::redact_url(path)
            ));
        }
    };
    check_target_url(&format!("{origin}{path}"))
}

/// A request as the ammo writes it, before it has a URL.
#[derive(Debug)]
struct AmmoRequest {
    method: String,
    path: String,
    headers: Vec<Header>,
    body: Vec<u8>,
}

/// Parses `METHOD PATH HTTP/x.y`, header lines, a blank line and the body. Lines may
/// end in `\r\n` or `\n`; the head may also end where the request does. Errors carry
/// the 0-based line within the request.
fn parse_raw_request(raw: &[u8]) -> Result<AmmoRequest, (u64, String)> {
    let mut rest = raw;
    let mut index = 0u64;
    let request_line = raw_line(&mut rest).map_err(|r| (index, r))?;
    let parts: Vec<&str> = request_line.split_whitespace().collect();
    let [method, path, version] = parts[..] else {
        return Err((
            index,
            format!(
                "bad request line {:?}: want 'METHOD /path HTTP/1.1'",
                units::redact_url(&request_line)
            ),
        ));
    };
    if !version.starts_with("HTTP/") {
        return Err((
            index,
            format!("bad HTTP version {version:?}: want HTTP/1.1"),
        ));
    }
    check_method(method).map_err(|r| (index, r))?;
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    let mut length: Option<(u64, u64)> = None; // (Content-Length, its line)
    while !rest.is_empty() {
        index += 1;
        let line = raw_line(&mut rest).map_err(|r| (index, r))?;
        if line.is_empty() {
            break;
        }
        let header = parse_header_line(&line).map_err(|r| (index, r))?;
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = header.value.parse().map_err(|_| {
                (
                    index,
                    format!(
                        "bad Content-Length {:?}: want a number of bytes",
                        header.value
                    ),
                )
            })?;
            length = Some((value, index));
        }
        headers.push(header);
    }
    let body = raw_body(rest, length, &headers)?;
    Ok(AmmoRequest {
        method,
        path,
        headers,
        body,
    })
}

/// The body: Content-Length bytes when given, else what remains of the request.
fn raw_body(
    rest: &[u8],
    length: Option<(u64, u64)>,
    headers: &[Header],
) -> Result<Vec<u8>, (u64, String)> {
    match length {
        Some((length, index)) => {
            let body = usize::try_from(length)
                .ok()
                .and_then(|length| rest.get(..length))
                .ok_or_else(|| {
                    (
                        index,
                        format!(
                            "Content-Length {length} but the request holds {} bytes of body",
                            rest.len()
                        ),
                    )
                })?;
            Ok(body.to_vec())
        }
        // A line end counted in SIZE after a bodyless request is not a body: it would
        // turn a GET into one with `Content-Length: 2`.
        None if rest.iter().all(|&b| b == b'\r' || b == b'\n')
            && !headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding")) =>
        {
            Ok(Vec::new())
        }
        None => Ok(rest.to_vec()),
    }
}

/// The next line of a raw request's head (its line end dropped), as text.
fn raw_line(rest: &mut &[u8]) -> Result<String, String> {
    let (line, after) = match rest.iter().position(|&b| b == b'\n') {
        Some(end) => (&rest[..end], &rest[end + 1..]),
        None => (*rest, &rest[rest.len()..]),
    };
    *rest = after;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8(line.to_vec()).map_err(|_| "the request's head is not UTF-8 text".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Summary = (String, String, Vec<(String, String)>, String);
    /// Ammo text, the base URL, and the targets or what the error says.
    type Row<'a, T> = (T, Option<&'a str>, Result<Vec<Summary>, &'a str>);

    /// Method, URL as shown, headers, body: what a row expects of each target.
    fn summary(target: &Target) -> Summary {
        (
            target.method.clone(),
            target.display_url(),
            target
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            String::from_utf8_lossy(&target.body).into_owned(),
        )
    }

    fn read(ammo: TankAmmo, text: &str, base: Option<&str>) -> Result<Vec<Summary>, String> {
        let base = base.map(|b| Url::parse(b).unwrap());
        parse_tank_ammo(text.as_bytes(), "ammo.txt", ammo, base.as_ref())
            .map(|targets| targets.iter().map(summary).collect())
            .map_err(|err| units::error_chain(&err))
    }

    fn want(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Summary {
        (
            method.to_owned(),
            url.to_owned(),
            headers
                .iter()
                .map(|&(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
            body.to_owned(),
        )
    }

    /// Runs happy rows (`Ok(targets)`) and sad ones (`Err(what the error says)`).
    fn check_rows<T: AsRef<str>>(ammo: TankAmmo, rows: &[Row<'_, T>]) {
        for (text, base, expected) in rows {
            let text = text.as_ref();
            match (read(ammo, text, *base), expected) {
                (Ok(got), Ok(expected)) => assert_eq!(&got, expected, "{ammo:?} {text:?}"),
                (Err(err), Err(expected)) => {
                    assert!(err.contains(expected), "{ammo:?} {text:?}: {err}");
                }
                (got, expected) => panic!("{ammo:?} {text:?}: got {got:?}, want {expected:?}"),
            }
        }
    }

    const BASE: Option<&str> = Some("http://127.0.0.1:9");

    #[test]
    fn reads_uri_ammo() {
        let host = ("Host", "example.org");
        let rows: &[Row<'_, &str>] = &[
            (
                "[Host: example.org]\n[Connection: close]\n/search?q=1 search\n\n/\n",
                None,
                Ok(vec![
                    want(
                        "GET",
                        "http://example.org/search?q=1",
                        &[host, ("Connection", "close")],
                        "",
                    ),
                    want(
                        "GET",
                        "http://example.org/",
                        &[host, ("Connection", "close")],
                        "",
                    ),
                ]),
            ),
            // Headers change from where they are written; a name set again is replaced.
            (
                "[Host: a.test:8080]\r\n/a\r\n[X-A: 1]\r\n[host: b.test]\r\n/b tag\r\n",
                None,
                Ok(vec![
                    want(
                        "GET",
                        "http://a.test:8080/a",
                        &[("Host", "a.test:8080")],
                        "",
                    ),
                    want(
                        "GET",
                        "http://b.test/b",
                        &[("host", "b.test"), ("X-A", "1")],
                        "",
                    ),
                ]),
            ),
            // The base URL decides where requests go; the Host header is still sent.
            (
                "[Host: example.org]\n[Cookie: None]\n/x\n",
                BASE,
                Ok(vec![want(
                    "GET",
                    "http://127.0.0.1:9/x",
                    &[host, ("Cookie", "None")],
                    "",
                )]),
            ),
            (
                "/only/a/path\n",
                BASE,
                Ok(vec![want("GET", "http://127.0.0.1:9/only/a/path", &[], "")]),
            ),
            ("", BASE, Err("ammo.txt: no targets")),
            ("[Host: example.org]\n\n", None, Err("ammo.txt: no targets")),
            (
                "/a\n",
                None,
                Err("ammo.txt:1: \"/a\" needs -base-url or a Host header"),
            ),
            (
                "[Host: h]\nsearch?q=1\n",
                None,
                Err("ammo.txt:2: bad PATH \"search?q=1\": want a path starting with '/'"),
            ),
            (
                "/a\n[X-A 1]\n/b\n",
                BASE,
                Err("ammo.txt:2: bad header \"X-A 1\": want 'Key: Value'"),
            ),
            (
                "[X-A: 1\n/b\n",
                BASE,
                Err("ammo.txt:1: bad header line \"[X-A: 1\": want '[Name: value]'"),
            ),
            (
                "[Bad Name: 1]\n/b\n",
                BASE,
                Err("ammo.txt:1: bad header name \"Bad Name\""),
            ),
            (
                "[Host: h/evil]\n/b\n",
                None,
                Err("ammo.txt:2: bad Host header \"h/evil\""),
            ),
            (
                "[Authorization: Bearer s3cr3t\n",
                BASE,
                Err("ammo.txt:1: bad header line \"[Authorization: REDACTED\""),
            ),
        ];
        check_rows(TankAmmo::Uri, rows);
    }

    #[test]
    fn reads_uripost_ammo() {
        let host = ("Host", "example.org");
        let rows: &[Row<'_, &str>] = &[
            (
                "[Host: example.org]\n5 /route?x=1 tag\nclass\n10 /two\nhello\nclas\n0 /empty\n",
                None,
                Ok(vec![
                    want("POST", "http://example.org/route?x=1", &[host], "class"),
                    want("POST", "http://example.org/two", &[host], "hello\nclas"),
                    want("POST", "http://example.org/empty", &[host], ""),
                ]),
            ),
            (
                "3 /a\nabc\n[Content-Type: text/plain]\n2 /b\nhi",
                BASE,
                Ok(vec![
                    want("POST", "http://127.0.0.1:9/a", &[], "abc"),
                    want(
                        "POST",
                        "http://127.0.0.1:9/b",
                        &[("Content-Type", "text/plain")],
                        "hi",
                    ),
                ]),
            ),
            ("", BASE, Err("ammo.txt: no targets")),
            (
                "five /a\nhello\n",
                BASE,
                Err("ammo.txt:1: SIZE \"five\" is not a number of bytes: want 'SIZE PATH [tag]'"),
            ),
            (
                "-1 /a\n",
                BASE,
                Err("ammo.txt:1: SIZE \"-1\" is not a number"),
            ),
            (
                "3 /a\nabc\n5\n",
                BASE,
                Err("ammo.txt:3: \"5\" has no PATH: want 'SIZE PATH [tag]'"),
            ),
            // The line where the cut-short request started, and how much is missing.
            (
                "3 /a\nabc\n\n10 /b\nhello",
                BASE,
                Err(
                    "ammo.txt:4: the request of SIZE 10 bytes starting here is cut short: the input ends 5 bytes early",
                ),
            ),
            // Bodies spanning lines keep the line numbers right.
            (
                "4 /a\nab\nc\n[oops]\n",
                BASE,
                Err("ammo.txt:4: bad header \"oops\""),
            ),
            (
                "2 /b\nhi\n",
                None,
                Err("ammo.txt:1: \"/b\" needs -base-url or a Host header"),
            ),
        ];
        check_rows(TankAmmo::UriPost, rows);
    }

    /// `SIZE tag` and the request, with the size counted, then the line end Tank's
    /// docs put after each request.
    fn phantom(request: &str, tag: &str) -> String {
        format!("{} {tag}\n{request}\r\n", request.len())
    }

    /// `SIZE` and the request, nothing after it.
    fn sized(request: &str) -> String {
        format!("{}\n{request}", request.len())
    }

    #[test]
    fn reads_phantom_ammo() {
        let get = "GET /a?b=1 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: tank\r\n\r\n";
        let get_headers = [("Host", "example.org"), ("User-Agent", "tank")];
        let got_get = || want("GET", "http://example.org/a?b=1", &get_headers, "");
        let post = "POST /upload HTTP/1.0\r\nHost: example.org\r\nContent-Length: 5\r\n\r\nhello";
        let rows: Vec<Row<'_, String>> = vec![
            (
                format!("{}{}", phantom(get, "good"), phantom(post, "")),
                None,
                Ok(vec![
                    got_get(),
                    want(
                        "POST",
                        "http://example.org/upload",
                        &[("Host", "example.org"), ("Content-Length", "5")],
                        "hello",
                    ),
                ]),
            ),
            // Line ends may be bare; without Content-Length the body is what remains.
            (
                sized("PUT /p HTTP/1.1\nX-A: 1\n\nbody\nmore"),
                BASE,
                Ok(vec![want(
                    "PUT",
                    "http://127.0.0.1:9/p",
                    &[("X-A", "1")],
                    "body\nmore",
                )]),
            ),
            // A line end inside SIZE after a bodyless request is not a body.
            (sized(&format!("{get}\r\n")), None, Ok(vec![got_get()])),
            // A head that runs to the end of the request is a request without body.
            (
                sized("GET / HTTP/1.1"),
                BASE,
                Ok(vec![want("GET", "http://127.0.0.1:9/", &[], "")]),
            ),
            // SIZE 0 ends the ammo, as in Tank.
            (
                format!("{}0\n{}", phantom(get, ""), phantom("BAD", "")),
                None,
                Ok(vec![got_get()]),
            ),
            (String::new(), BASE, Err("ammo.txt: no targets")),
            ("0\n".to_owned(), BASE, Err("ammo.txt: no targets")),
            (
                "GET / HTTP/1.1\n".to_owned(),
                BASE,
                Err("ammo.txt:1: SIZE \"GET\" is not a number of bytes: want 'SIZE [tag]'"),
            ),
            (
                "100 tag\nGET / HTTP/1.1\r\n\r\n".to_owned(),
                BASE,
                Err(
                    "ammo.txt:1: the request of SIZE 100 bytes starting here is cut short: the input ends 82 bytes early",
                ),
            ),
            (
                format!("\n\n{}", sized("GET /ab ra HTTP/1.0")),
                BASE,
                Err(
                    "ammo.txt:4: bad request line \"GET /ab ra HTTP/1.0\": want 'METHOD /path HTTP/1.1'",
                ),
            ),
            (
                sized("FETCH / HTTP/1.1"),
                BASE,
                Err("ammo.txt:2: unknown method \"FETCH\""),
            ),
            (
                sized("GET / SPDY/3"),
                BASE,
                Err("ammo.txt:2: bad HTTP version \"SPDY/3\""),
            ),
            (
                sized("GET / HTTP/1.1\r\nX-A: 1\r\nNoColon"),
                BASE,
                Err("ammo.txt:4: bad header \"NoColon\""),
            ),
            (
                sized("POST / HTTP/1.1\r\nContent-Length: ten\r\n\r\n"),
                BASE,
                Err("ammo.txt:3: bad Content-Length \"ten\": want a number of bytes"),
            ),
            (
                sized("POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nhello"),
                BASE,
                Err("ammo.txt:3: Content-Length 9 but the request holds 5 bytes of body"),
            ),
            (
                sized("GET search HTTP/1.1\r\n\r\n"),
                BASE,
                Err("ammo.txt:2: bad PATH \"search\""),
            ),
            (
                sized("GET / HTTP/1.1\r\n\r\n"),
                None,
                Err("ammo.txt:2: \"/\" needs -base-url or a Host header"),
            ),
        ];
        check_rows(TankAmmo::Phantom, &rows);
    }

    #[test]
    fn global_headers_and_the_default_body_come_first() {
        let global = [Header {
            name: "Host".to_owned(),
            value: "127.0.0.1:8080".to_owned(),
        }];
        let targets: Vec<Target> = TankAmmoReader::new(
            "[X-A: 1]\n/a\n".as_bytes(),
            "ammo.txt",
            TankAmmo::Uri,
            &global,
            b"default",
            None,
        )
        .collect::<Result<_, _>>()
        .unwrap();
        assert_eq!(
            summary(&targets[0]),
            want(
                "GET",
                "http://127.0.0.1:8080/a",
                &[("Host", "127.0.0.1:8080"), ("X-A", "1")],
                "default"
            )
        );
    }

    #[test]
    fn refuses_lines_that_are_too_long_or_not_text() {
        let long = format!("/{}\n", "a".repeat(MAX_TARGET_BYTES));
        let rows: &[(TankAmmo, &[u8], &str)] = &[
            (
                TankAmmo::Uri,
                long.as_bytes(),
                "ammo.txt:1: line is longer than 1048576 bytes",
            ),
            (
                TankAmmo::Uri,
                b"/a\n/\xff\n",
                "ammo.txt:2: line is not UTF-8 text",
            ),
            (
                TankAmmo::Phantom,
                b"20\nGET / HTTP/1.1\r\n\xff: 1",
                "ammo.txt:3: the request's head is not UTF-8 text",
            ),
        ];
        let base = Url::parse("http://127.0.0.1:9").unwrap();
        for (ammo, input, expected) in rows {
            let err = parse_tank_ammo(*input, "ammo.txt", *ammo, Some(&base))
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err}");
        }
    }
}
