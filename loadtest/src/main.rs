//! The kache load generator and watch-latency benchmark. Each scenario
//! measures the direct target (the simulator it starts, or a real cluster
//! through `--kubeconfig`), kache in front of it (started, or named with
//! `--kache`) and, for lists, a plain server sending the same bytes from
//! memory, side by side in one run; it prints a table with ratios against
//! the direct target and writes `--json FILE` and `--plot FILE.svg`.
//!
//! - `lists`: full lists (rv=0, gzip, consistent), paged lists in JSON,
//!   protobuf and Table, the indexed selectors.
//! - `watch`: watch fan-out and write-to-delivery latency, kubelet-pattern
//!   and cluster-wide watchers; missed, duplicated and reordered events.
//! - `mixed`: kubelets, controllers' informers and kubectl users together,
//!   with a relist storm.
//! - `consistent`: reads without `resourceVersion` under three write loads.
//! - `auth`: paged lists with client authentication and authorization off,
//!   on with cold review caches, and on with warm ones.
//! - `small`: the small requests most traffic is (a consistent GET, a
//!   Table page, a GET kache relays, a PATCH), interleaved, p50/p90/p99.
//! - `fairness`: a client flooding full lists beside one making small reads,
//!   each a user of its own: the reader's latency quiet and flooded.
//! - `audit`: kache's CPU with and without an audit policy, for thousands
//!   of kubelets' lists and watches and relist storms.
//!
//! Bounded in count and time; without a kubeconfig, loopback only; the
//! processes it starts are killed at the end, and what it creates on a
//! cluster is deleted on every way out, Ctrl-C included (see `cleanup`).

mod audit;
mod auth;
mod cleanup;
mod consistent;
mod fairness;
mod fixtures;
mod follow;
mod h2c;
mod lists;
mod mixed;
mod objects;
mod procs;
mod progress;
mod record;
mod report;
mod restart;
mod roads;
mod small;
mod target;
mod vitals;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cleanup::Cleanup;

#[derive(Debug, Parser)]
#[command(name = "loadtest", about = "Load generator and latency benchmark for kache")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Full and paged lists: the direct target vs kache vs a plain memory server.
    Lists(lists::ListsArgs),
    /// Watch fan-out and latency: the direct target vs kache.
    Watch(watch::WatchArgs),
    /// Kubelets, informers and kubectl together, with a relist storm: the direct target vs kache.
    Mixed(mixed::MixedArgs),
    /// Consistent reads (no resourceVersion) through kache vs the simulator directly.
    Consistent(consistent::ConsistentArgs),
    /// What client authentication and authorization cost kache's answers from memory.
    Auth(auth::AuthArgs),
    /// Small requests (a consistent GET, a Table page, a relayed GET, a PATCH): the direct target vs kache, interleaved.
    Small(small::SmallArgs),
    /// A flooding client beside a well-behaved one: the latter's latency quiet and flooded, direct vs kache.
    Fairness(fairness::FairnessArgs),
    /// What auditing (a Metadata policy, a log file) costs kache's CPU: kubelets' watches and relist storms.
    Audit(audit::AuditArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let command = Cli::parse().command;
    cleanup::supervise(|cleanup| run(command, cleanup)).await
}

/// Runs one scenario; those that create objects record them in `cleanup`.
async fn run(command: Cmd, cleanup: Cleanup) -> anyhow::Result<()> {
    match command {
        Cmd::Lists(args) => lists::run_all(args).await,
        Cmd::Watch(args) => watch::run_all(args, cleanup).await,
        Cmd::Mixed(args) => mixed::run_all(args, cleanup).await,
        Cmd::Consistent(args) => consistent::run_all(args).await,
        Cmd::Auth(args) => auth::run_all(args).await,
        Cmd::Small(args) => small::run_all(args, cleanup).await,
        Cmd::Fairness(args) => fairness::run_all(args).await,
        Cmd::Audit(args) => audit::run_all(args).await,
    }
}
