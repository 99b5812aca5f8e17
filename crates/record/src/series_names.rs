//! [`ResourceSeries`]: the names of the resource series loadlab's own samplers write
//! (`host.`, `process.`, `postgres.`), defined once for the monitor that writes them and
//! the report and plot that read them, so a renamed series cannot silently fall out of
//! a chart or a report row. `docs/MONITOR.md` lists them with their labels and units.
//! Prometheus series keep the names they are scraped with (no dots), and are not here,
//! except for the maximum a user gives a gauge (`prom=URL;max=GAUGE=LIMIT`), written as
//! `GAUGE` + [`PROM_LIMIT_SUFFIX`].

/// The suffix of the series that carries a scraped gauge's maximum as a user hinted it:
/// `app_queue_length:max` (a colon name, as Prometheus recording rules use, so it meets
/// no scraped metric).
pub const PROM_LIMIT_SUFFIX: &str = ":max";

macro_rules! resource_series {
    ($($variant:ident = $name:literal: $doc:literal,)*) => {
        /// A series written by one of loadlab's samplers; [`ResourceSeries::name`] is how
        /// the record file spells it ([`crate::SeriesInfo::name`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ResourceSeries {
            $(#[doc = $doc] $variant,)*
        }

        impl ResourceSeries {
            /// Every series, in the order `docs/MONITOR.md` lists them.
            pub const ALL: &[ResourceSeries] = &[$(ResourceSeries::$variant,)*];

            /// The name as stored in the record file, e.g. `host.cpu_percent`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(ResourceSeries::$variant => $name,)*
                }
            }

            /// The series a stored name stands for; `None` for names our samplers do not
            /// write (Prometheus metrics, a newer loadlab's series).
            pub fn from_name(name: &str) -> Option<ResourceSeries> {
                match name {
                    $($name => Some(ResourceSeries::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

resource_series! {
    HostCpuPercent = "host.cpu_percent": "Busy CPU, percent of the host (`cpu=all`) or of one core (`cpu=N`).",
    HostCpuIowaitPercent = "host.cpu_iowait_percent": "CPU waiting for I/O, percent of the host.",
    HostCpuStealPercent = "host.cpu_steal_percent": "CPU taken by the hypervisor, percent of the host.",
    HostMemoryTotalBytes = "host.memory_total_bytes": "Physical memory, bytes.",
    HostMemoryAvailableBytes = "host.memory_available_bytes": "Memory available without swapping, bytes.",
    HostMemoryUsedBytes = "host.memory_used_bytes": "Memory in use (total - available), bytes.",
    HostSwapUsedBytes = "host.swap_used_bytes": "Swap in use, bytes.",
    HostSwapOutBytesPerSec = "host.swap_out_bytes_per_sec": "Memory written out to swap per second (`pswpout` pages), bytes/s.",
    HostNetRxBytesPerSec = "host.net_rx_bytes_per_sec": "Bytes received per second, per `interface`.",
    HostNetTxBytesPerSec = "host.net_tx_bytes_per_sec": "Bytes sent per second, per `interface`.",
    HostNetSpeedBytesPerSec = "host.net_speed_bytes_per_sec": "An `interface`'s link speed as its driver states it (`/sys/class/net/IF/speed`), bytes/s; none for loopback and links that state none.",
    HostNetRxPacketsPerSec = "host.net_rx_packets_per_sec": "Packets received per second, per `interface`.",
    HostNetTxPacketsPerSec = "host.net_tx_packets_per_sec": "Packets sent per second, per `interface`.",
    HostTcpEstablished = "host.tcp_established": "TCP connections established or in close_wait (the kernel's `CurrEstab`), count.",
    HostTcpTimeWait = "host.tcp_time_wait": "TCP sockets in time_wait, count.",
    HostTcpSockets = "host.tcp_sockets": "TCP sockets counted one by one, per `state`, count.",
    HostSocketsUsed = "host.sockets_used": "Sockets of every kind in use, count.",
    HostTcpOrphans = "host.tcp_orphans": "TCP sockets no process holds any more, count.",
    HostUdpSockets = "host.udp_sockets": "UDP sockets in use, count.",
    HostTcpMemoryBytes = "host.tcp_memory_bytes": "Memory the kernel holds for TCP buffers, bytes.",
    HostTcpSegmentsSentPerSec = "host.tcp_segments_sent_per_sec": "TCP segments sent per second (`OutSegs`), what retransmits are a share of.",
    HostTcpRetransmitsPerSec = "host.tcp_retransmits_per_sec": "TCP segments retransmitted per second.",
    HostTcpResetsSentPerSec = "host.tcp_resets_sent_per_sec": "TCP resets sent per second.",
    HostTcpConnectFailuresPerSec = "host.tcp_connect_failures_per_sec": "Failed TCP connection attempts per second.",
    HostTcpListenOverflowsPerSec = "host.tcp_listen_overflows_per_sec": "Connections dropped because a listen queue was full, per second.",
    HostTcpListenDropsPerSec = "host.tcp_listen_drops_per_sec": "Connections dropped at a listening socket for any reason, per second.",
    HostFdsOpen = "host.fds_open": "File descriptors open on the host, count.",
    HostFdsMax = "host.fds_max": "The host's file descriptor limit, count.",
    HostLoad1 = "host.load1": "Load average over one minute.",
    HostEphemeralPorts = "host.ephemeral_ports": "Ports in the host's ephemeral range (`ip_local_port_range`), count: what TIME_WAIT sockets use up.",
    ProcessCpuPercent = "process.cpu_percent": "A process group's CPU, percent of one core (above 100 on several).",
    ProcessCpuLimitPercent = "process.cpu_limit_percent": "The CPU a group may use, percent of one core: the CPUs its members' affinity allows, capped by their cgroup's quota.",
    ProcessRssBytes = "process.rss_bytes": "A process group's resident memory, shared pages counted once, bytes.",
    ProcessMemoryLimitBytes = "process.memory_limit_bytes": "The memory limit of the group's cgroup (`memory.max`, `memory.limit_in_bytes`), bytes; none when unlimited.",
    ProcessCount = "process.count": "Processes in the group, count.",
    ProcessThreads = "process.threads": "Threads of the group, count.",
    ProcessFds = "process.fds": "File descriptors the group holds, count.",
    ProcessSockets = "process.sockets": "File descriptors of the group that are sockets, count.",
    ProcessFdLimit = "process.fd_limit": "The soft fd limit of the member closest to it, count.",
    ProcessFdUsePercent = "process.fd_use_percent": "That member's use of its fd limit, percent.",
    LogLinesPerSec = "log.lines_per_sec": "Lines a followed log or command wrote per second, per `pattern` (`all` for every line).",
    LogExample = "log.example": "A distinct line matching `pattern` (its text in `line`), 1 when first seen; the first few per pattern.",
    PostgresConnections = "postgres.connections": "Backends of a `database`, less the sampler's own, count.",
    PostgresMaxConnections = "postgres.max_connections": "The server's `max_connections`, count.",
    PostgresTransactionsPerSec = "postgres.transactions_per_sec": "Commits and rollbacks of a `database` per second, less the sampler's own.",
    PostgresRollbacksPerSec = "postgres.rollbacks_per_sec": "Rollbacks of a `database` per second.",
    PostgresBusyConnections = "postgres.busy_connections": "Connections of a `database` in a statement or a transaction, on average over the interval (`active_time + idle_in_transaction_time` per second; PostgreSQL 14 on), count.",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_read_back() {
        for &series in ResourceSeries::ALL {
            assert_eq!(ResourceSeries::from_name(series.name()), Some(series));
        }
        assert_eq!(ResourceSeries::from_name("nginx_connections_active"), None);
    }
}
