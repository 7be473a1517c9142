use bytes::Bytes;

use super::*;
use crate::list::ListPage;
use crate::partial;

fn capture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../tests/reference/apiserver-1.36/encodings/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The capture's `Date:` header as Unix seconds: the apiserver's "now" for its ages.
fn date_of(meta: &str) -> i64 {
    date_header(&String::from_utf8(capture(meta)).unwrap())
}

/// The `Date:` response header of a capture's `.meta` text, as Unix seconds.
pub(super) fn date_header(text: &str) -> i64 {
    let date = text.lines().find_map(|l| l.strip_prefix("< Date: ")).expect("a Date header");
    // "Mon, 23 Nov 2026 17:04:15 GMT"
    let f: Vec<&str> = date.split([' ', ',']).filter(|s| !s.is_empty()).collect();
    let month =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].iter().position(|m| *m == f[2]).unwrap() + 1;
    parse_time(&format!("{}-{month:02}-{:0>2}T{}Z", f[3], f[1], f[4])).unwrap()
}

/// The captured list's table rebuilt from its items, for `include`.
fn rebuilt(resource: &str, group: &str, table: &str, include: IncludeObject) -> Vec<u8> {
    let printer = printer(group, resource).unwrap_or_else(|| panic!("a printer for {resource}"));
    let res = crate::resource::BUILTINS.iter().find(|b| b.group() == group && b.plural == resource).unwrap().resource();
    rebuilt_with(&printer, &res, table, include)
}

/// The captured list's table of `res` rebuilt with `printer`, the rows'
/// metadata as metadata-only answers carry it.
fn rebuilt_with(printer: &Printer, res: &crate::resource::Resource, table: &str, include: IncludeObject) -> Vec<u8> {
    let resource = res.plural.as_str();
    let list = ListPage::parse(&Bytes::from(capture(&format!("{resource}/list.json")))).unwrap();
    let now = date_of(&format!("{resource}/{table}.meta"));
    let kind = serde_json::from_slice::<serde_json::Value>(&capture(&format!("{resource}/get.json"))).unwrap();
    let type_prefix = format!("{{\"kind\":{},\"apiVersion\":{},", kind["kind"], kind["apiVersion"]);
    let rows = list.items.iter().map(|item| {
        let object = match include {
            IncludeObject::None => None,
            IncludeObject::Metadata => {
                let metadata = crate::meta::parse(item, &[]).unwrap().metadata.as_bytes();
                Some(partial::object([Bytes::from(crate::meta::served_metadata(res, metadata).into_owned())]))
            }
            IncludeObject::Object => Some(vec![Bytes::from(type_prefix.clone()), item.slice(1..)]),
        };
        (printer.row(item, now).expect("a row"), object)
    });
    let table_rv =
        serde_json::from_slice::<serde_json::Value>(&capture(&format!("{resource}/{table}"))).unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    let mut out = json_table(crate::partial::MetaVersion::V1, &format!("{{\"resourceVersion\":\"{table_rv}\"}}"), printer, rows).concat();
    out.push(b'\n');
    out
}

#[test]
fn the_captured_tables_are_rebuilt_byte_for_byte() {
    let kinds =
        [("pods", ""), ("configmaps", ""), ("secrets", ""), ("namespaces", ""), ("serviceaccounts", ""), ("leases", "coordination.k8s.io")]
            .into_iter()
            .chain([("nodes", ""), ("services", ""), ("deployments", "apps"), ("replicasets", "apps")])
            .chain([("endpoints", ""), ("events", ""), ("cronjobs", "batch"), ("ingresses", "networking.k8s.io")])
            .chain([("persistentvolumeclaims", ""), ("endpointslices", "discovery.k8s.io")])
            .chain([
                ("customresourcedefinitions", "apiextensions.k8s.io"),
                ("daemonsets", "apps"),
                ("statefulsets", "apps"),
                ("jobs", "batch"),
            ])
            .chain([("persistentvolumes", ""), ("replicationcontrollers", ""), ("controllerrevisions", "apps")]);
    let tables = [
        ("table.json", IncludeObject::Metadata),
        ("table-include-none.json", IncludeObject::None),
        ("table-include-object.json", IncludeObject::Object),
    ];
    for ((resource, group), (table, include)) in kinds.flat_map(|k| tables.map(|t| (k, t))) {
        let want = capture(&format!("{resource}/{table}"));
        let got = rebuilt(resource, group, table, include);
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
        let near = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(120)..(at + 120).min(b.len())]).into_owned();
        assert!(got == want, "{resource}/{table} differs at byte {at}:\nkache:     {}\napiserver: {}", near(&got), near(&want));
    }
}

/// Every captured one-object Table (`kubectl get KIND NAME`, `table-get.json`)
/// is rebuilt byte for byte as kache answers a GET as a Table: one row of the
/// captured object at the capture's `Date`, its metadata as metadata-only
/// answers carry it, the object's revision as the Table's.
#[test]
fn every_captured_single_object_table_is_rebuilt_byte_for_byte() {
    let root = format!("{}/../tests/reference/apiserver-1.36/encodings", env!("CARGO_MANIFEST_DIR"));
    let mut checked = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().file_name().to_string_lossy().into_owned();
        let Ok(want) = std::fs::read(format!("{root}/{dir}/table-get.json")) else { continue };
        let object = capture(&format!("{dir}/get.json"));
        let object = object.strip_suffix(b"\n").unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(object).unwrap();
        let (group, version) =
            parsed["apiVersion"].as_str().unwrap().split_once('/').unwrap_or(("", parsed["apiVersion"].as_str().unwrap()));
        let plural = dir.split('.').next().unwrap();
        let (res, printer) = match crate::resource::builtin(group, version, plural) {
            Some(b) => (b.resource(), printer(group, plural).unwrap_or_else(|| panic!("a printer for {dir}"))),
            None => {
                let res = crate::resource::Resource::new(group, version, plural, parsed["kind"].as_str().unwrap(), true);
                (res, Arc::new(crd_printer(&capture("customresourcedefinitions/get.json"), version).expect("the CRD's printer")))
            }
        };
        let parsed_meta = crate::meta::parse(object, &[]).unwrap();
        let metadata = crate::meta::served_metadata(&res, parsed_meta.metadata.as_bytes()).into_owned();
        let row = printer.row(object, date_of(&format!("{dir}/table-get.json.meta"))).unwrap_or_else(|| panic!("{dir}: no row"));
        let meta = format!("{{\"resourceVersion\":\"{}\"}}", parsed["metadata"]["resourceVersion"].as_str().unwrap());
        let rows = [(row, Some(partial::object([Bytes::from(metadata)])))];
        let mut got = json_table(crate::partial::MetaVersion::V1, &meta, &printer, rows).concat();
        got.push(b'\n');
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
        let near = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(120)..(at + 120).min(b.len())]).into_owned();
        assert!(got == want, "{dir}/table-get.json differs at byte {at}:\nkache:     {}\napiserver: {}", near(&got), near(&want));
        checked.push(dir);
    }
    assert!(checked.len() >= 25, "only {checked:?}");
}

#[test]
fn a_custom_resources_table_follows_its_crds_printer_columns() {
    let crd = capture("customresourcedefinitions/get.json");
    let widgets = crd_printer(&crd, "v1").expect("a printer for the CRD's columns");
    let want = capture("widgets/table.json");
    let res = crate::resource::Resource::new("example.com", "v1", "widgets", "Widget", true);
    let got = rebuilt_with(&widgets, &res, "table.json", IncludeObject::Metadata);
    assert!(got == want, "widgets:\nkache:     {}\napiserver: {}", String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
    assert!(crd_printer(&crd, "v2").is_none(), "a version the CRD does not define");
    // A CRD declaring no columns gets Name and Age.
    let mut bare: serde_json::Value = serde_json::from_slice(&crd).unwrap();
    bare["spec"]["versions"][0].as_object_mut().unwrap().remove("additionalPrinterColumns");
    let plain = crd_printer(&serde_json::to_vec(&bare).unwrap(), "v1").unwrap();
    let cols: serde_json::Value = serde_json::from_str(&plain.columns).unwrap();
    assert_eq!(cols.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect::<Vec<_>>(), ["Name", "Age"]);
    assert_eq!(cols[1]["type"], "date");
    // A column with a filter is the apiserver's to print.
    bare["spec"]["versions"][0]["additionalPrinterColumns"] =
        serde_json::json!([{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}]);
    assert!(crd_printer(&serde_json::to_vec(&bare).unwrap(), "v1").is_none());
}

#[test]
fn include_object_reads_the_apiservers_values() {
    assert_eq!(IncludeObject::from_query(""), Some(IncludeObject::Metadata));
    assert_eq!(IncludeObject::from_query("includeObject=None"), Some(IncludeObject::None));
    assert_eq!(IncludeObject::from_query("limit=5&includeObject=Object"), Some(IncludeObject::Object));
    assert_eq!(IncludeObject::from_query("includeObject=all"), None);
}

#[test]
fn strings_are_escaped_as_go_escapes_them() {
    let mut s = String::new();
    write_go_string(&mut s, "<none> & \"q\"\n\u{1}\u{2028}é");
    assert_eq!(s, r#""\u003cnone\u003e \u0026 \"q\"\n\u0001\u2028é""#);
}

#[test]
fn an_object_the_printer_cannot_read_has_no_row() {
    let pods = printer("", "pods").unwrap();
    assert!(pods.row(br#"{"metadata":{"name":"p"},"spec":{"initContainers":"not a list"}}"#, 0).is_none());
    assert!(pods.row(b"not json", 0).is_none());
    let row =
        pods.row(br#"{"metadata":{"name":"p","creationTimestamp":"1970-01-01T00:01:00Z"},"spec":{"containers":[{}]}}"#, 3600).unwrap();
    assert_eq!(
        row.cells[..5],
        [Cell::Str("p".into()), Cell::Str("0/1".into()), Cell::Str("".into()), Cell::Str("0".into()), Cell::Str("59m".into())]
    );
}

#[test]
fn the_captured_table_watch_is_rebuilt_byte_for_byte() {
    // `pods/watch.json` holds the same pod's three events the table watch capture shows as Tables.
    let printer = printer("", "pods").unwrap();
    let now = date_of("negotiation/pods-watch-table.json.meta");
    let mut decoder = crate::watch::WatchDecoder::new(1 << 20);
    decoder.push(&capture("pods/watch.json"));
    let mut got = Vec::new();
    while let Some(frame) = decoder.next_frame().unwrap() {
        if crate::meta::parse(&frame.object, &[]).unwrap().name != "web-7c9f8d6b5-x2vkq" {
            continue;
        }
        let table = json_watch_table(
            crate::partial::MetaVersion::V1,
            &printer,
            IncludeObject::Metadata,
            &frame.object,
            &crate::resource::builtin("", "v1", "pods").unwrap().resource(),
            got.is_empty(),
            now,
        )
        .unwrap();
        got.extend_from_slice(&crate::watch::json_frame(frame.typ, &table.iter().map(|p| &p[..]).collect::<Vec<_>>()));
    }
    let want = capture("negotiation/pods-watch-table.json");
    assert!(got == want, "kache:\n{}\napiserver:\n{}", String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
}
