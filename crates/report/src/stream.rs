//! [`RecordStream`]: the inputs, merged, read on a second thread so that decoding
//! (decompression, varints) overlaps aggregation. Batches come back in input order or
//! in send-time order ([`Order`]); the merged tables travel with the first batch that
//! needs them, and the inputs' summaries come with the end (and mid-run only when the
//! consumer asked for live summaries).

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread;

use record::{
    Inputs, Record, RecordError, RunTables, SampleBatch, SampleTables, Sorted, SourceSummary,
};

use crate::ReportError;

/// The order records come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// One input after another, each in file order: fastest, for order-free metrics.
    Input,
    /// Merged by send time (`Inputs::sorted`): for per-interval rows and conversions.
    SendTime,
}

/// Batches in flight between the reader and the consumer.
const BATCHES_IN_FLIGHT: usize = 4;

enum Message {
    Batch {
        records: Vec<Record>,
        tables: Option<RunTables>,
        /// What the inputs said about themselves so far: with the first batch, and
        /// again whenever new generator samples arrived, up to the first records and
        /// then only when live summaries were asked for (per-interval rows).
        summaries: Option<Vec<SourceSummary>>,
        /// Resource samples read since the last message, and the sample tables when
        /// they grew.
        samples: Vec<SampleBatch>,
        sample_tables: Option<SampleTables>,
    },
    Done {
        tables: RunTables,
        summaries: Vec<SourceSummary>,
        samples: Vec<SampleBatch>,
        sample_tables: SampleTables,
    },
    Failed(RecordError),
}

/// Reads inputs on a background thread; see the module documentation.
pub struct RecordStream {
    batches: Receiver<Message>,
    spare: Sender<Vec<Record>>,
    tables: RunTables,
    summaries: Vec<SourceSummary>,
    samples: Vec<SampleBatch>,
    sample_tables: SampleTables,
    done: bool,
}

impl RecordStream {
    /// Opens `paths` (`-` is stdin; none means stdin). Opening errors (a missing file, an
    /// empty or unknown input) come back from here. With `live_summaries`,
    /// [`RecordStream::summaries`] keeps up with the generator statistics during the
    /// run; without, it is refreshed only until the first records arrive and at the end
    /// (each refresh copies every input's statistics so far).
    pub fn open(
        paths: &[String],
        order: Order,
        live_summaries: bool,
    ) -> Result<RecordStream, ReportError> {
        let paths = paths.to_vec();
        let (batch_tx, batches) = sync_channel(BATCHES_IN_FLIGHT);
        let (spare, spare_rx) = channel();
        let (opened_tx, opened) = sync_channel(1);
        thread::Builder::new()
            .name("loadlab-read".to_owned())
            .spawn(move || match Inputs::open(&paths) {
                Ok(inputs) => {
                    if opened_tx.send(None).is_ok() {
                        let reader = Reader::new(inputs, order);
                        read(reader, live_summaries, &batch_tx, &spare_rx);
                    }
                }
                Err(err) => {
                    let _ = opened_tx.send(Some(err));
                }
            })
            .map_err(|err| ReportError::ReaderThread(format!("could not start: {err}")))?;
        match opened.recv() {
            Ok(None) => {}
            Ok(Some(err)) => return Err(err.into()),
            Err(_) => return Err(thread_died()),
        }
        Ok(RecordStream {
            batches,
            spare,
            tables: RunTables::default(),
            summaries: Vec::new(),
            samples: Vec::new(),
            sample_tables: SampleTables::default(),
            done: false,
        })
    }

    /// Replaces `out` with the next records; `false` once every input is drained.
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, ReportError> {
        if self.done {
            out.clear();
            return Ok(false);
        }
        match self.batches.recv() {
            Ok(Message::Batch {
                records,
                tables,
                summaries,
                samples,
                sample_tables,
            }) => {
                let used = std::mem::replace(out, records);
                let _ = self.spare.send(used);
                if let Some(tables) = tables {
                    self.tables = tables;
                }
                if let Some(summaries) = summaries {
                    self.summaries = summaries;
                }
                if let Some(sample_tables) = sample_tables {
                    self.sample_tables = sample_tables;
                }
                self.samples.extend(samples);
                Ok(true)
            }
            Ok(Message::Done {
                tables,
                summaries,
                samples,
                sample_tables,
            }) => {
                (self.tables, self.summaries, self.done) = (tables, summaries, true);
                self.sample_tables = sample_tables;
                self.samples.extend(samples);
                out.clear();
                Ok(false)
            }
            Ok(Message::Failed(err)) => Err(err.into()),
            Err(_) => Err(thread_died()),
        }
    }

    /// The merged dictionaries, as far as the records returned so far need them.
    pub fn tables(&self) -> &RunTables {
        &self.tables
    }

    /// What each input said about itself: headers from the first batch on, complete
    /// (statistics, end, torn tail) once `next_batch` returned false. Mid-run, statistics
    /// are current only with live summaries (see [`RecordStream::open`]).
    pub fn summaries(&self) -> &[SourceSummary] {
        &self.summaries
    }

    /// Resource sample batches received since the last call, with the merged sample
    /// tables they index (the records' batches and these travel together).
    pub fn take_samples(&mut self) -> (Vec<SampleBatch>, &SampleTables) {
        (std::mem::take(&mut self.samples), &self.sample_tables)
    }
}

fn thread_died() -> ReportError {
    ReportError::ReaderThread("stopped unexpectedly".to_owned())
}

/// The merged inputs in the chosen order.
enum Reader {
    Input(Inputs),
    SendTime(Sorted),
}

impl Reader {
    fn new(inputs: Inputs, order: Order) -> Reader {
        match order {
            Order::Input => Reader::Input(inputs),
            Order::SendTime => Reader::SendTime(inputs.sorted()),
        }
    }

    fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        match self {
            Reader::Input(inputs) => inputs.next_batch(out),
            Reader::SendTime(sorted) => sorted.next_batch(out),
        }
    }

    fn tables(&self) -> &RunTables {
        match self {
            Reader::Input(inputs) => inputs.tables(),
            Reader::SendTime(sorted) => sorted.tables(),
        }
    }

    /// Generator samples read so far, over all inputs.
    fn sample_count(&self) -> usize {
        match self {
            Reader::Input(inputs) => inputs.summaries().map(|s| s.stats.len()).sum(),
            Reader::SendTime(sorted) => sorted.summaries().map(|s| s.stats.len()).sum(),
        }
    }

    fn summaries(&self) -> Vec<SourceSummary> {
        match self {
            Reader::Input(inputs) => inputs.summaries().cloned().collect(),
            Reader::SendTime(sorted) => sorted.summaries().cloned().collect(),
        }
    }

    fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        match self {
            Reader::Input(inputs) => inputs.drain_samples(out),
            Reader::SendTime(sorted) => sorted.drain_samples(out),
        }
    }

    fn sample_tables(&self) -> &SampleTables {
        match self {
            Reader::Input(inputs) => inputs.sample_tables(),
            Reader::SendTime(sorted) => sorted.sample_tables(),
        }
    }
}

/// The reader thread: batches out, spent buffers back, until the end or the consumer
/// hangs up.
fn read(
    mut reader: Reader,
    live_summaries: bool,
    batches: &SyncSender<Message>,
    spare: &Receiver<Vec<Record>>,
) {
    let mut sent_sizes = (0, 0, 0);
    let mut sent_samples = None;
    let mut sent_sample_sizes = (0, 0);
    // Summaries mid-run are wanted while no records went out yet (the consumer reads
    // the headers with the first records), and throughout when live.
    let mut sent_records = false;
    loop {
        let mut records = spare.try_recv().unwrap_or_default();
        let result = reader.next_batch(&mut records);
        let mut resource_samples = Vec::new();
        reader.drain_samples(&mut resource_samples);
        let sample_tables = reader.sample_tables();
        let sample_sizes = (sample_tables.samplers.len(), sample_tables.series.len());
        let tables_grew = std::mem::replace(&mut sent_sample_sizes, sample_sizes) != sample_sizes;
        let message = match result {
            Ok(true) => {
                let tables = reader.tables();
                let sizes = (
                    tables.attacks.len(),
                    tables.targets.len(),
                    tables.errors.len(),
                );
                let changed = std::mem::replace(&mut sent_sizes, sizes) != sizes;
                let samples = Some(reader.sample_count());
                let new_samples = std::mem::replace(&mut sent_samples, samples) != samples;
                let wanted = live_summaries || !sent_records;
                sent_records |= !records.is_empty();
                Message::Batch {
                    records,
                    tables: changed.then(|| tables.clone()),
                    summaries: (new_samples && wanted).then(|| reader.summaries()),
                    samples: resource_samples,
                    sample_tables: tables_grew.then(|| reader.sample_tables().clone()),
                }
            }
            Ok(false) => Message::Done {
                tables: reader.tables().clone(),
                summaries: reader.summaries(),
                samples: resource_samples,
                sample_tables: reader.sample_tables().clone(),
            },
            Err(err) => Message::Failed(err),
        };
        let last = !matches!(message, Message::Batch { .. });
        if batches.send(message).is_err() || last {
            return;
        }
    }
}
