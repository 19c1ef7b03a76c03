// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * A congestion control of your own, written once, run both in fatpipe's simulator
 * (`fatpipe run`) and in the Linux kernel (`fatpipe emulate`): Reno whose decrease adapts to
 * the queue it finds, as H-TCP's adaptive backoff does (Leith and Shorten 2004).
 *
 * On a loss the window keeps beta = min RTT / smoothed RTT of itself, within [beta_min,
 * beta_max]: the part the path holds without a queue. A flow that fills a deep buffer halves
 * (beta_min); one whose queue is short gives up little, keeping the link busy.
 *
 * Growth is the kernel's own Reno (the tcp_reno_cong_avoid kfunc; in the simulator, fatpipe's
 * Reno code). The parameters are globals the loader fills from the scenario:
 *
 *     [flows.cc]
 *     bpf = "examples/bpf/adaptive_reno.bpf.c"
 *     parameters = { beta_min = 0.5, beta_max = 0.9 }
 *
 * fatpipe_cc.h (fatpipe's bpf/ directory) declares the kernel's structs, kfuncs and the
 * FP_OP macro that unpacks a struct_ops call's arguments; fatpipe compiles this file with
 * `clang -O2 -g -target bpf -I bpf`.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, beta_min_q20, 1 << 19);   /* 0.5 */
FP_PARAM(__u64, beta_max_q20, 943718);    /* 0.9 */

FP_OP(__u32, adaptive_reno_ssthresh, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 srtt = tp->srtt_us >> 3;
	__u64 min_rtt = fp_min_rtt_us(tp);
	__u64 beta = beta_min_q20;
	if (srtt > 0 && min_rtt != ~0U)
		beta = (min_rtt << 20) / srtt;
	if (beta < beta_min_q20)
		beta = beta_min_q20;
	if (beta > beta_max_q20)
		beta = beta_max_q20;
	return fp_max(fp_q20(tp->snd_cwnd, beta), 2);
}

FP_OP(void, adaptive_reno_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

FP_RENO_UNDO_CWND(adaptive_reno_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops adaptive_reno = {
	.ssthresh = (void *)adaptive_reno_ssthresh,
	.cong_avoid = (void *)adaptive_reno_cong_avoid,
	.undo_cwnd = (void *)adaptive_reno_undo_cwnd,
	.name = "adaptive_reno",
};
