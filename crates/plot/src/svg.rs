//! Charts as SVG: [`layout`] places a [`Chart`] (plot area, domains, legend) and
//! [`render`] draws it. The same markup is a standalone `.svg` file, the source of the
//! PNG, and the page's inline chart, whose script redraws the `grid`, `ticks`, `bands`,
//! `plot` and `markers` groups when the view zooms or changes scale (`page.js` writes
//! the same markup from the same layout).

use std::fmt::Write as _;

use crate::axis::{self, Domain, Scale};
use crate::format;
use crate::model::{Chart, Marker, Series, Style, TimeAxis, TimeZero, XAxis};

/// Chart width in pixels.
pub const WIDTH: f64 = 1100.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const BOTTOM: f64 = 44.0;
const TITLE_HEIGHT: f64 = 30.0;
const LEGEND_ROW: f64 = 18.0;
/// Average glyph width at the 11 px label size, for laying out legends.
const CHAR_WIDTH: f64 = 6.4;
pub const FONT_FAMILY: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
/// Dot diameter of point series.
const DOT: f64 = 3.0;
/// Gap bands: a light red wash, so a break in a line reads as "no value" at a glance.
pub const BAND_FILL: &str = "#fca5a5";
pub const BAND_OPACITY: f64 = 0.28;
/// What the rate axis shows.
const RATE_LABEL: &str = "offered rate (requests per second asked)";
/// Dot diameter of [`Style::LinePoints`]: bigger than a scatter's, each is a step.
const STEP_DOT: f64 = 6.0;
/// The radius of a linked point's ring (a traced request's; the page's hover ring is 5).
const RING: f64 = 4.0;
/// The legend entry of a chart with gap bands.
const GAP_LEGEND: &str = "no sample (gap)";
/// Rows of marker labels at the top of the plot: labels that would overlap step down.
pub const MARKER_ROWS: usize = 3;
/// Height of a row of marker labels.
const MARKER_ROW_PX: f64 = 13.0;
/// Average glyph width of a marker's bold label.
const MARKER_CHAR_WIDTH: f64 = 6.8;
/// Between a marker's line and its label, and between two labels in a row.
const MARKER_GAP_PX: f64 = 4.0;

/// A rectangle in chart pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// Where a chart's parts go.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub height: f64,
    pub plot: Rect,
    pub x_domain: Domain,
    pub y_domain: Domain,
    /// Top-left of each series' legend entry.
    pub legend: Vec<(f64, f64)>,
    /// Top-left of the gap bands' legend entry, when the chart has bands.
    pub gap_legend: Option<(f64, f64)>,
}

/// Places `chart`: the legend wraps under the title, the plot takes the rest.
pub fn layout(chart: &Chart, time: &TimeAxis) -> Layout {
    let mut legend = Vec::with_capacity(chart.series.len());
    let (mut x, mut y) = (LEFT, TITLE_HEIGHT + 4.0);
    let mut place = |width: f64| {
        if x + width > WIDTH - RIGHT && x > LEFT {
            (x, y) = (LEFT, y + LEGEND_ROW);
        }
        let at = (x, y);
        x += width;
        at
    };
    for series in &chart.series {
        legend.push(place(legend_width(series)));
    }
    let gap_legend =
        (!chart.bands.is_empty()).then(|| place(28.0 + GAP_LEGEND.len() as f64 * CHAR_WIDTH));
    let top = y + LEGEND_ROW + 8.0;
    let height = chart.height.max(top + BOTTOM + 80.0);
    let plot = Rect {
        x: LEFT,
        y: top,
        width: WIDTH - LEFT - RIGHT,
        height: height - top - BOTTOM,
    };
    let x_domain = match chart.x_axis {
        XAxis::Time => Domain {
            min: time.start_s,
            max: time.end_s,
        },
        XAxis::Nines => Domain {
            min: 0.0,
            max: max_x(chart).max(0.5),
        },
        XAxis::Rate => axis::rate_domain(chart.series.iter().flat_map(|s| s.x.iter().copied())),
    };
    Layout {
        height,
        plot,
        x_domain,
        y_domain: y_domain(chart, chart.scale),
        legend,
        gap_legend,
    }
}

fn max_x(chart: &Chart) -> f64 {
    chart
        .series
        .iter()
        .flat_map(|s| s.x.iter().copied())
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// The y domain of a chart under `scale`: stacked series count by their sums.
pub fn y_domain(chart: &Chart, scale: Scale) -> Domain {
    let stacked: Vec<&Series> = chart
        .series
        .iter()
        .filter(|s| s.style == Style::Stacked)
        .collect();
    let plain = chart
        .series
        .iter()
        .filter(|s| s.style != Style::Stacked)
        .flat_map(|s| s.y.iter().copied());
    let sums = stacked_tops(&stacked).into_iter().flatten();
    let values: Vec<f64> = plain.chain(sums).collect();
    let domain = axis::value_domain(values.iter().copied(), scale, chart.unit.steps());
    match chart.unit.ceiling() {
        Some(ceiling) => axis::capped(domain, scale, &values, ceiling),
        None => domain,
    }
}

/// The running sums of stacked series, one vector per series.
fn stacked_tops(series: &[&Series]) -> Vec<Vec<f64>> {
    let mut tops: Vec<Vec<f64>> = Vec::with_capacity(series.len());
    for one in series {
        let below = tops.last();
        let top = one
            .y
            .iter()
            .enumerate()
            .map(|(i, y)| y + below.map_or(0.0, |b| b.get(i).copied().unwrap_or(0.0)))
            .collect();
        tops.push(top);
    }
    tops
}

fn legend_width(series: &Series) -> f64 {
    28.0 + legend_text(series).chars().count() as f64 * CHAR_WIDTH
}

/// A series' legend text: its name, with point series' counts (and how many are
/// drawn when downsampled).
pub fn legend_text(series: &Series) -> String {
    match (series.total, series.style) {
        (Some(total), _) => format!(
            "{} ({} of {} drawn)",
            series.name,
            format::grouped(series.x.len() as u64),
            format::grouped(total)
        ),
        (None, Style::Points) => {
            format!(
                "{} ({})",
                series.name,
                format::grouped(series.x.len() as u64)
            )
        }
        (None, _) => series.name.clone(),
    }
}

/// The chart as a standalone SVG document. `run_title` prefixes the chart's title.
pub fn render(chart: &Chart, time: &TimeAxis, run_title: Option<&str>) -> String {
    let layout = layout(chart, time);
    let mut out =
        String::with_capacity(4096 + chart.series.iter().map(|s| s.x.len() * 16).sum::<usize>());
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"chart-{id}\" \
         data-chart=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         font-family=\"{FONT_FAMILY}\" font-size=\"11\" role=\"img\" aria-label=\"{label}\">\n\
         <rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
        id = chart.id,
        w = WIDTH,
        h = layout.height,
        label = escape(&chart.title),
    );
    let title = match run_title {
        Some(run) => format!("{run}: {}", chart.title),
        None => chart.title.clone(),
    };
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"#111827\">{}</text>",
        escape(&title)
    );
    legend(&mut out, chart, &layout);
    out.push_str("<g class=\"grid\" stroke=\"#e5e7eb\" stroke-width=\"1\">");
    grid(&mut out, chart, &layout);
    out.push_str("</g>\n<g class=\"ticks\" fill=\"#4b5563\">");
    ticks(&mut out, chart, &layout);
    out.push_str("</g>\n");
    x_label(&mut out, chart, &layout, time);
    // Marks stop at the frame's sides (a zoomed view cuts lines there) and may stand a
    // dot's width above and below it, so values on the axis stay whole.
    let p = layout.plot;
    let _ = writeln!(
        out,
        "<defs><clipPath id=\"clip-{id}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\
         </clipPath></defs>",
        p.x,
        p.y - DOT,
        p.width,
        p.height + 2.0 * DOT,
        id = chart.id
    );
    if !chart.bands.is_empty() {
        let _ = write!(
            out,
            "<g class=\"bands\" clip-path=\"url(#clip-{id})\" fill=\"{BAND_FILL}\" \
             fill-opacity=\"{BAND_OPACITY}\">",
            id = chart.id
        );
        bands(&mut out, chart, &layout);
        out.push_str("</g>\n");
    }
    let _ = write!(
        out,
        "<g class=\"plot\" clip-path=\"url(#clip-{id})\">",
        id = chart.id
    );
    plot(&mut out, chart, &layout, chart.scale);
    out.push_str("</g>\n");
    if !chart.markers.is_empty() {
        out.push_str("<g class=\"markers\" font-weight=\"bold\">");
        markers(&mut out, chart, &layout);
        out.push_str("</g>\n");
    }
    let _ = writeln!(
        out,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" \
         stroke=\"#9ca3af\"/>",
        p.x, p.y, p.width, p.height
    );
    if chart.series.iter().all(Series::is_blank) {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#6b7280\">no data</text>",
            p.x + p.width / 2.0,
            p.y + p.height / 2.0
        );
    }
    out.push_str("</svg>\n");
    out
}

fn legend(out: &mut String, chart: &Chart, layout: &Layout) {
    out.push_str("<g class=\"legend\" fill=\"#374151\">");
    for (series, &(x, y)) in chart.series.iter().zip(&layout.legend) {
        let (mid, color) = (y + 6.0, series.color);
        let _ = match series.style {
            Style::Points => write!(
                out,
                "<circle cx=\"{}\" cy=\"{mid}\" r=\"3.5\" fill=\"{color}\"/>",
                x + 6.0
            ),
            Style::Stacked => write!(
                out,
                "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{color}\"/>",
                y + 1.0
            ),
            Style::Line | Style::Dashed => write!(
                out,
                "<line x1=\"{x}\" y1=\"{mid}\" x2=\"{}\" y2=\"{mid}\" stroke=\"{color}\" \
                 stroke-width=\"2.5\"{}/>",
                x + 14.0,
                if series.style == Style::Dashed {
                    " stroke-dasharray=\"4 3\""
                } else {
                    ""
                }
            ),
            Style::LinePoints => write!(
                out,
                "<line x1=\"{x}\" y1=\"{mid}\" x2=\"{}\" y2=\"{mid}\" stroke=\"{color}\" \
                 stroke-width=\"2\"/><circle cx=\"{}\" cy=\"{mid}\" r=\"3\" fill=\"{color}\"/>",
                x + 14.0,
                x + 7.0
            ),
        };
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            x + 18.0,
            y + 10.0,
            escape(&legend_text(series))
        );
    }
    if let Some((x, y)) = layout.gap_legend {
        let _ = write!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"10\" fill=\"{BAND_FILL}\" \
             fill-opacity=\"{}\"/><text x=\"{}\" y=\"{}\">{GAP_LEGEND}</text>",
            y + 1.0,
            (BAND_OPACITY * 2.0).min(1.0),
            x + 18.0,
            y + 10.0
        );
    }
    out.push_str("</g>\n");
}

/// Gap bands: one rectangle per band, the plot's height, at least a pixel wide.
fn bands(out: &mut String, chart: &Chart, layout: &Layout) {
    let p = layout.plot;
    for band in &chart.bands {
        let (from, to) = (x_px(layout, band.from_s), x_px(layout, band.to_s));
        if !(from.is_finite() && to.is_finite()) {
            continue;
        }
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"{}\"/>",
            from.min(to),
            p.y,
            (to - from).abs().max(1.0),
            p.height
        );
    }
}

/// Where a marker goes: its line's x in pixels, its label's row, and whether the label
/// ends at the line (it would stick out past the plot's right side otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkerPlace {
    /// Index into the chart's markers.
    pub index: usize,
    /// The line's x, chart pixels.
    pub x_px: f64,
    /// The label's row, 0 at the top of the plot.
    pub row: usize,
    /// The label ends at the line rather than starting there.
    pub end_anchor: bool,
}

/// The markers inside the x domain, each label in the first of [`MARKER_ROWS`] rows
/// where it does not touch the label before it (else the row that frees up first).
/// `page.js` places them by the same rule when the view zooms.
pub fn marker_places(markers: &[Marker], layout: &Layout) -> Vec<MarkerPlace> {
    let p = layout.plot;
    let domain = layout.x_domain;
    let mut row_ends = [f64::NEG_INFINITY; MARKER_ROWS];
    let mut places = Vec::new();
    for (index, marker) in markers.iter().enumerate() {
        if !(marker.at_s >= domain.min && marker.at_s <= domain.max) {
            continue;
        }
        let x_px = x_px(layout, marker.at_s);
        let width = MARKER_GAP_PX + marker.label.chars().count() as f64 * MARKER_CHAR_WIDTH;
        let end_anchor = x_px + width > p.x + p.width;
        let (from, to) = if end_anchor {
            (x_px - width, x_px)
        } else {
            (x_px, x_px + width)
        };
        let free = (0..MARKER_ROWS).find(|&row| row_ends[row] + MARKER_GAP_PX <= from);
        let row = free.unwrap_or_else(|| {
            (0..MARKER_ROWS)
                .min_by(|&a, &b| row_ends[a].total_cmp(&row_ends[b]))
                .unwrap_or(0)
        });
        row_ends[row] = to;
        places.push(MarkerPlace {
            index,
            x_px,
            row,
            end_anchor,
        });
    }
    places
}

/// Each marker: a dashed line across the plot and its label at the top (white-edged,
/// so it reads over the series), named in full by its `<title>` on hover.
fn markers(out: &mut String, chart: &Chart, layout: &Layout) {
    let p = layout.plot;
    for place in marker_places(&chart.markers, layout) {
        let marker = &chart.markers[place.index];
        let (x, color) = (place.x_px, marker.kind.color());
        let (label_x, anchor) = if place.end_anchor {
            (x - MARKER_GAP_PX, "end")
        } else {
            (x + MARKER_GAP_PX, "start")
        };
        let _ = write!(
            out,
            "<g class=\"marker {kind}\"><title>{title}</title>\
             <line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"{color}\" \
             stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\
             <text x=\"{label_x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" fill=\"{color}\" \
             stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">{label}</text></g>",
            kind = marker.kind.name(),
            title = escape(&marker.title),
            top = p.y,
            bottom = p.y + p.height,
            y = p.y + 11.0 + place.row as f64 * MARKER_ROW_PX,
            label = escape(&marker.label),
        );
    }
}

/// A tick: its value and label.
pub type Tick = (f64, String);

/// Tick positions and labels of both axes.
pub fn axis_ticks(chart: &Chart, layout: &Layout, scale: Scale) -> (Vec<Tick>, Vec<Tick>) {
    let xs = match chart.x_axis {
        XAxis::Time => axis::time_ticks(layout.x_domain)
            .into_iter()
            .map(|t| (t, format::time_s(t)))
            .collect(),
        XAxis::Nines => axis::nines_ticks(layout.x_domain)
            .into_iter()
            .map(|n| (n, axis::nines_label(n)))
            .collect(),
        XAxis::Rate => axis::rate_ticks(layout.x_domain)
            .into_iter()
            .map(|r| (r, format::count(r)))
            .collect(),
    };
    let steps = chart.unit.steps();
    let y_values = match scale {
        Scale::Linear => axis::linear_ticks(layout.y_domain, steps),
        Scale::Log => axis::log_ticks(layout.y_domain, steps),
    };
    let ys = y_values
        .into_iter()
        .map(|v| (v, chart.unit.label(v)))
        .collect();
    (xs, ys)
}

fn grid(out: &mut String, chart: &Chart, layout: &Layout) {
    let (xs, ys) = axis_ticks(chart, layout, chart.scale);
    let p = layout.plot;
    for (x, _) in &xs {
        let px = x_px(layout, *x);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{}\"/>",
            p.y,
            p.y + p.height
        );
    }
    for (y, _) in &ys {
        let py = y_px(layout, chart.scale, *y);
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\"/>",
            p.x,
            p.x + p.width
        );
    }
}

fn ticks(out: &mut String, chart: &Chart, layout: &Layout) {
    let (xs, ys) = axis_ticks(chart, layout, chart.scale);
    let p = layout.plot;
    for (x, label) in &xs {
        let px = x_px(layout, *x);
        // A label that would stick out past the plot ends there instead.
        let anchor = if px + label.len() as f64 * CHAR_WIDTH / 2.0 > p.x + p.width + RIGHT / 2.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            out,
            "<text x=\"{px:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            p.y + p.height + 15.0,
            escape(label)
        );
    }
    for (y, label) in &ys {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            p.x - 6.0,
            y_px(layout, chart.scale, *y) + 4.0,
            escape(label)
        );
    }
}

fn x_label(out: &mut String, chart: &Chart, layout: &Layout, time: &TimeAxis) {
    let text = match chart.x_axis {
        XAxis::Time => format!(
            "time from the first {} (t = 0 at {})",
            match time.zero {
                TimeZero::FirstRequest => "request",
                TimeZero::FirstSample => "sample",
            },
            origin_text(time.origin_unix_ns)
        ),
        XAxis::Nines => "percentile (log scale of 1 / (1 - p))".to_owned(),
        XAxis::Rate => RATE_LABEL.to_owned(),
    };
    let p = layout.plot;
    let _ = writeln!(
        out,
        "<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#6b7280\">{}</text>",
        p.x + p.width / 2.0,
        p.y + p.height + 34.0,
        escape(&text)
    );
}

/// The time origin to the millisecond, UTC: `2025-11-21T04:40:00.123Z`.
pub fn origin_text(origin_unix_ns: u64) -> String {
    record::format_timestamp(origin_unix_ns - origin_unix_ns % 1_000_000)
}

pub fn x_px(layout: &Layout, x: f64) -> f64 {
    let p = layout.plot;
    p.x + layout.x_domain.fraction(Scale::Linear, x) * p.width
}

pub fn y_px(layout: &Layout, scale: Scale, y: f64) -> f64 {
    let p = layout.plot;
    let fraction = layout.y_domain.fraction(scale, y).clamp(-0.02, 1.02);
    p.y + p.height - fraction * p.height
}

/// The series' marks, in order (later ones on top).
fn plot(out: &mut String, chart: &Chart, layout: &Layout, scale: Scale) {
    let stacked: Vec<&Series> = chart
        .series
        .iter()
        .filter(|s| s.style == Style::Stacked)
        .collect();
    let tops = stacked_tops(&stacked);
    let mut stack: usize = 0;
    for series in &chart.series {
        match series.style {
            Style::Points => {
                points(out, series, layout, scale);
                link_rings(out, series, layout, scale);
            }
            Style::Line | Style::Dashed => line(out, series, layout, scale),
            Style::LinePoints => {
                line(out, series, layout, scale);
                step_dots(out, series, layout, scale);
            }
            Style::Stacked => {
                let below = stack.checked_sub(1).map(|i| tops[i].as_slice());
                area(out, series, &tops[stack], below, layout, scale);
                stack += 1;
            }
        }
    }
}

/// Dots, one path per shade (a downsampled series' dots are shaded by weight).
fn points(out: &mut String, series: &Series, layout: &Layout, scale: Scale) {
    let max_weight = series.weights.iter().copied().max().unwrap_or(1);
    let (opacities, width) = if series.emphasis {
        ([0.45, 0.6, 0.75, 0.9], DOT + 0.6)
    } else {
        ([0.25, 0.4, 0.55, 0.75], DOT)
    };
    for (shade, opacity) in opacities.iter().enumerate() {
        let start = out.len();
        out.push_str("<path class=\"series\" d=\"");
        let mut any = false;
        for (index, (&x, &y)) in series.x.iter().zip(&series.y).enumerate() {
            if !(x.is_finite() && y.is_finite()) || series.shade(index, max_weight) != shade {
                continue;
            }
            out.push('M');
            push_point(out, x_px(layout, x), y_px(layout, scale, y));
            out.push_str("h0");
            any = true;
        }
        if !any {
            out.truncate(start);
            continue;
        }
        let _ = write!(
            out,
            "\" fill=\"none\" stroke=\"{}\" stroke-opacity=\"{opacity}\" \
             stroke-width=\"{width}\" stroke-linecap=\"round\"/>",
            series.color
        );
    }
}

/// Each linked point of `series` (a traced request, `traces_page.rs`) as a ring inside
/// a link to its trace, over its dot; `page.js` draws the same in `linkRings`.
fn link_rings(out: &mut String, series: &Series, layout: &Layout, scale: Scale) {
    for ((&x, &y), link) in series.x.iter().zip(&series.y).zip(&series.links) {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        let _ = write!(
            out,
            "<a class=\"trace\" href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer\">\
             <circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{RING}\" fill=\"{color}\" fill-opacity=\"0\" \
             stroke=\"{color}\" stroke-width=\"1.5\"/></a>",
            escape(link),
            x_px(layout, x),
            y_px(layout, scale, y),
            color = series.color,
        );
    }
}

/// One solid dot per value, on top of the series' line.
fn step_dots(out: &mut String, series: &Series, layout: &Layout, scale: Scale) {
    out.push_str("<path class=\"series\" d=\"");
    for (&x, &y) in series.x.iter().zip(&series.y) {
        if x.is_finite() && y.is_finite() {
            out.push('M');
            push_point(out, x_px(layout, x), y_px(layout, scale, y));
            out.push_str("h0");
        }
    }
    let _ = write!(
        out,
        "\" fill=\"none\" stroke=\"{}\" stroke-width=\"{STEP_DOT}\" stroke-linecap=\"round\"/>",
        series.color
    );
}

fn line(out: &mut String, series: &Series, layout: &Layout, scale: Scale) {
    out.push_str("<path class=\"series\" d=\"");
    let mut pen_down = false;
    for (index, (&x, &y)) in series.x.iter().zip(&series.y).enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            pen_down = false;
            continue;
        }
        out.push(if pen_down { 'L' } else { 'M' });
        push_point(out, x_px(layout, x), y_px(layout, scale, y));
        let alone = !pen_down && !series.y.get(index + 1).is_some_and(|next| next.is_finite());
        if alone {
            // A value between gaps: a dot, or it would not show.
            out.push_str("h0");
        }
        pen_down = true;
    }
    let dash = if series.style == Style::Dashed {
        " stroke-dasharray=\"6 4\""
    } else {
        ""
    };
    let _ = write!(
        out,
        "\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" stroke-linejoin=\"round\" \
         stroke-linecap=\"round\"{dash}/>",
        series.color
    );
}

/// A stacked series: the band between the sums below it and its own top, one polygon
/// per stretch without gaps (a stretch of one point is drawn 4 px wide).
fn area(
    out: &mut String,
    series: &Series,
    top: &[f64],
    below: Option<&[f64]>,
    layout: &Layout,
    scale: Scale,
) {
    out.push_str("<path class=\"series\" d=\"");
    let finite = |i: usize| top[i].is_finite() && series.x[i].is_finite();
    let mut start = 0;
    while start < top.len() {
        if !finite(start) {
            start += 1;
            continue;
        }
        let mut end = start;
        while end + 1 < top.len() && finite(end + 1) {
            end += 1;
        }
        // (x in pixels, row) along the top; one row alone gets two corners.
        let corners: Vec<(f64, usize)> = if start == end {
            let x = x_px(layout, series.x[start]);
            vec![(x - 2.0, start), (x + 2.0, start)]
        } else {
            (start..=end)
                .map(|i| (x_px(layout, series.x[i]), i))
                .collect()
        };
        for (n, &(x, i)) in corners.iter().enumerate() {
            out.push(if n == 0 { 'M' } else { 'L' });
            push_point(out, x, y_px(layout, scale, top[i]));
        }
        for &(x, i) in corners.iter().rev() {
            out.push('L');
            push_point(out, x, y_px(layout, scale, below.map_or(0.0, |b| b[i])));
        }
        out.push('Z');
        start = end + 1;
    }
    let _ = write!(
        out,
        "\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"none\"/>",
        series.color
    );
}

fn push_point(out: &mut String, x: f64, y: f64) {
    push_coord(out, x);
    out.push(' ');
    push_coord(out, y);
}

/// A coordinate to 0.1 px, without a trailing `.0`.
pub fn push_coord(out: &mut String, value: f64) {
    let tenths = (value * 10.0).round() as i64;
    if tenths < 0 {
        out.push('-');
    }
    let tenths = tenths.unsigned_abs();
    let _ = write!(out, "{}", tenths / 10);
    if !tenths.is_multiple_of(10) {
        let _ = write!(out, ".{}", tenths % 10);
    }
}

/// Text for SVG and HTML: `&`, `<`, `>` and quotes escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Marker, MarkerKind, Unit};

    fn marker(at_s: f64, label: &str) -> Marker {
        Marker {
            at_s,
            label: label.to_owned(),
            title: format!("then: {label} <b>ran out</b>"),
            kind: MarkerKind::Finding,
        }
    }

    /// A time chart over 0..100 s whose plot is 1010 px wide (10.1 px a second).
    fn chart_with(markers: Vec<Marker>) -> (Chart, TimeAxis) {
        let series = Series::new("cpu", "#2563eb", Style::Line)
            .with_points(vec![0.0, 100.0], vec![1.0, 2.0]);
        let mut chart = Chart::time_series("cpu", "CPU", Unit::Percent, vec![series]);
        chart.markers = markers;
        let axis = TimeAxis {
            origin_unix_ns: 0,
            zero: TimeZero::FirstRequest,
            start_s: 0.0,
            end_s: 100.0,
        };
        (chart, axis)
    }

    #[test]
    fn marker_labels_step_down_a_row_rather_than_overlap() {
        // (case, markers (at, label), each placed one's (row, ends at its line))
        type Case<'a> = (&'a str, Vec<(f64, &'a str)>, Vec<(usize, bool)>);
        let cases: Vec<Case<'_>> = vec![
            ("none", vec![], vec![]),
            (
                "apart: one row",
                vec![(10.0, "knee"), (50.0, "nginx fds")],
                vec![(0, false), (0, false)],
            ),
            (
                "close: each a row down, the fourth where a row frees first",
                vec![
                    (10.0, "knee"),
                    (11.0, "nginx fds"),
                    (12.0, "host CPU"),
                    (13.0, "log"),
                ],
                vec![(0, false), (1, false), (2, false), (0, false)],
            ),
            (
                "close but short enough",
                vec![(10.0, "a"), (12.0, "b")],
                vec![(0, false), (0, false)],
            ),
            (
                "at the right edge: the label ends at its line",
                vec![(99.0, "nginx fds")],
                vec![(0, true)],
            ),
            (
                "outside the view: not drawn",
                vec![(-1.0, "early"), (101.0, "late"), (f64::NAN, "none")],
                vec![],
            ),
        ];
        for (case, at, want) in cases {
            let markers = at
                .iter()
                .map(|&(at_s, label)| marker(at_s, label))
                .collect();
            let (chart, axis) = chart_with(markers);
            let layout = layout(&chart, &axis);
            let places = marker_places(&chart.markers, &layout);
            let got: Vec<(usize, bool)> = places.iter().map(|p| (p.row, p.end_anchor)).collect();
            assert_eq!(got, want, "{case}");
            let svg = render(&chart, &axis, None);
            assert_eq!(
                svg.matches("<g class=\"marker finding\">").count(),
                want.len(),
                "{case}"
            );
            assert_eq!(
                svg.contains("class=\"markers\""),
                !chart.markers.is_empty(),
                "{case}"
            );
            // Titles are text, never markup.
            assert!(!svg.contains("<b>"), "{case}");
        }
    }

    #[test]
    fn coordinates_are_short() {
        let rows: &[(f64, &str)] = &[
            (12.0, "12"),
            (12.04, "12"),
            (12.06, "12.1"),
            (-3.5, "-3.5"),
            (-0.5, "-0.5"),
            (0.0, "0"),
        ];
        for &(value, want) in rows {
            let mut out = String::new();
            push_coord(&mut out, value);
            assert_eq!(out, want, "{value}");
        }
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
