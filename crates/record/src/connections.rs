//! Per-connection figures of the steps that hold a connection open (`ws`, `sse`;
//! docs/STREAMING.md): one [`Connection`] per connection that opened, with its
//! messages and bytes each way, its message latencies merged into a small
//! histogram ([`MessageLatency`]) and how it closed. A stream of millions of
//! messages costs one entry, not a record per message. Stored as JSON in optional
//! `connections` blocks (kind 0x43), so readers that predate them skip them and a run
//! without streams has exactly the bytes it had before.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The optional block kind of connection figures.
pub(crate) const CONNECTIONS_BLOCK: u8 = 0x43;

/// One connection's figures, written when it closed, or (format version 7 on) one
/// gRPC streaming call's ([`EntryKind::GrpcCall`]). It joins the record of its
/// upgrade (stream request, call) by `(attack, seq)`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Connection {
    /// Index into the header's attacks.
    pub attack: u16,
    /// The step's target (the upgrade's or the stream request's record's).
    pub target: u32,
    /// The `seq` of that record.
    pub seq: u64,
    /// When the upgrade's `101` (the stream's head) came, unix nanoseconds.
    pub opened_unix_ns: u64,
    /// When the connection closed, unix nanoseconds.
    pub closed_unix_ns: u64,
    /// Messages sent (WebSocket text or binary messages).
    pub messages_out: u64,
    /// Payload bytes of the messages sent.
    pub bytes_out: u64,
    /// Messages (or events) received.
    pub messages_in: u64,
    /// Payload bytes of the messages (the events' data) received.
    pub bytes_in: u64,
    /// Received messages that failed a check (an event failing the step's checks).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages_failed: u64,
    /// Message latencies: a WebSocket's round trips (an `expect` after a `send`), an
    /// event stream's gaps between events.
    #[serde(default, skip_serializing_if = "MessageLatency::is_empty")]
    pub latency: MessageLatency,
    /// Pings sent, and those the server never answered (a WebSocket's `ping`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pings: u64,
    /// Pings the server never answered with a pong.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pings_unanswered: u64,
    /// How it closed.
    pub close: Close,
    /// What the entry is about: a connection (absent) or a gRPC call (version 7 on).
    #[serde(default, skip_serializing_if = "EntryKind::is_connection")]
    pub kind: EntryKind,
    /// A gRPC call's time from its send to its first whole message received,
    /// nanoseconds; absent when none came (version 7 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message_ns: Option<u64>,
    /// A bidirectional gRPC call's round trips: its `k`-th answer against its `k`-th
    /// message, from when that message was due (version 8 on).
    #[serde(default, skip_serializing_if = "MessageLatency::is_empty")]
    pub round_trips: MessageLatency,
    /// The subprotocol the server chose (`Sec-WebSocket-Protocol`), when one was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprotocol: Option<String>,
    /// The compression the server agreed to (`deflate`: permessage-deflate), when one
    /// was offered and taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
    /// Times an event stream reconnected (`Last-Event-ID`) after the server closed it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reconnects: u64,
    /// An event stream's events by type (`event:`, `message` when none; version 9
    /// on): at most [`EVENT_TYPES`] types, the first by name, the rest (and a type
    /// named `other`, or one over [`EVENT_TYPE_BYTES`]) counted as `other`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub events: BTreeMap<String, u64>,
}

/// The event types an entry (and a report) names at most; the rest count as
/// [`OTHER_EVENTS`].
pub const EVENT_TYPES: usize = 16;
/// The longest event type named; a longer one counts as [`OTHER_EVENTS`].
pub const EVENT_TYPE_BYTES: usize = 64;
/// The name the events of types not named are counted under.
pub const OTHER_EVENTS: &str = "other";

/// Adds `counts` (events by type) into `into`, keeping the first [`EVENT_TYPES`]
/// types by name and counting the rest as [`OTHER_EVENTS`]: so merging is by
/// addition, and the result is the same in any order.
pub fn merge_event_types(into: &mut BTreeMap<String, u64>, counts: &BTreeMap<String, u64>) {
    for (name, count) in counts {
        *into.entry(name.clone()).or_default() += count;
    }
    let mut other = into.remove(OTHER_EVENTS).unwrap_or(0);
    if let Some(cut) = into.keys().nth(EVENT_TYPES).cloned() {
        other += into.split_off(&cut).values().sum::<u64>();
    }
    if other > 0 {
        into.insert(OTHER_EVENTS.to_owned(), other);
    }
}

/// What a [`Connection`] entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A `ws` or `sse` step's connection.
    #[default]
    Connection,
    /// A gRPC call that streams (`returns (stream ...)`): opened when it was sent,
    /// closed at its trailers; its `latency` holds the gaps between the messages
    /// received, its `round_trips` (a bidirectional call's) each answer against the
    /// message it answers, its `close` is `server` (or `broken` when reset or failed).
    GrpcCall,
}

impl EntryKind {
    fn is_connection(&self) -> bool {
        *self == EntryKind::Connection
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Who closed a connection, and with what code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Close {
    /// Who closed it.
    pub by: ClosedBy,
    /// The close frame's code; 0 when none was sent (an event stream, a connection
    /// dropped without a close frame).
    #[serde(default, skip_serializing_if = "is_zero_u16")]
    pub code: u16,
}

fn is_zero_u16(value: &u16) -> bool {
    *value == 0
}

/// Who closed a connection.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ClosedBy {
    /// loadlab (an action's `close`, the flow's end, the run's).
    #[default]
    Client,
    /// The server, with a close frame (or the end of an event stream).
    Server,
    /// Nobody cleanly: the connection broke or timed out.
    Broken,
    /// Nobody: it was open when the run ended (a stop rule, Ctrl-C), and loadlab
    /// closed it then, as the run ended.
    Open,
}

impl ClosedBy {
    /// Its name, as written.
    pub fn name(self) -> &'static str {
        match self {
            ClosedBy::Client => "client",
            ClosedBy::Server => "server",
            ClosedBy::Broken => "broken",
            ClosedBy::Open => "open",
        }
    }
}

/// Sub-buckets per power of two: a bucket is at most 1/32 (3%) of its values wide.
const SUB_BUCKETS: u64 = 32;
const SUB_BITS: u32 = 5;

/// A latency histogram small enough for one connection and mergeable across them:
/// log-linear buckets (exact below 32 ns, then 32 per power of two, so any quantile
/// read back is within 3% of the true value), kept sparse as `[bucket, count]` pairs
/// in bucket order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageLatency {
    buckets: Vec<(u16, u64)>,
}

impl MessageLatency {
    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|(_, count)| count).sum()
    }

    /// Empties it, keeping its room (a call's counter, reused).
    pub fn clear(&mut self) {
        self.buckets.clear();
    }

    /// Adds one latency.
    pub fn add(&mut self, latency_ns: u64) {
        self.add_count(bucket(latency_ns), 1);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &MessageLatency) {
        for &(bucket, count) in &other.buckets {
            self.add_count(bucket, count);
        }
    }

    fn add_count(&mut self, bucket: u16, count: u64) {
        match self.buckets.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(at) => self.buckets[at].1 += count,
            Err(at) => self.buckets.insert(at, (bucket, count)),
        }
    }

    /// The nearest-rank quantile `q` (0 to 1), as its bucket's middle; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(bucket, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(middle(bucket));
            }
        }
        self.buckets.last().map(|&(bucket, _)| middle(bucket))
    }

    /// The bucket `latency_ns` falls into, below [`MessageLatency::BUCKETS`]: a dense
    /// tally (an array of counts, nothing allocated per value) keeps its counts by it.
    pub fn bucket_of(latency_ns: u64) -> usize {
        usize::from(bucket(latency_ns))
    }

    /// The buckets that hold values, in order, with their counts.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.buckets
            .iter()
            .map(|&(bucket, count)| (usize::from(bucket), count))
    }

    /// How many buckets there are.
    pub const BUCKETS: usize = MAX_BUCKET as usize + 1;

    /// Adds `count` values to bucket `index` (below [`MessageLatency::BUCKETS`]; others
    /// are ignored); adding in bucket order appends.
    pub fn add_to_bucket(&mut self, index: usize, count: u64) {
        if let (Ok(bucket), true) = (u16::try_from(index), count > 0)
            && bucket <= MAX_BUCKET
        {
            self.add_count(bucket, count);
        }
    }

    /// Checks what was read: buckets in order, none past the last one, no zero count.
    pub fn check(&self) -> Result<(), String> {
        let in_order = self.buckets.windows(2).all(|w| w[0].0 < w[1].0);
        let valid = self
            .buckets
            .iter()
            .all(|&(bucket, count)| bucket <= MAX_BUCKET && count > 0);
        if in_order && valid {
            Ok(())
        } else {
            Err("latency buckets out of order, out of range or empty".to_owned())
        }
    }
}

/// The bucket of `u64::MAX`.
const MAX_BUCKET: u16 =
    (SUB_BUCKETS + (63 - SUB_BITS as u64) * SUB_BUCKETS + SUB_BUCKETS - 1) as u16;

fn bucket(value: u64) -> u16 {
    if value < SUB_BUCKETS {
        return value as u16;
    }
    let power = 63 - value.leading_zeros();
    let sub = (value >> (power - SUB_BITS)) - SUB_BUCKETS;
    (SUB_BUCKETS + u64::from(power - SUB_BITS) * SUB_BUCKETS + sub) as u16
}

/// The lowest value of `bucket` and its width.
fn bounds(bucket: u16) -> (u64, u64) {
    let bucket = u64::from(bucket);
    if bucket < SUB_BUCKETS {
        return (bucket, 1);
    }
    let shift = (bucket - SUB_BUCKETS) / SUB_BUCKETS;
    let sub = (bucket - SUB_BUCKETS) % SUB_BUCKETS;
    ((SUB_BUCKETS + sub) << shift, 1 << shift)
}

fn middle(bucket: u16) -> u64 {
    let (low, width) = bounds(bucket);
    low.saturating_add(width / 2)
}

/// The connections of stream steps (`ws`, `sse`) and streamed gRPC calls over one
/// stats interval (about a second; format version 8 on), in a [`GeneratorStats`]
/// sample: how many were open at its end, and what happened during it. Per interval,
/// never per message or per connection, so it stays bounded however many there are.
///
/// [`GeneratorStats`]: crate::GeneratorStats
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamStats {
    /// Connections (and calls) open at the sample's time.
    pub open: u64,
    /// Opened during the interval.
    pub opened: u64,
    /// Closed during the interval (whoever closed them).
    pub closed: u64,
    /// Messages sent during the interval.
    pub messages_out: u64,
    /// Their payload bytes.
    pub bytes_out: u64,
    /// Messages (events) received during the interval.
    pub messages_in: u64,
    /// Their payload bytes.
    pub bytes_in: u64,
    /// The message latencies timed during the interval (as a [`Connection`]'s).
    #[serde(default, skip_serializing_if = "MessageLatency::is_empty")]
    pub latency: MessageLatency,
}

impl StreamStats {
    /// Takes in the interval just before this one (its counts and latencies; the count
    /// open stays this sample's): a reader that drops samples keeps their figures.
    pub fn absorb_earlier(&mut self, earlier: &StreamStats) {
        self.opened += earlier.opened;
        self.closed += earlier.closed;
        self.messages_out += earlier.messages_out;
        self.bytes_out += earlier.bytes_out;
        self.messages_in += earlier.messages_in;
        self.bytes_in += earlier.bytes_in;
        self.latency.merge(&earlier.latency);
    }
}

/// A connections block's payload.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConnectionsBlock<C> {
    pub connections: C,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_within_three_percent() {
        for value in [
            0,
            1,
            31,
            32,
            33,
            63,
            64,
            1000,
            123_456_789,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let (low, width) = bounds(bucket(value));
            assert!(
                low <= value && value - low < width,
                "{value} in [{low}, +{width})"
            );
            assert!(width == 1 || width * 32 <= low, "{value}: width {width}");
        }
        assert_eq!(bucket(u64::MAX), MAX_BUCKET);
    }

    #[test]
    fn quantiles_of_merged_histograms_are_those_of_all_values() {
        let (mut a, mut b) = (MessageLatency::default(), MessageLatency::default());
        for ms in 1..=50u64 {
            a.add(ms * 1_000_000);
        }
        for ms in 51..=100u64 {
            b.add(ms * 1_000_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        for (q, want_ms) in [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0), (1.0, 100.0)] {
            let got_ms = a.quantile(q).unwrap() as f64 / 1e6;
            assert!(
                (got_ms - want_ms).abs() <= want_ms * 0.03,
                "q{q}: {got_ms} ms, want {want_ms}"
            );
        }
        assert_eq!(MessageLatency::default().quantile(0.5), None);
    }

    #[test]
    fn a_dense_tally_added_by_bucket_equals_the_values_added_one_by_one() {
        let values = [0u64, 31, 32, 1_000, 1_000, 999_999, 5_000_000_000, u64::MAX];
        let (mut one_by_one, mut dense) = (
            MessageLatency::default(),
            vec![0u64; MessageLatency::BUCKETS],
        );
        for value in values {
            one_by_one.add(value);
            dense[MessageLatency::bucket_of(value)] += 1;
        }
        let mut by_bucket = MessageLatency::default();
        for (index, count) in dense.iter().enumerate() {
            by_bucket.add_to_bucket(index, *count);
        }
        by_bucket.add_to_bucket(MessageLatency::BUCKETS, 5);
        assert_eq!(by_bucket, one_by_one);
        assert!(by_bucket.check().is_ok());
    }

    /// `t00` to `t{n-1}`, each counted `count` times.
    fn types(n: usize, count: u64) -> Vec<(String, u64)> {
        (0..n).map(|i| (format!("t{i:02}"), count)).collect()
    }

    fn counted(pairs: Vec<(String, u64)>) -> BTreeMap<String, u64> {
        pairs.into_iter().collect()
    }

    fn one(name: &str, count: u64) -> Vec<(String, u64)> {
        vec![(name.to_owned(), count)]
    }

    #[test]
    fn event_types_merge_keeping_the_first_sixteen_by_name_and_the_rest_as_other() {
        // (into, added, want)
        let rows: Vec<[Vec<(String, u64)>; 3]> = vec![
            [
                one("message", 3),
                [one("message", 2), one("tick", 1)].concat(),
                [one("message", 5), one("tick", 1)].concat(),
            ],
            // Nothing added: nothing named, no `other`.
            [vec![], vec![], vec![]],
            // Past 16 types the last four by name are `other`.
            [
                vec![],
                types(20, 1),
                [types(16, 1), one("other", 4)].concat(),
            ],
            // `other` adds to `other`, and is no type of the sixteen.
            [
                one("other", 2),
                types(20, 1),
                [types(16, 1), one("other", 6)].concat(),
            ],
            // A type before the others by name pushes the last one out.
            [
                types(16, 2),
                one("a", 1),
                [one("a", 1), types(15, 2), one("other", 2)].concat(),
            ],
        ];
        for [into, added, want] in rows {
            let mut merged = counted(into.clone());
            merge_event_types(&mut merged, &counted(added.clone()));
            assert_eq!(merged, counted(want), "{into:?} + {added:?}");
        }
        // Any order of merging gives the same counts.
        let parts: Vec<BTreeMap<String, u64>> = (0..20)
            .map(|i| counted(one(["b", "a", "z", "m"][i % 4], 1)))
            .chain([counted(types(20, 1))])
            .collect();
        let (mut forward, mut backward) = (BTreeMap::new(), BTreeMap::new());
        for part in &parts {
            merge_event_types(&mut forward, part);
        }
        for part in parts.iter().rev() {
            merge_event_types(&mut backward, part);
        }
        assert_eq!(forward, backward);
        assert_eq!(forward.values().sum::<u64>(), 40);
        assert_eq!(forward.len(), EVENT_TYPES + 1);
    }

    #[test]
    fn bad_buckets_read_back_are_refused() {
        let rows: &[(&str, bool)] = &[
            ("[[1,2],[5,1]]", true),
            ("[[5,1],[1,2]]", false),
            ("[[1,0]]", false),
            ("[[60000,1]]", false),
        ];
        for (json, good) in rows {
            let latency: MessageLatency = serde_json::from_str(json).unwrap();
            assert_eq!(latency.check().is_ok(), *good, "{json}");
        }
    }
}
