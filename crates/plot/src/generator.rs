//! The generator's own health over time, from the stats blocks `attack` writes about
//! once a second ([`record::GeneratorStats`]): CPU as a share of one core, requests
//! in flight, requests due but not yet sent, open connections. One [`Track`] per input
//! that has stats, on the page's time axis.

use record::{GeneratorStats, SourceSummary};

use crate::model::x_seconds;

/// One input's samples, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Track {
    pub input: String,
    /// Seconds from the page's time origin.
    pub t_s: Vec<f64>,
    /// CPU used since the previous sample over the time since it, in % of one core.
    pub cpu_percent: Vec<f64>,
    pub in_flight: Vec<f64>,
    pub behind: Vec<f64>,
    pub connections: Vec<f64>,
    /// The stream connections' figures of the samples that had them (format version
    /// 8 on): seconds from the page's origin, and the interval's figures as
    /// `report::StreamsSoFar` reads them.
    pub streams: Vec<(f64, report::StreamSecond)>,
}

/// The tracks of every input with stats samples.
pub fn tracks(summaries: &[SourceSummary], origin_unix_ns: u64) -> Vec<Track> {
    summaries
        .iter()
        .filter(|summary| !summary.stats.is_empty())
        .map(|summary| {
            let start_unix_ns = summary.header.start_unix_ns;
            track(&summary.name, start_unix_ns, &summary.stats, origin_unix_ns)
        })
        .collect()
}

/// One input's track: `stats` from a run that started at `start_unix_ns`.
fn track(input: &str, start_unix_ns: u64, stats: &[GeneratorStats], origin_unix_ns: u64) -> Track {
    let mut samples = stats.to_vec();
    samples.sort_by_key(|s| s.at_unix_ns);
    let mut track = Track {
        input: input.to_owned(),
        t_s: Vec::with_capacity(samples.len()),
        cpu_percent: Vec::with_capacity(samples.len()),
        in_flight: Vec::with_capacity(samples.len()),
        behind: Vec::with_capacity(samples.len()),
        connections: Vec::with_capacity(samples.len()),
        streams: Vec::new(),
    };
    let mut streams = report::StreamsSoFar::new(start_unix_ns);
    let (mut last_at, mut last_cpu) = (start_unix_ns, 0u64);
    for sample in samples {
        let elapsed_ns = sample.at_unix_ns.saturating_sub(last_at);
        let cpu_ns = sample.cpu_ns.saturating_sub(last_cpu);
        track.t_s.push(x_seconds(origin_unix_ns, sample.at_unix_ns));
        track.cpu_percent.push(if elapsed_ns == 0 {
            f64::NAN
        } else {
            cpu_ns as f64 / elapsed_ns as f64 * 100.0
        });
        track.in_flight.push(sample.in_flight as f64);
        track.behind.push(sample.behind as f64);
        track.connections.push(sample.connections_open as f64);
        if streams.add(&sample) {
            let t_s = x_seconds(origin_unix_ns, sample.at_unix_ns);
            track.streams.push((t_s, streams.last));
        }
        (last_at, last_cpu) = (sample.at_unix_ns, sample.cpu_ns);
    }
    track
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_a_share_of_one_core_between_samples() {
        let start = 1_000_000_000_000;
        let sample = |at_s: u64, cpu_ms: u64, behind| GeneratorStats {
            at_unix_ns: start + at_s * 1_000_000_000,
            cpu_ns: cpu_ms * 1_000_000,
            behind,
            ..GeneratorStats::default()
        };
        // Out of order on purpose, and one sample at the same instant.
        let stats = [sample(2, 750, 7), sample(1, 250, 0), sample(2, 750, 7)];
        let track = track("run.llr", start, &stats, start + 500_000_000);
        let track = &track;
        assert_eq!(track.t_s, [0.5, 1.5, 1.5]);
        assert_eq!(track.cpu_percent[..2], [25.0, 50.0]);
        assert!(track.cpu_percent[2].is_nan());
        assert_eq!(track.behind, [0.0, 7.0, 7.0]);
        assert_eq!(x_seconds(10, 5), -5e-9);
    }
}
