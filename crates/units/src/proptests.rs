//! Property tests of the unit parsers: any text is an error or a value, never a panic,
//! and what we print parses back to the same value.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p loadlab-units
//! proptest` runs longer. Failures are not persisted: a case found becomes a table row
//! beside the parser instead.

use std::time::Duration;

use proptest::prelude::*;

use crate::{GoDuration, Rate, parse_duration, parse_size};

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

/// Text from the grammar's own alphabet, so cases reach the unit and fraction logic.
fn unit_text() -> impl Strategy<Value = String> {
    "[ +\\-0-9.,/a-zµμ]{0,24}|(inf|infinity|NaN)|[0-9]{0,40}(\\.[0-9]{0,40})?(ns|us|µs|μs|ms|s|m|h|b|kb|mib|gb){0,3}"
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_duration_never_panics(text in unit_text()) {
        let _ = parse_duration(&text);
    }

    #[test]
    fn proptest_duration_error_quotes_input(text in unit_text()) {
        if let Err(err) = parse_duration(&text) {
            prop_assert!(err.to_string().contains(&format!("{text:?}")), "{err}");
        }
    }

    #[test]
    fn proptest_go_duration_round_trips(ns in any::<u64>()) {
        let printed = GoDuration(Duration::from_nanos(ns)).to_string();
        prop_assert_eq!(parse_duration(&printed), Ok(Duration::from_nanos(ns)), "{}", printed);
    }

    #[test]
    fn proptest_rate_never_panics(text in unit_text()) {
        if let Ok(rate) = Rate::parse(&text) {
            prop_assert!(rate.count >= 0.0 && rate.count.is_finite());
        }
    }

    #[test]
    fn proptest_rate_round_trips(count in 0.0..1e12f64, per_ns in 1u64..u64::MAX) {
        let rate = Rate { count, per: Duration::from_nanos(per_ns) };
        prop_assert_eq!(Rate::parse(&rate.to_string()), Ok(rate));
    }

    #[test]
    fn proptest_size_never_panics(text in unit_text()) {
        let _ = parse_size(&text);
    }

    #[test]
    fn proptest_size_round_trips(bytes in 0u64..(1 << 53)) {
        prop_assert_eq!(parse_size(&bytes.to_string()), Ok(bytes));
        prop_assert_eq!(parse_size(&format!("{bytes}b")), Ok(bytes));
    }
}
