//! [`View`]: the display thread. It reads the latest [`crate::Snapshot`] a few times
//! a second and redraws it on a terminal (indicatif), or writes one plain line every
//! few seconds elsewhere. It never touches the engine: it only takes the snapshot's
//! mutex for a copy.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{LiveError, LiveHandle, Snapshot};

/// How the view shows itself.
pub enum ViewMode {
    /// A redrawn multi-line view on stderr (a terminal), every `every`.
    Terminal {
        /// Time between redraws.
        every: Duration,
        /// The keys are read ([`crate::Keys`]): the view says which they are.
        keys: bool,
    },
    /// One plain progress line every `every`, written to `out` (CI logs).
    Lines {
        /// Time between lines.
        every: Duration,
        /// Where the lines go (stderr, or a buffer in tests).
        out: Box<dyn Write + Send>,
        /// What each line starts with (`loadlab attack: `).
        prefix: String,
    },
}

/// The running display thread; [`View::finish`] stops it.
pub struct View {
    /// Sent once: whether the run completed (then the view leaves its final line).
    stop: Sender<bool>,
    thread: JoinHandle<()>,
    paused: Arc<AtomicBool>,
}

impl View {
    /// Starts showing what `handle` publishes.
    pub fn start(handle: LiveHandle, mode: ViewMode) -> Result<View, LiveError> {
        let paused = Arc::new(AtomicBool::new(false));
        let view_paused = Arc::clone(&paused);
        let (stop, stopped) = channel::<bool>();
        let thread = std::thread::Builder::new()
            .name("loadlab-live-view".to_owned())
            .spawn(move || {
                let every = match &mode {
                    ViewMode::Terminal { every, .. } | ViewMode::Lines { every, .. } => *every,
                };
                let mut display = Display::new(mode);
                let completed = loop {
                    match stopped.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(completed) => break completed,
                        Err(RecvTimeoutError::Disconnected) => break false,
                    }
                    if view_paused.load(Ordering::Relaxed) {
                        display.pause();
                    } else {
                        display.show(&handle.snapshot());
                    }
                };
                display.clear();
                if completed {
                    display.final_line(&handle.snapshot());
                }
            })?;
        Ok(View {
            stop,
            thread,
            paused,
        })
    }

    /// The flag that pauses the redraw ([`crate::Keys`] flips it); the run goes on.
    pub fn paused(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.paused)
    }

    /// Stops the view and clears the terminal view; a run that `completed` leaves one
    /// line with its figures ([`Snapshot::final_line`]), one that failed (its targets,
    /// its output) leaves nothing, so that its error is the last word.
    pub fn finish(self, completed: bool) {
        let _ = self.stop.send(completed);
        let _ = self.thread.join();
    }
}

enum Display {
    Terminal(TerminalView),
    Lines(Box<dyn Write + Send>, String),
}

impl Display {
    fn new(mode: ViewMode) -> Display {
        match mode {
            ViewMode::Terminal { keys, .. } => Display::Terminal(TerminalView::new(keys)),
            ViewMode::Lines { out, prefix, .. } => Display::Lines(out, prefix),
        }
    }

    fn show(&mut self, snapshot: &Snapshot) {
        match self {
            Display::Terminal(view) => view.show(snapshot),
            Display::Lines(out, prefix) => {
                // A closed stderr must not stop the run: the line is dropped.
                let _ = writeln!(out, "{prefix}{}", snapshot.progress_line());
            }
        }
    }

    /// Paused: the terminal view says so and stops redrawing; lines go on (no
    /// keys reach a view that is not on a terminal).
    fn pause(&mut self) {
        if let Display::Terminal(view) = self {
            view.pause();
        }
    }

    fn clear(&mut self) {
        if let Display::Terminal(view) = self {
            view.clear();
        }
    }

    /// The whole run in one line, where the view was.
    fn final_line(&mut self, snapshot: &Snapshot) {
        if !snapshot.finished {
            return;
        }
        match self {
            Display::Terminal(_) => eprintln!("loadlab: {}", snapshot.final_line()),
            Display::Lines(out, prefix) => {
                let _ = writeln!(out, "{prefix}{}", snapshot.final_line());
            }
        }
    }
}

/// A progress bar over the planned time (a spinner when open-ended) and one redrawn
/// line per [`Snapshot::view_lines`] line, cut to the terminal's width.
struct TerminalView {
    keys: bool,
    multi: MultiProgress,
    bar: Option<ProgressBar>,
    lines: Vec<ProgressBar>,
}

impl TerminalView {
    fn new(keys: bool) -> TerminalView {
        TerminalView {
            keys,
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bar: None,
            lines: Vec::new(),
        }
    }

    fn show(&mut self, snapshot: &Snapshot) {
        let bar = self
            .bar
            .get_or_insert_with(|| self.multi.add(new_bar(snapshot.total_ns)));
        bar.set_position(snapshot.elapsed_ns / 1_000_000);
        if self.keys {
            bar.set_message(format!("{}   p: pause  q: stop", snapshot.bar_text()));
        } else {
            bar.set_message(snapshot.bar_text());
        }
        let lines = snapshot.view_lines();
        while self.lines.len() < lines.len() {
            let line = ProgressBar::new(1).with_style(line_style());
            self.lines.push(self.multi.add(line));
        }
        for (bar, text) in self.lines.iter().zip(lines) {
            bar.set_message(text);
        }
    }

    fn pause(&mut self) {
        if let Some(bar) = &self.bar {
            bar.set_message("paused; the run goes on (p: resume  q: stop)");
        }
    }

    /// Erases the view in one go; the bars then finish out of sight (each would
    /// otherwise redraw what is left of the block).
    fn clear(&mut self) {
        let _ = self.multi.clear();
        self.multi.set_draw_target(ProgressDrawTarget::hidden());
        for line in self.lines.iter().chain(&self.bar) {
            line.finish_and_clear();
        }
    }
}

fn new_bar(total_ns: Option<u64>) -> ProgressBar {
    match total_ns {
        Some(total_ns) => ProgressBar::new(total_ns / 1_000_000).with_style(
            ProgressStyle::with_template("{bar:30.cyan/blue} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    }
}

fn line_style() -> ProgressStyle {
    ProgressStyle::with_template("{wide_msg}").unwrap_or_else(|_| ProgressStyle::default_bar())
}
