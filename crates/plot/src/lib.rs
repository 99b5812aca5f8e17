//! `loadlab plot`: a run at a glance. Reads record files (and vegeta or loadlab
//! JSON/CSV, any mix) on one time axis from the earliest request, and draws them as one
//! self-contained offline HTML page or as one SVG or PNG file per chart.
//!
//! - [`PlotConfig`] / [`Format`] / [`ChartFiles`]: vegeta's `-title` and `-threshold`,
//!   our `-every` and `-format`, and where chart files go.
//! - [`RunPlot::read`] streams the records once in send-time order (merged on a reader
//!   thread, [`record::RecordStream`]; gathered in `gather.rs`) into
//!   the report's one fold, [`report::Measure`] (the summary, diagnosis, resources and
//!   each attack's latency on the page are its [`report::Summary`]'s), per-interval
//!   rows (`bins.rs`: rates asked / sent / successful, status codes, latency and send
//!   lag percentiles) and per-series [`PointSampler`]s (the latency scatter), all in bounded memory.
//!   The gathering itself is [`RunGather`]: fed records in send-time order one batch at a
//!   time, cloned cheaply (bounded) to draw the page so far.
//! - [`LivePage`] (`live_page.rs`, with `live.js`): the page while a run goes, for
//!   `attack -dashboard`. A [`LiveFeed`] copies the record bytes being written to a
//!   thread that reads them as `plot` reads the file, so the final page is `plot`'s;
//!   the page polls for newer snapshots (at most one a second) and redraws in place.
//! - [`PointSampler`] and [`min_max_rows`] (`downsample.rs`) reduce large runs while
//!   keeping the extremes: the slowest request of every time column, the highest and
//!   lowest second of every stretch.
//! - Resource samples of the system under test (`loadlab monitor`, `attack -monitor`)
//!   stream by beside the records into a [`SampleGather`] (`sample_gather.rs`: per series a
//!   bounded [`Trace`] with its gaps), and `resources/` draws them on the same time
//!   axis under the request charts: CPU, memory, connections, TCP errors, network,
//!   database, and the rest by unit, each with at most [`MAX_SERIES_PER_CHART`] series.
//! - The run's diagnosis (what ran out first) is the summary's, judged as `loadlab
//!   report` judges it: a panel on top says its lines, and every time chart marks the
//!   knee and each finding ([`Marker`], `markers.rs`).
//! - [`Chart`] / [`Series`] (`model.rs`): every chart is named series over a shared
//!   [`TimeAxis`] (or the percentile axis); `charts.rs` builds a run's charts, `svg.rs`
//!   draws any chart, `png.rs` rasterises that SVG, `html.rs` makes the page with its
//!   own small script (`page.js`) for hover, zoom by drag and log/linear switches.
//! - [`ChartPage`] (`chart_page.rs`): the same self-contained page (style, script,
//!   content policy) for charts and HTML sections made elsewhere, such as a run
//!   folder's `index.html` (`lab`): charts over the offered rate ([`XAxis::Rate`],
//!   [`Chart::over_rate`]) with a dot per step ([`Style::LinePoints`]); text in its
//!   sections is escaped with [`escape_html`].
//!
//! Errors are [`PlotError`]; each names the input, flag or output at fault.

#![warn(missing_docs)]

mod asked;
mod axis;
mod bins;
mod chart_page;
mod charts;
mod config;
mod downsample;
mod flows;
mod format;
mod gather;
mod generator;
mod html;
mod json;
mod live_page;
mod live_script;
mod markers;
mod model;
mod place;
mod png;
mod replay_gather;
mod replay_page;
mod resources;
mod run;
mod sample_gather;
mod svg;
mod traces_page;

pub use axis::Scale;
pub use chart_page::ChartPage;
pub use config::{
    ChartFiles, DEFAULT_EVERY_NS, DEFAULT_THRESHOLD, DEFAULT_TITLE, Format, PlotConfig,
};
pub use downsample::{Kept, PointSampler, Sampled, min_max_rows};
pub use gather::RunGather;
pub use live_page::{LiveFeed, LivePage};
pub use model::{Band, Chart, Marker, MarkerKind, Series, Style, TimeAxis, TimeZero, Unit, XAxis};
pub use png::PngRenderer;
pub use resources::MAX_SERIES_PER_CHART;
pub use run::RunPlot;
pub use sample_gather::{SampleGather, Trace};
/// Text for HTML and SVG: `&`, `<`, `>` and both quotes escaped.
pub use svg::escape as escape_html;

/// Why a plot could not be made. Messages name the input, flag or output.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// An input could not be opened or read (the message names the file).
    #[error(transparent)]
    Record(#[from] record::RecordError),
    /// The inputs hold nothing to draw.
    #[error("{inputs}: no records or resource samples to plot{detail}")]
    NoRecords {
        /// The inputs' names.
        inputs: String,
        /// Why they are empty, when they say (a cut, the run's end).
        detail: String,
    },
    /// A flag's value that cannot be used.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag, e.g. `-every`.
        flag: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// Writing the page failed.
    #[error("writing the page")]
    Write(#[source] std::io::Error),
    /// Writing a chart file failed.
    #[error("writing {path}")]
    File {
        /// The chart file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A chart could not be rasterised.
    #[error("rendering chart {chart} as png: {reason}")]
    Png {
        /// The chart's id.
        chart: String,
        /// What went wrong.
        reason: String,
    },
}
