//! The kache load generator. Every scenario starts the simulator (and kache
//! in front of it) from the kache binary as processes on loopback and runs
//! the same clients against each target in one run, so figures are
//! comparable as ratios on a shared machine.
//!
//! - `lists`: list workloads through kache vs the simulator vs a plain
//!   server that sends the same bytes from memory.
//! - `watch`: watch fan-out and write-to-delivery latency, kubelet-pattern
//!   and cluster-wide watchers, through kache vs directly.
//! - `consistent`: reads without `resourceVersion` under three write loads,
//!   through kache vs directly, with the share kache answered from memory.
//!
//! - `auth`: paged lists with client authentication and authorization off,
//!   on with cold review caches, and on with warm ones.
//!
//! Bounded in count and time; loopback only; children killed at the end.

mod auth;
mod consistent;
mod lists;
mod procs;
mod watch;
mod writes;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "loadtest", about = "Load generator and latency benchmark for kache")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Lists through kache vs the simulator directly vs a plain memory server.
    Lists(lists::ListsArgs),
    /// Watch fan-out and latency through kache vs the simulator directly.
    Watch(watch::WatchArgs),
    /// Consistent reads (no resourceVersion) through kache vs the simulator directly.
    Consistent(consistent::ConsistentArgs),
    /// What client authentication and authorization cost kache's answers from memory.
    Auth(auth::AuthArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Lists(args) => lists::run_all(args).await,
        Cmd::Watch(args) => watch::run_all(args).await,
        Cmd::Consistent(args) => consistent::run_all(args).await,
        Cmd::Auth(args) => auth::run_all(args).await,
    }
}
