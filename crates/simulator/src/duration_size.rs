//! Durations and byte sizes as origin_simulator recipes spell them (parsing and printing).
//!
//! Durations need a unit (`"100ms"`, `"4s"`); a bare `0` (number or string) is the one
//! unitless value, as in origin_simulator, because a bare `50` was ambiguous there
//! (older recipes meant milliseconds). We also accept `us`/`µs`, `m` and decimals (`1.5s`).
//! Sizes are `b`, `kb`, `mb` with 1024-based multiples, as origin_simulator's.

use std::time::Duration;

/// Longest duration we accept anywhere in a recipe; longer is almost surely a typo and
/// would overflow nanosecond arithmetic in distributions.
pub(crate) const MAX_DURATION_NS: u64 = 24 * 3600 * 1_000_000_000;
/// Largest body we generate or load; keeps a typo (`"400mb"` for `"400kb"`) from eating RAM.
pub(crate) const MAX_SIZE_BYTES: u64 = 256 * 1024 * 1024;

/// Parses `"250ms"`, `"1.5s"`, `"0"`. Errors explain what a valid value looks like.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale_ns: f64 = match unit {
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "" => {
            return Err(format!(
                "bad duration {text:?}: needs a unit (us, ms, s, m), e.g. \"100ms\""
            ));
        }
        _ => {
            return Err(format!(
                "bad duration {text:?}: unknown unit {unit:?} (use us, ms, s, m)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("bad duration {text:?}: {number:?} is not a number"))?;
    let ns = value * scale_ns;
    if !ns.is_finite() || ns > MAX_DURATION_NS as f64 {
        return Err(format!("bad duration {text:?}: longer than 24h"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Reads a JSON duration: a string as [`parse_duration`], or the number `0`.
pub(crate) fn duration_from_json(value: &serde_json::Value) -> Result<Duration, String> {
    match value {
        serde_json::Value::String(text) => parse_duration(text),
        serde_json::Value::Number(n) if n.as_f64() == Some(0.0) => Ok(Duration::ZERO),
        serde_json::Value::Number(n) => Err(format!(
            "bad duration {n}: needs a unit, e.g. \"{n}ms\" (only a bare 0 may omit it)"
        )),
        other => Err(format!(
            "bad duration {other}: expected a string like \"100ms\""
        )),
    }
}

/// Prints a duration in recipe syntax, shortest exact unit first (`100ms`, `1.5s`, `250us`).
pub(crate) fn format_duration(duration: Duration) -> String {
    let ns = duration.as_nanos();
    if ns == 0 {
        "0".to_owned()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{}us", ns as f64 / 1e3)
    }
}

/// Parses `"428kb"`, `"1mb"`, `"512b"` (1024-based).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "b" => 1,
        "kb" => 1024,
        "mb" => 1024 * 1024,
        "" => {
            return Err(format!(
                "bad size {text:?}: needs a unit (b, kb, mb), e.g. \"256kb\""
            ));
        }
        _ => {
            return Err(format!(
                "bad size {text:?}: unknown unit {unit:?} (use b, kb, mb)"
            ));
        }
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("bad size {text:?}: {number:?} is not a whole number"))?;
    match value.checked_mul(scale) {
        Some(bytes) if bytes <= MAX_SIZE_BYTES => Ok(bytes),
        _ => Err(format!("bad size {text:?}: larger than 256mb")),
    }
}

/// Parses a size or a range of sizes (`"300kb..400kb"`) into inclusive bounds.
pub(crate) fn parse_size_range(text: &str) -> Result<(u64, u64), String> {
    match text.split_once("..") {
        None => parse_size(text).map(|bytes| (bytes, bytes)),
        Some((low, high)) => {
            let (low, high) = (parse_size(low)?, parse_size(high)?);
            if low > high {
                return Err(format!(
                    "bad size range {text:?}: the low end is above the high end"
                ));
            }
            Ok((low, high))
        }
    }
}

/// Prints a byte count in recipe syntax when exact (`64mb`, `1kb`), else in bytes (`1000b`).
pub(crate) fn format_size(bytes: u64) -> String {
    const MB: u64 = 1024 * 1024;
    if bytes >= MB && bytes.is_multiple_of(MB) {
        format!("{}mb", bytes / MB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}kb", bytes / 1024)
    } else {
        format!("{bytes}b")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let rows: &[(&str, Result<u64, &str>)] = &[
            ("0", Ok(0)),
            ("100ms", Ok(100_000_000)),
            ("4s", Ok(4_000_000_000)),
            ("1.5s", Ok(1_500_000_000)),
            ("250us", Ok(250_000)),
            ("250µs", Ok(250_000)),
            ("2m", Ok(120_000_000_000)),
            (" 10ms ", Ok(10_000_000)),
            ("0ms", Ok(0)),
            ("100", Err("needs a unit")),
            ("10h", Err("unknown unit \"h\"")),
            ("ms", Err("is not a number")),
            ("1.2.3s", Err("is not a number")),
            ("-5ms", Err("unknown unit \"-5ms\"")),
            ("25h", Err("unknown unit")),
            ("90000s", Err("longer than 24h")),
            ("", Err("needs a unit")),
        ];
        for (input, want) in rows {
            let got = parse_duration(input).map(|d| d.as_nanos() as u64);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "input {input:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "input {input:?}: {got}"),
                (got, want) => panic!("input {input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn json_durations_need_units_except_zero() {
        use serde_json::json;
        assert_eq!(duration_from_json(&json!(0)), Ok(Duration::ZERO));
        assert_eq!(duration_from_json(&json!("1s")), Ok(Duration::from_secs(1)));
        let err = duration_from_json(&json!(50)).unwrap_err();
        assert!(err.contains("\"50ms\""), "{err}");
        assert!(duration_from_json(&json!(true)).is_err());
        assert!(duration_from_json(&json!(null)).is_err());
    }

    #[test]
    fn format_round_trips() {
        for text in ["0", "100ms", "1s", "1500ms", "250us", "60s"] {
            let parsed = parse_duration(text).unwrap();
            assert_eq!(
                parse_duration(&format_duration(parsed)).unwrap(),
                parsed,
                "{text}"
            );
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn sizes_print_in_recipe_units() {
        let rows = [
            (0, "0b"),
            (1000, "1000b"),
            (2048, "2kb"),
            (64 << 20, "64mb"),
            ((1 << 20) + 1024, "1025kb"),
        ];
        for (bytes, want) in rows {
            assert_eq!(format_size(bytes), want);
        }
    }

    #[test]
    fn sizes() {
        type Row = (&'static str, Result<(u64, u64), &'static str>);
        let rows: &[Row] = &[
            ("256kb", Ok((262_144, 262_144))),
            ("1mb", Ok((1_048_576, 1_048_576))),
            ("10b", Ok((10, 10))),
            ("0b", Ok((0, 0))),
            ("4KB", Ok((4096, 4096))),
            ("300kb..400kb", Ok((307_200, 409_600))),
            ("428", Err("needs a unit")),
            ("1gb", Err("unknown unit")),
            ("1.5kb", Err("unknown unit \".5kb\"")),
            ("kb", Err("not a whole number")),
            ("300mb", Err("larger than 256mb")),
            ("400kb..300kb", Err("low end is above")),
            ("1kb..", Err("needs a unit")),
        ];
        for (input, want) in rows {
            match (parse_size_range(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "input {input:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "input {input:?}: {got}"),
                (got, want) => panic!("input {input:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
