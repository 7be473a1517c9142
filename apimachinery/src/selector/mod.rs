//! Label and field selectors, parsed and matched exactly as apimachinery does
//! (`k8s.io/apimachinery/pkg/labels/selector.go` and `pkg/fields/selector.go`),
//! with the apiserver's error texts byte for byte.
//!
//! Invariants:
//! - `parse` never panics, whatever the input (NUL bytes, multi-byte UTF-8, …);
//!   its `Err` is the complete message of the apiserver's 400 `Status`.
//! - A parsed label selector holds its requirements sorted by key (stable), each
//!   requirement's values sorted and deduplicated (Go's `sets.String`), and every
//!   key and value valid; its `Display` is Go's `Selector.String()`.
//! - A parsed field selector holds its requirements in the order of the sorted raw
//!   terms; its `Display` is Go's `Selector.String()` (values re-escaped).
//! - Matching follows `Requirement.Matches`: `!=` and `notin` match an absent key,
//!   `>` / `<` match only a present label whose value parses as an `i64`; a field
//!   term compares the field's value (`""` when absent) with its value.
//!
//! Label selectors ([`LabelSelector`], `labels.Parse`): a byte-level port of
//! the Go lexer (`lexer`) and recursive-descent parser (`label`), with the
//! key and value validation texts of `labels.NewRequirement` (`content`).
//! Field selectors ([`FieldSelector`], `fields.ParseSelector`): `field`.

pub(crate) mod content;
mod field;
mod label;
mod lexer;
#[cfg(test)]
mod tests;

pub use content::InvalidValue;
pub use field::{FieldOp, FieldRequirement, FieldSelector, FieldSelectorError};
pub use label::{LabelSelector, LabelSelectorError, RequirementError};
