//! A sharded step as its shards get it: [`scenarios_toml`], the step's attacks as an
//! `attack -scenarios` file (the main load, then each background scenario, as the
//! step's own run has them), and [`run_flags`], the run-wide keys of `[load]` that
//! `attack` takes only as flags. The file must mean on a shard what the plan means in
//! this process, so what only the plan knows is written out: a variant's `base_url`
//! is applied to the inline targets and flow steps (a scenarios file has no such key),
//! and relative paths become absolute (a scenarios file's paths are relative to its
//! own folder, the step's, not the plan's).

use std::path::Path;

use serde::Serialize;
use workload::{AttackFields, Origin, RunFields};

use crate::cells::Cell;
use crate::plan::Plan;

/// The file's top level, as `workload::ScenarioFile` reads it.
#[derive(Serialize)]
struct ScenariosFile<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_when: &'a [String],
    scenario: Vec<AttackFields>,
}

/// The step's scenarios file: `# title` first, then the seed and stop rules of
/// `[load]` and one `[[scenario]]` per attack of the step.
pub fn scenarios_toml(plan: &Plan, cell: &Cell, title: &str) -> Result<String, String> {
    let scenario = crate::step_fields::step_fields(plan, cell)
        .into_iter()
        .map(|(fields, origin)| for_a_shard(fields, &origin))
        .collect();
    let file = ScenariosFile {
        seed: plan.load.run.seed,
        stop_when: plan.load.run.stop_when.as_deref().unwrap_or_default(),
        scenario,
    };
    let body =
        toml::to_string(&file).map_err(|e| format!("cannot write the scenarios file: {e}"))?;
    Ok(format!("# {title}\n{body}"))
}

/// One attack's fields with its base URL applied and its paths made absolute.
fn for_a_shard(mut fields: AttackFields, origin: &Origin) -> AttackFields {
    if let Some(base) = fields.base_url.take() {
        let base = base_origin(&base);
        if let Some(targets) = &mut fields.targets {
            for target in targets.iter_mut() {
                *target = rebase_text(target, &base);
            }
        }
        for step in fields.step.iter_mut().flatten() {
            step.request = step.request.as_deref().map(|r| rebase_text(r, &base));
        }
        if let Some(replay) = &mut fields.replay {
            replay.base_url.get_or_insert(base);
        }
    }
    let planned = |text: &String| absolute(origin, text);
    fields.targets_file = fields.targets_file.as_ref().map(planned);
    fields.body_file = fields.body_file.as_ref().map(planned);
    fields.data = fields.data.as_ref().map(planned);
    if let Some(replay) = &mut fields.replay {
        replay.files = replay.files.iter().map(planned).collect();
    }
    // Inline targets read `@file` bodies from the working directory, which local
    // shards share with this process; a flow step reads them from its file's folder.
    for target in fields.targets.iter_mut().flatten() {
        *target = absolute_bodies(target, &|path| cwd_absolute(path));
    }
    for step in fields.step.iter_mut().flatten() {
        step.request = step
            .request
            .as_deref()
            .map(|r| absolute_bodies(r, &|path| absolute(origin, &path.to_owned())));
    }
    fields
}

/// `scheme://host:port` of a variant's base URL as `attack` reads it (parsed, so the
/// default port and a trailing `/` are dropped as they are in this process).
fn base_origin(base: &str) -> String {
    match workload::parse_base_url(base) {
        Ok(url) => url.as_str().trim_end_matches('/').to_owned(),
        // Checked when the plan was read; as written is the best left.
        Err(_) => base.trim_end_matches('/').to_owned(),
    }
}

/// Each request line (`METHOD URL`) of vegeta http-format text sent to `origin`:
/// its scheme, host and port replaced, path, query, headers and body kept.
pub fn rebase_text(text: &str, origin: &str) -> String {
    text.split('\n')
        .map(|line| {
            let trimmed = line.trim_start();
            let method = workload::HTTP_METHODS.iter().find(|m| {
                trimmed
                    .strip_prefix(**m)
                    .is_some_and(|rest| rest.starts_with([' ', '\t']))
            });
            let Some(method) = method else {
                return line.to_owned();
            };
            let url = trimmed[method.len()..].trim();
            let Some(scheme_end) = url.find("://") else {
                return line.to_owned();
            };
            let after = &url[scheme_end + 3..];
            let path_at = after.find(['/', '?', '#']).unwrap_or(after.len());
            format!("{method} {origin}{}", &after[path_at..])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `@path` body lines with their path made absolute by `absolute`.
fn absolute_bodies(text: &str, absolute: &dyn Fn(&str) -> String) -> String {
    text.split('\n')
        .map(|line| match line.trim().strip_prefix('@') {
            Some(path) if !path.trim().is_empty() => format!("@{}", absolute(path.trim())),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A path of the plan's fields, absolute (stdin's `-` as it is).
fn absolute(origin: &Origin, text: &String) -> String {
    if text == "-" {
        return text.clone();
    }
    cwd_absolute(&origin.path(text).display().to_string())
}

fn cwd_absolute(path: &str) -> String {
    std::path::absolute(Path::new(path))
        .map_or_else(|_| path.to_owned(), |p| p.display().to_string())
}

/// The run-wide keys of `[load]` that `attack` takes as flags only (the seed and the
/// stop rules are in the scenarios file), as `-flag=value` words; paths made absolute.
/// Which keys, and their flags, are declared in [`workload::options`].
pub fn run_flags(run: &RunFields, origin: &Origin) -> Vec<String> {
    let path = |text: &String| absolute(origin, text);
    let words: [(&str, Option<String>); 17] = [
        ("threads", run.threads.map(|n| n.to_string())),
        ("workers", run.workers.map(|n| n.to_string())),
        ("connections", run.connections.map(|n| n.to_string())),
        ("trace", run.trace.map(|b| b.to_string())),
        (
            "trace_sample",
            run.trace_sample.map(|share| share.to_string()),
        ),
        ("trace_state", run.trace_state.clone()),
        ("precision", run.precision.clone()),
        ("http2", run.http2.map(|b| b.to_string())),
        ("h2c", run.h2c.map(|b| b.to_string())),
        ("max_streams", run.max_streams.map(|n| n.to_string())),
        ("insecure", run.insecure.map(|b| b.to_string())),
        (
            "root_certs",
            run.root_certs
                .as_ref()
                .filter(|certs| !certs.is_empty())
                .map(|certs| certs.iter().map(path).collect::<Vec<_>>().join(",")),
        ),
        ("cert", run.cert.as_ref().map(path)),
        ("key", run.key.as_ref().map(path)),
        ("tls_server_name", run.tls_server_name.clone()),
        ("laddr", run.laddr.map(|ip| ip.to_string())),
        ("unix_socket", run.unix_socket.as_ref().map(path)),
    ];
    words
        .into_iter()
        .filter(|(key, _)| workload::options::by_key(key).is_some_and(|o| o.shard_arg))
        .filter_map(|(key, value)| Some(format!("{}={}", workload::options::flag_of(key), value?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_rebased_and_the_rest_kept() {
        let rows = [
            (
                "GET http://api.example:8080/v3/info\nAuthorization: bearer x",
                "GET http://127.0.0.1:9/v3/info\nAuthorization: bearer x",
            ),
            (
                "POST https://h/search?q={{rand.lower 5}}\n@body.json",
                "POST http://127.0.0.1:9/search?q={{rand.lower 5}}\n@body.json",
            ),
            ("GET http://h", "GET http://127.0.0.1:9"),
            ("GET http://h?x=1#f", "GET http://127.0.0.1:9?x=1#f"),
            (
                "# a comment\nGET http://u:p@h:1/a",
                "# a comment\nGET http://127.0.0.1:9/a",
            ),
            ("GET /relative", "GET /relative"),
            ("Host: GET http://h/", "Host: GET http://h/"),
        ];
        for (text, want) in rows {
            assert_eq!(rebase_text(text, "http://127.0.0.1:9"), want, "{text}");
        }
        assert_eq!(base_origin("http://127.0.0.1:80/"), "http://127.0.0.1");
        assert_eq!(
            base_origin("https://h.example:8443"),
            "https://h.example:8443"
        );
    }

    #[test]
    fn run_flags_are_the_keys_given_with_absolute_paths() {
        let origin = Origin::file("p.toml:3: load.".to_owned(), Path::new("/plans"));
        let run = RunFields {
            threads: Some(2),
            http2: Some(false),
            root_certs: Some(vec!["ca.pem".to_owned(), "/etc/ca2.pem".to_owned()]),
            seed: Some(7),
            stop_when: Some(vec!["errors > 1% for 1s".to_owned()]),
            ..RunFields::default()
        };
        assert_eq!(
            run_flags(&run, &origin),
            [
                "-threads=2",
                "-http2=false",
                "-root-certs=/plans/ca.pem,/etc/ca2.pem"
            ]
        );
        assert!(run_flags(&RunFields::default(), &origin).is_empty());
    }

    /// Every run-wide key declared a shard argument is handed on, and no other.
    #[test]
    fn run_flags_are_the_declared_shard_arguments() {
        let origin = Origin::file("p.toml:3: load.".to_owned(), Path::new("/plans"));
        let every = RunFields {
            threads: Some(1),
            workers: Some(1),
            connections: Some(1),
            seed: Some(1),
            precision: Some("1ms".to_owned()),
            http2: Some(true),
            h2c: Some(true),
            max_streams: Some(1),
            insecure: Some(true),
            root_certs: Some(vec!["ca.pem".to_owned()]),
            cert: Some("c.pem".to_owned()),
            key: Some("k.pem".to_owned()),
            tls_server_name: Some("x.test".to_owned()),
            laddr: Some(std::net::Ipv4Addr::LOCALHOST.into()),
            unix_socket: Some("s".to_owned()),
            stop_when: Some(Vec::new()),
            monitor: Some(Vec::new()),
            monitor_interval: Some("1s".to_owned()),
            trace: Some(true),
            trace_sample: Some(0.5),
            trace_state: Some("vendor=1".to_owned()),
        };
        let flags: Vec<String> = run_flags(&every, &origin)
            .iter()
            .map(|word| word.split('=').next().unwrap_or_default().to_owned())
            .collect();
        let declared: Vec<String> = workload::options::OPTIONS
            .iter()
            .filter(|o| o.shard_arg)
            .map(|o| format!("-{}", o.flag.unwrap_or_default()))
            .collect();
        assert_eq!(flags, declared);
    }

    /// A plan with a rebased variant, a flow-free main load, a background scenario and
    /// run-wide keys: its rendered file, read back by `attack`'s own reader, holds the
    /// step's attacks as this process would run them.
    #[test]
    fn the_scenarios_file_reads_back_as_the_step_s_attacks() {
        let text = r#"mode = "sweep"
[[variant]]
name = "go"
base_url = "http://127.0.0.1:18081"
[load]
targets = ["GET http://api.example:8080/v3/info\nAuthorization: bearer x"]
rates = [100]
step_duration = "3s"
warmup = "1s"
timeout = "2s"
headers = ["X-Run: 1"]
data = "rows.csv"
seed = 7
threads = 2
stop_when = ["errors > 50% for 1s"]
[[load.scenario]]
name = "news"
targets = ["GET http://origin.example/news"]
rate = "1/1s"
"#;
        let plan = Plan::parse(text, "p.toml", Path::new("/plans")).expect("plan");
        let cell = Cell {
            variant: 0,
            offer: crate::cells::Offer::Rate(100.0),
            params: Vec::new(),
            repeat: 1,
        };
        let rendered = scenarios_toml(&plan, &cell, "step 000-go-100").expect("rendered");
        assert!(rendered.starts_with("# step 000-go-100\n"), "{rendered}");
        let file = workload::ScenarioFile::parse(&rendered, "scenarios.toml")
            .unwrap_or_else(|e| panic!("{e}\n{rendered}"));
        assert_eq!(file.seed, Some(7));
        assert_eq!(file.stop_when, ["errors > 50% for 1s"]);
        let read: Vec<AttackFields> = file.scenarios.into_iter().map(|(_, f)| f).collect();
        let want: Vec<AttackFields> = crate::step_fields::step_fields(&plan, &cell)
            .into_iter()
            .map(|(fields, origin)| for_a_shard(fields, &origin))
            .collect();
        assert_eq!(read, want, "{rendered}");
        let main = &read[0];
        assert_eq!(main.name.as_deref(), Some("go"));
        assert_eq!(
            main.targets.as_deref(),
            Some(&["GET http://127.0.0.1:18081/v3/info\nAuthorization: bearer x".to_owned()][..])
        );
        assert_eq!(
            main.rate
                .as_ref()
                .map(workload::TextOrNumber::text)
                .as_deref(),
            Some("100/1s")
        );
        assert_eq!(main.duration.as_deref(), Some("4000000000ns"));
        assert_eq!(main.data.as_deref(), Some("/plans/rows.csv"));
        assert_eq!(main.base_url, None);
        let news = &read[1];
        assert_eq!(
            news.targets.as_deref(),
            Some(&["GET http://127.0.0.1:18081/news".to_owned()][..])
        );
        assert_eq!(
            news.timeout.as_deref(),
            Some("2s"),
            "[load]'s request options"
        );
    }

    /// A flow's steps and a replay survive the trip too (their own tables).
    #[test]
    fn flows_and_replays_read_back() {
        let flow = AttackFields {
            name: Some("shop".to_owned()),
            rate: Some(workload::TextOrNumber::Integer(5)),
            step: Some(vec![workload::StepFields {
                name: Some("login".to_owned()),
                request: Some("POST http://h/login\n@/abs/body.json".to_owned()),
                extract: [(
                    "token".to_owned(),
                    workload::ExtractField::Text("json $.t".to_owned()),
                )]
                .into_iter()
                .collect(),
                checks: vec![
                    workload::CheckField::Text("status 200".to_owned()),
                    workload::CheckField::Named {
                        name: "fast".to_owned(),
                        expect: "latency < 1s".to_owned(),
                    },
                ],
                ..workload::StepFields::default()
            }]),
            ..AttackFields::default()
        };
        let replay = AttackFields {
            name: Some("logs".to_owned()),
            replay: Some(workload::ReplayFields {
                files: vec!["/abs/access.log".to_owned()],
                speed: Some(2.0),
                repeat: Some(true),
                ..workload::ReplayFields::default()
            }),
            duration: Some("1m".to_owned()),
            ..AttackFields::default()
        };
        let file = ScenariosFile {
            seed: None,
            stop_when: &[],
            scenario: vec![flow.clone(), replay.clone()],
        };
        let text = toml::to_string(&file).expect("toml");
        let read = workload::ScenarioFile::parse(&text, "s.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut got: Vec<AttackFields> = read.scenarios.into_iter().map(|(_, f)| f).collect();
        for step in got.iter_mut().flat_map(|f| f.step.iter_mut().flatten()) {
            step.line = None;
        }
        assert_eq!(got, [flow, replay], "{text}");
    }
}
