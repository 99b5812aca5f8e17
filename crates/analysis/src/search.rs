//! The capacity search as a state machine (as Nighthawk's adaptive load controller does):
//! grow the rate exponentially until a probe fails, bisect between the highest pass and
//! the lowest fail until they are within the precision, then confirm the rate found with
//! one more probe. The caller runs each probe (warm-up, measurement, cool-down) and
//! records its verdict; [`Search::next`] says what to do next. Pure: no clock, no I/O, so
//! it is tested against capacities it was not tuned on.

use crate::AnalysisError;

/// How a search proceeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchConfig {
    /// The first probe's rate, requests per second.
    pub start_per_sec: f64,
    /// Each probe before the first failure asks this many times the last (2.0).
    pub growth: f64,
    /// Stop bisecting when the lowest fail is within this share above the highest pass (0.02).
    pub precision: f64,
    /// At most this many probes, the confirmation included (30).
    pub max_probes: usize,
    /// Never probe below this rate; a failure here ends the search (1/s).
    pub min_per_sec: f64,
    /// Never probe above this rate; a pass here ends the search (10M/s).
    pub max_per_sec: f64,
    /// Probe whole numbers only (user counts): growth rounds up, bisection to the
    /// nearest, and two neighbours (a pass at N, a fail at N + 1) are the precision.
    pub whole: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            start_per_sec: 100.0,
            growth: 2.0,
            precision: 0.02,
            max_probes: 30,
            min_per_sec: 1.0,
            max_per_sec: 10_000_000.0,
            whole: false,
        }
    }
}

impl SearchConfig {
    /// Checks every setting is in range, naming the first that is not.
    pub fn validate(&self) -> Result<(), AnalysisError> {
        let checks: [(&'static str, f64, &'static str, bool); 5] = [
            (
                "start",
                self.start_per_sec,
                "a rate above 0",
                self.start_per_sec > 0.0,
            ),
            ("growth", self.growth, "above 1", self.growth > 1.0),
            (
                "precision",
                self.precision,
                "between 0 and 1 (exclusive)",
                self.precision > 0.0 && self.precision < 1.0,
            ),
            (
                "max_probes",
                self.max_probes as f64,
                "at least 2",
                self.max_probes >= 2,
            ),
            (
                "max",
                self.max_per_sec,
                "above min and at least start",
                self.max_per_sec > self.min_per_sec && self.max_per_sec >= self.start_per_sec,
            ),
        ];
        match checks
            .into_iter()
            .find(|check| !check.3 || check.1.is_nan())
        {
            Some((field, got, want, _)) => Err(AnalysisError::BadSearch { field, want, got }),
            None => Ok(()),
        }
    }
}

/// A probe's verdict, as [`crate::judge`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The SLO held.
    Pass,
    /// The SLO did not hold.
    Fail,
    /// The generator could not deliver the rate: nothing is known about the server there.
    Inconclusive,
}

/// One probe that ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// The rate asked, requests per second.
    pub rate_per_sec: f64,
    /// Its verdict.
    pub outcome: Outcome,
    /// Whether it was the confirmation of a found rate.
    pub confirmation: bool,
}

/// What the caller does next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Run a probe at this rate.
    Probe(f64),
    /// Run the confirmation probe at this rate (the capacity found).
    Confirm(f64),
    /// Done: the highest rate that met the SLO, confirmed, within the precision.
    Found {
        /// Requests per second.
        capacity_per_sec: f64,
    },
    /// Done: even the minimum rate failed.
    BelowMinimum {
        /// The lowest rate probed, requests per second.
        failed_per_sec: f64,
    },
    /// Done: the maximum rate passed; the capacity is higher.
    AboveMaximum {
        /// Requests per second.
        held_per_sec: f64,
    },
    /// Done: the generator could not deliver a probe, so the search cannot go higher.
    GeneratorLimited {
        /// The highest rate that passed, if any.
        held_per_sec: Option<f64>,
        /// The rate the generator could not deliver.
        inconclusive_per_sec: f64,
    },
    /// Done: the probe budget ran out before the precision was reached.
    BudgetSpent {
        /// The highest rate that passed, if any.
        held_per_sec: Option<f64>,
        /// The lowest rate that failed, if any.
        failed_per_sec: Option<f64>,
    },
}

impl Next {
    /// Whether the search is over.
    pub fn is_done(&self) -> bool {
        !matches!(self, Next::Probe(_) | Next::Confirm(_))
    }
}

/// A capacity search in progress.
#[derive(Clone, Debug)]
pub struct Search {
    config: SearchConfig,
    probes: Vec<Probe>,
}

impl Search {
    /// A new search, its settings checked.
    pub fn new(config: SearchConfig) -> Result<Search, AnalysisError> {
        config.validate()?;
        Ok(Search {
            config,
            probes: Vec::new(),
        })
    }

    /// The probes run so far, in order.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// Records the verdict of the probe [`Search::next`] asked for.
    pub fn record(&mut self, rate_per_sec: f64, outcome: Outcome) {
        let confirmation = matches!(self.next(), Next::Confirm(rate) if rate == rate_per_sec);
        self.probes.push(Probe {
            rate_per_sec,
            outcome,
            confirmation,
        });
    }

    /// What to do next.
    pub fn next(&self) -> Next {
        let (pass, fail) = self.bounds();
        if let Some(done) = self.finished(pass, fail) {
            return done;
        }
        let config = &self.config;
        let whole =
            |rate: f64, round: fn(f64) -> f64| if config.whole { round(rate) } else { rate };
        match (pass, fail) {
            (None, None) => Next::Probe(whole(config.start_per_sec, f64::round)),
            (Some(pass), None) => {
                Next::Probe(whole(pass * config.growth, f64::ceil).min(config.max_per_sec))
            }
            (None, Some(fail)) => {
                Next::Probe(whole(fail / config.growth, f64::floor).max(config.min_per_sec))
            }
            (Some(pass), Some(fail))
                if (fail - pass) / pass <= config.precision
                    || (config.whole && fail - pass <= 1.0) =>
            {
                Next::Confirm(pass)
            }
            (Some(pass), Some(fail)) => Next::Probe(whole((pass + fail) / 2.0, f64::round)),
        }
    }

    /// The search's end, if it has come.
    fn finished(&self, pass: Option<f64>, fail: Option<f64>) -> Option<Next> {
        let last = self.probes.last()?;
        if last.outcome == Outcome::Inconclusive {
            return Some(Next::GeneratorLimited {
                held_per_sec: pass,
                inconclusive_per_sec: last.rate_per_sec,
            });
        }
        if last.confirmation && last.outcome == Outcome::Pass {
            return Some(Next::Found {
                capacity_per_sec: last.rate_per_sec,
            });
        }
        if last.outcome == Outcome::Fail
            && last.rate_per_sec <= self.config.min_per_sec
            && pass.is_none()
        {
            return Some(Next::BelowMinimum {
                failed_per_sec: last.rate_per_sec,
            });
        }
        if last.outcome == Outcome::Pass && last.rate_per_sec >= self.config.max_per_sec {
            return Some(Next::AboveMaximum {
                held_per_sec: last.rate_per_sec,
            });
        }
        (self.probes.len() >= self.config.max_probes).then_some(Next::BudgetSpent {
            held_per_sec: pass,
            failed_per_sec: fail,
        })
    }

    /// The highest pass below the lowest fail, and the lowest fail. A failed confirmation
    /// makes its rate a fail, so passes at or above it no longer count.
    fn bounds(&self) -> (Option<f64>, Option<f64>) {
        let fail = self
            .probes
            .iter()
            .filter(|p| p.outcome == Outcome::Fail)
            .map(|p| p.rate_per_sec)
            .reduce(f64::min);
        let pass = self
            .probes
            .iter()
            .filter(|p| p.outcome == Outcome::Pass && fail.is_none_or(|fail| p.rate_per_sec < fail))
            .map(|p| p.rate_per_sec)
            .reduce(f64::max);
        (pass, fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a server that passes or fails each rate
    /// as `verdict` says, returning the end and the probes run.
    fn run(config: SearchConfig, verdict: impl Fn(f64) -> Outcome) -> (Next, Vec<Probe>) {
        let mut search = Search::new(config).expect("valid config");
        for _ in 0..1000 {
            match search.next() {
                Next::Probe(rate) | Next::Confirm(rate) => search.record(rate, verdict(rate)),
                done => return (done, search.probes().to_vec()),
            }
        }
        panic!("the search did not end");
    }

    type ServerVerdict = Box<dyn Fn(f64) -> Outcome>;

    fn below(capacity: f64) -> impl Fn(f64) -> Outcome {
        move |rate| {
            if rate <= capacity {
                Outcome::Pass
            } else {
                Outcome::Fail
            }
        }
    }

    #[test]
    fn finds_capacities_it_was_not_tuned_on_within_the_precision() {
        for capacity in [437.0, 1000.0, 2_718.0, 9_973.0, 31_400.0] {
            let (next, probes) = run(SearchConfig::default(), below(capacity));
            let Next::Found { capacity_per_sec } = next else {
                panic!("{capacity}: {next:?}")
            };
            assert!(
                capacity_per_sec <= capacity,
                "{capacity}: found {capacity_per_sec}, above it"
            );
            assert!(
                capacity_per_sec >= capacity * (1.0 - 0.02),
                "{capacity}: found {capacity_per_sec}, more than 2% below"
            );
            assert!(probes.len() <= 20, "{capacity}: {} probes", probes.len());
            assert!(
                probes.last().is_some_and(|p| p.confirmation),
                "{capacity}: no confirmation"
            );
        }
    }

    #[test]
    fn a_whole_search_finds_user_counts_exactly() {
        // Users: a server holding 437, 1000 or 7 connections, from 10 users, doubling;
        // precision 2% would stop short of the exact count, whole numbers do not.
        for (start, capacity) in [(10.0, 437.0), (10.0, 1000.0), (10.0, 7.0), (1.0, 1.0)] {
            let config = SearchConfig {
                start_per_sec: start,
                precision: 0.001,
                whole: true,
                ..SearchConfig::default()
            };
            let (next, probes) = run(config, below(capacity));
            assert_eq!(
                next,
                Next::Found {
                    capacity_per_sec: capacity
                },
                "{capacity}"
            );
            assert!(
                probes.iter().all(|p| p.rate_per_sec.fract() == 0.0),
                "{capacity}: {probes:?}"
            );
            assert!(probes.len() <= 20, "{capacity}: {} probes", probes.len());
        }
        let growth = SearchConfig {
            start_per_sec: 1.0,
            growth: 1.2,
            whole: true,
            ..SearchConfig::default()
        };
        let (_, probes) = run(growth, below(3.0));
        let users: Vec<f64> = probes.iter().map(|p| p.rate_per_sec).collect();
        assert_eq!(users[..4], [1.0, 2.0, 3.0, 4.0], "growth rounds up");
    }

    #[test]
    fn grows_exponentially_then_bisects() {
        let (_, probes) = run(SearchConfig::default(), below(1000.0));
        let rates: Vec<f64> = probes.iter().map(|p| p.rate_per_sec).collect();
        assert_eq!(rates[..6], [100.0, 200.0, 400.0, 800.0, 1600.0, 1200.0]);
    }

    #[test]
    fn a_failed_confirmation_resumes_the_bisection_below_it() {
        // A noisy server: the first confirmation fails although the probe before it passed.
        let mut search = Search::new(SearchConfig::default()).expect("valid");
        let mut confirmations = 0;
        let next = loop {
            match search.next() {
                Next::Confirm(rate) => {
                    confirmations += 1;
                    let outcome = if confirmations == 1 {
                        Outcome::Fail
                    } else {
                        below(1000.0)(rate)
                    };
                    search.record(rate, outcome);
                }
                Next::Probe(rate) => search.record(rate, below(1000.0)(rate)),
                done => break done,
            }
        };
        // The first confirmation was at 1000/s; the search goes on below it.
        let Next::Found { capacity_per_sec } = next else {
            panic!("{next:?}")
        };
        assert!(
            (980.0..1000.0).contains(&capacity_per_sec),
            "{capacity_per_sec}"
        );
        assert_eq!(confirmations, 2);
        let failed: Vec<f64> = search
            .probes()
            .iter()
            .filter(|p| p.confirmation && p.outcome == Outcome::Fail)
            .map(|p| p.rate_per_sec)
            .collect();
        assert_eq!(failed, [1000.0]);
    }

    #[test]
    fn ends() {
        let small = SearchConfig {
            max_probes: 4,
            ..SearchConfig::default()
        };
        let capped = SearchConfig {
            max_per_sec: 1000.0,
            ..SearchConfig::default()
        };
        let rows: [(&str, SearchConfig, ServerVerdict, Next); 4] = [
            (
                "nothing passes",
                SearchConfig::default(),
                Box::new(|_| Outcome::Fail),
                Next::BelowMinimum {
                    failed_per_sec: 1.0,
                },
            ),
            (
                "everything passes",
                capped,
                Box::new(|_| Outcome::Pass),
                Next::AboveMaximum {
                    held_per_sec: 1000.0,
                },
            ),
            (
                "budget",
                small,
                Box::new(below(1000.0)),
                Next::BudgetSpent {
                    held_per_sec: Some(800.0),
                    failed_per_sec: None,
                },
            ),
            (
                "generator",
                SearchConfig::default(),
                Box::new(|rate| {
                    if rate > 500.0 {
                        Outcome::Inconclusive
                    } else {
                        Outcome::Pass
                    }
                }),
                Next::GeneratorLimited {
                    held_per_sec: Some(400.0),
                    inconclusive_per_sec: 800.0,
                },
            ),
        ];
        for (name, config, verdict, want) in rows {
            assert_eq!(run(config, verdict).0, want, "{name}");
        }
    }

    #[test]
    fn bad_settings_name_the_field() {
        let rows = [
            (
                "start",
                SearchConfig {
                    start_per_sec: 0.0,
                    ..SearchConfig::default()
                },
            ),
            (
                "growth",
                SearchConfig {
                    growth: 1.0,
                    ..SearchConfig::default()
                },
            ),
            (
                "precision",
                SearchConfig {
                    precision: 0.0,
                    ..SearchConfig::default()
                },
            ),
            (
                "precision",
                SearchConfig {
                    precision: f64::NAN,
                    ..SearchConfig::default()
                },
            ),
            (
                "max_probes",
                SearchConfig {
                    max_probes: 1,
                    ..SearchConfig::default()
                },
            ),
            (
                "max",
                SearchConfig {
                    max_per_sec: 50.0,
                    ..SearchConfig::default()
                },
            ),
        ];
        for (field, config) in rows {
            let err = Search::new(config).expect_err(field);
            assert!(
                matches!(err, AnalysisError::BadSearch { field: f, .. } if f == field),
                "{field}: {err}"
            );
        }
        assert!(Search::new(SearchConfig::default()).is_ok());
    }
}
