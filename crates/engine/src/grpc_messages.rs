//! [`MessageCounter`]: a gRPC streaming answer's messages, counted from their 5-byte
//! length prefixes as DATA frames arrive (a prefix or a message may span frames),
//! each timed when its last byte came. Nothing is allocated per message: the gaps
//! go into a histogram whose room the slot keeps from call to call, and grows only
//! when a gap falls into a bucket no earlier one did (a few dozen at most).

use record::MessageLatency;
use workload::GrpcStream;

/// The bytes before each gRPC message: a compressed flag and a big-endian length.
const PREFIX_LEN: usize = 5;

/// One call's messages received; reset by [`MessageCounter::start`].
#[derive(Debug, Default)]
pub(crate) struct MessageCounter {
    /// Counting this call at all (a gRPC call that streams either way).
    pub on: bool,
    /// What the call sends.
    pub sent: GrpcStream,
    /// Messages let go so far, when they go at a pace (`every`).
    pub released: u64,
    prefix: [u8; PREFIX_LEN],
    prefix_read: usize,
    /// The current message's bytes still to come (after a whole prefix).
    body_left: u64,
    /// Whole messages received.
    pub messages: u64,
    /// Their payload bytes (without prefixes).
    pub payload_bytes: u64,
    /// When the first whole message came (the worker's clock); 0 until one did.
    pub first_ns: u64,
    last_ns: u64,
    /// The gaps between consecutive messages.
    pub gaps: MessageLatency,
}

impl MessageCounter {
    /// Prepares for a new call: counted when it streams.
    pub(crate) fn start(&mut self, stream: Option<GrpcStream>) {
        self.on = stream.is_some();
        self.sent = stream.unwrap_or_default();
        self.released = 0;
        self.prefix_read = 0;
        self.body_left = 0;
        self.messages = 0;
        self.payload_bytes = 0;
        self.first_ns = 0;
        self.last_ns = 0;
        self.gaps.clear();
    }

    /// Reads a DATA frame's data, which arrived at `at_ns`.
    pub(crate) fn feed(&mut self, mut data: &[u8], at_ns: u64) {
        while !data.is_empty() {
            if self.prefix_read < PREFIX_LEN {
                let take = (PREFIX_LEN - self.prefix_read).min(data.len());
                self.prefix[self.prefix_read..self.prefix_read + take]
                    .copy_from_slice(&data[..take]);
                self.prefix_read += take;
                data = &data[take..];
                if self.prefix_read == PREFIX_LEN {
                    let [_, a, b, c, d] = self.prefix;
                    self.body_left = u64::from(u32::from_be_bytes([a, b, c, d]));
                    if self.body_left == 0 {
                        self.message_done(at_ns);
                    }
                }
            } else {
                let take = self.body_left.min(data.len() as u64);
                self.body_left -= take;
                self.payload_bytes += take;
                data = &data[take as usize..];
                if self.body_left == 0 {
                    self.message_done(at_ns);
                }
            }
        }
    }

    /// The length of the message being read, once its prefix is whole (to refuse
    /// one over the size limit before its bytes come).
    pub(crate) fn announced_len(&self) -> Option<u64> {
        (self.prefix_read == PREFIX_LEN).then_some(self.body_left)
    }

    fn message_done(&mut self, at_ns: u64) {
        if self.messages == 0 {
            self.first_ns = at_ns;
        } else {
            self.gaps.add(at_ns.saturating_sub(self.last_ns));
        }
        self.messages += 1;
        self.last_ns = at_ns;
        self.prefix_read = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(len: usize) -> Vec<u8> {
        let mut bytes = vec![0];
        bytes.extend_from_slice(&(len as u32).to_be_bytes());
        bytes.extend(std::iter::repeat_n(b'x', len));
        bytes
    }

    #[test]
    fn messages_are_counted_however_frames_cut_them() {
        let stream: Vec<u8> = [message(3), message(0), message(300), message(1)].concat();
        // Frames of every size from 1 byte to the whole stream.
        for cut in 1..=stream.len() {
            let mut counter = MessageCounter::default();
            counter.start(Some(GrpcStream::default()));
            for (i, frame) in stream.chunks(cut).enumerate() {
                counter.feed(frame, 1_000 + i as u64 * 10);
            }
            assert_eq!(counter.messages, 4, "frames of {cut}");
            assert_eq!(counter.payload_bytes, 304, "frames of {cut}");
            assert_eq!(counter.gaps.count(), 3, "frames of {cut}");
            assert_eq!(counter.announced_len(), None, "frames of {cut}");
        }
    }

    #[test]
    fn the_first_message_and_the_gaps_are_timed_when_a_message_is_whole() {
        let mut counter = MessageCounter::default();
        counter.start(Some(GrpcStream::default()));
        let first = message(10);
        counter.feed(&first[..7], 100);
        assert_eq!((counter.messages, counter.first_ns), (0, 0));
        assert_eq!(counter.announced_len(), Some(8));
        counter.feed(&first[7..], 250);
        counter.feed(&message(2), 1_250);
        assert_eq!((counter.messages, counter.first_ns), (2, 250));
        assert_eq!(counter.gaps.quantile(1.0), Some(1_000));
        counter.start(None);
        assert_eq!(
            (counter.messages, counter.gaps.count(), counter.on),
            (0, 0, false)
        );
    }
}
