//! The configuration objects as the classifier reads them: FlowSchemas and
//! PriorityLevelConfigurations of `flowcontrol.apiserver.k8s.io/v1`
//! (`k8s.io/api/flowcontrol/v1/types.go`), with the v1 defaults applied
//! (`pkg/apis/flowcontrol/v1/defaults.go`) to whatever a writer left out.
//!
//! Invariant: an object that does not read as its kind is no object (the
//! apiserver's validation keeps such objects out; kache never guesses one).

use serde::Deserialize;

/// What the classifier needs of an object's metadata.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
}

/// A FlowSchema.
#[derive(Debug, Clone, Deserialize)]
pub struct FlowSchema {
    #[serde(default)]
    pub metadata: Meta,
    pub spec: FlowSchemaSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowSchemaSpec {
    pub priority_level_configuration: Reference,
    /// Defaulted to 1000 when 0 or absent.
    #[serde(default)]
    pub matching_precedence: i32,
    #[serde(default)]
    pub distinguisher_method: Option<Distinguisher>,
    #[serde(default)]
    pub rules: Vec<PolicyRulesWithSubjects>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Reference {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Distinguisher {
    /// `ByUser` or `ByNamespace`.
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRulesWithSubjects {
    #[serde(default)]
    pub subjects: Vec<Subject>,
    #[serde(default)]
    pub resource_rules: Vec<ResourcePolicyRule>,
    #[serde(default)]
    pub non_resource_rules: Vec<NonResourcePolicyRule>,
}

/// A user, group or ServiceAccount, by `kind`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    pub kind: String,
    #[serde(default)]
    pub user: Option<Named>,
    #[serde(default)]
    pub group: Option<Named>,
    #[serde(default)]
    pub service_account: Option<ServiceAccount>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Named {
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServiceAccount {
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcePolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub api_groups: Vec<String>,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub cluster_scope: bool,
    #[serde(default)]
    pub namespaces: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NonResourcePolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

/// A PriorityLevelConfiguration.
#[derive(Debug, Clone, Deserialize)]
pub struct PriorityLevel {
    #[serde(default)]
    pub metadata: Meta,
    pub spec: PriorityLevelSpec,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PriorityLevelSpec {
    /// `Exempt` or `Limited`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub limited: Option<Limited>,
    #[serde(default)]
    pub exempt: Option<Exempt>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limited {
    /// Defaulted to 30.
    #[serde(default)]
    pub nominal_concurrency_shares: Option<u32>,
    #[serde(default)]
    pub limit_response: LimitResponse,
    /// Defaulted to 0.
    #[serde(default)]
    pub lendable_percent: Option<u32>,
    /// Unset: borrow without limit.
    #[serde(default)]
    pub borrowing_limit_percent: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exempt {
    #[serde(default)]
    pub nominal_concurrency_shares: Option<u32>,
    #[serde(default)]
    pub lendable_percent: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LimitResponse {
    /// `Queue` or `Reject`.
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub queuing: Option<Queuing>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Queuing {
    #[serde(default)]
    pub queues: u32,
    #[serde(default)]
    pub hand_size: u32,
    #[serde(default)]
    pub queue_length_limit: u32,
}

impl FlowSchema {
    /// Reads one, defaulted as v1 defaults it.
    pub fn read(bytes: &[u8]) -> Option<FlowSchema> {
        let mut fs: FlowSchema = serde_json::from_slice(bytes).ok()?;
        if fs.spec.matching_precedence == 0 {
            fs.spec.matching_precedence = 1000;
        }
        Some(fs)
    }
}

impl PriorityLevel {
    /// Reads one, defaulted as v1 defaults it.
    pub fn read(bytes: &[u8]) -> Option<PriorityLevel> {
        let mut pl: PriorityLevel = serde_json::from_slice(bytes).ok()?;
        if let Some(l) = &mut pl.spec.limited {
            l.nominal_concurrency_shares.get_or_insert(30);
            l.lendable_percent.get_or_insert(0);
            if let Some(q) = &mut l.limit_response.queuing {
                let or = |v: &mut u32, d| *v = if *v == 0 { d } else { *v };
                or(&mut q.hand_size, 8);
                or(&mut q.queues, 64);
                or(&mut q.queue_length_limit, 50);
            }
        }
        if let Some(e) = &mut pl.spec.exempt {
            e.nominal_concurrency_shares.get_or_insert(0);
            e.lendable_percent.get_or_insert(0);
        }
        Some(pl)
    }

    /// Whether it is the exempt kind.
    pub(crate) fn is_exempt(&self) -> bool {
        self.spec.kind == "Exempt"
    }

    /// `(nominalConcurrencyShares, lendablePercent, borrowingLimitPercent)`
    /// (`plSpecCommons`): an exempt level borrows nothing.
    pub(crate) fn commons(&self) -> (u32, u32, Option<u32>) {
        match (&self.spec.limited, &self.spec.exempt) {
            (Some(l), _) => (l.nominal_concurrency_shares.unwrap_or(30), l.lendable_percent.unwrap_or(0), l.borrowing_limit_percent),
            (None, Some(e)) => (e.nominal_concurrency_shares.unwrap_or(0), e.lendable_percent.unwrap_or(0), None),
            (None, None) => (0, 0, None),
        }
    }

    /// How its requests wait, when they may (`queueSetCompleterForPL`);
    /// `None` for a spec whose unions are broken, which the apiserver ignores.
    pub fn queuing(&self) -> Option<Queues> {
        let limited = self.spec.kind == "Limited";
        if limited != self.spec.limited.is_some() || self.is_exempt() != self.spec.exempt.is_some() {
            return None;
        }
        // A level does not switch between exempt and not: only `exempt` is.
        if self.is_exempt() != (self.metadata.name == "exempt") || !(limited || self.is_exempt()) {
            return None;
        }
        let Some(l) = &self.spec.limited else { return Some(Queues::Exempt) };
        match (l.limit_response.kind.as_str(), l.limit_response.queuing) {
            ("Reject", None) => Some(Queues::Reject),
            ("Queue", Some(q)) => Some(Queues::Queue(q)),
            _ => None,
        }
    }
}

/// A level's limit response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queues {
    /// Never limited.
    Exempt,
    /// Over its limit a request is rejected at once.
    Reject,
    /// Over its limit a request waits in one of its queues.
    Queue(Queuing),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_defaults_fill_what_a_writer_left_out() {
        let pl = PriorityLevel::read(
            br#"{"metadata":{"name":"p","uid":"u"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{}}}}}"#,
        )
        .unwrap();
        assert_eq!(pl.commons(), (30, 0, None));
        let q = Queuing { queues: 64, hand_size: 8, queue_length_limit: 50 };
        assert_eq!(pl.queuing(), Some(Queues::Queue(q)));
        let fs = FlowSchema::read(br#"{"metadata":{"name":"f"},"spec":{"priorityLevelConfiguration":{"name":"p"}}}"#).unwrap();
        assert_eq!(fs.spec.matching_precedence, 1000);
        assert!(FlowSchema::read(br#"{"metadata":{"name":"f"}}"#).is_none(), "no spec is no FlowSchema");
    }

    #[test]
    fn broken_unions_are_refused_as_the_apiserver_ignores_them() {
        let read = |s: &str| PriorityLevel::read(s.as_bytes()).unwrap().queuing();
        assert_eq!(read(r#"{"metadata":{"name":"p"},"spec":{"type":"Limited"}}"#), None);
        assert_eq!(read(r#"{"metadata":{"name":"p"},"spec":{"type":"Exempt","exempt":{}}}"#), None, "only `exempt` is exempt");
        assert_eq!(
            read(r#"{"metadata":{"name":"p"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject","queuing":{}}}}}"#),
            None
        );
        assert_eq!(read(r#"{"metadata":{"name":"exempt"},"spec":{"type":"Exempt","exempt":{}}}"#), Some(Queues::Exempt));
    }
}
