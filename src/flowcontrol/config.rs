//! One digested configuration and the classification of a request by it,
//! ported from `apf_controller.go`: the FlowSchemas that name an existing
//! level, in matching order — `matchingPrecedence`, then name
//! (`FlowSchemaSequence`) — with the mandatory `exempt` first and
//! `catch-all` last when the cluster lacks them (`digestFlowSchemasLocked`);
//! the first that matches a request (`startRequest`) gives its level, and
//! — for a level of more than one queue — its flow: the schema's name and
//! the user's name (`ByUser`) or the request's namespace (`ByNamespace`),
//! hashed as `hashFlowID` hashes them.
//!
//! Invariant: a configuration is immutable; a new one replaces it whole.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::auth::{Attributes, UserInfo};

use super::level::Level;
use super::objects::{FlowSchema, PriorityLevel, Queues};
use super::rule::matches_flow_schema;

/// A FlowSchema as the classifier uses it.
#[derive(Debug)]
pub struct Schema {
    pub name: Arc<str>,
    pub uid: String,
    pub object: FlowSchema,
}

/// A level as one configuration has it: its lasting state and its object.
#[derive(Debug, Clone)]
pub struct LevelRef {
    pub state: Arc<Level>,
    pub object: Arc<PriorityLevel>,
}

/// A digested configuration.
#[derive(Debug, Default)]
pub struct Config {
    /// In matching order; the last is `catch-all`.
    pub schemas: Vec<Arc<Schema>>,
    pub levels: HashMap<String, LevelRef>,
}

/// What a request was classified as.
#[derive(Debug, Clone)]
pub struct Classified {
    pub schema: Arc<Schema>,
    pub level: LevelRef,
    /// The flow's hash (0 when the level has no more than one queue).
    pub hash: u64,
}

impl Classified {
    /// Whether its level is exempt from limits.
    pub fn exempt(&self) -> bool {
        self.level.object.is_exempt()
    }
}

/// `FlowSchemaSequence`'s order.
pub fn sort(schemas: &mut [Arc<Schema>]) {
    schemas.sort_by(|a, b| (a.object.spec.matching_precedence, &a.name).cmp(&(b.object.spec.matching_precedence, &b.name)));
}

impl Config {
    /// `startRequest`'s classification: the first schema that matches (the
    /// catch-all should none), its level, and the flow's hash.
    pub fn classify(&self, user: &UserInfo, request: &Attributes) -> Option<Classified> {
        let schema = self
            .schemas
            .iter()
            .find(|fs| matches_flow_schema(user, request, &fs.object))
            .or_else(|| self.schemas.iter().find(|fs| &*fs.name == "catch-all"))?
            .clone();
        let level = self.levels.get(&schema.object.spec.priority_level_configuration.name)?.clone();
        let queues = match level.object.queuing() {
            Some(Queues::Queue(q)) => q.queues,
            _ => 0,
        };
        let hash = match queues > 1 {
            true => {
                let distinguisher = match schema.object.spec.distinguisher_method.as_ref().map(|m| m.kind.as_str()) {
                    Some("ByUser") => user.name.as_str(),
                    Some("ByNamespace") => request.namespace.as_str(),
                    _ => "",
                };
                hash_flow(&schema.name, distinguisher)
            }
            false => 0,
        };
        Some(Classified { schema, level, hash })
    }
}

/// `hashFlowID`: the first 8 bytes, little-endian, of SHA-256 of the schema's name, a zero byte and the distinguisher.
fn hash_flow(schema: &str, distinguisher: &str) -> u64 {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(schema.as_bytes());
    ctx.update(&[0]);
    ctx.update(distinguisher.as_bytes());
    let sum = ctx.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&sum.as_ref()[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_hash_as_the_apiserver_hashes_them() {
        // The first 8 bytes of sha256(b"global-default\x00alice"), little-endian (Python's hashlib).
        assert_eq!(hash_flow("global-default", "alice"), 0xf4de_3bd4_2ccd_f6b7);
        assert_ne!(hash_flow("global-default", "alice"), hash_flow("global-default", "bob"));
        assert_ne!(hash_flow("a", "bc"), hash_flow("ab", "c"), "the zero byte separates");
    }
}
