//! [`Arrival`]: when an answer's bytes reached this host, as the kernel stamped them
//! (`SO_TIMESTAMPNS`), not when the worker came round to read them.
//!
//! A worker that lets one wake-up serve many answers (`-precision`) reads some of them
//! late; timing an answer by its read would count that wait as the server's. Each TCP
//! socket asks the kernel to stamp what it receives, each read takes the stamp of the
//! last segment it copied, and the answer is timed by the read that completed it. The
//! stamp is on the wall clock; how long ago it was ([`Arrival::age_ns`]) is read on
//! the wall clock too and taken off the run's monotonic now, so a wall clock stepped
//! since the start cannot move it. A read without a stamp (a Unix socket, a kernel that refuses, the first
//! few packets after the first socket on the host asks, which turns stamping on a
//! moment later) is timed by its read, as before.

use std::io;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};

/// Room for one `SCM_TIMESTAMPNS` message, and to spare.
const CONTROL_BYTES: usize = 64;

/// A socket's receive stamps: the control buffer `recvmsg` fills, and the last stamp.
#[derive(Debug, Default)]
pub(crate) struct Arrival {
    /// Empty when the socket does not stamp (a heap buffer is aligned for `cmsghdr`).
    control: Vec<u8>,
    /// The last read's stamp, unix nanoseconds; 0 for none.
    last_unix_ns: u64,
}

impl Arrival {
    /// Asks the kernel to stamp what `socket` receives; without stamps the socket is
    /// read as before.
    pub(crate) fn enable(&mut self, socket: impl AsFd) {
        self.last_unix_ns = 0;
        let stamping = setsockopt(&socket, sockopt::ReceiveTimestampns, &true).is_ok();
        // A slot's buffer serves its every socket (one a request without keep-alive).
        self.control.clear();
        if stamping {
            self.control.resize(CONTROL_BYTES, 0);
        }
    }

    /// Stops stamping (the slot's next socket may be a Unix one).
    pub(crate) fn disable(&mut self) {
        self.control.clear();
        self.last_unix_ns = 0;
    }

    /// Reads from `socket` into `buf`, keeping the stamp of what it read.
    pub(crate) fn read(&mut self, socket: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
        if self.control.is_empty() {
            return Ok(rustix::io::read(socket, buf)?);
        }
        let mut iov = [IoSliceMut::new(buf)];
        let message = recvmsg::<()>(
            socket.as_fd().as_raw_fd(),
            &mut iov,
            Some(&mut self.control),
            MsgFlags::MSG_DONTWAIT,
        )?;
        let bytes = message.bytes;
        // A read without a stamp must not take the last one's.
        self.last_unix_ns = 0;
        if let Ok(messages) = message.cmsgs() {
            for control in messages {
                if let ControlMessageOwned::ScmTimestampns(at) = control {
                    let unix_ns =
                        i128::from(at.tv_sec()) * 1_000_000_000 + i128::from(at.tv_nsec());
                    self.last_unix_ns = u64::try_from(unix_ns).unwrap_or(0);
                }
            }
        }
        Ok(bytes)
    }

    /// How long ago, on the wall clock, the last read's bytes arrived; 0 without a
    /// stamp (or one from the future: the wall clock stepped back).
    pub(crate) fn age_ns(&self) -> u64 {
        if self.last_unix_ns == 0 {
            return 0;
        }
        let wall_now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        wall_now_ns.saturating_sub(self.last_unix_ns)
    }
}

/// When bytes `age_ns` old (0: no stamp) arrived, on the run's clock at `now_ns`: no
/// later than now, no earlier than `not_before_ns` (the request's dispatch).
pub(crate) fn arrived_ns(age_ns: u64, now_ns: u64, not_before_ns: u64) -> u64 {
    now_ns.saturating_sub(age_ns).max(not_before_ns.min(now_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use socket2::Socket;

    /// A connected pair over loopback: the client as a `Socket`, the server's stream.
    fn pair() -> (Socket, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (Socket::from(client), server)
    }

    #[test]
    fn an_answer_read_late_is_timed_when_it_arrived() {
        let (client, mut server) = pair();
        let mut arrival = Arrival::default();
        arrival.enable(&client);
        // The first socket to ask turns stamping on for the host a moment later.
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        let arrived_by_ns = start.elapsed().as_nanos() as u64;
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 64];
        let n = arrival.read(&client, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"HTTP/1.1 200 OK\r\n\r\n");
        let now_ns = start.elapsed().as_nanos() as u64;
        let arrived_ns = arrived_ns(arrival.age_ns(), now_ns, 0);
        // Read 30 ms after it came; timed within a few ms of its write, not its read.
        assert!(
            arrived_ns <= arrived_by_ns + 5_000_000,
            "{arrived_ns} vs {arrived_by_ns}"
        );
        assert!(
            now_ns - arrived_ns >= 25_000_000,
            "{arrived_ns} vs now {now_ns}"
        );
    }

    #[test]
    fn without_stamps_the_read_is_the_arrival_and_bounds_hold() {
        let (client, mut server) = pair();
        let mut arrival = Arrival::default();
        server.write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let mut buf = [0u8; 8];
        assert_eq!(arrival.read(&client, &mut buf).unwrap(), 1);
        assert_eq!(arrived_ns(arrival.age_ns(), 7_000, 0), 7_000);
        // (stamp's age, now, not before) -> arrival: never after now, never before
        // the dispatch, a stamp from the future is now.
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let cases = [
            (
                "an hour old",
                wall_ns - 3_600_000_000_000,
                5_000_000_000,
                4_000_000_000,
                4_000_000_000,
            ),
            (
                "from the future",
                wall_ns + 1_000_000_000,
                5_000_000_000,
                0,
                5_000_000_000,
            ),
        ];
        for (case, stamp, now, not_before, want) in cases {
            arrival.last_unix_ns = stamp;
            assert_eq!(
                arrived_ns(arrival.age_ns(), now, not_before),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn a_closed_peer_reads_as_end_of_stream_and_no_data_as_would_block() {
        let (client, server) = pair();
        client.set_nonblocking(true).unwrap();
        let mut arrival = Arrival::default();
        arrival.enable(&client);
        let mut buf = [0u8; 8];
        let err = arrival.read(&client, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(server);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(arrival.read(&client, &mut buf).unwrap(), 0);
    }
}
