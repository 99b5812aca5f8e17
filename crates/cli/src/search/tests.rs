//! Flags -> plan text -> [`Plan`] -> the folder's plan.toml -> the same [`Plan`].

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use clap::Parser;
use lab::Plan;
use lab::plan::TargetSource;

use super::{SearchArgs, Targets, plan_text, slo_entry, split_targets};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: SearchArgs,
}

fn args(flags: &[&str]) -> SearchArgs {
    let mut argv = vec!["search"];
    argv.extend_from_slice(flags);
    Cli::try_parse_from(argv).unwrap().args
}

fn url_targets(args: &SearchArgs) -> Targets {
    super::targets(args).unwrap()
}

fn plan_of(flags: &[&str]) -> (String, Plan) {
    let args = args(flags);
    let text = plan_text(&args, &url_targets(&args)).unwrap();
    let plan =
        Plan::parse(&text, "flags", Path::new("/")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, plan)
}

#[test]
fn flags_become_the_plan_a_user_would_write() {
    let (text, plan) = plan_of(&[
        "http://127.0.0.1:8080/a",
        "http://127.0.0.1:8080/b",
        "--slo",
        "p99 < 200ms",
        "--slo",
        "success > 99.5%",
        "--slo",
        "lag <= 25ms",
        "--max-rate",
        "5000",
        "--step-duration",
        "2s",
        "-H",
        "X-Team: perf",
        "--timeout",
        "3s",
        "--monitor",
        "process=nginx",
    ]);
    assert_eq!(plan.name, "search-127.0.0.1-8080");
    assert_eq!(plan.mode, lab::Mode::Search);
    assert_eq!(plan.variants.len(), 1, "{text}");
    assert_eq!(plan.variants[0].targets, TargetSource::Shared);
    assert!(plan.variants[0].setup.is_none() && plan.variants[0].teardown.is_none());
    assert_eq!(
        plan.load.attack.targets,
        Some(vec![
            "GET http://127.0.0.1:8080/a".to_owned(),
            "GET http://127.0.0.1:8080/b".to_owned()
        ])
    );
    assert_eq!(
        plan.load.attack.headers,
        Some(vec!["X-Team: perf".to_owned()])
    );
    assert_eq!(plan.load.attack.timeout.as_deref(), Some("3s"));
    assert_eq!(plan.load.settings.monitor, vec!["process=nginx".to_owned()]);
    assert_eq!(plan.load.step_duration, Duration::from_secs(2));
    assert_eq!(plan.load.warmup, Duration::from_secs(1));
    assert_eq!(plan.slo.min_success_ratio, Some(0.995));
    let bounds: Vec<(String, u64)> = plan
        .slo
        .max_latency_ns
        .iter()
        .map(|(p, ns)| (p.to_string(), *ns))
        .collect();
    assert_eq!(bounds, vec![("p99".to_owned(), 200_000_000)]);
    assert_eq!(plan.slo.generator.max_lag_p99_ns, 25_000_000);
    assert_eq!(plan.search.config.max_per_sec, 5000.0);
    assert_eq!(plan.search.config.start_per_sec, 100.0);
    assert!(
        plan.load.check_targets,
        "a search checks its targets unless told"
    );
}

#[test]
fn no_check_targets_is_written_into_the_plan() {
    let (text, plan) = plan_of(&["http://127.0.0.1:8080/", "--no-check-targets"]);
    assert!(!plan.load.check_targets, "{text}");
    assert!(text.contains("check_targets = false"), "{text}");
}

/// The run folder's plan.toml is the text, redacted: it parses to the same plan.
#[test]
fn the_written_plan_parses_to_the_same_plan() {
    let rows: &[&[&str]] = &[
        &["http://127.0.0.1:8080/", "--slo", "p99 < 200ms"],
        &[
            "http://127.0.0.1:8080/",
            "--max-rate",
            "50",
            "--slo",
            "p99.9 < 1s",
            "--slo",
            "success > 0.9",
        ],
        &[
            "https://example.test/q?x=\"1\"",
            "-H",
            "Authorization: Bearer T",
            "--stop-when",
            "errors > 20% for 1s",
        ],
    ];
    for flags in rows {
        let (text, first) = plan_of(flags);
        let written = lab::redact(&text);
        let again = Plan::parse(&written, "plan.toml", Path::new("/")).unwrap();
        assert_eq!(again.name, first.name, "{written}");
        assert_eq!(again.variants, first.variants, "{written}");
        assert_eq!(again.slo, first.slo, "{written}");
        assert_eq!(again.search, first.search, "{written}");
        assert_eq!(again.load.step_duration, first.load.step_duration);
        assert_eq!(again.load.attack.targets, first.load.attack.targets);
        assert_eq!(again.load.run, first.load.run, "{written}");
    }
}

#[test]
fn slo_expressions() {
    let rows = [
        ("p99 < 200ms", Ok(("p99", "\"200ms\""))),
        ("p50<1s", Ok(("p50", "\"1s\""))),
        ("p99.9 < 2s", Ok(("\"p99.9\"", "\"2s\""))),
        ("mean <= 5ms", Ok(("mean", "\"5ms\""))),
        ("success > 99%", Ok(("success", "0.99"))),
        ("success >= 0.95", Ok(("success", "0.95"))),
        ("lag < 25ms", Ok(("max_lag", "\"25ms\""))),
        ("p99 > 200ms", Err("a latency is bounded from above")),
        ("success < 99%", Err("success is bounded from below")),
        ("success > 120%", Err("want a percent from 0% to 100%")),
        ("p99 < fast", Err("-slo \"p99 < fast\"")),
        ("p99 < 0s", Err("longer than zero")),
        ("p98 < 1s", Err("unknown measure \"p98\"")),
        ("p99 = 1s", Err("no < or >")),
    ];
    for (expr, want) in rows {
        let got = slo_entry(expr);
        match (want, got) {
            (Ok((key, value)), Ok((k, v))) => {
                assert_eq!((k.as_str(), v.as_str()), (key, value), "{expr}");
            }
            (Err(part), Err(err)) => {
                let text = err.to_string();
                assert!(text.contains(part), "{expr}: {text}");
                assert!(text.starts_with(&format!("-slo {expr:?}: ")), "{text}");
                assert!(text.contains("accepted: p50, p90"), "{text}");
            }
            (want, got) => panic!("{expr}: want {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn bad_flags_are_named() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["http://h/", "--max-rate", "0"],
            "-max-rate: must be above 0",
        ),
        (
            &["http://h/", "--max-rate=-5"],
            "-max-rate: must be above 0",
        ),
        (
            &["http://h/", "--slo", "p99 < 1s", "--slo", "p99 < 2s"],
            "p99 is bounded twice",
        ),
        (&["http://h/", "--slo", "p99 > 1s"], "-slo \"p99 > 1s\""),
    ];
    for (flags, want) in rows {
        let args = args(flags);
        let err = plan_text(&args, &url_targets(&args))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    let rows: &[(&[&str], &str)] = &[
        (&["127.0.0.1:8080"], "want an http:// or https:// URL"),
        (
            &["http://h/", "--targets", "t.txt"],
            "give URLs or -targets FILE, not both",
        ),
        (
            &["--targets", "/no/such/targets.txt"],
            "-targets /no/such/targets.txt",
        ),
    ];
    for (flags, want) in rows {
        let err = super::targets(&args(flags)).unwrap_err();
        assert!(format!("{err:#}").contains(want), "{flags:?}: {err:#}");
    }
}

#[test]
fn stdin_text_splits_into_targets() {
    let text =
        "# a comment\nGET http://h/a\nX-A: 1\n\nPOST http://h/b\n@body.json\nGET http://h/c\n";
    assert_eq!(
        split_targets(text),
        vec![
            "GET http://h/a\nX-A: 1",
            "POST http://h/b\n@body.json",
            "GET http://h/c"
        ]
    );
    assert!(split_targets("\n# nothing\n").is_empty());
}

/// Values the plan's own checks refuse are named as the flags that gave them.
#[test]
fn plan_errors_name_the_flag() {
    let rows: &[(&[&str], &str)] = &[
        (&["--timeout", "5x"], "-timeout: invalid duration \"5x\""),
        (
            &["--step-duration", "0s"],
            "-step-duration: must be longer than zero",
        ),
        (&["--warmup", "soon"], "-warmup: invalid duration"),
        (&["--precision", "2"], "-precision: must be between 0 and 1"),
        (
            &["--stop-when", "bogus"],
            "-stop-when: invalid stop rule \"bogus\"",
        ),
        (&["-H", "nocolon"], "-header: bad header \"nocolon\""),
        (
            &["--start-rate", "500", "--max-rate", "100"],
            "-max-rate: must be above min and at least start",
        ),
        (&["--max-workers", "0"], "-max-workers: "),
    ];
    for (flags, want) in rows {
        let mut all = vec!["http://127.0.0.1:8080/"];
        all.extend_from_slice(flags);
        let args = args(&all);
        let text = plan_text(&args, &url_targets(&args)).unwrap();
        let err = Plan::parse(&text, "loadlab search", Path::new("/"))
            .map_err(super::flag_error)
            .unwrap_err();
        assert!(err.to_string().starts_with(want), "{flags:?}: {err:#}");
    }
}

#[test]
fn rates_make_a_sweep_and_vs_a_second_variant() {
    let (text, plan) = plan_of(&[
        "http://127.0.0.1:8080/api",
        "--rates",
        "100,200,400",
        "--vs",
        "http://127.0.0.1:8081",
        "--slo",
        "p99 < 50ms",
    ]);
    assert_eq!(plan.mode, lab::Mode::Sweep, "{text}");
    assert_eq!(plan.name, "sweep-127.0.0.1-8080");
    assert!(
        matches!(&plan.load.steps, lab::plan::Steps::Rates(r) if *r == [100.0, 200.0, 400.0]),
        "{text}"
    );
    let variants: Vec<(&str, &TargetSource)> = plan
        .variants
        .iter()
        .map(|v| (v.name.as_str(), &v.targets))
        .collect();
    assert_eq!(
        variants,
        vec![
            ("127.0.0.1-8080", &TargetSource::Shared),
            (
                "127.0.0.1-8081",
                &TargetSource::Rebased("http://127.0.0.1:8081".to_owned())
            ),
        ],
        "{text}"
    );
    assert!(!text.contains("[search]"), "{text}");
}

#[test]
fn sweep_and_vs_mistakes_are_named_as_flags() {
    let rows: &[(&[&str], &str)] = &[
        (
            &["--rates", "100,200", "--max-rate", "500"],
            "-rates: a sweep",
        ),
        (&["--rates", "100,x"], "rates"),
        (&["--rates", "100,-5"], "-rates:"),
        (
            &["--vs", "127.0.0.1:8081"],
            "-vs \"127.0.0.1:8081\": want scheme://host:port",
        ),
        (&["--vs", "http://127.0.0.1:8081/path"], "-vs:"),
        (
            &["--vs", "http://127.0.0.1:8080"],
            "the targets' own server",
        ),
    ];
    for (flags, want) in rows {
        let mut argv = vec!["search", "http://127.0.0.1:8080/"];
        argv.extend_from_slice(flags);
        let err = match Cli::try_parse_from(&argv) {
            Err(e) => e.to_string(),
            Ok(cli) => match plan_text(&cli.args, &url_targets(&cli.args)) {
                Err(e) => e.to_string(),
                Ok(text) => Plan::parse(&text, "loadlab search", Path::new("/"))
                    .map(|_| String::new())
                    .unwrap_or_else(|e| super::flag_error(e).to_string()),
            },
        };
        assert!(err.contains(want), "{flags:?}: {err:?} lacks {want:?}");
    }
}
