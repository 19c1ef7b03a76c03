//! What one flow must be on its own, whatever the network it runs on: the single definition
//! of an acceptable flow. `Scenario::validate` runs it for every flow of a scenario, and a
//! probe daemon for every flow a client sends (`fatpipe-probe`'s `end.rs`), so a peer's
//! flow is held to exactly the rules a scenario file's is. What depends on the network (a
//! route, the MTU along it) stays in `Scenario::validate`.
//!
//! The errors name the field after the flow (".source.rate_bps: ..." or ": ..."), so that
//! each caller puts its own prefix in front ("flows[3]", "test.flows[3].spec").

use super::FlowSpec;
use crate::cc::CcSpec;
use crate::packet::IPV4_UDP_HEADER_BYTES;
use crate::source::SourceSpec;
use crate::tcp::config::{RtoEstimator, StackKind};

/// The largest UDP payload one IPv4 datagram carries: 65,535 bytes (the IPv4 total length's
/// 16 bits, RFC 791) less 20 of IP header and 8 of UDP header (RFC 768).
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_535 - IPV4_UDP_HEADER_BYTES;

impl FlowSpec {
    /// Checks the flow: positive quantities, times in order, sums that fit 64 bits, TCP
    /// settings and the algorithm's parameters. The first problem, as "<field after the
    /// flow>: <what is wrong>". (A flow may start after the run's end: it never runs. A
    /// normalized document cut shorter keeps its flows valid.)
    pub fn check(&self) -> Result<(), String> {
        let (start, stop) = (self.source.start_ps(), self.source.stop_ps());
        if start.checked_add(self.start_jitter_ps).is_none() {
            return Err(format!(
                ".start_jitter_ps: {} is not allowed: start + jitter exceeds 2^64 ps",
                self.start_jitter_ps
            ));
        }
        if stop.is_some_and(|s| s <= start) {
            return Err(".source.stop_ps: must be after start_ps".into());
        }
        if self.source.is_udp() {
            self.check_udp()
        } else {
            self.check_tcp()
        }
    }

    /// A UDP flow: no TCP settings, a payload one datagram carries, positive rates, periods
    /// and counts, and periods whose sums fit 64 bits.
    fn check_udp(&self) -> Result<(), String> {
        if self.tcp.is_some() || self.cc.is_some() {
            return Err(format!(": a UDP flow ({}) takes no tcp or cc", self.source.kind()));
        }
        let payload = self.source.udp_payload_bytes().expect("a UDP source");
        if payload == 0 || payload > MAX_UDP_PAYLOAD_BYTES {
            return Err(format!(
                ".source.payload_bytes: {payload} is not allowed: must be 1 to {MAX_UDP_PAYLOAD_BYTES} (one IPv4 datagram)"
            ));
        }
        let positive = |what: &str, v: u64| {
            if v == 0 {
                Err(format!(".source.{what}: 0 is not allowed: must be positive"))
            } else {
                Ok(())
            }
        };
        match &self.source {
            SourceSpec::UdpCbr(c) => positive("rate_bps", c.rate_bps),
            SourceSpec::UdpOnoff(c) => {
                positive("rate_bps", c.rate_bps)?;
                positive("on_ps", c.on_ps)?;
                positive("off_ps", c.off_ps)?;
                if c.on_ps.checked_add(c.off_ps).is_none() {
                    return Err(".source.off_ps: on_ps + off_ps exceeds 2^64 ps".into());
                }
                Ok(())
            }
            SourceSpec::UdpBurst(c) => {
                positive("burst_bytes", c.burst_bytes)?;
                positive("repeats", c.repeats)?;
                positive("rate_bps", c.rate_bps.unwrap_or(1))?;
                positive("count", c.count.unwrap_or(1))?;
                if c.burst_bytes.checked_mul(c.repeats).is_none() {
                    return Err(".source.repeats: burst_bytes x repeats exceeds 2^64 bytes".into());
                }
                match c.period_ps {
                    Some(p) => positive("period_ps", p),
                    None if c.count == Some(1) => Ok(()),
                    None => Err(".source.period_ps: null is not allowed unless count = 1".into()),
                }
            }
            SourceSpec::Bulk(_) | SourceSpec::Burst(_) | SourceSpec::Http(_) => unreachable!("a UDP source"),
        }
    }

    /// A TCP flow: its settings, its source's quantities and its algorithm's parameters.
    fn check_tcp(&self) -> Result<(), String> {
        let (Some(t), Some(cc)) = (&self.tcp, &self.cc) else {
            return Err(": a TCP flow needs tcp and cc".into());
        };
        if t.mss_bytes == 0 || t.initial_window_segments == 0 || t.ack_every_segments == 0 || t.dupack_threshold == 0 {
            return Err(".tcp: mss, initial window, ack_every and dupack threshold must be positive".into());
        }
        if t.rcv_buffer_bytes < t.mss_bytes as u64 || t.snd_buffer_bytes < t.mss_bytes as u64 {
            return Err(format!(".tcp: buffers must hold at least one MSS ({} bytes)", t.mss_bytes));
        }
        if t.min_rto_ps > t.max_rto_ps {
            return Err(".tcp.min_rto_ps: larger than max_rto_ps".into());
        }
        // Accurate ECN is built into the Linux stack's ACK path; DCTCP and Prague run there
        // and need ECN (Prague its accurate form), as Linux's TCP_CONG_NEEDS_ECN(_ACCECN).
        if t.accecn && !(t.ecn && t.stack == StackKind::Linux) {
            return Err(".tcp.accecn: needs ecn and the Linux stack".into());
        }
        if let CcSpec::Dctcp(_) | CcSpec::Prague(_) = cc {
            if !t.ecn || t.stack != StackKind::Linux {
                return Err(".cc: dctcp and prague need tcp.ecn and the Linux stack".into());
            }
        }
        if matches!(cc, CcSpec::Prague(_)) && !t.accecn {
            return Err(".cc: prague needs tcp.accecn (Accurate ECN feedback)".into());
        }
        let bsd = t.rto_estimator == RtoEstimator::Bsd;
        if bsd && (t.stack != StackKind::Rfc || t.slow_timer_ps.is_none_or(|p| p == 0)) {
            return Err(".tcp.rto_estimator: bsd needs the RFC stack and a positive slow_timer_ps".into());
        }
        if t.slow_timer_ps.is_some() && !bsd || t.fast_timer_ps == Some(0) {
            return Err(".tcp: slow_timer_ps goes with rto_estimator bsd; fast_timer_ps must be positive".into());
        }
        for (what, rate) in
            [("receiver_drain_rate_bps", t.receiver_drain_rate_bps), ("max_send_rate_bps", t.max_send_rate_bps)]
        {
            if rate == Some(0) {
                return Err(format!(".tcp.{what}: 0 is not allowed: must be positive (or null: none)"));
            }
        }
        if let Some(g) = t.pacing_gain.filter(|g| !(g.is_finite() && *g > 0.0)) {
            return Err(format!(".tcp.pacing_gain: {g} is not allowed: must be positive (or null: no pacing)"));
        }
        match &self.source {
            SourceSpec::Burst(b) if b.burst_bytes == 0 || b.period_ps == 0 => {
                return Err(".source: burst_bytes and period_ps must be positive".into());
            }
            SourceSpec::Bulk(b) if b.bytes == Some(0) => {
                return Err(".source.bytes: 0 is not allowed: must be positive".into());
            }
            SourceSpec::Bulk(b) if b.transfers == Some(0) => {
                return Err(
                    ".source.transfers: 0 is not allowed: must be at least 1 (or null: one connection held open)"
                        .into(),
                );
            }
            SourceSpec::Bulk(b) if b.transfers.is_some() && b.bytes.is_none() && b.stop_ps.is_none() => {
                return Err(".source.transfers: a transfer must end: set bytes or stop_ps".into());
            }
            SourceSpec::Http(h) => {
                if h.objects_bytes.is_empty() || h.objects_bytes.contains(&0) || h.requests == 0 {
                    return Err(".source: http needs objects_bytes (each positive) and requests > 0".into());
                }
                if h.request_bytes == 0 || h.request_bytes > t.mss_bytes {
                    return Err(format!(
                        ".source.request_bytes: {} is not allowed: a request is one segment, 1 to mss_bytes ({})",
                        h.request_bytes, t.mss_bytes
                    ));
                }
                if h.server_pacing.is_some_and(|p| p.burst_bytes == 0 || p.period_ps == 0) {
                    return Err(".source.server_pacing: burst_bytes and period_ps must be positive".into());
                }
                if !h.persistent && !t.handshake {
                    return Err(
                        ".tcp.handshake: HTTP/1.0 opens a connection per request with a handshake; it cannot be off"
                            .into(),
                    );
                }
            }
            _ => {}
        }
        if matches!(cc, CcSpec::Lp(_)) && !t.timestamps {
            return Err(".tcp.timestamps: false is not allowed with cc = \"lp\": TCP-LP measures one-way delay \
                        from the timestamp option (RFC 7323)"
                .into());
        }
        // Every algorithm's parameters; exhaustive, so a new algorithm cannot skip its checks.
        let cc_params = match cc {
            CcSpec::Reno(c) => c.validate(),
            CcSpec::Vegas(c) => c.validate(),
            CcSpec::Westwood(c) => c.validate(),
            CcSpec::WestwoodPlus(c) => c.validate(),
            CcSpec::GridDt(c) => c.validate(),
            CcSpec::Fast(c) => c.validate(),
            CcSpec::Nocc(c) => c.validate(),
            CcSpec::Bbr(c) => c.validate(),
            CcSpec::Highspeed(c) => c.validate(),
            CcSpec::Scalable(c) => c.validate(),
            CcSpec::Htcp(c) => c.validate(),
            CcSpec::Bic(c) => c.validate(),
            CcSpec::Bpf(c) => c.validate(),
            CcSpec::Cubic(c) => c.validate(),
            CcSpec::Python(c) => c.validate(),
            CcSpec::Bbr3(c) => c.validate(),
            CcSpec::Hybla(c) => c.validate(),
            CcSpec::Illinois(c) => c.validate(),
            CcSpec::Veno(c) => c.validate(),
            CcSpec::Yeah(c) => c.validate(),
            CcSpec::Nv(c) => c.validate(),
            CcSpec::Cdg(c) => c.validate(),
            CcSpec::Lp(c) => c.validate(),
            CcSpec::Dctcp(c) => c.validate(),
            CcSpec::Prague(c) => c.validate(),
        };
        cc_params.map_err(|e| format!(".cc.{e}"))
    }
}
