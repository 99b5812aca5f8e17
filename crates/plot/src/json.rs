//! The page's chart data as JSON, for its script: per chart the layout the SVG was
//! drawn with and every series' points, compact (times to the microsecond, durations
//! in whole nanoseconds). Strings are escaped so the JSON can sit inside `<script>`.

use std::fmt::Write as _;

use report::{push_json_string as push_string, push_json_strings as push_strings};

use crate::model::{Chart, Series, TimeAxis, Unit, XAxis};
use crate::svg::{self, Layout};

/// `{"origin_ms":..., "end_s":..., "charts":[...]}`.
pub fn page_data(charts: &[Chart], time: &TimeAxis) -> String {
    let mut out = String::new();
    let _ = write!(out, "{{\"origin_ms\":");
    push_number(&mut out, time.origin_unix_ns as f64 / 1e6, 3);
    out.push_str(",\"end_s\":");
    push_number(&mut out, time.end_s, 6);
    out.push_str(",\"charts\":[");
    for (index, chart) in charts.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_chart(&mut out, chart, &svg::layout(chart, time));
    }
    out.push_str("]}");
    out
}

fn push_chart(out: &mut String, chart: &Chart, layout: &Layout) {
    let p = layout.plot;
    out.push_str("{\"id\":");
    push_string(out, chart.id);
    out.push_str(",\"x\":");
    push_string(out, x_axis_name(chart.x_axis));
    out.push_str(",\"unit\":");
    push_string(out, chart.unit.name());
    out.push_str(",\"scale\":");
    push_string(out, chart.scale.name());
    let _ = write!(
        out,
        ",\"toggle\":{},\"plot\":[{},{},{},{}],\"xd\":[",
        chart.toggle, p.x, p.y, p.width, p.height
    );
    push_number(out, layout.x_domain.min, 6);
    out.push(',');
    push_number(out, layout.x_domain.max, 6);
    out.push_str("],\"labels\":[");
    push_strings(out, &chart.labels);
    out.push_str("],\"series\":[");
    for (index, series) in chart.series.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_series(out, chart, series);
    }
    out.push(']');
    if !chart.bands.is_empty() {
        // [from_s, to_s, label] per band; the script shades them and names them on hover.
        out.push_str(",\"bands\":[");
        for (index, band) in chart.bands.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push('[');
            push_number(out, band.from_s, 6);
            out.push(',');
            push_number(out, band.to_s, 6);
            out.push(',');
            push_string(out, &band.label);
            out.push(']');
        }
        out.push(']');
    }
    if !chart.markers.is_empty() {
        // [at_s, label, title, kind, colour] per marker; the script draws them on every view.
        out.push_str(",\"markers\":[");
        for (index, marker) in chart.markers.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push('[');
            push_number(out, marker.at_s, 6);
            out.push(',');
            push_string(out, &marker.label);
            out.push(',');
            push_string(out, &marker.title);
            out.push(',');
            push_string(out, marker.kind.name());
            out.push(',');
            push_string(out, marker.kind.color());
            out.push(']');
        }
        out.push(']');
    }
    out.push('}');
}

fn x_axis_name(x_axis: XAxis) -> &'static str {
    match x_axis {
        XAxis::Time => "time",
        XAxis::Nines => "nines",
        XAxis::Rate => "rate",
    }
}

fn push_series(out: &mut String, chart: &Chart, series: &Series) {
    out.push_str("{\"name\":");
    push_string(out, &series.name);
    out.push_str(",\"color\":");
    push_string(out, series.color);
    out.push_str(",\"style\":");
    push_string(out, series.style.name());
    let _ = write!(out, ",\"emphasis\":{},\"x\":", series.emphasis);
    let x_decimals = match chart.x_axis {
        XAxis::Time => 6,
        XAxis::Nines | XAxis::Rate => 4,
    };
    push_numbers(out, &series.x, x_decimals);
    out.push_str(",\"y\":");
    push_numbers(out, &series.y, y_decimals(chart.unit));
    if !series.weights.is_empty() {
        out.push_str(",\"n\":[");
        for (index, weight) in series.weights.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            let _ = write!(out, "{weight}");
        }
        out.push(']');
    }
    if !series.labels.is_empty() {
        out.push_str(",\"l\":[");
        for (index, label) in series.labels.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}");
        }
        out.push(']');
    }
    if !series.links.is_empty() {
        // Each point's link (a traced request's trace): the script draws its ring.
        out.push_str(",\"k\":[");
        push_strings(out, &series.links);
        out.push(']');
    }
    out.push('}');
}

fn y_decimals(unit: Unit) -> usize {
    match unit {
        Unit::Duration | Unit::Bytes | Unit::BytesPerSecond => 0,
        // Counts are whole, but a load average (a count of runnable tasks) is not;
        // trailing zeros are trimmed, so whole counts cost nothing.
        Unit::PerSecond | Unit::Count => 3,
        Unit::Percent | Unit::Share => 2,
        // Ratios and load averages live below 1.
        Unit::Number => 6,
    }
}

fn push_numbers(out: &mut String, values: &[f64], decimals: usize) {
    out.push('[');
    for (index, &value) in values.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_number(out, value, decimals);
    }
    out.push(']');
}

/// A number to `decimals` places without trailing zeros; `null` for NaN and infinities.
pub fn push_number(out: &mut String, value: f64, decimals: usize) {
    if !value.is_finite() {
        out.push_str("null");
        return;
    }
    let start = out.len();
    let _ = write!(out, "{value:.decimals$}");
    if out[start..].contains('.') {
        let trimmed = out[start..]
            .trim_end_matches('0')
            .trim_end_matches('.')
            .len();
        out.truncate(start + trimmed);
    }
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_compact() {
        let rows: &[(f64, usize, &str)] = &[
            (1.5, 6, "1.5"),
            (2.0, 6, "2"),
            (812_345.0, 0, "812345"),
            (0.000_000_4, 6, "0"),
            (-0.000_000_4, 6, "0"),
            (f64::NAN, 3, "null"),
            (f64::INFINITY, 3, "null"),
            (123.456_789_9, 6, "123.45679"),
        ];
        for &(value, decimals, want) in rows {
            let mut out = String::new();
            push_number(&mut out, value, decimals);
            assert_eq!(out, want, "{value}");
        }
    }

    #[test]
    fn strings_cannot_end_the_script() {
        let mut out = String::new();
        push_string(&mut out, "</script><b>\"x\"\\\n\u{1}");
        assert_eq!(
            out,
            "\"\\u003c/script\\u003e\\u003cb\\u003e\\\"x\\\"\\\\\\n\\u0001\""
        );
    }
}
