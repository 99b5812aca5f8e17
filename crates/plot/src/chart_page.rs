//! [`ChartPage`]: a self-contained page of given charts and HTML sections, for pages
//! other than a run's (a run folder's `index.html`). It has the run page's head, style,
//! script and content policy, so hover, log/linear switches and (for time charts)
//! zoom work the same, and it fetches nothing.

use crate::html;
use crate::model::{Chart, TimeAxis, TimeZero};

/// A page of charts and HTML sections, in the order they are added.
///
/// ```
/// use plot::{Chart, ChartPage, Series, Style, Unit, escape_html};
///
/// let throughput = Series::new("fast", "#2563eb", Style::LinePoints)
///     .with_points(vec![50.0, 200.0], vec![50.0, 198.0]);
/// let mut page = ChartPage::new("two <variants>");
/// page.html(format!("<h1>{}</h1>\n", escape_html("two <variants>")));
/// let chart = Chart::time_series("throughput", "throughput", Unit::PerSecond, vec![throughput]);
/// page.chart(chart.over_rate());
/// let html = page.render();
/// assert!(html.contains("<title>two &lt;variants&gt;</title>"));
/// assert!(html.contains("id=\"chart-throughput\""));
/// ```
#[derive(Debug, Clone)]
pub struct ChartPage {
    title: String,
    style: String,
    footer: String,
    parts: Vec<Part>,
    axis: TimeAxis,
}

#[derive(Debug, Clone)]
enum Part {
    Html(String),
    Chart(Chart),
}

/// The time axis of a page without time charts: nothing reads it but the page data.
const NO_TIME: TimeAxis = TimeAxis {
    origin_unix_ns: 0,
    zero: TimeZero::FirstRequest,
    start_s: 0.0,
    end_s: 1.0,
};

impl ChartPage {
    /// An empty page titled `title` (plain text; escaped here).
    pub fn new(title: impl Into<String>) -> ChartPage {
        ChartPage {
            title: title.into(),
            style: String::new(),
            footer: String::new(),
            parts: Vec::new(),
            axis: NO_TIME,
        }
    }

    /// Appends `markup` as is: the caller escapes its text ([`escape_html`](crate::escape_html)).
    pub fn html(&mut self, markup: impl Into<String>) -> &mut ChartPage {
        self.parts.push(Part::Html(markup.into()));
        self
    }

    /// Appends a chart in its box (inline SVG, caption, log/linear switch if it has one).
    pub fn chart(&mut self, chart: Chart) -> &mut ChartPage {
        self.parts.push(Part::Chart(chart));
        self
    }

    /// CSS added after the run page's own.
    pub fn style(&mut self, css: impl Into<String>) -> &mut ChartPage {
        self.style = css.into();
        self
    }

    /// The footer's markup, as is.
    pub fn footer(&mut self, markup: impl Into<String>) -> &mut ChartPage {
        self.footer = markup.into();
        self
    }

    /// The time axis the page's time charts share (none needed for rate charts).
    pub fn time_axis(&mut self, axis: TimeAxis) -> &mut ChartPage {
        self.axis = axis;
        self
    }

    /// The charts, in page order.
    pub fn charts(&self) -> Vec<&Chart> {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Chart(chart) => Some(chart),
                Part::Html(_) => None,
            })
            .collect()
    }

    /// The whole page.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        html::open_page(&mut out, &self.title, &self.style);
        for part in &self.parts {
            match part {
                Part::Html(markup) => out.push_str(markup),
                Part::Chart(chart) => html::figure(&mut out, chart, &self.axis),
            }
        }
        let charts: Vec<Chart> = self.charts().into_iter().cloned().collect();
        html::close_page(&mut out, &self.footer, &charts, &self.axis);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Series, Style, Unit};
    use crate::svg::escape;

    fn rate_chart(id: &'static str, style: Style) -> Chart {
        Chart::time_series(
            id,
            format!("{id} <&>"),
            Unit::PerSecond,
            vec![
                Series::new("a\"b", "#2563eb", style)
                    .with_points(vec![50.0, 200.0], vec![49.0, 120.0]),
            ],
        )
        .over_rate()
    }

    #[test]
    fn pieces_appear_in_order_and_text_is_escaped() {
        let mut page = ChartPage::new("plan <x> & \"y\"");
        page.html("<section id=\"first\"></section>\n")
            .chart(rate_chart("knee", Style::LinePoints).with_scale(crate::Scale::Log, true))
            .html(format!("<p>{}</p>\n", escape("</p><script>")))
            .style(".mine{color:red}")
            .footer("the foot");
        let html = page.render();
        // (what, must appear after the previous row)
        let rows = [
            "default-src 'none'",
            "<title>plan &lt;x&gt; &amp; &quot;y&quot;</title>",
            ".mine{color:red}</style>",
            "<section id=\"first\">",
            "data-chart=\"knee\" data-scale=\"log\" aria-pressed=\"true\"",
            "id=\"chart-knee\"",
            "knee &lt;&amp;&gt;",
            "offered rate (requests per second asked)",
            "<p>&lt;/p&gt;&lt;script&gt;</p>",
            "<footer>the foot</footer>",
            "\"x\":\"rate\"",
            "\"name\":\"a\\\"b\"",
            "\"style\":\"line_points\"",
        ];
        let mut at = 0;
        for want in rows {
            let found = html[at..]
                .find(want)
                .unwrap_or_else(|| panic!("{want:?} missing after byte {at}:\n{html}"));
            at += found + want.len();
        }
        assert_eq!(page.charts().len(), 1);
        let body = &html[..html.find("<footer>").unwrap_or(html.len())];
        assert!(!body.contains("NaN"), "{body}");
    }

    #[test]
    fn rate_charts_draw_a_dot_per_step_and_label_the_rate_axis() {
        // (style, dots path expected)
        let rows = [
            (Style::LinePoints, true),
            (Style::Line, false),
            (Style::Dashed, false),
        ];
        for (style, dots) in rows {
            let svg = crate::svg::render(&rate_chart("c", style), &NO_TIME, None);
            assert_eq!(svg.contains("stroke-width=\"6\""), dots, "{style:?}: {svg}");
            for label in [">0<", ">50<", ">100<", ">150<", ">200<", ">250<"] {
                assert!(svg.contains(label), "{style:?}: {label} missing: {svg}");
            }
        }
        let empty = Chart::time_series("e", "empty", Unit::Percent, Vec::new()).over_rate();
        let svg = crate::svg::render(&empty, &NO_TIME, None);
        assert!(svg.contains("no data") && !svg.contains("NaN"), "{svg}");
    }
}
