//! `/proc/net/snmp` and `/proc/net/netstat`: kernel protocol counters as pairs of lines,
//! a header and its values (`Tcp: ActiveOpens PassiveOpens ...` then `Tcp: 12 30 ...`).
//! We read the TCP counters that explain latency: retransmits (and the segments sent
//! they are a share of), resets, and listen queue overflows (the server did not
//! `accept` fast enough).

use record::ResourceSeries as S;
use std::collections::HashMap;

/// `(section, counter) -> value`, e.g. `("TcpExt", "ListenOverflows") -> 3`.
pub(crate) type Counters = HashMap<(String, String), f64>;

/// The counters loadlab charts: (section, name, series name, unit).
pub(crate) const TCP_COUNTERS: [(&str, &str, &str); 6] = [
    ("Tcp", "OutSegs", S::HostTcpSegmentsSentPerSec.name()),
    ("Tcp", "RetransSegs", S::HostTcpRetransmitsPerSec.name()),
    ("Tcp", "OutRsts", S::HostTcpResetsSentPerSec.name()),
    (
        "Tcp",
        "AttemptFails",
        S::HostTcpConnectFailuresPerSec.name(),
    ),
    (
        "TcpExt",
        "ListenOverflows",
        S::HostTcpListenOverflowsPerSec.name(),
    ),
    ("TcpExt", "ListenDrops", S::HostTcpListenDropsPerSec.name()),
];

/// Parses header/value line pairs; pairs whose lengths differ are skipped. Values are
/// kept as f64 (`Tcp: MaxConn` is -1).
pub(crate) fn parse_counters(text: &str, out: &mut Counters) {
    let mut lines = text.lines();
    while let (Some(header), Some(values)) = (lines.next(), lines.next()) {
        let (Some((section, names)), Some((section2, numbers))) =
            (header.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        if section != section2 {
            continue;
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let numbers: Vec<&str> = numbers.split_whitespace().collect();
        if names.len() != numbers.len() {
            continue;
        }
        for (name, number) in names.into_iter().zip(numbers) {
            if let Ok(value) = number.parse::<f64>() {
                out.insert((section.to_owned(), name.to_owned()), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_of_lines() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Tcp: RtoAlgorithm MaxConn ActiveOpens RetransSegs OutRsts\n\
                    Tcp: 1 -1 12 5 2\n\
                    TcpExt: ListenOverflows ListenDrops\nTcpExt: 3 4\n\
                    Udp: A B\nUdp: 1\n";
        let mut counters = Counters::new();
        parse_counters(text, &mut counters);
        let rows: &[(&str, &str, Option<f64>)] = &[
            ("Tcp", "RetransSegs", Some(5.0)),
            ("Tcp", "MaxConn", Some(-1.0)),
            ("Tcp", "OutRsts", Some(2.0)),
            ("TcpExt", "ListenOverflows", Some(3.0)),
            ("TcpExt", "ListenDrops", Some(4.0)),
            ("Ip", "DefaultTTL", Some(64.0)),
            // Lengths differ: skipped.
            ("Udp", "A", None),
        ];
        for &(section, name, want) in rows {
            let got = counters
                .get(&(section.to_owned(), name.to_owned()))
                .copied();
            assert_eq!(got, want, "{section} {name}");
        }
        let mut empty = Counters::new();
        parse_counters("garbage\nmore garbage\nTcp: a\nIp: 1\n", &mut empty);
        assert!(empty.is_empty());
    }
}
