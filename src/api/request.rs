//! What a request asks, read once (the apiserver's `RequestInfo` and, for a
//! list or watch, its `ListOptions`): where the chain resolves it, every
//! later stage reads this value, never the URI again.
//!
//! Invariant: the query is decoded here and nowhere else on the request
//! path; a list's or watch's options are decoded and validated here, so
//! that what memory refuses (400, 422) it refuses with the apiserver's
//! words, and what it answers it answers from the same reading the seats
//! were counted from.

use std::sync::Arc;

use apimachinery::auth::Attributes;
use apimachinery::params::{ListOptions, Query};
use apimachinery::status::ApiError;
use http::{Method, Uri};

/// What a request asks: its method, path and query read once.
#[derive(Debug)]
pub struct RequestInfo {
    /// The method.
    pub method: Method,
    /// Verb, resource, namespace, name: what authorization, audit and priority see.
    pub attributes: Arc<Attributes>,
    /// The request URI as sent, for audit's `requestURI` and negotiation (`pretty`, `includeObject`).
    uri: Uri,
    /// The parameters the API reads, decoded.
    pub query: Query,
    /// A list's or watch's options as decoded (`None`: neither a list nor a watch).
    decoded: Option<Result<ListOptions, ApiError>>,
    /// Why its decoded options fail validation, if they do.
    invalid: Option<ApiError>,
    /// Its answer is an open-ended stream (a watch, a followed log), not one document.
    pub stream: bool,
}

impl RequestInfo {
    /// What `method uri` asks.
    pub fn of(method: &Method, uri: &Uri) -> RequestInfo {
        let query = Query::parse(uri.query().unwrap_or(""));
        let attributes = Attributes::of_query(method.as_str(), uri.path(), &query);
        let collection = *method == Method::GET && attributes.resource_request && matches!(attributes.verb.as_str(), "list" | "watch");
        let mut decoded = collection.then(|| ListOptions::of(&query));
        let invalid = decoded.as_mut().and_then(|o| o.as_mut().ok()).and_then(|o| o.validate().err());
        RequestInfo {
            method: method.clone(),
            stream: query.streams(uri.path()),
            attributes: Arc::new(attributes),
            uri: uri.clone(),
            query,
            decoded,
            invalid,
        }
    }

    /// The request's path.
    pub fn path(&self) -> &str {
        self.uri.path()
    }

    /// The request's query as sent (`""` when none).
    pub fn raw_query(&self) -> &str {
        self.uri.query().unwrap_or("")
    }

    /// A list's or watch's options, or the apiserver's refusal of them:
    /// decoding's (400), else validation's (422). `None`: neither a list nor a watch.
    pub fn options(&self) -> Option<Result<&ListOptions, &ApiError>> {
        self.decoded.as_ref().map(|decoded| match (decoded, &self.invalid) {
            (Err(e), _) | (Ok(_), Some(e)) => Err(e),
            (Ok(o), None) => Ok(o),
        })
    }

    /// A list's or watch's options as decoded, valid or not (what its seats count).
    pub fn decoded(&self) -> Option<&ListOptions> {
        self.decoded.as_ref().and_then(|o| o.as_ref().ok())
    }
}
