//! HTTP/1.1 in the worker: a connection carries one request at a time; a finished
//! one goes back to its host's idle connections (most recently used last) unless
//! the server or `-keepalive=false` closes it. Responses are parsed as they arrive
//! (`response.rs`).

use record::ErrorKind;

use super::Worker;
use crate::arrival::arrived_ns;
use crate::errors::Cause;
use crate::response::Feed;

impl Worker {
    /// An idle connection to `host`, a new one, or `None` at the host cap.
    pub(super) fn acquire_connection(&mut self, host: usize) -> Result<Option<usize>, Cause> {
        if let Some(slot) = self.pop_idle(host) {
            return Ok(Some(slot));
        }
        // Responses may be waiting unread: reading them is far cheaper than a new
        // connection, and without this a short stall makes every connection look busy
        // and the worker opens connections it never needed.
        if self.attacks.iter().any(|a| a.in_flight_count > 0)
            && self.poll(Some(0)).unwrap_or(false)
            && let Some(slot) = self.pop_idle(host)
        {
            return Ok(Some(slot));
        }
        if self.pools[host].open >= self.max_per_host {
            return Ok(None);
        }
        self.open_connection(host).map(Some)
    }

    fn pop_idle(&mut self, host: usize) -> Option<usize> {
        while let Some(slot) = self.pools[host].idle.pop() {
            if self.conns[slot as usize].is_idle() {
                return Some(slot as usize);
            }
        }
        None
    }

    pub(super) fn make_idle(&mut self, slot: usize) {
        let host = self.conns[slot].host;
        self.pools[host].idle.push(slot as u32);
    }

    /// The connection is up: its request goes, or it waits for one.
    pub(super) fn h1_opened(&mut self, slot: usize) {
        if self.conns[slot].request.is_some() {
            self.write(slot);
        } else {
            self.make_idle(slot);
        }
    }

    /// Feeds `n` bytes of `read_buf` to the response parser; false when the
    /// connection needs no more reading. Out of line, as each protocol's read path:
    /// inlined through the seam into the event loop it makes the loop's code worse.
    #[inline(never)]
    pub(super) fn h1_read(&mut self, slot: usize, n: usize) -> bool {
        let now = self.clock.now_ns();
        let age_ns = self.arrival_age_ns;
        let conn = &mut self.conns[slot];
        let Some(request) = conn.request.as_mut() else {
            // Bytes nobody asked for: the connection cannot be trusted any more.
            self.close(slot);
            return false;
        };
        if request.first_byte_ns == 0 {
            request.first_byte_ns = arrived_ns(age_ns, now, request.dispatched_ns);
        }
        match conn.parser.feed(&self.read_buf[..n]) {
            Ok(Feed::More) => {
                request.bytes_in += n as u64;
                true
            }
            Ok(Feed::Done { used }) => {
                request.bytes_in += used as u64;
                // Extra bytes, or a full buffer that may hide more: do not reuse.
                if used < n || n == self.read_buf.len() {
                    conn.parser.close = true;
                }
                self.complete(slot, now);
                false
            }
            Err(err) => {
                self.fail(slot, Cause::new(ErrorKind::Protocol, err.0));
                false
            }
        }
    }

    /// The server closed: that may be the end of a response without a length.
    pub(super) fn h1_eof(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        if conn.request.is_none() {
            return self.close(slot);
        }
        match conn.parser.eof() {
            Ok(()) => self.complete(slot, self.clock.now_ns()),
            Err(err) => self.fail_or_retry(slot, Cause::new(ErrorKind::Closed, err.0)),
        }
    }

    /// The request is done: the connection waits for the next, or closes.
    pub(super) fn h1_released(&mut self, slot: usize, reusable: bool) {
        if reusable {
            self.conns[slot].reused = true;
            self.make_idle(slot);
        } else {
            self.close(slot);
        }
    }
}
