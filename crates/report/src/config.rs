//! [`ReportConfig`]: what `loadlab report` prints, validated from vegeta's flag spellings.

use crate::ReportError;
use crate::grouping::GroupBy;
use crate::hist::Buckets;

/// The layout of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportType {
    /// vegeta's aligned text, then our extra rows and warnings.
    Text,
    /// vegeta's JSON metrics (with `buckets` when given), our extras under `loadlab`.
    Json {
        /// Latency histogram buckets to add, if any.
        buckets: Option<Buckets>,
    },
    /// vegeta's latency histogram table.
    Hist(Buckets),
    /// vegeta's HDR percentile plot table.
    HdrPlot,
}

impl ReportType {
    /// Parses vegeta's `-type` and `-buckets` flags: `text`, `json`, `hdrplot`,
    /// `hist[0,1ms,5ms]`, or `hist` with `-buckets "[0,1ms,5ms]"` (which wins, as in
    /// vegeta).
    pub fn parse(kind: &str, buckets: Option<&str>) -> Result<ReportType, ReportError> {
        let buckets = buckets.filter(|b| !b.is_empty());
        match kind {
            "text" => Ok(ReportType::Text),
            "json" => Ok(ReportType::Json {
                buckets: buckets.map(Buckets::parse).transpose()?,
            }),
            "hdrplot" => Ok(ReportType::HdrPlot),
            _ if kind.starts_with("hist") => {
                let spec = buckets.unwrap_or(&kind[4..]);
                if spec.is_empty() {
                    return Err(ReportError::Buckets {
                        input: spec.to_owned(),
                        reason: "hist needs buckets: -type 'hist[0,1ms,5ms]' or \
                                 -buckets '[0,1ms,5ms]'"
                            .to_owned(),
                    });
                }
                Ok(ReportType::Hist(Buckets::parse(spec)?))
            }
            _ => Err(ReportError::UnknownType(kind.to_owned())),
        }
    }
}

/// Everything `run_report` needs besides the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportConfig {
    /// The layout: text, json, hist or hdrplot.
    pub report_type: ReportType,
    /// Per-interval rows every this many nanoseconds, binned by send time.
    pub every_ns: Option<u64>,
    /// One report per group.
    pub by: Option<GroupBy>,
    /// What the generator must achieve for the run to say anything about the server
    /// (send lag bound, share of the asked rate): the defaults, or a plan's `[slo]`
    /// when `loadlab run` reports a step, so its report and verdict agree.
    pub health: analysis::GeneratorHealth,
    /// The least success ratio of a load that was served: a plan's `[slo] success`, or
    /// `None` for the report's 99%.
    pub min_success_ratio: Option<f64>,
    /// Only the records whose *intended* send falls in `[start, end)` nanoseconds from
    /// the run's time zero: a plan step's measured window (warm-up excluded), so its
    /// `report.txt` and diagnosis read the figures its verdict reads. `None`: all.
    pub window_ns: Option<(u64, u64)>,
    /// Where a traced request's trace is shown (`-trace-link`).
    pub trace_link: Option<crate::TraceLink>,
    /// Where traced requests' traces are read back from (`-trace-store`).
    pub trace_store: Option<crate::TraceStoreHandle>,
}

impl ReportConfig {
    /// Checks the combination of flags.
    pub fn new(
        report_type: ReportType,
        every_ns: Option<u64>,
        by: Option<GroupBy>,
    ) -> Result<ReportConfig, ReportError> {
        let every_ns = every_ns.filter(|&ns| ns > 0);
        if every_ns.is_some() && !matches!(report_type, ReportType::Text | ReportType::Json { .. })
        {
            return Err(ReportError::Flag {
                flag: "-every",
                reason: "per-interval rows come with -type text or json".to_owned(),
            });
        }
        Ok(ReportConfig {
            report_type,
            every_ns,
            by,
            health: analysis::GeneratorHealth::default(),
            min_success_ratio: None,
            window_ns: None,
            trace_link: None,
            trace_store: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vegeta_type_flags() {
        let ms = 1_000_000;
        let rows: &[(&str, Option<&str>, Result<ReportType, &str>)] = &[
            ("text", None, Ok(ReportType::Text)),
            ("json", None, Ok(ReportType::Json { buckets: None })),
            (
                "json",
                Some("[0,1ms]"),
                Ok(ReportType::Json {
                    buckets: Some(Buckets::new(vec![0, ms])),
                }),
            ),
            ("hdrplot", None, Ok(ReportType::HdrPlot)),
            (
                "hist[0,1ms,5ms]",
                None,
                Ok(ReportType::Hist(Buckets::new(vec![0, ms, 5 * ms]))),
            ),
            // -buckets wins over the type's suffix, as in vegeta.
            (
                "hist[0,9ms]",
                Some("[0,1ms]"),
                Ok(ReportType::Hist(Buckets::new(vec![0, ms]))),
            ),
            (
                "hist",
                Some("[0,1ms]"),
                Ok(ReportType::Hist(Buckets::new(vec![0, ms]))),
            ),
            ("hist", None, Err("hist needs buckets")),
            ("hist[0,1x]", None, Err("bad buckets")),
            ("plot", None, Err("unknown report type \"plot\"")),
            ("", None, Err("unknown report type")),
        ];
        for (kind, buckets, want) in rows {
            match (ReportType::parse(kind, *buckets), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{kind}"),
                (Err(err), Err(want)) => {
                    assert!(err.to_string().contains(want), "{kind}: {err}");
                }
                (got, want) => panic!("{kind}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn every_needs_text_or_json() {
        let hist = ReportType::Hist(Buckets::new(vec![0]));
        let rows: &[(ReportType, Option<u64>, bool)] = &[
            (ReportType::Text, Some(1), true),
            (ReportType::Json { buckets: None }, Some(1), true),
            (ReportType::HdrPlot, Some(1), false),
            (hist.clone(), Some(1), false),
            (hist, None, true),
            // `-every 0` means off, as in vegeta.
            (ReportType::HdrPlot, Some(0), true),
        ];
        for (kind, every, ok) in rows {
            let got = ReportConfig::new(kind.clone(), *every, None);
            assert_eq!(got.is_ok(), *ok, "{kind:?} {every:?}: {got:?}");
        }
    }
}
