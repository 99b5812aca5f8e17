//! `loadlab encode -from har` end to end: the real binary on the recorded fixture
//! (`examples/har/app_login.har`, whose flow is the golden file
//! `examples/har/app_login.toml`, kept by the workload crate's golden test), its
//! options, stdin and -output, and bad inputs named with their file and line.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/har")
}

/// Runs loadlab in `dir` with `args`, feeding `stdin`.
fn run_in(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Asserts success and returns stdout.
fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstderr:\n{}",
        output.status,
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// A fresh directory under the system's temporary one.
fn temp_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "loadlab-har-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_fixture_gives_the_golden_flow() {
    let output = run_in(
        &examples(),
        &["encode", "-from", "har", "app_login.har"],
        b"",
    );
    let flow = ok(&output);
    let golden = std::fs::read_to_string(examples().join("app_login.toml")).unwrap();
    assert!(
        flow == golden,
        "the binary's flow differs from examples/har/app_login.toml \
         (UPDATE_GOLDEN=1 cargo test -p loadlab-workload har rewrites it):\n{flow}"
    );
    assert_eq!(
        text(&output.stderr),
        "loadlab: app_login.har: 4 steps from 7 entries, 2 extractions proposed (the file's header lists them)\n"
    );
    // Double-dash flags and = spellings work too.
    let again = run_in(&examples(), &["encode", "--from=har", "app_login.har"], b"");
    assert_eq!(ok(&again), golden);
}

#[test]
fn options_stdin_and_output() {
    let har = std::fs::read(examples().join("app_login.har")).unwrap();
    let dir = temp_dir();
    let from_stdin = ok(&run_in(&dir, &["encode", "-from", "har"], &har));
    assert!(
        from_stdin.starts_with("# A flow from stdin "),
        "{from_stdin}"
    );
    assert!(from_stdin.contains("\nname = \"har\"\n"), "{from_stdin}");

    let args = [
        "encode",
        "-from",
        "har",
        "-name",
        "shop",
        "-har-keep-static",
        "-har-keep-header",
        "user-agent",
        "-har-host",
        "127.0.0.1",
        "-output",
        "shop.toml",
        "-",
    ];
    let output = run_in(&dir, &args, &har);
    assert_eq!(ok(&output), "", "the flow went to -output");
    let flow = std::fs::read_to_string(dir.join("shop.toml")).unwrap();
    for want in [
        "\nname = \"shop\"\n",
        "name = \"GET app.css\"",
        "name = \"GET favicon.ico\"",
        "\nUser-Agent: Mozilla/5.0",
        "checks = [\"status 406\"]",
    ] {
        assert!(flow.contains(want), "{want}\n{flow}");
    }
    assert_eq!(flow.matches("\n[[scenario.step]]\n").count(), 7, "{flow}");

    // A failed conversion leaves an existing -output file alone.
    let failed = run_in(
        &dir,
        &["encode", "-from", "har", "-output", "shop.toml", "-"],
        b"{}",
    );
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(dir.join("shop.toml")).unwrap(),
        flow
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_and_flags_are_named() {
    let dir = temp_dir();
    let har = std::fs::read_to_string(examples().join("app_login.har")).unwrap();
    std::fs::write(dir.join("cut.har"), &har[..har.len() / 3]).unwrap();
    std::fs::write(dir.join("script.js"), "import http from 'k6/http';\n").unwrap();
    std::fs::write(
        dir.join("postman.json"),
        r#"{"info": {"name": "shop", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}, "item": []}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("empty.har"),
        r#"{"log": {"version": "1.2", "entries": []}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("latin1.har"), b"{\"log\": \"caf\xe9\"}").unwrap();
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    std::fs::write(dir.join("deep.json"), deep).unwrap();
    let cut_line = har[..har.len() / 3].lines().count();
    let cut_error = format!("loadlab: cut.har:{cut_line}:");
    let rows: &[(&[&str], i32, &str)] = &[
        (&["encode", "-from", "har", "cut.har"], 1, &cut_error),
        (
            &["encode", "-from", "har", "cut.har"],
            1,
            "the JSON ends early (a truncated file?)",
        ),
        (
            &["encode", "-from", "har", "script.js"],
            1,
            "loadlab: script.js:1:1: not JSON: this looks like a k6 script (JavaScript), not a HAR file",
        ),
        (
            &["encode", "-from", "har", "postman.json"],
            1,
            "loadlab: postman.json:1: not a HAR file: this looks like a Postman collection",
        ),
        (
            &["encode", "-from", "har", "empty.har"],
            1,
            "loadlab: empty.har:1: log.entries: no entries: the recording holds no request",
        ),
        (
            &["encode", "-from", "har", "latin1.har"],
            1,
            "loadlab: latin1.har: not UTF-8 text at byte 12",
        ),
        (
            &["encode", "-from", "har", "deep.json"],
            1,
            "loadlab: deep.json:1:128: not JSON: nested deeper than 128 levels (serde_json's \
             limit), not a HAR file",
        ),
        (
            &["encode", "-from", "har", "missing.har"],
            1,
            "loadlab: reading missing.har:",
        ),
        (
            &["encode", "-from", "har", "a.har", "b.har"],
            1,
            "-from har reads one HAR file at a time",
        ),
        (
            &["encode", "-from", "har", "-to", "json", "a.har"],
            1,
            "-from har writes a flow (TOML): drop -to",
        ),
        (
            &["encode", "-har-keep-static", "a.llr"],
            1,
            "loadlab: -har-keep-static goes with -from har",
        ),
        (
            &["encode", "-name", "x", "a.llr"],
            1,
            "loadlab: -name goes with -from har",
        ),
        (
            &["encode", "-base-url", "http://127.0.0.1:8080", "a.llr"],
            1,
            "loadlab: -base-url goes with -from har",
        ),
        (
            &[
                "encode",
                "-from",
                "har",
                "-base-url",
                "ftp://a.test/",
                "postman.json",
            ],
            1,
            "loadlab: -base-url: \"ftp://a.test/\" is not an http or https URL",
        ),
        (
            &["encode", "-from", "postman", "a.json"],
            2,
            "-from reads har (a browser's HAR file)",
        ),
        (
            &["encode", "-from", "json", "a.json"],
            2,
            "records are recognised by their content: drop -from json",
        ),
    ];
    for (args, code, want) in rows {
        let output = run_in(&dir, args, b"");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}: want {want:?}, got {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
