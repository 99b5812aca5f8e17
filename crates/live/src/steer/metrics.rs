//! [`merge_expositions`]: one Prometheus text for a steered run from its shards' own
//! (`/metrics` on each shard's feed, the series `attack -prometheus-addr` serves), so
//! a dashboard built for one process reads the whole run unchanged. Counters,
//! histograms and most gauges add up over shards (requests, in flight, the schedule's
//! rate: each shard has its share); the run's clock gauges take the latest, and
//! `loadlab_run_finished` is 1 only once every shard is. The stream connections'
//! series (`loadlab_stream_*`) are dropped: the coordinator words them from its merged
//! figures.

use std::collections::HashMap;

/// Gauges that are the same run's clock on every shard: the largest is the run's.
const LATEST: [&str; 4] = [
    "loadlab_run_start_time_seconds",
    "loadlab_run_elapsed_seconds",
    "loadlab_stop_rule_held_seconds",
    "loadlab_stop_rule_needed_seconds",
];
/// Gauges true of the run only when true of every shard.
const ALL: [&str; 1] = ["loadlab_run_finished"];
/// Families the coordinator words itself from its merged figures, so the shards' are
/// dropped: the stream connections' (a latency quantile does not add up).
const WORDED_BY_THE_COORDINATOR: &str = "loadlab_stream_";

/// One family: its `# HELP`/`# TYPE` lines and its series in first-seen order.
#[derive(Default)]
struct Family {
    comments: Vec<String>,
    series: Vec<(String, f64)>,
    index: HashMap<String, usize>,
}

/// The shards' texts merged series by series (same name, same labels), families in
/// the order they first appear; lines that are not series are dropped.
pub fn merge_expositions(texts: &[String]) -> String {
    let mut families: Vec<(String, Family)> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for text in texts {
        let mut current: Option<usize> = None;
        for line in text.lines() {
            if let Some(comment) = line.strip_prefix("# ") {
                let mut words = comment.splitn(3, ' ');
                let (Some(kind @ ("HELP" | "TYPE")), Some(name)) = (words.next(), words.next())
                else {
                    continue;
                };
                let at = *by_name.entry(name.to_owned()).or_insert_with(|| {
                    families.push((name.to_owned(), Family::default()));
                    families.len() - 1
                });
                let family = &mut families[at].1;
                if !family
                    .comments
                    .iter()
                    .any(|c| c.starts_with(&format!("# {kind} ")))
                {
                    family.comments.push(line.to_owned());
                }
                current = Some(at);
                continue;
            }
            let (Some(at), Some((key, value))) = (current, line.rsplit_once(' ')) else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (family_name, family) = &mut families[at];
            if belongs_to(key, family_name) && !family_name.starts_with(WORDED_BY_THE_COORDINATOR) {
                family.add(key, value);
            }
        }
    }
    let mut out = String::with_capacity(texts.first().map_or(0, String::len));
    let kept = (families.iter()).filter(|(name, _)| !name.starts_with(WORDED_BY_THE_COORDINATOR));
    for (_, family) in kept {
        for comment in &family.comments {
            out.push_str(comment);
            out.push('\n');
        }
        for (key, value) in &family.series {
            out.push_str(&format!("{key} {value}\n"));
        }
    }
    out
}

/// A series of `family`: its name, or its name with a histogram's suffix.
fn belongs_to(key: &str, family: &str) -> bool {
    let name = key.split('{').next().unwrap_or(key);
    name.strip_prefix(family)
        .is_some_and(|suffix| ["", "_bucket", "_sum", "_count"].contains(&suffix))
}

impl Family {
    fn add(&mut self, key: &str, value: f64) {
        let name = key.split('{').next().unwrap_or(key);
        match self.index.get(key) {
            Some(&at) => {
                let total = &mut self.series[at].1;
                *total = if LATEST.contains(&name) {
                    total.max(value)
                } else if ALL.contains(&name) {
                    total.min(value)
                } else {
                    *total + value
                };
            }
            None => {
                self.index.insert(key.to_owned(), self.series.len());
                self.series.push((key.to_owned(), value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(requests: u64, bucket: u64, elapsed: f64, finished: u8) -> String {
        format!(
            "# HELP loadlab_requests_sent_total Requests sent\n\
             # TYPE loadlab_requests_sent_total counter\n\
             loadlab_requests_sent_total {requests}\n\
             # HELP request_seconds Request latency\n\
             # TYPE request_seconds histogram\n\
             request_seconds_bucket{{method=\"GET\",le=\"0.005\"}} {bucket}\n\
             request_seconds_count{{method=\"GET\"}} {requests}\n\
             # HELP loadlab_run_elapsed_seconds Time since time zero\n\
             # TYPE loadlab_run_elapsed_seconds gauge\n\
             loadlab_run_elapsed_seconds {elapsed}\n\
             # HELP loadlab_run_finished 1 once the run is over\n\
             # TYPE loadlab_run_finished gauge\n\
             loadlab_run_finished {finished}\n"
        )
    }

    #[test]
    fn shards_add_up_and_the_clock_is_the_latest() {
        let merged = merge_expositions(&[shard(100, 90, 12.5, 1), shard(50, 40, 12.7, 0)]);
        let want = "# HELP loadlab_requests_sent_total Requests sent\n\
                    # TYPE loadlab_requests_sent_total counter\n\
                    loadlab_requests_sent_total 150\n\
                    # HELP request_seconds Request latency\n\
                    # TYPE request_seconds histogram\n\
                    request_seconds_bucket{method=\"GET\",le=\"0.005\"} 130\n\
                    request_seconds_count{method=\"GET\"} 150\n\
                    # HELP loadlab_run_elapsed_seconds Time since time zero\n\
                    # TYPE loadlab_run_elapsed_seconds gauge\n\
                    loadlab_run_elapsed_seconds 12.7\n\
                    # HELP loadlab_run_finished 1 once the run is over\n\
                    # TYPE loadlab_run_finished gauge\n\
                    loadlab_run_finished 0\n";
        assert_eq!(merged, want);
    }

    #[test]
    fn series_one_shard_lacks_are_kept_and_junk_is_dropped() {
        let other = "orphan_before_any_family 3\n\
                     # TYPE request_seconds histogram\n\
                     request_seconds_bucket{method=\"POST\",le=\"0.005\"} 7\n\
                     not a series line\n\
                     stray_in_another_family 3\n";
        let merged = merge_expositions(&[other.to_owned(), shard(1, 1, 1.0, 1)]);
        assert!(merged.contains("request_seconds_bucket{method=\"POST\",le=\"0.005\"} 7\n"));
        assert!(merged.contains("request_seconds_bucket{method=\"GET\",le=\"0.005\"} 1\n"));
        for junk in ["not a series", "orphan", "stray"] {
            assert!(!merged.contains(junk), "{junk}: {merged}");
        }
        assert_eq!(
            merged.matches("# TYPE request_seconds histogram").count(),
            1
        );
        assert!(merged.contains("# HELP request_seconds Request latency"));
    }

    #[test]
    fn the_shards_stream_series_are_left_to_the_coordinator() {
        let shard = |open: u32| {
            format!(
                "# HELP loadlab_stream_connections_open Stream connections open\n\
                 # TYPE loadlab_stream_connections_open gauge\n\
                 loadlab_stream_connections_open {open}\n\
                 # TYPE loadlab_stream_message_latency_seconds gauge\n\
                 loadlab_stream_message_latency_seconds{{quantile=\"0.99\"}} 0.5\n\
                 # TYPE loadlab_requests_sent_total counter\n\
                 loadlab_requests_sent_total {open}\n"
            )
        };
        let merged = merge_expositions(&[shard(4), shard(5)]);
        assert_eq!(
            merged,
            "# TYPE loadlab_requests_sent_total counter\nloadlab_requests_sent_total 9\n"
        );
    }
}
