//! Field values every format shares: [`status`], [`count`] and [`seconds_ns`] (a
//! logged number, `-` for absent), [`decimal_ns`] (an exact decimal in a unit, no
//! floats), [`quoted`] (a value as an error message shows it) and [`Fields`] (a cursor
//! over space-separated, optionally quoted fields, as the AWS load balancers write).

/// A status code; `-`, `0` and `000` (no response) are absent.
pub(super) fn status(text: &[u8]) -> Result<Option<u16>, String> {
    if text == b"-" {
        return Ok(None);
    }
    match digits_u64(text) {
        Some(0) => Ok(None),
        Some(code) if text.len() <= 3 => Ok(u16::try_from(code).ok()),
        _ => Err(format!("status {} is not a number", quoted(text))),
    }
}

/// A count such as bytes sent; `-` is absent.
pub(super) fn count(text: &[u8], field: &str) -> Result<Option<u64>, String> {
    if text == b"-" {
        return Ok(None);
    }
    digits_u64(text)
        .map(Some)
        .ok_or_else(|| format!("{field} {} is not a number", quoted(text)))
}

/// A duration logged in seconds (`0.123`), nanoseconds; `-` is absent.
pub(super) fn seconds_ns(text: &[u8], field: &str) -> Result<Option<u64>, String> {
    if text == b"-" {
        return Ok(None);
    }
    decimal_ns(text, 1_000_000_000)
        .map(Some)
        .ok_or_else(|| format!("{field} {} is not a number of seconds", quoted(text)))
}

/// `digits[.digits]` in units of `unit_ns` nanoseconds, exactly (fraction digits past
/// the ninth are dropped). `None` for anything else, or on overflow.
pub(super) fn decimal_ns(text: &[u8], unit_ns: u64) -> Option<u64> {
    let (whole, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &[][..]),
    };
    if whole.is_empty() || (fraction.is_empty() && text.len() != whole.len()) {
        return None;
    }
    let whole_ns = digits_u64(whole)?.checked_mul(unit_ns)?;
    if !fraction.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let kept = &fraction[..fraction.len().min(9)];
    let mut numerator = 0u64;
    let mut denominator = 1u64;
    for &digit in kept {
        numerator = numerator * 10 + u64::from(digit - b'0');
        denominator *= 10;
    }
    // numerator < 10^9 and unit_ns <= 10^9: the product fits a u64.
    whole_ns.checked_add(numerator.checked_mul(unit_ns)? / denominator)
}

/// All ASCII digits (at least one), as a number; `None` on overflow.
pub(super) fn digits_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    text.iter().try_fold(0u64, |value, &b| {
        if b.is_ascii_digit() {
            value.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// A value as an error message quotes it: lossy UTF-8, cut at 60 characters so one
/// runaway field does not flood the report.
pub(super) fn quoted(text: &[u8]) -> String {
    const MAX_CHARS: usize = 60;
    let text = String::from_utf8_lossy(text);
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// The line without its trailing `\r` (a file written on Windows) and spaces.
pub(super) fn trim_end(line: &str) -> &[u8] {
    line.trim_end_matches(['\r', '\n', ' ', '\t']).as_bytes()
}

/// Space-separated fields, a field in double quotes taken whole (spaces included, a
/// backslash escaping the next byte), as ALB and Classic ELB write them.
pub(super) struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(line: &'a [u8]) -> Self {
        Fields { line, pos: 0 }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let line = self.line;
        while self.pos < line.len() && line[self.pos] == b' ' {
            self.pos += 1;
        }
        if self.pos >= line.len() {
            return None;
        }
        let start = self.pos;
        if line[start] == b'"' {
            let end = closing_quote(line, start + 1);
            self.pos = (end + 1).min(line.len());
            return Some(&line[start + 1..end]);
        }
        let end = line[start..]
            .iter()
            .position(|&b| b == b' ')
            .map_or(line.len(), |n| start + n);
        self.pos = end;
        Some(&line[start..end])
    }
}

/// The index of the `"` closing a quoted field that starts at `from`, skipping
/// backslash escapes; the line's end when it is never closed.
pub(super) fn closing_quote(line: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    line.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_exactly_or_name_the_field() {
        assert_eq!(status(b"200"), Ok(Some(200)));
        assert_eq!(status(b"-"), Ok(None));
        assert_eq!(status(b"000"), Ok(None));
        assert_eq!(
            status(b"abc"),
            Err("status \"abc\" is not a number".to_owned())
        );
        assert_eq!(
            status(b"2000"),
            Err("status \"2000\" is not a number".to_owned())
        );
        assert_eq!(count(b"123", "bytes"), Ok(Some(123)));
        assert_eq!(count(b"-", "bytes"), Ok(None));
        assert_eq!(
            count(b"12k", "bytes"),
            Err("bytes \"12k\" is not a number".to_owned())
        );
        assert_eq!(seconds_ns(b"0.123", "request_time"), Ok(Some(123_000_000)));
        assert_eq!(seconds_ns(b"2", "t"), Ok(Some(2_000_000_000)));
        assert_eq!(
            seconds_ns(b"1.2.3", "request_time"),
            Err("request_time \"1.2.3\" is not a number of seconds".to_owned())
        );
    }

    #[test]
    fn decimals_are_exact_in_any_unit() {
        let rows: &[(&str, u64, Option<u64>)] = &[
            (
                "1699999999.123",
                1_000_000_000,
                Some(1_699_999_999_123_000_000),
            ),
            ("0.000073", 1_000_000_000, Some(73_000)),
            ("0.1234567891", 1_000_000_000, Some(123_456_789)),
            ("1.5", 1_000_000, Some(1_500_000)),
            ("7", 1, Some(7)),
            ("1.", 1, None),
            (".5", 1, None),
            ("-1", 1, None),
            ("1e3", 1, None),
            ("99999999999999999999", 1_000_000_000, None),
        ];
        for (text, unit, want) in rows {
            assert_eq!(decimal_ns(text.as_bytes(), *unit), *want, "{text}");
        }
    }

    #[test]
    fn fields_take_quoted_values_whole() {
        let line = br#"a "b c" "" d "e\"f" "open"#;
        let fields: Vec<&[u8]> = Fields::new(line).collect();
        let want: Vec<&[u8]> = vec![b"a", b"b c", b"", b"d", br#"e\"f"#, b"open"];
        assert_eq!(fields, want);
    }

    #[test]
    fn quoted_cuts_long_values() {
        assert_eq!(quoted(b"ab"), "\"ab\"");
        let long = quoted(&[b'x'; 100]);
        assert!(long.ends_with('…') && long.len() < 70, "{long}");
    }
}
