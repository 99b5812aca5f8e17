//! A flow step that calls a gRPC method: `request = "GRPC HOST:PORT pkg.Service/Method"`
//! with metadata lines, its message's JSON in `body` (or an `@file` line), its types
//! from the step's `proto`, the scenario's, or the server's reflection. The call is a
//! [`Target`] as an attack's gRPC targets are (placeholders only in string fields'
//! values: [`crate::GrpcMessage`]); its answer's messages are decoded to JSON
//! ([`GrpcCall::decode`]) for the step's checks and extractions.

use std::path::Path;
use std::sync::Arc;

use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};

use crate::grpc::{self, ProtoSet, TypeSource};
use crate::step_fields::StepFields;
use crate::target::{Header, Target, check_header_with};
use crate::{Origin, WorkloadError};

/// What a gRPC step's answer is read as.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// The method's answer type.
    pub output: MessageDescriptor,
    /// The server answers with a stream of messages (`returns (stream ...)`).
    pub server_streaming: bool,
}

/// Why a gRPC step's answer could not be read as its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeFailure {
    /// A message goes past the bytes kept (`check_body_limit`).
    Cut,
    /// A message is compressed in an encoding we do not read (only gzip is offered),
    /// or its answer named none (`grpc-encoding`).
    Compressed,
    /// A gzip message does not inflate (or inflates past the bytes kept).
    Inflate,
    /// The bytes are not the method's answer type.
    Malformed,
}

/// A gzip message may inflate to at least this, whatever little was kept of it.
const MIN_INFLATED_BYTES: usize = 64 << 10;

/// `bytes` gunzipped, at most `limit` bytes of it (a small message that inflates
/// without end is a failure, not memory spent).
fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, DecodeFailure> {
    use std::io::Read;
    let mut out = Vec::new();
    let read = flate2::read::GzDecoder::new(bytes)
        .take(limit as u64 + 1)
        .read_to_end(&mut out);
    match read {
        Ok(n) if n <= limit => Ok(out),
        _ => Err(DecodeFailure::Inflate),
    }
}

/// The rest of a `GRPC HOST:PORT method` request line, if `first` is one.
pub(super) fn grpc_line(first: &str) -> Option<&str> {
    first
        .strip_prefix(grpc::GRPC_VERB)
        .filter(|rest| rest.starts_with([' ', '\t']))
}

/// A gRPC step's call: `rest` of its request line, then `lines` (metadata, or an
/// `@file` / `{` line holding the message's JSON), the message in `body` otherwise.
#[allow(clippy::too_many_arguments)]
pub(super) fn parse_call_step<'a>(
    rest: &str,
    lines: impl Iterator<Item = &'a str>,
    fields: &StepFields,
    headers: &[Header],
    known: &[String],
    origin: &Origin,
    read_body: &dyn Fn(&Path) -> std::io::Result<Vec<u8>>,
    types: &mut TypeSource,
) -> Result<(Target, GrpcCall), String> {
    let mut own = step_types(fields, origin)?;
    let types = own.as_mut().unwrap_or(types);
    let (mut target, method) =
        grpc::parse_call(rest, types, headers).map_err(|r| format!("request: {r}"))?;
    let mut json = None;
    for line in lines {
        if let Some(path) = line.strip_prefix('@') {
            let path = origin.path(path.trim());
            let bytes = read_body(&path)
                .map_err(|e| format!("request: message file {}: {e}", path.display()))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                format!("request: message file {} is not UTF-8 text", path.display())
            })?;
            json = match json {
                Some(before) if method.is_client_streaming() => Some(format!("{before}\n{text}")),
                _ => Some(text),
            };
            continue;
        }
        if line.starts_with('{') {
            // A client stream's lines are its messages, in order; a unary call's, the last.
            json = match json {
                Some(before) if method.is_client_streaming() => Some(format!("{before}\n{line}")),
                _ => Some(line.to_owned()),
            };
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("request: {line:?}: want a metadata line name: value"))?;
        let (name, value) = (name.trim(), value.trim());
        check_header_with(name, value, Some(known)).map_err(|r| format!("request: {r}"))?;
        let header = grpc::metadata(Header {
            name: name.to_owned(),
            value: value.to_owned(),
        })
        .map_err(|r| format!("request: {r}"))?;
        target.headers.push(header);
    }
    let json = match (json, fields.body.as_deref()) {
        (Some(_), Some(_)) => {
            return Err("body: the request has its message on a line already".to_owned());
        }
        (Some(json), None) => json,
        (None, Some(body)) => body.to_owned(),
        (None, None) => "{}".to_owned(),
    };
    if method.is_client_streaming() {
        // Each non-blank line one message of the stream, in order.
        let mut plain = Vec::new();
        for line in json.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let input = method.input();
            grpc::add_stream_message(
                &mut target,
                &mut plain,
                &input,
                line,
                Some(known),
                types.gzip,
            )
            .map_err(|r| format!("body: {r}"))?;
        }
    } else {
        let (body, message) = grpc::message_body(&method.input(), &json, Some(known), types.gzip)
            .map_err(|r| format!("body: {r}"))?;
        target.body = body;
        target.grpc_message = message;
    }
    let call = GrpcCall {
        output: method.output(),
        server_streaming: method.is_server_streaming(),
    };
    Ok((target, call))
}

/// The step's own `.proto` files, compiled, when it names some.
fn step_types(fields: &StepFields, origin: &Origin) -> Result<Option<TypeSource>, String> {
    let Some(files) = &fields.proto else {
        if fields.import_path.is_some() {
            return Err(
                "import_path: is where a .proto's imports are looked up: give the step's proto too"
                    .to_owned(),
            );
        }
        return Ok(None);
    };
    let paths = |list: &[String]| list.iter().map(|f| origin.path(f)).collect::<Vec<_>>();
    let imports = paths(fields.import_path.as_deref().unwrap_or_default());
    let set = ProtoSet::compile(&paths(files), &imports)
        .map_err(|e: WorkloadError| format!("proto: {e}"))?;
    Ok(Some(TypeSource::new(Some(Arc::new(set)), None)))
}

/// A step that is no gRPC call but names `.proto` files: named, so it is not ignored.
pub(super) fn refuse_proto_keys(fields: &StepFields) -> Result<(), String> {
    if fields.proto.is_some() || fields.import_path.is_some() {
        return Err("proto: only a GRPC step (request = \"GRPC HOST:PORT ...\") takes it".into());
    }
    Ok(())
}

impl GrpcCall {
    /// The answer's messages, gRPC frames in `body` (`cut`: more came than was kept),
    /// as JSON into `out`: a unary call's message (nothing when none came), a server
    /// stream's as an array. Field names as the `.proto` writes them, every field
    /// (defaults too), so a check or extraction finds what the `.proto` says. A
    /// compressed message is inflated when the answer's `encoding` (`grpc-encoding`)
    /// is gzip, to at most the bytes kept or 64 KiB, whichever is more.
    pub fn decode(
        &self,
        body: &[u8],
        cut: bool,
        encoding: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeFailure> {
        let options = SerializeOptions::new()
            .skip_default_fields(false)
            .use_proto_field_name(true);
        let short = if cut {
            DecodeFailure::Cut
        } else {
            DecodeFailure::Malformed
        };
        let mut rest = body;
        let mut count = 0;
        if self.server_streaming {
            out.push(b'[');
        }
        while !rest.is_empty() && (self.server_streaming || count == 0) {
            let (&[flag, a, b, c, d], after) = rest.split_first_chunk::<5>().ok_or(short)?;
            let len = u32::from_be_bytes([a, b, c, d]) as usize;
            let bytes = after.get(..len).ok_or(short)?;
            let inflated;
            let bytes = match (flag, encoding) {
                (0, _) => bytes,
                (_, Some(b"gzip")) => {
                    inflated = gunzip(bytes, body.len().max(MIN_INFLATED_BYTES))?;
                    &inflated[..]
                }
                _ => return Err(DecodeFailure::Compressed),
            };
            let message = DynamicMessage::decode(self.output.clone(), bytes)
                .map_err(|_| DecodeFailure::Malformed)?;
            if count > 0 {
                out.push(b',');
            }
            let mut json = serde_json::Serializer::new(&mut *out);
            message
                .serialize_with_options(&mut json, &options)
                .map_err(|_| DecodeFailure::Malformed)?;
            count += 1;
            rest = &after[len..];
        }
        if self.server_streaming {
            out.push(b']');
        }
        Ok(())
    }

    /// Why the answer of step `step` was not read, for its error.
    pub fn failure_text(&self, step: &str, failure: DecodeFailure) -> String {
        let output = self.output.full_name();
        match failure {
            DecodeFailure::Cut => format!(
                "step {step:?}: the answer's {output} goes past check_body_limit: raise it to read the answer"
            ),
            DecodeFailure::Compressed => format!(
                "step {step:?}: the answer's {output} is compressed in an encoding we do not read (its grpc-encoding is not gzip)"
            ),
            DecodeFailure::Inflate => format!(
                "step {step:?}: the answer's {output} does not inflate as gzip (or inflates past check_body_limit)"
            ),
            DecodeFailure::Malformed => {
                format!("step {step:?}: the answer is not a {output} message")
            }
        }
    }
}
