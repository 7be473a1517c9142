//! The kache load generator and latency benchmark. It gets its workloads
//! with the load-test issue; for now it only states that.

fn main() {
    eprintln!("loadtest: no workloads yet; see the project's load-test issue");
    std::process::exit(2);
}
