// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * Standard TCP, AIMD(a, b) (RFC 5681; Jacobson 1988), as fatpipe's cc/reno.rs:
 * - slow start, then a segments per RTT: one segment per round(cwnd / a) acknowledged
 *   segments (Linux tcp_cong_avoid_ai);
 * - a congestion signal: ssthresh = (1 - b) x cwnd, at least 2;
 * - byte_counting = 1 grows by the segments each ACK covers (RFC 3465, as Linux); 0 by one
 *   per ACK, whatever it covers (RFC 5681, the 2.4-era kernels of the documents);
 * - undo: max(cwnd, prior_cwnd) (Linux tcp_reno_undo_cwnd).
 * With a = 1, b = 1/2 and byte counting this is the kernel's own reno.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, a_q20, 1 << 20);
FP_PARAM(__u64, b_q20, 1 << 19);
FP_PARAM(__u32, byte_counting, 1);

FP_OP(__u32, fp_reno_ssthresh, struct sock *, sk)
{
	__u32 w = fp_q20(tcp_sk(sk)->snd_cwnd, (1 << 20) - b_q20);
	return fp_max(w, 2);
}

FP_OP(void, fp_reno_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 left = fp_slow_start_first(tp, byte_counting ? acked : 1);
	if (!left)
		return;
	/* One segment per cwnd / a segments, rounded to the nearest: a segments per RTT. */
	__u64 w = fp_div(((__u64)tp->snd_cwnd << 20) + a_q20 / 2, a_q20);
	tcp_cong_avoid_ai(tp, w, left);
}

FP_RENO_UNDO_CWND(fp_reno_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_reno = {
	.ssthresh = (void *)fp_reno_ssthresh,
	.cong_avoid = (void *)fp_reno_cong_avoid,
	.undo_cwnd = (void *)fp_reno_undo_cwnd,
	.name = "fp_reno",
};
