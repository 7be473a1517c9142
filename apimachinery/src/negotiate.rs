//! Content negotiation as the apiserver does it: which representation a
//! request's `Accept` header gets (`NegotiateMediaTypeOptions` over
//! goautoneg's `ParseAccept`), whether its answer is indented, and whether
//! it may be gzipped.
//!
//! Guarantees: clauses are tried in goautoneg's order (higher `q` first,
//! then specific types before wildcards, otherwise as written; a `q=0`
//! clause is still tried, last); for each clause the endpoint's encodings are
//! tried in its order; the first combination the endpoint allows wins. No
//! match is `None`, which the caller answers with [`ApiError::not_acceptable_gated`].
//!
//! [`ApiError::not_acceptable_gated`]: crate::status::ApiError::not_acceptable_gated
//!
//! What negotiation chose is one value, [`Negotiated`]: the [`Encoding`]
//! (JSON, YAML, protobuf, CBOR), the [`Shape`] (the objects, their
//! metadata only, or a Table), indentation and gzip.

use crate::partial::MetaVersion;
use crate::table::IncludeObject;

/// How an answer is serialized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    #[default]
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// `application/cbor`, behind the apiserver's `CBORServingAndStorage` gate.
    Cbor,
}

impl Encoding {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Yaml => "application/yaml",
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
            Encoding::Cbor => "application/cbor",
        }
    }

    /// Its name in logs and metrics: `json`, `yaml`, `protobuf` or `cbor`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::Yaml => "yaml",
            Encoding::Protobuf => "protobuf",
            Encoding::Cbor => "cbor",
        }
    }

    /// The `Content-Type` of an answer in it (`stream`: a watch's, whose
    /// protobuf frames are `;stream=watch` and whose CBOR is a sequence).
    pub fn content_type(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Encoding::Protobuf, true) => "application/vnd.kubernetes.protobuf;stream=watch",
            (Encoding::Cbor, true) => "application/cbor-seq",
            _ => self.media_type(),
        }
    }

    fn type_subtype(self) -> (&'static str, &'static str) {
        self.media_type().split_once('/').unwrap_or(("application", "json"))
    }
}

/// What an answer holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Shape {
    /// The objects themselves.
    #[default]
    Objects,
    /// Their metadata only, in the form of one object (`PartialObjectMetadata`;
    /// also every event of a metadata-only watch).
    Metadata,
    /// Their metadata only, in the form of a list (`PartialObjectMetadataList`).
    MetadataList,
    /// A Table of them in `meta.k8s.io` `version`, each row carrying what `include` says.
    Table {
        /// The `meta.k8s.io` version asked for.
        version: MetaVersion,
        /// What each row carries besides its cells.
        include: IncludeObject,
    },
}

/// What content negotiation chose for one answer: its media type — the
/// encoding, what it holds, whether JSON is indented — and whether a large
/// body is gzipped. The one description of an answer's look that readers
/// and writers share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Negotiated {
    /// How it is serialized.
    pub encoding: Encoding,
    /// What it holds.
    pub shape: Shape,
    /// Indented (JSON only: the YAML serializer ignores it).
    pub pretty: bool,
    /// The client accepts gzip: a body over the apiserver's threshold is gzipped.
    pub gzip: bool,
}

impl Negotiated {
    /// The answer the apiserver would write in `media` for a request with
    /// `query` and the headers `User-Agent` and `Accept-Encoding`; `None`
    /// for a conversion this crate does not write (metadata-only forms in
    /// `meta.k8s.io/v1beta1`, an `includeObject` the apiserver refuses).
    pub fn of(media: &MediaType, query: &str, user_agent: Option<&str>, accept_encoding: Option<&str>) -> Option<Negotiated> {
        let shape = match media.convert.as_ref().map(|c| (c.meta_kind(), c.version.as_str())) {
            None => Shape::Objects,
            Some((Some(crate::partial::KIND), "v1")) => Shape::Metadata,
            Some((Some(crate::partial::LIST_KIND), "v1")) => Shape::MetadataList,
            Some((Some("Table"), version)) => {
                Shape::Table { version: MetaVersion::parse(version)?, include: IncludeObject::from_query(query)? }
            }
            Some(_) => return None,
        };
        Some(Negotiated {
            encoding: media.encoding,
            shape,
            pretty: media.encoding == Encoding::Json && (media.pretty || pretty(query, user_agent)),
            gzip: accepts_gzip(accept_encoding),
        })
    }

    /// The same answer in `encoding`, holding `shape`.
    pub fn with(self, encoding: Encoding, shape: Shape) -> Negotiated {
        Negotiated { encoding, shape, ..self }
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
    pub encoding: Encoding,
    /// The conversion asked for, if any.
    pub convert: Option<Conversion>,
    /// `pretty=1` in the media type.
    pub pretty: bool,
    /// `stream=…` (only `watch` is accepted).
    pub stream: Option<String>,
}

/// What an endpoint can write (the apiserver's serializers and `EndpointRestrictions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// Serializations in preference order; the first answers a request without `Accept`.
    pub encodings: &'static [Encoding],
    /// Serializations of an unconverted object (custom resources have no protobuf).
    pub plain: &'static [Encoding],
    /// Whether `Table` conversions are served.
    pub tables: bool,
    /// Whether `PartialObjectMetadata[List]` conversions are served.
    pub metadata: bool,
}

impl Endpoint {
    /// A built-in resource of kube-apiserver.
    pub const BUILTIN: Endpoint = Endpoint {
        encodings: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf],
        plain: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf],
        tables: true,
        metadata: true,
    };
    /// A custom resource of kube-apiserver: no protobuf for the objects themselves.
    pub const CUSTOM: Endpoint = Endpoint {
        encodings: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf],
        plain: &[Encoding::Json, Encoding::Yaml],
        tables: true,
        metadata: true,
    };

    /// A built-in resource of kube-apiserver with `CBORServingAndStorage` on.
    pub const BUILTIN_CBOR: Endpoint = Endpoint {
        encodings: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf, Encoding::Cbor],
        plain: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf, Encoding::Cbor],
        tables: true,
        metadata: true,
    };
    /// A custom resource of kube-apiserver with `CBORServingAndStorage` on.
    pub const CUSTOM_CBOR: Endpoint = Endpoint {
        encodings: &[Encoding::Json, Encoding::Yaml, Encoding::Protobuf, Encoding::Cbor],
        plain: &[Encoding::Json, Encoding::Yaml, Encoding::Cbor],
        tables: true,
        metadata: true,
    };

    /// This endpoint (`BUILTIN` or `CUSTOM`) as it is with or without CBOR.
    pub fn with_cbor(&self, cbor: bool) -> Endpoint {
        match (cbor, self.plain.contains(&Encoding::Protobuf)) {
            (false, true) => Endpoint::BUILTIN,
            (false, false) => Endpoint::CUSTOM,
            (true, true) => Endpoint::BUILTIN_CBOR,
            (true, false) => Endpoint::CUSTOM_CBOR,
        }
    }

    /// `AllowsMediaTypeTransform`: Tables only in JSON and YAML, metadata-only in any encoding.
    fn allows(&self, encoding: Encoding, convert: Option<&Conversion>) -> bool {
        match convert {
            None => self.plain.contains(&encoding),
            Some(c) => match c.meta_kind() {
                Some("Table") => self.tables && matches!(encoding, Encoding::Json | Encoding::Yaml),
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
        return endpoint.encodings.first().map(|&encoding| MediaType { encoding, convert: None, pretty: false, stream: None });
    }
    for clause in parse_accept(header) {
        for &encoding in endpoint.encodings {
            let (typ, subtype) = encoding.type_subtype();
            let matches =
                (clause.typ == typ && (clause.subtype == subtype || clause.subtype == "*")) || (clause.typ == "*" && clause.subtype == "*");
            if matches && let Some(m) = accept_options(&clause, encoding, endpoint) {
                return Some(m);
            }
        }
    }
    None
}

/// `acceptMediaTypeOptions`: the clause's parameters applied to `encoding`.
fn accept_options(clause: &Clause<'_>, encoding: Encoding, endpoint: &Endpoint) -> Option<MediaType> {
    let mut m = MediaType { encoding, convert: None, pretty: false, stream: None };
    for &(k, v) in &clause.params {
        match k {
            "as" => m.convert.get_or_insert_with(Conversion::default).kind = v.to_string(),
            "g" => m.convert.get_or_insert_with(Conversion::default).group = v.to_string(),
            "v" => m.convert.get_or_insert_with(Conversion::default).version = v.to_string(),
            "stream" if !v.is_empty() => {
                // JSON and protobuf have stream serializers; watch is the only stream schema.
                if encoding == Encoding::Yaml || v != "watch" {
                    return None;
                }
                m.stream = Some(v.to_string());
            }
            "pretty" => m.pretty = v == "1",
            _ => {}
        }
    }
    endpoint.allows(encoding, m.convert.as_ref()).then_some(m)
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

    fn pick(accept: &str, e: &Endpoint) -> Option<(Encoding, Option<String>)> {
        negotiate(Some(accept), e).map(|m| (m.encoding, m.convert.map(|c| c.kind)))
    }

    #[test]
    fn clauses_are_tried_by_weight_then_specificity_then_order() {
        let b = &Endpoint::BUILTIN;
        assert_eq!(pick("application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9", b), Some((Encoding::Protobuf, None)));
        assert_eq!(pick("application/vnd.kubernetes.protobuf, */*", b), Some((Encoding::Protobuf, None)));
        assert_eq!(pick("*/*", b), Some((Encoding::Json, None)));
        assert_eq!(pick("*/*;q=0.8, application/yaml", b), Some((Encoding::Yaml, None)));
        assert_eq!(pick("text/html, application/*", b), Some((Encoding::Json, None)));
        assert_eq!(pick("text/html", b), None);
        assert_eq!(pick("application/json;q=0", b), Some((Encoding::Json, None)), "q=0 is still acceptable to goautoneg");
        assert_eq!(negotiate(None, b).map(|m| m.encoding), Some(Encoding::Json));
    }

    #[test]
    fn conversions_follow_the_endpoint_restrictions() {
        let b = &Endpoint::BUILTIN;
        assert_eq!(pick(KUBECTL_GET, b), Some((Encoding::Json, Some("Table".into()))));
        assert_eq!(pick("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", b), None, "no protobuf tables");
        assert_eq!(
            pick("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", b),
            Some((Encoding::Protobuf, Some("PartialObjectMetadataList".into())))
        );
        assert_eq!(pick("application/json;as=Widget;g=example.com;v=v1", b), None);
        assert_eq!(pick("application/vnd.kubernetes.protobuf", &Endpoint::CUSTOM), None, "custom resources have no protobuf");
        let json_only = Endpoint { encodings: &[Encoding::Json], plain: &[Encoding::Json], tables: false, metadata: false };
        assert_eq!(pick(KUBECTL_GET, &json_only), Some((Encoding::Json, None)));
        assert_eq!(pick("application/json;stream=watch", b).map(|p| p.0), Some(Encoding::Json));
        assert_eq!(pick("application/yaml;stream=watch", b), None);
        assert!(negotiate(Some("application/json;pretty=1"), b).unwrap().pretty);
    }

    #[test]
    fn cbor_is_served_only_behind_the_gate() {
        let (b, c) = (&Endpoint::BUILTIN, &Endpoint::BUILTIN_CBOR);
        assert_eq!(pick("application/cbor", b), None, "gate off: 406");
        assert_eq!(pick("application/cbor, application/json", b), Some((Encoding::Json, None)));
        assert_eq!(pick("application/cbor", c), Some((Encoding::Cbor, None)));
        assert_eq!(pick("application/cbor, application/json", c), Some((Encoding::Cbor, None)));
        assert_eq!(pick("application/cbor-seq", c), None, "a watch asks for application/cbor");
        assert_eq!(pick("application/cbor;as=Table;v=v1;g=meta.k8s.io", c), None, "no CBOR tables");
        assert_eq!(
            pick("application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", c),
            Some((Encoding::Cbor, Some("PartialObjectMetadataList".into())))
        );
        assert_eq!(pick("application/cbor", &Endpoint::CUSTOM.with_cbor(true)), Some((Encoding::Cbor, None)), "custom resources have CBOR");
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
