//! The three-way handshake (RFC 793 section 3.4): the opener sends a SYN, the listener
//! answers with a SYN-ACK, the opener's ACK completes the connection.
//!
//! Sans-I/O like the sender and receiver: it takes the current time and a packet or a timer
//! expiry and pushes what to send into a caller's buffer. Both ends live in one value, each
//! end only reacting to the packets addressed to it.
//!
//! Losses are survivable: the opener retransmits its SYN and the listener its SYN-ACK on
//! their own timers, starting at the initial RTO (RFC 6298 section 2.1 and Linux
//! `TCP_TIMEOUT_INIT`: 1 s) and doubling after each expiry (RFC 6298 section 5.5), without a
//! limit on the number of tries (Linux gives up after `tcp_syn_retries` = 6 SYNs). A SYN that
//! arrives again makes the listener resend its SYN-ACK, and a SYN-ACK that arrives again makes
//! the opener resend its ACK, as Linux does.
//!
//! Each end measures one RTT over the exchange (opener: SYN to SYN-ACK; listener: SYN-ACK to
//! the ACK), from the echoed timestamp when timestamps are on, otherwise from the send time
//! unless the segment was retransmitted (Karn), as Linux seeds its estimator
//! (`tcp_ack_update_rtt`, `tcp_synack_rtt_meas`). Which segment completes the handshake at
//! the listener is the workload's business: a bare ACK, an HTTP request carrying it, or (for
//! a bulk sender that opened the connection) its first data segment.

use super::config::{Recovery, TcpConfig};
use super::rtt::RttEstimator;
use crate::packet::{syn_option_bytes, Packet, PacketKind};
use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Opener: nothing sent yet. Listener: waiting for a SYN.
    Idle,
    /// Opener: SYN sent (SYN-SENT). Listener: SYN-ACK sent (SYN-RECEIVED).
    Pending,
    Established,
}

/// What completing the handshake tells one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Established {
    /// The RTT measured over the exchange, if Karn's rule allows one.
    pub rtt: Option<Time>,
    /// SYNs (opener) or SYN-ACKs (listener) this end retransmitted.
    pub retransmits: u32,
}

/// One end's state: its segment's first send time, retransmissions and timer.
#[derive(Clone, Debug)]
struct End {
    node: u32,
    state: State,
    first_sent_ps: Time,
    retransmits: u32,
    /// For the timeout and its backoff only: no RTT sample ever enters it.
    timer: RttEstimator,
    deadline: Option<Time>,
}

impl End {
    fn new(node: u32, cfg: &TcpConfig) -> End {
        End {
            node,
            state: State::Idle,
            first_sent_ps: 0,
            retransmits: 0,
            timer: RttEstimator::new(cfg.initial_rto_ps, 0, cfg.max_rto_ps),
            deadline: None,
        }
    }

    /// The end sent its SYN (or SYN-ACK) for the first time.
    fn sent_first(&mut self, now: Time) {
        self.state = State::Pending;
        self.first_sent_ps = now;
        self.deadline = Some(now + self.timer.rto());
    }

    /// The end sent its SYN (or SYN-ACK) again: count it and back off (RFC 6298 5.5).
    fn resent(&mut self, now: Time) {
        self.retransmits += 1;
        self.timer.back_off();
        self.deadline = Some(now + self.timer.rto());
    }

    fn established(&mut self, now: Time, echoed_ps: Option<Time>) -> Established {
        self.state = State::Established;
        self.deadline = None;
        let rtt = match echoed_ps {
            Some(ts) => Some(now.saturating_sub(ts)),
            None if self.retransmits == 0 => Some(now - self.first_sent_ps),
            None => None,
        };
        Established { rtt, retransmits: self.retransmits }
    }
}

#[derive(Clone, Debug)]
pub struct Handshake {
    flow: u32,
    conn: u16,
    opener: End,
    listener: End,
    timestamps: bool,
    /// IP bytes of a SYN and a SYN-ACK (headers and options), and of a bare ACK.
    syn_ip_bytes: u32,
    ack_ip_bytes: u32,
    /// RFC 7323 TS.Recent of each end: the timestamp of the SYN-ACK the opener answers, of
    /// the SYN the listener answers.
    opener_ts_recent: Time,
    listener_ts_recent: Time,
}

impl Handshake {
    /// A handshake of connection `conn` of `flow`, opened by host `opener` towards `listener`.
    pub fn new(flow: u32, conn: u16, opener: u32, listener: u32, cfg: &TcpConfig) -> Handshake {
        let options = syn_option_bytes(cfg.recovery == Recovery::Sack, cfg.timestamps, cfg.window_scaling);
        Handshake {
            flow,
            conn,
            opener: End::new(opener, cfg),
            listener: End::new(listener, cfg),
            timestamps: cfg.timestamps,
            syn_ip_bytes: crate::packet::IPV4_TCP_HEADER_BYTES + options,
            ack_ip_bytes: cfg.header_bytes(),
            opener_ts_recent: 0,
            listener_ts_recent: 0,
        }
    }

    pub fn conn(&self) -> u16 {
        self.conn
    }

    /// IP bytes of this connection's SYN and SYN-ACK.
    pub fn syn_ip_bytes(&self) -> u32 {
        self.syn_ip_bytes
    }

    pub fn opener_established(&self) -> bool {
        self.opener.state == State::Established
    }

    pub fn listener_established(&self) -> bool {
        self.listener.state == State::Established
    }

    /// SYNs and SYN-ACKs retransmitted so far.
    pub fn retransmits(&self) -> (u32, u32) {
        (self.opener.retransmits, self.listener.retransmits)
    }

    /// The opener's timestamp echo for the segment that completes the handshake.
    pub fn opener_ts_recent(&self) -> Time {
        self.opener_ts_recent
    }

    /// The earlier of the two ends' retransmission deadlines.
    pub fn deadline(&self) -> Option<Time> {
        match (self.opener.deadline, self.listener.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn send(&self, now: Time, kind: PacketKind, retransmission: bool, out: &mut Vec<Packet>) {
        let (from, to, ts_ecr) = match kind {
            PacketKind::SynAck => (&self.listener, &self.opener, self.listener_ts_recent),
            PacketKind::Syn => (&self.opener, &self.listener, 0),
            _ => (&self.opener, &self.listener, self.opener_ts_recent),
        };
        out.push(Packet {
            flow: self.flow,
            conn: self.conn,
            src: from.node,
            dst: to.node,
            kind,
            seq: 0,
            payload_bytes: 0,
            ip_bytes: if kind == PacketKind::HandshakeAck { self.ack_ip_bytes } else { self.syn_ip_bytes },
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: now,
            ts_ecr,
            retransmission,
            // ECN is taken as negotiated by the flow's settings (tcp.ecn): SYNs carry no bits.
            ecn: Default::default(),
        });
    }

    /// The three segments of an exchange that is not simulated, all at `now`: what a
    /// connection that starts established would have sent, for packet captures only (so that
    /// tools learn the MSS, SACK-permitted, timestamps and window scale from its SYNs).
    pub fn synthetic_exchange(&self, now: Time, out: &mut Vec<Packet>) {
        for kind in [PacketKind::Syn, PacketKind::SynAck, PacketKind::HandshakeAck] {
            self.send(now, kind, false, out);
            // Each answers the segment before, sent at the same instant.
            out.last_mut().expect("just pushed").ts_ecr = if kind == PacketKind::Syn { 0 } else { now };
        }
    }

    /// The opener sends its SYN (the application called connect()).
    pub fn open(&mut self, now: Time, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.opener.state, State::Idle);
        self.opener.sent_first(now);
        self.send(now, PacketKind::Syn, false, out);
    }

    /// A SYN reaches the listener: it answers with a SYN-ACK; a SYN that arrives again means
    /// the SYN-ACK was lost, and it goes again.
    pub fn on_syn(&mut self, now: Time, syn: &Packet, out: &mut Vec<Packet>) {
        let again = match self.listener.state {
            State::Idle => {
                self.listener.sent_first(now);
                false
            }
            State::Pending => {
                self.listener.resent(now);
                true
            }
            State::Established => return,
        };
        self.listener_ts_recent = syn.ts_val;
        self.send(now, PacketKind::SynAck, again, out);
    }

    /// A SYN-ACK reaches the opener. The first completes its side: the caller then sends the
    /// segment that completes the listener's (`ack`, or a request carrying the ACK). A later
    /// one means that segment was lost: the opener sends a bare ACK again.
    pub fn on_synack(&mut self, now: Time, synack: &Packet, out: &mut Vec<Packet>) -> Option<Established> {
        match self.opener.state {
            State::Pending => {
                self.opener_ts_recent = synack.ts_val;
                let echoed = self.timestamps.then_some(synack.ts_ecr);
                Some(self.opener.established(now, echoed))
            }
            State::Established => {
                self.opener_ts_recent = synack.ts_val;
                self.ack(now, out);
                None
            }
            State::Idle => None,
        }
    }

    /// The opener sends a bare ACK of the SYN-ACK.
    pub fn ack(&self, now: Time, out: &mut Vec<Packet>) {
        self.send(now, PacketKind::HandshakeAck, false, out);
    }

    /// A segment from the opener other than a SYN reaches the listener: the first completes
    /// the handshake. Only a bare ACK or a request echoes the SYN-ACK's timestamp.
    pub fn on_opener_segment(&mut self, now: Time, seg: &Packet) -> Option<Established> {
        if self.listener.state != State::Pending {
            return None;
        }
        let echoes = self.timestamps && matches!(seg.kind, PacketKind::HandshakeAck | PacketKind::Request);
        Some(self.listener.established(now, echoes.then_some(seg.ts_ecr)))
    }

    /// A retransmission deadline may have passed: resend what is due.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.opener.deadline.is_some_and(|d| d <= now) {
            self.opener.resent(now);
            self.send(now, PacketKind::Syn, true, out);
        }
        if self.listener.deadline.is_some_and(|d| d <= now) {
            self.listener.resent(now);
            self.send(now, PacketKind::SynAck, true, out);
        }
    }
}
