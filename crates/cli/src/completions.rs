//! `loadlab completions SHELL` and `loadlab man [COMMAND ...]`: made by clap_complete
//! and clap_mangen from the same declarations as `--help`, so a new flag is completed
//! and documented the day it is declared. As in `--help`, flags are written `-rate`
//! (bash and fish complete both spellings; zsh's script from clap_complete has the
//! double-dash one), and a man page's examples come last, unwrapped.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Command, CommandFactory};
use clap_complete::Shell;

use crate::help::{single_dashes, split_examples};

/// Print a shell completion script for loadlab
///
/// bash and fish complete `-rate` and `--rate` alike; zsh completes `--rate`
/// (loadlab takes both).
///
/// Examples:
///
///   loadlab completions bash > ~/.local/share/bash-completion/completions/loadlab
///
///   loadlab completions zsh > ~/.zfunc/_loadlab
///
///   loadlab completions fish > ~/.config/fish/completions/loadlab.fish
#[derive(clap::Args, Debug)]
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

/// Print a man page (roff) for loadlab or one of its commands
///
/// The page holds what `--help` says: the description, every option, the notes and
/// the examples.
///
/// Examples:
///
///   loadlab man | man -l -
///
///   loadlab man attack > loadlab-attack.1
///
///   loadlab man kube run | man -l -
#[derive(clap::Args, Debug)]
// Verbatim: the examples keep their indentation (help.rs prints them unwrapped).
#[command(verbatim_doc_comment)]
pub struct ManArgs {
    /// The command (`attack`, `kube run`); none for loadlab's own page
    #[arg(value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let script = completion_script(args.shell);
    std::io::stdout().write_all(script.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let page = man_page(&args.command)?;
    std::io::stdout().write_all(page.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> String {
    let mut root = crate::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut root, "loadlab", &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    let names = long_flags(&root);
    match shell {
        Shell::Bash => bash_single_dashes(&script, &names),
        Shell::Fish => fish_single_dashes(&script),
        _ => script,
    }
}

/// Every long flag of every command.
fn long_flags(command: &Command) -> Vec<String> {
    let mut names: Vec<String> = command
        .get_arguments()
        .filter_map(|arg| arg.get_long().map(str::to_owned))
        .collect();
    for sub in command.get_subcommands() {
        names.extend(long_flags(sub));
    }
    names.sort();
    names.dedup();
    names
}

/// bash: each `--NAME` word offered is offered as `-NAME` too, and a flag whose value
/// is completed (`--targets <FILE>`) is recognised in both spellings.
fn bash_single_dashes(script: &str, names: &[String]) -> String {
    let mut out = String::with_capacity(script.len() * 2);
    for line in script.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("opts=\"") {
            let words: Vec<String> = line
                .split(' ')
                .map(|word| {
                    // The last word carries the closing quote (and the newline).
                    let bare = word.trim_end_matches(['"', '\n']);
                    match long_word(bare, names) {
                        Some(name) => format!("{bare} -{name}{}", &word[bare.len()..]),
                        None => word.to_owned(),
                    }
                })
                .collect();
            out.push_str(&words.join(" "));
        } else if let Some(label) = trimmed.strip_suffix(")\n")
            && let Some(name) = long_word(label, names)
        {
            out.push_str(&line.replacen(label, &format!("{label}|-{name}"), 1));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `Some(NAME)` when `word` is `--NAME` of a known flag.
fn long_word<'a>(word: &'a str, names: &[String]) -> Option<&'a str> {
    let name = word.strip_prefix("--")?;
    names.iter().any(|n| n == name).then_some(name)
}

/// fish: `-l NAME` (a `--NAME` option) gains `-o NAME`, fish's single-dash long option.
fn fish_single_dashes(script: &str) -> String {
    let mut out = String::with_capacity(script.len() * 2);
    for line in script.split_inclusive('\n') {
        let mut words = line.split(' ').peekable();
        let mut rebuilt = Vec::new();
        while let Some(word) = words.next() {
            rebuilt.push(word.to_owned());
            if word == "-l"
                && let Some(name) = words.next()
            {
                rebuilt.push(name.to_owned());
                rebuilt.push("-o".to_owned());
                rebuilt.push(name.to_owned());
            }
        }
        out.push_str(&rebuilt.join(" "));
    }
    out
}

/// The man page of the command at `path` (loadlab's own when empty).
pub fn man_page(path: &[String]) -> anyhow::Result<String> {
    let mut root = crate::Cli::command();
    root.build();
    let mut command = &root;
    for name in path {
        command = match command.find_subcommand(name) {
            Some(sub) => sub,
            None => bail!(
                "{:?} is not a command of `{}`; `loadlab -help` lists the commands",
                name,
                command.get_bin_name().unwrap_or("loadlab")
            ),
        };
    }
    let (bare, examples) = split_examples(command);
    let name = std::iter::once("loadlab")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-");
    let man = clap_mangen::Man::new(bare).title(name);
    let mut page = Vec::new();
    man.render(&mut page).context("rendering the man page")?;
    let mut page = String::from_utf8_lossy(&page).replace(".SH EXTRA", ".SH NOTES");
    if !examples.is_empty() {
        page.push_str(".SH EXAMPLES\n.nf\n");
        for line in &examples {
            page.push_str(&roff_line(line.trim_start()));
            page.push('\n');
        }
        page.push_str(".fi\n");
    }
    // Flags are matched on the text roff prints (`\-\-think\-time` reads --think-time);
    // every dash is escaped again after, as clap_mangen escapes them.
    let page = single_dashes(&page.replace("\\-", "-"), command, "--", "-");
    Ok(page.replace('-', "\\-"))
}

/// A line of text as roff prints it verbatim: backslashes and dashes escaped, and no
/// leading `.` or `'` that roff would read as a request.
fn roff_line(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_completes_both_spellings_and_the_commands() {
        let script = completion_script(Shell::Bash);
        for word in ["-rate", "--rate", "-targets", "--targets"] {
            assert!(
                script
                    .lines()
                    .any(|line| line.trim_start().starts_with("opts=\"")
                        && line.split(' ').any(|w| w == word)),
                "{word} is offered by no opts line"
            );
        }
        // A value flag is recognised in both spellings, to complete its value.
        assert!(script.contains("--targets|-targets)"), "{script}");
        for command in [
            "attack",
            "report",
            "run",
            "search",
            "compare",
            "completions",
            "man",
        ] {
            assert!(
                script.split_whitespace().any(|w| w == command),
                "{command} is not in the script"
            );
        }
    }

    #[test]
    fn fish_completes_both_spellings() {
        let script = completion_script(Shell::Fish);
        assert!(script.contains("-l rate -o rate"), "{script}");
        assert!(!script.contains("-l rate -d"), "{script}");
    }

    #[test]
    fn man_pages_render_with_their_sections() {
        let rows: &[(&[&str], &[&str])] = &[
            (
                &[],
                &[".TH loadlab", ".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"],
            ),
            (
                &["attack"],
                &[
                    ".TH loadlab\\-attack",
                    ".SH NAME",
                    ".SH SYNOPSIS",
                    ".SH DESCRIPTION",
                    ".SH OPTIONS",
                    ".SH EXAMPLES",
                    "\\fB\\-rate\\fR",
                ],
            ),
            (&["kube"], &[".SH SUBCOMMANDS", ".SH EXAMPLES"]),
            (
                &["kube", "run"],
                &[".TH loadlab\\-kube\\-run", ".SH OPTIONS"],
            ),
        ];
        for (path, sections) in rows {
            let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
            let page = man_page(&path).unwrap();
            for section in *sections {
                assert!(page.contains(section), "{path:?}: no {section}\n{page}");
            }
            // Flags as every doc writes them.
            assert!(!page.contains("\\fB\\-\\-"), "{path:?}\n{page}");
        }
        let err = man_page(&["atack".to_owned()]).unwrap_err();
        assert!(
            err.to_string().contains("\"atack\" is not a command"),
            "{err}"
        );
    }

    #[test]
    fn roff_lines_escape_what_roff_reads() {
        let rows = [
            ("loadlab run -output x", "loadlab run \\-output x"),
            (".hidden", "\\&.hidden"),
            ("a\\b", "a\\eb"),
        ];
        for (input, want) in rows {
            assert_eq!(roff_line(input), want, "{input}");
        }
    }
}
