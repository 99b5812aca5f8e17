//! [`error_chain`]: an error and its causes on one line, as `anyhow`'s `{:#}` prints
//! them, for the places that keep an error as text (a plan step's reason, an agent's
//! answer) rather than returning it.

/// `err` and each of its sources, joined by `: `: `writing records: No space left on
/// device (os error 28)`.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn causes_follow_the_error() {
        let io = || std::io::Error::other("disk full");
        let rows: [(&dyn std::error::Error, &str); 2] =
            [(&io(), "disk full"), (&Outer(io()), "outer: disk full")];
        for (err, want) in rows {
            assert_eq!(error_chain(err), want);
        }
    }
}
