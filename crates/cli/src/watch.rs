//! What watches a run besides its record file, the same for `attack` and for each step
//! of `run`: the live view on stderr (`live_view.rs`), Prometheus (`prometheus.rs`)
//! and the dashboard (`dashboard.rs`). [`Watchers`] holds what lasts the whole command
//! (the servers, bound once, so a plan keeps one address for all its steps);
//! [`Watchers::watch`] starts what one run needs: its observers and its page.

use std::time::Duration;

use clap::ArgAction;
use engine::{RunConfig, RunObserver, StopHandle};

use crate::dashboard::{self, Dashboard, Output, RunPage};
use crate::live_view;
use crate::prometheus::{Prometheus, PrometheusArgs, PrometheusRun, PrometheusSetup};

/// The flags of what watches a run, shared by `attack` and `run`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// No live view on stderr (by default: a redrawn view on a terminal, where p
    /// pauses it and q stops the run as Ctrl-C does; else a progress line every 5 s)
    // `=` required (as Go's flags for booleans): `run -quiet plan.toml` is a plan.
    #[arg(help_heading = "Live view", long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    quiet: bool,
    #[command(flatten)]
    prometheus: PrometheusArgs,
    /// Serve the run page (the one `loadlab plot` draws) live at ADDR, updated every
    /// second (`run`: the step running, then the next): HOST:PORT, or :PORT / PORT for
    /// loopback; port 0 picks one [without a value: 127.0.0.1:8088]
    #[arg(help_heading = "Live view", long, value_name = "ADDR", num_args = 0..=1, default_missing_value = dashboard::DEFAULT_ADDRESS)]
    dashboard: Option<String>,
    /// After the last run, keep serving the final dashboard page this long (Ctrl-C
    /// ends it sooner); 0s stops with the run, as scripts want
    #[arg(
        help_heading = "Live view",
        long,
        default_value = "0s",
        value_name = "DURATION"
    )]
    dashboard_linger: String,
}

/// The flags, checked, and the servers they asked for.
pub struct Watchers {
    quiet: bool,
    /// What the live view's progress lines start with (`loadlab attack: `).
    line_prefix: &'static str,
    prometheus: Option<Prometheus>,
    dashboard: Option<Dashboard>,
    linger: Duration,
}

/// What watches one run; [`RunWatch::finish_view`] when the run is over, then
/// [`RunWatch::finish_page`] once its output is closed.
pub struct RunWatch {
    /// Fed by the engine; hand them to [`engine::run_with_observer`].
    pub observers: Vec<Box<dyn RunObserver>>,
    view: Option<Box<dyn FnOnce(bool)>>,
    prometheus: Option<PrometheusRun>,
    page: Option<RunPage>,
}

impl WatchArgs {
    /// The flags checked (before any target is read); nothing is started.
    pub fn check(&self) -> anyhow::Result<(PrometheusSetup, Duration)> {
        let prometheus = PrometheusSetup::check(&self.prometheus)?;
        let linger = units::parse_duration(&self.dashboard_linger)
            .map_err(|err| anyhow::anyhow!("-dashboard-linger: {err}"))?;
        Ok((prometheus, linger))
    }
}

impl Watchers {
    /// Binds the servers the flags ask for (a taken port is a warning).
    pub fn start(
        args: &WatchArgs,
        checked: (PrometheusSetup, Duration),
        line_prefix: &'static str,
    ) -> Watchers {
        let (prometheus, linger) = checked;
        Watchers {
            quiet: args.quiet,
            line_prefix,
            prometheus: prometheus.start(),
            dashboard: args.dashboard.as_deref().and_then(dashboard::start),
            linger,
        }
    }

    /// Starts watching one run writing to `out` (named `name` on the dashboard);
    /// `out` comes back wrapped when the dashboard reads it. A live view that cannot
    /// start is a warning: the run goes on.
    pub fn watch(
        &self,
        config: &RunConfig,
        stop: &StopHandle,
        out: Output,
        name: &str,
    ) -> (Output, RunWatch) {
        let (out, page) = match &self.dashboard {
            Some(dashboard) => dashboard.watch(out, name),
            None => (out, None),
        };
        let mut observers = Vec::new();
        let view = match live_view::start(config, stop, self.quiet, self.line_prefix) {
            Ok(view) => view.map(|watch| {
                observers.push(watch.observer);
                watch.finish
            }),
            Err(err) => {
                eprintln!("{}no live view: {err:#}", self.line_prefix);
                None
            }
        };
        let prometheus = (self.prometheus.as_ref()).map(|p| p.watch(config, &mut observers));
        let watch = RunWatch {
            observers,
            view,
            prometheus,
            page,
        };
        (out, watch)
    }

    /// After the last run: the dashboard lingers if asked, then every server stops.
    pub fn finish(self, stop: &StopHandle) {
        if let Some(dashboard) = self.dashboard {
            dashboard.finish(self.linger, stop);
        }
    }
}

impl RunWatch {
    /// The run is over: the live view leaves its final line if the run `completed`,
    /// and Prometheus pushes the last figures.
    pub fn finish_view(&mut self, completed: bool) {
        if let Some(view) = self.view.take() {
            view(completed);
        }
        if let Some(prometheus) = self.prometheus.take() {
            prometheus.finish();
        }
    }

    /// For a plan's step: its observers, and what the step calls once its output is
    /// closed.
    pub fn into_step_watch(self) -> lab::Watch {
        let RunWatch {
            observers,
            view,
            prometheus,
            page,
        } = self;
        let mut rest = RunWatch {
            observers: Vec::new(),
            view,
            prometheus,
            page,
        };
        lab::Watch {
            observer: Box::new(observers),
            finish: Box::new(move |completed| {
                rest.finish_view(completed);
                rest.finish_page();
            }),
        }
    }

    /// The run's output is closed: the page reads the end of the run.
    pub fn finish_page(mut self) {
        self.finish_view(false);
        if let Some(page) = self.page.take() {
            page.finish();
        }
    }
}
