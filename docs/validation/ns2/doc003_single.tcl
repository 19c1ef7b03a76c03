# Document 003's single-flow path in ns-2, as docs/validation/ns2_compare.py runs it beside
# fatpipe (python/fatpipe/reproductions/tcp-versions/bases/single.toml): one FTP source,
# S -- R1 ==rate, 12.5 ms== R2 -- D, the access links at 10 Gb/s with no delay, a
# 200-packet DropTail queue at R1, packetSize_ 1000 and a window that never limits.
#
# usage: ns doc003_single.tcl AGENT RATE DURATION_S SAMPLES_FILE
#   AGENT: the part after Agent/TCP/ ("Tahoe" for Agent/TCP), e.g. Sack1
# Every 10 ms SAMPLES_FILE gets: time cwnd_ ssthresh_ ack_ nrexmitpack_ nrexmit_
set agent [lindex $argv 0]
set rate [lindex $argv 1]
set duration [lindex $argv 2]
set samples [lindex $argv 3]

set ns [new Simulator]
set S [$ns node]; set R1 [$ns node]; set R2 [$ns node]; set D [$ns node]
$ns duplex-link $S $R1 10Gb 0ms DropTail
$ns duplex-link $R1 $R2 $rate 12.5ms DropTail
$ns duplex-link $R2 $D 10Gb 0ms DropTail
$ns queue-limit $R1 $R2 200
$ns queue-limit $S $R1 1000000

source [file join [file dirname [info script]] flow.tcl]
set tcp [ftp_flow $ns $S $D $agent]

set out [open $samples w]
proc sample {} {
    global ns tcp out
    puts $out "[$ns now] [$tcp set cwnd_] [$tcp set ssthresh_] [$tcp set ack_] [$tcp set nrexmitpack_] [$tcp set nrexmit_]"
    $ns at [expr [$ns now] + 0.01] "sample"
}
$ns at 0.0 "sample"
$ns at $duration "close $out; exit 0"
$ns run
