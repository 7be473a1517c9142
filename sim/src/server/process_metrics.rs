//! `GET /metrics`: the process figures every Go binary of Kubernetes
//! exports (client_golang's process collector) and which a tool that
//! measures an apiserver reads — its CPU seconds, resident memory and
//! start time — from `/proc/self` (0 where it cannot be read).

/// Clock ticks a second in `/proc`'s times (USER_HZ, 100 on Linux).
const TICKS: f64 = 100.0;

/// Bytes a page (`/proc/self/statm` counts pages).
const PAGE: f64 = 4096.0;

/// The text exposition of the process figures.
pub(super) fn exposition() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command (which may hold spaces) in parentheses: state is field 3.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu = (field(14) + field(15)) / TICKS;
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok()))
        .unwrap_or(0.0);
    let start = boot + field(22) / TICKS;
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let rss = statm.split_whitespace().nth(1).and_then(|p| p.parse::<f64>().ok()).unwrap_or(0.0) * PAGE;
    format!(
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
         # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu}\n\
         # HELP process_resident_memory_bytes Resident memory size in bytes.\n\
         # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}\n\
         # HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n\
         # TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_are_this_process_s() {
        let text = exposition();
        let value = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok()).unwrap();
        assert!(value("process_resident_memory_bytes") > 1e6, "{text}");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let start = value("process_start_time_seconds");
        assert!(start > now - 3600.0 && start <= now + 1.0, "{start} vs {now}");
        assert!(value("process_cpu_seconds_total") >= 0.0);
    }
}
