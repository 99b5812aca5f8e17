//! Property tests of the HAR import, which reads outside input: no panic on any text,
//! on any HAR whose fields are swapped for odd values, or on any answer and request
//! values; every error names the input. Cases as in `crate::proptests`
//! (`PROPTEST_CASES=100000 cargo test -p loadlab-workload har` runs longer).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{HarOptions, har_to_flow};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases.unwrap_or(256))
    }
}

fn options() -> HarOptions {
    HarOptions {
        source_name: "p.har".to_owned(),
        ..HarOptions::default()
    }
}

/// Odd JSON values to put where a field is expected.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
        Just(json!([])),
        Just(json!({})),
        Just(json!("http://a.test/x/1")),
        Just(json!("2024-05-01T10:00:00Z")),
    ]
}

/// The fields of an entry a swap may hit.
const FIELDS: &[&str] = &[
    "/startedDateTime",
    "/time",
    "/request",
    "/request/method",
    "/request/url",
    "/request/headers",
    "/request/postData",
    "/response",
    "/response/status",
    "/response/headers",
    "/response/content",
    "/response/content/text",
    "/response/content/encoding",
];

fn entry(url: &str, at: &str, answer: &str, sent: &str) -> Value {
    json!({
        "startedDateTime": at,
        "time": 5,
        "request": {
            "method": "POST",
            "url": url,
            "headers": [{"name": "Authorization", "value": sent}, {"name": "X-Odd", "value": sent}],
            "postData": {"mimeType": "application/json", "text": sent}
        },
        "response": {
            "status": 200,
            "headers": [{"name": "X-Token", "value": answer}],
            "content": {"mimeType": "application/json", "text": answer}
        }
    })
}

fn check(text: &str) {
    match har_to_flow(text, &options()) {
        Ok(flow) => {
            toml::from_str::<toml::Table>(&flow.toml)
                .unwrap_or_else(|err| panic!("{err}\n{}", flow.toml));
        }
        Err(err) => assert!(err.to_string().starts_with("p.har"), "{err}"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_gets_an_answer(text in ".{0,200}") {
        check(&text);
    }

    #[test]
    fn any_cut_of_a_har_gets_an_answer(cut in 0usize..400) {
        let har = json!({"log": {"entries": [entry("http://a.test/", "2024-05-01T10:00:00Z", "{}", "x")]}});
        let text = serde_json::to_string_pretty(&har).unwrap();
        let cut = cut.min(text.len());
        check(&text[..cut]);
    }

    #[test]
    fn odd_fields_get_an_answer(field in 0..FIELDS.len(), value in odd_value()) {
        let mut first = entry("http://a.test/login", "2024-05-01T10:00:00Z", "{}", "x");
        let (parent, key) = FIELDS[field].rsplit_once('/').unwrap();
        if let Some(Value::Object(object)) = first.pointer_mut(parent) {
            object.insert(key.to_owned(), value);
        }
        let text = json!({"log": {"entries": [first]}}).to_string();
        check(&text);
    }

    /// Values from answers and in requests of any shape: the proposals never break
    /// the TOML or panic on a character boundary.
    #[test]
    fn any_values_make_a_flow(
        answer in prop_oneof![
            ".{0,40}".prop_map(|s| json!({"token": s, "items": [{"id": 4}]}).to_string()),
            ".{0,40}",
        ],
        sent in ".{0,40}",
        path in "[a-zA-Z0-9/é%._-]{0,20}",
    ) {
        let entries = [
            entry("http://a.test/login", "2024-05-01T10:00:00Z", &answer, "x"),
            entry(&format!("http://a.test/{path}"), "2024-05-01T10:00:01Z", &answer, &sent),
        ];
        check(&json!({"log": {"entries": entries}}).to_string());
    }
}
