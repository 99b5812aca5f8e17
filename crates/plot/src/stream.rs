//! [`SortedStream`]: the inputs merged in send-time order ([`record::Inputs::sorted`])
//! on a second thread, so that decoding and merging overlap the drawing work (on 10M
//! records each takes about as long as the other). Batches are recycled, so memory
//! stays at a few batches in flight.
//!
//! Resource samples ride along. Files of samples only (`loadlab monitor -output`) are
//! read first, on their own, draining their batches after every block: in the
//! send-time merge a file without records would be read to its end inside one call
//! (it never vouches for a time), holding all its batches. Then the record inputs
//! follow in send-time order, their own samples drained after every batch. Both
//! readers' sampler and series ids are merged here ([`SampleMerge`]) the way
//! [`record::Inputs`] merges them, so the consumer sees one set of tables.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread;

use record::{
    InputFormat, Inputs, Record, RecordError, RecordSource, RunTables, SampleBatch, SampleTables,
    SamplerInfo, SeriesInfo, SourceSummary,
};

use crate::PlotError;

/// Batches in flight between the reader and the consumer.
const BATCHES_IN_FLIGHT: usize = 4;
/// Sample batches of a samples-only file sent together (a second of a big monitor).
const SAMPLE_BATCHES_PER_MESSAGE: usize = 256;

/// What the reader thread hands over.
enum Message {
    Batch(Batch),
    Done(Box<Done>),
    Failed(RecordError),
}

/// Records in send-time order, the sample batches read meanwhile (merged ids), and the
/// tables when they grew since the last batch.
struct Batch {
    records: Vec<Record>,
    tables: Option<RunTables>,
    samples: Vec<SampleBatch>,
    sample_tables: Option<SampleTables>,
}

struct Done {
    tables: RunTables,
    summaries: Vec<SourceSummary>,
    samples: Vec<SampleBatch>,
    sample_tables: SampleTables,
}

/// See the module documentation.
pub struct SortedStream {
    batches: Receiver<Message>,
    spare: Sender<Vec<Record>>,
    tables: RunTables,
    summaries: Vec<SourceSummary>,
    sample_tables: SampleTables,
    samples: Vec<SampleBatch>,
    done: bool,
}

impl SortedStream {
    /// Opens `paths` (none or `-` is stdin); errors opening them come back from here.
    pub fn open(paths: &[String]) -> Result<SortedStream, PlotError> {
        let paths = paths.to_vec();
        let (batch_tx, batches) = sync_channel(BATCHES_IN_FLIGHT);
        let (spare, spare_rx) = channel();
        let (opened_tx, opened) = sync_channel(1);
        thread::Builder::new()
            .name("loadlab-plot-read".to_owned())
            .spawn(move || match open_sources(&paths) {
                Ok(sources) => {
                    if opened_tx.send(None).is_ok() {
                        read(sources, &batch_tx, &spare_rx);
                    }
                }
                Err(err) => {
                    let _ = opened_tx.send(Some(err));
                }
            })
            .map_err(|err| PlotError::Reader(format!("could not start: {err}")))?;
        match opened.recv() {
            Ok(None) => {}
            Ok(Some(err)) => return Err(err.into()),
            Err(_) => return Err(reader_died()),
        }
        Ok(SortedStream {
            batches,
            spare,
            tables: RunTables::default(),
            summaries: Vec::new(),
            sample_tables: SampleTables::default(),
            samples: Vec::new(),
            done: false,
        })
    }

    /// Replaces `out` with the next records (none while samples-only files are read);
    /// `false` once every input is drained. Sample batches read meanwhile wait in
    /// [`SortedStream::take_samples`].
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, PlotError> {
        if self.done {
            out.clear();
            return Ok(false);
        }
        match self.batches.recv() {
            Ok(Message::Batch(batch)) => {
                let used = std::mem::replace(out, batch.records);
                // Only vectors with room go back: batches of samples alone carry an
                // empty one, and hundreds of those queued as spares would each grow
                // to a full batch once the records come.
                if used.capacity() > 0 {
                    let _ = self.spare.send(used);
                }
                if let Some(tables) = batch.tables {
                    self.tables = tables;
                }
                if let Some(sample_tables) = batch.sample_tables {
                    self.sample_tables = sample_tables;
                }
                self.samples.extend(batch.samples);
                Ok(true)
            }
            Ok(Message::Done(done)) => {
                let Done {
                    tables,
                    summaries,
                    samples,
                    sample_tables,
                } = *done;
                (self.tables, self.summaries, self.done) = (tables, summaries, true);
                self.sample_tables = sample_tables;
                self.samples.extend(samples);
                out.clear();
                Ok(false)
            }
            Ok(Message::Failed(err)) => Err(err.into()),
            Err(_) => Err(reader_died()),
        }
    }

    /// The merged dictionaries, as far as the records returned so far need them.
    pub fn tables(&self) -> &RunTables {
        &self.tables
    }

    /// The sample batches received since the last call, and the merged sampler and
    /// series tables their ids index.
    pub fn take_samples(&mut self, out: &mut Vec<SampleBatch>) -> &SampleTables {
        out.append(&mut self.samples);
        &self.sample_tables
    }

    /// What each input said about itself, in the order given; complete once the
    /// stream is drained.
    pub fn into_parts(self) -> (RunTables, Vec<SourceSummary>) {
        (self.tables, self.summaries)
    }
}

fn reader_died() -> PlotError {
    PlotError::Reader("stopped without a word".to_owned())
}

/// Opens each path (`-` is stdin; none means stdin).
fn open_sources(paths: &[String]) -> Result<Vec<Box<dyn RecordSource>>, RecordError> {
    let stdin = ["-".to_owned()];
    let paths = if paths.is_empty() { &stdin[..] } else { paths };
    paths.iter().map(|path| record::open_input(path)).collect()
}

/// A record file whose header names no attack: `loadlab monitor`'s.
fn samples_only(summary: &SourceSummary) -> bool {
    summary.format == InputFormat::Binary && summary.header.attacks.is_empty()
}

/// Sampler and series ids of several readers merged onto one set of tables, as
/// [`record::Inputs`] merges its inputs': samplers by kind and name, series by
/// sampler, name and labels.
#[derive(Default)]
struct SampleMerge {
    tables: SampleTables,
    sampler_ids: HashMap<SamplerInfo, u32>,
    series_ids: HashMap<SeriesInfo, u32>,
    /// Per reader: its sampler ids and series ids -> merged ids.
    readers: Vec<(Vec<u32>, Vec<u32>)>,
    /// Table sizes last sent.
    sent: (usize, usize),
}

impl SampleMerge {
    /// Rewrites `batches` of reader `reader` (ids index `tables`) to merged ids.
    fn remap(&mut self, reader: usize, tables: &SampleTables, batches: &mut [SampleBatch]) {
        while self.readers.len() <= reader {
            self.readers.push((Vec::new(), Vec::new()));
        }
        let (samplers, series) = &mut self.readers[reader];
        for info in &tables.samplers[samplers.len().min(tables.samplers.len())..] {
            let id = *self.sampler_ids.entry(info.clone()).or_insert_with(|| {
                self.tables.samplers.push(info.clone());
                (self.tables.samplers.len() - 1) as u32
            });
            samplers.push(id);
        }
        for info in &tables.series[series.len().min(tables.series.len())..] {
            let merged = SeriesInfo {
                sampler: samplers
                    .get(info.sampler as usize)
                    .copied()
                    .unwrap_or(u32::MAX),
                ..info.clone()
            };
            let id = *self.series_ids.entry(merged.clone()).or_insert_with(|| {
                self.tables.series.push(merged);
                (self.tables.series.len() - 1) as u32
            });
            series.push(id);
        }
        // Ids the reader did not define (it checks them) map past the tables.
        let sampler = |id: u32| samplers.get(id as usize).copied().unwrap_or(u32::MAX);
        let one = |id: u32| series.get(id as usize).copied().unwrap_or(u32::MAX);
        for batch in batches {
            for value in &mut batch.values {
                value.series = one(value.series);
            }
            for gap in &mut batch.gaps {
                gap.sampler = sampler(gap.sampler);
                gap.series = gap.series.map(one);
            }
        }
    }

    /// The merged tables, when they grew since the last call.
    fn grown(&mut self) -> Option<SampleTables> {
        let now = (self.tables.samplers.len(), self.tables.series.len());
        let grew = now != self.sent;
        self.sent = now;
        grew.then(|| self.tables.clone())
    }
}

/// The reader thread: samples-only files first, then the records in send-time order;
/// batches out, spare record vectors back in.
fn read(
    sources: Vec<Box<dyn RecordSource>>,
    out: &SyncSender<Message>,
    spare: &Receiver<Vec<Record>>,
) {
    let count = sources.len();
    let (mut monitors, mut runs) = (Vec::new(), Vec::new());
    for (index, source) in sources.into_iter().enumerate() {
        if samples_only(source.summary()) {
            monitors.push((index, source));
        } else {
            runs.push((index, source));
        }
    }
    let mut merge = SampleMerge::default();
    let mut summaries: Vec<Option<SourceSummary>> = vec![None; count];
    let (monitor_order, monitor_sources): (Vec<usize>, Vec<_>) = monitors.into_iter().unzip();
    let (run_order, run_sources): (Vec<usize>, Vec<_>) = runs.into_iter().unzip();
    let result = read_samples_only(monitor_sources, &mut merge, out).and_then(|inputs| {
        place(&mut summaries, &monitor_order, inputs.summaries());
        read_runs(run_sources, &mut merge, out, spare)
    });
    let (tables, run_summaries, samples) = match result {
        Ok(Some(done)) => done,
        Ok(None) => return,
        Err(err) => {
            let _ = out.send(Message::Failed(err));
            return;
        }
    };
    place(&mut summaries, &run_order, run_summaries.iter());
    let done = Done {
        tables,
        summaries: summaries.into_iter().flatten().collect(),
        samples,
        sample_tables: merge.tables,
    };
    let _ = out.send(Message::Done(Box::new(done)));
}

/// Puts `summaries` at their inputs' places in the order given.
fn place<'a>(
    all: &mut [Option<SourceSummary>],
    order: &[usize],
    summaries: impl Iterator<Item = &'a SourceSummary>,
) {
    for (&index, summary) in order.iter().zip(summaries) {
        if let Some(slot) = all.get_mut(index) {
            *slot = Some(summary.clone());
        }
    }
}

/// Reads files of samples only, one after another, draining after every block.
fn read_samples_only(
    sources: Vec<Box<dyn RecordSource>>,
    merge: &mut SampleMerge,
    out: &SyncSender<Message>,
) -> Result<Inputs, RecordError> {
    let mut inputs = Inputs::from_sources(sources);
    let (mut records, mut samples) = (Vec::new(), Vec::new());
    loop {
        let more = inputs.next_batch(&mut records)?;
        inputs.drain_samples(&mut samples);
        if samples.len() >= SAMPLE_BATCHES_PER_MESSAGE || (!more && !samples.is_empty()) {
            merge.remap(0, inputs.sample_tables(), &mut samples);
            let batch = Batch {
                records: Vec::new(),
                tables: None,
                samples: std::mem::take(&mut samples),
                sample_tables: merge.grown(),
            };
            if out.send(Message::Batch(batch)).is_err() {
                break;
            }
        }
        if !more {
            break;
        }
    }
    Ok(inputs)
}

/// Reads the record inputs in send-time order; `None` when the consumer is gone.
type RunsRead = Option<(RunTables, Vec<SourceSummary>, Vec<SampleBatch>)>;

fn read_runs(
    sources: Vec<Box<dyn RecordSource>>,
    merge: &mut SampleMerge,
    out: &SyncSender<Message>,
    spare: &Receiver<Vec<Record>>,
) -> Result<RunsRead, RecordError> {
    let mut sorted = Inputs::from_sources(sources).sorted();
    let mut sizes = (usize::MAX, 0, 0, 0);
    loop {
        let mut records = spare.try_recv().unwrap_or_default();
        let more = sorted.next_batch(&mut records)?;
        // Drained after every batch, so an input's pending samples stay few.
        let mut samples = Vec::new();
        sorted.drain_samples(&mut samples);
        merge.remap(1, sorted.sample_tables(), &mut samples);
        if !more {
            let summaries = sorted.summaries().cloned().collect();
            return Ok(Some((sorted.tables().clone(), summaries, samples)));
        }
        let tables = sorted.tables();
        let now = (
            0,
            tables.attacks.len(),
            tables.targets.len(),
            tables.errors.len(),
        );
        let grew = now != sizes;
        sizes = now;
        let batch = Batch {
            records,
            tables: grew.then(|| tables.clone()),
            samples,
            sample_tables: merge.grown(),
        };
        if out.send(Message::Batch(batch)).is_err() {
            return Ok(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use record::{SampleGap, SampleValue, SeriesKind};

    use super::*;

    fn sampler(kind: &str, name: &str) -> SamplerInfo {
        SamplerInfo {
            kind: kind.to_owned(),
            name: name.to_owned(),
        }
    }

    fn series(sampler: u32, name: &str) -> SeriesInfo {
        SeriesInfo {
            sampler,
            name: name.to_owned(),
            kind: SeriesKind::Gauge,
            ..SeriesInfo::default()
        }
    }

    fn batch(values: &[u32], gaps: &[(u32, Option<u32>)]) -> SampleBatch {
        SampleBatch {
            at_unix_ns: 0,
            values: values
                .iter()
                .map(|&series| SampleValue { series, value: 1.0 })
                .collect(),
            gaps: gaps
                .iter()
                .map(|&(sampler, series)| SampleGap {
                    sampler,
                    series,
                    reason: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn two_readers_share_samplers_and_series_by_name() {
        let mut merge = SampleMerge::default();
        // Reader 0 (a monitor file): host and nginx.
        let monitor = SampleTables {
            samplers: vec![sampler("host", "host"), sampler("process", "nginx")],
            series: vec![series(0, "host.load1"), series(1, "process.fds")],
        };
        let mut batches = vec![batch(&[0, 1], &[(1, None)])];
        merge.remap(0, &monitor, &mut batches);
        assert_eq!(batches[0], batch(&[0, 1], &[(1, None)]));
        assert_eq!(merge.grown().map(|t| t.series.len()), Some(2));
        assert_eq!(merge.grown(), None);
        // Reader 1 (a run's file): nginx again, the same series, and a new one.
        let run = SampleTables {
            samplers: vec![sampler("process", "nginx")],
            series: vec![series(0, "process.cpu_percent"), series(0, "process.fds")],
        };
        let mut batches = vec![batch(&[0, 1], &[(0, Some(1)), (0, None)])];
        merge.remap(1, &run, &mut batches);
        assert_eq!(batches[0], batch(&[2, 1], &[(1, Some(1)), (1, None)]));
        let tables = merge.grown().unwrap();
        assert_eq!(tables.samplers.len(), 2);
        assert_eq!(tables.series[2], series(1, "process.cpu_percent"));
        // An id the reader never defined stays out of the tables.
        let mut bad = vec![batch(&[7], &[(9, Some(9))])];
        merge.remap(1, &run, &mut bad);
        assert_eq!(bad[0], batch(&[u32::MAX], &[(u32::MAX, Some(u32::MAX))]));
    }
}
