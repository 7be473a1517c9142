//! `printPod`: READY, STATUS, RESTARTS, AGE and the wide columns, from a
//! typed view that reads only the fields it needs (a pod's JSON is parsed
//! without building a value tree: tables of 50,000 pods are common).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::super::{Cell, Row};
use crate::time::{parse_time, since};

type Str<'a> = Cow<'a, str>;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Pod<'a> {
    #[serde(borrow)]
    metadata: Meta<'a>,
    #[serde(borrow)]
    spec: Spec<'a>,
    #[serde(borrow)]
    status: Status<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    creation_timestamp: Option<Str<'a>>,
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Spec<'a> {
    /// `null` in the kind's empty object (a bookmark's): no `omitempty`.
    containers: Option<Vec<IgnoredAny>>,
    #[serde(borrow)]
    init_containers: Vec<Container<'a>>,
    #[serde(borrow)]
    node_name: Str<'a>,
    #[serde(borrow)]
    readiness_gates: Vec<Gate<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Container<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    restart_policy: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Gate<'a> {
    #[serde(borrow)]
    condition_type: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Status<'a> {
    #[serde(borrow)]
    phase: Str<'a>,
    #[serde(borrow)]
    reason: Str<'a>,
    #[serde(borrow)]
    conditions: Vec<Condition<'a>>,
    #[serde(borrow)]
    init_container_statuses: Vec<ContainerStatus<'a>>,
    #[serde(borrow)]
    container_statuses: Vec<ContainerStatus<'a>>,
    #[serde(borrow, rename = "podIPs")]
    pod_ips: Vec<PodIp<'a>>,
    #[serde(borrow)]
    nominated_node_name: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Condition<'a> {
    #[serde(borrow, rename = "type")]
    typ: Str<'a>,
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(borrow)]
    reason: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PodIp<'a> {
    #[serde(borrow)]
    ip: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ContainerStatus<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    restart_count: i64,
    ready: bool,
    started: Option<bool>,
    #[serde(borrow)]
    state: State<'a>,
    #[serde(borrow)]
    last_state: State<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct State<'a> {
    #[serde(borrow)]
    waiting: Option<Waiting<'a>>,
    running: Option<IgnoredAny>,
    #[serde(borrow)]
    terminated: Option<Terminated<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Waiting<'a> {
    #[serde(borrow)]
    reason: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Terminated<'a> {
    #[serde(borrow)]
    reason: Str<'a>,
    exit_code: i64,
    signal: i64,
    #[serde(borrow)]
    finished_at: Option<Str<'a>>,
}

const SUCCEEDED: &str = r#"[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}]"#;
const FAILED: &str = r#"[{"type":"Completed","status":"True","reason":"Failed","message":"The pod failed."}]"#;

/// The latest `lastState.terminated.finishedAt` seen: Unix seconds and text.
#[derive(Default)]
struct LastRestart<'a>(Option<(i64, &'a str)>);

impl<'a> LastRestart<'a> {
    fn see(&mut self, status: &'a ContainerStatus<'_>) {
        let Some(at) = status.last_state.terminated.as_ref().and_then(|t| t.finished_at.as_deref()) else { return };
        let Some(t) = parse_time(at) else { return };
        if self.0.is_none_or(|(seen, _)| seen < t) {
            self.0 = Some((t, at));
        }
    }
}

impl Status<'_> {
    fn condition_true(&self, typ: &str) -> bool {
        self.conditions.iter().any(|c| c.typ == typ && c.status == "True")
    }
}

/// The row of a pod's JSON at `now`.
pub(super) fn row(bytes: &[u8], now: i64) -> Option<Row> {
    let pod: Pod<'_> = serde_json::from_slice(bytes).ok()?;
    let (spec, status) = (&pod.spec, &pod.status);
    let phase = status.phase.as_ref();
    let mut reason = if status.reason.is_empty() { phase.to_string() } else { status.reason.to_string() };
    if status.conditions.iter().any(|c| c.typ == "PodScheduled" && c.reason == "SchedulingGated") {
        reason = "SchedulingGated".into();
    }
    let conditions = match phase {
        "Succeeded" => Some(SUCCEEDED),
        "Failed" => Some(FAILED),
        _ => None,
    };
    let restartable = |name: &str| spec.init_containers.iter().any(|c| c.name == name && c.restart_policy == "Always");
    let total = spec.containers.as_ref().map_or(0, Vec::len) + spec.init_containers.iter().filter(|c| c.restart_policy == "Always").count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut last_restart = LastRestart::default();
    let mut last_restartable_restart = LastRestart::default();
    let mut initializing = false;
    for (i, c) in status.init_container_statuses.iter().enumerate() {
        restarts += c.restart_count;
        last_restart.see(c);
        let is_restartable = restartable(&c.name);
        if is_restartable {
            restartable_restarts += c.restart_count;
            last_restartable_restart.see(c);
        }
        let terminated = c.state.terminated.as_ref();
        let waiting_reason = c.state.waiting.as_ref().map_or("", |w| w.reason.as_ref());
        if terminated.is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        if is_restartable && c.started == Some(true) {
            if c.ready {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(t) if t.reason.is_empty() && t.signal != 0 => format!("Init:Signal:{}", t.signal),
            Some(t) if t.reason.is_empty() => format!("Init:ExitCode:{}", t.exit_code),
            Some(t) => format!("Init:{}", t.reason),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => format!("Init:{waiting_reason}"),
            None => format!("Init:{i}/{}", spec.init_containers.len()),
        };
        initializing = true;
        break;
    }
    if !initializing || status.condition_true("Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in status.container_statuses.iter().rev() {
            restarts += c.restart_count;
            last_restart.see(c);
            let waiting_reason = c.state.waiting.as_ref().map_or("", |w| w.reason.as_ref());
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = &c.state.terminated {
                reason = match t.reason.as_ref() {
                    "" if t.signal != 0 => format!("Signal:{}", t.signal),
                    "" => format!("ExitCode:{}", t.exit_code),
                    r => r.to_string(),
                };
            } else if c.ready && c.state.running.is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if status.condition_true("Ready") { "Running" } else { "NotReady" }.into();
        }
    }
    let deleting = pod.metadata.deletion_timestamp.is_some();
    if deleting && status.reason == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts_cell = match last_restart.0 {
        Some((_, at)) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(at), now)),
        _ => restarts.to_string(),
    };
    let or_none = |s: &str| if s.is_empty() { "<none>".to_string() } else { s.to_string() };
    let readiness_gates = if spec.readiness_gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = spec
            .readiness_gates
            .iter()
            .filter(|g| status.conditions.iter().find(|c| c.typ == g.condition_type).is_some_and(|c| c.status == "True"))
            .count();
        format!("{met}/{}", spec.readiness_gates.len())
    };
    Some(Row {
        cells: vec![
            Cell::Str(pod.metadata.name.to_string()),
            Cell::Str(format!("{ready}/{total}")),
            Cell::Str(reason),
            Cell::Str(restarts_cell),
            Cell::Str(since(pod.metadata.creation_timestamp.as_deref(), now)),
            Cell::Str(or_none(status.pod_ips.first().map_or("", |ip| ip.ip.as_ref()))),
            Cell::Str(or_none(&spec.node_name)),
            Cell::Str(or_none(&status.nominated_node_name)),
            Cell::Str(readiness_gates),
        ],
        conditions,
    })
}
