//! An answer's JSON body as `extract` reads it: strings and keys borrowed from the
//! body where they hold no escape, only what the extraction takes (strings, integers
//! that fit a u64, arrays, objects), so reading an answer allocates a little per
//! container rather than per string and key.
//!
//! It reads as `serde_json::Value` does, which the extraction was first written
//! against: an object's members in key order (serde_json's `Map` is a `BTreeMap`), a
//! key given twice keeping its last value, a number an integer only when `Value`
//! would call it `is_u64`, and serde_json's own depth limit.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value, as far as the extraction needs it.
#[derive(Debug, PartialEq)]
pub(super) enum Node<'a> {
    Str(Cow<'a, str>),
    /// An integer `serde_json::Value::is_u64` would take.
    Uint(u64),
    Array(Vec<Node<'a>>),
    /// Members sorted by key, each key once.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
    /// `null`, a boolean, a negative or fractional number.
    Other,
}

impl<'a> Node<'a> {
    /// `text` as JSON, or `None` when it is not (or nests deeper than serde_json reads).
    pub fn parse(text: &'a str) -> Option<Node<'a>> {
        serde_json::from_str(text).ok()
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// An object's key, borrowed when it holds no escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Node::deserialize(deserializer)? {
            Node::Str(key) => Ok(Key(key)),
            // serde_json's keys are strings; another format's are not read here.
            _ => Ok(Key(Cow::Borrowed(""))),
        }
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node<'de>, E> {
        Ok(Node::Other)
    }

    fn visit_u64<E>(self, number: u64) -> Result<Node<'de>, E> {
        Ok(Node::Uint(number))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Node<'de>, E> {
        // `Value` keeps a non-negative i64 as an unsigned number.
        Ok(u64::try_from(number).map_or(Node::Other, Node::Uint))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Node<'de>, E> {
        Ok(Node::Other)
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        while let Some((Key(key), value)) = map.next_entry()? {
            members.push((key, value));
        }
        // Stable: members of one key stay in the order given, and the last is kept.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let mut unique: Vec<(Cow<'de, str>, Node<'de>)> = Vec::with_capacity(members.len());
        for member in members {
            match unique.last_mut() {
                Some(last) if last.0 == member.0 => *last = member,
                _ => unique.push(member),
            }
        }
        Ok(Node::Object(unique))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// `node` as a `Value` of what it keeps (others as null), for comparing.
    fn as_value(node: &Node<'_>) -> Value {
        match node {
            Node::Str(text) => Value::String(text.to_string()),
            Node::Uint(number) => Value::from(*number),
            Node::Array(items) => Value::Array(items.iter().map(as_value).collect()),
            Node::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(key, value)| (key.to_string(), as_value(value)))
                    .collect(),
            ),
            Node::Other => Value::Null,
        }
    }

    /// `value` with what a `Node` does not keep as null.
    fn kept(value: &Value) -> Value {
        match value {
            Value::Number(number) if number.is_u64() => value.clone(),
            Value::String(_) => value.clone(),
            Value::Array(items) => Value::Array(items.iter().map(kept).collect()),
            Value::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(key, value)| (key.clone(), kept(value)))
                    .collect(),
            ),
            _ => Value::Null,
        }
    }

    #[test]
    fn reads_as_serde_json_value_does() {
        let rows = [
            r#"{"b": 1, "a": [2, -3, 4.5, 1e3, -0, "x\"y", true, null], "c": {"z": "é", "y": {}}}"#,
            r#"{"k": 1, "k": "later", "j": 18446744073709551615, "i": 18446744073709551616}"#,
            r#"{"a\u0062": "\ud83d\ude00", "ab": 2}"#,
            r#"[{"id": 1}, {"id": "1"}, []]"#,
            r#""just a string""#,
            "7",
            "  {\"x\": 1}  ",
        ];
        for text in rows {
            let node = Node::parse(text).unwrap_or_else(|| panic!("{text}"));
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(as_value(&node), kept(&value), "{text}");
            // Key order too: serde_json's map iterates by key.
            if let (Node::Object(members), Value::Object(map)) = (&node, &value) {
                let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
                let want: Vec<&str> = map.keys().map(String::as_str).collect();
                assert_eq!(keys, want, "{text}");
            }
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for text in ["", "{", "{\"a\": 1} x", "[1,]", "nul", deep.as_str()] {
            assert!(Node::parse(text).is_none(), "{text:?}");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn borrows_strings_without_escapes() {
        let text = r#"{"token": "abc123", "quoted": "a\"b"}"#;
        let Some(Node::Object(members)) = Node::parse(text) else {
            panic!("not an object");
        };
        assert!(matches!(
            members[1],
            (Cow::Borrowed("token"), Node::Str(Cow::Borrowed("abc123")))
        ));
        assert!(matches!(&members[0].1, Node::Str(Cow::Owned(s)) if s == "a\"b"));
    }
}
