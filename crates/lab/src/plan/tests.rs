//! Whole plans, parsed: the good ones give the model expected, the bad ones name the
//! file, the line and the field.

use std::path::Path;

use crate::plan::Plan;

fn parse(text: &str) -> Result<Plan, String> {
    Plan::parse(text, "p.toml", Path::new("/plans")).map_err(|e| e.to_string())
}

/// Rows of (name, plan text, the start of the error it must fail with).
fn assert_each_fails<const N: usize>(rows: [(&str, String, &str); N]) {
    let wrong: Vec<String> = rows
        .into_iter()
        .filter_map(|(name, text, want)| match parse(&text) {
            Err(err) if err.starts_with(want) => None,
            other => Some(format!("{name}: {other:?}")),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

mod plans {
    use std::path::PathBuf;
    use std::time::Duration;

    use analysis::Percentile;

    use super::{assert_each_fails, parse};
    use crate::plan::*;

    const TARGETS: &str = "[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\nrates = [10]\n";
    const VARIANT: &str = "[[variant]]\nname = \"a\"\n";

    #[test]
    fn good_plans() {
        let full = r#"name = "full"
mode = "search"

[[variant]]
name = "go"
base_url = "http://127.0.0.1:8081"
setup = "echo {{variant}}"
ready = { url = "http://127.0.0.1:8081/health", timeout = "5s", interval = "100ms" }
teardown = "true"
hook_timeout = "10s"

[[variant]]
name = "ruby"
targets_file = "ruby.txt"

[load]
targets = ["GET http://example:1/v3/info\nAuthorization: bearer x"]
step_duration = "2s"
warmup = "500ms"
cooldown = "1s"
timeout = "5s"
connections = 100
h2c = true
max_streams = 50
stop_when = ["errors > 50% for 1s"]

[slo]
success = 0.999
p99 = "250ms"
"p99.9" = "1s"
errors = { timeout = 0.001, "503" = 0.0 }
achieved = 0.98
max_lag = "5ms"

[search]
start = 50
growth = 3
precision = 0.05
max_probes = 12
max_time = "5m"
max_rate = 100000
"#;
        let plan = parse(full).expect("full plan");
        assert_eq!((plan.name.as_str(), plan.mode), ("full", Mode::Search));
        assert_eq!(
            plan.variants[0].targets,
            TargetSource::Rebased("http://127.0.0.1:8081".to_owned())
        );
        assert_eq!(
            plan.variants[1].targets,
            TargetSource::File(PathBuf::from("ruby.txt"))
        );
        assert_eq!(plan.variants[1].line, 12);
        assert_eq!(plan.load.warmup, Duration::from_millis(500));
        assert_eq!(plan.load.attack.timeout.as_deref(), Some("5s"));
        assert_eq!(
            (
                plan.load.settings.http2,
                plan.load.settings.h2c,
                plan.load.settings.max_streams
            ),
            (true, true, 50)
        );
        assert_eq!(plan.slo.min_success_ratio, Some(0.999));
        assert_eq!(
            plan.slo.max_latency_ns,
            vec![
                (Percentile::P99, 250_000_000),
                (Percentile::P999, 1_000_000_000)
            ]
        );
        assert_eq!(plan.slo.max_error_ratio_by_kind.len(), 2);
        assert_eq!(plan.slo.generator.max_lag_p99_ns, 5_000_000);
        assert_eq!(
            (
                plan.search.config.start_per_sec,
                plan.search.config.max_probes
            ),
            (50.0, 12)
        );
        assert_eq!(plan.search.max_time, Some(Duration::from_secs(300)));

        let gains = format!(
            "mode = \"sweep\"\n{VARIANT}{TARGETS}data = \"users.csv\"\ndata_order = \"random\"\nformat = \"http\"\nlazy = false\nprecision = \"1ms\"\nworkers = 5\ninsecure = true\nmonitor = [\"host\"]\nmonitor_interval = \"500ms\"\n"
        );
        let plan = parse(&gains).expect("a plan takes what attack takes");
        assert_eq!(plan.load.attack.data.as_deref(), Some("users.csv"));
        let settings = &plan.load.settings;
        assert_eq!(
            (
                settings.precision_ns,
                settings.initial_connections,
                settings.tls.insecure
            ),
            (1_000_000, 5, true)
        );
        assert_eq!(
            (settings.monitor.clone(), settings.monitor_interval),
            (vec!["host".to_owned()], Duration::from_millis(500))
        );

        let own = "mode = \"sweep\"\n[[variant]]\nname = \"a\"\ntargets = [\"GET http://h/\"]\nmonitor = [\"app:prom=http://127.0.0.1:9/metrics\"]\n[[variant]]\nname = \"b\"\ntargets = [\"GET http://h/\"]\n[load]\nrates = [1]\n";
        let plan = parse(own).expect("a variant's own monitor");
        let monitors: Vec<&[String]> = plan.variants.iter().map(|v| v.monitor.as_slice()).collect();
        assert_eq!(
            monitors,
            [
                &["app:prom=http://127.0.0.1:9/metrics".to_owned()][..],
                &[][..]
            ]
        );

        let rows: [(&str, String); 4] = [
            (
                "sweep of users",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nusers = [1, 10]\n"
                ),
            ),
            (
                "ramp schedule",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nschedule = \"line(1, 100, 10s)\"\n"
                ),
            ),
            (
                "matrix",
                format!(
                    "mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{ replicas = [1, 2] }}\nrepeat = 3\norder = \"shuffled\"\nseed = 4\n"
                ),
            ),
            ("defaults", format!("mode = \"sweep\"\n{VARIANT}{TARGETS}")),
        ];
        for (name, text) in rows {
            let plan = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(plan.slo.min_success_ratio, Some(DEFAULT_SUCCESS), "{name}");
        }
    }

    /// A key or table the mode would ignore fails, naming it, its line and the mode.
    #[test]
    fn what_a_mode_ignores_is_an_error() {
        const SEARCH: &str = "[search]\nmax_rate = 100\n";
        const REPLICAS: &str = "[matrix]\naxes = { replicas = [1] }\n";
        const RATE_AXIS: &str = "[matrix]\naxes = { rate = [1, 2] }\n";
        const BARE: &str = "[load]\ntargets = [\"GET http://h/\"]\n";
        assert_each_fails([
            (
                "rates in a search",
                format!("mode = \"search\"\n{VARIANT}{TARGETS}"),
                "p.toml:6: load.rates: mode = \"search\" ignores it: the [search] table sets the rates",
            ),
            (
                "[search] in a sweep",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}{SEARCH}"),
                "p.toml:7: search: mode = \"sweep\" ignores it: only a search probes",
            ),
            (
                "[search] in a matrix",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}{REPLICAS}{SEARCH}"),
                "p.toml:9: search: mode = \"matrix\" ignores it",
            ),
            (
                "[matrix] in a sweep",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}{REPLICAS}"),
                "p.toml:7: matrix: mode = \"sweep\" ignores it: only a matrix crosses axes",
            ),
            (
                "[matrix] in a search",
                format!("mode = \"search\"\n{VARIANT}{BARE}{REPLICAS}"),
                "p.toml:6: matrix: mode = \"search\" ignores it",
            ),
            (
                "rates beside a rate axis",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}{RATE_AXIS}"),
                "p.toml:6: load.rates: mode = \"matrix\" ignores it: the [matrix] rate axis",
            ),
            (
                "users beside a rate axis",
                format!("mode = \"matrix\"\n{VARIANT}{BARE}users = [1]\n{RATE_AXIS}"),
                "p.toml:6: load.users: mode = \"matrix\" ignores it",
            ),
            (
                "a schedule beside a rate axis",
                format!(
                    "mode = \"matrix\"\n{VARIANT}{BARE}schedule = \"const(5, 1s)\"\n{RATE_AXIS}"
                ),
                "p.toml:6: load.schedule: mode = \"matrix\" ignores it",
            ),
        ]);
        // What each mode reads, it takes.
        for text in [
            format!("mode = \"search\"\n{VARIANT}{BARE}{SEARCH}"),
            format!("mode = \"matrix\"\n{VARIANT}{BARE}{RATE_AXIS}"),
            format!("mode = \"matrix\"\n{VARIANT}{TARGETS}{REPLICAS}"),
        ] {
            parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn bad_plans_name_the_line_and_field() {
        let rows: [(&str, String, &str); 26] = [
            (
                "no streams",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}max_streams = 0\n"),
                "p.toml:7: load.max_streams: 0 streams would send nothing; at least 1",
            ),
            (
                "h2c not a bool",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}h2c = \"yes\"\n"),
                "p.toml:7: load.h2c: invalid type: string \"yes\", expected a boolean",
            ),
            (
                "typo",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nratez = [1]\n"
                ),
                "p.toml:6: ratez: unknown field `ratez`",
            ),
            (
                "unknown mode",
                format!("mode = \"soak\"\n{VARIANT}{TARGETS}"),
                "p.toml:1: mode: unknown mode \"soak\"",
            ),
            (
                "missing mode",
                format!("{VARIANT}{TARGETS}"),
                "p.toml:1: mode: missing field `mode`",
            ),
            (
                "success > 1",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nsuccess = 1.5\n"),
                "p.toml:8: slo.success: must be between 0 and 1",
            ),
            (
                "negative error share",
                format!(
                    "mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nerrors = {{ timeout = -0.1 }}\n"
                ),
                "p.toml:8: slo.errors.timeout: must be between 0 and 1",
            ),
            (
                "unknown error kind",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nerrors = {{ oops = 0.1 }}\n"),
                "p.toml:8: slo.errors.oops: want an error kind",
            ),
            (
                "bad latency",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\np99 = \"fast\"\n"),
                "p.toml:8: slo.p99:",
            ),
            (
                "negative rate",
                format!(
                    "mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nrates = [10, -5]\n"
                ),
                "p.toml:6: load.rates: every rate must be above 0, got -5",
            ),
            (
                "empty axis",
                format!(
                    "mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{ replicas = [] }}\n"
                ),
                "p.toml:8: matrix.axes.replicas: an empty axis makes no cells",
            ),
            (
                "no axes",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}[matrix]\naxes = {{}}\n"),
                "p.toml:8: matrix.axes: no axes",
            ),
            (
                "matrix without table",
                format!("mode = \"matrix\"\n{VARIANT}{TARGETS}"),
                "p.toml:1: matrix:",
            ),
            (
                "missing targets",
                format!("mode = \"sweep\"\n{VARIANT}[load]\nrates = [1]\n"),
                "p.toml:2: variant.targets: variant \"a\" has no targets",
            ),
            (
                "base_url without shared targets",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\nbase_url = \"http://127.0.0.1:1\"\n[load]\nrates = [1]\n"
                    .to_owned(),
                "p.toml:4: variant.base_url:",
            ),
            (
                "no variants",
                format!("mode = \"sweep\"\n{TARGETS}"),
                "p.toml:1: variant: no [[variant]] tables",
            ),
            (
                "bad search",
                format!(
                    "mode = \"search\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\n[search]\nprecision = 2\n"
                ),
                "p.toml:7: search.precision: must be between 0 and 1",
            ),
            (
                "stop_after_failures in a search",
                format!(
                    "mode = \"search\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nstop_after_failures = 1\n"
                ),
                "p.toml:6: load.stop_after_failures: a search stops by itself",
            ),
            (
                "negative stop_after_failures",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}stop_after_failures = -1\n"),
                "p.toml:7: load.stop_after_failures: invalid value: integer `-1`, expected u32",
            ),
            (
                "a value of the wrong type names its key",
                format!("mode = \"sweep\"\n{VARIANT}[load]\ntargets = [\"GET http://h/\"]\nrates = \"fast\"\n"),
                "p.toml:6: load.rates: invalid type: string \"fast\", expected a sequence",
            ),
            (
                "an impossible generator bound",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}[slo]\nmax_lag = \"0ms\"\n"),
                "p.toml:8: slo.max_lag: must be longer than zero",
            ),
            (
                "duplicate variant",
                format!("mode = \"sweep\"\n{VARIANT}{VARIANT}{TARGETS}"),
                "p.toml:5: variant.name: \"a\" is used twice",
            ),
            (
                "a step's own key",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}rate = 5\n"),
                "p.toml:7: load.rate: give the steps' rates as rates = [...]",
            ),
            (
                "no threads",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}threads = 0\n"),
                "p.toml:7: load.threads: must be at least 1",
            ),
            (
                "an attack key checked as attack checks it",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}data_order = \"random\"\n"),
                "p.toml:7: load.data_order: needs a data file",
            ),
            (
                "think time in an open-model sweep",
                format!("mode = \"sweep\"\n{VARIANT}{TARGETS}think_time = \"1s\"\n"),
                "p.toml:7: load.think_time: the think time belongs to the closed model",
            ),
        ];
        assert_each_fails(rows);
    }
}

mod check_bounds {
    use super::{assert_each_fails, parse};

    /// A sweep whose `[slo]` ends with `slo`'s lines (the first of them is line 8).
    fn plan(slo: &str) -> String {
        format!(
            "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\nrates = [10]\n[slo]\n{slo}"
        )
    }

    #[test]
    fn every_check_or_each_by_name() {
        let named = |pairs: &[(&str, f64)]| -> Vec<(String, f64)> {
            pairs.iter().map(|&(n, b)| (n.to_owned(), b)).collect()
        };
        let rows = [
            ("none", plan(""), None, named(&[])),
            (
                "every check",
                plan("checks = 0.999\n"),
                Some(0.999),
                named(&[]),
            ),
            (
                "an integer share",
                plan("checks = 1\n"),
                Some(1.0),
                named(&[]),
            ),
            (
                "a table by name, \"*\" for the rest",
                plan(
                    "success = 0.9\n[slo.checks]\n\"login: status 200\" = 0.9999\n\"*\" = 0.99\n\"item: body contains \\\"id\\\"\" = 0\n",
                ),
                Some(0.99),
                named(&[
                    ("item: body contains \"id\"", 0.0),
                    ("login: status 200", 0.9999),
                ]),
            ),
            (
                "an inline table",
                plan("checks = { \"list: has items\" = 0.5 }\n"),
                None,
                named(&[("list: has items", 0.5)]),
            ),
        ];
        for (name, text, every, by_name) in rows {
            let plan = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(plan.slo.min_check_pass_ratio, every, "{name}");
            assert_eq!(plan.slo.min_pass_ratio_by_check, by_name, "{name}");
        }
        let text = "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\nrates = [10]\n[[load.scenario]]\nname = \"shop\"\ntargets = [\"GET http://h/shop\"]\nrate = 1\nslo = { checks = { \"login: status 200\" = 0.9 } }\n";
        let plan = parse(text).expect("a scenario's own check bounds");
        let slo = plan.load.scenarios[0].slo.as_ref().expect("shop's slo");
        assert_eq!(
            slo.min_pass_ratio_by_check,
            named(&[("login: status 200", 0.9)])
        );
    }

    #[test]
    fn bad_bounds_name_the_line_and_the_check() {
        assert_each_fails([
            (
                "share above 1",
                plan("checks = 1.5\n"),
                "p.toml:8: slo.checks: must be between 0 and 1 (a share, 0.99 = 99%), got 1.5",
            ),
            (
                "a named share below 0",
                plan("[slo.checks]\n\"login: status 200\" = 0.9\n\"list: status 200\" = -1\n"),
                "p.toml:10: slo.checks.\"list: status 200\": must be between 0 and 1",
            ),
            (
                "a name without its step",
                plan("[slo.checks]\n\"login: status 200\" = 0.9\n\"status 200\" = 0.9\n"),
                "p.toml:10: slo.checks.\"status 200\": want a check's full name, \"STEP: CHECK\"",
            ),
            (
                "a name without its check",
                plan("checks = { \"login: \" = 0.9 }\n"),
                "p.toml:8: slo.checks.\"login: \": want a check's full name",
            ),
            (
                "an empty table",
                plan("success = 0.9\n[slo.checks]\n"),
                "p.toml:9: slo.checks: bounds no check",
            ),
            (
                "a word",
                plan("checks = \"all\"\n"),
                "p.toml:8: slo.checks: invalid type: string \"all\", expected a share (0.999) or a table of shares by check name",
            ),
            (
                "a share that is not a number",
                plan("[slo.checks]\n\"login: status 200\" = \"high\"\n"),
                "p.toml:9: slo.checks.login: status 200: invalid type: string \"high\", expected f64",
            ),
            (
                "unknown keys still fail",
                plan("check = 0.99\n"),
                "p.toml:8: check: unknown field `check`",
            ),
            (
                "a scenario's own",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\nrates = [10]\n[[load.scenario]]\nname = \"shop\"\ntargets = [\"GET http://h/shop\"]\nrate = 1\nslo = { checks = 2 }\n".to_owned(),
                "p.toml:11: load.scenario.slo.checks: must be between 0 and 1",
            ),
        ]);
    }
}

mod stream_bounds {
    use analysis::{Percentile, StreamBounds};

    use super::{assert_each_fails, parse};

    /// A sweep whose `[slo]` ends with `slo`'s lines (the first of them is line 8).
    fn plan(slo: &str) -> String {
        format!(
            "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\nusers = [10]\n[slo]\n{slo}"
        )
    }

    #[test]
    fn connections_held_and_messages_by_the_stop_rules_names() {
        const MS: u64 = 1_000_000;
        let rows = [
            ("none", plan(""), StreamBounds::default()),
            (
                "every key",
                plan(
                    "connections_held = 0.99\nmessages_in_per_sec = 1000\nmessages_out_per_sec = 12.5\nmessage_p50 = \"5ms\"\nmessage_p99 = \"50ms\"\nmessage_p999 = \"80ms\"\nmessage_max = \"1s\"\n",
                ),
                StreamBounds {
                    min_held_ratio: Some(0.99),
                    min_messages_in_per_sec: Some(1000.0),
                    min_messages_out_per_sec: Some(12.5),
                    max_message_latency_ns: vec![
                        (Percentile::P50, 5 * MS),
                        (Percentile::P99, 50 * MS),
                        (Percentile::P999, 80 * MS),
                        (Percentile::Max, 1000 * MS),
                    ],
                },
            ),
            (
                "a whole share",
                plan("connections_held = 1\n"),
                StreamBounds {
                    min_held_ratio: Some(1.0),
                    ..StreamBounds::default()
                },
            ),
        ];
        for (name, text, want) in rows {
            let plan = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(plan.slo.streams, want, "{name}");
        }
    }

    #[test]
    fn bad_bounds_name_the_line_and_the_key() {
        assert_each_fails([
            (
                "a share above 1",
                plan("success = 0.9\nconnections_held = 500\n"),
                "p.toml:9: slo.connections_held: must be between 0 and 1 (a share, 0.99 = 99%), got 500",
            ),
            (
                "a rate of 0",
                plan("messages_in_per_sec = 0\n"),
                "p.toml:8: slo.messages_in_per_sec: must be a rate above 0 (messages per second, at least), got 0",
            ),
            (
                "a negative rate",
                plan("messages_out_per_sec = -5\n"),
                "p.toml:8: slo.messages_out_per_sec: must be a rate above 0",
            ),
            (
                "a latency without a unit",
                plan("message_p99 = \"50\"\n"),
                "p.toml:8: slo.message_p99: ",
            ),
            (
                "a latency of zero",
                plan("message_p999 = \"0s\"\n"),
                "p.toml:8: slo.message_p999: must be longer than zero",
            ),
            (
                "a rate as text",
                plan("messages_in_per_sec = \"1000/s\"\n"),
                "p.toml:8: slo.messages_in_per_sec: invalid type: string \"1000/s\", expected f64",
            ),
            (
                "no message mean, as the stop rules",
                plan("message_mean = \"5ms\"\n"),
                "p.toml:8: message_mean: unknown field `message_mean`",
            ),
            (
                "a connections bound by scenario",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\nrates = [10]\n[[load.scenario]]\nname = \"feed\"\ntargets = [\"GET http://h/feed\"]\nrate = 1\nslo = { success = 0.9, message_p99 = \"1s\" }\n".to_owned(),
                "p.toml:11: load.scenario.slo: connections and messages are counted for the whole step, not by scenario: bound them once, in [slo]",
            ),
        ]);
    }

    #[test]
    fn a_search_over_users_probes_whole_user_counts() {
        let head = "mode = \"search\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/\"]\n[search]\n";
        let plan = parse(&format!("{head}over = \"users\"\nstart = 10\n")).expect("users");
        assert_eq!(plan.search.over, crate::plan::SearchOver::Users);
        assert!(plan.search.config.whole);
        // Its steps are closed-model ones: the users' think time is theirs.
        let thinking = head.replace("[search]", "think_time = \"100ms\"\n[search]");
        parse(&format!("{thinking}over = \"users\"\n")).expect("a think time");
        assert_each_fails([(
            "a think time over rates",
            thinking,
            "p.toml:6: load.think_time: the think time belongs to the closed model",
        )]);
        let plan = parse(&format!("{head}start = 10\n")).expect("rates");
        assert_eq!(plan.search.over, crate::plan::SearchOver::Rates);
        assert!(!plan.search.config.whole);
        assert_each_fails([(
            "an unknown level",
            format!("{head}over = \"connections\"\n"),
            "p.toml:7: search.over: \"connections\": want \"rates\" (arrivals a second) or \"users\"",
        )]);
    }
}

mod scenarios {
    use analysis::Percentile;
    use workload::TextOrNumber;

    use super::{assert_each_fails, parse};

    const HEAD: &str = "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://h/search\"]\nrates = [10]\ntimeout = \"3s\"\nheaders = [\"X-Run: lab\"]\n";

    #[test]
    fn background_scenarios_parse_with_load_defaults_and_their_own_slo() {
        let text = format!(
            "{HEAD}[slo]\nmax_lag = \"25ms\"\n[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\nrate = 1\n[load.scenario.slo]\nsuccess = 1.0\np99 = \"1.5s\"\n[[load.scenario]]\nname = \"home\"\ntargets_file = \"home.txt\"\nrate = \"10/1s\"\ntimeout = \"1s\"\n"
        );
        let plan = parse(&text).expect("plan with scenarios");
        let [news, home] = &plan.load.scenarios[..] else {
            panic!("{:?}", plan.load.scenarios)
        };
        assert_eq!((news.name.as_str(), news.line), ("news", 11));
        assert_eq!(news.attack.name.as_deref(), Some("news"));
        assert_eq!(
            news.attack.rate.as_ref().map(TextOrNumber::text).as_deref(),
            Some("1")
        );
        // [load]'s per-attack settings fill in what the scenario leaves out.
        assert_eq!(news.attack.timeout.as_deref(), Some("3s"));
        assert_eq!(news.attack.headers, Some(vec!["X-Run: lab".to_owned()]));
        let slo = news.slo.as_ref().expect("news has an slo");
        assert_eq!(slo.min_success_ratio, Some(1.0));
        assert_eq!(slo.max_latency_ns, vec![(Percentile::P99, 1_500_000_000)]);
        // The generator's health is the plan's.
        assert_eq!(slo.generator.max_lag_p99_ns, 25_000_000);
        assert_eq!(home.attack.timeout.as_deref(), Some("1s"));
        assert_eq!(home.attack.targets_file.as_deref(), Some("home.txt"));
        assert!(home.slo.is_none());
        assert!(parse(HEAD).expect("no scenarios").load.scenarios.is_empty());
    }

    /// `run`'s request flags override `[load]` and every background scenario, by the
    /// same rule as `attack -scenarios`; a bad one is named as the flag.
    #[test]
    fn run_flags_override_load_and_every_scenario() {
        let text = format!(
            "{HEAD}[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\nrate = 1\ntimeout = \"9s\"\n"
        );
        let flags = |timeout: &str| workload::AttackFields {
            timeout: Some(timeout.to_owned()),
            ..workload::AttackFields::default()
        };
        let mut plan = parse(&text).unwrap();
        plan.apply_flags(&flags("1s"), "-timeout=1s").unwrap();
        assert_eq!(plan.load.attack.timeout.as_deref(), Some("1s"));
        assert_eq!(plan.load.scenarios[0].attack.timeout.as_deref(), Some("1s"));
        // What the flags do not give stays the plan's.
        assert_eq!(
            plan.load.attack.headers,
            Some(vec!["X-Run: lab".to_owned()])
        );
        assert!(
            plan.text
                .starts_with("# Run as `loadlab run THIS_FILE -timeout=1s`"),
            "{}",
            plan.text
        );
        let mut plan = parse(&text).unwrap();
        let err = plan.apply_flags(&flags("0s"), "-timeout=0s").unwrap_err();
        assert_eq!(err.to_string(), "-timeout: must be longer than zero");
        let mut plan = parse(&text).unwrap();
        plan.apply_flags(&workload::AttackFields::default(), "")
            .unwrap();
        assert_eq!(plan.text, text, "no flags, no comment");
    }

    #[test]
    fn bad_scenarios_name_the_line_and_field() {
        let news = "[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\n";
        let rows: [(&str, String, &str); 14] = [
            (
                "typo",
                format!("{HEAD}{news}rate = 1\nrat = 2\n"),
                "p.toml:13: rat: unknown field `rat`",
            ),
            (
                "no rate",
                format!("{HEAD}{news}"),
                "p.toml:9: load.scenario.rate: scenario \"news\" needs a rate",
            ),
            (
                "bad rate",
                format!("{HEAD}{news}rate = \"fast\"\n"),
                "p.toml:12: load.scenario.rate:",
            ),
            (
                "zero rate",
                format!("{HEAD}{news}rate = 0\n"),
                "p.toml:12: load.scenario.rate: must be above 0",
            ),
            (
                "duplicate name",
                format!("{HEAD}{news}rate = 1\n{news}rate = 2\n"),
                "p.toml:14: load.scenario.name: \"news\" is used twice",
            ),
            (
                "named like a variant",
                format!(
                    "{HEAD}[[load.scenario]]\nname = \"a\"\ntargets = [\"GET http://h/\"]\nrate = 1\n"
                ),
                "p.toml:9: load.scenario.name: \"a\" is the name of the variant on line 2",
            ),
            (
                "no targets",
                format!("{HEAD}[[load.scenario]]\nname = \"news\"\nrate = 1\n"),
                "p.toml:9: load.scenario.targets: scenario \"news\" has no targets: give targets, targets_file or [[load.scenario.step]]",
            ),
            (
                "both targets",
                format!("{HEAD}{news}targets_file = \"t.txt\"\nrate = 1\n"),
                "p.toml:9: load.scenario.targets: scenario \"news\": give targets or targets_file, not both",
            ),
            (
                "a duration",
                format!("{HEAD}{news}rate = 1\nduration = \"5m\"\n"),
                "p.toml:13: load.scenario.duration: a background scenario runs for each step's whole length",
            ),
            (
                "bad timeout",
                format!("{HEAD}{news}rate = 1\ntimeout = \"soon\"\n"),
                "p.toml:13: load.scenario.timeout:",
            ),
            (
                "bad header",
                format!("{HEAD}{news}rate = 1\nheaders = [\"no colon\"]\n"),
                "p.toml:13: load.scenario.headers:",
            ),
            (
                "slo out of range",
                format!("{HEAD}{news}rate = 1\nslo = {{ success = 2 }}\n"),
                "p.toml:13: load.scenario.slo.success: must be between 0 and 1",
            ),
            (
                "a run-wide key",
                format!("{HEAD}{news}rate = 1\nthreads = 2\n"),
                "p.toml:13: load.scenario.threads: a run-wide key: set it once, in [load]",
            ),
            (
                "generator health per scenario",
                format!("{HEAD}{news}rate = 1\nslo = {{ max_lag = \"1s\" }}\n"),
                "p.toml:13: load.scenario.slo: the generator's health (achieved, max_lag) is set once, in [slo]",
            ),
        ];
        assert_each_fails(rows);
    }
}

mod shipped {
    use std::path::Path;

    use crate::plan::*;

    #[test]
    fn every_shipped_plan_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plans");
        let mut modes = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("examples/plans") {
            let path = entry.expect("entry").path();
            let plan = Plan::read(&path).unwrap_or_else(|e| panic!("{e}"));
            for variant in &plan.variants {
                if let TargetSource::File(file) = &variant.targets {
                    assert!(
                        dir.join(file).is_file(),
                        "{}: {}",
                        path.display(),
                        file.display()
                    );
                }
            }
            modes.push(plan.mode);
        }
        for mode in [Mode::Sweep, Mode::Search, Mode::Matrix] {
            assert!(modes.contains(&mode), "no shipped {mode:?} plan");
        }
        assert!(modes.len() >= 4, "one plan per field report");
    }
}

mod shards {
    use std::time::Duration;

    use super::{assert_each_fails, parse};
    use crate::plan::*;

    const HEAD: &str = "mode = \"sweep\"\n[[variant]]\nname = \"a\"\n[load]\ntargets = [\"GET http://127.0.0.1:1/\"]\nrates = [10]\n";
    const TEMPLATE: &str = "ssh g{index} loadlab attack -scenarios {scenarios} -shard {index}/{count} -start-at {start_at} > {output}";

    fn sharding(extra: &str) -> Option<Sharding> {
        parse(&format!("{HEAD}{extra}"))
            .unwrap_or_else(|e| panic!("{extra}: {e}"))
            .load
            .shards
    }

    #[test]
    fn shards_and_how_they_run() {
        assert_eq!(sharding(""), None);
        assert_eq!(sharding("shards = 1\n"), None, "1 runs in this process");
        let rows = [
            ("shards = 4\n", Via::Local, Duration::from_secs(2)),
            (
                "shards = 2\nvia = \"local\"\nstart_delay = \"500ms\"\n",
                Via::Local,
                Duration::from_millis(500),
            ),
            (
                &format!("shards = 3\nvia = \"{TEMPLATE}\"\n"),
                Via::Template(TEMPLATE.to_owned()),
                Duration::from_secs(5),
            ),
            (
                "shards = 8\nvia = \"kube\"\n[load.kube]\nimage = \"r.example/loadlab:1\"\nnamespace = \"load\"\nhost_network = true\npull = \"Never\"\ncpu = \"1\"\nmemory = \"512Mi\"\nstart_delay = \"20s\"\n",
                Via::Kube(KubeOptions {
                    image: "r.example/loadlab:1".to_owned(),
                    namespace: Some("load".to_owned()),
                    host_network: true,
                    pull: Some("Never".to_owned()),
                    cpu: Some("1".to_owned()),
                    memory: Some("512Mi".to_owned()),
                    start_delay: Some(Duration::from_secs(20)),
                }),
                Duration::from_secs(20),
            ),
        ];
        for (extra, via, delay) in rows {
            let got = sharding(extra).expect("sharded");
            assert_eq!(
                (got.via, got.start_delay, got.line),
                (via, delay, 7),
                "{extra}"
            );
        }
        let kube =
            sharding("shards = 2\nvia = \"kube\"\n[load.kube]\nimage = \"i\"\n").expect("kube");
        assert_eq!(
            kube.start_delay,
            Duration::from_secs(60),
            "kube run's own default"
        );
        let flags = sharding(&format!(
            "threads = 2\nshards = 2\nvia = \"{} {{flags}}\"\n",
            TEMPLATE
        ));
        assert!(
            flags.is_some(),
            "a template with {{flags}} takes run-wide keys"
        );
    }

    #[test]
    fn bad_shards_name_the_line_and_field() {
        let no = |extra: &str| format!("{HEAD}{extra}");
        assert_each_fails([
            ("zero", no("shards = 0\n"), "p.toml:7: load.shards: must be between 1 and 1000"),
            ("too many", no("shards = 1001\n"), "p.toml:7: load.shards: must be between 1 and 1000"),
            ("not a number", no("shards = \"4\"\n"), "p.toml:7: load.shards: invalid type"),
            ("via misspelt as a key", no("shards = 2\nvai = \"local\"\n"), "p.toml:8: vai: unknown field `vai`"),
            (
                "via misspelt as a value",
                no("shards = 2\nvia = \"lokal\"\n"),
                "p.toml:8: load.via: \"lokal\": want \"local\", \"kube\" or a command template",
            ),
            (
                "kube without its table",
                no("shards = 2\nvia = \"kube\"\n"),
                "p.toml:8: load.kube.image: via = \"kube\" needs [load.kube] with image",
            ),
            (
                "kube without an image",
                no("shards = 2\nvia = \"kube\"\n[load.kube]\nnamespace = \"x\"\n"),
                "p.toml:9: load.kube.image: via = \"kube\" needs [load.kube] with image",
            ),
            (
                "kube table misspelt key",
                no("shards = 2\nvia = \"kube\"\n[load.kube]\nimage = \"i\"\nimgae = \"x\"\n"),
                "p.toml:11: imgae: unknown field `imgae`",
            ),
            (
                "kube table without kube",
                no("shards = 2\n[load.kube]\nimage = \"i\"\n"),
                "p.toml:8: load.kube: is for via = \"kube\"",
            ),
            (
                "two start delays for kube",
                no("shards = 2\nvia = \"kube\"\nstart_delay = \"5s\"\n[load.kube]\nimage = \"i\"\nstart_delay = \"9s\"\n"),
                "p.toml:9: load.start_delay: give it once",
            ),
            (
                "a bad start delay",
                no("shards = 2\nstart_delay = \"soon\"\n"),
                "p.toml:8: load.start_delay:",
            ),
            (
                "a template without output",
                no("shards = 2\nvia = \"ssh g{index} x -shard {index}/{count} -start-at {start_at}\"\n"),
                "p.toml:8: load.via: the template has no {output}",
            ),
            (
                "a template without index",
                no("shards = 2\nvia = \"x -start-at {start_at} > {output}\"\n"),
                "p.toml:8: load.via: the template has no {index}: every shard would run the same command",
            ),
            (
                "a template without start_at",
                no("shards = 2\nvia = \"x -shard {index}/{count} > {output}\"\n"),
                "p.toml:8: load.via: the template has no {start_at}",
            ),
            (
                "a misspelt placeholder",
                no("shards = 2\nvia = \"x -shard {index}/{cuont} -start-at {start_at} > {output}\"\n"),
                "p.toml:8: load.via: unknown placeholder {cuont}",
            ),
            (
                "run-wide keys a template would drop",
                no(&format!("threads = 2\nshards = 2\nvia = \"{TEMPLATE}\"\n")),
                "p.toml:9: load.via: [load] sets run-wide keys that shards take as flags (-threads=2 ...): put {flags} in the template",
            ),
            (
                "via without shards",
                no("via = \"local\"\n"),
                "p.toml:7: load.via: says how shards run: give load.shards = 2 or more",
            ),
            (
                "start_delay with one shard",
                no("shards = 1\nstart_delay = \"1s\"\n"),
                "p.toml:8: load.start_delay: says how shards run",
            ),
            (
                "a monitor",
                no("monitor = [\"host\"]\nshards = 2\n"),
                "p.toml:7: load.monitor: not sampled in sharded steps yet",
            ),
            (
                "a variant's monitor",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\nmonitor = [\"host\"]\n[load]\ntargets = [\"GET http://h/\"]\nrates = [1]\nshards = 2\n".to_owned(),
                "p.toml:2: variant.monitor: variant \"a\": not sampled in sharded steps yet",
            ),
            (
                "a rebased targets file",
                "mode = \"sweep\"\n[[variant]]\nname = \"a\"\nbase_url = \"http://127.0.0.1:1\"\n[load]\ntargets_file = \"t.txt\"\nrates = [1]\nshards = 2\n".to_owned(),
                "p.toml:2: variant.base_url: variant \"a\" rebases a targets_file",
            ),
        ]);
    }

    #[test]
    fn background_scenarios_are_sharded_with_the_step() {
        let plan = parse(&format!(
            "{HEAD}shards = 2\n[[load.scenario]]\nname = \"news\"\ntargets = [\"GET http://h/news\"]\nrate = 1\n"
        ))
        .expect("plan");
        assert_eq!(plan.load.shards.map(|s| s.count), Some(2));
        assert_eq!(plan.load.scenarios.len(), 1);
    }
}
