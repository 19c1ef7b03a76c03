// -*- c-basic-offset: 4; indent-tabs-mode: nil -*-
// fatpipe's default dumbbell in htsim (Broadcom csg-htsim, sim/): one TCP flow, sender --
// access (10x) -- bottleneck (RTT/2 each way) -- access (10x) -- receiver, drop-tail
// queues of one BDP at the bottleneck and 1000 packets at the access links, 1500-byte
// packets, the sender's window capped at one BDP (no loss). htsim's TCP is NewReno with
// an ACK per packet and no SACK; it is the engine's speed that is compared, not the TCP.
//
// With TOPOLOGY "link" instead of "dumbbell": one bottleneck queue and pipe forward and a
// pipe back, htsim's cheapest path (3 events per data packet; the htsim figure).
//
// usage: fatpipe_dumbbell RATE_MBPS RTT_MS WARMUP_S MEASURE_S [dumbbell|link]
// prints: data_packets N events N wall_s S  (for the measured part only)
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include "config.h"
#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "tcp.h"

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: fatpipe_dumbbell RATE_MBPS RTT_MS WARMUP_S MEASURE_S [dumbbell|link]" << std::endl;
        return 2;
    }
    uint64_t rate_mbps = strtoull(argv[1], nullptr, 10);
    double rtt_ms = atof(argv[2]), warmup_s = atof(argv[3]), measure_s = atof(argv[4]);
    bool dumbbell = argc < 6 || std::string(argv[5]) != "link";

    EventList eventlist;
    eventlist.setEndtime(timeFromSec(warmup_s + measure_s));
    Packet::set_packet_size(1500);
    linkspeed_bps bottleneck = speedFromMbps(rate_mbps), access = speedFromMbps(rate_mbps * 10);
    double bdp_packets = rate_mbps * 1e6 * rtt_ms / 1e3 / 8 / 1500;
    mem_b bdp = memFromPkt(bdp_packets + 1);

    Queue a1(access, memFromPkt(1000), eventlist, nullptr);
    Queue b1(bottleneck, bdp, eventlist, nullptr);
    Pipe p1(timeFromMs(rtt_ms / 2), eventlist);
    Queue a2(access, memFromPkt(1000), eventlist, nullptr);
    Queue a3(access, memFromPkt(1000), eventlist, nullptr);
    Queue b2(bottleneck, bdp, eventlist, nullptr);
    Pipe p2(timeFromMs(rtt_ms / 2), eventlist);
    Queue a4(access, memFromPkt(1000), eventlist, nullptr);

    TcpSrc src(nullptr, nullptr, eventlist);
    TcpSink sink;
    src._maxcwnd = (uint32_t)(bdp_packets * Packet::data_packet_size());
    // htsim's slow-start threshold starts at 100 packets; open it so the window reaches one
    // BDP in slow start, as fatpipe's flow does (its ssthresh starts infinite).
    src.set_ssthresh(src._maxcwnd);
    TcpRtxTimerScanner scanner(timeFromMs(10), eventlist);
    scanner.registerTcp(src);

    route_t out, back;
    if (dumbbell) {
        out.push_back(&a1); out.push_back(&b1); out.push_back(&p1); out.push_back(&a2); out.push_back(&sink);
        back.push_back(&a3); back.push_back(&b2); back.push_back(&p2); back.push_back(&a4); back.push_back(&src);
    } else {
        out.push_back(&b1); out.push_back(&p1); out.push_back(&sink);
        back.push_back(&p2); back.push_back(&src);
    }
    src.connect(out, back, sink, 0);

    simtime_picosec warmup_end = timeFromSec(warmup_s);
    while (eventlist.now() < warmup_end && eventlist.doNextEvent()) {}
    // htsim's TcpSrc counts _packets_sent in bytes, one MSS per packet.
    uint64_t bytes0 = src._packets_sent, events = 0;
    auto start = std::chrono::steady_clock::now();
    while (eventlist.doNextEvent()) { events++; }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "data_packets " << (src._packets_sent - bytes0) / Packet::data_packet_size() << " events " << events
              << " wall_s " << wall << std::endl;
    return 0;
}
