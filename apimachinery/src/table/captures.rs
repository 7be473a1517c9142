//! Every Table of `tests/reference/apiserver-1.36/tables/` (one directory
//! per resource and version, captured from a real kube-apiserver 1.36)
//! rebuilt from the capture's `list.json` at the capture's `Date`, byte for
//! byte: `table.json` (rows carrying `PartialObjectMetadata`) and
//! `table-wide-object.json` (`includeObject=Object`). A directory added to
//! the captures is covered without touching this test.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;

use super::tests::date_header;
use super::*;
use crate::partial;
use crate::resource::Resource;

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/apiserver-1.36/tables")
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
}

/// `<plural>.<group, or core>.<version>` as (group, version, plural).
fn resource_of(dir: &str) -> (String, String, String) {
    let parts: Vec<&str> = dir.split('.').collect();
    let (plural, version) = (parts[0], parts[parts.len() - 1]);
    let group = match parts[1..parts.len() - 1].join(".") {
        g if g == "core" => String::new(),
        g => g,
    };
    (group, version.to_string(), plural.to_string())
}

/// The printer of a captured resource: the built-in one, or a custom
/// resource's from its CRD in the `customresourcedefinitions` capture.
fn printer_of(group: &str, version: &str, plural: &str) -> Option<Arc<Printer>> {
    if let Some(p) = printer(group, plural) {
        return Some(p);
    }
    let crds: Value =
        serde_json::from_slice(&read(&captures().join("customresourcedefinitions.apiextensions.k8s.io.v1"), "list.json")).ok()?;
    let crd = crds["items"].as_array()?.iter().find(|c| c["spec"]["group"] == group && c["spec"]["names"]["plural"] == plural)?;
    crd_printer(&serde_json::to_vec(crd).ok()?, version).map(Arc::new)
}

#[derive(serde::Deserialize)]
struct RawList<'a> {
    #[serde(borrow)]
    items: Vec<&'a serde_json::value::RawValue>,
}

/// An item's metadata as written (a `ComponentStatus` has no revision, which `meta::parse` wants).
#[derive(serde::Deserialize)]
struct RawItem<'a> {
    #[serde(borrow)]
    metadata: &'a serde_json::value::RawValue,
}

/// The Table `table` of the capture in `dir` rebuilt from its list, or why it cannot be.
fn rebuilt(dir: &Path, table: &str, include: IncludeObject) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let (group, version, plural) = resource_of(&dir.file_name().unwrap().to_string_lossy());
    let printer = printer_of(&group, &version, &plural).ok_or("no printer")?;
    let body = Bytes::from(read(dir, "list.json"));
    let list_json: Value = serde_json::from_slice(&body).unwrap();
    let kind = list_json["kind"].as_str().unwrap().strip_suffix("List").unwrap().to_string();
    let namespaced = list_json["items"].as_array().unwrap().iter().any(|i| i["metadata"].get("namespace").is_some());
    let res = Resource::new(&group, &version, &plural, &kind, namespaced);
    let type_prefix = format!("{{\"kind\":{},\"apiVersion\":{},", Value::from(kind.as_str()), list_json["apiVersion"]);
    let now = date_header(&String::from_utf8(read(dir, &format!("{table}.meta"))).unwrap());
    // Items as written (a `ComponentStatusList` has no revision, which `ListPage::parse` wants).
    let list: RawList = serde_json::from_slice(&body).map_err(|e| format!("list.json: {e}"))?;
    let mut rows = Vec::new();
    for item in list.items.iter().map(|i| body.slice_ref(i.get().as_bytes())) {
        let row = printer.row(&item, now).ok_or_else(|| format!("no row for {}", String::from_utf8_lossy(&item[..item.len().min(120)])))?;
        let object = match include {
            IncludeObject::None => None,
            IncludeObject::Metadata => {
                let metadata = serde_json::from_slice::<RawItem>(&item).unwrap().metadata.get().as_bytes();
                Some(partial::object([Bytes::from(crate::meta::served_metadata(&res, metadata).into_owned())]))
            }
            // Built-in kinds' items come without `kind` and `apiVersion`; custom resources' with them.
            IncludeObject::Object if item.starts_with(b"{\"apiVersion\"") => Some(vec![item.clone()]),
            IncludeObject::Object => Some(vec![Bytes::from(type_prefix.clone()), item.slice(1..)]),
        };
        rows.push((row, object, item));
    }
    printer.order_rows(&mut rows, |(_, _, item)| item);
    let rows = rows.into_iter().map(|(row, object, _)| (row, object));
    let captured: Value = serde_json::from_slice(&read(dir, table)).unwrap();
    let mut out = json_table(crate::partial::MetaVersion::V1, &captured["metadata"].to_string(), &printer, rows).concat();
    out.push(b'\n');
    Ok(out)
}

/// Where `got` first differs from `want`, with some context of both.
fn difference(got: &[u8], want: &[u8]) -> String {
    let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    let near = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(150)..(at + 150).min(b.len())]).into_owned();
    format!("differs at byte {at}:\n  kache:     {}\n  apiserver: {}", near(got), near(want))
}

#[test]
fn every_captured_table_is_rebuilt_byte_for_byte() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(captures()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(dirs.len() >= 60, "the captures are in {}", captures().display());
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for (table, include) in [("table.json", IncludeObject::Metadata), ("table-wide-object.json", IncludeObject::Object)] {
            let want = read(dir, table);
            match rebuilt(dir, table, include) {
                Ok(got) if got == want => {}
                Ok(got) => failures.push(format!("{name}: {table} {}", difference(&got, &want))),
                Err(why) => failures.push(format!("{name}: {table}: {why}")),
            }
        }
    }
    println!("{} of {} captured resources rebuilt byte for byte", dirs.len() - failures.len(), dirs.len());
    assert!(failures.is_empty(), "{} captures differ:\n{}", failures.len(), failures.join("\n\n"));
}

/// The apiserver's Table watch events for bookmarks of every captured
/// resource (`tests/reference/table-bookmarks/`, made with its own
/// printers, registries and watch handler): kache's row of the kind's empty
/// object, in each `includeObject` and with or without the columns, byte for byte.
#[test]
fn every_bookmark_is_printed_as_the_apiserver_prints_it() {
    #[derive(serde::Deserialize)]
    struct Variants<'a> {
        #[serde(borrow)]
        metadata: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        object: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        end: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        extra: BTreeMapRaw<'a>,
    }
    type BTreeMapRaw<'a> = std::collections::BTreeMap<&'a str, &'a serde_json::value::RawValue>;
    let fixtures = captures().join("../../table-bookmarks");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(captures()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    let (mut failures, mut compared) = (Vec::new(), 0);
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(text) = std::fs::read_to_string(fixtures.join(format!("{name}.json"))) else {
            // Component statuses cannot be watched (the apiserver's 405).
            assert!(name.starts_with("componentstatuses."), "no bookmark fixture for {name}");
            continue;
        };
        let want: Variants = serde_json::from_str(&text).unwrap();
        let (group, version, plural) = resource_of(&name);
        let list: Value = serde_json::from_slice(&read(dir, "list.json")).unwrap();
        let kind = list["kind"].as_str().unwrap().strip_suffix("List").unwrap();
        let res = Resource::new(&group, &version, &plural, kind, false);
        let printer = printer_of(&group, &version, &plural).unwrap();
        let bookmark = Bytes::from(crate::watch::bookmark_object(&res, 7, false));
        let end = Bytes::from(crate::watch::bookmark_object(&res, 8, true));
        let cases = [
            ("metadata", want.metadata, &bookmark, IncludeObject::Metadata, true),
            ("object", want.object, &bookmark, IncludeObject::Object, false),
            ("end", want.end, &end, IncludeObject::Object, false),
            ("metadataEnd", want.extra["metadataEnd"], &end, IncludeObject::Metadata, false),
            ("endFirst", want.extra["endFirst"], &end, IncludeObject::Metadata, true),
            ("none", want.extra["none"], &bookmark, IncludeObject::None, false),
            ("endNone", want.extra["endNone"], &end, IncludeObject::None, false),
        ];
        for (variant, want, object, include, columns) in cases {
            compared += 1;
            let Some(got) = json_watch_table(crate::partial::MetaVersion::V1, &printer, include, object, &res, columns, 0) else {
                failures.push(format!("{name} {variant}: no row"));
                continue;
            };
            let got = got.concat();
            if got != want.get().as_bytes() {
                failures.push(format!("{name} {variant}: {}", difference(&got, want.get().as_bytes())));
            }
        }
    }
    println!("{} of {compared} bookmark events byte for byte", compared - failures.len());
    assert!(failures.is_empty(), "{} bookmark events differ:\n{}", failures.len(), failures.join("\n\n"));
}
