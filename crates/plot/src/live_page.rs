//! [`LivePage`]: the run page while the run goes, for `loadlab attack -dashboard`.
//!
//! The record bytes the run writes pass through a [`LiveFeed`] on their way to the
//! output, which hands a copy of each block to a decoding thread. That thread reads
//! them exactly as `loadlab plot` reads the finished file (one binary input merged into
//! send-time order by its watermarks, [`record::Sorted`]) into a [`RunGather`], so at
//! the end the page is the one `plot` draws from the file; tables, generator
//! statistics, resource samples and the end block come along with the bytes. The
//! engine's collector pays one copy per block written, nothing per record.
//!
//! At most once a second the thread publishes a copy of the gathering whose size does
//! not grow with the run's length: the samplers' points and histograms are bounded,
//! and past [`LIVE_THRESHOLD`] intervals the copy's rows merge adjacent intervals and
//! its generator statistics are thinned; the page is drawn with at most that many
//! points per chart. So the process's memory stays flat over an hour's run, and the
//! final page, drawn from the gathering itself with `-threshold`, is `plot`'s. A
//! request renders the newest published snapshot once and caches the page, so many
//! open tabs cost one render per second; the page is shared with the answers, not
//! copied. Records still held back by the watermark (a request in flight holds back
//! the ones sent after it, up to the timeout) show once it moves on.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use record::{Inputs, RunTables, SampleTables, SourceSummary, open_reader};

use crate::config::PlotConfig;
use crate::gather::RunGather;
use crate::html;
use crate::live_script::{LiveState, add_script};
use crate::model::{TimeAxis, TimeZero};
use crate::run::RunPlot;
use crate::svg::escape;

/// A snapshot is published at most this often.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);
/// Points per chart while the run goes (the final page uses `-threshold`). A chart's
/// plot is about 1000 px wide, so a live page loses nothing the eye can see, and it
/// stops growing after about 17 minutes: the renders each second then reuse memory
/// of the same sizes, and the process stays flat however long the run.
const LIVE_THRESHOLD: usize = 1000;
/// Blocks in flight between the writer and the decoding thread. Blocks are written
/// about four times a second, so the writer waits only if decoding stalls for a minute.
const BLOCKS_IN_FLIGHT: usize = 256;

/// Why a page could not start, with the outputs given back.
pub type Refused<W> = (std::io::Error, Vec<W>);

/// The page of a run while it runs; see the module documentation.
pub struct LivePage {
    shared: Arc<Shared>,
    /// Taken by [`LivePage::finish`]; behind a lock so the page can be shared with the
    /// server's handler meanwhile.
    decoder: Mutex<Option<JoinHandle<()>>>,
}

/// Passes the run's bytes to its output and a copy to the [`LivePage`]; write
/// errors are the output's alone.
pub struct LiveFeed<W> {
    inner: W,
    blocks: Option<SyncSender<Vec<u8>>>,
}

struct Shared {
    config: PlotConfig,
    name: String,
    latest: Mutex<Latest>,
    cache: Mutex<Option<Rendered>>,
    /// Lines under the header ([`LivePage::set_notes`]).
    notes: Mutex<Vec<String>>,
}

struct Latest {
    version: u64,
    published_at: Instant,
    finished: bool,
    /// Published and not rendered yet.
    pending: Option<Box<Snapshot>>,
    /// Why the page stopped following the run, if it did.
    problem: Option<String>,
}

struct Snapshot {
    gather: RunGather,
    tables: RunTables,
    summaries: Vec<SourceSummary>,
    sample_tables: SampleTables,
}

struct Rendered {
    html: Arc<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LivePage {
    /// Starts following the bytes written through the returned feed, which writes
    /// them to `out`. `name` is the input's name on the page (the output file as
    /// `loadlab plot` would be given it). When its thread cannot start, `out` comes
    /// back with the error.
    pub fn start<W: Write>(
        out: W,
        name: &str,
        config: &PlotConfig,
    ) -> Result<(LivePage, LiveFeed<W>), (std::io::Error, W)> {
        LivePage::start_after(out, name, config, 0)
    }

    /// [`LivePage::start`], its versions counting on from `version` (the last of the
    /// page before it), so that a browser following one address moves on from one
    /// run's page to the next (each step of a plan).
    pub fn start_after<W: Write>(
        out: W,
        name: &str,
        config: &PlotConfig,
        version: u64,
    ) -> Result<(LivePage, LiveFeed<W>), (std::io::Error, W)> {
        let (blocks, received) = sync_channel(BLOCKS_IN_FLIGHT);
        match LivePage::spawn(vec![(received, name.to_owned())], name, config, version) {
            Ok(page) => Ok((
                page,
                LiveFeed {
                    inner: out,
                    blocks: Some(blocks),
                },
            )),
            Err(err) => Err((err, out)),
        }
    }

    /// The page of one run written as several record streams at once (the shards of
    /// a steered run, pulled live by `loadlab steer -dashboard`): one feed per named
    /// output, read together and merged in send-time order as `plot` merges the
    /// files. A feed dropped early (a shard lost) ends its input where it was cut.
    pub fn start_many<W: Write>(
        outs: Vec<(W, String)>,
        name: &str,
        config: &PlotConfig,
        version: u64,
    ) -> Result<(LivePage, Vec<LiveFeed<W>>), Refused<W>> {
        let mut inputs = Vec::with_capacity(outs.len());
        let mut feeds = Vec::with_capacity(outs.len());
        for (out, name) in outs {
            let (blocks, received) = sync_channel(BLOCKS_IN_FLIGHT);
            inputs.push((received, name));
            feeds.push(LiveFeed {
                inner: out,
                blocks: Some(blocks),
            });
        }
        match LivePage::spawn(inputs, name, config, version) {
            Ok(page) => Ok((page, feeds)),
            Err(err) => Err((err, feeds.into_iter().map(|feed| feed.inner).collect())),
        }
    }

    /// Starts the decoding thread over `inputs`.
    fn spawn(
        inputs: Vec<(Receiver<Vec<u8>>, String)>,
        name: &str,
        config: &PlotConfig,
        version: u64,
    ) -> std::io::Result<LivePage> {
        let shared = Arc::new(Shared {
            config: config.clone(),
            name: name.to_owned(),
            latest: Mutex::new(Latest {
                version,
                published_at: Instant::now(),
                finished: false,
                pending: None,
                problem: None,
            }),
            cache: Mutex::new(None),
            notes: Mutex::new(Vec::new()),
        });
        let decoder = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("loadlab-dashboard".to_owned())
                .spawn(move || follow(inputs, &shared))?
        };
        Ok(LivePage {
            shared,
            decoder: Mutex::new(Some(decoder)),
        })
    }

    /// Lines shown under the page's header from the next snapshot on (a steered
    /// run's shard health).
    pub fn set_notes(&self, notes: Vec<String>) {
        *lock(&self.shared.notes) = notes;
    }

    /// The page as of the newest snapshot, rendered once per snapshot.
    pub fn page(&self) -> Arc<String> {
        let mut cache = lock(&self.shared.cache);
        let pending = {
            let mut latest = lock(&self.shared.latest);
            let (version, finished) = (latest.version, latest.finished);
            let problem = latest.problem.clone();
            latest
                .pending
                .take()
                .map(|snapshot| (snapshot, version, finished, problem))
        };
        if let Some((snapshot, version, finished, problem)) = pending {
            let notes = lock(&self.shared.notes).clone();
            let state = LiveState {
                version,
                finished,
                notes,
            };
            let html = self.shared.render(*snapshot, &state, problem.as_deref());
            *cache = Some(Rendered {
                html: Arc::new(html),
            });
        }
        match &*cache {
            Some(rendered) => Arc::clone(&rendered.html),
            None => {
                let latest = lock(&self.shared.latest);
                let state = LiveState {
                    version: latest.version,
                    finished: latest.finished,
                    notes: Vec::new(),
                };
                let why = latest
                    .problem
                    .as_deref()
                    .unwrap_or("waiting for the first records");
                Arc::new(waiting_page(&self.shared.config, &state, why))
            }
        }
    }

    /// `/data`: the newest snapshot's version, whether the run is over, and how long
    /// ago the snapshot was published.
    pub fn status_json(&self) -> String {
        let latest = lock(&self.shared.latest);
        format!(
            "{{\"version\":{},\"finished\":{},\"age_ms\":{}}}",
            latest.version,
            latest.finished,
            latest.published_at.elapsed().as_millis()
        )
    }

    /// The newest snapshot's version.
    pub fn version(&self) -> u64 {
        lock(&self.shared.latest).version
    }

    /// Whether the run's bytes are all read (the final page is published).
    pub fn is_finished(&self) -> bool {
        lock(&self.shared.latest).finished
    }

    /// Waits until the final page is published: call after the feed is dropped.
    pub fn finish(&self) {
        let decoder = lock(&self.decoder).take();
        if let Some(decoder) = decoder {
            let _ = decoder.join();
        }
    }
}

impl Shared {
    fn publish(&self, snapshot: Snapshot, finished: bool, problem: Option<String>) {
        let mut latest = lock(&self.latest);
        latest.version += 1;
        latest.published_at = Instant::now();
        latest.finished = finished;
        latest.pending = Some(Box::new(snapshot));
        if problem.is_some() {
            latest.problem = problem;
        }
    }

    fn give_up(&self, why: String) {
        let mut latest = lock(&self.latest);
        latest.version += 1;
        latest.published_at = Instant::now();
        latest.finished = true;
        latest.problem = Some(why);
    }

    fn render(&self, snapshot: Snapshot, state: &LiveState, problem: Option<&str>) -> String {
        let config = PlotConfig {
            threshold: if state.finished {
                self.config.threshold
            } else {
                self.config.threshold.min(LIVE_THRESHOLD)
            },
            ..self.config.clone()
        };
        let plot = RunPlot::from_gather(
            snapshot.gather,
            &config,
            &self.name,
            snapshot.tables,
            snapshot.summaries,
            snapshot.sample_tables,
        );
        match plot {
            Ok(plot) => plot.live_html(state),
            Err(err) => waiting_page(&self.config, state, problem.unwrap_or(&err.to_string())),
        }
    }
}

/// A page without charts yet, that polls like the run page.
fn waiting_page(config: &PlotConfig, state: &LiveState, why: &str) -> String {
    let mut out = String::new();
    html::open_page_with(&mut out, config.page_title(), "", true);
    out.push_str(&format!(
        "<header>\n<h1>{}</h1>\n</header>\n<p>{}</p>\n",
        escape(config.page_title()),
        escape(why)
    ));
    let axis = TimeAxis {
        origin_unix_ns: 0,
        zero: TimeZero::FirstRequest,
        start_s: 0.0,
        end_s: 1.0,
    };
    html::close_page(&mut out, "loadlab attack -dashboard", &[], &axis);
    add_script(&mut out, state);
    out
}

/// The decoding thread: reads the run's bytes as `plot` reads its file, publishing a
/// snapshot at most once a second and the final page at the end.
fn follow(inputs: Vec<(Receiver<Vec<u8>>, String)>, shared: &Shared) {
    let mut sources = Vec::with_capacity(inputs.len());
    let mut problem = None;
    for (blocks, name) in inputs {
        let reader = BlockReader {
            blocks,
            block: Vec::new(),
            at: 0,
        };
        // An input that ended before its header (a shard lost before it started) has
        // nothing to show; the others still do.
        match open_reader(Box::new(reader), &name) {
            Ok(source) => sources.push(source),
            Err(err) if sources.is_empty() && problem.is_none() => {
                problem = Some(format!("no records to show from {name}: {err}"));
            }
            Err(_) => {}
        }
    }
    if sources.is_empty() {
        return shared.give_up(problem.unwrap_or_else(|| "no records to show".to_owned()));
    }
    let mut sorted = Inputs::from_sources(sources).sorted();
    let mut gather = RunGather::new(&shared.config);
    let (mut batch, mut samples, mut logged) = (Vec::new(), Vec::new(), Vec::new());
    let mut connections = Vec::new();
    let mut published = Instant::now();
    let snapshot = |sorted: &record::Sorted, gather: RunGather| Snapshot {
        gather,
        tables: sorted.tables().clone(),
        summaries: sorted.summaries().cloned().collect(),
        sample_tables: sorted.sample_tables().clone(),
    };
    let live_snapshot = |sorted: &record::Sorted, gather: &RunGather| Snapshot {
        gather: gather.live_copy(LIVE_THRESHOLD),
        tables: sorted.tables().clone(),
        summaries: sorted.summaries().map(live_summary).collect(),
        sample_tables: sorted.sample_tables().clone(),
    };
    loop {
        let more = sorted.next_batch(&mut batch);
        gather.add_records(&batch, sorted.tables());
        sorted.drain_logged(&mut logged);
        gather.add_logged(&logged, sorted.tables());
        logged.clear();
        sorted.drain_connections(&mut connections);
        gather.add_connections(&connections);
        connections.clear();
        sorted.drain_samples(&mut samples);
        gather.add_samples(sorted.sample_tables(), &samples);
        samples.clear();
        match more {
            Ok(true) if published.elapsed() >= PUBLISH_EVERY => {
                shared.publish(live_snapshot(&sorted, &gather), false, None);
                published = Instant::now();
            }
            Ok(true) => {}
            Ok(false) => return shared.publish(snapshot(&sorted, gather), true, None),
            Err(err) => {
                let why = format!("the page stopped following the run: {err}");
                return shared.publish(snapshot(&sorted, gather), true, Some(why));
            }
        }
    }
}

/// An input's summary for a live page: its generator statistics (one a second)
/// thinned to at most about [`LIVE_THRESHOLD`], the last one kept, so the copy made
/// each second stops growing with the run.
fn live_summary(summary: &SourceSummary) -> SourceSummary {
    let stats = &summary.stats;
    let step = stats.len().div_ceil(LIVE_THRESHOLD).next_power_of_two();
    let last = stats.len().saturating_sub(1);
    // A dropped sample's stream figures go into the next one kept, so its interval's
    // rates stay whole.
    let mut dropped: Option<record::StreamStats> = None;
    let mut kept = Vec::new();
    for (at, stat) in stats.iter().enumerate() {
        if at % step == 0 || at == last {
            let mut stat = stat.clone();
            if let (Some(streams), Some(earlier)) = (&mut stat.streams, dropped.take()) {
                streams.absorb_earlier(&earlier);
            }
            kept.push(stat);
        } else if let Some(streams) = &stat.streams {
            let pending = dropped.get_or_insert_with(record::StreamStats::default);
            pending.absorb_earlier(streams);
        }
    }
    SourceSummary {
        name: summary.name.clone(),
        format: summary.format,
        header: summary.header.clone(),
        stats: kept,
        end: summary.end.clone(),
        torn: summary.torn.clone(),
        records: summary.records,
        samples: summary.samples.clone(),
        logged: summary.logged,
    }
}

/// The written blocks as one byte stream; it ends when the feed is dropped.
struct BlockReader {
    blocks: Receiver<Vec<u8>>,
    block: Vec<u8>,
    at: usize,
}

impl Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.block.len() {
            match self.blocks.recv() {
                Ok(block) => (self.block, self.at) = (block, 0),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl<W: Write> LiveFeed<W> {
    /// The output, with the page's copy cut off: the page sees the end of the run.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for LiveFeed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        if let Some(blocks) = &self.blocks
            && blocks.send(buf[..written].to_vec()).is_err()
        {
            // The page stopped reading (it says why); the output goes on.
            self.blocks = None;
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use record::{AttackInfo, Compression, Record, RecordWriter, RunEnd, RunHeader, TargetInfo};

    const START_NS: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn header() -> RunHeader {
        RunHeader {
            trace: None,
            tool: "loadlab test".to_owned(),
            start_unix_ns: START_NS,
            attacks: vec![AttackInfo {
                name: "a".to_owned(),
                rate_per_sec: Some(200.0),
                ..AttackInfo::default()
            }],
            targets: vec![TargetInfo {
                step: None,
                checks: Vec::new(),
                method: "GET".to_owned(),
                url: "http://127.0.0.1/".to_owned(),
            }],
            seed: None,
            shard: None,
            precision_ns: None,
        }
    }

    /// One worker's requests, in the order it completes them: sent every `gap_ms`,
    /// each taking its latency.
    fn worker_records(worker: u64, latencies_ms: &[u64], gap_ms: u64) -> Vec<Record> {
        let mut records: Vec<Record> = latencies_ms
            .iter()
            .enumerate()
            .map(|(i, latency_ms)| Record {
                seq: worker * 1000 + i as u64,
                intended_unix_ns: START_NS + (i as u64 * gap_ms + worker) * MS,
                send_lag_ns: worker * 1000,
                latency_ns: latency_ms * MS + 1,
                status: if latency_ms % 7 == 0 { 503 } else { 200 },
                bytes_in: 100,
                bytes_out: 20,
                ..Record::default()
            })
            .collect();
        records.sort_by_key(|r| r.sent_unix_ns() + r.latency_ns);
        records
    }

    /// Writes the workers' records as the collector does: batches taken in
    /// `turns` order (a worker's batch is its next `batch` completions), each followed
    /// by a flush whose watermark is the earliest send time not yet written.
    fn write_run(out: impl Write, workers: &[Vec<Record>], turns: &[usize], batch: usize) {
        let mut writer =
            RecordWriter::new(out, &header(), Compression::Zstd { level: 1 }).expect("header");
        let mut taken = vec![0; workers.len()];
        let mut turn = turns.iter().cycle();
        while taken.iter().zip(workers).any(|(t, w)| *t < w.len()) {
            // The turn's worker, or the next one with records left.
            let chosen = *turn.next().expect("cycle");
            let worker = (0..workers.len())
                .map(|k| (chosen + k) % workers.len())
                .find(|&w| taken[w] < workers[w].len())
                .expect("a worker has records left");
            let end = (taken[worker] + batch).min(workers[worker].len());
            writer.extend(&workers[worker][taken[worker]..end]);
            taken[worker] = end;
            let watermark = workers
                .iter()
                .zip(&taken)
                .filter_map(|(w, t)| w[*t..].iter().map(Record::sent_unix_ns).min())
                .min();
            writer.flush_records(watermark).expect("flush");
        }
        writer
            .finish(&RunEnd {
                at_unix_ns: START_NS + 60_000 * MS,
                ..RunEnd::default()
            })
            .expect("end");
    }

    /// The page `plot` draws from the file, and the live page's final one.
    fn both_pages(workers: &[Vec<Record>], turns: &[usize], batch: usize) -> (String, String) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("run.llr").display().to_string();
        let config = PlotConfig {
            threshold: 50,
            ..PlotConfig::default()
        };
        let file = std::fs::File::create(&path).expect("create");
        let (page, feed) = LivePage::start(file, &path, &config)
            .map_err(|(err, _)| err)
            .expect("start");
        write_run(feed, workers, turns, batch);
        page.finish();
        assert!(page.is_finished());
        let live = page.page();
        let plotted = RunPlot::read(std::slice::from_ref(&path), &config)
            .expect("plot")
            .html();
        (live.as_str().to_owned(), plotted)
    }

    /// The live page without what only the live page has: its policy and script.
    fn without_live_parts(live: &str) -> String {
        let start = live.find("<script type=\"application/json\" id=\"live-state\">");
        let cut = start.map_or(live, |start| &live[..start]);
        format!("{cut}</body>\n</html>\n")
            .replace(crate::live_script::CONTENT_POLICY, html::CONTENT_POLICY)
    }

    #[test]
    fn the_final_page_is_the_plot_of_the_file() {
        let workers = [
            worker_records(0, &[3, 40, 5, 900, 2, 7, 1200, 4, 6, 8], 3),
            worker_records(1, &[30, 2, 2, 2, 14, 3000, 2, 9, 2, 2, 2, 2], 2),
        ];
        let (live, plotted) = both_pages(&workers, &[0, 1, 1, 0], 3);
        assert!(live.contains("connect-src 'self'"));
        assert!(live.contains("\"finished\":true"));
        assert!(!plotted.contains("connect-src"));
        assert_eq!(without_live_parts(&live), plotted);
    }

    #[test]
    fn several_streams_make_one_page_as_plot_makes_of_their_files() {
        let dir = tempfile::tempdir().expect("dir");
        let paths: Vec<String> = (0..2)
            .map(|i| {
                dir.path()
                    .join(format!("shard-{i}.llr"))
                    .display()
                    .to_string()
            })
            .collect();
        let config = PlotConfig {
            threshold: 50,
            ..PlotConfig::default()
        };
        let outs = (paths.iter())
            .map(|path| (std::fs::File::create(path).expect("create"), path.clone()))
            .collect();
        let (page, feeds) = LivePage::start_many(outs, "steered", &config, 0)
            .map_err(|(err, _)| err)
            .expect("start");
        page.set_notes(vec!["shards 2: 2 finished".to_owned()]);
        let mut feeds = feeds.into_iter();
        let runs = [
            [worker_records(0, &[3, 40, 5, 900, 2], 3)],
            [worker_records(1, &[30, 2, 2, 14, 3000, 2], 2)],
        ];
        for run in &runs {
            write_run(feeds.next().expect("a feed"), run, &[0, 0], 3);
        }
        page.finish();
        let live = page.page();
        let plotted = RunPlot::read(&paths, &config).expect("plot").html();
        assert!(live.contains("<section class=\"notes\">\n<p>shards 2: 2 finished</p>"));
        for path in &paths {
            assert!(live.contains(path.as_str()), "{path} not on the page");
        }
        let requests = |html: &str| {
            let at = html
                .find("<span class=\"label\">requests</span>")
                .expect("requests");
            html[at..]
                .split("<span class=\"value\">")
                .nth(1)
                .map(|v| v[..v.find('<').unwrap_or(0)].to_owned())
        };
        assert_eq!(requests(&live), Some("11".to_owned()));
        assert_eq!(requests(&live), requests(&plotted));
    }

    /// A ramp from 20/s up by 20/s each second for 20 s against a server that answers
    /// 200 a second and 503s the rest (the knee at 10 s), in send-time order.
    fn ramp() -> Vec<Record> {
        let mut records = Vec::new();
        for second in 0..20u64 {
            let offered = 20 + 20 * second;
            for n in 0..offered {
                records.push(Record {
                    seq: records.len() as u64,
                    intended_unix_ns: START_NS + second * 1000 * MS + n * 1000 * MS / offered,
                    send_lag_ns: 20_000,
                    latency_ns: if n < 200 { 2 * MS } else { MS / 4 },
                    status: if n < 200 { 200 } else { 503 },
                    ..Record::default()
                });
            }
        }
        records
    }

    #[test]
    fn the_live_page_shows_the_diagnosis_once_there_is_a_knee() {
        let config = PlotConfig::default();
        let header = RunHeader {
            attacks: vec![AttackInfo {
                model: record::LoadModel::Open,
                ..header().attacks[0].clone()
            }],
            ..header()
        };
        let tables = RunTables {
            attacks: header.attacks.clone(),
            ..RunTables::default()
        };
        let summary = SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header,
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        };
        let page = |gather: RunGather| {
            RunPlot::from_gather(
                gather,
                &config,
                "run.llr",
                tables.clone(),
                vec![summary.clone()],
                SampleTables::default(),
            )
            .expect("plot")
            .live_html(&LiveState {
                version: 1,
                finished: false,
                notes: Vec::new(),
            })
        };
        let records = ramp();
        let mut gather = RunGather::new(&config);
        let mut fed = 0;
        // (seconds of the ramp fed, whether the page has the panel and the knee marker)
        for (seconds, judged) in [(0, false), (5, false), (20, true)] {
            let end = START_NS + seconds * 1000 * MS;
            let more = records[fed..].partition_point(|r| r.intended_unix_ns < end);
            gather.add_records(&records[fed..fed + more], &tables);
            fed += more;
            if fed == 0 {
                continue;
            }
            let live = page(gather.live_copy(LIVE_THRESHOLD));
            let panel = live.contains("<section class=\"diagnosis nothing_watched\"");
            assert_eq!(panel, judged, "{seconds} s");
            assert_eq!(
                live.contains("<g class=\"marker knee\">"),
                judged,
                "{seconds} s"
            );
            // The copy, its evidence closed, says what the gathering itself says.
            let full = page(gather.clone());
            let headline = |html: &str| {
                html.lines()
                    .find(|l| l.starts_with("<p class=\"headline\">"))
                    .map(str::to_owned)
            };
            assert_eq!(headline(&live), headline(&full), "{seconds} s");
        }
        assert_eq!(fed, records.len());
    }

    /// The checks panel of a page, from its opening tag to its end.
    fn checks_panel(html: &str) -> Option<&str> {
        let start = html.find("<section class=\"checks")?;
        let end = start + html[start..].find("</section>")?;
        Some(&html[start..end])
    }

    #[test]
    fn the_live_page_counts_the_checks_so_far() {
        let config = PlotConfig::default();
        let mut tables = RunTables {
            attacks: header().attacks,
            targets: header().targets,
            ..RunTables::default()
        };
        tables.targets[0].step = Some("buy".to_owned());
        tables.targets[0].checks = vec!["status 200".to_owned(), "has id".to_owned()];
        let summary = SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: header(),
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        };
        let page = |gather: RunGather| {
            RunPlot::from_gather(
                gather,
                &config,
                "run.llr",
                tables.clone(),
                vec![summary.clone()],
                SampleTables::default(),
            )
            .expect("plot")
            .live_html(&LiveState {
                version: 1,
                finished: false,
                notes: Vec::new(),
            })
        };
        // 10 a second for 10 s; from 5 s every other answer has no id.
        let records: Vec<Record> = (0..100u64)
            .map(|n| Record {
                seq: n,
                intended_unix_ns: START_NS + n * 100 * MS,
                latency_ns: 2 * MS,
                status: 200,
                checks_failed: u32::from(n >= 50 && n % 2 == 0) << 1,
                ..Record::default()
            })
            .collect();
        let mut gather = RunGather::new(&config);
        // (records fed, the panel's line)
        let rows = [
            (
                30,
                "60 of 60 check runs passed: every check passed every time",
            ),
            (
                100,
                "175 of 200 check runs passed; worst: buy: has id, 75% passed (25 of 100 failed)",
            ),
        ];
        let mut fed = 0;
        for (upto, line) in rows {
            gather.add_records(&records[fed..upto], &tables);
            fed = upto;
            // A copy of a few merged rows, as an hour-long run's, says the same.
            let live = page(gather.live_copy(3));
            let panel = checks_panel(&live).expect("a checks panel");
            assert!(panel.contains(line), "{upto}: {panel}");
            assert_eq!(Some(panel), checks_panel(&page(gather.clone())), "{upto}");
        }
    }

    #[test]
    fn before_any_record_the_page_waits_and_polls() {
        let (page, feed) = LivePage::start(Vec::new(), "run.llr", &PlotConfig::default())
            .map_err(|(err, _)| err)
            .expect("start");
        let html = page.page();
        assert!(html.contains("waiting for the first records"), "{html}");
        assert!(html.contains("id=\"live-state\">{\"version\":0,\"finished\":false}"));
        assert!(
            page.status_json()
                .starts_with("{\"version\":0,\"finished\":false,")
        );
        drop(feed);
        page.finish();
        // Nothing was written: the page says so, and that the run is over.
        assert!(page.is_finished());
        let html = page.page();
        assert!(html.contains("no records to show"), "{html}");
        assert!(html.contains("\"finished\":true"), "{html}");
    }

    #[test]
    fn pages_are_rendered_once_per_snapshot() {
        let (page, feed) = LivePage::start(Vec::new(), "run.llr", &PlotConfig::default())
            .map_err(|(err, _)| err)
            .expect("start");
        write_run(feed, &[worker_records(0, &[1, 2, 3], 5)], &[0], 2);
        page.finish();
        let (first, second) = (page.page(), page.page());
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn live_summaries_thin_the_generator_statistics_keeping_the_last() {
        let summary = |count: u64| SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: header(),
            stats: (0..count)
                .map(|at| record::GeneratorStats {
                    at_unix_ns: at,
                    ..record::GeneratorStats::default()
                })
                .collect(),
            end: None,
            torn: None,
            records: 7,
            samples: record::SampleSummary::default(),
            logged: 0,
        };
        let times = |s: &SourceSummary| s.stats.iter().map(|s| s.at_unix_ns).collect::<Vec<_>>();
        // Rows: stats offered, how many a live copy keeps, and its last one.
        for (count, kept, last) in [
            (0, 0, None),
            (3, 3, Some(2)),
            (1000, 1000, Some(999)),
            (1001, 501, Some(1000)),
            (1002, 502, Some(1001)),
            (3601, 901, Some(3600)),
        ] {
            let thinned = live_summary(&summary(count));
            assert_eq!(thinned.stats.len(), kept, "{count}");
            assert_eq!(times(&thinned).last().copied(), last, "{count}");
            assert_eq!(thinned.records, 7);
        }
        assert_eq!(times(&live_summary(&summary(10))), times(&summary(10)));
    }

    #[test]
    fn thinned_samples_keep_every_stream_message_in_the_next_one_kept() {
        let mut offered = SourceSummary {
            name: "run.llr".to_owned(),
            format: record::InputFormat::Binary,
            header: header(),
            stats: Vec::new(),
            end: None,
            torn: None,
            records: 0,
            samples: record::SampleSummary::default(),
            logged: 0,
        };
        offered.stats = (0..2001u64)
            .map(|at| record::GeneratorStats {
                at_unix_ns: at,
                streams: Some(record::StreamStats {
                    open: at,
                    messages_in: 3,
                    ..record::StreamStats::default()
                }),
                ..record::GeneratorStats::default()
            })
            .collect();
        let thinned = live_summary(&offered);
        assert!(thinned.stats.len() < 1000);
        let streams: Vec<&record::StreamStats> = (thinned.stats.iter())
            .filter_map(|s| s.streams.as_ref())
            .collect();
        let messages: u64 = streams.iter().map(|s| s.messages_in).sum();
        assert_eq!(messages, 3 * 2001, "none lost");
        assert_eq!(
            streams.last().unwrap().open,
            2000,
            "the count open is the kept one's"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 24,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Whatever order the workers' batches come in, and however they are cut, the
        /// live page ends as the plot of the file.
        #[test]
        fn any_batch_order_ends_as_the_plot(
            latencies in proptest::collection::vec(
                proptest::collection::vec(1u64..2000, 1..60), 1..4),
            turns in proptest::collection::vec(0usize..4, 1..8),
            batch in 1usize..9,
            gap_ms in 1u64..40,
        ) {
            let workers: Vec<Vec<Record>> = latencies
                .iter()
                .enumerate()
                .map(|(w, l)| worker_records(w as u64, l, gap_ms))
                .collect();
            let (live, plotted) = both_pages(&workers, &turns, batch);
            prop_assert_eq!(without_live_parts(&live), plotted);
        }
    }
}
