//! Deprecation warnings: the `Warning: 299 - "…"` header kube-apiserver
//! adds to every request of a deprecated resource — a built-in kind its
//! lifecycle marks deprecated (`installer.go`, `deprecation.WarningMessage`)
//! or a custom resource version its CRD marks `deprecated`
//! (`customresource_handler.go`, `defaultDeprecationWarning`).
//!
//! Invariants: the texts are the apiserver's byte for byte (captured in
//! `tests/reference/apiserver-1.36/encodings/endpoints/*.meta` and the
//! `gizmos` CRD's `v1beta1`); a header value is `net.NewWarningHeader`'s.

use std::cmp::Ordering;

use serde::Deserialize;

/// The built-in resources kube-apiserver 1.36 serves by default (and can
/// watch) that it warns about: group-version, plural, text.
const BUILT_IN: &[(&str, &str, &str)] =
    &[("v1", "endpoints", "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")];

/// The warning of built-in `plural` in `group`/`version`, if deprecated.
pub fn built_in(group: &str, version: &str, plural: &str) -> Option<&'static str> {
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    BUILT_IN.iter().find(|(g, p, _)| *g == gv && *p == plural).map(|(_, _, text)| *text)
}

#[derive(Deserialize)]
struct Crd {
    spec: CrdSpec,
}

#[derive(Deserialize)]
struct CrdSpec {
    group: String,
    names: CrdNames,
    #[serde(default)]
    versions: Vec<CrdVersion>,
}

#[derive(Deserialize)]
struct CrdNames {
    kind: String,
}

#[derive(Deserialize)]
struct CrdVersion {
    name: String,
    #[serde(default)]
    served: bool,
    #[serde(default)]
    deprecated: bool,
    #[serde(rename = "deprecationWarning")]
    deprecation_warning: Option<String>,
}

/// The warning of version `version` of the custom resource whose CRD is
/// `crd` (its JSON), if that version is deprecated: its own
/// `deprecationWarning`, else `GROUP/VERSION KIND is deprecated` and the
/// newest served version that is not (`; use GROUP/V KIND`).
pub fn custom(crd: &[u8], version: &str) -> Option<String> {
    let crd: Crd = serde_json::from_slice(crd).ok()?;
    let s = &crd.spec;
    let v = s.versions.iter().find(|v| v.name == version && v.deprecated)?;
    if let Some(w) = &v.deprecation_warning {
        return Some(w.clone());
    }
    let mut msg = format!("{}/{} {} is deprecated", s.group, version, s.names.kind);
    let newer = s.versions.iter().filter(|o| o.served && !o.deprecated && compare(version, &o.name) == Ordering::Less);
    if let Some(best) = newer.max_by(|a, b| compare(&a.name, &b.name)) {
        msg.push_str(&format!("; use {}/{} {}", s.group, best.name, s.names.kind));
    }
    Some(msg)
}

/// A `Warning` header's value for `text`: `299 - "text"`, `"` and `\` escaped (`net.NewWarningHeader`).
pub fn header(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("299 - \"");
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `version.CompareKubeAwareVersionStrings`: GA above beta above alpha,
/// then by major, then by minor; versions not of that form below them, in
/// reverse lexical order.
fn compare(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => b.cmp(a),
    }
}

/// `^v(\d+)(?:(alpha|beta)(\d+))?$` as (stability, major, minor).
fn kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let major: u64 = rest[..digits].parse().ok()?;
    let number = |m: &str| m.bytes().all(|c| c.is_ascii_digit()).then(|| m.parse().ok()).flatten();
    match &rest[digits..] {
        "" => Some((2, major, 0)),
        tail => match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
            (Some(m), _) => Some((1, major, number(m)?)),
            (_, Some(m)) => Some((0, major, number(m)?)),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_warnings_are_the_apiservers() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/reference/apiserver-1.36/encodings/endpoints/list.json.meta");
        let meta = std::fs::read_to_string(path).unwrap();
        let captured = meta.lines().find_map(|l| l.strip_prefix("< Warning: ")).expect("the endpoints list's warning");
        assert_eq!(header(built_in("", "v1", "endpoints").unwrap()), captured);
        assert_eq!(built_in("", "v1", "pods"), None);
        // The captured CRD (its version's own warning) and the warning its lists carried (the capture's `index.json`).
        let tables = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/reference/apiserver-1.36/tables");
        let crds: serde_json::Value = serde_json::from_slice(
            &std::fs::read(format!("{tables}/customresourcedefinitions.apiextensions.k8s.io.v1/list.json")).unwrap(),
        )
        .unwrap();
        let gizmos = crds["items"].as_array().unwrap().iter().find(|c| c["metadata"]["name"] == "gizmos.tables.example.com").unwrap();
        let gizmos = serde_json::to_vec(gizmos).unwrap();
        assert_eq!(custom(&gizmos, "v1beta1").as_deref(), Some("tables.example.com/v1beta1 Gizmo is deprecated; use v1"));
        // Without one: `defaultDeprecationWarning`, naming the newest served version that is not deprecated.
        let plain = br#"{"spec":{"group":"g.example.com","names":{"kind":"K"},"versions":[
            {"name":"v1beta1","served":true,"deprecated":true},{"name":"v1","served":true},{"name":"v2alpha1","served":true}]}}"#;
        assert_eq!(custom(plain, "v1beta1").as_deref(), Some("g.example.com/v1beta1 K is deprecated; use g.example.com/v1 K"));
        let gizmos = &gizmos[..];
        assert_eq!(custom(gizmos, "v1"), None);
        let own = br#"{"spec":{"group":"g","names":{"kind":"K"},"versions":[{"name":"v1","deprecated":true,"deprecationWarning":"say \"no\""}]}}"#;
        assert_eq!(header(&custom(own, "v1").unwrap()), r#"299 - "say \"no\"""#);
    }

    #[test]
    fn versions_compare_as_kubernetes_compares_them() {
        let mut v = vec!["v1alpha1", "foo", "v2", "v1beta2", "v1", "v10", "v1beta10", "bar", "v11alpha2"];
        v.sort_by(|a, b| compare(b, a));
        assert_eq!(v, ["v10", "v2", "v1", "v1beta10", "v1beta2", "v11alpha2", "v1alpha1", "bar", "foo"]);
    }
}
