//! TCP sockets by state, host-wide (IPv4 and IPv6). Through the kernel's sock_diag
//! netlink interface (what `ss` uses: binary, no text formatting), falling back to
//! `/proc/net/tcp` and `tcp6` (tens of milliseconds with 10k sockets) where netlink is
//! not allowed.
//!
//! Even the binary dump walks the kernel's whole established hash table (hundreds of
//! thousands of buckets on a large machine, tens of milliseconds), whatever the socket
//! count: the host sampler runs it only as often as its cost allows, and reads the
//! counters the kernel keeps anyway (`CurrEstab`, sockstat's `tw`) every tick.

use std::io;
use std::os::fd::OwnedFd;

use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, netlink};

/// Kernel TCP states, indexed by their number (`include/net/tcp_states.h`).
pub(crate) const STATE_NAMES: [&str; 13] = [
    "",
    "established",
    "syn_sent",
    "syn_recv",
    "fin_wait1",
    "fin_wait2",
    "time_wait",
    "close",
    "close_wait",
    "last_ack",
    "listen",
    "closing",
    "new_syn_recv",
];

/// Socket counts by state number.
pub(crate) type StateCounts = [u64; 13];

#[cfg(test)]
const ESTABLISHED: usize = 1;

/// Counts TCP sockets by state, one by one: netlink, else `/proc/net/tcp*`.
pub(crate) fn count_states() -> io::Result<StateCounts> {
    match count_by_netlink(u32::MAX) {
        Ok(counts) => Ok(counts),
        Err(_) => count_by_proc(),
    }
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const IPPROTO_TCP: u8 = 6;
const NLMSG_HEADER_LEN: usize = 16;

/// Dumps the TCP sockets whose state bit is set in `states`.
fn count_by_netlink(states: u32) -> io::Result<StateCounts> {
    let socket = rustix::net::socket(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        Some(netlink::SOCK_DIAG),
    )?;
    let mut counts = StateCounts::default();
    let mut buffer = vec![0u8; 64 * 1024];
    for family in [AddressFamily::INET, AddressFamily::INET6] {
        let request = dump_request(family.as_raw() as u8, states);
        rustix::net::send(&socket, &request, SendFlags::empty())?;
        read_dump(&socket, &mut buffer, &mut counts)?;
    }
    Ok(counts)
}

/// An `inet_diag_req_v2` dump of the TCP sockets of one family in `states` (a bit
/// per state number).
fn dump_request(family: u8, states: u32) -> [u8; 72] {
    let mut request = [0u8; 72];
    request[0..4].copy_from_slice(&72u32.to_le_bytes());
    request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_le_bytes());
    request[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_le_bytes());
    request[16] = family;
    request[17] = IPPROTO_TCP;
    request[20..24].copy_from_slice(&states.to_le_bytes());
    request
}

fn read_dump(socket: &OwnedFd, buffer: &mut [u8], counts: &mut StateCounts) -> io::Result<()> {
    loop {
        let (len, _) = rustix::net::recv(socket, &mut *buffer, RecvFlags::empty())?;
        if len == 0 {
            return Err(io::Error::other("netlink: empty answer"));
        }
        if count_messages(&buffer[..len], counts)? {
            return Ok(());
        }
    }
}

/// Counts the states in one datagram of netlink messages; true at the end of the dump.
fn count_messages(mut bytes: &[u8], counts: &mut StateCounts) -> io::Result<bool> {
    while bytes.len() >= NLMSG_HEADER_LEN {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let kind = u16::from_le_bytes([bytes[4], bytes[5]]);
        if len < NLMSG_HEADER_LEN || len > bytes.len() {
            return Err(io::Error::other("netlink: bad message length"));
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => return Err(io::Error::other("netlink: the kernel refused the dump")),
            SOCK_DIAG_BY_FAMILY => {
                // inet_diag_msg: family u8, state u8, ...
                let state = usize::from(bytes.get(NLMSG_HEADER_LEN + 1).copied().unwrap_or(0));
                if let Some(slot) = counts.get_mut(state) {
                    *slot += 1;
                }
            }
            _ => {}
        }
        let aligned = len.next_multiple_of(4).min(bytes.len());
        bytes = &bytes[aligned..];
    }
    Ok(false)
}

fn count_by_proc() -> io::Result<StateCounts> {
    let mut counts = StateCounts::default();
    let mut found = false;
    for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(path) {
            count_proc_lines(&text, &mut counts);
            found = true;
        }
    }
    if found {
        Ok(counts)
    } else {
        Err(io::Error::other(
            "neither netlink sock_diag nor /proc/net/tcp is readable",
        ))
    }
}

/// `/proc/net/tcp` lines: `sl local rem st ...` with `st` in hex.
fn count_proc_lines(text: &str, counts: &mut StateCounts) {
    for line in text.lines().skip(1) {
        let state = line
            .split_whitespace()
            .nth(3)
            .and_then(|st| usize::from_str_radix(st, 16).ok());
        if let Some(slot) = state.and_then(|s| counts.get_mut(s)) {
            *slot += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_proc_net_tcp_lines() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1\n\
   2: 0100007F:D2F0 0100007F:1F90 06 00000000:00000000 00:00000000 00000000     0        0 0 1 0\n\
   3: garbage\n";
        let mut counts = StateCounts::default();
        count_proc_lines(text, &mut counts);
        assert_eq!((counts[1], counts[6], counts[10]), (1, 1, 1));
        assert_eq!(counts.iter().sum::<u64>(), 3);
    }

    #[test]
    fn counts_netlink_messages() {
        let message = |kind: u16, state: u8| {
            let mut m = vec![0u8; 24];
            m[0..4].copy_from_slice(&22u32.to_le_bytes());
            m[4..6].copy_from_slice(&kind.to_le_bytes());
            m[17] = state;
            m
        };
        let mut datagram = message(SOCK_DIAG_BY_FAMILY, 1);
        datagram.extend(message(SOCK_DIAG_BY_FAMILY, 10));
        datagram.extend(message(SOCK_DIAG_BY_FAMILY, 99));
        let mut counts = StateCounts::default();
        assert!(!count_messages(&datagram, &mut counts).unwrap());
        assert_eq!((counts[1], counts[10]), (1, 1));
        datagram.extend(message(NLMSG_DONE, 0));
        assert!(count_messages(&datagram, &mut counts).unwrap());
        assert!(count_messages(&message(NLMSG_ERROR, 0), &mut counts).is_err());
        let mut short = message(SOCK_DIAG_BY_FAMILY, 1);
        short[0..4].copy_from_slice(&4u32.to_le_bytes());
        assert!(count_messages(&short, &mut counts).is_err());
    }

    #[test]
    fn netlink_and_proc_agree_on_this_host() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let netlink = count_by_netlink(u32::MAX).unwrap();
        let proc = count_by_proc().unwrap();
        assert!(netlink[10] >= 1 && proc[10] >= 1, "our listener is seen");
        assert!(
            netlink[ESTABLISHED] >= 1 && proc[ESTABLISHED] >= 1,
            "our client is seen"
        );
        let filtered = count_by_netlink(!(1 << ESTABLISHED)).unwrap();
        assert_eq!(
            filtered[ESTABLISHED], 0,
            "the state filter is applied in the kernel"
        );
        assert!(filtered[10] >= 1);
        drop((listener, client));
    }
}
