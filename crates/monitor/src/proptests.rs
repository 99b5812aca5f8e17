//! Property tests of the Prometheus text parser, which reads whatever an exporter
//! serves: any text is an error naming one of its lines or an exposition, never a
//! panic, and samples written in the format parse back to themselves.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p
//! loadlab-monitor proptest` runs longer. Failures are not persisted: a case found
//! becomes a table row beside the parser instead.

use proptest::prelude::*;

use crate::prom_parse::{Sample, parse};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    let config = ProptestConfig::with_cases(cases.unwrap_or(512));
    ProptestConfig {
        failure_persistence: None,
        ..config
    }
}

/// One line built from the format's pieces, well-formed or nearly.
fn exposition_line() -> impl Strategy<Value = String> {
    let name = "[a-z_:][a-z0-9_:]{0,6}|[0-9.\\-]{0,2}";
    let quoted = "\"([a-z ,={}#]|\\\\[n\\\\\"x]){0,6}\\\\?\"?";
    let label = (name, "[ ]?=?[ ]?", quoted).prop_map(|(n, eq, v)| format!("{n}{eq}{v}"));
    let labels = prop::collection::vec(label, 0..3).prop_map(|l| l.join(","));
    let value = "[-+]?([0-9]{1,4}(\\.[0-9]{0,3})?(e-?[0-9]{1,3})?|Inf|inf|NaN|nan|x)";
    prop_oneof![
        (
            name,
            "(\\{|\\{\"[a-z.]{0,4}\",?)?",
            labels,
            "\\}?",
            " ?",
            value,
            "( -?[0-9]{1,14})?( # .{0,6})?"
        )
            .prop_map(|(n, open, l, close, sp, v, tail)| format!(
                "{n}{open}{l}{close}{sp} {v}{tail}"
            )),
        (
            "# ?(HELP|TYPE|EOF|help|x)",
            name,
            "( (counter|gauge|histogram|summary|untyped|unknown|info|bogus|[ -~\\\\]{0,8}))?",
        )
            .prop_map(|(keyword, n, text)| format!("{keyword} {n}{text}")),
        "[ -~\t\r]{0,16}",
        Just(String::new()),
    ]
}

fn sample() -> impl Strategy<Value = Sample> {
    let label = ("[a-z_][a-z0-9_]{0,5}", "[ -~\n\\\\\"]{0,8}");
    (
        "[a-z_:][a-z0-9_:]{0,8}",
        prop::collection::btree_map(label.0, label.1, 0..4),
        -1e15..1e15f64,
        prop::option::of(any::<i64>()),
    )
        .prop_map(|(name, labels, value, timestamp_ms)| Sample {
            name,
            labels: labels.into_iter().collect(),
            value,
            timestamp_ms,
        })
}

fn write_sample(sample: &Sample) -> String {
    let labels: Vec<String> = sample
        .labels
        .iter()
        .map(|(name, value)| {
            let value = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{name}=\"{value}\"")
        })
        .collect();
    let timestamp = sample
        .timestamp_ms
        .map(|ts| format!(" {ts}"))
        .unwrap_or_default();
    format!(
        "{}{{{}}} {}{timestamp}",
        sample.name,
        labels.join(","),
        sample.value
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_prom_text_never_panics(lines in prop::collection::vec(exposition_line(), 0..8)) {
        let text = lines.join("\n");
        if let Err(err) = parse(&text) {
            prop_assert!(err.line >= 1 && err.line <= text.lines().count(), "{err} in {text:?}");
        }
    }

    #[test]
    fn proptest_prom_arbitrary_text_never_panics(text in "\\PC{0,64}") {
        let _ = parse(&text);
    }

    #[test]
    fn proptest_prom_samples_round_trip(samples in prop::collection::vec(sample(), 0..5)) {
        let text: Vec<String> = samples.iter().map(write_sample).collect();
        let text = text.join("\n");
        let parsed = parse(&text).map_err(|err| TestCaseError::fail(format!("{err} in {text:?}")))?;
        prop_assert_eq!(parsed.samples, samples);
    }
}
