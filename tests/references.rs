//! No dead references: every relative path a Markdown file links to or
//! names in backticks, and every repository path or file name a comment in
//! Rust (`//!`, `///`, `//`) names in backticks, exists in the repository.
//! Anchors (`#...`) and URLs are not checked. The rules are those of the
//! review hook `deadrefs.py`:
//!
//! - a Markdown link `[text](PATH)` is resolved from the file's folder;
//! - a backticked path that starts with a top folder (`src/`, `docs/`, …)
//!   is resolved from the file's folder, from the repository's root, or
//!   from a crate's root (`sim/src/...` named from inside `sim/`);
//! - a bare Markdown file name (`README.md`) is dead only if no file of
//!   that name exists anywhere.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Top folders: a backticked path starting with one is a repository path.
const TOP: &[&str] = &["src/", "docs/", "config/", "tests/", "apimachinery/", "sim/", "loadtest/", "benches/", ".ci/"];
/// Crates whose paths may be named from their own root.
const CRATES: &[&str] = &["apimachinery", "sim", "loadtest"];
/// Extensions that make a backticked word a file name.
const EXTENSIONS: &[&str] = &["rs", "md", "yaml", "yml", "toml", "json", "sh", "go", "py"];
/// Folders never read: build output, version control, and recorded API answers.
const SKIPPED: &[&str] = &[".git", "target", "node_modules"];

/// Every file under `root` (the skipped folders and `tests/reference` aside), and every file name.
fn files(root: &Path) -> (Vec<PathBuf>, BTreeSet<String>) {
    let (mut out, mut names, mut folders) = (Vec::new(), BTreeSet::new(), vec![root.to_path_buf()]);
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let entry = entry.expect("a folder entry");
            let (path, kind) = (entry.path(), entry.file_type().expect("a file type"));
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                if !SKIPPED.contains(&name.as_str()) && !path.ends_with("tests/reference") {
                    folders.push(path);
                }
            } else {
                names.insert(name);
                out.push(path);
            }
        }
    }
    out.sort();
    (out, names)
}

/// Each `](PATH)` of a Markdown text: the path, its anchor left off.
fn links(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("](") {
        let rest = &text[at + 2..];
        let end = rest.find(|c: char| c == ')' || c == '#' || c.is_whitespace()).unwrap_or(rest.len());
        let closed = match rest[end..].chars().next() {
            Some(')') => true,
            Some('#') => rest[end..].contains(')'),
            _ => false,
        };
        if end > 0 && closed {
            out.push(&rest[..end]);
        }
    }
    out
}

/// Each backticked word that reads as a path: a file name with one of
/// [`EXTENSIONS`], or a folder (ending in `/`).
fn ticked(text: &str) -> Vec<&str> {
    let in_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('`').map(|i| from + i) {
        let rest = &text[open + 1..];
        let end = rest.find(|c: char| !in_path(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        let is_path = match word.rsplit_once('.') {
            _ if word.len() > 1 && word.ends_with('/') => true,
            Some((stem, ext)) => !stem.is_empty() && EXTENSIONS.contains(&ext),
            None => false,
        };
        if rest[end..].starts_with('`') && is_path {
            out.push(word);
            from = open + 1 + end + 1;
        } else {
            from = open + 1;
        }
    }
    out
}

/// `path` with `.` and `..` resolved without the file system (as `os.path.normpath`).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => drop(out.pop()),
            c => out.push(c),
        }
    }
    out
}

/// The dead references under `root`, each as `FILE: \`REF\` names nothing`, and how many were alive.
fn dead(root: &Path) -> (Vec<String>, usize) {
    let (files, names) = files(root);
    let (mut found, mut alive) = (Vec::new(), 0);
    let mut check = |file: &Path, reference: &str| {
        if reference.contains("://") || reference.starts_with("mailto:") || reference.starts_with("../shared") {
            return;
        }
        let base = file.parent().expect("a file's folder");
        let mut candidates = vec![normal(&base.join(reference))];
        if TOP.iter().any(|t| reference.starts_with(t)) {
            candidates.push(normal(&root.join(reference)));
            candidates.extend(CRATES.iter().map(|c| normal(&root.join(c).join(reference))));
        } else if !reference.trim_end_matches('/').contains('/') {
            if reference.ends_with(".md") && !names.contains(reference) {
                found.push(format!("{}: `{reference}` names nothing", file.strip_prefix(root).unwrap_or(file).display()));
            }
            return;
        }
        if candidates.iter().any(|c| c.exists()) {
            alive += 1;
        } else {
            found.push(format!("{}: `{reference}` names nothing", file.strip_prefix(root).unwrap_or(file).display()));
        }
    };
    for file in &files {
        let markdown = file.extension().is_some_and(|e| e == "md");
        let rust = file.extension().is_some_and(|e| e == "rs");
        if !markdown && !rust {
            continue;
        }
        let text = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let text = String::from_utf8_lossy(&text);
        if markdown {
            for reference in links(&text) {
                check(file, reference);
            }
            for reference in ticked(&text).into_iter().filter(|r| TOP.iter().any(|t| r.starts_with(t))) {
                check(file, reference);
            }
        } else {
            for comment in text.lines().map(str::trim).filter(|l| l.starts_with("//")) {
                for reference in ticked(comment) {
                    let named = TOP.iter().any(|t| reference.starts_with(t))
                        || (reference.contains('/') && (reference.ends_with(".rs") || reference.ends_with(".md")))
                        || reference.ends_with(".md");
                    if named {
                        check(file, reference);
                    }
                }
            }
        }
    }
    (found, alive)
}

#[test]
fn every_path_the_docs_and_doc_comments_name_exists() {
    let (found, alive) = dead(Path::new(env!("CARGO_MANIFEST_DIR")));
    println!("{alive} references alive, {} dead", found.len());
    assert!(alive > 100, "only {alive} references found: is the walk reading the repository?");
    assert!(found.is_empty(), "dead references:\n{}", found.join("\n"));
}

#[test]
fn a_dead_path_is_found_wherever_it_is_named() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let root = dir.path();
    for folder in ["docs", "src/store", "sim/src"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::write(root.join("src/store/mod.rs"), "").unwrap();
    std::fs::write(root.join("sim/src/lib.rs"), "//! Alive: `src/store/mod.rs`, `sim/src/lib.rs`, `src/lib.rs`, `docs/`.\n").unwrap();
    std::fs::write(root.join("src/lib.rs"), "/// Dead: `src/gone.rs`, [`Thing`], `README.md`.\nfn f() {}\n// `docs/old.md`\n").unwrap();
    std::fs::write(
        root.join("docs/guide.md"),
        "[up](../src/lib.rs) [anchor](#here) [web](https://example.com/x.md) [gone](missing.md#part) `src/store/` `config/none.yaml`\n",
    )
    .unwrap();
    let (mut found, alive) = dead(root);
    found.sort();
    assert_eq!(
        found,
        [
            "docs/guide.md: `config/none.yaml` names nothing",
            "docs/guide.md: `missing.md` names nothing",
            "src/lib.rs: `README.md` names nothing",
            "src/lib.rs: `docs/old.md` names nothing",
            "src/lib.rs: `src/gone.rs` names nothing",
        ]
    );
    assert_eq!(alive, 6, "four in sim/src/lib.rs, two in docs/guide.md");
}
