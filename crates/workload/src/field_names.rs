//! The keys a fields struct takes, read from serde's own list of the struct's fields,
//! so a table that mixes several structs' keys (a plan's `[load]`: attack keys, run
//! keys and its own) is split without writing the lists a second time.

use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, Visitor};

use crate::{AttackFields, RunFields};

impl AttackFields {
    /// Every key of a scenario table (and of `attack`'s per-attack flags).
    pub fn keys() -> &'static [&'static str] {
        field_names::<AttackFields>()
    }
}

impl RunFields {
    /// Every run-wide key (`attack`'s run-wide flags, a plan's `[load]`).
    pub fn keys() -> &'static [&'static str] {
        field_names::<RunFields>()
    }
}

/// The field names serde's derive hands to `deserialize_struct` for `T`.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut names: &'static [&'static str] = &[];
    // The probe always fails: it only listens for the names.
    let _ = T::deserialize(Probe(&mut names));
    names
}

/// A deserializer that records the field names of the struct asked for.
struct Probe<'a>(&'a mut &'static [&'static str]);

#[derive(Debug)]
struct Listened;

impl fmt::Display for Listened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field names read")
    }
}

impl std::error::Error for Listened {}

impl serde::de::Error for Listened {
    fn custom<T: fmt::Display>(_: T) -> Listened {
        Listened
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Listened;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Listened> {
        *self.0 = fields;
        Err(Listened)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Listened> {
        Err(Listened)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_key_and_only_keys() {
        let attack = AttackFields::keys();
        assert!(attack.contains(&"targets_file") && attack.contains(&"max_body"));
        assert!(!attack.contains(&"base_url"), "set by callers, not written");
        let run = RunFields::keys();
        assert!(run.contains(&"threads") && run.contains(&"monitor_interval"));
        // Each list is exactly what its struct accepts: a table of every key parses.
        for (keys, parse) in [
            (
                attack,
                (|t: toml::Table| t.try_into::<AttackFields>().map(drop)) as fn(_) -> _,
            ),
            (run, |t: toml::Table| t.try_into::<RunFields>().map(drop)),
        ] {
            for key in keys {
                let table: toml::Table = toml::from_str(&format!("{key} = {{}}")).unwrap();
                // An empty table is a wrong value for most keys (and right for a
                // table such as `replay`): either way, never an unknown one.
                if let Err(err) = parse(table) {
                    let err = err.to_string();
                    assert!(!err.contains("unknown field"), "{key}: {err}");
                }
            }
        }
        assert!(
            attack.iter().all(|key| !run.contains(key)),
            "no key means two things"
        );
    }
}
