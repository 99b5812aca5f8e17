//! [`PromSampler`]: scrapes one `/metrics` endpoint per tick and turns it into series:
//! counters become per-second rates (a drop is a reset: a gap), gauges and untyped
//! values stay as they are, histograms become quantiles over the interval plus their
//! observation rate and mean, summaries keep their quantiles and get rate and mean.
//!
//! A scrape that fails (refused, slow past its timeout, not 200, not the text format)
//! is one gap for the whole sampler with the reason. Series keep the metric's name and
//! labels; the unit comes from the name's suffix (`_seconds`, `_bytes`, `_total`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use record::{SamplerInfo, SeriesKind};
use regex::Regex;

use crate::histogram::{Buckets, NoQuantile, interval_buckets, quantile};
use crate::http_get::http_get;
use crate::hub::{Reading, SeriesDef};
use crate::prom_parse::{Exposition, MetricType, Sample, parse};
use crate::rates::Rates;
use crate::sampler::{Sampler, Tick};
use crate::spec::{LimitOf, PromLimit, PromSpec};
use record::PROM_LIMIT_SUFFIX;

type LabelSet = BTreeMap<String, String>;

impl PromLimit {
    /// Whether `name` is the hinted gauge or the gauge that is its maximum.
    fn names(&self, name: &str) -> bool {
        self.gauge == name || matches!(&self.limit, LimitOf::Gauge(other) if other == name)
    }
}

/// Compiled filters (anchored).
struct Filters {
    metrics: Vec<Regex>,
    drop: Vec<Regex>,
    labels: Vec<(String, Regex)>,
}

impl Filters {
    fn new(spec: &PromSpec) -> Result<Filters, regex::Error> {
        let anchored = |p: &String| Regex::new(&format!("^(?:{p})$"));
        Ok(Filters {
            metrics: spec
                .filters
                .metrics
                .iter()
                .map(anchored)
                .collect::<Result<_, _>>()?,
            drop: spec
                .filters
                .drop
                .iter()
                .map(anchored)
                .collect::<Result<_, _>>()?,
            labels: spec
                .filters
                .labels
                .iter()
                .map(|(name, p)| Ok((name.clone(), anchored(p)?)))
                .collect::<Result<_, regex::Error>>()?,
        })
    }

    fn keeps_family(&self, family: &str) -> bool {
        (self.metrics.is_empty() || self.metrics.iter().any(|r| r.is_match(family)))
            && !self.drop.iter().any(|r| r.is_match(family))
    }

    fn keeps_labels(&self, labels: &LabelSet) -> bool {
        self.labels
            .iter()
            .all(|(name, regex)| labels.get(name).is_some_and(|v| regex.is_match(v)))
    }
}

/// A histogram's or summary's parts, gathered from one scrape.
#[derive(Default)]
struct Parts {
    buckets: Buckets,
    count: Option<f64>,
    sum: Option<f64>,
}

pub(crate) struct PromSampler {
    info: SamplerInfo,
    url: Result<url::Url, String>,
    filters: Result<Arc<Filters>, String>,
    quantiles: Vec<f64>,
    timeout: Duration,
    /// The user's `max=` hints.
    limits: Vec<PromLimit>,
    counters: Rates<(String, LabelSet)>,
    /// Previous buckets, count and sum of each histogram / summary series.
    previous: HashMap<(String, LabelSet), (Buckets, f64, f64)>,
}

impl PromSampler {
    pub(crate) fn new(info: SamplerInfo, spec: PromSpec, timeout: Duration) -> PromSampler {
        PromSampler {
            info,
            url: url::Url::parse(&spec.url).map_err(|err| err.to_string()),
            filters: Filters::new(&spec)
                .map(Arc::new)
                .map_err(|err| err.to_string()),
            quantiles: spec.quantiles,
            timeout,
            limits: spec.limits,
            counters: Rates::default(),
            previous: HashMap::new(),
        }
    }

    /// Turns one parsed scrape into values and gaps.
    fn read(
        &mut self,
        exposition: &Exposition,
        at: Instant,
        reading: &mut Reading,
    ) -> Result<(), String> {
        let filters = self.filters.clone()?;
        let mut parts: BTreeMap<(String, LabelSet), Parts> = BTreeMap::new();
        let mut gauges: Vec<(&str, LabelSet, f64)> = Vec::new();
        for sample in &exposition.samples {
            let (family, kind, suffix) = family_of(&sample.name, &exposition.types);
            if !filters.keeps_family(family) {
                continue;
            }
            let mut labels: LabelSet = sample.labels.iter().cloned().collect();
            if !filters.keeps_labels(&labels) {
                continue;
            }
            match (kind, suffix) {
                (_, "_created") => {}
                (MetricType::Histogram | MetricType::Summary, "_bucket" | "_count" | "_sum") => {
                    let le = labels.remove("le");
                    let entry = parts.entry((family.to_owned(), labels)).or_default();
                    add_part(entry, suffix, le.as_deref(), sample.value)?;
                }
                (MetricType::Counter, _) => self.counter(sample, labels, at, reading),
                _ => {
                    if self.limits.iter().any(|l| l.names(&sample.name)) {
                        gauges.push((&sample.name, labels.clone(), sample.value));
                    }
                    reading.value(
                        series(
                            &sample.name,
                            labels,
                            unit_of(&sample.name, false),
                            SeriesKind::Gauge,
                        ),
                        sample.value,
                    );
                }
            }
        }
        self.hinted_limits(&gauges, reading);
        // Like counters, forget histograms and summaries this scrape no longer has.
        self.previous.retain(|key, _| parts.contains_key(key));
        for ((family, labels), part) in parts {
            self.distribution(&family, &labels, part, at, reading);
        }
        self.counters.forget_older_than(at);
        Ok(())
    }

    /// Each hinted gauge's maximum, as the gauge `NAME:max` with its labels (a colon
    /// name, as Prometheus recording rules use, so it meets no scraped metric): a
    /// constant, or the other gauge with the same labels, else the one without labels.
    fn hinted_limits(&self, gauges: &[(&str, LabelSet, f64)], reading: &mut Reading) {
        for hint in &self.limits {
            for (_, labels, _) in gauges.iter().filter(|(name, ..)| *name == hint.gauge) {
                let limit = match &hint.limit {
                    LimitOf::Value(value) => Some(*value),
                    LimitOf::Gauge(other) => {
                        let of = |want: &LabelSet| {
                            gauges
                                .iter()
                                .find(|(name, l, _)| name == other && l == want)
                                .map(|(.., value)| *value)
                        };
                        of(labels).or_else(|| of(&LabelSet::new()))
                    }
                };
                if let Some(limit) = limit {
                    let name = format!("{}{PROM_LIMIT_SUFFIX}", hint.gauge);
                    let unit = unit_of(&hint.gauge, false);
                    reading.value(
                        series(&name, labels.clone(), unit, SeriesKind::Gauge),
                        limit,
                    );
                }
            }
        }
    }

    fn counter(&mut self, sample: &Sample, labels: LabelSet, at: Instant, reading: &mut Reading) {
        let def = series(
            &sample.name,
            labels.clone(),
            unit_of(&sample.name, true),
            SeriesKind::Rate,
        );
        let rate = self
            .counters
            .update((sample.name.clone(), labels), sample.value, at);
        reading.rate(def, rate);
    }

    /// Histogram quantiles over the interval, or a gap saying why there are none;
    /// observations per second and their mean for histograms and summaries.
    fn distribution(
        &mut self,
        family: &str,
        labels: &LabelSet,
        mut part: Parts,
        at: Instant,
        reading: &mut Reading,
    ) {
        part.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (count, sum) = (part.count.unwrap_or(0.0), part.sum.unwrap_or(0.0));
        let key = (family.to_owned(), labels.clone());
        let before = self
            .previous
            .insert(key, (part.buckets.clone(), count, sum));
        let unit = unit_of(family, false);
        let quantile_def = |q: f64| {
            series(family, labels.clone(), unit, SeriesKind::Gauge)
                .label("quantile", &q.to_string())
        };
        let count_def = series(
            &format!("{family}_count"),
            labels.clone(),
            "1/s",
            SeriesKind::Rate,
        );
        let mean_def = series(
            &format!("{family}_mean"),
            labels.clone(),
            unit,
            SeriesKind::Gauge,
        );
        if part.count.is_some() {
            let rate = self
                .counters
                .update((format!("{family}_count"), labels.clone()), count, at);
            reading.rate(count_def, rate);
        }
        let Some((old_buckets, old_count, old_sum)) = before else {
            return;
        };
        if part.count.is_some() && part.sum.is_some() && count > old_count {
            reading.value(mean_def, (sum - old_sum) / (count - old_count));
        }
        if !part.buckets.is_empty() {
            let interval = interval_buckets(&old_buckets, &part.buckets);
            self.quantiles(&interval, &quantile_def, reading);
        }
    }

    /// Each configured quantile of the interval's buckets, or a gap saying why not.
    fn quantiles(
        &self,
        interval: &Result<Buckets, NoQuantile>,
        def: &dyn Fn(f64) -> SeriesDef,
        reading: &mut Reading,
    ) {
        for &q in &self.quantiles {
            match interval.clone().and_then(|b| quantile(q, &b)) {
                Ok(value) => reading.value(def(q), value),
                Err(NoQuantile::Empty) => {
                    reading.gap(Some(def(q)), "no observations in the interval");
                }
                Err(NoQuantile::Reset) => reading.gap(Some(def(q)), "histogram reset"),
                Err(NoQuantile::Malformed(why)) => reading.gap(Some(def(q)), why),
            }
        }
    }
}

fn add_part(part: &mut Parts, suffix: &str, le: Option<&str>, value: f64) -> Result<(), String> {
    match suffix {
        "_bucket" => {
            let le = le.ok_or("a histogram bucket without an le label")?;
            let bound = match le.trim() {
                "+Inf" | "Inf" | "inf" => f64::INFINITY,
                text => text.parse::<f64>().map_err(|_| format!("bad le {le:?}"))?,
            };
            part.buckets.push((bound, value));
        }
        "_count" => part.count = Some(value),
        _ => part.sum = Some(value),
    }
    Ok(())
}

/// The family a sample belongs to, its type and the suffix that tells its role.
fn family_of<'a>(
    name: &'a str,
    types: &HashMap<String, MetricType>,
) -> (&'a str, MetricType, &'a str) {
    if let Some(&kind) = types.get(name) {
        return (name, kind, "");
    }
    for suffix in ["_bucket", "_count", "_sum", "_total", "_created"] {
        if let Some(family) = name.strip_suffix(suffix)
            && let Some(&kind) = types.get(family)
        {
            return (family, kind, suffix);
        }
    }
    (name, MetricType::Untyped, "")
}

/// Units from Prometheus naming conventions; counters are per second.
fn unit_of(name: &str, rate: bool) -> &'static str {
    let base = name.strip_suffix("_total").unwrap_or(name);
    let unit = if base.ends_with("_seconds") {
        "seconds"
    } else if base.ends_with("_bytes") {
        "bytes"
    } else if base.ends_with("_ratio") {
        "ratio"
    } else if base.ends_with("_percent") {
        "percent"
    } else {
        ""
    };
    match (rate, unit) {
        (false, unit) => unit,
        (true, "seconds") => "seconds/s",
        (true, "bytes") => "bytes/s",
        (true, _) => "1/s",
    }
}

fn series(name: &str, labels: LabelSet, unit: &str, kind: SeriesKind) -> SeriesDef {
    SeriesDef {
        name: name.to_owned(),
        labels,
        unit: unit.to_owned(),
        kind,
    }
}

impl Sampler for PromSampler {
    fn thread_name(&self) -> String {
        "loadlab-mon-prom".to_owned()
    }

    fn sample(&mut self, tick: &Tick, out: &mut Vec<Reading>) {
        let mut reading = Reading::new(&self.info, tick.at_unix_ns);
        let deadline = tick.now + self.timeout;
        let result = self
            .url
            .clone()
            .and_then(|url| http_get(&url, deadline))
            .and_then(|body| {
                String::from_utf8(body).map_err(|_| "the body is not UTF-8 text".to_owned())
            })
            .and_then(|text| {
                parse(&text).map_err(|err| format!("not the Prometheus text format: {err}"))
            })
            .and_then(|exposition| self.read(&exposition, tick.now, &mut reading));
        if let Err(reason) = result {
            let reason = if reason == "timed out" {
                format!("timed out after {:?}", self.timeout)
            } else {
                reason
            };
            reading.values.clear();
            reading.gaps.clear();
            reading.gap(None, reason);
        }
        out.push(reading);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PromFilters;

    fn sampler(filters: PromFilters) -> PromSampler {
        let spec = PromSpec {
            url: "http://127.0.0.1:1/metrics".to_owned(),
            filters,
            quantiles: vec![0.5, 0.99],
            timeout: None,
            limits: Vec::new(),
        };
        let info = SamplerInfo {
            kind: record::SamplerKind::Prom,
            name: "x".to_owned(),
        };
        PromSampler::new(info, spec, Duration::from_secs(1))
    }

    /// Reads `texts` one scrape a second apart; returns each reading as
    /// "name{labels}=value" and "name{labels}: gap reason" lines, sorted.
    fn scrape(sampler: &mut PromSampler, texts: &[&str]) -> Vec<Vec<String>> {
        let start = Instant::now();
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut reading = Reading::default();
                let at = start + Duration::from_secs(i as u64);
                sampler
                    .read(&parse(text).unwrap(), at, &mut reading)
                    .unwrap();
                let show = |d: &SeriesDef| {
                    let labels: Vec<String> =
                        d.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("{}{{{}}}", d.name, labels.join(","))
                };
                let mut lines: Vec<String> = reading
                    .values
                    .iter()
                    .map(|(d, v)| format!("{}={v}", show(d)))
                    .collect();
                lines.extend(
                    reading
                        .gaps
                        .iter()
                        .map(|(d, r)| format!("{}: {r}", d.as_ref().map_or("*".to_owned(), show))),
                );
                lines.sort();
                lines
            })
            .collect()
    }

    #[test]
    fn hinted_maxima_ride_beside_their_gauges() {
        let mut sampler = sampler(PromFilters::default());
        sampler.limits = vec![
            PromLimit {
                gauge: "queue_length".to_owned(),
                limit: LimitOf::Value(500.0),
            },
            PromLimit {
                gauge: "pool_busy".to_owned(),
                limit: LimitOf::Gauge("pool_configured".to_owned()),
            },
            PromLimit {
                gauge: "absent".to_owned(),
                limit: LimitOf::Value(1.0),
            },
        ];
        let text = "queue_length 450\npool_busy{pool=\"a\"} 5\npool_busy{pool=\"b\"} 2\n\
                    pool_configured{pool=\"b\"} 4\npool_configured 8\n";
        let got = scrape(&mut sampler, &[text]);
        for want in [
            "queue_length:max{}=500",
            "pool_busy:max{pool=a}=8",
            "pool_busy:max{pool=b}=4",
        ] {
            assert!(
                got[0].iter().any(|line| line == want),
                "{want}: {:?}",
                got[0]
            );
        }
        assert!(
            !got[0].iter().any(|line| line.starts_with("absent")),
            "{:?}",
            got[0]
        );
    }

    #[test]
    fn counters_become_rates_and_resets_become_gaps() {
        let texts = [
            "# TYPE req_total counter\nreq_total{code=\"200\"} 100\n# TYPE temp gauge\ntemp 21.5\nuntyped_thing 3\n",
            "# TYPE req_total counter\nreq_total{code=\"200\"} 150\n# TYPE temp gauge\ntemp 22\nuntyped_thing 4\n",
            "# TYPE req_total counter\nreq_total{code=\"200\"} 20\n",
            "# TYPE req_total counter\nreq_total{code=\"200\"} 30\n",
        ];
        let got = scrape(&mut sampler(PromFilters::default()), &texts);
        assert_eq!(got[0], vec!["temp{}=21.5", "untyped_thing{}=3"]);
        assert_eq!(
            got[1],
            vec!["req_total{code=200}=50", "temp{}=22", "untyped_thing{}=4"]
        );
        assert_eq!(
            got[2],
            vec!["req_total{code=200}: counter reset (150 -> 20)"]
        );
        assert_eq!(got[3], vec!["req_total{code=200}=10"]);
    }

    #[test]
    fn histograms_become_interval_quantiles() {
        let histogram = |a: u32, b: u32, inf: u32, sum: f64| {
            format!(
                "# TYPE lat_seconds histogram\nlat_seconds_bucket{{path=\"/a\",le=\"0.1\"}} {a}\n\
                 lat_seconds_bucket{{path=\"/a\",le=\"1\"}} {b}\nlat_seconds_bucket{{path=\"/a\",le=\"+Inf\"}} {inf}\n\
                 lat_seconds_sum{{path=\"/a\"}} {sum}\nlat_seconds_count{{path=\"/a\"}} {inf}\n"
            )
        };
        let texts = [
            histogram(10, 10, 10, 0.5),
            histogram(110, 110, 110, 5.5),
            histogram(110, 110, 110, 5.5),
            histogram(5, 5, 5, 0.1),
        ];
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let got = scrape(&mut sampler(PromFilters::default()), &texts);
        assert!(got[0].is_empty(), "{:?}", got[0]);
        assert_eq!(
            got[1],
            vec![
                "lat_seconds_count{path=/a}=100",
                "lat_seconds_mean{path=/a}=0.05",
                "lat_seconds{path=/a,quantile=0.5}=0.05",
                "lat_seconds{path=/a,quantile=0.99}=0.099"
            ]
        );
        assert_eq!(
            got[2],
            vec![
                "lat_seconds_count{path=/a}=0",
                "lat_seconds{path=/a,quantile=0.5}: no observations in the interval",
                "lat_seconds{path=/a,quantile=0.99}: no observations in the interval"
            ]
        );
        assert_eq!(
            got[3],
            vec![
                "lat_seconds_count{path=/a}: counter reset (110 -> 5)",
                "lat_seconds{path=/a,quantile=0.5}: histogram reset",
                "lat_seconds{path=/a,quantile=0.99}: histogram reset"
            ]
        );
    }

    #[test]
    fn series_that_disappear_are_forgotten() {
        let histogram = |path: &str| {
            format!(
                "# TYPE lat_seconds histogram\nlat_seconds_bucket{{path=\"{path}\",le=\"+Inf\"}} 1\n\
                 lat_seconds_sum{{path=\"{path}\"}} 1\nlat_seconds_count{{path=\"{path}\"}} 1\n\
                 # TYPE req_total counter\nreq_total{{path=\"{path}\"}} 1\n"
            )
        };
        let mut sampler = sampler(PromFilters::default());
        let texts: Vec<String> = ["/a", "/b", "/c"].map(histogram).into();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        scrape(&mut sampler, &texts);
        let previous: Vec<&str> = sampler
            .previous
            .keys()
            .map(|(_, l)| l["path"].as_str())
            .collect();
        assert_eq!(previous, ["/c"]);
        // req_total and lat_seconds_count of /c.
        assert_eq!(sampler.counters.len(), 2);
    }

    #[test]
    fn summaries_keep_their_quantiles() {
        let summary = |q: f64, count: u32, sum: f64| {
            format!(
                "# TYPE rpc_seconds summary\nrpc_seconds{{quantile=\"0.99\"}} {q}\nrpc_seconds_sum {sum}\nrpc_seconds_count {count}\n"
            )
        };
        let texts = [summary(0.2, 10, 1.0), summary(0.3, 30, 3.0)];
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let got = scrape(&mut sampler(PromFilters::default()), &texts);
        assert_eq!(got[0], vec!["rpc_seconds{quantile=0.99}=0.2"]);
        assert_eq!(
            got[1],
            vec![
                "rpc_seconds_count{}=20",
                "rpc_seconds_mean{}=0.1",
                "rpc_seconds{quantile=0.99}=0.3"
            ]
        );
    }

    #[test]
    fn filters_pick_families_and_labels() {
        let text = "# TYPE nginx_up gauge\nnginx_up 1\n# TYPE go_goroutines gauge\ngo_goroutines 9\n\
                    # TYPE http_total counter\nhttp_total{code=\"200\"} 1\nhttp_total{code=\"503\"} 2\nhttp_total{method=\"GET\"} 3\n";
        let rows: Vec<(PromFilters, Vec<&str>)> = vec![
            (
                PromFilters::default(),
                vec!["go_goroutines{}=9", "nginx_up{}=1"],
            ),
            (
                PromFilters {
                    metrics: vec!["nginx_.*".into()],
                    ..PromFilters::default()
                },
                vec!["nginx_up{}=1"],
            ),
            (
                PromFilters {
                    drop: vec!["go_.*".into()],
                    ..PromFilters::default()
                },
                vec!["nginx_up{}=1"],
            ),
            // "nginx" alone is anchored: it does not match nginx_up.
            (
                PromFilters {
                    metrics: vec!["nginx".into()],
                    ..PromFilters::default()
                },
                vec![],
            ),
        ];
        for (filters, want) in rows {
            let got = scrape(&mut sampler(filters.clone()), &[text]);
            assert_eq!(got[0], want, "{filters:?}");
        }
        let mut labelled = sampler(PromFilters {
            labels: vec![("code".into(), "5..".into())],
            ..PromFilters::default()
        });
        let twice = scrape(&mut labelled, &[text, text]);
        assert_eq!(twice[1], vec!["http_total{code=503}=0"]);
    }

    #[test]
    fn units_follow_naming_conventions() {
        let rows: &[(&str, bool, &str)] = &[
            ("process_cpu_seconds_total", true, "seconds/s"),
            ("node_network_receive_bytes_total", true, "bytes/s"),
            ("http_requests_total", true, "1/s"),
            ("process_resident_memory_bytes", false, "bytes"),
            ("request_duration_seconds", false, "seconds"),
            ("cache_hit_ratio", false, "ratio"),
            ("nginx_connections_active", false, ""),
        ];
        for &(name, rate, want) in rows {
            assert_eq!(unit_of(name, rate), want, "{name}");
        }
    }
}
