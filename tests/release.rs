//! One version an operator can name: `Cargo.toml`'s, which `kache
//! --version` prints, is the Helm chart's `version` and `appVersion`, the
//! image tag every kustomization and the chart deploy, the Dockerfile's
//! version label, and the newest release in CHANGELOG.md.

use std::path::Path;

use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(path: &str) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_chart_the_manifests_the_dockerfile_and_the_changelog_carry_cargos_version() {
    let chart = yaml("charts/kache/Chart.yaml");
    assert_eq!(chart["version"], VERSION, "charts/kache/Chart.yaml version");
    assert_eq!(chart["appVersion"], VERSION, "charts/kache/Chart.yaml appVersion (the image tag by default)");
    assert_eq!(yaml("charts/kache/values.yaml")["image"]["tag"], "", "values.yaml's image.tag defaults to appVersion");

    for kustomization in ["config/deploy/base", "config/deploy/overlays/shared", "config/deploy/overlays/sidecar"] {
        let images = yaml(&format!("{kustomization}/kustomization.yaml"))["images"].clone();
        let tags: Vec<&Value> = images.as_array().into_iter().flatten().map(|i| &i["newTag"]).collect();
        assert!(!tags.is_empty() && tags.iter().all(|t| *t == VERSION), "{kustomization}: image tags {tags:?}, not {VERSION}");
    }

    let dockerfile = read("Dockerfile");
    let arg = dockerfile.lines().find_map(|l| l.strip_prefix("ARG KACHE_VERSION=")).expect("the Dockerfile's ARG KACHE_VERSION");
    assert_eq!(arg, VERSION, "the Dockerfile's version label");

    let changelog = read("CHANGELOG.md");
    let newest = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## [")?.split(']').next())
        .find(|v| *v != "Unreleased")
        .expect("a release in CHANGELOG.md");
    assert_eq!(newest, VERSION, "CHANGELOG.md's newest release");
}
