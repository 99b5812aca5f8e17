//! [`Access`]: who may use `/_admin` (loopback clients, or a bearer token compared
//! in constant time).

use crate::error::SimulatorError;

/// Who may use `/_admin`.
pub(crate) struct Access {
    token: Option<Box<[u8]>>,
}

impl Access {
    /// Checks the token's spelling: it travels in a header, so it must be visible
    /// ASCII, and an empty token would let any request in.
    pub fn new(token: Option<&str>) -> Result<Self, SimulatorError> {
        let Some(token) = token else {
            return Ok(Self { token: None });
        };
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(SimulatorError::Option {
                option: "admin-token",
                message: "must be non-empty printable ASCII without spaces".to_owned(),
            });
        }
        Ok(Self {
            token: Some(token.as_bytes().into()),
        })
    }

    /// `None` when a request from a peer (loopback or not) with this `authorization`
    /// header may use `/_admin`; else the status and text of the refusal.
    pub fn refusal(
        &self,
        peer_is_loopback: bool,
        authorization: Option<&[u8]>,
    ) -> Option<(u16, &'static str)> {
        match &self.token {
            None if peer_is_loopback => None,
            None => Some((
                403,
                "the admin API answers loopback clients only; start simulate with -admin-token to allow others",
            )),
            Some(token) => {
                let presented = authorization.and_then(bearer_token).unwrap_or_default();
                if same_secret(presented, token) {
                    None
                } else {
                    Some((
                        401,
                        "the admin API needs the header authorization: Bearer <token> (simulate -admin-token)",
                    ))
                }
            }
        }
    }
}

/// The token of an `authorization: Bearer <token>` value (scheme in any case).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

/// Compares without an early exit, so the time taken does not tell an attacker how
/// many leading bytes of a guess were right. It depends only on `expected.len()`.
fn same_secret(presented: &[u8], expected: &[u8]) -> bool {
    let mut diff = presented.len() ^ expected.len();
    for (i, want) in expected.iter().enumerate() {
        let got = presented.get(i).copied().unwrap_or(0);
        diff |= usize::from(got ^ want);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_access_rules() {
        let open = Access::new(None).unwrap();
        let locked = Access::new(Some("s3cr3t-T0ken")).unwrap();
        type Row<'a> = (&'a Access, bool, Option<&'a [u8]>, Option<u16>);
        let (open, locked) = (&open, &locked);
        let rows: &[Row<'_>] = &[
            (open, true, None, None),
            (open, false, None, Some(403)),
            (open, false, Some(b"Bearer anything"), Some(403)),
            (locked, true, None, Some(401)),
            (locked, false, Some(b"Bearer s3cr3t-T0ken"), None),
            (locked, true, Some(b"bearer  s3cr3t-T0ken "), None),
            (locked, false, Some(b"Bearer s3cr3t-T0ke"), Some(401)),
            (locked, false, Some(b"Bearer s3cr3t-T0ken!"), Some(401)),
            (locked, false, Some(b"Basic s3cr3t-T0ken"), Some(401)),
            (locked, false, Some(b"s3cr3t-T0ken"), Some(401)),
            (locked, false, Some(b"Bearer "), Some(401)),
        ];
        for (i, (access, loopback, header, want)) in rows.iter().enumerate() {
            let got = access.refusal(*loopback, *header).map(|(status, _)| status);
            assert_eq!(got, *want, "row {i}");
        }
        for bad in ["", "has space", "tab\t", "é"] {
            let err = Access::new(Some(bad)).err().unwrap().to_string();
            assert!(err.contains("admin-token"), "{err}");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        let rows: &[(&[u8], &[u8], bool)] = &[
            (b"abc", b"abc", true),
            (b"abd", b"abc", false),
            (b"ab", b"abc", false),
            (b"abcd", b"abc", false),
            (b"", b"abc", false),
            (b"\0\0\0", b"\0\0", false),
        ];
        for (presented, expected, want) in rows {
            assert_eq!(same_secret(presented, expected), *want, "{presented:?}");
        }
    }
}
