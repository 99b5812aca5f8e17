//! [`Fields`]: one JSON object of a recipe read key by key, each mistake named by its
//! path (`recipe[1].stages[0].latency`). Shared by the recipe parser and its extensions
//! (gRPC routes), which is why it is not inside `recipe`.

use serde_json::{Map, Value};

use crate::error::Invalid;

/// Fields of one JSON object, with `null` treated as absent (recipes exported by
/// origin_simulator carry `"body": null`).
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    pub path: String,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(value: &'a Value, path: String, allowed: &[&str]) -> Result<Self, Invalid> {
        let Value::Object(map) = value else {
            return Err(Invalid::new(
                or_top(&path),
                format!("expected an object, got {}", kind(value)),
            ));
        };
        if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(Invalid::new(
                join(&path, key),
                format!("unknown field (expected one of {})", allowed.join(", ")),
            ));
        }
        Ok(Self { map, path })
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(crate) fn err(&self, key: &str, message: impl Into<String>) -> Invalid {
        Invalid::new(self.field(key), message)
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<&'a str>, Invalid> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.err(key, format!("expected a string, got {}", kind(other)))),
        }
    }

    pub(crate) fn count(&self, key: &str, default: usize) -> Result<usize, Invalid> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n <= 1_000_000)
                .map(|n| n as usize)
                .ok_or_else(|| {
                    self.err(
                        key,
                        format!("expected a whole number from 0 to 1000000, got {v}"),
                    )
                }),
        }
    }

    pub(crate) fn parsed<T>(
        &self,
        key: &str,
        parse: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<Option<T>, Invalid> {
        self.get(key)
            .map(|v| parse(v).map_err(|m| self.err(key, m)))
            .transpose()
    }
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub(crate) fn or_top(path: &str) -> &str {
    if path.is_empty() { "recipe" } else { path }
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
