//! Latency distributions, drawn once per request.
//!
//! origin_simulator's forms: a fixed duration (`"100ms"`, `0`) and a uniform range
//! (`"100ms..200ms"`). Our extension is an object naming the distribution:
//! `{"dist": "normal", "p50": "100ms", "p99": "150ms"}`,
//! `{"dist": "lognormal", "p50": "80ms", "p99": "400ms", "max": "2s"}`,
//! `{"dist": "uniform", "min": "0", "max": "600ms"}`, `{"dist": "fixed", "value": "1s"}`.
//! Percentile parameters are what people read off dashboards, so we take those rather
//! than mean and sigma.

use std::time::Duration;

use rand::Rng;
use serde_json::Value;

use crate::duration_size::{MAX_DURATION_NS, duration_from_json, format_duration, parse_duration};

/// The standard normal's 99th percentile: p99 = p50 + Z99 * sigma.
const Z99: f64 = 2.326_347_874;

/// How long a request waits before it is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Latency {
    Fixed {
        ns: u64,
    },
    Uniform {
        min_ns: u64,
        max_ns: u64,
    },
    /// Normal around `p50`; draws below zero are served at once, above `max_ns` at `max_ns`.
    Normal {
        p50_ns: u64,
        p99_ns: u64,
        max_ns: u64,
    },
    /// Log-normal with the given median and 99th percentile, capped at `max_ns`.
    LogNormal {
        p50_ns: u64,
        p99_ns: u64,
        max_ns: u64,
    },
}

impl Latency {
    pub const ZERO: Latency = Latency::Fixed { ns: 0 };

    /// Reads the JSON forms listed in the module doc.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Self::parse_text(text),
            Value::Object(_) => Self::from_object(value),
            other => duration_from_json(other).map(|d| Latency::Fixed { ns: nanos(d) }),
        }
    }

    fn parse_text(text: &str) -> Result<Self, String> {
        let Some((low, high)) = text.split_once("..") else {
            return parse_duration(text).map(|d| Latency::Fixed { ns: nanos(d) });
        };
        let (min_ns, max_ns) = (nanos(parse_duration(low)?), nanos(parse_duration(high)?));
        if min_ns > max_ns {
            return Err(format!(
                "bad range {text:?}: the low end is above the high end"
            ));
        }
        Ok(Latency::Uniform { min_ns, max_ns })
    }

    fn from_object(value: &Value) -> Result<Self, String> {
        let get = |key: &str| -> Result<Option<u64>, String> {
            value
                .get(key)
                .map(|v| {
                    duration_from_json(v)
                        .map(nanos)
                        .map_err(|e| format!("{key}: {e}"))
                })
                .transpose()
        };
        let need = |key: &str| -> Result<u64, String> {
            get(key)?.ok_or_else(|| format!("{key}: missing"))
        };
        let dist = value.get("dist").and_then(Value::as_str).ok_or_else(|| {
            "dist: missing; one of \"fixed\", \"uniform\", \"normal\", \"lognormal\"".to_owned()
        })?;
        let allowed: &[&str] = match dist {
            "fixed" => &["dist", "value"],
            "uniform" => &["dist", "min", "max"],
            "normal" | "lognormal" => &["dist", "p50", "p99", "max"],
            other => {
                return Err(format!(
                    "dist: unknown distribution {other:?}; one of \"fixed\", \"uniform\", \"normal\", \"lognormal\""
                ));
            }
        };
        reject_unknown_keys(value, allowed)?;
        match dist {
            "fixed" => Ok(Latency::Fixed { ns: need("value")? }),
            "uniform" => {
                let (min_ns, max_ns) = (need("min")?, need("max")?);
                if min_ns > max_ns {
                    return Err("min: above max".to_owned());
                }
                Ok(Latency::Uniform { min_ns, max_ns })
            }
            _ => Self::from_percentiles(dist, need("p50")?, need("p99")?, get("max")?),
        }
    }

    fn from_percentiles(
        dist: &str,
        p50_ns: u64,
        p99_ns: u64,
        max: Option<u64>,
    ) -> Result<Self, String> {
        if p99_ns < p50_ns {
            return Err("p99: below p50".to_owned());
        }
        let max_ns = max.unwrap_or(MAX_DURATION_NS);
        if max_ns < p99_ns {
            return Err("max: below p99".to_owned());
        }
        if dist == "normal" {
            return Ok(Latency::Normal {
                p50_ns,
                p99_ns,
                max_ns,
            });
        }
        if p50_ns == 0 {
            return Err("p50: a log-normal needs p50 above 0".to_owned());
        }
        Ok(Latency::LogNormal {
            p50_ns,
            p99_ns,
            max_ns,
        })
    }

    /// Draws one latency. Cheap: at most two uniform draws and a few float operations.
    pub fn sample_ns(&self, rng: &mut impl Rng) -> u64 {
        match *self {
            Latency::Fixed { ns } => ns,
            Latency::Uniform { min_ns, max_ns } => rng.random_range(min_ns..=max_ns),
            Latency::Normal {
                p50_ns,
                p99_ns,
                max_ns,
            } => {
                let sigma = (p99_ns - p50_ns) as f64 / Z99;
                let draw = p50_ns as f64 + sigma * standard_normal(rng);
                draw.clamp(0.0, max_ns as f64) as u64
            }
            Latency::LogNormal {
                p50_ns,
                p99_ns,
                max_ns,
            } => {
                let sigma = lognormal_sigma(p50_ns, p99_ns);
                let draw = (p50_ns as f64).ln() + sigma * standard_normal(rng);
                draw.exp().min(max_ns as f64) as u64
            }
        }
    }

    /// The mean, for the ground-truth capacity figure. A normal is taken as symmetric
    /// (the clamps at 0 and `max` are ignored), as is the log-normal's cap.
    pub(crate) fn mean_ns(&self) -> f64 {
        match *self {
            Latency::Fixed { ns } => ns as f64,
            Latency::Uniform { min_ns, max_ns } => (min_ns as f64 + max_ns as f64) / 2.0,
            Latency::Normal { p50_ns, .. } => p50_ns as f64,
            Latency::LogNormal { p50_ns, p99_ns, .. } => {
                let sigma = lognormal_sigma(p50_ns, p99_ns);
                p50_ns as f64 * (sigma * sigma / 2.0).exp()
            }
        }
    }

    /// The distribution in recipe syntax, for `routes_status`.
    pub fn describe(&self) -> String {
        let d = |ns: u64| format_duration(Duration::from_nanos(ns));
        match *self {
            Latency::Fixed { ns } => d(ns),
            Latency::Uniform { min_ns, max_ns } => format!("{}..{}", d(min_ns), d(max_ns)),
            Latency::Normal { p50_ns, p99_ns, .. } => {
                format!("normal(p50={},p99={})", d(p50_ns), d(p99_ns))
            }
            Latency::LogNormal { p50_ns, p99_ns, .. } => {
                format!("lognormal(p50={},p99={})", d(p50_ns), d(p99_ns))
            }
        }
    }
}

/// Rejects keys outside `allowed`, naming the first stray one.
pub(crate) fn reject_unknown_keys(value: &Value, allowed: &[&str]) -> Result<(), String> {
    let Some(object) = value.as_object() else {
        return Ok(());
    };
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "{key}: unknown field (expected one of {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

/// The sigma of the log-normal with median `p50_ns` and 99th percentile `p99_ns`.
fn lognormal_sigma(p50_ns: u64, p99_ns: u64) -> f64 {
    (p99_ns as f64 / p50_ns as f64).ln() / Z99
}

fn nanos(duration: Duration) -> u64 {
    duration.as_nanos() as u64
}

/// Box-Muller: one standard normal draw from two uniforms.
fn standard_normal(rng: &mut impl Rng) -> f64 {
    // 1 - u keeps the argument of ln in (0, 1], so ln never sees zero.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;
    use serde_json::json;

    const MS: u64 = 1_000_000;

    #[test]
    fn parses_every_form() {
        let rows: Vec<(Value, Result<Latency, &str>)> = vec![
            (json!(0), Ok(Latency::ZERO)),
            (json!("0"), Ok(Latency::ZERO)),
            (json!("1s"), Ok(Latency::Fixed { ns: 1000 * MS })),
            (
                json!("100ms..200ms"),
                Ok(Latency::Uniform {
                    min_ns: 100 * MS,
                    max_ns: 200 * MS,
                }),
            ),
            (
                json!({"dist": "fixed", "value": "5ms"}),
                Ok(Latency::Fixed { ns: 5 * MS }),
            ),
            (
                json!({"dist": "uniform", "min": 0, "max": "600ms"}),
                Ok(Latency::Uniform {
                    min_ns: 0,
                    max_ns: 600 * MS,
                }),
            ),
            (
                json!({"dist": "normal", "p50": "100ms", "p99": "150ms"}),
                Ok(Latency::Normal {
                    p50_ns: 100 * MS,
                    p99_ns: 150 * MS,
                    max_ns: MAX_DURATION_NS,
                }),
            ),
            (
                json!({"dist": "lognormal", "p50": "80ms", "p99": "400ms", "max": "2s"}),
                Ok(Latency::LogNormal {
                    p50_ns: 80 * MS,
                    p99_ns: 400 * MS,
                    max_ns: 2000 * MS,
                }),
            ),
            (json!(50), Err("needs a unit")),
            (json!("200ms..100ms"), Err("low end is above")),
            (json!("100ms..2"), Err("needs a unit")),
            (json!({"p50": "1ms", "p99": "2ms"}), Err("dist: missing")),
            (
                json!({"dist": "gamma"}),
                Err("unknown distribution \"gamma\""),
            ),
            (
                json!({"dist": "normal", "p50": "10ms"}),
                Err("p99: missing"),
            ),
            (
                json!({"dist": "normal", "p50": "10ms", "p99": "5ms"}),
                Err("p99: below p50"),
            ),
            (
                json!({"dist": "lognormal", "p50": 0, "p99": "5ms"}),
                Err("p50: a log-normal"),
            ),
            (
                json!({"dist": "lognormal", "p50": "1ms", "p99": "5ms", "max": "2ms"}),
                Err("max: below p99"),
            ),
            (
                json!({"dist": "fixed", "value": "1s", "p50": "1s"}),
                Err("p50: unknown field"),
            ),
            (
                json!({"dist": "uniform", "min": "2s", "max": "1s"}),
                Err("min: above max"),
            ),
            (
                json!({"dist": "fixed", "value": "tenms"}),
                Err("value: bad duration"),
            ),
            (json!([1]), Err("bad duration")),
        ];
        for (input, want) in rows {
            match (Latency::from_json(&input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "input {input}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "input {input}: {got}"),
                (got, want) => panic!("input {input}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// Draws many samples and checks the median and 99th percentile land where asked.
    fn percentiles(latency: &Latency) -> (u64, u64) {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut draws: Vec<u64> = (0..200_000).map(|_| latency.sample_ns(&mut rng)).collect();
        draws.sort_unstable();
        (draws[draws.len() / 2], draws[draws.len() * 99 / 100])
    }

    fn assert_near(got: u64, want: u64, tolerance: f64, what: &str) {
        let error = (got as f64 - want as f64).abs() / want as f64;
        assert!(
            error < tolerance,
            "{what}: got {got}, want {want} (error {error:.4})"
        );
    }

    #[test]
    fn normal_and_lognormal_hit_their_percentiles() {
        for dist in ["normal", "lognormal"] {
            let latency =
                Latency::from_json(&json!({"dist": dist, "p50": "100ms", "p99": "300ms"})).unwrap();
            let (p50, p99) = percentiles(&latency);
            assert_near(p50, 100 * MS, 0.02, dist);
            assert_near(p99, 300 * MS, 0.03, dist);
        }
    }

    #[test]
    fn uniform_stays_in_range_and_caps_hold() {
        let uniform = Latency::Uniform {
            min_ns: 10,
            max_ns: 20,
        };
        let mut rng = SmallRng::seed_from_u64(1);
        let draws: Vec<u64> = (0..10_000).map(|_| uniform.sample_ns(&mut rng)).collect();
        assert!(draws.iter().all(|d| (10..=20).contains(d)));
        assert!(draws.contains(&10) && draws.contains(&20));
        let capped = Latency::LogNormal {
            p50_ns: 10 * MS,
            p99_ns: 1000 * MS,
            max_ns: 1000 * MS,
        };
        assert!((0..10_000).all(|_| capped.sample_ns(&mut rng) <= 1000 * MS));
        let wide = Latency::Normal {
            p50_ns: MS,
            p99_ns: 100 * MS,
            max_ns: 200 * MS,
        };
        assert!((0..10_000).all(|_| wide.sample_ns(&mut rng) <= 200 * MS));
    }

    #[test]
    fn describes_in_recipe_syntax() {
        assert_eq!(Latency::Fixed { ns: 100 * MS }.describe(), "100ms");
        assert_eq!(
            Latency::Uniform {
                min_ns: 0,
                max_ns: 600 * MS
            }
            .describe(),
            "0..600ms"
        );
    }
}
