//! What starts each shard of a sharded step: [`ShardJob`] (one shard's index, time
//! zero and files) made into `loadlab attack` arguments ([`local_args`]), a command
//! template's text ([`fill_template`]) or one `loadlab kube run` for all of them
//! ([`kube_args`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::plan::KubeOptions;

/// Every placeholder a `via` template may use.
pub const PLACEHOLDERS: [&str; 7] = [
    "{index}",
    "{count}",
    "{start_at}",
    "{scenarios}",
    "{output}",
    "{exe}",
    "{flags}",
];

/// One shard of a step, as its command needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardJob {
    /// Its 0-based index.
    pub index: u32,
    /// The step's shard count.
    pub count: u32,
    /// The shards' common time zero, RFC 3339.
    pub start_at: String,
    /// The step's scenarios file.
    pub scenarios: PathBuf,
    /// Where this shard's record file must end up.
    pub output: PathBuf,
    /// This binary.
    pub exe: PathBuf,
    /// `[load]`'s run-wide flags (`-threads=2`, ...).
    pub flags: Vec<String>,
}

/// `loadlab attack` for one shard on this machine.
pub fn local_args(job: &ShardJob) -> Vec<String> {
    let mut args = vec![
        "attack".to_owned(),
        "-scenarios".to_owned(),
        job.scenarios.display().to_string(),
        "-shard".to_owned(),
        format!("{}/{}", job.index, job.count),
        "-start-at".to_owned(),
        job.start_at.clone(),
        "-output".to_owned(),
        job.output.display().to_string(),
        "-quiet".to_owned(),
    ];
    args.extend(job.flags.iter().cloned());
    args
}

/// The template with each placeholder replaced by the shard's value, quoted for `sh`
/// where it needs it (paths with spaces); other braces (`${VAR}`, `awk '{...}'`) are
/// left alone.
pub fn fill_template(template: &str, job: &ShardJob) -> String {
    let flags: Vec<String> = job.flags.iter().map(|f| quote(f)).collect();
    let values = [
        ("{index}", job.index.to_string()),
        ("{count}", job.count.to_string()),
        ("{start_at}", job.start_at.clone()),
        ("{scenarios}", quote(&job.scenarios.display().to_string())),
        ("{output}", quote(&job.output.display().to_string())),
        ("{exe}", quote(&job.exe.display().to_string())),
        ("{flags}", flags.join(" ")),
    ];
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    'text: while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        for (name, value) in &values {
            if let Some(after) = rest.strip_prefix(name) {
                out.push_str(value);
                rest = after;
                continue 'text;
            }
        }
        out.push('{');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

/// `text` as one `sh` word: as it is when it holds nothing `sh` treats specially,
/// else in single quotes.
pub fn quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `loadlab kube run` for every shard of the step: the records land in
/// `dir/shard-I.llr`; `deadline` bounds the shards' wait in the cluster.
pub fn kube_args(
    kube: &KubeOptions,
    count: u32,
    scenarios: &Path,
    dir: &Path,
    deadline: Duration,
    flags: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = ["kube", "run", "-shards"]
        .map(str::to_owned)
        .into_iter()
        .chain([count.to_string(), "-image".to_owned(), kube.image.clone()])
        .collect();
    let options = [
        ("-namespace", kube.namespace.clone()),
        ("-pull", kube.pull.clone()),
        ("-cpu", kube.cpu.clone()),
        ("-memory", kube.memory.clone()),
        ("-start-delay", kube.start_delay.map(go_duration)),
    ];
    for (flag, value) in options {
        if let Some(value) = value {
            args.extend([flag.to_owned(), value]);
        }
    }
    if kube.host_network {
        args.push("-host-network".to_owned());
    }
    args.extend([
        "-deadline".to_owned(),
        go_duration(deadline),
        "-scenarios".to_owned(),
        scenarios.display().to_string(),
        "-output".to_owned(),
        dir.display().to_string(),
    ]);
    if !flags.is_empty() {
        args.push("--".to_owned());
        args.extend(flags.iter().cloned());
    }
    args
}

/// A duration as every loadlab duration flag reads it (`90s`, `1m30s`).
fn go_duration(duration: Duration) -> String {
    units::GoDuration(duration).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(index: u32) -> ShardJob {
        ShardJob {
            index,
            count: 4,
            start_at: "2026-11-26T05:00:02Z".to_owned(),
            scenarios: PathBuf::from("/runs/p/steps/000-a-10/scenarios.toml"),
            output: PathBuf::from("/runs/p/steps/000-a-10/shard-1.llr"),
            exe: PathBuf::from("/usr/bin/loadlab"),
            flags: vec!["-threads=2".to_owned()],
        }
    }

    #[test]
    fn templates_get_each_shard_s_values() {
        let rows = [
            (
                "ssh gen{index} loadlab attack -scenarios {scenarios} -shard {index}/{count} -start-at {start_at} -quiet {flags} > {output}",
                "ssh gen1 loadlab attack -scenarios /runs/p/steps/000-a-10/scenarios.toml -shard 1/4 -start-at 2026-11-26T05:00:02Z -quiet -threads=2 > /runs/p/steps/000-a-10/shard-1.llr",
            ),
            (
                "{exe} attack -shard={index}/{count}",
                "/usr/bin/loadlab attack -shard=1/4",
            ),
            (
                "echo ${HOME} {index} {nope} awk '{print $1}' {",
                "echo ${HOME} 1 {nope} awk '{print $1}' {",
            ),
            ("{index}{index}", "11"),
        ];
        for (template, want) in rows {
            assert_eq!(fill_template(template, &job(1)), want, "{template}");
        }
        let mut spaced = job(0);
        spaced.output = PathBuf::from("/runs/my plan/shard-0.llr");
        assert_eq!(
            fill_template("x > {output}", &spaced),
            "x > '/runs/my plan/shard-0.llr'"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn local_shards_run_attack_with_their_share() {
        assert_eq!(
            local_args(&job(1)),
            [
                "attack",
                "-scenarios",
                "/runs/p/steps/000-a-10/scenarios.toml",
                "-shard",
                "1/4",
                "-start-at",
                "2026-11-26T05:00:02Z",
                "-output",
                "/runs/p/steps/000-a-10/shard-1.llr",
                "-quiet",
                "-threads=2",
            ]
        );
    }

    #[test]
    fn kube_runs_every_shard_with_its_options() {
        let dir = Path::new("/runs/p/steps/000-a-10");
        let scenarios = dir.join("scenarios.toml");
        let bare = KubeOptions {
            image: "registry.example/loadlab:0.1".to_owned(),
            ..KubeOptions::default()
        };
        let full = KubeOptions {
            namespace: Some("load".to_owned()),
            host_network: true,
            pull: Some("Never".to_owned()),
            cpu: Some("1".to_owned()),
            memory: Some("512Mi".to_owned()),
            start_delay: Some(Duration::from_secs(30)),
            ..bare.clone()
        };
        let rows: [(&KubeOptions, &[String], &str); 2] = [
            (
                &bare,
                &[],
                "kube run -shards 4 -image registry.example/loadlab:0.1 -deadline 5m0s -scenarios /runs/p/steps/000-a-10/scenarios.toml -output /runs/p/steps/000-a-10",
            ),
            (
                &full,
                &["-threads=2".to_owned()],
                "kube run -shards 4 -image registry.example/loadlab:0.1 -namespace load -pull Never -cpu 1 -memory 512Mi -start-delay 30s -host-network -deadline 5m0s -scenarios /runs/p/steps/000-a-10/scenarios.toml -output /runs/p/steps/000-a-10 -- -threads=2",
            ),
        ];
        for (kube, flags, want) in rows {
            let args = kube_args(kube, 4, &scenarios, dir, Duration::from_secs(300), flags);
            assert_eq!(args.join(" "), want);
        }
    }
}
