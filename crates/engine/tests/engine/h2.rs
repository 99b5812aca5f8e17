//! HTTP/2: h2c and TLS with ALPN against the `h2` crate's server, and the protocol's
//! failures (refused streams, GOAWAY, broken frames) against a hand-written one.

use record::Protocol;

use super::h2_server::{Fields, H2Options, H2Server, Raw, RawServer};
use super::*;

fn h2c(urls: &[String], plan: Plan) -> RunConfig {
    let mut config = config(urls, plan);
    config.settings.h2c = true;
    config
}

/// Error texts by kind, with their counts.
fn errors(run: &Run) -> HashMap<(ErrorKind, String), usize> {
    run.records
        .iter()
        .filter_map(|r| run.error_text(r))
        .fold(HashMap::new(), |mut counts, key| {
            *counts.entry(key).or_default() += 1;
            counts
        })
}

fn statuses(run: &Run) -> HashMap<u16, usize> {
    run.records.iter().fold(HashMap::new(), |mut counts, r| {
        *counts.entry(r.status).or_default() += 1;
        counts
    })
}

#[test]
fn h2c_streams_share_one_connection_and_are_recorded_like_http1() {
    let server = H2Server::start(H2Options::default());
    let run = run(&h2c(&[server.url("/ok")], open_rate(500.0, 200)));
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 200)]),
        "{:?}",
        errors(&run)
    );
    for record in &run.records {
        assert_eq!(record.protocol, Protocol::Http2);
        assert!(record.latency_ns >= record.send_lag_ns && record.latency_ns > 0);
        assert!(record.ttfb_ns > 0 && record.ttfb_ns <= record.latency_ns);
        assert!(record.bytes_in > 2, "head and body: {}", record.bytes_in);
        assert!(
            record.bytes_out > 9,
            "a HEADERS frame: {}",
            record.bytes_out
        );
    }
    assert_eq!(server.stats.h2_requests.load(Ordering::SeqCst), 200);
    // Two workers, one connection each at most.
    assert!(server.stats.connections.load(Ordering::SeqCst) <= 2);
}

#[test]
fn keepalive_off_gives_each_h2_request_a_connection_of_its_own() {
    let server = H2Server::start(H2Options::default());
    let mut cfg = h2c(&[server.url("/ok")], open_rate(200.0, 20));
    cfg.attacks[0].settings.keepalive = false;
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 20)]),
        "{:?}",
        errors(&run)
    );
    assert!(run.records.iter().all(|r| r.protocol == Protocol::Http2));
    // One per request, beside the connections each worker opens at the start.
    let connections = server.stats.connections.load(Ordering::SeqCst) as u64;
    let warm = cfg.threads() as u64 * cfg.settings.initial_connections;
    assert!(
        (20..=20 + warm).contains(&connections),
        "{connections} connections"
    );
}

#[test]
fn https_negotiates_h2_by_alpn_unless_told_not_to() {
    let server = H2Server::start(H2Options {
        tls: true,
        ..H2Options::default()
    });
    let mut cfg = config(&[server.https_url("/ok")], open_rate(200.0, 20));
    cfg.settings.tls.insecure = true;
    let negotiated = run(&cfg);
    assert_eq!(statuses(&negotiated), HashMap::from([(200, 20)]));
    assert_eq!(server.stats.h2_requests.load(Ordering::SeqCst), 20);
    assert!(
        negotiated
            .records
            .iter()
            .all(|r| r.protocol == Protocol::Http2)
    );

    cfg.settings.http2 = false;
    let refused = run(&cfg);
    assert_eq!(statuses(&refused), HashMap::from([(200, 20)]));
    assert_eq!(server.stats.h1_requests.load(Ordering::SeqCst), 20);
    assert!(
        refused
            .records
            .iter()
            .all(|r| r.protocol == Protocol::Http1)
    );
    assert_eq!(server.stats.h2_requests.load(Ordering::SeqCst), 20);
}

#[test]
fn a_tls_server_without_h2_gets_http1() {
    let (server, _dir) = tls::tls_server();
    let url = format!("https://localhost:{}/ok", server.addr.port());
    let mut cfg = config(&[url], open_rate(200.0, 20));
    cfg.settings.tls.insecure = true;
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 20)]),
        "{:?}",
        errors(&run)
    );
    assert_eq!(server.stats.requests.load(Ordering::SeqCst), 20);
}

#[test]
fn the_stream_limit_opens_more_connections_and_is_never_passed() {
    let server = H2Server::start(H2Options {
        max_concurrent_streams: Some(1),
        ..H2Options::default()
    });
    let mut cfg = h2c(&[server.url("/slow/30")], open_rate(400.0, 40));
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 40)]),
        "{:?}",
        errors(&run)
    );
    assert_eq!(
        server.stats.max_concurrent_streams.load(Ordering::SeqCst),
        1
    );
    assert!(server.stats.connections.load(Ordering::SeqCst) > 1);

    let server = H2Server::start(H2Options::default());
    let mut cfg = h2c(&[server.url("/slow/30")], open_rate(400.0, 40));
    (cfg.settings.threads, cfg.settings.max_streams) = (Some(1), 3);
    let run = super::run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 40)]),
        "{:?}",
        errors(&run)
    );
    assert_eq!(
        server.stats.max_concurrent_streams.load(Ordering::SeqCst),
        3
    );
}

#[test]
fn a_stalled_stream_times_out_is_cancelled_and_the_connection_goes_on() {
    let server = H2Server::start(H2Options::default());
    let mut cfg = h2c(
        &[server.url("/stall"), server.url("/ok")],
        open_rate(100.0, 20),
    );
    cfg.settings.threads = Some(1);
    cfg.attacks[0].settings.timeout = Duration::from_millis(300);
    let run = run(&cfg);
    assert_eq!(statuses(&run), HashMap::from([(200, 10), (0, 10)]));
    let timeouts = (ErrorKind::Timeout, "timeout awaiting response".to_owned());
    assert_eq!(errors(&run), HashMap::from([(timeouts, 10)]));
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.stats.client_resets.load(Ordering::SeqCst) < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.stats.client_resets.load(Ordering::SeqCst), 10);
    assert_eq!(server.stats.connections.load(Ordering::SeqCst), 1);
}

#[test]
fn bodies_larger_than_the_windows_go_whole_both_ways() {
    let server = H2Server::start(H2Options::default());
    let mut post = target(&server.url("/echo"));
    post.method = "POST".to_owned();
    post.body = vec![b'b'; 200_000];
    let big = target(&server.url("/big/1000000"));
    let mut cfg = h2c(&[], open_rate(50.0, 10));
    cfg.attacks[0].targets = Targets::List(vec![post, big]);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 10)]),
        "{:?}",
        errors(&run)
    );
    assert_eq!(server.stats.body_bytes.load(Ordering::SeqCst), 5 * 200_000);
    for record in &run.records {
        let (bytes_in, bytes_out) = (record.bytes_in, record.bytes_out);
        match record.seq % 2 {
            0 => assert!(bytes_out > 200_000, "{bytes_out}"),
            _ => assert!(bytes_in > 1_000_000, "{bytes_in}"),
        }
    }
}

#[test]
fn statuses_redirects_and_resets_over_h2() {
    let server = H2Server::start(H2Options::default());
    let urls = [
        server.url("/status/503"),
        server.url("/redirect"),
        server.url("/reset"),
    ];
    let run = run(&h2c(&urls, open_rate(150.0, 30)));
    assert_eq!(
        statuses(&run),
        HashMap::from([(503, 10), (200, 10), (0, 10)])
    );
    let want = HashMap::from([
        (
            (ErrorKind::Status, "503 Service Unavailable".to_owned()),
            10,
        ),
        (
            (ErrorKind::Stream, "rst_stream: internal_error".to_owned()),
            10,
        ),
    ]);
    assert_eq!(errors(&run), want);
}

/// A server-streaming gRPC call of `path` (its request is the empty message).
fn grpc_stream_target(url: &str) -> Target {
    let header = |name: &str, value: &str| workload::Header {
        name: name.to_owned(),
        value: value.to_owned(),
    };
    Target {
        headers: vec![
            header("content-type", "application/grpc"),
            header("te", "trailers"),
        ],
        body: vec![0, 0, 0, 0, 0],
        grpc_stream: Some(workload::GrpcStream {
            messages_out: 1,
            ..workload::GrpcStream::default()
        }),
        ..Target::get("POST", url::Url::parse(url).unwrap())
    }
}

/// A bidirectional call of `/grpc-echo` sending `messages` (3 bytes each) `repeat`
/// times over, one each `every_ms`.
fn grpc_paced_target(url: &str, messages: u32, repeat: u32, every_ms: u64) -> Target {
    let message = [0, 0, 0, 0, 3, b'a', b'b', b'c'];
    Target {
        body: message.repeat(messages as usize),
        grpc_stream: Some(workload::GrpcStream {
            messages_out: messages,
            bytes_out: 3 * u64::from(messages),
            repeat,
            every_ns: every_ms * 1_000_000,
            bidi: true,
        }),
        ..grpc_stream_target(url)
    }
}

#[test]
fn a_paced_stream_sends_one_message_each_interval_repeating_its_messages() {
    let server = H2Server::start(H2Options::default());
    let url = server.url("/grpc-echo");
    let mut config = h2c(std::slice::from_ref(&url), open_rate(4.0, 2));
    let paced = grpc_paced_target(&url, 2, 3, 25);
    config.attacks[0].targets = Targets::List(vec![paced]);
    let run = run(&config);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 2)]),
        "{:?}",
        errors(&run)
    );
    for call in &run.connections {
        let figures = (call.messages_out, call.bytes_out, call.messages_in);
        assert_eq!(figures, (6, 18, 6), "{call:?}");
        // Six sends 25ms apart: the last 125ms after the call's start.
        let span_ns = call.closed_unix_ns - call.opened_unix_ns;
        assert!(span_ns >= 125_000_000, "{call:?}");
        // Each answer timed against its own message: well under the 25ms between
        // sends (from the call's start, half would be 50ms at least). The first
        // may wait for the connection.
        assert_eq!(call.round_trips.count(), 6, "{call:?}");
        assert!(
            call.round_trips.quantile(0.5).unwrap() < 20_000_000,
            "{call:?}"
        );
    }
    // The calls are 250ms apart: each call's messages arrive 25ms apart (the first
    // may go late, waiting for the connection: the next are due by the call's start).
    let mut sorted = server.stats.message_arrivals.lock().unwrap().clone();
    assert_eq!(sorted.len(), 12);
    sorted.sort();
    for call in [&sorted[..6], &sorted[6..]] {
        for pair in call[1..].windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= Duration::from_millis(20), "{gap:?} in {call:?}");
        }
    }
}

#[test]
fn server_streams_are_counted_per_call_and_a_reset_or_oversized_one_is_broken() {
    let server = H2Server::start(H2Options::default());
    let urls = [
        server.url("/grpc/5/ok"),
        server.url("/grpc/3/reset"),
        server.url("/grpc/2/big"),
    ];
    let mut config = h2c(&urls, open_rate(60.0, 12));
    config.attacks[0].targets = Targets::List(urls.iter().map(|u| grpc_stream_target(u)).collect());
    let run = run(&config);
    assert_eq!(run.records.len(), 12);
    // One entry per call, beside its record, whatever its end.
    assert_eq!(run.connections.len(), 12, "{:?}", run.connections);
    for (record, call) in run.records.iter().zip(&run.connections) {
        assert_eq!((call.seq, call.target), (record.seq, record.target));
        assert_eq!(call.kind, record::EntryKind::GrpcCall);
        // Payload bytes count the oversized message's first byte too.
        let (messages, bytes, by) = match record.target {
            0 => (5, 15, record::ClosedBy::Server),
            1 => (3, 9, record::ClosedBy::Broken),
            _ => (2, 7, record::ClosedBy::Broken),
        };
        let figures = (call.messages_in, call.bytes_in, call.close.by);
        assert_eq!(figures, (messages, bytes, by), "{call:?}");
        // Each message timed: the gaps between them, at least the server's 2ms.
        assert_eq!(call.latency.count(), messages - 1);
        assert!(call.latency.quantile(0.0).unwrap() >= 1_900_000, "{call:?}");
        let first_ns = call.first_message_ns.unwrap();
        let span_ns = call.closed_unix_ns - call.opened_unix_ns;
        assert!(first_ns >= 1_900_000 && first_ns < span_ns, "{call:?}");
    }
    let want = HashMap::from([
        (
            (ErrorKind::Stream, "rst_stream: internal_error".to_owned()),
            4,
        ),
        (
            (
                ErrorKind::Grpc,
                "RESOURCE_EXHAUSTED: a message over the 4 MiB receive limit".to_owned(),
            ),
            4,
        ),
    ]);
    assert_eq!(errors(&run), want);
    assert_eq!(run.summary.torn, None);
}

#[test]
fn closed_model_users_over_h2() {
    let server = H2Server::start(H2Options::default());
    let plan = Plan {
        pacing: Pacing::Closed {
            users: Schedule::constant(4.0),
            think_ns: 0,
        },
        duration_ns: None,
        max_requests: Some(40),
        shard: workload::Shard::WHOLE,
    };
    let run = run(&h2c(&[server.url("/slow/5")], plan));
    assert_eq!(statuses(&run), HashMap::from([(200, 40)]));
    assert!(server.stats.max_concurrent_streams.load(Ordering::SeqCst) <= 4);
}

#[test]
fn refused_streams_go_once_more() {
    let server = RawServer::start(Raw::RefuseFirst);
    let mut cfg = h2c(&[server.url("/")], open_rate(100.0, 10));
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 10)]),
        "{:?}",
        errors(&run)
    );

    let server = RawServer::start(Raw::RefuseAll);
    let run = super::run(&h2c(&[server.url("/")], open_rate(100.0, 10)));
    let refused = (ErrorKind::Stream, "rst_stream: refused_stream".to_owned());
    assert_eq!(errors(&run), HashMap::from([(refused, 10)]));
}

/// A server that pings with every answer (grpc-go does) gets each ACK, and most go
/// out with the next request's frames rather than in a write of their own (each such
/// write woke the server once more per call).
#[test]
fn ping_acks_go_with_the_next_requests_and_none_is_lost() {
    let server = RawServer::start(Raw::PingEachAnswer);
    let mut cfg = h2c(&[server.url("/")], open_rate(2000.0, 200));
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 200)]),
        "{:?}",
        errors(&run)
    );
    // The last ACK may still be on its way when the run's results are in.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.ping_acks.lock().unwrap().len() < 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let acks = server.ping_acks.lock().unwrap().clone();
    assert_eq!(acks.len(), 200, "every PING answered");
    let together = acks.iter().filter(|&&t| t).count();
    // Before, none came with a request (each ACK was written as its answer was read).
    assert!(
        together >= 100,
        "{together} of 200 ACKs came with the next requests"
    );
}

#[test]
fn goaway_sends_the_streams_the_server_never_saw_elsewhere() {
    let server = RawServer::start(Raw::GoAwayAfterFirst);
    // Each connection serves one stream, so every later request is sent once more on a
    // new one; requests 50 ms apart keep two of them from meeting on the same new
    // connection (a second GOAWAY is an error: a stream is sent elsewhere once).
    let mut cfg = h2c(&[server.url("/")], open_rate(20.0, 10));
    cfg.settings.threads = Some(1);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 10)]),
        "{:?}",
        errors(&run)
    );
    assert!(server.connections.load(Ordering::SeqCst) >= 2);
}

#[test]
fn broken_servers_are_protocol_errors_never_hangs() {
    let rows = [
        (Raw::DataOnStreamZero, "h2: DATA on stream 0"),
        (Raw::BadHpack, "hpack: index past the tables"),
        (
            Raw::Http1,
            "h2: the server answered in HTTP/1.x (it does not speak h2c)",
        ),
    ];
    for (behaviour, want) in rows {
        let server = RawServer::start(behaviour);
        let mut cfg = h2c(&[server.url("/")], open_rate(100.0, 5));
        cfg.attacks[0].settings.timeout = Duration::from_secs(2);
        let started = Instant::now();
        let run = run(&cfg);
        assert_eq!(
            errors(&run),
            HashMap::from([((ErrorKind::Protocol, want.to_owned()), 5)]),
            "{behaviour:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{behaviour:?}");
    }
}

#[test]
fn templates_and_lazy_targets_over_h2() {
    let server = H2Server::start(H2Options::default());
    let targets = workload::parse_http_targets(
        format!(
            "GET http://{}/t/{{{{rand.lower 8}}}}?n={{{{seq}}}}\n",
            server.addr
        )
        .as_bytes(),
        "targets.txt",
        &[],
        b"",
        &|_| Ok(Vec::new()),
    )
    .unwrap();
    let mut cfg = h2c(&[], open_rate(500.0, 20));
    cfg.attacks[0].targets = Targets::List(targets);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 20)]),
        "{:?}",
        errors(&run)
    );
    let paths = server.stats.paths.lock().unwrap().clone();
    let distinct: std::collections::HashSet<_> = paths.iter().collect();
    assert_eq!((paths.len(), distinct.len()), (20, 20), "{paths:?}");

    let urls: Vec<String> = (0..30).map(|i| server.url(&format!("/t/{i}"))).collect();
    let stream: engine::TargetIter = Box::new(urls.into_iter().map(|u| Ok(target(&u))));
    let mut cfg = h2c(&[], open_rate(1000.0, u64::MAX));
    cfg.attacks[0].targets = Targets::Stream(TargetStream::new(stream));
    let run = super::run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 30)]),
        "{:?}",
        errors(&run)
    );
}

#[test]
fn max_body_cancels_the_stream_once_enough_is_read() {
    let server = H2Server::start(H2Options::default());
    let mut cfg = h2c(
        &[server.url("/big/1000000"), server.url("/ok")],
        open_rate(50.0, 10),
    );
    cfg.attacks[0].settings.max_body = Some(20_000);
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 10)]),
        "{:?}",
        errors(&run)
    );
    for record in run.records.iter().filter(|r| r.seq % 2 == 0) {
        // The limit, and at most the DATA frame that crossed it (16 KiB) beyond it.
        assert!(
            (20_000..=20_000 + 16_384 + 64).contains(&record.bytes_in),
            "{}",
            record.bytes_in
        );
    }
    assert!(server.stats.connections.load(Ordering::SeqCst) <= 2);
}

#[test]
fn large_bodies_over_tls_are_read_to_the_end() {
    let server = H2Server::start(H2Options {
        tls: true,
        ..H2Options::default()
    });
    let mut cfg = config(&[server.https_url("/big/3000000")], open_rate(20.0, 4));
    cfg.settings.tls.insecure = true;
    let run = run(&cfg);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 4)]),
        "{:?}",
        errors(&run)
    );
    assert!(run.records.iter().all(|r| r.bytes_in > 3_000_000));
}

/// A `-data` row holding CRLF and a smuggled request, over h2c: in `:path` it is
/// percent-encoded, in a header it refuses the request (`unsafe_value`); the server
/// gets no field loadlab did not mean to send (docs/FLOWS.md, "Values from outside a
/// request").
#[test]
fn outside_values_never_add_fields_or_requests_over_h2() {
    let server = H2Server::start(H2Options::default());
    let evil = "abc\r\nX-Injected: yes\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x";
    let csv = format!("token\n\"{evil}\"\nsafe\n");
    let with_rows = |target: String, requests: u64| {
        let targets =
            workload::parse_http_targets(target.as_bytes(), "targets.txt", &[], b"", &|_| {
                Ok(Vec::new())
            })
            .unwrap();
        let data =
            workload::DataTable::read(csv.as_bytes(), "rows.csv", workload::DataOrder::Sequential)
                .unwrap();
        let mut cfg = h2c(&[], open_rate(200.0, requests));
        cfg.attacks[0].targets = Targets::List(targets);
        cfg.attacks[0].data = Some(Arc::new(data));
        run(&cfg)
    };
    let header = format!(
        "GET http://{}/t/x\nX-Token: {{{{csv.token}}}}\n",
        server.addr
    );
    let run = with_rows(header, 2);
    let want_error = format!(
        "GET http://{}/t/x: {{{{csv.token}}}} in header X-Token holds CR, LF or NUL: not sent",
        server.addr
    );
    assert_eq!(
        errors(&run),
        HashMap::from([((ErrorKind::UnsafeValue, want_error), 1)])
    );
    assert_eq!(statuses(&run), HashMap::from([(0, 1), (200, 1)]));
    let fields = server.stats.fields.lock().unwrap().clone();
    let text = |fields: &[(String, Vec<u8>)]| {
        fields
            .iter()
            .map(|(n, v)| format!("{n}: {}", String::from_utf8_lossy(v)))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        fields.len(),
        1,
        "one request reached the server: {fields:?}"
    );
    assert_eq!(
        text(&fields[0]),
        [
            ":method: GET",
            ":path: /t/x",
            &format!("user-agent: loadlab/{}", env!("CARGO_PKG_VERSION")),
            "x-token: safe",
        ]
    );
    // The same row in the path alone: encoded into the one `:path`.
    let path = format!(
        "GET http://{}/t/{{{{csv.token}}}}?q={{{{csv.token}}}}\n",
        server.addr
    );
    let run = with_rows(path, 1);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 1)]),
        "{:?}",
        errors(&run)
    );
    let fields = server.stats.fields.lock().unwrap().clone();
    let encoded = "abc%0D%0AX-Injected:%20yes%0D%0A%0D%0AGET%20/smuggled%20HTTP/1.1%0D%0AHost:%20x";
    assert_eq!(
        text(&fields[1])[..2],
        [
            ":method: GET".to_owned(),
            format!(":path: /t/{encoded}?q={encoded}"),
        ]
    );
    assert_eq!(fields.len(), 2, "{fields:?}");
}

#[test]
fn traced_requests_carry_the_tracestate_beside_their_traceparent_over_h2() {
    let server = H2Server::start(H2Options::default());
    let text = format!(
        "GET {}\n\nGET {}\n",
        server.url("/ok"),
        server.url("/t/{{seq}}")
    );
    let targets =
        workload::parse_http_targets(
            text.as_bytes(),
            "targets.txt",
            &[],
            b"",
            &|_| Ok(Vec::new()),
        )
        .unwrap();
    assert!(targets[1].is_templated() && !targets[0].is_templated());
    let mut config = h2c(&[], open_rate(200.0, 20));
    config.attacks[0].targets = Targets::List(targets);
    config.settings.trace = Some(workload::TraceSettings { sample: 1.0 });
    config.settings.trace_state =
        Some(workload::TraceState::parse("vendor=abc, tenant@sys=x y").unwrap());
    let run = run(&config);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 20)]),
        "{:?}",
        errors(&run)
    );
    let fields = server.stats.fields.lock().unwrap().clone();
    assert_eq!(fields.len(), 20);
    // Static and templated targets alike: one traceparent, then the tracestate as given.
    for request in &fields {
        let value = |name: &str| {
            (request.iter())
                .filter(|(n, _)| n == name)
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(value("traceparent").len(), 1, "{request:?}");
        assert_eq!(
            value("tracestate"),
            ["vendor=abc,tenant@sys=x y"],
            "{request:?}"
        );
        let names: Vec<&str> = request.iter().map(|(n, _)| n.as_str()).collect();
        let at = names.iter().position(|n| *n == "traceparent").unwrap();
        assert_eq!(names[at + 1], "tracestate", "{names:?}");
    }
}

/// A traced request's redirect hop carries the request's own trace context: the same
/// `traceparent` (loadlab's one client span covers every hop) and the `tracestate`.
#[test]
fn a_traced_requests_redirect_hop_carries_its_trace_context() {
    let server = H2Server::start(H2Options::default());
    let mut config = h2c(&[server.url("/redirect")], open_rate(200.0, 10));
    config.settings.trace = Some(workload::TraceSettings { sample: 1.0 });
    config.settings.trace_state = Some(workload::TraceState::parse("vendor=abc").unwrap());
    let run = run(&config);
    assert_eq!(
        statuses(&run),
        HashMap::from([(200, 10)]),
        "{:?}",
        errors(&run)
    );
    let fields = server.stats.fields.lock().unwrap().clone();
    let value = |request: &Fields, name: &str| {
        (request.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    };
    let mut by_path: HashMap<String, Vec<String>> = HashMap::new();
    for request in &fields {
        assert_eq!(
            value(request, "tracestate").as_deref(),
            Some("vendor=abc"),
            "{request:?}"
        );
        let traceparent = value(request, "traceparent").expect("a traceparent on every hop");
        let path = value(request, ":path").unwrap();
        by_path.entry(path).or_default().push(traceparent);
    }
    let mut first = by_path.remove("/redirect").unwrap();
    let mut hops = by_path.remove("/ok").unwrap();
    first.sort();
    hops.sort();
    assert_eq!(first.len(), 10);
    assert_eq!(first, hops, "each hop carries its request's traceparent");
}
