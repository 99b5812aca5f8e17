//! [`PlotConfig`]: what to draw; [`Format`]: as what; [`ChartFiles`]: where the
//! per-chart SVG or PNG files go.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::PlotError;

/// vegeta's default: series with more points than this are downsampled.
pub const DEFAULT_THRESHOLD: usize = 4000;
/// The page title when none is given (vegeta's is "Vegeta Plot").
pub const DEFAULT_TITLE: &str = "loadlab plot";
/// The width of the per-interval rows.
pub const DEFAULT_EVERY_NS: u64 = 1_000_000_000;

/// What `plot` draws.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotConfig {
    /// The page title; `None` for [`DEFAULT_TITLE`] (and no title on chart files).
    pub title: Option<String>,
    /// Points per series above which it is downsampled.
    pub threshold: usize,
    /// Width of the per-interval rows (rates, status codes, percentiles).
    pub every_ns: u64,
    /// What the generator must achieve (send lag bound, share of the asked rate): the
    /// report's defaults, or a plan's `[slo]` for a step's page, so the page's tiles,
    /// warnings and diagnosis say what its verdict says.
    pub health: analysis::GeneratorHealth,
    /// The least success ratio of a load that was served: a plan's `[slo] success`, or
    /// `None` for the report's 99%.
    pub min_success_ratio: Option<f64>,
    /// A plan step's measured window (`[start, end)` of intended send time from the
    /// run's start, warm-up left out): the page draws and judges it alone, as the
    /// step's verdict and `report.txt` do; `None` for the whole file.
    pub window_ns: Option<(u64, u64)>,
    /// `-trace-link`: the traced requests on the page link to their traces.
    pub trace_link: Option<report::TraceLink>,
    /// `-trace-store`: where the slow requests' time went, read back once the records
    /// are drawn (not on the live dashboard, whose exemplars come at the run's end).
    pub trace_store: Option<report::TraceStoreHandle>,
}

impl PlotConfig {
    /// Checks the flags: a threshold of at least 2 and an interval of at least 1 ms.
    pub fn new(
        title: Option<String>,
        threshold: usize,
        every_ns: u64,
    ) -> Result<PlotConfig, PlotError> {
        if threshold < 2 {
            return Err(PlotError::Flag {
                flag: "-threshold",
                reason: format!("{threshold} is too few points to draw; want 2 or more"),
            });
        }
        if every_ns < 1_000_000 {
            return Err(PlotError::Flag {
                flag: "-every",
                reason: "want 1ms or more".to_owned(),
            });
        }
        Ok(PlotConfig {
            title: title.filter(|t| !t.trim().is_empty()),
            threshold,
            every_ns,
            health: analysis::GeneratorHealth::default(),
            min_success_ratio: None,
            window_ns: None,
            trace_link: None,
            trace_store: None,
        })
    }

    /// `-title`, or the default title.
    pub fn page_title(&self) -> &str {
        self.title.as_deref().unwrap_or(DEFAULT_TITLE)
    }
}

impl Default for PlotConfig {
    fn default() -> Self {
        PlotConfig {
            title: None,
            threshold: DEFAULT_THRESHOLD,
            every_ns: DEFAULT_EVERY_NS,
            health: analysis::GeneratorHealth::default(),
            min_success_ratio: None,
            window_ns: None,
            trace_link: None,
            trace_store: None,
        }
    }
}

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained page.
    Html,
    /// One SVG file per chart.
    Svg,
    /// One PNG file per chart (the SVG, rasterised).
    Png,
}

impl Format {
    /// The file extension of a chart in this format (`svg`, `png`).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Svg => "svg",
            Format::Png => "png",
        }
    }
}

impl FromStr for Format {
    type Err = PlotError;

    fn from_str(text: &str) -> Result<Format, PlotError> {
        match text {
            "html" => Ok(Format::Html),
            "svg" => Ok(Format::Svg),
            "png" => Ok(Format::Png),
            other => Err(PlotError::Flag {
                flag: "-format",
                reason: format!("unknown format {other:?}: want html, svg or png"),
            }),
        }
    }
}

/// Where chart files go: `DIR/latency.svg` for a directory (one that exists, or a
/// path ending in `/`), `PREFIX-latency.svg` for anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFiles {
    dir: PathBuf,
    prefix: Option<String>,
}

impl ChartFiles {
    /// Chart files for `-output`: in it when it is a directory, else beside it, named after it.
    pub fn new(output: &str) -> ChartFiles {
        let path = Path::new(output);
        if output.ends_with('/') || path.is_dir() {
            return ChartFiles {
                dir: path.to_owned(),
                prefix: None,
            };
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        let prefix = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        ChartFiles { dir, prefix }
    }

    /// The directory the files go in (made if missing).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of chart `id` in `format`.
    pub fn path(&self, id: &str, format: Format) -> PathBuf {
        let name = match &self.prefix {
            Some(prefix) => format!("{prefix}-{id}.{}", format.extension()),
            None => format!("{id}.{}", format.extension()),
        };
        self.dir.join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked() {
        assert!(PlotConfig::new(None, 4000, DEFAULT_EVERY_NS).is_ok());
        let err = PlotConfig::new(None, 1, DEFAULT_EVERY_NS).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-threshold: 1 is too few points to draw; want 2 or more"
        );
        let err = PlotConfig::new(None, 10, 10).unwrap_err();
        assert_eq!(err.to_string(), "-every: want 1ms or more");
        let config = PlotConfig::new(Some("  ".to_owned()), 10, DEFAULT_EVERY_NS).unwrap();
        assert_eq!(config.page_title(), DEFAULT_TITLE);
        let err = "jpeg".parse::<Format>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "-format: unknown format \"jpeg\": want html, svg or png"
        );
    }

    #[test]
    fn chart_files_are_a_directory_or_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().display().to_string();
        let rows: Vec<(String, PathBuf)> = vec![
            (existing, dir.path().join("latency.svg")),
            ("charts/".to_owned(), PathBuf::from("charts/latency.svg")),
            ("run".to_owned(), PathBuf::from("./run-latency.svg")),
            ("out/run".to_owned(), PathBuf::from("out/run-latency.svg")),
        ];
        for (output, want) in rows {
            assert_eq!(ChartFiles::new(&output).path("latency", Format::Svg), want);
        }
    }
}
