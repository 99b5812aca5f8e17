//! [`RecordStream`]: the one way every command reads a run. Inputs are opened and merged
//! ([`Inputs`]) on a second thread, so that decoding (decompression, varints) overlaps
//! the consumer's work: on 10M records each takes about as long as the other.
//!
//! - Records come in input order (fastest, for order-free metrics) or in send-time order
//!   ([`ReadOrder`]), in batches that are recycled: the consumer's spent vector goes
//!   back to the reader, so memory stays at a few batches in flight and nothing is
//!   copied per record.
//! - The merged tables travel with the first batch that needs them; the inputs'
//!   summaries with the first batches and the end (and mid-run only when asked for).
//! - Resource samples ride along, with merged sampler and series ids
//!   ([`RecordStream::take_samples`]); a stretch of samples without records (a monitor
//!   file) is handed over every [`SAMPLE_BATCHES_PER_MESSAGE`] batches.
//! - A replay's logged originals ride along too, with merged ids
//!   ([`RecordStream::take_logged`]); those not taken are dropped at the next batch.

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread;

use crate::RecordError;
use crate::connections::Connection;
use crate::exemplar::Exemplar;
use crate::logged::Logged;
use crate::merge::{Inputs, Sorted};
use crate::meta::RunTables;
use crate::record::Record;
use crate::resource_samples::{SampleBatch, SampleTables};
use crate::source::SourceSummary;

/// The order records come in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOrder {
    /// One input after another, each in file order: fastest, for order-free metrics.
    Input,
    /// Merged by send time ([`Inputs::sorted`]): for per-interval rows, conversions and
    /// time charts.
    SendTime,
}

/// Batches in flight between the reader and the consumer.
const BATCHES_IN_FLIGHT: usize = 4;
/// Sample batches read without records that are sent together (a second of a big
/// monitor), so a monitor file does not cost one message per sample.
pub const SAMPLE_BATCHES_PER_MESSAGE: usize = 256;

/// What the reader thread hands over.
enum Message {
    Batch(Batch),
    Done(Box<Done>),
    Failed(RecordError),
}

/// Records, and what changed beside them since the last batch.
struct Batch {
    records: Vec<Record>,
    /// The merged tables, when they grew.
    tables: Option<RunTables>,
    /// What the inputs said about themselves so far: with the first batch, and again
    /// whenever new generator samples arrived, up to the first records and then only
    /// with live summaries (per-interval rows).
    summaries: Option<Vec<SourceSummary>>,
    /// Resource samples read since the last message, and the sample tables when they
    /// grew.
    samples: Vec<SampleBatch>,
    sample_tables: Option<SampleTables>,
    /// Logged originals read since the last message.
    logged: Vec<Logged>,
    /// Connection figures read since the last message.
    connections: Vec<Connection>,
}

/// Everything, complete, once the inputs are drained.
#[derive(Default)]
struct Done {
    tables: RunTables,
    summaries: Vec<SourceSummary>,
    samples: Vec<SampleBatch>,
    sample_tables: SampleTables,
    logged: Vec<Logged>,
    connections: Vec<Connection>,
    exemplars: Vec<Exemplar>,
}

/// Record inputs read and merged on a background thread; see the module documentation.
///
/// ```no_run
/// # fn main() -> Result<(), record::RecordError> {
/// let paths = ["run.llr".to_owned()];
/// let mut stream = record::RecordStream::open(&paths, record::ReadOrder::SendTime, false)?;
/// let (mut batch, mut samples) = (Vec::new(), Vec::new());
/// while stream.next_batch(&mut batch)? {
///     for record in &batch { /* stream.tables() resolves its ids */ }
///     let _sample_tables = stream.take_samples(&mut samples);
///     samples.clear();
/// }
/// let (_tables, _summaries) = stream.into_parts();
/// # Ok(())
/// # }
/// ```
pub struct RecordStream {
    batches: Receiver<Message>,
    spare: Sender<Vec<Record>>,
    /// What the reader has handed over: the tables, summaries and samples so far; the
    /// logged originals and connection figures of the last batch, until taken; the
    /// exemplars once drained.
    got: Done,
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
        order: ReadOrder,
        live_summaries: bool,
    ) -> Result<RecordStream, RecordError> {
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
            .map_err(|err| RecordError::ReaderThread(format!("could not start: {err}")))?;
        match opened.recv() {
            Ok(None) => {}
            Ok(Some(err)) => return Err(err),
            Err(_) => return Err(thread_died()),
        }
        Ok(RecordStream {
            batches,
            spare,
            got: Done::default(),
            done: false,
        })
    }

    /// Replaces `out` with the next records (possibly none, while only samples were
    /// read); `false` once every input is drained. The vector given back is reused for
    /// a later batch.
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        if self.done {
            out.clear();
            return Ok(false);
        }
        match self.batches.recv() {
            Ok(Message::Batch(batch)) => {
                self.receive(batch, out);
                Ok(true)
            }
            Ok(Message::Done(done)) => {
                // Samples not taken yet come before the last ones.
                let mut done = *done;
                let mut samples = std::mem::take(&mut self.got.samples);
                samples.append(&mut done.samples);
                self.got = Done { samples, ..done };
                self.done = true;
                out.clear();
                Ok(false)
            }
            Ok(Message::Failed(err)) => Err(err),
            Err(_) => Err(thread_died()),
        }
    }

    fn receive(&mut self, batch: Batch, out: &mut Vec<Record>) {
        let used = std::mem::replace(out, batch.records);
        // Only vectors with room go back: batches of samples alone carry an empty one,
        // and many of those queued as spares would each grow to a full batch.
        if used.capacity() > 0 {
            let _ = self.spare.send(used);
        }
        if let Some(tables) = batch.tables {
            self.got.tables = tables;
        }
        if let Some(summaries) = batch.summaries {
            self.got.summaries = summaries;
        }
        if let Some(sample_tables) = batch.sample_tables {
            self.got.sample_tables = sample_tables;
        }
        self.got.samples.extend(batch.samples);
        // Replaced, not appended: a consumer that never takes them holds one batch's.
        self.got.logged = batch.logged;
        self.got.connections = batch.connections;
    }

    /// The merged dictionaries, as far as the records returned so far need them.
    pub fn tables(&self) -> &RunTables {
        &self.got.tables
    }

    /// What each input said about itself, in the order given: headers from the first
    /// batch on, complete (statistics, end, torn tail) once `next_batch` returned false.
    /// Mid-run, statistics are current only with live summaries (see
    /// [`RecordStream::open`]).
    pub fn summaries(&self) -> &[SourceSummary] {
        &self.got.summaries
    }

    /// Appends the resource sample batches received since the last call to `out`, and
    /// returns the merged sampler and series tables their ids index (the records'
    /// batches and these travel together).
    pub fn take_samples(&mut self, out: &mut Vec<SampleBatch>) -> &SampleTables {
        out.append(&mut self.got.samples);
        &self.got.sample_tables
    }

    /// Appends to `out` the logged originals of a replay received with the last batch
    /// (merged attack and target ids, as the records'); the next `next_batch` drops
    /// those not taken, so a consumer that wants them calls this after every batch,
    /// and once more after the last (`next_batch` returned false).
    pub fn take_logged(&mut self, out: &mut Vec<Logged>) {
        out.append(&mut self.got.logged);
    }

    /// Appends to `out` the connection figures (`ws`, `sse` steps) received with the
    /// last batch, with merged ids, on the terms of [`RecordStream::take_logged`].
    pub fn take_connections(&mut self, out: &mut Vec<Connection>) {
        out.append(&mut self.got.connections);
    }

    /// The inputs' traced requests worth looking at (`attack -trace`), with merged
    /// ids; known once `next_batch` returned false (they are in the end blocks).
    pub fn exemplars(&self) -> &[Exemplar] {
        &self.got.exemplars
    }

    /// The merged tables and the inputs' summaries; complete once the stream is drained.
    pub fn into_parts(self) -> (RunTables, Vec<SourceSummary>) {
        (self.got.tables, self.got.summaries)
    }
}

fn thread_died() -> RecordError {
    RecordError::ReaderThread("stopped unexpectedly".to_owned())
}

/// The merged inputs in the chosen order.
enum Reader {
    Input(Inputs),
    SendTime(Sorted),
}

impl Reader {
    fn new(inputs: Inputs, order: ReadOrder) -> Reader {
        match order {
            ReadOrder::Input => Reader::Input(inputs),
            ReadOrder::SendTime => Reader::SendTime(inputs.sorted()),
        }
    }

    fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        match self {
            Reader::Input(inputs) => inputs.next_batch(out),
            Reader::SendTime(sorted) => sorted.next_batch(out),
        }
    }

    fn inputs(&self) -> &Inputs {
        match self {
            Reader::Input(inputs) => inputs,
            Reader::SendTime(sorted) => sorted.inputs(),
        }
    }

    fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        match self {
            Reader::Input(inputs) => inputs.drain_samples(out),
            Reader::SendTime(sorted) => sorted.drain_samples(out),
        }
    }

    fn drain_logged(&mut self, out: &mut Vec<Logged>) {
        match self {
            Reader::Input(inputs) => inputs.drain_logged(out),
            Reader::SendTime(sorted) => sorted.drain_logged(out),
        }
    }

    fn drain_connections(&mut self, out: &mut Vec<Connection>) {
        match self {
            Reader::Input(inputs) => inputs.drain_connections(out),
            Reader::SendTime(sorted) => sorted.drain_connections(out),
        }
    }
}

/// What the reader thread last sent, to send tables and summaries only when they grew.
#[derive(Default)]
struct Sent {
    /// Attacks, targets, errors.
    table_sizes: (usize, usize, usize),
    /// Samplers, series.
    sample_table_sizes: (usize, usize),
    /// Generator samples over all inputs.
    generator_samples: Option<usize>,
    /// Whether any records went out: summaries mid-run are wanted until then (the
    /// consumer reads the headers with the first records), and throughout when live.
    records: bool,
}

impl Sent {
    fn batch(&mut self, inputs: &Inputs, live_summaries: bool, batch: &mut Batch) {
        let tables = inputs.tables();
        let sizes = (
            tables.attacks.len(),
            tables.targets.len(),
            tables.errors.len(),
        );
        if std::mem::replace(&mut self.table_sizes, sizes) != sizes {
            batch.tables = Some(tables.clone());
        }
        let sample_tables = inputs.sample_tables();
        let sizes = (sample_tables.samplers.len(), sample_tables.series.len());
        if std::mem::replace(&mut self.sample_table_sizes, sizes) != sizes {
            batch.sample_tables = Some(sample_tables.clone());
        }
        let count = Some(inputs.summaries().map(|s| s.stats.len()).sum());
        let new_samples = std::mem::replace(&mut self.generator_samples, count) != count;
        if new_samples && (live_summaries || !self.records) {
            batch.summaries = Some(inputs.summaries().cloned().collect());
        }
        self.records |= !batch.records.is_empty();
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
    let mut sent = Sent::default();
    let mut records = Vec::new();
    let mut samples = Vec::new();
    let mut logged = Vec::new();
    let mut connections = Vec::new();
    loop {
        if records.capacity() == 0 {
            records = spare.try_recv().unwrap_or_default();
        }
        let result = reader.next_batch(&mut records);
        // Drained after every batch, so an input's pending samples stay few.
        reader.drain_samples(&mut samples);
        reader.drain_logged(&mut logged);
        reader.drain_connections(&mut connections);
        let message = match result {
            // Samples alone: gather a few before waking the consumer.
            Ok(true) if records.is_empty() && samples.len() < SAMPLE_BATCHES_PER_MESSAGE => {
                continue;
            }
            Ok(true) => {
                let mut batch = Batch {
                    records: std::mem::take(&mut records),
                    tables: None,
                    summaries: None,
                    samples: std::mem::take(&mut samples),
                    sample_tables: None,
                    logged: std::mem::take(&mut logged),
                    connections: std::mem::take(&mut connections),
                };
                sent.batch(reader.inputs(), live_summaries, &mut batch);
                Message::Batch(batch)
            }
            Ok(false) => {
                let inputs = reader.inputs();
                Message::Done(Box::new(Done {
                    tables: inputs.tables().clone(),
                    summaries: inputs.summaries().cloned().collect(),
                    samples: std::mem::take(&mut samples),
                    sample_tables: inputs.sample_tables().clone(),
                    logged: std::mem::take(&mut logged),
                    connections: std::mem::take(&mut connections),
                    exemplars: inputs.exemplars(),
                }))
            }
            Err(err) => Message::Failed(err),
        };
        let last = !matches!(message, Message::Batch(_));
        if batches.send(message).is_err() || last {
            return;
        }
    }
}
