# Document 003's two-flow dumbbell in ns-2 (python/fatpipe/reproductions/tcp-versions/bases/
# pair.toml): two FTP sources whose access links (ACCESS_RATE, 10 ms each way) join at R1,
# R1 ==RATE, 12.5 ms== R2, the sinks behind R2 over links of ACCESS_RATE and no delay; a
# 200-packet queue at R1, DropTail or RED (ns-2's automatic parameters, gentle_; counted in
# packets, as ns-2 before 10/11/2004: bytes_ and queue_in_bytes_ false).
#
# usage: ns doc003_pair.tcl AGENT1 AGENT2 RATE ACCESS_RATE QUEUE DURATION_S SAMPLES_FILE
#   AGENTn: the part after Agent/TCP/ ("Tahoe" for Agent/TCP); QUEUE: DropTail or RED
# Every 10 ms SAMPLES_FILE gets: time, then per flow cwnd_ ack_ nrexmitpack_ nrexmit_
set agents [list [lindex $argv 0] [lindex $argv 1]]
set rate [lindex $argv 2]
set access [lindex $argv 3]
set queue [lindex $argv 4]
set duration [lindex $argv 5]
set samples [lindex $argv 6]

Queue/RED set bytes_ false
Queue/RED set queue_in_bytes_ false
source [file join [file dirname [info script]] flow.tcl]
set ns [new Simulator]
set R1 [$ns node]; set R2 [$ns node]
$ns duplex-link $R1 $R2 $rate 12.5ms $queue
$ns queue-limit $R1 $R2 200
set tcps {}
foreach agent $agents {
    set S [$ns node]; set D [$ns node]
    $ns duplex-link $S $R1 $access 10ms DropTail
    $ns duplex-link $R2 $D $access 0ms DropTail
    $ns queue-limit $S $R1 1000000
    set tcp [ftp_flow $ns $S $D $agent]
    $tcp set fid_ [llength $tcps]
    lappend tcps $tcp
}

set out [open $samples w]
proc sample {} {
    global ns tcps out
    set line [$ns now]
    foreach tcp $tcps {
        append line " [$tcp set cwnd_] [$tcp set ack_] [$tcp set nrexmitpack_] [$tcp set nrexmit_]"
    }
    puts $out $line
    $ns at [expr [$ns now] + 0.01] "sample"
}
$ns at 0.0 "sample"
$ns at $duration "close $out; exit 0"
$ns run
