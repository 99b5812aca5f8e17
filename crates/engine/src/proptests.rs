//! Property tests of the incremental response parser, which reads whatever a server
//! sends: any bytes, split at any read boundaries, are an error or a response, never a
//! panic; and where a response is split never changes what the parser makes of it.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p
//! loadlab-engine proptest` runs longer. Failures are not persisted: a case found
//! becomes a table row beside the parser instead.

use proptest::prelude::*;

use crate::response::{Feed, ProtocolError, ResponseParser};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    let config = ProptestConfig::with_cases(cases.unwrap_or(512));
    ProptestConfig {
        failure_persistence: None,
        ..config
    }
}

/// What the caller sees of one response.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    status: u16,
    /// Bytes of the input the response took.
    used: usize,
    close: bool,
    reason: Vec<u8>,
    location: Vec<u8>,
}

/// How a request was made: HEAD, follows redirects, body limit.
type Options = (bool, bool, u64);

/// Feeds `input` cut at `cuts` (offsets, any order), then the end of the connection.
fn parse_split(input: &[u8], cuts: &[usize], options: Options) -> Result<Outcome, ProtocolError> {
    let (head_only, want_location, body_limit) = options;
    let mut parser = ResponseParser::new();
    parser.start(head_only, want_location, body_limit);
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    ends.push(input.len());
    ends.sort_unstable();
    let mut offset = 0;
    for end in ends {
        if let Feed::Done { used } = parser.feed(&input[offset..end])? {
            return Ok(outcome(&parser, offset + used));
        }
        offset = end;
    }
    parser.eof()?;
    Ok(outcome(&parser, input.len()))
}

fn outcome(parser: &ResponseParser, used: usize) -> Outcome {
    Outcome {
        status: parser.status,
        used,
        close: parser.close,
        reason: parser.reason().to_vec(),
        location: parser.location.clone(),
    }
}

fn options() -> impl Strategy<Value = Options> {
    (
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(u64::MAX), 0u64..64],
    )
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(any::<usize>(), 0..8)
}

/// A chunked body: chunks with optional extensions, then optional trailers.
fn chunked_body() -> impl Strategy<Value = Vec<u8>> {
    let chunk = (
        prop::collection::vec(any::<u8>(), 1..20),
        "(;[a-z]{1,3}=[a-z0-9]{0,3})?",
        any::<bool>(),
    );
    (
        prop::collection::vec(chunk, 0..4),
        prop::collection::vec("X-[a-z]{1,4}: [a-z]{0,4}", 0..2),
    )
        .prop_map(|(chunks, trailers)| {
            let mut body = Vec::new();
            for (data, extension, upper) in chunks {
                let size = if upper {
                    format!("{:X}", data.len())
                } else {
                    format!("{:x}", data.len())
                };
                body.extend_from_slice(format!("{size}{extension}\r\n").as_bytes());
                body.extend_from_slice(&data);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(b"0\r\n");
            for trailer in trailers {
                body.extend_from_slice(format!("{trailer}\r\n").as_bytes());
            }
            body.extend_from_slice(b"\r\n");
            body
        })
}

/// A well-formed response (maybe after a `100 Continue`), and its length.
fn valid_response() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let status = prop_oneof![Just(200u16), Just(204), Just(302), Just(404), 100u16..600];
    let framing = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40)
            .prop_map(|body| (format!("Content-Length: {}\r\n", body.len()), body)),
        chunked_body().prop_map(|body| ("Transfer-Encoding: chunked\r\n".to_owned(), body)),
    ];
    (
        any::<bool>(),
        status.prop_filter("a 1xx is skipped; 101 switches protocols", |s| {
            !(100..200).contains(s)
        }),
        "[A-Za-z ]{0,60}",
        prop::collection::vec("(X-[a-z]{1,6}|Location|Connection): [!-~]{0,10}", 0..4),
        framing,
    )
        .prop_map(
            |(continue_first, status, reason, headers, (length_header, body))| {
                let mut response = Vec::new();
                if continue_first {
                    response.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
                response.extend_from_slice(
                    format!("HTTP/1.1 {status} {reason}\r\n{length_header}").as_bytes(),
                );
                for header in headers {
                    response.extend_from_slice(format!("{header}\r\n").as_bytes());
                }
                response.extend_from_slice(b"\r\n");
                if !matches!(status, 204 | 304) {
                    response.extend_from_slice(&body);
                }
                let length = response.len();
                (response, length)
            },
        )
}

/// Bytes close to a response: a valid one with bytes flipped, cut or spliced in.
fn near_response() -> impl Strategy<Value = Vec<u8>> {
    (
        valid_response(),
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        any::<usize>(),
    )
        .prop_map(|((mut bytes, _), flips, cut)| {
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            bytes
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_response_arbitrary_bytes_never_panic(
        input in prop::collection::vec(any::<u8>(), 0..200),
        cuts in cuts(),
        options in options(),
    ) {
        let _ = parse_split(&input, &cuts, options);
    }

    #[test]
    fn proptest_response_near_valid_split_like_whole(
        input in near_response(),
        cuts in cuts(),
        options in options(),
    ) {
        prop_assert_eq!(parse_split(&input, &cuts, options), parse_split(&input, &[], options));
    }

    #[test]
    fn proptest_response_valid_split_like_whole(
        (input, length) in valid_response(),
        extra in prop::collection::vec(any::<u8>(), 0..8),
        cuts in cuts(),
        want_location in any::<bool>(),
    ) {
        let mut bytes = input.clone();
        bytes.extend_from_slice(&extra);
        let options = (false, want_location, u64::MAX);
        let whole = parse_split(&bytes, &[], options);
        prop_assert_eq!(whole.as_ref().map(|o| o.used), Ok(length), "{:?}", String::from_utf8_lossy(&input));
        prop_assert_eq!(parse_split(&bytes, &cuts, options), whole);
    }
}
