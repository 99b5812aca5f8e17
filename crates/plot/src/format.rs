//! How numbers read on axes, legends and in the summary: durations the way Go prints
//! them (`250µs`, `1.5ms`, `1m30s`) to three significant digits, rates and counts with
//! `k`/`M` suffixes, bytes in binary units (`1.5 GiB`), percentages. The page's script has the same rules (`page.js`), so
//! a zoomed axis reads like the first one.

/// Bytes in binary units to three significant digits: `0`, `512 B`, `1.5 KiB`,
/// `256 MiB`, `2 GiB`.
pub fn bytes(value: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if !value.is_finite() {
        return "-".to_owned();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    let (mut scaled, mut unit) = (value.abs(), 0);
    // Just below 1024, so 1023.9 KiB reads 1 MiB, not 1024 KiB.
    while scaled >= 1023.5 && unit + 1 < UNITS.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    let sign = if value < 0.0 { "-" } else { "" };
    format!("{sign}{} {}", significant(scaled, 3), UNITS[unit])
}

/// A duration in nanoseconds: `0`, `850ns`, `12.5µs`, `1.5ms`, `2s`, `1m30s`, `2h5m`.
pub fn duration_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_owned();
    }
    if ns == 0.0 {
        return "0".to_owned();
    }
    let sign = if ns < 0.0 { "-" } else { "" };
    let ns = ns.abs();
    // Thresholds just below each unit's 1000, so 999.9µs reads 1ms, not 1000µs.
    let text = if ns < 999.5 {
        format!("{}ns", significant(ns, 3))
    } else if ns < 999_500.0 {
        format!("{}µs", significant(ns / 1e3, 3))
    } else if ns < 999_500_000.0 {
        format!("{}ms", significant(ns / 1e6, 3))
    } else if ns < 59.95e9 {
        format!("{}s", significant(ns / 1e9, 3))
    } else {
        minutes_and_more((ns / 1e9).round() as u64)
    };
    format!("{sign}{text}")
}

/// Seconds on the time axis: `0`, `500ms`, `10s`, `1m30s`, `2h`.
pub fn time_s(seconds: f64) -> String {
    duration_ns(seconds * 1e9)
}

/// Whole seconds of a minute or more: `1m30s`, `1h`, `2h5m`, `3d4h`.
fn minutes_and_more(seconds: u64) -> String {
    let (days, hours, minutes, secs) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    let parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")];
    let first = parts.iter().position(|(n, _)| *n > 0).unwrap_or(3);
    // Two units are enough to read: 1h2m, not 1h2m3s.
    parts[first..(first + 2).min(4)]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect()
}

/// A count or rate: `0`, `12`, `1.5k`, `20k`, `1.25M`.
pub fn count(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    let magnitude = value.abs();
    if magnitude < 1e3 {
        significant(value, 3)
    } else if magnitude < 1e6 {
        format!("{}k", significant(value / 1e3, 3))
    } else if magnitude < 1e9 {
        format!("{}M", significant(value / 1e6, 3))
    } else {
        format!("{}G", significant(value / 1e9, 3))
    }
}

/// An integer with thousands separators: `9,950,000`.
pub fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `value` to `digits` significant digits, trailing zeros trimmed: `1.5`, `250`, `0.125`.
pub fn significant(value: f64, digits: i32) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".to_owned();
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).clamp(0, 9) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_go() {
        let rows: &[(f64, &str)] = &[
            (0.0, "0"),
            (850.0, "850ns"),
            (12_500.0, "12.5µs"),
            (250_000.0, "250µs"),
            (1_500_000.0, "1.5ms"),
            (1_234_567.0, "1.23ms"),
            (999_999_999.0, "1s"),
            (999_700.0, "1ms"),
            (2e9, "2s"),
            (30e9, "30s"),
            (90e9, "1m30s"),
            (3600e9, "1h"),
            (3725e9, "1h2m"),
            (90_000e9, "1d1h"),
            (-2e6, "-2ms"),
            (f64::NAN, "-"),
        ];
        for &(ns, want) in rows {
            assert_eq!(duration_ns(ns), want, "{ns}");
        }
    }

    #[test]
    fn counts_and_groups() {
        let rows: &[(f64, &str)] = &[
            (0.0, "0"),
            (12.0, "12"),
            (0.5, "0.5"),
            (1500.0, "1.5k"),
            (20_000.0, "20k"),
            (1_250_000.0, "1.25M"),
            (f64::INFINITY, "-"),
        ];
        for &(value, want) in rows {
            assert_eq!(count(value), want, "{value}");
        }
        assert_eq!(grouped(9_950_000), "9,950,000");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(0), "0");
        assert_eq!(crate::model::Unit::Percent.label(37.5), "37.5%");
    }

    #[test]
    fn bytes_read_in_binary_units() {
        let rows: &[(f64, &str)] = &[
            (0.0, "0"),
            (512.0, "512 B"),
            (1023.0, "1023 B"),
            (1536.0, "1.5 KiB"),
            (1023.9 * 1024.0, "1 MiB"),
            (256.0 * 1024.0 * 1024.0, "256 MiB"),
            (1.25 * 1024.0 * 1024.0 * 1024.0, "1.25 GiB"),
            (-2048.0, "-2 KiB"),
            (f64::NAN, "-"),
        ];
        for &(bytes_value, want) in rows {
            assert_eq!(bytes(bytes_value), want, "{bytes_value}");
        }
        assert_eq!(
            crate::model::Unit::BytesPerSecond.label(3.0 * 1024.0),
            "3 KiB/s"
        );
        assert_eq!(crate::model::Unit::BytesPerSecond.label(0.0), "0");
        assert_eq!(crate::model::Unit::Number.label(0.25), "0.25");
    }
}
