//! Each option of an attack or a run, declared once: its flag (as `loadlab attack`
//! spells it), its key (as a scenario table, `[defaults]` and a plan's `[load]` spell
//! it) and where it applies. clap's `AttackArgs` declares each flag's help, type,
//! default and heading; this table is the rest, and a test in the CLI checks that the
//! two name the same flags. Error labels ([`crate::Origin`]), the options a plan's
//! steps set themselves, what `-scenarios` does with a flag, the flags a shard is
//! handed and `loadlab search`'s flag names are all read from here.

/// Where an option may be written besides `attack`'s command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One attack's ([`crate::AttackFields`]): a scenario key, a `[defaults]` key, a
    /// plan's `[load]` key.
    Attack,
    /// The whole run's ([`crate::RunFields`]): a plan's `[load]` key.
    Run,
    /// A key of a scenario's `[scenario.replay]` table.
    Replay,
    /// Only the command line: how `attack` runs, not what it sends.
    Command,
}

/// What a flag does beside `-scenarios` (a file of scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithScenarios {
    /// It applies to every scenario, over the file's key and `[defaults]`.
    Overrides,
    /// It cannot mean anything for every scenario at once: refused, saying why.
    Refused(&'static str),
}

/// How a plan's `[load]` takes an attack option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlan {
    /// As a key of `[load]` (and of `[[load.scenario]]` for attack options).
    Key,
    /// Each step sets it: refused in `[load]`, saying what to write instead.
    SetBySteps(&'static str),
}

/// One option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The flag without its dash (`header`); `None` for a file-only key.
    pub flag: Option<&'static str>,
    /// The key in a file (`headers`, `replay.path`); `None` for a flag-only option.
    pub key: Option<&'static str>,
    /// Where it may be written.
    pub scope: Scope,
    /// What it does beside `-scenarios`.
    pub with_scenarios: WithScenarios,
    /// How a plan's `[load]` takes it.
    pub in_plan: InPlan,
    /// Handed to each shard of a sharded plan step as a flag (run-wide keys the
    /// shards' scenario file cannot hold).
    pub shard_arg: bool,
}

const WHAT_TO_SEND: &str = "what a scenario sends is the file's: set it per scenario";
const REPLAY: &str = "a replay is the file's: give the scenario a [scenario.replay] table";

const fn attack(flag: &'static str, key: &'static str) -> OptionSpec {
    OptionSpec {
        flag: Some(flag),
        key: Some(key),
        scope: Scope::Attack,
        with_scenarios: WithScenarios::Overrides,
        in_plan: InPlan::Key,
        shard_arg: false,
    }
}

const fn run(flag: &'static str, key: &'static str, shard_arg: bool) -> OptionSpec {
    OptionSpec {
        scope: Scope::Run,
        shard_arg,
        ..attack(flag, key)
    }
}

const fn replay(flag: &'static str, key: &'static str) -> OptionSpec {
    OptionSpec {
        scope: Scope::Replay,
        with_scenarios: WithScenarios::Refused(REPLAY),
        ..attack(flag, key)
    }
}

const fn command(flag: &'static str) -> OptionSpec {
    OptionSpec {
        key: None,
        scope: Scope::Command,
        ..attack(flag, "")
    }
}

const fn file_only(key: &'static str) -> OptionSpec {
    OptionSpec {
        flag: None,
        ..attack("", key)
    }
}

const fn refused(spec: OptionSpec, why: &'static str) -> OptionSpec {
    OptionSpec {
        with_scenarios: WithScenarios::Refused(why),
        ..spec
    }
}

const fn set_by_steps(spec: OptionSpec, why: &'static str) -> OptionSpec {
    OptionSpec {
        in_plan: InPlan::SetBySteps(why),
        ..spec
    }
}

/// Every option of `attack` and every key of a scenario table and of a plan's `[load]`
/// (but the plan's own: `rates`, `step_duration`, ...).
pub const OPTIONS: &[OptionSpec] = &[
    // What to send.
    refused(
        set_by_steps(
            attack("name", "name"),
            "each step's attack is named after its variant",
        ),
        "each scenario is named in the file",
    ),
    file_only("targets"),
    refused(attack("targets", "targets_file"), WHAT_TO_SEND),
    refused(attack("format", "format"), WHAT_TO_SEND),
    refused(attack("lazy", "lazy"), WHAT_TO_SEND),
    attack("header", "headers"),
    refused(attack("body", "body_file"), WHAT_TO_SEND),
    attack("data", "data"),
    attack("data-order", "data_order"),
    file_only("step"),
    file_only("checks_fail_requests"),
    file_only("cookies"),
    file_only("check_body_limit"),
    // The load model.
    set_by_steps(
        attack("rate", "rate"),
        "give the steps' rates as rates = [...]",
    ),
    attack("schedule", "schedule"),
    set_by_steps(
        attack("concurrency", "concurrency"),
        "give the steps' user counts as users = [...]",
    ),
    attack("think-time", "think_time"),
    set_by_steps(
        attack("duration", "duration"),
        "give step_duration (and warmup)",
    ),
    set_by_steps(
        attack("max-requests", "max_requests"),
        "a step runs for its duration: give step_duration",
    ),
    // How requests are sent.
    attack("timeout", "timeout"),
    attack("keepalive", "keepalive"),
    attack("redirects", "redirects"),
    attack("max-workers", "max_workers"),
    attack("max-body", "max_body"),
    // gRPC calls' message types (docs/GRPC.md).
    attack("proto", "proto"),
    attack("import-path", "import_path"),
    attack("grpc-compress", "grpc_compress"),
    // A plan variant's `base_url`; `[scenario.replay] base_url` in a file.
    OptionSpec {
        scope: Scope::Command,
        ..attack("base-url", "base_url")
    },
    // The run's.
    run("threads", "threads", true),
    run("workers", "workers", true),
    run("connections", "connections", true),
    run("seed", "seed", false),
    run("trace", "trace", true),
    run("trace-sample", "trace_sample", true),
    run("trace-state", "trace_state", true),
    run("precision", "precision", true),
    run("http2", "http2", true),
    run("h2c", "h2c", true),
    run("max-streams", "max_streams", true),
    run("insecure", "insecure", true),
    run("root-certs", "root_certs", true),
    run("cert", "cert", true),
    run("key", "key", true),
    run("tls-server-name", "tls_server_name", true),
    run("laddr", "laddr", true),
    run("unix-socket", "unix_socket", true),
    run("stop-when", "stop_when", false),
    run("monitor", "monitor", false),
    run("monitor-interval", "monitor_interval", false),
    // Replays: `-replay` and `-replay-shape` both fill `files`.
    replay("replay", "replay.files"),
    replay("replay-shape", "replay.files"),
    replay("log-format", "replay.log_format"),
    replay("nginx-log-format", "replay.nginx_log_format"),
    replay("log-fields", "replay.log_fields"),
    replay("speed", "replay.speed"),
    replay("from", "replay.from"),
    replay("to", "replay.to"),
    replay("loop", "replay.loop"),
    replay("replay-path", "replay.path"),
    replay("replay-method", "replay.methods"),
    replay("replay-status", "replay.statuses"),
    replay("replay-host", "replay.hosts"),
    replay("reorder-window", "replay.reorder_window"),
    // How this process runs.
    command("scenarios"),
    command("output"),
    command("shard"),
    command("start-at"),
    command("steer"),
    command("quiet"),
    command("dashboard"),
    command("dashboard-linger"),
    command("prometheus-addr"),
    command("prometheus-remote-write"),
    command("prometheus-remote-write-every"),
    command("otlp-endpoint"),
    command("otlp-headers"),
    command("trace-spans"),
    command("run-id"),
    command("junit"),
    command("summary-md"),
];

/// The option written as `key` in a file (`headers`, `replay.path`), if any.
pub fn by_key(key: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.key == Some(key))
}

/// The option spelled `-flag` (without the dash), if any.
pub fn by_flag(flag: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.flag == Some(flag))
}

/// Why the option written as `key` cannot be given as a flag beside `-scenarios`,
/// with the flag named (`-replay or -replay-shape` for `replay`, the table of both).
pub fn refused_with_scenarios(key: &str) -> Option<(String, &'static str)> {
    let nested = format!("{key}.");
    let spec = OPTIONS
        .iter()
        .find(|o| o.key.is_some_and(|k| k == key || k.starts_with(&nested)))?;
    match spec.with_scenarios {
        WithScenarios::Refused(why) => Some((flag_of(spec.key.unwrap_or(key)), why)),
        WithScenarios::Overrides => None,
    }
}

/// How the command line spells the option written as `key`: `-header` for `headers`,
/// `-replay-path` for `replay.path`. A key of no flag reads as its own spelling with
/// dashes (a replay's own `base_url` is the attack's `-base-url`).
pub fn flag_of(key: &str) -> String {
    let flags: Vec<String> = OPTIONS
        .iter()
        .filter(|o| o.key == Some(key))
        .filter_map(|o| o.flag.map(|flag| format!("-{flag}")))
        .collect();
    if !flags.is_empty() {
        return flags.join(" or ");
    }
    match key.rsplit_once('.') {
        Some((_, last)) => flag_of(last),
        None => format!("-{}", key.replace('_', "-")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AttackFields, RunFields};

    /// Every key of a scenario table and of a plan's `[load]` is declared, with the
    /// scope of the struct that reads it; and nothing else claims those scopes.
    #[test]
    fn every_file_key_is_declared_once() {
        let rows: &[(&[&str], Scope)] = &[
            (AttackFields::keys(), Scope::Attack),
            (RunFields::keys(), Scope::Run),
        ];
        for (keys, scope) in rows {
            for key in *keys {
                // The replay's own keys are declared one by one (`replay.files`, ...).
                if *key == "replay" {
                    continue;
                }
                let found: Vec<_> = OPTIONS.iter().filter(|o| o.key == Some(key)).collect();
                assert_eq!(found.len(), 1, "{key}: declared {} times", found.len());
                assert_eq!(found[0].scope, *scope, "{key}");
            }
            for option in OPTIONS.iter().filter(|o| o.scope == *scope) {
                assert!(keys.contains(&option.key.unwrap()), "{option:?}");
            }
        }
        let flags: Vec<_> = OPTIONS.iter().filter_map(|o| o.flag).collect();
        for flag in &flags {
            assert_eq!(flags.iter().filter(|f| *f == flag).count(), 1, "{flag}");
        }
    }

    #[test]
    fn spells_each_key_as_its_flag() {
        let rows = [
            ("headers", "-header"),
            ("body_file", "-body"),
            ("targets_file", "-targets"),
            ("max_workers", "-max-workers"),
            ("replay.path", "-replay-path"),
            ("replay.loop", "-loop"),
            ("replay.files", "-replay or -replay-shape"),
            ("replay.base_url", "-base-url"),
            ("step", "-step"),
        ];
        for (key, want) in rows {
            assert_eq!(flag_of(key), want, "{key}");
        }
    }
}
