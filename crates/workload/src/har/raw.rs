//! A HAR file as serde reads it, in one pass and without a DOM: only the members the
//! import uses, their strings borrowed from the text where they hold no escape, every
//! other member skipped without being built.
//!
//! Each member is kept as [`Found`]: the type the import wants, or what stood there
//! instead (`null`, `7`, `an array`), so `read` can check the fields in its own order
//! and name the first wrong one. Unknown members are skipped with [`Skip`], which walks
//! them through serde_json's own recursion, so its depth limit holds everywhere
//! (serde's `IgnoredAny` skips iteratively: a 10,000-deep member would pass).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A member's value: what the import wants, `null`, or a description of what else
/// stood there, for the error.
#[derive(Debug)]
pub(super) enum Found<T> {
    Is(T),
    Null,
    /// `true`, `7`, `"200"`, `a string` (a long one), `an array`, `an object`.
    Other(String),
}

/// A member: `None` when the object has none.
pub(super) type Member<T> = Option<Found<T>>;

impl<T> Found<T> {
    /// The value when it is of the wanted type.
    pub fn ok(self) -> Option<T> {
        match self {
            Found::Is(value) => Some(value),
            Found::Null | Found::Other(_) => None,
        }
    }
}

/// What a wrong value was, as errors show it.
pub(super) fn describe<T>(found: &Found<T>) -> &str {
    match found {
        Found::Is(_) => "the wanted type",
        Found::Null => "null",
        Found::Other(text) => text,
    }
}

/// What reads a member's value: which JSON values it takes. Each `from_*` returns `None`
/// for a value of another kind (a map or sequence is then skipped). A type reads
/// itself ([`Want`], through `PhantomData`); a reader with state is a value of its own
/// (the entries, each checked as soon as it is read, so no tree of them is built).
pub(super) trait Reader<'de>: Sized {
    type Out;
    fn read_str(self, _text: Cow<'de, str>) -> Option<Self::Out> {
        None
    }
    fn read_f64(self, _number: f64) -> Option<Self::Out> {
        None
    }
    fn read_bool(self, _yes: bool) -> Option<Self::Out> {
        None
    }
    fn read_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Self::Out>, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(None)
    }
    fn read_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Self::Out>, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(None)
    }
}

/// A type a member may be wanted as: which JSON values it takes, as [`Reader`]'s.
pub(super) trait Want<'de>: Sized {
    fn from_str(_text: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn from_f64(_number: f64) -> Option<Self> {
        None
    }
    fn from_bool(_yes: bool) -> Option<Self> {
        None
    }
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(None)
    }
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(None)
    }
}

impl<'de, T: Want<'de>> Reader<'de> for PhantomData<T> {
    type Out = T;
    fn read_str(self, text: Cow<'de, str>) -> Option<T> {
        T::from_str(text)
    }
    fn read_f64(self, number: f64) -> Option<T> {
        T::from_f64(number)
    }
    fn read_bool(self, yes: bool) -> Option<T> {
        T::from_bool(yes)
    }
    fn read_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
        T::from_map(map)
    }
    fn read_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<T>, A::Error> {
        T::from_seq(seq)
    }
}

impl<'de> Want<'de> for Cow<'de, str> {
    fn from_str(text: Cow<'de, str>) -> Option<Self> {
        Some(text)
    }
}

impl Want<'_> for f64 {
    fn from_f64(number: f64) -> Option<Self> {
        Some(number)
    }
}

/// Chrome's `_fromCache`: `"memory"`, `"disk"` or a boolean.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flag(pub bool);

impl<'de> Want<'de> for Flag {
    fn from_str(text: Cow<'de, str>) -> Option<Self> {
        Some(Flag(!text.is_empty()))
    }
    fn from_bool(yes: bool) -> Option<Self> {
        Some(Flag(yes))
    }
}

/// A JSON array of `T`s.
#[derive(Debug)]
pub(super) struct List<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Want<'de> for List<T> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Some(List(items)))
    }
}

/// A JSON object read into `T`'s members.
#[derive(Debug, Default)]
pub(super) struct Obj<T>(pub T);

/// A struct of members: `member` reads the value of the one named `key`, or skips it.
pub(super) trait Members<'de> {
    fn member<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

impl<'de, T: Members<'de> + Default> Want<'de> for Obj<T> {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        Ok(Fill(T::default()).read_map(map)?.map(Obj))
    }
}

/// A JSON object read into the members a value holds (one with state, where [`Obj`]
/// starts from `Default`).
pub(super) struct Fill<T>(pub T);

impl<'de, T: Members<'de>> Reader<'de> for Fill<T> {
    type Out = T;
    fn read_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut members = self.0;
        while let Some(Key(key)) = map.next_key()? {
            members.member(&key, &mut map)?;
        }
        Ok(Some(members))
    }
}

/// Reads a member with a [`Reader`] value, as [`Found`] of what it reads.
pub(super) struct FoundSeed<R>(pub R);

impl<'de, R: Reader<'de>> DeserializeSeed<'de> for FoundSeed<R> {
    type Value = Found<R::Out>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(FoundVisitor(self.0))
    }
}

/// An object's key, borrowed when it holds no escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Found::<Cow<'de, str>>::deserialize(deserializer).map(|found| match found {
            Found::Is(key) => Key(key),
            // serde_json's keys are strings; another format's are not read here.
            Found::Null | Found::Other(_) => Key(Cow::Borrowed("")),
        })
    }
}

impl<'de, T: Want<'de>> Deserialize<'de> for Found<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        FoundSeed(PhantomData::<T>).deserialize(deserializer)
    }
}

struct FoundVisitor<R>(R);

fn or_other<T>(value: Option<T>, describe: impl FnOnce() -> String) -> Found<T> {
    match value {
        Some(value) => Found::Is(value),
        None => Found::Other(describe()),
    }
}

/// A string as errors show it: quoted when short.
fn describe_str(text: &str) -> String {
    if text.chars().count() <= 40 {
        format!("{text:?}")
    } else {
        "a string".to_owned()
    }
}

/// A number as serde_json writes it (`1e300`, not 301 digits).
fn describe_f64(number: f64) -> String {
    serde_json::Number::from_f64(number).map_or_else(|| number.to_string(), |n| n.to_string())
}

impl<'de, R: Reader<'de>> Visitor<'de> for FoundVisitor<R> {
    type Value = Found<R::Out>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Found::Null)
    }

    fn visit_bool<E>(self, yes: bool) -> Result<Self::Value, E> {
        Ok(or_other(self.0.read_bool(yes), || yes.to_string()))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Self::Value, E> {
        Ok(or_other(self.0.read_f64(number as f64), || {
            number.to_string()
        }))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Self::Value, E> {
        Ok(or_other(self.0.read_f64(number as f64), || {
            number.to_string()
        }))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Self::Value, E> {
        Ok(or_other(self.0.read_f64(number), || describe_f64(number)))
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(or_other(self.0.read_str(Cow::Borrowed(text)), || {
            describe_str(text)
        }))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(or_other(
            self.0.read_str(Cow::Owned(text.to_owned())),
            || describe_str(text),
        ))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(or_other(self.0.read_map(map)?, || "an object".to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Ok(or_other(self.0.read_seq(seq)?, || "an array".to_owned()))
    }
}

/// Any JSON value, walked and dropped (see the module docs for why not `IgnoredAny`).
pub(super) struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// Reads one member into `slot`, or skips a member the import does not use.
pub(super) fn read_into<'de, A: MapAccess<'de>, T: Want<'de>>(
    slot: &mut Member<T>,
    map: &mut A,
) -> Result<(), A::Error> {
    *slot = Some(map.next_value()?);
    Ok(())
}

/// Skips the value of a member the import does not use.
pub(super) fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<Skip>().map(|_| ())
}
