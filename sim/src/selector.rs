//! Placeholder selector parsing, replaced by the full apimachinery-compatible module.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<(String, String, Vec<String>)>,
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some((k, v)) = part.split_once("!=") {
                reqs.push((k.trim().into(), "!=".into(), vec![v.trim().into()]));
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                if v.starts_with('=') {
                    return Err("unable to parse requirement: found '=', expected: identifier".into());
                }
                reqs.push((k.trim().into(), "=".into(), vec![v.trim().into()]));
            } else if let Some(k) = part.strip_prefix('!') {
                reqs.push((k.trim().into(), "!".into(), vec![]));
            } else {
                reqs.push((part.into(), "exists".into(), vec![]));
            }
        }
        Ok(Self { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.reqs.iter().all(|(k, op, vs)| match op.as_str() {
            "=" => labels.get(k) == vs.first(),
            "!=" => labels.get(k) != vs.first(),
            "!" => !labels.contains_key(k),
            _ => labels.contains_key(k),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut requirements = Vec::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (field, op, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, FieldOp::NotEquals, v)
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (k, FieldOp::Equals, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'"));
            };
            requirements.push(FieldRequirement { field: field.into(), op, value: value.into() });
        }
        Ok(Self { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, value_of: impl Fn(&str) -> String) -> bool {
        self.requirements.iter().all(|r| (value_of(&r.field) == r.value) == (r.op == FieldOp::Equals))
    }
}
