//! [`ReplayFilter`]: which logged requests a replay sends: a time window (`-from`,
//! `-to`) and filters by path, method, status and host, each parsed from its flag's
//! text with errors naming the flag.

use regex::Regex;

use super::LoggedRequest;
use super::path_group::origin_form;
use crate::WorkloadError;

/// What `-from` and `-to` take, for their error messages.
const TIME_FORMS: &str = "want RFC 3339, 24/Nov/2026:10:00:00 +0000, or +5m";

/// The requests a replay keeps. The default keeps every one.
#[derive(Debug, Clone, Default)]
pub struct ReplayFilter {
    from: Option<TimeBound>,
    to: Option<TimeBound>,
    path: Option<Regex>,
    /// Upper case; empty: any.
    methods: Vec<String>,
    /// Empty: any, and requests without a logged status too.
    statuses: Vec<StatusMatch>,
    /// Empty: any, and requests without a host too.
    hosts: Vec<HostMatch>,
}

/// A point in the log's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeBound {
    /// A unix time, nanoseconds.
    At(u64),
    /// Nanoseconds after the log's first request.
    After(u64),
}

impl TimeBound {
    fn unix_ns(self, log_start_unix_ns: u64) -> u64 {
        match self {
            TimeBound::At(unix_ns) => unix_ns,
            TimeBound::After(offset_ns) => log_start_unix_ns.saturating_add(offset_ns),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatusMatch {
    Code(u16),
    /// The hundreds digit: 2 for `2xx`.
    Class(u16),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// Lower case.
    Exact(String),
    /// `*.example.com` as `.example.com`, lower case.
    Suffix(String),
}

impl ReplayFilter {
    /// The filter the flags ask for: `-from`, `-to`, `-path`, `-method`, `-status`,
    /// `-host` (the last three repeatable and comma-separated).
    pub fn parse(
        from: Option<&str>,
        to: Option<&str>,
        path: Option<&str>,
        methods: &[String],
        statuses: &[String],
        hosts: &[String],
    ) -> Result<ReplayFilter, WorkloadError> {
        let filter = ReplayFilter {
            from: from.map(|text| parse_time("-from", text)).transpose()?,
            to: to.map(|text| parse_time("-to", text)).transpose()?,
            path: path.map(parse_path).transpose()?,
            methods: items(methods).map(parse_method).collect::<Result<_, _>>()?,
            statuses: items(statuses)
                .map(parse_status)
                .collect::<Result<_, _>>()?,
            hosts: items(hosts).map(parse_host).collect::<Result<_, _>>()?,
        };
        filter.check_window(from, to)?;
        Ok(filter)
    }

    /// Whether `request` is sent. `log_start_unix_ns`: the log's first request's time,
    /// for a window relative to it (`-from=+5m`).
    pub fn keeps(&self, request: &LoggedRequest, log_start_unix_ns: u64) -> bool {
        let time_ns = request.time_unix_ns;
        self.from
            .is_none_or(|from| time_ns >= from.unix_ns(log_start_unix_ns))
            && !self.past_end(request, log_start_unix_ns)
            && self
                .path
                .as_ref()
                .is_none_or(|path| path.is_match(origin_form(&request.target)))
            && (self.methods.is_empty() || self.methods.contains(&request.method))
            && self.keeps_status(request.status)
            && self.keeps_host(request)
    }

    /// Whether `request` is at or past the window's end (`-to`, exclusive): being in
    /// time order, no later request is kept, and the caller can stop reading.
    pub fn past_end(&self, request: &LoggedRequest, log_start_unix_ns: u64) -> bool {
        self.to
            .is_some_and(|to| request.time_unix_ns >= to.unix_ns(log_start_unix_ns))
    }

    fn keeps_status(&self, status: Option<u16>) -> bool {
        if self.statuses.is_empty() {
            return true;
        }
        let Some(status) = status else {
            return false;
        };
        self.statuses.iter().any(|wanted| match *wanted {
            StatusMatch::Code(code) => status == code,
            StatusMatch::Class(class) => status / 100 == class,
        })
    }

    fn keeps_host(&self, request: &LoggedRequest) -> bool {
        if self.hosts.is_empty() {
            return true;
        }
        let host = match &request.host {
            Some(host) => host.as_str(),
            None => authority(&request.target),
        };
        if host.is_empty() {
            return false;
        }
        let host = host.to_ascii_lowercase();
        self.hosts.iter().any(|wanted| host_matches(wanted, &host))
    }

    /// `-to` must come after `-from` when both are the same kind of time.
    fn check_window(&self, from: Option<&str>, to: Option<&str>) -> Result<(), WorkloadError> {
        let ordered = match (self.from, self.to) {
            (Some(TimeBound::At(from)), Some(TimeBound::At(to)))
            | (Some(TimeBound::After(from)), Some(TimeBound::After(to))) => to > from,
            _ => true,
        };
        if ordered {
            return Ok(());
        }
        Err(flag_error(
            "-to",
            format!(
                "{:?} is not after -from {:?}: the window is empty",
                to.unwrap_or_default(),
                from.unwrap_or_default()
            ),
        ))
    }
}

/// Whether a lower-case host (with or without its port) matches.
fn host_matches(wanted: &HostMatch, host: &str) -> bool {
    let name = strip_port(host);
    match wanted {
        HostMatch::Exact(exact) if exact.contains(':') && !exact.starts_with('[') => host == exact,
        HostMatch::Exact(exact) => name == exact || host == exact,
        HostMatch::Suffix(suffix) => name.ends_with(suffix.as_str()),
    }
}

/// `example.com:8080` -> `example.com`; `[::1]:8080` -> `[::1]`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
}

/// The authority of an absolute URL target; empty for origin form.
fn authority(target: &str) -> &str {
    let Some((_, rest)) = target.split_once("://") else {
        return "";
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// The non-empty items of a repeatable, comma-separated flag.
fn items(values: &[String]) -> impl Iterator<Item = &str> {
    values
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

fn flag_error(flag: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::Field {
        label: flag.to_owned(),
        reason: reason.into(),
    }
}

/// `+5m` (after the log's start), RFC 3339, or nginx's `$time_local`.
fn parse_time(flag: &str, text: &str) -> Result<TimeBound, WorkloadError> {
    let trimmed = text.trim();
    if trimmed.starts_with('+') {
        let offset = units::parse_duration(trimmed).map_err(|err| {
            flag_error(
                flag,
                format!("{text:?} is not an offset: {err} ({TIME_FORMS})"),
            )
        })?;
        let offset_ns = u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX);
        return Ok(TimeBound::After(offset_ns));
    }
    let nginx = || {
        jiff::fmt::strtime::parse("%d/%b/%Y:%H:%M:%S %z", trimmed)
            .and_then(|time| time.to_timestamp())
    };
    let time = trimmed
        .parse::<jiff::Timestamp>()
        .or_else(|_| nginx())
        .map_err(|_| flag_error(flag, format!("{text:?} is not a time ({TIME_FORMS})")))?;
    let unix_ns = u64::try_from(time.as_nanosecond())
        .map_err(|_| flag_error(flag, format!("{text:?} is before 1970")))?;
    Ok(TimeBound::At(unix_ns))
}

fn parse_path(text: &str) -> Result<Regex, WorkloadError> {
    Regex::new(text).map_err(|err| {
        flag_error(
            "-path",
            format!("{text:?} is not a regular expression: {err}"),
        )
    })
}

fn parse_method(text: &str) -> Result<String, WorkloadError> {
    let method = text.to_ascii_uppercase();
    crate::target::check_method(&method).map_err(|reason| flag_error("-method", reason))?;
    Ok(method)
}

/// `404` or a class, `2xx`.
fn parse_status(text: &str) -> Result<StatusMatch, WorkloadError> {
    let fail = || {
        flag_error(
            "-status",
            format!("{text:?} is not a status (want a code like 404 or a class like 2xx)"),
        )
    };
    if let Some(class) = text.strip_suffix("xx").or_else(|| text.strip_suffix("XX")) {
        return match class.as_bytes() {
            [digit @ b'1'..=b'5'] => Ok(StatusMatch::Class(u16::from(digit - b'0'))),
            _ => Err(fail()),
        };
    }
    match text.parse::<u16>() {
        Ok(code) if (100..=599).contains(&code) && text.len() == 3 => Ok(StatusMatch::Code(code)),
        _ => Err(fail()),
    }
}

/// `api.example.com`, `api.example.com:8080`, `[::1]`, or `*.example.com`.
fn parse_host(text: &str) -> Result<HostMatch, WorkloadError> {
    let lower = text.to_ascii_lowercase();
    let (name, wildcard) = match lower.strip_prefix("*.") {
        Some(rest) => (rest, true),
        None => (lower.as_str(), false),
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-.:[]_".contains(c);
    if name.is_empty() || !name.chars().all(allowed) || name.starts_with('.') {
        return Err(flag_error(
            "-host",
            format!(
                "{text:?} is not a host name (want a name like api.example.com or \
                 *.example.com)"
            ),
        ));
    }
    Ok(if wildcard {
        HostMatch::Suffix(format!(".{name}"))
    } else {
        HostMatch::Exact(name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    /// 2026-11-24T10:00:00Z.
    const T0: u64 = 1_795_514_400 * S;

    fn request(time_unix_ns: u64, method: &str, target: &str) -> LoggedRequest {
        LoggedRequest {
            time_unix_ns,
            method: method.to_owned(),
            target: target.to_owned(),
            host: None,
            status: Some(200),
            bytes: None,
            user_agent: None,
            latency_ns: None,
            line: 1,
            put_back_ns: 0,
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A filter of one flag: `-from`, `-to`, `-path`, `-method`, `-status`, `-host`.
    fn one(flag: &str, value: &str) -> Result<ReplayFilter, WorkloadError> {
        let list = strings(&[value]);
        let none: &[String] = &[];
        let pick = |name: &str| if flag == name { &list[..] } else { none };
        ReplayFilter::parse(
            (flag == "-from").then_some(value),
            (flag == "-to").then_some(value),
            (flag == "-path").then_some(value),
            pick("-method"),
            pick("-status"),
            pick("-host"),
        )
    }

    #[test]
    fn keeps_a_time_window() {
        // (flag, value, request time, log start, kept, past the end)
        let rows: &[(&str, &str, u64, u64, bool, bool)] = &[
            ("-from", "2026-11-24T10:00:00Z", T0, 0, true, false),
            ("-from", "2026-11-24T10:00:00Z", T0 - 1, 0, false, false),
            ("-from", "2026-11-24T11:00:00+01:00", T0, 0, true, false),
            ("-from", "24/Nov/2026:10:00:01 +0000", T0, 0, false, false),
            ("-from", "24/Nov/2026:11:00:00 +0100", T0, 0, true, false),
            ("-from", "+5m", T0 + 299 * S, T0, false, false),
            ("-from", "+5m", T0 + 300 * S, T0, true, false),
            ("-from", "+1m30s", T0 + 90 * S, T0, true, false),
            ("-to", "2026-11-24T10:00:00Z", T0 - 1, 0, true, false),
            ("-to", "2026-11-24T10:00:00Z", T0, 0, false, true),
            ("-to", "+90s", T0 + 89 * S, T0, true, false),
            ("-to", "+90s", T0 + 90 * S, T0, false, true),
        ];
        for (flag, value, time_ns, start_ns, kept, past) in rows {
            let filter = one(flag, value).unwrap();
            let r = request(*time_ns, "GET", "/");
            assert_eq!(
                filter.keeps(&r, *start_ns),
                *kept,
                "{flag}={value} at {time_ns}"
            );
            assert_eq!(
                filter.past_end(&r, *start_ns),
                *past,
                "{flag}={value} at {time_ns}"
            );
        }
    }

    #[test]
    fn refuses_bad_flags_naming_them() {
        let rows: &[(&str, &str, &str)] = &[
            (
                "-from",
                "yesterday",
                "-from: \"yesterday\" is not a time (want RFC 3339, 24/Nov/2026:10:00:00 \
                 +0000, or +5m)",
            ),
            (
                "-to",
                "2026-11-24 10:00",
                "-to: \"2026-11-24 10:00\" is not a time (want RFC 3339, \
                 24/Nov/2026:10:00:00 +0000, or +5m)",
            ),
            (
                "-from",
                "+5 minutes",
                "-from: \"+5 minutes\" is not an offset: invalid duration \"+5 minutes\": \
                 unknown unit (want ns, us, ms, s, m, h) (want RFC 3339, \
                 24/Nov/2026:10:00:00 +0000, or +5m)",
            ),
            (
                "-from",
                "1969-12-31T23:59:59Z",
                "-from: \"1969-12-31T23:59:59Z\" is before 1970",
            ),
            (
                "-path",
                "(",
                "-path: \"(\" is not a regular expression: regex parse error:",
            ),
            (
                "-method",
                "GETT",
                "-method: unknown method \"GETT\" (want one of GET,",
            ),
            (
                "-status",
                "2xy",
                "-status: \"2xy\" is not a status (want a code like 404 or a class like 2xx)",
            ),
            ("-status", "6xx", "-status: \"6xx\" is not a status"),
            ("-status", "99", "-status: \"99\" is not a status"),
            ("-status", "0404", "-status: \"0404\" is not a status"),
            ("-status", "600", "-status: \"600\" is not a status"),
            (
                "-host",
                "a b.com",
                "-host: \"a b.com\" is not a host name (want a name like api.example.com \
                 or *.example.com)",
            ),
            ("-host", "*.", "-host: \"*.\" is not a host name"),
            ("-host", "a.*.com", "-host: \"a.*.com\" is not a host name"),
        ];
        for (flag, value, want) in rows {
            let err = one(flag, value).unwrap_err().to_string();
            assert!(err.starts_with(want), "{flag}={value}: {err}\nwant: {want}");
        }
    }

    #[test]
    fn refuses_an_empty_window() {
        let rows: &[(&str, &str, Option<&str>)] = &[
            (
                "2026-11-24T10:00:00Z",
                "2026-11-24T10:00:00Z",
                Some(
                    "-to: \"2026-11-24T10:00:00Z\" is not after -from \
                     \"2026-11-24T10:00:00Z\": the window is empty",
                ),
            ),
            (
                "+5m",
                "+1m",
                Some("-to: \"+1m\" is not after -from \"+5m\""),
            ),
            ("+1m", "+5m", None),
            // Of different kinds: checked against the log, not here.
            ("+5m", "2026-11-24T10:00:00Z", None),
        ];
        for (from, to, want) in rows {
            let result = ReplayFilter::parse(Some(from), Some(to), None, &[], &[], &[]);
            match (result, want) {
                (Ok(_), None) => {}
                (Err(err), Some(want)) => {
                    let err = err.to_string();
                    assert!(err.starts_with(want), "{from}..{to}: {err}");
                }
                (result, want) => panic!("{from}..{to}: {result:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn filters_by_path_method_status_and_host() {
        let mut api = request(T0, "POST", "/api/orders?id=7");
        api.host = Some("API.example.com:8443".to_owned());
        api.status = Some(503);
        let mut plain = request(T0, "GET", "https://www.example.com/search?q=x");
        plain.status = None;
        // (flag, value, keeps api, keeps plain)
        let rows: &[(&str, &str, bool, bool)] = &[
            ("-path", "^/api/", true, false),
            ("-path", "^/search\\?q=", false, true),
            ("-path", "id=7$", true, false),
            ("-method", "GET", false, true),
            ("-method", "post,put", true, false),
            ("-method", " GET , POST ", true, true),
            ("-status", "5xx", true, false),
            ("-status", "503", true, false),
            ("-status", "2xx,404", false, false),
            ("-host", "api.example.com", true, false),
            ("-host", "api.example.com:8443", true, false),
            ("-host", "api.example.com:80", false, false),
            ("-host", "*.example.com", true, true),
            ("-host", "example.com", false, false),
            ("-host", "www.example.com", false, true),
        ];
        for (flag, value, keeps_api, keeps_plain) in rows {
            let filter = one(flag, value).unwrap();
            assert_eq!(filter.keeps(&api, T0), *keeps_api, "{flag}={value} api");
            assert_eq!(
                filter.keeps(&plain, T0),
                *keeps_plain,
                "{flag}={value} plain"
            );
        }
        let all = ReplayFilter::default();
        assert!(all.keeps(&api, T0) && all.keeps(&plain, T0));
        // Several flags: all must hold.
        let both =
            ReplayFilter::parse(None, None, Some("^/api"), &strings(&["GET"]), &[], &[]).unwrap();
        assert!(!both.keeps(&api, T0));
        // A request without a host, origin form: only no host filter keeps it.
        let bare = request(T0, "GET", "/");
        assert!(!one("-host", "*.example.com").unwrap().keeps(&bare, T0));
    }

    #[test]
    fn strips_ports() {
        let rows: &[(&str, &str)] = &[
            ("a.com:80", "a.com"),
            ("a.com", "a.com"),
            ("[::1]:8080", "[::1]"),
            ("[::1]", "[::1]"),
        ];
        for (host, want) in rows {
            assert_eq!(strip_port(host), *want);
        }
    }
}
