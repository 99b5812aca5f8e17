//! [`Inputs`]: many record sources read as one, on one set of dictionaries;
//! [`Sorted`]: the same records in send-time order, in bounded memory.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::RecordError;
use crate::connections::Connection;
use crate::exemplar::Exemplar;
use crate::input::open_input;
use crate::logged::Logged;
use crate::meta::{ErrorEntry, RunTables, TargetInfo};
use crate::record::Record;
use crate::resource_samples::{SampleBatch, SampleTables, SamplerInfo, SeriesInfo};
use crate::source::{InputFormat, RecordSource, SourceSummary};

/// Several inputs merged onto one set of tables. Attacks with the same name, targets
/// with the same method and URL, and errors with the same kind and text share an id.
pub struct Inputs {
    sources: Vec<Box<dyn RecordSource>>,
    remaps: Vec<Remap>,
    tables: RunTables,
    attack_ids: HashMap<String, u16>,
    target_ids: HashMap<TargetInfo, u32>,
    error_ids: HashMap<ErrorEntry, u32>,
    current: usize,
    /// Resource samples: samplers with the same kind and name, and series with the same
    /// sampler, name and labels, share an id.
    sample_tables: SampleTables,
    sampler_ids: HashMap<SamplerInfo, u32>,
    series_ids: HashMap<SeriesInfo, u32>,
    sample_scratch: Vec<SampleBatch>,
    /// Logged originals read by the last `next_batch`, with merged ids.
    logged: Vec<Logged>,
    /// Connection figures read by the last `next_batch`, with merged ids.
    connections: Vec<Connection>,
}

/// One source's ids -> merged ids; grows as the source's dictionaries grow.
#[derive(Default)]
struct Remap {
    attacks: Vec<u16>,
    targets: Vec<u32>,
    /// Index 0 is "no error" and maps to 0.
    errors: Vec<u32>,
    samplers: Vec<u32>,
    series: Vec<u32>,
}

impl Inputs {
    /// Opens each path (`-` is stdin); no paths means stdin. Refuses sharded files
    /// that are not shards of one run ([`crate::check_shards`]).
    pub fn open(paths: &[String]) -> Result<Inputs, RecordError> {
        let stdin = ["-".to_owned()];
        let paths = if paths.is_empty() { &stdin[..] } else { paths };
        let sources = paths
            .iter()
            .map(|path| open_input(path))
            .collect::<Result<Vec<_>, _>>()?;
        crate::shards::check_shards(sources.iter().map(|source| source.summary()))?;
        Ok(Inputs::from_sources(sources))
    }

    /// Merges already opened sources, in the order given.
    pub fn from_sources(sources: Vec<Box<dyn RecordSource>>) -> Inputs {
        let remaps = sources
            .iter()
            .map(|_| Remap {
                errors: vec![0],
                ..Remap::default()
            })
            .collect();
        let mut inputs = Inputs {
            sources,
            remaps,
            tables: RunTables::default(),
            attack_ids: HashMap::new(),
            target_ids: HashMap::new(),
            error_ids: HashMap::new(),
            current: 0,
            sample_tables: SampleTables::default(),
            sampler_ids: HashMap::new(),
            series_ids: HashMap::new(),
            sample_scratch: Vec::new(),
            logged: Vec::new(),
            connections: Vec::new(),
        };
        for index in 0..inputs.sources.len() {
            inputs.sync_tables(index);
            inputs.sync_samples(index);
        }
        inputs
    }

    /// The merged dictionaries as read so far.
    pub fn tables(&self) -> &RunTables {
        &self.tables
    }

    /// What each input said about itself, in the order given.
    pub fn summaries(&self) -> impl Iterator<Item = &SourceSummary> {
        self.sources.iter().map(|source| source.summary())
    }

    /// The merged sampler and series tables as read so far.
    pub fn sample_tables(&self) -> &SampleTables {
        &self.sample_tables
    }

    /// Appends every input's sample batches read since the last call, with merged ids.
    /// Call it after each `next_batch` to keep memory bounded.
    pub fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        let mut scratch = std::mem::take(&mut self.sample_scratch);
        for index in 0..self.sources.len() {
            self.sources[index].drain_samples(&mut scratch);
            self.sync_samples(index);
            let remap = &self.remaps[index];
            for mut batch in scratch.drain(..) {
                for value in &mut batch.values {
                    value.series = remap.series[value.series as usize];
                }
                for gap in &mut batch.gaps {
                    gap.sampler = remap.samplers[gap.sampler as usize];
                    gap.series = gap.series.map(|s| remap.series[s as usize]);
                }
                out.push(batch);
            }
        }
        self.sample_scratch = scratch;
    }

    /// Every input's exemplars (`attack -trace`) read so far (they are in the end
    /// blocks: complete once drained), with merged attack, target and error ids.
    pub fn exemplars(&self) -> Vec<Exemplar> {
        let mut out = Vec::new();
        for (source, remap) in self.sources.iter().zip(&self.remaps) {
            let Some(end) = &source.summary().end else {
                continue;
            };
            out.extend(end.exemplars.iter().filter_map(|exemplar| {
                Some(Exemplar {
                    attack: *remap.attacks.get(usize::from(exemplar.attack))?,
                    target: *remap.targets.get(exemplar.target as usize)?,
                    error: *remap.errors.get(exemplar.error as usize)?,
                    ..exemplar.clone()
                })
            }));
        }
        out
    }

    /// Appends the logged originals of a replay read by the last `next_batch`, with
    /// merged attack and target ids. As with [`RecordSource::drain_logged`], the next
    /// `next_batch` drops those not drained: call it after each one.
    pub fn drain_logged(&mut self, out: &mut Vec<Logged>) {
        out.append(&mut self.logged);
    }

    /// Appends the connection figures read by the last `next_batch`, with merged
    /// attack and target ids, on the terms of [`Inputs::drain_logged`].
    pub fn drain_connections(&mut self, out: &mut Vec<Connection>) {
        out.append(&mut self.connections);
    }

    fn sync_samples(&mut self, index: usize) {
        let source = &self.sources[index].summary().samples.tables;
        let remap = &mut self.remaps[index];
        for sampler in &source.samplers[remap.samplers.len()..] {
            let id = *self.sampler_ids.entry(sampler.clone()).or_insert_with(|| {
                self.sample_tables.samplers.push(sampler.clone());
                (self.sample_tables.samplers.len() - 1) as u32
            });
            remap.samplers.push(id);
        }
        for series in &source.series[remap.series.len()..] {
            let merged = SeriesInfo {
                sampler: remap.samplers[series.sampler as usize],
                ..series.clone()
            };
            let id = *self.series_ids.entry(merged.clone()).or_insert_with(|| {
                self.sample_tables.series.push(merged);
                (self.sample_tables.series.len() - 1) as u32
            });
            remap.series.push(id);
        }
    }

    /// The next records in input order (one input after another), with merged ids.
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        self.logged.clear();
        self.connections.clear();
        while self.current < self.sources.len() {
            if self.pull(self.current, out)? {
                return Ok(true);
            }
            self.current += 1;
        }
        out.clear();
        Ok(false)
    }

    /// Send-time order across all inputs.
    pub fn sorted(self) -> Sorted {
        let count = self.sources.len();
        Sorted {
            inputs: self,
            heap: BinaryHeap::new(),
            exhausted: vec![false; count],
            arrival: 0,
            scratch: Vec::new(),
        }
    }

    /// Reads one batch from source `index` and rewrites its ids; false once exhausted.
    fn pull(&mut self, index: usize, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        let more = self.sources[index].next_batch(out)?;
        self.sync_tables(index);
        let remap = &self.remaps[index];
        for record in out.iter_mut() {
            record.attack = remap.attacks[usize::from(record.attack)];
            record.target = remap.targets[record.target as usize];
            record.error = remap.errors[record.error as usize];
        }
        // The source drops what it read at its next call: take it now.
        let from = self.logged.len();
        self.sources[index].drain_logged(&mut self.logged);
        for logged in &mut self.logged[from..] {
            logged.attack = remap.attacks[usize::from(logged.attack)];
            logged.target = remap.targets[logged.target as usize];
        }
        let from = self.connections.len();
        self.sources[index].drain_connections(&mut self.connections);
        for connection in &mut self.connections[from..] {
            connection.attack = remap.attacks[usize::from(connection.attack)];
            connection.target = remap.targets[connection.target as usize];
        }
        Ok(more)
    }

    fn sync_tables(&mut self, index: usize) {
        let source = self.sources[index].tables();
        let remap = &mut self.remaps[index];
        for attack in &source.attacks[remap.attacks.len()..] {
            let id = *self
                .attack_ids
                .entry(attack.name.clone())
                .or_insert_with(|| {
                    self.tables.attacks.push(attack.clone());
                    (self.tables.attacks.len() - 1) as u16
                });
            remap.attacks.push(id);
        }
        for target in &source.targets[remap.targets.len()..] {
            let id = *self.target_ids.entry(target.clone()).or_insert_with(|| {
                self.tables.targets.push(target.clone());
                (self.tables.targets.len() - 1) as u32
            });
            remap.targets.push(id);
        }
        for error in &source.errors[remap.errors.len() - 1..] {
            let id = *self.error_ids.entry(error.clone()).or_insert_with(|| {
                self.tables.errors.push(error.clone());
                self.tables.errors.len() as u32
            });
            remap.errors.push(id);
        }
        // A source with no attacks yet (an empty import) still needs attack 0 and
        // target 0 to resolve; records can only use ids their source declared. A
        // record file without attacks holds samples only (`loadlab monitor`): it has
        // no records, and a placeholder would sit before the runs' real attacks.
        let samples_only = self.sources[index].summary().format == InputFormat::Binary;
        if remap.attacks.is_empty() && self.tables.attacks.is_empty() && !samples_only {
            self.tables.attacks.push(crate::meta::AttackInfo {
                model: crate::meta::LoadModel::Unknown,
                ..crate::meta::AttackInfo::default()
            });
            self.attack_ids.insert(String::new(), 0);
        }
    }
}

/// Records from [`Inputs`] in send-time order. Holds back only the records an input has
/// not yet vouched for with its watermark, so memory stays bounded for record files;
/// JSON and CSV imports carry no watermark and are sorted whole.
pub struct Sorted {
    inputs: Inputs,
    heap: BinaryHeap<Reverse<Pending>>,
    exhausted: Vec<bool>,
    arrival: u64,
    scratch: Vec<Record>,
}

struct Pending {
    sent_unix_ns: u64,
    arrival: u64,
    record: Record,
}

// Ordered by send time, then arrival, so equal times keep their input order.
impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.sent_unix_ns, self.arrival) == (other.sent_unix_ns, other.arrival)
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.sent_unix_ns, self.arrival).cmp(&(other.sent_unix_ns, other.arrival))
    }
}

const SORTED_BATCH: usize = 4096;

impl Sorted {
    /// The merged inputs behind the order: their tables, summaries and sample tables.
    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// See [`Inputs::tables`].
    pub fn tables(&self) -> &RunTables {
        self.inputs.tables()
    }

    /// See [`Inputs::summaries`].
    pub fn summaries(&self) -> impl Iterator<Item = &SourceSummary> {
        self.inputs.summaries()
    }

    /// See [`Inputs::sample_tables`].
    pub fn sample_tables(&self) -> &SampleTables {
        self.inputs.sample_tables()
    }

    /// See [`Inputs::drain_logged`]; they come in the order they were read, not sorted
    /// by time.
    pub fn drain_logged(&mut self, out: &mut Vec<Logged>) {
        self.inputs.drain_logged(out);
    }

    /// See [`Inputs::drain_connections`]; in the order they were read.
    pub fn drain_connections(&mut self, out: &mut Vec<Connection>) {
        self.inputs.drain_connections(out);
    }

    /// See [`Inputs::drain_samples`]; batches come in the order they were read, not
    /// sorted by time (each input's own batches are in time order).
    pub fn drain_samples(&mut self, out: &mut Vec<SampleBatch>) {
        self.inputs.drain_samples(out);
    }

    /// The next records in send-time order; false once every input is drained. Like a
    /// single input, it returns with no records after reading samples alone, so the
    /// consumer drains them as they come (a monitor file is not read whole first).
    pub fn next_batch(&mut self, out: &mut Vec<Record>) -> Result<bool, RecordError> {
        out.clear();
        self.inputs.logged.clear();
        self.inputs.connections.clear();
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.fill(out, &mut scratch);
        self.scratch = scratch;
        result
    }

    fn fill(
        &mut self,
        out: &mut Vec<Record>,
        scratch: &mut Vec<Record>,
    ) -> Result<bool, RecordError> {
        loop {
            let bound = self.release_bound();
            while out.len() < SORTED_BATCH {
                match self.heap.peek() {
                    Some(Reverse(pending)) if pending.sent_unix_ns < bound => {}
                    _ => break,
                }
                if let Some(Reverse(pending)) = self.heap.pop() {
                    out.push(pending.record);
                }
            }
            if !out.is_empty() {
                return Ok(true);
            }
            let Some(laggard) = self.laggard() else {
                return Ok(false);
            };
            let more = self.inputs.pull(laggard, scratch)?;
            self.exhausted[laggard] = !more;
            if more && scratch.is_empty() {
                return Ok(true);
            }
            for record in scratch.drain(..) {
                self.arrival += 1;
                self.heap.push(Reverse(Pending {
                    sent_unix_ns: record.sent_unix_ns(),
                    arrival: self.arrival,
                    record,
                }));
            }
        }
    }

    /// Records sent before this are final: no input can still produce an earlier one.
    fn release_bound(&self) -> u64 {
        (0..self.exhausted.len())
            .filter(|&i| !self.exhausted[i])
            .map(|i| self.inputs.sources[i].watermark().unwrap_or(0))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The unfinished input with the lowest watermark: the one holding the others back.
    fn laggard(&self) -> Option<usize> {
        (0..self.exhausted.len())
            .filter(|&i| !self.exhausted[i])
            .min_by_key(|&i| self.inputs.sources[i].watermark().unwrap_or(0))
    }
}
