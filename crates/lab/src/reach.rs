//! Before a step sends anything: a TCP connect to each distinct `host:port` of its
//! targets, bounded by [`CONNECT_TIMEOUT`]. A plan against a closed port would
//! otherwise run every step (a search halves its rate down to its floor) to learn what
//! one connect says. `[load] check_targets = false` (or `run -no-check-targets`) skips it.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use engine::{RunConfig, Targets};

/// How long one connect may take before the address counts as not answering.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Each distinct `host:port` of the run's fixed targets, in order. Streamed targets
/// (`lazy`, a replay) are not known before they are read; a Unix socket is no address.
pub fn addresses(config: &RunConfig) -> Vec<(String, u16)> {
    if config.settings.unix_socket.is_some() {
        return Vec::new();
    }
    let mut seen: Vec<(String, u16)> = Vec::new();
    for attack in &config.attacks {
        let Targets::List(targets) = &attack.targets else {
            continue;
        };
        for target in targets {
            let host = target.url.host_str().unwrap_or_default();
            let port = target.url.port_or_known_default().unwrap_or(80);
            let key = (host.to_owned(), port);
            if !seen.contains(&key) {
                seen.push(key);
            }
        }
    }
    seen
}

/// Connects to each address once; `Err` names every one that did not answer and why
/// (`nothing listened at 127.0.0.1:18199: connection refused`).
pub fn check(addresses: &[(String, u16)]) -> Result<(), String> {
    let unreached: Vec<String> = addresses
        .iter()
        .filter_map(|(host, port)| connect(host, *port).err())
        .collect();
    if unreached.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} (checked before the step; `check_targets = false` in [load] or -no-check-targets \
         skips the check)",
        unreached.join("; ")
    ))
}

fn connect(host: &str, port: u16) -> Result<(), String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let label = if bare.contains(':') {
        format!("[{bare}]:{port}")
    } else {
        format!("{bare}:{port}")
    };
    let addrs: Vec<_> = (bare, port)
        .to_socket_addrs()
        .map_err(|e| format!("{label} does not resolve: {e}"))?
        .collect();
    let Some(addr) = addrs.first() else {
        return Err(format!("{label} does not resolve: no addresses"));
    };
    match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
        Ok(_) => Ok(()),
        Err(err) => Err(format!("nothing listened at {label}: {}", reason(&err))),
    }
}

/// An I/O error in a few plain words.
fn reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => format!(
            "no answer to a connect within {}",
            units::GoDuration(CONNECT_TIMEOUT)
        ),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_port_and_a_name_that_does_not_resolve_are_named() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_port = open.local_addr().unwrap().port();
        // Bound but never listening: the kernel refuses connects to it, and no other test
        // can take the port while it is held (a dropped listener's port can be reused at once).
        let held =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let closed_port = held.local_addr().unwrap().as_socket().unwrap().port();
        // (case, addresses, the error's start, or None)
        // (A name that does not resolve is not a row: looking it up leaves loopback.)
        type Row<'a> = (&'a str, Vec<(String, u16)>, Option<String>);
        let rows: [Row<'_>; 2] = [
            ("listening", vec![("127.0.0.1".to_owned(), open_port)], None),
            (
                "closed",
                vec![
                    ("127.0.0.1".to_owned(), open_port),
                    ("127.0.0.1".to_owned(), closed_port),
                ],
                Some(format!(
                    "nothing listened at 127.0.0.1:{closed_port}: connection refused (checked"
                )),
            ),
        ];
        for (case, addresses, want) in rows {
            match (check(&addresses), want) {
                (Ok(()), None) => {}
                (Err(got), Some(want)) => assert!(got.starts_with(&want), "{case}: {got}"),
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }
}
