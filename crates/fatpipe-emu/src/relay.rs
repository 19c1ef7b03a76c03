//! The real-time driver: the scenario's links, routes and parallel paths from fatpipe-core,
//! fed with the hosts' real IP packets and advanced by the wall clock.
//!
//! Each host's kernel sends through its TUN device; the relay reads the packet, stamps it
//! with the clock, and offers it to the first link of its route exactly as a simulation does
//! (`Link::offer`, `pop_arrival`, the same event queue ordered by time and insertion). Link state is computed at the times the links scheduled, not at the times the
//! relay got round to them, so a late wake-up delays a release but never shifts the link's
//! later packets. A packet that reaches its destination host is written to that host's TUN
//! device; how late that write is against its scheduled time is the release lateness.
//!
//! The links queue descriptors: `Packet` values describing the real packet (its IP length
//! and ECN bits, which queues read; its flow and kind, for loss accounting). A descriptor's
//! `seq` holds the slot of the packet's bytes in the relay's buffer pool: nothing in
//! fatpipe-core's `net` reads `seq`, and a link hands back the value it was given (RED may
//! only set CE, which the relay copies into the real header before a capture or the
//! receiving host sees it).
//!
//! Super-packets: a host whose device has offloads (`tun::Offload::Tso`) hands the relay
//! TCP super-packets; the relay cuts each into the segments the sender's MTU allows
//! (`gso::write_segment`, one pool slot each) and offers them to the link one after the
//! other at the time it read them, as a NIC puts a TSO burst on its wire. On the way out,
//! `deliver.rs` merges what the links release together back into super-packets.
//!
//! Waiting: until the next event the relay sleeps in `epoll_pwait2` (nanosecond timeout) on
//! the TUN devices, waking `spin_margin` early and spinning on the clock until the event is
//! due, since a virtual machine wakes a sleeping thread tens of microseconds late.

use crate::clock::Clock;
use crate::coalesce::Coalescing;
use crate::deliver::{Delivery, WriteCounters};
use crate::gso::{self, VnetHdr, VNET_HDR_LEN};
use crate::ip::{self, Header};
use crate::lateness::Lateness;
use crate::pool::Pool;
use crate::sys;
use fatpipe_core::capture::{node_ip, Capture};
use fatpipe_core::event::{Event, EventQueue};
use fatpipe_core::net::routing::{routing_table, RoutingTable};
use fatpipe_core::net::split::Split;
use fatpipe_core::net::Link;
use fatpipe_core::packet::{Ecn, Packet, PacketKind, SackBlocks};
use fatpipe_core::probe::QueueSeries;
use fatpipe_core::scenario::{NodeKind, Scenario};
use fatpipe_core::sim::{CaptureSummary, LinkSummary};
use fatpipe_core::time::Time;
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Most packets read from one device before the others get a turn.
const READ_BATCH: usize = 64;
/// Longest single sleep, so the relay notices the start of the run and a stop request.
const MAX_SLEEP_PS: Time = 5_000_000_000; // 5 ms

/// What the relay and the other threads of an emulation share.
pub struct Shared {
    /// Relay-clock time of the run's time 0 (u64::MAX until the connections are set up).
    pub epoch_ps: AtomicU64,
    /// The relay's clock as of its last pass (for progress).
    pub now_ps: AtomicU64,
    /// Ask every thread to stop (end of run, error, interruption).
    pub stop: AtomicBool,
    /// Per flow: UDP payload bytes that entered the network, were lost in it, were delivered.
    pub flows: Vec<FlowBytes>,
}

#[derive(Default)]
pub struct FlowBytes {
    pub entered: AtomicU64,
    pub lost: AtomicU64,
    pub delivered: AtomicU64,
}

impl Shared {
    pub fn new(flows: usize) -> Shared {
        Shared {
            epoch_ps: AtomicU64::new(u64::MAX),
            now_ps: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            flows: (0..flows).map(|_| FlowBytes::default()).collect(),
        }
    }

    pub fn epoch(&self) -> Option<Time> {
        let e = self.epoch_ps.load(Ordering::Acquire);
        (e != u64::MAX).then_some(e)
    }
}

/// How the relay tells a flow's packets apart: its transport and the two ends' ports.
#[derive(Clone, Copy, Debug)]
pub struct FlowPorts {
    pub udp: bool,
    pub sender_node: u32,
    pub receiver_node: u32,
    pub sender_port: u16,
    pub receiver_port: u16,
}

/// What the network did to a flow's packets (the counters a simulation's `count_drop` keeps,
/// from the packets the relay saw).
#[derive(Clone, Debug, Default)]
pub struct FlowNet {
    pub data_packets_lost: u64,
    pub data_bytes_lost: u64,
    pub retransmissions_lost: u64,
    pub ack_packets_lost: u64,
    pub setup_packets_lost: u64,
    pub datagrams_lost: u64,
    pub datagram_bytes_lost: u64,
    pub datagrams_entered: u64,
    pub datagrams_delivered: u64,
    /// SYNs and SYN-ACKs that entered the network.
    pub syns: u64,
    pub synacks: u64,
    /// Data segments that entered the network, and those that repeated bytes sent before.
    pub data_segments: u64,
    pub retransmitted_segments: u64,
    /// Relay-clock time the first data segment entered the network.
    pub first_data_ps: Option<Time>,
    /// The end of the highest data sent (32-bit TCP sequence), once data was seen.
    highest_end: Option<u32>,
}

/// What the relay hands back when the run ends.
pub struct RelayReport {
    pub links: Vec<LinkSummary>,
    pub queue_series: QueueSeries,
    pub flows: Vec<FlowNet>,
    /// Per flow, UDP datagrams on the links (queued, serializing or propagating) at the end.
    pub datagrams_in_flight: Vec<u64>,
    /// How late packets were written against their release (coalescing delay included),
    /// against the interrupt they were due at, and the delay coalescing added.
    pub lateness: Lateness,
    pub interrupt_lateness: Lateness,
    pub coalescing_delay: Lateness,
    pub captures: Vec<CaptureSummary>,
    /// Packets the relay refused: not IPv4 from the host's own address to another host.
    pub foreign_packets: u64,
    /// Packets between emulated hosts that belong to no flow (ICMP, for example), forwarded.
    pub other_packets: u64,
    /// Packets a host's kernel would not take back (write to its TUN device failed).
    pub delivery_errors: u64,
    /// What the relay read from and wrote into the hosts' devices.
    pub reads: ReadCounters,
    pub writes: WriteCounters,
    pub realtime_priority: bool,
    pub cpu_s: f64,
    /// Link events (serializations ended, arrivals) processed.
    pub events: u64,
}

/// A host's end of the relay: its node and TUN device, and whether the device carries
/// virtio-net headers (offloads granted).
#[derive(Clone, Copy, Debug)]
pub struct Port {
    pub node: u32,
    pub tun: RawFd,
    pub vnet: bool,
    /// The device's receive side: GRO and interrupt coalescing (`coalesce.rs`).
    pub rx: Coalescing,
}

/// The reads from the hosts' devices, for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadCounters {
    /// `read` calls that returned a packet.
    pub reads: u64,
    /// Packets that came out of them (a super-packet counts its segments).
    pub segments: u64,
    /// Super-packets read, their segments and their bytes (IP packets, headers included).
    pub super_packets: u64,
    pub super_packet_segments: u64,
    pub super_packet_bytes: u64,
}

/// Room for the largest super-packet a device hands over (64 KB) after its header.
const SUPER_PACKET_BUFFER: usize = VNET_HDR_LEN + 65_536;

pub struct RelayOptions {
    /// Wake this long before an event and poll until it is due (0: sleep to the event).
    pub spin_margin_ps: Time,
    /// Run the relay thread under SCHED_FIFO (if the kernel lets it) so builds and other
    /// busy processes do not delay its wake-ups (the applications too, below it: an
    /// emulated host should not wait for the emulating machine's other work).
    pub realtime_priority: bool,
}

pub struct Relay {
    clock: Clock,
    shared: Arc<Shared>,
    duration_ps: Time,
    sample_interval_ps: Time,
    options: RelayOptions,
    events: EventQueue,
    links: Vec<Link>,
    routes: RoutingTable,
    splits: Vec<Split>,
    split_of: Vec<Option<u32>>,
    ports: Vec<Port>,
    /// Per node, the index in `ports` of its host (None for routers).
    port_of: Vec<Option<usize>>,
    /// The hosts by address (`capture::node_ip`).
    host_by_ip: HashMap<[u8; 4], u32>,
    /// (udp, source port, destination port) -> flow.
    flow_by_ports: HashMap<(bool, u16, u16), u32>,
    flow_ports: Vec<FlowPorts>,
    flows: Vec<FlowNet>,
    pool: Pool,
    /// A super-packet as read, before it is cut into pool slots (only with offloads).
    super_buf: Box<[u8]>,
    delivery: Delivery,
    reads: ReadCounters,
    captures: Vec<Capture>,
    link_taps: Vec<Vec<u32>>,
    node_taps: Vec<Vec<u32>>,
    /// Per link with captures: a `LinkTxEnd` is pending, and how many of its packets'
    /// starts the captures have seen (`Link::for_each_started`).
    link_watched: Vec<bool>,
    link_starts_seen: Vec<u64>,
    probes_scheduled: bool,
    foreign_packets: u64,
    other_packets: u64,
}

impl Relay {
    /// The scenario's links, routes and splits; `ports` the hosts' devices; `captures`
    /// already created (their times are the run's, from time 0).
    pub fn new(
        scenario: &Scenario,
        clock: Clock,
        shared: Arc<Shared>,
        ports: Vec<Port>,
        flow_ports: Vec<FlowPorts>,
        captures: Vec<Capture>,
        options: RelayOptions,
    ) -> Relay {
        // Any host may send to any other (an ICMP error, a stray packet), not only along
        // the flows: every host is a destination.
        let hosts = scenario.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Host).map(|(i, _)| i as u32);
        let routes = routing_table(scenario.nodes.len(), &scenario.links, &scenario.routes, hosts);
        let mut links: Vec<Link> = scenario.links.iter().cloned().map(|l| Link::new(l, scenario.seed)).collect();
        // The run starts once the connections are open (`start_run`); no outage before.
        for link in &mut links {
            link.set_schedule_origin(Time::MAX);
        }
        let (splits, split_of) = fatpipe_core::net::split::groups(&scenario.splits, links.len(), scenario.seed);
        let mut port_of = vec![None; scenario.nodes.len()];
        for (i, p) in ports.iter().enumerate() {
            port_of[p.node as usize] = Some(i);
        }
        let host_by_ip = ports.iter().map(|p| (node_ip(p.node), p.node)).collect();
        let mut flow_by_ports = HashMap::new();
        for (f, p) in flow_ports.iter().enumerate() {
            flow_by_ports.insert((p.udp, p.sender_port, p.receiver_port), f as u32);
            flow_by_ports.insert((p.udp, p.receiver_port, p.sender_port), f as u32);
        }
        let (link_taps, node_taps) =
            fatpipe_core::capture::taps(&scenario.captures, &scenario.links, scenario.nodes.len());
        let mtu = scenario.links.iter().map(|l| l.mtu_bytes as usize).max().unwrap_or(1500).max(1500);
        let flows = vec![FlowNet::default(); flow_ports.len()];
        let delivery = Delivery::new(ports.iter().map(|p| (p.tun, p.vnet, p.rx)), clock);
        let super_len = if ports.iter().any(|p| p.vnet) { SUPER_PACKET_BUFFER } else { 0 };
        Relay {
            clock,
            shared,
            duration_ps: scenario.duration_ps,
            sample_interval_ps: scenario.sample_interval_ps,
            options,
            events: EventQueue::default(),
            links,
            routes,
            splits,
            split_of,
            ports,
            port_of,
            host_by_ip,
            flow_by_ports,
            flow_ports,
            flows,
            pool: Pool::new(mtu, 4096),
            super_buf: vec![0u8; super_len].into_boxed_slice(),
            delivery,
            reads: ReadCounters::default(),
            captures,
            link_watched: vec![false; link_taps.len()],
            link_starts_seen: vec![0; link_taps.len()],
            link_taps,
            node_taps,
            probes_scheduled: false,
            foreign_packets: 0,
            other_packets: 0,
        }
    }

    /// Relays until the run's end (its epoch + duration) or a stop request.
    pub fn run(mut self) -> io::Result<RelayReport> {
        crate::clock::tight_timer_slack();
        let realtime_priority = self.options.realtime_priority && set_realtime_priority(RELAY_PRIORITY);
        let mut epoll = Epoll::new(&self.ports)?;
        let mut queue_series = QueueSeries::default();
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let now = self.clock.now();
            self.shared.now_ps.store(now, Ordering::Relaxed);
            let end = self.shared.epoch().map(|e| e + self.duration_ps);
            if !self.probes_scheduled {
                if let Some(epoch) = self.shared.epoch() {
                    // Seen within MAX_SLEEP_PS, well before the epoch comes (START_MARGIN).
                    self.events.schedule(epoch, Event::Probe);
                    for link in &mut self.links {
                        link.set_schedule_origin(epoch);
                    }
                    self.delivery.count_lateness_from(epoch);
                    self.probes_scheduled = true;
                }
            }
            if let Some(end) = end.filter(|&e| now >= e) {
                self.run_events_until(end, &mut queue_series);
                break;
            }
            self.run_events_until(now, &mut queue_series);
            // Wait for a packet until the next event (or the end, or a while), waking
            // `spin_margin` early; inside the margin, spin on the clock (no system call)
            // to the event, then look at the devices once.
            // With coalescing on every device, nothing a link releases is due before its
            // release plus the shortest rx_usecs: the relay sleeps past link events to the
            // next interrupt (their state is computed at their own times all the same).
            let hold = self.delivery.min_hold_ps();
            let next = self
                .events
                .peek_time()
                .map(|t| t.saturating_add(hold))
                .into_iter()
                .chain(self.delivery.next_due())
                .chain(end)
                .min()
                .unwrap_or(Time::MAX);
            let wait = next.saturating_sub(self.clock.now()).min(MAX_SLEEP_PS);
            let ready = if wait > self.options.spin_margin_ps {
                epoll.wait(wait - self.options.spin_margin_ps)?
            } else {
                while self.clock.now() < next {
                    std::hint::spin_loop();
                }
                epoll.wait(0)?
            };
            for &h in ready {
                self.read_host(h as usize, &mut queue_series)?;
            }
        }
        let datagrams_in_flight = self.udp_in_flight();
        for c in &mut self.captures {
            c.flush();
        }
        // Busy time counts until the run's end on the relay's clock.
        let end = self.shared.epoch().map_or(self.clock.now(), |e| e + self.duration_ps);
        Ok(RelayReport {
            links: self
                .links
                .iter_mut()
                .map(|l| {
                    l.advance(end);
                    LinkSummary::of(l, end)
                })
                .collect(),
            queue_series,
            flows: self.flows,
            datagrams_in_flight,
            lateness: self.delivery.lateness,
            interrupt_lateness: self.delivery.interrupt_lateness,
            coalescing_delay: self.delivery.coalescing_delay,
            captures: self.captures.iter().map(CaptureSummary::of).collect(),
            foreign_packets: self.foreign_packets,
            other_packets: self.other_packets,
            delivery_errors: self.delivery.counters.failed_packets,
            reads: self.reads,
            writes: self.delivery.counters,
            realtime_priority,
            cpu_s: thread_cpu_seconds(),
            events: self.events.popped,
        })
    }

    /// Reads what host `h` sent, until its device is empty or READ_BATCH packets so the
    /// other hosts get their turn (level-triggered epoll reports it again).
    fn read_host(&mut self, h: usize, queue_series: &mut QueueSeries) -> io::Result<()> {
        if self.ports[h].vnet {
            return self.read_host_vnet(h, queue_series);
        }
        for _ in 0..READ_BATCH {
            let slot = self.pool.take();
            let buf = self.pool.buffer(slot);
            match sys::read_nonblocking(self.ports[h].tun, buf)? {
                Some(n) if n > 0 => {
                    self.pool.set_len(slot, n);
                    let t = self.clock.now();
                    // Everything due before the packet arrived happens first.
                    self.run_events_until(t, queue_series);
                    self.reads.reads += 1;
                    self.reads.segments += 1;
                    self.ingress(self.ports[h].node, t, slot);
                }
                _ => {
                    self.pool.put(slot);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// As `read_host`, from a device with virtio-net headers: a super-packet is cut into
    /// its segments, each offered to the link at the time it was read; a packet whose
    /// checksum was left to the device gets it here, so the network carries real packets.
    fn read_host_vnet(&mut self, h: usize, queue_series: &mut QueueSeries) -> io::Result<()> {
        let node = self.ports[h].node;
        for _ in 0..READ_BATCH {
            let n = match sys::read_nonblocking(self.ports[h].tun, &mut self.super_buf)? {
                Some(n) if n > VNET_HDR_LEN => n,
                _ => return Ok(()),
            };
            let t = self.clock.now();
            self.run_events_until(t, queue_series);
            self.reads.reads += 1;
            let hdr = VnetHdr::read(&self.super_buf[..VNET_HDR_LEN]);
            let packet = &mut self.super_buf[VNET_HDR_LEN..n];
            if hdr.gso_type == gso::GSO_NONE {
                if packet.len() > self.pool.slot_bytes()
                    || (hdr.flags & gso::F_NEEDS_CSUM != 0 && !gso::complete_checksum(packet, &hdr))
                {
                    self.foreign_packets += 1;
                    continue;
                }
                let slot = self.pool.take();
                self.pool.buffer(slot)[..packet.len()].copy_from_slice(packet);
                self.pool.set_len(slot, packet.len());
                self.reads.segments += 1;
                self.ingress(node, t, slot);
                continue;
            }
            let Some(g) = gso::plan(&hdr, packet).filter(|g| g.header_bytes + g.mss <= self.pool.slot_bytes()) else {
                self.foreign_packets += 1;
                continue;
            };
            self.reads.super_packets += 1;
            self.reads.super_packet_segments += g.segments as u64;
            self.reads.super_packet_bytes += (g.header_bytes + g.payload_bytes) as u64;
            self.reads.segments += g.segments as u64;
            for i in 0..g.segments {
                let slot = self.pool.take();
                let len = gso::write_segment(&self.super_buf[VNET_HDR_LEN..n], &g, i, self.pool.buffer(slot))
                    .expect("a segment fits a slot (checked above)");
                self.pool.set_len(slot, len);
                self.ingress(node, t, slot);
            }
        }
        Ok(())
    }

    /// Processes every event due at or before `t`, at its own time, then writes what the
    /// devices hold whose interrupt is due by `t` (without coalescing: all they hold).
    fn run_events_until(&mut self, t: Time, queue_series: &mut QueueSeries) {
        self.run_due_events(t, queue_series);
        self.delivery.flush(&mut self.pool, t);
    }

    fn run_due_events(&mut self, t: Time, queue_series: &mut QueueSeries) {
        while let Some((time, event)) = self.events.pop_until(t) {
            match event {
                Event::LinkArrival(l) => {
                    let link = &mut self.links[l as usize];
                    let pkt = self.events.link_arrival(link, l, time);
                    let to = link.spec.to;
                    self.arrive(to, pkt, time);
                }
                Event::LinkTxEnd(l) => {
                    self.link_watched[l as usize] = false;
                    self.tap_started(l, time);
                }
                Event::Probe => {
                    let epoch = self.shared.epoch().expect("probes start at the epoch");
                    for link in &mut self.links {
                        link.advance(time);
                    }
                    queue_series.sample(time - epoch, &self.links);
                    let next = time + self.sample_interval_ps;
                    if next <= epoch + self.duration_ps {
                        self.events.schedule(next, Event::Probe);
                    }
                }
                _ => unreachable!("the relay schedules only link events and probes"),
            }
        }
    }

    /// Link `l`'s captures see the packets it started to serialize since last time, each
    /// at its start, with the CE mark its queue may have set (written into the real header
    /// first); a `LinkTxEnd` stays pending while packets wait, so every start is seen.
    fn tap_started(&mut self, l: u32, time: Time) {
        let mut started = Vec::new();
        self.links[l as usize].for_each_started(time, &mut self.link_starts_seen[l as usize], |t, pkt| {
            started.push((t, *pkt));
        });
        for (t, pkt) in started {
            self.sync_ce(&pkt);
            self.tap(l, true, t, &pkt);
        }
        if !self.link_watched[l as usize] {
            if let Some(t) = self.links[l as usize].busy_until(time) {
                self.link_watched[l as usize] = true;
                self.events.schedule(t, Event::LinkTxEnd(l));
            }
        }
    }

    fn sync_ce(&mut self, pkt: &Packet) {
        if pkt.ecn.has(Ecn::CE) {
            let buf = self.pool.packet_mut(pkt.seq as u32);
            if buf[1] & 3 != 3 {
                ip::set_ce(buf);
            }
        }
    }

    /// Hands the packet to the captures of link `at` (`on_link`) or of node `at`.
    fn tap(&mut self, at: u32, on_link: bool, time: Time, pkt: &Packet) {
        let Some(epoch) = self.shared.epoch().filter(|&e| time >= e) else { return };
        let taps = if on_link { &self.link_taps[at as usize] } else { &self.node_taps[at as usize] };
        let bytes = self.pool.packet(pkt.seq as u32);
        for &c in taps {
            self.captures[c as usize].record_ip(time - epoch, pkt.src, pkt.dst, bytes);
        }
    }

    /// A packet reaches `node` at `time`: delivered to its host or forwarded.
    fn arrive(&mut self, node: u32, pkt: Packet, time: Time) {
        if pkt.dst != node {
            self.forward(node, pkt, time);
            return;
        }
        let slot = pkt.seq as u32;
        // A RED queue on the way may have marked it CE: the real header says so.
        self.sync_ce(&pkt);
        if !self.node_taps[node as usize].is_empty() {
            self.tap(node, false, time, &pkt);
        }
        if pkt.kind == PacketKind::Datagram && (pkt.flow as usize) < self.flows.len() {
            self.flows[pkt.flow as usize].datagrams_delivered += 1;
            self.shared.flows[pkt.flow as usize].delivered.fetch_add(pkt.payload_bytes as u64, Ordering::Relaxed);
        }
        let port = self.port_of[node as usize].expect("destinations are hosts");
        self.delivery.deliver(&mut self.pool, port, slot, time);
    }

    /// Offers `pkt` at `node` to the next link of its route (a member of a split drawn at
    /// random), as `Simulation::forward` does.
    fn forward(&mut self, node: u32, pkt: Packet, time: Time) {
        let Some(mut l) = self.routes.get(node, pkt.dst) else {
            self.foreign_packets += 1;
            self.pool.put(pkt.seq as u32);
            return;
        };
        if let Some(s) = self.split_of[l as usize] {
            l = self.splits[s as usize].choose();
        }
        if self.events.link_offer(&mut self.links[l as usize], l, time, &pkt) {
            if !self.link_taps[l as usize].is_empty() {
                self.tap_started(l, time);
            }
        } else {
            self.count_drop(&pkt);
            self.pool.put(pkt.seq as u32);
        }
    }

    /// A host sent the packet in `slot` at `time`.
    fn ingress(&mut self, node: u32, time: Time, slot: u32) {
        let header = ip::parse(self.pool.packet(slot));
        let dst = header.and_then(|h| self.host_of(h.dst));
        let (Some(h), Some(dst)) = (header, dst) else {
            self.foreign_packets += 1;
            self.pool.put(slot);
            return;
        };
        if h.src != node_ip(node) || dst == node {
            self.foreign_packets += 1;
            self.pool.put(slot);
            return;
        }
        let pkt = self.describe(&h, node, dst, slot, time);
        self.forward(node, pkt, time);
    }

    /// The host node whose address is `ip`.
    fn host_of(&self, ip: [u8; 4]) -> Option<u32> {
        self.host_by_ip.get(&ip).copied()
    }

    /// The descriptor links queue for a real packet (see the module comment), and the flow's
    /// counters of what entered the network.
    fn describe(&mut self, h: &Header, src: u32, dst: u32, slot: u32, time: Time) -> Packet {
        let udp = h.protocol == ip::PROTO_UDP;
        let flow = match h.protocol {
            ip::PROTO_TCP | ip::PROTO_UDP => self.flow_by_ports.get(&(udp, h.src_port, h.dst_port)).copied(),
            _ => None,
        };
        let kind = if udp {
            PacketKind::Datagram
        } else if h.tcp_flags & ip::TCP_SYN != 0 {
            if h.tcp_flags & ip::TCP_ACK != 0 {
                PacketKind::SynAck
            } else {
                PacketKind::Syn
            }
        } else if h.payload_bytes > 0 {
            PacketKind::Data
        } else {
            PacketKind::Ack
        };
        let mut ecn = Ecn::default();
        if h.ecn != 0 {
            ecn.set(Ecn::ECT);
        }
        if h.ecn == 3 {
            ecn.set(Ecn::CE);
        }
        let mut retransmission = false;
        match flow {
            Some(f) if self.flow_ports[f as usize].udp == udp => {
                let net = &mut self.flows[f as usize];
                match kind {
                    PacketKind::Syn => net.syns += 1,
                    PacketKind::SynAck => net.synacks += 1,
                    PacketKind::Data if src == self.flow_ports[f as usize].sender_node => {
                        let end = h.seq.wrapping_add(h.payload_bytes);
                        net.data_segments += 1;
                        net.first_data_ps.get_or_insert(time);
                        match net.highest_end {
                            Some(high) if ip::seq_before(h.seq, high) => {
                                retransmission = true;
                                net.retransmitted_segments += 1;
                                if ip::seq_before(high, end) {
                                    net.highest_end = Some(end);
                                }
                            }
                            _ => net.highest_end = Some(end),
                        }
                    }
                    PacketKind::Datagram => {
                        net.datagrams_entered += 1;
                        self.shared.flows[f as usize].entered.fetch_add(h.payload_bytes as u64, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
            _ => self.other_packets += 1,
        }
        Packet {
            flow: flow.unwrap_or(u32::MAX),
            conn: 0,
            src,
            dst,
            kind,
            seq: slot as u64,
            payload_bytes: h.payload_bytes,
            ip_bytes: h.ip_bytes,
            ack: 0,
            window_bytes: 0,
            sack: SackBlocks::default(),
            ts_val: 0,
            ts_ecr: 0,
            retransmission,
            ecn,
        }
    }

    /// A flow's packet was lost in the network (the counters of `Simulation::count_drop`).
    fn count_drop(&mut self, pkt: &Packet) {
        let Some(net) = self.flows.get_mut(pkt.flow as usize) else { return };
        match pkt.kind {
            PacketKind::Data => {
                net.data_packets_lost += 1;
                net.data_bytes_lost += pkt.payload_bytes as u64;
                net.retransmissions_lost += u64::from(pkt.retransmission);
            }
            PacketKind::Ack => net.ack_packets_lost += 1,
            PacketKind::Datagram => {
                net.datagrams_lost += 1;
                net.datagram_bytes_lost += pkt.payload_bytes as u64;
                self.shared.flows[pkt.flow as usize].lost.fetch_add(pkt.payload_bytes as u64, Ordering::Relaxed);
            }
            PacketKind::Syn | PacketKind::SynAck | PacketKind::HandshakeAck | PacketKind::Request => {
                net.setup_packets_lost += 1
            }
        }
    }

    /// Per flow, datagrams in the network now (queued, serializing or propagating).
    fn udp_in_flight(&self) -> Vec<u64> {
        self.flows.iter().map(|n| n.datagrams_entered - n.datagrams_delivered - n.datagrams_lost).collect()
    }
}

/// epoll on the hosts' TUN devices, for waking when one has a packet.
struct Epoll {
    fd: std::os::fd::OwnedFd,
    /// The ready devices of the last wait (reused: waiting never allocates).
    events: Vec<libc::epoll_event>,
    ready: Vec<u32>,
}

impl Epoll {
    fn new(ports: &[Port]) -> io::Result<Epoll> {
        // SAFETY: plain epoll_create1.
        let fd = sys::owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        for (i, p) in ports.iter().enumerate() {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
            // SAFETY: registers a descriptor we hold with a valid event.
            sys::check(unsafe {
                libc::epoll_ctl(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::EPOLL_CTL_ADD, p.tun, &mut ev)
            })?;
        }
        let n = ports.len().max(1);
        Ok(Epoll { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; n], ready: Vec::with_capacity(n) })
    }

    /// The devices with a packet, waiting up to `timeout_ps` for one (nanosecond
    /// resolution: epoll_pwait2, Linux 5.11; 0 only looks).
    fn wait(&mut self, timeout_ps: Time) -> io::Result<&[u32]> {
        let ts = sys::timespec(timeout_ps / 1000);
        // SAFETY: the syscall writes at most `events.len()` events; null sigmask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        self.ready.clear();
        if n < 0 {
            let err = io::Error::last_os_error();
            return if err.kind() == io::ErrorKind::Interrupted { Ok(&self.ready) } else { Err(err) };
        }
        self.ready.extend(self.events[..n as usize].iter().map(|e| e.u64 as u32));
        Ok(&self.ready)
    }
}

/// SCHED_FIFO priority of the relay (of 1-99, below the kernel's own threads), and of the
/// hosts' applications (below the relay, which must never wait for them).
pub const RELAY_PRIORITY: libc::c_int = 50;
pub const APPLICATION_PRIORITY: libc::c_int = 40;

/// Puts the calling thread under SCHED_FIFO at `priority`; false if the kernel refuses.
/// The kernel's RT throttling (sched_rt_runtime_us) still leaves other threads 5 % of each
/// second, and these threads sleep whenever they have nothing to do.
pub fn set_realtime_priority(priority: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: changes only the calling thread's policy.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Whether `node` of the scenario is a host (gets a namespace).
pub fn is_host(scenario: &Scenario, node: u32) -> bool {
    scenario.nodes[node as usize].kind == NodeKind::Host
}
