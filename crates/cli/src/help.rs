//! `--help` and `-h` as loadlab prints them, from the clap declarations.
//!
//! clap renders the help, with three changes it cannot make itself:
//! - options print as `-rate`, as every doc writes them (both spellings are accepted,
//!   see `flags.rs`);
//! - a command's examples (the indented lines under `Examples:` in its doc comment or
//!   after-help text) are taken out before clap wraps the text and printed last,
//!   verbatim, so a command is never split across lines and can be pasted as printed;
//! - `-h` fits one screen: clap's short help when it does, else the options' names by
//!   heading, with `--help` for what each does.
//!
//! Completions and man pages (`completions.rs`) are made from the same command, with the
//! same examples and dashes.

use std::ffi::OsString;

use clap::Command;

/// The most lines `-h` prints: one screen.
pub const SHORT_HELP_LINES: usize = 40;

/// Where `-h`'s index of option names wraps.
const INDEX_WIDTH: usize = 80;

/// What a command line asks to be shown, when it asks for help: the subcommand path
/// (`["kube", "run"]`) and whether the long help (`--help`, `help CMD`) or the short
/// one (`-h`) was asked.
#[derive(Debug, PartialEq, Eq)]
pub struct HelpRequest {
    pub path: Vec<String>,
    pub long: bool,
}

/// The help a command line asks for, read as clap would (after `-flag` normalisation):
/// `-h`/`--help` anywhere before `--` and not as a flag's value, or `help [CMD ...]`.
pub fn request(root: &Command, args: &[OsString]) -> Option<HelpRequest> {
    let mut command = root;
    let mut path = Vec::new();
    let mut words = args.iter().skip(1).map(|arg| arg.to_str().unwrap_or(""));
    while let Some(word) = words.next() {
        match word {
            "--" => return None,
            "-h" => return Some(HelpRequest { path, long: false }),
            "--help" => return Some(HelpRequest { path, long: true }),
            "help" if command.has_subcommands() => {
                // `help kube run`: the path named after it, as far as it goes.
                for name in words.by_ref() {
                    match command.find_subcommand(name) {
                        Some(sub) => {
                            command = sub;
                            path.push(sub.get_name().to_owned());
                        }
                        None => break,
                    }
                }
                return Some(HelpRequest { path, long: true });
            }
            _ => {}
        }
        if let Some(sub) = command.find_subcommand(word) {
            command = sub;
            path.push(sub.get_name().to_owned());
        } else if let Some(name) = word.strip_prefix("--")
            && !name.contains('=')
            && crate::flags::flag_takes_separate_value(command, name)
        {
            words.next();
        }
    }
    None
}

/// The help text for `request`, as printed.
pub fn render(root: &Command, request: &HelpRequest) -> String {
    let mut root = root.clone();
    root.build();
    let mut command = &root;
    for name in &request.path {
        // The path came from this very tree.
        if let Some(sub) = command.find_subcommand(name) {
            command = sub;
        }
    }
    if request.long {
        long_help(command)
    } else {
        short_help(command)
    }
}

/// `--help`: clap's long help without the examples, with single dashes, then the
/// examples verbatim.
fn long_help(command: &Command) -> String {
    let (mut bare, examples) = split_examples(command);
    let mut text = single_dashes(&bare.render_long_help().to_string(), command, "--", "-");
    if !examples.is_empty() {
        text.push_str("\nExamples:\n");
        for line in &examples {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// `-h`: clap's short help when it fits one screen, else an index of the options by
/// heading; either way it ends pointing at `--help`.
fn short_help(command: &Command) -> String {
    let (bare, examples) = split_examples(command);
    let mut bare = bare.after_help(None::<&str>);
    let full = single_dashes(&bare.render_help().to_string(), command, "--", "-");
    let with_examples = if examples.is_empty() {
        ""
    } else {
        ", with examples you can paste"
    };
    let more = format!(
        "\n`{} --help` says more{with_examples}.\n",
        display_name(command)
    );
    if full.lines().count() + more.lines().count() <= SHORT_HELP_LINES {
        return full + &more;
    }
    index_help(&mut bare) + &more
}

/// The about line, the usage, and each heading's option names, wrapped.
fn index_help(command: &mut Command) -> String {
    let mut text = String::new();
    if let Some(about) = command.get_about() {
        text.push_str(&format!("{about}\n\n"));
    }
    let usage = command.render_usage().to_string();
    text.push_str(&usage);
    text.push_str("\n\nOptions, by heading:\n");
    let mut headings: Vec<(String, Vec<String>)> = Vec::new();
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        // -help is the way on (said below); -version is loadlab's, not the command's.
        let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version")) else {
            continue;
        };
        let heading = arg.get_help_heading().unwrap_or("Options").to_owned();
        let flag = format!("-{long}");
        match headings.iter_mut().find(|(name, _)| *name == heading) {
            Some((_, flags)) => flags.push(flag),
            None => headings.push((heading, vec![flag])),
        }
    }
    let label_width = headings.iter().map(|(h, _)| h.len()).max().unwrap_or(0) + 1;
    for (heading, flags) in headings {
        let mut line = format!("  {:label_width$} ", format!("{heading}:"));
        let indent = line.len();
        for flag in flags {
            if line.len() > indent && line.len() + 1 + flag.len() > INDEX_WIDTH {
                text.push_str(line.trim_end());
                text.push('\n');
                line = " ".repeat(indent);
            }
            if line.len() > indent {
                line.push(' ');
            }
            line.push_str(&flag);
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `loadlab kube run`, as the usage line names the command.
fn display_name(command: &Command) -> String {
    command
        .get_display_name()
        .or(command.get_bin_name())
        .unwrap_or(command.get_name())
        .replace('-', " ")
}

/// The command with its examples taken out of its texts, and the example lines (their
/// indentation kept).
pub fn split_examples(command: &Command) -> (Command, Vec<String>) {
    let mut examples = Vec::new();
    let mut bare = command.clone();
    if let Some(text) = command.get_long_about() {
        let (rest, found) = cut_examples(&text.to_string());
        examples.extend(found);
        bare = bare.long_about(rest);
    }
    if let Some(text) = command.get_after_help() {
        let (rest, found) = cut_examples(&text.to_string());
        examples.extend(found);
        bare = if rest.is_empty() {
            bare.after_help(None::<&str>)
        } else {
            bare.after_help(rest)
        };
    }
    if let Some(text) = command.get_after_long_help() {
        let (rest, found) = cut_examples(&text.to_string());
        examples.extend(found);
        bare = if rest.is_empty() {
            bare.after_long_help(None::<&str>)
        } else {
            bare.after_long_help(rest)
        };
    }
    (bare, examples)
}

/// Splits a help text into the text without its `Examples:` blocks and their lines.
/// A block is the `Examples:` line and the blank or indented lines after it.
fn cut_examples(text: &str) -> (String, Vec<String>) {
    let mut rest = Vec::new();
    let mut examples = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let indented = line.starts_with(char::is_whitespace);
        if matches!(line.trim(), "Examples:" | "Example:") && !indented {
            in_block = true;
            continue;
        }
        if in_block && (line.trim().is_empty() || indented) {
            if !line.trim().is_empty() {
                examples.push(format!("  {}", line.trim_start()));
            }
            continue;
        }
        in_block = false;
        rest.push(line);
    }
    let rest = rest.join("\n").trim_end().to_owned();
    (rest, examples)
}

/// `text` with each `{double}NAME` of one of `command`'s long flags (or help, version)
/// written `{single}NAME`, keeping the columns of clap's option lines aligned.
pub fn single_dashes(text: &str, command: &Command, double: &str, single: &str) -> String {
    let mut names: Vec<&str> = vec!["help", "version"];
    for arg in command.get_arguments() {
        names.extend(arg.get_long());
        names.extend(arg.get_all_aliases().unwrap_or_default());
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let content_at = line.len() - line.trim_start().len();
        let is_option_line = line[content_at..].starts_with('-');
        // clap's short help: `  -r, --rate <RATE>  what it does`; the gap after the
        // flag takes back the dashes removed before it, so descriptions stay in column.
        let gap = if is_option_line {
            line[content_at..].find("  ").map(|at| at + content_at)
        } else {
            None
        };
        match gap {
            Some(gap) => {
                let (head, removed) = replace_flags(&line[..gap], &names, double, single);
                out.push_str(&head);
                out.push_str(&" ".repeat(removed));
                out.push_str(&replace_flags(&line[gap..], &names, double, single).0);
            }
            None => out.push_str(&replace_flags(line, &names, double, single).0),
        }
    }
    out
}

/// Replaces whole-word `{double}NAME`s; returns the text and how many bytes shorter it is.
fn replace_flags(text: &str, names: &[&str], double: &str, single: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(double) {
        // A man page's `\fB\-\-rate`: the font escape is not part of the word.
        let before_text = rest[..at].trim_end_matches("\\fB").trim_end_matches("\\fI");
        let before = if before_text.len() < at {
            None
        } else {
            before_text.chars().next_back().or(out.chars().next_back())
        };
        let after = &rest[at + double.len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        let starts_word = !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
        out.push_str(&rest[..at]);
        if starts_word && names.contains(&&after[..name_len]) {
            out.push_str(single);
        } else {
            out.push_str(double);
        }
        rest = after;
    }
    out.push_str(rest);
    let removed = text.len() - out.len();
    (out, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, CommandFactory};

    fn os(words: &[&str]) -> Vec<OsString> {
        std::iter::once("loadlab")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn help_requests() {
        let root = crate::Cli::command();
        // (the command line, the help it asks for: the path and whether long)
        type Asked<'a> = Option<(&'a [&'a str], bool)>;
        let rows: &[(&[&str], Asked<'_>)] = &[
            (&["attack", "--help"], Some((&["attack"], true))),
            (&["attack", "-h"], Some((&["attack"], false))),
            (&["--help"], Some((&[], true))),
            (&["help", "kube", "run"], Some((&["kube", "run"], true))),
            (&["kube", "run", "-h"], Some((&["kube", "run"], false))),
            (
                &["attack", "--rate", "5", "--help"],
                Some((&["attack"], true)),
            ),
            // A flag's value and what follows `--` are not asking for help.
            (&["attack", "--header", "-h"], None),
            (&["kube", "run", "--", "-h"], None),
            (&["attack", "--rate=5"], None),
        ];
        for (words, want) in rows {
            let got = request(&root, &os(words));
            let want = want.map(|(path, long)| HelpRequest {
                path: path.iter().map(|s| s.to_string()).collect(),
                long,
            });
            assert_eq!(got, want, "{words:?}");
        }
    }

    #[test]
    fn dashes_become_single_for_known_flags_only() {
        let command = Command::new("x")
            .arg(Arg::new("rate").long("rate"))
            .arg(Arg::new("max-body").long("max-body"));
        let rows = [
            ("      --rate <RATE>  Rate", "      -rate <RATE>   Rate"),
            ("  -h, --help         Help", "  -h, -help          Help"),
            ("see --max-body and --rate=5", "see -max-body and -rate=5"),
            // Not a flag of this command, part of a word, or after `--` itself.
            ("--ratex --other a--rate", "--ratex --other a--rate"),
            ("run -- --rate", "run -- -rate"),
            ("  --rate", "  -rate"),
        ];
        for (input, want) in rows {
            assert_eq!(single_dashes(input, &command, "--", "-"), want, "{input}");
        }
    }

    #[test]
    fn examples_are_cut_from_their_block_only() {
        let text =
            "Prose.\n\nExamples:\n\n  loadlab a -x\n\n  loadlab b | c\nAfter.\n  not an example";
        let (rest, examples) = cut_examples(text);
        assert_eq!(examples, ["  loadlab a -x", "  loadlab b | c"]);
        assert_eq!(rest, "Prose.\n\nAfter.\n  not an example");
    }

    /// Every command and subcommand, with its path.
    fn every_command(command: &Command, path: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            let mut path = path.to_vec();
            path.push(sub.get_name().to_owned());
            every_command(sub, &path, out);
            out.push(path);
        }
    }

    pub fn commands() -> Vec<Vec<String>> {
        let mut out = vec![Vec::new()];
        every_command(&crate::Cli::command(), &[], &mut out);
        out.retain(|path| path.last().is_none_or(|name| name != "help"));
        out
    }

    fn help_of(root: &Command, path: &[String], long: bool) -> String {
        let path = path.to_vec();
        render(root, &HelpRequest { path, long })
    }

    #[test]
    fn short_help_fits_one_screen_for_every_command() {
        let root = crate::Cli::command();
        for path in commands() {
            let text = help_of(&root, &path, false);
            assert!(
                text.lines().count() <= SHORT_HELP_LINES,
                "{path:?}: {} lines\n{text}",
                text.lines().count()
            );
            assert!(text.contains("--help` says more"), "{path:?}\n{text}");
        }
    }

    #[test]
    fn long_help_prints_single_dashes_and_whole_examples() {
        let root = crate::Cli::command();
        for path in commands() {
            let text = help_of(&root, &path, true);
            let command = path
                .iter()
                .fold(&root, |c, name| c.find_subcommand(name).unwrap());
            for arg in command.get_arguments() {
                if let Some(long) = arg.get_long()
                    && !arg.is_hide_set()
                {
                    assert!(text.contains(&format!("-{long}")), "{path:?} -{long}");
                    assert!(!text.contains(&format!(" --{long} ")), "{path:?} --{long}");
                }
            }
            // Each example is one line of the output, as declared.
            let (_, examples) = split_examples(command);
            for example in examples {
                assert!(
                    text.lines().any(|line| line == example),
                    "{path:?}: {example:?} is not a line of\n{text}"
                );
            }
        }
    }

    /// Programs an example may run besides loadlab; any other first word (a flag left
    /// alone on a line by wrapping, a typo) fails the test.
    const PROGRAMS: &[&str] = &[
        "loadlab", "echo", "curl", "jq", "for", "wait", "done", "man", "cat", "date", "vegeta",
    ];

    /// A line of shell as the commands in it: words without their quotes, split at
    /// `|`, `||`, `&&`, `;` and `&`, redirections (`> FILE`, `2>&1`) and `# comments`
    /// dropped, `$(...)` kept as one word. An unterminated quote is an error.
    pub fn shell_commands(line: &str) -> Result<Vec<Vec<String>>, String> {
        let mut commands = vec![Vec::new()];
        let mut word: Option<String> = None;
        let mut skip_next_word = false;
        let mut chars = line.chars().peekable();
        let end_word =
            |word: &mut Option<String>, skip: &mut bool, commands: &mut Vec<Vec<String>>| {
                if let Some(w) = word.take() {
                    if std::mem::take(skip) {
                        return;
                    }
                    commands.last_mut().unwrap().push(w);
                }
            };
        while let Some(c) = chars.next() {
            match c {
                '\'' | '"' => {
                    let w = word.get_or_insert_with(String::new);
                    loop {
                        match chars.next() {
                            Some(q) if q == c => break,
                            Some('\\') if c == '"' => w.extend(chars.next()),
                            Some(other) => w.push(other),
                            None => return Err(format!("unterminated {c} in {line:?}")),
                        }
                    }
                }
                '$' if chars.peek() == Some(&'(') => {
                    let w = word.get_or_insert_with(String::new);
                    w.push('$');
                    let mut depth = 0;
                    for inner in chars.by_ref() {
                        w.push(inner);
                        depth += i32::from(inner == '(') - i32::from(inner == ')');
                        if depth == 0 {
                            break;
                        }
                    }
                    if depth != 0 {
                        return Err(format!("unterminated $( in {line:?}"));
                    }
                }
                '#' if word.is_none() => break,
                c if c.is_whitespace() => end_word(&mut word, &mut skip_next_word, &mut commands),
                '|' | ';' | '&' => {
                    end_word(&mut word, &mut skip_next_word, &mut commands);
                    if chars.peek() == Some(&c) {
                        chars.next();
                    }
                    commands.push(Vec::new());
                }
                '>' | '<' => {
                    let fd = word
                        .as_deref()
                        .is_some_and(|w| w.chars().all(|d| d.is_ascii_digit()));
                    if !fd {
                        end_word(&mut word, &mut skip_next_word, &mut commands);
                    }
                    word = None;
                    if chars.peek() == Some(&'>') {
                        chars.next();
                    }
                    if chars.peek() == Some(&'&') {
                        chars.next();
                        while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                            chars.next();
                        }
                    } else {
                        skip_next_word = true;
                    }
                }
                c => word.get_or_insert_with(String::new).push(c),
            }
        }
        end_word(&mut word, &mut skip_next_word, &mut commands);
        commands.retain(|c| !c.is_empty());
        for command in &mut commands {
            // `for i in 0 1; do loadlab ...`: the command after `do`.
            if command.first().is_some_and(|w| w == "do" || w == "then") {
                command.remove(0);
            }
            // `AT=$(date ...)` alone, or before a command.
            while command.first().is_some_and(|w| {
                w.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            }) {
                command.remove(0);
            }
        }
        commands.retain(|c| !c.is_empty());
        Ok(commands)
    }

    /// Parses every `loadlab` command of an example line with the real CLI, as `main`
    /// would (single-dash flags normalised first); any other command must start with a
    /// known program.
    pub fn check_example(line: &str) -> Result<usize, String> {
        let root = crate::Cli::command();
        let mut parsed = 0;
        for words in shell_commands(line)? {
            let program = words[0].as_str();
            if program == "for" || program == "in" {
                continue;
            }
            if !PROGRAMS.contains(&program) {
                return Err(format!("{program:?} is not a command, in {line:?}"));
            }
            if program != "loadlab" {
                continue;
            }
            let args: Vec<OsString> = words.iter().map(OsString::from).collect();
            let args = crate::flags::normalize_long_flags(&root, args)
                .map_err(|e| format!("{line:?}: {e}"))?;
            if request(&root, &args).is_some() {
                parsed += 1;
                continue;
            }
            root.clone()
                .try_get_matches_from(args)
                .map_err(|e| format!("{line:?}:\n{}", e.render()))?;
            parsed += 1;
        }
        Ok(parsed)
    }

    #[test]
    fn shell_lines_split_into_commands() {
        let rows: &[(&str, &[&[&str]])] = &[
            (
                r#"echo "GET http://x/" | loadlab attack -rate=5 > out.llr"#,
                &[
                    &["echo", "GET http://x/"],
                    &["loadlab", "attack", "-rate=5"],
                ],
            ),
            (
                "for i in 0 1; do loadlab attack -shard=$i/2 -output=s$i.llr & done; wait",
                &[
                    &["for", "i", "in", "0", "1"],
                    &["loadlab", "attack", "-shard=$i/2", "-output=s$i.llr"],
                    &["done"],
                    &["wait"],
                ],
            ),
            (
                "AT=$(date -u -d '+5 sec' +%s); loadlab x -y 'a b' 2>&1 >> f # note",
                &[&["loadlab", "x", "-y", "a b"]],
            ),
            (
                "loadlab a || echo b && c",
                &[&["loadlab", "a"], &["echo", "b"], &["c"]],
            ),
        ];
        for (line, want) in rows {
            let got = shell_commands(line).unwrap();
            assert_eq!(&got, want, "{line}");
        }
        assert!(shell_commands("loadlab attack -header='Host: x").is_err());
    }

    #[test]
    fn a_wrapped_or_misspelt_example_fails() {
        let rows = [
            ("loadlab attack -rate=5 -duration=1s", Ok(1)),
            (
                "echo 'GET http://x/' | loadlab attack -rate=5 | loadlab report",
                Ok(2),
            ),
            // Wrapped: the end of a command on a line of its own, a quote split.
            ("-output=ramp.llr", Err("is not a command")),
            (
                "loadlab attack -header='Authorization:",
                Err("unterminated"),
            ),
            // Misspelt flags and commands.
            ("loadlab attack -ratee=5", Err("did you mean -rate?")),
            ("loadlab atack", Err("unrecognized subcommand")),
            ("loadlab attack -format=xml", Err("invalid value")),
        ];
        for (line, want) in rows {
            match (check_example(line), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{line}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{line}: {got}"),
                (got, want) => panic!("{line}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn every_example_in_help_parses() {
        let root = crate::Cli::command();
        let mut count = 0;
        for path in commands() {
            let command = path
                .iter()
                .fold(&root, |c, name| c.find_subcommand(name).unwrap());
            let (_, examples) = split_examples(command);
            for line in examples {
                count += check_example(&line).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            }
            let help = help_of(&root, &path, true);
            assert!(
                help.contains("\nExamples:\n") || path.len() > 1,
                "{path:?} has no examples"
            );
        }
        assert!(count > 50, "only {count} loadlab commands in the examples");
    }

    /// The lines of README.md and docs/*.md code blocks that run loadlab, with `\`
    /// continuations joined.
    fn doc_examples() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![root.join("README.md")];
        let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
        let mut out = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let mut in_block = false;
            let mut pending = String::new();
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("```") {
                    in_block = !in_block;
                    continue;
                }
                if !in_block {
                    continue;
                }
                let line = line.trim();
                if !pending.is_empty() {
                    pending.push(' ');
                    pending.push_str(line.trim_end_matches('\\'));
                } else if line.starts_with("loadlab ") || line.starts_with("$ loadlab ") {
                    pending = line
                        .trim_start_matches("$ ")
                        .trim_end_matches('\\')
                        .to_owned();
                } else {
                    continue;
                }
                if !line.ends_with('\\') {
                    out.push((format!("{name}:{}", n + 1), std::mem::take(&mut pending)));
                }
            }
        }
        out
    }

    #[test]
    fn every_loadlab_line_in_the_docs_parses() {
        let examples = doc_examples();
        assert!(examples.len() > 50, "only {} doc lines", examples.len());
        let failures: Vec<String> = examples
            .iter()
            .filter_map(|(at, line)| check_example(line).err().map(|e| format!("{at}: {e}")))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
