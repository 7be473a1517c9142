//! The reflector's [`Sink`] into a [`StoreWriter`]: parses objects with the
//! resource's selectable fields and keeps one byte form per resource.
//!
//! Upstream encodes a built-in object without `kind`/`apiVersion` inside a
//! list and with them (`{"kind":K,"apiVersion":V,…`) in a watch event. The
//! store keeps the list-item form, so list pages are written from stored
//! bytes as they are; a watch frame splices the type back in once per event.
//! Whether items carry their type (custom resources do) is learned from the
//! list; only then is a watch object kept as sent.

use std::time::Instant;

use bytes::{Bytes, BytesMut};

use apimachinery::resource::Resource;
use apimachinery::watch::EventType as FrameType;

use super::reflector::Sink;
use crate::store::{CachedObject, EventType, StoreError, StoreWriter};

/// Why the store refuses what upstream sent.
#[derive(Debug, thiserror::Error)]
pub enum StoreSinkError {
    /// An object it cannot hold (it does not parse, or is too large), or
    /// an event that does not follow what it holds.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A watch frame that carries no object event (a bookmark or an error
    /// belongs to the reflector).
    #[error("{0:?} is not an object event")]
    NotAnObject(FrameType),
    /// A thread parsing a list's items panicked.
    #[error("a parser thread panicked")]
    ParserPanicked,
}

/// Whether items need copies of their own (see [`StoreSink::parse_all`]).
#[derive(Debug, Clone, Copy)]
enum Own {
    /// Slices of a page body: copied.
    Copy,
    /// Each its own allocation (a saved state): kept.
    Already,
}

/// Lists shorter than this are parsed on one thread.
const PARSE_CHUNK: usize = 2_000;

/// Feeds one resource's store.
#[derive(Debug)]
pub struct StoreSink {
    writer: StoreWriter,
    fields: Vec<&'static str>,
    /// `{"kind":K,"apiVersion":V,` as upstream writes it in watch events.
    type_prefix: Vec<u8>,
    /// Whether list items carry `kind`/`apiVersion`.
    typed_items: bool,
}

impl StoreSink {
    /// A sink for `resource` writing to `writer`.
    pub fn new(resource: &Resource, writer: StoreWriter) -> Self {
        let type_prefix = resource.type_prefix().into_bytes();
        let fields = resource.field_paths();
        StoreSink { writer, fields, type_prefix, typed_items: false }
    }

    fn parse(&self, bytes: Bytes) -> Result<CachedObject, StoreError> {
        CachedObject::parse(bytes, &self.fields)
    }

    /// Whether the state changed (see [`StoreWriter::replace`]).
    fn replace_with(&mut self, items: Vec<Bytes>, rv: u64, own: Own) -> Result<bool, StoreSinkError> {
        if let Some(first) = items.first() {
            self.typed_items = carries_type(first);
        }
        let objects = self.parse_all(items, own)?;
        let epoch = self.writer.view().epoch();
        self.writer.replace(objects, rv);
        self.writer.publish();
        Ok(self.writer.view().epoch() != epoch)
    }

    /// Parses a list's items, in order, on every core: 100,000 objects take
    /// seconds on one. Each object owns its bytes: a slice would keep its
    /// whole page body alive (uncounted by the memory budget) while any
    /// object of the page stays, so list items are copied, and each is
    /// dropped once copied, so the pages' bodies are freed as parsing goes.
    /// Saved items own their bytes already: copying them would only leave
    /// their freed allocations scattered among the copies, which the
    /// allocator cannot give back (measured: +170–370 MB of RSS after a
    /// warm restart at 100,000 pods with two arenas).
    fn parse_all(&self, mut items: Vec<Bytes>, own: Own) -> Result<Vec<CachedObject>, StoreSinkError> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = items.len().div_ceil(cores).max(PARSE_CHUNK);
        let fields = &self.fields;
        let parse = |chunk: Vec<Bytes>| {
            chunk
                .into_iter()
                .map(|i| {
                    let bytes = match own {
                        Own::Copy => Bytes::copy_from_slice(&i),
                        Own::Already => i,
                    };
                    CachedObject::parse(bytes, fields)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let total = items.len();
        if total <= chunk {
            return Ok(parse(items)?);
        }
        let mut chunks = Vec::new();
        while items.len() > chunk {
            let rest = items.split_off(chunk);
            chunks.push(std::mem::replace(&mut items, rest));
        }
        chunks.push(items);
        std::thread::scope(|s| {
            let parsers: Vec<_> = chunks.into_iter().map(|c| s.spawn(move || parse(c))).collect();
            let mut objects = Vec::with_capacity(total);
            for parser in parsers {
                objects.extend(parser.join().map_err(|_| StoreSinkError::ParserPanicked)??);
            }
            Ok(objects)
        })
    }

    /// The list-item form of a watch object, in bytes of its own (not a
    /// slice of the frame buffer it came in, which other events share).
    fn item_form(&self, object: Bytes) -> Bytes {
        if self.typed_items || !object.starts_with(&self.type_prefix) {
            return Bytes::copy_from_slice(&object);
        }
        let mut item = BytesMut::with_capacity(object.len() + 1 - self.type_prefix.len());
        item.extend_from_slice(b"{");
        item.extend_from_slice(&object[self.type_prefix.len()..]);
        item.freeze()
    }
}

/// Whether an object's bytes begin with its `kind` or `apiVersion`.
pub(crate) fn carries_type(item: &[u8]) -> bool {
    item.starts_with(b"{\"kind\":") || item.starts_with(b"{\"apiVersion\":")
}

impl Sink for StoreSink {
    type Error = StoreSinkError;

    fn replace(&mut self, items: Vec<Bytes>, rv: u64) -> Result<bool, StoreSinkError> {
        self.replace_with(items, rv, Own::Copy)
    }

    fn restore(&mut self, items: Vec<Bytes>, rv: u64) -> Result<(), StoreSinkError> {
        self.replace_with(items, rv, Own::Already).map(|_| ())
    }

    fn apply(&mut self, typ: FrameType, object: Bytes) -> Result<u64, StoreSinkError> {
        let typ = match typ {
            FrameType::Added => EventType::Added,
            FrameType::Modified => EventType::Modified,
            FrameType::Deleted => EventType::Deleted,
            FrameType::Bookmark | FrameType::Error => return Err(StoreSinkError::NotAnObject(typ)),
        };
        let object = self.parse(self.item_form(object))?;
        let rv = object.resource_version();
        let now = Instant::now();
        self.writer.apply(typ, object, now)?;
        self.writer.expire(now);
        Ok(rv)
    }

    fn bookmark(&mut self, rv: u64) {
        // The reflector only passes forward bookmarks, which cannot fail.
        let _ = self.writer.bookmark(rv);
    }

    fn flush(&mut self) {
        self.writer.publish();
    }

    fn epoch(&self) -> u64 {
        self.writer.view().epoch()
    }
}
