//! Connection URLs may hold passwords; everything a user sees (logs, series labels,
//! sampler names, reports) gets [`redact_url`]'s spelling instead.

/// `postgres://user:secret@host/db` -> `postgres://user:REDACTED@host/db`. Text that
/// is not a URL with credentials comes back unchanged, except that a password-looking
/// `password=...` query or keyword parameter is redacted too.
pub fn redact_url(text: &str) -> String {
    let redacted = redact_userinfo(text);
    redact_password_params(&redacted)
}

fn redact_userinfo(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_owned();
    };
    let rest_start = scheme_end + 3;
    let rest = &text[rest_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    // The last '@' ends the userinfo: passwords may contain '@' when not escaped.
    let Some(at) = authority.rfind('@') else {
        return text.to_owned();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return text.to_owned();
    };
    format!(
        "{}{}:REDACTED{}",
        &text[..rest_start],
        &userinfo[..colon],
        &rest[at..]
    )
}

fn redact_password_params(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let Some(start) = lower.find("password=") else {
        return text.to_owned();
    };
    let value_start = start + "password=".len();
    let value_end = text[value_start..]
        .find(['&', ' ', '#'])
        .map_or(text.len(), |end| value_start + end);
    format!(
        "{}REDACTED{}",
        &text[..value_start],
        redact_password_params(&text[value_end..])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_passwords_and_keeps_the_rest() {
        let rows: &[(&str, &str)] = &[
            (
                "postgres://loadlab:s3cret@127.0.0.1:5432/loadlab",
                "postgres://loadlab:REDACTED@127.0.0.1:5432/loadlab",
            ),
            (
                "postgresql://u:p@ss@host/db?sslmode=disable",
                "postgresql://u:REDACTED@host/db?sslmode=disable",
            ),
            ("postgres://user@host/db", "postgres://user@host/db"),
            (
                "http://127.0.0.1:9113/metrics",
                "http://127.0.0.1:9113/metrics",
            ),
            (
                "http://admin:pw@127.0.0.1:9100/metrics?x=1",
                "http://admin:REDACTED@127.0.0.1:9100/metrics?x=1",
            ),
            (
                "postgres://host/db?user=u&password=hunter2&sslmode=disable",
                "postgres://host/db?user=u&password=REDACTED&sslmode=disable",
            ),
            (
                "host=127.0.0.1 user=u Password=hunter2 dbname=d",
                "host=127.0.0.1 user=u Password=REDACTED dbname=d",
            ),
            ("", ""),
            ("://@", "://@"),
        ];
        for (input, want) in rows {
            assert_eq!(redact_url(input), *want, "{input}");
        }
    }
}
