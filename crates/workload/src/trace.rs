//! Trace context (`-trace`, docs/TRACES.md): which requests carry a W3C `traceparent`
//! and with which ids. Both are pure functions of (seed, attack, request index), like
//! the templates' random values, so a run with the same `-seed` sends the same ids
//! whatever the thread count, and a reader can tell a request's ids from its record.

use std::sync::Arc;

use crate::rng::Rng;

/// The header's name, as sent (lowercase: HTTP/2 wants it so).
pub const TRACEPARENT: &str = "traceparent";
/// The hex digits of a trace id, a dash and those of a span id: what changes per
/// request inside `traceparent: 00-…-01`.
pub const TRACE_HEX_LEN: usize = 32 + 1 + 16;
/// The whole header line as sent, with the ids' place zeroed: rendered once, its
/// digits overwritten per request.
pub const TRACEPARENT_LINE: &[u8] =
    b"traceparent: 00-00000000000000000000000000000000-0000000000000000-01\r\n";
/// Where the trace id's digits start in [`TRACEPARENT_LINE`].
pub const TRACEPARENT_IDS_AT: usize = "traceparent: 00-".len();

/// The `tracestate` header's name, as sent.
pub const TRACESTATE: &str = "tracestate";
/// The most list-members a `tracestate` may hold (W3C Trace Context §3.3.1.1).
const TRACESTATE_MAX_MEMBERS: usize = 32;

/// A checked W3C `tracestate` value (`-trace-state`), kept as the header line it is
/// sent as: rendered once, copied beside every `traceparent` loadlab writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceState {
    line: Arc<[u8]>,
}

impl TraceState {
    /// Checks `text` as a `tracestate` list: comma-separated `key=value` members
    /// (empty ones skipped), at most 32, no key twice. The error names the member.
    pub fn parse(text: &str) -> Result<TraceState, String> {
        let members: Vec<&str> = (text.split(','))
            .map(|m| m.trim_matches([' ', '\t']))
            .filter(|m| !m.is_empty())
            .collect();
        if members.is_empty() {
            return Err("want key=value list-members, like vendor=abc,tenant@system=1".to_owned());
        }
        if members.len() > TRACESTATE_MAX_MEMBERS {
            return Err(format!(
                "{} list-members: at most {TRACESTATE_MAX_MEMBERS}",
                members.len()
            ));
        }
        let mut keys = Vec::with_capacity(members.len());
        for member in &members {
            let Some((key, value)) = member.split_once('=') else {
                return Err(format!("member {member:?}: want key=value"));
            };
            if !is_state_key(key) {
                return Err(format!(
                    "member {member:?}: the key is not lowercase letters, digits and _-*/ (at most 256, or tenant@system), starting with a letter"
                ));
            }
            if !is_state_value(value) {
                return Err(format!(
                    "member {member:?}: the value is not 1 to 256 printable characters without ',' and '=' (ending in no space)"
                ));
            }
            if keys.contains(&key) {
                return Err(format!("member {member:?}: the key {key:?} comes twice"));
            }
            keys.push(key);
        }
        let line = format!("{TRACESTATE}: {}\r\n", members.join(","));
        Ok(TraceState {
            line: line.into_bytes().into(),
        })
    }

    /// The whole header line, CRLF-ended, as sent.
    pub fn line(&self) -> &Arc<[u8]> {
        &self.line
    }

    /// The value as sent (members joined by `,`).
    pub fn value(&self) -> &str {
        let line = std::str::from_utf8(&self.line).unwrap_or_default();
        line[TRACESTATE.len() + 2..].trim_end()
    }
}

/// A `tracestate` key: `simple-key` or `tenant-id@system-id` (W3C §3.3.1.3.1).
fn is_state_key(key: &str) -> bool {
    let rest_ok = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/".contains(&b))
    };
    match key.split_once('@') {
        None => {
            key.len() <= 256 && key.starts_with(|c: char| c.is_ascii_lowercase()) && rest_ok(key)
        }
        Some((tenant, system)) => {
            (1..=241).contains(&tenant.len())
                && tenant.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && rest_ok(tenant)
                && (1..=14).contains(&system.len())
                && system.starts_with(|c: char| c.is_ascii_lowercase())
                && rest_ok(system)
        }
    }
}

/// A `tracestate` value: 1 to 256 of 0x20-0x7E but `,` and `=`, not ending in a space.
fn is_state_value(value: &str) -> bool {
    (1..=256).contains(&value.len())
        && !value.ends_with(' ')
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
}

/// The stream of the per-request generator the trace draws come from (templates use
/// their placeholder indices, data rows `u64::MAX`).
const TRACE_STREAM: u64 = u64::MAX - 1;

/// Which requests carry a trace context: a share of them, drawn per request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSettings {
    /// The share of requests sampled, in (0, 1] (`-trace-sample`).
    pub sample: f64,
}

/// A request's trace and span ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceIds {
    /// The W3C trace id (never 0).
    pub trace_id: u128,
    /// The span id of the request, the server's parent (never 0).
    pub span_id: u64,
}

/// Decides per request, from the run's seed, whether it is traced and with which ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceSampler {
    seed: u64,
    /// A request is sampled when its draw is at most this.
    max_draw: u64,
}

impl TraceSampler {
    /// The sampler of a run seeded with `seed`.
    pub fn new(settings: TraceSettings, seed: u64) -> TraceSampler {
        // `as` saturates: a share of 1 samples every draw.
        let max_draw = (settings.sample * 2f64.powi(64)) as u64;
        TraceSampler {
            seed,
            max_draw: max_draw.saturating_sub(u64::from(settings.sample < 1.0)),
        }
    }

    /// The ids of request `seq` of attack `attack`, when it is sampled. Allocates
    /// nothing: four SplitMix64 draws.
    pub fn ids(&self, attack: u16, seq: u64) -> Option<TraceIds> {
        let mut rng = Rng::for_request(
            self.seed ^ u64::from(attack).rotate_left(48),
            seq,
            TRACE_STREAM,
        );
        if rng.next() > self.max_draw {
            return None;
        }
        let high = u128::from(rng.next());
        let trace_id = (high << 64 | u128::from(rng.next())).max(1);
        Some(TraceIds {
            trace_id,
            span_id: rng.next().max(1),
        })
    }
}

impl TraceIds {
    /// Writes `<32 hex>-<16 hex>` (lowercase, as W3C wants) over `out`'s first
    /// [`TRACE_HEX_LEN`] bytes.
    pub fn write_hex(&self, out: &mut [u8]) {
        let (trace, rest) = out[..TRACE_HEX_LEN].split_at_mut(32);
        put_hex(trace, self.trace_id);
        rest[0] = b'-';
        put_hex(&mut rest[1..], u128::from(self.span_id));
    }

    /// The trace id as 32 lowercase hex digits (for records and reports).
    pub fn trace_hex(&self) -> String {
        format!("{:032x}", self.trace_id)
    }

    /// The span id as 16 lowercase hex digits.
    pub fn span_hex(&self) -> String {
        format!("{:016x}", self.span_id)
    }
}

/// `value`'s low `out.len() * 4` bits as lowercase hex, most significant first.
fn put_hex(out: &mut [u8], mut value: u128) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in out.iter_mut().rev() {
        *byte = DIGITS[(value & 0xf) as usize];
        value >>= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracestate_values_are_checked_member_by_member() {
        let many = (0..33).map(|n| format!("k{n}=v")).collect::<Vec<_>>();
        let long_key = format!("{}=1", "a".repeat(257));
        // (value, the line sent, or what the error says)
        let rows: [(&str, Result<&str, &str>); 16] = [
            ("vendor=abc", Ok("tracestate: vendor=abc\r\n")),
            (
                " rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE ",
                Ok("tracestate: rojo=00f067aa0ba902b7,congo=t61rcWkgMzE\r\n"),
            ),
            (
                "tenant@system=1,,a_-*/9=x y",
                Ok("tracestate: tenant@system=1,a_-*/9=x y\r\n"),
            ),
            ("7tenant@sys=1", Ok("tracestate: 7tenant@sys=1\r\n")),
            (&many[..32].join(","), Ok("")),
            ("", Err("want key=value list-members")),
            (" , ", Err("want key=value list-members")),
            (&many.join(","), Err("33 list-members: at most 32")),
            ("vendor", Err("member \"vendor\": want key=value")),
            ("Vendor=1", Err("member \"Vendor=1\": the key is not")),
            ("1abc=1", Err("member \"1abc=1\": the key is not")),
            ("a@Sys=1", Err("member \"a@Sys=1\": the key is not")),
            (&long_key, Err("the key is not")),
            ("a=", Err("member \"a=\": the value is not")),
            ("a=b=c", Err("member \"a=b=c\": the value is not")),
            (
                "a=1,b=2,a=3",
                Err("member \"a=3\": the key \"a\" comes twice"),
            ),
        ];
        for (value, want) in rows {
            let got = TraceState::parse(value);
            match (want, got) {
                (Ok(""), Ok(_)) => {}
                (Ok(line), Ok(state)) => {
                    assert_eq!(std::str::from_utf8(state.line()).unwrap(), line);
                    assert_eq!(state.value(), &line[12..line.len() - 2]);
                }
                (Err(part), Err(error)) => assert!(error.contains(part), "{value:?}: {error}"),
                (want, got) => panic!("{value:?}: want {want:?}, got {got:?}"),
            }
        }
        // A value's bytes outside the printable range are refused, a tab among them.
        for value in ["a=x\ty", "a=\u{e9}", "a=x\r\nInjected: 1"] {
            assert!(TraceState::parse(value).is_err(), "{value:?}");
        }
    }

    #[test]
    fn ids_repeat_per_seed_and_differ_per_request_and_attack() {
        let every = TraceSampler::new(TraceSettings { sample: 1.0 }, 7);
        let a = every.ids(0, 1).unwrap();
        assert_eq!(every.ids(0, 1), Some(a));
        assert_ne!(every.ids(0, 2), Some(a));
        assert_ne!(every.ids(1, 1), Some(a));
        let other_seed = TraceSampler::new(TraceSettings { sample: 1.0 }, 8);
        assert_ne!(other_seed.ids(0, 1), Some(a));
        assert!((0..10_000).all(|seq| every.ids(0, seq).is_some()));
    }

    #[test]
    fn samples_about_the_share_asked() {
        // (share, least and most sampled of 100,000)
        let rows = [
            (0.01, 850, 1_150),
            (0.5, 49_000, 51_000),
            (1.0, 100_000, 100_000),
        ];
        for (sample, least, most) in rows {
            let sampler = TraceSampler::new(TraceSettings { sample }, 42);
            let sampled = (0..100_000)
                .filter(|&seq| sampler.ids(0, seq).is_some())
                .count();
            assert!((least..=most).contains(&sampled), "{sample}: {sampled}");
        }
    }

    #[test]
    fn writes_the_ids_in_place_as_lowercase_hex() {
        let ids = TraceIds {
            trace_id: 0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c,
            span_id: 0xb7ad_6b71_6920_3331,
        };
        let mut line = TRACEPARENT_LINE.to_vec();
        ids.write_hex(&mut line[TRACEPARENT_IDS_AT..]);
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
        );
        assert_eq!(ids.trace_hex(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(ids.span_hex(), "b7ad6b7169203331");
    }
}
