//! vegeta spells long flags with one dash (`-rate=100`, `-duration 10s`); clap wants two.
//! We rewrite `-name[=value]` to `--name[=value]` when `name` is a long flag of the
//! subcommand being run, so both spellings work. Any other single-dash word is a usage
//! error named in full (clap would read `-ratee` as the short flags `-r -a ...` and
//! complain about `-r`): vegeta's attack flags that loadlab lacks are refused with what
//! to use instead ([`VEGETA_ONLY`]), a value that asks for what loadlab already does
//! (`-chunked=false`) is accepted, and a typo gets the nearest flag's name.
//! [`parse_host_port`] reads the `HOST:PORT` values of `-addr` and `-serve`.

use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};

use clap::Command;

/// A duration flag (`90s`, `1h30m`), as every duration flag reads.
pub fn duration_flag(text: &str) -> Result<std::time::Duration, String> {
    units::parse_duration(text).map_err(|err| err.to_string())
}

/// A `HOST:PORT` flag value (`-addr`, `-serve`): `:PORT` means 127.0.0.1:PORT; a host
/// name resolves to its first address.
pub fn parse_host_port(text: &str) -> Result<SocketAddr, String> {
    let text = if text.starts_with(':') {
        format!("127.0.0.1{text}")
    } else {
        text.to_owned()
    };
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    text.to_socket_addrs()
        .map_err(|e| format!("{text:?} is not a HOST:PORT address ({e})"))?
        .next()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// vegeta attack flags loadlab does not implement: the flag, the values that ask for
/// what loadlab does anyway (accepted and dropped), and what to say otherwise.
pub const VEGETA_ONLY: &[(&str, &[&str], &str)] = &[
    (
        "chunked",
        FALSE,
        "chunked request bodies are not supported: bodies are sent with Content-Length",
    ),
    (
        "connect-to",
        &[],
        "is not supported: put the address in the target URL and set -header \"Host: NAME\"",
    ),
    (
        "dns-ttl",
        &["0", "0s"],
        "is not supported: loadlab resolves each host once, before it is first used (as -dns-ttl=0 does)",
    ),
    (
        "resolvers",
        &[],
        "is not supported: loadlab uses the system resolver; put addresses in the targets instead",
    ),
    (
        "session-tickets",
        &[],
        "is not supported: TLS sessions are resumed as rustls does by default",
    ),
    (
        "max-connections",
        &[],
        "is not supported: use -connections, loadlab's cap on open connections per target host",
    ),
    (
        "proxy-header",
        &[],
        "is not supported: loadlab does not connect through proxies yet",
    ),
];

/// Go's `strconv.ParseBool` spellings of false.
const FALSE: &[&str] = &["false", "f", "F", "FALSE", "False", "0"];

/// Returns `args` with single-dash spellings of known long flags turned into
/// double-dash ones, or the usage error of an unknown or unsupported flag.
pub fn normalize_long_flags(root: &Command, args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let mut out = Vec::with_capacity(args.len());
    let mut command = root.clone();
    let mut value_follows = false;
    let mut after_double_dash = false;
    for (index, arg) in args.into_iter().enumerate() {
        let Some(text) = arg.to_str().map(str::to_owned) else {
            out.push(arg);
            continue;
        };
        if index == 0 || after_double_dash || value_follows {
            value_follows = false;
            out.push(arg);
            continue;
        }
        if text == "--" {
            after_double_dash = true;
            out.push(arg);
            continue;
        }
        if let Some(sub) = command.find_subcommand(&text) {
            command = sub.clone();
            out.push(arg);
            continue;
        }
        let Some(rewritten) = rewrite_one(&command, &text)? else {
            continue;
        };
        if let Some((name, has_inline_value)) = long_name(&rewritten) {
            value_follows = !has_inline_value && flag_takes_separate_value(&command, name);
        }
        out.push(OsString::from(rewritten));
    }
    Ok(out)
}

/// `Some(text)` as clap should see it, `None` to drop it (a no-op vegeta flag), or the
/// usage error.
fn rewrite_one(command: &Command, text: &str) -> Result<Option<String>, String> {
    let Some(rest) = text.strip_prefix('-') else {
        return Ok(Some(text.to_owned()));
    };
    let double = rest.starts_with('-');
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let (name, value) = rest
        .split_once('=')
        .map_or((rest, None), |(n, v)| (n, Some(v)));
    // `-h`, `-5`, `-` and `--` are short flags, values or positionals: clap's business.
    if name.chars().count() < 2 || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Ok(Some(text.to_owned()));
    }
    if is_long_flag(command, name) {
        return Ok(Some(if double {
            text.to_owned()
        } else {
            format!("-{text}")
        }));
    }
    if let Some((_, no_ops, advice)) = VEGETA_ONLY.iter().find(|(flag, _, _)| *flag == name)
        && command.get_name() == "attack"
    {
        return match value {
            Some(value) if no_ops.contains(&value) => Ok(None),
            _ if advice.starts_with("is ") => Err(format!("-{name} {advice}")),
            _ => Err(format!("-{name}: {advice}")),
        };
    }
    if double {
        // clap names a double-dash typo itself, with its own suggestion.
        return Ok(Some(text.to_owned()));
    }
    Err(match nearest_flag(command, name) {
        Some(near) => format!("unknown flag -{name}; did you mean -{near}?"),
        None if command.get_name() == "loadlab" => {
            format!("unknown flag -{name}; `loadlab -help` lists the commands")
        }
        None => format!(
            "unknown flag -{name}; `loadlab {} -help` lists the flags",
            command.get_name()
        ),
    })
}

fn is_long_flag(command: &Command, name: &str) -> bool {
    matches!(name, "help" | "version")
        || command.get_arguments().any(|arg| {
            arg.get_long() == Some(name)
                || arg
                    .get_all_aliases()
                    .is_some_and(|aliases| aliases.contains(&name))
        })
}

/// The long flag closest to a typo, when it is close enough to be what was meant.
fn nearest_flag<'a>(command: &'a Command, typo: &str) -> Option<&'a str> {
    command
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .map(|flag| (edit_distance(flag, typo), flag))
        .filter(|&(distance, flag)| distance <= 2 && distance < flag.len().min(typo.len()))
        .min()
        .map(|(_, flag)| flag)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

fn long_name(text: &str) -> Option<(&str, bool)> {
    let rest = text.strip_prefix("--")?;
    Some(match rest.split_once('=') {
        Some((name, _)) => (name, true),
        None => (rest, false),
    })
}

/// True when `--name` consumes the next argument as its value (`-rate 100`).
pub fn flag_takes_separate_value(command: &Command, name: &str) -> bool {
    command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(name))
        .is_some_and(|arg| {
            arg.get_action().takes_values()
                && arg
                    .get_num_args()
                    .is_none_or(|range| range.min_values() > 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn command() -> Command {
        Command::new("loadlab").subcommand(
            Command::new("attack")
                .arg(Arg::new("rate").long("rate"))
                .arg(Arg::new("header").long("header").action(ArgAction::Append))
                .arg(
                    Arg::new("keepalive")
                        .long("keepalive")
                        .num_args(0..=1)
                        .default_missing_value("true"),
                )
                .arg(Arg::new("v").short('v').action(ArgAction::SetTrue)),
        )
    }

    #[test]
    fn addresses() {
        let rows: &[(&str, Result<&str, &str>)] = &[
            ("127.0.0.1:8080", Ok("127.0.0.1:8080")),
            (":9000", Ok("127.0.0.1:9000")),
            ("[::1]:0", Ok("[::1]:0")),
            ("localhost:1234", Ok(":1234")),
            ("8080", Err("not a HOST:PORT")),
            ("127.0.0.1:99999", Err("not a HOST:PORT")),
        ];
        for (input, want) in rows {
            match (parse_host_port(input), want) {
                (Ok(got), Ok(want)) => assert!(got.to_string().ends_with(want), "{input}: {got}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn rewrites_only_known_long_flags() {
        let rows: &[(&[&str], &[&str])] = &[
            (&["attack", "-rate=5"], &["attack", "--rate=5"]),
            (&["attack", "-rate", "5"], &["attack", "--rate", "5"]),
            (&["attack", "--rate", "5"], &["attack", "--rate", "5"]),
            // A value that looks like a flag is left alone.
            (
                &["attack", "-header", "-rate"],
                &["attack", "--header", "-rate"],
            ),
            // Short flags are left for clap to judge (unknown names: see below).
            (&["attack", "-v"], &["attack", "-v"]),
            // A vegeta flag asking for what loadlab does anyway is dropped.
            (
                &["attack", "-chunked=false", "-rate=1"],
                &["attack", "--rate=1"],
            ),
            (&["attack", "-dns-ttl=0"], &["attack"]),
            // An optional-value flag does not swallow the next flag.
            (
                &["attack", "-keepalive", "-rate=1"],
                &["attack", "--keepalive", "--rate=1"],
            ),
            (
                &["attack", "-keepalive=false"],
                &["attack", "--keepalive=false"],
            ),
            // Nothing after `--` is touched; help works with one dash.
            (&["attack", "--", "-rate=1"], &["attack", "--", "-rate=1"]),
            (&["attack", "-help"], &["attack", "--help"]),
        ];
        for (input, want) in rows {
            let args = std::iter::once("loadlab")
                .chain(input.iter().copied())
                .map(OsString::from)
                .collect();
            let got: Vec<String> = normalize_long_flags(&command(), args)
                .unwrap()
                .into_iter()
                .skip(1)
                .map(|a| a.into_string().unwrap())
                .collect();
            assert_eq!(&got, want, "input {input:?}");
        }
    }

    #[test]
    fn names_unknown_and_unsupported_flags_in_full() {
        let rows: &[(&[&str], &str)] = &[
            (
                &["attack", "-bogus"],
                "unknown flag -bogus; `loadlab attack -help` lists the flags",
            ),
            (&["attack", "-bogus=1"], "unknown flag -bogus;"),
            (
                &["attack", "-ratee=5"],
                "unknown flag -ratee; did you mean -rate?",
            ),
            (
                &["attack", "-hedaer", "X: y"],
                "unknown flag -hedaer; did you mean -header?",
            ),
            (
                &["-rate=5"],
                "unknown flag -rate; `loadlab -help` lists the commands",
            ),
            (
                &["attack", "-chunked"],
                "-chunked: chunked request bodies are not supported",
            ),
            (&["attack", "-dns-ttl=5m"], "-dns-ttl is not supported"),
            (
                &["attack", "-connect-to=a:b"],
                "-connect-to is not supported",
            ),
            (
                &["attack", "-max-connections=5"],
                "-max-connections is not supported: use -connections",
            ),
        ];
        for (input, want) in rows {
            let args = std::iter::once("loadlab")
                .chain(input.iter().copied())
                .map(OsString::from)
                .collect();
            let err = normalize_long_flags(&command(), args).unwrap_err();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn edit_distances() {
        let rows = [
            ("rate", "ratee", 1),
            ("rate", "rate", 0),
            ("", "ab", 2),
            ("header", "hedaer", 2),
        ];
        for (a, b, want) in rows {
            assert_eq!(edit_distance(a, b), want, "{a} {b}");
        }
    }

    /// vegeta v12's `attack` flags.
    const VEGETA_ATTACK_FLAGS: &[&str] = &[
        "body",
        "cert",
        "chunked",
        "connect-to",
        "connections",
        "dns-ttl",
        "duration",
        "format",
        "h2c",
        "header",
        "http2",
        "insecure",
        "keepalive",
        "key",
        "laddr",
        "lazy",
        "max-body",
        "max-connections",
        "max-workers",
        "name",
        "output",
        "prometheus-addr",
        "proxy-header",
        "rate",
        "redirects",
        "resolvers",
        "root-certs",
        "session-tickets",
        "targets",
        "timeout",
        "unix-socket",
        "workers",
    ];

    #[test]
    fn every_vegeta_attack_flag_is_implemented_or_refused() {
        use clap::CommandFactory;
        let root = crate::Cli::command();
        let attack = root.find_subcommand("attack").unwrap();
        for flag in VEGETA_ATTACK_FLAGS {
            let implemented = is_long_flag(attack, flag);
            let refused = VEGETA_ONLY.iter().any(|(name, _, _)| name == flag);
            assert!(
                implemented != refused,
                "-{flag}: implemented {implemented}, refused {refused}"
            );
        }
    }
}
