//! Byte-for-byte comparisons with go-yaml's output (fixtures made by the Go
//! program in tests/reference/yaml/README.md) and with the apiserver's.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::*;

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/reference")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fails with the first differing line of `got` and `want`.
#[track_caller]
fn assert_same(name: &str, got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
    let line_start = want[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line_of = |s: &[u8]| {
        let end = s[line_start..].iter().position(|&b| b == b'\n').map_or(s.len(), |i| line_start + i);
        String::from_utf8_lossy(&s[line_start..end.max(line_start)]).into_owned()
    };
    let line = 1 + want[..at].iter().filter(|&&b| b == b'\n').count();
    panic!(
        "{name}: output differs at byte {at} (line {line}; lengths {} and {})\n  got:  {:?}\n  want: {:?}",
        got.len(),
        want.len(),
        line_of(got),
        line_of(want)
    );
}

/// Every `.yaml` under `dir` (recursively), sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The captured JSON documents the fixtures were made from: each
/// `list.json` and `table.json` of `tables/`, and each single document
/// (not a watch stream) of `encodings/`.
fn captured_inputs() -> Vec<PathBuf> {
    let root = reference().join("apiserver-1.36");
    let mut inputs: Vec<PathBuf> = files_in_subdirs(&root.join("tables"), |name| name == "list.json" || name == "table.json");
    inputs.extend(files_in_subdirs(&root.join("encodings"), |name| name.ends_with(".json") && !name.contains("watch")));
    inputs.sort();
    inputs
}

fn files_in_subdirs(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let sub = entry.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&sub).unwrap() {
            let path = file.unwrap().path();
            if path.file_name().and_then(|n| n.to_str()).is_some_and(&keep) {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn yaml_of_every_capture_is_go_yamls() {
    let captures = reference().join("apiserver-1.36");
    let fixtures = reference().join("yaml");
    let inputs = captured_inputs();
    assert!(inputs.len() > 300, "only {} captured documents found", inputs.len());
    for input in &inputs {
        let relative = input.strip_prefix(&captures).unwrap().with_extension("yaml");
        let want = read(&fixtures.join(&relative));
        let got = from_json(&read(input)).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        assert_same(&relative.display().to_string(), &got, &want);
    }
    // And no fixture is left without its capture.
    let fixture_count = yaml_files(&fixtures.join("tables")).len() + yaml_files(&fixtures.join("encodings")).len();
    assert_eq!(fixture_count, inputs.len());
}

#[test]
fn yaml_torture_documents_are_go_yamls() {
    let dir = reference().join("yaml/torture");
    let fixtures = yaml_files(&dir);
    assert!(fixtures.len() >= 15);
    for want_path in fixtures {
        let name = want_path.strip_prefix(reference()).unwrap().display().to_string();
        let got = from_json(&read(&want_path.with_extension("json"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&name, &got, &read(&want_path));
    }
}

#[test]
fn yaml_refuses_what_go_yaml_refuses() {
    let documents: Vec<String> = serde_json::from_slice(&read(&reference().join("yaml/torture/errors.json"))).unwrap();
    assert!(documents.len() >= 20);
    for doc in documents {
        assert!(from_json(doc.as_bytes()).is_err(), "accepted {doc:?}");
    }
    assert!(from_json(b"{\"a\": 1,}").is_err());
}

#[test]
fn yaml_is_what_the_apiserver_wrote() {
    let encodings = reference().join("apiserver-1.36/encodings");
    let got = from_json(&read(&encodings.join("pods/get.json"))).unwrap();
    assert_same("negotiation/pods-get-yaml.yaml", &got, &read(&encodings.join("negotiation/pods-get-yaml.yaml")));
}

/// A list written as its head, `items:`, one entry per item, and its tail
/// is the document written whole.
#[test]
fn yaml_list_streams_as_head_entries_and_tail() {
    let mut lists = 0;
    for input in captured_inputs() {
        let json = read(&input);
        let Value::Object(list) = read_json(&json).unwrap() else { continue };
        let Some(Value::Array(items)) = list.get("items").filter(|items| items.as_array().is_some_and(|a| !a.is_empty())) else {
            continue;
        };
        let (mut head, mut tail) = (Map::new(), Map::new());
        for (k, v) in list.iter().filter(|(k, _)| *k != "items") {
            let half = if key_less(k, "items") { &mut head } else { &mut tail };
            half.insert(k.clone(), v.clone());
        }
        let mut streamed = Vec::new();
        write_document(&Value::Object(head), &mut streamed);
        streamed.extend_from_slice(b"items:\n");
        for item in items {
            write_entry(item, &mut streamed);
        }
        if !tail.is_empty() {
            write_document(&Value::Object(tail), &mut streamed);
        }
        assert_same(&input.display().to_string(), &streamed, &from_json(&json).unwrap());
        lists += 1;
    }
    assert!(lists > 50, "only {lists} lists with items");
}

#[test]
fn yaml_entries_of_torture_items_stream() {
    let json = read(&reference().join("yaml/torture/strings.json"));
    let doc = read_json(&json).unwrap();
    let mut streamed = b"items:\n".to_vec();
    for item in doc["items"].as_array().unwrap() {
        write_entry(item, &mut streamed);
    }
    let mut whole = Vec::new();
    write_document(&serde_json::json!({ "items": doc["items"] }), &mut whole);
    assert_same("torture items", &streamed, &whole);
}

#[test]
fn yaml_key_less() {
    let ordered = [
        "", " ", "-", ".", "_x", "0", "00", "1", "01", "2", "02", "9", "10", "99", "100", "A", "B", "Z", "Z10", "a", "a_", "a0", "a00",
        "a1", "a9", "a09", "a10", "aa", "ab", "b", "x-1", "x1", "x2", "x10", "z", "ª", "é", "Ω", "ω", "日本",
    ];
    for (i, a) in ordered.iter().enumerate() {
        for (j, b) in ordered.iter().enumerate() {
            assert_eq!(key_less(a, b), i < j, "key_less({a:?}, {b:?})");
        }
    }
    // Digits of other scripts are digits, letters of other scripts letters.
    assert!(key_less("x٣", "xa") && key_less("x2", "x٣"));
    assert!(key_less("x²", "x1"), "superscripts are neither digits nor letters");
    // Runs differing after a shared prefix compare as numbers from the last
    // non-zero digit on ("109" < "1005"), else from where they differ.
    assert!(key_less("109", "1005") && !key_less("1005", "109"));
    assert!(key_less("1.9", "1.09") && key_less("1.09", "1.10"));
}

#[test]
fn yaml_key_order_cycles_do_not_panic() {
    // "v10" < "v1alpha1" < "v2" < "v10": go-yaml's order then depends on Go's
    // random map iteration; here any order, but no panic.
    assert!(key_less("v10", "v1alpha1") && key_less("v1alpha1", "v2") && key_less("v2", "v10"));
    let mut map = Map::new();
    for i in 0..200 {
        for key in [format!("v{i}"), format!("v{i}alpha1"), format!("x0{i}a"), format!("x{i}"), "9".repeat(i % 40)] {
            map.insert(key, Value::Null);
        }
    }
    let mut out = Vec::new();
    write_document(&Value::Object(map.clone()), &mut out);
    assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), map.len());
}

#[test]
fn yaml_numbers_of_values_parsed_by_serde_json() {
    // serde_json reads `-0` as the float -0 (go-yaml: the integer 0).
    let v: Value = serde_json::from_str(r#"[1, -2, 18446744073709551615, 1.5, 1e21, 0.000001, 100000.5, 1234567.0, -0]"#).unwrap();
    let mut out = Vec::new();
    write_document(&v, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "- 1\n- -2\n- 18446744073709551615\n- 1.5\n- 1e+21\n- 1e-06\n- 100000.5\n- 1.234567e+06\n- -0\n"
    );
}
