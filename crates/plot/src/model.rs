//! The chart model: what a chart shows, apart from how it is drawn. Every chart is a
//! [`Chart`] of named [`Series`]; time charts share one x axis (seconds from the first
//! request, [`TimeAxis`]), so a new time series (host CPU, database transactions/s)
//! is one more `Chart::time_series(...)` with no change to the renderers.

use crate::axis::Scale;

/// What the y values are, for axis labels and hover text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds, printed as durations.
    Duration,
    /// Events per second.
    PerSecond,
    /// 0..100.
    Percent,
    /// A plain count.
    Count,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Duration => "duration",
            Unit::PerSecond => "per_second",
            Unit::Percent => "percent",
            Unit::Count => "count",
        }
    }
}

/// Shades a weighted point series is drawn in (see [`Series::shade`]).
pub const SHADES: usize = 4;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Line,
    Dashed,
    /// One dot per value (the latency scatter).
    Points,
    /// Areas stacked on the series before it (status codes).
    Stacked,
}

impl Style {
    pub fn name(self) -> &'static str {
        match self {
            Style::Line => "line",
            Style::Dashed => "dashed",
            Style::Points => "points",
            Style::Stacked => "stacked",
        }
    }
}

/// One named series. `y` is NaN where there is no value (a gap in a line).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub style: Style,
    /// Seconds from the first request on time charts; nines on the percentile curve.
    pub x: Vec<f64>,
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
}

impl Series {
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
        }
    }

    pub fn with_points(mut self, x: Vec<f64>, y: Vec<f64>) -> Series {
        (self.x, self.y) = (x, y);
        self
    }

    /// The shade class (0 lightest to [`SHADES`] - 1 darkest) of point `index`: the
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
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Stable name: the SVG/PNG file name and the page's element id.
    pub id: &'static str,
    pub title: String,
    pub x_axis: XAxis,
    pub unit: Unit,
    pub scale: Scale,
    /// The page offers a log/linear switch for this chart.
    pub toggle: bool,
    pub series: Vec<Series>,
    /// Point labels that [`Series::labels`] index (status codes, error texts).
    pub labels: Vec<String>,
    /// What the chart shows and how, in a sentence, under it.
    pub caption: String,
    /// Height of the chart in pixels (width is fixed).
    pub height: f64,
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
        }
    }

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

/// The time axis every time chart of a page shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeAxis {
    /// Wall-clock time of x = 0: when the earliest request of all inputs was due.
    pub origin_unix_ns: u64,
    /// The last second with anything on it.
    pub end_s: f64,
}
