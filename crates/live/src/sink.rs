//! [`Sink`]: what receives a run's Prometheus series family by family, and [`Kind`],
//! a family's type. [`crate::Metrics`] hands every series to one; the text exposition
//! (`exposition.rs`, and OpenMetrics), the remote-write push (`remote_write.rs`) and the
//! OTLP push (`otlp.rs`) are the ones, so all always carry the same series.

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Receives series family by family: a [`Sink::family`], then its samples.
pub(crate) trait Sink {
    /// A new family starts.
    fn family(&mut self, name: &str, kind: Kind, help: &str);
    /// One series: `name` + `suffix` (`_bucket`, `_sum`, `_count` or nothing).
    fn sample(&mut self, name: &str, suffix: &str, labels: &[(&str, String)], value: f64);
    /// The traced request of the bucket just given; only OpenMetrics carries it.
    fn exemplar(&mut self, _exemplar: &crate::exemplar::BucketExemplar) {}
}
