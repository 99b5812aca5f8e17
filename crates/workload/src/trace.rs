//! Trace context (`-trace`, docs/TRACES.md): which requests carry a W3C `traceparent`
//! and with which ids. Both are pure functions of (seed, attack, request index), like
//! the templates' random values, so a run with the same `-seed` sends the same ids
//! whatever the thread count, and a reader can tell a request's ids from its record.

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
