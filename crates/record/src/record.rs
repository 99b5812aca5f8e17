//! [`Record`]: one request, as plain data; [`Protocol`]: the HTTP version it went over;
//! [`GrpcStatus`]: a gRPC call's status code.

use std::fmt;

/// The outcome of one request. Times are unix nanoseconds (wall clock at the run's time
/// zero plus a monotonic offset, so differences within a run are monotonic-exact).
///
/// Latency counts from the *intended* send time, so a generator that falls behind
/// cannot hide its delay in the server's numbers (no coordinated omission);
/// `send_lag_ns` says how late the request actually left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    /// Index into [`crate::RunTables::attacks`] (the attack or scenario name).
    pub attack: u16,
    /// Index into [`crate::RunTables::targets`].
    pub target: u32,
    /// Position of the request in its attack's schedule.
    pub seq: u64,
    /// When the schedule said to send it.
    pub intended_unix_ns: u64,
    /// Actual send time minus intended send time.
    pub send_lag_ns: u64,
    /// Completion (or failure) time minus intended send time.
    pub latency_ns: u64,
    /// First response byte minus actual send time; 0 when no byte arrived.
    pub ttfb_ns: u64,
    /// HTTP status code; 0 when the request failed below HTTP (transport error).
    pub status: u16,
    /// 0 for none, else `id` into [`crate::RunTables::errors`] (1-based).
    pub error: u32,
    /// Response bytes received: status line, headers and body as read off the wire.
    pub bytes_in: u64,
    /// Request bytes written.
    pub bytes_out: u64,
    /// The HTTP version the request went out over (files of format version 1 predate
    /// the field: their records read as [`Protocol::Http1`]).
    pub protocol: Protocol,
    /// The checks of the record's target (a flow step) that failed: bit `i` is
    /// [`crate::TargetInfo::checks`]`[i]`; the rest passed. Bit 31
    /// ([`Record::FAILED_BY_FLOW`]) says the flow judged the answer a failure (a failed
    /// check that fails requests, an extraction that found nothing, a rejected cookie),
    /// whatever its status. 0 for a target without checks, and in files of format
    /// version 2 and older.
    pub checks_failed: u32,
    /// The `grpc-status` of a gRPC call's answer (its trailers, or a trailers-only
    /// answer); `None` for HTTP requests, calls that got none, and files of format
    /// version 3 and older.
    pub grpc_status: Option<GrpcStatus>,
}

impl Record {
    /// The bit of [`Record::checks_failed`] that makes an answer a failure whatever
    /// its status; the 31 bits below it are checks.
    pub const FAILED_BY_FLOW: u32 = 1 << 31;
    /// Checks one step may have (one bit each in [`Record::checks_failed`]).
    pub const MAX_CHECKS: usize = 31;

    /// When the request actually left: vegeta's `timestamp`.
    pub fn sent_unix_ns(&self) -> u64 {
        self.intended_unix_ns.saturating_add(self.send_lag_ns)
    }

    /// Whether it is the first request of a run of a flow (in a flow's records,
    /// [`crate::AttackInfo::flow`]: `seq` is `run << 16 | request in the run`).
    pub fn starts_a_run(&self) -> bool {
        self.seq & 0xffff == 0
    }

    /// When the request completed or failed.
    pub fn end_unix_ns(&self) -> u64 {
        self.intended_unix_ns.saturating_add(self.latency_ns)
    }

    /// vegeta's success rule: a status in 200..400; and, in a flow, an answer its
    /// checks and extractions did not fail ([`Record::FAILED_BY_FLOW`]); and, for a
    /// gRPC call, `grpc-status` 0 (`OK`).
    pub fn is_success(&self) -> bool {
        (200..400).contains(&self.status)
            && self.checks_failed & Record::FAILED_BY_FLOW == 0
            && self.grpc_status.is_none_or(|s| s == GrpcStatus::OK)
    }

    /// Whether check `index` of the record's target failed.
    pub fn check_failed(&self, index: usize) -> bool {
        index < Record::MAX_CHECKS && self.checks_failed & (1 << index) != 0
    }
}

/// A gRPC status code (0 `OK` .. 16 `UNAUTHENTICATED`, and whatever else a server
/// sends up to 254). Stored as the code plus one, 0 for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrpcStatus(pub u8);

impl GrpcStatus {
    /// The call succeeded.
    pub const OK: GrpcStatus = GrpcStatus(0);

    /// The code's name as the spec spells it (`UNAVAILABLE`); `None` past 16.
    pub fn name(self) -> Option<&'static str> {
        units::GRPC_CODE_NAMES.get(usize::from(self.0)).copied()
    }

    /// The code of a `grpc-status` value (decimal digits); `None` for anything else.
    pub fn parse(value: &[u8]) -> Option<GrpcStatus> {
        if value.is_empty() || value.len() > 3 || !value.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let code = value.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        u8::try_from(code)
            .ok()
            .filter(|&c| c < u8::MAX)
            .map(GrpcStatus)
    }

    /// A status as JSON and CSV exports write it: its name (`UNAVAILABLE`), `code N`
    /// past the names, or its number; `Err` says what it wants.
    pub fn from_text(text: &str) -> Result<GrpcStatus, String> {
        let digits = text.strip_prefix("code ").unwrap_or(text);
        units::grpc_code(text)
            .map(GrpcStatus)
            .or_else(|| GrpcStatus::parse(digits.as_bytes()))
            .ok_or_else(|| {
                format!("{text:?} is no gRPC status: want a name like OK or UNAVAILABLE, or a code")
            })
    }

    /// What the `grpc_status` column stores: 0 for none, else the code plus one.
    pub(crate) fn stored(status: Option<GrpcStatus>) -> u64 {
        status.map_or(0, |s| u64::from(s.0) + 1)
    }

    /// The status the column's `value` stands for; `None` (outer) when out of range.
    pub(crate) fn from_stored(value: u64) -> Option<Option<GrpcStatus>> {
        match value {
            0 => Some(None),
            1..=255 => Some(Some(GrpcStatus(value as u8 - 1))),
            _ => None,
        }
    }
}

impl fmt::Display for GrpcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "code {}", self.0),
        }
    }
}

/// The HTTP version a request went out over. Stored as its [`Protocol::id`]; a new
/// variant takes the next id and comes with a format version bump, so a reader never
/// meets an id it does not know in a file of a version it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Protocol {
    /// HTTP/1.1 (and HTTP/1.0): every record before HTTP/2 existed here.
    #[default]
    Http1 = 0,
    /// HTTP/2, over TLS (ALPN `h2`) or cleartext with prior knowledge (`h2c`).
    Http2 = 1,
}

impl Protocol {
    /// Every protocol, in id order.
    pub const ALL: [Protocol; 2] = [Protocol::Http1, Protocol::Http2];

    /// The number stored on disk.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The protocol stored as `id`; `None` for an id this build does not know.
    pub fn from_id(id: u64) -> Option<Protocol> {
        // A match, not a search of `ALL`: readers call this once per record.
        match id {
            0 => Some(Protocol::Http1),
            1 => Some(Protocol::Http2),
            _ => None,
        }
    }

    /// The name reports and exports use: its ALPN id (`http/1.1`, `h2`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2 => "h2",
        }
    }

    /// The protocol named `name` ([`Protocol::name`]); `None` for any other text.
    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The names this build knows, for error messages: `http/1.1, h2`.
    pub fn known_names() -> String {
        Protocol::ALL.map(Protocol::name).join(", ")
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_statuses_parse_name_and_store() {
        let rows: &[(&[u8], Option<u8>, &str)] = &[
            (b"0", Some(0), "OK"),
            (b"14", Some(14), "UNAVAILABLE"),
            (b"4", Some(4), "DEADLINE_EXCEEDED"),
            (b"16", Some(16), "UNAUTHENTICATED"),
            (b"17", Some(17), "code 17"),
            (b"254", Some(254), "code 254"),
            (b"255", None, ""),
            (b"1000", None, ""),
            (b"", None, ""),
            (b"-1", None, ""),
            (b"OK", None, ""),
        ];
        for &(value, code, name) in rows {
            let got = GrpcStatus::parse(value);
            assert_eq!(got.map(|s| s.0), code, "{value:?}");
            if let Some(status) = got {
                assert_eq!(status.to_string(), name);
                let stored = GrpcStatus::stored(Some(status));
                assert_eq!(GrpcStatus::from_stored(stored), Some(Some(status)));
            }
        }
        assert_eq!(GrpcStatus::stored(None), 0);
        assert_eq!(GrpcStatus::from_stored(0), Some(None));
        assert_eq!(GrpcStatus::from_stored(256), None);
        let call = |grpc_status| Record {
            status: 200,
            grpc_status,
            ..Record::default()
        };
        assert!(call(None).is_success());
        assert!(call(Some(GrpcStatus::OK)).is_success());
        assert!(!call(Some(GrpcStatus(14))).is_success());
    }

    #[test]
    fn protocol_ids_and_names_round_trip() {
        let rows: &[(u64, Option<Protocol>)] = &[
            (0, Some(Protocol::Http1)),
            (1, Some(Protocol::Http2)),
            (2, None),
            (u64::from(u8::MAX) + 1, None),
            (u64::MAX, None),
        ];
        for &(id, want) in rows {
            assert_eq!(Protocol::from_id(id), want, "id {id}");
        }
        let names: &[(&str, Option<Protocol>)] = &[
            ("http/1.1", Some(Protocol::Http1)),
            ("h2", Some(Protocol::Http2)),
            ("H2", None),
            ("h2c", None),
            ("http/2", None),
            ("", None),
        ];
        for &(name, want) in names {
            assert_eq!(Protocol::from_name(name), want, "{name:?}");
        }
        for protocol in Protocol::ALL {
            assert_eq!(Protocol::from_id(u64::from(protocol.id())), Some(protocol));
            assert_eq!(Protocol::from_name(protocol.name()), Some(protocol));
            assert_eq!(protocol.to_string(), protocol.name());
        }
        assert_eq!(Protocol::default(), Protocol::Http1);
        assert_eq!(Protocol::known_names(), "http/1.1, h2");
    }
}
