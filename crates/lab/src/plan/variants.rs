//! `[[variant]]`: the systems compared, their targets and their hooks.

use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::model::{Load, Ready, ReadyProbe, TargetSource, Variant};
use super::syntax::{RawReady, RawVariant, Spot};
use crate::LabError;

const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_READY_INTERVAL: Duration = Duration::from_millis(200);

pub(super) fn variants(
    spot: &Spot<'_>,
    raw: Vec<Spanned<RawVariant>>,
    load: &Load,
) -> Result<Vec<Variant>, LabError> {
    if raw.is_empty() {
        return Err(spot.err(
            0,
            "variant",
            "no [[variant]] tables: name at least one system under test",
        ));
    }
    // A flow's steps (`[[load.step]]`) are targets too: variants may rebase them.
    let shared = load.attack.targets.is_some()
        || load.attack.targets_file.is_some()
        || load.attack.step.is_some();
    let mut out: Vec<Variant> = Vec::new();
    for spanned in raw {
        let at = spanned.span().start;
        let v = spanned.into_inner();
        let name = v.name.get_ref().trim().to_owned();
        let name_at = v.name.span().start;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(spot.err(
                name_at,
                "variant.name",
                format!("{name:?}: use letters, digits, '-', '_' or '.' (it names folders)"),
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(spot.err(name_at, "variant.name", format!("{name:?} is used twice")));
        }
        let targets = match (v.targets, v.targets_file, v.base_url) {
            (Some(t), None, None) if !t.is_empty() => TargetSource::Inline(t),
            (None, Some(file), None) => TargetSource::File(PathBuf::from(file)),
            (None, None, Some(url)) => {
                if !shared {
                    return Err(spot.err(
                        url.span().start,
                        "variant.base_url",
                        "rebases the plan's targets, but [load] has no targets or targets_file",
                    ));
                }
                let text = url.get_ref().trim_end_matches('/');
                if !(text.starts_with("http://") || text.starts_with("https://"))
                    || text.matches('/').count() > 2
                {
                    return Err(spot.err(
                        url.span().start,
                        "variant.base_url",
                        format!("{text:?}: want scheme://host:port, like http://127.0.0.1:8080"),
                    ));
                }
                TargetSource::Rebased(text.to_owned())
            }
            (None, None, None) if shared => TargetSource::Shared,
            (None, None, None) | (Some(_), None, None) => {
                return Err(spot.err(at, "variant.targets", format!("variant {name:?} has no targets: give targets, targets_file or base_url here, or targets in [load]")));
            }
            _ => {
                return Err(spot.err(
                    at,
                    "variant.targets",
                    "give one of targets, targets_file or base_url",
                ));
            }
        };
        let ready = v.ready.map(|r| ready(spot, &r)).transpose()?;
        out.push(Variant {
            name,
            line: spot.line(at),
            targets,
            setup: v.setup,
            ready,
            teardown: v.teardown,
            hook_timeout: spot.duration_or(
                v.hook_timeout.as_ref(),
                "variant.hook_timeout",
                DEFAULT_HOOK_TIMEOUT,
            )?,
            monitor: v.monitor.unwrap_or_default(),
        });
    }
    Ok(out)
}

fn ready(spot: &Spot<'_>, raw: &Spanned<RawReady>) -> Result<Ready, LabError> {
    let r = raw.get_ref();
    let probe = match (&r.url, &r.command) {
        (Some(url), None) if url.starts_with("http://") => ReadyProbe::Url(url.clone()),
        (Some(url), None) => {
            return Err(spot.err(
                raw.span().start,
                "variant.ready.url",
                format!("{url:?}: want an http:// URL"),
            ));
        }
        (None, Some(command)) => ReadyProbe::Command(command.clone()),
        _ => {
            return Err(spot.err(
                raw.span().start,
                "variant.ready",
                "give one of url or command",
            ));
        }
    };
    Ok(Ready {
        probe,
        timeout: spot.duration_or(
            r.timeout.as_ref(),
            "variant.ready.timeout",
            DEFAULT_READY_TIMEOUT,
        )?,
        interval: spot.duration_or(
            r.interval.as_ref(),
            "variant.ready.interval",
            DEFAULT_READY_INTERVAL,
        )?,
    })
}
