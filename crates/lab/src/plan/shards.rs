//! `[load] shards`, `via`, `start_delay` and `[load.kube]`: a plan whose steps each run
//! as N shards of one run ([`Sharding`]). Checked against the rest of the plan, since a
//! shard gets its step as a scenarios file and flags: what those cannot carry (a
//! targets file rebased onto a variant's `base_url`, a monitor) is refused here, with
//! its line, rather than lost at the first step.

use std::time::Duration;

use toml::Spanned;

use super::model::{KubeOptions, Load, Sharding, TargetSource, Variant, Via};
use super::syntax::{RawKube, RawLoad, Spot};
use crate::LabError;
use crate::sharded::{PLACEHOLDERS, run_flags};

/// The most shards a step may have (as `loadlab kube run -shards`).
const MAX_SHARDS: i64 = 1000;
/// Local children start in well under a second; two leave room for a busy machine.
const LOCAL_START_DELAY: Duration = Duration::from_secs(2);
/// A template may reach other machines (ssh, a copy of the scenarios file first).
const TEMPLATE_START_DELAY: Duration = Duration::from_secs(5);
/// `loadlab kube run`'s own default `-start-delay`.
const KUBE_START_DELAY: Duration = Duration::from_secs(60);

/// The placeholders a template must have: without `{index}` every shard would run the
/// same command (the same share, twice, which `report` refuses); without `{output}`
/// the step cannot find the shard's records; without `{start_at}` the shards would not
/// share a time zero, and the step's window would not be theirs.
const REQUIRED: [(&str, &str); 3] = [
    (
        "{output}",
        "a template must write each shard's records where {output} says",
    ),
    (
        "{index}",
        "every shard would run the same command: give -shard {index}/{count}",
    ),
    (
        "{start_at}",
        "the shards would not share a time zero: give -start-at {start_at}",
    ),
];

pub(super) fn sharding(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    load: &Load,
    variants: &[Variant],
) -> Result<Option<Sharding>, LabError> {
    let r = raw.get_ref();
    let count = match &r.shards {
        None => 1,
        Some(n) if (1..=MAX_SHARDS).contains(n.get_ref()) => *n.get_ref() as u32,
        Some(n) => {
            return Err(spot.err(
                n.span().start,
                "load.shards",
                format!(
                    "must be between 1 and {MAX_SHARDS} (1 runs each step in this process), got {}",
                    n.get_ref()
                ),
            ));
        }
    };
    if count == 1 {
        return only_with_shards(spot, r).map(|()| None);
    }
    let via = via(spot, r)?;
    let start_delay = start_delay(spot, r, &via)?;
    check_carried(spot, raw, load, variants, &via)?;
    Ok(Some(Sharding {
        count,
        via,
        start_delay,
        line: r.shards.as_ref().map_or(0, |n| spot.line(n.span().start)),
    }))
}

/// `via`, `start_delay` and `[load.kube]` say how shards run: without shards they
/// would be silently ignored.
fn only_with_shards(spot: &Spot<'_>, r: &RawLoad) -> Result<(), LabError> {
    let given = [
        ("load.via", r.via.as_ref().map(|v| v.span().start)),
        (
            "load.start_delay",
            r.start_delay.as_ref().map(|v| v.span().start),
        ),
        ("load.kube", r.kube.as_ref().map(|v| v.span().start)),
    ];
    match given.into_iter().find_map(|(f, at)| Some((f, at?))) {
        Some((field, at)) => Err(spot.err(
            at,
            field,
            "says how shards run: give load.shards = 2 or more (without it each step runs in this process)",
        )),
        None => Ok(()),
    }
}

fn via(spot: &Spot<'_>, r: &RawLoad) -> Result<Via, LabError> {
    let text = r.via.as_ref().map_or("local", |v| v.get_ref().as_str());
    let at = r.via.as_ref().map_or(0, |v| v.span().start);
    let via = match text.trim() {
        "local" => Via::Local,
        "kube" => Via::Kube(kube(spot, r.kube.as_ref(), at)?),
        _ => Via::Template(template(spot, text, at)?),
    };
    if let (Some(table), false) = (&r.kube, matches!(via, Via::Kube(_))) {
        return Err(spot.err(
            table.span().start,
            "load.kube",
            "is for via = \"kube\": give that, or leave [load.kube] out",
        ));
    }
    Ok(via)
}

/// A command template: one of its placeholders per shard-specific value, and no
/// unknown `{word}` (a typo would reach the shell as it is).
fn template(spot: &Spot<'_>, text: &str, at: usize) -> Result<String, LabError> {
    let looks_like_a_word = !text.trim().contains(char::is_whitespace);
    if looks_like_a_word && !text.contains('{') {
        return Err(spot.err(
            at,
            "load.via",
            format!(
                "{text:?}: want \"local\", \"kube\" or a command template with {{index}}, {{start_at}} and {{output}}"
            ),
        ));
    }
    if let Some((name, why)) = REQUIRED.iter().find(|(p, _)| !text.contains(p)) {
        return Err(spot.err(at, "load.via", format!("the template has no {name}: {why}")));
    }
    if let Some(unknown) = unknown_placeholder(text) {
        return Err(spot.err(
            at,
            "load.via",
            format!(
                "unknown placeholder {unknown} (known: {}); a shell's ${{VAR}} is left alone",
                PLACEHOLDERS.join(", ")
            ),
        ));
    }
    Ok(text.to_owned())
}

/// The first `{word}` that is not a placeholder and not a shell's `${word}`.
fn unknown_placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    let mut before = ' ';
    while let Some(open) = rest.find('{') {
        let prior = rest[..open].chars().last().unwrap_or(before);
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let word = &after[..close];
        let is_word = !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        let named = format!("{{{word}}}");
        if is_word && prior != '$' && !PLACEHOLDERS.contains(&named.as_str()) {
            return Some(named);
        }
        before = '{';
        rest = after;
    }
    None
}

fn kube(
    spot: &Spot<'_>,
    raw: Option<&Spanned<RawKube>>,
    via_at: usize,
) -> Result<KubeOptions, LabError> {
    let missing = |at| {
        spot.err(
            at,
            "load.kube.image",
            "via = \"kube\" needs [load.kube] with image = \"...\" (the loadlab image the pods run)",
        )
    };
    let Some(table) = raw else {
        return Err(missing(via_at));
    };
    let k = table.get_ref();
    let image = match &k.image {
        Some(image) if !image.get_ref().trim().is_empty() => image.get_ref().trim().to_owned(),
        Some(image) => return Err(missing(image.span().start)),
        None => return Err(missing(table.span().start)),
    };
    Ok(KubeOptions {
        image,
        namespace: k.namespace.clone(),
        host_network: k.host_network.unwrap_or(false),
        pull: k.pull.clone(),
        cpu: k.cpu.clone(),
        memory: k.memory.clone(),
        start_delay: k
            .start_delay
            .as_ref()
            .map(|d| spot.duration(d, "load.kube.start_delay"))
            .transpose()?,
    })
}

fn start_delay(spot: &Spot<'_>, r: &RawLoad, via: &Via) -> Result<Duration, LabError> {
    let given = r
        .start_delay
        .as_ref()
        .map(|d| spot.duration(d, "load.start_delay"))
        .transpose()?;
    match via {
        Via::Local => Ok(given.unwrap_or(LOCAL_START_DELAY)),
        Via::Template(_) => Ok(given.unwrap_or(TEMPLATE_START_DELAY)),
        Via::Kube(kube) => match (given, kube.start_delay) {
            (Some(_), Some(_)) => Err(spot.err(
                r.start_delay.as_ref().map_or(0, |d| d.span().start),
                "load.start_delay",
                "give it once: [load.kube] start_delay is the same (kube run's -start-delay)",
            )),
            (one, other) => Ok(one.or(other).unwrap_or(KUBE_START_DELAY)),
        },
    }
}

/// What a shard's scenarios file and flags cannot carry.
fn check_carried(
    spot: &Spot<'_>,
    raw: &Spanned<RawLoad>,
    load: &Load,
    variants: &[Variant],
    via: &Via,
) -> Result<(), LabError> {
    let key_line = |key: &str| spot.key_line(raw.span(), key);
    if !load.settings.monitor.is_empty() {
        return Err(spot.err_at_line(
            key_line("monitor"),
            "load.monitor",
            "not sampled in sharded steps yet: drop it, or run with shards = 1",
        ));
    }
    if let Some(v) = variants.iter().find(|v| !v.monitor.is_empty()) {
        return Err(spot.err_at_line(
            v.line,
            "variant.monitor",
            format!(
                "variant {:?}: not sampled in sharded steps yet: drop it, or run with shards = 1",
                v.name
            ),
        ));
    }
    let files_rebased = load.attack.targets_file.is_some()
        || load
            .scenarios
            .iter()
            .any(|s| s.attack.targets_file.is_some());
    if let Some(v) = variants
        .iter()
        .find(|v| matches!(v.targets, TargetSource::Rebased(_)) && files_rebased)
    {
        return Err(spot.err_at_line(
            v.line,
            "variant.base_url",
            format!(
                "variant {:?} rebases a targets_file, which a shard's scenarios file cannot say: give [load] targets inline (targets = [...]), or the variant its own targets_file",
                v.name
            ),
        ));
    }
    if let Via::Template(template) = via
        && !template.contains("{flags}")
    {
        let flags = run_flags(&load.run, &load.attack_origin);
        if let Some(flag) = flags.first() {
            return Err(spot.err(
                raw.get_ref().via.as_ref().map_or(0, |v| v.span().start),
                "load.via",
                format!(
                    "[load] sets run-wide keys that shards take as flags ({flag} ...): put {{flags}} in the template"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_placeholders_are_found_and_shell_variables_left_alone() {
        let rows = [
            ("ssh g{index} x {output} {start_at}", None),
            ("echo ${HOME} {index}", None),
            ("echo {idx}", Some("{idx}")),
            ("awk '{print $1}' {index}", None),
            ("echo {index} {outptu}", Some("{outptu}")),
            ("echo {", None),
        ];
        for (text, want) in rows {
            assert_eq!(unknown_placeholder(text).as_deref(), want, "{text}");
        }
    }
}
