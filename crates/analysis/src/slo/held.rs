//! Held connections and messages in a step's window: the figures of its stream steps
//! (`ws`, `sse`, `stream`) and streamed gRPC calls ([`StreamWindow`]) and the `[slo]`
//! bounds on them ([`StreamBounds`]), judged into [`Miss`]es beside the requests'.
//!
//! What "connections held" means depends on how the step asked for them, so a user can
//! predict it from the plan alone:
//! - **users** (closed model): each user holds one connection, so the step asked for
//!   its user count at once; held is the most open at once (the stats samples' peak).
//! - **arrivals** (open model): each arrival asks for one connection whatever is held
//!   already; held is the connections the window's arrivals opened, so a server that
//!   refuses upgrades past its limit holds fewer than asked.

use crate::slo::{Miss, Percentile, latency_misses};

/// How a step asked for its connections: what `connections_held` is a share of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionsAsked {
    /// Closed model: this many users, each holding one connection at once.
    Users(u64),
    /// Open model: this many arrivals in the window, each asking for one connection.
    Arrivals(u64),
}

impl ConnectionsAsked {
    /// The count asked.
    pub fn count(self) -> u64 {
        match self {
            ConnectionsAsked::Users(n) | ConnectionsAsked::Arrivals(n) => n,
        }
    }
}

/// Which way messages go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageWay {
    /// Sent by the generator.
    Out,
    /// Received by the generator (a server's fan-out, a stream's events).
    In,
}

/// A step's connections and messages in its window, from the run's stats samples
/// (`streams`) and its stream steps' records.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamWindow {
    /// What the step asked for.
    pub asked: ConnectionsAsked,
    /// The most connections open at once in the window.
    pub peak_held: u64,
    /// Open at the window's last sample.
    pub held_at_end: u64,
    /// Opened in the window.
    pub opened: u64,
    /// Upgrades (or event streams) answered with a refusing status (a 503 past a
    /// connection limit).
    pub refused: u64,
    /// Connections the server closed or that broke while in use (`closed`, `reset`).
    pub cut: u64,
    /// Messages sent per second over the window.
    pub messages_out_per_sec: f64,
    /// Messages (events) received per second over the window.
    pub messages_in_per_sec: f64,
    /// Message latency statistics (p50 .. max, nanoseconds); empty when none was timed.
    pub latency_ns: Vec<(Percentile, u64)>,
}

impl StreamWindow {
    /// The connections counted as held against [`StreamWindow::asked`]: the peak for
    /// users, those opened for arrivals.
    pub fn held(&self) -> u64 {
        match self.asked {
            ConnectionsAsked::Users(_) => self.peak_held,
            ConnectionsAsked::Arrivals(_) => self.opened,
        }
    }

    /// Held over asked (1 when nothing was asked).
    pub fn held_ratio(&self) -> f64 {
        match self.asked.count() {
            0 => 1.0,
            asked => self.held() as f64 / asked as f64,
        }
    }
}

/// `[slo]` bounds on a step's connections and messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamBounds {
    /// Connections held over connections asked, at least (0..1).
    pub min_held_ratio: Option<f64>,
    /// Messages received per second, at least.
    pub min_messages_in_per_sec: Option<f64>,
    /// Messages sent per second, at least.
    pub min_messages_out_per_sec: Option<f64>,
    /// Message latency bounds, nanoseconds: each statistic at most its value.
    pub max_message_latency_ns: Vec<(Percentile, u64)>,
}

impl StreamBounds {
    /// Whether any bound is set.
    pub fn is_empty(&self) -> bool {
        *self == StreamBounds::default()
    }
}

/// Each bound `window` missed; a bound on a step that held no connection at all is
/// [`Miss::NoConnections`], once.
pub fn stream_misses(window: Option<&StreamWindow>, bounds: &StreamBounds) -> Vec<Miss> {
    if bounds.is_empty() {
        return Vec::new();
    }
    let Some(window) = window else {
        return vec![Miss::NoConnections];
    };
    let mut misses = Vec::new();
    if let Some(min) = bounds.min_held_ratio
        && window.held_ratio() < min
    {
        misses.push(Miss::ConnectionsHeld {
            held: window.held(),
            asked: window.asked,
            min,
            refused: window.refused,
            cut: window.cut,
        });
    }
    let rates = [
        (
            MessageWay::In,
            bounds.min_messages_in_per_sec,
            window.messages_in_per_sec,
        ),
        (
            MessageWay::Out,
            bounds.min_messages_out_per_sec,
            window.messages_out_per_sec,
        ),
    ];
    for (way, min, per_sec) in rates {
        if let Some(min_per_sec) = min
            && per_sec < min_per_sec
        {
            misses.push(Miss::MessageRate {
                way,
                per_sec,
                min_per_sec,
            });
        }
    }
    misses.extend(latency_misses(
        &bounds.max_message_latency_ns,
        &window.latency_ns,
        |stat, value_ns, max_ns| Miss::MessageLatency {
            stat,
            value_ns,
            max_ns,
        },
        Miss::MessageNotTimed,
    ));
    misses
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn held_window(asked: ConnectionsAsked) -> StreamWindow {
        StreamWindow {
            asked,
            peak_held: 500,
            held_at_end: 480,
            opened: 500,
            refused: 0,
            cut: 0,
            messages_out_per_sec: 100.0,
            messages_in_per_sec: 5000.0,
            latency_ns: vec![(Percentile::P50, 2 * MS), (Percentile::P99, 40 * MS)],
        }
    }

    fn bounds() -> StreamBounds {
        StreamBounds {
            min_held_ratio: Some(0.99),
            min_messages_in_per_sec: Some(4000.0),
            min_messages_out_per_sec: None,
            max_message_latency_ns: vec![(Percentile::P99, 50 * MS)],
        }
    }

    #[test]
    fn held_connections_and_messages_against_their_bounds() {
        type Change = fn(&mut StreamWindow);
        let users = ConnectionsAsked::Users(500);
        let rows: Vec<(&str, ConnectionsAsked, Change, Vec<Miss>)> = vec![
            ("500 users held", users, |_| {}, vec![]),
            (
                "a limit of 400 under 500 users",
                users,
                |w| (w.peak_held, w.refused) = (400, 1234),
                vec![Miss::ConnectionsHeld {
                    held: 400,
                    asked: users,
                    min: 0.99,
                    refused: 1234,
                    cut: 0,
                }],
            ),
            (
                "495 of 500 is 99%: held",
                users,
                |w| w.peak_held = 495,
                vec![],
            ),
            (
                "arrivals count the connections they opened, not the peak",
                ConnectionsAsked::Arrivals(1000),
                |w| (w.opened, w.refused) = (500, 500),
                vec![Miss::ConnectionsHeld {
                    held: 500,
                    asked: ConnectionsAsked::Arrivals(1000),
                    min: 0.99,
                    refused: 500,
                    cut: 0,
                }],
            ),
            (
                "a slow fan-out",
                users,
                |w| w.messages_in_per_sec = 3000.0,
                vec![Miss::MessageRate {
                    way: MessageWay::In,
                    per_sec: 3000.0,
                    min_per_sec: 4000.0,
                }],
            ),
            (
                "late messages",
                users,
                |w| w.latency_ns[1].1 = 80 * MS,
                vec![Miss::MessageLatency {
                    stat: Percentile::P99,
                    value_ns: 80 * MS,
                    max_ns: 50 * MS,
                }],
            ),
            (
                "no message timed",
                users,
                |w| w.latency_ns.clear(),
                vec![Miss::MessageNotTimed(Percentile::P99)],
            ),
            (
                "nothing asked holds",
                ConnectionsAsked::Arrivals(0),
                |w| w.opened = 0,
                vec![],
            ),
        ];
        for (case, asked, change, want) in rows {
            let mut window = held_window(asked);
            change(&mut window);
            assert_eq!(stream_misses(Some(&window), &bounds()), want, "{case}");
        }
    }

    #[test]
    fn a_bound_on_a_step_without_connections_fails_once_and_no_bound_never() {
        assert_eq!(stream_misses(None, &bounds()), vec![Miss::NoConnections]);
        assert_eq!(stream_misses(None, &StreamBounds::default()), vec![]);
        let window = held_window(ConnectionsAsked::Users(10_000));
        assert_eq!(
            stream_misses(Some(&window), &StreamBounds::default()),
            vec![]
        );
    }
}
