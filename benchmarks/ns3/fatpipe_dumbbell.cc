// fatpipe's default dumbbell in ns-3 (the libraries and headers of the `ns3` wheel from
// PyPI): one TCP flow, sender -- access (10x) -- bottleneck (RTT/2 each way) -- access
// (10x) -- receiver, drop-tail queues of one BDP at the bottleneck, 1500-byte packets,
// the window capped at one BDP by the receive buffer (no loss). ns-3's defaults: SACK on,
// delayed ACKs every second segment, timestamps on; TcpLinuxReno or TcpCubic.
//
// usage: fatpipe_dumbbell RATE_MBPS RTT_MS WARMUP_S MEASURE_S [TcpCubic|TcpLinuxReno]
// prints: data_packets N events N wall_s S  (for the measured part only)
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <iostream>

using namespace ns3;

static uint64_t g_data_packets = 0;

static void
CountData(Ptr<const Packet> p)
{
    if (p->GetSize() > 1000)
    {
        g_data_packets++;
    }
}

int
main(int argc, char** argv)
{
    if (argc < 5)
    {
        std::cerr << "usage: fatpipe_dumbbell RATE_MBPS RTT_MS WARMUP_S MEASURE_S [TcpCubic|TcpLinuxReno]"
                  << std::endl;
        return 2;
    }
    uint64_t rate_mbps = std::stoull(argv[1]);
    double rtt_ms = std::stod(argv[2]), warmup_s = std::stod(argv[3]), measure_s = std::stod(argv[4]);
    std::string cc = argc > 5 ? argv[5] : "TcpCubic";

    uint32_t bdp_bytes = (uint32_t)(rate_mbps * 1e6 * rtt_ms / 1e3 / 8);
    uint32_t bdp_packets = bdp_bytes / 1500 + 1;
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + cc));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(2 * bdp_bytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(bdp_bytes));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));

    NodeContainer nodes;
    nodes.Create(4); // sender, r1, r2, receiver
    PointToPointHelper access, bottleneck;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate_mbps * 10 * 1000000)));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1000p"));
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate_mbps * 1000000)));
    bottleneck.SetChannelAttribute("Delay", TimeValue(MilliSeconds(rtt_ms / 2)));
    NetDeviceContainer d0 = access.Install(nodes.Get(0), nodes.Get(1));
    NetDeviceContainer d1 = bottleneck.Install(nodes.Get(1), nodes.Get(2));
    NetDeviceContainer d2 = access.Install(nodes.Get(2), nodes.Get(3));

    InternetStackHelper stack;
    stack.Install(nodes);
    // The bottleneck's queue: a FIFO of one BDP in the traffic-control layer (ns-3 keeps a
    // small device queue below it); the access links get ns-3's default pfifo_fast when
    // their addresses are assigned.
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(bdp_packets) + "p"));
    tch.Install(d1);
    Ipv4AddressHelper ip;
    ip.SetBase("10.1.1.0", "255.255.255.0");
    ip.Assign(d0);
    ip.SetBase("10.1.2.0", "255.255.255.0");
    ip.Assign(d1);
    ip.SetBase("10.1.3.0", "255.255.255.0");
    Ipv4InterfaceContainer i2 = ip.Assign(d2);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    uint16_t port = 5001;
    BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(i2.GetAddress(1), port));
    source.SetAttribute("MaxBytes", UintegerValue(0));
    source.Install(nodes.Get(0)).Start(Seconds(0));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    sink.Install(nodes.Get(3)).Start(Seconds(0));
    d0.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&CountData));

    Simulator::Stop(Seconds(warmup_s));
    Simulator::Run();
    uint64_t packets0 = g_data_packets, events0 = Simulator::GetEventCount();
    auto start = std::chrono::steady_clock::now();
    Simulator::Stop(Seconds(measure_s));
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "data_packets " << (g_data_packets - packets0) << " events "
              << (Simulator::GetEventCount() - events0) << " wall_s " << wall << std::endl;
    Simulator::Destroy();
    return 0;
}
