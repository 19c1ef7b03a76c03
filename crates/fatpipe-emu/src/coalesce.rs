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

/// One line per `[flows.host]` setting the emulator does not carry to the real kernel
/// (what it does carry: gro, rx_usecs and rx_frames, on the devices, above).
pub fn host_notes(host: &HostConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if host.linux_pacing {
        notes.push(
            "host.linux_pacing: not set on the kernel (it paces by itself only with fq, bbr or SO_MAX_PACING_RATE, \
             none of which the emulator sets for it)"
                .to_string(),
        );
    }
    if host.fq {
        notes.push(
            "host.fq (and fq_maxrate): not set on the kernel; the sender's device keeps the namespace's default \
             qdisc, so the kernel does not pace as the simulated fq does"
                .to_string(),
        );
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
        let all = HostConfig { linux_pacing: true, fq: true, tso: false, ..host(true) };
        assert_eq!(host_notes(&all).len(), 3);
    }
}
