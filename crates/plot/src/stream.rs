//! [`SortedStream`]: the inputs merged in send-time order ([`record::Inputs::sorted`])
//! on a second thread, so that decoding and merging overlap the drawing work (on 10M
//! records each takes about as long as the other). Batches are recycled, so memory
//! stays at a few batches in flight.

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread;

use record::{Inputs, Record, RecordError, RunTables, SourceSummary};

use crate::PlotError;

/// Batches in flight between the reader and the consumer.
const BATCHES_IN_FLIGHT: usize = 4;

enum Message {
    /// Records, and the tables when they grew since the last batch.
    Batch(Vec<Record>, Option<RunTables>),
    Done(RunTables, Vec<SourceSummary>),
    Failed(RecordError),
}

/// See the module documentation.
pub struct SortedStream {
    batches: Receiver<Message>,
    spare: Sender<Vec<Record>>,
    tables: RunTables,
    summaries: Vec<SourceSummary>,
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
            .spawn(move || match Inputs::open(&paths) {
                Ok(inputs) => {
                    if opened_tx.send(None).is_ok() {
                        read(inputs, &batch_tx, &spare_rx);
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
            done: false,
        })
    }

    /// Replaces `out` with the next records; `false` once every input is drained.
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, PlotError> {
        if self.done {
            out.clear();
            return Ok(false);
        }
        match self.batches.recv() {
            Ok(Message::Batch(records, tables)) => {
                let used = std::mem::replace(out, records);
                let _ = self.spare.send(used);
                if let Some(tables) = tables {
                    self.tables = tables;
                }
                Ok(true)
            }
            Ok(Message::Done(tables, summaries)) => {
                (self.tables, self.summaries, self.done) = (tables, summaries, true);
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

    /// What each input said about itself; complete once the stream is drained.
    pub fn into_parts(self) -> (RunTables, Vec<SourceSummary>) {
        (self.tables, self.summaries)
    }
}

fn reader_died() -> PlotError {
    PlotError::Reader("stopped without a word".to_owned())
}

/// The reader thread: sorted batches out, spare vectors back in.
fn read(inputs: Inputs, out: &SyncSender<Message>, spare: &Receiver<Vec<Record>>) {
    let mut sorted = inputs.sorted();
    let mut sizes = (usize::MAX, 0, 0, 0);
    loop {
        let mut batch = spare.try_recv().unwrap_or_default();
        let message = match sorted.next_batch(&mut batch) {
            Ok(true) => {
                let tables = sorted.tables();
                let now = (
                    0,
                    tables.attacks.len(),
                    tables.targets.len(),
                    tables.errors.len(),
                );
                let grew = now != sizes;
                sizes = now;
                Message::Batch(batch, grew.then(|| tables.clone()))
            }
            Ok(false) => {
                let summaries = sorted.summaries().cloned().collect();
                let _ = out.send(Message::Done(sorted.tables().clone(), summaries));
                return;
            }
            Err(err) => Message::Failed(err),
        };
        let failed = matches!(message, Message::Failed(_));
        if out.send(message).is_err() || failed {
            return;
        }
    }
}
