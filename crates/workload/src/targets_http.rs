//! vegeta's `http` target format:
//!
//! ```text
//! # comment
//! GET http://127.0.0.1:8080/path
//! X-Account-ID: 8675309
//!
//! POST http://127.0.0.1:8080/things
//! Content-Type: application/json
//! @/path/to/body.json
//! ```
//! A target is a `METHOD URL` line, then `Key: Value` header lines (split at the first
//! `:`), then an optional `@path` body line, which ends it. Blank lines separate targets.
//!
//! A gRPC call is a `GRPC HOST:PORT package.Service/Method` line, metadata lines, then
//! its message as an inline JSON line or an `@path` JSON file (see `grpc.rs`); it needs
//! the `.proto` files ([`HttpTargetReader::with_protos`]).

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use prost_reflect::MessageDescriptor;

use crate::WorkloadError;
use crate::grpc::{self, GRPC_VERB, ProtoSet, TypeSource};
use crate::grpc_reflection::Reflector;
use crate::lines::{BoundedLines, LineError, MAX_TARGET_BYTES};
use crate::target::{Header, Target, check_body, check_header, check_method, check_target_url};

/// The length prefix before each gRPC message.
const GRPC_PREFIX_LEN: usize = 5;

/// Reads every target. `global_headers` (from `-header`) come first in each target;
/// `default_body` (from `-body`) is used by targets without an `@path` line;
/// `read_body` loads `@path` files (the caller decides how; tests pass a fake).
pub fn parse_http_targets(
    input: impl BufRead,
    source_name: &str,
    global_headers: &[Header],
    default_body: &[u8],
    read_body: &(dyn Fn(&Path) -> std::io::Result<Vec<u8>> + Sync),
) -> Result<Vec<Target>, WorkloadError> {
    let reader = HttpTargetReader::new(input, source_name, global_headers, default_body, read_body);
    let targets = reader.collect::<Result<Vec<_>, _>>()?;
    if targets.is_empty() {
        return Err(WorkloadError::NoTargets {
            source_name: source_name.to_owned(),
        });
    }
    Ok(targets)
}

/// Reads targets one at a time (vegeta's `-lazy`), so an endless generated stream
/// never has to fit in memory.
pub struct HttpTargetReader<'a, R: BufRead> {
    lines: BoundedLines<R>,
    line_number: u64,
    /// Bytes of the current target's request line and headers so far.
    current_bytes: usize,
    source_name: String,
    global_headers: Vec<Header>,
    default_body: Vec<u8>,
    read_body: &'a (dyn Fn(&Path) -> std::io::Result<Vec<u8>> + Sync),
    current: Option<Target>,
    failed: bool,
    /// Where gRPC targets' message types come from.
    grpc_types: TypeSource,
    /// The input message of the current target, when it is a gRPC call.
    grpc_input: Option<MessageDescriptor>,
    /// The current gRPC target streams its messages (client or bidirectional): each
    /// message line adds one, and only a blank line or the next target ends it.
    grpc_streamed: Option<u32>,
    /// The current streamed target's messages so far, uncompressed, each behind its
    /// prefix: what a message with placeholders joins.
    grpc_plain: Vec<u8>,
}

impl<'a, R: BufRead> HttpTargetReader<'a, R> {
    /// A reader of `input`, named `source_name` in errors; see [`parse_http_targets`] for the other arguments.
    pub fn new(
        input: R,
        source_name: &str,
        global_headers: &[Header],
        default_body: &[u8],
        read_body: &'a (dyn Fn(&Path) -> std::io::Result<Vec<u8>> + Sync),
    ) -> Self {
        HttpTargetReader {
            lines: BoundedLines::new(input),
            line_number: 0,
            current_bytes: 0,
            source_name: source_name.to_owned(),
            global_headers: global_headers.to_vec(),
            default_body: default_body.to_vec(),
            read_body,
            current: None,
            failed: false,
            grpc_types: TypeSource::default(),
            grpc_input: None,
            grpc_streamed: None,
            grpc_plain: Vec::new(),
        }
    }

    /// Reads gRPC targets' messages with `protos`.
    pub fn with_protos(mut self, protos: Option<Arc<ProtoSet>>) -> Self {
        self.grpc_types.protos = protos;
        self
    }

    /// Sends gRPC targets' messages gzipped (`-grpc-compress gzip`).
    pub fn with_grpc_gzip(mut self, gzip: bool) -> Self {
        self.grpc_types.gzip = gzip;
        self
    }

    /// Without `.proto` files, asks each gRPC target's server for its types through
    /// `reflector` (once per address and service).
    pub fn with_reflector(mut self, reflector: Option<Arc<dyn Reflector>>) -> Self {
        self.grpc_types.reflector = reflector;
        self
    }

    fn fail(&mut self, reason: String) -> WorkloadError {
        self.failed = true;
        WorkloadError::Target {
            source_name: self.source_name.clone(),
            line: self.line_number,
            reason,
        }
    }

    /// Handles one line; `Some` when it completes a target.
    fn take_line(&mut self, line: &str) -> Result<Option<Target>, WorkloadError> {
        let line = line.trim();
        if line.starts_with('#') {
            return Ok(None);
        }
        if line.is_empty() {
            self.grpc_input = None;
            self.grpc_streamed = None;
            return Ok(self.current.take());
        }
        let starts_target = starts_with_method(line) || self.current.is_none();
        self.current_bytes = line.len() + if starts_target { 0 } else { self.current_bytes };
        if self.current_bytes > MAX_TARGET_BYTES {
            return Err(self.fail(format!(
                "the target's request line and headers are longer than {MAX_TARGET_BYTES} bytes (1 MiB), the most a target may take"
            )));
        }
        if starts_target {
            let target = match line
                .strip_prefix(GRPC_VERB)
                .filter(|r| r.starts_with([' ', '\t']))
            {
                Some(rest) => {
                    let (target, method) =
                        grpc::parse_call(rest, &mut self.grpc_types, &self.global_headers)
                            .map_err(|r| self.fail(r))?;
                    self.grpc_input = Some(method.input());
                    self.grpc_streamed = method.is_client_streaming().then_some(0);
                    self.grpc_plain.clear();
                    target
                }
                None => {
                    self.grpc_input = None;
                    self.grpc_streamed = None;
                    parse_request_line(line, &self.global_headers, &self.default_body)
                        .map_err(|r| self.fail(r))?
                }
            };
            return Ok(self.current.replace(target));
        }
        if let Some(input) = self.grpc_input.clone() {
            return self.take_grpc_line(line, &input);
        }
        if let Some(path) = line.strip_prefix('@') {
            let path = path.trim();
            let body = self.read_file(path)?;
            check_body(&body).map_err(|r| self.fail(format!("body file {path:?}: {r}")))?;
            let mut target = self.current.take();
            if let Some(target) = target.as_mut() {
                target.body = body;
            }
            return Ok(target);
        }
        let header = parse_header_line(line).map_err(|r| self.fail(r))?;
        if let Some(target) = self.current.as_mut() {
            target.headers.push(header);
        }
        Ok(None)
    }
}

impl<R: BufRead> HttpTargetReader<'_, R> {
    /// The file of an `@path` line (a body, or a gRPC message's JSON).
    fn read_file(&mut self, path: &str) -> Result<Vec<u8>, WorkloadError> {
        (self.read_body)(Path::new(path)).map_err(|source| {
            self.failed = true;
            WorkloadError::BodyFile {
                source_name: self.source_name.clone(),
                line: self.line_number,
                path: path.to_owned(),
                source,
            }
        })
    }

    /// A line of a gRPC target: its message (inline JSON or an `@path` file of JSON,
    /// which ends the target) or a metadata line.
    fn take_grpc_line(
        &mut self,
        line: &str,
        input: &MessageDescriptor,
    ) -> Result<Option<Target>, WorkloadError> {
        let json = if let Some(path) = line.strip_prefix('@') {
            let path = path.trim();
            let bytes = self.read_file(path)?;
            String::from_utf8(bytes)
                .map_err(|_| self.fail(format!("message file {path:?} is not UTF-8 text")))?
        } else if line.starts_with('{') {
            line.to_owned()
        } else if let Some((word, value)) = pace_line(line) {
            return self.take_pace_line(word, value).map(|()| None);
        } else {
            let header = parse_header_line(line)
                .and_then(grpc::metadata)
                .map_err(|r| self.fail(r))?;
            if let Some(target) = self.current.as_mut() {
                target.headers.push(header);
            }
            return Ok(None);
        };
        if self.grpc_streamed.is_some() {
            return self.add_streamed_messages(&json, input).map(|()| None);
        }
        let (body, message) = grpc::message_body(input, &json, None, self.grpc_types.gzip)
            .map_err(|r| self.fail(r))?;
        self.grpc_input = None;
        let mut target = self.current.take();
        if let Some(target) = target.as_mut() {
            if let Some(stream) = target.grpc_stream.as_mut() {
                stream.bytes_out = (body.len() - GRPC_PREFIX_LEN) as u64;
            }
            target.body = body;
            target.grpc_message = message;
        }
        Ok(target)
    }

    /// An `every DURATION` or `repeat N` line of a client or bidirectional streaming
    /// call: the pace of its messages, the passes over them.
    fn take_pace_line(&mut self, word: &str, value: &str) -> Result<(), WorkloadError> {
        if self.grpc_streamed.is_none() {
            return Err(self.fail(format!(
                "{word:?} paces a client or bidirectional streaming call's messages; this method takes one message"
            )));
        }
        let stream = self.current.as_mut().and_then(|t| t.grpc_stream.as_mut());
        let parsed = match word {
            "every" => units::parse_duration(value)
                .map_err(|e| e.to_string())
                .and_then(|d| match u64::try_from(d.as_nanos()) {
                    Ok(ns) if ns > 0 => Ok(ns),
                    _ => Err("want a duration above 0 and under 584 years".to_owned()),
                })
                .map(|ns| stream.map(|s| s.every_ns = ns)),
            _ => match value.parse::<u32>() {
                Ok(n) if n > 0 => Ok(stream.map(|s| s.repeat = n)),
                _ => Err(format!("{value:?} is not a count from 1 to {}", u32::MAX)),
            },
        };
        parsed
            .map(drop)
            .map_err(|reason| self.fail(format!("{word} {value}: {reason}")))
    }

    /// Messages of a client or bidirectional streaming call: `text`'s every non-blank
    /// line one ([`grpc::add_stream_message`]).
    fn add_streamed_messages(
        &mut self,
        text: &str,
        input: &MessageDescriptor,
    ) -> Result<(), WorkloadError> {
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            self.grpc_streamed = self.grpc_streamed.map(|n| n + 1);
            let Some(target) = self.current.as_mut() else {
                continue;
            };
            let gzip = self.grpc_types.gzip;
            grpc::add_stream_message(target, &mut self.grpc_plain, input, line, None, gzip)
                .map_err(|r| self.fail(r))?;
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for HttpTargetReader<'_, R> {
    type Item = Result<Target, WorkloadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while let Some(line) = self.lines.next() {
            self.line_number += 1;
            let line = match line {
                Ok(line) => line,
                Err(LineError::TooLong) => {
                    return Some(Err(self.fail(LineError::too_long_reason())));
                }
                Err(LineError::Io(source)) => {
                    self.failed = true;
                    return Some(Err(WorkloadError::Read {
                        source_name: self.source_name.clone(),
                        source,
                    }));
                }
            };
            match self.take_line(&line) {
                Ok(Some(target)) => return Some(Ok(target)),
                Ok(None) => {}
                Err(err) => return Some(Err(err)),
            }
        }
        self.current.take().map(Ok)
    }
}

/// `every DURATION` or `repeat N` (a gRPC stream's pace): the word and its value.
/// No metadata line reads so (a name is followed by a colon).
fn pace_line(line: &str) -> Option<(&str, &str)> {
    let (word, value) = line.split_once([' ', '\t'])?;
    matches!(word, "every" | "repeat").then(|| (word, value.trim()))
}

fn starts_with_method(line: &str) -> bool {
    crate::HTTP_METHODS.iter().chain([&GRPC_VERB]).any(|m| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.starts_with([' ', '\t']))
    })
}

fn parse_request_line(
    line: &str,
    global_headers: &[Header],
    default_body: &[u8],
) -> Result<Target, String> {
    let bad = || {
        format!(
            "bad target {:?}: want 'METHOD URL'",
            units::redact_url(line)
        )
    };
    let (method, url) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
    let url = url.trim();
    // Spaces may only appear inside placeholders (`{{rand.lower 50}}`).
    if url.is_empty() || outside_placeholders(url).any(char::is_whitespace) {
        return Err(bad());
    }
    check_method(method)?;
    let (url, templated_path) = check_target_url(url)?;
    Ok(Target {
        method: method.to_owned(),
        url,
        headers: global_headers.to_vec(),
        body: default_body.to_vec(),
        templated_path,
        grpc_message: None,
        grpc_stream: None,
    })
}

/// The characters of `text` that are not inside `{{ ... }}`.
fn outside_placeholders(text: &str) -> impl Iterator<Item = char> + '_ {
    let mut depth = 0usize;
    let bytes = text.as_bytes();
    text.char_indices().filter_map(move |(i, c)| {
        if bytes[i..].starts_with(b"{{") {
            depth += 1;
        } else if depth > 0 && i > 0 && bytes[i - 1..].starts_with(b"}}") {
            depth -= 1;
        }
        (depth == 0).then_some(c)
    })
}

/// Parses `Key: Value` (also used for `-header` flags).
pub(crate) fn parse_header_line(line: &str) -> Result<Header, String> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(format!(
            "bad header {:?}: want 'Key: Value'",
            units::redact_header_line(line)
        ));
    };
    let (name, value) = (name.trim(), value.trim());
    check_header(name, value)?;
    Ok(Header {
        name: name.to_owned(),
        value: value.to_owned(),
    })
}

impl Header {
    /// Parses a `-header "Key: Value"` flag.
    pub fn parse(text: &str) -> Result<Header, String> {
        parse_header_line(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_files(path: &Path) -> std::io::Result<Vec<u8>> {
        match path.to_str() {
            Some("body.json") => Ok(b"{\"a\":1}".to_vec()),
            Some("templated.json") => Ok(b"{\"a\":\"{{nope}}\"}".to_vec()),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file",
            )),
        }
    }

    fn parse(text: &str) -> Result<Vec<Target>, WorkloadError> {
        let global = [Header {
            name: "X-Global".to_owned(),
            value: "1".to_owned(),
        }];
        parse_http_targets(text.as_bytes(), "targets.txt", &global, b"", &body_files)
    }

    #[test]
    fn reads_vegeta_http_targets() {
        let text = "# a comment\nGET http://127.0.0.1:8080/a?x=1\nX-Account-ID: 8675309\nAuthorization: Bearer t:k\n\n\
                    POST http://127.0.0.1:8080/things\nContent-Type: application/json\n@body.json\n\
                    HEAD https://[::1]:8443/h\nGET http://127.0.0.1:8080/b\n";
        let targets = parse(text).unwrap();
        let summary: Vec<(&str, &str, usize, usize)> = targets
            .iter()
            .map(|t| {
                (
                    t.method.as_str(),
                    t.url.as_str(),
                    t.headers.len(),
                    t.body.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("GET", "http://127.0.0.1:8080/a?x=1", 3, 0),
                ("POST", "http://127.0.0.1:8080/things", 2, 7),
                ("HEAD", "https://[::1]:8443/h", 1, 0),
                ("GET", "http://127.0.0.1:8080/b", 1, 0),
            ]
        );
        assert_eq!(
            targets[0].headers[2],
            Header {
                name: "Authorization".to_owned(),
                value: "Bearer t:k".to_owned()
            }
        );
    }

    /// issue 11 item 5: secrets in target URLs and header lines stay out of the target's
    /// name (record files, reports) and out of error texts, but go on the wire.
    #[test]
    fn secrets_stay_out_of_names_and_errors() {
        let targets = parse("GET http://u:pw1@127.0.0.1:8080/a?api_key=s3cr3t&x=1\n").unwrap();
        assert_eq!(
            targets[0].display_url(),
            "http://u:REDACTED@127.0.0.1:8080/a?api_key=REDACTED&x=1"
        );
        assert_eq!(targets[0].url.query(), Some("api_key=s3cr3t&x=1"));
        let templated = parse("GET http://127.0.0.1:8080/a?token=s3cr3t&q={{uuid}}\n").unwrap();
        assert_eq!(
            templated[0].display_url(),
            "http://127.0.0.1:8080/a?token=REDACTED&q={{uuid}}"
        );
        let rows = [
            "GET http://h/?token=s3cr3t x\n",
            "GET ftp://h/?token=s3cr3t\n",
            "GET http://u:s3cr3t@/\n",
            "GET http://{{uuid}}/?token=s3cr3t\n",
            "GET http://h/\nAuthorization Bearer s3cr3t\n",
        ];
        for text in rows {
            let err = anyhow_like(&parse(text).unwrap_err());
            assert!(!err.contains("s3cr3t"), "{text:?}: {err}");
            assert!(err.contains("REDACTED"), "{text:?}: {err}");
        }
    }

    /// The error and its causes, as the CLI prints them.
    fn anyhow_like(err: &WorkloadError) -> String {
        units::error_chain(err)
    }

    #[test]
    fn placeholders_stay_out_of_the_host() {
        let targets =
            parse("GET http://127.0.0.1:8080/search?q={{rand.lower 50}}\nX-Req: {{uuid}}\n")
                .unwrap();
        let target = &targets[0];
        assert_eq!(target.url.as_str(), "http://127.0.0.1:8080/");
        assert_eq!(
            target.templated_path.as_deref(),
            Some("/search?q={{rand.lower 50}}")
        );
        assert_eq!(
            target.display_url(),
            "http://127.0.0.1:8080/search?q={{rand.lower 50}}"
        );
        assert!(target.is_templated());
        assert!(!parse("GET http://127.0.0.1:8080/plain\n").unwrap()[0].is_templated());
        let query_only = parse("GET http://h?q={{seq}}\n").unwrap();
        assert_eq!(query_only[0].templated_path.as_deref(), Some("/?q={{seq}}"));
    }

    #[test]
    fn names_the_line_of_bad_targets() {
        let rows: &[(&str, &str)] = &[
            ("", "targets.txt: no targets"),
            ("# only a comment\n", "no targets"),
            (
                "FETCH http://x/\n",
                "targets.txt:1: unknown method \"FETCH\"",
            ),
            ("GET\n", "targets.txt:1: bad target \"GET\""),
            ("GET http://x/ extra\n", "want 'METHOD URL'"),
            ("GET ftp://x/\n", "scheme must be http or https"),
            ("GET http://\n", "targets.txt:1: bad URL"),
            ("GET /relative\n", "bad URL \"/relative\""),
            (
                "GET http://x/\nNoColonHere\n",
                "targets.txt:2: bad header \"NoColonHere\"",
            ),
            ("GET http://x/\n: empty name\n", "bad header name \"\""),
            (
                "GET http://x/\nBad Name: v\n",
                "bad header name \"Bad Name\"",
            ),
            (
                "GET http://x/\n@missing.json\n",
                "targets.txt:2: body file \"missing.json\": no such file",
            ),
        ];
        for (text, want) in rows {
            let err = parse(text).unwrap_err();
            // The CLI prints the whole chain; so does this check.
            let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(": ");
            assert!(chain.contains(want), "{text:?}: {chain}");
        }
    }

    #[test]
    fn refuses_targets_over_the_size_cap() {
        let url = |len: usize| format!("GET http://x/{}", "a".repeat(len - "GET http://x/".len()));
        let header = |len: usize| format!("X-A: {}", "b".repeat(len - "X-A: ".len()));
        let half = MAX_TARGET_BYTES / 2;
        let rows: Vec<(String, Result<usize, &str>)> = vec![
            (
                format!(
                    "{}
",
                    url(MAX_TARGET_BYTES)
                ),
                Ok(1),
            ),
            (
                format!(
                    "{}
{}
",
                    url(half),
                    header(half)
                ),
                Ok(1),
            ),
            // Each target has its own allowance.
            (
                format!(
                    "{}
{}

{}
",
                    url(half),
                    header(half),
                    url(half)
                ),
                Ok(2),
            ),
            (
                format!(
                    "GET http://x/
{}
",
                    url(MAX_TARGET_BYTES + 1)
                ),
                Err("targets.txt:2: line is longer than 1048576 bytes"),
            ),
            (
                format!(
                    "{}
{}
",
                    url(half),
                    header(half + 1)
                ),
                Err(
                    "targets.txt:2: the target's request line and headers are longer than 1048576 bytes",
                ),
            ),
        ];
        for (text, want) in rows {
            match (parse(&text), want) {
                (Ok(targets), Ok(count)) => assert_eq!(targets.len(), count),
                (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{err}"),
                (got, want) => panic!("got {:?}, want {want:?}", got.map(|t| t.len())),
            }
        }
    }
}
