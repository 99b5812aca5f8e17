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
