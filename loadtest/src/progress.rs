//! The progress bar: one step per (workload, target) cell, the cell being
//! run as its message. Drawn on stderr only when it is a terminal, so
//! tables on stdout and files stay clean; notes go to stderr above it.

use std::fmt::Display;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar over `cells`.
pub fn bar(scenario: &str, cells: usize) -> ProgressBar {
    let bar = ProgressBar::new(cells as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("loadtest {scenario}"));
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// Says `line` on stderr, above `bar` (hidden or not), which is then redrawn.
pub fn note(bar: &ProgressBar, line: impl Display) {
    bar.suspend(|| eprintln!("loadtest: {line}"));
}
