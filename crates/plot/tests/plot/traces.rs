//! The traced requests on the page (`attack -trace`): dots on the latency chart, each
//! linked to its trace with `-trace-link`, the panel listing them, and where the slow
//! requests' time went with `-trace-store` (a store of the test's own).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analysis::{Fetched, Span};
use plot::RunPlot;
use record::{Exemplar, ExemplarKind, Record, TraceInfo};
use report::{TraceLink, TraceStore, TraceStoreHandle};

use crate::fixture::{self, MS, S};
use crate::golden::{chart, check_golden};

const LINK: &str = "http://jaeger.test/trace/{trace_id}?a=1&b=2";

/// 10 s at 20/s answering in about 5 ms; from 5 s on every fourth request takes
/// 400 ms or more, and two time out.
fn traced_records() -> Vec<Record> {
    let mut rng = fixture::Rng::new(40);
    let mut records: Vec<Record> = (0..200u64)
        .map(|seq| {
            let offset = seq * S / 20;
            let slow = offset >= 5 * S && seq % 4 == 0;
            let latency = if slow { 400 * MS } else { 4 * MS } + rng.below(2 * MS);
            let mut record = fixture::ok(0, seq, offset, latency);
            if seq == 150 || seq == 170 {
                (record.status, record.error, record.latency_ns) = (0, 2, 30 * S);
            }
            record
        })
        .collect();
    records.sort_by_key(Record::sent_unix_ns);
    records
}

/// What the collector keeps (docs/TRACES.md): the 2 slowest successes of each second,
/// the median of each second's first 5, each error's first 3.
fn exemplars_of(records: &[Record]) -> Vec<Exemplar> {
    let exemplar = |kind, r: &Record| Exemplar {
        kind,
        attack: r.attack,
        target: r.target,
        seq: r.seq,
        trace_id: format!("{:032x}", r.seq + 1),
        span_id: format!("{:016x}", r.seq + 1),
        intended_unix_ns: r.intended_unix_ns,
        latency_ns: r.latency_ns,
        status: r.status,
        error: r.error,
    };
    let mut kept = Vec::new();
    let mut by_second: HashMap<u64, Vec<&Record>> = HashMap::new();
    for record in records.iter().filter(|r| r.error == 0) {
        let second = (record.intended_unix_ns - fixture::START_NS) / S;
        by_second.entry(second).or_default().push(record);
    }
    let mut seconds: Vec<_> = by_second.into_iter().collect();
    seconds.sort_by_key(|(second, _)| *second);
    for (_, mut requests) in seconds {
        let mut first: Vec<&Record> = requests.iter().take(5).copied().collect();
        first.sort_by_key(|r| r.latency_ns);
        kept.push(exemplar(ExemplarKind::Typical, first[first.len() / 2]));
        requests.sort_by_key(|r| std::cmp::Reverse(r.latency_ns));
        kept.extend(
            requests
                .iter()
                .take(2)
                .map(|r| exemplar(ExemplarKind::Slow, r)),
        );
    }
    let failed = records.iter().filter(|r| r.error != 0).take(3);
    kept.extend(failed.map(|r| exemplar(ExemplarKind::Failed, r)));
    kept
}

/// The traced run as a record file in `dir`.
fn traced_run(dir: &Path) -> PathBuf {
    let records = traced_records();
    let path = dir.join("traced.llr");
    let mut header = fixture::header(vec![fixture::attack("orders", 20.0)]);
    header.trace = Some(TraceInfo { sample: 1.0 });
    let mut end = fixture::end(&[200], 10 * S);
    end.exemplars = exemplars_of(&records);
    fixture::write_run(&path, &header, &records, Some(&end));
    path
}

fn plot_with(path: &Path, link: Option<&str>, store: Option<TraceStoreHandle>) -> RunPlot {
    let mut config = crate::golden::config(plot::DEFAULT_THRESHOLD);
    config.trace_link = link.map(|link| TraceLink::parse(link).unwrap());
    config.trace_store = store;
    RunPlot::read(&[path.display().to_string()], &config).unwrap()
}

/// The traced run's page with `-trace-link`, for the browser test.
pub fn traced_plot(dir: &Path) -> RunPlot {
    plot_with(&traced_run(dir), Some(LINK), None)
}

#[test]
fn the_slowest_traced_requests_link_from_the_latency_chart() {
    let dir = tempfile::tempdir().unwrap();
    let path = traced_run(dir.path());
    let run = plot_with(&path, Some(LINK), None);
    let latency = chart(&run, "latency");
    let traced = latency.series.iter().find(|s| s.name == "traced").unwrap();
    // The 10 slowest (400 ms and more, the 2 slowest of each second from 5 s on) and
    // each error's first (30 s).
    assert_eq!(traced.x.len(), 11, "{traced:?}");
    assert_eq!(traced.links.len(), 11);
    assert!(traced.y[..10].iter().all(|&y| y >= 400e6), "{:?}", traced.y);
    assert!(traced.x[..10].iter().all(|&x| x >= 5.0), "{:?}", traced.x);
    assert_eq!((traced.x[10], traced.y[10]), (7.5, 30e9));
    let trace_id = format!("{:032x}", 151);
    assert_eq!(
        traced.links[10],
        format!("http://jaeger.test/trace/{trace_id}?a=1&b=2")
    );
    let svg = run.chart_svg(latency);
    check_golden("traced-latency.svg", &svg);
    assert_eq!(svg.matches("<a class=\"trace\" href=").count(), 11);
    assert!(
        svg.contains(&format!(
            "href=\"http://jaeger.test/trace/{trace_id}?a=1&amp;b=2\""
        )),
        "the link is escaped in its attribute"
    );
    let page = run.html();
    assert!(page.contains("<section class=\"traces\""), "the panel");
    assert!(page.contains("(-trace, 100% sampled)"));
    assert!(page.contains(&format!(
        "<a href=\"http://jaeger.test/trace/{trace_id}?a=1&amp;b=2\" target=\"_blank\" \
         rel=\"noopener noreferrer\">{trace_id}</a>"
    )));
    assert!(page.contains("timeout after 30s"), "the failure's error");
    // The script's data carries the links, so a zoomed chart draws them again.
    assert!(page.contains("\"k\":[\"http://jaeger.test/trace/"));
}

#[test]
fn without_a_link_the_dots_are_named_and_without_trace_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let run = plot_with(&traced_run(dir.path()), None, None);
    let latency = chart(&run, "latency");
    let traced = latency.series.iter().find(|s| s.name == "traced").unwrap();
    assert!(traced.links.is_empty());
    assert!(latency.caption.contains("named by trace id on hover"));
    assert!(latency.labels.contains(&format!("trace {:032x}", 151)));
    assert!(!run.chart_svg(latency).contains("<a class=\"trace\""));
    assert!(!run.html().contains("\"k\":["));

    // A run recorded without -trace: no dots, no panel, unless a link was asked for.
    let untraced = fixture::single_attack_run(dir.path(), "plain.llr", &traced_records());
    let run = plot_with(&untraced, None, None);
    assert!(
        chart(&run, "latency")
            .series
            .iter()
            .all(|s| s.name != "traced")
    );
    assert!(!run.html().contains("class=\"traces\""));
    let asked = plot_with(&untraced, Some(LINK), None).html();
    assert!(
        asked.contains("not judged: no input was recorded with attack -trace"),
        "a link asked of an untraced run says why nothing is linked"
    );
}

/// Answers from the exemplars' latencies: a trace of a request slower than 100 ms
/// spends it in `UPDATE`; ids in `missing` are not in the store; `down` fails.
struct Store {
    latency_us: HashMap<String, u64>,
    down: bool,
}

impl TraceStore for Store {
    fn name(&self) -> &str {
        "http://store.test/"
    }

    fn fetch(&self, trace_ids: &[String]) -> Result<Fetched, String> {
        if self.down {
            return Err("connection refused".to_owned());
        }
        Ok(trace_ids
            .iter()
            .map(|id| self.latency_us.get(id).map(|&us| spans(us)))
            .collect())
    }
}

fn spans(latency_us: u64) -> Vec<Span> {
    let update_us = if latency_us > 100_000 {
        latency_us - 3_000
    } else {
        1_000
    };
    let span = |id: &str, parent: &str, operation: &str, duration_us| Span {
        span_id: id.to_owned(),
        parent_id: Some(parent.to_owned()),
        service: "orders".to_owned(),
        operation: operation.to_owned(),
        start_us: 0,
        duration_us,
    };
    vec![
        span("server", "loadlab", "GET /orders", update_us + 2_000),
        span("update", "server", "UPDATE", update_us),
    ]
}

#[test]
fn with_a_trace_store_the_panel_says_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let path = traced_run(dir.path());
    let latency_us: HashMap<String, u64> = exemplars_of(&traced_records())
        .into_iter()
        .map(|e| (e.trace_id, e.latency_ns / 1000))
        .collect();
    // (store down, what the panel's headline says)
    let rows = [
        (
            false,
            "Where the time went (-trace-store): the slowest traced requests spent 99% of their \
             time in orders UPDATE",
        ),
        (
            true,
            "Where the time went (-trace-store): not judged: the trace store http://store.test/ \
             could not be read: connection refused",
        ),
    ];
    for (down, want) in rows {
        let store = Store {
            latency_us: latency_us.clone(),
            down,
        };
        let run = plot_with(&path, Some(LINK), Some(TraceStoreHandle(Arc::new(store))));
        let page = run.html();
        assert!(page.contains(want), "{want}");
        // The table of operations only when judged.
        assert_eq!(page.contains("<table class=\"spans\">"), !down);
        assert!(page.contains("<section class=\"traces\""));
    }
}
