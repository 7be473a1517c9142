//! Watch streams in JSON: one `{"type":…,"object":…}` document per line.
//!
//! Invariants: a frame is written around the object's own bytes and ends
//! with `\n`; a BOOKMARK carries the kind's zero object with only
//! `metadata.resourceVersion` (and the `k8s.io/initial-events-end`
//! annotation after initial events); an ERROR frame carries a `Status`.
//! [`WatchDecoder`] takes a body in arbitrary chunks and yields whole
//! frames whose objects are slices of the received bytes, and refuses a
//! frame over its bound rather than buffer it.

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::decode::{DecodeError, parse_revision};
use crate::resource::{Resource, json_string};
use crate::status::ApiError;

/// What a watch event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// An object was created (or started matching the watch's selectors).
    Added,
    /// An object changed.
    Modified,
    /// An object was deleted (or stopped matching).
    Deleted,
    /// Progress: every event up to the object's `resourceVersion` was sent.
    Bookmark,
    /// The watch failed; the object is a `Status`.
    Error,
}

impl EventType {
    /// The wire name (`ADDED`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }

    fn parse(s: &str) -> Option<EventType> {
        Some(match s {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            _ => return None,
        })
    }
}

/// One frame, the object given in parts that concatenate to it (so an
/// object's stored bytes need not be copied before the frame is built).
pub fn json_frame(typ: EventType, object: &[&[u8]]) -> Bytes {
    let len: usize = object.iter().map(|p| p.len()).sum();
    let mut out = BytesMut::with_capacity(len + 32);
    write_json_frame(&mut out, typ, object);
    out.freeze()
}

/// Appends one frame to `out` (see [`json_frame`]).
pub fn write_json_frame(out: &mut BytesMut, typ: EventType, object: &[&[u8]]) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(typ.as_str().as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    for p in object {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"}\n");
}

/// The BOOKMARK frame at `rv` for a watch of `res`; `initial_events_end`
/// marks the end of a watch's initial events.
pub fn json_bookmark(res: &Resource, rv: u64, initial_events_end: bool) -> Bytes {
    json_frame(EventType::Bookmark, &[&bookmark_object(res, rv, initial_events_end)])
}

/// The object a bookmark carries: the kind's zero value with only the
/// revision (and the initial-events-end annotation) set, converted to the
/// served version (a DaemonSet's conversion adds its template generation,
/// 0); a custom resource's is unstructured, its members in key order.
pub fn bookmark_object(res: &Resource, rv: u64, initial_events_end: bool) -> Vec<u8> {
    let end = if initial_events_end { r#""k8s.io/initial-events-end":"true""# } else { "" };
    let Some(suffix) = res.zero_suffix else {
        let annotations = if initial_events_end { format!(r#""annotations":{{{end}}},"#) } else { String::new() };
        let (api_version, kind) = (json_string(&res.api_version()), json_string(&res.kind));
        return format!(r#"{{"apiVersion":{api_version},"kind":{kind},"metadata":{{{annotations}"resourceVersion":"{rv}"}}}}"#)
            .into_bytes();
    };
    let metadata = match (res.group.as_str(), res.plural.as_str()) {
        ("apps", "daemonsets") => {
            let end = if initial_events_end { format!(",{end}") } else { String::new() };
            format!(r#"{{"resourceVersion":"{rv}","annotations":{{"deprecated.daemonset.template.generation":"0"{end}}}}}"#)
        }
        _ => bookmark_metadata(rv, initial_events_end),
    };
    format!("{}\"metadata\":{metadata}{suffix}}}", res.type_prefix()).into_bytes()
}

/// A bookmark's `metadata`: the revision, and the initial-events-end annotation when it ends them.
pub fn bookmark_metadata(rv: u64, initial_events_end: bool) -> String {
    let annotations = if initial_events_end { r#","annotations":{"k8s.io/initial-events-end":"true"}"# } else { "" };
    format!("{{\"resourceVersion\":\"{rv}\"{annotations}}}")
}

/// The ERROR frame carrying `err` (a watch's refusal after its 200, e.g.
/// `too old resource version`).
pub fn json_error(err: &ApiError) -> Bytes {
    json_frame(EventType::Error, &[&err.body()])
}

/// One frame of a watch stream, as read.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The event type.
    pub typ: EventType,
    /// The object, a slice of the received bytes.
    pub object: Bytes,
}

#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(rename = "type", borrow)]
    typ: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Parses one JSON watch frame (without its newline); the object stays a slice of `text`.
pub fn parse_frame(text: &Bytes) -> Result<Frame, DecodeError> {
    let raw: RawFrame<'_> = serde_json::from_slice(text).map_err(DecodeError::Frame)?;
    let typ = EventType::parse(raw.typ).ok_or_else(|| DecodeError::EventType(raw.typ.to_string()))?;
    Ok(Frame { typ, object: text.slice_ref(raw.object.get().as_bytes()) })
}

#[derive(Deserialize)]
struct BookmarkObject<'a> {
    #[serde(borrow)]
    metadata: BookmarkMeta<'a>,
}

#[derive(Deserialize)]
struct BookmarkMeta<'a> {
    #[serde(rename = "resourceVersion", borrow)]
    resource_version: &'a str,
}

/// A watch event object's `metadata.resourceVersion` (a bookmark's revision, or an event's).
pub fn object_revision(object: &[u8]) -> Result<u64, DecodeError> {
    let b: BookmarkObject<'_> = serde_json::from_slice(object).map_err(DecodeError::Bookmark)?;
    parse_revision(b.metadata.resource_version)
}

/// Splits a JSON watch body into frames.
#[derive(Debug)]
pub struct WatchDecoder {
    buf: BytesMut,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    max_frame: usize,
}

impl WatchDecoder {
    /// A decoder refusing frames larger than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        WatchDecoder { buf: BytesMut::new(), scanned: 0, max_frame }
    }

    /// Appends a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, DecodeError> {
        loop {
            let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_frame {
                    return Err(DecodeError::FrameTooLarge(self.max_frame));
                }
                return Ok(None);
            };
            let line = self.buf.split_to(self.scanned + pos + 1).freeze();
            self.scanned = 0;
            let text = line.slice(..line.len() - 1);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return parse_frame(&text).map(Some);
        }
    }

    /// Whether bytes of an unfinished frame are buffered.
    pub fn has_partial(&self) -> bool {
        self.buf.iter().any(|b| !b.is_ascii_whitespace())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_bookmarks_are_written_as_the_apiserver_writes_them() {
        let pods = Resource::new("", "v1", "pods", "Pod", true);
        assert_eq!(
            &json_bookmark(&pods, 445, true)[..],
            &br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"445","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}
"#[..]
        );
        let cms = Resource::new("", "v1", "configmaps", "ConfigMap", true);
        assert_eq!(&json_bookmark(&cms, 7, false)[..], &b"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"}}}\n"[..]);
        assert_eq!(&json_frame(EventType::Added, &[b"{\"a\":", b"1}"])[..], b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n");
        let err = json_error(&ApiError::watch_too_old(2, 218));
        assert_eq!(
            &err[..],
            &br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 2 (218)","reason":"Expired","code":410}}
"#[..]
        );
    }

    /// The BOOKMARK ending the initial events of every captured kind's
    /// `watch-initial.json` is the frame kache writes at that revision.
    #[test]
    fn every_captured_initial_events_bookmark_is_written_byte_for_byte() {
        let root = format!("{}/../tests/reference/apiserver-1.36/encodings", env!("CARGO_MANIFEST_DIR"));
        let mut checked = Vec::new();
        for dir in std::fs::read_dir(&root).unwrap() {
            let dir = dir.unwrap().file_name().to_string_lossy().into_owned();
            let Ok(stream) = std::fs::read(format!("{root}/{dir}/watch-initial.json")) else { continue };
            let bookmarks: Vec<&[u8]> =
                stream.split_inclusive(|b| *b == b'\n').filter(|l| l.starts_with(br#"{"type":"BOOKMARK""#)).collect();
            assert_eq!(bookmarks.len(), 1, "{dir}: one bookmark");
            let frame = parse_frame(&Bytes::copy_from_slice(bookmarks[0].strip_suffix(b"\n").unwrap())).unwrap();
            let object: serde_json::Value = serde_json::from_slice(&frame.object).unwrap();
            let api_version = object["apiVersion"].as_str().unwrap();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let plural = dir.split('.').next().unwrap();
            let res = match crate::resource::builtin(group, version, plural) {
                Some(b) => b.resource(),
                None => Resource::new(group, version, plural, object["kind"].as_str().unwrap(), true),
            };
            let rv = object_revision(&frame.object).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&json_bookmark(&res, rv, true)),
                String::from_utf8_lossy(bookmarks[0]),
                "{dir}/watch-initial.json"
            );
            checked.push(dir);
        }
        assert!(checked.len() >= 24, "only {checked:?}");
    }

    #[test]
    fn frames_split_across_chunks_come_out_whole() {
        let stream =
            b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n\n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n";
        for split in 1..stream.len() {
            let mut d = WatchDecoder::new(1 << 20);
            let mut frames = Vec::new();
            for chunk in [&stream[..split], &stream[split..]] {
                d.push(chunk);
                while let Some(f) = d.next_frame().unwrap() {
                    frames.push(f);
                }
            }
            assert_eq!(frames.len(), 2, "split at {split}");
            assert_eq!((frames[0].typ, &frames[0].object[..]), (EventType::Added, &b"{\"a\":1}"[..]));
            assert_eq!((frames[1].typ, object_revision(&frames[1].object).unwrap()), (EventType::Bookmark, 9));
            assert!(!d.has_partial());
        }
    }

    #[test]
    fn bad_and_oversized_frames_are_errors() {
        let mut d = WatchDecoder::new(16);
        d.push(b"{\"type\":\"WHAT\",\"object\":{}}\n");
        assert!(d.next_frame().is_err());
        let mut d = WatchDecoder::new(16);
        d.push(&[b'x'; 17]);
        assert!(d.next_frame().is_err());
        let mut d = WatchDecoder::new(1 << 10);
        d.push(b"not json\n");
        assert!(d.next_frame().is_err());
    }
}
