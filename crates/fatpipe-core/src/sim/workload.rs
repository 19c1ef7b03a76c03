//! Connection-oriented workloads in the event loop: the three-way handshake and HTTP's
//! requests and connections. The state machines live in `tcp/handshake.rs` and
//! `source/http.rs`; this moves their packets and starts what they lead to.

use super::{endpoints, Simulation};
use crate::event::Event;
use crate::packet::{Packet, PacketKind};
use crate::source::http::NextRequest;
use crate::source::SourceSpec;
use crate::tcp::Handshake;
use crate::time::{transmission_time, Time, PS_PER_S};

impl Simulation {
    /// The application starts: an HTTP client with its first request; a flow that models the
    /// handshake opens its connection and writes once it is established.
    pub(super) fn on_source_start(&mut self, f: u32) {
        if self.flows[f as usize].transfers.is_some() {
            self.begin_transfer(f);
        }
        let flow = &mut self.flows[f as usize];
        if flow.http.is_some() {
            self.next_request(f);
            return;
        }
        if flow.handshake.is_none() {
            if !self.captures.is_empty() && flow.udp.is_none() {
                self.capture_synthetic_handshake(f);
            }
            self.start_application(f);
            return;
        }
        self.drive(f, false, None, |flow, now, out| flow.handshake.as_mut().expect("checked").open(now, out));
    }

    /// A flow that starts established (no `tcp.handshake`) still shows its SYN, SYN-ACK and
    /// ACK in packet captures, marked as synthetic in docs/metrics.md: they are written
    /// where the captures would have seen them (every link of their route and the host they
    /// reach) at the times the handshake would have taken had it ended as the flow started:
    /// the SYN leaves one handshake round trip before the start (each packet's serialization
    /// and propagation on every link of its route, no queueing), the final ACK at the start.
    /// They take no queue space and cannot be lost, and the data's times are unchanged.
    /// Without them tools cannot know the window scale (tshark shows -1, tcptrace a 64 KB
    /// window); stamped all at the start, they showed a zero initial RTT.
    #[cold]
    fn capture_synthetic_handshake(&mut self, f: u32) {
        let out = self.synthetic_exchange(f);
        // Admitted by the flow's start (the captures' window); stamped in each file's clock,
        // from the SYN's departure one round trip before the start (set_capture_clock made
        // room for it).
        let now = self.now;
        let syn_leaves = now as i128 - self.handshake_round_trip(&out) as i128;
        let mut since_syn = 0;
        for pkt in out {
            let mut node = pkt.src;
            while node != pkt.dst {
                let Some(l) = self.routes.get(node, pkt.dst) else { break };
                let link = &self.links[l as usize].spec;
                for &c in &self.link_taps[l as usize] {
                    let capture = &mut self.captures[c as usize];
                    let stamp = (syn_leaves + since_syn as i128 + capture.clock_offset_ps as i128).max(0) as Time;
                    capture.record_stamped(now, stamp, &pkt, &self.wire[pkt.flow as usize]);
                }
                since_syn +=
                    transmission_time((pkt.ip_bytes + link.framing_bytes) as u64, link.rate_bps) + link.delay_ps;
                node = link.to;
            }
            if node == pkt.dst {
                for &c in &self.node_taps[node as usize] {
                    let capture = &mut self.captures[c as usize];
                    let stamp = (syn_leaves + since_syn as i128 + capture.clock_offset_ps as i128).max(0) as Time;
                    capture.record_stamped(now, stamp, &pkt, &self.wire[pkt.flow as usize]);
                }
            }
        }
    }

    /// The synthetic SYN, SYN-ACK and ACK of flow `f`.
    fn synthetic_exchange(&self, f: u32) -> Vec<Packet> {
        let spec = &self.scenario.flows[f as usize];
        let exchange = Handshake::new(f, self.flows[f as usize].conn, spec.src, spec.dst, spec.tcp());
        let mut out = Vec::with_capacity(3);
        exchange.synthetic_exchange(self.now, &mut out);
        out
    }

    /// From the SYN's departure to the final ACK's: the SYN's and the SYN-ACK's way along
    /// their routes, serialization and propagation on every link (queues empty).
    fn handshake_round_trip(&self, exchange: &[Packet]) -> Time {
        let mut total = 0;
        for pkt in exchange.iter().filter(|p| p.kind != PacketKind::HandshakeAck) {
            let mut node = pkt.src;
            while node != pkt.dst {
                let Some(l) = self.routes.get(node, pkt.dst) else { break };
                let link = &self.links[l as usize].spec;
                total += transmission_time((pkt.ip_bytes + link.framing_bytes) as u64, link.rate_bps) + link.delay_ps;
                node = link.to;
            }
        }
        total
    }

    /// Sets each capture's clock: whole seconds ahead of the simulated time when a flow
    /// that starts established starts within its handshake's round trip (at 0, most often)
    /// inside the capture's window, so that its synthetic handshake keeps its real times;
    /// none otherwise (the summary gives each capture's offset).
    pub(super) fn set_capture_clock(&mut self) {
        if self.captures.is_empty() {
            return;
        }
        let mut leads = Vec::new(); // (start, how far before 0 its SYN left)
        for f in 0..self.flows.len() {
            let flow = &self.flows[f];
            if flow.http.is_some() || flow.handshake.is_some() || flow.udp.is_some() {
                continue;
            }
            let start = self.scenario.flows[f].source.start_ps(); // its start jitter drawn
            let lead = self.handshake_round_trip(&self.synthetic_exchange(f as u32));
            leads.push((start, lead.saturating_sub(start)));
        }
        for c in &mut self.captures {
            let (from, to) = (c.spec.start_ps, c.spec.stop_ps.unwrap_or(Time::MAX));
            let ahead = leads.iter().filter(|(start, _)| (from..to).contains(start)).map(|&(_, a)| a).max();
            c.clock_offset_ps = ahead.unwrap_or(0).div_ceil(PS_PER_S) * PS_PER_S;
        }
    }

    /// Sends packets that may come from either end (a timer of both): each from its source.
    pub(super) fn send_all(&mut self, out: &mut Vec<Packet>) {
        for pkt in out.iter() {
            self.forward(pkt.src, pkt);
        }
        out.clear();
    }

    /// A SYN, SYN-ACK, handshake ACK or request reaches its host (`node`) on the live
    /// connection.
    pub(super) fn on_connection_packet(&mut self, node: u32, pkt: &Packet) {
        let now = self.now;
        let f = pkt.flow;
        let flow = &mut self.flows[f as usize];
        let mut out = std::mem::take(&mut self.out);
        let mut start_application = false;
        let mut next_burst = None;
        if let Some(h) = &mut flow.handshake {
            match pkt.kind {
                PacketKind::Syn => h.on_syn(now, pkt, &mut out),
                PacketKind::SynAck => {
                    if let Some(est) = h.on_synack(now, pkt, &mut out) {
                        if let Some(http) = &mut flow.http {
                            // The client's request carries the ACK of the SYN-ACK.
                            http.on_handshake(est);
                            http.send_request(now, flow.conn, h.opener_ts_recent(), &mut out);
                        } else {
                            // A bulk or paced sender opened the connection: ACK, then data.
                            flow.sender.on_handshake(est.rtt, est.retransmits);
                            h.ack(now, &mut out);
                            start_application = true;
                        }
                    }
                }
                _ => {
                    if let Some(est) = h.on_opener_segment(now, pkt) {
                        if flow.http.is_some() {
                            // The server is the data sender: its estimator starts from here.
                            flow.sender.on_handshake(est.rtt, est.retransmits);
                        }
                    }
                }
            }
        }
        if pkt.kind == PacketKind::Request {
            // The server's response goes out through its host's interface queue.
            let room = self.links[flow.iface as usize].room_packets(now, flow.max_ip_bytes);
            flow.sender.set_tx_budget(room);
            if let Some(http) = &mut flow.http {
                if http.on_request(pkt) {
                    next_burst = http.write_response(&mut flow.sender, &mut flow.bursts, now, &mut out);
                }
            }
        }
        self.transmit(node, &mut out);
        self.out = out;
        if let Some(t) = next_burst {
            self.events.schedule(t, Event::SourceTick(f));
        }
        if start_application {
            self.start_application(f);
        }
        self.sync_timers(f);
    }

    /// A data segment was delivered: it may complete a response (HTTP) or, for a flow whose
    /// sender opened the connection, the listener's side of the handshake (a data segment
    /// carries the ACK).
    pub(super) fn after_data_delivery(&mut self, f: u32, pkt: &Packet) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        if let Some(http) = &mut flow.http {
            if http.on_response_data(now, pkt, flow.receiver.rcv_nxt) {
                self.next_request(f);
            }
        } else if let Some(h) = &mut flow.handshake {
            h.on_opener_segment(now, pkt);
            self.sync_timers(f);
        }
    }

    /// A paced HTTP server writes its next burst.
    pub(super) fn on_http_tick(&mut self, f: u32) {
        let now = self.now;
        self.grant_tx_budget(f);
        let flow = &mut self.flows[f as usize];
        let Some(http) = &mut flow.http else { return };
        let mut out = std::mem::take(&mut self.out);
        let next = http.write_response(&mut flow.sender, &mut flow.bursts, now, &mut out);
        let node = flow.src;
        self.transmit(node, &mut out);
        self.out = out;
        if let Some(t) = next {
            self.events.schedule(t, Event::SourceTick(f));
        }
        self.sync_timers(f);
    }

    /// The HTTP client starts its next request, on a new connection when it needs one.
    fn next_request(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let Some(http) = &mut flow.http else { return };
        let Some(next) = http.begin(now) else { return };
        let persistent = http.config().persistent;
        let mut out = std::mem::take(&mut self.out);
        if next == NextRequest::NewConnection {
            if http.connections > 1 {
                self.reset_connection(f);
            }
            let spec = &self.scenario.flows[f as usize];
            let flow = &mut self.flows[f as usize];
            if spec.tcp().handshake || !persistent {
                // The client (the flow's receiver host) opens towards the server.
                let mut h = Handshake::new(f, flow.conn, flow.dst, flow.src, spec.tcp());
                h.open(now, &mut out);
                flow.handshake = Some(h);
            } else if let Some(http) = &mut flow.http {
                // A persistent connection that starts established.
                http.send_request(now, flow.conn, 0, &mut out);
            }
        } else if let Some(http) = &mut flow.http {
            http.send_request(now, flow.conn, 0, &mut out);
        }
        let client = self.flows[f as usize].dst;
        self.transmit(client, &mut out);
        self.out = out;
        self.sync_timers(f);
    }

    /// HTTP/1.0's next connection, or a repeating flow's next transfer: fresh endpoints with
    /// the next connection number; the closed connection's totals are kept for the reports.
    pub(super) fn reset_connection(&mut self, f: u32) {
        let spec = &self.scenario.flows[f as usize];
        debug_assert!(matches!(spec.source, SourceSpec::Http(_) | SourceSpec::Bulk(_)));
        let flow = &mut self.flows[f as usize];
        let closed = &mut flow.closed;
        closed.delivered_bytes += flow.receiver.rcv_nxt;
        closed.written_bytes += flow.sender.bytes_written();
        if let Some(h) = flow.handshake.take() {
            let (syn, synack) = h.retransmits();
            closed.syn_retransmits += syn as u64;
            closed.synack_retransmits += synack as u64;
        }
        flow.conn = flow.conn.wrapping_add(1);
        let (mut sender, mut receiver) = endpoints(f, spec, flow.conn, self.scenario.seed);
        sender.tcb.stats = std::mem::take(&mut flow.sender.tcb.stats);
        receiver.stats = std::mem::take(&mut flow.receiver.stats);
        flow.sender = sender;
        flow.receiver = receiver;
    }

    /// The connection timer expired: resend a SYN or SYN-ACK, or the client's request.
    pub(super) fn on_connection_timer(&mut self, f: u32) {
        self.drive(f, false, None, |flow, now, out| {
            if let Some(h) = &mut flow.handshake {
                h.on_timer(now, out);
            }
            if let Some(http) = &mut flow.http {
                http.on_request_timer(now, flow.conn, out);
            }
        });
    }
}
