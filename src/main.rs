//! The `kache` command: `serve` in front of an apiserver; with the `sim`
//! feature (on by default), also `demo` in front of a simulated cluster and
//! `sim`, the simulated apiserver alone.

use clap::{Parser, Subcommand};

#[cfg(feature = "sim")]
mod demo;

#[derive(Debug, Parser)]
#[command(name = "kache", version, about = "A Kubernetes API watch cache and list proxy")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Cache an apiserver's resources and serve lists and watches from memory.
    Serve(kache::serve::ServeArgs),
    /// Start a simulated cluster and kache in front of it.
    #[cfg(feature = "sim")]
    Demo(demo::DemoArgs),
    /// Run the in-memory Kubernetes API simulator (kache's test and demo upstream).
    #[cfg(feature = "sim")]
    Sim(sim::cli::SimArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(args) => kache::serve::run(args).await,
        #[cfg(feature = "sim")]
        Command::Demo(args) => demo::run(args).await,
        #[cfg(feature = "sim")]
        Command::Sim(args) => sim::cli::run(args).await.map_err(anyhow::Error::msg),
    }
}
