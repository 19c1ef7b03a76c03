// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * H-TCP (Leith and Shorten, PFLDnet 2004) as fatpipe's cc/htcp.rs runs it (the kernel here is
 * built without tcp_htcp.c):
 * - Delta is the time since the last congestion event; up to Delta_L alpha = 1, then
 *   alpha = 1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2 segments per RTT (seconds),
 *   optionally scaled by RTTmin / 100 ms (within [0.1, 2], never below 1); the increase
 *   applied is 2 (1 - beta) alpha, per acknowledged segment alpha / cwnd (at most 1),
 *   accumulated exactly;
 * - a loss: cwnd x beta; adaptive backoff sets beta = RTTmin / RTTmax within [beta_min,
 *   beta_max] unless the maximum throughput before this event differs by more than 20 % from
 *   the one before the previous (then beta_min); RTTmax grows by at most 20 ms a sample, in
 *   the Open state only, and fades 5 % toward RTTmin at each event; throughput is measured
 *   over intervals of at least RTTmin, smoothed by 1/4, restarting for 3 RTTmin after an
 *   event;
 * - undo restores Delta's origin and returns max(cwnd, prior_cwnd).
 * Fixed point: fractions in 20 bits, time in microseconds, throughput in segments per second
 * with 8 fraction bits.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, delta_l_us, 1000000);
FP_PARAM(__u64, beta_min_q20, 1 << 19);
FP_PARAM(__u64, beta_max_q20, 838861);   /* 0.8 */
FP_PARAM(__u32, adaptive_backoff, 1);
FP_PARAM(__u32, rtt_scaling, 0);

#define ONE_Q20 (1ULL << 20)
#define RTT_REF_US 100000ULL
#define RTT_MAX_STEP_US 20000

struct htcp {
	__u64 last_congestion_us;
	__u64 undo_last_congestion_us;
	__u64 interval_start_us;
	__u64 throughput_q8;
	__u64 max_throughput_q8;
	__u64 previous_max_q8;
	__u64 increase_credit_q20;
	__u32 una;
	__u32 delivered;
	__u32 beta_q20;
	__u32 rtt_min_us;     /* 0: none */
	__u32 rtt_max_us;     /* 0: none */
	__u32 interval_segments;
	__u8 ca_state;
	__u8 have_max;
	__u8 have_previous;
	__u8 have_undo;
};
FP_PRIV(struct htcp)

static __always_inline __u64 alpha_delta_q20(struct htcp *h, __u64 now)
{
	__u64 delta = now > h->last_congestion_us ? now - h->last_congestion_us : 0;
	__u64 alpha = ONE_Q20;
	if (delta > delta_l_us) {
		__u64 d = fp_min64(delta - delta_l_us, 0xffffffffULL);
		__u64 q = (d << 20) / (2 * USEC_PER_SEC);
		alpha += (10 * d << 20) / USEC_PER_SEC + ((q * q) >> 20);
	}
	if (rtt_scaling && h->rtt_min_us) {
		__u64 scale = ((__u64)h->rtt_min_us << 20) / RTT_REF_US;
		if (scale < ONE_Q20 / 10)
			scale = ONE_Q20 / 10;
		if (scale > 2 * ONE_Q20)
			scale = 2 * ONE_Q20;
		alpha = fp_max64((alpha * scale) >> 20, ONE_Q20);
	}
	return alpha;
}

static __always_inline void update_beta(struct htcp *h)
{
	bool had_max = h->have_max, had_previous = h->have_previous;
	__u64 max = h->max_throughput_q8, previous = h->previous_max_q8;
	h->have_max = 0;
	h->previous_max_q8 = max;
	h->have_previous = had_max;
	h->beta_q20 = beta_min_q20;
	if (!adaptive_backoff)
		return;
	__u64 change = max > previous ? max - previous : previous - max;
	bool steady = had_previous && had_max && 5 * change <= previous;
	if (steady && h->rtt_min_us && h->rtt_max_us) {
		__u64 beta = ((__u64)h->rtt_min_us << 20) / h->rtt_max_us;
		if (beta < beta_min_q20)
			beta = beta_min_q20;
		if (beta > beta_max_q20)
			beta = beta_max_q20;
		h->beta_q20 = beta;
	}
}

static __always_inline void measure_rtt(struct htcp *h, __u32 rtt)
{
	__u32 min = h->rtt_min_us && h->rtt_min_us < rtt ? h->rtt_min_us : rtt;
	h->rtt_min_us = min;
	if (h->ca_state == TCP_CA_Open) {
		__u32 max = h->rtt_max_us && h->rtt_max_us > min ? h->rtt_max_us : min;
		h->rtt_max_us = rtt > max && rtt <= max + RTT_MAX_STEP_US ? rtt : max;
	}
}

static __always_inline void measure_throughput(struct htcp *h, __u64 now, __u32 acked)
{
	if (h->ca_state != TCP_CA_Open) {
		h->interval_start_us = now;
		h->interval_segments = 0;
		return;
	}
	h->interval_segments += acked;
	if (!h->rtt_min_us)
		return;
	__u64 elapsed = now > h->interval_start_us ? now - h->interval_start_us : 0;
	if (elapsed < h->rtt_min_us || elapsed == 0)
		return;
	__u64 sample = (((__u64)h->interval_segments * USEC_PER_SEC) << 8) / elapsed;
	__u64 since = now > h->last_congestion_us ? now - h->last_congestion_us : 0;
	if (since <= 3ULL * h->rtt_min_us || !h->have_max) {
		h->throughput_q8 = sample;
		h->max_throughput_q8 = sample;
		h->have_max = 1;
	} else {
		h->throughput_q8 = (3 * h->throughput_q8 + sample) / 4;
		h->max_throughput_q8 = fp_max64(h->max_throughput_q8, h->throughput_q8);
	}
	h->interval_start_us = now;
	h->interval_segments = 0;
}

FP_OP(void, fp_htcp_init, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *h = priv(sk);
	__builtin_memset(h, 0, sizeof(*h));
	h->beta_q20 = beta_min_q20;
	h->last_congestion_us = tp->tcp_mstamp;
	h->interval_start_us = tp->tcp_mstamp;
	h->una = tp->snd_una;
	h->delivered = tp->delivered;
	h->ca_state = TCP_CA_Open;
}

FP_OP(__u32, fp_htcp_ssthresh, struct sock *, sk)
{
	struct htcp *h = priv(sk);
	update_beta(h);
	if (h->rtt_min_us && h->rtt_max_us)
		h->rtt_max_us = h->rtt_min_us + (__u64)(h->rtt_max_us - h->rtt_min_us) * 95 / 100;
	return fp_max(fp_q20(tcp_sk(sk)->snd_cwnd, h->beta_q20), 2);
}

FP_OP(void, fp_htcp_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *h = priv(sk);
	__u32 left = fp_slow_start_first(tp, acked);
	if (!left)
		return;
	__u64 alpha = ((ONE_Q20 - h->beta_q20) * 2 * alpha_delta_q20(h, tp->tcp_mstamp)) >> 20;
	__u64 per_segment = fp_min64(fp_div(alpha, tp->snd_cwnd), ONE_Q20);
	h->increase_credit_q20 += per_segment * left;
	__u64 whole = h->increase_credit_q20 >> 20;
	if (whole >= 1) {
		h->increase_credit_q20 -= whole << 20;
		tp->snd_cwnd = fp_min64((__u64)tp->snd_cwnd + whole, 0xffffffffULL);
	}
}

FP_OP(void, fp_htcp_set_state, struct sock *, sk, __u8, new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *h = priv(sk);
	if (!fp_core_transition(sk, new_state))
		return;
	if (new_state != TCP_CA_Open) {
		h->undo_last_congestion_us = h->last_congestion_us;
		h->have_undo = 1;
		h->last_congestion_us = tp->tcp_mstamp;
		h->interval_start_us = tp->tcp_mstamp;
		h->interval_segments = 0;
		h->increase_credit_q20 = 0;
	} else {
		h->have_undo = 0;
	}
	h->ca_state = new_state;
}

FP_OP(__u32, fp_htcp_undo_cwnd, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *h = priv(sk);
	if (h->have_undo) {
		h->last_congestion_us = h->undo_last_congestion_us;
		h->have_undo = 0;
	}
	return fp_max(tp->snd_cwnd, tp->prior_cwnd);
}

FP_OP(void, fp_htcp_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *h = priv(sk);
	bool acked = tp->snd_una != h->una || tp->delivered != h->delivered;
	h->una = tp->snd_una;
	h->delivered = tp->delivered;
	if (!acked)
		return;
	if (sample->rtt_us >= 0)
		measure_rtt(h, sample->rtt_us);
	measure_throughput(h, tp->tcp_mstamp, sample->pkts_acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops fp_htcp = {
	.init = (void *)fp_htcp_init,
	.ssthresh = (void *)fp_htcp_ssthresh,
	.cong_avoid = (void *)fp_htcp_cong_avoid,
	.set_state = (void *)fp_htcp_set_state,
	.pkts_acked = (void *)fp_htcp_pkts_acked,
	.undo_cwnd = (void *)fp_htcp_undo_cwnd,
	.name = "fp_htcp",
};
