//! Runs a normalized scenario (the core's JSON, as `fatpipe validate --core` or
//! `fatpipe.scenario.load(...).core` writes it) without Python, and prints the events
//! processed and the wall time: for profiling the core (`perf record`) and for the
//! side-by-side benchmarks in `benchmarks/`, which compare simulators without start-up.
//!
//! `cargo run --release -p fatpipe-core --example run_scenario -- scenario.json [warmup_s]`
//! With `warmup_s`, the run goes to that simulated time untimed first, and only the rest
//! is timed (the counts printed are for the timed part). With `FATPIPE_OUTPUT=path` set, the
//! run's whole output (summary without its event count, series, requests) is also written
//! there as JSON, to compare two builds' results byte for byte.

use fatpipe_core::Simulation;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: run_scenario SCENARIO.json [WARMUP_SECONDS]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("run_scenario: cannot read {path}: {e}");
        std::process::exit(2)
    });
    let warmup_ps = match args.get(2).map(|s| s.parse::<f64>()) {
        None => 0,
        Some(Ok(s)) if s >= 0.0 => (s * 1e12) as u64,
        Some(_) => {
            eprintln!("run_scenario: WARMUP_SECONDS must be a number of seconds >= 0, not {:?}", args[2]);
            std::process::exit(2)
        }
    };
    let mut sim = Simulation::from_json(&text).unwrap_or_else(|e| {
        eprintln!("run_scenario: {e}");
        std::process::exit(2)
    });
    sim.run_until(warmup_ps);
    let (events0, segments0) = (sim.events_processed(), data_segments(&sim));
    let hops0 = sim.hops_handed_on + sim.arrivals_direct;
    let (start, cpu0) = (Instant::now(), cpu_ns());
    sim.run();
    let wall_s = start.elapsed().as_secs_f64();
    // On a shared machine the thread's time on a CPU is steadier than wall time.
    let cpu_s = cpu_ns().zip(cpu0).map_or(f64::NAN, |(b, a)| (b - a) as f64 / 1e9);
    let events = sim.events_processed() - events0;
    let segments = data_segments(&sim) - segments0;
    let hops = sim.hops_handed_on + sim.arrivals_direct - hops0;
    println!(
        "data_segments {segments} events {events} hops_without_event {hops} wall_s {wall_s:.3} segments_per_s {:.0} events_per_segment {:.2} \
         cpu_s {cpu_s:.3} segments_per_cpu_s {:.0}",
        segments as f64 / wall_s,
        events as f64 / segments.max(1) as f64,
        segments as f64 / cpu_s,
    );
    if let Ok(path) = std::env::var("FATPIPE_OUTPUT") {
        let mut output = sim.finish();
        output["summary"].as_object_mut().map(|s| s.remove("events"));
        std::fs::write(&path, output.to_string()).unwrap_or_else(|e| {
            eprintln!("run_scenario: cannot write {path}: {e}");
            std::process::exit(2)
        });
    }
}

/// This thread's time on a CPU so far, nanoseconds (Linux: the first field of
/// /proc/thread-self/schedstat); None elsewhere.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn data_segments(sim: &Simulation) -> u64 {
    sim.flows.iter().map(|f| f.sender.tcb.stats.segments_sent).sum()
}
