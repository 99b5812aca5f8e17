//! Byte sizes: `512`, `512b`, `256kb`, `1.5mb`, `2gb` (1024-based, case-insensitive).

use crate::UnitsError;

/// Parses a byte size. Units are 1024-based (`1kb` = 1024 bytes), as in origin_simulator.
pub fn parse_size(input: &str) -> Result<u64, UnitsError> {
    let fail = |reason| UnitsError::Size {
        input: input.to_owned(),
        reason,
    };
    let text = input.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| fail("expected a number"))?;
    let multiplier: f64 = match unit.trim() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(fail("unknown unit (want b, kb, mb or gb)")),
    };
    let bytes = (value * multiplier).round();
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(fail("too large"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        let rows: &[(&str, Result<u64, &str>)] = &[
            ("0", Ok(0)),
            ("512", Ok(512)),
            ("512b", Ok(512)),
            ("256kb", Ok(262_144)),
            ("256KB", Ok(262_144)),
            ("1.5mb", Ok(1_572_864)),
            ("2gb", Ok(2_147_483_648)),
            ("", Err("expected a number")),
            ("kb", Err("expected a number")),
            ("12tb", Err("unknown unit")),
            ("-1kb", Err("expected a number")),
        ];
        for (input, want) in rows {
            match (parse_size(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{input}"),
                (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{input}: {err}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }
}
