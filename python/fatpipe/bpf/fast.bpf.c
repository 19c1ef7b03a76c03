// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * FAST TCP (Jin, Wei and Low, Infocom 2004), with document 004's details, as fatpipe's
 * cc/fast.rs runs it:
 * - once per update period (one RTT, rounds counted from acknowledged bytes, or
 *   update_interval), with RTT the mean of the period's samples and baseRTT the minimum:
 *   w <- min{2w, (1 - gamma) w + gamma (baseRTT / RTT w + alpha)}, unless the flow's queued
 *   packets w (RTT - baseRTT) / RTT lie in [alpha, beta), where the window is left alone;
 * - increases are reached at one segment per acknowledged segment through the next period,
 *   decreases at once; ssthresh is kept at or below cwnd;
 * - slow start is standard until the queued packets exceed slow_start_exit_packets at a
 *   period's end;
 * - a loss halves, at least 2; a recovery restarts the period.
 * Fixed point: fractions and packet counts in 20 fraction bits, time in microseconds.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, alpha_q20, 200ULL << 20);
FP_PARAM(__u64, beta_q20, 212ULL << 20);
FP_PARAM(__u64, gamma_q20, 1 << 19);
FP_PARAM(__u64, update_interval_us, 0);
FP_PARAM(__u64, slow_start_exit_packets_q20, 1 << 20);

#define ONE_Q20 (1ULL << 20)

struct fast {
	struct fp_ack ack;
	struct fp_round round;
	__u64 period_start_us;
	__u64 rtt_sum_us;
	__u32 rtt_samples;
	__u32 target_cwnd;    /* 0: none */
	__u32 have_period;
};
FP_PRIV(struct fast)

static __always_inline void restart_period(struct fast *f)
{
	fp_round_restart(&f->round);
	f->have_period = 0;
	f->rtt_sum_us = 0;
	f->rtt_samples = 0;
	f->target_cwnd = 0;
}

static __always_inline bool period_ends(struct fast *f, struct tcp_sock *tp, __u64 acked_bytes)
{
	if (update_interval_us == 0)
		return fp_round_on_ack(&f->round, tp, acked_bytes);
	__u64 now = tp->tcp_mstamp;
	if (!f->have_period) {
		f->have_period = 1;
		f->period_start_us = now;
	}
	if (now - f->period_start_us >= update_interval_us) {
		f->period_start_us = now;
		return true;
	}
	return false;
}

static __always_inline void update(struct fast *f, struct tcp_sock *tp)
{
	__u32 n = f->rtt_samples;
	__u64 rtt = fp_div(f->rtt_sum_us, n);
	f->rtt_sum_us = 0;
	f->rtt_samples = 0;
	__u32 base = fp_min_rtt_us(tp);
	if (n == 0 || base == ~0U || rtt == 0)
		return;
	__u64 w = tp->snd_cwnd;
	/* queued packets x rtt, 20 fraction bits: compared with thresholds x rtt. */
	__u64 queued_rtt = (w * (rtt > base ? rtt - base : 0)) << 20;
	if (fp_in_slow_start(tp) && queued_rtt <= slow_start_exit_packets_q20 * rtt)
		return;
	bool in_band = queued_rtt >= alpha_q20 * rtt && queued_rtt < beta_q20 * rtt;
	__u64 new_w_q20;
	if (in_band) {
		new_w_q20 = w << 20;
	} else {
		__u64 toward = ((base * w) << 20) / rtt + alpha_q20;
		new_w_q20 = (ONE_Q20 - gamma_q20) * w + ((gamma_q20 * toward) >> 20);
		new_w_q20 = fp_min64(new_w_q20, (2 * w) << 20);
	}
	__u64 new_cwnd = fp_max64((new_w_q20 + (ONE_Q20 >> 1)) >> 20, 2);
	new_cwnd = fp_min64(new_cwnd, 0xffffffffULL);
	if (new_cwnd < w) {
		tp->snd_cwnd = new_cwnd;
		f->target_cwnd = 0;
	} else {
		f->target_cwnd = new_cwnd;
	}
	tp->snd_ssthresh = fp_min(tp->snd_ssthresh, tp->snd_cwnd);
}

FP_OP(void, fp_fast_init, struct sock *, sk)
{
	struct fast *f = priv(sk);
	fp_ack_init(tcp_sk(sk), &f->ack);
	restart_period(f);
}

FP_OP(__u32, fp_fast_ssthresh, struct sock *, sk)
{
	return fp_max(tcp_sk(sk)->snd_cwnd / 2, 2);
}

FP_OP(void, fp_fast_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	fp_ack_update(tcp_sk(sk), &priv(sk)->ack, sample);
}

FP_OP(void, fp_fast_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct fast *f = priv(sk);
	bool current = fp_ack_current(tp, &f->ack);
	if (current && f->ack.rtt_us >= 0) {
		f->rtt_sum_us += f->ack.rtt_us;
		f->rtt_samples++;
	}
	if (period_ends(f, tp, current ? f->ack.acked_bytes : 0)) {
		update(f, tp);
		if (!fp_in_slow_start(tp))
			return;
	}
	if (!fp_cwnd_limited(tp))
		return;
	if (fp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else if (f->target_cwnd) {
		__u64 cwnd = tp->snd_cwnd;
		__u64 next = fp_min64(f->target_cwnd, cwnd + acked);
		tp->snd_cwnd = fp_max64(next, cwnd);
	}
}

FP_OP(void, fp_fast_set_state, struct sock *, sk, __u8, new_state)
{
	if (fp_core_transition(sk, new_state))
		restart_period(priv(sk));
}

FP_RENO_UNDO_CWND(fp_fast_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_fast = {
	.init = (void *)fp_fast_init,
	.ssthresh = (void *)fp_fast_ssthresh,
	.cong_avoid = (void *)fp_fast_cong_avoid,
	.set_state = (void *)fp_fast_set_state,
	.pkts_acked = (void *)fp_fast_pkts_acked,
	.undo_cwnd = (void *)fp_fast_undo_cwnd,
	.name = "fp_fast",
};
