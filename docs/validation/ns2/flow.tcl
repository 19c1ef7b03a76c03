# What doc003_single.tcl and doc003_pair.tcl share: one FTP source on node S sending to
# a sink on node D through ns-2's agent of that name ("Tahoe" is Agent/TCP; SACK's receiver
# is Agent/TCPSink/Sack1), with packetSize_ 1000 and a window that never limits, as document
# 003 ran them (bases/*.toml). The FTP starts at time 0; returns the agent.
proc ftp_flow {ns S D agent} {
    if {$agent == "Tahoe"} { set tcp [new Agent/TCP] } else { set tcp [new Agent/TCP/$agent] }
    $tcp set packetSize_ 1000
    $tcp set window_ 100000
    $ns attach-agent $S $tcp
    if {$agent == "Sack1"} { set sink [new Agent/TCPSink/Sack1] } else { set sink [new Agent/TCPSink] }
    $ns attach-agent $D $sink
    $ns connect $tcp $sink
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    $ns at 0.0 "$ftp start"
    return $tcp
}
