//! gRPC routes: a route with a `grpc` key answers one method of a `.proto` file (compiled
//! in process with protox, no `protoc`) over HTTP/2, with the status mix of its stages
//! read as gRPC codes (`"status": {"OK": 95, "UNAVAILABLE": 5}`).
//!
//! The answer message is encoded from the recipe's JSON once, when the recipe loads,
//! into the length-prefixed frame every call gets (shared, not copied): an `OK` call
//! gets HEADERS, the message (`stream.count` times, `stream.every` apart), then
//! trailers with `grpc-status: 0`; any other code is a trailers-only answer, as
//! grpc-go sends a refusal. Latency, stages, failure modes, the capacity model and
//! `/metrics` (counted under the code's name) are the route's, as for HTTP.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use serde::de::DeserializeSeed;
use serde_json::Value;

use crate::body_file::FileAccess;
use crate::duration_size::duration_from_json;
use crate::error::Invalid;
use crate::recipe_fields::Fields;

/// The content type of a gRPC call and its answer.
pub(crate) const CONTENT_TYPE: &str = "application/grpc";

/// The keys of a route's `grpc` object.
pub(crate) const GRPC_KEYS: &[&str] = &["proto", "import_path", "method", "answer", "stream"];
const STREAM_KEYS: &[&str] = &["count", "every", "per_message"];

/// gRPC's status codes by name; a code is its index.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The code of a gRPC status name (`UNAVAILABLE` is 14), as a status mix's key.
pub(crate) fn code_of(name: &str) -> Option<u8> {
    CODES.iter().position(|c| *c == name).map(|i| i as u8)
}

/// The name of a gRPC status code (`/metrics` counts calls under it).
pub(crate) fn name_of(code: u8) -> &'static str {
    CODES.get(usize::from(code)).copied().unwrap_or("UNKNOWN")
}

/// A route's `grpc` object as written, checked without I/O.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GrpcSpec {
    /// The object's path in the recipe (`recipe[0].grpc`), for load-time errors.
    pub field: String,
    pub protos: Vec<PathBuf>,
    pub import_paths: Vec<PathBuf>,
    pub method: String,
    pub answer: Value,
    pub stream: Stream,
}

/// How many messages an `OK` call gets, and how far apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stream {
    pub count: usize,
    pub every: Duration,
    /// `count` answers for each message of the request's stream (a client or
    /// bidirectional streaming call's), not for the call.
    pub per_message: bool,
}

impl GrpcSpec {
    /// The route a method is served on: `/package.Service/Method`.
    pub fn route(&self) -> String {
        let (service, method) = split_method(&self.method).unwrap_or_default();
        format!("/{service}/{method}")
    }
}

fn split_method(name: &str) -> Option<(&str, &str)> {
    name.rsplit_once('/').or_else(|| name.rsplit_once('.'))
}

/// Parses a route's `grpc` object; relative `.proto` paths are resolved against `base`
/// (the recipe file's directory).
pub(crate) fn parse_spec(
    value: &Value,
    path: String,
    base: Option<&Path>,
) -> Result<GrpcSpec, Invalid> {
    let fields = Fields::new(value, path, GRPC_KEYS)?;
    let method = fields.string("method")?.ok_or_else(|| {
        fields.err(
            "method",
            "missing: the method served, package.Service/Method",
        )
    })?;
    if !split_method(method).is_some_and(|(s, m)| s.contains('.') && !m.is_empty()) {
        return Err(fields.err(
            "method",
            format!("bad method {method:?}: want package.Service/Method"),
        ));
    }
    let protos = paths(&fields, "proto", base)?;
    if protos.is_empty() {
        return Err(fields.err("proto", "missing: the .proto file(s) of the method"));
    }
    let stream = match fields.get("stream") {
        None => Stream {
            count: 1,
            every: Duration::ZERO,
            per_message: false,
        },
        Some(v) => {
            let stream = Fields::new(v, fields.field("stream"), STREAM_KEYS)?;
            Stream {
                count: stream.count("count", 1)?,
                every: stream
                    .parsed("every", duration_from_json)?
                    .unwrap_or(Duration::ZERO),
                per_message: match stream.get("per_message") {
                    None => false,
                    Some(Value::Bool(on)) => *on,
                    Some(other) => {
                        return Err(stream.err(
                            "per_message",
                            format!("expected true or false, got {other}"),
                        ));
                    }
                },
            }
        }
    };
    Ok(GrpcSpec {
        protos,
        import_paths: paths(&fields, "import_path", base)?,
        method: method.to_owned(),
        answer: fields.get("answer").cloned().unwrap_or(Value::Null),
        stream,
        field: fields.path.clone(),
    })
}

/// A string or an array of strings, as paths.
fn paths(fields: &Fields<'_>, key: &str, base: Option<&Path>) -> Result<Vec<PathBuf>, Invalid> {
    let texts: Vec<&Value> = match fields.get(key) {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
    };
    texts
        .into_iter()
        .map(|v| {
            let text = v.as_str().ok_or_else(|| {
                fields.err(key, format!("expected a path or a list of paths, got {v}"))
            })?;
            let path = Path::new(text);
            Ok(match base {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path.to_owned(),
            })
        })
        .collect()
}

/// A gRPC route once loaded: the answer framed, and how it streams.
#[derive(Debug, Clone)]
pub(crate) struct GrpcRoute {
    pub message: Bytes,
    pub stream: Stream,
    /// The compiled `.proto` files, for reflection.
    pub pool: DescriptorPool,
}

/// Compiles the route's `.proto` files, finds its method and encodes its answer.
pub(crate) fn load(spec: &GrpcSpec, access: FileAccess<'_>) -> Result<GrpcRoute, Invalid> {
    let field = |key: &str| format!("{}.{key}", spec.field);
    if matches!(access, FileAccess::Confined(_)) {
        return Err(Invalid::new(
            field("proto"),
            "recipes posted to /_admin/add_recipe may not name .proto files: give the recipe to simulate at start",
        ));
    }
    let pool =
        compile(&spec.protos, &spec.import_paths).map_err(|m| Invalid::new(field("proto"), m))?;
    let method = find_method(&pool, &spec.method).map_err(|m| Invalid::new(field("method"), m))?;
    let answer = if spec.answer.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        spec.answer.clone()
    };
    let message = encode(&method, &answer).map_err(|m| Invalid::new(field("answer"), m))?;
    Ok(GrpcRoute {
        message: Bytes::from(message),
        stream: spec.stream,
        pool,
    })
}

fn compile(files: &[PathBuf], import_paths: &[PathBuf]) -> Result<DescriptorPool, String> {
    let mut includes = import_paths.to_vec();
    includes.extend(files.iter().map(|f| {
        f.parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    }));
    let mut compiler = protox::Compiler::new(&includes).map_err(|e| located(&e))?;
    compiler.include_imports(true);
    for file in files {
        if !file.is_file() {
            return Err(format!("{}: no such file", file.display()));
        }
        compiler.open_file(file).map_err(|e| located(&e))?;
    }
    Ok(compiler.descriptor_pool())
}

/// protox's error with the `file:line:column` it points at.
fn located(err: &protox::Error) -> String {
    use miette::Diagnostic;
    let span = err.labels().and_then(|mut l| l.next()).and_then(|label| {
        let span = err.source_code()?.read_span(label.inner(), 0, 0).ok()?;
        Some((span.line() + 1, span.column() + 1))
    });
    match (err.file(), span) {
        (Some(file), Some((line, column))) => format!("{file}:{line}:{column}: {err}"),
        (Some(file), None) => format!("{file}: {err}"),
        _ => err.to_string(),
    }
}

fn find_method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, String> {
    let (service, method) = split_method(name).unwrap_or_default();
    let found = pool
        .get_service_by_name(service)
        .and_then(|s| s.methods().find(|m| m.name() == method));
    found.ok_or_else(|| {
        let known: Vec<String> = pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
            .map(|m| format!("{}/{}", m.parent_service().full_name(), m.name()))
            .collect();
        format!(
            "no method {name:?} in the .proto files (known: {})",
            known.join(", ")
        )
    })
}

/// The method's output message from `json`, framed (uncompressed, big-endian length).
fn encode(method: &MethodDescriptor, json: &Value) -> Result<Vec<u8>, String> {
    let output = method.output();
    let mut track = serde_path_to_error::Track::new();
    let message: DynamicMessage = output
        .deserialize(serde_path_to_error::Deserializer::new(json, &mut track))
        .map_err(|err| {
            let path = track.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(" at {path}")
            };
            format!("message {}{at}: {err}", method.output().full_name())
        })?;
    let bytes = message.encode_to_vec();
    let mut framed = Vec::with_capacity(5 + bytes.len());
    framed.push(0);
    framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    framed.extend_from_slice(&bytes);
    Ok(framed)
}

/// The answer's parts an outcome carries: its code, and the trailers (or, for a
/// code other than `OK`, the headers of its trailers-only answer).
#[derive(Debug, Clone)]
pub(crate) struct GrpcAnswer {
    pub code: u8,
    pub stream: Stream,
    pub trailers: HeaderMap,
}

impl GrpcAnswer {
    pub fn new(code: u8, stream: Stream) -> GrpcAnswer {
        let mut trailers = HeaderMap::with_capacity(2);
        trailers.insert("grpc-status", HeaderValue::from(u16::from(code)));
        if code != 0 {
            let text = format!("simulated {}", name_of(code));
            if let Ok(value) = HeaderValue::from_str(&text) {
                trailers.insert("grpc-message", value);
            }
        }
        GrpcAnswer {
            code,
            stream,
            trailers,
        }
    }
}

/// The messages of a request's body, by their length prefixes (a body cut short
/// counts its last, partial message).
pub(crate) fn messages_in(mut body: &[u8]) -> usize {
    let mut count = 0;
    while body.len() >= 5 {
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        body = body.get(5 + len..).unwrap_or_default();
        count += 1;
    }
    count
}

/// What a call's answer follows: the messages of a request read whole, or (a
/// `per_message` route) the request's stream itself, answered as each message comes.
pub(crate) enum Request {
    Read(usize),
    Live(h2::RecvStream),
}

/// Sends one call's answer: an `OK` as HEADERS, the message `stream.count` times (for
/// each of the request's messages under `per_message`, as each comes when the request
/// is [`Request::Live`]) and the trailers; any other code as one HEADERS frame that
/// ends the stream.
pub(crate) async fn send(
    mut respond: SendResponse<Bytes>,
    head: http::Response<()>,
    message: Bytes,
    (answer, request): (&GrpcAnswer, Request),
) -> Result<(), h2::Error> {
    if answer.code != 0 {
        let (mut parts, ()) = head.into_parts();
        parts.headers.extend(answer.trailers.clone());
        respond.send_response(http::Response::from_parts(parts, ()), true)?;
        return Ok(());
    }
    let mut stream = respond.send_response(head, false)?;
    let (count, every) = (answer.stream.count, answer.stream.every);
    match request {
        Request::Live(mut body) if answer.stream.per_message => {
            let mut cuts = MessageCuts::default();
            while let Some(chunk) = body.data().await {
                let chunk = chunk?;
                let _ = body.flow_control().release_capacity(chunk.len());
                for _ in 0..cuts.feed(&chunk) {
                    send_messages(&mut stream, &message, count, every).await?;
                }
            }
        }
        Request::Live(_) => send_messages(&mut stream, &message, count, every).await?,
        Request::Read(messages) => {
            let per_call = if answer.stream.per_message {
                count * messages
            } else {
                count
            };
            send_messages(&mut stream, &message, per_call, every).await?;
        }
    }
    stream.send_trailers(answer.trailers.clone())
}

/// `message` `count` times, `every` apart.
async fn send_messages(
    stream: &mut h2::SendStream<Bytes>,
    message: &Bytes,
    count: usize,
    every: Duration,
) -> Result<(), h2::Error> {
    for i in 0..count {
        if i > 0 && !every.is_zero() {
            tokio::time::sleep(every).await;
        }
        stream.send_data(message.clone(), false)?;
    }
    Ok(())
}

/// Where a request stream read chunk by chunk is in its length-prefixed messages.
#[derive(Debug, Default)]
pub(crate) struct MessageCuts {
    prefix: [u8; 5],
    prefix_read: usize,
    body_left: usize,
}

impl MessageCuts {
    /// Reads `data`; the messages it made whole.
    pub(crate) fn feed(&mut self, mut data: &[u8]) -> usize {
        let mut whole = 0;
        while !data.is_empty() {
            if self.prefix_read < 5 {
                let take = (5 - self.prefix_read).min(data.len());
                self.prefix[self.prefix_read..self.prefix_read + take]
                    .copy_from_slice(&data[..take]);
                (self.prefix_read, data) = (self.prefix_read + take, &data[take..]);
                if self.prefix_read < 5 {
                    break;
                }
                let [_, a, b, c, d] = self.prefix;
                self.body_left = u32::from_be_bytes([a, b, c, d]) as usize;
            }
            let take = self.body_left.min(data.len());
            (self.body_left, data) = (self.body_left - take, &data[take..]);
            if self.body_left == 0 {
                whole += 1;
                self.prefix_read = 0;
            }
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GREETER: &str = r#"syntax = "proto3";
package hello;
service Greeter {
  rpc SayHello (Req) returns (Reply) {}
  rpc Many (Req) returns (stream Reply) {}
}
message Req { string name = 1; }
message Reply { string message = 1; int32 n = 2; Inner inner = 3; }
message Inner { int32 depth = 1; }
"#;

    fn greeter() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("greeter.proto");
        std::fs::write(&path, GREETER).unwrap();
        (dir, path)
    }

    fn spec(value: &Value, base: Option<&Path>) -> Result<GrpcSpec, String> {
        parse_spec(value, "r[0].grpc".to_owned(), base)
            .map_err(|e| format!("{}: {}", e.field, e.message))
    }

    #[test]
    fn specs_parse_or_name_the_field() {
        let base = Path::new("/recipes");
        let ok = spec(
            &json!({"proto": "g.proto", "method": "hello.Greeter/Many",
                   "stream": {"count": 3, "every": "10ms"}}),
            Some(base),
        )
        .unwrap();
        assert_eq!(ok.protos, [PathBuf::from("/recipes/g.proto")]);
        assert_eq!(ok.route(), "/hello.Greeter/Many");
        assert_eq!(
            ok.stream,
            Stream {
                count: 3,
                every: Duration::from_millis(10),
                per_message: false,
            }
        );
        let dotted = spec(&json!({"proto": ["a.proto"], "method": "p.S.M"}), None).unwrap();
        assert_eq!(dotted.route(), "/p.S/M");
        let rows = [
            (json!({"proto": "g.proto"}), "r[0].grpc.method: missing"),
            (
                json!({"proto": "g.proto", "method": "SayHello"}),
                "r[0].grpc.method: bad method \"SayHello\"",
            ),
            (json!({"method": "p.S/M"}), "r[0].grpc.proto: missing"),
            (
                json!({"proto": 3, "method": "p.S/M"}),
                "r[0].grpc.proto: expected a path or a list of paths, got 3",
            ),
            (
                json!({"proto": "g.proto", "method": "p.S/M", "stream": {"every": "10"}}),
                "r[0].grpc.stream.every: ",
            ),
            (
                json!({"proto": "g.proto", "method": "p.S/M", "answr": {}}),
                "r[0].grpc.answr: unknown field",
            ),
            (
                json!({"proto": "g.proto", "method": "p.S/M", "stream": {"per_message": 1}}),
                "r[0].grpc.stream.per_message: expected true or false, got 1",
            ),
        ];
        for (value, want) in rows {
            let err = spec(&value, None).unwrap_err();
            assert!(err.starts_with(want), "{value}: {err}");
        }
    }

    #[test]
    fn loading_encodes_the_answer_or_names_the_file_field_and_path() {
        let (dir, path) = greeter();
        let proto = path.to_str().unwrap();
        let load_row = |value: Value| {
            let spec = spec(&value, None).unwrap();
            load(&spec, FileAccess::Operator).map_err(|e| format!("{}: {}", e.field, e.message))
        };
        let ok = load_row(json!({"proto": proto, "method": "hello.Greeter/SayHello",
                                 "answer": {"message": "hi", "n": 2}}))
        .unwrap();
        assert_eq!(&ok.message[..], b"\0\0\0\0\x06\x0a\x02hi\x10\x02");
        let empty = load_row(json!({"proto": proto, "method": "hello.Greeter/Many"})).unwrap();
        assert_eq!(&empty.message[..], b"\0\0\0\0\0");

        let bad = dir.path().join("bad.proto");
        std::fs::write(
            &bad,
            "syntax = \"proto3\";\nmessage A {\n  string name = ;\n}\n",
        )
        .unwrap();
        let rows = [
            (
                json!({"proto": proto, "method": "hello.Greeter/Bye"}),
                "r[0].grpc.method: no method \"hello.Greeter/Bye\" in the .proto files (known: hello.Greeter/SayHello, hello.Greeter/Many)".to_owned(),
            ),
            (
                json!({"proto": proto, "method": "hello.Greeter/SayHello", "answer": {"inner": {"depth": "deep"}}}),
                "r[0].grpc.answer: message hello.Reply at inner.depth: ".to_owned(),
            ),
            (
                json!({"proto": proto, "method": "hello.Greeter/SayHello", "answer": {"mesage": "x"}}),
                "r[0].grpc.answer: message hello.Reply: unrecognized field name 'mesage'".to_owned(),
            ),
            (
                json!({"proto": bad.to_str().unwrap(), "method": "p.S/M"}),
                "r[0].grpc.proto: bad.proto:3:17: ".to_owned(),
            ),
            (
                json!({"proto": "/nonexistent/x.proto", "method": "p.S/M"}),
                "r[0].grpc.proto: /nonexistent/x.proto: no such file".to_owned(),
            ),
        ];
        for (value, want) in rows {
            let err = load_row(value.clone()).unwrap_err();
            assert!(err.starts_with(&want), "{value}: {err}");
        }
        let posted = spec(
            &json!({"proto": proto, "method": "hello.Greeter/SayHello"}),
            None,
        )
        .unwrap();
        let err = load(&posted, FileAccess::Confined(None)).unwrap_err();
        assert!(err.message.contains("may not name .proto files"), "{err:?}");
    }

    #[test]
    fn a_request_bodys_messages_are_counted_by_their_prefixes() {
        let rows: &[(&[u8], usize)] = &[
            (b"", 0),
            (&[0, 0, 0, 0, 0], 1),
            (&[0, 0, 0, 0, 1, b'a', 0, 0, 0, 0, 2, b'b', b'c'], 2),
            (&[0, 0, 0, 0, 9, b'a'], 1),
            (&[0, 0, 0, 0, 0, 0, 0], 1),
        ];
        for (body, want) in rows {
            assert_eq!(messages_in(body), *want, "{body:?}");
        }
    }

    #[test]
    fn codes_and_names_agree() {
        assert_eq!(code_of("OK"), Some(0));
        assert_eq!(code_of("UNAVAILABLE"), Some(14));
        assert_eq!(code_of("UNAUTHENTICATED"), Some(16));
        assert_eq!(code_of("unavailable"), None);
        for code in 0..17 {
            assert_eq!(code_of(name_of(code)), Some(code));
        }
        let answer = GrpcAnswer::new(
            14,
            Stream {
                count: 1,
                every: Duration::ZERO,
                per_message: false,
            },
        );
        assert_eq!(answer.trailers["grpc-status"], "14");
        assert_eq!(answer.trailers["grpc-message"], "simulated UNAVAILABLE");
    }

    #[test]
    fn messages_are_cut_whole_however_the_chunks_fall() {
        let stream: Vec<u8> = [
            &[0, 0, 0, 0, 2, 7, 7][..],
            &[0, 0, 0, 0, 0],
            &[1, 0, 0, 0, 1, 9],
        ]
        .concat();
        for cut in 1..=stream.len() {
            let mut cuts = MessageCuts::default();
            let whole: usize = stream.chunks(cut).map(|chunk| cuts.feed(chunk)).sum();
            assert_eq!(whole, 3, "chunks of {cut}");
        }
        let mut cuts = MessageCuts::default();
        assert_eq!(cuts.feed(&[0, 0, 0, 0, 2, 7]), 0, "one byte short");
        assert_eq!(cuts.feed(&[7, 0, 0]), 1);
    }
}
