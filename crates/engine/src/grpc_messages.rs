//! [`MessageCounter`]: a gRPC streaming answer's messages, counted from their 5-byte
//! length prefixes as DATA frames arrive (a prefix or a message may span frames),
//! each timed when its last byte came. Nothing is allocated per message: the gaps
//! go into a histogram whose room the slot keeps from call to call, and grows only
//! when a gap falls into a bucket no earlier one did (a few dozen at most). The
//! worker's per-second figures ([`StreamTally`]) get each message, its bytes and its
//! gap as they come, with relaxed atomic adds.

use record::MessageLatency;
use workload::GrpcStream;

use crate::stream_tally::StreamTally;

/// The bytes before each gRPC message: a compressed flag and a big-endian length.
const PREFIX_LEN: usize = 5;

/// One call's messages received; reset by [`MessageCounter::start`].
#[derive(Debug, Default)]
pub(crate) struct MessageCounter {
    /// Counting this call at all (a gRPC call that streams either way).
    pub on: bool,
    /// What the call sends.
    pub sent: GrpcStream,
    /// Messages let go so far, when they go at a pace (`every`), and their bytes
    /// (prefixes included; any other call's: its whole body's, once sent).
    pub released: u64,
    pub released_bytes: u64,
    /// When the call was sent (the worker's clock): its messages' times follow.
    start_ns: u64,
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
    /// A bidirectional call's answers, each against the message it answers.
    pub round_trips: MessageLatency,
}

impl MessageCounter {
    /// Prepares for a new call sent at `start_ns`: counted when it streams.
    pub(crate) fn start(&mut self, stream: Option<GrpcStream>, start_ns: u64) {
        self.on = stream.is_some();
        self.sent = stream.unwrap_or_default();
        self.released = 0;
        self.released_bytes = 0;
        self.start_ns = start_ns;
        self.round_trips.clear();
        self.prefix_read = 0;
        self.body_left = 0;
        self.messages = 0;
        self.payload_bytes = 0;
        self.first_ns = 0;
        self.last_ns = 0;
        self.gaps.clear();
    }

    /// Reads a DATA frame's data, which arrived at `at_ns`; `tally` counts its
    /// payload bytes, and each whole message, as they come.
    pub(crate) fn feed(&mut self, mut data: &[u8], at_ns: u64, tally: &StreamTally) {
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
                        self.message_done(at_ns, tally);
                    }
                }
            } else {
                let take = self.body_left.min(data.len() as u64);
                self.body_left -= take;
                self.payload_bytes += take;
                // The bytes of a message cut short count too, as in the entry.
                tally.received(0, take);
                data = &data[take as usize..];
                if self.body_left == 0 {
                    self.message_done(at_ns, tally);
                }
            }
        }
    }

    /// The length of the message being read, once its prefix is whole (to refuse
    /// one over the size limit before its bytes come).
    pub(crate) fn announced_len(&self) -> Option<u64> {
        (self.prefix_read == PREFIX_LEN).then_some(self.body_left)
    }

    /// The messages the call sent and their payload bytes: a paced call's let go so
    /// far (one cut short sent only some), any other's all of its body (as rendered,
    /// placeholders' values included).
    pub(crate) fn sent_out(&self) -> (u64, u64) {
        let messages = match self.sent.every_ns {
            0 => self.sent.total_messages(),
            _ => self.released,
        };
        let payload = self
            .released_bytes
            .saturating_sub(messages * PREFIX_LEN as u64);
        (messages, payload)
    }

    /// When message `k` (from 0, over every pass) went, if it did: a paced call's
    /// when it was due (so a late send's lag counts, as a request's does), the
    /// others' with the call, as the flow control let them go.
    fn sent_ns(&self, k: u64) -> Option<u64> {
        match self.sent.every_ns {
            0 => (k < self.sent.total_messages()).then_some(self.start_ns),
            every_ns => (k < self.released).then(|| self.start_ns + k * every_ns),
        }
    }

    fn message_done(&mut self, at_ns: u64, tally: &StreamTally) {
        // The k-th answer of a bidirectional call answers its k-th message; one
        // beyond the messages sent is timed from the call's send only (first, gaps).
        if self.sent.bidi
            && let Some(sent_ns) = self.sent_ns(self.messages)
        {
            self.round_trips.add(at_ns.saturating_sub(sent_ns));
        }
        if self.messages == 0 {
            self.first_ns = at_ns;
        } else {
            let gap_ns = at_ns.saturating_sub(self.last_ns);
            self.gaps.add(gap_ns);
            tally.timed(gap_ns);
        }
        tally.received(1, 0);
        self.messages += 1;
        self.last_ns = at_ns;
        self.prefix_read = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::stream_tally::StreamSeconds;

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
            counter.start(Some(GrpcStream::default()), 0);
            let tally = Arc::new(StreamTally::default());
            tally.opened();
            let mut seconds = StreamSeconds::new(vec![Arc::clone(&tally)]);
            for (i, frame) in stream.chunks(cut).enumerate() {
                counter.feed(frame, 1_000 + i as u64 * 10, &tally);
            }
            assert_eq!(counter.messages, 4, "frames of {cut}");
            assert_eq!(counter.payload_bytes, 304, "frames of {cut}");
            assert_eq!(counter.gaps.count(), 3, "frames of {cut}");
            assert_eq!(counter.announced_len(), None, "frames of {cut}");
            // The per-second figures had each message as it came.
            let sample = seconds.sample().unwrap();
            assert_eq!(
                (sample.messages_in, sample.bytes_in, sample.latency),
                (4, 304, counter.gaps.clone()),
                "frames of {cut}"
            );
        }
    }

    #[test]
    fn a_message_is_in_the_per_second_figures_of_the_second_it_came_in() {
        let tally = Arc::new(StreamTally::default());
        tally.opened();
        let mut seconds = StreamSeconds::new(vec![Arc::clone(&tally)]);
        let mut counter = MessageCounter::default();
        counter.start(Some(GrpcStream::default()), 0);
        // (what arrives in this second, messages and bytes the second counts)
        let rows: [(Vec<u8>, u64, u64); 4] = [
            (message(4), 1, 4),
            (vec![], 0, 0),
            // A message cut across seconds: its bytes as they come, it when whole.
            ([message(2), message(6)[..7].to_vec()].concat(), 1, 4),
            (message(6)[7..].to_vec(), 1, 4),
        ];
        for (second, (data, messages, bytes)) in rows.iter().enumerate() {
            counter.feed(data, second as u64 * 1_000_000_000, &tally);
            let sample = seconds.sample().unwrap();
            assert_eq!(
                (sample.messages_in, sample.bytes_in),
                (*messages, *bytes),
                "second {second}"
            );
        }
    }

    #[test]
    fn the_first_message_and_the_gaps_are_timed_when_a_message_is_whole() {
        let tally = StreamTally::default();
        let mut counter = MessageCounter::default();
        counter.start(Some(GrpcStream::default()), 0);
        let first = message(10);
        counter.feed(&first[..7], 100, &tally);
        assert_eq!((counter.messages, counter.first_ns), (0, 0));
        assert_eq!(counter.announced_len(), Some(8));
        counter.feed(&first[7..], 250, &tally);
        counter.feed(&message(2), 1_250, &tally);
        assert_eq!((counter.messages, counter.first_ns), (2, 250));
        assert_eq!(counter.gaps.quantile(1.0), Some(1_000));
        counter.start(None, 0);
        assert_eq!(
            (counter.messages, counter.gaps.count(), counter.on),
            (0, 0, false)
        );
    }

    #[test]
    fn a_bidirectional_calls_kth_answer_is_timed_against_its_kth_message() {
        // Each row: the call's pace, messages let go, answers' arrival times, the
        // round trips timed (in order).
        let rows: [(u64, u64, &[u64], &[u64]); 3] = [
            // Paced 10 apart from 1_000: message k due at 1_000 + 10k.
            (10, 3, &[1_005, 1_016, 1_040, 1_050], &[5, 6, 20]),
            // As fast as the flow control allows: all sent with the call.
            (0, 0, &[1_005, 1_016], &[5, 16]),
            // Answers before their message went are not round trips.
            (10, 1, &[1_001, 1_002], &[1]),
        ];
        let tally = StreamTally::default();
        for (every_ns, released, arrivals, want) in rows {
            let mut counter = MessageCounter::default();
            let sent = GrpcStream {
                messages_out: 3,
                every_ns,
                bidi: true,
                ..GrpcStream::default()
            };
            counter.start(Some(sent), 1_000);
            counter.released = released;
            for &at_ns in arrivals {
                counter.feed(&message(1), at_ns, &tally);
            }
            let timed: Vec<u64> = (0..counter.round_trips.count())
                .map(|i| {
                    let q = (i + 1) as f64 / counter.round_trips.count() as f64;
                    counter.round_trips.quantile(q).unwrap()
                })
                .collect();
            assert_eq!(timed, want, "every {every_ns}");
            assert_eq!(counter.messages, arrivals.len() as u64);
        }
        // A server stream's answers (not bidirectional) are no round trips.
        let mut counter = MessageCounter::default();
        counter.start(Some(GrpcStream::default()), 0);
        counter.feed(&message(1), 5, &tally);
        assert_eq!(counter.round_trips.count(), 0);
    }
}
