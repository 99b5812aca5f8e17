//! The chart model: what a chart shows, apart from how it is drawn. Every chart is a
//! [`Chart`] of named [`Series`]; time charts share one x axis (seconds from the first
//! request, [`TimeAxis`]), so a new time series (host CPU, database transactions/s)
//! is one more `Chart::time_series(...)` with no change to the renderers. [`Band`]s
//! shade stretches of time (a sampler's gaps) behind a chart's series.

use crate::axis::{Scale, Steps};
use crate::format;

/// What the y values are, for axis labels and hover text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds, printed as durations.
    Duration,
    /// Events per second.
    PerSecond,
    /// 0..100, and beyond on several cores (a process's CPU).
    Percent,
    /// A share of a whole, 0..100: never more (a step's success).
    Share,
    /// A plain count.
    Count,
    /// Bytes, printed in binary units (KiB, MiB, GiB) on binary steps.
    Bytes,
    /// Bytes per second, as [`Unit::Bytes`] with `/s`.
    BytesPerSecond,
    /// A plain number that may have a fraction (a ratio, a load average, an unknown unit).
    Number,
}

impl Unit {
    /// The unit's name in the page's data.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Duration => "duration",
            Unit::PerSecond => "per_second",
            Unit::Percent => "percent",
            Unit::Share => "share",
            Unit::Count => "count",
            Unit::Bytes => "bytes",
            Unit::BytesPerSecond => "bytes_per_second",
            Unit::Number => "number",
        }
    }

    /// `value` in this unit, short enough for a tick label.
    pub fn label(self, value: f64) -> String {
        match self {
            Unit::Duration => format::duration_ns(value),
            Unit::PerSecond | Unit::Count | Unit::Number => format::count(value),
            Unit::Percent | Unit::Share => format!("{}%", format::significant(value, 3)),
            Unit::Bytes => format::bytes(value),
            // A bare 0 at the foot of the axis, as on the others.
            Unit::BytesPerSecond if value == 0.0 => "0".to_owned(),
            Unit::BytesPerSecond => format!("{}/s", format::bytes(value)),
        }
    }

    /// The most a value can be, when the unit has a most: a share's 100%.
    pub fn ceiling(self) -> Option<f64> {
        match self {
            Unit::Share => Some(100.0),
            _ => None,
        }
    }

    /// The steps of the unit's value axis: memory reads best at 256 MiB, 512 MiB, 1 GiB.
    pub fn steps(self) -> Steps {
        match self {
            Unit::Bytes | Unit::BytesPerSecond => Steps::Binary,
            _ => Steps::Decimal,
        }
    }
}

/// Shades a weighted point series is drawn in (see [`Series::shade`]).
pub const SHADES: usize = 4;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line.
    Line,
    /// A dashed line: a secondary series or a limit.
    Dashed,
    /// One dot per value (the latency scatter).
    Points,
    /// Areas stacked on the series before it (status codes).
    Stacked,
    /// A line through a dot per value: few values that each stand for a measurement
    /// (a run folder's steps), so every one shows.
    LinePoints,
}

impl Style {
    /// The style's name in the page's data.
    pub fn name(self) -> &'static str {
        match self {
            Style::Line => "line",
            Style::Dashed => "dashed",
            Style::Points => "points",
            Style::Stacked => "stacked",
            Style::LinePoints => "line_points",
        }
    }
}

/// One named series. `y` is NaN where there is no value (a gap in a line).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub name: String,
    /// Its colour, a CSS hex colour.
    pub color: &'static str,
    /// How it is drawn.
    pub style: Style,
    /// Seconds from the first request on time charts; nines on the percentile curve;
    /// requests per second on rate charts.
    pub x: Vec<f64>,
    /// Values in the chart's unit, one per `x`.
    pub y: Vec<f64>,
    /// Per point, an index into [`Chart::labels`] naming it on hover; empty if none.
    pub labels: Vec<u32>,
    /// How many values the series had before downsampling, when more than it shows.
    pub total: Option<u64>,
    /// Per point of a downsampled point series, how many values it stands for; empty
    /// when every point is one value.
    pub weights: Vec<u64>,
    /// Drawn bolder, on top: failed requests.
    pub emphasis: bool,
    /// Per point, where it links to (a traced request's trace); empty if none.
    pub links: Vec<String>,
}

impl Series {
    /// An empty series.
    pub fn new(name: impl Into<String>, color: &'static str, style: Style) -> Series {
        Series {
            name: name.into(),
            color,
            style,
            x: Vec::new(),
            y: Vec::new(),
            labels: Vec::new(),
            total: None,
            weights: Vec::new(),
            emphasis: false,
            links: Vec::new(),
        }
    }

    /// The series with these points (`x` and `y` of the same length).
    pub fn with_points(mut self, x: Vec<f64>, y: Vec<f64>) -> Series {
        (self.x, self.y) = (x, y);
        self
    }

    /// The shade class (0 lightest to `SHADES` - 1 darkest) of point `index`: the
    /// log of its weight against the heaviest point's. Unweighted points are darkest.
    pub fn shade(&self, index: usize, max_weight: u64) -> usize {
        let weight = self.weights.get(index).copied().unwrap_or(1);
        if max_weight <= 1 || self.weights.is_empty() {
            return SHADES - 1;
        }
        let fraction = (weight.max(1) as f64).ln() / (max_weight as f64).ln();
        ((fraction * (SHADES - 1) as f64).round() as usize).min(SHADES - 1)
    }

    /// True when no point has a value.
    pub fn is_blank(&self) -> bool {
        self.y.iter().all(|y| !y.is_finite())
    }
}

/// What the x axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Seconds from the first request, shared by every time chart of a page.
    Time,
    /// Percentiles on a log scale of 1/(1-p): 0 = 0%, 1 = 90%, 2 = 99%, ...
    Nines,
    /// The offered rate, requests per second (a run folder's steps), linear from 0.
    Rate,
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Stable name: the SVG/PNG file name and the page's element id.
    pub id: &'static str,
    /// The heading over the chart.
    pub title: String,
    /// Time or percentile axis.
    pub x_axis: XAxis,
    /// The unit of the value axis.
    pub unit: Unit,
    /// Linear or log value axis, as first drawn.
    pub scale: Scale,
    /// The page offers a log/linear switch for this chart.
    pub toggle: bool,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Point labels that [`Series::labels`] index (status codes, error texts).
    pub labels: Vec<String>,
    /// What the chart shows and how, in a sentence, under it.
    pub caption: String,
    /// Height of the chart in pixels (width is fixed).
    pub height: f64,
    /// Stretches of time shaded behind the series (time charts only).
    pub bands: Vec<Band>,
    /// Moments marked across the plot, in time order (time charts only): the
    /// diagnosis's knee and findings.
    pub markers: Vec<Marker>,
}

/// A shaded stretch of a time chart, named on hover: where a sampler had no value.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// Seconds on the page's time axis.
    pub from_s: f64,
    /// Where it ends, seconds on the page's time axis.
    pub to_s: f64,
    /// What is missing there and why, for the hover.
    pub label: String,
}

impl Chart {
    /// A chart over the shared time axis.
    pub fn time_series(
        id: &'static str,
        title: impl Into<String>,
        unit: Unit,
        series: Vec<Series>,
    ) -> Chart {
        Chart {
            id,
            title: title.into(),
            x_axis: XAxis::Time,
            unit,
            scale: Scale::Linear,
            toggle: false,
            series,
            labels: Vec::new(),
            caption: String::new(),
            height: 300.0,
            bands: Vec::new(),
            markers: Vec::new(),
        }
    }

    /// The chart over the offered rate (requests per second) instead of time, e.g.
    /// throughput, latency or success per step of a run folder.
    pub fn over_rate(self) -> Chart {
        Chart {
            x_axis: XAxis::Rate,
            ..self
        }
    }

    /// The chart with `caption` under it.
    pub fn with_caption(mut self, caption: impl Into<String>) -> Chart {
        self.caption = caption.into();
        self
    }

    /// Latency-like charts: log or linear by the data, with the page's switch.
    pub fn with_scale(mut self, scale: Scale, toggle: bool) -> Chart {
        (self.scale, self.toggle) = (scale, toggle);
        self
    }
}

/// A moment marked on a time chart by a dashed line across the plot with a short
/// label, named in full on hover: where the run's knee or a diagnosis finding falls.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    /// Seconds on the page's time axis.
    pub at_s: f64,
    /// A few words on the chart: `knee`, `nginx fds`.
    pub label: String,
    /// The whole sentence, for the hover (the diagnosis's own words).
    pub title: String,
    /// What it marks, which sets its colour.
    pub kind: MarkerKind,
}

/// What a [`Marker`] marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// Where the load stopped being served.
    Knee,
    /// The resource that ran out first.
    FirstLimit,
    /// Another resource that reached its limit (before or after).
    Finding,
}

impl MarkerKind {
    /// The kind's name in the page's data and its CSS class.
    pub fn name(self) -> &'static str {
        match self {
            MarkerKind::Knee => "knee",
            MarkerKind::FirstLimit => "first_limit",
            MarkerKind::Finding => "finding",
        }
    }

    /// Its colour: dark for the knee, a warm red for the first limit, amber after.
    pub fn color(self) -> &'static str {
        match self {
            MarkerKind::Knee => "#111827",
            MarkerKind::FirstLimit => "#b91c1c",
            MarkerKind::Finding => "#b45309",
        }
    }
}

/// The time axis every time chart of a page shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeAxis {
    /// Wall-clock time of x = 0: when the earliest request of all inputs was due (or,
    /// for resource samples alone, the first sample).
    pub origin_unix_ns: u64,
    /// What x = 0 is.
    pub zero: TimeZero,
    /// The first second with anything on it: 0, or earlier when resource samples
    /// started before the first request (a monitor started ahead of the attack).
    pub start_s: f64,
    /// The last second with anything on it.
    pub end_s: f64,
}

/// Where `at_unix_ns` sits on a time axis whose x = 0 is `origin_unix_ns`: seconds,
/// negative when earlier (a monitor started before the first request).
pub(crate) fn x_seconds(origin_unix_ns: u64, at_unix_ns: u64) -> f64 {
    (i128::from(at_unix_ns) - i128::from(origin_unix_ns)) as f64 / 1e9
}

/// What x = 0 on the time axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeZero {
    /// The inputs hold requests: x = 0 is when the earliest was due.
    FirstRequest,
    /// The inputs hold resource samples and no request.
    FirstSample,
}
