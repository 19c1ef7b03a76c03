//! Building a simulation from a validated scenario: every node, link, split, flow endpoint,
//! source, capture and series, sized once so that the run allocates nothing per packet.

use super::*;

impl Simulation {
    pub fn new(mut scenario: Scenario) -> Result<Simulation, String> {
        let routes = scenario.validate()?;
        for (i, f) in scenario.flows.iter().enumerate() {
            if let Some(CcSpec::Python(cfg)) = &f.cc {
                cfg.check_attached().map_err(|e| format!("flows[{i}].cc.{e}"))?;
            }
        }
        jittered_flows(&mut scenario);
        let links: Vec<Link> = scenario.links.iter().cloned().map(|l| Link::new(l, scenario.seed)).collect();
        let (splits, split_of) = crate::net::split::groups(&scenario.splits, links.len(), scenario.seed);
        let flows: Vec<Flow> = scenario
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (sender, receiver) = endpoints(i as u32, f, 0, scenario.seed);
                let (http, handshake) = match &f.source {
                    // HTTP opens its connections itself (`sim/workload.rs`).
                    SourceSpec::Http(h) => (Some(HttpSession::new(i as u32, f.dst, f.src, h, f.tcp())), None),
                    _ => (None, f.tcp().handshake.then(|| Handshake::new(i as u32, 0, f.src, f.dst, f.tcp()))),
                };
                Flow {
                    name: f.name.clone(),
                    src: f.src,
                    dst: f.dst,
                    source: f.source.clone(),
                    sender,
                    receiver,
                    rto_timer: LazyTimer::default(),
                    delayed_ack_timer: LazyTimer::default(),
                    pacing_timer: LazyTimer::default(),
                    window_update_timer: LazyTimer::default(),
                    bursts: BurstStats::default(),
                    handshake,
                    http,
                    conn: 0,
                    connection_timer: LazyTimer::default(),
                    closed: ClosedConnections::default(),
                    losses: FlowLosses::default(),
                    iface: routes.get(f.src, f.dst).expect("validated: every flow has a route"),
                    max_ip_bytes: f.tcp().header_bytes() + f.tcp().mss_bytes,
                    iface_waiting: false,
                    transfers: transfers::Transfers::of(&f.source),
                    udp: UdpSchedule::of(&f.source).map(|schedule| {
                        // The sending host's line: the first link of the route (validated to exist).
                        let line = &links[routes.get(f.src, f.dst).expect("validated route") as usize].spec;
                        UdpFlow::new(
                            i as u32,
                            f.src,
                            f.dst,
                            schedule,
                            f.source.stop_ps(),
                            line.rate_bps,
                            line.framing_bytes,
                        )
                    }),
                }
            })
            .collect();
        let mut senders_per_link = vec![0; links.len()];
        for f in &flows {
            senders_per_link[f.iface as usize] += 1;
        }
        let iface_waiters = senders_per_link.into_iter().map(VecDeque::with_capacity).collect();
        let mut events = EventQueue::default();
        for (i, f) in flows.iter().enumerate() {
            events.schedule(f.source.start_ps(), Event::SourceStart(i as u32));
            // A UDP source checks its stop time at each datagram.
            if let (Some(stop), None) = (f.source.stop_ps(), &f.udp) {
                events.schedule(stop, Event::SourceStop(i as u32));
            }
        }
        events.schedule(0, Event::Probe);
        let wire = scenario
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut rng = Rng::for_element(scenario.seed, &format!("{}/isn", f.name));
                let http = matches!(f.source, SourceSpec::Http(_));
                let tcp = f.tcp();
                FlowWire {
                    sender_isn: rng.next_u64() as u32,
                    receiver_isn: rng.next_u64() as u32,
                    // Linux's first ephemeral port, one per flow, to iperf's server port; an
                    // HTTP server listens on 80 and its client takes a new port per connection.
                    sender_port: if http { 80 } else { 32768 + (i % 28232) as u16 },
                    receiver_port: if http { 40000 + ((i * 1000) % 25000) as u16 } else { 5001 },
                    sender_node: f.src,
                    mss_bytes: tcp.mss_bytes,
                    sack_permitted: tcp.recovery == crate::tcp::config::Recovery::Sack,
                    window_scaling: tcp.window_scaling,
                    window_shift: f.tcp.as_ref().map_or(0, TcpConfig::window_shift),
                    sender_window_bytes: f.tcp.as_ref().map_or(0, TcpConfig::advertised_window_bytes),
                    timestamps: f.tcp.as_ref().is_some_and(|t| t.timestamps),
                }
            })
            .collect();
        let (link_taps, node_taps) = crate::capture::taps(&scenario.captures, &scenario.links, scenario.nodes.len());
        let captures =
            scenario.captures.iter().map(|spec| Capture::create(spec.clone())).collect::<Result<Vec<_>, _>>()?;
        let hand_on = hand_on::hand_on_table(&scenario, &routes, &link_taps);
        let next_hop = routes
            .hops()
            .iter()
            .map(|&l| if l != NO_ROUTE && split_of[l as usize].is_some() { l | IN_SPLIT } else { l })
            .collect();
        let (route_column, route_columns) = (routes.column_map().to_vec(), routes.columns());
        let flow_series = series(&scenario, scenario.flows.len(), FlowSeries::reserve);
        let queue_series = series(&scenario, scenario.links.len(), QueueSeries::reserve);
        let mut sim = Simulation {
            scenario,
            now: 0,
            events,
            links,
            routes,
            next_hop,
            route_column,
            route_columns,
            splits,
            split_of,
            flows,
            out: Vec::with_capacity(256),
            flow_series,
            queue_series,
            captures,
            wire,
            link_watched: vec![false; link_taps.len()],
            link_starts_seen: vec![0; link_taps.len()],
            link_taps,
            node_taps,
            iface_waiters,
            hand_on,
            next_probe: 0,
            run_end: 0,
            hops_handed_on: 0,
            arrivals_direct: 0,
            direct_last_hop: true,
            held_drops: Vec::new(),
            metrics: MetricsCache::default(),
        };
        sim.set_capture_clock();
        Ok(sim)
    }
}
