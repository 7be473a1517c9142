//! A scenario's results, shown three ways: a table on stdout (every cell
//! beside its direct target's, with ratios; then a scenario's figures per
//! side, if it has any), `--json FILE` with every figure (including the
//! latency CDF and throughput timeline of each cell, and each side's
//! figures as an object named for the side), and `--plot FILE.svg`: per
//! workload, the latency CDF and the throughput over time, one series per
//! target.

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use serde_json::{Value, json};

use crate::record::{BUCKET, Row};
use crate::target::{Role, TargetArgs};

/// Everything a scenario measured.
#[derive(Debug)]
pub struct Report {
    /// `lists`, `watch` or `mixed`.
    pub scenario: &'static str,
    /// The parameters of the run, for the JSON and the table's heading.
    pub params: Value,
    /// The cells, grouped by workload, direct target first.
    pub rows: Vec<Row>,
    /// Figures per side (`direct`, `kache`).
    pub sides: Vec<(&'static str, Figures)>,
}

/// Figures by name, in order; `None`: not measured.
pub type Figures = Vec<(&'static str, Option<f64>)>;

/// Quantiles reported in the table and the JSON.
const QUANTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

impl Report {
    /// The direct target's row for the same workload.
    fn direct(&self, row: &Row) -> Option<&Row> {
        self.rows.iter().find(|r| r.workload == row.workload && r.role == Role::Direct)
    }

    /// The table, as printed.
    pub fn table(&self) -> String {
        let mut out = format!("loadtest {} — {}\n\n", self.scenario, self.params);
        out += &format!(
            "{:<24} {:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>7} {:>8} {:>8} {:>8}\n",
            "workload",
            "target",
            "ops",
            "ops/s",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "errors",
            "MB in",
            "cpu s",
            "peak MB",
            "×direct",
            "p99 ÷d"
        );
        let ms = |v: f64| if v >= 1000.0 { format!("{:.2}s", v / 1000.0) } else { format!("{v:.2}ms") };
        let opt = |v: Option<f64>, scale: f64, digits: usize| v.map_or("-".to_string(), |v| format!("{:.*}", digits, v / scale));
        for row in &self.rows {
            let (speedup, p99) = match self.direct(row) {
                Some(d) if d.role != row.role => {
                    (format!("{:.2}", row.throughput() / d.throughput().max(1e-9)), format!("{:.2}", row.ms(0.99) / d.ms(0.99).max(1e-9)))
                }
                _ => ("-".into(), "-".into()),
            };
            out += &format!(
                "{:<24} {:<8} {:>8} {:>9.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9.1} {:>7} {:>8} {:>8} {:>8}\n",
                row.workload,
                row.target,
                row.rec.count(),
                row.throughput(),
                ms(row.ms(0.5)),
                ms(row.ms(0.9)),
                ms(row.ms(0.99)),
                ms(row.ms(0.999)),
                ms(row.rec.latency.max() as f64 / 1000.0),
                row.rec.errors(),
                row.rec.bytes as f64 / 1e6,
                opt(row.cpu, 1.0, 2),
                opt(row.peak_rss.map(|b| b as f64), 1e6, 0),
                speedup,
                p99,
            );
            let mut notes: Vec<String> = row.extra.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let failed: Vec<String> =
                row.rec.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(s, n)| format!("{s}×{n}")).collect();
            if !failed.is_empty() {
                notes.push(format!("statuses {}", failed.join(" ")));
            }
            if !notes.is_empty() {
                out += &format!("{:<24} {}\n", "", notes.join(", "));
            }
        }
        if let Some((_, first)) = self.sides.first() {
            out += &format!("\n{:<28}", "per side");
            for (side, _) in &self.sides {
                out += &format!(" {side:>14}");
            }
            for (i, (key, _)) in first.iter().enumerate() {
                out += &format!("\n{key:<28}");
                for (_, figures) in &self.sides {
                    let value = figures.get(i).and_then(|f| f.1);
                    let value = value.map_or("-".to_string(), |v| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") });
                    out += &format!(" {value:>14}");
                }
            }
            out += "\n";
        }
        out
    }

    /// Every figure, as JSON.
    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut latency: serde_json::Map<String, Value> =
                    QUANTILES.iter().map(|(k, q)| (k.to_string(), json!(r.rec.latency.value_at_quantile(*q)))).collect();
                latency.insert("max".into(), json!(r.rec.latency.max()));
                latency.insert("mean".into(), json!(r.rec.latency.mean()));
                let direct = self.direct(r).filter(|d| d.role != r.role);
                json!({
                    "workload": r.workload,
                    "target": r.target,
                    "role": r.role.name(),
                    "operations": r.rec.count(),
                    "errors": r.rec.errors(),
                    "statuses": r.rec.statuses.iter().map(|(s, n)| (s.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "seconds": r.wall.as_secs_f64(),
                    "throughput_per_second": r.throughput(),
                    "latency_us": latency,
                    "bytes_received": r.rec.bytes,
                    "cpu_seconds": r.cpu,
                    "peak_rss_bytes": r.peak_rss,
                    "vs_direct": direct.map(|d| json!({
                        "throughput": r.throughput() / d.throughput().max(1e-9),
                        "p50": r.ms(0.5) / d.ms(0.5).max(1e-9),
                        "p99": r.ms(0.99) / d.ms(0.99).max(1e-9),
                        "cpu": r.cpu.zip(d.cpu).map(|(a, b)| a / b.max(1e-9)),
                    })),
                    "extra": r.extra.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                    "latency_cdf_us": cdf(r).into_iter().map(|(us, q)| json!([us, q])).collect::<Vec<_>>(),
                    "throughput_timeline": r.rec.timeline.iter().enumerate()
                        .map(|(i, n)| json!([i as f64 * BUCKET.as_secs_f64(), *n as f64 / BUCKET.as_secs_f64()]))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut out = json!({"scenario": self.scenario, "params": self.params, "rows": rows});
        for (side, figures) in &self.sides {
            out[*side] = figures.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>().into();
        }
        out
    }

    /// Prints the table and writes the files `args` asks for.
    pub fn emit(&self, args: &TargetArgs) -> anyhow::Result<()> {
        println!("{}", self.table());
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_vec_pretty(&self.json())?).with_context(|| format!("writing {}", path.display()))?;
            println!("figures: {}", path.display());
        }
        if let Some(path) = &args.plot {
            self.plot(path).with_context(|| format!("drawing {}", path.display()))?;
            println!("plot: {}", path.display());
        }
        Ok(())
    }

    /// One line of panels per workload: its latency CDF (left) and its
    /// throughput over time (right), one series per target.
    pub fn plot(&self, path: &Path) -> anyhow::Result<()> {
        let mut workloads: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !workloads.contains(&r.workload.as_str()) {
                workloads.push(&r.workload);
            }
        }
        let root = SVGBackend::new(path, (1200, 40 + 300 * workloads.len() as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let root =
            root.titled(&format!("loadtest {}: latency CDF and throughput over time, per target", self.scenario), ("sans-serif", 22))?;
        for (panel, workload) in root.split_evenly((workloads.len(), 1)).iter().zip(&workloads) {
            let rows: Vec<(usize, &Row)> = self.rows.iter().enumerate().filter(|(_, r)| r.workload == *workload).collect();
            let (left, right) = panel.split_horizontally(600);
            cdf_chart(&left, workload, &rows)?;
            throughput_chart(&right, workload, &rows)?;
        }
        root.present()?;
        Ok(())
    }
}

/// The series style of row `i` and its legend mark.
fn style(i: usize) -> ShapeStyle {
    Palette99::pick(i).to_rgba().stroke_width(2)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The latency CDFs of `rows` (one workload), log-scale milliseconds.
fn cdf_chart(area: &Area, workload: &str, rows: &[(usize, &Row)]) -> anyhow::Result<()> {
    let curves: Vec<Vec<(f64, f64)>> =
        rows.iter().map(|(_, r)| cdf(r).into_iter().map(|(us, q)| (us as f64 / 1000.0, q)).collect()).collect();
    let (lo, hi) = curves.iter().flatten().fold((f64::MAX, 0.0f64), |(lo, hi), (x, _)| (lo.min(*x), hi.max(*x)));
    let (lo, hi) = if lo > hi { (0.01, 1.0) } else { ((lo * 0.8).max(0.001), (hi * 1.25).max(lo * 2.0)) };
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{workload}: latency CDF"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)?;
    chart.configure_mesh().x_desc("latency (ms, log scale)").y_desc("fraction ≤").draw()?;
    lines(&mut chart, rows, curves, SeriesLabelPosition::LowerRight)
}

/// The throughput of `rows` (one workload) over time, each from its own first operation.
fn throughput_chart(area: &Area, workload: &str, rows: &[(usize, &Row)]) -> anyhow::Result<()> {
    let width = BUCKET.as_secs_f64();
    let series: Vec<Vec<(f64, f64)>> = rows
        .iter()
        .map(|(_, r)| {
            let first = r.rec.timeline.iter().position(|n| *n > 0).unwrap_or(0);
            r.rec.timeline[first..].iter().enumerate().map(|(t, n)| (t as f64 * width, *n as f64 / width)).collect()
        })
        .collect();
    let seconds = series.iter().flatten().map(|p| p.0).fold(width, f64::max);
    let peak = series.iter().flatten().map(|p| p.1).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{workload}: throughput"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..seconds, 0.0..peak * 1.1)?;
    chart.configure_mesh().x_desc("seconds from the first operation").y_desc("operations / s").draw()?;
    lines(&mut chart, rows, series, SeriesLabelPosition::UpperRight)
}

/// Draws one line per row, labelled with its target, and the legend at `legend`.
fn lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    rows: &[(usize, &Row)],
    series: Vec<Vec<(f64, f64)>>,
    legend: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for ((i, row), points) in rows.iter().zip(series) {
        let s = style(*i);
        chart
            .draw_series(LineSeries::new(points, s))?
            .label(row.target.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], s));
    }
    chart.configure_series_labels().position(legend).background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    Ok(())
}

/// A row's latency CDF: (microseconds, fraction at or below), at most ~200 points.
fn cdf(row: &Row) -> Vec<(u64, f64)> {
    let h = &row.rec.latency;
    if h.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(u64, f64)> = Vec::new();
    for i in 0..=200 {
        let q = 1.0 - 0.5f64.powf(i as f64 / 20.0);
        let q = if i == 200 { 1.0 } else { q };
        let v = h.value_at_quantile(q);
        match out.last_mut() {
            Some(last) if last.0 == v => last.1 = q,
            _ => out.push((v, q)),
        }
    }
    out
}
