// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * Scalable TCP (Kelly, ACM CCR 33(2), 2003) as fatpipe's cc/scalable.rs:
 * - congestion avoidance: cwnd += a per acknowledged segment (a x cwnd per RTT), counted
 *   from the last window cut so that any a is exact: the window owes floor(a x acked) -
 *   added;
 * - a loss: cwnd -= b x cwnd, at least 2;
 * - below low_window it is standard TCP (AIMD(1, 1/2)).
 * Kelly: a = 0.01, b = 0.125; document 001's kernel used a = 0.02.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, a_q20, 10486);   /* 0.01 */
FP_PARAM(__u64, b_q20, 131072);  /* 0.125 */
FP_PARAM(__u32, low_window, 16);

struct scalable {
	__u64 acked_since_cut;
	__u64 added_since_cut;
};
FP_PRIV(struct scalable)

FP_OP(void, fp_stcp_init, struct sock *, sk)
{
	priv(sk)->acked_since_cut = 0;
	priv(sk)->added_since_cut = 0;
}

FP_OP(__u32, fp_stcp_ssthresh, struct sock *, sk)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	__u64 b = cwnd < low_window ? (1 << 19) : b_q20;
	return fp_max(fp_q20(cwnd, (1 << 20) - b), 2);
}

FP_OP(void, fp_stcp_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct scalable *ca = priv(sk);
	__u32 left = fp_slow_start_first(tp, acked);
	if (!left)
		return;
	if (tp->snd_cwnd < low_window) {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, left);
		return;
	}
	ca->acked_since_cut += left;
	__u64 earned = fp_q20(ca->acked_since_cut, a_q20);
	if (earned > ca->added_since_cut) {
		__u64 add = earned - ca->added_since_cut;
		ca->added_since_cut = earned;
		__u64 cwnd = tp->snd_cwnd + add;
		tp->snd_cwnd = cwnd > 0xffffffffULL ? 0xffffffff : cwnd;
	}
}

FP_OP(void, fp_stcp_set_state, struct sock *, sk, __u8, new_state)
{
	if (!fp_core_transition(sk, new_state))
		return;
	/* A window cut forfeits increase earned on the old window. */
	if (new_state != TCP_CA_Open) {
		priv(sk)->acked_since_cut = 0;
		priv(sk)->added_since_cut = 0;
	}
}

FP_RENO_UNDO_CWND(fp_stcp_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_scalable = {
	.init = (void *)fp_stcp_init,
	.ssthresh = (void *)fp_stcp_ssthresh,
	.cong_avoid = (void *)fp_stcp_cong_avoid,
	.set_state = (void *)fp_stcp_set_state,
	.undo_cwnd = (void *)fp_stcp_undo_cwnd,
	.name = "fp_scalable",
};
