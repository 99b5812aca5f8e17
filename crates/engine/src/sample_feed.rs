//! [`SampleFeed`]: resource samples (the monitor's) written beside the records. The
//! engine only gives the feed the run's time zero and writes what it hands over, so
//! samples and records share one clock without the engine knowing what is sampled.

use record::SampleFrame;

use crate::clock::Clock;

/// A source of sample frames for the record file, started at the run's time zero.
///
/// The collector thread calls [`SampleFeed::ready`] between flushes and writes every
/// frame in order; a feed must never block it.
pub trait SampleFeed: Send {
    /// Called once, right after the workers have their time zero.
    fn start(&mut self, clock: Clock);
    /// Appends the frames ready now, in order.
    fn ready(&mut self, frames: &mut Vec<SampleFrame>);
    /// The last requests are in: stop sampling and append the frames still due.
    fn finish(&mut self, frames: &mut Vec<SampleFrame>);
}

/// No samples: the feed of a plain run.
pub(crate) struct NoSamples;

impl SampleFeed for NoSamples {
    fn start(&mut self, _clock: Clock) {}
    fn ready(&mut self, _frames: &mut Vec<SampleFrame>) {}
    fn finish(&mut self, _frames: &mut Vec<SampleFrame>) {}
}
