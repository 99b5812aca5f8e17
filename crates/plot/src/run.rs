//! [`RunPlot`]: one run read and turned into charts, ready to be written as a page or
//! as chart files.

use std::io::Write;
use std::path::PathBuf;

use crate::PlotError;
use crate::charts::{self, PageCharts};
use crate::config::{ChartFiles, Format, PlotConfig};
use record::{RunTables, SampleTables, SourceSummary};

use crate::gather::{self, RunData, RunGather};
use crate::html;
use crate::live_script::LiveState;
use crate::model::{Chart, TimeAxis};
use crate::png::PngRenderer;
use crate::svg;

/// PNG pixels per SVG unit.
const PNG_SCALE: f32 = 2.0;

/// A run's charts and summary; see the crate documentation.
pub struct RunPlot {
    config: PlotConfig,
    data: RunData,
    page: PageCharts,
}

impl RunPlot {
    /// Reads `paths` (none or `-` is stdin) in one pass. Fails when an input cannot be
    /// read at all or when there is no record to draw; a torn input is drawn up to its
    /// cut (see [`RunPlot::torn_warnings`]).
    pub fn read(paths: &[String], config: &PlotConfig) -> Result<RunPlot, PlotError> {
        let data = gather::read_run(paths, config)?;
        Ok(RunPlot::from_data(config, data))
    }

    /// The plot of what `gathered` holds, with the inputs' tables and summaries as they
    /// stand (`inputs` names them in the error when nothing was gathered): the page
    /// [`RunPlot::read`] draws when given the same records in the same order.
    pub fn from_gather(
        gathered: RunGather,
        config: &PlotConfig,
        inputs: &str,
        tables: RunTables,
        summaries: Vec<SourceSummary>,
        sample_tables: SampleTables,
    ) -> Result<RunPlot, PlotError> {
        let data = gathered.finish(inputs, tables, summaries, sample_tables)?;
        Ok(RunPlot::from_data(config, data))
    }

    fn from_data(config: &PlotConfig, data: RunData) -> RunPlot {
        let page = charts::build(&data, config.threshold);
        RunPlot {
            config: config.clone(),
            data,
            page,
        }
    }

    /// Requests read.
    pub fn requests(&self) -> u64 {
        self.data.report.requests
    }

    /// The run's summary as the page shows it: `report::Measure`'s, closed and judged
    /// once, so `loadlab report` of the same inputs prints the same figures.
    pub fn report(&self) -> &report::Report {
        &self.data.report
    }

    /// One line per input that stopped at a cut or damaged block.
    pub fn torn_warnings(&self) -> Vec<String> {
        report::torn_warnings(&self.data.summaries)
    }

    /// One line per shard of a sharded run that is missing, ended early, or started
    /// further from the others than the latency p50 ([`report::shard_warnings`]).
    pub fn shard_warnings(&self) -> Vec<String> {
        report::shard_warnings(
            &self.data.summaries,
            Some(self.data.report.latencies.p50_ns),
        )
    }

    /// The charts, in page order.
    pub fn charts(&self) -> &[Chart] {
        &self.page.charts
    }

    /// The time axis every time chart shares.
    pub fn time_axis(&self) -> TimeAxis {
        self.page.axis
    }

    /// One chart as a standalone SVG document.
    pub fn chart_svg(&self, chart: &Chart) -> String {
        svg::render(chart, &self.page.axis, self.config.title.as_deref())
    }

    /// The self-contained HTML page.
    pub fn html(&self) -> String {
        html::page(&self.config, &self.data, &self.page, None)
    }

    /// The page as the live dashboard serves it: the same page, whose content policy
    /// also lets it fetch from where it came, with a script that polls for a newer
    /// version and redraws in place ([`crate::LivePage`]).
    pub(crate) fn live_html(&self, state: &LiveState) -> String {
        html::page(&self.config, &self.data, &self.page, Some(state))
    }

    /// Writes the page to `out`.
    pub fn write_html(&self, out: &mut dyn Write) -> Result<(), PlotError> {
        out.write_all(self.html().as_bytes())
            .and_then(|()| out.flush())
            .map_err(PlotError::Write)
    }

    /// Writes one file per chart (`format` is SVG or PNG) and returns their paths.
    pub fn write_chart_files(
        &self,
        files: &ChartFiles,
        format: Format,
    ) -> Result<Vec<PathBuf>, PlotError> {
        let renderer = match format {
            Format::Html => {
                return Err(PlotError::Flag {
                    flag: "-format",
                    reason: "html is one page, not chart files".to_owned(),
                });
            }
            Format::Svg => None,
            Format::Png => Some(png_renderer()?),
        };
        std::fs::create_dir_all(files.dir()).map_err(|source| PlotError::File {
            path: files.dir().display().to_string(),
            source,
        })?;
        let mut written = Vec::new();
        for chart in self.charts() {
            let svg = self.chart_svg(chart);
            let bytes = match &renderer {
                Some(renderer) => renderer.render(&svg, chart.id)?,
                None => svg.into_bytes(),
            };
            let path = files.path(chart.id, format);
            std::fs::write(&path, bytes).map_err(|source| PlotError::File {
                path: path.display().to_string(),
                source,
            })?;
            written.push(path);
        }
        Ok(written)
    }
}

fn png_renderer() -> Result<PngRenderer, PlotError> {
    let renderer = PngRenderer::new(PNG_SCALE);
    if renderer.has_fonts() {
        Ok(renderer)
    } else {
        Err(PlotError::Png {
            chart: "(all)".to_owned(),
            reason: "no fonts found on this system, so the charts would have no text; install \
                     one (Debian: fonts-dejavu-core) or use -format svg"
                .to_owned(),
        })
    }
}
