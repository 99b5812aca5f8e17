//! [`LiveView`]: the live view `attack` and each step of `run` show on stderr while
//! they run (see the `live` crate): the observer the engine feeds, the thread that
//! shows it, and on a terminal its keys.

use std::io::IsTerminal;
use std::time::Duration;

use engine::{RunConfig, StopHandle};
use live::{Keys, LiveStats, View, ViewMode};

/// Redraws on a terminal this often: lively, and still cheap for the collector.
const TERMINAL_REDRAW: Duration = Duration::from_millis(500);
/// A plain progress line this often, so CI logs stay readable.
const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

/// The live view of one run: on a terminal a redrawn view whose keys pause it (`p`)
/// or stop the run as Ctrl-C does (`q`), else a progress line every 5 s.
pub struct LiveView {
    stats: LiveStats,
    display: Display,
}

/// What shows the view and reads its keys; finished once the run is over.
struct Display {
    view: View,
    keys: Option<Keys>,
}

impl Display {
    /// Stops the keys (giving the terminal back) and the view, before the summary.
    fn finish(self) {
        if let Some(keys) = self.keys {
            keys.finish();
        }
        self.view.finish();
    }
}

impl LiveView {
    /// `None` with -quiet. `stop` is what `q` drains; `line_prefix` starts each
    /// progress line (`loadlab attack: `).
    pub fn start(
        config: &RunConfig,
        stop: &StopHandle,
        quiet: bool,
        line_prefix: &str,
    ) -> anyhow::Result<Option<LiveView>> {
        if quiet {
            return Ok(None);
        }
        let stats = LiveStats::new(config.attacks.iter().map(|a| a.plan.clone()).collect());
        let on_terminal = std::io::stderr().is_terminal();
        let mode = if on_terminal {
            ViewMode::Terminal {
                every: TERMINAL_REDRAW,
                keys: std::io::stdin().is_terminal(),
            }
        } else {
            ViewMode::Lines {
                every: PROGRESS_LINE_EVERY,
                out: Box::new(std::io::stderr()),
                prefix: line_prefix.to_owned(),
            }
        };
        let view = View::start(stats.handle(), mode)?;
        let keys = on_terminal
            .then(|| {
                let stop = stop.clone();
                Keys::start(view.paused(), Box::new(move || stop.drain()))
            })
            .flatten();
        Ok(Some(LiveView {
            stats,
            display: Display { view, keys },
        }))
    }

    /// The observer to feed, and what stops the view and the keys (giving the
    /// terminal back) once the run is over; for `attack` and each step of `run`.
    pub fn into_watch(self) -> lab::Watch {
        let display = self.display;
        lab::Watch {
            observer: Box::new(self.stats),
            finish: Box::new(move || display.finish()),
        }
    }
}
