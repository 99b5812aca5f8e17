//! [`GrpcMessage`]: a gRPC message whose JSON has placeholders, split once at start so
//! that a call renders it without parsing JSON or encoding through the descriptor: the
//! protobuf bytes around each placeholder are kept as they are, and a call writes each
//! placeholder's value as a string field's bytes, then the lengths of the messages that
//! hold it (a length prefix is the one thing a value changes).
//!
//! A placeholder may stand only in a string field's value (all of it or part of it:
//! `"Bearer {{token}}"`): its value, whatever it holds (quotes, braces, CR LF), is that
//! field's bytes and nothing else, so it never changes the message's shape (the issue
//! 41 rule in docs/FLOWS.md). Anywhere else (a number, an enum, bytes, a key) the
//! message is refused at start, naming the field.

use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor};
use serde::de::DeserializeSeed;
use serde_json::Value;

use crate::template::{RenderContext, Template};

/// What a placeholder's string holds while the message is encoded once: a text no JSON
/// author writes (control characters around it), numbered.
fn marker(slot: usize) -> String {
    format!("\u{1}loadlab-slot-{slot}\u{1}")
}

/// A gRPC message with placeholders, split at its string fields that hold them; or
/// a streaming call's messages, one frame each, any of them with placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcMessage {
    /// Each message's nodes, rendered behind its own prefix.
    frames: Vec<Vec<Node>>,
    /// The placeholders' texts as written (`Bearer {{token}}`), by slot.
    texts: Vec<String>,
    /// The same, parsed.
    templates: Vec<Template>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// Bytes as encoded once (keys, fields without placeholders).
    Literal(Vec<u8>),
    /// A string field's bytes: template `slot` rendered, behind its length.
    Slot(usize),
    /// An embedded message holding a slot, behind its length.
    Nested(Vec<Node>),
}

impl GrpcMessage {
    /// `json` as `input`'s message when it has placeholders (`None` when it has none:
    /// encode it once); `variables` are a flow's. The reason of a message that does not
    /// fit names the field.
    pub fn parse(
        input: &MessageDescriptor,
        json: &str,
        variables: Option<&[String]>,
    ) -> Result<Option<GrpcMessage>, String> {
        let mut value: Value = serde_json::from_str(json)
            .map_err(|e| format!("message {}: {e}", input.full_name()))?;
        let mut texts = Vec::new();
        mark(&mut value, &mut texts);
        if texts.is_empty() {
            return Ok(None);
        }
        let templates = texts
            .iter()
            .map(|t| Template::parse_with(t, variables))
            .collect::<Result<Vec<_>, _>>()?;
        let bytes = encode(input, &value)?;
        let mut found = vec![false; texts.len()];
        let nodes = split(&bytes, input, &mut found)?;
        if let Some(slot) = found.iter().position(|f| !f) {
            return Err(format!(
                "message {}: {:?} is not a string field's value: placeholders go only in string fields",
                input.full_name(),
                texts[slot]
            ));
        }
        Ok(Some(GrpcMessage {
            frames: vec![nodes],
            texts,
            templates,
        }))
    }

    /// A message without placeholders, as encoded once (`payload`: no prefix).
    pub fn literal(payload: &[u8]) -> GrpcMessage {
        GrpcMessage {
            frames: vec![vec![Node::Literal(payload.to_vec())]],
            texts: Vec::new(),
            templates: Vec::new(),
        }
    }

    /// Puts `next`'s messages behind these (a streaming call's), its placeholders
    /// numbered after these.
    pub fn append(&mut self, next: GrpcMessage) {
        let offset = self.texts.len();
        let shift = |nodes: Vec<Node>| nodes.into_iter().map(|n| n.shifted(offset)).collect();
        self.frames.extend(next.frames.into_iter().map(shift));
        self.texts.extend(next.texts);
        self.templates.extend(next.templates);
    }

    /// The placeholders' texts as written.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.texts.iter().map(String::as_str)
    }

    /// The placeholders, parsed.
    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// Appends the call's frames to `out`: each message's 5-byte prefix and the
    /// message with each placeholder rendered. Allocates nothing once `out` has grown.
    pub fn render(&self, context: &RenderContext<'_>, out: &mut Vec<u8>) {
        for nodes in &self.frames {
            let start = out.len();
            out.extend_from_slice(&[0; 5]);
            self.render_nodes(nodes, context, out);
            let len = (out.len() - start - 5) as u32;
            out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn render_nodes(&self, nodes: &[Node], context: &RenderContext<'_>, out: &mut Vec<u8>) {
        for node in nodes {
            match node {
                Node::Literal(bytes) => out.extend_from_slice(bytes),
                Node::Slot(slot) => {
                    let at = out.len();
                    self.templates[*slot].render(context, out);
                    put_length_before(out, at);
                }
                Node::Nested(children) => {
                    let at = out.len();
                    self.render_nodes(children, context, out);
                    put_length_before(out, at);
                }
            }
        }
    }
}

impl Node {
    /// This node with its slots numbered `offset` further.
    fn shifted(self, offset: usize) -> Node {
        match self {
            Node::Slot(slot) => Node::Slot(slot + offset),
            Node::Nested(children) => {
                Node::Nested(children.into_iter().map(|n| n.shifted(offset)).collect())
            }
            literal @ Node::Literal(_) => literal,
        }
    }
}

/// Replaces every string of `value` holding `{{` with a numbered marker, keeping it.
fn mark(value: &mut Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) if text.contains("{{") => {
            let slot = texts.len();
            texts.push(std::mem::replace(text, marker(slot)));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mark(v, texts)),
        Value::Object(fields) => fields.values_mut().for_each(|v| mark(v, texts)),
        _ => {}
    }
}

fn encode(input: &MessageDescriptor, value: &Value) -> Result<Vec<u8>, String> {
    let mut track = serde_path_to_error::Track::new();
    let message: DynamicMessage = input
        .clone()
        .deserialize(serde_path_to_error::Deserializer::new(value, &mut track))
        .map_err(|err| {
            let path = track.path().to_string();
            format!(
                "message {} at {path}: {err} (placeholders go only in string fields)",
                input.full_name()
            )
        })?;
    Ok(message.encode_to_vec())
}

/// The wire bytes of one `message` as nodes: a string field holding a marker is a
/// slot, an embedded message holding one is nested, the rest is literal.
fn split(
    bytes: &[u8],
    message: &MessageDescriptor,
    found: &mut [bool],
) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    let mut literal = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let key_at = at;
        let key = varint(bytes, &mut at)?;
        let (number, wire) = ((key >> 3) as u32, key & 7);
        let skip = match wire {
            0 => varint(bytes, &mut at).map(|_| 0)?,
            1 => 8,
            5 => 4,
            2 => {
                let len = varint(bytes, &mut at)? as usize;
                let body = bytes.get(at..at + len).ok_or("message cut short")?;
                let kind = message.get_field(number).map(|f| f.kind());
                let node = match kind {
                    Some(Kind::String) => slot_of(body).map(|slot| {
                        found[slot] = true;
                        Node::Slot(slot)
                    }),
                    Some(Kind::Message(inner)) => {
                        let children = split(body, &inner, found)?;
                        let holds = children.iter().any(|c| !matches!(c, Node::Literal(_)));
                        holds.then_some(Node::Nested(children))
                    }
                    _ => None,
                };
                if let Some(node) = node {
                    literal.extend_from_slice(&bytes[key_at..at - length_bytes(len)]);
                    nodes.push(Node::Literal(std::mem::take(&mut literal)));
                    nodes.push(node);
                    at += len;
                    continue;
                }
                len
            }
            _ => return Err(format!("field {number}: groups cannot hold placeholders")),
        };
        at += skip;
        literal.extend_from_slice(bytes.get(key_at..at).ok_or("message cut short")?);
    }
    if !literal.is_empty() {
        nodes.push(Node::Literal(literal));
    }
    Ok(nodes)
}

/// The slot whose marker `body` is.
fn slot_of(body: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(body).ok()?;
    let number = text
        .strip_prefix("\u{1}loadlab-slot-")?
        .strip_suffix('\u{1}')?;
    number.parse().ok()
}

fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or("message cut short")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a varint over 10 bytes".to_owned())
}

/// How many bytes the varint of `len` takes.
fn length_bytes(len: usize) -> usize {
    let bits = usize::BITS - len.leading_zeros();
    (bits.max(1) as usize).div_ceil(7)
}

/// Inserts the varint length of `out[at..]` at `at` (a rotate: no allocation).
fn put_length_before(out: &mut Vec<u8>, at: usize) {
    let mut len = (out.len() - at) as u64;
    let mut digits = 0;
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        out.push(if len > 0 { byte | 0x80 } else { byte });
        digits += 1;
        if len == 0 {
            break;
        }
    }
    out[at..].rotate_right(digits);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::{ProtoSet, encode_message};

    const PROTO: &str = r#"syntax = "proto3";
package t;
service S { rpc Call (Req) returns (Req); }
message Req {
  string name = 1;
  int32 n = 2;
  Inner inner = 3;
  repeated string tags = 4;
  map<string, string> labels = 5;
  bytes blob = 6;
  Kind kind = 7;
}
message Inner { string token = 1; Inner deeper = 2; int64 big = 3; }
enum Kind { A = 0; B = 1; }
"#;

    fn input() -> (tempfile::TempDir, MessageDescriptor) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.proto");
        std::fs::write(&path, PROTO).unwrap();
        let set = ProtoSet::compile(&[path], &[]).unwrap();
        let input = set.method("t.S/Call").unwrap().input();
        (dir, input)
    }

    /// A template's text with its placeholders as the values `{{seq}}` renders, as JSON
    /// text: what encoding the message per call would send.
    fn rendered_by_hand(json: &str, seq: u64) -> String {
        json.replace("{{seq}}", &seq.to_string())
    }

    #[test]
    fn a_rendered_message_is_the_message_encoded_with_the_values() {
        let (_dir, input) = input();
        let rows = [
            r#"{"name": "user-{{seq}}", "n": 3}"#,
            r#"{"n": 1, "inner": {"token": "Bearer {{seq}}", "big": "9"}, "name": "x"}"#,
            r#"{"inner": {"deeper": {"deeper": {"token": "{{seq}}"}}}, "kind": "B"}"#,
            r#"{"tags": ["a", "{{seq}}", "c"], "labels": {"k": "v{{seq}}"}}"#,
        ];
        let context_of = |seq| RenderContext::plain(1, seq, None);
        for json in rows {
            let message = GrpcMessage::parse(&input, json, None).unwrap().unwrap();
            // Values of 1, 3 and 19 bytes, in messages nested up to three deep.
            for seq in [7, 123, 10u64.pow(18)] {
                let mut out = vec![9];
                message.render(&context_of(seq), &mut out);
                let want = encode_message(&input, &rendered_by_hand(json, seq)).unwrap();
                assert_eq!(out[1..], want, "{json} at {seq}");
            }
        }
        let long = r#"{"inner": {"token": "{{rand.alnum 300}}"}}"#;
        let message = GrpcMessage::parse(&input, long, None).unwrap().unwrap();
        let mut out = Vec::new();
        message.render(&context_of(1), &mut out);
        assert_eq!(
            out.len(),
            5 + 1 + 2 + 1 + 2 + 300,
            "two-byte lengths, nested"
        );
    }

    #[test]
    fn a_streams_messages_render_each_behind_its_prefix_their_slots_numbered_in_order() {
        let (_dir, input) = input();
        let first = r#"{"name": "a-{{seq}}"}"#;
        let literal = r#"{"n": 4}"#;
        let last = r#"{"inner": {"token": "{{seq}}"}, "name": "{{seq}}x"}"#;
        let mut stream = GrpcMessage::parse(&input, first, None).unwrap().unwrap();
        let plain = encode_message(&input, literal).unwrap();
        stream.append(GrpcMessage::literal(&plain[5..]));
        stream.append(GrpcMessage::parse(&input, last, None).unwrap().unwrap());
        assert_eq!(stream.texts().count(), 3);
        for seq in [5, 123_456] {
            let mut out = Vec::new();
            stream.render(&RenderContext::plain(1, seq, None), &mut out);
            let want = [
                encode_message(&input, &rendered_by_hand(first, seq)).unwrap(),
                plain.clone(),
                encode_message(&input, &rendered_by_hand(last, seq)).unwrap(),
            ]
            .concat();
            assert_eq!(out, want, "at {seq}");
        }
    }

    #[test]
    fn a_hostile_value_stays_inside_its_string_field() {
        let (_dir, input) = input();
        let variables = ["token".to_owned()];
        let json = r#"{"inner": {"token": "{{token}}"}, "n": 5}"#;
        let message = GrpcMessage::parse(&input, json, Some(&variables[..]))
            .unwrap()
            .unwrap();
        let hostile = "\r\n\"}, \"n\": 99, {{x}}\u{0}";
        let values = [hostile.as_bytes().to_vec()];
        let context = RenderContext {
            variables: &values,
            ..RenderContext::plain(1, 1, None)
        };
        let mut out = Vec::new();
        message.render(&context, &mut out);
        let decoded = DynamicMessage::decode(input, &out[5..]).unwrap();
        let inner = decoded.get_field_by_name("inner").unwrap();
        let inner = inner.as_message().unwrap();
        assert_eq!(
            inner.get_field_by_name("token").unwrap().as_str(),
            Some(hostile)
        );
        assert_eq!(decoded.get_field_by_name("n").unwrap().as_i32(), Some(5));
    }

    #[test]
    fn placeholders_outside_string_fields_are_refused_by_field() {
        let (_dir, input) = input();
        assert_eq!(
            GrpcMessage::parse(&input, r#"{"name": "x"}"#, None),
            Ok(None)
        );
        let rows = [
            (r#"{"n": "{{seq}}"}"#, "message t.Req at n: "),
            (
                r#"{"inner": {"big": "{{seq}}"}}"#,
                "message t.Req at inner.big: ",
            ),
            (r#"{"kind": "{{seq}}"}"#, "message t.Req at kind: "),
            (r#"{"blob": "{{seq}}"}"#, "message t.Req at blob: "),
            (r#"{"name": "{{nope}}"}"#, "unknown"),
            (r#"{"name": "{{seq}}""#, "message t.Req: EOF"),
        ];
        for (json, want) in rows {
            let err = GrpcMessage::parse(&input, json, None).unwrap_err();
            assert!(err.starts_with(want) || err.contains(want), "{json}: {err}");
        }
        let err = GrpcMessage::parse(&input, r#"{"n": "{{seq}}"}"#, None).unwrap_err();
        assert!(
            err.ends_with("(placeholders go only in string fields)"),
            "{err}"
        );
    }

    #[test]
    fn lengths_are_varints() {
        for len in [0usize, 1, 127, 128, 16_383, 16_384, 1 << 21] {
            let mut out = vec![7u8; len];
            put_length_before(&mut out, 0);
            let mut at = 0;
            assert_eq!(varint(&out, &mut at).unwrap(), len as u64);
            assert_eq!(at, length_bytes(len), "{len}");
            assert_eq!(out.len(), len + at);
        }
    }
}
