// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * TCP Westwood+ (Grieco and Mascolo, ACM CCR 34(2), 2004) as fatpipe's cc/westwood.rs runs
 * it ("paper" variant):
 * - one bandwidth sample per window of at least max(RTT, min_sample_interval): the bytes
 *   acknowledged in it over its length; the first sample fills both stages, later ones pass
 *   two cascaded EWMAs of gain 1/8;
 * - a congestion signal: ssthresh = BWE x RTTmin / MSS, at least 2; entering recovery the
 *   window is never raised above its value at the signal;
 * - growth is Reno's (byte_counting: per segment, else per ACK).
 * Fixed point: estimates in bytes per second with 8 fraction bits, time in microseconds.
 */
#include "westwood.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, min_sample_interval_us, 50000);
FP_PARAM(__u32, byte_counting, 0);

struct westwood_plus {
	struct fp_ack ack;
	__u64 window_start_us;
	__u64 window_bytes;
	__u64 first_q8;       /* first EWMA stage, bytes/s x 256 */
	__u64 smooth_q8;      /* the estimate, bytes/s x 256 */
	__u32 last_rtt_us;    /* 0: none yet */
	__u32 cwnd_at_signal;
	__u8 have_window;
	__u8 have_estimate;
};
FP_PRIV(struct westwood_plus)

static __always_inline __u64 ewma(__u64 old, __u64 sample)
{
	return (7 * old + sample) / 8;
}

FP_OP(void, fp_wwp_init, struct sock *, sk)
{
	struct westwood_plus *w = priv(sk);
	fp_ack_init(tcp_sk(sk), &w->ack);
	w->window_start_us = 0;
	w->window_bytes = 0;
	w->first_q8 = 0;
	w->smooth_q8 = 0;
	w->last_rtt_us = 0;
	w->cwnd_at_signal = 0;
	w->have_window = 0;
	w->have_estimate = 0;
}

FP_OP(__u32, fp_wwp_ssthresh, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood_plus *w = priv(sk);
	w->cwnd_at_signal = tp->snd_cwnd;
	return ww_bandwidth_window(tp, w->smooth_q8 >> 8);
}

FP_OP(void, fp_wwp_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	fp_reno_growth(tp, byte_counting ? acked : 1);
}

FP_OP(void, fp_wwp_set_state, struct sock *, sk, __u8, new_state)
{
	ww_set_state(sk, new_state, priv(sk)->cwnd_at_signal);
}

FP_OP(void, fp_wwp_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood_plus *w = priv(sk);
	if (!fp_ack_update(tp, &w->ack, sample))
		return;
	__u64 now = tp->tcp_mstamp;
	if (sample->rtt_us >= 0)
		w->last_rtt_us = sample->rtt_us;
	if (!w->have_window) {
		w->have_window = 1;
		w->window_start_us = now;
		return;
	}
	__u64 elapsed = now - w->window_start_us;
	if (w->last_rtt_us > 0 && elapsed > fp_max64(w->last_rtt_us, min_sample_interval_us)) {
		__u64 sample_q8 = fp_div((w->window_bytes * USEC_PER_SEC) << 8, elapsed);
		if (!w->have_estimate) {
			w->have_estimate = 1;
			w->first_q8 = sample_q8;
			w->smooth_q8 = sample_q8;
		} else {
			w->first_q8 = ewma(w->first_q8, sample_q8);
			w->smooth_q8 = ewma(w->smooth_q8, w->first_q8);
		}
		w->window_bytes = 0;
		w->window_start_us = now;
	}
	w->window_bytes += w->ack.acked_bytes;
}

FP_RENO_UNDO_CWND(fp_wwp_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_westwood_plus = {
	.init = (void *)fp_wwp_init,
	.ssthresh = (void *)fp_wwp_ssthresh,
	.cong_avoid = (void *)fp_wwp_cong_avoid,
	.set_state = (void *)fp_wwp_set_state,
	.pkts_acked = (void *)fp_wwp_pkts_acked,
	.undo_cwnd = (void *)fp_wwp_undo_cwnd,
	.name = "fp_westwood_plus",
};
