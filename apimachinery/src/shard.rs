//! Shard selectors (KEP-5866, feature gate `ShardedListAndWatch`, alpha in
//! 1.36): `shardSelector=shardRange(object.metadata.uid, '0x…', '0x…')`,
//! ranges joined by `||`, selecting the objects whose field hashes (64-bit
//! FNV-1a, as 16 lower-case hex digits) into `[start, end)` of any range.
//!
//! The apiserver parses the selector as CEL and walks the tree
//! (`apiserver/pkg/sharding/parser.go`). [`ShardSelector::parse`] reads the
//! subset of CEL such selectors are written in — calls, field paths, string
//! and integer literals, `||`, parentheses — and gives the apiserver's
//! message for every selector of that subset it refuses, in its order. Any
//! other text is [`ShardError::Beyond`]: CEL would give it its own parse
//! error (or, for CEL this module does not read, perhaps accept it), which
//! only the apiserver can word, so a server that cannot word it must not
//! answer it (kache passes it through).
//!
//! The apiserver answers a refused selector with a 500 `Status` without a
//! reason, message `invalid shard selector: …` ([`ShardError::status`]),
//! on lists and watches; an empty `shardSelector` parameter is ignored.
//! [`ShardSelector::info`] is the selector as `metadata.shardInfo.selector`
//! echoes it: re-written canonically (`Selector.String()`).

use crate::gostr::quote;
use crate::status::ApiError;

/// The fields a shard selector may hash.
const FIELDS: [&str; 2] = ["object.metadata.uid", "object.metadata.namespace"];

/// The exclusive end of the hash space, the one 17-digit bound allowed.
const TWO_TO_THE_64: &str = "0x10000000000000000";

/// A parsed, valid shard selector: one field and its ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSelector {
    field: ShardField,
    ranges: Vec<Range>,
}

/// The object field a selector hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardField {
    /// `object.metadata.uid`.
    Uid,
    /// `object.metadata.namespace`.
    Namespace,
}

/// One `shardRange`: `[start, end)` over the hash, with the bounds as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Range {
    start: u128,
    end: u128,
    text: (String, String),
}

/// Why a selector is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The apiserver's refusal, its message after `invalid shard selector: `.
    #[error("invalid shard selector: {0}")]
    Invalid(String),
    /// Text outside the CEL subset this module reads: only the apiserver's CEL parser can answer it.
    #[error("a shard selector beyond the CEL subset read here")]
    Beyond,
}

impl ShardError {
    /// The apiserver's `Status` for a refused selector: 500, no reason.
    /// `None` for [`ShardError::Beyond`], whose wording only the apiserver knows.
    pub fn status(&self) -> Option<ApiError> {
        match self {
            ShardError::Invalid(_) => Some(ApiError::without_reason(500, self.to_string())),
            ShardError::Beyond => None,
        }
    }
}

/// The 64-bit FNV-1a hash of `value` (Go's `hash/fnv` `New64a`).
pub fn fnv1a64(value: &[u8]) -> u64 {
    value.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl ShardSelector {
    /// Parses a `shardSelector` value (the caller ignores an empty parameter, as the apiserver does).
    pub fn parse(text: &str) -> Result<ShardSelector, ShardError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(invalid("empty shard selector is not allowed; omit the parameter for unfiltered lists".into()));
        }
        let expr = Parser { rest: text }.whole()?;
        let mut ranges = Vec::new();
        walk(&expr, &mut ranges)?;
        let field = ranges[0].0;
        if let Some((other, _)) = ranges.iter().find(|(f, _)| *f != field) {
            return Err(invalid(format!(
                "all shard ranges must use the same field, got {} and {}",
                quote(field_name(field)),
                quote(field_name(*other))
            )));
        }
        Ok(ShardSelector { field, ranges: ranges.into_iter().map(|(_, r)| r).collect() })
    }

    /// Whether an object whose hashed field is `value` is in the shard.
    pub fn matches(&self, value: &str) -> bool {
        let hash = u128::from(fnv1a64(value.as_bytes()));
        self.ranges.iter().any(|r| r.start <= hash && hash < r.end)
    }

    #[cfg(test)]
    fn matches_hash(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.start <= u128::from(hash) && u128::from(hash) < r.end)
    }

    /// Whether an object with this uid and namespace is in the shard.
    pub fn selects(&self, uid: &str, namespace: &str) -> bool {
        self.matches(match self.field {
            ShardField::Uid => uid,
            ShardField::Namespace => namespace,
        })
    }

    /// `metadata.shardInfo.selector`: the selector as the apiserver re-writes it.
    pub fn info(&self) -> String {
        let field = field_name(self.field);
        let parts: Vec<String> = self.ranges.iter().map(|r| format!("shardRange({field}, '{}', '{}')", r.text.0, r.text.1)).collect();
        parts.join(" || ")
    }
}

fn field_name(f: ShardField) -> &'static str {
    match f {
        ShardField::Uid => FIELDS[0],
        ShardField::Namespace => FIELDS[1],
    }
}

fn invalid(message: String) -> ShardError {
    ShardError::Invalid(message)
}

/// An expression of the CEL subset, as the apiserver's walk sees it.
#[derive(Debug)]
enum Expr {
    /// `f(args…)`, or `a || b` as the call `_||_`.
    Call(String, Vec<Expr>),
    /// An identifier or a select chain (`object.metadata.uid`).
    Path(String),
    /// A string literal.
    Str(String),
    /// An integer literal.
    Int,
}

impl Expr {
    /// The kind's number in cel-go's `ast.ExprKind`, as the apiserver prints it.
    fn kind(&self) -> u8 {
        match self {
            Expr::Call(..) => 1,
            Expr::Path(p) if p.contains('.') => 7,
            Expr::Path(_) => 3,
            Expr::Str(_) | Expr::Int => 5,
        }
    }
}

/// `walkExpr`: the ranges of `||`-joined `shardRange` calls, left to right.
fn walk(e: &Expr, out: &mut Vec<(ShardField, Range)>) -> Result<(), ShardError> {
    match e {
        Expr::Call(f, args) if f == "_||_" => args.iter().try_for_each(|a| walk(a, out)),
        Expr::Call(f, args) if f == "shardRange" => {
            out.push(shard_range(args)?);
            Ok(())
        }
        Expr::Call(f, _) => Err(invalid(format!("unsupported function {}; only shardRange() and || are allowed", quote(f)))),
        other => Err(invalid(format!("unexpected expression kind {}; expected shardRange() call or || operator", other.kind()))),
    }
}

/// `parseShardRangeCall`.
fn shard_range(args: &[Expr]) -> Result<(ShardField, Range), ShardError> {
    let [field, start, end] = args else {
        return Err(invalid(format!("shardRange() requires exactly 3 arguments, got {}", args.len())));
    };
    let Expr::Path(path) = field else {
        return Err(invalid(format!(
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), got expression kind {}",
            field.kind()
        )));
    };
    let field = match path.as_str() {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        _ => {
            return Err(invalid(format!(
                "unsupported field path {}; supported: object.metadata.uid, object.metadata.namespace",
                quote(path)
            )));
        }
    };
    let (start_text, start) = hex_literal(start, "hexStart")?;
    let (end_text, end) = hex_literal(end, "hexEnd")?;
    if start >= end {
        return Err(invalid(format!("shard range start {start_text} must be less than end {end_text}")));
    }
    Ok((field, Range { start, end, text: (start_text, end_text) }))
}

/// `extractHexLiteral`: a bound and its value.
fn hex_literal(e: &Expr, name: &str) -> Result<(String, u128), ShardError> {
    let s = match e {
        Expr::Str(s) => s,
        Expr::Int => return Err(invalid(format!("{name} must be a string literal, got int64"))),
        other => {
            return Err(invalid(format!("{name} must be a string literal (e.g. '0xff'), got expression kind {}", other.kind())));
        }
    };
    let Some(hex) = s.strip_prefix("0x") else { return Err(invalid(format!("{name} must have '0x' prefix, got {}", quote(s)))) };
    if hex.is_empty() {
        return Err(invalid(format!("{name}: hex value is required after '0x'")));
    }
    if hex.len() > 17 {
        return Err(invalid(format!("{name}: hex value too long ({} chars, max 17): {}", hex.len(), quote(hex))));
    }
    if let Some(c) = hex.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(invalid(format!("{name}: invalid hex character {} in {}", quote(&c.to_string()), quote(s))));
    }
    if hex.len() == 17 && s != TWO_TO_THE_64 {
        return Err(invalid(format!("{name}: 17-digit hex value must be '{TWO_TO_THE_64}' (2^64), got {}", quote(s))));
    }
    if hex.len() < 16 {
        let padded = format!("0x{}{hex}", "0".repeat(16 - hex.len()));
        return Err(invalid(format!(
            "{name} must be a 0x-prefixed 16-digit hex value, got {} (did you mean {}?)",
            quote(s),
            quote(&padded)
        )));
    }
    let value = u128::from_str_radix(hex, 16).expect("checked hex digits");
    Ok((s.clone(), value))
}

/// A recursive-descent reader of the CEL subset; anything else is [`ShardError::Beyond`].
struct Parser<'a> {
    rest: &'a str,
}

impl Parser<'_> {
    fn whole(mut self) -> Result<Expr, ShardError> {
        let e = self.or()?;
        self.skip_space();
        if self.rest.is_empty() { Ok(e) } else { Err(ShardError::Beyond) }
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t', '\n', '\r']);
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn or(&mut self) -> Result<Expr, ShardError> {
        let mut left = self.primary()?;
        while self.eat("||") {
            let right = self.primary()?;
            left = Expr::Call("_||_".into(), vec![left, right]);
        }
        Ok(left)
    }

    fn primary(&mut self) -> Result<Expr, ShardError> {
        self.skip_space();
        if self.eat("(") {
            let e = self.or()?;
            return if self.eat(")") { Ok(e) } else { Err(ShardError::Beyond) };
        }
        if let Some(q @ ('\'' | '"')) = self.rest.chars().next() {
            let body = &self.rest[1..];
            let end = body.find([q, '\\', '\n']).ok_or(ShardError::Beyond)?;
            if !body[end..].starts_with(q) {
                return Err(ShardError::Beyond);
            }
            self.rest = &body[end + 1..];
            return Ok(Expr::Str(body[..end].to_owned()));
        }
        let digits = self.rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let after = self.rest.as_bytes().get(digits);
            // Floats, unsigned and hex integers are CEL this reader leaves to the apiserver.
            if after.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'.' || *b == b'_') || self.rest.starts_with("0x") {
                return Err(ShardError::Beyond);
            }
            self.rest = &self.rest[digits..];
            return Ok(Expr::Int);
        }
        let mut path = self.ident()?;
        while self.eat(".") {
            path.push('.');
            path.push_str(&self.ident()?);
        }
        if !self.eat("(") {
            return Ok(Expr::Path(path));
        }
        if path.contains('.') {
            // A receiver call (`a.f(…)`): CEL this reader leaves to the apiserver.
            return Err(ShardError::Beyond);
        }
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.or()?);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(ShardError::Beyond);
                }
            }
        }
        Ok(Expr::Call(path, args))
    }

    fn ident(&mut self) -> Result<String, ShardError> {
        self.skip_space();
        let len = self.rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        let ident = &self.rest[..len];
        // CEL's reserved words and literals are not identifiers.
        if len == 0 || ident.as_bytes()[0].is_ascii_digit() || matches!(ident, "true" | "false" | "null" | "in") {
            return Err(ShardError::Beyond);
        }
        self.rest = &self.rest[len..];
        Ok(ident.to_owned())
    }
}

#[cfg(test)]
mod tests;
