//! What an input that is not a HAR file looks like, so the error can say "this is a
//! Postman collection" rather than only "not a HAR file": people export the wrong thing
//! from the right tool often enough.

use serde_json::{Map, Value};

/// What a text that is not JSON looks like, if it is recognisable.
pub(super) fn describe_text(text: &str) -> Option<&'static str> {
    let start = text.trim_start();
    let first_line = start.lines().next().unwrap_or_default();
    if start.is_empty() {
        return Some("an empty file");
    }
    if text.contains("k6/http") || text.contains("from 'k6'") || text.contains("from \"k6\"") {
        return Some("a k6 script (JavaScript)");
    }
    if start.contains("<jmeterTestPlan") {
        return Some("a JMeter test plan (XML)");
    }
    if start.starts_with('<') {
        return Some("XML or HTML");
    }
    if [
        "import ",
        "export ",
        "const ",
        "let ",
        "var ",
        "function ",
        "//",
    ]
    .iter()
    .any(|word| start.starts_with(word))
    {
        return Some("JavaScript");
    }
    if start.starts_with("curl ") {
        return Some("a curl command");
    }
    if looks_like_vegeta_target(first_line) {
        return Some("vegeta targets (give them to `loadlab attack -targets`)");
    }
    if first_line.starts_with("[[") || start.contains("\n[[scenario") {
        return Some("TOML (a scenarios file?)");
    }
    None
}

/// `GET http://...`: the first line of a vegeta http target.
fn looks_like_vegeta_target(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default();
    let url = words.next().unwrap_or_default();
    crate::HTTP_METHODS.contains(&method) && url.contains("://")
}

/// What a JSON document that is not a HAR file looks like.
pub(super) fn describe_json(value: &Value) -> String {
    match value {
        Value::Object(object) => describe_object(object),
        Value::Array(items) => describe_array(items),
        Value::String(_) => "a JSON string".to_owned(),
        Value::Number(_) => "a JSON number".to_owned(),
        Value::Bool(_) => "a JSON boolean".to_owned(),
        Value::Null => "JSON null".to_owned(),
    }
}

fn describe_object(object: &Map<String, Value>) -> String {
    let has = |key: &str| object.contains_key(key);
    let schema = object
        .get("info")
        .and_then(|info| info.get("schema"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema.contains("postman") || (has("info") && has("item")) {
        return "a Postman collection".to_owned();
    }
    if has("__export_format") || object.get("_type").and_then(Value::as_str) == Some("export") {
        return "an Insomnia export".to_owned();
    }
    if has("openapi") || has("swagger") {
        return "an OpenAPI description".to_owned();
    }
    if has("method") && has("url") {
        return "a vegeta JSON target (give it to `loadlab attack -format json`)".to_owned();
    }
    if has("entries") {
        return "the inside of a HAR file's \"log\" (the \"log\" wrapper is missing)".to_owned();
    }
    let keys: Vec<&str> = object.keys().take(5).map(String::as_str).collect();
    if keys.is_empty() {
        "an empty JSON object".to_owned()
    } else {
        format!("a JSON object with keys {}", keys.join(", "))
    }
}

fn describe_array(items: &[Value]) -> String {
    let first = items.first().and_then(Value::as_object);
    if first.is_some_and(|o| o.contains_key("route")) {
        "a simulator recipe (give it to `loadlab simulate`)".to_owned()
    } else {
        "a JSON array".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_texts_that_are_not_json() {
        let rows: &[(&str, Option<&str>)] = &[
            ("", Some("an empty file")),
            ("  \n", Some("an empty file")),
            (
                "import http from 'k6/http';\nexport default function () {}",
                Some("a k6 script (JavaScript)"),
            ),
            (
                "<?xml version=\"1.0\"?>\n<jmeterTestPlan>",
                Some("a JMeter test plan (XML)"),
            ),
            ("<html></html>", Some("XML or HTML")),
            ("const x = 1;", Some("JavaScript")),
            ("curl -X POST http://a/", Some("a curl command")),
            (
                "GET http://127.0.0.1:8080/\nX: y",
                Some("vegeta targets (give them to `loadlab attack -targets`)"),
            ),
            (
                "[[scenario]]\nname = \"a\"",
                Some("TOML (a scenarios file?)"),
            ),
            ("hello", None),
            ("GET /relative", None),
        ];
        for (text, want) in rows {
            assert_eq!(describe_text(text), *want, "{text:?}");
        }
    }

    #[test]
    fn names_json_that_is_not_a_har() {
        let rows: &[(&str, &str)] = &[
            (
                r#"{"info": {"_postman_id": "x", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}, "item": []}"#,
                "a Postman collection",
            ),
            (r#"{"info": {}, "item": []}"#, "a Postman collection"),
            (
                r#"{"_type": "export", "resources": []}"#,
                "an Insomnia export",
            ),
            (r#"{"openapi": "3.0.0"}"#, "an OpenAPI description"),
            (
                r#"{"method": "GET", "url": "http://a/"}"#,
                "a vegeta JSON target",
            ),
            (
                r#"{"version": "1.2", "entries": []}"#,
                "the \"log\" wrapper is missing",
            ),
            (r#"[{"route": "/a"}]"#, "a simulator recipe"),
            ("[1, 2]", "a JSON array"),
            ("{}", "an empty JSON object"),
            (r#"{"a": 1, "b": 2}"#, "a JSON object with keys a, b"),
            ("\"text\"", "a JSON string"),
            ("3", "a JSON number"),
            ("null", "JSON null"),
        ];
        for (text, want) in rows {
            let value: Value = serde_json::from_str(text).unwrap();
            let got = describe_json(&value);
            assert!(got.contains(want), "{text}: {got}");
        }
    }
}
