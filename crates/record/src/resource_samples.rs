//! Resource samples of the system under test, stored beside the records on the same
//! unix-nanosecond time axis (`loadlab monitor`, `attack -monitor`).
//!
//! - [`SamplerInfo`]: who produced samples (`host`, `process nginx`, a scrape URL...).
//! - [`SeriesInfo`]: one time series: a name, labels, a unit and a [`SeriesKind`].
//! - [`SampleTables`]: the samplers and series known so far (append-only, like the
//!   record dictionaries); series ids index [`SampleTables::series`].
//! - [`SampleBatch`]: one sampler's reading at one instant: values, and explicit gaps
//!   with their reason (a process that is gone, a scrape that timed out, a counter reset).
//! - [`SampleFrame`]: new table entries plus one batch; what a monitor hands to
//!   [`crate::RecordWriter::write_samples`], and what the two optional blocks hold.
//!
//! On disk (see `docs/RECORD_FORMAT.md`): a *series* block (kind 0x40, JSON) appends
//! samplers and series; a *samples* block (kind 0x41, binary) holds one batch. Both are
//! optional kinds, so readers that predate them skip them and files without samples keep
//! their bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Block kind of a series block (JSON: new samplers and series).
pub(crate) const SERIES_BLOCK: u8 = 0x40;
/// Block kind of a samples block (binary: one [`SampleBatch`]).
pub(crate) const SAMPLES_BLOCK: u8 = 0x41;
/// `series` value of a gap that covers every series of its sampler.
const WHOLE_SAMPLER: u32 = u32::MAX;
/// Gap reasons longer than this are cut (at a character boundary) when written.
pub const MAX_REASON_BYTES: usize = 1024;
/// Fixed head of a samples payload: at_unix_ns u64, value_count u32, gap_count u32.
const SAMPLES_HEAD_LEN: usize = 16;
const VALUE_LEN: usize = 12;
const GAP_HEAD_LEN: usize = 10;

/// A source of samples: a kind (`host`, `process`, `prom`, `postgres`, `agent`) and a
/// name that tells instances apart (the process pattern, the URL with any password
/// replaced by `REDACTED`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SamplerInfo {
    /// The sampler's kind: `host`, `process`, `prom`, `postgres`, `agent` or `log`.
    pub kind: SamplerKind,
    /// Tells instances of a kind apart (a process pattern, a URL).
    pub name: String,
}

/// What kind of sampler wrote a series. On disk it is the kind's name as a string
/// (`"host"`), read at the edge: a kind this build does not know is kept as
/// [`SamplerKind::Other`] and written back as it was, so the file format is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum SamplerKind {
    /// The host's own `/proc` (`host`).
    Host,
    /// A process group (`process`).
    Process,
    /// A Prometheus scrape (`prom`).
    Prom,
    /// A PostgreSQL server (`postgres`).
    Postgres,
    /// A remote agent (`agent`).
    Agent,
    /// A followed log file or command (`log`).
    Log,
    /// A kind written by another loadlab, kept as written.
    Other(String),
}

impl SamplerKind {
    /// The kinds this build knows, each with its name on disk.
    const NAMES: [(SamplerKind, &'static str); 6] = [
        (SamplerKind::Host, "host"),
        (SamplerKind::Process, "process"),
        (SamplerKind::Prom, "prom"),
        (SamplerKind::Postgres, "postgres"),
        (SamplerKind::Agent, "agent"),
        (SamplerKind::Log, "log"),
    ];

    /// The kind a name stands for; an unknown name is [`SamplerKind::Other`].
    pub fn parse(name: &str) -> SamplerKind {
        (Self::NAMES.iter())
            .find(|(_, known)| *known == name)
            .map_or_else(
                || SamplerKind::Other(name.to_owned()),
                |(kind, _)| kind.clone(),
            )
    }

    /// Its name on disk and in reports: `host`, `process`, ... or the unknown name.
    pub fn name(&self) -> &str {
        match self {
            SamplerKind::Host => "host",
            SamplerKind::Process => "process",
            SamplerKind::Prom => "prom",
            SamplerKind::Postgres => "postgres",
            SamplerKind::Agent => "agent",
            SamplerKind::Log => "log",
            SamplerKind::Other(name) => name,
        }
    }
}

impl Default for SamplerKind {
    /// An empty name, as a kind missing from a hand-made table was before it was typed.
    fn default() -> Self {
        SamplerKind::Other(String::new())
    }
}

impl From<String> for SamplerKind {
    fn from(name: String) -> Self {
        SamplerKind::parse(&name)
    }
}

impl From<&str> for SamplerKind {
    fn from(name: &str) -> Self {
        SamplerKind::parse(name)
    }
}

impl From<SamplerKind> for String {
    fn from(kind: SamplerKind) -> Self {
        kind.name().to_owned()
    }
}

impl std::fmt::Display for SamplerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a series' values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// A level as read at the sample's time (memory, threads, connections, a quantile).
    #[default]
    Gauge,
    /// A per-second rate over the interval that ends at the sample's time (derived
    /// from a counter; a counter that went down is a gap, not a negative rate).
    Rate,
    /// Written by a newer loadlab.
    #[serde(other)]
    Other,
}

/// One time series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SeriesInfo {
    /// Index into [`SampleTables::samplers`].
    pub sampler: u32,
    /// e.g. `process.cpu_percent`, `host.tcp_sockets`, or a Prometheus metric name.
    pub name: String,
    #[serde(default)]
    /// Labels that tell series of one name apart (`cpu`, `group`, `interface`...).
    pub labels: BTreeMap<String, String>,
    /// `percent`, `bytes`, `bytes/s`, `count`, `1/s`, `seconds`, `seconds/s`, `ratio`,
    /// or empty when unknown (an untyped Prometheus gauge).
    #[serde(default)]
    pub unit: String,
    /// Whether values are levels or per-second rates.
    pub kind: SeriesKind,
}

/// The samplers and series known so far; ids are positions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleTables {
    /// Samplers by id.
    pub samplers: Vec<SamplerInfo>,
    /// Series by id.
    pub series: Vec<SeriesInfo>,
}

impl SampleTables {
    /// Appends a frame's new entries; fails when they do not continue the tables.
    pub fn extend_from(&mut self, frame: &SampleFrame) -> Result<(), String> {
        if frame.first_sampler as usize != self.samplers.len()
            || frame.first_series as usize != self.series.len()
        {
            return Err(format!(
                "series entries out of order: frame starts at sampler {} and series {}, \
                 {} and {} are known",
                frame.first_sampler,
                frame.first_series,
                self.samplers.len(),
                self.series.len()
            ));
        }
        let samplers = self.samplers.len() + frame.samplers.len();
        if let Some(bad) = frame.series.iter().find(|s| s.sampler as usize >= samplers) {
            return Err(format!(
                "series {:?} names sampler {} not defined",
                bad.name, bad.sampler
            ));
        }
        self.samplers.extend_from_slice(&frame.samplers);
        self.series.extend_from_slice(&frame.series);
        Ok(())
    }

    /// Checks that a batch names only samplers and series defined here.
    pub fn check(&self, batch: &SampleBatch) -> Result<(), String> {
        if let Some(v) = batch
            .values
            .iter()
            .find(|v| v.series as usize >= self.series.len())
        {
            return Err(format!("sample names series {} not defined", v.series));
        }
        let bad_gap = batch.gaps.iter().find(|g| {
            g.sampler as usize >= self.samplers.len()
                || g.series.is_some_and(|s| s as usize >= self.series.len())
        });
        match bad_gap {
            Some(gap) => Err(format!(
                "gap names sampler {} or series {:?} not defined",
                gap.sampler, gap.series
            )),
            None => Ok(()),
        }
    }

    /// The ids of the series a gap covers (one, or every series of its sampler).
    pub fn gap_series<'a>(&'a self, gap: &'a SampleGap) -> impl Iterator<Item = u32> + 'a {
        self.series
            .iter()
            .enumerate()
            .filter(move |(id, info)| match gap.series {
                Some(series) => *id as u32 == series,
                None => info.sampler == gap.sampler,
            })
            .map(|(id, _)| id as u32)
    }
}

/// One value of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleValue {
    /// Index into [`SampleTables::series`].
    pub series: u32,
    /// The value, in the series' unit.
    pub value: f64,
}

/// A missing value and why: `series` is `None` when the whole sampler produced nothing
/// (an endpoint that is down may not have announced any series yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleGap {
    /// The sampler that missed its reading.
    pub sampler: u32,
    /// The series that has no value, or `None` for all of the sampler's.
    pub series: Option<u32>,
    /// Why (a process that is gone, a scrape that timed out...).
    pub reason: String,
}

/// What one sampler read at one instant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleBatch {
    /// When the reading was taken, on the run's clock (unix nanoseconds).
    pub at_unix_ns: u64,
    /// Values read at this instant.
    pub values: Vec<SampleValue>,
    /// Series or samplers that have no value at this instant, with why.
    pub gaps: Vec<SampleGap>,
}

impl SampleBatch {
    /// A batch with a value for every series in id order (`values[i]` is series `i`'s)
    /// and no gaps: how tests and fixtures write one.
    pub fn dense(at_unix_ns: u64, values: &[f64]) -> SampleBatch {
        SampleBatch {
            at_unix_ns,
            values: (0u32..)
                .zip(values)
                .map(|(series, &value)| SampleValue { series, value })
                .collect(),
            gaps: Vec::new(),
        }
    }
}

/// New table entries (continuing at `first_sampler` / `first_series`) and one batch
/// that may use them. A frame with no new entries writes only a samples block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleFrame {
    /// The id of the first sampler in `samplers` (the number already written).
    pub first_sampler: u32,
    /// Samplers new since the last frame.
    pub samplers: Vec<SamplerInfo>,
    /// The id of the first series in `series` (the number already written).
    pub first_series: u32,
    /// Series new since the last frame.
    pub series: Vec<SeriesInfo>,
    /// The reading itself.
    pub batch: SampleBatch,
}

/// The payload of a series block, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SeriesBlock {
    pub first_sampler: u32,
    pub samplers: Vec<SamplerInfo>,
    pub first_series: u32,
    pub series: Vec<SeriesInfo>,
}

/// The payload of a series block, as written (same keys as [`SeriesBlock`]).
#[derive(Serialize)]
pub(crate) struct SeriesBlockRef<'a> {
    pub first_sampler: u32,
    pub samplers: &'a [SamplerInfo],
    pub first_series: u32,
    pub series: &'a [SeriesInfo],
}

impl SeriesBlock {
    /// As a frame without a batch, to extend tables with.
    pub(crate) fn into_frame(self) -> SampleFrame {
        SampleFrame {
            first_sampler: self.first_sampler,
            samplers: self.samplers,
            first_series: self.first_series,
            series: self.series,
            batch: SampleBatch::default(),
        }
    }
}

/// What an input said about resource samples: the tables and counts. Batches
/// themselves are streamed (`RecordSource::drain_samples`), so memory does not grow
/// with the length of the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SampleSummary {
    /// Samplers and series the input declared.
    pub tables: SampleTables,
    /// Samples blocks read.
    pub batches: u64,
    /// Values read.
    pub values: u64,
    /// Gap entries read (a whole-sampler gap counts once).
    pub gaps: u64,
    /// Batches read but dropped because nobody drained them (see
    /// [`MAX_PENDING_SAMPLE_BATCHES`]).
    pub dropped_batches: u64,
}

/// A reader keeps at most this many batches that were read but not yet drained; a
/// consumer that wants samples drains after every `next_batch` (which returns, with no
/// records, after each samples block), one that does not (`encode -to json`) loses
/// nothing it asked for and holds bounded memory.
pub const MAX_PENDING_SAMPLE_BATCHES: usize = 65_536;

/// Encodes a batch as a samples payload into `out` (cleared first).
pub(crate) fn encode_batch(batch: &SampleBatch, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&batch.at_unix_ns.to_le_bytes());
    out.extend_from_slice(&(batch.values.len() as u32).to_le_bytes());
    out.extend_from_slice(&(batch.gaps.len() as u32).to_le_bytes());
    for value in &batch.values {
        out.extend_from_slice(&value.series.to_le_bytes());
        out.extend_from_slice(&value.value.to_bits().to_le_bytes());
    }
    for gap in &batch.gaps {
        let reason = truncate(&gap.reason, MAX_REASON_BYTES);
        out.extend_from_slice(&gap.sampler.to_le_bytes());
        out.extend_from_slice(&gap.series.unwrap_or(WHOLE_SAMPLER).to_le_bytes());
        out.extend_from_slice(&(reason.len() as u16).to_le_bytes());
        out.extend_from_slice(reason.as_bytes());
    }
}

/// Decodes a samples payload; the description of the problem when it is not one.
pub(crate) fn decode_batch(bytes: &[u8]) -> Result<SampleBatch, String> {
    let head = bytes
        .get(..SAMPLES_HEAD_LEN)
        .ok_or_else(|| "samples block too short".to_owned())?;
    let at_unix_ns = u64::from_le_bytes(take::<8>(head, 0));
    let value_count = u32::from_le_bytes(take::<4>(head, 8)) as usize;
    let gap_count = u32::from_le_bytes(take::<4>(head, 12)) as usize;
    let values_end = value_count
        .checked_mul(VALUE_LEN)
        .and_then(|len| len.checked_add(SAMPLES_HEAD_LEN))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            format!(
                "samples block claims {value_count} values in {} bytes",
                bytes.len()
            )
        })?;
    if gap_count.saturating_mul(GAP_HEAD_LEN) > bytes.len() - values_end {
        return Err(format!(
            "samples block claims {gap_count} gaps in {} bytes",
            bytes.len()
        ));
    }
    let values = bytes[SAMPLES_HEAD_LEN..values_end]
        .chunks_exact(VALUE_LEN)
        .map(|chunk| SampleValue {
            series: u32::from_le_bytes(take::<4>(chunk, 0)),
            value: f64::from_bits(u64::from_le_bytes(take::<8>(chunk, 4))),
        })
        .collect();
    let mut gaps = Vec::with_capacity(gap_count);
    let mut at = values_end;
    for _ in 0..gap_count {
        let head = bytes
            .get(at..at + GAP_HEAD_LEN)
            .ok_or_else(|| "samples block: gap cut short".to_owned())?;
        let series = u32::from_le_bytes(take::<4>(head, 4));
        let len = usize::from(u16::from_le_bytes(take::<2>(head, 8)));
        let reason = bytes
            .get(at + GAP_HEAD_LEN..at + GAP_HEAD_LEN + len)
            .ok_or_else(|| "samples block: gap reason cut short".to_owned())?;
        let reason = std::str::from_utf8(reason)
            .map_err(|_| "samples block: gap reason is not UTF-8".to_owned())?;
        gaps.push(SampleGap {
            sampler: u32::from_le_bytes(take::<4>(head, 0)),
            series: (series != WHOLE_SAMPLER).then_some(series),
            reason: reason.to_owned(),
        });
        at += GAP_HEAD_LEN + len;
    }
    if at != bytes.len() {
        return Err(format!(
            "samples block has {} bytes left over",
            bytes.len() - at
        ));
    }
    Ok(SampleBatch {
        at_unix_ns,
        values,
        gaps,
    })
}

fn take<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> SampleBatch {
        SampleBatch {
            at_unix_ns: 1_763_700_000_123_456_789,
            values: vec![
                SampleValue {
                    series: 0,
                    value: 12.5,
                },
                SampleValue {
                    series: 7,
                    value: f64::NAN,
                },
                SampleValue {
                    series: 2,
                    value: -0.0,
                },
            ],
            gaps: vec![
                SampleGap {
                    sampler: 1,
                    series: None,
                    reason: "connect: connection refused".to_owned(),
                },
                SampleGap {
                    sampler: 0,
                    series: Some(3),
                    reason: "counter reset: 10 -> 2 µs".to_owned(),
                },
            ],
        }
    }

    #[test]
    fn sampler_kinds_read_at_the_edge_and_write_back_as_they_were() {
        // (on disk, the kind read)
        let rows = [
            (r#""host""#, SamplerKind::Host),
            (r#""process""#, SamplerKind::Process),
            (r#""prom""#, SamplerKind::Prom),
            (r#""postgres""#, SamplerKind::Postgres),
            (r#""agent""#, SamplerKind::Agent),
            (r#""log""#, SamplerKind::Log),
            (r#""gpu""#, SamplerKind::Other("gpu".to_owned())),
            (r#""Host""#, SamplerKind::Other("Host".to_owned())),
            (r#""""#, SamplerKind::Other(String::new())),
        ];
        for (json, want) in rows {
            let kind: SamplerKind = serde_json::from_str(json).unwrap();
            assert_eq!(kind, want, "{json}");
            assert_eq!(serde_json::to_string(&kind).unwrap(), json, "{json}");
        }
        assert!(serde_json::from_str::<SamplerKind>("7").is_err());
    }

    #[test]
    fn batches_round_trip_bit_for_bit() {
        let rows = [batch(), SampleBatch::default()];
        for want in rows {
            let mut bytes = Vec::new();
            encode_batch(&want, &mut bytes);
            let got = decode_batch(&bytes).unwrap();
            assert_eq!(got.at_unix_ns, want.at_unix_ns);
            assert_eq!(got.gaps, want.gaps);
            let bits = |b: &SampleBatch| -> Vec<(u32, u64)> {
                b.values
                    .iter()
                    .map(|v| (v.series, v.value.to_bits()))
                    .collect()
            };
            assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn damaged_payloads_are_described() {
        let mut good = Vec::new();
        encode_batch(&batch(), &mut good);
        let mut huge_count = good.clone();
        huge_count[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut bad_utf8 = good.clone();
        let last = bad_utf8.len() - 1;
        bad_utf8[last] = 0xff;
        let mut extra = good.clone();
        extra.push(0);
        let rows: Vec<(Vec<u8>, &str)> = vec![
            (Vec::new(), "too short"),
            (good[..10].to_vec(), "too short"),
            (huge_count, "claims 4294967295 values"),
            (good[..good.len() - 3].to_vec(), "cut short"),
            (bad_utf8, "not UTF-8"),
            (extra, "left over"),
        ];
        for (bytes, want) in rows {
            let err = decode_batch(&bytes).unwrap_err();
            assert!(err.contains(want), "{err} (want {want})");
        }
    }

    #[test]
    fn long_reasons_are_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_REASON_BYTES);
        let cut = truncate(&long, MAX_REASON_BYTES);
        assert_eq!(cut.len(), MAX_REASON_BYTES);
        assert_eq!(truncate(&long[..4], 1), "");
        assert_eq!(truncate("abc", 2), "ab");
        let mut bytes = Vec::new();
        let mut long_gap = batch();
        long_gap.gaps[0].reason = format!("x{long}");
        encode_batch(&long_gap, &mut bytes);
        let got = decode_batch(&bytes).unwrap();
        assert_eq!(got.gaps[0].reason.len(), MAX_REASON_BYTES - 1);
    }

    #[test]
    fn tables_grow_in_order_and_check_batches() {
        let mut tables = SampleTables::default();
        let frame = |first_sampler, first_series, sampler| SampleFrame {
            first_sampler,
            samplers: vec![SamplerInfo {
                kind: "host".into(),
                name: String::new(),
            }],
            first_series,
            series: vec![SeriesInfo {
                sampler,
                name: "host.cpu_percent".to_owned(),
                ..SeriesInfo::default()
            }],
            batch: SampleBatch::default(),
        };
        let rows: &[(SampleFrame, Result<(), &str>)] = &[
            (frame(0, 0, 0), Ok(())),
            (frame(0, 1, 0), Err("out of order")),
            (frame(1, 0, 0), Err("out of order")),
            (frame(1, 1, 5), Err("names sampler 5")),
            (frame(1, 1, 1), Ok(())),
        ];
        for (frame, want) in rows {
            match (tables.extend_from(frame), want) {
                (Ok(()), Ok(())) => {}
                (Err(err), Err(want)) => assert!(err.contains(want), "{err}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
        assert_eq!((tables.samplers.len(), tables.series.len()), (2, 2));
        let mut bad = batch();
        assert!(tables.check(&bad).unwrap_err().contains("series 7"));
        bad.values.clear();
        assert!(tables.check(&bad).unwrap_err().contains("series Some(3)"));
        bad.gaps.truncate(1);
        assert_eq!(tables.check(&bad), Ok(()));
        let whole = &bad.gaps[0];
        assert_eq!(tables.gap_series(whole).collect::<Vec<_>>(), vec![1]);
    }
}
