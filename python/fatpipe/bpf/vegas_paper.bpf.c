// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * TCP Vegas (Brakmo and Peterson, IEEE JSAC 13(8), 1995) as fatpipe's cc/vegas.rs runs it
 * ("paper" variant, after ns-2's tcp-vegas.cc):
 * - BaseRTT is the connection's minimum RTT; once per round trip (rounds counted from
 *   acknowledged bytes) Diff = cwnd (RTT - BaseRTT) / RTT is the flow's packets in queues,
 *   from the round's minimum RTT in congestion avoidance and its average in slow start;
 * - congestion avoidance: Diff < alpha: cwnd + 1 (if cwnd limits sending); Diff > beta:
 *   cwnd - 1 (ssthresh kept below it);
 * - slow start doubles every other round (growing, then a fixed round to measure); at the
 *   end of a fixed round Diff > gamma leaves it, giving back cwnd / 8;
 * - a round with fewer than 3 RTT samples grows as Reno on its last ACK, and the next round
 *   doubles again;
 * - a loss halves, at least 2; a recovery restarts the rounds, a timeout also slow start's
 *   doubling.
 * Every comparison of Diff with a threshold is exact: cwnd (RTT - BaseRTT) 2^20 against
 * threshold_q20 x RTT.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, alpha_q20, 1 << 20);
FP_PARAM(__u64, beta_q20, 3 << 20);
FP_PARAM(__u64, gamma_q20, 1 << 20);

struct vegas {
	struct fp_ack ack;
	struct fp_round round;
	__u64 rtt_sum_us;
	__u32 rtt_samples;
	__u32 rtt_min_us;     /* 0: none this round */
	__u32 growing_round;
};
FP_PRIV(struct vegas)

static __always_inline void take_round(struct vegas *v)
{
	v->rtt_sum_us = 0;
	v->rtt_samples = 0;
	v->rtt_min_us = 0;
}

/* Diff above q20 threshold t: cwnd (rtt - base) 2^20 > t rtt. */
static __always_inline bool diff_above(__u64 cwnd, __u64 rtt, __u64 base, __u64 t)
{
	__u64 q = rtt > base ? rtt - base : 0;
	return (cwnd * q) << 20 > t * rtt;
}

static __always_inline bool diff_below(__u64 cwnd, __u64 rtt, __u64 base, __u64 t)
{
	__u64 q = rtt > base ? rtt - base : 0;
	return (cwnd * q) << 20 < t * rtt;
}

static __always_inline void lower_window(struct tcp_sock *tp, __u32 cwnd)
{
	tp->snd_cwnd = fp_max(cwnd, 2);
	tp->snd_ssthresh = fp_min(tp->snd_ssthresh, tp->snd_cwnd - 1);
}

static __always_inline void end_of_round(struct tcp_sock *tp, struct vegas *v)
{
	bool ss = fp_in_slow_start(tp);
	__u64 rtt = ss ? fp_div(v->rtt_sum_us, v->rtt_samples) : v->rtt_min_us;
	bool have_rtt = v->rtt_samples > 0;
	take_round(v);
	if (ss && v->growing_round) {
		v->growing_round = 0;
		return;
	}
	__u32 base = fp_min_rtt_us(tp);
	if (!have_rtt || base == ~0U || rtt == 0)
		return;
	__u32 cwnd = tp->snd_cwnd;
	if (ss) {
		if (diff_above(cwnd, rtt, base, gamma_q20))
			lower_window(tp, cwnd - cwnd / 8);
		else
			v->growing_round = 1;
	} else if (diff_above(cwnd, rtt, base, beta_q20)) {
		lower_window(tp, cwnd - 1);
	} else if (diff_below(cwnd, rtt, base, alpha_q20) && fp_cwnd_limited(tp)) {
		tp->snd_cwnd = cwnd + 1;
	}
}

FP_OP(void, fp_vegasp_init, struct sock *, sk)
{
	struct vegas *v = priv(sk);
	fp_ack_init(tcp_sk(sk), &v->ack);
	fp_round_restart(&v->round);
	take_round(v);
	v->growing_round = 1;
}

FP_OP(__u32, fp_vegasp_ssthresh, struct sock *, sk)
{
	return fp_max(tcp_sk(sk)->snd_cwnd / 2, 2);
}

FP_OP(void, fp_vegasp_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	fp_ack_update(tcp_sk(sk), &priv(sk)->ack, sample);
}

FP_OP(void, fp_vegasp_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *v = priv(sk);
	bool current = fp_ack_current(tp, &v->ack);
	__u64 acked_bytes = current ? v->ack.acked_bytes : 0;
	if (current && v->ack.rtt_us >= 0) {
		__u32 rtt = v->ack.rtt_us;
		v->rtt_sum_us += rtt;
		v->rtt_samples++;
		if (v->rtt_min_us == 0 || rtt < v->rtt_min_us)
			v->rtt_min_us = rtt;
	}
	bool closes = fp_round_on_ack(&v->round, tp, acked_bytes);
	if (closes && v->rtt_samples < 3) {
		take_round(v);
		v->growing_round = 1;
		fp_reno_growth(tp, acked);
		return;
	}
	if (fp_in_slow_start(tp) && v->growing_round && fp_cwnd_limited(tp))
		tcp_slow_start(tp, acked);
	if (closes)
		end_of_round(tp, v);
}

FP_OP(void, fp_vegasp_set_state, struct sock *, sk, __u8, new_state)
{
	struct vegas *v = priv(sk);
	if (!fp_core_transition(sk, new_state))
		return;
	fp_round_restart(&v->round);
	take_round(v);
	if (new_state == TCP_CA_Loss)
		v->growing_round = 1;
}

FP_RENO_UNDO_CWND(fp_vegasp_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_vegas_paper = {
	.init = (void *)fp_vegasp_init,
	.ssthresh = (void *)fp_vegasp_ssthresh,
	.cong_avoid = (void *)fp_vegasp_cong_avoid,
	.set_state = (void *)fp_vegasp_set_state,
	.pkts_acked = (void *)fp_vegasp_pkts_acked,
	.undo_cwnd = (void *)fp_vegasp_undo_cwnd,
	.name = "fp_vegas",
};
