//! The `date:` response header (IMF-fixdate), formatted at most once per second per
//! thread so the request path only copies 37 bytes.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

const LINE_LEN: usize = 37; // "date: " + 29 + "\r\n"

thread_local! {
    static CACHE: Cell<(u64, [u8; LINE_LEN])> = const { Cell::new((u64::MAX, [0; LINE_LEN])) };
}

/// Appends `date: Sun, 06 Nov 1994 08:49:37 GMT\r\n` for the current second.
pub(crate) fn append_date_header(out: &mut Vec<u8>) {
    out.extend_from_slice(&current_line());
}

/// The `date` header's value for HTTP/2 (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn date_value() -> http::HeaderValue {
    let line = current_line();
    http::HeaderValue::from_bytes(&line[6..LINE_LEN - 2]).unwrap_or(http::HeaderValue::from_static(
        "Thu, 01 Jan 1970 00:00:00 GMT",
    ))
}

fn current_line() -> [u8; LINE_LEN] {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (cached_secs, mut line) = CACHE.get();
    if cached_secs != now {
        line = format_line(now);
        CACHE.set((now, line));
    }
    line
}

fn format_line(unix_secs: u64) -> [u8; LINE_LEN] {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_secs / 86_400;
    let secs_of_day = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    let text = format!(
        "date: {}, {:02} {} {} {:02}:{:02}:{:02} GMT\r\n",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    );
    let mut line = [b' '; LINE_LEN];
    let len = text.len().min(LINE_LEN);
    line[..len].copy_from_slice(&text.as_bytes()[..len]);
    line
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31): Howard Hinnant's
/// `civil_from_days`, valid for the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        let rows: &[(u64, &str)] = &[
            (0, "date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"),
            (784_111_777, "date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"),
            (951_782_400, "date: Tue, 29 Feb 2000 00:00:00 GMT\r\n"),
            (1_767_225_599, "date: Wed, 31 Dec 2025 23:59:59 GMT\r\n"),
        ];
        for (secs, want) in rows {
            assert_eq!(
                std::str::from_utf8(&format_line(*secs)).unwrap(),
                *want,
                "{secs}"
            );
        }
        let mut out = Vec::new();
        append_date_header(&mut out);
        assert_eq!(out.len(), LINE_LEN);
        assert!(out.starts_with(b"date: ") && out.ends_with(b" GMT\r\n"));
    }
}
