//! `/proc/net/sockstat` (and `sockstat6`): socket counts by protocol, parsed by hand.
//!
//! ```text
//! sockets: used 290
//! TCP: inuse 27 orphan 0 tw 3 alloc 31 mem 4
//! UDP: inuse 4 mem 2
//! ```
//! `mem` counts pages.

use std::collections::BTreeMap;

/// `(protocol, field) -> value`, e.g. `("TCP", "inuse") -> 27`.
pub(crate) type SockStat = BTreeMap<(String, String), u64>;

/// Parses sockstat text; lines or pairs that do not fit are skipped (a newer kernel may
/// add fields), and an empty result means the text was not sockstat at all.
pub(crate) fn parse_sockstat(text: &str) -> SockStat {
    let mut out = SockStat::new();
    for line in text.lines() {
        let Some((protocol, fields)) = line.split_once(':') else {
            continue;
        };
        let words: Vec<&str> = fields.split_whitespace().collect();
        for pair in words.chunks_exact(2) {
            if let Ok(value) = pair[1].parse::<u64>() {
                out.insert((protocol.trim().to_owned(), pair[0].to_owned()), value);
            }
        }
    }
    out
}

/// One value, if present.
pub(crate) fn field(stat: &SockStat, protocol: &str, name: &str) -> Option<u64> {
    stat.get(&(protocol.to_owned(), name.to_owned())).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_text() {
        let text = "sockets: used 290\n\
                    TCP: inuse 27 orphan 1 tw 3 alloc 31 mem 4\n\
                    UDP: inuse 4 mem 2\n\
                    UDPLITE: inuse 0\n\
                    RAW: inuse 0\n\
                    FRAG: inuse 0 memory 0\n";
        let stat = parse_sockstat(text);
        let rows: &[(&str, &str, Option<u64>)] = &[
            ("sockets", "used", Some(290)),
            ("TCP", "inuse", Some(27)),
            ("TCP", "orphan", Some(1)),
            ("TCP", "tw", Some(3)),
            ("TCP", "mem", Some(4)),
            ("UDP", "inuse", Some(4)),
            ("FRAG", "memory", Some(0)),
            ("TCP", "nonesuch", None),
            ("SCTP", "inuse", None),
        ];
        for &(protocol, name, want) in rows {
            assert_eq!(field(&stat, protocol, name), want, "{protocol} {name}");
        }
    }

    #[test]
    fn tolerates_odd_text() {
        let rows: &[(&str, usize)] = &[
            ("", 0),
            ("garbage without colon\n", 0),
            ("TCP: inuse x orphan 2\n", 1),
            ("TCP: inuse\n", 0),
            ("TCP: inuse 1 orphan\n", 1),
            ("TCP6: inuse 5\n", 1),
        ];
        for &(text, want) in rows {
            assert_eq!(parse_sockstat(text).len(), want, "{text:?}");
        }
    }
}
