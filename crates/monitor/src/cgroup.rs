//! Where a process's cgroup controllers live (`/proc/PID/cgroup`: the v2 directory
//! first, else a v1 controller's, as on a hybrid host that mounts both) and the memory
//! limit they set (`memory.max` under v2, `memory.limit_in_bytes` under v1), so that a
//! process group's resident memory can be read against the limit that kills it
//! (`process.memory_limit_bytes`).

/// Where the controller a `/proc/PID/cgroup` text names lives: (2, the v2 directory)
/// when it holds `v2_file`, else (1, the v1 `v1_controller`'s directory).
pub(crate) fn controller_dir(
    cgroup: &str,
    v1_controller: &str,
    v2_file: &str,
) -> Option<(u8, String)> {
    let mut v1 = None;
    for line in cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if controllers.split(',').any(|c| c == v1_controller) {
            v1 = Some((1, format!("/sys/fs/cgroup/{controllers}{path}")));
        } else if controllers.is_empty() {
            // A hybrid host mounts v2 beside v1 (under `unified`); its file exists only
            // where the controller is enabled.
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                let dir = format!("{root}{path}");
                if std::path::Path::new(&format!("{dir}/{v2_file}")).exists() {
                    return Some((2, dir));
                }
            }
        }
    }
    v1
}

/// The memory limit of a process's cgroup in bytes; `None` without one.
pub(crate) fn read_memory_limit(pid: u32) -> Option<u64> {
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let (version, dir) = controller_dir(&cgroup, "memory", "memory.max")?;
    let file = if version == 2 {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    parse_memory_limit(&std::fs::read_to_string(format!("{dir}/{file}")).ok()?)
}

/// v1 writes "no limit" as a page-rounded `i64::MAX`; anything past an exbibyte is none.
const UNLIMITED_BYTES: u64 = 1 << 60;

/// `memory.max` (`max` for none) or `memory.limit_in_bytes`.
fn parse_memory_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes > 0 && bytes < UNLIMITED_BYTES).then_some(bytes)
}

/// A group's limit: the largest of its members' (members of one service share its
/// cgroup); none when a member has none.
pub(crate) fn group_memory_limit(limits: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let mut largest = None;
    for limit in limits {
        largest = Some(largest.unwrap_or(0).max(limit?));
    }
    largest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_limits_parse_in_bytes() {
        let cases: &[(&str, Option<u64>)] = &[
            ("max\n", None),
            ("268435456\n", Some(268_435_456)),
            ("9223372036854771712\n", None),
            ("0", None),
            ("", None),
            ("-1", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_memory_limit(text), *want, "{text:?}");
        }
    }

    #[test]
    fn a_group_s_limit_is_its_largest_unless_a_member_has_none() {
        let cases: &[(&[Option<u64>], Option<u64>)] = &[
            (&[Some(100), Some(300)], Some(300)),
            (&[Some(100), None], None),
            (&[], None),
        ];
        for (limits, want) in cases {
            assert_eq!(
                group_memory_limit(limits.iter().copied()),
                *want,
                "{limits:?}"
            );
        }
    }

    #[test]
    fn controllers_are_found_by_version() {
        let v1 = "4:memory:/app\n1:cpu,cpuacct:/app\n0::/";
        assert_eq!(
            controller_dir(v1, "memory", "no-such-file"),
            Some((1, "/sys/fs/cgroup/memory/app".to_owned()))
        );
        assert_eq!(
            controller_dir(v1, "cpu", "no-such-file"),
            Some((1, "/sys/fs/cgroup/cpu,cpuacct/app".to_owned()))
        );
        assert_eq!(controller_dir("garbage", "memory", "memory.max"), None);
    }

    #[test]
    fn this_process_reads_without_failing() {
        // Unlimited here or not: reading must not fail on this host's layout.
        let limit = read_memory_limit(std::process::id());
        assert!(limit.is_none_or(|bytes| bytes > 0));
    }
}
