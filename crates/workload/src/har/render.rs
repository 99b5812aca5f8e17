//! The flow as TOML text: a header comment, the `[[scenario]]` table and one
//! `[[scenario.step]]` per step, in docs/FLOWS.md's layout. Written by hand rather than
//! serialized, for the comments and an order a person reads top to bottom; every
//! string goes through [`push_basic`] or its siblings, which the tests read back
//! with the `toml` crate.

use std::fmt::Write as _;

/// One step, ready to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StepOut<'a> {
    pub name: &'a str,
    /// `METHOD URL` and header lines, vegeta's http target syntax.
    pub request: &'a str,
    pub body: Option<&'a str>,
    /// (variable, expression), in the order they were found.
    pub extract: &'a [(&'a str, &'a str)],
    /// The recorded status, checked; 0 (no answer recorded): no check.
    pub status: u16,
    pub think: Option<&'a str>,
}

/// The file but its steps.
#[derive(Debug, Clone)]
pub(super) struct FlowOut {
    /// Paragraphs of the header comment; each becomes `# ` lines, wrapped. An item
    /// starting with two spaces keeps them (a list entry) and wraps under itself.
    pub header: Vec<String>,
    pub name: String,
}

/// Width the header comment is wrapped to.
const COMMENT_WIDTH: usize = 92;

/// The file up to its steps, in a string with room for `steps` steps ([`push_step`]
/// writes each).
pub(super) fn flow(out: &FlowOut, steps: usize) -> String {
    // Steps are most of the file: about 200 bytes each.
    let mut text = String::with_capacity(4096 + steps * 200);
    for paragraph in &out.header {
        if paragraph.is_empty() {
            text.push_str("#\n");
            continue;
        }
        // TOML comments may hold no control character; file and cookie names might.
        let paragraph = paragraph.replace(|c: char| c.is_control(), "\u{fffd}");
        for line in wrap(&paragraph, COMMENT_WIDTH) {
            text.push_str(format!("# {line}").trim_end());
            text.push('\n');
        }
    }
    text.push_str("\n[[scenario]]\nname = ");
    push_basic(&mut text, &out.name);
    text.push_str("\nconcurrency = 1   # one user looping the flow: a starting point\n");
    text.push_str("duration = \"1m\"\n");
    text
}

/// One `[[scenario.step]]` table, after a blank line, written in place (a flow of
/// 100,000 steps should not build each line apart).
pub(super) fn push_step(text: &mut String, step: &StepOut<'_>) {
    text.push_str("\n[[scenario.step]]\nname = ");
    push_basic(text, step.name);
    text.push_str("\nrequest = ");
    push_request(text, step.request);
    if let Some(body) = step.body {
        text.push_str("\nbody = ");
        push_body(text, body);
    }
    if !step.extract.is_empty() {
        text.push_str("\nextract = { ");
        for (i, (name, expression)) in step.extract.iter().enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str(name);
            text.push_str(" = ");
            push_basic(text, expression);
        }
        text.push_str(" }");
    }
    text.push_str("\nchecks = [");
    if step.status != 0 {
        let _ = write!(text, "\"status {}\"", step.status);
    }
    text.push(']');
    if let Some(think) = step.think {
        text.push_str("\nthink = ");
        push_basic(text, think);
    }
    text.push('\n');
}

/// Writes `text` as a TOML basic string: `"..."` with escapes.
fn push_basic(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        push_escaped(out, c, true);
    }
    out.push('"');
}

/// Escapes one character of a basic string; `newline` says whether `\n` is escaped
/// (a multi-line string keeps it).
fn push_escaped(out: &mut String, c: char, newline: bool) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' if !newline => out.push('\n'),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if c.is_control() => {
            let _ = write!(out, "\\u{:04X}", c as u32);
        }
        c => out.push(c),
    }
}

/// A request: one line in a basic string, or several in a multi-line one (a request
/// line and its headers read best one per line, as in a targets file).
fn push_request(out: &mut String, request: &str) {
    if !request.contains('\n') {
        return push_basic(out, request);
    }
    out.reserve(request.len() + 8);
    out.push_str("\"\"\"\n");
    for c in request.chars() {
        push_escaped(out, c, false);
    }
    out.push_str("\n\"\"\"");
}

/// A body: a literal string when it needs no escape (JSON reads best without its
/// quotes escaped), a multi-line literal one for text with line breaks, else a basic
/// string.
fn push_body(out: &mut String, body: &str) {
    let plain = |c: char| !c.is_control() || c == '\t';
    if !body.contains('\'') && body.chars().all(plain) {
        out.push('\'');
        out.push_str(body);
        out.push('\'');
        return;
    }
    let multi_plain = |c: char| plain(c) || c == '\n';
    if body.contains('\n')
        && !body.contains("'''")
        && !body.ends_with('\'')
        && !body.starts_with('\n')
        && body.chars().all(multi_plain)
    {
        out.push_str("'''\n");
        out.push_str(body);
        out.push_str("'''");
        return;
    }
    push_basic(out, body);
}

/// A think time from a recorded pause: to 100 ms under 10 s, to the second above.
pub(super) fn think_text(pause_ms: f64) -> String {
    let ms = if pause_ms < 10_000.0 {
        (pause_ms / 100.0).round() as u64 * 100
    } else {
        (pause_ms / 1000.0).round() as u64 * 1000
    };
    match ms {
        ms if ms < 1000 => format!("{ms}ms"),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{}.{}s", ms / 1000, (ms % 1000) / 100),
    }
}

/// Words of `paragraph` in lines of at most `width` characters (longer words alone).
/// Leading spaces are kept on every line, so list items wrap under themselves.
fn wrap(paragraph: &str, width: usize) -> Vec<String> {
    let indent: String = paragraph.chars().take_while(|c| *c == ' ').collect();
    let hanging = if indent.is_empty() {
        String::new()
    } else {
        format!("{indent}  ")
    };
    let mut lines = Vec::new();
    let mut line = indent;
    for word in paragraph.split_whitespace() {
        let at_start = line.trim().is_empty();
        if !at_start && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, hanging.clone()));
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic_string(text: &str) -> String {
        let mut out = String::new();
        push_basic(&mut out, text);
        out
    }

    fn request_string(request: &str) -> String {
        let mut out = String::new();
        push_request(&mut out, request);
        out
    }

    fn body_string(body: &str) -> String {
        let mut out = String::new();
        push_body(&mut out, body);
        out
    }

    /// A document with `value` under `key`, read back by the toml crate.
    fn read_back(key: &str, written: &str) -> String {
        let doc: toml::Table = toml::from_str(&format!("{key} = {written}\n"))
            .unwrap_or_else(|err| panic!("{written}: {err}"));
        doc[key].as_str().unwrap().to_owned()
    }

    #[test]
    fn strings_read_back_as_written() {
        let texts = [
            "",
            "plain",
            "a \"quoted\" \\ back\\slash",
            "tab\there",
            "bell\u{7}del\u{7f}nul\u{0}",
            "line\nbreak\r\nwindows",
            "{\"user\":\"ann\",\"password\":\"it's\"}",
            "ends with a quote'",
            "'''triple'''",
            "\nstarts with a line break",
            "ünïcödé ✓",
            "\"\"\"",
        ];
        for text in texts {
            assert_eq!(read_back("s", &basic_string(text)), text, "basic {text:?}");
            assert_eq!(read_back("b", &body_string(text)), text, "body {text:?}");
        }
        let requests = [
            "GET http://a/",
            "GET http://a/x?q=\"a\"\nAccept: */*\nX-Odd: back\\slash \"\"\" end",
            "POST http://a/\nContent-Type: application/json",
        ];
        for request in requests {
            // A multi-line request keeps its trailing line break; vegeta's syntax ignores it.
            let back = read_back("r", &request_string(request));
            assert_eq!(back.trim_end_matches('\n'), request, "request {request:?}");
        }
    }

    #[test]
    fn bodies_pick_the_plainest_string() {
        let rows = [
            ("{\"a\":1}", "'{\"a\":1}'"),
            ("it's", "\"it's\""),
            ("a\nb", "'''\na\nb'''"),
            ("a\r\nb", "\"a\\r\\nb\""),
        ];
        for (body, want) in rows {
            assert_eq!(body_string(body), want, "{body:?}");
        }
    }

    #[test]
    fn rounds_think_times() {
        let rows = [
            (250.0, "300ms"),
            (949.0, "900ms"),
            (960.0, "1s"),
            (1234.0, "1.2s"),
            (2050.0, "2.1s"),
            (9949.0, "9.9s"),
            (9960.0, "10s"),
            (12_400.0, "12s"),
            (95_000.0, "95s"),
        ];
        for (pause, want) in rows {
            assert_eq!(think_text(pause), want, "{pause}");
        }
    }

    #[test]
    fn comments_hold_no_control_characters() {
        let out = FlowOut {
            header: vec!["from a\u{1}b.har\nsecond\tline\r".to_owned(), String::new()],
            name: "n".to_owned(),
        };
        let text = flow(&out, 0);
        assert!(
            text.starts_with("# from a\u{fffd}b.har\u{fffd}second\u{fffd}line\u{fffd}\n#\n"),
            "{text}"
        );
        toml::from_str::<toml::Table>(&text).unwrap();
    }

    #[test]
    fn wraps_comments() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("  x yy zz", 6), ["  x yy", "    zz"]);
        assert_eq!(
            wrap("averyveryverylongword b", 5),
            ["averyveryverylongword", "b"]
        );
        assert_eq!(wrap("", 5), [""]);
    }
}
