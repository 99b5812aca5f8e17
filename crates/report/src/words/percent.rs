//! Pass rates in words: rounded *down*, so a check that failed once never reads 100%.

/// `part` of `whole` in hundredths of a percent, rounded down (0 when `whole` is 0).
fn hundredths(part: u64, whole: u64) -> u128 {
    u128::from(part.min(whole)) * 10_000 / u128::from(whole.max(1))
}

/// `part` of `whole` as a percentage with two decimals, rounded *down*: a check that
/// failed once in a million reads `99.99%`, never `100.00%`. `0.00%` when `whole` is 0.
pub fn floor_percent(part: u64, whole: u64) -> String {
    let hundredths = hundredths(part, whole);
    format!("{}.{:02}%", hundredths / 100, hundredths % 100)
}

/// `passed` of `runs` as a percentage to two decimals at most, rounded down, so a
/// check that failed once in 100,000 reads `99.99%`, never `100%`: `100%`, `99.5%`,
/// `0%`; `-` when it never ran (the live view, the plot page).
pub fn pass_rate(passed: u64, runs: u64) -> String {
    if runs == 0 {
        return "-".to_owned();
    }
    let hundredths = hundredths(passed, runs);
    let (whole, fraction) = (hundredths / 100, hundredths % 100);
    match fraction {
        0 => format!("{whole}%"),
        f if f % 10 == 0 => format!("{whole}.{}%", f / 10),
        f => format!("{whole}.{f:02}%"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_pass_rates_round_down() {
        let rows: &[(u64, u64, &str)] = &[
            (1000, 1000, "100.00%"),
            (999_999, 1_000_000, "99.99%"),
            (998, 1000, "99.80%"),
            (1, 3, "33.33%"),
            (2, 3, "66.66%"),
            (0, 5, "0.00%"),
            (0, 0, "0.00%"),
            (u64::MAX, u64::MAX, "100.00%"),
        ];
        for &(part, whole, want) in rows {
            assert_eq!(floor_percent(part, whole), want, "{part}/{whole}");
        }
    }

    #[test]
    fn pass_rates_round_down_to_two_decimals() {
        let rows: &[(u64, u64, &str)] = &[
            (0, 0, "-"),
            (10, 10, "100%"),
            (99_999, 100_000, "99.99%"),
            (u64::MAX - 1, u64::MAX, "99.99%"),
            (995, 1000, "99.5%"),
            (1, 3, "33.33%"),
            (1, 20, "5%"),
            (1, 1000, "0.1%"),
            (1, 100_000, "0%"),
            (0, 7, "0%"),
        ];
        for &(passed, runs, want) in rows {
            assert_eq!(pass_rate(passed, runs), want, "{passed} of {runs}");
        }
    }
}
