// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * NOCC, congestion control switched off (document 000, chapter 3), as fatpipe's cc/nocc.rs:
 * the window is held at cwnd_segments (0: unlimited, Linux's TCP_INFINITE_SSTHRESH, so that
 * the receiver's window alone limits the sender), with no slow start and no reduction: a
 * loss returns the window itself as ssthresh, entering recovery keeps ssthresh at "none",
 * and leaving recovery, a timeout's one-segment window and CWR are undone at once.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

/* 0: no window (the scenario's cwnd_segments = null). */
FP_PARAM(__u32, cwnd_segments, 0);

static __always_inline __u32 window(void)
{
	return cwnd_segments ? cwnd_segments : TCP_INFINITE_SSTHRESH;
}

static __always_inline void restore(struct tcp_sock *tp)
{
	tp->snd_cwnd = window();
	tp->snd_cwnd_cnt = 0;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
}

FP_OP(void, fp_nocc_init, struct sock *, sk)
{
	restore(tcp_sk(sk));
}

FP_OP(__u32, fp_nocc_ssthresh, struct sock *, sk)
{
	return window();
}

FP_OP(void, fp_nocc_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	restore(tcp_sk(sk));
}

FP_OP(void, fp_nocc_set_state, struct sock *, sk, __u8, new_state)
{
	if (!fp_core_transition(sk, new_state))
		return;
	if (new_state == TCP_CA_Recovery)
		tcp_sk(sk)->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	else
		restore(tcp_sk(sk));
}

FP_RENO_UNDO_CWND(fp_nocc_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_nocc = {
	.init = (void *)fp_nocc_init,
	.ssthresh = (void *)fp_nocc_ssthresh,
	.cong_avoid = (void *)fp_nocc_cong_avoid,
	.set_state = (void *)fp_nocc_set_state,
	.undo_cwnd = (void *)fp_nocc_undo_cwnd,
	.name = "fp_nocc",
};
