// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * BIC-TCP (Xu, Harfoush and Rhee, INFOCOM 2004) as fatpipe's cc/bic.rs runs it (Linux
 * tcp_bic.c, the kernel here built without it), with growth counted in acknowledged segments:
 * - after a loss W_max is the window of the loss; the window approaches it by binary search
 *   ((W_max - cwnd) / B per RTT, B = 4), at most S_max = max_increment per RTT, lingering
 *   within B of it (B / smooth_part per RTT), then probes above it, slowly, then faster, then
 *   S_max per RTT;
 * - a loss: W_max = cwnd, or cwnd (1 + beta) / 2 with fast convergence below the last W_max;
 *   ssthresh = beta x cwnd (1/2 up to low_window), at least 2;
 * - before the first loss at least 5 % per RTT; a timeout forgets W_max;
 * - undo is tcp_reno_undo_cwnd.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u32, max_increment, 16);
FP_PARAM(__u32, low_window, 14);
FP_PARAM(__u64, beta_q20, 838656);   /* 819/1024 */
FP_PARAM(__u32, smooth_part, 20);
FP_PARAM(__u32, fast_convergence, 1);

#define B 4

struct bic {
	__u32 last_max_cwnd;
};
FP_PRIV(struct bic)

static __always_inline __u32 bic_cnt(__u32 cwnd, __u32 w_max)
{
	__u32 s_max = max_increment;
	__u32 smooth = (__u32)fp_min64((__u64)cwnd * smooth_part, 0xffffffffULL) / B;
	__u32 cnt;
	if (cwnd <= low_window) {
		cnt = cwnd;
	} else if (cwnd < w_max) {
		__u32 dist = (w_max - cwnd) / B;
		if (dist > s_max)
			cnt = cwnd / s_max;
		else if (dist <= 1)
			cnt = smooth;
		else
			cnt = cwnd / dist;
	} else if ((__u64)cwnd < (__u64)w_max + B) {
		cnt = smooth;
	} else if ((__u64)cwnd < (__u64)w_max + (__u64)s_max * (B - 1)) {
		cnt = (__u32)fp_min64((__u64)cwnd * (B - 1), 0xffffffffULL) / (cwnd - w_max);
	} else {
		cnt = cwnd / s_max;
	}
	if (w_max == 0 && cnt > 20)
		cnt = 20;
	return fp_max(cnt, 1);
}

FP_OP(void, fp_bic_init, struct sock *, sk)
{
	priv(sk)->last_max_cwnd = 0;
}

FP_OP(__u32, fp_bic_ssthresh, struct sock *, sk)
{
	struct bic *ca = priv(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = ((__u64)cwnd * ((1 << 20) + beta_q20)) >> 21;
	else
		ca->last_max_cwnd = cwnd;
	__u64 factor = cwnd <= low_window ? (1 << 19) : beta_q20;
	return fp_max(fp_q20(cwnd, factor), 2);
}

FP_OP(void, fp_bic_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 left = fp_slow_start_first(tp, acked);
	if (!left)
		return;
	tcp_cong_avoid_ai(tp, bic_cnt(tp->snd_cwnd, priv(sk)->last_max_cwnd), left);
}

FP_OP(void, fp_bic_set_state, struct sock *, sk, __u8, new_state)
{
	if (fp_core_transition(sk, new_state) && new_state == TCP_CA_Loss)
		priv(sk)->last_max_cwnd = 0;
}

FP_RENO_UNDO_CWND(fp_bic_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_bic = {
	.init = (void *)fp_bic_init,
	.ssthresh = (void *)fp_bic_ssthresh,
	.cong_avoid = (void *)fp_bic_cong_avoid,
	.set_state = (void *)fp_bic_set_state,
	.undo_cwnd = (void *)fp_bic_undo_cwnd,
	.name = "fp_bic",
};
