//! HTTP/2 against a real simulator on 127.0.0.1 (port 0), driven by `h2`'s client:
//! h2c with prior knowledge, TLS with ALPN, the same recipes and admin API as
//! HTTP/1.1, failure modes as HTTP/2 frames, and the concurrent-stream limit. Each
//! test runs its client in a current-thread runtime, every wait bounded by a timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::Reason;
use h2::client::SendRequest;
use http::{HeaderMap, Method, Request};
use simulator::{Recipe, Simulator, SimulatorOptions, Tls, parse_recipe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// Longest any one exchange may take before the test fails.
const LIMIT: Duration = Duration::from_secs(10);

fn start_h2(json: Option<&str>, tune: impl FnOnce(&mut SimulatorOptions)) -> Simulator {
    let recipe = json.map_or_else(Recipe::default, |j| parse_recipe(j, "test").unwrap());
    let mut options = SimulatorOptions {
        threads: 2,
        seed: Some(7),
        ..SimulatorOptions::new("127.0.0.1:0".parse().unwrap())
    };
    tune(&mut options);
    Simulator::start(options, &recipe).unwrap()
}

fn block_on<F: Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { tokio::time::timeout(LIMIT * 3, future).await.unwrap() })
}

/// A client connection; `ended` fires with the connection task's result.
struct H2 {
    send: SendRequest<Bytes>,
    ended: oneshot::Receiver<Result<(), h2::Error>>,
}

async fn handshake<T>(io: T) -> H2
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = h2::client::handshake(io).await.unwrap();
    let (tx, ended) = oneshot::channel();
    tokio::spawn(async move {
        let _ = tx.send(conn.await);
    });
    H2 { send, ended }
}

async fn h2c(addr: SocketAddr) -> H2 {
    let tcp = TcpStream::connect(addr).await.unwrap();
    handshake(tcp).await
}

/// TLS to the simulator, trusting only its certificate, offering `alpn`.
async fn tls(
    addr: SocketAddr,
    certificate_pem: &str,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(certificate_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    /// DATA frames the body came in.
    frames: usize,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn send(
    client: &mut SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: &str,
) -> Result<Answer, h2::Error> {
    let request = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .body(())
        .unwrap();
    let client = client.clone().ready().await?;
    let mut client = client;
    let (response, mut stream) = client.send_request(request, body.is_empty())?;
    if !body.is_empty() {
        stream.send_data(Bytes::copy_from_slice(body.as_bytes()), true)?;
    }
    let response = tokio::time::timeout(LIMIT, response).await.unwrap()?;
    let (head, mut recv) = response.into_parts();
    let mut answer = Answer {
        status: head.status.as_u16(),
        headers: head.headers,
        body: Vec::new(),
        frames: 0,
    };
    while let Some(chunk) = tokio::time::timeout(LIMIT, recv.data()).await.unwrap() {
        let chunk = chunk?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        answer.body.extend_from_slice(&chunk);
        answer.frames += 1;
    }
    Ok(answer)
}

async fn get(client: &mut SendRequest<Bytes>, path: &str) -> Result<Answer, h2::Error> {
    send(client, Method::GET, path, "").await
}

fn metric(text: &str, line_start: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn h2c_serves_recipes_beside_http11_on_one_port() {
    let sim = start_h2(
        Some(
            r#"[{"route": "/a", "random_content": "3kb", "headers": {"x-recipe": "yes", "keep-alive": "timeout=5"}, "stages": [{"status": 200, "latency": "100ms"}]},
                {"route": "/gz", "body": "<<20kb>>", "headers": {"content-encoding": "gzip"}, "stages": [{"status": 200}]}]"#,
        ),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async {
        let mut client = h2c(addr).await;
        let started = Instant::now();
        let answer = get(&mut client.send, "/a?q=1").await.unwrap();
        assert!(
            started.elapsed() >= Duration::from_millis(95),
            "latency served"
        );
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body.len(), 3 * 1024);
        assert_eq!(answer.headers["content-length"], "3072");
        assert_eq!(answer.headers["x-recipe"], "yes");
        assert_eq!(answer.headers["server"], "loadlab-simulate");
        assert!(answer.headers.contains_key("date"));
        assert!(
            !answer.headers.contains_key("keep-alive"),
            "HTTP/1.1-only header dropped"
        );
        let head = send(&mut client.send, Method::HEAD, "/a", "")
            .await
            .unwrap();
        assert_eq!((head.status, head.body.len()), (200, 0));
        assert_eq!(head.headers["content-length"], "3072");
        let gz = get(&mut client.send, "/gz").await.unwrap();
        assert_eq!(gz.headers["content-encoding"], "gzip");
        assert!(gz.body.starts_with(&[0x1f, 0x8b]) && gz.body.len() < 20 * 1024);
        let missing = get(&mut client.send, "/nowhere").await.unwrap();
        assert_eq!(missing.status, 406);
        assert!(
            missing.text().contains("Recipe not set at /nowhere"),
            "{}",
            missing.text()
        );
        let head = send(&mut client.send, Method::HEAD, "/nowhere", "")
            .await
            .unwrap();
        assert_eq!((head.status, head.body.len()), (406, 0));
        // HTTP/1.1 on the same port, and both counted by protocol.
        assert_eq!(super::get(addr, "/a").status, 200);
        let metrics = get(&mut client.send, "/metrics").await.unwrap().text();
        assert_eq!(
            metric(
                &metrics,
                "loadlab_sim_protocol_requests_total{protocol=\"h2\"}"
            ),
            5
        );
        assert_eq!(
            metric(
                &metrics,
                "loadlab_sim_protocol_requests_total{protocol=\"http/1.1\"}"
            ),
            1
        );
        assert_eq!(
            metric(
                &metrics,
                "loadlab_sim_requests_total{route=\"/a\",status=\"200\"}"
            ),
            3
        );
    });
    sim.stop();
}

#[test]
fn tls_negotiates_h2_or_http11_by_alpn() {
    let sim = start_h2(
        Some(r#"{"route": "/a", "random_content": "2kb", "stages": [{"status": 200}]}"#),
        |o| o.tls = Some(Tls::SelfSigned),
    );
    let addr = sim.local_addr();
    let pem = sim.certificate_pem().unwrap().to_owned();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    block_on(async {
        let stream = tls(addr, &pem, &[b"h2", b"http/1.1"]).await;
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut client = handshake(stream).await;
        let answer = get(&mut client.send, "/a").await.unwrap();
        assert_eq!((answer.status, answer.body.len()), (200, 2048));

        for alpn in [&[&b"http/1.1"[..]][..], &[]] {
            let mut stream = tls(addr, &pem, alpn).await;
            assert_ne!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
            stream
                .write_all(b"GET /a HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut raw = Vec::new();
            let _ = tokio::time::timeout(LIMIT, stream.read_to_end(&mut raw))
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&raw);
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{alpn:?}: {text}");
            assert!(text.contains("content-length: 2048\r\n"), "{text}");
        }
        // Cleartext to a TLS port gets no answer, not a crash.
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain
            .write_all(b"GET /a HTTP/1.1\r\nhost: t\r\n\r\n")
            .await
            .unwrap();
        let mut raw = Vec::new();
        let _ = tokio::time::timeout(LIMIT, plain.read_to_end(&mut raw))
            .await
            .unwrap();
        assert!(!raw.starts_with(b"HTTP/1.1 200"), "{raw:?}");
    });
    sim.stop();
}

/// HTTP/1.1 over TLS: a body larger than the socket's buffers, read late, arrives
/// whole (rustls keeps records a full socket refused until the stream is flushed).
#[test]
fn large_bodies_arrive_whole_over_tls() {
    let sim = start_h2(
        Some(r#"{"route": "/big", "random_content": "8mb", "stages": [{"status": 200}]}"#),
        |o| o.tls = Some(Tls::SelfSigned),
    );
    let addr = sim.local_addr();
    let pem = sim.certificate_pem().unwrap().to_owned();
    block_on(async {
        for close in ["close", "keep-alive"] {
            let mut stream = tls(addr, &pem, &[b"http/1.1"]).await;
            let head =
                format!("GET /big HTTP/1.1\r\nhost: localhost\r\nconnection: {close}\r\n\r\n");
            stream.write_all(head.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            let want = 8 * 1024 * 1024;
            let mut raw = Vec::new();
            let mut chunk = vec![0u8; 64 * 1024];
            let read_all = async {
                loop {
                    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n");
                    if head_end.is_some_and(|end| raw.len() >= end + 4 + want) {
                        return;
                    }
                    match stream.read(&mut chunk).await {
                        Ok(n) if n > 0 => raw.extend_from_slice(&chunk[..n]),
                        _ => return,
                    }
                }
            };
            let _ = tokio::time::timeout(LIMIT, read_all).await;
            let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            assert_eq!(raw.len() - head_end, want, "connection: {close}");
        }
        let stream = tls(addr, &pem, &[b"h2"]).await;
        let mut client = handshake(stream).await;
        assert_eq!(
            get(&mut client.send, "/big").await.unwrap().body.len(),
            8 * 1024 * 1024
        );
    });
    sim.stop();
}

#[test]
fn admin_api_stages_and_status_mixes_work_over_h2() {
    let sim = start_h2(None, |_| {});
    let addr = sim.local_addr();
    block_on(async {
        let mut client = h2c(addr).await;
        assert_eq!(get(&mut client.send, "/x").await.unwrap().status, 406);
        let recipe = r#"[{"route": "/x", "body": "hello", "stages": [{"at": 0, "status": 503}, {"at": "300ms", "status": 200}]},
                         {"route": "/mix", "stages": [{"status": {"200": 1, "502": 1}}]}]"#;
        let posted = send(&mut client.send, Method::POST, "/_admin/add_recipe", recipe)
            .await
            .unwrap();
        assert_eq!(posted.status, 201, "{}", posted.text());
        let bad = send(&mut client.send, Method::POST, "/_admin/add_recipe", "{")
            .await
            .unwrap();
        assert_eq!(bad.status, 400);
        assert!(
            bad.text().contains("add_recipe: not valid json"),
            "{}",
            bad.text()
        );
        let status = get(&mut client.send, "/_admin/routes_status")
            .await
            .unwrap()
            .text();
        assert!(status.contains("/x 503 0"), "{status}");
        assert_eq!(get(&mut client.send, "/x").await.unwrap().status, 503);
        tokio::time::sleep(Duration::from_millis(350)).await;
        let later = get(&mut client.send, "/x").await.unwrap();
        assert_eq!((later.status, later.text().as_str()), (200, "hello"));

        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..200 {
            let answer = get(&mut client.send, "/mix").await.unwrap();
            *counts.entry(answer.status).or_insert(0) += 1;
        }
        let ok = counts.get(&200).copied().unwrap_or(0);
        let bad = counts.get(&502).copied().unwrap_or(0);
        assert_eq!(ok + bad, 200, "{counts:?}");
        assert!((60..=140).contains(&ok), "{counts:?}");
        let count = get(&mut client.send, "/_admin/current_count")
            .await
            .unwrap()
            .text();
        let count: serde_json::Value = serde_json::from_str(&count).unwrap();
        assert_eq!(count["502"], bad);
    });
    sim.stop();
}

#[test]
fn the_capacity_model_holds_over_h2() {
    let sim = start_h2(
        Some(
            r#"{"route": "/busy", "stages": [{"status": 200, "latency": "300ms"}],
                "capacity": {"workers": 1, "reject_status": 503}}"#,
        ),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async {
        let client = h2c(addr).await;
        let mut first = client.send.clone();
        let mut second = client.send.clone();
        let slow = tokio::spawn(async move { get(&mut first, "/busy").await.unwrap().status });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let turned_away = get(&mut second, "/busy").await.unwrap().status;
        assert_eq!((slow.await.unwrap(), turned_away), (200, 503));
    });
    sim.stop();
}

/// A stream the client cancels gives its capacity-pool worker back at once.
#[test]
fn cancelled_streams_free_their_pool_worker() {
    let sim = start_h2(
        Some(
            r#"{"route": "/busy", "stages": [{"status": 200, "latency": "400ms"}],
                "capacity": {"workers": 1, "reject_status": 503}}"#,
        ),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async {
        let mut client = h2c(addr).await;
        let request = Request::get("http://localhost/busy").body(()).unwrap();
        let mut send = client.send.clone().ready().await.unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        // Gives up on it after 100 ms: dropping the response resets the stream (CANCEL).
        assert!(
            tokio::time::timeout(Duration::from_millis(100), response)
                .await
                .is_err()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let answer = get(&mut client.send, "/busy").await.unwrap();
        assert_eq!(
            answer.status, 200,
            "the cancelled stream still held the only worker"
        );
    });
    sim.stop();
}

#[test]
fn failure_modes_are_http2_frames() {
    let sim = start_h2(
        Some(
            r#"[{"route": "/reset", "stages": [{"failure": "reset"}]},
                {"route": "/refused", "stages": [{"failure": {"mode": "rst_stream", "code": "refused_stream"}}]},
                {"route": "/stall", "stages": [{"failure": {"mode": "stall", "for": "200ms"}}]},
                {"route": "/trickle", "random_content": "4kb", "stages": [{"status": 200, "failure": {"mode": "trickle", "chunk": "1kb", "every": "50ms"}}]},
                {"route": "/chunked", "random_content": "4kb", "stages": [{"status": 200, "failure": {"mode": "chunked", "chunk": "1kb"}}]},
                {"route": "/cut", "random_content": "4kb", "stages": [{"status": 200, "failure": {"mode": "close_mid_body", "after": "1kb"}}]},
                {"route": "/ok", "stages": [{"status": 200}]}]"#,
        ),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async {
        let mut client = h2c(addr).await;
        let reason = |result: Result<Answer, h2::Error>| result.err().and_then(|e| e.reason());
        assert_eq!(
            reason(get(&mut client.send, "/reset").await),
            Some(Reason::INTERNAL_ERROR)
        );
        assert_eq!(
            reason(get(&mut client.send, "/refused").await),
            Some(Reason::REFUSED_STREAM)
        );
        let started = Instant::now();
        assert_eq!(
            reason(get(&mut client.send, "/stall").await),
            Some(Reason::CANCEL)
        );
        assert!(started.elapsed() >= Duration::from_millis(190));
        let started = Instant::now();
        let trickled = get(&mut client.send, "/trickle").await.unwrap();
        assert_eq!((trickled.body.len(), trickled.frames), (4096, 4));
        assert_eq!(trickled.headers["content-length"], "4096");
        assert!(started.elapsed() >= Duration::from_millis(140));
        let chunked = get(&mut client.send, "/chunked").await.unwrap();
        assert_eq!((chunked.body.len(), chunked.frames), (4096, 4));
        assert!(!chunked.headers.contains_key("content-length"));
        assert_eq!(
            reason(get(&mut client.send, "/cut").await),
            Some(Reason::INTERNAL_ERROR)
        );
        // Stream errors leave the connection serving.
        assert_eq!(get(&mut client.send, "/ok").await.unwrap().status, 200);
        let metrics = get(&mut client.send, "/metrics").await.unwrap().text();
        assert_eq!(
            metric(
                &metrics,
                "loadlab_sim_requests_total{route=\"/refused\",status=\"rst_stream\"}"
            ),
            1
        );
    });
    sim.stop();
}

#[test]
fn goaway_close_and_malformed_end_the_connection() {
    let sim = start_h2(
        Some(
            r#"[{"route": "/goaway", "body": "bye", "stages": [{"status": 200, "failure": "goaway"}]},
                {"route": "/close", "stages": [{"failure": "close"}]},
                {"route": "/malformed", "stages": [{"failure": "malformed"}]},
                {"route": "/ok", "stages": [{"status": 200}]}]"#,
        ),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async {
        // goaway: this answer arrives, then GOAWAY (NO_ERROR) and the connection ends.
        let mut client = h2c(addr).await;
        let answer = get(&mut client.send, "/goaway").await.unwrap();
        assert_eq!((answer.status, answer.text().as_str()), (200, "bye"));
        let ended = tokio::time::timeout(LIMIT, client.ended)
            .await
            .unwrap()
            .unwrap();
        assert!(ended.is_ok(), "{ended:?}");
        let refused = get(&mut client.send, "/ok").await.err().unwrap();
        assert!(refused.is_go_away() && refused.is_remote(), "{refused:?}");
        assert_eq!(refused.reason(), Some(Reason::NO_ERROR));

        // close: no answer (the stream in flight dies with the connection), GOAWAY.
        let mut client = h2c(addr).await;
        let lost = get(&mut client.send, "/close").await.err().unwrap();
        assert!(lost.is_io(), "{lost:?}");
        let ended = tokio::time::timeout(LIMIT, client.ended)
            .await
            .unwrap()
            .unwrap();
        assert!(ended.is_ok(), "{ended:?}");
        let after = get(&mut client.send, "/ok").await.err().unwrap();
        assert!(after.is_go_away() && after.is_remote(), "{after:?}");

        // malformed: a connection error for the client.
        let mut client = h2c(addr).await;
        assert!(get(&mut client.send, "/malformed").await.is_err());
        let ended = tokio::time::timeout(LIMIT, client.ended)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            ended.err().and_then(|e| e.reason()),
            Some(Reason::PROTOCOL_ERROR)
        );

        // The server itself is fine, and counted each stream that ended a connection.
        let mut client = h2c(addr).await;
        assert_eq!(get(&mut client.send, "/ok").await.unwrap().status, 200);
        // Counted when each connection's task ends, maybe on the other thread: poll.
        let lines: Vec<String> = [
            ("/goaway", "200"),
            ("/close", "close"),
            ("/malformed", "malformed"),
        ]
        .iter()
        .map(|(route, status)| {
            format!("loadlab_sim_requests_total{{route=\"{route}\",status=\"{status}\"}}")
        })
        .collect();
        let started = Instant::now();
        loop {
            let metrics = get(&mut client.send, "/metrics").await.unwrap().text();
            let counts: Vec<u64> = lines.iter().map(|line| metric(&metrics, line)).collect();
            if counts == [1, 1, 1] {
                break;
            }
            assert!(
                started.elapsed() < LIMIT,
                "{lines:?}: {counts:?} in\n{metrics}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    sim.stop();
}

#[test]
fn max_concurrent_streams_is_advertised_and_kept() {
    let recipe = r#"{"route": "/slow", "stages": [{"status": 200, "latency": "200ms"}]}"#;
    for (max_streams, at_least, below) in [(1, 580, 5000), (250, 0, 500)] {
        let sim = start_h2(Some(recipe), |o| o.max_concurrent_streams = max_streams);
        let addr = sim.local_addr();
        block_on(async {
            let mut client = h2c(addr).await;
            assert_eq!(get(&mut client.send, "/slow").await.unwrap().status, 200);
            assert_eq!(client.send.current_max_send_streams(), max_streams as usize);
            let started = Instant::now();
            let tasks: Vec<_> = (0..3)
                .map(|_| {
                    let mut send = client.send.clone();
                    tokio::spawn(async move { get(&mut send, "/slow").await.unwrap().status })
                })
                .collect();
            for task in tasks {
                assert_eq!(task.await.unwrap(), 200);
            }
            let took = started.elapsed();
            assert!(
                took >= Duration::from_millis(at_least) && took < Duration::from_millis(below),
                "max {max_streams}: 3 requests of 200 ms took {took:?}"
            );
        });
        sim.stop();
    }
}

/// A GET carrying `cookie`, its answer's status and body.
async fn get_with_cookie(client: &SendRequest<Bytes>, path: &str, cookie: &str) -> (u16, String) {
    let request = Request::builder()
        .uri(format!("http://localhost{path}"))
        .header("cookie", cookie)
        .body(())
        .unwrap();
    let mut client = client.clone().ready().await.unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = tokio::time::timeout(LIMIT, response)
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    let mut recv = response.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = tokio::time::timeout(LIMIT, recv.data()).await.unwrap() {
        let chunk = chunk.unwrap();
        let _ = recv.flow_control().release_capacity(chunk.len());
        body.extend_from_slice(&chunk);
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn templates_cookies_and_item_ids_work_over_h2() {
    let sim = start_h2(
        Some(include_str!("../../../../examples/recipes/app_login.json")),
        |_| {},
    );
    let addr = sim.local_addr();
    block_on(async move {
        let mut client = h2c(addr).await;
        let login = get(&mut client.send, "/login?user=bo").await.unwrap();
        assert_eq!(login.status, 200);
        let cookies: Vec<&str> = login
            .headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        let body: serde_json::Value = serde_json::from_slice(&login.body).unwrap();
        let token = body["token"].as_str().unwrap();
        let session = format!("session={token}; Path=/; HttpOnly");
        assert_eq!(
            cookies,
            [session.as_str(), "user=bo; Path=/"],
            "{}",
            login.text()
        );
        assert_eq!(get(&mut client.send, "/items").await.unwrap().status, 401);
        let cookie = format!("a=1; session={token}");
        let rows = [
            ("/items/3", 200, r#"{"id":3,"name":"item 3"}"#),
            ("/items/30", 404, r#"{"error":"not found","id":"30"}"#),
        ];
        for (path, status, body) in rows {
            let got = get_with_cookie(&client.send, path, &cookie).await;
            assert_eq!(got, (status, body.to_owned()), "{path}");
        }
    });
    sim.stop();
}
