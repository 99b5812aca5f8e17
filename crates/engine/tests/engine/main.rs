//! The engine against real loopback servers: pacing, models, caps, every error kind,
//! redirects, TLS, Unix sockets and stopping.

#![allow(clippy::unwrap_used)]

mod h2;
mod h2_server;
mod server;

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use engine::{AttackConfig, RunConfig, RunOutcome, StopHandle, TargetStream, Targets, TlsOptions};
use record::{ErrorKind, Record, RunTables, SourceSummary, StopReason};
use server::TestServer;
use workload::{Pacing, Plan, Schedule, Target};

fn target(url: &str) -> Target {
    Target::get("GET", url::Url::parse(url).unwrap())
}

fn config(urls: &[String], plan: Plan) -> RunConfig {
    let mut attack = AttackConfig::new("test", urls.iter().map(|u| target(u)).collect(), plan);
    attack.settings.timeout = Duration::from_secs(5);
    attack.settings.max_in_flight = 1000;
    let mut config = RunConfig::single(attack);
    config.settings.threads = Some(2);
    config.settings.initial_connections = 2;
    config.settings.connections_per_host = 1000;
    config
}

fn open_rate(rate_per_sec: f64, max_requests: u64) -> Plan {
    Plan {
        pacing: Pacing::Open(Schedule::constant(rate_per_sec)),
        duration_ns: Some(20_000_000_000),
        max_requests: Some(max_requests),
        shard: workload::Shard::WHOLE,
    }
}

struct Run {
    records: Vec<Record>,
    /// The connections blocks' entries (streams, streamed gRPC calls).
    connections: Vec<record::Connection>,
    tables: RunTables,
    summary: SourceSummary,
    outcome: RunOutcome,
}

impl Run {
    fn error_text(&self, record: &Record) -> Option<(ErrorKind, String)> {
        self.tables
            .error(record.error)
            .map(|e| (e.kind, e.text.clone()))
    }
}

fn run(config: &RunConfig) -> Run {
    run_with_stop(config, &StopHandle::new())
}

fn run_with_stop(config: &RunConfig, stop: &StopHandle) -> Run {
    let (bytes, outcome) = engine::run(config, Vec::new(), stop).unwrap();
    let mut source = record::open_reader(Box::new(Cursor::new(bytes)), "run").unwrap();
    let (mut records, mut connections) = (Vec::new(), Vec::new());
    let mut batch = Vec::new();
    while source.next_batch(&mut batch).unwrap() {
        records.extend_from_slice(&batch);
        source.drain_connections(&mut connections);
    }
    source.drain_connections(&mut connections);
    records.sort_by_key(|r| r.seq);
    connections.sort_by_key(|c| c.seq);
    Run {
        records,
        connections,
        tables: source.tables().clone(),
        summary: source.summary().clone(),
        outcome,
    }
}

#[test]
fn open_model_paces_by_intended_time_and_reuses_connections() {
    let server = TestServer::start();
    let run = run(&config(&[server.url("/ok")], open_rate(200.0, 100)));
    assert_eq!(run.records.len(), 100);
    assert!(!run.outcome.capped, "no request waited at a cap");
    let start = run.records[0].intended_unix_ns;
    for (k, record) in run.records.iter().enumerate() {
        assert_eq!(record.seq, k as u64);
        assert_eq!(
            record.intended_unix_ns - start,
            k as u64 * 5_000_000,
            "request {k} is due at k/rate exactly"
        );
        assert_eq!((record.status, record.error), (200, 0));
        assert!(record.latency_ns >= record.send_lag_ns && record.latency_ns > 0);
        assert!(record.ttfb_ns > 0 && record.ttfb_ns <= record.latency_ns);
        assert_eq!(record.bytes_in, 40, "status line, header and body as read");
        assert!(record.bytes_out > 30);
    }
    // Without keep-alive it would be 100; a response that is late on a busy machine
    // (tests run side by side on two cores) may open one or two more than the usual 1-2.
    assert!(
        server.stats.connections.load(Ordering::SeqCst) <= 8,
        "keep-alive: {} connections",
        server.stats.connections.load(Ordering::SeqCst)
    );
    let end = run.summary.end.clone().unwrap();
    assert_eq!(
        (
            end.reason,
            end.attacks[0].asked,
            end.attacks[0].sent,
            end.attacks[0].unsent
        ),
        (StopReason::Completed, 100, 100, 0)
    );
    assert_eq!(run.summary.header.attacks[0].rate_per_sec, Some(200.0));
    assert!(run.summary.torn.is_none());
}

#[test]
fn the_duration_bounds_the_run() {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/ok")], open_rate(100.0, u64::MAX));
    cfg.attacks[0].settings.plan.duration_ns = Some(500_000_000);
    cfg.attacks[0].settings.plan.max_requests = None;
    let started = Instant::now();
    let run = run(&cfg);
    assert_eq!(run.records.len(), 50, "requests due in [0, 0.5s) at 100/s");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn closed_model_keeps_exactly_n_users_busy() {
    let server = TestServer::start();
    let mut cfg = config(
        &[server.url("/slow/5")],
        Plan {
            pacing: Pacing::Closed {
                users: Schedule::constant(4.0),
                think_ns: 0,
            },
            duration_ns: None,
            max_requests: Some(60),
            shard: workload::Shard::WHOLE,
        },
    );
    cfg.settings.initial_connections = 0;
    let run = run(&cfg);
    assert_eq!(run.records.len(), 60);
    assert!(run.records.iter().all(|r| r.status == 200));
    assert_eq!(server.stats.max_in_flight.load(Ordering::SeqCst), 4);
    // A free user sends at once: the typical lag is a wake-up, never a 5 ms request.
    // (The median, not every request: on a shared CI machine one wake-up may be late.)
    let mut lags_ns: Vec<u64> = run.records.iter().map(|r| r.send_lag_ns).collect();
    lags_ns.sort_unstable();
    assert!(
        lags_ns[lags_ns.len() / 2] < 2_000_000 && lags_ns[lags_ns.len() - 1] < 50_000_000,
        "closed-model requests leave as soon as a user is free: lags {lags_ns:?}"
    );
}

#[test]
fn beyond_the_cap_requests_queue_and_their_lag_shows() {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/slow/40")], open_rate(100.0, 10));
    cfg.attacks[0].settings.max_in_flight = 1;
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    assert_eq!(run.records.len(), 10, "no request is skipped");
    assert_eq!(server.stats.max_in_flight.load(Ordering::SeqCst), 1);
    assert!(
        run.outcome.capped,
        "the run says requests waited at the cap"
    );
    let last = run.records.last().unwrap();
    assert!(
        last.send_lag_ns > 200_000_000,
        "the 10th request waited for the single slot: lag {} ns",
        last.send_lag_ns
    );
    assert!(
        last.latency_ns >= last.send_lag_ns + 40_000_000,
        "latency counts from the intended time"
    );
}

#[test]
fn every_failure_is_recorded_with_its_kind() {
    let server = TestServer::start();
    // Bound but never listening, so connects are refused and no parallel test can reuse the
    // port (as it could a dropped listener's).
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let closed_port = held.local_addr().unwrap().as_socket().unwrap();
    let paths = [
        "/status/503",
        "/status/422",
        "/reset",
        "/garbage",
        "/stall",
        "/half-body",
        "/chunked",
        "/until-close",
        "/close",
    ];
    let mut urls: Vec<String> = paths.iter().map(|p| server.url(p)).collect();
    urls.push(format!("http://{closed_port}/"));
    let mut cfg = config(&urls, open_rate(100.0, urls.len() as u64));
    cfg.attacks[0].settings.timeout = Duration::from_millis(500);
    cfg.attacks[0].settings.keepalive = false;
    let run = run(&cfg);
    let outcome: Vec<(u16, Option<(ErrorKind, String)>)> = run
        .records
        .iter()
        .map(|r| (r.status, run.error_text(r)))
        .collect();
    let kinds: Vec<(u16, Option<ErrorKind>)> = outcome
        .iter()
        .map(|(s, e)| (*s, e.as_ref().map(|e| e.0)))
        .collect();
    assert_eq!(
        kinds,
        [
            (503, Some(ErrorKind::Status)),
            (422, Some(ErrorKind::Status)),
            (0, Some(ErrorKind::Reset)),
            (0, Some(ErrorKind::Protocol)),
            (0, Some(ErrorKind::Timeout)),
            (0, Some(ErrorKind::Closed)),
            (200, None),
            (200, None),
            (200, None),
            (0, Some(ErrorKind::Connect)),
        ],
        "{outcome:#?}"
    );
    assert_eq!(outcome[0].1.as_ref().unwrap().1, "503 Service Unavailable");
    assert_eq!(
        outcome[1].1.as_ref().unwrap().1,
        "422",
        "no reason phrase: the code alone, as vegeta"
    );
    assert!(
        outcome[9]
            .1
            .as_ref()
            .unwrap()
            .1
            .contains("connection refused"),
        "{:?}",
        outcome[9]
    );
    let stalled = &run.records[4];
    assert!(
        (500_000_000..1_500_000_000).contains(&stalled.latency_ns),
        "the stall timed out at the timeout: {}",
        stalled.latency_ns
    );
}

#[test]
fn redirects_follow_vegeta_rules() {
    let server = TestServer::start();
    let cases: &[(i32, &str, u16, Option<&str>)] = &[
        (10, "/redirect/3", 200, None),
        (-1, "/redirect/3", 302, None),
        (0, "/redirect/1", 0, Some("stopped after 0 redirects")),
        (2, "/redirect-loop", 0, Some("stopped after 2 redirects")),
    ];
    for &(redirects, path, status, error) in cases {
        let mut cfg = config(&[server.url(path)], open_rate(50.0, 1));
        cfg.attacks[0].settings.redirects = redirects;
        let run = run(&cfg);
        let record = run.records[0];
        assert_eq!(record.status, status, "{redirects} {path}");
        assert_eq!(
            run.error_text(&record).map(|e| e.1),
            error.map(str::to_owned),
            "{redirects} {path}"
        );
    }
}

#[test]
fn max_body_reads_only_what_it_must() {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/big/1000000")], open_rate(50.0, 2));
    cfg.attacks[0].settings.max_body = Some(1024);
    let limited = run(&cfg);
    for record in &limited.records {
        assert_eq!(record.status, 200);
        assert!(
            record.bytes_in < 200_000,
            "stopped early: {} bytes",
            record.bytes_in
        );
    }
    cfg.attacks[0].settings.max_body = None;
    let full = run(&cfg);
    assert!(full.records.iter().all(|r| r.bytes_in > 1_000_000));
}

#[test]
fn keepalive_off_opens_a_connection_per_request() {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/ok")], open_rate(200.0, 20));
    cfg.attacks[0].settings.keepalive = false;
    cfg.settings.initial_connections = 0;
    let run = run(&cfg);
    assert!(run.records.iter().all(|r| r.status == 200));
    assert_eq!(server.stats.connections.load(Ordering::SeqCst), 20);
}

#[test]
fn stopping_drains_requests_in_flight() {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/slow/300")], open_rate(20.0, u64::MAX));
    cfg.attacks[0].settings.plan.duration_ns = None;
    cfg.attacks[0].settings.plan.max_requests = None;
    let stop = StopHandle::new();
    let stopper = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stopper.drain();
    });
    let started = Instant::now();
    let run = run_with_stop(&cfg, &stop);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(run.outcome.reason, StopReason::Interrupted);
    assert!(
        run.records.len() >= 8,
        "requests sent before the stop all completed: {}",
        run.records.len()
    );
    assert!(
        run.records.iter().all(|r| r.status == 200),
        "in-flight requests finished, none were cut"
    );
}

/// `cfg` on one worker under a 10 ms budget; every request it plans is answered 200.
fn run_at_a_10ms_budget(mut cfg: RunConfig) -> Run {
    cfg.settings.threads = Some(1);
    cfg.settings.precision_ns = 10_000_000;
    let run = run(&cfg);
    let planned = cfg.attacks[0].settings.plan.max_requests.unwrap();
    assert_eq!(run.records.len() as u64, planned);
    assert!(run.records.iter().all(|r| r.status == 200));
    run
}

#[test]
fn answers_read_a_budget_late_are_timed_when_they_arrived() {
    let server = TestServer::start();
    // 1,000 requests a second under a 10 ms budget: the worker wakes every 10 ms or
    // so and reads each answer up to that late, while the server answers at once.
    let run = run_at_a_10ms_budget(config(&[server.url("/ok")], open_rate(1000.0, 500)));
    let median = |mut values: Vec<u64>| {
        values.sort_unstable();
        values[values.len() / 2]
    };
    let latency_ns = median(run.records.iter().map(|r| r.latency_ns).collect());
    let lag_ns = median(run.records.iter().map(|r| r.send_lag_ns).collect());
    // Requests leave late by the budget (the lag says so), and a latency timed by the
    // read would be more than that; timed by the kernel's stamp it is the server's
    // time plus the send lag.
    assert!(lag_ns > 2_000_000, "send lag p50 {lag_ns} ns: no ticks?");
    assert!(
        latency_ns < lag_ns + 1_000_000,
        "latency p50 {latency_ns} ns against send lag p50 {lag_ns} ns"
    );
}

#[test]
fn a_rate_its_connections_can_carry_is_held_at_a_wide_budget() {
    let server = TestServer::start();
    // 3,000 requests a second on 16 connections to answers that take 1 ms: the
    // connections carry far more, yet a 10 ms tick finds 30 requests due and 16
    // connections, so the worker is behind until answers free them. Behind, it must
    // not sleep a budget per look: that sends 16 requests a tick, 1,600 a second, and
    // the lag grows past a second.
    let mut cfg = config(&[server.url("/slow/1")], open_rate(3000.0, 4500));
    cfg.settings.initial_connections = 16;
    cfg.settings.connections_per_host = 16;
    let run = run_at_a_10ms_budget(cfg);
    assert_eq!(run.summary.end.clone().unwrap().attacks[0].unsent, 0);
    let mut lags_ns: Vec<u64> = run.records.iter().map(|r| r.send_lag_ns).collect();
    lags_ns.sort_unstable();
    // A budget plus a round trip or two; generous for a busy two-core machine.
    let p99_ns = lags_ns[lags_ns.len() * 99 / 100];
    assert!(p99_ns < 100_000_000, "send lag p99 {p99_ns} ns");
}

/// 20 requests a second to answers that take 1.5 s, drained after 0.4 s: a drain of
/// about 1.5 s with eight or so requests in flight.
fn drain_slow_requests() -> Run {
    let server = TestServer::start();
    let mut cfg = config(&[server.url("/slow/1500")], open_rate(20.0, u64::MAX));
    cfg.attacks[0].settings.plan.duration_ns = None;
    cfg.attacks[0].settings.plan.max_requests = None;
    let stop = StopHandle::new();
    let stopper = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        stopper.drain();
    });
    let run = run_with_stop(&cfg, &stop);
    assert_eq!(run.outcome.reason, StopReason::Interrupted);
    assert!(run.records.iter().all(|r| r.status == 200));
    run
}

#[test]
fn a_drain_sleeps_until_its_requests_answer() {
    let run = drain_slow_requests();
    // Waiting, a worker wakes to ship every 100 ms and for each answer: about a
    // hundred wake-ups in all here. Spinning on the stop event wakes a million times.
    assert!(
        run.outcome.wakeups < 2_000,
        "the workers woke {} times",
        run.outcome.wakeups
    );
}

#[test]
fn what_was_asked_ends_at_the_stop() {
    let run = drain_slow_requests();
    let end = run.summary.end.clone().unwrap();
    let attack = &end.attacks[0];
    // At 20/s a 1.5 s drain would count 30 requests as due and never sent.
    assert!(
        attack.unsent <= 3,
        "asked {}, sent {}, unsent {}",
        attack.asked,
        attack.sent,
        attack.unsent
    );
    assert_eq!(run.outcome.unsent, attack.unsent);
    assert!(
        attack.asked_span_ns < 600_000_000,
        "asked until the stop, not the end: {} ns",
        attack.asked_span_ns
    );
}

#[test]
fn unix_sockets_carry_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let stats = Arc::new(server::Stats::default());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let (stats, stop) = (Arc::clone(&stats), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (stats, stop) = (Arc::clone(&stats), Arc::clone(&stop));
                std::thread::spawn(move || server::serve(Box::new(stream), &stats, &stop));
            }
        });
    }
    let mut cfg = config(&["http://unix.test/ok".to_owned()], open_rate(100.0, 10));
    cfg.settings.unix_socket = Some(path);
    let run = run(&cfg);
    assert_eq!(run.records.iter().filter(|r| r.status == 200).count(), 10);
    assert_eq!(stats.requests.load(Ordering::SeqCst), 10);
}

mod tls {
    use super::*;

    pub(super) fn tls_server() -> (TestServer, tempfile::TempDir) {
        let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), key.cert.pem()).unwrap();
        let cert = key.cert.der().clone();
        let private =
            rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], private)
            .unwrap();
        let config = Arc::new(config);
        let server = TestServer::start_with(move |stream| {
            let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            Box::new(rustls::StreamOwned::new(connection, stream))
        });
        (server, dir)
    }

    #[test]
    fn https_with_our_roots_insecure_and_wrong_roots() {
        let (server, dir) = tls_server();
        let url = format!("https://localhost:{}/ok", server.addr.port());
        let mut cfg = config(&[url], open_rate(100.0, 10));
        cfg.settings.tls.root_certs = vec![dir.path().join("ca.pem")];
        let trusted = run(&cfg);
        assert!(
            trusted.records.iter().all(|r| r.status == 200),
            "{:?}",
            trusted
                .records
                .iter()
                .map(|r| trusted.error_text(r))
                .collect::<Vec<_>>()
        );

        cfg.settings.tls = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let insecure = run(&cfg);
        assert!(insecure.records.iter().all(|r| r.status == 200));

        cfg.settings.tls = TlsOptions::default();
        let untrusted = run(&cfg);
        let errors: HashMap<String, usize> = untrusted
            .records
            .iter()
            .filter_map(|r| untrusted.error_text(r))
            .fold(HashMap::new(), |mut m, (kind, text)| {
                assert_eq!(kind, ErrorKind::Tls, "{text}");
                *m.entry(text).or_default() += 1;
                m
            });
        assert_eq!(errors.values().sum::<usize>(), 10, "{errors:?}");
    }

    #[test]
    fn bad_tls_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let mut cfg = config(&["https://localhost:1/".to_owned()], open_rate(1.0, 1));
        cfg.settings.tls.root_certs = vec![junk];
        let err = engine::run(&cfg, Vec::new(), &StopHandle::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("junk.pem"), "{err}");
        cfg.settings.tls.root_certs = vec![dir.path().join("missing.pem")];
        let err = engine::run(&cfg, Vec::new(), &StopHandle::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.pem"), "{err}");
    }
}

#[test]
fn lazy_targets_are_sent_once_each_in_order() {
    let server = TestServer::start();
    let other = TestServer::start();
    let urls: Vec<String> = (0..50)
        .map(|i| {
            if i % 10 == 9 {
                other.url("/ok")
            } else {
                server.url(&format!("/status/{}", 200 + i))
            }
        })
        .collect();
    let stream: engine::TargetIter = Box::new(urls.clone().into_iter().map(|u| Ok(target(&u))));
    let mut cfg = config(&[], open_rate(1000.0, u64::MAX));
    cfg.attacks[0].targets = Targets::Stream(TargetStream::new(stream));
    let run = run(&cfg);
    assert_eq!(run.records.len(), 50, "the stream's end ends the attack");
    for (k, record) in run.records.iter().enumerate() {
        let url = &run.tables.targets[record.target as usize].url;
        assert_eq!(url, &urls[k], "request {k} went to its own target");
    }
    assert_eq!(other.stats.requests.load(Ordering::SeqCst), 5);
    assert_eq!(
        run.tables.targets.len(),
        46,
        "distinct targets are interned once"
    );
}

#[test]
fn a_bad_lazy_target_stops_the_run_with_its_error() {
    let server = TestServer::start();
    let good = server.url("/ok");
    let items: Vec<Result<Target, workload::WorkloadError>> = vec![
        Ok(target(&good)),
        Err(workload::WorkloadError::Target {
            source_name: "targets.txt".to_owned(),
            line: 7,
            reason: "unknown method \"FETCH\"".to_owned(),
        }),
        Ok(target(&good)),
    ];
    let mut cfg = config(&[], open_rate(100.0, u64::MAX));
    cfg.attacks[0].targets = Targets::Stream(TargetStream::new(Box::new(items.into_iter())));
    let err = engine::run(&cfg, Vec::new(), &StopHandle::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("targets.txt:7: unknown method"), "{err}");
}

#[test]
fn unresolvable_hosts_fail_before_the_run() {
    let cfg = config(
        &["http://no-such-host.invalid/".to_owned()],
        open_rate(1.0, 1),
    );
    let err = engine::run(&cfg, Vec::new(), &StopHandle::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-such-host.invalid"), "{err}");
}

// ---------------------------------------------------------------------------------
// Load models: schedules, the closed model, scenarios, templates, stop rules.

fn schedule_plan(text: &str) -> Plan {
    Plan {
        pacing: Pacing::Open(Schedule::parse(text).unwrap()),
        duration_ns: None,
        max_requests: None,
        shard: workload::Shard::WHOLE,
    }
}

#[test]
fn a_ramp_sends_its_integral_and_ends_with_its_schedule() {
    let server = TestServer::start();
    let run = run(&config(
        &[server.url("/ok")],
        schedule_plan("line(100, 300, 2s)"),
    ));
    assert_eq!(
        run.records.len(),
        400,
        "the ramp's integral: (100 + 300) / 2 * 2 s"
    );
    let start = run.summary.header.start_unix_ns;
    let first_second = run
        .records
        .iter()
        .filter(|r| r.intended_unix_ns - start < 1_000_000_000)
        .count();
    assert_eq!(first_second, 150, "(100 + 200) / 2 in the first second");
    assert!(run.records.iter().all(|r| r.status == 200));
    assert_eq!(run.summary.header.attacks[0].schedule, "line(100, 300, 2s)");
    assert_eq!(
        run.summary.header.attacks[0].rate_per_sec, None,
        "not a constant rate"
    );
}

#[test]
fn closed_users_follow_their_schedule_and_think() {
    let server = TestServer::start();
    let users = Schedule::parse("const(2, 2500ms)").unwrap();
    let plan = Plan {
        pacing: Pacing::Closed {
            users,
            think_ns: 100_000_000,
        },
        duration_ns: None,
        max_requests: None,
        shard: workload::Shard::WHOLE,
    };
    let mut cfg = config(&[server.url("/ok")], plan);
    cfg.settings.initial_connections = 0;
    let run = run(&cfg);
    // Two users, each one request per ~100 ms of thinking, for 2.5 seconds.
    assert!(
        (42..=54).contains(&run.records.len()),
        "{} requests",
        run.records.len()
    );
    assert!(server.stats.max_in_flight.load(Ordering::SeqCst) <= 2);
    let mut by_user_gap: Vec<u64> = run
        .records
        .windows(3)
        .map(|w| w[2].intended_unix_ns - w[0].intended_unix_ns)
        .collect();
    by_user_gap.sort_unstable();
    assert!(
        by_user_gap[by_user_gap.len() / 2] >= 90_000_000,
        "a user waits its think time: {by_user_gap:?}"
    );
    let stats = &run.summary.stats;
    assert!(
        stats
            .iter()
            .any(|s| s.attacks.first().is_some_and(|a| a.users == 2)),
        "users over time are recorded: {stats:?}"
    );
    assert_eq!(run.summary.header.attacks[0].concurrency, Some(2));
}

#[test]
fn scenarios_run_at_once_and_keep_their_names() {
    let server = TestServer::start();
    let fast = AttackConfig::new(
        "search",
        vec![target(&server.url("/echo/search"))],
        Plan {
            duration_ns: Some(1_000_000_000),
            ..Plan::constant_rate(200.0)
        },
    );
    let slow = AttackConfig::new(
        "news",
        vec![target(&server.url("/echo/news"))],
        Plan {
            duration_ns: Some(1_000_000_000),
            ..Plan::constant_rate(10.0)
        },
    );
    let mut cfg = config(&[], Plan::constant_rate(1.0));
    cfg.attacks = vec![fast, slow];
    let run = run(&cfg);
    let names: Vec<&str> = run
        .summary
        .header
        .attacks
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["search", "news"]);
    let per_attack = |a: u16| run.records.iter().filter(|r| r.attack == a).count();
    assert_eq!((per_attack(0), per_attack(1)), (200, 10));
    for record in &run.records {
        let url = &run.tables.targets[record.target as usize].url;
        assert!(
            url.ends_with(if record.attack == 0 {
                "/echo/search"
            } else {
                "/echo/news"
            }),
            "{url}"
        );
    }
    assert_eq!(run.summary.end.as_ref().unwrap().attacks.len(), 2);
}

#[test]
fn templates_render_per_request_and_the_seed_repeats_them() {
    let server = TestServer::start();
    let targets = workload::parse_http_targets(
        format!(
            "GET http://{}/echo/{{{{rand.lower 8}}}}?n={{{{seq}}}}\n",
            server.addr
        )
        .as_bytes(),
        "targets.txt",
        &[],
        b"",
        &|_| Ok(Vec::new()),
    )
    .unwrap();
    let paths = |seed: u64| {
        server.stats.paths.lock().unwrap().clear();
        let mut cfg = config(
            &[],
            Plan {
                max_requests: Some(20),
                ..Plan::constant_rate(500.0)
            },
        );
        cfg.attacks[0].targets = Targets::List(targets.clone());
        cfg.settings.seed = seed;
        let run = run(&cfg);
        assert_eq!(
            run.tables.targets[0].url,
            format!(
                "http://{}/echo/{{{{rand.lower 8}}}}?n={{{{seq}}}}",
                server.addr
            ),
            "reports name the template"
        );
        assert_eq!(
            run.summary.header.seed,
            Some(seed),
            "the file keeps its seed"
        );
        let mut seen = server.stats.paths.lock().unwrap().clone();
        seen.sort();
        seen
    };
    let first = paths(42);
    assert_eq!(first.len(), 20);
    assert_eq!(
        first.iter().collect::<std::collections::HashSet<_>>().len(),
        20,
        "every request differs: {first:?}"
    );
    assert!(
        first
            .iter()
            .all(|p| p.len() == "/echo/abcdefgh?n=".len() + p.rsplit('=').next().unwrap().len())
    );
    assert_eq!(paths(42), first, "the same seed sends the same requests");
    assert_ne!(paths(43), first);
}

#[test]
fn a_stop_rule_ends_the_run_and_says_why() {
    let server = TestServer::start();
    let mut cfg = config(
        &[server.url("/status/503")],
        Plan {
            duration_ns: Some(20_000_000_000),
            ..Plan::constant_rate(100.0)
        },
    );
    cfg.settings.stop_rules = vec![workload::StopRule::parse("errors > 50% for 1s").unwrap()];
    let started = Instant::now();
    let run = run(&cfg);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped long before the 20 s duration"
    );
    assert_eq!(run.outcome.reason, StopReason::StopRule);
    let fired = run.outcome.fired.clone().unwrap();
    assert_eq!(fired.rule.kind(), workload::RuleKind::Errors);
    let end = run.summary.end.unwrap();
    assert_eq!(end.reason, StopReason::StopRule);
    assert!(
        end.detail.starts_with("'errors > 50% for 1s' fired at"),
        "{}",
        end.detail
    );
}

#[test]
fn a_rate_rule_needs_an_open_model() {
    let users = Plan {
        pacing: Pacing::Closed {
            users: Schedule::constant(1.0),
            think_ns: 0,
        },
        duration_ns: None,
        max_requests: Some(1),
        shard: workload::Shard::WHOLE,
    };
    let mut cfg = config(&["http://127.0.0.1:1/".to_owned()], users);
    cfg.settings.stop_rules =
        vec![workload::StopRule::parse("throughput < 90% of rate for 5s").unwrap()];
    let err = engine::run(&cfg, Vec::new(), &StopHandle::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("compares with the asked rate"), "{err}");
}

#[test]
fn a_generator_far_behind_keeps_reporting_as_it_goes() {
    let server = TestServer::start();
    let mut cfg = config(
        &[server.url("/ok")],
        Plan {
            duration_ns: Some(1_500_000_000),
            ..Plan::constant_rate(1_000_000.0)
        },
    );
    // Room in flight, few connections: each new request finds a connection freed by
    // reading answers inside `acquire`, so only the per-pass bound returns to the loop.
    cfg.settings.connections_per_host = 8;
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    let first = run.summary.stats.first().cloned().unwrap();
    assert!(
        first.sent > 0 && first.behind > 0,
        "mid-run samples show progress and the backlog: {first:?}"
    );
    let end = run.summary.end.clone().unwrap();
    assert_eq!(run.records.len() as u64, end.attacks[0].sent);
    assert!(
        end.attacks[0].unsent > 0,
        "the backlog at the end is counted as unsent"
    );
    assert!(
        server.stats.connections.load(Ordering::SeqCst) <= 8,
        "no connection pile-up"
    );
}

/// A feed that hands over one frame when the run starts and one when it finishes,
/// each stamped with the clock the engine gave it.
#[derive(Default)]
struct StampFeed {
    clock: Option<engine::Clock>,
    started: bool,
}

impl StampFeed {
    fn frame(&self, first: bool) -> record::SampleFrame {
        let clock = self.clock.unwrap();
        record::SampleFrame {
            first_sampler: u32::from(!first),
            first_series: u32::from(!first),
            samplers: first
                .then(|| record::SamplerInfo {
                    kind: "host".into(),
                    name: "host".to_owned(),
                })
                .into_iter()
                .collect(),
            series: first
                .then(|| record::SeriesInfo {
                    sampler: 0,
                    name: "host.cpu_percent".to_owned(),
                    unit: "%".to_owned(),
                    ..record::SeriesInfo::default()
                })
                .into_iter()
                .collect(),
            batch: record::SampleBatch {
                at_unix_ns: clock.unix_ns(clock.now_ns()),
                values: vec![record::SampleValue {
                    series: 0,
                    value: if first { 1.0 } else { 2.0 },
                }],
                gaps: Vec::new(),
            },
        }
    }
}

impl engine::SampleFeed for StampFeed {
    fn start(&mut self, clock: engine::Clock) {
        self.clock = Some(clock);
    }

    fn ready(&mut self, frames: &mut Vec<record::SampleFrame>) {
        if !self.started {
            self.started = true;
            frames.push(self.frame(true));
        }
    }

    fn finish(&mut self, frames: &mut Vec<record::SampleFrame>) {
        frames.push(self.frame(false));
    }
}

#[test]
fn samples_are_written_beside_the_records_on_the_run_clock() {
    let server = TestServer::start();
    let cfg = config(&[server.url("/ok")], open_rate(200.0, 40));
    let mut feed = StampFeed::default();
    let (bytes, _) =
        engine::run_with_samples(&cfg, Vec::new(), &StopHandle::new(), &mut feed).unwrap();
    let mut source = record::open_reader(Box::new(Cursor::new(bytes)), "run").unwrap();
    let (mut records, mut samples, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        records.extend_from_slice(&batch);
        source.drain_samples(&mut samples);
    }
    source.drain_samples(&mut samples);
    let summary = source.summary();
    let clock = feed.clock.unwrap();
    assert_eq!(clock.start_unix_ns(), summary.header.start_unix_ns);
    assert_eq!(records.len(), 40);
    let values: Vec<f64> = samples.iter().map(|s| s.values[0].value).collect();
    assert_eq!(values, [1.0, 2.0]);
    let last_intended = records.iter().map(|r| r.intended_unix_ns).max().unwrap();
    assert!(
        samples[0].at_unix_ns < last_intended,
        "the first frame is written during the run"
    );
    assert!(
        samples[1].at_unix_ns >= last_intended,
        "the last frame follows the last request"
    );
    assert!(samples[1].at_unix_ns <= summary.end.as_ref().unwrap().at_unix_ns);
}

/// Counts what the collector shows it.
#[derive(Default)]
struct CountingObserver {
    started: bool,
    records: Vec<Record>,
    stats: u64,
    errors: Vec<(usize, ErrorKind)>,
    rule_calls: Vec<(u64, u64)>,
    sample_values: Vec<f64>,
    finished: bool,
}

impl engine::RunObserver for CountingObserver {
    fn start(&mut self, _clock: engine::Clock) {
        self.started = true;
    }
    fn records(&mut self, records: &[Record]) {
        self.records.extend_from_slice(records);
    }
    fn stats(&mut self, _stats: &record::GeneratorStats) {
        self.stats += 1;
    }
    fn errors(&mut self, first_index: usize, new: &[record::ErrorEntry]) {
        self.errors.extend(
            new.iter()
                .enumerate()
                .map(|(i, e)| (first_index + i, e.kind)),
        );
    }
    fn rules(&mut self, judged_ns: u64, watches: &[workload::RuleWatch]) {
        self.rule_calls
            .push((judged_ns, watches[0].held_ns(judged_ns)));
    }
    fn samples(&mut self, frame: &record::SampleFrame) {
        self.sample_values
            .extend(frame.batch.values.iter().map(|v| v.value));
    }
    fn finish(&mut self) {
        self.finished = true;
    }
}

/// `cfg` run with `observer` watching and a feed of two stamped frames.
fn run_observed(cfg: &RunConfig, observer: &mut dyn engine::RunObserver) -> (Vec<u8>, RunOutcome) {
    let mut feed = StampFeed::default();
    engine::run_with_observer(cfg, Vec::new(), &StopHandle::new(), &mut feed, observer).unwrap()
}

#[test]
fn an_observer_sees_every_record_the_file_holds_and_changes_none() {
    let server = TestServer::start();
    let urls = [server.url("/ok"), server.url("/status/503")];
    let mut cfg = config(&urls, open_rate(100.0, 150));
    cfg.settings.stop_rules = vec![workload::StopRule::parse("errors > 90% for 5s").unwrap()];
    let mut observer = CountingObserver::default();
    let (bytes, outcome) = run_observed(&cfg, &mut observer);
    let mut source = record::open_reader(Box::new(Cursor::new(bytes)), "run").unwrap();
    let (mut written, mut batch) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        written.extend_from_slice(&batch);
    }
    let mut seen = observer.records.clone();
    seen.sort_by_key(|r| r.seq);
    written.sort_by_key(|r| r.seq);
    assert_eq!(
        seen, written,
        "the observer sees exactly the records written"
    );
    assert_eq!(outcome.completed, 150);
    assert!(observer.started && observer.finished);
    assert!(observer.stats >= 1, "a stats sample each second");
    assert_eq!(
        observer.sample_values,
        [1.0, 2.0],
        "each resource-sample frame as it is written"
    );
    assert_eq!(
        observer.errors,
        [(0, ErrorKind::Status)],
        "the one error entry, at index 0"
    );
    let tables = source.tables();
    assert_eq!(tables.error(1).map(|e| e.kind), Some(ErrorKind::Status));
    assert!(
        observer.rule_calls.first() == Some(&(1_000_000_000, 0)),
        "the first judged second, half errors: the rule does not hold: {:?}",
        observer.rule_calls
    );
}

/// Keeps the most requests behind at a cap it was told of.
#[derive(Default)]
struct AtCapObserver {
    most: u64,
    samples: usize,
}

impl engine::RunObserver for AtCapObserver {
    fn start(&mut self, _clock: engine::Clock) {}
    fn records(&mut self, _records: &[Record]) {}
    fn stats(&mut self, _stats: &record::GeneratorStats) {
        self.samples += 1;
    }
    fn errors(&mut self, _first_index: usize, _new: &[record::ErrorEntry]) {}
    fn behind_at_cap(&mut self, requests: u64) {
        self.most = self.most.max(requests);
    }
}

#[test]
fn the_live_view_hears_when_connections_hold_the_rate_back() {
    let server = TestServer::start();
    // 50 requests a second to answers that take 300 ms need 15 in flight: on 2
    // connections most of those due wait for one; on 100 none do.
    for (connections, held_back) in [(2, true), (100, false)] {
        let mut cfg = config(&[server.url("/slow/300")], open_rate(50.0, u64::MAX));
        cfg.attacks[0].settings.plan.duration_ns = Some(1_500_000_000);
        cfg.settings.threads = Some(1);
        cfg.settings.connections_per_host = connections;
        let mut observer = AtCapObserver::default();
        run_observed(&cfg, &mut observer);
        assert!(observer.samples >= 1, "a stats sample each second");
        assert_eq!(
            observer.most > 10,
            held_back,
            "{connections} connections: at most {} behind at the cap",
            observer.most
        );
    }
}

/// (seq, target URL, intended offset) of each record, sorted.
fn requests_of(run: &Run) -> Vec<(u64, String, u64)> {
    let start = run.summary.header.start_unix_ns;
    let mut out: Vec<_> = run
        .records
        .iter()
        .map(|r| {
            let url = run.tables.targets[r.target as usize].url.clone();
            (r.seq, url, r.intended_unix_ns - start)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn shards_together_send_exactly_what_one_machine_sends() {
    let server = TestServer::start();
    let text = format!(
        "GET http://{0}/echo/{{{{rand.lower 8}}}}?n={{{{seq}}}}\n\nGET http://{0}/a\n\nGET http://{0}/b\n",
        server.addr
    );
    let targets =
        workload::parse_http_targets(text.as_bytes(), "t.txt", &[], b"", &|_| Ok(Vec::new()))
            .unwrap();
    let run_shard = |shard: workload::Shard| {
        let plan = Plan {
            max_requests: Some(31),
            ..Plan::constant_rate(1000.0)
        };
        let mut cfg = config(&[], plan).with_shard(shard);
        cfg.attacks[0].targets = Targets::List(targets.clone());
        cfg.settings.seed = 7;
        run(&cfg)
    };
    server.stats.paths.lock().unwrap().clear();
    let whole = run_shard(workload::Shard::WHOLE);
    let mut whole_paths = std::mem::take(&mut *server.stats.paths.lock().unwrap());
    whole_paths.sort();
    assert_eq!(whole.records.len(), 31);
    assert_eq!(
        whole.summary.header.shard, None,
        "an unsharded header is unchanged"
    );
    let (mut union, mut fingerprints) = (Vec::new(), Vec::new());
    for index in 0..3 {
        let part = run_shard(workload::Shard::new(index, 3).unwrap());
        let info = part.summary.header.shard.clone().unwrap();
        assert_eq!((info.index, info.count), (index, 3));
        fingerprints.push(info.plan_fingerprint);
        assert!(part.records.iter().all(|r| r.seq % 3 == index), "striped");
        assert_eq!(
            part.summary.end.as_ref().unwrap().attacks[0].asked,
            part.records.len() as u64
        );
        union.extend(requests_of(&part));
    }
    union.sort();
    assert_eq!(
        union,
        requests_of(&whole),
        "seq, target and intended time, one for one"
    );
    let mut shard_paths = std::mem::take(&mut *server.stats.paths.lock().unwrap());
    shard_paths.sort();
    assert_eq!(
        shard_paths, whole_paths,
        "templates render as one machine's would"
    );
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 1, "one run, one fingerprint");
}

#[test]
fn a_shard_of_a_lazy_stream_takes_every_nth_target() {
    let server = TestServer::start();
    let urls: Vec<String> = (0..20)
        .map(|i| server.url(&format!("/status/{}", 200 + i)))
        .collect();
    let stream: engine::TargetIter = Box::new(urls.clone().into_iter().map(|u| Ok(target(&u))));
    let mut cfg =
        config(&[], open_rate(1000.0, u64::MAX)).with_shard(workload::Shard::new(1, 3).unwrap());
    cfg.attacks[0].targets = Targets::Stream(TargetStream::new(stream));
    let run = run(&cfg);
    let sent: Vec<(u64, &str)> = run
        .records
        .iter()
        .map(|r| (r.seq, run.tables.targets[r.target as usize].url.as_str()))
        .collect();
    let want: Vec<(u64, &str)> = (1..20)
        .step_by(3)
        .map(|k| (k as u64, urls[k].as_str()))
        .collect();
    assert_eq!(sent, want);
}

#[test]
fn start_at_puts_time_zero_on_the_wall_clock() {
    let server = TestServer::start();
    let at_ns = engine::unix_now_ns() + 300_000_000;
    let mut cfg = config(&[server.url("/ok")], open_rate(100.0, 3));
    cfg.settings.start_at_unix_ns = Some(at_ns);
    let run = run(&cfg);
    assert_eq!(
        run.summary.header.start_unix_ns, at_ns,
        "time zero is the asked instant"
    );
    let info = run.summary.header.shard.clone().unwrap();
    assert_eq!(
        (info.index, info.count, info.start_at_unix_ns),
        (0, 1, Some(at_ns))
    );
    assert!(
        info.start_skew_ns.unsigned_abs() < 200_000_000,
        "{}",
        info.start_skew_ns
    );
    assert_eq!(run.records[0].intended_unix_ns, at_ns);

    cfg.settings.start_at_unix_ns = Some(engine::unix_now_ns() - 5_000_000_000);
    let err = engine::run(&cfg, Vec::new(), &StopHandle::new()).unwrap_err();
    assert!(err.to_string().contains("in the past"), "{err}");
}

#[test]
fn a_closed_model_shard_runs_its_share_of_the_users() {
    let server = TestServer::start();
    let mut cfg = config(
        &[server.url("/slow/5")],
        Plan {
            pacing: Pacing::Closed {
                users: Schedule::constant(5.0),
                think_ns: 0,
            },
            duration_ns: None,
            max_requests: Some(60),
            shard: workload::Shard::WHOLE,
        },
    )
    .with_shard(workload::Shard::new(1, 2).unwrap());
    cfg.settings.initial_connections = 0;
    let run = run(&cfg);
    assert_eq!(run.records.len(), 30, "half of the run's 60 requests");
    assert!(run.records.iter().all(|r| r.seq % 2 == 1));
    assert_eq!(
        server.stats.max_in_flight.load(Ordering::SeqCst),
        2,
        "users 1 and 3 of 0..5"
    );
    assert_eq!(
        run.summary.header.attacks[0].concurrency,
        Some(5),
        "the header names the whole run's users"
    );
}
