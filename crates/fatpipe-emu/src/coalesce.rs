//! What a host's TUN device does on the receive side, from the flows' `[flows.host]` settings
//! (the simulator's `host::HostConfig`, one definition): GRO merging and a NIC's interrupt
//! coalescing (ethtool -C `rx-usecs`, `rx-frames`).
//!
//! A NIC with coalescing raises its interrupt `rx-usecs` after the first frame that finds
//! none pending, or at once when `rx-frames` frames are pending; the poll then hands the
//! kernel everything, GRO merging consecutive segments of a connection (the simulator's
//! `host/gro.rs` models the same on the receiving host). The relay does this per device
//! (`deliver.rs`): what the links release to a coalescing device is written at that
//! interrupt, merged, instead of at each release -- and, since nothing a link releases to
//! such a device is due before the interrupt, the relay need not wake for each release
//! (`Delivery::min_hold_ps`).
//!
//! Which settings a device gets: those of the flows it belongs to, as sender (its kernel
//! receives the ACKs) or receiver (the data), since a real host's NIC coalesces every frame
//! it receives. The simulator coalesces only on the data receiver (`gro.rs`): with
//! coalescing on, the emulated ACKs reach the sender up to `rx_usecs` later than simulated
//! ACKs do. A host whose flows have no `[flows.host]` table keeps the emulator's own
//! behaviour: every release written at once, merged with what the same wake-up released
//! (GRO without coalescing, `Coalescing::IMMEDIATE`).

use fatpipe_core::host::HostConfig;
use fatpipe_core::scenario::Scenario;
use fatpipe_core::time::Time;

/// A device's receive side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalescing {
    /// Merge consecutive segments of a flow into super-packets (GRO; only on devices that
    /// carry virtio-net headers).
    pub gro: bool,
    /// How long after the first pending frame the interrupt fires (0: at each release).
    pub rx_usecs_ps: Time,
    /// The interrupt fires at once when this many frames are pending.
    pub rx_frames: u32,
}

impl Coalescing {
    /// Without a `[flows.host]` table: each release written at once, with what the same
    /// wake-up released merged (the emulator's behaviour before coalescing existed).
    pub const IMMEDIATE: Coalescing = Coalescing { gro: true, rx_usecs_ps: 0, rx_frames: 1 };

    /// A flow's host settings: GRO with its interrupt coalescing, or (gro = false) neither,
    /// as in the simulator, where rx_usecs applies only with GRO on (`HostConfig::rx_coalesce_ps`).
    pub fn of(host: Option<&HostConfig>) -> Coalescing {
        match host {
            None => Coalescing::IMMEDIATE,
            Some(h) if h.gro => Coalescing { gro: true, rx_usecs_ps: h.rx_coalesce_ps, rx_frames: h.rx_frames.max(1) },
            Some(_) => Coalescing { gro: false, rx_usecs_ps: 0, rx_frames: 1 },
        }
    }
}

/// Per node of the scenario, its device's receive side (routers get `IMMEDIATE`, unused);
/// two flows of one host asking for different settings are an error naming both.
pub fn per_node(scenario: &Scenario) -> Result<Vec<Coalescing>, String> {
    let mut out = vec![Coalescing::IMMEDIATE; scenario.nodes.len()];
    let mut owner: Vec<Option<usize>> = vec![None; scenario.nodes.len()];
    for (i, f) in scenario.flows.iter().enumerate() {
        let host = if f.source.is_udp() { None } else { f.tcp().host.as_ref() };
        let c = Coalescing::of(host);
        for node in [f.src, f.dst] {
            let n = node as usize;
            match owner[n] {
                Some(j) if out[n] != c => {
                    return Err(format!(
                        "flows[{i}] ({}) and flows[{j}] ({}) share host {} but ask its device for different receive \
                         settings ([flows.host] gro, rx_usecs, rx_frames; or none): a NIC has one; give them the same",
                        f.name, scenario.flows[j].name, scenario.nodes[n].name
                    ));
                }
                Some(_) => {}
                None => {
                    owner[n] = Some(i);
                    out[n] = c;
                }
            }
        }
    }
    Ok(out)
}

/// One line per `[flows.host]` setting the emulator does not carry to the real kernel as
/// asked. Carried: gro, rx_usecs and rx_frames on the devices (above); linux_pacing and its
/// ratios, fq's pacing and fq_maxrate on the sender's socket (`kernel::host_pacing_knobs`).
pub fn host_notes(host: &HostConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if host.fq {
        notes.push(format!(
            "host.fq: this kernel has no sch_fq, so the sender's socket paces itself (TCP's internal pacing, \
             SO_MAX_PACING_RATE) at the departure times TCP would give fq{}; fq's round robin among flows, \
             flow_limit, quantum and horizon are not applied",
            if host.fq_maxrate_bps.is_some() {
                ", with fq_maxrate as the socket's cap in payload (TCP then sizes its TSO trains, tcp_tso_autosize, \
                 from the capped rate, where under fq it sizes them from cwnd / srtt)"
            } else {
                ""
            }
        ));
    }
    if host.tsq {
        notes.push(
            "host.tsq: not carried: the TUN device frees what it takes (skb_orphan in tun_net_xmit), so TCP Small \
             Queues never hold the kernel's sender back as they would on a NIC"
                .to_string(),
        );
    }
    // The kernel's own values, which the host table's defaults are (host-defaults.json).
    let linux = fatpipe_core::host::scenario_defaults();
    let kept: Vec<String> = [
        ("pacing_shift", host.pacing_shift, linux.pacing_shift),
        ("gso_max_size", host.gso_max_size_bytes, linux.gso_max_size_bytes),
        ("min_tso_segs", host.min_tso_segs, linux.min_tso_segs),
        ("tso_rtt_log", host.tso_rtt_log, linux.tso_rtt_log),
    ]
    .iter()
    .filter(|(_, asked, own)| asked != own)
    .map(|(key, asked, own)| format!("{key} {asked} (the kernel runs {own})"))
    .collect();
    if !kept.is_empty() {
        notes.push(format!("host.{}: not carried to the kernel", kept.join(", ")));
    }
    if !host.tso {
        notes.push(
            "host.tso = false: not carried to the kernel; the devices take TSO super-packets unless the run has \
             --no-tun-offload"
                .to_string(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host table's defaults (fatpipe_core::host::scenario_defaults, the one builder),
    /// with TSO on as the relay's devices take it, and GRO as asked.
    fn host(gro: bool) -> HostConfig {
        HostConfig { gro, tso: true, linux_pacing: false, fq: false, ..fatpipe_core::host::scenario_defaults() }
    }

    #[test]
    fn settings_follow_the_host_table() {
        assert_eq!(Coalescing::of(None), Coalescing::IMMEDIATE);
        let h = host(true);
        assert_eq!(
            Coalescing::of(Some(&h)),
            Coalescing { gro: true, rx_usecs_ps: h.rx_coalesce_ps, rx_frames: h.rx_frames }
        );
        assert_eq!(Coalescing::of(Some(&host(false))), Coalescing { gro: false, rx_usecs_ps: 0, rx_frames: 1 });
        assert!(host_notes(&host(true)).is_empty());
        // linux_pacing is carried (kernel.rs); fq, tsq and tso = false each get their line.
        assert!(host_notes(&HostConfig { linux_pacing: true, ..host(true) }).is_empty());
        let all = HostConfig { linux_pacing: true, fq: true, tsq: true, tso: false, ..host(true) };
        assert_eq!(host_notes(&all).len(), 3);
        let shifted = HostConfig { pacing_shift: 8, ..host(true) };
        assert_eq!(host_notes(&shifted), ["host.pacing_shift 8 (the kernel runs 10): not carried to the kernel"]);
    }
}
