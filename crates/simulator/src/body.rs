//! Response bodies: literal text with `<<256kb>>` placeholders, random content (a fixed
//! size or a size range drawn per request), files, and origins fetched once at load.
//!
//! Everything is built when a recipe loads, so serving a body is a slice of memory that
//! already exists. A per-request size range over plain text serves a prefix of one
//! pre-generated buffer; over gzip it picks one of [`GZIP_VARIANTS`] pre-compressed sizes,
//! because compressing per request would make the simulator the bottleneck.

use std::io::Write;
use std::path::PathBuf;

use bytes::Bytes;
use rand::Rng;

use crate::body_file::{FileAccess, read_body_file};
use crate::budget::Budget;
use crate::duration_size::parse_size;
use crate::error::Invalid;

/// Where a route's body comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PayloadSpec {
    Empty,
    /// Literal text; `<<256kb>>` placeholders become random text at load.
    Body(String),
    /// Random text whose length is drawn per request from the inclusive range.
    Random {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// A file read at load, resolved against the recipe file's directory.
    File(PathBuf),
    /// An `http://` URL fetched once at load.
    Origin(String),
    /// `list`: a JSON list of `count` items with ids 1..=count (see [`crate::app`]).
    List {
        count: u64,
    },
}

/// How many pre-compressed sizes stand in for a gzip size range.
pub(crate) const GZIP_VARIANTS: usize = 16;
/// Placeholders may not add up to more than this, like every other body.
const MAX_EXPANDED_BYTES: u64 = crate::duration_size::MAX_SIZE_BYTES;

/// A body ready to serve. Held as [`Bytes`] so that HTTP/2 can hand a body (or a
/// prefix of it) to its frames without copying it per request.
#[derive(Debug)]
pub(crate) enum Body {
    Fixed(Bytes),
    /// A prefix of `text` whose length is drawn from `min_bytes..=text.len()`.
    RandomPrefix {
        text: Bytes,
        min_bytes: usize,
    },
    /// One of several bodies, drawn uniformly.
    Variants(Vec<Bytes>),
}

impl Body {
    /// The bytes to send for one request.
    pub fn pick(&self, rng: &mut impl Rng) -> &[u8] {
        match self {
            Body::Fixed(bytes) => bytes,
            Body::RandomPrefix { text, min_bytes } => {
                &text[..rng.random_range(*min_bytes..=text.len())]
            }
            Body::Variants(all) => &all[rng.random_range(0..all.len())],
        }
    }

    /// [`Body::pick`] as a shared handle on the same memory (HTTP/2's DATA frames).
    pub fn pick_shared(&self, rng: &mut impl Rng) -> Bytes {
        match self {
            Body::Fixed(bytes) => bytes.clone(),
            Body::RandomPrefix { text, min_bytes } => {
                text.slice(..rng.random_range(*min_bytes..=text.len()))
            }
            Body::Variants(all) => all[rng.random_range(0..all.len())].clone(),
        }
    }

    pub fn fixed(bytes: Vec<u8>, gzip: bool) -> Body {
        Body::Fixed(Bytes::from(if gzip { gzip_bytes(&bytes) } else { bytes }))
    }
}

/// Builds a route's body and its default content type (origin_simulator's rule: JSON if
/// the text starts with `{`, else HTML), charging its memory to `budget`. Does I/O for
/// `File` (as `access` allows) and `Origin`; `field` names the route in errors.
pub(crate) fn load_payload(
    spec: &PayloadSpec,
    gzip: bool,
    field: &str,
    access: FileAccess<'_>,
    budget: &mut Budget,
    rng: &mut impl Rng,
) -> Result<(Body, &'static str), Invalid> {
    let at = |key: &str| {
        if field.is_empty() {
            key.to_owned()
        } else {
            format!("{field}.{key}")
        }
    };
    let bytes = match spec {
        PayloadSpec::Empty => Vec::new(),
        PayloadSpec::Body(text) => expand_charged(text, &at("body"), budget, rng)?,
        PayloadSpec::File(path) => {
            let bytes = read_body_file(path, access, budget.room_bytes())
                .map_err(|m| Invalid::new(at("body_file"), m))?;
            budget.charge(&at("body_file"), bytes.len() as u64, bytes.len() as u64)?;
            bytes
        }
        PayloadSpec::Origin(url) => {
            let bytes = crate::origin::fetch(url, budget.room_bytes())
                .map_err(|m| Invalid::new(at("origin"), m))?;
            budget.charge(&at("origin"), bytes.len() as u64, bytes.len() as u64)?;
            bytes
        }
        &PayloadSpec::List { count } => {
            let bytes = crate::app::list_body_bytes(count);
            budget.charge(&at("list"), bytes, bytes)?;
            crate::app::list_body(count)
        }
        &PayloadSpec::Random {
            min_bytes,
            max_bytes,
        } => {
            let held = random_held_bytes(min_bytes, max_bytes, gzip);
            budget.charge(&at("random_content"), max_bytes, held)?;
            let body = random_body(min_bytes as usize, max_bytes as usize, gzip, rng);
            return Ok((body, "text/html"));
        }
    };
    let content_type = content_type_of(&bytes);
    Ok((Body::fixed(bytes, gzip), content_type))
}

/// A literal body with placeholders, once charged to `budget` under `field`.
pub(crate) fn expand_charged(
    text: &str,
    field: &str,
    budget: &mut Budget,
    rng: &mut impl Rng,
) -> Result<Vec<u8>, Invalid> {
    let bytes = expanded_len(text);
    budget.charge(field, bytes, bytes)?;
    Ok(expand_placeholders(text, rng))
}

/// origin_simulator's content-type guess for a body.
pub(crate) fn content_type_of(bytes: &[u8]) -> &'static str {
    if bytes.first() == Some(&b'{') {
        "application/json"
    } else {
        "text/html"
    }
}

/// Memory a random body holds: its text, or over gzip [`GZIP_VARIANTS`] sizes spread
/// evenly over the range (compressed, so at most their plain sizes).
fn random_held_bytes(min_bytes: u64, max_bytes: u64, gzip: bool) -> u64 {
    if gzip && min_bytes != max_bytes {
        let variants = GZIP_VARIANTS as u64;
        variants * min_bytes + (max_bytes - min_bytes) * variants / 2
    } else {
        max_bytes
    }
}

fn random_body(min_bytes: usize, max_bytes: usize, gzip: bool, rng: &mut impl Rng) -> Body {
    let text = random_text(max_bytes, rng);
    if min_bytes == max_bytes {
        return Body::fixed(text, gzip);
    }
    if !gzip {
        return Body::RandomPrefix {
            text: Bytes::from(text),
            min_bytes,
        };
    }
    let span = max_bytes - min_bytes;
    let variants = (0..GZIP_VARIANTS)
        .map(|i| {
            Bytes::from(gzip_bytes(
                &text[..min_bytes + span * i / (GZIP_VARIANTS - 1)],
            ))
        })
        .collect();
    Body::Variants(variants)
}

/// Checks that every `<<...>>` holds one size, and that they add up to a sane total.
pub(crate) fn check_placeholders(text: &str) -> Result<(), String> {
    let mut total = 0u64;
    for tag in placeholders(text) {
        let bytes = parse_size(tag).map_err(|e| format!("placeholder <<{tag}>>: {e}"))?;
        total += bytes;
        if total > MAX_EXPANDED_BYTES {
            return Err("placeholders add up to more than 256mb".to_owned());
        }
    }
    Ok(())
}

/// The length of `text` once its placeholders are expanded. Call after
/// [`check_placeholders`]; an unparsable tag counts as written.
pub(crate) fn expanded_len(text: &str) -> u64 {
    let tags: Vec<&str> = placeholders(text).collect();
    let written: u64 = tags.iter().map(|tag| tag.len() as u64 + 4).sum();
    let expanded: u64 = tags
        .iter()
        .map(|tag| parse_size(tag).unwrap_or(tag.len() as u64 + 4))
        .sum();
    text.len() as u64 - written + expanded
}

/// Replaces each `<<size>>` with that many random characters. Call after
/// [`check_placeholders`]; an unparsable tag is left as written.
pub(crate) fn expand_placeholders(text: &str, rng: &mut impl Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<<") {
        let Some(close) = rest[open + 2..].find(">>") else {
            break;
        };
        let tag = &rest[open + 2..open + 2 + close];
        out.extend_from_slice(&rest.as_bytes()[..open]);
        match parse_size(tag) {
            Ok(bytes) => out.extend_from_slice(&random_text(bytes as usize, rng)),
            Err(_) => out.extend_from_slice(&rest.as_bytes()[open..open + 4 + close]),
        }
        rest = &rest[open + 4 + close..];
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

pub(crate) fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let open = rest.find("<<")?;
        let close = rest[open + 2..].find(">>")?;
        let tag = &rest[open + 2..open + 2 + close];
        rest = &rest[open + 4 + close..];
        Some(tag)
    })
}

/// Random text over the base64 alphabet, as origin_simulator generates it.
pub(crate) fn random_text(len: usize, rng: &mut impl Rng) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let mut bits: u64 = rng.random();
        for _ in 0..10.min(len - out.len()) {
            out.push(ALPHABET[(bits & 63) as usize]);
            bits >>= 6;
        }
    }
    out
}

pub(crate) fn gzip_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 2 + 64),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail; an error here would be a flate2 bug, so fall back
    // to the empty gzip stream rather than panic on the serving path.
    if encoder.write_all(bytes).is_err() {
        return Vec::new();
    }
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;
    use std::io::Read;

    fn rng() -> SmallRng {
        SmallRng::seed_from_u64(3)
    }

    fn roomy() -> Budget {
        Budget::new(1 << 30, 1 << 30, 0)
    }

    #[test]
    fn bodies_are_charged_before_they_are_made() {
        let load = |spec: PayloadSpec, gzip: bool, budget: &mut Budget| {
            load_payload(
                &spec,
                gzip,
                "recipe[2]",
                FileAccess::Operator,
                budget,
                &mut rng(),
            )
            .map(|_| ())
            .map_err(|e| format!("{}: {}", e.field, e.message))
        };
        let body = |text: &str| PayloadSpec::Body(text.to_owned());
        let random = |min_bytes, max_bytes| PayloadSpec::Random {
            min_bytes,
            max_bytes,
        };
        type Row = (PayloadSpec, bool, u64, Result<u64, &'static str>);
        let rows: Vec<Row> = vec![
            (body("ab<<1kb>>"), false, 4096, Ok(1026)),
            (
                body("<<4kb>>x"),
                false,
                4096,
                Err("recipe[2].body: body larger than the 4kb cap on one body"),
            ),
            (random(10, 1000), false, 4096, Ok(1000)),
            (random(1000, 1000), true, 4096, Ok(1000)),
            (random(0, 1000), true, 4096, Ok(8000)),
            (
                random(0, 5000),
                false,
                4096,
                Err("recipe[2].random_content: body larger than the 4kb cap"),
            ),
            (
                PayloadSpec::File("/dev/zero".into()),
                false,
                4096,
                Err("recipe[2].body_file: /dev/zero: larger than the 4kb"),
            ),
        ];
        for (spec, gzip, max_body, want) in rows {
            let mut budget = Budget::new(max_body, 1 << 20, 0);
            let start = budget.clone();
            match (load(spec.clone(), gzip, &mut budget), want) {
                (Ok(()), Ok(spent)) => assert_eq!(budget.spent_since(&start), spent, "{spec:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{spec:?}: {got}"),
                (got, want) => panic!("{spec:?}: got {got:?}, want {want:?}"),
            }
        }
        let mut nearly_full = Budget::new(4096, 10_000, 9_000);
        let err = load(body("<<1kb>>"), false, &mut nearly_full).unwrap_err();
        assert!(
            err.contains("more than 10000b of bodies (simulate -max-recipe-memory)"),
            "{err}"
        );
    }

    #[test]
    fn expanded_lengths() {
        let rows = [
            ("", 0),
            ("plain", 5),
            ("<<1kb>>", 1024),
            ("a<<10b>>b<<2b>>c", 15),
            ("<<big>>", 7),
            ("open <<1kb", 10),
        ];
        for (text, want) in rows {
            assert_eq!(expanded_len(text), want, "{text}");
            assert_eq!(
                expand_placeholders(text, &mut rng()).len() as u64,
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn placeholders_expand_to_their_size() {
        let rows: &[(&str, Result<usize, &str>)] = &[
            ("plain", Ok(5)),
            ("<<1kb>>", Ok(1024)),
            ("a<<10b>>b<<2b>>c", Ok(15)),
            ("<<1kb..2kb>>", Err("placeholder <<1kb..2kb>>")),
            ("<<big>>", Err("placeholder <<big>>: bad size")),
            ("<<200mb>><<100mb>>", Err("more than 256mb")),
            ("unclosed <<1kb", Ok(14)),
        ];
        for (input, want) in rows {
            match (check_placeholders(input), want) {
                (Ok(()), Ok(len)) => assert_eq!(
                    expand_placeholders(input, &mut rng()).len(),
                    *len,
                    "{input}"
                ),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
        let text = expand_placeholders("a<<10b>>b", &mut rng());
        assert!(text.starts_with(b"a") && text.ends_with(b"b"));
        assert!(
            text[1..11]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
        );
    }

    #[test]
    fn random_ranges_draw_per_request() {
        let (body, _) = load_payload(
            &PayloadSpec::Random {
                min_bytes: 100,
                max_bytes: 200,
            },
            false,
            "",
            FileAccess::Operator,
            &mut roomy(),
            &mut rng(),
        )
        .unwrap();
        let mut r = rng();
        let lengths: Vec<usize> = (0..2000).map(|_| body.pick(&mut r).len()).collect();
        assert!(lengths.iter().all(|l| (100..=200).contains(l)));
        assert!(lengths.contains(&100) && lengths.contains(&200));
    }

    #[test]
    fn gzip_bodies_decompress_to_the_asked_size() {
        let (body, _) = load_payload(
            &PayloadSpec::Random {
                min_bytes: 1000,
                max_bytes: 4000,
            },
            true,
            "",
            FileAccess::Operator,
            &mut roomy(),
            &mut rng(),
        )
        .unwrap();
        let Body::Variants(all) = &body else {
            panic!("expected variants")
        };
        let sizes: Vec<usize> = all
            .iter()
            .map(|gz| {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut out)
                    .unwrap();
                out.len()
            })
            .collect();
        assert_eq!(sizes.first(), Some(&1000));
        assert_eq!(sizes.last(), Some(&4000));
    }

    #[test]
    fn missing_file_names_the_field() {
        let spec = PayloadSpec::File("/nonexistent/loadlab-body".into());
        let err = load_payload(
            &spec,
            false,
            "recipe[1]",
            FileAccess::Operator,
            &mut roomy(),
            &mut rng(),
        )
        .unwrap_err();
        assert_eq!(err.field, "recipe[1].body_file");
        assert!(
            err.message.contains("/nonexistent/loadlab-body"),
            "{}",
            err.message
        );
    }
}
