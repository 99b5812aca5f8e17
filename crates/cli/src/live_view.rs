//! [`start`]: the live view `attack` and each step of `run` show on stderr while
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

/// What shows the view and reads its keys; finished once the run is over.
struct Display {
    view: View,
    keys: Option<Keys>,
}

impl Display {
    /// Stops the keys (giving the terminal back) and the view, before the summary;
    /// a run that `completed` leaves its final line.
    fn finish(self, completed: bool) {
        if let Some(keys) = self.keys {
            keys.finish();
        }
        self.view.finish(completed);
    }
}

/// The live view of one run (`None` with -quiet): the observer the engine feeds, and
/// what stops the display once the run is over. On a terminal, a redrawn view whose
/// keys pause it (`p`) or drain `stop` as Ctrl-C does (`q`); else a progress line
/// every 5 s starting with `line_prefix` (`loadlab attack: `).
pub fn start(
    config: &RunConfig,
    stop: &StopHandle,
    quiet: bool,
    line_prefix: &str,
) -> anyhow::Result<Option<lab::Watch>> {
    if quiet {
        return Ok(None);
    }
    let stats = LiveStats::new(
        config
            .attacks
            .iter()
            .map(|a| a.settings.plan.clone())
            .collect(),
    )
    .with_flows(config.attacks.iter().map(|a| a.flow.is_some()).collect());
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
    let display = Display { view, keys };
    Ok(Some(lab::Watch {
        observer: Box::new(stats),
        finish: Box::new(move |completed| display.finish(completed)),
    }))
}
