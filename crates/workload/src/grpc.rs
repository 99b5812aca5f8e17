//! gRPC calls as targets. [`ProtoSet`]: `.proto` files compiled in process (protox, no
//! `protoc`) into one descriptor pool; a method's JSON message is encoded through it once
//! per target into the length-prefixed frame the call sends, so nothing is encoded per call.
//!
//! A gRPC target in the `http` format:
//!
//! ```text
//! GRPC 127.0.0.1:50051 helloworld.Greeter/SayHello
//! authorization: Bearer abc
//! grpc-timeout: 250ms
//! {"name": "world"}
//! ```
//! Metadata lines are headers; `grpc-timeout` takes a Go duration (the call's deadline);
//! the message is an inline JSON line or an `@path` file of JSON, and ends the target
//! (without one the message is empty, every field its default).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde::de::DeserializeSeed;

use crate::WorkloadError;
use crate::grpc_frame::frame;
use crate::grpc_reflection::{Reflector, reflect};
use crate::grpc_template::GrpcMessage;
use crate::target::{GRPC_CONTENT_TYPE, GrpcStream, Header, Target};

/// The request line's word that starts a gRPC target.
pub(crate) const GRPC_VERB: &str = "GRPC";

/// The `.proto` files of a run, compiled once.
#[derive(Debug, Clone)]
pub struct ProtoSet {
    pool: DescriptorPool,
    /// Where the types came from, for errors: `the .proto files`, or a server's reflection.
    origin: String,
}

impl ProtoSet {
    /// The set of a pool built from `address`'s reflection.
    pub(crate) fn reflected(pool: DescriptorPool, address: &str) -> ProtoSet {
        ProtoSet {
            pool,
            origin: format!("{address}'s reflection"),
        }
    }

    #[cfg(test)]
    pub(crate) fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// Compiles `files` (with their imports, looked up in `import_paths`, then in each
    /// file's own directory, as grpcurl and ghz do).
    pub fn compile(files: &[PathBuf], import_paths: &[PathBuf]) -> Result<ProtoSet, WorkloadError> {
        let mut includes = import_paths.to_vec();
        for file in files {
            let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
            includes.push(dir.unwrap_or(Path::new(".")).to_path_buf());
        }
        let mut compiler =
            protox::Compiler::new(&includes).map_err(|e| proto_error(&e, &includes))?;
        compiler.include_imports(true);
        for file in files {
            if !file.exists() {
                return Err(WorkloadError::Proto {
                    file: file.display().to_string(),
                    reason: "no such file".to_owned(),
                });
            }
            compiler
                .open_file(file)
                .map_err(|e| proto_error(&e, &includes))?;
        }
        Ok(ProtoSet {
            pool: compiler.descriptor_pool(),
            origin: "the .proto files".to_owned(),
        })
    }

    /// The method named `pkg.Service/Method` (or `pkg.Service.Method`); when there is
    /// none, the reason names the methods there are.
    pub fn method(&self, name: &str) -> Result<MethodDescriptor, String> {
        let (service, method) = split_method(name)?;
        let found = self
            .pool
            .get_service_by_name(service)
            .and_then(|s| s.methods().find(|m| m.name() == method));
        found.ok_or_else(|| {
            let known: Vec<String> = self
                .pool
                .services()
                .flat_map(|s| {
                    let service = s.full_name().to_owned();
                    s.methods()
                        .map(move |m| format!("{service}/{}", m.name()))
                        .collect::<Vec<_>>()
                })
                .collect();
            let known = if known.is_empty() {
                "no service is defined there".to_owned()
            } else {
                format!("known: {}", known.join(", "))
            };
            format!("no method {name:?} in {} ({known})", self.origin)
        })
    }
}

/// `pkg.Service/Method` (or `pkg.Service.Method`) as service and method.
fn split_method(name: &str) -> Result<(&str, &str), String> {
    name.rsplit_once('/')
        .or_else(|| name.rsplit_once('.'))
        .ok_or_else(|| format!("bad method {name:?}: want package.Service/Method"))
}

/// Where a gRPC target's message types come from: the run's `.proto` files, or the
/// server's reflection (asked once per address and service, then kept).
#[derive(Clone, Default)]
pub struct TypeSource {
    pub(crate) protos: Option<Arc<ProtoSet>>,
    pub(crate) reflector: Option<Arc<dyn Reflector>>,
    reflected: Vec<(String, String, Arc<ProtoSet>)>,
    /// Calls send their messages gzipped (`-grpc-compress gzip`): how the targets read
    /// with these types are sent.
    pub(crate) gzip: bool,
}

impl TypeSource {
    /// Types from `protos` when given, else from each server's reflection through
    /// `reflector` (none: a gRPC call without `.proto` files is refused).
    pub fn new(protos: Option<Arc<ProtoSet>>, reflector: Option<Arc<dyn Reflector>>) -> Self {
        TypeSource {
            protos,
            reflector,
            reflected: Vec::new(),
            gzip: false,
        }
    }

    /// The calls read with these types send their messages gzipped.
    pub fn with_gzip(mut self, gzip: bool) -> Self {
        self.gzip = gzip;
        self
    }

    /// The set `service` at `address` is read with.
    fn types(&mut self, address: &str, service: &str) -> Result<Arc<ProtoSet>, String> {
        if let Some(protos) = &self.protos {
            return Ok(protos.clone());
        }
        let known = self
            .reflected
            .iter()
            .find(|(a, s, _)| a == address && s == service);
        if let Some((_, _, set)) = known {
            return Ok(set.clone());
        }
        let reflector = self.reflector.as_deref().ok_or_else(|| {
            "a GRPC target needs the .proto files of its service: give -proto FILE (and -import-path DIR for its imports)".to_owned()
        })?;
        let set = Arc::new(ProtoSet::reflected(
            reflect(reflector, address, service)?,
            address,
        ));
        self.reflected
            .push((address.to_owned(), service.to_owned(), set.clone()));
        Ok(set)
    }
}

/// `text` as `input`'s message, encoded and framed: a 5-byte prefix (uncompressed, then
/// the length, big-endian) before the protobuf bytes. The reason of a JSON that does
/// not fit names the field's path.
pub fn encode_message(input: &MessageDescriptor, text: &str) -> Result<Vec<u8>, String> {
    let mut json = serde_json::Deserializer::from_str(text);
    let mut track = serde_path_to_error::Track::new();
    let message: DynamicMessage = input
        .clone()
        .deserialize(serde_path_to_error::Deserializer::new(
            &mut json, &mut track,
        ))
        .map_err(|err| {
            let path = track.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!(" at {path}")
            };
            format!("message {}{at}: {err}", input.full_name())
        })?;
    json.end()
        .map_err(|err| format!("message {}: {err}", input.full_name()))?;
    Ok(frame(&message.encode_to_vec()))
}

/// A gRPC call's message from its JSON `json`: the frame sent, or (when the JSON has
/// placeholders, which may name a flow's `variables`) the empty message's frame and
/// the message split for rendering per call.
/// `gzip`: a message without placeholders goes compressed (gzipped here, once); one
/// with them goes as it is rendered, uncompressed (each message's flag says which).
pub(crate) fn message_body(
    input: &MessageDescriptor,
    json: &str,
    variables: Option<&[String]>,
    gzip: bool,
) -> Result<(Vec<u8>, Option<Arc<GrpcMessage>>), String> {
    match GrpcMessage::parse(input, json, variables)? {
        Some(message) => Ok((frame(&[]), Some(Arc::new(message)))),
        None if gzip => Ok((gzip_frame(&encode_message(input, json)?), None)),
        None => Ok((encode_message(input, json)?, None)),
    }
}

/// Adds `json`, one message of a client or bidirectional streaming call, behind
/// `target`'s messages so far (`plain`: those uncompressed, each behind its prefix;
/// empty before the first, which replaces the empty message). Each is encoded once;
/// once one holds placeholders, the call's messages go as one [`GrpcMessage`]
/// rendered per call (uncompressed, as a unary call's with placeholders).
pub(crate) fn add_stream_message(
    target: &mut Target,
    plain: &mut Vec<u8>,
    input: &MessageDescriptor,
    json: &str,
    variables: Option<&[String]>,
    gzip: bool,
) -> Result<(), String> {
    let (body, message) = message_body(input, json, variables, gzip)?;
    let frame = match (&message, gzip) {
        (None, true) => message_body(input, json, variables, false)?.0,
        _ => body.clone(),
    };
    let first = plain.is_empty();
    if first {
        target.body.clear();
    }
    let stream = target.grpc_stream.get_or_insert_default();
    stream.messages_out = if first { 1 } else { stream.messages_out + 1 };
    stream.bytes_out = if first { 0 } else { stream.bytes_out };
    stream.bytes_out += (frame.len() - 5) as u64;
    if message.is_some() || target.grpc_message.is_some() {
        let next = message.map_or_else(|| GrpcMessage::literal(&frame[5..]), Arc::unwrap_or_clone);
        let all = match target.grpc_message.take() {
            Some(all) => Some(Arc::unwrap_or_clone(all)),
            None => messages_of(plain),
        };
        let all = match all {
            Some(mut all) => {
                all.append(next);
                all
            }
            None => next,
        };
        target.grpc_message = Some(Arc::new(all));
    } else {
        target.body.extend_from_slice(&body);
    }
    plain.extend_from_slice(&frame);
    Ok(())
}

/// The messages of `frames` (uncompressed, each behind its prefix) as one
/// [`GrpcMessage`] without placeholders: those before a stream's first with them.
fn messages_of(mut frames: &[u8]) -> Option<GrpcMessage> {
    let mut all: Option<GrpcMessage> = None;
    while let Some(prefix) = frames.get(..5) {
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        let end = (5 + len).min(frames.len());
        let message = GrpcMessage::literal(&frames[5..end]);
        match all.as_mut() {
            Some(all) => all.append(message),
            None => all = Some(message),
        }
        frames = &frames[end..];
    }
    all
}

/// A frame's message gzipped, behind a prefix whose flag says so.
fn gzip_frame(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let packed = encoder
        .write_all(&plain[5..])
        .and_then(|()| encoder.finish())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(packed.len() + 5);
    out.push(1);
    out.extend_from_slice(&(packed.len() as u32).to_be_bytes());
    out.extend_from_slice(&packed);
    out
}

/// A gRPC target's request line, `GRPC [https://]HOST:PORT package.Service/Method`
/// (after the verb): the call as a POST of the empty message, and the method.
pub(crate) fn parse_call(
    rest: &str,
    types: &mut TypeSource,
    global_headers: &[Header],
) -> Result<(Target, MethodDescriptor), String> {
    let mut words = rest.split_whitespace();
    let (Some(address), Some(method), None) = (words.next(), words.next(), words.next()) else {
        return Err(format!(
            "bad gRPC target {:?}: want 'GRPC [https://]HOST:PORT package.Service/Method'",
            rest.trim()
        ));
    };
    let (mut url, address) = call_address(address)?;
    let (service, _) = split_method(method)?;
    let method = types.types(&address, service)?.method(method)?;
    url.set_path(&format!(
        "/{}/{}",
        method.parent_service().full_name(),
        method.name()
    ));
    let mut headers = global_headers.to_vec();
    let mut grpc_headers = vec![
        ("content-type", GRPC_CONTENT_TYPE),
        ("te", "trailers"),
        // Answers in gzip are read (a flow's checks inflate them).
        ("grpc-accept-encoding", "gzip"),
    ];
    if types.gzip {
        grpc_headers.push(("grpc-encoding", "gzip"));
    }
    for (name, value) in grpc_headers {
        headers.push(Header {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }
    let target = Target {
        method: "POST".to_owned(),
        url,
        headers,
        body: frame(&[]),
        templated_path: None,
        grpc_message: None,
        // Until its messages are read: the empty one.
        grpc_stream: (method.is_client_streaming() || method.is_server_streaming()).then_some(
            GrpcStream {
                messages_out: 1,
                bidi: method.is_client_streaming() && method.is_server_streaming(),
                ..GrpcStream::default()
            },
        ),
    };
    Ok((target, method))
}

/// A call's address: `HOST:PORT` (or `http://HOST:PORT`) in cleartext (h2c),
/// `https://HOST:PORT` over TLS; as a URL, and as reflection is asked and errors say it
/// (`HOST:PORT`, or `https://HOST:PORT`).
fn call_address(text: &str) -> Result<(url::Url, String), String> {
    let (tls, host_port) = match text.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        Some(_) => return Err(bad_address(text)),
        None => (false, text),
    };
    // The port is written out, even 443 (which a URL would leave implied).
    let port_written = host_port
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    let scheme = if tls { "https" } else { "http" };
    let url = url::Url::parse(&format!("{scheme}://{host_port}/"))
        .ok()
        .filter(|u| u.host_str().is_some_and(|h| !h.is_empty()) && u.path() == "/")
        .filter(|_| port_written && !host_port.contains('/'))
        .ok_or_else(|| bad_address(text))?;
    let address = if tls {
        format!("https://{host_port}")
    } else {
        host_port.to_owned()
    };
    Ok((url, address))
}

fn bad_address(text: &str) -> String {
    format!("bad gRPC address {text:?}: want HOST:PORT (h2c) or https://HOST:PORT (TLS)")
}

/// A metadata line of a gRPC target: `grpc-timeout` (the deadline) is written as a Go
/// duration and sent in gRPC's spelling; other metadata as written.
pub(crate) fn metadata(mut header: Header) -> Result<Header, String> {
    if header.name.eq_ignore_ascii_case("grpc-timeout") {
        let deadline =
            units::parse_duration(&header.value).map_err(|e| format!("grpc-timeout: {e}"))?;
        header.value = timeout_text(deadline)?;
    }
    Ok(header)
}

/// A deadline in gRPC's `grpc-timeout` spelling: at most 8 digits and a unit.
fn timeout_text(deadline: std::time::Duration) -> Result<String, String> {
    const MOST: u128 = 99_999_999;
    let units = [
        (deadline.as_micros(), "u"),
        (deadline.as_millis(), "m"),
        (u128::from(deadline.as_secs()), "S"),
    ];
    if deadline.is_zero() {
        return Err("grpc-timeout: a deadline must be above 0".to_owned());
    }
    units
        .iter()
        .find(|(value, _)| *value <= MOST && *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .ok_or_else(|| format!("grpc-timeout: {deadline:?} is longer than gRPC can say"))
}

/// A compile error with the file, line and column it names (the paths tried for an
/// import not found).
fn proto_error(err: &protox::Error, includes: &[PathBuf]) -> WorkloadError {
    use miette::Diagnostic;
    let at = err
        .labels()
        .and_then(|mut labels| labels.next())
        .and_then(|label| {
            let code = err.source_code()?;
            let span = code.read_span(label.inner(), 0, 0).ok()?;
            Some(format!(":{}:{}", span.line() + 1, span.column() + 1))
        })
        .unwrap_or_default();
    let file = format!("{}{at}", err.file().unwrap_or("proto"));
    let mut reason = err.to_string();
    if err.is_file_not_found() {
        let tried: Vec<String> = includes.iter().map(|p| p.display().to_string()).collect();
        reason = format!("{reason} (import paths tried: {})", tried.join(", "));
    }
    WorkloadError::Proto { file, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREETER: &str = r#"syntax = "proto3";
package helloworld;
import "point.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc SayHelloStream (HelloRequest) returns (stream HelloReply) {}
  rpc Chat (stream HelloRequest) returns (stream HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; geo.Point where = 3; }
message HelloReply { string message = 1; }
"#;
    const POINT: &str = r#"syntax = "proto3";
package geo;
message Point { int32 latitude = 1; int32 longitude = 2; }
"#;

    /// A directory with `greeter.proto` importing `geo/point.proto`, and the set.
    fn greeter() -> (tempfile::TempDir, ProtoSet) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("geo")).unwrap();
        std::fs::write(dir.path().join("greeter.proto"), GREETER).unwrap();
        std::fs::write(dir.path().join("geo/point.proto"), POINT).unwrap();
        let set = ProtoSet::compile(
            &[dir.path().join("greeter.proto")],
            &[dir.path().join("geo")],
        )
        .unwrap();
        (dir, set)
    }

    #[test]
    fn bad_proto_files_name_the_file_line_and_column() {
        let rows: &[(&str, &str, &[&str])] = &[
            (
                "syntax = \"proto3\";\nmessage A {\n  string name = ;\n}\n",
                "",
                &["bad.proto:3:17", "expected an integer"],
            ),
            (
                "syntax = \"proto3\";\nimport \"missing.proto\";\n",
                "",
                &[
                    "bad.proto:2:1",
                    "import 'missing.proto' not found",
                    "import paths tried:",
                ],
            ),
            (
                "syntax = \"proto3\";\nmessage A { Nope b = 1; }\n",
                "",
                &["bad.proto:2:13", "Nope"],
            ),
        ];
        for (text, _, wants) in rows {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("bad.proto");
            std::fs::write(&path, text).unwrap();
            let err = ProtoSet::compile(&[path], &[]).unwrap_err().to_string();
            for want in *wants {
                assert!(err.contains(want), "{text:?}: {err}");
            }
        }
        let err = ProtoSet::compile(&[PathBuf::from("/nonexistent/x.proto")], &[])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "/nonexistent/x.proto: no such file");
    }

    #[test]
    fn methods_are_found_by_either_spelling_or_the_known_ones_listed() {
        let (_dir, set) = greeter();
        let rows = [
            (
                "helloworld.Greeter/SayHello",
                Ok("helloworld.Greeter.SayHello"),
            ),
            (
                "helloworld.Greeter.SayHello",
                Ok("helloworld.Greeter.SayHello"),
            ),
            (
                "helloworld.Greeter/SayHi",
                Err(
                    "no method \"helloworld.Greeter/SayHi\" in the .proto files (known: helloworld.Greeter/SayHello, helloworld.Greeter/SayHelloStream, helloworld.Greeter/Chat)",
                ),
            ),
            ("Greeter/SayHello", Err("no method \"Greeter/SayHello\"")),
            (
                "SayHello",
                Err("bad method \"SayHello\": want package.Service/Method"),
            ),
        ];
        for (name, want) in rows {
            match (set.method(name), want) {
                (Ok(m), Ok(want)) => assert_eq!(m.full_name(), want),
                (Err(err), Err(want)) => assert!(err.starts_with(want), "{name}: {err}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn json_messages_encode_once_or_name_the_field_that_does_not_fit() {
        let (_dir, set) = greeter();
        let input = set.method("helloworld.Greeter/SayHello").unwrap().input();
        let rows: &[(&str, Result<&[u8], &str>)] = &[
            ("{}", Ok(&[0, 0, 0, 0, 0])),
            (r#"{"name":"w"}"#, Ok(&[0, 0, 0, 0, 3, 0x0a, 1, b'w'])),
            (
                r#"{"where":{"latitude":1}}"#,
                Ok(&[0, 0, 0, 0, 4, 0x1a, 2, 0x08, 1]),
            ),
            (
                r#"{"where":{"latitude":"north"}}"#,
                Err("message helloworld.HelloRequest at where.latitude: "),
            ),
            (
                r#"{"nme":"w"}"#,
                Err("message helloworld.HelloRequest: unrecognized field name 'nme' at line 1"),
            ),
            (
                r#"{"where":{"lat":1}}"#,
                Err("message helloworld.HelloRequest at where: unrecognized field name 'lat'"),
            ),
            (
                r#"{"times":1.5}"#,
                Err("message helloworld.HelloRequest at times: "),
            ),
            (
                r#"{"name":"w"} x"#,
                Err("message helloworld.HelloRequest: trailing characters"),
            ),
            (
                "[1]",
                Err("message helloworld.HelloRequest: invalid type: sequence"),
            ),
        ];
        for (json, want) in rows {
            match (encode_message(&input, json), want) {
                (Ok(bytes), Ok(want)) => assert_eq!(&bytes, want, "{json}"),
                (Err(err), Err(want)) => assert!(err.starts_with(want), "{json}: {err}"),
                (got, want) => panic!("{json}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn grpc_targets_read_from_the_http_format_or_say_why_not() {
        let (_dir, set) = greeter();
        let set = Some(Arc::new(set));
        let json_file = |path: &Path| match path.to_str() {
            Some("m.json") => Ok(br#"{"name":"file"}"#.to_vec()),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file",
            )),
        };
        let parse = |text: &str, protos: &Option<Arc<ProtoSet>>| {
            crate::HttpTargetReader::new(text.as_bytes(), "t.txt", &[], b"", &json_file)
                .with_protos(protos.clone())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())
        };
        let greet = "GRPC 127.0.0.1:50051 helloworld.Greeter/SayHello";
        let tls = parse(
            "GRPC https://localhost:8443 helloworld.Greeter/SayHello\n",
            &set,
        )
        .unwrap();
        assert_eq!(
            tls[0].url.as_str(),
            "https://localhost:8443/helloworld.Greeter/SayHello"
        );
        assert!(tls[0].is_grpc());
        let ok = parse(
            &format!("{greet}\nx-user: 7\ngrpc-timeout: 1s\n{{\"name\":\"w\"}}\nGET http://h/\n\n{greet}\n@m.json\n{greet}\n"),
            &set,
        )
        .unwrap();
        assert_eq!(ok.len(), 4);
        assert_eq!(ok[0].method, "POST");
        assert_eq!(
            ok[0].url.as_str(),
            "http://127.0.0.1:50051/helloworld.Greeter/SayHello"
        );
        let headers: Vec<(&str, &str)> = ok[0]
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-accept-encoding", "gzip"),
                ("x-user", "7"),
                ("grpc-timeout", "1000000u")
            ]
        );
        assert_eq!(ok[0].body, [0, 0, 0, 0, 3, 0x0a, 1, b'w']);
        assert!(ok[0].is_grpc() && !ok[1].is_grpc() && ok[2].is_grpc());
        assert_eq!(&ok[2].body[5..], b"\x0a\x04file");
        assert_eq!(
            ok[3].body,
            [0, 0, 0, 0, 0],
            "no message line: the empty one"
        );
        assert!(ok.iter().all(|t| t.grpc_message.is_none()));
        // -grpc-compress gzip: a fixed message gzipped once; a templated one as rendered.
        let gzipped = crate::HttpTargetReader::new(
            format!("{greet}\n{{\"name\":\"w\"}}\n{greet}\n{{\"name\":\"{{{{seq}}}}\"}}\n")
                .as_bytes(),
            "t.txt",
            &[],
            b"",
            &json_file,
        )
        .with_protos(set.clone())
        .with_grpc_gzip(true)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
        let (flag, packed) = (gzipped[0].body[0], &gzipped[0].body[5..]);
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(packed), &mut plain).unwrap();
        assert_eq!((flag, &plain[..]), (1, &[0x0a, 1, b'w'][..]));
        assert_eq!(
            u32::from_be_bytes(gzipped[0].body[1..5].try_into().unwrap()) as usize,
            packed.len()
        );
        for target in &gzipped {
            let named = |name: &str| {
                target
                    .headers
                    .iter()
                    .any(|h| h.name == name && h.value == "gzip")
            };
            assert!(named("grpc-encoding") && named("grpc-accept-encoding"));
        }
        assert_eq!(
            gzipped[1].body,
            [0, 0, 0, 0, 0],
            "templated: rendered, not gzipped"
        );

        // A stream of messages: each line one, a file's lines each one, to the blank line.
        let chat = "GRPC 127.0.0.1:50051 helloworld.Greeter/Chat";
        let streams = parse(
            &format!(
                "{chat}\n{{\"name\":\"a\"}}\n@m.json\n{{\"name\":\"bc\"}}\n\n{chat}\n\n{greet}Stream\n{{\"name\":\"w\"}}\n"
            ),
            &set,
        )
        .unwrap();
        let stream = |messages_out, bytes_out| {
            Some(GrpcStream {
                messages_out,
                bytes_out,
                bidi: true,
                ..GrpcStream::default()
            })
        };
        assert_eq!(streams[0].grpc_stream, stream(3, 3 + 6 + 4));
        let want: Vec<u8> = [
            &[0, 0, 0, 0, 3, 0x0a, 1, b'a'][..],
            &[0, 0, 0, 0, 6, 0x0a, 4, b'f', b'i', b'l', b'e'],
            &[0, 0, 0, 0, 4, 0x0a, 2, b'b', b'c'],
        ]
        .concat();
        assert_eq!(streams[0].body, want);
        assert_eq!(
            streams[1].grpc_stream,
            stream(1, 0),
            "no message: the empty one"
        );
        assert_eq!(streams[1].body, [0, 0, 0, 0, 0]);
        assert_eq!(
            streams[2].grpc_stream,
            stream(1, 3).map(|s| GrpcStream { bidi: false, ..s }),
            "a server stream's request"
        );
        assert_eq!(ok[0].grpc_stream, None, "unary");
        // A pace and repeats, anywhere in the target, beside the messages and metadata.
        let paced = parse(
            &format!(
                "{chat}\nevery 20ms\n{{\"name\":\"a\"}}\nx: 1\nrepeat 50\n{{\"name\":\"b\"}}\n"
            ),
            &set,
        )
        .unwrap();
        let want = GrpcStream {
            repeat: 50,
            every_ns: 20_000_000,
            ..stream(2, 6).unwrap()
        };
        assert_eq!(paced[0].grpc_stream, Some(want));
        assert_eq!((want.total_messages(), want.total_bytes()), (100, 300));
        assert_eq!(paced[0].headers.last().map(|h| h.name.as_str()), Some("x"));
        // Placeholders in a stream's messages: the messages go as one, rendered per
        // call, those without placeholders as encoded once (uncompressed).
        for gzip in [false, true] {
            let text = format!(
                "{chat}\n{{\"name\":\"a\"}}\n{{\"name\":\"n{{{{seq}}}}\"}}\n{{\"times\":2}}\n"
            );
            let templated =
                crate::HttpTargetReader::new(text.as_bytes(), "t.txt", &[], b"", &json_file)
                    .with_protos(set.clone())
                    .with_grpc_gzip(gzip)
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
            let message = templated[0].grpc_message.as_ref().expect("templated");
            assert_eq!(message.texts().collect::<Vec<_>>(), ["n{{seq}}"]);
            let mut out = Vec::new();
            message.render(&crate::RenderContext::plain(1, 42, None), &mut out);
            let want: Vec<u8> = [
                &[0, 0, 0, 0, 3, 0x0a, 1, b'a'][..],
                &[0, 0, 0, 0, 5, 0x0a, 3, b'n', b'4', b'2'],
                &[0, 0, 0, 0, 2, 0x10, 2],
            ]
            .concat();
            assert_eq!(out, want, "gzip {gzip}");
            assert_eq!(templated[0].grpc_stream.map(|s| s.messages_out), Some(3));
        }
        let templated = parse(
            &format!("{greet}\n{{\"name\":\"{{{{csv.who}}}}\"}}\n"),
            &set,
        )
        .unwrap();
        let message = templated[0].grpc_message.as_ref().expect("split at start");
        assert_eq!(message.texts().collect::<Vec<_>>(), ["{{csv.who}}"]);
        assert_eq!(templated[0].template_columns(), ["who"]);
        assert!(templated[0].is_templated());

        let rows = [
            (
                format!("{greet}\n"),
                None,
                "t.txt:1: a GRPC target needs the .proto files",
            ),
            (
                "GRPC 127.0.0.1:50051\n".to_owned(),
                set.clone(),
                "t.txt:1: bad gRPC target",
            ),
            (
                "GRPC 127.0.0.1 helloworld.Greeter/SayHello\n".to_owned(),
                set.clone(),
                "t.txt:1: bad gRPC address \"127.0.0.1\": want HOST:PORT",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Nope\n".to_owned(),
                set.clone(),
                "t.txt:1: no method \"helloworld.Greeter/Nope\" in the .proto files (known: ",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\n{\"name\":\"a\"}\n{\"times\":\"{{seq}}\"}\n"
                    .to_owned(),
                set.clone(),
                "t.txt:3: message helloworld.HelloRequest at times: ",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\n{\"name\":\"a\"}\n@nope.json\n"
                    .to_owned(),
                set.clone(),
                "t.txt:3: body file \"nope.json\"",
            ),
            (
                format!("{greet}\nx: 1\n{{\"where\":{{\"longitude\":true}}}}\n"),
                set.clone(),
                "t.txt:3: message helloworld.HelloRequest at where.longitude: ",
            ),
            (
                format!("{greet}\n{{\"times\":\"{{{{seq}}}}\"}}\n"),
                set.clone(),
                "t.txt:2: message helloworld.HelloRequest at times: ",
            ),
            (
                format!("{greet}\ngrpc-timeout: 0s\n"),
                set.clone(),
                "t.txt:2: grpc-timeout: a deadline must be above 0",
            ),
            (
                format!("{greet}\nevery 10ms\n"),
                set.clone(),
                "t.txt:2: \"every\" paces a client or bidirectional streaming call's messages; this method takes one message",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\nevery 0s\n".to_owned(),
                set.clone(),
                "t.txt:2: every 0s: want a duration above 0",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\nevery often\n".to_owned(),
                set.clone(),
                "t.txt:2: every often: ",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\nrepeat 0\n".to_owned(),
                set.clone(),
                "t.txt:2: repeat 0: \"0\" is not a count from 1 to 4294967295",
            ),
            (
                "GRPC 127.0.0.1:1 helloworld.Greeter/Chat\nrepeat -3\n".to_owned(),
                set.clone(),
                "t.txt:2: repeat -3: \"-3\" is not a count",
            ),
            (
                format!("{greet}\n@nope.json\n"),
                set,
                "t.txt:2: body file \"nope.json\"",
            ),
        ];
        for (text, protos, want) in rows {
            let err = parse(&text, &protos).unwrap_err();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn call_addresses_say_h2c_or_tls() {
        let rows = [
            (
                "127.0.0.1:50051",
                Ok(("http://127.0.0.1:50051/", "127.0.0.1:50051")),
            ),
            ("http://h:1", Ok(("http://h:1/", "h:1"))),
            ("https://h:443", Ok(("https://h/", "https://h:443"))),
            (
                "https://[::1]:8443",
                Ok(("https://[::1]:8443/", "https://[::1]:8443")),
            ),
            (
                "h",
                Err("bad gRPC address \"h\": want HOST:PORT (h2c) or https://HOST:PORT (TLS)"),
            ),
            ("https://h", Err("bad gRPC address \"https://h\"")),
            ("https://h:1/x", Err("bad gRPC address \"https://h:1/x\"")),
            ("grpcs://h:1", Err("bad gRPC address \"grpcs://h:1\"")),
            ("https://:1", Err("bad gRPC address")),
            ("[::1]", Err("bad gRPC address")),
        ];
        for (text, want) in rows {
            match (call_address(text), want) {
                (Ok((url, address)), Ok((want_url, want_address))) => {
                    assert_eq!((url.as_str(), address.as_str()), (want_url, want_address));
                }
                (Err(err), Err(want)) => assert!(err.starts_with(want), "{text}: {err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// Records the addresses reflection is asked at, and answers none.
    #[derive(Default)]
    struct Asked(std::sync::Mutex<Vec<String>>);

    impl Reflector for Asked {
        fn call(
            &self,
            address: &str,
            _path: &str,
            _body: &[u8],
        ) -> Result<crate::CallAnswer, String> {
            self.0.lock().unwrap().push(address.to_owned());
            Err(format!("cannot reach {address}"))
        }
    }

    #[test]
    fn reflection_is_asked_over_tls_for_an_https_call() {
        let asked = Arc::new(Asked::default());
        for (line, want) in [
            ("https://h:8443 p.S/M", "https://h:8443"),
            ("h:50051 p.S/M", "h:50051"),
        ] {
            let mut types = TypeSource::new(None, Some(asked.clone()));
            let err = parse_call(line, &mut types, &[]).unwrap_err();
            assert_eq!(err, format!("cannot reach {want}"));
            assert_eq!(asked.0.lock().unwrap().last().unwrap(), want);
        }
    }

    #[test]
    fn deadlines_are_spelled_as_grpc_says() {
        let rows = [
            ("250ms", Ok("250000u")),
            ("1s", Ok("1000000u")),
            ("2m", Ok("120000m")),
            ("48h", Ok("172800S")),
            (
                "30000h",
                Err("grpc-timeout: 108000000s is longer than gRPC can say"),
            ),
            ("0s", Err("grpc-timeout: a deadline must be above 0")),
            ("soon", Err("grpc-timeout: ")),
        ];
        for (text, want) in rows {
            let header = Header {
                name: "grpc-timeout".to_owned(),
                value: text.to_owned(),
            };
            match (metadata(header), want) {
                (Ok(h), Ok(want)) => assert_eq!(h.value, want, "{text}"),
                (Err(err), Err(want)) => assert!(err.starts_with(want), "{text}: {err}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
