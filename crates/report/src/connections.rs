//! The connections of `ws` and `sse` steps (docs/STREAMING.md): each connection's
//! figures ([`record::Connection`], written when it closed) folded per target, and
//! merged per group when rendered: connections opened, the peak held at once, the
//! count open each second (a series kept for charts), messages and bytes each way,
//! message latency percentiles from the merged histograms, an event stream's events
//! by type and its body's bytes a second, and closes by who and code.
//!
//! Streaming gRPC calls' entries ([`record::EntryKind::GrpcCall`]) fold apart, as
//! [`StreamedCalls`]: calls, messages per call, time to the first message and to the
//! end, the gaps between messages.
//!
//! Memory: a few hundred bytes per target, and 16 bytes per connection for the exact
//! peak (every open and close time; 50,000 connections cost 800 KB); 8 bytes per
//! streamed call for the exact messages per call, and per event stream (or `stream`
//! step) for its body's exact bytes a second.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use record::{ClosedBy, Connection, EntryKind, MessageLatency};
use units::GoDuration;

use crate::json_write::{push_float, push_list, push_nullable, push_string};
use crate::tabwriter::align;
use crate::text::{BRACKET_WIDTH, LABEL_WIDTH};

/// Every connection folded, by (attack, target) of its upgrade's record.
#[derive(Debug, Clone, Default)]
pub struct Connections {
    by_target: BTreeMap<(u16, u32), Folded>,
    calls: BTreeMap<(u16, u32), StreamedCalls>,
}

/// Streaming gRPC calls (a group's, or the run's), merged: what `report` words in its
/// `Stream Calls` rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamedCalls {
    /// Calls with an entry (every streaming call that was sent).
    pub calls: u64,
    /// Calls that ended without their trailers (reset, failed, over the size limit).
    pub broken: u64,
    /// Messages sent (every message of a call's request stream).
    pub messages_out: u64,
    /// Their payload bytes.
    pub bytes_out: u64,
    /// Messages received.
    pub messages_in: u64,
    /// Payload bytes received.
    pub bytes_in: u64,
    /// Each call's messages received, in no order (exact percentiles).
    pub per_call: Vec<u64>,
    /// Each call's send to its first whole message (calls that got one).
    pub first_message: MessageLatency,
    /// Each call's send to its end.
    pub to_end: MessageLatency,
    /// The gaps between a call's consecutive messages.
    pub gaps: MessageLatency,
    /// Bidirectional calls' answers, each against the message it answers.
    pub round_trips: MessageLatency,
    /// The first send and the last end, unix nanoseconds (the span messages/s is over).
    pub first_sent_unix_ns: u64,
    /// The last end, unix nanoseconds.
    pub last_end_unix_ns: u64,
}

impl StreamedCalls {
    fn add(&mut self, c: &Connection) {
        if self.calls == 0 || c.opened_unix_ns < self.first_sent_unix_ns {
            self.first_sent_unix_ns = c.opened_unix_ns;
        }
        self.last_end_unix_ns = self.last_end_unix_ns.max(c.closed_unix_ns);
        self.calls += 1;
        self.broken += u64::from(c.close.by == ClosedBy::Broken);
        self.messages_out += c.messages_out;
        self.bytes_out += c.bytes_out;
        self.messages_in += c.messages_in;
        self.bytes_in += c.bytes_in;
        self.per_call.push(c.messages_in);
        if let Some(first_ns) = c.first_message_ns {
            self.first_message.add(first_ns);
        }
        self.to_end
            .add(c.closed_unix_ns.saturating_sub(c.opened_unix_ns));
        self.gaps.merge(&c.latency);
        self.round_trips.merge(&c.round_trips);
    }

    fn merge(&mut self, other: &StreamedCalls) {
        if other.calls == 0 {
            return;
        }
        if self.calls == 0 || other.first_sent_unix_ns < self.first_sent_unix_ns {
            self.first_sent_unix_ns = other.first_sent_unix_ns;
        }
        self.last_end_unix_ns = self.last_end_unix_ns.max(other.last_end_unix_ns);
        self.calls += other.calls;
        self.broken += other.broken;
        self.messages_out += other.messages_out;
        self.bytes_out += other.bytes_out;
        self.messages_in += other.messages_in;
        self.bytes_in += other.bytes_in;
        self.per_call.extend_from_slice(&other.per_call);
        self.first_message.merge(&other.first_message);
        self.to_end.merge(&other.to_end);
        self.gaps.merge(&other.gaps);
        self.round_trips.merge(&other.round_trips);
    }

    /// Messages per call: the median and the most (nearest rank); `None` without calls.
    pub fn per_call_p50_max(&self) -> Option<(u64, u64)> {
        let mut sorted = self.per_call.clone();
        sorted.sort_unstable();
        let max = *sorted.last()?;
        Some((sorted[(sorted.len() - 1) / 2], max))
    }

    /// Messages received a second, over the first send to the last end.
    pub fn messages_per_second(&self) -> f64 {
        let span_ns = self
            .last_end_unix_ns
            .saturating_sub(self.first_sent_unix_ns);
        if span_ns == 0 {
            return 0.0;
        }
        self.messages_in as f64 / (span_ns as f64 / 1e9)
    }
}

#[derive(Debug, Clone, Default)]
struct Folded {
    figures: ConnectionFigures,
    /// (time, +1 open / -1 close), unix ns.
    edges: Vec<(u64, i8)>,
}

/// The connections of a group (or the run), merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionFigures {
    /// Connections that opened.
    pub opened: u64,
    /// The most open at once.
    pub peak_held: u64,
    /// When they first were, unix ns.
    pub peak_held_at_unix_ns: u64,
    /// The unix second of [`ConnectionFigures::open_per_second`]'s first entry.
    pub first_second_unix: u64,
    /// Connections open during each second from the first opening (any part of it).
    pub open_per_second: Vec<u64>,
    /// From the first opening to the last close, nanoseconds.
    pub span_ns: u64,
    /// Messages sent and received.
    pub messages_out: u64,
    /// Messages (events) received.
    pub messages_in: u64,
    /// Payload bytes sent.
    pub bytes_out: u64,
    /// Payload bytes received.
    pub bytes_in: u64,
    /// Received messages that failed a check.
    pub messages_failed: u64,
    /// Round trips (WebSocket) and gaps between events (SSE), merged.
    pub latency: MessageLatency,
    /// Pings sent and those never answered.
    pub pings: u64,
    /// Pings the server never answered.
    pub pings_unanswered: u64,
    /// Event-stream reconnects.
    pub reconnects: u64,
    /// Events by type (`event:`): the first [`record::EVENT_TYPES`] by name, the
    /// rest as `other`.
    pub events: BTreeMap<String, u64>,
    /// Closes by (who, code), in that order.
    pub closes: BTreeMap<(ClosedBy, u16), u64>,
    /// Event streams' and `stream` steps' bodies (the first event or chunk to the
    /// end): each one's bytes a second, rounded, in no order (exact percentiles), and
    /// their bytes and time together.
    pub body_rates: Vec<u64>,
    /// Bytes of those bodies.
    pub body_bytes: u64,
    /// Time of those bodies, nanoseconds.
    pub body_ns: u64,
}

impl Connections {
    /// Adds connection figures (merged ids, any order).
    pub fn add(&mut self, connections: &[Connection]) {
        for c in connections {
            let key = (c.attack, c.target);
            match c.kind {
                EntryKind::Connection => self.by_target.entry(key).or_default().add(c),
                EntryKind::GrpcCall => self.calls.entry(key).or_default().add(c),
            }
        }
    }

    /// The streamed gRPC calls whose (attack, target) `keep` says, merged; `None`
    /// when there are none.
    pub fn calls(&self, mut keep: impl FnMut(u16, u32) -> bool) -> Option<StreamedCalls> {
        let mut merged = StreamedCalls::default();
        for (&(attack, target), calls) in &self.calls {
            if keep(attack, target) {
                merged.merge(calls);
            }
        }
        (merged.calls > 0).then_some(merged)
    }

    /// Whether any connection (or streamed call) was folded.
    pub fn is_empty(&self) -> bool {
        self.by_target.is_empty() && self.calls.is_empty()
    }

    /// The figures of the connections whose (attack, target) `keep` says, merged;
    /// `None` when there are none.
    pub fn merged(&self, mut keep: impl FnMut(u16, u32) -> bool) -> Option<ConnectionFigures> {
        let mut figures = ConnectionFigures::default();
        let mut edges = Vec::new();
        for (&(attack, target), folded) in &self.by_target {
            if keep(attack, target) {
                figures.merge(&folded.figures);
                edges.extend_from_slice(&folded.edges);
            }
        }
        (figures.opened > 0).then(|| figures.held(edges))
    }
}

impl Folded {
    fn add(&mut self, c: &Connection) {
        self.figures.merge(&ConnectionFigures::of(c));
        let closed = c.closed_unix_ns.max(c.opened_unix_ns);
        self.edges.push((c.opened_unix_ns, 1));
        self.edges.push((closed, -1));
    }
}

impl ConnectionFigures {
    /// One connection's figures (without its times: the peak and series come from
    /// every connection's together).
    fn of(c: &Connection) -> ConnectionFigures {
        // A body that came in one read has no time to be a rate over.
        let body_ns = (c.first_message_ns)
            .map(|first_ns| {
                let body_from = c.opened_unix_ns.saturating_add(first_ns);
                c.closed_unix_ns.saturating_sub(body_from)
            })
            .filter(|&ns| ns > 0);
        let body_rates = body_ns
            .map(|ns| (c.bytes_in as f64 * 1e9 / ns as f64).round() as u64)
            .into_iter()
            .collect();
        ConnectionFigures {
            body_rates,
            body_bytes: body_ns.map_or(0, |_| c.bytes_in),
            body_ns: body_ns.unwrap_or(0),
            opened: 1,
            messages_out: c.messages_out,
            messages_in: c.messages_in,
            bytes_out: c.bytes_out,
            bytes_in: c.bytes_in,
            messages_failed: c.messages_failed,
            latency: c.latency.clone(),
            pings: c.pings,
            pings_unanswered: c.pings_unanswered,
            reconnects: c.reconnects,
            events: c.events.clone(),
            closes: [((c.close.by, c.close.code), 1)].into(),
            ..ConnectionFigures::default()
        }
    }

    fn merge(&mut self, other: &ConnectionFigures) {
        self.opened += other.opened;
        self.messages_out += other.messages_out;
        self.messages_in += other.messages_in;
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
        self.messages_failed += other.messages_failed;
        self.latency.merge(&other.latency);
        self.pings += other.pings;
        self.pings_unanswered += other.pings_unanswered;
        self.reconnects += other.reconnects;
        record::merge_event_types(&mut self.events, &other.events);
        self.body_rates.extend_from_slice(&other.body_rates);
        self.body_bytes += other.body_bytes;
        self.body_ns += other.body_ns;
        for (key, count) in &other.closes {
            *self.closes.entry(*key).or_default() += count;
        }
    }

    /// The peak, the span and the per-second series from every open and close.
    fn held(mut self, mut edges: Vec<(u64, i8)>) -> ConnectionFigures {
        // Closes before opens at the same instant: a connection replaced is not two.
        edges.sort_unstable();
        let (mut open, mut peak) = (0i64, 0i64);
        for &(at, delta) in &edges {
            open += i64::from(delta);
            if open > peak {
                (peak, self.peak_held_at_unix_ns) = (open, at);
            }
        }
        self.peak_held = peak as u64;
        let (Some(first), Some(last)) = (edges.first(), edges.last()) else {
            return self;
        };
        self.span_ns = last.0 - first.0;
        let first_s = first.0 / 1_000_000_000;
        let seconds = (last.0 / 1_000_000_000 - first_s + 1) as usize;
        // Open during second s: opened by its end and not closed before its start.
        let mut starts = vec![0i64; seconds + 1];
        for &(at, delta) in &edges {
            let s = (at / 1_000_000_000 - first_s) as usize;
            if delta > 0 {
                starts[s] += 1;
            } else {
                starts[s + 1] -= 1;
            }
        }
        let mut running = 0i64;
        self.open_per_second = starts[..seconds]
            .iter()
            .map(|d| {
                running += d;
                running.max(0) as u64
            })
            .collect();
        self.first_second_unix = first_s;
        self
    }

    /// Messages a second each way over the connections' span.
    pub fn per_second(&self, messages: u64) -> f64 {
        if self.span_ns == 0 {
            return 0.0;
        }
        messages as f64 / (self.span_ns as f64 / 1e9)
    }
}

impl ConnectionFigures {
    /// The bodies' bytes a second: the median stream's, and all of them together
    /// (every body's bytes over every body's time); `None` when no body was timed.
    pub fn body_bytes_per_sec(&self) -> Option<(u64, f64)> {
        let mut sorted = self.body_rates.clone();
        sorted.sort_unstable();
        let p50 = *sorted.get(sorted.len().checked_sub(1)? / 2)?;
        Some((
            p50,
            self.body_bytes as f64 / (self.body_ns.max(1) as f64 / 1e9),
        ))
    }

    /// Connections open during the last second of the connections' span.
    pub fn open_last_second(&self) -> u64 {
        self.open_per_second.last().copied().unwrap_or(0)
    }
}

/// Appends the connections as one JSON object: the text rows' figures as numbers
/// (latencies in ns, `null` when no message was timed; rates unrounded), closes as
/// `{"by","code","count"}` in (by, code) order, and the count open each second from
/// `first_second_unix`.
pub fn write_connections_json(out: &mut String, figures: &ConnectionFigures) {
    let _ = write!(
        out,
        "{{\"opened\":{},\"peak_held\":{},\"open_last_second\":{},\
         \"messages_out\":{},\"messages_in\":{},\"messages_out_per_sec\":",
        figures.opened,
        figures.peak_held,
        figures.open_last_second(),
        figures.messages_out,
        figures.messages_in
    );
    push_float(out, figures.per_second(figures.messages_out));
    out.push_str(",\"messages_in_per_sec\":");
    push_float(out, figures.per_second(figures.messages_in));
    let _ = write!(
        out,
        ",\"bytes_out\":{},\"bytes_in\":{},\"messages_failed\":{},\"latency\":",
        figures.bytes_out, figures.bytes_in, figures.messages_failed
    );
    push_latency_json(out, &figures.latency);
    let _ = write!(
        out,
        ",\"pings\":{},\"pings_unanswered\":{},\"reconnects\":{},\"events\":",
        figures.pings, figures.pings_unanswered, figures.reconnects
    );
    push_events_json(out, &figures.events);
    out.push_str(",\"body_bytes_per_sec\":");
    push_nullable(out, figures.body_bytes_per_sec(), |out, (p50, total)| {
        let _ = write!(
            out,
            "{{\"streams\":{},\"50th\":{p50},\"total\":",
            figures.body_rates.len()
        );
        push_float(out, total);
        out.push('}');
    });
    out.push_str(",\"closes\":");
    push_list(out, &figures.closes, |out, (&(by, code), count)| {
        let _ = write!(
            out,
            "{{\"by\":\"{}\",\"code\":{code},\"count\":{count}}}",
            by.name()
        );
    });
    let _ = write!(
        out,
        ",\"span_ns\":{},\"first_second_unix\":{},\"open_per_second\":",
        figures.span_ns, figures.first_second_unix
    );
    push_list(out, &figures.open_per_second, |out, open| {
        let _ = write!(out, "{open}");
    });
    out.push('}');
}

/// Events by type as `{"message":180,"tick":20}`, in name order and `other` last
/// (`{}` when none).
fn push_events_json(out: &mut String, events: &BTreeMap<String, u64>) {
    out.push('{');
    for (i, (name, count)) in by_type(events).enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_string(out, name);
        let _ = write!(out, ":{count}");
    }
    out.push('}');
}

/// A histogram as `{"count","50th","90th","99th","max"}` in ns, or `null` when empty.
fn push_latency_json(out: &mut String, latency: &MessageLatency) {
    push_nullable(
        out,
        (!latency.is_empty()).then_some(latency),
        |out, latency| {
            let quantile = |q| latency.quantile(q).unwrap_or(0);
            let _ = write!(
                out,
                "{{\"count\":{},\"50th\":{},\"90th\":{},\"99th\":{},\"max\":{}}}",
                latency.count(),
                quantile(0.5),
                quantile(0.9),
                quantile(0.99),
                quantile(1.0)
            );
        },
    );
}

/// The streamed gRPC calls' figures as a JSON object: the same ones the text rows
/// word (`Stream Calls`, `Msgs/Call`, ...), latencies in ns.
pub fn write_calls_json(out: &mut String, calls: &StreamedCalls) {
    let _ = write!(
        out,
        "{{\"calls\":{},\"broken\":{},\"messages_per_call\":",
        calls.calls, calls.broken
    );
    push_nullable(out, calls.per_call_p50_max(), |out, (p50, max)| {
        let _ = write!(out, "{{\"50th\":{p50},\"max\":{max}}}");
    });
    let _ = write!(
        out,
        ",\"messages_out\":{},\"messages_in\":{},\"messages_in_per_sec\":",
        calls.messages_out, calls.messages_in
    );
    push_float(out, calls.messages_per_second());
    let _ = write!(
        out,
        ",\"bytes_out\":{},\"bytes_in\":{}",
        calls.bytes_out, calls.bytes_in
    );
    for (key, latency) in [
        ("first_message", &calls.first_message),
        ("call_end", &calls.to_end),
        ("gaps", &calls.gaps),
        ("round_trips", &calls.round_trips),
    ] {
        let _ = write!(out, ",\"{key}\":");
        push_latency_json(out, latency);
    }
    out.push('}');
}

/// Appends the connection rows (after a blank line), aligned to the report's columns.
pub fn write_connections_text(out: &mut String, figures: &ConnectionFigures) {
    let mut rows = String::new();
    let open_at_end = figures.open_last_second();
    let _ = writeln!(
        rows,
        "Connections\t[opened, peak held, last second]\t{}, {}, {}",
        figures.opened, figures.peak_held, open_at_end
    );
    let _ = writeln!(
        rows,
        "Messages\t[out, in, out/s, in/s]\t{}, {}, {:.2}, {:.2}",
        figures.messages_out,
        figures.messages_in,
        figures.per_second(figures.messages_out),
        figures.per_second(figures.messages_in)
    );
    let _ = writeln!(
        rows,
        "Msg Bytes\t[out, in]\t{}, {}",
        figures.bytes_out, figures.bytes_in
    );
    if !figures.latency.is_empty() {
        let _ = writeln!(
            rows,
            "Msg Latency\t[50, 90, 99, max]\t{}",
            quantiles_text(&figures.latency)
        );
    }
    if figures.messages_failed > 0 {
        let _ = writeln!(
            rows,
            "Msg Checks\t[messages failed]\t{}",
            figures.messages_failed
        );
    }
    if figures.pings > 0 {
        let _ = writeln!(
            rows,
            "Pings\t[sent, unanswered]\t{}, {}",
            figures.pings, figures.pings_unanswered
        );
    }
    if figures.reconnects > 0 {
        let _ = writeln!(rows, "Reconnects\t[count]\t{}", figures.reconnects);
    }
    if let Some((p50, total)) = figures.body_bytes_per_sec() {
        let _ = writeln!(rows, "Body Bytes/s\t[50, total]\t{p50}, {total:.2}");
    }
    if !figures.events.is_empty() {
        let counts: Vec<String> = by_type(&figures.events)
            .map(|(name, count)| format!("{}:{count}", printable(name)))
            .collect();
        let _ = writeln!(rows, "Events\t[type: count]\t{}", counts.join(" "));
    }
    let closes: Vec<String> = (figures.closes.iter())
        .map(|(&(by, code), count)| match code {
            0 => format!("{}:{count}", by.name()),
            code => format!("{} {code}:{count}", by.name()),
        })
        .collect();
    let _ = writeln!(rows, "Closes\t[by, code: count]\t{}", closes.join("  "));
    out.push('\n');
    out.push_str(&align(&rows, &[LABEL_WIDTH, BRACKET_WIDTH]));
}

/// Appends the streamed gRPC calls' rows (after a blank line), aligned to the
/// report's columns.
pub fn write_calls_text(out: &mut String, calls: &StreamedCalls) {
    let mut rows = String::new();
    let _ = writeln!(
        rows,
        "Stream Calls\t[calls, broken]\t{}, {}",
        calls.calls, calls.broken
    );
    if let Some((p50, max)) = calls.per_call_p50_max() {
        let _ = writeln!(rows, "Msgs/Call\t[50, max]\t{p50}, {max}");
    }
    let _ = writeln!(
        rows,
        "Messages\t[out, in, in/s]\t{}, {}, {:.2}",
        calls.messages_out,
        calls.messages_in,
        calls.messages_per_second()
    );
    let _ = writeln!(
        rows,
        "Msg Bytes\t[out, in]\t{}, {}",
        calls.bytes_out, calls.bytes_in
    );
    for (label, latency) in [
        ("First Msg", &calls.first_message),
        ("Call End", &calls.to_end),
        ("Msg Gaps", &calls.gaps),
        ("Round Trips", &calls.round_trips),
    ] {
        if !latency.is_empty() {
            let _ = writeln!(
                rows,
                "{label}\t[50, 90, 99, max]\t{}",
                quantiles_text(latency)
            );
        }
    }
    out.push('\n');
    out.push_str(&align(&rows, &[LABEL_WIDTH, BRACKET_WIDTH]));
}

/// Events by type in name order, the types not named (`other`) last.
fn by_type(events: &BTreeMap<String, u64>) -> impl Iterator<Item = (&String, &u64)> {
    let named = (events.iter()).filter(|(name, _)| name.as_str() != record::OTHER_EVENTS);
    named.chain(events.get_key_value(record::OTHER_EVENTS))
}

/// An event type as a row shows it: a server's name may hold spaces, tabs or
/// control characters, which would break the row's columns; those are escaped.
fn printable(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_graphic() || (!c.is_ascii() && !c.is_control()))
    {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// `p50, p90, p99, max` of a histogram, as durations.
fn quantiles_text(latency: &MessageLatency) -> String {
    [0.5, 0.9, 0.99, 1.0]
        .map(|q| {
            latency.quantile(q).map_or_else(
                || "-".to_owned(),
                |ns| GoDuration::report_ns(ns).to_string(),
            )
        })
        .join(", ")
}

#[cfg(test)]
mod tests {
    use record::Close;

    use super::*;

    const S: u64 = 1_000_000_000;

    fn connection(
        target: u32,
        opened_s: f64,
        closed_s: f64,
        by: ClosedBy,
        code: u16,
    ) -> Connection {
        let mut latency = MessageLatency::default();
        latency.add(2_000_000);
        Connection {
            target,
            opened_unix_ns: (1_000.0 * S as f64 + opened_s * S as f64) as u64,
            closed_unix_ns: (1_000.0 * S as f64 + closed_s * S as f64) as u64,
            messages_out: 2,
            messages_in: 3,
            bytes_out: 20,
            bytes_in: 30,
            latency,
            close: Close { by, code },
            ..Connection::default()
        }
    }

    #[test]
    fn peak_series_and_closes_merge_over_the_chosen_targets() {
        let mut connections = Connections::default();
        connections.add(&[
            connection(1, 0.1, 2.5, ClosedBy::Client, 1000),
            connection(1, 0.2, 0.9, ClosedBy::Server, 1011),
            // Opens as the second one closes: never three at once.
            connection(1, 0.9, 1.5, ClosedBy::Client, 1000),
            connection(2, 0.5, 3.2, ClosedBy::Broken, 0),
        ]);
        let one = connections.merged(|_, target| target == 1).unwrap();
        assert_eq!((one.opened, one.peak_held), (3, 2));
        assert_eq!(one.first_second_unix, 1_000);
        assert_eq!(one.open_per_second, vec![3, 2, 1]);
        assert_eq!(
            (one.messages_out, one.messages_in, one.bytes_in),
            (6, 9, 90)
        );
        assert_eq!(one.latency.count(), 3);
        assert_eq!(one.closes[&(ClosedBy::Client, 1000)], 2);
        assert_eq!(one.closes[&(ClosedBy::Server, 1011)], 1);
        assert_eq!(one.span_ns, 2_400_000_000);
        let all = connections.merged(|_, _| true).unwrap();
        assert_eq!((all.opened, all.peak_held), (4, 3));
        assert_eq!(all.open_per_second, vec![4, 3, 2, 1]);
        assert!(connections.merged(|_, target| target == 9).is_none());
        let mut text = String::new();
        write_connections_text(&mut text, &all);
        assert!(text.contains("4, 3, 1"), "{text}");
        assert!(
            text.contains("client 1000:2  server 1011:1  broken:1"),
            "{text}"
        );
        assert!(text.contains("Msg Latency"), "{text}");
        // On the report's columns: labels end at 14, brackets at 48.
        for line in text.lines().filter(|l| !l.is_empty()) {
            assert_eq!(line.find('['), Some(LABEL_WIDTH), "{line}");
            let value_at = line.find(']').unwrap() + 1;
            assert!(
                line[value_at..LABEL_WIDTH + BRACKET_WIDTH]
                    .trim()
                    .is_empty(),
                "{line}"
            );
        }
    }

    #[test]
    fn events_by_type_add_over_connections_in_a_row_and_the_json() {
        let typed = |pairs: &[(&str, u64)]| Connection {
            events: pairs.iter().map(|&(n, c)| (n.to_owned(), c)).collect(),
            ..connection(1, 0.1, 1.0, ClosedBy::Server, 0)
        };
        // (each connection's events by type, the row, the JSON)
        let many: Vec<(String, u64)> = (0..17).map(|i| (format!("t{i:02}"), 1)).collect();
        let many: Vec<(&str, u64)> = many.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        type Row<'a> = (Vec<Vec<(&'a str, u64)>>, Option<&'a str>, &'a str);
        let rows: Vec<Row<'_>> = vec![
            (
                vec![
                    vec![("message", 90), ("tick", 10)],
                    vec![("message", 90), ("tick", 10)],
                ],
                Some("message:180 tick:20"),
                r#"{"message":180,"tick":20}"#,
            ),
            // A WebSocket's connections count no events: no row, an empty object.
            (vec![vec![]], None, "{}"),
            // Past sixteen types over the connections, the rest are `other`.
            (
                vec![many.clone(), vec![("other", 2)]],
                Some("t15:1 other:3"),
                r#""t15":1,"other":3}"#,
            ),
            // A name that would break the row's columns is quoted there.
            (
                vec![vec![("price up", 1)]],
                Some(r#""price up":1"#),
                r#"{"price up":1}"#,
            ),
        ];
        for (entries, row, json) in rows {
            let mut connections = Connections::default();
            let entries: Vec<Connection> = entries.iter().map(|e| typed(e)).collect();
            connections.add(&entries);
            let figures = connections.merged(|_, _| true).unwrap();
            let mut text = String::new();
            write_connections_text(&mut text, &figures);
            let line = text.lines().find(|l| l.starts_with("Events"));
            match row {
                Some(want) => assert!(line.is_some_and(|l| l.ends_with(want)), "{want}: {text}"),
                None => assert_eq!(line, None, "{text}"),
            }
            let mut out = String::new();
            write_connections_json(&mut out, &figures);
            let value: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert!(out.contains(json), "{json}: {out}");
            assert!(value["events"].is_object(), "{out}");
        }
    }

    #[test]
    fn a_bodys_bytes_a_second_are_over_its_first_event_to_its_end() {
        let body = |bytes_in: u64, first_ms: Option<u64>, closed_s: f64| Connection {
            bytes_in,
            first_message_ns: first_ms.map(|ms| ms * 1_000_000),
            ..connection(1, 0.0, closed_s, ClosedBy::Server, 0)
        };
        // (entries, the row's figures: none without a timed body)
        let rows: Vec<(Vec<Connection>, Option<&str>)> = vec![
            // 1,000 bytes over 0.5 s (its first event 0.5 s after its head).
            (vec![body(1_000, Some(500), 1.0)], Some("2000, 2000.00")),
            // Three streams: the median one's rate, and all bytes over all time.
            (
                vec![
                    body(1_000, Some(0), 1.0),
                    body(4_000, Some(0), 1.0),
                    body(9_000, Some(0), 2.0),
                ],
                Some("4000, 3500.00"),
            ),
            // A WebSocket's (no first event) and a body read at once are no rates.
            (
                vec![body(1_000, None, 1.0), body(50, Some(1_000), 1.0)],
                None,
            ),
        ];
        for (entries, want) in rows {
            let mut connections = Connections::default();
            connections.add(&entries);
            let figures = connections.merged(|_, _| true).unwrap();
            let mut text = String::new();
            write_connections_text(&mut text, &figures);
            let row = text.lines().find(|l| l.starts_with("Body Bytes/s"));
            let mut json = String::new();
            write_connections_json(&mut json, &figures);
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            let rate = &value["body_bytes_per_sec"];
            match want {
                Some(want) => {
                    assert!(row.is_some_and(|r| r.ends_with(want)), "{want}: {text}");
                    assert_eq!(rate["streams"], figures.body_rates.len());
                    let (p50, total) = figures.body_bytes_per_sec().unwrap();
                    assert_eq!(rate["50th"].as_u64(), Some(p50), "{json}");
                    assert_eq!(rate["total"].as_f64(), Some(total), "{json}");
                }
                None => {
                    assert_eq!(row, None, "{text}");
                    assert!(rate.is_null(), "{json}");
                }
            }
        }
    }

    fn call(target: u32, sent_ms: u64, gaps_ms: &[u64], by: ClosedBy) -> Connection {
        let mut latency = MessageLatency::default();
        for gap in gaps_ms {
            latency.add(gap * 1_000_000);
        }
        let messages = if by == ClosedBy::Broken {
            gaps_ms.len() as u64
        } else {
            gaps_ms.len() as u64 + 1
        };
        let first_ms = 10;
        let end_ms = first_ms + gaps_ms.iter().sum::<u64>() + 5;
        Connection {
            kind: EntryKind::GrpcCall,
            target,
            opened_unix_ns: 1_000 * S + sent_ms * 1_000_000,
            closed_unix_ns: 1_000 * S + (sent_ms + end_ms) * 1_000_000,
            first_message_ns: (messages > 0).then_some(first_ms * 1_000_000),
            messages_out: 1,
            messages_in: messages,
            bytes_in: messages * 8,
            latency,
            close: Close { by, code: 0 },
            ..Connection::default()
        }
    }

    #[test]
    fn streamed_calls_fold_apart_from_connections() {
        let mut connections = Connections::default();
        connections.add(&[
            call(3, 0, &[20, 20, 20], ClosedBy::Server),
            call(3, 100, &[40], ClosedBy::Server),
            call(3, 200, &[], ClosedBy::Broken),
            call(4, 300, &[1, 1, 1, 1, 1, 1, 1, 1, 1], ClosedBy::Server),
            connection(1, 0.1, 2.5, ClosedBy::Client, 1000),
        ]);
        // The connection rows do not count the calls.
        let ws = connections.merged(|_, _| true).unwrap();
        assert_eq!((ws.opened, ws.messages_in), (1, 3));
        let three = connections.calls(|_, target| target == 3).unwrap();
        assert_eq!((three.calls, three.broken, three.messages_in), (3, 1, 6));
        assert_eq!(three.per_call_p50_max(), Some((2, 4)));
        assert_eq!(three.first_message.count(), 2);
        assert_eq!(three.gaps.count(), 4);
        // The last end: 200 ms + 10 + 5; six messages over 215 ms.
        assert!((three.messages_per_second() - 6.0 / 0.215).abs() < 1e-6);
        let all = connections.calls(|_, _| true).unwrap();
        assert_eq!(all.per_call_p50_max(), Some((2, 10)));
        assert!(connections.calls(|_, target| target == 1).is_none());
        let mut text = String::new();
        write_calls_text(&mut text, &all);
        for want in [
            "Stream Calls",
            "4, 1",
            "Msgs/Call",
            "2, 10",
            "First Msg",
            "Call End",
            "Msg Gaps",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        // The JSON words the same figures.
        let mut json = String::new();
        write_calls_json(&mut json, &all);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (value["calls"].as_u64(), value["broken"].as_u64()),
            (Some(4), Some(1))
        );
        assert_eq!(value["messages_per_call"]["max"].as_u64(), Some(10));
        assert_eq!(value["messages_in"].as_u64(), Some(all.messages_in));
        assert_eq!(value["gaps"]["count"].as_u64(), Some(all.gaps.count()));
        assert_eq!(value["first_message"]["count"].as_u64(), Some(3));
        assert!(
            value["round_trips"].is_null(),
            "no bidirectional call: {json}"
        );
        assert!(!text.contains("Round Trips"), "{text}");
        // A bidirectional call's round trips get their row, summed over calls.
        let mut bidi = call(5, 400, &[20], ClosedBy::Server);
        for ns in [3_000_000, 5_000_000] {
            bidi.round_trips.add(ns);
        }
        connections.add(&[bidi.clone(), bidi]);
        let five = connections.calls(|_, target| target == 5).unwrap();
        assert_eq!(five.round_trips.count(), 4);
        let mut text = String::new();
        write_calls_text(&mut text, &five);
        assert!(text.contains("Round Trips"), "{text}");
        let mut json = String::new();
        write_calls_json(&mut json, &five);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["round_trips"]["count"].as_u64(), Some(4), "{json}");
        let none = StreamedCalls::default();
        let mut json = String::new();
        write_calls_json(&mut json, &none);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(
            value["messages_per_call"].is_null() && value["gaps"].is_null(),
            "{json}"
        );
    }
}
