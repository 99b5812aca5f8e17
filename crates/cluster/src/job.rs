//! [`ShardJob`] -> the Kubernetes objects of one sharded run: an Indexed Job of N pods
//! (one shard each, `-shard $(JOB_COMPLETION_INDEX)/N`, all starting at one
//! `-start-at`), and a ConfigMap holding the targets file when there is one.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, PodAffinityTerm, PodAntiAffinity, PodSpec, PodTemplateSpec,
    Probe, ResourceRequirements, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The port each shard pod serves its records on, once its attack is over; with the
/// node's network, shard I serves on `RECORDS_PORT + I` ([`records_port`]).
pub const RECORDS_PORT: u16 = 8099;
/// Where the targets file is mounted in each pod.
pub const TARGETS_MOUNT: &str = "/etc/loadlab";
/// The label every object of one run carries (its value: the run's name).
pub const RUN_LABEL: &str = "loadlab.dev/run";
/// The annotation the Job controller sets to a pod's index.
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Where a pod writes its records.
const RECORDS_PATH: &str = "/tmp/records.llr";

/// One sharded run, as `loadlab kube` was asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardJob {
    /// The Job's name (a DNS label: lowercase letters, digits and `-`).
    pub name: String,
    /// Where the objects go.
    pub namespace: String,
    /// The container image holding the static `loadlab` binary at `/loadlab`.
    pub image: String,
    /// N: pods, each sending 1/N of the load.
    pub shards: u32,
    /// The attack's own flags (rate, duration, ...), without -shard, -start-at,
    /// -output or -targets, which this job sets.
    pub attack_args: Vec<String>,
    /// The targets file's text, shipped in a ConfigMap; `None` when the attack
    /// args name targets another way (a scenario file baked into the image).
    pub targets: Option<String>,
    /// A scenarios file's text (`attack -scenarios`), shipped in the same ConfigMap;
    /// the files it names must be in the image.
    pub scenarios: Option<String>,
    /// When every shard starts (RFC 3339, UTC).
    pub start_at: String,
    /// CPU asked and allowed per pod (`1`, `500m`); `None` leaves it to the cluster.
    pub cpu: Option<String>,
    /// Memory asked and allowed per pod (`512Mi`).
    pub memory: Option<String>,
    /// The pods use the node's network (`hostNetwork: true`), so they reach a target on
    /// the node's loopback; shards on one node then serve on distinct ports.
    pub host_network: bool,
    /// The container's `imagePullPolicy` (`Never`, `IfNotPresent`, `Always`); `None`
    /// leaves Kubernetes' default.
    pub pull_policy: Option<String>,
}

/// The port shard `index` serves its records on: [`RECORDS_PORT`], plus the index when
/// the shards share the node's network (several may run on one node).
pub fn records_port(index: u32, host_network: bool) -> u16 {
    let offset = if host_network {
        u16::try_from(index).unwrap_or(u16::MAX)
    } else {
        0
    };
    RECORDS_PORT.saturating_add(offset)
}

impl ShardJob {
    /// The Job and, with targets, their ConfigMap.
    pub fn render(&self) -> (Job, Option<ConfigMap>) {
        let files: BTreeMap<String, String> = [
            ("targets.txt", &self.targets),
            ("scenarios.toml", &self.scenarios),
        ]
        .into_iter()
        .filter_map(|(name, text)| Some((name.to_owned(), text.clone()?)))
        .collect();
        let config_map = (!files.is_empty()).then(|| ConfigMap {
            metadata: self.metadata(&self.config_map_name()),
            data: Some(files),
            ..ConfigMap::default()
        });
        let job = Job {
            metadata: self.metadata(&self.name),
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".to_owned()),
                completions: Some(self.shards as i32),
                parallelism: Some(self.shards as i32),
                // A shard that fails is a missing share, reported as such: rerunning
                // it later would send its load at another time. Per index, so that one
                // failed shard does not fail the Job (which would stop the others).
                backoff_limit_per_index: Some(0),
                ttl_seconds_after_finished: Some(3600),
                template: self.pod_template(),
                ..JobSpec::default()
            }),
            ..Job::default()
        };
        (job, config_map)
    }

    /// The ConfigMap's name.
    pub fn config_map_name(&self) -> String {
        format!("{}-targets", self.name)
    }

    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(RUN_LABEL.to_owned(), self.name.clone())])
    }

    fn metadata(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels()),
            ..ObjectMeta::default()
        }
    }

    fn pod_template(&self) -> PodTemplateSpec {
        let shipped = self.targets.is_some() || self.scenarios.is_some();
        let (volumes, mounts) = match shipped {
            true => (
                Some(vec![Volume {
                    name: "targets".to_owned(),
                    config_map: Some(ConfigMapVolumeSource {
                        name: self.config_map_name(),
                        ..ConfigMapVolumeSource::default()
                    }),
                    ..Volume::default()
                }]),
                Some(vec![VolumeMount {
                    name: "targets".to_owned(),
                    mount_path: TARGETS_MOUNT.to_owned(),
                    read_only: Some(true),
                    ..VolumeMount::default()
                }]),
            ),
            false => (None, None),
        };
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(self.labels()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".to_owned()),
                affinity: Some(self.spread()),
                host_network: self.host_network.then_some(true),
                // With the node's network, cluster DNS still resolves names.
                dns_policy: self
                    .host_network
                    .then(|| "ClusterFirstWithHostNet".to_owned()),
                containers: vec![Container {
                    volume_mounts: mounts,
                    ..self.container()
                }],
                volumes,
                ..PodSpec::default()
            }),
        }
    }

    /// Shards prefer distinct nodes: two generators on one node share its CPU and NIC.
    /// Preferred, not required, so a run of more shards than nodes still schedules.
    fn spread(&self) -> Affinity {
        Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(LabelSelector {
                                match_labels: Some(self.labels()),
                                ..LabelSelector::default()
                            }),
                            topology_key: "kubernetes.io/hostname".to_owned(),
                            ..PodAffinityTerm::default()
                        },
                    },
                ]),
                ..PodAntiAffinity::default()
            }),
            ..Affinity::default()
        }
    }

    fn container(&self) -> Container {
        Container {
            name: "loadlab".to_owned(),
            image: Some(self.image.clone()),
            image_pull_policy: self.pull_policy.clone(),
            command: Some(vec!["/loadlab".to_owned()]),
            args: Some(self.shard_args()),
            // The index as an env var, so that `$(JOB_COMPLETION_INDEX)` in the args
            // expands on every Kubernetes version that runs Indexed Jobs.
            env: Some(vec![EnvVar {
                name: "JOB_COMPLETION_INDEX".to_owned(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                        ..ObjectFieldSelector::default()
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            }]),
            // With the node's network each shard's port differs (one template for all
            // pods), so neither the port nor a probe on it can be declared: `run` asks
            // each running shard's /ready through the pod proxy instead.
            ports: (!self.host_network).then(|| {
                vec![ContainerPort {
                    name: Some("records".to_owned()),
                    container_port: i32::from(RECORDS_PORT),
                    ..ContainerPort::default()
                }]
            }),
            // Ready once the attack is over and its records can be fetched.
            readiness_probe: (!self.host_network).then(|| Probe {
                http_get: Some(HTTPGetAction {
                    path: Some("/ready".to_owned()),
                    port: IntOrString::Int(i32::from(RECORDS_PORT)),
                    ..HTTPGetAction::default()
                }),
                period_seconds: Some(2),
                ..Probe::default()
            }),
            resources: self.resources(),
            ..Container::default()
        }
    }

    /// `kube shard` serves the records after the attack; the attack gets its share.
    fn shard_args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "kube",
            "shard",
            "-serve",
            &format!("0.0.0.0:{RECORDS_PORT}"),
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        if self.host_network {
            args.push("-port-per-index".to_owned());
        }
        args.push("--".to_owned());
        args.extend(self.attack_args.iter().cloned());
        if self.targets.is_some() {
            args.extend([
                "-targets".to_owned(),
                format!("{TARGETS_MOUNT}/targets.txt"),
            ]);
        }
        if self.scenarios.is_some() {
            args.extend([
                "-scenarios".to_owned(),
                format!("{TARGETS_MOUNT}/scenarios.toml"),
            ]);
        }
        args.extend([
            "-shard".to_owned(),
            format!("$(JOB_COMPLETION_INDEX)/{}", self.shards),
            "-start-at".to_owned(),
            self.start_at.clone(),
            "-output".to_owned(),
            RECORDS_PATH.to_owned(),
            "-quiet".to_owned(),
        ]);
        args
    }

    /// Requests equal limits: a generator throttled below what it asked for would
    /// report its own lag as the server's latency.
    fn resources(&self) -> Option<ResourceRequirements> {
        let amounts: BTreeMap<String, Quantity> = [("cpu", &self.cpu), ("memory", &self.memory)]
            .into_iter()
            .filter_map(|(name, amount)| {
                amount
                    .as_ref()
                    .map(|amount| (name.to_owned(), Quantity(amount.clone())))
            })
            .collect();
        (!amounts.is_empty()).then(|| ResourceRequirements {
            requests: Some(amounts.clone()),
            limits: Some(amounts),
            ..ResourceRequirements::default()
        })
    }
}

/// Why a Job name is not a DNS label Kubernetes accepts, if it is not.
pub fn check_name(name: &str) -> Result<(), String> {
    let valid_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if name.is_empty() || name.len() > 52 {
        Err(format!("{name:?}: 1 to 52 characters (pods add a suffix)"))
    } else if !valid_chars || name.starts_with('-') || name.ends_with('-') {
        Err(format!(
            "{name:?}: lowercase letters, digits and '-' only, not at either end"
        ))
    } else {
        Ok(())
    }
}
