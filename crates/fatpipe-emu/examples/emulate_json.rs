//! Runs a normalized scenario (the JSON `fatpipe validate --json` prints) in the emulator
//! and prints the result document: a way to try the emulator without the Python package.
//!
//!     fatpipe validate --json examples/reno-100M-40ms.toml > /tmp/s.json
//!     cargo run --release -p fatpipe-emu --example emulate_json /tmp/s.json > /tmp/out.json

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: emulate_json SCENARIO.json");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    let run = || -> Result<fatpipe_emu::summary::EmulationOutput, fatpipe_emu::Error> {
        let mut options = fatpipe_emu::Options::default();
        // Optional second argument: the relay's spin margin in microseconds.
        if let Some(us) = std::env::args().nth(2).and_then(|a| a.parse::<u64>().ok()) {
            options.spin_margin_ps = us * 1_000_000;
        }
        // Optional third argument: 0 to leave the relay at normal priority.
        if std::env::args().nth(3).as_deref() == Some("0") {
            options.realtime_priority = false;
        }
        // Optional fourth argument: 0 for one packet per read and write on the TUN devices.
        if std::env::args().nth(4).as_deref() == Some("0") {
            options.tun_offload = false;
        }
        let mut emulation = fatpipe_emu::Emulation::new(
            fatpipe_core::Scenario::from_json(&text).map_err(fatpipe_emu::Error::Scenario)?,
            options,
        )?;
        emulation.start()?;
        emulation.finish()
    };
    match run() {
        Ok(doc) => println!("{}", serde_json::to_string(&doc).expect("JSON")),
        Err(e) => {
            eprintln!("emulate_json: {e}");
            std::process::exit(1);
        }
    }
}
