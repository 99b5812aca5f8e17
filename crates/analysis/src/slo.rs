//! The verdict of one step: its own window's figures against the plan's SLO, always
//! with the generator's own health first, so that a generator that fell behind is never
//! taken for a saturated server (DESIGN.md section 9).

use crate::AnalysisError;

/// A latency statistic an SLO can bound: the one set of names stop rules use too.
pub use workload::LatencyStat as Percentile;

/// Reads a statistic's name (`p50`, `p90`, `p95`, `p99`, `p99.9`, `max`, `mean`; any case).
pub fn parse_percentile(text: &str) -> Result<Percentile, AnalysisError> {
    Percentile::from_name(text).ok_or_else(|| AnalysisError::UnknownPercentile(text.to_owned()))
}

/// What the generator itself must achieve for a step to say anything about the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeneratorHealth {
    /// Requests sent over requests asked, at least (0.99).
    pub min_achieved_ratio: f64,
    /// Send lag p99 at most, in nanoseconds (1 ms, the report's own warning threshold).
    pub max_lag_p99_ns: u64,
}

impl Default for GeneratorHealth {
    fn default() -> Self {
        GeneratorHealth {
            min_achieved_ratio: 0.99,
            max_lag_p99_ns: 1_000_000,
        }
    }
}

/// A step's service-level objective. Empty bounds are not checked; the generator's
/// health always is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slo {
    /// Share of requests that succeeded, at least (0..1).
    pub min_success_ratio: Option<f64>,
    /// Latency bounds, in nanoseconds: each statistic at most its value.
    pub max_latency_ns: Vec<(Percentile, u64)>,
    /// Errors of a kind (as the report names them, e.g. `timeout`, `503`) as a share of
    /// requests, at most.
    pub max_error_ratio_by_kind: Vec<(String, f64)>,
    /// The generator's own health.
    pub generator: GeneratorHealth,
}

/// The figures of one step's measured window (warm-up excluded).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSummary {
    /// Requests per second the step asked for (0 in a closed model: no rate to fall short of).
    pub asked_per_sec: f64,
    /// Requests per second actually sent.
    pub sent_per_sec: f64,
    /// Requests in the window.
    pub requests: u64,
    /// Share that succeeded (0..1).
    pub success_ratio: f64,
    /// Latency statistics, in nanoseconds.
    pub latency_ns: Vec<(Percentile, u64)>,
    /// Failed requests by kind, as counts.
    pub errors_by_kind: Vec<(String, u64)>,
    /// The generator's send lag p99, in nanoseconds.
    pub lag_p99_ns: u64,
}

/// The verdict of a step, with every reason.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every bound held and the generator delivered the load.
    Pass,
    /// The generator delivered the load and a bound did not hold.
    Fail(Vec<String>),
    /// The generator did not deliver the load (or nothing was measured): the step says
    /// nothing about the server. The server's misses, if any, follow the generator's.
    Inconclusive(Vec<String>),
}

impl Verdict {
    /// `pass`, `fail` or `inconclusive`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::Inconclusive(_) => "inconclusive",
        }
    }

    /// The reasons, joined for a log line.
    pub fn why(&self) -> String {
        match self {
            Verdict::Pass => "every bound held".to_owned(),
            Verdict::Fail(reasons) | Verdict::Inconclusive(reasons) => reasons.join("; "),
        }
    }
}

/// Judges one step against an SLO.
pub fn judge(step: &StepSummary, slo: &Slo) -> Verdict {
    if step.requests == 0 {
        return Verdict::Inconclusive(vec!["no requests were measured".to_owned()]);
    }
    let generator = generator_misses(step, &slo.generator);
    let server = server_misses(step, slo);
    match (generator.is_empty(), server.is_empty()) {
        (true, true) => Verdict::Pass,
        (true, false) => Verdict::Fail(server),
        (false, _) => Verdict::Inconclusive(generator.into_iter().chain(server).collect()),
    }
}

fn generator_misses(step: &StepSummary, health: &GeneratorHealth) -> Vec<String> {
    let mut misses = Vec::new();
    if step.asked_per_sec > 0.0
        && step.sent_per_sec < step.asked_per_sec * health.min_achieved_ratio
    {
        misses.push(format!(
            "generator sent {:.1}/s of {:.1}/s asked ({:.2}%, needs {:.0}%)",
            step.sent_per_sec,
            step.asked_per_sec,
            step.sent_per_sec / step.asked_per_sec * 100.0,
            health.min_achieved_ratio * 100.0
        ));
    }
    if step.lag_p99_ns > health.max_lag_p99_ns {
        misses.push(format!(
            "generator send lag p99 {} over {}",
            millis(step.lag_p99_ns),
            millis(health.max_lag_p99_ns)
        ));
    }
    misses
}

fn server_misses(step: &StepSummary, slo: &Slo) -> Vec<String> {
    let mut misses = Vec::new();
    if let Some(min) = slo.min_success_ratio
        && step.success_ratio < min
    {
        misses.push(format!(
            "success {:.2}% under {:.2}%",
            step.success_ratio * 100.0,
            min * 100.0
        ));
    }
    for &(percentile, max_ns) in &slo.max_latency_ns {
        match step.latency_ns.iter().find(|(p, _)| *p == percentile) {
            Some(&(_, value_ns)) if value_ns > max_ns => {
                misses.push(format!(
                    "{percentile} {} over {}",
                    millis(value_ns),
                    millis(max_ns)
                ));
            }
            Some(_) => {}
            None => misses.push(format!("{percentile} was not measured")),
        }
    }
    for (kind, max_ratio) in &slo.max_error_ratio_by_kind {
        let count = step
            .errors_by_kind
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, n)| n)
            .sum::<u64>();
        let ratio = count as f64 / step.requests.max(1) as f64;
        if ratio > *max_ratio {
            misses.push(format!(
                "{kind} errors {:.2}% over {:.2}%",
                ratio * 100.0,
                max_ratio * 100.0
            ));
        }
    }
    misses
}

fn millis(ns: u64) -> String {
    format!("{:.3}ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy_step() -> StepSummary {
        StepSummary {
            asked_per_sec: 1000.0,
            sent_per_sec: 999.5,
            requests: 10_000,
            success_ratio: 0.999,
            latency_ns: vec![(Percentile::P50, 2_000_000), (Percentile::P99, 40_000_000)],
            errors_by_kind: vec![("timeout".to_owned(), 5), ("503".to_owned(), 5)],
            lag_p99_ns: 50_000,
        }
    }

    fn slo() -> Slo {
        Slo {
            min_success_ratio: Some(0.99),
            max_latency_ns: vec![(Percentile::P99, 50_000_000)],
            max_error_ratio_by_kind: vec![("timeout".to_owned(), 0.001)],
            generator: GeneratorHealth::default(),
        }
    }

    #[test]
    fn verdicts() {
        type Change = fn(&mut StepSummary);
        let rows: [(&str, Change, &str, &str); 8] = [
            ("healthy", |_| {}, "pass", "every bound held"),
            (
                "slow",
                |s| s.latency_ns[1].1 = 80_000_000,
                "fail",
                "p99 80.000ms over 50.000ms",
            ),
            (
                "failing",
                |s| s.success_ratio = 0.9,
                "fail",
                "success 90.00% under 99.00%",
            ),
            (
                "timeouts",
                |s| s.errors_by_kind[0].1 = 100,
                "fail",
                "timeout errors 1.00% over 0.10%",
            ),
            (
                "generator behind",
                |s| s.sent_per_sec = 900.0,
                "inconclusive",
                "generator sent 900.0/s of 1000.0/s asked (90.00%, needs 99%)",
            ),
            (
                "generator behind and server slow",
                |s| {
                    s.lag_p99_ns = 5_000_000;
                    s.latency_ns[1].1 = 80_000_000;
                },
                "inconclusive",
                "generator send lag p99 5.000ms over 1.000ms; p99 80.000ms over 50.000ms",
            ),
            (
                "nothing measured",
                |s| s.requests = 0,
                "inconclusive",
                "no requests were measured",
            ),
            (
                "closed model has no asked rate",
                |s| s.asked_per_sec = 0.0,
                "pass",
                "every bound held",
            ),
        ];
        for (name, change, word, why) in rows {
            let mut step = healthy_step();
            change(&mut step);
            let verdict = judge(&step, &slo());
            assert_eq!(
                (verdict.word(), verdict.why().as_str()),
                (word, why),
                "{name}"
            );
        }
    }

    #[test]
    fn a_bound_on_a_statistic_that_was_not_measured_fails_loudly() {
        let mut slo = slo();
        slo.max_latency_ns.push((Percentile::P999, 1));
        assert_eq!(judge(&healthy_step(), &slo).why(), "p99.9 was not measured");
    }

    #[test]
    fn percentile_names() {
        for (text, want) in [
            ("p50", Ok(Percentile::P50)),
            ("P99", Ok(Percentile::P99)),
            ("p99.9", Ok(Percentile::P999)),
            (" max ", Ok(Percentile::Max)),
            ("mean", Ok(Percentile::Mean)),
            (
                "p98",
                Err(AnalysisError::UnknownPercentile("p98".to_owned())),
            ),
            ("", Err(AnalysisError::UnknownPercentile(String::new()))),
        ] {
            assert_eq!(parse_percentile(text), want, "{text:?}");
        }
        for p in [Percentile::P50, Percentile::P999, Percentile::Max] {
            assert_eq!(parse_percentile(&p.to_string()), Ok(p));
        }
    }
}
