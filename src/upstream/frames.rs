//! Decoding the apiserver's JSON list pages and watch streams without
//! copying objects: every object comes out as a slice of the bytes that
//! arrived ([`Bytes::slice_ref`]), exactly as upstream encoded it.
//!
//! A watch stream is a sequence of JSON documents `{"type":…,"object":…}`
//! separated by newlines; [`WatchDecoder`] accepts the body in arbitrary
//! chunks and yields whole frames, refusing a frame larger than its bound.

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::UpstreamError;

/// One page of a list response.
#[derive(Debug)]
pub struct ListPage {
    /// `metadata.resourceVersion` of the list.
    pub resource_version: u64,
    /// `metadata.continue`, when more pages follow.
    pub continue_token: Option<String>,
    /// The items, each a slice of the response body.
    pub items: Vec<Bytes>,
}

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(borrow)]
    metadata: RawListMeta<'a>,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct RawListMeta<'a> {
    #[serde(rename = "resourceVersion", borrow)]
    resource_version: &'a str,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// Parses a list page; items stay slices of `body`.
pub fn parse_list(body: &Bytes) -> Result<ListPage, UpstreamError> {
    let raw: RawList<'_> = serde_json::from_slice(body).map_err(|e| UpstreamError::Decode(format!("a bad list: {e}")))?;
    let resource_version = parse_rv(raw.metadata.resource_version)?;
    let items = raw.items.unwrap_or_default().into_iter().map(|item| body.slice_ref(item.get().as_bytes())).collect();
    Ok(ListPage { resource_version, continue_token: raw.metadata.continue_token.filter(|c| !c.is_empty()), items })
}

/// A `resourceVersion` as the number etcd made it.
pub fn parse_rv(rv: &str) -> Result<u64, UpstreamError> {
    rv.parse().map_err(|_| UpstreamError::Decode(format!("a resourceVersion that is not a revision: {rv:?}")))
}

/// What a watch frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameType {
    /// An object was created (or started matching).
    Added,
    /// An object changed.
    Modified,
    /// An object was deleted.
    Deleted,
    /// Progress: every event up to the object's `resourceVersion` was sent.
    Bookmark,
    /// The watch failed; the object is a `Status`.
    Error,
}

/// One frame of a watch stream.
#[derive(Debug, Clone)]
pub struct WatchFrame {
    /// The event type.
    pub typ: FrameType,
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

/// Splits a watch body into frames.
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
    pub fn next_frame(&mut self) -> Result<Option<WatchFrame>, UpstreamError> {
        loop {
            let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.max_frame {
                    return Err(UpstreamError::Decode(format!("a watch frame over {} bytes", self.max_frame)));
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

/// Parses one watch frame; the object stays a slice of `text`.
pub fn parse_frame(text: &Bytes) -> Result<WatchFrame, UpstreamError> {
    let raw: RawFrame<'_> = serde_json::from_slice(text).map_err(|e| UpstreamError::Decode(format!("a bad watch frame: {e}")))?;
    let typ = match raw.typ {
        "ADDED" => FrameType::Added,
        "MODIFIED" => FrameType::Modified,
        "DELETED" => FrameType::Deleted,
        "BOOKMARK" => FrameType::Bookmark,
        "ERROR" => FrameType::Error,
        other => return Err(UpstreamError::Decode(format!("a watch event of unknown type {other:?}"))),
    };
    Ok(WatchFrame { typ, object: text.slice_ref(raw.object.get().as_bytes()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_are_slices_of_the_body() {
        let body = Bytes::from_static(br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc","remainingItemCount":3},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#);
        let page = parse_list(&body).unwrap();
        assert_eq!((page.resource_version, page.continue_token.as_deref()), (42, Some("abc")));
        assert_eq!(page.items, [&br#"{"metadata":{"name":"a"}}"#[..], br#"{"metadata":{"name":"b"}}"#]);
        let at = body.windows(6).position(|w| w == b"[{\"met").unwrap() + 1;
        assert_eq!(page.items[0].as_ptr(), body[at..].as_ptr(), "not copied");
        let empty = parse_list(&Bytes::from_static(br#"{"metadata":{"resourceVersion":"7"},"items":null}"#)).unwrap();
        assert!(empty.items.is_empty() && empty.continue_token.is_none());
        assert!(parse_list(&Bytes::from_static(br#"{"metadata":{"resourceVersion":"x"}}"#)).is_err());
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
            assert_eq!((frames[0].typ, &frames[0].object[..]), (FrameType::Added, &b"{\"a\":1}"[..]));
            assert_eq!(frames[1].typ, FrameType::Bookmark);
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
