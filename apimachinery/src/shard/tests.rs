//! Against the captures of a real kube-apiserver in `tests/reference/sharding/`.

use std::path::PathBuf;

use serde_json::Value;

use super::*;

/// A capture's request query and body.
fn capture(name: &str) -> (Vec<(String, String)>, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/sharding").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let request = text.lines().next().expect("a request line");
    let query = request.split_once('?').map_or("", |(_, q)| q);
    let params = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let body = text.split_once("\n\n").expect("a body").1.to_owned();
    (params, body)
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> &'a str {
    params.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
}

#[test]
fn fnv1a_is_gos_hash_fnv_new64a() {
    // Go: fmt.Sprintf("%016x", fnv.New64a() of the bytes).
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn every_refused_selector_gets_the_apiservers_message_or_is_left_to_it() {
    // CEL with `&&`, a syntax error, an index expression: worded by cel-go.
    let beyond = [10, 15, 18];
    for n in 1..=18 {
        let (params, body) = capture(&format!("err-{n:02}.txt"));
        let status: Value = serde_json::from_str(&body).expect("a Status");
        let expected = status["message"].as_str().expect("a message");
        match ShardSelector::parse(param(&params, "shardSelector")) {
            Ok(s) => panic!("err-{n:02}: accepted as {}", s.info()),
            Err(ShardError::Beyond) => assert!(beyond.contains(&n), "err-{n:02}: {expected}"),
            Err(e) => {
                assert!(!beyond.contains(&n), "err-{n:02}");
                let ours = serde_json::from_slice::<Value>(&e.status().expect("a Status").body()).expect("JSON");
                assert_eq!(ours, status, "err-{n:02}");
            }
        }
    }
}

#[test]
fn a_malformed_watch_selector_is_refused_as_a_lists() {
    let (params, body) = capture("watch-err.txt");
    let e = ShardSelector::parse(param(&params, "shardSelector")).unwrap_err();
    assert_eq!(serde_json::from_slice::<Value>(&e.status().unwrap().body()).unwrap(), serde_json::from_str::<Value>(&body).unwrap());
}

/// The names of a list's items.
fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().expect("items").iter().map(|o| o["metadata"]["name"].as_str().expect("a name").to_owned()).collect()
}

#[test]
fn sharded_lists_hold_exactly_the_objects_whose_hash_is_in_range_and_echo_the_canonical_selector() {
    let all: Value = serde_json::from_str(&capture("list-pods-all.txt").1).unwrap();
    for name in ["list-pods-lower.txt", "list-pods-upper.txt", "list-pods-or.txt", "list-pods-namespace.txt", "list-pods-rv0.txt"] {
        let (params, body) = capture(name);
        let list: Value = serde_json::from_str(&body).unwrap();
        let s = ShardSelector::parse(param(&params, "shardSelector")).expect("a valid selector");
        let expected: Vec<String> = all["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| s.selects(o["metadata"]["uid"].as_str().unwrap(), o["metadata"]["namespace"].as_str().unwrap()))
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names(&list), expected, "{name}");
        assert_eq!(list["metadata"]["shardInfo"]["selector"].as_str(), Some(s.info().as_str()), "{name}");
    }
}

#[test]
fn the_upper_and_lower_halves_split_the_namespace() {
    let all = names(&serde_json::from_str(&capture("list-pods-all.txt").1).unwrap());
    let mut halves = [
        names(&serde_json::from_str(&capture("list-pods-lower.txt").1).unwrap()),
        names(&serde_json::from_str(&capture("list-pods-upper.txt").1).unwrap()),
    ]
    .concat();
    halves.sort();
    assert_eq!(halves, all);
    assert!(halves.len() > 2, "the capture has pods in both halves");
}

#[test]
fn info_normalises_spaces_and_quotes() {
    let s = ShardSelector::parse(r#" ( shardRange( object.metadata.uid ,"0x0000000000000000",'0x4000000000000000') )||shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"#).unwrap();
    assert_eq!(
        s.info(),
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    );
    assert!(s.matches_hash(0) && s.matches_hash(u64::MAX) && !s.matches_hash(0x8000_0000_0000_0000));
}

#[test]
fn text_beyond_the_subset_is_left_to_the_apiserver() {
    for text in [
        "shardRange(object.metadata.uid, 1.5, '0x0')",
        "object.f(1)",
        "shardRange(",
        "a && b",
        "'unterminated",
        "shardRange(x, 'a\\'b', 'c')",
    ] {
        assert_eq!(ShardSelector::parse(text), Err(ShardError::Beyond), "{text}");
    }
}

#[test]
fn the_protobuf_list_carries_shard_info_as_list_meta_field_5() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/reference/sharding/list-pods-protobuf.txt");
    let raw = std::fs::read(path).unwrap();
    let (params, _) = capture("list-pods-lower.txt");
    let info = ShardSelector::parse(param(&params, "shardSelector")).unwrap().info();
    let body = &raw[raw.windows(2).position(|w| w == b"\n\n").unwrap() + 2..];
    // After the TypeMeta: the raw PodList (field 2), whose field 1 is its ListMeta.
    let at = body.windows(7).position(|w| w == b"PodList").unwrap() + 7;
    let mut rest = &body[at..];
    let mut take_len = |tag: u8| {
        assert_eq!(rest[0], tag);
        let (mut len, mut shift, mut i) = (0usize, 0, 1);
        loop {
            len |= usize::from(rest[i] & 0x7f) << shift;
            shift += 7;
            i += 1;
            if rest[i - 1] & 0x80 == 0 {
                break;
            }
        }
        rest = &rest[i..];
        len
    };
    take_len(0x12);
    let len = take_len(0x0a);
    let meta = &rest[..len];
    let rv = std::str::from_utf8(&meta[4..4 + usize::from(meta[3])]).unwrap().parse().unwrap();
    let ours = crate::protobuf::list_meta(&crate::list::ListMeta {
        resource_version: rv,
        continue_token: None,
        remaining_item_count: None,
        shard_info: Some(info),
    });
    assert_eq!(meta, &ours[..]);
}
