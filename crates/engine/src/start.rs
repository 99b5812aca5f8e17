//! Time zero, and what a shard says about itself: a run starts when its workers are
//! warm, or at the wall-clock instant `-start-at` asked for, so that N shards started
//! on N machines share one time axis. The header's [`record::ShardInfo`] carries the
//! shard, the asked instant, how late time zero actually came, and a fingerprint of
//! everything the shards must share, which `report` checks before merging them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use record::ShardInfo;

use crate::clock::Clock;
use crate::{RunConfig, Targets};

/// How far in the past a `-start-at` may be when the run is checked: the time to
/// read targets and start threads, not a clock that is wrong.
pub const START_AT_TOLERANCE: Duration = Duration::from_secs(1);

/// Wall-clock unix nanoseconds now.
pub fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Starts the run's clock: now, or at `start_at_unix_ns` (sleeping until then). With
/// an asked instant, time zero *is* that instant on the wall clock, so every shard's
/// intended times fall on the same axis; how late the process actually woke is the
/// returned skew (ns, negative if early), and shows as send lag of the first requests.
pub(crate) fn start_clock(start_at_unix_ns: Option<u64>) -> (Clock, i64) {
    let Some(at_ns) = start_at_unix_ns else {
        return (Clock::start(), 0);
    };
    let (now_instant, now_ns) = (Instant::now(), unix_now_ns());
    let zero = if at_ns >= now_ns {
        now_instant + Duration::from_nanos(at_ns - now_ns)
    } else {
        now_instant
            .checked_sub(Duration::from_nanos(now_ns - at_ns))
            .unwrap_or(now_instant)
    };
    // One precise sleep (1 ns timer slack, not the default 50 µs), no spinning: shards
    // sharing a core would spin against each other and wake later, not earlier.
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    while let Some(left) = zero.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left);
    }
    let woke_ns = unix_now_ns();
    let skew_ns = i64::try_from(i128::from(woke_ns) - i128::from(at_ns)).unwrap_or(i64::MAX);
    (Clock::at(zero, at_ns), skew_ns)
}

/// What the header says about the shard, when the run is sharded or has `-start-at`.
pub(crate) fn shard_info(config: &RunConfig, start_skew_ns: i64) -> Option<ShardInfo> {
    let shard = config.shard();
    if shard.is_whole() && config.settings.start_at_unix_ns.is_none() {
        return None;
    }
    Some(ShardInfo {
        index: shard.index(),
        count: shard.count(),
        start_at_unix_ns: config.settings.start_at_unix_ns,
        start_skew_ns,
        plan_fingerprint: format!("{:016x}", plan_fingerprint(config)),
        // rustix has no adjtimex, and reading the kernel's estimate otherwise needs
        // unsafe code: say unknown rather than guess.
        clock_error_ns: None,
    })
}

/// A hash of everything the shards of one run must share (FNV-1a, stable across
/// builds, unlike std's hasher): the seed, the shard count, and per attack its name,
/// whole-run plan, targets (bodies and header values included), data table (rows and
/// the path as given) and request options. Per-process caps (threads, connections, in-flight) may differ by machine
/// and are left out, as are the shard's own index and start time.
pub fn plan_fingerprint(config: &RunConfig) -> u64 {
    let mut hash = Fnv::default();
    hash.field(&config.settings.seed.to_le_bytes());
    hash.field(&config.shard().count().to_le_bytes());
    for attack in &config.attacks {
        hash.field(attack.settings.name.as_bytes());
        let whole = attack.settings.plan.whole();
        hash.field(format!("{:?}", whole.pacing).as_bytes());
        hash.field(format!("{:?} {:?}", whole.duration_ns, whole.max_requests).as_bytes());
        hash.field(
            format!(
                "{:?} {} {} {:?}",
                attack.settings.timeout,
                attack.settings.keepalive,
                attack.settings.redirects,
                attack.settings.max_body
            )
            .as_bytes(),
        );
        match &attack.targets {
            Targets::List(targets) => {
                for target in targets {
                    hash.field(target.method.as_bytes());
                    hash.field(target.url.as_str().as_bytes());
                    hash.field(target.templated_path.as_deref().unwrap_or("").as_bytes());
                    for header in &target.headers {
                        hash.field(header.name.as_bytes());
                        hash.field(header.value.as_bytes());
                    }
                    hash.field(&target.body);
                    // A templated message's body is the empty frame: what it sends
                    // (its bytes and placeholders) is in the split message.
                    if let Some(message) = &target.grpc_message {
                        hash.field(format!("{message:?}").as_bytes());
                    }
                }
            }
            // A stream is read during the run: only its being one can be compared.
            Targets::Stream(_) => hash.field(b"lazy"),
            // Every shard surveyed the same logs the same way: the same count and span.
            Targets::Replay(replay) => {
                hash.field(b"replay");
                let survey = &replay.survey;
                hash.field(
                    format!(
                        "{} {} {}",
                        survey.requests, survey.zero_unix_ns, survey.last_unix_ns
                    )
                    .as_bytes(),
                );
            }
        }
        if let Some(data) = &attack.data {
            hash.field(format!("{data:?}").as_bytes());
        }
    }
    hash.0
}

/// 64-bit FNV-1a; each field is followed by its length so that fields cannot run into
/// each other.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn field(&mut self, bytes: &[u8]) {
        for &byte in bytes.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AttackConfig;
    use workload::{AttackFields, Origin, RunFields};

    /// A run of one inline gRPC target whose message is `message`.
    fn grpc_run(dir: &std::path::Path, message: &str) -> RunConfig {
        let fields = AttackFields {
            targets: Some(vec![format!("GRPC 127.0.0.1:50051 p.S/Get\n{message}")]),
            proto: Some(vec!["p.proto".to_owned()]),
            rate: Some(workload::TextOrNumber::Text("10/s".to_owned())),
            duration: Some("1s".to_owned()),
            ..AttackFields::default()
        };
        let origin = Origin::file("s.toml: ".to_owned(), dir);
        let attack = AttackConfig::from_fields(&fields, &origin, &Default::default()).unwrap();
        RunConfig::from_fields(vec![attack], &RunFields::default(), &origin).unwrap()
    }

    #[test]
    fn templated_grpc_messages_tell_shards_apart() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.proto"),
            "syntax = \"proto3\";\npackage p;\nservice S { rpc Get (Q) returns (Q) {} }\nmessage Q { string name = 1; int32 n = 2; }\n",
        )
        .unwrap();
        let rows = [
            r#"{"name": "a"}"#,
            r#"{"name": "b"}"#,
            r#"{"name": "{{seq}}"}"#,
            r#"{"name": "{{seq}} a"}"#,
            r#"{"name": "{{seq}}", "n": 2}"#,
        ];
        let prints: Vec<u64> = rows
            .iter()
            .map(|message| plan_fingerprint(&grpc_run(dir.path(), message)))
            .collect();
        for (i, a) in prints.iter().enumerate() {
            for (j, b) in prints.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {} agree", rows[i], rows[j]);
            }
        }
        assert_eq!(
            prints[2],
            plan_fingerprint(&grpc_run(dir.path(), rows[2])),
            "the same message, the same fingerprint"
        );
    }
}
