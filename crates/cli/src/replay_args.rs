//! `attack`'s replay flags (`-replay`, `-replay-shape` and what shapes them), as a
//! flag group of their own: `workload::ReplayFields`, the same table a scenario
//! file's `[scenario.replay]` holds.

use workload::ReplayFields;

/// Replay access logs (docs/REPLAY.md).
#[derive(clap::Args, Debug, Default, Clone)]
#[command(next_help_heading = "Replay")]
pub struct ReplayArgs {
    /// Replay an access log: each logged request is sent at its logged time (open
    /// model, latency from then), onto -base-url; repeatable (logs of several hosts
    /// merge by time); gzipped logs are read as they are
    #[arg(long, value_name = "FILE")]
    replay: Vec<String>,
    /// Take only the log's shape (requests per second over time) as the schedule of
    /// the attack's own targets (or a scenario's flow starts)
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    replay_shape: Vec<String>,
    /// The log's format: auto, nginx, apache-common, apache-combined, alb, elb,
    /// cloudfront, json, vegeta-json, vegeta-csv, har [default: auto]
    #[arg(long, value_name = "FORMAT")]
    log_format: Option<String>,
    /// The nginx log_format the log was written with, e.g.
    /// '$remote_addr [$time_local] "$request" $status $request_time'
    #[arg(long, value_name = "STRING")]
    nginx_log_format: Option<String>,
    /// JSON lines: which keys hold what, e.g. time=ts,method=verb,url=path,status=code,latency=dur_ms:ms
    #[arg(long, value_name = "MAP")]
    log_fields: Option<String>,
    /// How much faster than logged: 2 replays an hour in 30 minutes [default: 1]
    #[arg(long, value_name = "X")]
    speed: Option<f64>,
    /// Replay from this time: RFC 3339, 24/Nov/2026:10:00:00 +0000, or +5m after the
    /// log's first request
    #[arg(long, value_name = "TIME")]
    from: Option<String>,
    /// Replay up to this time (same forms as -from)
    #[arg(long, value_name = "TIME")]
    to: Option<String>,
    /// Replay the log again from its start until -duration
    #[arg(long = "loop", action = clap::ArgAction::SetTrue)]
    repeat: bool,
    /// Only requests whose path and query match this regex
    #[arg(long, value_name = "REGEX")]
    replay_path: Option<String>,
    /// Only these methods (comma-separated)
    #[arg(long, value_name = "METHODS", value_delimiter = ',')]
    replay_method: Vec<String>,
    /// Only requests logged with these statuses or classes, e.g. 2xx,404
    #[arg(long, value_name = "STATUSES", value_delimiter = ',')]
    replay_status: Vec<String>,
    /// Only requests to these hosts, e.g. shop.example.com,*.api.example.com
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    replay_host: Vec<String>,
    /// How far out of time order log lines may be (logs are written at completion):
    /// lines are put back in order within it [default: 10s]
    #[arg(long, value_name = "DURATION")]
    reorder_window: Option<String>,
}

impl ReplayArgs {
    /// The replay these flags ask for, if any.
    pub fn fields(&self) -> Option<ReplayFields> {
        let shape_only = !self.replay_shape.is_empty();
        if self.replay.is_empty() && !shape_only {
            return None;
        }
        Some(ReplayFields {
            files: if shape_only {
                self.replay_shape.clone()
            } else {
                self.replay.clone()
            },
            shape_only: Some(shape_only),
            log_format: self.log_format.clone(),
            nginx_log_format: self.nginx_log_format.clone(),
            log_fields: self.log_fields.clone(),
            speed: self.speed,
            from: self.from.clone(),
            to: self.to.clone(),
            repeat: Some(self.repeat),
            path: self.replay_path.clone(),
            methods: self.replay_method.clone(),
            statuses: self.replay_status.clone(),
            hosts: self.replay_host.clone(),
            reorder_window: self.reorder_window.clone(),
            // -base-url is the attack's own flag.
            base_url: None,
        })
    }

    /// The flags given that only mean something with -replay or -replay-shape.
    pub fn stray_flags(&self) -> Vec<&'static str> {
        let given = [
            ("-log-format", self.log_format.is_some()),
            ("-nginx-log-format", self.nginx_log_format.is_some()),
            ("-log-fields", self.log_fields.is_some()),
            ("-speed", self.speed.is_some()),
            ("-from", self.from.is_some()),
            ("-to", self.to.is_some()),
            ("-loop", self.repeat),
            ("-replay-path", self.replay_path.is_some()),
            ("-replay-method", !self.replay_method.is_empty()),
            ("-replay-status", !self.replay_status.is_empty()),
            ("-replay-host", !self.replay_host.is_empty()),
            ("-reorder-window", self.reorder_window.is_some()),
        ];
        given
            .iter()
            .filter(|(_, set)| *set)
            .map(|(flag, _)| *flag)
            .collect()
    }
}
