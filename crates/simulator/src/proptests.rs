//! Property tests of recipe parsing, which reads whatever a user or an exported
//! origin_simulator recipe holds: any text is an error naming the input (and the field)
//! or a recipe whose latencies can be drawn, never a panic. Recipes are built from the
//! format's own keys and values so cases get past the first field.
//!
//! Cases default to a CI-sized count; `PROPTEST_CASES=100000 cargo test -p
//! loadlab-simulator proptest` runs longer. Failures are not persisted: a case found
//! becomes a table row beside the parser instead.

use std::time::Duration;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::{Map, Value, json};

use crate::duration_size::{MAX_DURATION_NS, format_duration, parse_duration};
use crate::{SimulatorError, parse_recipe};

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    let config = ProptestConfig::with_cases(cases.unwrap_or(256));
    ProptestConfig {
        failure_persistence: None,
        ..config
    }
}

fn pick(values: Vec<Value>) -> impl Strategy<Value = Value> + Clone {
    prop::sample::select(values)
}

/// Mostly `valid`, sometimes `invalid`: a recipe with one bad value deep inside tests
/// more than one that fails at its first field.
fn mostly<T: std::fmt::Debug + 'static>(
    valid: impl Strategy<Value = T> + 'static,
    invalid: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<T> {
    prop_oneof![12 => valid, 1 => invalid].boxed()
}

fn strings(values: &[&str]) -> impl Strategy<Value = Value> + Clone {
    pick(values.iter().map(|v| Value::from(*v)).collect())
}

fn duration() -> BoxedStrategy<Value> {
    mostly(
        "[0-9]{1,4}(\\.[0-9]{1,3})?(us|µs|ms|s|m)".prop_map(Value::from),
        prop_oneof![
            pick(vec![
                json!(0),
                json!("0"),
                json!(5),
                json!("10"),
                json!("-1s"),
                json!(true)
            ]),
            "[0-9.a-z]{0,5}".prop_map(Value::from),
            Just(json!("99999m")),
        ],
    )
}

fn size() -> BoxedStrategy<Value> {
    mostly(
        "[0-9]{1,3}(b|kb|KB)".prop_map(Value::from),
        prop_oneof![
            "[0-9]{1,4}(mb|x|)".prop_map(Value::from),
            pick(vec![
                json!("999mb"),
                json!(7),
                json!(".."),
                json!("99999999999999999999b")
            ]),
        ],
    )
}

fn latency() -> BoxedStrategy<Value> {
    let d = duration();
    // Rising durations (in µs, to reach the sub-millisecond spellings): ranges and
    // percentiles must be in order to parse.
    let rising = (0u64..5_000_000, 0u64..5_000_000, 0u64..5_000_000)
        .prop_map(|(a, b, c)| [a, a + b, a + b + c].map(|us| format!("{us}us")));
    let valid = prop_oneof![
        d.clone(),
        rising
            .clone()
            .prop_map(|[a, b, _]| Value::from(format!("{a}..{b}"))),
        d.clone().prop_map(|v| json!({"dist": "fixed", "value": v})),
        rising
            .clone()
            .prop_map(|[a, b, _]| json!({"dist": "uniform", "min": a, "max": b})),
        (strings(&["normal", "lognormal"]), rising, any::<bool>()).prop_map(
            |(dist, [p50, p99, max], capped)| {
                if capped {
                    json!({"dist": dist, "p50": p50, "p99": p99, "max": max})
                } else {
                    json!({"dist": dist, "p50": p50, "p99": p99})
                }
            }
        ),
    ];
    let keys = strings(&["dist", "value", "min", "max", "p50", "p99", "bogus"]);
    let invalid = prop_oneof![
        prop::collection::vec((keys, d.clone()), 0..4)
            .prop_map(|fields| object(fields.into_iter().map(|(k, v)| (text(&k), v)))),
        (d.clone(), d).prop_map(|(a, b)| Value::from(format!("{}..{}", text(&a), text(&b)))),
    ];
    mostly(valid, invalid)
}

fn failure() -> BoxedStrategy<Value> {
    let valid = prop_oneof![
        strings(&[
            "reset",
            "close",
            "malformed",
            "stall",
            "trickle",
            "close_mid_body",
            "chunked",
            "rst_stream",
            "goaway"
        ]),
        duration().prop_map(|d| json!({"mode": "stall", "for": d})),
        (size(), duration()).prop_map(|(c, e)| json!({"mode": "trickle", "chunk": c, "every": e})),
        size().prop_map(|a| json!({"mode": "close_mid_body", "after": a})),
        size().prop_map(|c| json!({"mode": "chunked", "chunk": c})),
        pick(vec![json!("refused_stream"), json!("cancel"), json!(2)])
            .prop_map(|c| json!({"mode": "rst_stream", "code": c})),
    ];
    let invalid = prop_oneof![
        pick(vec![json!("refused"), json!(-1), json!(true), json!(1e12)])
            .prop_map(|c| json!({"mode": "rst_stream", "code": c})),
        strings(&["nope", ""]),
        (strings(&["reset", "stall", "x"]), size())
            .prop_map(|(m, c)| json!({"mode": m, "chunk": c})),
        Just(json!(3)),
    ];
    mostly(valid, invalid)
}

fn status() -> BoxedStrategy<Value> {
    let code = mostly(
        pick(vec![json!(200), json!(404), json!(503)]),
        pick(vec![json!(99), json!(600), json!("200"), json!(-1)]),
    );
    let key = mostly(
        strings(&["200", "404", "503", "reset", "stall", "rst_stream"]),
        strings(&["99", "x", ""]),
    );
    let weight = mostly(
        pick(vec![json!(1), json!(0), json!(2.5), json!(83)]),
        pick(vec![json!(-1), json!("1"), json!(null)]),
    );
    let entry = prop_oneof![
        weight.clone(),
        (
            weight.clone(),
            prop::option::of(latency()),
            prop::option::of(body()),
            prop::option::of(failure())
        )
            .prop_map(|(w, l, b, f)| {
                let mut fields = vec![("weight".to_owned(), w)];
                fields.extend(l.map(|v| ("latency".to_owned(), v)));
                fields.extend(b.map(|v| ("body".to_owned(), v)));
                fields.extend(f.map(|v| ("failure".to_owned(), v)));
                object(fields)
            }),
    ];
    prop_oneof![
        code.clone(),
        prop::collection::vec((key.clone(), entry), 1..4)
            .prop_map(|entries| object(entries.into_iter().map(|(k, v)| (text(&k), v)))),
        prop::collection::vec((prop_oneof![code, key], weight), 1..4).prop_map(|entries| {
            Value::Array(
                entries
                    .into_iter()
                    .map(|(s, w)| json!({"status": s, "weight": w}))
                    .collect(),
            )
        }),
    ]
    .boxed()
}

fn body() -> BoxedStrategy<Value> {
    "([a-z{ ]|<<[0-9]{1,3}(b|kb|x)?>>|<<|\\{\\{ ?(id|request\\.(path|query\\.q|header\\.X|cookie\\.|param\\.id|body))( ?\\}\\}|\\})?){0,6}"
        .prop_map(Value::from)
        .boxed()
}

/// A stage; its `at` is set by [`stages`] so that most lists are in order.
fn stage() -> BoxedStrategy<Map<String, Value>> {
    (
        prop::option::of(status()),
        prop::option::of(latency()),
        prop::option::weighted(0.3, failure()),
    )
        .prop_map(|(status, latency, failure)| {
            let fields = [
                ("status", status),
                ("latency", latency),
                ("failure", failure),
            ];
            fields
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
                .collect()
        })
        .boxed()
}

fn stages() -> BoxedStrategy<Value> {
    let list = prop::collection::vec((stage(), prop::option::weighted(0.1, duration())), 1..4)
        .prop_map(|stages| {
            let stages = stages.into_iter().enumerate().map(|(i, (mut stage, at))| {
                stage.insert(
                    "at".to_owned(),
                    at.unwrap_or_else(|| Value::from(format!("{i}s"))),
                );
                Value::Object(stage)
            });
            Value::Array(stages.collect())
        });
    mostly(list, pick(vec![json!([]), json!({}), json!(null)]))
}

fn capacity() -> BoxedStrategy<Value> {
    let count = mostly(
        pick(vec![json!(1), json!(4), json!(0)]),
        pick(vec![json!(2_000_000), json!(-1), json!("1")]),
    );
    let status = mostly(
        pick(vec![json!(503), json!(429)]),
        pick(vec![json!(100), json!(null)]),
    );
    (count.clone(), count, duration(), status, latency(), latency()).prop_map(
        |(workers, queue, timeout, reject_status, reject, overflow)| {
            json!({
                "workers": workers, "overflow": 1, "queue": queue, "queue_timeout": timeout,
                "reject_status": reject_status, "reject_latency": reject, "overflow_latency": overflow,
            })
        },
    )
    .boxed()
}

fn route() -> BoxedStrategy<Value> {
    let path = mostly(
        strings(&["/", "/*", "/a*", "/a/b", "/a/{id}"]),
        strings(&["/_admin", "/metrics", "a", "/a b", "/**", "/*a"]),
    );
    let header = mostly(
        strings(&["X-A", "content-type", "Content-Encoding"]),
        strings(&["content-length", "bad name", ""]),
    );
    let header_value = mostly(strings(&["v", "gzip", "text/plain"]), strings(&["a\nb"]));
    let origin = mostly(Just(json!("http://127.0.0.1:1/")), Just(json!("ftp://x")));
    (
        prop::option::of(path),
        prop::option::of(prop_oneof![
            body().prop_map(|b| ("body", b)),
            prop_oneof![
                size(),
                (1u32..500, 0u32..500)
                    .prop_map(|(low, more)| json!(format!("{low}b..{}b", low + more)))
            ]
            .prop_map(|s| ("random_content", s)),
            origin.prop_map(|o| ("origin", o)),
        ]),
        prop::collection::vec((header, header_value), 0..2),
        stages(),
        prop::option::weighted(0.3, capacity()),
        prop::option::weighted(0.3, app()),
    )
        .prop_map(|(path, payload, headers, stages, capacity, app)| {
            let mut fields: Vec<(String, Value)> = vec![("stages".to_owned(), stages)];
            fields.extend(path.map(|p| ("route".to_owned(), p)));
            fields.extend(payload.map(|(k, v)| (k.to_owned(), v)));
            if !headers.is_empty() {
                fields.push((
                    "headers".to_owned(),
                    object(headers.into_iter().map(|(k, v)| (text(&k), v))),
                ));
            }
            fields.extend(capacity.map(|c| ("capacity".to_owned(), c)));
            fields.extend(app);
            object(fields)
        })
        .boxed()
}

/// One of the application fields (`requires`, `list`, `ids_from`), good or bad.
fn app() -> BoxedStrategy<(String, Value)> {
    let requires = pick(vec![
        json!({"header": "authorization"}),
        json!({"cookie": "s", "matches": "^[0-9]+$"}),
        json!([{"header": "x"}, {"cookie": "s"}]),
        json!({"header": "x", "matches": "("}),
        json!({}),
        json!([]),
    ]);
    let list = pick(vec![json!({"count": 3}), json!({"count": -1}), json!({})]);
    let ids_from = pick(vec![json!("/"), json!("/*"), json!(3)]);
    prop_oneof![
        requires.prop_map(|v| ("requires".to_owned(), v)),
        list.prop_map(|v| ("list".to_owned(), v)),
        ids_from.prop_map(|v| ("ids_from".to_owned(), v)),
    ]
    .boxed()
}

fn recipe() -> impl Strategy<Value = String> {
    prop_oneof![
        route().prop_map(|r| r.to_string()),
        prop::collection::vec(route(), 1..3).prop_map(|routes| Value::Array(routes).to_string()),
    ]
}

fn object(fields: impl IntoIterator<Item = (String, Value)>) -> Value {
    Value::Object(fields.into_iter().collect::<Map<_, _>>())
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

fn check(json: &str, seed: u64) -> Result<(), TestCaseError> {
    match parse_recipe(json, "r.json") {
        Ok(recipe) => {
            let _ = recipe.capacity_rps();
            let mut rng = SmallRng::seed_from_u64(seed);
            for outcome in recipe
                .routes
                .iter()
                .flat_map(|r| &r.stages)
                .flat_map(|s| &s.outcomes)
            {
                let _ = outcome.latency.sample_ns(&mut rng);
                let _ = outcome.latency.describe();
            }
        }
        Err(err @ (SimulatorError::Json { .. } | SimulatorError::Recipe { .. })) => {
            prop_assert!(err.to_string().starts_with("r.json: "), "{err}");
        }
        Err(err) => prop_assert!(false, "parsing does no I/O, yet: {err}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn proptest_recipe_never_panics(json in recipe(), seed in any::<u64>()) {
        check(&json, seed)?;
    }

    #[test]
    fn proptest_recipe_arbitrary_text_never_panics(json in "[\\[\\]{}\":,0-9a-z./ ]{0,40}", seed in any::<u64>()) {
        check(&json, seed)?;
    }

    #[test]
    fn proptest_recipe_duration_round_trips(ns in 0..=MAX_DURATION_NS) {
        let duration = Duration::from_nanos(ns);
        let printed = format_duration(duration);
        prop_assert_eq!(parse_duration(&printed), Ok(duration), "{}", printed);
    }
}
