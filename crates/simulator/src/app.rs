//! Routes that behave like an application: `requires` (a header or cookie, else 401),
//! `list` (a JSON list of items with ids 1..=N) and `ids_from` (a `/{id}` route that
//! answers 404 for an id not in such a list). Both refusals are answered at once, before
//! the stage's latency and the capacity pool, as an application's auth check or lookup
//! would be, and counted under the route with their status.

use crate::request::RequestHeaders;

/// One thing a route requires of a request.
#[derive(Debug, Clone)]
pub(crate) struct Requirement {
    pub wanted: Wanted,
    /// Searched for in the value when given; anchored by the recipe (`^Bearer .+`).
    pub pattern: Option<regex::Regex>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Lowercase.
    Header(String),
    Cookie(String),
}

impl Requirement {
    /// Why `headers` do not meet this requirement, as the 401's JSON body; None if they do.
    pub fn unmet(&self, headers: &RequestHeaders<'_>) -> Option<String> {
        let (kind, name, value) = match &self.wanted {
            Wanted::Header(name) => ("header", name, headers.get(name)),
            Wanted::Cookie(name) => ("cookie", name, headers.cookie(name)),
        };
        let Some(value) = value else {
            return Some(refusal_json(
                "unauthorized",
                "missing",
                &format!("{kind} {name}"),
            ));
        };
        let pattern = self.pattern.as_ref()?;
        let matched = std::str::from_utf8(value).is_ok_and(|text| pattern.is_match(text));
        (!matched).then(|| {
            let what = format!("{kind} {name} does not match {}", pattern.as_str());
            refusal_json("unauthorized", "invalid", &what)
        })
    }
}

/// The checks a route makes before answering, and where their refusals are counted.
pub(crate) struct AppRules {
    pub requires: Vec<Requirement>,
    /// Ids 1..=N accepted in the route's `/{NAME}` segment (`ids_from`).
    pub id_count: Option<u64>,
    pub unauthorized_slot: usize,
    pub not_found_slot: usize,
}

/// An answer given instead of the route's stages.
pub(crate) struct Refusal {
    pub status: u16,
    pub body: Vec<u8>,
    pub slot: usize,
}

impl AppRules {
    /// The 401 or 404 this request gets, if any. `param` is the `/{NAME}` segment.
    pub fn refuse(&self, headers: &RequestHeaders<'_>, param: &[u8]) -> Option<Refusal> {
        if let Some(body) = self.requires.iter().find_map(|r| r.unmet(headers)) {
            return Some(Refusal {
                status: 401,
                body: body.into_bytes(),
                slot: self.unauthorized_slot,
            });
        }
        let count = self.id_count?;
        if id_in_list(param, count) {
            return None;
        }
        let id = String::from_utf8_lossy(param);
        Some(Refusal {
            status: 404,
            body: refusal_json("not found", "id", &id).into_bytes(),
            slot: self.not_found_slot,
        })
    }
}

/// `{"error": error, key: value}`, with JSON escaping (the value may come from a client).
fn refusal_json(error: &str, key: &str, value: &str) -> String {
    let mut object = serde_json::Map::new();
    object.insert("error".into(), error.into());
    object.insert(key.into(), value.into());
    serde_json::Value::Object(object).to_string()
}

/// Whether `segment` is an id of a list of `count` items: 1..=count, written plainly.
pub(crate) fn id_in_list(segment: &[u8], count: u64) -> bool {
    let plain = !segment.is_empty()
        && segment[0] != b'0'
        && segment.len() <= 20
        && segment.iter().all(u8::is_ascii_digit);
    plain
        && std::str::from_utf8(segment)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|id| id <= count)
}

/// The body of a `list` route: `{"count": N, "items": [{"id": 1, "name": "item 1"}, ...]}`.
pub(crate) fn list_body(count: u64) -> Vec<u8> {
    let mut out = format!("{{\"count\":{count},\"items\":[").into_bytes();
    for id in 1..=count {
        if id > 1 {
            out.push(b',');
        }
        out.extend_from_slice(format!("{{\"id\":{id},\"name\":\"item {id}\"}}").as_bytes());
    }
    out.extend_from_slice(b"]}");
    out
}

/// Bytes of [`list_body`] without building it, to charge the memory budget first.
pub(crate) fn list_body_bytes(count: u64) -> u64 {
    let digits: u64 = (1..=count).map(|id| id.to_string().len() as u64).sum();
    // `{"id":,"name":"item "}` is 22 bytes, plus a comma between items.
    let items = 22 * count + 2 * digits + count.saturating_sub(1);
    format!("{{\"count\":{count},\"items\":[]}}").len() as u64 + items
}

/// The default body of an `ids_from` route, for its parameter `param`.
pub(crate) fn item_body(param: &str) -> String {
    format!(
        "{{\"id\":{{{{request.param.{param}}}}},\"name\":\"item {{{{request.param.{param}}}}}\"}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(requires: Vec<Requirement>, id_count: Option<u64>) -> AppRules {
        AppRules {
            requires,
            id_count,
            unauthorized_slot: 1,
            not_found_slot: 2,
        }
    }

    fn require(wanted: Wanted, pattern: Option<&str>) -> Requirement {
        Requirement {
            wanted,
            pattern: pattern.map(|p| regex::Regex::new(p).unwrap()),
        }
    }

    #[test]
    fn requirements_refuse_with_what_is_missing() {
        let head: &[u8] =
            b"GET / HTTP/1.1\r\nAuthorization: Bearer abc\r\nCookie: session=1\r\n\r\n";
        let bare: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
        let auth = || Wanted::Header("authorization".into());
        let rows: Vec<(Requirement, &[u8], Option<&str>)> = vec![
            (require(auth(), None), head, None),
            (require(auth(), Some("^Bearer .+")), head, None),
            (
                require(auth(), None),
                bare,
                Some(r#"{"error":"unauthorized","missing":"header authorization"}"#),
            ),
            (
                require(auth(), Some("^Basic ")),
                head,
                Some(
                    r#"{"error":"unauthorized","invalid":"header authorization does not match ^Basic "}"#,
                ),
            ),
            (require(Wanted::Cookie("session".into()), None), head, None),
            (
                require(Wanted::Cookie("session".into()), None),
                bare,
                Some(r#"{"error":"unauthorized","missing":"cookie session"}"#),
            ),
            (
                require(Wanted::Cookie("session".into()), Some("^[0-9]+$")),
                head,
                None,
            ),
        ];
        for (requirement, head, want) in rows {
            let got =
                rules(vec![requirement.clone()], None).refuse(&RequestHeaders::Raw(head), b"");
            match (got, want) {
                (None, None) => {}
                (Some(refusal), Some(want)) => {
                    assert_eq!((refusal.status, refusal.slot), (401, 1));
                    assert_eq!(String::from_utf8(refusal.body).unwrap(), want);
                }
                (got, want) => panic!(
                    "{requirement:?}: got {:?}, want {want:?}",
                    got.map(|r| r.status)
                ),
            }
        }
    }

    #[test]
    fn ids_are_those_of_the_list() {
        let rows: &[(&[u8], bool)] = &[
            (b"1", true),
            (b"5", true),
            (b"6", false),
            (b"0", false),
            (b"01", false),
            (b"", false),
            (b"x", false),
            (b"-1", false),
            (b"99999999999999999999999", false),
        ];
        for (segment, want) in rows {
            assert_eq!(
                id_in_list(segment, 5),
                *want,
                "{:?}",
                String::from_utf8_lossy(segment)
            );
        }
        let refusal = rules(Vec::new(), Some(5))
            .refuse(&RequestHeaders::Raw(b"GET / HTTP/1.1\r\n\r\n"), b"7\"")
            .unwrap();
        assert_eq!((refusal.status, refusal.slot), (404, 2));
        assert_eq!(refusal.body, br#"{"error":"not found","id":"7\""}"#);
        assert!(
            rules(Vec::new(), None)
                .refuse(&RequestHeaders::Raw(b"GET / HTTP/1.1\r\n\r\n"), b"x")
                .is_none()
        );
    }

    #[test]
    fn list_bodies_are_json_of_the_length_charged() {
        for count in [0, 1, 9, 10, 120] {
            let body = list_body(count);
            assert_eq!(body.len() as u64, list_body_bytes(count), "count {count}");
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["count"], count);
            assert_eq!(value["items"].as_array().unwrap().len() as u64, count);
        }
        let value: serde_json::Value = serde_json::from_slice(&list_body(2)).unwrap();
        assert_eq!(
            value["items"][1],
            serde_json::json!({"id": 2, "name": "item 2"})
        );
        assert_eq!(
            item_body("id"),
            r#"{"id":{{request.param.id}},"name":"item {{request.param.id}}"}"#
        );
    }
}
