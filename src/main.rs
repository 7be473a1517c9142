//! The `kache` command: `serve` in front of an apiserver; with the `sim`
//! feature (on by default), also `demo` in front of a simulated cluster and
//! `sim`, the simulated apiserver alone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use kache::config;

mod allocator;
#[cfg(feature = "sim")]
mod demo;

/// `kache --version`: the release (Cargo's version, semver) and the commit it
/// was built from (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("KACHE_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(name = "kache", version = VERSION, about = "A Kubernetes API watch cache and list proxy")]
struct Cli {
    #[command(flatten)]
    logs: kache::logs::LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Cache an apiserver's resources and serve lists and watches from memory.
    Serve(Serve),
    /// Check a configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Start a simulated cluster and kache in front of it.
    #[cfg(feature = "sim")]
    Demo(demo::DemoArgs),
    /// Run the in-memory Kubernetes API simulator (kache's test and demo upstream).
    #[cfg(feature = "sim")]
    Sim(sim::cli::SimArgs),
}

/// `kache serve`: its flags, or a configuration file and flags that override it.
#[derive(Debug, clap::Args)]
struct Serve {
    /// A YAML file of settings: each key a flag in camelCase (`shutdownDrain: 30`); flags given here win.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    args: Box<kache::serve::ServeArgs>,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Check that FILE is a configuration `kache serve --config FILE` accepts, and print its settings.
    Check { file: PathBuf },
}

/// The command line with the flags of `kache serve`'s `--config FILE` put
/// before the command line's own (which win).
fn with_config(path: &Path) -> anyhow::Result<Cli> {
    let root = Cli::command();
    let serve = root.find_subcommand("serve").expect("kache has a serve command");
    let flags = config::flags(path, &root, serve)?;
    // The file alone must be a valid configuration, its errors named by key.
    Cli::try_parse_from(["kache", "serve"].into_iter().map(String::from).chain(flags.iter().cloned()))
        .map_err(|e| config::reword(path, &e))?;
    let mut argv: Vec<String> = std::env::args().collect();
    let at = argv.iter().skip(1).position(|a| a == "serve").map_or(argv.len(), |i| i + 2);
    // A flag on the command line replaces the file's (lists too, which would otherwise add up).
    let given: Vec<String> = argv.iter().skip(1).filter_map(|a| Some(a.strip_prefix("--")?.split('=').next()?.to_string())).collect();
    let flags: Vec<String> = flags.into_iter().filter(|f| !given.iter().any(|g| f[2..].split('=').next() == Some(g))).collect();
    argv.splice(at..at, flags);
    Ok(Cli::try_parse_from(argv).unwrap_or_else(|e| e.exit()))
}

/// `kache config check FILE`: the settings FILE makes, or why it is refused.
fn check(path: &Path) -> anyhow::Result<()> {
    let root = Cli::command();
    let serve = root.find_subcommand("serve").expect("kache has a serve command");
    let flags = config::flags(path, &root, serve)?;
    let cli = Cli::try_parse_from(["kache", "serve"].into_iter().map(String::from).chain(flags.iter().cloned()))
        .map_err(|e| config::reword(path, &e))?;
    let Command::Serve(serve) = cli.command else { unreachable!("parsed as serve") };
    serve.args.check().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    kache::logs::say(&format!("{}: valid; as flags:", path.display()));
    for flag in flags {
        kache::logs::say(&format!("  {flag}"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before any thread exists: the arenas are set up as threads first allocate.
    allocator::limit_arenas();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    match runtime.map_err(anyhow::Error::from).and_then(|rt| rt.block_on(run(cli))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, whatever RUST_BACKTRACE says: these are the user's
            // errors (flags, files, what the apiserver answered), not bugs.
            let _ = writeln!(std::io::stderr(), "Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(mut cli: Cli) -> anyhow::Result<()> {
    if let Command::Serve(Serve { config: Some(path), .. }) = &cli.command {
        cli = with_config(&path.clone())?;
    }
    cli.logs.init()?;
    match cli.command {
        Command::Serve(serve) => kache::serve::run(*serve.args).await,
        Command::Config(ConfigCommand::Check { file }) => check(&file),
        #[cfg(feature = "sim")]
        Command::Demo(args) => demo::run(args).await,
        #[cfg(feature = "sim")]
        Command::Sim(args) => sim::cli::run(args).await.map_err(anyhow::Error::msg),
    }
}
