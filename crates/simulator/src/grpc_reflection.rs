//! The simulator's reflection service (`grpc.reflection.v1.ServerReflection` and
//! `v1alpha`), on whenever the recipe has gRPC routes: it lists their services and
//! sends the file descriptors of their `.proto` files (a file and all it imports), so
//! a client with no `.proto` (`loadlab attack` without `-proto`, grpcurl) can call them.
//!
//! The call is a bidirectional stream: each request is answered as it arrives, and the
//! trailers follow when the client half-closes. Reflection calls are not counted in
//! `/metrics`: they are not the load.

use bytes::{Bytes, BytesMut};
use h2::RecvStream;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue};
use prost::Message;
use prost_reflect::{DescriptorPool, FileDescriptor};

use crate::table::Table;

/// The paths the service answers on.
pub(crate) const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];
/// The most one request message may take (a reflection request is a name).
const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// gRPC's NOT_FOUND and UNIMPLEMENTED, in an `ErrorResponse`.
const NOT_FOUND: i32 = 5;
const UNIMPLEMENTED: i32 = 12;

/// `ServerReflectionRequest`; its `oneof` as optional fields (the same bytes).
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

/// `ServerReflectionResponse`.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(string, tag = "1")]
    valid_host: String,
    #[prost(message, optional, tag = "2")]
    original_request: Option<ReflectionRequest>,
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

/// The pools of `table`'s gRPC routes, when it has any.
pub(crate) fn pools(table: &Table) -> Vec<DescriptorPool> {
    table
        .routes
        .iter()
        .filter_map(|r| r.grpc_pool.clone())
        .collect()
}

/// Serves one reflection call from `pools`. Errors mean the client left.
pub(crate) async fn serve(
    pools: Vec<DescriptorPool>,
    mut body: RecvStream,
    mut respond: SendResponse<Bytes>,
) -> Result<(), h2::Error> {
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap_or_default();
    let mut stream = respond.send_response(head, false)?;
    let mut pending = BytesMut::new();
    let mut status = 0u8;
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        pending.extend_from_slice(&chunk);
        loop {
            match next_request(&mut pending) {
                Ok(Some(request)) => {
                    let answer = answer(&pools, request).encode_to_vec();
                    stream.send_data(frame(&answer), false)?;
                }
                Ok(None) => break,
                Err(()) => {
                    status = 3; // INVALID_ARGUMENT: not a reflection request.
                    pending.clear();
                    break;
                }
            }
        }
        if status != 0 {
            break;
        }
    }
    let mut trailers = HeaderMap::with_capacity(1);
    trailers.insert("grpc-status", HeaderValue::from(u16::from(status)));
    stream.send_trailers(trailers)
}

/// The next whole request in `pending` (taken out of it); `Err` for one that is not
/// a reflection request or is too large.
fn next_request(pending: &mut BytesMut) -> Result<Option<ReflectionRequest>, ()> {
    let Some(head) = pending.first_chunk::<5>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if head[0] != 0 || len > MAX_REQUEST_BYTES {
        return Err(());
    }
    if pending.len() < 5 + len {
        return Ok(None);
    }
    let message = pending.split_to(5 + len);
    ReflectionRequest::decode(&message[5..])
        .map(Some)
        .map_err(|_| ())
}

fn frame(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// The answer to one request.
fn answer(pools: &[DescriptorPool], request: ReflectionRequest) -> ReflectionResponse {
    let mut answer = ReflectionResponse {
        valid_host: request.host.clone(),
        ..ReflectionResponse::default()
    };
    let found = match (
        &request.list_services,
        &request.file_containing_symbol,
        &request.file_by_filename,
    ) {
        (Some(_), _, _) => {
            answer.list_services_response = Some(ListServiceResponse {
                service: services(pools)
                    .into_iter()
                    .map(|name| ServiceResponse { name })
                    .collect(),
            });
            Ok(())
        }
        (_, Some(symbol), _) => file_of_symbol(pools, symbol)
            .map(|f| answer.file_descriptor_response = Some(with_imports(&f)))
            .ok_or((NOT_FOUND, format!("symbol not found: {symbol}"))),
        (_, _, Some(name)) => pools
            .iter()
            .find_map(|p| p.get_file_by_name(name))
            .map(|f| answer.file_descriptor_response = Some(with_imports(&f)))
            .ok_or((NOT_FOUND, format!("file not found: {name}"))),
        _ => Err((UNIMPLEMENTED, "not supported by the simulator".to_owned())),
    };
    if let Err((error_code, error_message)) = found {
        answer.error_response = Some(ErrorResponse {
            error_code,
            error_message,
        });
    }
    answer.original_request = Some(request);
    answer
}

/// Every service of `pools`, once each, in order, and the reflection service itself.
fn services(pools: &[DescriptorPool]) -> Vec<String> {
    let mut names: Vec<String> = pools
        .iter()
        .flat_map(|p| p.services().map(|s| s.full_name().to_owned()))
        .collect();
    names.push("grpc.reflection.v1.ServerReflection".to_owned());
    names.sort();
    names.dedup();
    names
}

/// The file defining `symbol`: a service, a method (`pkg.Service.Method`), a message
/// or an enum.
fn file_of_symbol(pools: &[DescriptorPool], symbol: &str) -> Option<FileDescriptor> {
    pools.iter().find_map(|pool| {
        let method = symbol.rsplit_once('.').and_then(|(service, method)| {
            pool.get_service_by_name(service)
                .filter(|s| s.methods().any(|m| m.name() == method))
        });
        pool.get_service_by_name(symbol)
            .or(method)
            .map(|s| s.parent_file())
            .or_else(|| pool.get_message_by_name(symbol).map(|m| m.parent_file()))
            .or_else(|| pool.get_enum_by_name(symbol).map(|e| e.parent_file()))
    })
}

/// `file` and every file it imports, however deep, once each.
fn with_imports(file: &FileDescriptor) -> FileDescriptorResponse {
    let mut files: Vec<FileDescriptor> = vec![file.clone()];
    let mut at = 0;
    while at < files.len() {
        let imports: Vec<FileDescriptor> = files[at].dependencies().collect();
        for import in imports {
            if !files.iter().any(|f| f.name() == import.name()) {
                files.push(import);
            }
        }
        at += 1;
    }
    FileDescriptorResponse {
        file_descriptor_proto: files.iter().map(FileDescriptor::encode_to_vec).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> DescriptorPool {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("g.proto"),
            "syntax = \"proto3\";\npackage hello;\nimport \"p.proto\";\nservice Greeter { rpc Hi (geo.Point) returns (geo.Point); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("p.proto"),
            "syntax = \"proto3\";\npackage geo;\nimport \"google/protobuf/empty.proto\";\nmessage Point { int32 x = 1; }\n",
        )
        .unwrap();
        let mut compiler = protox::Compiler::new([dir.path()]).unwrap();
        compiler.include_imports(true);
        compiler.open_file(dir.path().join("g.proto")).unwrap();
        compiler.descriptor_pool()
    }

    fn names(answer: &ReflectionResponse) -> Vec<String> {
        let files = &answer.file_descriptor_response.as_ref().unwrap();
        files
            .file_descriptor_proto
            .iter()
            .map(|b| {
                prost_reflect::prost_types::FileDescriptorProto::decode(b.as_slice())
                    .unwrap()
                    .name()
                    .to_owned()
            })
            .collect()
    }

    fn ask(kind: usize, text: &str) -> ReflectionResponse {
        let mut request = ReflectionRequest::default();
        let field = [
            &mut request.list_services,
            &mut request.file_containing_symbol,
            &mut request.file_by_filename,
        ];
        if let Some(slot) = field.into_iter().nth(kind) {
            *slot = Some(text.to_owned());
        }
        answer(&[pool()], request)
    }

    #[test]
    fn reflection_answers_files_with_their_imports_services_and_errors() {
        let all = ["g.proto", "p.proto", "google/protobuf/empty.proto"];
        for symbol in ["hello.Greeter", "hello.Greeter.Hi"] {
            assert_eq!(names(&ask(1, symbol)), all, "{symbol}");
        }
        assert_eq!(
            names(&ask(1, "geo.Point")),
            ["p.proto", "google/protobuf/empty.proto"]
        );
        assert_eq!(names(&ask(2, "g.proto")), all);
        let listed = ask(0, "").list_services_response.unwrap();
        let listed: Vec<&str> = listed.service.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            listed,
            ["grpc.reflection.v1.ServerReflection", "hello.Greeter"]
        );
        let rows = [
            (1, "hello.Nope", NOT_FOUND, "symbol not found: hello.Nope"),
            (2, "nope.proto", NOT_FOUND, "file not found: nope.proto"),
            (3, "", UNIMPLEMENTED, "not supported by the simulator"),
        ];
        for (kind, text, code, message) in rows {
            let error = ask(kind, text).error_response.unwrap();
            assert_eq!(
                (error.error_code, error.error_message.as_str()),
                (code, message)
            );
        }
    }

    #[test]
    fn requests_are_taken_whole_or_refused() {
        let request = ReflectionRequest {
            list_services: Some(String::new()),
            ..ReflectionRequest::default()
        };
        let whole = frame(&request.encode_to_vec());
        let mut pending = BytesMut::from(&whole[..3]);
        assert_eq!(next_request(&mut pending), Ok(None));
        pending.extend_from_slice(&whole[3..]);
        pending.extend_from_slice(&whole);
        assert_eq!(next_request(&mut pending), Ok(Some(request.clone())));
        assert_eq!(next_request(&mut pending), Ok(Some(request)));
        assert!(pending.is_empty());
        for bad in [
            &[1u8, 0, 0, 0, 0][..],
            &[0, 0, 1, 0, 1],
            &[0, 0, 0, 0, 1, 0xff],
        ] {
            assert_eq!(next_request(&mut BytesMut::from(bad)), Err(()), "{bad:?}");
        }
    }
}
