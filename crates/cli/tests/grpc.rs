//! gRPC calls end to end: the real binary against grpc-go's example servers (a gRPC
//! implementation nobody here wrote: `helloworld`'s greeter and `route_guide`, built
//! by `.ci/setup/grpc-go.sh`) on loopback, and the bad input that never reaches one.
//! Every run is bounded in count and time.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// Runs `attack` with `args` on `targets` (stdin) and waits for it.
fn attack(args: &[&str], targets: &str) -> Output {
    let mut child = loadlab()
        .arg("attack")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // An attack refused for its flags exits before it reads its targets.
    let _ = child.stdin.take().unwrap().write_all(targets.as_bytes());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One second of `targets` at `rate` with `proto`, recorded into `records`.
fn call_for_a_second(rate: &str, proto: &Path, records: &Path, targets: &str) {
    let output = attack(
        &[
            &format!("-rate={rate}"),
            "-duration=1s",
            "-proto",
            proto.to_str().unwrap(),
            "-output",
            records.to_str().unwrap(),
        ],
        targets,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
}

/// `report` of `file` in `format`.
fn report(file: &Path, format: &str) -> String {
    let output = loadlab()
        .args(["report", &format!("-type={format}")])
        .arg(file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
}

/// The directory `.ci/setup/grpc-go.sh` built the servers into, or `None` (a loud
/// skip) when it has not run and CI did not ask for them (`LOADLAB_REQUIRE_GRPC_GO`).
fn grpc_go() -> Option<PathBuf> {
    let dir = std::env::var_os("LOADLAB_GRPC_GO").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/loadlab/grpc-go")
        },
        PathBuf::from,
    );
    let found = [
        "greeter_server",
        "route_guide_server",
        "tls_server",
        "compression_server",
    ]
    .iter()
    .all(|server| dir.join("bin").join(server).is_file());
    if !found {
        assert!(
            std::env::var_os("LOADLAB_REQUIRE_GRPC_GO").is_none(),
            "LOADLAB_REQUIRE_GRPC_GO is set but {} has no servers: run .ci/setup/grpc-go.sh",
            dir.display()
        );
        eprintln!(
            "\n!!! SKIPPED: grpc-go's example servers are not built (source .ci/setup/grpc-go.sh) !!!\n"
        );
    }
    found.then_some(dir)
}

/// A grpc-go example server on loopback, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts `bin/NAME` of `dir` on a free loopback port and waits until it listens.
    /// (route_guide's server does not say its port, so `-port 0` cannot be read back:
    /// the port is taken from the kernel, freed, and handed over.)
    fn start(dir: &Path, name: &str) -> Server {
        Server::start_in(dir, name, dir)
    }

    /// [`Server::start`] in the working directory `cwd` (the TLS server finds its
    /// certificate relative to it).
    fn start_in(dir: &Path, name: &str, cwd: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(dir.join("bin").join(name))
            .args(["-port", &port.to_string()])
            .current_dir(cwd)
            // Go dies of SIGPIPE writing its log to a closed pipe: no pipe.
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{name} is not listening on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// helloworld.proto with a method the greeter does not implement (it answers
/// UNIMPLEMENTED, trailers-only).
fn greeter_proto(dir: &Path, out: &Path) -> PathBuf {
    let proto = std::fs::read_to_string(dir.join("proto/helloworld.proto")).unwrap();
    let proto = proto.replace(
        "rpc SayHello (HelloRequest) returns (HelloReply) {}",
        "rpc SayHello (HelloRequest) returns (HelloReply) {}\n  rpc SayGoodbye (HelloRequest) returns (HelloReply) {}",
    );
    assert!(proto.contains("SayGoodbye"));
    let path = out.join("helloworld.proto");
    std::fs::write(&path, proto).unwrap();
    path
}

#[test]
fn unary_calls_to_grpc_gos_greeter_succeed_and_report_their_grpc_statuses() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "greeter_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = greeter_proto(&dir, tmp.path());
    let records = tmp.path().join("run.llr");
    let port = server.port;
    let targets = format!(
        "GRPC 127.0.0.1:{port} helloworld.Greeter/SayHello\nx-caller: loadlab-test\ngrpc-timeout: 2s\n{{\"name\": \"loadlab\"}}\n\n\
         GRPC 127.0.0.1:{port} helloworld.Greeter/SayGoodbye\n{{\"name\": \"loadlab\"}}\n"
    );
    call_for_a_second("200/s", &proto, &records, &targets);
    let json = report(&records, "json");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["requests"], 200, "{json}");
    // Targets alternate: half the calls say hello (OK), half call the missing method.
    assert_eq!(value["status_codes"]["OK"], 100, "{json}");
    assert_eq!(value["status_codes"]["UNIMPLEMENTED"], 100, "{json}");
    assert_eq!(value["success"], 0.5, "{json}");
    let errors = value["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{json}");
    let error = errors[0].as_str().unwrap();
    assert!(
        error.starts_with("UNIMPLEMENTED: ") && error.contains("SayGoodbye"),
        "the code's name and the server's grpc-message: {error}"
    );
    let text_report = report(&records, "text");
    assert!(
        text_report.contains("OK:100") && text_report.contains("UNIMPLEMENTED:100"),
        "{text_report}"
    );
    assert!(
        text_report.contains("Protocols     [h2]                              200"),
        "over h2c: {text_report}"
    );
}

#[test]
fn placeholders_and_data_rows_land_in_string_fields_of_each_call() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "greeter_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = greeter_proto(&dir, tmp.path());
    // Rows a JSON template would break on: quotes, braces, CR LF, a placeholder's text.
    let data = tmp.path().join("who.csv");
    std::fs::write(
        &data,
        "who\nplain\n\"quote\"\"}, {\"\"name\"\": 1\"\n\"line\r\nbreak {{seq}}\"\n",
    )
    .unwrap();
    let records = tmp.path().join("run.llr");
    let targets = format!(
        "GRPC 127.0.0.1:{} helloworld.Greeter/SayHello\n{{\"name\": \"{{{{csv.who}}}} #{{{{seq}}}}\"}}\n",
        server.port
    );
    let output = attack(
        &[
            "-rate=60/s",
            "-duration=1s",
            "-proto",
            proto.to_str().unwrap(),
            "-data",
            data.to_str().unwrap(),
            "-output",
            records.to_str().unwrap(),
        ],
        &targets,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let value: serde_json::Value = serde_json::from_str(&report(&records, "json")).unwrap();
    // grpc-go answers INTERNAL to a message that does not decode: every call OK says
    // every rendered message was whole.
    // (A busy host may leave the last call unsent: every call sent is counted.)
    let calls = value["requests"].as_u64().unwrap();
    assert!(calls >= 50, "{value}");
    assert_eq!(value["status_codes"]["OK"], calls, "{value}");
    // The rows' lengths differ, so the calls' bytes out do: a message per call.
    let csv = loadlab()
        .args(["encode", "-to=csv"])
        .arg(&records)
        .output()
        .unwrap();
    let csv = text(&csv.stdout);
    let sizes: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|line| line.split(',').nth(3))
        .collect();
    assert!(sizes.len() >= 3, "bytes out per call: {sizes:?}");
}

#[test]
fn server_streaming_calls_to_route_guide_run_to_their_trailers() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "route_guide_server");
    let tmp = tempfile::tempdir().unwrap();
    let records = tmp.path().join("run.llr");
    let proto = route_guide_proto(&dir, tmp.path());
    // The whole map: the server streams every feature it knows (about a hundred).
    let targets = format!(
        "GRPC 127.0.0.1:{} routeguide.RouteGuide/ListFeatures\n\
         {{\"lo\": {{\"latitude\": 400000000, \"longitude\": -750000000}}, \"hi\": {{\"latitude\": 420000000, \"longitude\": -730000000}}}}\n",
        server.port
    );
    call_for_a_second("20/s", &proto, &records, &targets);
    let value: serde_json::Value = serde_json::from_str(&report(&records, "json")).unwrap();
    assert_eq!(value["requests"], 20);
    assert_eq!(value["status_codes"]["OK"], 20, "{value}");
    // Many messages per call: far more bytes in than one feature's.
    let mean_in = value["bytes_in"]["mean"].as_f64().unwrap();
    assert!(mean_in > 1000.0, "a stream of features, not one: {mean_in}");
    // Each call's messages are the features route_guide's data has in the rectangle.
    let want = features_in(
        &dir,
        (400_000_000, -750_000_000),
        (420_000_000, -730_000_000),
    );
    assert!(want > 10, "the data has features there: {want}");
    let rows = report(&records, "text");
    assert_eq!(row(&rows, "Stream Calls"), "20, 0", "{rows}");
    assert_eq!(row(&rows, "Msgs/Call"), format!("{want}, {want}"), "{rows}");
    let messages = row(&rows, "Messages");
    assert!(
        messages.starts_with(&format!("20, {}, ", 20 * want)),
        "{rows}"
    );
}

/// route_guide.proto is written in edition 2023, which protox does not read yet;
/// with implicit field presence it is proto3, field for field: that, in `out`.
fn route_guide_proto(dir: &Path, out: &Path) -> PathBuf {
    let proto = out.join("route_guide.proto");
    let source = std::fs::read_to_string(dir.join("proto/route_guide.proto")).unwrap();
    let source = source
        .replace("edition = \"2023\";", "syntax = \"proto3\";")
        .replace("option features.field_presence = IMPLICIT;", "");
    std::fs::write(&proto, source).unwrap();
    proto
}

#[test]
fn client_and_bidirectional_streams_to_route_guide_send_every_message() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "route_guide_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = route_guide_proto(&dir, tmp.path());
    let records = tmp.path().join("run.llr");
    // RecordRoute: three points, one line each; one summary back per call.
    let points = tmp.path().join("points.jsonl");
    std::fs::write(
        &points,
        "{\"latitude\": 407838351, \"longitude\": -746143763}\n\n{\"latitude\": 408122808, \"longitude\": -743999179}\n",
    )
    .unwrap();
    let targets = format!(
        "GRPC 127.0.0.1:{} routeguide.RouteGuide/RecordRoute\n\
         {{\"latitude\": 413628156, \"longitude\": -749015468}}\n@{}\n",
        server.port,
        points.display()
    );
    call_for_a_second("5/s", &proto, &records, &targets);
    let rows = report(&records, "text");
    assert!(rows.contains("OK:5"), "{rows}");
    assert_eq!(row(&rows, "Stream Calls"), "5, 0", "{rows}");
    assert!(row(&rows, "Messages").starts_with("15, 5, "), "{rows}");
    // RouteChat: one call of four notes at one place; the server answers each with
    // every note it has there, that one included (1 + 2 + 3 + 4).
    let note = |text: &str| {
        format!(
            "{{\"location\": {{\"latitude\": 1, \"longitude\": 2}}, \"message\": \"{text}\"}}\n"
        )
    };
    let targets = format!(
        "GRPC 127.0.0.1:{} routeguide.RouteGuide/RouteChat\n{}{}{}{}",
        server.port,
        note("a"),
        note("b"),
        note("c"),
        note("d")
    );
    call_for_a_second("1/s", &proto, &records, &targets);
    let rows = report(&records, "text");
    assert!(rows.contains("OK:1"), "{rows}");
    assert!(row(&rows, "Messages").starts_with("4, 10, "), "{rows}");
    assert_eq!(row(&rows, "Msgs/Call"), "10, 10", "{rows}");
}

#[test]
fn a_paced_bidirectional_stream_grpc_go_ends_mid_call_is_counted_as_its_kind_and_the_record_intact()
{
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "route_guide_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = route_guide_proto(&dir, tmp.path());
    let records = tmp.path().join("cut.llr");
    // Six notes 50ms apart, a deadline of 100ms: grpc-go ends each call mid-stream,
    // with DEADLINE_EXCEEDED in its trailers or a RST_STREAM (CANCEL), whichever
    // wins the race on its side.
    let targets = format!(
        "GRPC 127.0.0.1:{} routeguide.RouteGuide/RouteChat\ngrpc-timeout: 100ms\nevery 50ms\nrepeat 6\n\
         {{\"location\": {{\"latitude\": 5, \"longitude\": 6}}, \"message\": \"x\"}}\n",
        server.port
    );
    call_for_a_second("4/s", &proto, &records, &targets);
    let value: serde_json::Value = serde_json::from_str(&report(&records, "json")).unwrap();
    assert_eq!(value["requests"], 4, "{value}");
    assert_eq!(value["success"], 0.0, "{value}");
    let errors = errors_of(&value);
    for error in value["errors"].as_array().unwrap() {
        let error = error.as_str().unwrap();
        assert!(
            error == "DEADLINE_EXCEEDED: context deadline exceeded"
                || error == "rst_stream: cancel",
            "{errors}"
        );
    }
    // One entry per call, whatever its end; only the notes sent before it counted
    // (two or three of six).
    let calls = &value["loadlab"]["grpc_streams"];
    assert_eq!(calls["calls"], 4, "{calls}");
    let out = calls["messages_out"].as_u64().unwrap();
    assert!((8..=12).contains(&out), "{calls}");
    assert_eq!(calls["bytes_out"].as_u64().unwrap(), 9 * out, "{calls}");
    // The record file is whole: every record reads back, nothing torn.
    let output = loadlab()
        .args(["encode", "-to", "json"])
        .arg(&records)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).lines().count(), 4);
    assert!(
        !text(&output.stderr).contains("torn"),
        "{}",
        text(&output.stderr)
    );
}

/// The features of route_guide's data (`proto/route_guide_db.json`, the server's
/// own) within the rectangle of corners `lo` and `hi` (latitude, longitude), edges in.
fn features_in(dir: &Path, lo: (i64, i64), hi: (i64, i64)) -> u64 {
    let text = std::fs::read_to_string(dir.join("proto/route_guide_db.json")).unwrap();
    let features: serde_json::Value = serde_json::from_str(&text).unwrap();
    let inside = |value: &serde_json::Value, a: i64, b: i64| {
        let value = value.as_i64().unwrap();
        a.min(b) <= value && value <= a.max(b)
    };
    let features = features.as_array().unwrap();
    let within = features.iter().filter(|f| {
        inside(&f["location"]["latitude"], lo.0, hi.0)
            && inside(&f["location"]["longitude"], lo.1, hi.1)
    });
    within.count() as u64
}

/// The figures of `report`'s text row `label` (after its bracket).
fn row(report: &str, label: &str) -> String {
    let line = (report.lines())
        .find(|line| line.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} row in {report}"));
    line.rsplit_once(']')
        .map_or("", |(_, figures)| figures)
        .trim()
        .to_owned()
}

/// `attack` of `targets` for `seconds` without `-proto`, and the report's JSON (or
/// the refusal's text).
fn attack_by_reflection(
    targets: &str,
    rate: &str,
    dir: &Path,
) -> Result<serde_json::Value, String> {
    attack_with(targets, rate, dir, &[])
}

/// [`attack_by_reflection`] with more flags (`-proto`, TLS's).
fn attack_with(
    targets: &str,
    rate: &str,
    dir: &Path,
    flags: &[&str],
) -> Result<serde_json::Value, String> {
    let records = dir.join("reflected.llr");
    let mut args = vec![
        format!("-rate={rate}"),
        "-duration=1s".to_owned(),
        "-output".to_owned(),
        records.to_str().unwrap().to_owned(),
    ];
    args.extend(flags.iter().map(|flag| (*flag).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = attack(&args, targets);
    let err = text(&output.stderr);
    assert!(!err.contains("panicked"), "{err}");
    if !output.status.success() {
        assert_eq!(output.status.code(), Some(1), "{err}");
        return Err(err);
    }
    Ok(serde_json::from_str(&report(&records, "json")).unwrap())
}

#[test]
fn calls_without_a_proto_take_their_types_from_grpc_gos_reflection() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "reflection_server");
    let tmp = tempfile::tempdir().unwrap();
    let port = server.port;
    // Two services of the same server, so both are asked for (each once).
    let targets = format!(
        "GRPC 127.0.0.1:{port} helloworld.Greeter/SayHello\n{{\"name\": \"loadlab\"}}\n\n\
         GRPC 127.0.0.1:{port} grpc.examples.echo.Echo/UnaryEcho\n{{\"message\": \"hi\"}}\n"
    );
    let value = attack_by_reflection(&targets, "100/s", tmp.path()).unwrap();
    assert_eq!(value["requests"], 100, "{value}");
    assert_eq!(value["status_codes"]["OK"], 100, "{value}");

    let without = Server::start(&dir, "greeter_server");
    let rows = [
        (
            format!("GRPC 127.0.0.1:{port} helloworld.Nope/SayHello\n"),
            format!("stdin:1: 127.0.0.1:{port} does not serve helloworld.Nope by reflection ("),
            "its services: grpc.examples.echo.Echo, grpc.reflection.v1.ServerReflection, grpc.reflection.v1alpha.ServerReflection, helloworld.Greeter)",
        ),
        (
            format!("GRPC 127.0.0.1:{port} helloworld.Greeter/SayHi\n"),
            format!(
                "stdin:1: no method \"helloworld.Greeter/SayHi\" in 127.0.0.1:{port}'s reflection (known: "
            ),
            "helloworld.Greeter/SayHello",
        ),
        (
            format!(
                "GRPC 127.0.0.1:{} helloworld.Greeter/SayHello\n",
                without.port
            ),
            format!(
                "stdin:1: 127.0.0.1:{} does not answer reflection (no grpc.reflection service): give -proto FILE",
                without.port
            ),
            "",
        ),
    ];
    for (targets, want, and) in rows {
        let err = attack_by_reflection(&targets, "10/s", tmp.path()).unwrap_err();
        assert!(
            err.contains(&want) && err.contains(and),
            "{targets}: want {want:?} and {and:?} in {err}"
        );
    }
}

/// The errors of a report's JSON, joined.
fn errors_of(value: &serde_json::Value) -> String {
    value["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

#[test]
fn tls_calls_to_grpc_gos_tls_server_verify_its_certificate_or_say_why_not() {
    let Some(dir) = grpc_go() else { return };
    let tls_dir = dir.join("tls");
    let server = Server::start_in(&dir, "tls_server", &tls_dir);
    let h2c = Server::start(&dir, "greeter_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = dir.join("proto/echo.proto");
    let proto = proto.to_str().unwrap();
    let ca = tls_dir.join("google.golang.org/grpc/examples/data/x509/ca_cert.pem");
    let ca = ca.to_str().unwrap();
    let echo = |address: &str| {
        format!("GRPC {address} grpc.examples.echo.Echo/UnaryEcho\n{{\"message\": \"hi\"}}\n")
    };
    let tls = echo(&format!("https://127.0.0.1:{}", server.port));
    // Its certificate names *.test.example.com, signed by the examples' own CA.
    let verified = [
        "-proto",
        proto,
        "-root-certs",
        ca,
        "-tls-server-name",
        "x.test.example.com",
    ];
    for flags in [&verified[..], &["-proto", proto, "-insecure"]] {
        let value = attack_with(&tls, "20/s", tmp.path(), flags).unwrap();
        assert_eq!(value["status_codes"]["OK"], 20, "{flags:?}: {value}");
    }
    // Every call fails, counted, with what to do about it.
    let rows = [
        (
            tls.clone(),
            vec!["-proto", proto],
            "tls: invalid peer certificate: UnknownIssuer (give -root-certs FILE with the CA that signed it, or -insecure)".to_owned(),
        ),
        (
            tls,
            vec!["-proto", proto, "-root-certs", ca],
            "(give -tls-server-name NAME with a name it is valid for, or -insecure)".to_owned(),
        ),
        (
            echo(&format!("https://127.0.0.1:{}", h2c.port)),
            vec!["-proto", proto, "-insecure"],
            "tls: ".to_owned(),
        ),
        // h2c to the TLS port: Go hangs up on the preface without a word.
        (
            echo(&format!("127.0.0.1:{}", server.port)),
            vec!["-proto", proto],
            "h2: connection closed before the server's SETTINGS (a TLS port? then https://HOST:PORT)".to_owned(),
        ),
    ];
    for (targets, flags, want) in rows {
        let value = attack_with(&targets, "10/s", tmp.path(), &flags).unwrap();
        assert_eq!(value["success"], 0.0, "{flags:?}: {value}");
        let errors = errors_of(&value);
        assert!(
            errors.contains(&want),
            "{flags:?}: want {want:?} in {errors}"
        );
    }
}

#[test]
fn reflection_over_tls_asks_the_simulators_tls_port_verified_as_calls_are() {
    let (tmp, _proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayHello", "answer": {"message": "hi"}}}]"#,
    );
    let cert = tmp.path().join("sim.pem");
    let sim = Simulate::start_with(&recipe, &["-tls", "-tls-cert-out", cert.to_str().unwrap()]);
    let targets = format!(
        "GRPC https://127.0.0.1:{} sim.Greeter/SayHello\n{{\"name\": \"x\"}}\n",
        sim.port
    );
    for flags in [&["-insecure"][..], &["-root-certs", cert.to_str().unwrap()]] {
        let value = attack_with(&targets, "20/s", tmp.path(), flags).unwrap();
        assert_eq!(value["status_codes"]["OK"], 20, "{flags:?}: {value}");
    }
    let err = attack_by_reflection(&targets, "10/s", tmp.path()).unwrap_err();
    let want = format!(
        "stdin:1: reflection at https://127.0.0.1:{}: tls: invalid peer certificate: UnknownIssuer (give -root-certs FILE with the CA that signed it, or -insecure)",
        sim.port
    );
    assert!(err.contains(&want), "want {want} in {err}");
    // The same port asked in cleartext: not an h2c server.
    let cleartext = targets.replace("https://", "");
    let err = attack_by_reflection(&cleartext, "10/s", tmp.path()).unwrap_err();
    assert!(err.contains("stdin:1: "), "{err}");
}

#[test]
fn bad_grpc_input_is_named_and_refused_before_any_call() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.proto");
    std::fs::write(
        &good,
        "syntax = \"proto3\";\npackage p;\nservice S { rpc Get (Q) returns (Q) {} }\nmessage Q { string name = 1; int32 n = 2; }\n",
    )
    .unwrap();
    let bad = tmp.path().join("bad.proto");
    std::fs::write(
        &bad,
        "syntax = \"proto3\";\nmessage Q {\n  string name = ;\n}\n",
    )
    .unwrap();
    let importing = tmp.path().join("importing.proto");
    std::fs::write(
        &importing,
        "syntax = \"proto3\";\nimport \"gone/missing.proto\";\n",
    )
    .unwrap();
    let (good, bad, importing) = (
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
        importing.to_str().unwrap(),
    );
    let call = "GRPC 127.0.0.1:9 p.S/Get\n";
    let rows: &[(&[&str], String, &[&str])] = &[
        (
            &["-proto", bad],
            call.to_owned(),
            &["bad.proto:3:17", "expected an integer"],
        ),
        (
            &["-proto", importing, "-import-path", "/nonexistent"],
            call.to_owned(),
            &[
                "importing.proto:2:1",
                "import 'gone/missing.proto' not found",
                "/nonexistent",
            ],
        ),
        (
            &["-proto", good],
            "GRPC 127.0.0.1:9 p.S/Put\n".to_owned(),
            &["stdin:1: no method \"p.S/Put\" in the .proto files (known: p.S/Get)"],
        ),
        (
            &["-proto", good],
            format!("{call}{{\"n\": \"many\"}}\n"),
            &["stdin:2: message p.Q at n: "],
        ),
        (
            &["-proto", good],
            format!("{call}{{\"n\": \"{{{{seq}}}}\"}}\n"),
            &[
                "stdin:2: message p.Q at n: ",
                "(placeholders go only in string fields)",
            ],
        ),
        (
            &[],
            call.to_owned(),
            &[
                "stdin:1: cannot reach 127.0.0.1:9 to ask its reflection service for the message types (or give -proto FILE): ",
            ],
        ),
        (
            &["-import-path", "/tmp"],
            call.to_owned(),
            &["-import-path", "give the .proto too"],
        ),
    ];
    for (args, targets, wants) in rows {
        let mut all = args.to_vec();
        all.extend(["-rate=10/s", "-duration=1s"]);
        let output = attack(&all, targets);
        let err = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        for want in *wants {
            assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(output.stdout.is_empty(), "{args:?}: no records");
    }
}

/// A method of each kind the simulator serves, with answers to encode.
const SIM_PROTO: &str = r#"syntax = "proto3";
package sim;
service Greeter {
  rpc SayHello (Req) returns (Reply) {}
  rpc SayMany (Req) returns (stream Reply) {}
  rpc Refuse (Req) returns (Reply) {}
  rpc Count (stream Req) returns (Reply) {}
  rpc Echo (stream Req) returns (stream Reply) {}
}
message Req { string name = 1; }
message Reply { string message = 1; int32 n = 2; }
"#;

/// `loadlab simulate` on a free loopback port, stopped when dropped.
struct Simulate {
    child: Child,
    port: u16,
}

impl Simulate {
    /// Serves `recipe` (a file) and waits for the line that says where.
    fn start(recipe: &Path) -> Simulate {
        Simulate::start_with(recipe, &[])
    }

    /// [`Simulate::start`] with more flags (`-tls`).
    fn start_with(recipe: &Path, flags: &[&str]) -> Simulate {
        use std::io::BufRead;
        let mut child = loadlab()
            .args([
                "simulate",
                "-threads",
                "1",
                "-seed",
                "7",
                "-addr",
                "127.0.0.1:0",
            ])
            .args(flags)
            .arg(recipe)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let port = lines.by_ref().find_map(|line| {
            let line = line.ok()?;
            seen.push_str(&line);
            let at = line.find("://127.0.0.1:")? + "://127.0.0.1:".len();
            let digits: String = line[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        });
        let Some(port) = port else {
            let _ = child.kill();
            panic!("simulate did not start: {seen}");
        };
        // Read on to the end: simulate dies writing to a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Simulate { child, port }
    }

    /// `/metrics`, over HTTP/1.1.
    fn metrics(&self) -> String {
        use std::io::Read;
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: sim\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }
}

impl Drop for Simulate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The proto and a recipe for it in a fresh directory.
fn sim_files(recipe: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let proto = tmp.path().join("sim.proto");
    std::fs::write(&proto, SIM_PROTO).unwrap();
    let path = tmp.path().join("recipe.json");
    std::fs::write(&path, recipe).unwrap();
    (tmp, proto, path)
}

/// One second of calls to `method` of the simulator, and the report's JSON.
fn call_simulator(sim: &Simulate, proto: &Path, dir: &Path, method: &str) -> serde_json::Value {
    let records = dir.join(format!("{}.llr", method.replace('/', "_")));
    let targets = format!(
        "GRPC 127.0.0.1:{} {method}\n{{\"name\": \"x\"}}\n",
        sim.port
    );
    call_for_a_second("100/s", proto, &records, &targets);
    let value = serde_json::from_str(&report(&records, "json")).unwrap();
    let output = loadlab()
        .args(["report", "-by=target"])
        .arg(&records)
        .output()
        .unwrap();
    let by_target = text(&output.stdout);
    let name = format!("GRPC http://127.0.0.1:{}/{method}", sim.port);
    assert!(by_target.contains(&name), "want {name} in {by_target}");
    let _ = std::fs::remove_file(&records);
    value
}

#[test]
fn the_simulator_answers_grpc_calls_with_its_recipes_status_mix_stream_and_metrics() {
    let (tmp, proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayHello", "answer": {"message": "hi", "n": 7}},
             "stages": [{"status": {"OK": 1, "UNAVAILABLE": 1}, "latency": "2ms"}]},
            {"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayMany", "answer": {"message": "hi", "n": 7},
                      "stream": {"count": 4, "every": "5ms"}}},
            {"grpc": {"proto": "sim.proto", "method": "sim.Greeter/Refuse"},
             "stages": [{"status": "PERMISSION_DENIED"}]},
            {"grpc": {"proto": "sim.proto", "method": "sim.Greeter/Count", "answer": {"n": 3}}},
            {"grpc": {"proto": "sim.proto", "method": "sim.Greeter/Echo", "answer": {"message": "e"},
                      "stream": {"count": 2, "per_message": true}}}]"#,
    );
    let sim = Simulate::start(&recipe);
    let dir = tmp.path();

    let unary = call_simulator(&sim, &proto, dir, "sim.Greeter/SayHello");
    assert_eq!(unary["requests"], 100, "{unary}");
    let (ok, unavailable) = (
        unary["status_codes"]["OK"].as_u64().unwrap_or(0),
        unary["status_codes"]["UNAVAILABLE"].as_u64().unwrap_or(0),
    );
    assert!(
        ok + unavailable == 100 && ok > 0 && unavailable > 0,
        "{unary}"
    );
    assert!(
        unary["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("UNAVAILABLE: simulated UNAVAILABLE"),
        "{unary}"
    );
    assert!(
        unary["latencies"]["min"].as_f64().unwrap() >= 1e6,
        "the 2ms stage: {unary}"
    );

    let stream = call_simulator(&sim, &proto, dir, "sim.Greeter/SayMany");
    assert_eq!(stream["status_codes"]["OK"], 100, "{stream}");
    // The answer `{"message": "hi", "n": 7}` is 6 bytes behind a 5-byte prefix, 4 times
    // (bytes in count the compressed head too, a few bytes once HPACK has it).
    let mean_in = stream["bytes_in"]["mean"].as_f64().unwrap();
    assert!((44.0..70.0).contains(&mean_in), "four messages: {stream}");
    assert!(
        stream["latencies"]["min"].as_f64().unwrap() >= 14e6,
        "three 5ms gaps: {stream}"
    );

    // Each call's four messages counted, and each timed: 5ms apart.
    let records = dir.join("many.llr");
    let targets = format!(
        "GRPC 127.0.0.1:{} sim.Greeter/SayMany\n{{\"name\": \"x\"}}\n",
        sim.port
    );
    call_for_a_second("50/s", &proto, &records, &targets);
    let rows = report(&records, "text");
    assert_eq!(row(&rows, "Stream Calls"), "50, 0", "{rows}");
    assert_eq!(row(&rows, "Msgs/Call"), "4, 4", "{rows}");
    assert!(row(&rows, "Messages").starts_with("50, 200, "), "{rows}");
    assert_eq!(row(&rows, "Msg Bytes"), "150, 1200", "{rows}");
    let gaps = row(&rows, "Msg Gaps");
    let gap_p50 = gaps.split(", ").next().unwrap();
    let gap_ms = units::parse_duration(gap_p50).unwrap().as_secs_f64() * 1e3;
    assert!((4.5..20.0).contains(&gap_ms), "5ms gaps: {rows}");
    let first = row(&rows, "First Msg");
    let end = row(&rows, "Call End");
    let p50_ms = |figures: &str| {
        let p50 = figures.split(", ").next().unwrap();
        units::parse_duration(p50).unwrap().as_secs_f64() * 1e3
    };
    assert!(
        p50_ms(&end) - p50_ms(&first) >= 14.0,
        "three gaps between: {rows}"
    );
    let by_target = loadlab()
        .args(["report", "-by=target"])
        .arg(&records)
        .output()
        .unwrap();
    assert!(
        text(&by_target.stdout).contains("Msgs/Call"),
        "{}",
        text(&by_target.stdout)
    );

    // A client stream gets one answer after its end; a bidirectional one two answers
    // for each of its three messages.
    for (method, messages) in [("Count", "3, 1, "), ("Echo", "3, 6, ")] {
        let targets = format!(
            "GRPC 127.0.0.1:{} sim.Greeter/{method}\n{{\"name\": \"a\"}}\n{{\"name\": \"b\"}}\n{{}}\n",
            sim.port
        );
        call_for_a_second("1/s", &proto, &records, &targets);
        let rows = report(&records, "text");
        assert!(rows.contains("OK:1"), "{rows}");
        let figures = format!("{}, {}", row(&rows, "Stream Calls"), row(&rows, "Messages"));
        assert!(
            figures.starts_with(&format!("1, 0, {messages}")),
            "{method}: {rows}"
        );
    }

    let refused = call_simulator(&sim, &proto, dir, "sim.Greeter/Refuse");
    assert_eq!(
        refused["status_codes"]["PERMISSION_DENIED"], 100,
        "{refused}"
    );
    assert_eq!(refused["success"], 0.0, "{refused}");

    let metrics = sim.metrics();
    for want in [
        format!("loadlab_sim_requests_total{{route=\"/sim.Greeter/SayHello\",status=\"OK\"}} {ok}"),
        format!(
            "loadlab_sim_requests_total{{route=\"/sim.Greeter/SayHello\",status=\"UNAVAILABLE\"}} {unavailable}"
        ),
        "loadlab_sim_requests_total{route=\"/sim.Greeter/SayMany\",status=\"OK\"} 150".to_owned(),
        "loadlab_sim_requests_total{route=\"/sim.Greeter/Refuse\",status=\"PERMISSION_DENIED\"} 100"
            .to_owned(),
    ] {
        assert!(metrics.contains(&want), "want {want} in {metrics}");
    }
}

/// The 50th percentile of a report row's `[50, 90, 99, max]` figures, in ms.
fn p50_ms(figures: &str) -> f64 {
    let p50 = figures.split(", ").next().unwrap();
    units::parse_duration(p50).unwrap().as_secs_f64() * 1e3
}

#[test]
fn a_paced_bidirectional_stream_is_answered_as_each_message_comes_and_each_answer_timed() {
    let (tmp, proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/Echo", "answer": {"message": "e"},
                      "stream": {"count": 1, "per_message": true}}}]"#,
    );
    let sim = Simulate::start(&recipe);
    let records = tmp.path().join("paced.llr");
    // Two messages three times over, one each 40ms: six sends over 200ms a call.
    let targets = format!(
        "GRPC 127.0.0.1:{} sim.Greeter/Echo\nevery 40ms\nrepeat 3\n{{\"name\": \"a\"}}\n{{\"name\": \"b\"}}\n",
        sim.port
    );
    call_for_a_second("2/s", &proto, &records, &targets);
    let rows = report(&records, "text");
    assert!(rows.contains("OK:2"), "{rows}");
    assert_eq!(row(&rows, "Stream Calls"), "2, 0", "{rows}");
    assert!(row(&rows, "Messages").starts_with("12, 12, "), "{rows}");
    assert!(p50_ms(&row(&rows, "Call End")) >= 199.0, "paced: {rows}");
    // Each message answered as it came, the first at once, not at the stream's end;
    // each answer timed against its own message (from the call's send, half of
    // them would take 80ms and more).
    assert!(p50_ms(&row(&rows, "First Msg")) < 40.0, "{rows}");
    assert!(p50_ms(&row(&rows, "Round Trips")) < 30.0, "{rows}");
    let json: serde_json::Value = serde_json::from_str(&report(&records, "json")).unwrap();
    let trips = &json["loadlab"]["grpc_streams"]["round_trips"];
    assert_eq!(trips["count"], 12, "{json}");
    // The messages let go at their pace are in the per-second figures as they went.
    let (entries, _) = entries_and_seconds(&records);
    assert_eq!(entries.len(), 2, "{entries:?}");

    // Placeholders in the messages, rendered per call: a 10-byte value and
    // `call 0` (`call 1`) in string fields, twice over; their bytes as rendered.
    let targets = format!(
        "GRPC 127.0.0.1:{} sim.Greeter/Echo\nevery 10ms\nrepeat 2\n\
         {{\"name\": \"{{{{rand.alnum 10}}}}\"}}\n{{\"name\": \"call {{{{seq}}}}\"}}\n",
        sim.port
    );
    call_for_a_second("2/s", &proto, &records, &targets);
    let rows = report(&records, "text");
    assert!(rows.contains("OK:2"), "{rows}");
    assert!(row(&rows, "Messages").starts_with("8, 8, "), "{rows}");
    // Per call: 2 x ((2 + 10) + (2 + 6)).
    assert!(row(&rows, "Msg Bytes").starts_with("80, "), "{rows}");
}

/// The connections entries of the record file at `path` and its stats samples'
/// stream figures, which must add up to the entries (calls, messages and bytes each
/// way, latencies) and end with none open.
fn entries_and_seconds(path: &Path) -> (Vec<record::Connection>, Vec<record::StreamStats>) {
    let mut source = record::open_input(path.to_str().unwrap()).unwrap();
    let (mut batch, mut entries) = (Vec::new(), Vec::new());
    while source.next_batch(&mut batch).unwrap() {
        source.drain_connections(&mut entries);
    }
    source.drain_connections(&mut entries);
    let seconds: Vec<record::StreamStats> = (source.summary().stats.iter())
        .filter_map(|s| s.streams.clone())
        .collect();
    let sum = |field: fn(&record::StreamStats) -> u64| seconds.iter().map(field).sum::<u64>();
    let entries_sum =
        |field: fn(&record::Connection) -> u64| entries.iter().map(field).sum::<u64>();
    let calls = entries.len() as u64;
    assert_eq!(
        (sum(|s| s.opened), sum(|s| s.closed)),
        (calls, calls),
        "{seconds:?}"
    );
    assert_eq!(sum(|s| s.messages_out), entries_sum(|c| c.messages_out));
    assert_eq!(sum(|s| s.bytes_out), entries_sum(|c| c.bytes_out));
    assert_eq!(sum(|s| s.messages_in), entries_sum(|c| c.messages_in));
    assert_eq!(sum(|s| s.bytes_in), entries_sum(|c| c.bytes_in));
    assert_eq!(
        sum(|s| s.latency.count()),
        entries_sum(|c| c.latency.count())
    );
    assert_eq!(seconds.last().map(|s| s.open), Some(0), "{seconds:?}");
    (entries, seconds)
}

/// A server stream of 2.5 s is in the per-second stream figures as it goes: open
/// from its send, each message in the second it came in (not all in the second the
/// call ended); over the run the samples add up to the call's entry.
#[test]
fn a_long_server_stream_counts_in_the_per_second_figures_as_its_messages_come() {
    let (tmp, proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayMany", "answer": {"message": "hi", "n": 7},
                      "stream": {"count": 25, "every": "100ms"}}}]"#,
    );
    let sim = Simulate::start(&recipe);
    let records = tmp.path().join("long.llr");
    let targets = format!(
        "GRPC 127.0.0.1:{} sim.Greeter/SayMany\n{{\"name\": \"x\"}}\n",
        sim.port
    );
    call_for_a_second("1/s", &proto, &records, &targets);
    let (entries, seconds) = entries_and_seconds(&records);
    assert_eq!(entries.len(), 1, "one call: {entries:?}");
    let call = &entries[0];
    assert_eq!((call.messages_out, call.messages_in), (1, 25), "{call:?}");
    // 25 messages 100 ms apart: in two seconds at least, the call open meanwhile.
    let with_messages = seconds.iter().filter(|s| s.messages_in > 0).count();
    assert!(with_messages >= 2, "{seconds:?}");
    assert!(seconds.iter().any(|s| s.open == 1), "{seconds:?}");
}

#[test]
fn the_simulator_answers_reflection_for_its_grpc_routes_and_http_servers_are_named() {
    let (tmp, _proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayHello", "answer": {"message": "hi"}}},
            {"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayMany", "stream": {"count": 2}}}]"#,
    );
    let sim = Simulate::start(&recipe);
    let targets = format!(
        "GRPC 127.0.0.1:{} sim.Greeter/SayMany\n{{\"name\": \"x\"}}\n",
        sim.port
    );
    let value = attack_by_reflection(&targets, "50/s", tmp.path()).unwrap();
    assert_eq!(value["status_codes"]["OK"], 50, "{value}");
    let err = attack_by_reflection(
        &format!("GRPC 127.0.0.1:{} sim.Nope/X\n", sim.port),
        "10/s",
        tmp.path(),
    )
    .unwrap_err();
    let want = format!(
        "stdin:1: 127.0.0.1:{} does not serve sim.Nope by reflection (symbol not found: sim.Nope; its services: grpc.reflection.v1.ServerReflection, sim.Greeter)",
        sim.port
    );
    assert!(err.contains(&want), "want {want} in {err}");

    // A server that speaks HTTP/2 but not gRPC, and one that speaks HTTP/1.1 only.
    let (_tmp, _proto, plain) =
        sim_files(r#"[{"route": "/x", "body": "x", "stages": [{"status": 200}]}]"#);
    let http = Simulate::start(&plain);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let h1_port = listener.local_addr().unwrap().port();
    let h1 = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
    });
    let rows = [
        (
            http.port,
            "is not a gRPC server (HTTP status 406, no grpc-status): give -proto FILE and check the address",
        ),
        (
            h1_port,
            "h2: the server answered in HTTP/1.x (it does not speak h2c)",
        ),
    ];
    for (port, want) in rows {
        let targets = format!("GRPC 127.0.0.1:{port} sim.Greeter/SayHello\n");
        let err = attack_by_reflection(&targets, "10/s", tmp.path()).unwrap_err();
        assert!(err.contains(want), "want {want} in {err}");
    }
    h1.join().unwrap();
}

#[test]
fn the_example_grpc_recipe_is_valid() {
    let recipe = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/recipes/grpc_greeter.json"
    );
    let output = loadlab()
        .args(["simulate", "-check", recipe])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("is valid (2 routes)"), "{err}");
}

#[test]
fn bad_grpc_recipes_name_the_file_and_field() {
    let method = |m: &str, rest: &str| {
        format!(r#"[{{"grpc": {{"proto": "sim.proto", "method": "{m}"{rest}}}}}]"#)
    };
    let rows = [
        (
            method("sim.Greeter/SayBye", ""),
            "recipe.json: recipe[0].grpc.method: no method \"sim.Greeter/SayBye\" in the .proto files (known: sim.Greeter/SayHello, sim.Greeter/SayMany, sim.Greeter/Refuse, sim.Greeter/Count, sim.Greeter/Echo)",
        ),
        (
            method("sim.Greeter/SayHello", r#", "answer": {"n": "seven"}"#),
            "recipe.json: recipe[0].grpc.answer: message sim.Reply at n: ",
        ),
        (
            method("sim.Greeter/SayHello", r#", "answer": {"mesage": "hi"}"#),
            "recipe.json: recipe[0].grpc.answer: message sim.Reply: unrecognized field name 'mesage'",
        ),
        (
            r#"[{"grpc": {"proto": "gone.proto", "method": "sim.Greeter/SayHello"}}]"#.to_owned(),
            "recipe.json: recipe[0].grpc.proto: ",
        ),
        (
            r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayHello"}, "stages": [{"status": "UNAVAILBLE"}]}]"#.to_owned(),
            "recipe.json: recipe[0].stages[0].status: expected a status code, a weighted mix or a gRPC status name, got \"UNAVAILBLE\"",
        ),
    ];
    for (recipe, want) in rows {
        let (_tmp, _proto, path) = sim_files(&recipe);
        let output = loadlab()
            .args(["simulate", "-check"])
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{recipe}: {err}");
        assert!(err.contains(want), "{recipe}:\n want {want}\n in {err}");
    }
}

/// A login token no JSON template survives (quotes, braces), as JSON text and as
/// the value it holds.
const HOSTILE_TOKEN: (&str, &str) = (
    r#"a\"}, \"name\": 7, \"x\": {\"b"#,
    r#"a"}, "name": 7, "x": {"b"#,
);

/// The simulator's login route: it answers [`HOSTILE_TOKEN`].
fn login_route() -> String {
    format!(
        r#"{{"route": "/login", "body": "{{\"token\": \"{}\"}}", "stages": [{{"status": 200}}]}}"#,
        HOSTILE_TOKEN.0.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// Runs 4 flows in a second of a scenario with `keys`: a login at `login_port` that
/// extracts its token, then `steps`; records into `dir`. The report's JSON.
fn run_flow(dir: &Path, keys: &str, login_port: u16, steps: &str) -> serde_json::Value {
    let scenarios = dir.join("flow.toml");
    let records = dir.join("flow.llr");
    std::fs::write(
        &scenarios,
        format!(
            r#"[[scenario]]
name = "flow"
rate = "4/1s"
duration = "1s"
{keys}

[[scenario.step]]
name = "login"
request = "POST http://127.0.0.1:{login_port}/login"
extract = {{ token = "json $.token" }}
checks = ["status 200"]
{steps}"#
        ),
    )
    .unwrap();
    let output = loadlab()
        .args(["attack", "-scenarios"])
        .arg(&scenarios)
        .arg("-output")
        .arg(&records)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    serde_json::from_str(&report(&records, "json")).unwrap()
}

/// 4 flows of 3 calls all succeeded, and each of `checks` checks passed 4 times.
fn every_check_passed_4_flows(value: &serde_json::Value, checks: usize) {
    assert_eq!(value["requests"], 12, "{value}");
    assert_eq!(value["success"], 1.0, "{value}");
    let counted = checks_of(value);
    assert!(
        counted
            .values()
            .all(|&(passes, fails)| passes == 4 && fails == 0)
            && counted.len() == checks,
        "{counted:?}"
    );
}

/// Each check's passes and failures, by its full name.
fn checks_of(value: &serde_json::Value) -> std::collections::BTreeMap<String, (u64, u64)> {
    value["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks: {value}"))
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_owned();
            (
                name,
                (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap()),
            )
        })
        .collect()
}

#[test]
fn a_flow_logs_in_over_http_and_calls_the_simulators_grpc_methods_with_its_token() {
    // One simulator on one port: the login over HTTP/1.1, the calls over h2c.
    let (tmp, _proto, recipe) = sim_files(&format!(
        r#"[{},
            {{"grpc": {{"proto": "sim.proto", "method": "sim.Greeter/SayHello", "answer": {{"message": "hi", "n": 7}}}}}},
            {{"grpc": {{"proto": "sim.proto", "method": "sim.Greeter/SayMany", "answer": {{"message": "hi", "n": 7}},
                       "stream": {{"count": 3, "every": "1ms"}}}}}},
            {{"grpc": {{"proto": "sim.proto", "method": "sim.Greeter/Refuse"}}, "stages": [{{"status": "PERMISSION_DENIED"}}]}},
            {{"grpc": {{"proto": "sim.proto", "method": "sim.Greeter/Echo", "answer": {{"message": "e", "n": 2}},
                       "stream": {{"count": 1, "per_message": true}}}}}}]"#,
        login_route()
    ));
    let sim = Simulate::start(&recipe);
    let port = sim.port;
    let steps = format!(
        r#"
[[scenario.step]]
name = "hello"
request = """
GRPC 127.0.0.1:{port} sim.Greeter/SayHello
authorization: Bearer {{{{token}}}}
grpc-timeout: 5s
"""
body = '{{"name": "{{{{token}}}}"}}'
extract = {{ said = "json $.message" }}
checks = ["grpc OK", "json $.n = 7", "json $.message = hi"]

[[scenario.step]]
name = "many"
request = "GRPC 127.0.0.1:{port} sim.Greeter/SayMany"
body = '{{"name": "{{{{said}}}} {{{{token}}}}"}}'
checks = ["grpc = OK", "json $[2].n = 7", "json $[3] exists"]

[[scenario.step]]
name = "refused"
request = "GRPC 127.0.0.1:{port} sim.Greeter/Refuse"
checks = ["grpc PERMISSION_DENIED", "grpc OK"]

[[scenario.step]]
name = "chat"
request = "GRPC 127.0.0.1:{port} sim.Greeter/Echo"
body = """
{{"name": "{{{{token}}}}"}}
{{"name": "two"}}
"""
checks = ["grpc OK", "json $[1].n = 2", "json $[2] exists"]
"#
    );
    let value = run_flow(tmp.path(), "proto = [\"sim.proto\"]", port, &steps);
    assert_eq!(value["requests"], 20, "{value}");
    let checks = checks_of(&value);
    let want: std::collections::BTreeMap<String, (u64, u64)> = [
        ("login: status 200", (4, 0)),
        ("hello: grpc OK", (4, 0)),
        ("hello: json $.n = 7", (4, 0)),
        ("hello: json $.message = hi", (4, 0)),
        ("many: grpc = OK", (4, 0)),
        ("many: json $[2].n = 7", (4, 0)),
        ("many: json $[3] exists", (0, 4)),
        ("refused: grpc PERMISSION_DENIED", (4, 0)),
        ("refused: grpc OK", (0, 4)),
        // A bidirectional step: two messages, their two answers as an array.
        ("chat: grpc OK", (4, 0)),
        ("chat: json $[1].n = 2", (4, 0)),
        ("chat: json $[2] exists", (0, 4)),
    ]
    .into_iter()
    .map(|(name, counts)| (name.to_owned(), counts))
    .collect();
    assert_eq!(checks, want, "{value}");
    assert_eq!(value["status_codes"]["OK"], 12, "{value}");
    assert_eq!(value["status_codes"]["200"], 4, "{value}");
    assert_eq!(value["status_codes"]["PERMISSION_DENIED"], 4, "{value}");
    // The login over HTTP/1.1, the calls over h2c, to the one port.
    let records = loadlab()
        .args(["encode", "-to=json"])
        .arg(tmp.path().join("flow.llr"))
        .output()
        .unwrap();
    for line in text(&records.stdout).lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let want = if record["step"] == "login" {
            serde_json::Value::Null
        } else {
            "h2".into()
        };
        assert_eq!(record["protocol"], want, "{line}");
    }
}

#[test]
fn a_flow_calls_grpc_gos_greeter_with_a_hostile_token_in_its_message_and_metadata() {
    let Some(dir) = grpc_go() else { return };
    let greeter = Server::start(&dir, "greeter_server");
    let reflecting = Server::start(&dir, "reflection_server");
    let (tmp, _proto, recipe) = sim_files(&format!("[{}]", login_route()));
    let sim = Simulate::start(&recipe);
    let proto = dir.join("proto/helloworld.proto");
    // The greeter answers "Hello " and the name: the token comes back whole, the
    // message's one string field, however it is made.
    let said = serde_json::to_string(&format!("Hello {}", HOSTILE_TOKEN.1)).unwrap();
    let steps = format!(
        r#"
[[scenario.step]]
name = "by proto"
proto = [{proto:?}]
request = "GRPC 127.0.0.1:{} helloworld.Greeter/SayHello\nx-token: {{{{token}}}}"
body = '{{"name": "{{{{token}}}}"}}'
extract = {{ said = "json $.message" }}
checks = ["grpc OK", '''json $.message = {said}''']

[[scenario.step]]
name = "by reflection"
request = "GRPC 127.0.0.1:{} helloworld.Greeter/SayHello"
body = '{{"name": "{{{{said}}}}"}}'
checks = ["grpc OK", "body contains Hello Hello a"]
"#,
        greeter.port, reflecting.port
    );
    let value = run_flow(tmp.path(), "", sim.port, &steps);
    every_check_passed_4_flows(&value, 5);
}

#[test]
fn gzip_calls_to_grpc_gos_compression_server_and_a_flow_reading_its_gzip_answers_and_trailers() {
    let Some(dir) = grpc_go() else { return };
    let server = Server::start(&dir, "compression_server");
    let greeter = Server::start(&dir, "greeter_server");
    let tmp = tempfile::tempdir().unwrap();
    let proto = dir.join("proto/echo.proto");
    let echo = format!(
        "GRPC 127.0.0.1:{} grpc.examples.echo.Echo/UnaryEcho\n{{\"message\": \"hi\"}}\n",
        server.port
    );
    let flags = ["-proto", proto.to_str().unwrap(), "-grpc-compress", "gzip"];
    let value = attack_with(&echo, "20/s", tmp.path(), &flags).unwrap();
    assert_eq!(value["status_codes"]["OK"], 20, "{value}");
    // A server without gzip cannot read the calls: they really go compressed.
    let hello = format!(
        "GRPC 127.0.0.1:{} helloworld.Greeter/SayHello\n{{\"name\": \"x\"}}\n",
        greeter.port
    );
    let greeter_proto = dir.join("proto/helloworld.proto");
    let flags = [
        "-proto",
        greeter_proto.to_str().unwrap(),
        "-grpc-compress",
        "gzip",
    ];
    let value = attack_with(&hello, "10/s", tmp.path(), &flags).unwrap();
    assert_eq!(value["status_codes"]["UNIMPLEMENTED"], 10, "{value}");
    let err = attack_with(&echo, "10/s", tmp.path(), &["-grpc-compress", "br"]).unwrap_err();
    assert!(
        err.contains("-grpc-compress: \"br\": want gzip or identity (none)"),
        "{err}"
    );

    // A flow: the answer comes gzipped (the server answers in the call's encoding), is
    // inflated for its checks; its metadata and trailers are checked and extracted
    // from, and what came out goes on into the next call beside the login's hostile
    // token, inside its string field and its metadata value.
    let (flow_tmp, _proto, recipe) = sim_files(&format!("[{}]", login_route()));
    let sim = Simulate::start(&recipe);
    let keys = format!(
        "proto = [{:?}]\ngrpc_compress = \"gzip\"",
        proto.to_str().unwrap()
    );
    let steps = format!(
        r#"
[[scenario.step]]
name = "echo"
request = "GRPC 127.0.0.1:{0} grpc.examples.echo.Echo/UnaryEcho"
body = '{{"message": "hi"}}'
extract = {{ kind = "header content-type" }}
checks = ["grpc OK", "json $.message = hi", "header grpc-encoding = gzip", "header grpc-status = 0"]

[[scenario.step]]
name = "again"
request = "GRPC 127.0.0.1:{0} grpc.examples.echo.Echo/UnaryEcho\nx-kind: {{{{kind}}}}"
body = '{{"message": "{{{{kind}}}} {{{{token}}}}"}}'
checks = ["grpc OK", "body contains application/grpc a"]
"#,
        server.port
    );
    let value = run_flow(flow_tmp.path(), &keys, sim.port, &steps);
    every_check_passed_4_flows(&value, 7);
}

#[test]
fn search_and_run_take_the_proto_of_a_method_reflection_does_not_know() {
    // The simulator serves sim.Greeter/SayHello at another path: its reflection knows
    // sim.Greeter only, so a call of other.Svc/Call needs -proto.
    let (tmp, _proto, recipe) = sim_files(
        r#"[{"grpc": {"proto": "sim.proto", "method": "sim.Greeter/SayHello", "answer": {"message": "hi"}},
             "route": "/other.Svc/Call"}]"#,
    );
    std::fs::write(
        tmp.path().join("other.proto"),
        "syntax = \"proto3\";\npackage other;\nservice Svc { rpc Call (Q) returns (Q) {} }\nmessage Q { string name = 1; }\n",
    )
    .unwrap();
    let sim = Simulate::start(&recipe);
    let targets = tmp.path().join("targets.txt");
    std::fs::write(
        &targets,
        format!(
            "GRPC 127.0.0.1:{} other.Svc/Call\n{{\"name\": \"x\"}}\n",
            sim.port
        ),
    )
    .unwrap();
    let search = |folder: &str, proto: &[&str]| {
        loadlab()
            .current_dir(tmp.path())
            .args(["search", "-targets", "targets.txt", "-rates", "20"])
            .args(["-step-duration", "500ms", "-warmup", "0s", "-quiet"])
            .args(["-output", folder])
            .args(proto)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let without = search("without", &[]);
    assert!(
        text(&without.stderr).contains("does not serve other.Svc by reflection"),
        "{}",
        text(&without.stderr)
    );
    let found = search("found", &["-proto", "other.proto"]);
    assert!(found.status.success(), "{}", text(&found.stderr));
    let summary = std::fs::read_to_string(tmp.path().join("found/summary.md")).unwrap();
    assert!(
        summary
            .lines()
            .any(|l| l.contains("| 20/s |") && l.contains("| pass |")),
        "{summary}"
    );
    // The plan written names the .proto by its absolute path; without it, `run`
    // takes -proto from where it runs.
    let plan = std::fs::read_to_string(tmp.path().join("found/plan.toml")).unwrap();
    let named = format!(
        "proto = [{:?}]",
        tmp.path().join("other.proto").display().to_string()
    );
    assert!(plan.contains(&named), "{plan}");
    let bare = tmp.path().join("bare.toml");
    std::fs::write(&bare, plan.replace(&named, "")).unwrap();
    let rerun = |folder: &str, proto: &[&str]| {
        loadlab()
            .current_dir(tmp.path())
            .args(["run", "bare.toml", "-quiet", "-output", folder])
            .args(proto)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let refused = rerun("refused", &[]);
    assert!(
        !refused.status.success()
            && text(&refused.stderr).contains("does not serve other.Svc by reflection"),
        "{}",
        text(&refused.stderr)
    );
    let again = rerun("again", &["-proto", "other.proto"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let summary = std::fs::read_to_string(tmp.path().join("again/summary.md")).unwrap();
    assert!(summary.contains("| pass |"), "{summary}");
}
