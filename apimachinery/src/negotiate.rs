//! Content negotiation as the apiserver does it: which representation a
//! request's `Accept` header gets (`NegotiateMediaTypeOptions` over
//! goautoneg's `ParseAccept`), whether its answer is indented, and whether
//! it may be gzipped.
//!
//! Guarantees: clauses are tried in goautoneg's order (higher `q` first,
//! then specific types before wildcards, otherwise as written; a `q=0`
//! clause is still tried, last); for each clause the endpoint's formats are
//! tried in its order; the first combination the endpoint allows wins. No
//! match is `None`, which the caller answers with [`ApiError::not_acceptable`].
//!
//! [`ApiError::not_acceptable`]: crate::status::ApiError::not_acceptable

/// A serialization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// `application/cbor`, behind the apiserver's `CBORServingAndStorage` gate.
    Cbor,
}

impl Format {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
            Format::Protobuf => "application/vnd.kubernetes.protobuf",
            Format::Cbor => "application/cbor",
        }
    }

    fn type_subtype(self) -> (&'static str, &'static str) {
        self.media_type().split_once('/').unwrap_or(("application", "json"))
    }
}

/// A conversion asked for with `as=`, `g=` and `v=` (e.g. a `Table`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversion {
    /// `as`: the kind, e.g. `Table` or `PartialObjectMetadataList`.
    pub kind: String,
    /// `g`: its group, e.g. `meta.k8s.io`.
    pub group: String,
    /// `v`: its version, e.g. `v1`.
    pub version: String,
}

impl Conversion {
    /// `Table`, `PartialObjectMetadata` or `PartialObjectMetadataList` of
    /// `meta.k8s.io` (`v1`, or `v1beta1` as older clients ask), if it is one.
    pub fn meta_kind(&self) -> Option<&str> {
        let meta = self.group == "meta.k8s.io" && (self.version == "v1" || self.version == "v1beta1");
        meta.then_some(self.kind.as_str())
    }
}

/// The representation negotiated for a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// The serialization.
    pub format: Format,
    /// The conversion asked for, if any.
    pub convert: Option<Conversion>,
    /// `pretty=1` in the media type.
    pub pretty: bool,
    /// `stream=…` (only `watch` is accepted).
    pub stream: Option<String>,
}

impl MediaType {
    /// Whether this is the object itself in plain JSON.
    pub fn is_plain_json(&self) -> bool {
        self.format == Format::Json && self.convert.is_none()
    }
}

/// What an endpoint can write (the apiserver's serializers and `EndpointRestrictions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// Serializations in preference order; the first answers a request without `Accept`.
    pub formats: &'static [Format],
    /// Serializations of an unconverted object (custom resources have no protobuf).
    pub plain: &'static [Format],
    /// Whether `Table` conversions are served.
    pub tables: bool,
    /// Whether `PartialObjectMetadata[List]` conversions are served.
    pub metadata: bool,
}

impl Endpoint {
    /// A built-in resource of kube-apiserver.
    pub const BUILTIN: Endpoint = Endpoint {
        formats: &[Format::Json, Format::Yaml, Format::Protobuf],
        plain: &[Format::Json, Format::Yaml, Format::Protobuf],
        tables: true,
        metadata: true,
    };
    /// A custom resource of kube-apiserver: no protobuf for the objects themselves.
    pub const CUSTOM: Endpoint = Endpoint {
        formats: &[Format::Json, Format::Yaml, Format::Protobuf],
        plain: &[Format::Json, Format::Yaml],
        tables: true,
        metadata: true,
    };

    /// A built-in resource of kube-apiserver with `CBORServingAndStorage` on.
    pub const BUILTIN_CBOR: Endpoint = Endpoint {
        formats: &[Format::Json, Format::Yaml, Format::Protobuf, Format::Cbor],
        plain: &[Format::Json, Format::Yaml, Format::Protobuf, Format::Cbor],
        tables: true,
        metadata: true,
    };
    /// A custom resource of kube-apiserver with `CBORServingAndStorage` on.
    pub const CUSTOM_CBOR: Endpoint = Endpoint {
        formats: &[Format::Json, Format::Yaml, Format::Protobuf, Format::Cbor],
        plain: &[Format::Json, Format::Yaml, Format::Cbor],
        tables: true,
        metadata: true,
    };

    /// This endpoint (`BUILTIN` or `CUSTOM`) as it is with or without CBOR.
    pub fn with_cbor(&self, cbor: bool) -> Endpoint {
        match (cbor, self.plain.contains(&Format::Protobuf)) {
            (false, true) => Endpoint::BUILTIN,
            (false, false) => Endpoint::CUSTOM,
            (true, true) => Endpoint::BUILTIN_CBOR,
            (true, false) => Endpoint::CUSTOM_CBOR,
        }
    }

    /// `AllowsMediaTypeTransform`: Tables only in JSON and YAML, metadata-only in any format.
    fn allows(&self, format: Format, convert: Option<&Conversion>) -> bool {
        match convert {
            None => self.plain.contains(&format),
            Some(c) => match c.meta_kind() {
                Some("Table") => self.tables && matches!(format, Format::Json | Format::Yaml),
                Some("PartialObjectMetadata" | "PartialObjectMetadataList") => self.metadata,
                _ => false,
            },
        }
    }
}

/// One clause of an `Accept` header.
#[derive(Debug, Clone)]
struct Clause<'a> {
    typ: &'a str,
    subtype: &'a str,
    q: f32,
    params: Vec<(&'a str, &'a str)>,
}

/// goautoneg's `ParseAccept`: clauses with their parameters, sorted by its
/// `Less` with Go's insertion sort (what `sort.Sort` runs on short slices).
fn parse_accept(header: &str) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    for part in header.split(',') {
        let part = part.trim_matches(' ');
        let mut mrp = part.split(';');
        let range = mrp.next().unwrap_or("");
        let sp: Vec<&str> = range.split('/').collect();
        let typ = sp[0].trim_matches(' ');
        let subtype = match sp.as_slice() {
            [_] if typ == "*" => "*",
            [_, sub] => sub.trim_matches(' '),
            _ => continue,
        };
        let mut clause = Clause { typ, subtype, q: 1.0, params: Vec::new() };
        for param in mrp {
            let Some((k, v)) = param.split_once('=') else { continue };
            let k = k.trim_matches(' ');
            if k == "q" {
                clause.q = v.parse().unwrap_or(0.0);
            } else {
                clause.params.push((k, v.trim_matches(' ')));
            }
        }
        out.push(clause);
    }
    let less = |a: &Clause<'_>, b: &Clause<'_>| a.q > b.q || (a.typ != "*" && b.typ == "*") || (a.subtype != "*" && b.subtype == "*");
    for i in 1..out.len() {
        let mut j = i;
        while j > 0 && less(&out[j], &out[j - 1]) {
            out.swap(j, j - 1);
            j -= 1;
        }
    }
    out
}

/// The representation `accept` gets from `endpoint`; `None` means 406.
pub fn negotiate(accept: Option<&str>, endpoint: &Endpoint) -> Option<MediaType> {
    let header = accept.unwrap_or("");
    if header.is_empty() {
        return endpoint.formats.first().map(|&format| MediaType { format, convert: None, pretty: false, stream: None });
    }
    for clause in parse_accept(header) {
        for &format in endpoint.formats {
            let (typ, subtype) = format.type_subtype();
            let matches =
                (clause.typ == typ && (clause.subtype == subtype || clause.subtype == "*")) || (clause.typ == "*" && clause.subtype == "*");
            if matches && let Some(m) = accept_options(&clause, format, endpoint) {
                return Some(m);
            }
        }
    }
    None
}

/// `acceptMediaTypeOptions`: the clause's parameters applied to `format`.
fn accept_options(clause: &Clause<'_>, format: Format, endpoint: &Endpoint) -> Option<MediaType> {
    let mut m = MediaType { format, convert: None, pretty: false, stream: None };
    for &(k, v) in &clause.params {
        match k {
            "as" => m.convert.get_or_insert_with(Conversion::default).kind = v.to_string(),
            "g" => m.convert.get_or_insert_with(Conversion::default).group = v.to_string(),
            "v" => m.convert.get_or_insert_with(Conversion::default).version = v.to_string(),
            "stream" if !v.is_empty() => {
                // JSON and protobuf have stream serializers; watch is the only stream schema.
                if format == Format::Yaml || v != "watch" {
                    return None;
                }
                m.stream = Some(v.to_string());
            }
            "pretty" => m.pretty = v == "1",
            _ => {}
        }
    }
    endpoint.allows(format, m.convert.as_ref()).then_some(m)
}

/// Whether the apiserver indents its JSON answer (`isPrettyPrint`): a
/// `pretty` query parameter decides when it is set and parses as a Go bool;
/// otherwise curl, Wget and browsers get indented JSON.
pub fn pretty(query: &str, user_agent: Option<&str>) -> bool {
    if let Some((_, v)) = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "pretty")
        && !v.is_empty()
    {
        return matches!(&*v, "1" | "t" | "T" | "TRUE" | "true" | "True");
    }
    user_agent.is_some_and(|ua| ["curl", "Wget", "Mozilla/5.0"].iter().any(|p| ua.starts_with(p)))
}

/// Whether `Accept-Encoding` names gzip.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|ae| ae.split(',').any(|t| t.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("gzip")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str =
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    fn pick(accept: &str, e: &Endpoint) -> Option<(Format, Option<String>)> {
        negotiate(Some(accept), e).map(|m| (m.format, m.convert.map(|c| c.kind)))
    }

    #[test]
    fn clauses_are_tried_by_weight_then_specificity_then_order() {
        let b = &Endpoint::BUILTIN;
        assert_eq!(pick("application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9", b), Some((Format::Protobuf, None)));
        assert_eq!(pick("application/vnd.kubernetes.protobuf, */*", b), Some((Format::Protobuf, None)));
        assert_eq!(pick("*/*", b), Some((Format::Json, None)));
        assert_eq!(pick("*/*;q=0.8, application/yaml", b), Some((Format::Yaml, None)));
        assert_eq!(pick("text/html, application/*", b), Some((Format::Json, None)));
        assert_eq!(pick("text/html", b), None);
        assert_eq!(pick("application/json;q=0", b), Some((Format::Json, None)), "q=0 is still acceptable to goautoneg");
        assert_eq!(negotiate(None, b).map(|m| m.format), Some(Format::Json));
    }

    #[test]
    fn conversions_follow_the_endpoint_restrictions() {
        let b = &Endpoint::BUILTIN;
        assert_eq!(pick(KUBECTL_GET, b), Some((Format::Json, Some("Table".into()))));
        assert_eq!(pick("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", b), None, "no protobuf tables");
        assert_eq!(
            pick("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", b),
            Some((Format::Protobuf, Some("PartialObjectMetadataList".into())))
        );
        assert_eq!(pick("application/json;as=Widget;g=example.com;v=v1", b), None);
        assert_eq!(pick("application/vnd.kubernetes.protobuf", &Endpoint::CUSTOM), None, "custom resources have no protobuf");
        let json_only = Endpoint { formats: &[Format::Json], plain: &[Format::Json], tables: false, metadata: false };
        assert_eq!(pick(KUBECTL_GET, &json_only), Some((Format::Json, None)));
        assert_eq!(pick("application/json;stream=watch", b).map(|p| p.0), Some(Format::Json));
        assert_eq!(pick("application/yaml;stream=watch", b), None);
        assert!(negotiate(Some("application/json;pretty=1"), b).unwrap().pretty);
    }

    #[test]
    fn cbor_is_served_only_behind_the_gate() {
        let (b, c) = (&Endpoint::BUILTIN, &Endpoint::BUILTIN_CBOR);
        assert_eq!(pick("application/cbor", b), None, "gate off: 406");
        assert_eq!(pick("application/cbor, application/json", b), Some((Format::Json, None)));
        assert_eq!(pick("application/cbor", c), Some((Format::Cbor, None)));
        assert_eq!(pick("application/cbor, application/json", c), Some((Format::Cbor, None)));
        assert_eq!(pick("application/cbor-seq", c), None, "a watch asks for application/cbor");
        assert_eq!(pick("application/cbor;as=Table;v=v1;g=meta.k8s.io", c), None, "no CBOR tables");
        assert_eq!(
            pick("application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", c),
            Some((Format::Cbor, Some("PartialObjectMetadataList".into())))
        );
        assert_eq!(pick("application/cbor", &Endpoint::CUSTOM.with_cbor(true)), Some((Format::Cbor, None)), "custom resources have CBOR");
        assert_eq!(Endpoint::BUILTIN_CBOR.with_cbor(false), Endpoint::BUILTIN);
    }

    #[test]
    fn pretty_and_gzip_follow_the_apiserver() {
        assert!(pretty("pretty=true", None) && pretty("pretty=1", Some("kubectl")));
        assert!(!pretty("pretty=false", Some("curl/8")) && !pretty("pretty=xyz", Some("curl/8")));
        assert!(pretty("pretty=", Some("curl/8.5")) && pretty("", Some("Mozilla/5.0 (X11)")) && !pretty("", Some("kubectl/v1.36")));
        assert!(accepts_gzip(Some("br, GZIP;q=1")) && !accepts_gzip(Some("gzipx")) && !accepts_gzip(None));
    }
}
