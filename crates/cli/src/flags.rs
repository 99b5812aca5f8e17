//! vegeta spells long flags with one dash (`-rate=100`, `-duration 10s`); clap wants two.
//! We rewrite `-name[=value]` to `--name[=value]` when `name` is a long flag of the
//! subcommand being run, so both spellings work and nothing else is touched.
//! [`parse_host_port`] reads the `HOST:PORT` values of `-addr` and `-serve`.

use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};

use clap::Command;

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

/// Returns `args` with single-dash spellings of known long flags turned into double-dash ones.
pub fn normalize_long_flags(root: &Command, args: Vec<OsString>) -> Vec<OsString> {
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
        let rewritten = rewrite_one(&command, &text);
        if let Some((name, has_inline_value)) = long_name(&rewritten) {
            value_follows = !has_inline_value && flag_takes_separate_value(&command, name);
        }
        out.push(OsString::from(rewritten));
    }
    out
}

fn rewrite_one(command: &Command, text: &str) -> String {
    let Some(rest) = text.strip_prefix('-') else {
        return text.to_owned();
    };
    if rest.starts_with('-') || rest.chars().count() < 2 {
        return text.to_owned();
    }
    let name = rest.split_once('=').map_or(rest, |(name, _)| name);
    let known = command
        .get_arguments()
        .any(|arg| arg.get_long() == Some(name))
        || matches!(name, "help" | "version");
    if known {
        format!("-{text}")
    } else {
        text.to_owned()
    }
}

fn long_name(text: &str) -> Option<(&str, bool)> {
    let rest = text.strip_prefix("--")?;
    Some(match rest.split_once('=') {
        Some((name, _)) => (name, true),
        None => (rest, false),
    })
}

/// True when `--name` consumes the next argument as its value (`-rate 100`).
fn flag_takes_separate_value(command: &Command, name: &str) -> bool {
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
            // Unknown names and short flags are left for clap to judge.
            (&["attack", "-bogus=1"], &["attack", "-bogus=1"]),
            (&["attack", "-v"], &["attack", "-v"]),
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
                .into_iter()
                .skip(1)
                .map(|a| a.into_string().unwrap())
                .collect();
            assert_eq!(&got, want, "input {input:?}");
        }
    }
}
