//! A gRPC target without `-proto` takes its message types from the server's
//! reflection service (`grpc.reflection.v1.ServerReflection`, then `v1alpha`): the
//! file descriptors of the method's service and every file they import, asked for once
//! at start (by whoever reads the targets: [`Reflector`] is the transport, the engine's),
//! then built into a descriptor pool as `.proto` files are.
//!
//! Each question is its own call on the bidirectional method (its requests sent, the
//! stream half-closed, the answers read to the trailers): simpler than keeping one
//! stream open, and every server answers it the same.

use std::collections::BTreeSet;

use prost::Message;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorProto;

use crate::grpc_frame::frame;

/// The reflection method's path, newest version first.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];
/// gRPC's `UNIMPLEMENTED`: the server has no such service.
const UNIMPLEMENTED: u8 = 12;
/// Rounds of asking for imports not yet sent; a file's imports come in its own answer
/// on every server we know, so one more round is already a rare one.
const MAX_ROUNDS: usize = 8;
/// The most messages one answer may carry before it is judged a runaway stream.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// One call of a bidirectional method on the wire, off the hot path (blocking).
pub trait Reflector: Send + Sync {
    /// Calls `path` at `address` (`HOST:PORT`) with `body` (gRPC frames), then
    /// half-closes and reads the answer to its end; `Err` when there is no HTTP/2
    /// answer at all (no connection, not HTTP/2), worded for the user.
    fn call(&self, address: &str, path: &str, body: &[u8]) -> Result<CallAnswer, String>;
}

/// What came back from a [`Reflector::call`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallAnswer {
    /// The HTTP status of the answer's head.
    pub http_status: u16,
    /// Its `grpc-status`, if it had one.
    pub grpc_status: Option<u8>,
    /// Its `grpc-message`.
    pub grpc_message: String,
    /// The DATA bytes: gRPC frames.
    pub data: Vec<u8>,
}

/// `grpc.reflection.v1.ServerReflectionRequest`; its `oneof` is spelled as optional
/// fields (the same bytes on the wire).
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
    #[prost(string, optional, tag = "7")]
    list_services: Option<String>,
}

/// `ServerReflectionResponse`, the parts read.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "6")]
    list_services_response: Option<ListServiceResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// The message types of `service` (`package.Service`) at `address`, from its
/// reflection service; the reason names what went wrong and what to do.
pub(crate) fn reflect(
    reflector: &dyn Reflector,
    address: &str,
    service: &str,
) -> Result<DescriptorPool, String> {
    let mut session = Session::open(reflector, address)?;
    let first = session.ask(&[symbol(service)])?;
    if let Some(error) = first.iter().find_map(|r| r.error_response.as_ref()) {
        let services = session.services().unwrap_or_default();
        return Err(format!(
            "{address} does not serve {service} by reflection ({}; its services: {})",
            error.error_message,
            services.join(", ")
        ));
    }
    let mut files = Vec::new();
    let mut pending = first;
    for _ in 0..MAX_ROUNDS {
        take_files(&pending, &mut files)?;
        let missing = missing_imports(&files);
        if missing.is_empty() {
            return build(files, address);
        }
        let questions: Vec<ReflectionRequest> =
            missing.into_iter().map(|name| by_filename(&name)).collect();
        pending = session.ask(&questions)?;
        if let Some(error) = pending.iter().find_map(|r| r.error_response.as_ref()) {
            return Err(format!(
                "{address}'s reflection did not send an import of {service}: {}",
                error.error_message
            ));
        }
    }
    Err(format!(
        "{address}'s reflection kept naming imports it did not send"
    ))
}

/// The reflection service at one address, in the version it answers.
struct Session<'a> {
    reflector: &'a dyn Reflector,
    address: &'a str,
    path: &'static str,
}

impl<'a> Session<'a> {
    /// Finds the version the server answers (asking it for its services).
    fn open(reflector: &'a dyn Reflector, address: &'a str) -> Result<Session<'a>, String> {
        for path in PATHS {
            let mut session = Session {
                reflector,
                address,
                path,
            };
            match session.call(&[list()]) {
                Ok(_) => return Ok(session),
                Err(Refusal::Unimplemented) => continue,
                Err(Refusal::Other(reason)) => return Err(reason),
            }
        }
        Err(format!(
            "{address} does not answer reflection (no grpc.reflection service): give -proto FILE"
        ))
    }

    fn ask(&mut self, questions: &[ReflectionRequest]) -> Result<Vec<ReflectionResponse>, String> {
        self.call(questions).map_err(|refusal| match refusal {
            Refusal::Unimplemented => format!("{} stopped answering reflection", self.address),
            Refusal::Other(reason) => reason,
        })
    }

    /// The services the server lists.
    fn services(&mut self) -> Result<Vec<String>, String> {
        let answers = self.ask(&[list()])?;
        let mut names: Vec<String> = answers
            .iter()
            .filter_map(|a| a.list_services_response.as_ref())
            .flat_map(|l| l.service.iter().map(|s| s.name.clone()))
            .collect();
        names.sort();
        Ok(names)
    }

    fn call(
        &mut self,
        questions: &[ReflectionRequest],
    ) -> Result<Vec<ReflectionResponse>, Refusal> {
        let body: Vec<u8> = questions
            .iter()
            .flat_map(|q| frame(&q.encode_to_vec()))
            .collect();
        let answer = self
            .reflector
            .call(self.address, self.path, &body)
            .map_err(Refusal::Other)?;
        match answer.grpc_status {
            Some(0) => {}
            Some(UNIMPLEMENTED) => return Err(Refusal::Unimplemented),
            Some(code) => {
                return Err(Refusal::Other(format!(
                    "{}'s reflection answered grpc-status {code}: {}",
                    self.address, answer.grpc_message
                )));
            }
            None => {
                return Err(Refusal::Other(format!(
                    "{} is not a gRPC server (HTTP status {}, no grpc-status): give -proto FILE and check the address",
                    self.address, answer.http_status
                )));
            }
        }
        messages(&answer.data)
            .map_err(|reason| Refusal::Other(format!("{}'s reflection: {reason}", self.address)))
    }
}

enum Refusal {
    Unimplemented,
    Other(String),
}

fn symbol(service: &str) -> ReflectionRequest {
    ReflectionRequest {
        file_containing_symbol: Some(service.to_owned()),
        ..ReflectionRequest::default()
    }
}

fn by_filename(name: &str) -> ReflectionRequest {
    ReflectionRequest {
        file_by_filename: Some(name.to_owned()),
        ..ReflectionRequest::default()
    }
}

fn list() -> ReflectionRequest {
    ReflectionRequest {
        list_services: Some(String::new()),
        ..ReflectionRequest::default()
    }
}

/// The answers in `data` (gRPC frames, uncompressed).
fn messages(mut data: &[u8]) -> Result<Vec<ReflectionResponse>, String> {
    if data.len() > MAX_ANSWER_BYTES {
        return Err(format!("answer over {MAX_ANSWER_BYTES} bytes"));
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let Some((head, rest)) = data.split_first_chunk::<5>() else {
            return Err("a message cut short".to_owned());
        };
        if head[0] != 0 {
            return Err("a compressed message (loadlab asks for none)".to_owned());
        }
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let body = rest.get(..len).ok_or("a message cut short")?;
        let message =
            ReflectionResponse::decode(body).map_err(|e| format!("an unreadable answer: {e}"))?;
        out.push(message);
        data = &rest[len..];
    }
    Ok(out)
}

/// Adds the files of `answers` not seen yet to `files`.
fn take_files(
    answers: &[ReflectionResponse],
    files: &mut Vec<FileDescriptorProto>,
) -> Result<(), String> {
    let sent = answers
        .iter()
        .filter_map(|a| a.file_descriptor_response.as_ref())
        .flat_map(|f| f.file_descriptor_proto.iter());
    for bytes in sent {
        let file = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| format!("reflection sent a file descriptor that does not decode: {e}"))?;
        if !files.iter().any(|f| f.name == file.name) {
            files.push(file);
        }
    }
    Ok(())
}

/// Imports named by `files` that are not among them.
fn missing_imports(files: &[FileDescriptorProto]) -> BTreeSet<String> {
    let have: BTreeSet<&str> = files.iter().map(|f| f.name()).collect();
    files
        .iter()
        .flat_map(|f| f.dependency.iter())
        .filter(|d| !have.contains(d.as_str()))
        .cloned()
        .collect()
}

fn build(files: Vec<FileDescriptorProto>, address: &str) -> Result<DescriptorPool, String> {
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files)
        .map_err(|e| format!("{address}'s reflection sent files that do not build: {e}"))?;
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::ProtoSet;
    use std::sync::Mutex;

    /// A server answering from a pool, as the reflection service does: a file and
    /// its imports (all of them, or only the file, to make the client ask again).
    struct Fake {
        pool: Option<DescriptorPool>,
        versions: &'static [&'static str],
        with_imports: bool,
        calls: Mutex<Vec<String>>,
    }

    impl Reflector for Fake {
        fn call(&self, address: &str, path: &str, body: &[u8]) -> Result<CallAnswer, String> {
            assert_eq!(address, "h:1");
            self.calls.lock().unwrap().push(path.to_owned());
            let Some(pool) = &self.pool else {
                return Ok(CallAnswer {
                    http_status: 404,
                    ..CallAnswer::default()
                });
            };
            if !self.versions.iter().any(|v| path.contains(v)) {
                return Ok(CallAnswer {
                    http_status: 200,
                    grpc_status: Some(UNIMPLEMENTED),
                    ..CallAnswer::default()
                });
            }
            let mut data = Vec::new();
            let mut rest = body;
            while let Some((head, tail)) = rest.split_first_chunk::<5>() {
                let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
                let question = ReflectionRequest::decode(&tail[..len]).unwrap();
                rest = &tail[len..];
                let answer = self.answer(pool, &question);
                data.extend(frame(&answer.encode_to_vec()));
            }
            Ok(CallAnswer {
                http_status: 200,
                grpc_status: Some(0),
                data,
                ..CallAnswer::default()
            })
        }
    }

    impl Fake {
        fn answer(&self, pool: &DescriptorPool, q: &ReflectionRequest) -> ReflectionResponse {
            let mut answer = ReflectionResponse::default();
            if q.list_services.is_some() {
                let service = pool
                    .services()
                    .map(|s| ServiceResponse {
                        name: s.full_name().to_owned(),
                    })
                    .collect();
                answer.list_services_response = Some(ListServiceResponse { service });
                return answer;
            }
            let file = match (&q.file_containing_symbol, &q.file_by_filename) {
                (Some(s), _) => pool.get_service_by_name(s).map(|s| s.parent_file()),
                (_, Some(name)) => pool.get_file_by_name(name),
                _ => None,
            };
            let Some(file) = file else {
                answer.error_response = Some(ErrorResponse {
                    error_code: 5,
                    error_message: "not found".to_owned(),
                });
                return answer;
            };
            let mut files = vec![file.encode_to_vec()];
            if self.with_imports {
                files.extend(file.dependencies().map(|d| d.encode_to_vec()));
            }
            answer.file_descriptor_response = Some(FileDescriptorResponse {
                file_descriptor_proto: files,
            });
            answer
        }
    }

    fn pool() -> DescriptorPool {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("g.proto"),
            "syntax = \"proto3\";\npackage hello;\nimport \"p.proto\";\nservice Greeter { rpc Hi (geo.Point) returns (geo.Point); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("p.proto"),
            "syntax = \"proto3\";\npackage geo;\nmessage Point { int32 x = 1; }\n",
        )
        .unwrap();
        ProtoSet::compile(&[dir.path().join("g.proto")], &[])
            .unwrap()
            .pool()
            .clone()
    }

    fn fake(
        pool: Option<DescriptorPool>,
        versions: &'static [&'static str],
        with_imports: bool,
    ) -> Fake {
        Fake {
            pool,
            versions,
            with_imports,
            calls: Mutex::new(Vec::new()),
        }
    }

    #[test]
    fn reflection_builds_the_services_types_with_their_imports() {
        let rows: &[(&[&str], bool)] = &[(&["v1."], true), (&["v1alpha"], true), (&["v1."], false)];
        for (versions, with_imports) in rows {
            let server = fake(Some(pool()), versions, *with_imports);
            let pool = reflect(&server, "h:1", "hello.Greeter").unwrap();
            let set = ProtoSet::reflected(pool, "h:1");
            let method = set.method("hello.Greeter/Hi").unwrap();
            assert_eq!(method.input().full_name(), "geo.Point", "{versions:?}");
            let calls = server.calls.lock().unwrap();
            assert!(calls.iter().all(|c| c.ends_with("/ServerReflectionInfo")));
            assert!(calls.last().unwrap().contains(versions[0]), "{calls:?}");
        }
    }

    #[test]
    fn reflection_refusals_say_what_to_do() {
        let rows = [
            (
                fake(None, &[], true),
                "hello.Greeter",
                "h:1 is not a gRPC server (HTTP status 404, no grpc-status)",
            ),
            (
                fake(Some(pool()), &[], true),
                "hello.Greeter",
                "h:1 does not answer reflection (no grpc.reflection service): give -proto FILE",
            ),
            (
                fake(Some(pool()), &["v1."], true),
                "hello.Nope",
                "h:1 does not serve hello.Nope by reflection (not found; its services: hello.Greeter)",
            ),
        ];
        for (server, service, want) in rows {
            let err = reflect(&server, "h:1", service).unwrap_err();
            assert!(err.starts_with(want), "want {want} in {err}");
        }
    }

    #[test]
    fn answers_that_are_not_whole_messages_are_named() {
        let rows: &[(&[u8], &str)] = &[
            (&[0, 0, 0], "a message cut short"),
            (&[0, 0, 0, 0, 9, 1], "a message cut short"),
            (&[1, 0, 0, 0, 0], "a compressed message"),
            (&[0, 0, 0, 0, 2, 0xff, 0xff], "an unreadable answer"),
        ];
        for (data, want) in rows {
            let err = messages(data).unwrap_err();
            assert!(err.starts_with(want), "{data:?}: {err}");
        }
        assert_eq!(messages(&[0, 0, 0, 0, 0]).unwrap().len(), 1);
    }
}
