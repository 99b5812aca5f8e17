//! Small `/proc` files parsed by hand, because they are read for every process on
//! every tick: `/proc/PID/stat` and `/proc/PID/statm`, plus `/proc/sys/fs/file-nr`.

/// The fields of `/proc/PID/stat` the process sampler uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PidStat {
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (zombie: exited, not yet reaped), ...
    pub state: char,
    pub ppid: u32,
    /// User + system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    pub threads: u64,
    /// Start time after boot, in clock ticks (tells a reused pid from the old one).
    pub start_ticks: u64,
    pub rss_pages: u64,
}

/// Parses `/proc/PID/stat`. The name sits in parentheses and may itself hold spaces
/// and parentheses, so fields are counted from the *last* `)`.
pub(crate) fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    // After ")": state(3) ppid(4) ... utime(14) stime(15) ... num_threads(20) ...
    // starttime(22) vsize(23) rss(24): field N is at index N - 3.
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let number = |field: usize| fields.get(field - 3)?.parse::<u64>().ok();
    Some(PidStat {
        comm,
        state: fields.first()?.chars().next()?,
        ppid: u32::try_from(number(4)?).ok()?,
        cpu_ticks: number(14)?.checked_add(number(15)?)?,
        threads: number(20)?,
        start_ticks: number(22)?,
        rss_pages: number(24)?,
    })
}

/// `/proc/PID/statm`: (resident pages, of which shared: file-backed or shared memory).
pub(crate) fn parse_statm(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace().skip(1).map(str::parse::<u64>);
    let resident = fields.next()?.ok()?;
    let shared = fields.next()?.ok()?;
    Some((resident, shared.min(resident)))
}

/// The soft limit on open files from `/proc/PID/limits` (`Max open files  1024  4096
/// files`); `None` when unlimited or absent.
pub(crate) fn parse_fd_limit(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `/proc/sys/fs/file-nr`: (allocated - free, max).
pub(crate) fn parse_file_nr(text: &str) -> Option<(u64, u64)> {
    let numbers: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    match numbers[..] {
        [allocated, free, max] => Some((allocated.saturating_sub(free), max)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NGINX: &str = "1234 (nginx) S 1 1234 1234 0 -1 4194624 300 0 0 0 150 50 0 0 20 0 1 0 5000 11000000 800 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0";

    #[test]
    fn parses_pid_stat() {
        let rows: &[(&str, Option<PidStat>)] = &[
            (
                NGINX,
                Some(PidStat {
                    comm: "nginx".to_owned(),
                    state: 'S',
                    ppid: 1,
                    cpu_ticks: 200,
                    threads: 1,
                    start_ticks: 5000,
                    rss_pages: 800,
                }),
            ),
            (
                "7 (a) b) (c) R 3 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 4 0 99 0 5",
                Some(PidStat {
                    comm: "a) b) (c".to_owned(),
                    state: 'R',
                    ppid: 3,
                    cpu_ticks: 3,
                    threads: 4,
                    start_ticks: 99,
                    rss_pages: 5,
                }),
            ),
            ("", None),
            ("1234 nginx S 1", None),
            ("1234 (nginx) S 1 2 3", None),
            (
                "1234 (nginx) S x 1234 1234 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 6 7",
                None,
            ),
        ];
        for (text, want) in rows {
            assert_eq!(&parse_pid_stat(text), want, "{text}");
        }
    }

    #[test]
    fn parses_statm() {
        let rows: &[(&str, Option<(u64, u64)>)] = &[
            ("5000 800 300 10 0 400 0\n", Some((800, 300))),
            ("1 2 3", Some((2, 2))),
            ("5000 800", None),
            ("5000 x 300 10 0 400 0", None),
            ("", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_statm(text), *want, "{text:?}");
        }
    }

    #[test]
    fn parses_fd_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n";
        let rows: &[(&str, Option<u64>)] = &[
            (limits, Some(1024)),
            (
                "Max open files            unlimited            unlimited            files\n",
                None,
            ),
            ("Max processes 10 10 processes\n", None),
            ("", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_fd_limit(text), *want, "{text:?}");
        }
    }

    #[test]
    fn parses_file_nr() {
        let rows: &[(&str, Option<(u64, u64)>)] = &[
            ("426\t0\t2466186\n", Some((426, 2_466_186))),
            ("1000 200 5000", Some((800, 5000))),
            ("1 2", None),
            ("a b c", None),
            ("", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_file_nr(text), *want, "{text:?}");
        }
    }
}
