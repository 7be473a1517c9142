//! The cached resources: for each, what it is, its store's reader and its
//! reflector's status. Built once at start-up; the reflectors run as tasks
//! that end when the [`Cache`] is dropped.

use std::sync::Arc;

use bytes::Bytes;
use tokio::task::JoinHandle;

use apimachinery::resource::Resource;

use crate::store::{CachedObject, StoreConfig, StoreReader, StoreWriter};
use crate::upstream::client::Client;
use crate::upstream::reflector::{Reflector, ReflectorConfig, ReflectorStatus};
use crate::upstream::store_sink::{StoreSink, carries_type};

/// One cached resource.
#[derive(Debug)]
pub struct CachedResource {
    /// What the apiserver says it is.
    pub info: Resource,
    /// Its objects and history.
    pub store: StoreReader,
    /// Its reflector's readiness and counters.
    pub status: Arc<ReflectorStatus>,
    /// `{"kind":K,"apiVersion":V,`, spliced into stored list items that lack it.
    type_prefix: Bytes,
}

impl CachedResource {
    /// `o` as the apiserver writes a lone object (a GET, a watch event):
    /// with `kind` and `apiVersion` first. Stored list items of built-in
    /// resources lack them; the parts concatenated are the object (a stored
    /// object always has `metadata`, so a field follows the prefix's comma).
    pub fn typed(&self, o: &CachedObject) -> [Bytes; 2] {
        let bytes = o.bytes();
        if carries_type(bytes) || !bytes.starts_with(b"{") {
            return [bytes.clone(), Bytes::new()];
        }
        [self.type_prefix.clone(), bytes.slice(1..)]
    }
}

/// Every cached resource and the tasks that follow upstream.
#[derive(Debug)]
pub struct Cache {
    resources: Vec<Arc<CachedResource>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Cache {
    /// Starts one reflector per resource.
    pub fn start(client: &Client, infos: Vec<Resource>, store: &StoreConfig, reflector: &ReflectorConfig) -> Cache {
        let mut resources = Vec::new();
        let mut tasks = Vec::new();
        for info in infos {
            let (writer, reader) = StoreWriter::new(store.clone());
            let r = Reflector::new(client.clone(), info.clone(), reflector.clone(), StoreSink::new(&info, writer));
            let type_prefix = Bytes::from(info.type_prefix());
            resources.push(Arc::new(CachedResource { info, store: reader, status: r.status(), type_prefix }));
            tasks.push(tokio::spawn(r.run()));
        }
        Cache { resources, tasks }
    }

    /// The cached resource at `group`/`version` named `resource`.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<CachedResource>> {
        self.resources.iter().find(|r| r.info.group == group && r.info.version == version && r.info.plural == resource)
    }

    /// Every cached resource.
    pub fn resources(&self) -> &[Arc<CachedResource>] {
        &self.resources
    }

    /// Whether every resource has its initial list.
    pub fn ready(&self) -> bool {
        self.resources.iter().all(|r| r.status.is_ready())
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}
