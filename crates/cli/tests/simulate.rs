//! `loadlab simulate`'s safety flags end to end: memory caps on the recipe file, the
//! files directory, the admin token, and the warning when bound beyond loopback.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn loadlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A directory of its own for one test, removed afterwards.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("loadlab-simulate-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// issue 11 item 4: a recipe file on the command line is held to the caps too, with a
/// clear error naming the file, the field and the flag.
#[test]
fn recipe_files_are_held_to_the_memory_caps() {
    let dir = TempDir::new("caps");
    let recipe = dir.0.join("big.json");
    std::fs::write(
        &recipe,
        r#"[{"route": "/a", "body": "<<1mb>>", "stages": [{"status": 200}]},
            {"route": "/zero", "body_file": "/dev/zero", "stages": [{"status": 200}]}]"#,
    )
    .unwrap();
    let path = recipe.to_str().unwrap();
    let rows: &[(&[&str], Result<&str, &str>)] = &[
        (
            &["-max-body-size", "512kb"],
            Err(
                "big.json: recipe[0].body: body larger than the 512kb cap on one body (simulate -max-body-size)",
            ),
        ),
        (
            &["-max-recipe-memory", "1mb"],
            Err(
                "big.json: recipe[0].body: the routes in force would hold more than 1mb of bodies (simulate -max-recipe-memory)",
            ),
        ),
        (
            &["-max-recipe-memory", "1100kb"],
            Err("big.json: recipe[1].body_file: /dev/zero: larger than the "),
        ),
        (
            &[],
            Err("big.json: recipe[1].body_file: /dev/zero: larger than the 64mb"),
        ),
        (
            &["-max-body-size", "lots"],
            Err("invalid value 'lots' for '--max-body-size <SIZE>'"),
        ),
    ];
    for (flags, want) in rows {
        let mut args = vec!["simulate", "-check"];
        args.extend_from_slice(flags);
        args.push(path);
        let output = loadlab(&args);
        let text = stderr(&output);
        match want {
            Ok(line) => assert!(
                output.status.success() && text.contains(line),
                "{flags:?}: {text}"
            ),
            Err(message) => {
                assert!(!output.status.success(), "{flags:?}: {text}");
                assert!(text.contains(message), "{flags:?}: {text}");
                assert!(!text.contains("panicked"), "{text}");
            }
        }
    }
    std::fs::write(
        &recipe,
        r#"{"route": "/a", "body": "<<1mb>>", "stages": [{"status": 200}]}"#,
    )
    .unwrap();
    let output = loadlab(&["simulate", "-check", "-max-body-size", "1mb", path]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn bad_safety_flags_are_named() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["-files", "/nonexistent/loadlab-files"],
            "simulator option files: /nonexistent/loadlab-files",
        ),
        (
            &["-admin-token", ""],
            "simulator option admin-token: must be non-empty",
        ),
    ];
    for (flags, want) in rows {
        let mut args = vec!["simulate", "-addr", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let output = loadlab(&args);
        assert!(!output.status.success(), "{flags:?}");
        assert!(
            stderr(&output).contains(want),
            "{flags:?}: {}",
            stderr(&output)
        );
    }
}

/// Bound beyond loopback, simulate says so on stderr. No traffic is sent to it: the
/// test reads the warning and stops the server at once.
#[test]
fn warns_when_bound_beyond_loopback() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["simulate", "-threads", "1", "-addr", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = Instant::now();
    let mut seen = Vec::new();
    for line in lines {
        let line = line.unwrap();
        let done = line.contains("admin API answers loopback clients only");
        seen.push(line);
        if done || seen.len() > 20 || started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = seen.join("\n");
    assert!(text.contains("WARNING: listening on 0.0.0.0:"), "{text}");
    assert!(text.contains("beyond loopback"), "{text}");
    assert!(text.contains("-admin-token"), "{text}");
}

/// issue 14: the TLS and HTTP/2 flags are checked together, and a bad one is named.
#[test]
fn bad_tls_and_http2_flags_are_named() {
    let rows: &[(&[&str], &str)] = &[
        (&["-tls-key", "k.pem"], "simulate -tls-key needs -tls-cert"),
        (&["-tls-cert", "c.pem"], "simulate -tls-cert needs -tls-key"),
        (
            &["-tls-cert-out", "out.pem"],
            "simulate -tls-cert-out needs -tls (or -tls-cert and -tls-key)",
        ),
        (
            &[
                "-tls-cert",
                "/nonexistent/c.pem",
                "-tls-key",
                "/nonexistent/k.pem",
            ],
            "tls: cannot read certificate file /nonexistent/c.pem",
        ),
        (&["-max-streams", "0"], "0 is not in 1..=2147483647"),
        (&["-max-streams", "many"], "invalid value 'many'"),
    ];
    for (flags, want) in rows {
        let mut args = vec!["simulate", "-addr", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let output = loadlab(&args);
        assert!(!output.status.success(), "{flags:?}");
        assert!(
            stderr(&output).contains(want),
            "{flags:?}: {}",
            stderr(&output)
        );
    }
    // -check reads the TLS files too, so a bad one fails before serving.
    let dir = TempDir::new("tls-check");
    let recipe = dir.0.join("r.json");
    std::fs::write(&recipe, r#"{"stages": [{"status": 200}]}"#).unwrap();
    let junk = dir.0.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let (junk, recipe) = (junk.to_str().unwrap(), recipe.to_str().unwrap());
    let output = loadlab(&[
        "simulate",
        "-check",
        "-tls-cert",
        junk,
        "-tls-key",
        junk,
        recipe,
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("junk.pem: no PEM certificate"),
        "{}",
        stderr(&output)
    );
}

/// Reads `child`'s stderr until a line contains `last` (at most 20 lines or 20 s),
/// then stops the child.
fn startup_lines(mut child: std::process::Child, last: &str) -> String {
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = Instant::now();
    let mut seen = Vec::new();
    for line in lines {
        let line = line.unwrap();
        let done = line.contains(last);
        seen.push(line);
        if done || seen.len() > 20 || started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    seen.join("\n")
}

/// issue 14: `simulate -tls` says it serves a self-signed certificate and how to
/// attack it, and `-tls-cert-out` writes that certificate.
#[test]
fn tls_says_how_to_trust_its_certificate() {
    let dir = TempDir::new("tls-out");
    let out = dir.0.join("sim.pem");
    let child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args([
            "simulate",
            "-threads",
            "1",
            "-addr",
            "127.0.0.1:0",
            "-tls",
            "-max-streams=1",
        ])
        .arg(format!("-tls-cert-out={}", out.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = startup_lines(child, "-root-certs=");
    assert!(text.contains("on https://127.0.0.1:"), "{text}");
    assert!(
        text.contains("h2 or http/1.1 by ALPN; 1 concurrent streams"),
        "{text}"
    );
    assert!(
        text.contains("self-signed certificate for localhost, 127.0.0.1 and ::1"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "attack with -root-certs={} (or -insecure)",
            out.display()
        )),
        "{text}"
    );
    let pem = std::fs::read_to_string(&out).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");

    let child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .args(["simulate", "-threads", "1", "-addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = startup_lines(child, "http/2:");
    assert!(
        text.contains(
            "h2c with prior knowledge on the same port (attack -h2c); 250 concurrent streams"
        ),
        "{text}"
    );
}
