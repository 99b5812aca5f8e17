//! Where a field of a JSON text starts, by its path (`log.entries[3].request.url`), so
//! an error can name its line.
//!
//! `serde_json::Value` keeps no positions, and errors are rare, so instead of a
//! position-keeping parser the text is walked again, only when an error is reported,
//! along the one path asked for. The text has already been parsed by serde_json, so
//! the walk may stop at the first surprise and answer the line it reached.

use std::fmt;

/// One step of a path into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// An object member.
    Key(String),
    /// An array element (0-based).
    Index(usize),
}

/// A path into a JSON value, shown as `log.entries[3].request.url`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct JsonPath(pub Vec<Step>);

impl JsonPath {
    /// This path with a member key added.
    pub fn key(&self, key: &str) -> JsonPath {
        let mut steps = self.0.clone();
        steps.push(Step::Key(key.to_owned()));
        JsonPath(steps)
    }

    /// This path with an array index added.
    pub fn index(&self, index: usize) -> JsonPath {
        let mut steps = self.0.clone();
        steps.push(Step::Index(index));
        JsonPath(steps)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(the whole file)");
        }
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => write!(f, "{key}")?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// The 1-based line where the value at `path` starts; when the path does not exist,
/// the line of the deepest value on it that does (the object missing the member).
pub(super) fn line_of(text: &str, path: &JsonPath) -> u64 {
    let mut walk = Walk {
        bytes: text.as_bytes(),
        at: 0,
    };
    let mut start = walk.value_start();
    for step in &path.0 {
        let found = match step {
            Step::Key(key) => walk.member(key),
            Step::Index(index) => walk.element(*index),
        };
        match found {
            Some(at) => start = at,
            None => break,
        }
    }
    line_at(text, start)
}

/// The 1-based line of byte `at`.
pub(super) fn line_at(text: &str, at: usize) -> u64 {
    let before = &text.as_bytes()[..at.min(text.len())];
    1 + before.iter().filter(|&&b| b == b'\n').count() as u64
}

/// A cursor over JSON text already known to be valid.
struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Skips whitespace and returns where the next value starts.
    fn value_start(&mut self) -> usize {
        self.skip_space();
        self.at
    }

    /// Inside the object at the cursor, moves to member `key`'s value and returns
    /// where it starts; `None` (cursor anywhere) when there is none.
    fn member(&mut self, key: &str) -> Option<usize> {
        self.value_start();
        if self.peek() != Some(b'{') {
            return None;
        }
        self.at += 1;
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return None; // `}`: the member is missing
            }
            let name = self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return None;
            }
            self.at += 1;
            let start = self.value_start();
            if name == key {
                return Some(start);
            }
            self.skip_value()?;
            self.skip_space();
            if self.peek() != Some(b',') {
                return None;
            }
            self.at += 1;
        }
    }

    /// Inside the array at the cursor, moves to element `index` and returns where it
    /// starts.
    fn element(&mut self, index: usize) -> Option<usize> {
        self.value_start();
        if self.peek() != Some(b'[') {
            return None;
        }
        self.at += 1;
        for _ in 0..index {
            self.value_start();
            if self.peek() == Some(b']') {
                return None;
            }
            self.skip_value()?;
            self.skip_space();
            if self.peek() != Some(b',') {
                return None;
            }
            self.at += 1;
        }
        let start = self.value_start();
        (self.peek() != Some(b']')).then_some(start)
    }

    /// Reads the string at the cursor, unescaped.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.at += 1;
        let mut escaped = false;
        while let Some(b) = self.peek() {
            self.at += 1;
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    let raw = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
                    return serde_json::from_str(raw).ok();
                }
                _ => {}
            }
        }
        None
    }

    /// Moves past the value at the cursor.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => self.skip_container(),
            _ => {
                while self
                    .peek()
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                Some(())
            }
        }
    }

    /// Moves past the object or array at the cursor, strings and all.
    fn skip_container(&mut self) -> Option<()> {
        let mut depth = 0usize;
        while let Some(b) = self.peek() {
            match b {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(steps: &[&str]) -> JsonPath {
        JsonPath(
            steps
                .iter()
                .map(|s| match s.parse() {
                    Ok(index) => Step::Index(index),
                    Err(_) => Step::Key((*s).to_owned()),
                })
                .collect(),
        )
    }

    const TEXT: &str = r#"{
  "log": {
    "version": "1.2",
    "note": "a \"quoted\" } ] value",
    "entries": [
      {"request": {"url": "http://a/"}},
      {
        "request": {
          "method": "GET",
          "url": "http://b/"
        }
      }
    ]
  }
}"#;

    #[test]
    fn finds_the_line_of_each_path() {
        let rows: &[(&[&str], u64)] = &[
            (&[], 1),
            (&["log"], 2),
            (&["log", "version"], 3),
            (&["log", "entries"], 5),
            (&["log", "entries", "0"], 6),
            (&["log", "entries", "0", "request", "url"], 6),
            (&["log", "entries", "1"], 7),
            (&["log", "entries", "1", "request", "url"], 10),
            // Missing: the deepest value that exists.
            (&["log", "entries", "1", "request", "body"], 8),
            (&["log", "entries", "2"], 5),
            (&["log", "pages"], 2),
            (&["log", "version", "x"], 3),
        ];
        for (steps, want) in rows {
            assert_eq!(line_of(TEXT, &path(steps)), *want, "{steps:?}");
        }
    }

    #[test]
    fn shows_paths_as_written() {
        assert_eq!(
            path(&["log", "entries", "3", "request", "url"]).to_string(),
            "log.entries[3].request.url"
        );
        assert_eq!(JsonPath::default().to_string(), "(the whole file)");
    }

    #[test]
    fn odd_texts_answer_a_line_without_panicking() {
        for text in ["", "[", "{\"a\":", "\"abc", "{\"log\" 1}", "[1,2"] {
            let _ = line_of(text, &path(&["log", "entries", "3"]));
        }
    }
}
