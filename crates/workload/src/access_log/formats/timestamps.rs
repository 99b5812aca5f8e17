//! Timestamps as logs write them, to unix nanoseconds by arithmetic (no date library
//! per line): [`clf_ns`] (`10/Oct/2000:13:55:36 -0700`), [`iso8601_ns`]
//! (`2000-10-10T20:55:36.123Z`), [`unix_ns`] (a number in a given or guessed unit) and
//! [`TimeCache`], the last parsed `$time_local` (consecutive lines usually share it).

use std::cell::Cell;

use super::fields::{decimal_ns, quoted};

pub(super) const NS_PER_S: u64 = 1_000_000_000;

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A wall-clock reading and its UTC offset.
struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    nanos: u64,
    offset_s: i64,
}

impl Civil {
    fn unix_ns(&self) -> Option<u64> {
        let valid = (1..=12).contains(&self.month)
            && (1..=days_in_month(self.year, self.month)).contains(&self.day)
            && self.hour < 24
            && self.minute < 60
            && self.second <= 60;
        if !valid {
            return None;
        }
        let days = days_from_civil(self.year, self.month, self.day);
        let seconds =
            days * 86_400 + self.hour * 3600 + self.minute * 60 + self.second - self.offset_s;
        let seconds = u64::try_from(seconds).ok()?;
        seconds.checked_mul(NS_PER_S)?.checked_add(self.nanos)
    }
}

/// A fixed-width run of ASCII digits.
fn num(text: &[u8], start: usize, len: usize) -> Option<i64> {
    let digits = text.get(start..start + len)?;
    digits.iter().try_fold(0i64, |value, &b| {
        b.is_ascii_digit().then(|| value * 10 + i64::from(b - b'0'))
    })
}

fn month_number(name: &[u8]) -> Option<i64> {
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let position = MONTHS.iter().position(|m| m.as_slice() == name)?;
    i64::try_from(position).ok().map(|m| m + 1)
}

/// `±HHMM` or `±HH:MM` as seconds east of UTC.
fn offset_s(text: &[u8]) -> Option<i64> {
    let sign = match text.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = match text.len() {
        5 => (num(text, 1, 2)?, num(text, 3, 2)?),
        6 if text[3] == b':' => (num(text, 1, 2)?, num(text, 4, 2)?),
        3 => (num(text, 1, 2)?, 0),
        _ => return None,
    };
    (hours < 24 && minutes < 60).then_some(sign * (hours * 3600 + minutes * 60))
}

/// Common Log Format time, `10/Oct/2000:13:55:36 -0700` (nginx `$time_local`, Apache
/// `%t`), 1 s resolution.
pub(super) fn clf_ns(text: &[u8]) -> Result<u64, String> {
    parse_clf(text)
        .ok_or_else(|| format!("time {} is not dd/Mon/yyyy:HH:MM:SS +zone", quoted(text)))
}

fn parse_clf(t: &[u8]) -> Option<u64> {
    let shape = t.len() == 26
        && t[2] == b'/'
        && t[6] == b'/'
        && t[11] == b':'
        && t[14] == b':'
        && t[17] == b':'
        && t[20] == b' ';
    if !shape {
        return None;
    }
    Civil {
        year: num(t, 7, 4)?,
        month: month_number(&t[3..6])?,
        day: num(t, 0, 2)?,
        hour: num(t, 12, 2)?,
        minute: num(t, 15, 2)?,
        second: num(t, 18, 2)?,
        nanos: 0,
        offset_s: offset_s(&t[21..])?,
    }
    .unix_ns()
}

/// RFC 3339 / ISO 8601 time, `2000-10-10T13:55:36.123456-07:00` (`T` or a space
/// between date and time; `Z`, `±HH:MM`, `±HHMM` or no zone, read as UTC), with the
/// resolution its fraction shows (1 s without one).
pub(super) fn iso8601_ns(text: &[u8]) -> Result<(u64, u64), String> {
    parse_iso8601(text).ok_or_else(|| format!("time {} is not an ISO 8601 time", quoted(text)))
}

fn parse_iso8601(t: &[u8]) -> Option<(u64, u64)> {
    let shape = t.len() >= 19
        && t[4] == b'-'
        && t[7] == b'-'
        && matches!(t[10], b'T' | b't' | b' ')
        && t[13] == b':'
        && t[16] == b':';
    if !shape {
        return None;
    }
    let mut rest = &t[19..];
    let (mut nanos, mut resolution_ns) = (0, NS_PER_S);
    if let Some(b'.' | b',') = rest.first() {
        let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let kept = &rest[1..=digits.min(9)];
        let scale = 10u64.pow(9 - u32::try_from(kept.len()).ok()?);
        nanos = kept
            .iter()
            .fold(0, |value, &b| value * 10 + u64::from(b - b'0'))
            * scale;
        resolution_ns = scale;
        rest = &rest[1 + digits..];
    }
    let offset_s = match rest {
        b"" | b"Z" | b"z" => 0,
        zone => offset_s(zone)?,
    };
    let time_ns = Civil {
        year: num(t, 0, 4)?,
        month: num(t, 5, 2)?,
        day: num(t, 8, 2)?,
        hour: num(t, 11, 2)?,
        minute: num(t, 14, 2)?,
        second: num(t, 17, 2)?,
        nanos,
        offset_s,
    }
    .unix_ns()?;
    Some((time_ns, resolution_ns))
}

/// A unit a number of time is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    S,
    Ms,
    Us,
    Ns,
}

impl Unit {
    pub(super) fn parse(text: &str) -> Option<Unit> {
        match text {
            "s" => Some(Unit::S),
            "ms" => Some(Unit::Ms),
            "us" => Some(Unit::Us),
            "ns" => Some(Unit::Ns),
            _ => None,
        }
    }

    pub(super) fn ns(self) -> u64 {
        match self {
            Unit::S => NS_PER_S,
            Unit::Ms => 1_000_000,
            Unit::Us => 1_000,
            Unit::Ns => 1,
        }
    }

    /// The unit a unix timestamp is in, guessed by its size: seconds until the year
    /// 5138, then milliseconds, microseconds, nanoseconds.
    pub(super) fn of_unix_time(whole: u64) -> Unit {
        match whole {
            0..100_000_000_000 => Unit::S,
            100_000_000_000..100_000_000_000_000 => Unit::Ms,
            100_000_000_000_000..100_000_000_000_000_000 => Unit::Us,
            _ => Unit::Ns,
        }
    }
}

/// A unix time written as a decimal number, in `unit` or the one its size suggests;
/// with the resolution it shows (its unit, or finer where a fraction has digits).
pub(super) fn unix_ns(text: &[u8], unit: Option<Unit>) -> Option<(u64, u64)> {
    let whole_len = text.iter().position(|&b| b == b'.').unwrap_or(text.len());
    let whole = super::fields::digits_u64(&text[..whole_len])?;
    let unit = unit.unwrap_or_else(|| Unit::of_unix_time(whole));
    let fraction_digits = text.len().saturating_sub(whole_len + 1).min(9);
    let resolution_ns = (unit.ns() / 10u64.pow(u32::try_from(fraction_digits).ok()?)).max(1);
    Some((decimal_ns(text, unit.ns())?, resolution_ns))
}

/// The last `$time_local`-style string parsed and its time: a log's consecutive lines
/// usually share their second, so most lines cost a 26-byte compare. A `Cell` because
/// parsers read lines through `&self`.
#[derive(Default)]
pub(super) struct TimeCache {
    last: Cell<Option<CachedTime>>,
}

#[derive(Clone, Copy)]
struct CachedTime {
    text: [u8; 32],
    len: usize,
    time_ns: u64,
}

impl TimeCache {
    /// `parse(text)`, or the cached time when `text` is the last one parsed.
    pub(super) fn get(
        &self,
        text: &[u8],
        parse: impl FnOnce(&[u8]) -> Result<u64, String>,
    ) -> Result<u64, String> {
        if let Some(last) = self.last.get()
            && last.text[..last.len] == *text
        {
            return Ok(last.time_ns);
        }
        let time_ns = parse(text)?;
        if text.len() <= 32 {
            let mut copy = [0; 32];
            copy[..text.len()].copy_from_slice(text);
            self.last.set(Some(CachedTime {
                text: copy,
                len: text.len(),
                time_ns,
            }));
        }
        Ok(time_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_times_honour_their_zone() {
        let rows: &[(&str, Option<u64>)] = &[
            ("10/Oct/2000:13:55:36 -0700", Some(971_211_336)),
            ("10/Oct/2000:20:55:36 +0000", Some(971_211_336)),
            ("11/Oct/2000:02:25:36 +0530", Some(971_211_336)),
            ("01/Jan/1970:00:00:00 +0000", Some(0)),
            ("29/Feb/2024:12:00:00 +0000", Some(1_709_208_000)),
            ("29/Feb/2023:12:00:00 +0000", None),
            ("10/Foo/2000:13:55:36 -0700", None),
            ("10/Oct/2000:25:55:36 -0700", None),
            ("10/Oct/2000:13:55:36", None),
            ("01/Jan/1970:00:00:00 +0100", None),
        ];
        for (text, want) in rows {
            let got = clf_ns(text.as_bytes()).ok();
            assert_eq!(got, want.map(|s| s * NS_PER_S), "{text}");
        }
        assert_eq!(
            clf_ns(b"yesterday"),
            Err("time \"yesterday\" is not dd/Mon/yyyy:HH:MM:SS +zone".to_owned())
        );
    }

    #[test]
    fn iso8601_times_keep_their_fraction_and_zone() {
        let rows: &[(&str, Option<(u64, u64)>)] = &[
            (
                "2000-10-10T20:55:36Z",
                Some((971_211_336_000_000_000, NS_PER_S)),
            ),
            (
                "2000-10-10T13:55:36-07:00",
                Some((971_211_336_000_000_000, NS_PER_S)),
            ),
            (
                "2000-10-10T13:55:36-0700",
                Some((971_211_336_000_000_000, NS_PER_S)),
            ),
            (
                "2000-10-10 20:55:36",
                Some((971_211_336_000_000_000, NS_PER_S)),
            ),
            (
                "2018-07-02T22:23:00.186641Z",
                Some((1_530_570_180_186_641_000, 1_000)),
            ),
            (
                "2018-05-08T14:13:47.123456789+02:00",
                Some((1_525_781_627_123_456_789, 1)),
            ),
            ("2000-10-10T20:55:36.Z", None),
            ("2000-13-10T20:55:36Z", None),
            ("2000-10-10T20:55:36+25:00", None),
            ("2000-10-10", None),
        ];
        for (text, want) in rows {
            assert_eq!(iso8601_ns(text.as_bytes()).ok(), *want, "{text}");
        }
    }

    #[test]
    fn unix_numbers_guess_their_unit_by_size() {
        type Row = (&'static str, Option<Unit>, Option<(u64, u64)>);
        let rows: &[Row] = &[
            (
                "1700000000",
                None,
                Some((1_700_000_000 * NS_PER_S, NS_PER_S)),
            ),
            (
                "1700000000.123",
                None,
                Some((1_700_000_000_123_000_000, 1_000_000)),
            ),
            (
                "1700000000123",
                None,
                Some((1_700_000_000_123_000_000, 1_000_000)),
            ),
            (
                "1700000000123456",
                None,
                Some((1_700_000_000_123_456_000, 1_000)),
            ),
            (
                "1700000000123456789",
                None,
                Some((1_700_000_000_123_456_789, 1)),
            ),
            (
                "1700000000",
                Some(Unit::Ms),
                Some((1_700_000_000_000_000, 1_000_000)),
            ),
            ("abc", None, None),
            ("", None, None),
        ];
        for (text, unit, want) in rows {
            assert_eq!(unix_ns(text.as_bytes(), *unit), *want, "{text}");
        }
    }

    #[test]
    fn the_cache_answers_a_repeated_time_without_parsing() {
        let cache = TimeCache::default();
        let text = b"10/Oct/2000:13:55:36 -0700";
        assert_eq!(cache.get(text, clf_ns), Ok(971_211_336 * NS_PER_S));
        assert_eq!(
            cache.get(text, |_| Err("parsed again".to_owned())),
            Ok(971_211_336 * NS_PER_S)
        );
        assert!(
            cache
                .get(b"11/Oct/2000:13:55:36 -0700", |_| Err("new".to_owned()))
                .is_err()
        );
    }
}
