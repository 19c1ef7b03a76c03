// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * TCP-LP (Kuzmanovic and Knightly 2003) with the rules of Linux net/ipv4/tcp_lp.c, as
 * fatpipe's cc/lp.rs runs them, so that the kernel (which has no tcp_lp module here) can run
 * them through `fatpipe emulate`:
 * - one-way delay TSval - TSecr of the ACK (tp->rx_opt), ms, once the remote clock's rate
 *   estimate (63/64 old + 1/64 of 1000 x dTSval / dTSecr) is positive; smoothed x 8 with gain
 *   1/8; min, and max one record behind the largest;
 * - inference time 3 x (now - TSecr); an indication when the smoothed delay reaches min +
 *   threshold_percent % of (max - min): min, max restart at sowd, 2 sowd; cwnd halves, or
 *   falls to 1 within the inference time; no growth within it; Reno otherwise.
 * linux_scale = 1 scales TSval by the integer 1000 / estimated rate as tcp_lp.c does (0 once
 * the estimate exceeds 1000 Hz); 0, the default, by 1, as cc/lp.rs (both ends tick at 1000 Hz).
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u32, threshold_percent, 15);
FP_PARAM(__u32, inference_rtts, 3);
FP_PARAM(__u32, linux_scale, 0);

#define TS_HZ 1000

struct lp {
	__u32 sowd, owd_min, owd_max, owd_max_rsv, remote_hz, remote_ref, local_ref, last_drop, inference;
	__u32 within_inf;
};
FP_PRIV(struct lp)

FP_OP(void, fp_lp_init, struct sock *, sk)
{
	struct lp *lp = priv(sk);
	lp->sowd = 0;
	lp->owd_min = 0xffffffff;
	lp->owd_max = 0;
	lp->owd_max_rsv = 0;
	lp->remote_hz = 0;
	lp->remote_ref = 0;
	lp->local_ref = 0;
	lp->last_drop = 0;
	lp->inference = 0;
	lp->within_inf = 0;
}

FP_OP(void, fp_lp_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	if (!priv(sk)->within_inf)
		tcp_reno_cong_avoid(sk, ack, acked);
}

FP_OP(__u32, fp_lp_ssthresh, struct sock *, sk)
{
	return tcp_reno_ssthresh(sk);
}

FP_RENO_UNDO_CWND(fp_lp_undo_cwnd)

static __always_inline void owd_sample(struct lp *lp, __u32 tsval, __u32 tsecr)
{
	__s64 rhz = (__s64)lp->remote_hz << 6;
	if (lp->remote_ref != 0 && lp->local_ref != 0 && tsval != lp->remote_ref && tsecr != lp->local_ref) {
		__u32 d = tsecr - lp->local_ref;
		__s64 m = (__u32)(TS_HZ * (tsval - lp->remote_ref)) / d;
		if (rhz > 0)
			rhz += m - (rhz >> 6);
		else
			rhz = m << 6;
	}
	lp->remote_ref = tsval;
	lp->local_ref = tsecr;
	lp->remote_hz = rhz >> 6;
	if (lp->remote_hz == 0)
		return;
	__u32 scale = linux_scale ? TS_HZ / lp->remote_hz : 1;
	__u32 owd = tsval * scale - tsecr;
	if (owd == 0)
		return;
	if (owd < lp->owd_min)
		lp->owd_min = owd;
	if (owd > lp->owd_max) {
		if (owd > lp->owd_max_rsv) {
			lp->owd_max = lp->owd_max_rsv == 0 ? owd : lp->owd_max_rsv;
			lp->owd_max_rsv = owd;
		} else {
			lp->owd_max = owd;
		}
	}
	if (lp->sowd != 0)
		lp->sowd += owd - (lp->sowd >> 3);
	else
		lp->sowd = owd << 3;
}

FP_OP(void, fp_lp_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *lp = priv(sk);
	__u32 now = tp->tcp_mstamp / 1000;
	__u32 tsval = tp->rx_opt.rcv_tsval;
	__u32 tsecr = tp->rx_opt.rcv_tsecr;
	if (sample->rtt_us > 0)
		owd_sample(lp, tsval, tsecr);
	__u32 delta = now - tsecr;
	if ((__s32)delta > 0)
		lp->inference = inference_rtts * delta;
	lp->within_inf = lp->last_drop && (now - lp->last_drop < lp->inference);
	__u32 threshold = lp->owd_min + threshold_percent * (lp->owd_max - lp->owd_min) / 100;
	bool ind = (lp->sowd >> 3) >= threshold;
	if (!ind)
		return;
	lp->owd_min = lp->sowd >> 3;
	lp->owd_max = lp->sowd >> 2;
	lp->owd_max_rsv = lp->sowd >> 2;
	if (lp->within_inf)
		tp->snd_cwnd = 1;
	else
		tp->snd_cwnd = fp_max(tp->snd_cwnd >> 1, 1);
	lp->last_drop = now;
}

SEC(".struct_ops")
struct tcp_congestion_ops fp_lp = {
	.init = (void *)fp_lp_init,
	.ssthresh = (void *)fp_lp_ssthresh,
	.cong_avoid = (void *)fp_lp_cong_avoid,
	.undo_cwnd = (void *)fp_lp_undo_cwnd,
	.pkts_acked = (void *)fp_lp_pkts_acked,
	.name = "fp_lp",
};
