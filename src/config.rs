//! The configuration file: `kache serve --config FILE`.
//!
//! One YAML mapping whose keys are the flags of `kache serve` (and the
//! global `logLevel`/`logFormat`) in camelCase: `--shutdown-drain 30` is
//! `shutdownDrain: 30`. So every key is also a flag, and the file is read
//! by turning it into flags placed before the command line's: a flag given
//! on the command line wins over the file. Values: a string or number;
//! `true` for a switch (`false` leaves it off); a list for a comma-separated
//! flag (`resources: [pods, configmaps]`); `null` for the default.
//!
//! Invariant: a file that is not such a mapping, names a key that is no
//! flag, or gives a value the flag refuses is refused whole, with the key
//! and the reason named — kache never starts on half a configuration.

use std::path::Path;

use clap::Command;

/// A configuration file kache refuses, with why.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// What is wrong, naming the key.
    pub reason: String,
}

/// `shutdownDrain` → `shutdown-drain`.
fn kebab(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `shutdown-drain` → `shutdownDrain`.
pub(crate) fn camel(flag: &str) -> String {
    let mut out = String::with_capacity(flag.len());
    let mut upper = false;
    for c in flag.chars() {
        match c {
            '-' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// The long flags `command` takes (its own and the global ones of `root`), but not `--config` itself.
fn known_flags<'a>(root: &'a Command, command: &'a Command) -> impl Iterator<Item = &'a clap::Arg> {
    root.get_arguments()
        .filter(|a| a.is_global_set())
        .chain(command.get_arguments())
        .filter(|a| a.get_long().is_some_and(|l| l != "config"))
}

/// The flags `FILE` stands for, for the subcommand `command` of `root`.
pub fn flags(path: &Path, root: &Command, command: &Command) -> Result<Vec<String>, ConfigError> {
    let file = path.display().to_string();
    let fail = |reason: String| ConfigError { file: file.clone(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let doc: serde_json::Value = serde_saphyr::from_str(&text).map_err(|e| fail(format!("not valid YAML: {e}")))?;
    let map = match doc {
        serde_json::Value::Object(map) => map,
        serde_json::Value::Null => return Ok(Vec::new()),
        other => return Err(fail(format!("expected a mapping of settings, found {}", kind(&other)))),
    };
    let known: Vec<&clap::Arg> = known_flags(root, command).collect();
    let mut out = Vec::new();
    for (key, value) in map {
        let flag = kebab(&key);
        let Some(arg) = known.iter().find(|a| a.get_long() == Some(flag.as_str())) else {
            let hint = known
                .iter()
                .filter_map(|a| a.get_long())
                .map(camel)
                .min_by_key(|k| strsim::levenshtein(k, &key))
                .filter(|k| strsim::levenshtein(k, &key) <= 3)
                .map(|k| format!(" (did you mean {k}?)"))
                .unwrap_or_default();
            return Err(fail(format!("unknown key {key}{hint}")));
        };
        let switch = !arg.get_action().takes_values();
        let scalar = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::Bool(on) if switch => {
                if on {
                    out.push(format!("--{flag}"));
                }
            }
            _ if switch => return Err(fail(format!("key {key}: expected true or false, found {}", kind(&value)))),
            serde_json::Value::Array(items) => {
                let Some(delimiter) = arg.get_value_delimiter() else {
                    return Err(fail(format!("key {key}: expected one value, found a list")));
                };
                let mut values = Vec::with_capacity(items.len());
                for item in &items {
                    let v = scalar(item).ok_or_else(|| fail(format!("key {key}: list items must be values, found {}", kind(item))))?;
                    if v.contains(delimiter) {
                        return Err(fail(format!("key {key}: item {v:?} contains {delimiter:?}")));
                    }
                    values.push(v);
                }
                out.push(format!("--{flag}={}", values.join(&delimiter.to_string())));
            }
            v => match scalar(&v) {
                Some(s) => out.push(format!("--{flag}={s}")),
                None => return Err(fail(format!("key {key}: expected a value, found {}", kind(&v)))),
            },
        }
    }
    Ok(out)
}

/// Rewords a command-line parse error of `flags` (from the file) with the file's key names.
pub fn reword(file: &Path, error: &clap::Error) -> ConfigError {
    let mut reason = error.render().to_string();
    reason = reason.lines().find(|l| l.starts_with("error:")).unwrap_or(&reason).trim_start_matches("error: ").to_string();
    // `--page-size <PAGE_SIZE>` → `key pageSize`.
    let mut out = String::new();
    let mut rest = reason.as_str();
    while let Some(at) = rest.find("'--") {
        out.push_str(&rest[..at]);
        let flag_end = rest[at + 3..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).map_or(rest.len(), |e| at + 3 + e);
        let close = rest[flag_end..].find('\'').map_or(flag_end, |e| flag_end + e + 1);
        out.push_str(&format!("key {}", camel(&rest[at + 3..flag_end])));
        rest = &rest[close..];
    }
    out.push_str(rest);
    ConfigError { file: file.display().to_string(), reason: out }
}

/// A YAML value's kind, for messages.
fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "nothing",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn commands() -> (Command, Command) {
        let serve = Command::new("serve")
            .arg(Arg::new("listen").long("listen"))
            .arg(Arg::new("page_size").long("page-size").value_parser(clap::value_parser!(usize)))
            .arg(Arg::new("token_review").long("token-review").action(ArgAction::SetTrue))
            .arg(Arg::new("resources").long("resources").value_delimiter(','))
            .arg(Arg::new("config").long("config"));
        let root = Command::new("kache").arg(Arg::new("log_level").long("log-level").global(true)).subcommand(serve.clone());
        (root, serve)
    }

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn keys_become_flags() {
        let (root, serve) = commands();
        let f = file("listen: 127.0.0.1:9000\npageSize: 100\ntokenReview: true\nresources: [pods, apps/v1/deployments]\nlogLevel: debug\n");
        assert_eq!(
            flags(f.path(), &root, &serve).unwrap(),
            ["--listen=127.0.0.1:9000", "--page-size=100", "--token-review", "--resources=pods,apps/v1/deployments", "--log-level=debug"]
        );
        let off = file("tokenReview: false\nlisten: null\n");
        assert!(flags(off.path(), &root, &serve).unwrap().is_empty());
        assert!(flags(file("").path(), &root, &serve).unwrap().is_empty());
    }

    #[test]
    fn bad_files_are_refused_naming_the_key() {
        let (root, serve) = commands();
        let err = |text: &str| flags(file(text).path(), &root, &serve).unwrap_err().reason;
        assert_eq!(err("pageSise: 3\n"), "unknown key pageSise (did you mean pageSize?)");
        assert_eq!(err("config: other.yaml\n"), "unknown key config");
        assert_eq!(err("tokenReview: yes please\n"), "key tokenReview: expected true or false, found a string");
        assert_eq!(err("listen: [a, b]\n"), "key listen: expected one value, found a list");
        assert_eq!(err("resources: [pods, {a: 1}]\n"), "key resources: list items must be values, found a mapping");
        assert_eq!(err("resources: ['a,b']\n"), "key resources: item \"a,b\" contains ','");
        assert_eq!(err("- listen\n"), "expected a mapping of settings, found a list");
        assert!(err("listen: [\n").starts_with("not valid YAML"));
    }

    #[test]
    fn a_refused_value_names_the_key() {
        let (_, serve) = commands();
        let e = serve.try_get_matches_from(["serve", "--page-size=many"]).unwrap_err();
        let reason = reword(Path::new("kache.yaml"), &e).to_string();
        assert!(reason.starts_with("kache.yaml: invalid value 'many' for key pageSize"), "{reason}");
    }

    #[test]
    fn the_example_file_documents_every_flag_of_kache_serve() {
        use clap::Args;
        let serve = crate::serve::ServeArgs::augment_args(Command::new("serve"));
        let root = crate::logs::LogArgs::augment_args(Command::new("kache")).subcommand(serve.clone());
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kache.yaml");
        flags(&path, &root, &serve).expect("config/kache.yaml is a valid configuration");
        let text = std::fs::read_to_string(&path).unwrap();
        for flag in serve.get_arguments().filter_map(|a| a.get_long()) {
            // Secrets stay out of files: the token comes from tokenFile or the environment.
            if flag != "token" {
                assert!(text.contains(&format!("\n{}:", camel(flag))), "config/kache.yaml lacks {}", camel(flag));
            }
        }
    }

    #[test]
    fn names_convert_both_ways() {
        assert_eq!(kebab("authnFailureCacheTtl"), "authn-failure-cache-ttl");
        assert_eq!(camel("authn-failure-cache-ttl"), "authnFailureCacheTtl");
        assert_eq!(camel("listen"), "listen");
    }
}
