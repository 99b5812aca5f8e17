//! Resource charts: series to charts, legends, colours, captions and gap bands.

use std::collections::BTreeMap;

use record::{ResourceSeries, SampleTables, SeriesInfo, SeriesKind};

use super::legend::{cut, short_name};
use super::*;
use crate::place::{Place, place};
use crate::sample_gather::{GapSpan, Trace};

fn sampler(kind: &str, name: &str) -> SamplerInfo {
    SamplerInfo {
        kind: kind.into(),
        name: name.to_owned(),
    }
}

fn series(name: &str, labels: &[(&str, &str)], unit: &str) -> SeriesInfo {
    SeriesInfo {
        sampler: 0,
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
        unit: unit.to_owned(),
        kind: SeriesKind::Gauge,
    }
}

/// The series names `docs/MONITOR.md` lists in its table of loadlab's samplers.
fn documented_series() -> Vec<String> {
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/MONITOR.md"
    ));
    let mut names = Vec::new();
    for line in doc.lines() {
        let Some(kind) = ["host", "process", "log", "postgres"]
            .into_iter()
            .find(|kind| line.starts_with(&format!("| {kind} |")))
        else {
            continue;
        };
        let cells: Vec<&str> = line.split('|').collect();
        for name in cells[2].split('`').skip(1).step_by(2) {
            if name.starts_with(&format!("{kind}.")) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// Every series the doc lists is one the code knows, lands on the chart meant for it
/// (or, on purpose, on none) and feeds the report row meant for it: a renamed series
/// cannot slip into "other" or lose its row.
#[test]
fn every_documented_series_reaches_its_chart_and_report_row() {
    let documented = documented_series();
    let known: Vec<&str> = ResourceSeries::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(
        documented, known,
        "docs/MONITOR.md and ResourceSeries disagree"
    );
    // (series, unit, chart id, report row): None where no chart wants it (see
    // `place`), or where the report has no row for it.
    let expected: &[(&str, &str, Option<&str>, Option<&str>)] = &[
        ("host.cpu_percent", "percent", Some("cpu"), Some("cpu")),
        ("host.cpu_iowait_percent", "percent", Some("cpu"), None),
        ("host.cpu_steal_percent", "percent", Some("cpu"), None),
        (
            "host.memory_total_bytes",
            "bytes",
            Some("memory"),
            Some("memory_total"),
        ),
        ("host.memory_available_bytes", "bytes", None, None),
        (
            "host.memory_used_bytes",
            "bytes",
            Some("memory"),
            Some("memory_used"),
        ),
        ("host.swap_used_bytes", "bytes", Some("memory"), None),
        (
            "host.swap_out_bytes_per_sec",
            "bytes/s",
            Some("other-bytes-per-sec"),
            None,
        ),
        (
            "host.net_speed_bytes_per_sec",
            "bytes/s",
            Some("network"),
            None,
        ),
        ("host.tcp_segments_sent_per_sec", "1/s", None, None),
        ("process.memory_limit_bytes", "bytes", Some("memory"), None),
        (
            "postgres.busy_connections",
            "count",
            Some("database-connections"),
            None,
        ),
        (
            "host.net_rx_bytes_per_sec",
            "bytes/s",
            Some("network"),
            None,
        ),
        (
            "host.net_tx_bytes_per_sec",
            "bytes/s",
            Some("network"),
            None,
        ),
        (
            "host.net_rx_packets_per_sec",
            "1/s",
            Some("other-per-sec"),
            None,
        ),
        (
            "host.net_tx_packets_per_sec",
            "1/s",
            Some("other-per-sec"),
            None,
        ),
        (
            "host.tcp_established",
            "count",
            Some("connections"),
            Some("established"),
        ),
        (
            "host.tcp_time_wait",
            "count",
            Some("connections"),
            Some("time_wait"),
        ),
        ("host.tcp_sockets", "count", Some("connections"), None),
        ("host.sockets_used", "count", Some("other-count"), None),
        ("host.tcp_orphans", "count", Some("connections"), None),
        ("host.udp_sockets", "count", Some("other-count"), None),
        ("host.tcp_memory_bytes", "bytes", Some("other-bytes"), None),
        (
            "host.tcp_retransmits_per_sec",
            "1/s",
            Some("tcp-errors"),
            None,
        ),
        (
            "host.tcp_resets_sent_per_sec",
            "1/s",
            Some("tcp-errors"),
            None,
        ),
        (
            "host.tcp_connect_failures_per_sec",
            "1/s",
            Some("tcp-errors"),
            None,
        ),
        (
            "host.tcp_listen_overflows_per_sec",
            "1/s",
            Some("tcp-errors"),
            Some("listen_overflows"),
        ),
        (
            "host.tcp_listen_drops_per_sec",
            "1/s",
            Some("tcp-errors"),
            None,
        ),
        ("host.fds_open", "count", Some("other-count"), Some("fds")),
        (
            "host.fds_max",
            "count",
            Some("other-count"),
            Some("fds_max"),
        ),
        ("host.load1", "count", Some("other-count"), None),
        ("process.cpu_percent", "percent", Some("cpu"), Some("cpu")),
        ("process.rss_bytes", "bytes", Some("memory"), Some("rss")),
        ("process.count", "count", Some("other-count"), None),
        ("process.threads", "count", Some("other-count"), None),
        ("process.fds", "count", Some("connections"), Some("fds")),
        ("process.sockets", "count", Some("connections"), None),
        ("process.fd_limit", "count", None, Some("fd_limit")),
        ("process.cpu_limit_percent", "percent", Some("cpu"), None),
        ("host.ephemeral_ports", "count", Some("connections"), None),
        ("log.lines_per_sec", "1/s", None, None),
        ("log.example", "count", None, None),
        (
            "postgres.max_connections",
            "count",
            Some("database-connections"),
            None,
        ),
        (
            "process.fd_use_percent",
            "percent",
            Some("fd-use"),
            Some("fd_use"),
        ),
        (
            "postgres.connections",
            "count",
            Some("database-connections"),
            Some("connections"),
        ),
        (
            "postgres.transactions_per_sec",
            "1/s",
            Some("database-transactions"),
            Some("tx"),
        ),
        (
            "postgres.rollbacks_per_sec",
            "1/s",
            Some("database-transactions"),
            None,
        ),
    ];
    let labels = [
        ("cpu", "all"),
        ("state", "syn_recv"),
        ("group", "nginx"),
        ("database", "app"),
        ("interface", "eth0"),
    ];
    for name in &documented {
        let kind = name.split('.').next().unwrap();
        let Some(&(_, unit, chart, row)) = expected.iter().find(|(n, ..)| n == name) else {
            panic!("{name}: no chart said for it in this test");
        };
        let one = series(name, &labels, unit);
        let place = place(&sampler(kind, kind), &one);
        assert_eq!(place.map(|p| p.group.id()), chart, "{name}");
        assert_eq!(report_rows(kind, one), row, "{name}");
    }
}

/// The report rows (measures) one value of `series` from a `kind` sampler feeds.
fn report_rows(kind: &str, series: SeriesInfo) -> Option<&'static str> {
    let tables = SampleTables {
        samplers: vec![sampler(kind, kind)],
        series: vec![series],
    };
    let batch = record::SampleBatch {
        at_unix_ns: 1,
        values: vec![record::SampleValue {
            series: 0,
            value: 1.0,
        }],
        gaps: Vec::new(),
    };
    let mut resources = report::Resources::default();
    resources.add(&tables, &[batch]);
    let summary = resources.close(None)?;
    let stats = &summary.samplers.first()?.stats;
    assert!(stats.len() <= 1, "{stats:?}");
    stats.keys().next().copied()
}

#[test]
fn series_go_to_their_charts() {
    let host = sampler("host", "host");
    let nginx = sampler("process", "nginx");
    let pg = sampler("postgres", "postgres://u:REDACTED@127.0.0.1:5432/db");
    let prom = sampler("prom", "http://127.0.0.1:9113/metrics");
    // (sampler, series, labels, unit) -> (chart id, limit, dashed, label), or None.
    type Row<'a> = (
        &'a SamplerInfo,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a str,
        Option<(&'a str, bool, bool, &'a str)>,
    );
    let rows: &[Row<'_>] = &[
        (
            &host,
            "host.cpu_percent",
            &[("cpu", "all")],
            "percent",
            Some(("cpu", false, false, "host")),
        ),
        (
            &host,
            "host.cpu_percent",
            &[("cpu", "3")],
            "percent",
            Some(("cpu-cores", false, false, "core 3")),
        ),
        (
            &host,
            "host.cpu_iowait_percent",
            &[("cpu", "all")],
            "percent",
            Some(("cpu", false, true, "host iowait")),
        ),
        (
            &host,
            "host.memory_used_bytes",
            &[],
            "bytes",
            Some(("memory", false, false, "host used")),
        ),
        (
            &host,
            "host.memory_total_bytes",
            &[],
            "bytes",
            Some(("memory", true, true, "host total")),
        ),
        (&host, "host.memory_available_bytes", &[], "bytes", None),
        (
            &host,
            "host.tcp_sockets",
            &[("state", "close_wait")],
            "count",
            Some(("connections", false, false, "close_wait")),
        ),
        (
            &host,
            "host.tcp_sockets",
            &[("state", "established")],
            "count",
            None,
        ),
        (
            &host,
            "host.tcp_sockets",
            &[("state", "listen")],
            "count",
            None,
        ),
        (
            &host,
            "host.net_tx_bytes_per_sec",
            &[("interface", "eth0")],
            "bytes/s",
            Some(("network", false, true, "eth0 tx")),
        ),
        (
            &host,
            "host.tcp_listen_drops_per_sec",
            &[],
            "1/s",
            Some(("tcp-errors", false, false, "listen drops")),
        ),
        (
            &host,
            "host.load1",
            &[],
            "count",
            Some(("other-count", false, false, "host.load1")),
        ),
        (
            &nginx,
            "process.cpu_percent",
            &[("group", "nginx")],
            "percent",
            Some(("cpu", false, false, "nginx")),
        ),
        (
            &nginx,
            "process.rss_bytes",
            &[],
            "bytes",
            Some(("memory", false, false, "nginx")),
        ),
        (
            &nginx,
            "process.fds",
            &[("group", "nginx")],
            "count",
            Some(("connections", false, true, "nginx fds")),
        ),
        (
            &nginx,
            "process.fd_limit",
            &[("group", "nginx")],
            "count",
            None,
        ),
        (
            &nginx,
            "process.fd_use_percent",
            &[("group", "nginx")],
            "percent",
            Some(("fd-use", false, false, "nginx")),
        ),
        (
            &pg,
            "postgres.transactions_per_sec",
            &[("database", "shop")],
            "1/s",
            Some(("database-transactions", false, false, "shop")),
        ),
        (
            &pg,
            "postgres.rollbacks_per_sec",
            &[("database", "shop")],
            "1/s",
            Some(("database-transactions", false, true, "shop rollbacks")),
        ),
        (
            &pg,
            "postgres.connections",
            &[("database", "shop")],
            "count",
            Some(("database-connections", false, false, "shop")),
        ),
        (
            &prom,
            "http_request_duration_seconds",
            &[("quantile", "0.99")],
            "seconds",
            Some((
                "other-seconds",
                false,
                false,
                "http_request_duration_seconds{quantile=\"0.99\"}",
            )),
        ),
        (
            &prom,
            "nginx_connections_active",
            &[],
            "",
            Some(("other-values", false, false, "nginx_connections_active")),
        ),
        (
            &prom,
            "odd_unit",
            &[],
            "furlongs",
            Some(("other-values", false, false, "odd_unit")),
        ),
    ];
    for (sampler, name, labels, unit, want) in rows {
        let got = place(sampler, &series(name, labels, unit))
            .map(|p| (p.group.id(), p.limit, p.style == Style::Dashed, p.label));
        let want = want.map(|(id, limit, dashed, label)| (id, limit, dashed, label.to_owned()));
        assert_eq!(got, want, "{name} {labels:?}");
    }
}

#[test]
fn sampler_names_are_shortened() {
    let rows = [
        ("http://127.0.0.1:9113/metrics", "127.0.0.1:9113"),
        (
            "http://127.0.0.1:9113/custom/path",
            "127.0.0.1:9113/custom/path",
        ),
        ("postgres://loadlab:REDACTED@db:5432/shop", "db:5432/shop"),
        ("postgres://db:5432", "db:5432"),
        ("nginx@203.0.113.5:7070", "nginx@203.0.113.5:7070"),
        ("host", "host"),
    ];
    for (name, want) in rows {
        assert_eq!(short_name(&sampler("prom", name)), want, "{name}");
    }
    assert_eq!(cut("abcdef", 4), "abc…");
    assert_eq!(cut("abc", 4), "abc");
}

fn traced(id: u32, place: Place, values: &[(u64, f64)]) -> SeriesData {
    let mut trace = Trace::new();
    for &(second, value) in values {
        trace.push(second * 1_000_000_000, value, 4000);
    }
    SeriesData { id, place, trace }
}

#[test]
fn charts_cap_series_keep_limits_near_use_and_break_at_holes() {
    let mut tables = SampleTables {
        samplers: vec![
            sampler("host", "host"),
            sampler("prom", "http://h:1/metrics"),
        ],
        series: Vec::new(),
    };
    let mut data = SampleData::default();
    // Memory in use near the host's total: the total is drawn as a ceiling.
    for (name, values) in [
        (
            "host.memory_used_bytes",
            vec![(0, 900.0), (1, 950.0), (2, f64::NAN), (10, 990.0)],
        ),
        ("host.memory_total_bytes", vec![(0, 1024.0), (1, 1024.0)]),
    ] {
        let info = series(name, &[], "bytes");
        let place = place(&tables.samplers[0], &info).unwrap();
        data.series
            .push(traced(tables.series.len() as u32, place, &values));
        tables.series.push(info);
    }
    // Twelve Prometheus gauges: the eight highest peaks are drawn.
    for i in 0..12u32 {
        let info = SeriesInfo {
            sampler: 1,
            ..series(&format!("g{i}"), &[], "count")
        };
        let place = place(&tables.samplers[1], &info).unwrap();
        data.series.push(traced(
            tables.series.len() as u32,
            place,
            &[(0, f64::from(i)), (1, 1.0)],
        ));
        tables.series.push(info);
    }
    data.tables = tables;
    data.batches = 1;
    let charts = charts(&data, 0);
    let ids: Vec<&str> = charts.iter().map(|c| c.id).collect();
    assert_eq!(ids, ["memory", "other-count"]);
    let memory = &charts[0];
    let names: Vec<&str> = memory.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["host used: peak 990 B", "host total: 1 KiB"]);
    // The gap at 2 s and the hole from 2 s to 10 s both break the line.
    let used = &memory.series[0];
    assert_eq!(used.x, [0.0, 1.0, 2.0, 6.0, 10.0]);
    assert!(used.y[2].is_nan() && used.y[3].is_nan() && used.y[4] == 990.0);
    let other = &charts[1];
    assert_eq!(other.series.len(), MAX_SERIES_PER_CHART);
    assert_eq!(other.title, "Prometheus: counts");
    assert!(other.series.iter().all(|s| !s.name.starts_with("g0:")));
    assert!(
        other.caption.contains("highest peaks of 12"),
        "{}",
        other.caption
    );

    // A far limit is named in the caption instead.
    let mut far = data.clone();
    far.series[1].trace = Trace::new();
    far.series[1].trace.push(0, 1_048_576.0, 4000);
    let memory = &super::charts(&far, 0)[0];
    assert_eq!(memory.series.len(), 1);
    assert!(
        memory.caption.contains("host total (1 MiB) is not drawn"),
        "{}",
        memory.caption
    );
}

#[test]
fn gap_spans_become_merged_bands() {
    let tables = SampleTables {
        samplers: vec![sampler("process", "nginx")],
        series: vec![series(
            "process.cpu_percent",
            &[("group", "nginx")],
            "percent",
        )],
    };
    let place = place(&tables.samplers[0], &tables.series[0]).unwrap();
    let s = 1_000_000_000;
    let span = |first: u64, last: u64, reason: u32, count| GapSpan {
        sampler: 0,
        series: None,
        reason,
        first_unix_ns: first * s,
        last_unix_ns: last * s,
        count,
    };
    let data = SampleData {
        series: vec![traced(0, place, &[(0, 10.0), (9, 20.0)])],
        tables,
        steps_ns: vec![s],
        spans: vec![span(3, 5, 0, 3), span(5, 6, 1, 2), span(8, 8, 0, 1)],
        reasons: vec!["no process matches nginx".to_owned(), "gone".to_owned()],
        batches: 10,
        ..SampleData::default()
    };
    let chart = &charts(&data, 0)[0];
    let bands: Vec<(f64, f64, &str)> = chart
        .bands
        .iter()
        .map(|b| (b.from_s, b.to_s, b.label.as_str()))
        .collect();
    assert_eq!(
        bands,
        [
            (2.5, 6.5, "nginx: no process matches nginx; nginx: gone"),
            (7.5, 8.5, "nginx: no process matches nginx")
        ]
    );
    assert!(
        chart.caption.contains("Shaded: no sample (nginx: no process matches nginx: 4 samples; nginx: gone: 2 samples)."),
        "{}",
        chart.caption
    );
}
