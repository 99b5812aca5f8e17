//! [`Monitor::start`]: one thread per sampler on a shared tick grid, a hub thread that
//! turns readings into frames, and a [`MonitorHandle`] to receive them and stop.

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use record::{SampleFrame, SamplerInfo};

use crate::MonitorError;
use crate::agent::AgentClient;
use crate::clock::ClockAnchor;
use crate::host::HostSampler;
use crate::hub::{Hub, Reading, defined_through};
use crate::log::LogSampler;
use crate::pg::PostgresSampler;
use crate::process::ProcessSampler;
use crate::prom::PromSampler;
use crate::sampler::{Sampler, Stop, ThreadContext, Tick};
use crate::spec::{MonitorConfig, NamedSampler, ProcessMatch, SamplerSpec};

/// Frames waiting for the consumer; beyond this the hub drops frames (counted) rather
/// than block samplers. At one frame per sampler per second that is hours of slack.
const FRAME_QUEUE: usize = 65_536;
/// How long `stop` waits for a sampler stuck in a slow call before leaving it behind.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// What a monitor delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MonitorStats {
    /// Frames handed to the receiver.
    pub frames: u64,
    /// Values in those frames.
    pub values: u64,
    /// Gap entries (each with its reason in the frame).
    pub gaps: u64,
    /// Frames dropped because the receiver fell more than `FRAME_QUEUE` frames behind.
    pub dropped_frames: u64,
    /// Sampler threads still inside a slow call when `stop` gave up waiting.
    pub abandoned_threads: u64,
}

/// What [`MonitorHandle::stop`] returns: the frames not yet received, and the counts.
#[derive(Debug)]
pub struct MonitorStopped {
    /// Frames taken but not yet handed to the receiver, oldest first.
    pub remaining: Vec<SampleFrame>,
    /// What the monitor delivered in all.
    pub stats: MonitorStats,
}

/// Starts monitors.
pub struct Monitor;

/// A running monitor. Receive frames from [`MonitorHandle::frames`] (each ready for
/// `RecordWriter::write_samples`, in order), then call [`MonitorHandle::stop`].
pub struct MonitorHandle {
    frames: Receiver<SampleFrame>,
    stop: Arc<Stop>,
    threads: Vec<JoinHandle<()>>,
    hub: Option<JoinHandle<()>>,
    stats: Arc<Mutex<MonitorStats>>,
}

impl Monitor {
    /// Starts sampling every `config.interval` on a grid anchored at `anchor` (pass the
    /// attack's time zero so samples and records share one clock; `ClockAnchor::now()`
    /// when standalone). The first reading is taken at once. Threads run at the lowest
    /// CPU priority so the monitor never competes with the run it watches.
    pub fn start(
        config: MonitorConfig,
        anchor: ClockAnchor,
    ) -> Result<MonitorHandle, MonitorError> {
        if config.samplers.is_empty() {
            return Err(MonitorError::NoSamplers);
        }
        for sampler in &config.samplers {
            if let SamplerSpec::Log(log) = &sampler.spec {
                crate::log::check_source(&log.source)?;
            }
        }
        let stop = Arc::new(Stop::default());
        let stats = Arc::new(Mutex::new(MonitorStats::default()));
        let (readings_tx, readings) = mpsc::channel::<Reading>();
        let (frames_tx, frames) = mpsc::sync_channel(FRAME_QUEUE);
        let interval = config.interval;
        let (jobs, spec_order) = jobs(config);
        let hub = Hub::with_samplers(&spec_order);
        let hub = spawn("loadlab-mon-hub".to_owned(), {
            let stats = Arc::clone(&stats);
            move || run_hub(hub, &readings, &frames_tx, &stats)
        })?;
        let mut handle = MonitorHandle {
            frames,
            stop: Arc::clone(&stop),
            threads: Vec::new(),
            hub: Some(hub),
            stats,
        };
        let context = ThreadContext {
            anchor,
            interval,
            stop,
            readings: readings_tx,
        };
        for job in jobs {
            let name = job.thread_name();
            let context = context.clone();
            let thread = spawn(name, move || job.run(&context))?;
            handle.threads.push(thread);
        }
        Ok(handle)
    }
}

impl MonitorHandle {
    /// Frames as samplers produce them: the first frames define samplers and series,
    /// later ones may add more. Never blocks the samplers.
    pub fn frames(&self) -> &Receiver<SampleFrame> {
        &self.frames
    }

    /// Stops every sampler (waiting briefly for one inside a slow call), and returns
    /// the frames not yet received and the counts.
    pub fn stop(mut self) -> MonitorStopped {
        self.stop.stop();
        let grace_end = Instant::now() + STOP_GRACE;
        let mut abandoned = 0;
        for thread in self.threads.drain(..) {
            while !thread.is_finished() && Instant::now() < grace_end {
                thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                abandoned += 1;
            }
        }
        // Abandoned threads still hold a sender; the hub drains what is queued.
        let mut remaining: Vec<SampleFrame> = Vec::new();
        if abandoned == 0 {
            if let Some(hub) = self.hub.take() {
                let _ = hub.join();
            }
        } else {
            thread::sleep(Duration::from_millis(20));
        }
        remaining.extend(self.frames.try_iter());
        let mut stats = *self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats.abandoned_threads = abandoned;
        MonitorStopped { remaining, stats }
    }
}

/// One thread's work.
enum Job {
    Ticked(Box<dyn Sampler>),
    Agent(AgentClient),
}

impl Job {
    fn thread_name(&self) -> String {
        match self {
            Job::Ticked(sampler) => sampler.thread_name(),
            Job::Agent(_) => "loadlab-mon-agent".to_owned(),
        }
    }

    fn run(self, context: &ThreadContext) {
        lower_priority();
        match self {
            Job::Ticked(sampler) => run_ticked(sampler, context),
            Job::Agent(client) => client.run(context),
        }
    }
}

/// Samplers by thread: process groups share one /proc scan, the rest get one each.
/// The sampler threads' jobs, and the samplers in the order of their specs (agents
/// aside: they announce the remote machine's samplers as those arrive), so the file's
/// table lists them in that order whichever thread reads first.
fn jobs(config: MonitorConfig) -> (Vec<Job>, Vec<SamplerInfo>) {
    let timeout = config.interval;
    let mut groups: Vec<(ProcessMatch, SamplerInfo)> = Vec::new();
    let mut jobs = Vec::new();
    let mut spec_order = Vec::new();
    for NamedSampler { name, spec } in config.samplers {
        let info = SamplerInfo {
            kind: spec.kind(),
            name,
        };
        if !matches!(spec, SamplerSpec::Agent(_)) {
            spec_order.push(info.clone());
        }
        match spec {
            SamplerSpec::Host => jobs.push(Job::Ticked(Box::new(HostSampler::new(info)))),
            SamplerSpec::Process(matcher) => groups.push((matcher, info)),
            SamplerSpec::Prom(prom) => {
                let timeout = prom.timeout.unwrap_or(timeout).min(timeout);
                jobs.push(Job::Ticked(Box::new(PromSampler::new(info, prom, timeout))));
            }
            SamplerSpec::Postgres(pg) => {
                let timeout = pg.timeout.unwrap_or(timeout).min(timeout);
                jobs.push(Job::Ticked(Box::new(PostgresSampler::new(
                    info, &pg.url, timeout,
                ))));
            }
            SamplerSpec::Agent(addr) => jobs.push(Job::Agent(AgentClient::new(info, addr))),
            SamplerSpec::Log(log) => jobs.push(Job::Ticked(Box::new(LogSampler::new(info, &log)))),
        }
    }
    if !groups.is_empty() {
        jobs.push(Job::Ticked(Box::new(ProcessSampler::new(groups))));
    }
    (jobs, spec_order)
}

fn run_ticked(mut sampler: Box<dyn Sampler>, context: &ThreadContext) {
    let ThreadContext {
        anchor, interval, ..
    } = *context;
    // The first reading at once: the tick just passed (threads start a moment after
    // the anchor), then on the grid.
    let mut index = anchor
        .next_tick_index(Instant::now(), interval)
        .saturating_sub(1);
    let mut out = Vec::new();
    loop {
        if context.stop.wait_until(anchor.tick(index, interval)) {
            return;
        }
        let now = Instant::now();
        let tick = Tick {
            now,
            at_unix_ns: anchor.unix_ns_at(now),
        };
        sampler.sample(&tick, &mut out);
        for reading in out.drain(..) {
            if context.readings.send(reading).is_err() {
                return;
            }
        }
        // A sampler that overran its interval skips the ticks it missed.
        index = anchor
            .next_tick_index(Instant::now(), interval)
            .max(index + 1);
    }
}

fn run_hub(
    mut hub: Hub,
    readings: &Receiver<Reading>,
    frames: &SyncSender<SampleFrame>,
    stats: &Mutex<MonitorStats>,
) {
    for reading in readings {
        let frame = hub.frame(reading);
        let (values, gaps) = (frame.batch.values.len(), frame.batch.gaps.len());
        let through = defined_through(&frame);
        let delivered = match frames.try_send(frame) {
            Ok(()) => true,
            // The new entries stay pending: the next frame announces them.
            Err(TrySendError::Full(_)) => false,
            Err(TrySendError::Disconnected(_)) => return,
        };
        let mut stats = stats.lock().unwrap_or_else(PoisonError::into_inner);
        if delivered {
            stats.frames += 1;
            stats.values += values as u64;
            stats.gaps += gaps as u64;
        } else {
            stats.dropped_frames += 1;
        }
        drop(stats);
        if delivered {
            hub.delivered_through(through);
        }
    }
}

fn spawn(
    name: String,
    work: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, MonitorError> {
    thread::Builder::new()
        .name(name.clone())
        .spawn(work)
        .map_err(|source| MonitorError::Thread { what: name, source })
}

/// Samplers yield to the load generator and the server on a busy machine.
fn lower_priority() {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
}
