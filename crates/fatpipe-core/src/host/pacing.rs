//! TCP's internal pacing as Linux does it (`net/ipv4/tcp_input.c` `tcp_update_pacing_rate`,
//! `net/ipv4/tcp_output.c` `tcp_update_skb_after_send`).
//!
//! The rate: Linux sets `sk_pacing_rate` on every ACK to a ratio of the current rate
//! cwnd x MSS / SRTT: `tcp_pacing_ss_ratio` (200 %) while cwnd < ssthresh / 2 -- slow start
//! well below its end, where the window doubles each round and the rate must run ahead of
//! it -- and `tcp_pacing_ca_ratio` (120 %) otherwise. It takes max(cwnd, packets out), so a
//! window that has just shrunk does not slow the segments still to go. An algorithm that
//! sets the rate itself (BBR, `cong_control`) replaces the formula; SO_MAX_PACING_RATE caps
//! either.
//!
//! The departure times: after a segment (or a TSO super-segment) of `len` payload bytes the
//! next may leave `len / rate` later; a sender that comes back late (its previous departure
//! time already past) is forgiven up to half of that gap ("take into account OS jitter"),
//! and the first 10 segments of a connection are not paced at all ("Original sch_fq does not
//! pace first 10 MSS").
//!
//! When Linux paces (`tcp_needs_internal_pacing`, `sk_pacing_status`): the fq qdisc on the
//! interface (it paces by `sk_pacing_rate` itself), an algorithm that asks (BBR), or
//! SO_MAX_PACING_RATE on the socket. With the default qdisc (fq_codel, pfifo_fast) and cubic
//! it does not: the rate is still computed, and TSO autosizing reads it (`tso.rs`).

use super::HostConfig;
use crate::time::{transmission_time, Time, PS_PER_S};

/// Segments a connection sends before Linux paces it (`tcp_update_skb_after_send`:
/// `tp->data_segs_out >= 10`, counting the segment just sent).
pub const UNPACED_SEGMENTS: u64 = 10;

/// Linux's `sk_pacing_rate` from the window (`tcp_update_pacing_rate`), payload bits per
/// second: ratio% x max(cwnd, packets_out) x MSS / SRTT, the ratio chosen by
/// cwnd < ssthresh / 2. Linux keeps SRTT in eighths of a microsecond; picoseconds here.
pub fn linux_rate_bps(
    host: &HostConfig,
    cwnd: u32,
    ssthresh: u32,
    packets_out: u32,
    mss_bytes: u32,
    srtt: Time,
) -> u64 {
    let ratio = ratio_percent(host, cwnd, ssthresh);
    let bits = u128::from(mss_bytes) * 8 * u128::from(ratio) * u128::from(cwnd.max(packets_out)) * u128::from(PS_PER_S);
    let rate = bits / (100 * u128::from(srtt.max(1)));
    rate.clamp(1, u128::from(u64::MAX)) as u64
}

/// The ratio `tcp_update_pacing_rate` applies, percent: `tcp_pacing_ss_ratio` while
/// cwnd < ssthresh / 2 (slow start well below its end), `tcp_pacing_ca_ratio` after.
pub fn ratio_percent(host: &HostConfig, cwnd: u32, ssthresh: u32) -> u32 {
    if cwnd < ssthresh / 2 {
        host.pacing_ss_ratio_percent
    } else {
        host.pacing_ca_ratio_percent
    }
}

/// The earliest departure of what follows a segment (or super-segment) of `len_bytes`
/// handed out at `now` (Linux `tcp_update_skb_after_send`): `prior` is the earliest departure
/// in force before it, `segs_out` the connection's data segments sent so far, this one's
/// included. The gap is len / rate, less min(gap / 2, how late the sender came).
pub fn next_departure(prior: Time, now: Time, len_bytes: u64, rate_bps: u64, segs_out: u64) -> Time {
    // __tcp_transmit_skb: tcp_wstamp_ns = max(tcp_wstamp_ns, now).
    let wstamp = prior.max(now);
    if segs_out < UNPACED_SEGMENTS {
        return wstamp;
    }
    after_gap(prior, now, transmission_time(len_bytes, rate_bps.max(1)))
}

/// Linux's rule for the next departure a `gap` after a packet that left at `now` while the
/// earliest departure in force was `prior`: a late sender is forgiven up to half the gap
/// ("take into account OS jitter" in `tcp_update_skb_after_send`; "Account for
/// schedule/timers drifts" in sch_fq's `fq_dequeue`).
pub fn after_gap(prior: Time, now: Time, gap: Time) -> Time {
    let wstamp = prior.max(now);
    wstamp + gap - (gap / 2).min(wstamp - prior)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::time::{PS_PER_MS, PS_PER_US};

    /// Linux's pacing on, every other element off, at the scenario's defaults.
    pub(crate) fn host() -> HostConfig {
        HostConfig { linux_pacing: true, ..crate::host::scenario_defaults() }
    }

    #[test]
    fn slow_start_rate_is_twice_and_avoidance_one_point_two_times_cwnd_over_srtt() {
        // 100 segments of 1448 bytes per 100 ms is 11.584 Mb/s of payload.
        let srtt = 100 * PS_PER_MS;
        assert_eq!(linux_rate_bps(&host(), 100, 1000, 0, 1448, srtt), 23_168_000);
        // cwnd >= ssthresh / 2 (integer halving): "approaching the end of slow start", the
        // CA ratio.
        assert_eq!(linux_rate_bps(&host(), 100, 201, 0, 1448, srtt), 13_900_800);
        assert_eq!(linux_rate_bps(&host(), 100, 202, 0, 1448, srtt), 23_168_000);
        // More segments out than cwnd (just after a reduction): they set the rate.
        assert_eq!(linux_rate_bps(&host(), 50, 100, 100, 1448, srtt), 13_900_800);
    }

    #[test]
    fn departures_skip_the_first_ten_segments_then_space_by_len_over_rate() {
        let rate = 11_584_000; // 1448 bytes take 1 ms
        assert_eq!(next_departure(0, 0, 1448, rate, 9), 0);
        assert_eq!(next_departure(0, 0, 1448, rate, 10), PS_PER_MS);
        // On time (prior in the future): the whole gap from the prior departure.
        assert_eq!(next_departure(5 * PS_PER_MS, 4 * PS_PER_MS, 1448, rate, 20), 6 * PS_PER_MS);
    }

    #[test]
    fn a_late_sender_is_forgiven_at_most_half_a_gap() {
        let rate = 11_584_000;
        // 200 us late: the next gap is 800 us from now.
        let late = next_departure(PS_PER_MS, PS_PER_MS + 200 * PS_PER_US, 1448, rate, 20);
        assert_eq!(late, PS_PER_MS + 200 * PS_PER_US + 800 * PS_PER_US);
        // 3 ms late: half the gap, no more.
        let very = next_departure(PS_PER_MS, 4 * PS_PER_MS, 1448, rate, 20);
        assert_eq!(very, 4 * PS_PER_MS + 500 * PS_PER_US);
    }
}
