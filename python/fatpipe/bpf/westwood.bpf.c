// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * TCP Westwood (Mascolo et al., MobiCom 2001) as fatpipe's cc/westwood.rs runs it, with the
 * per-ACK bandwidth filter of ns-2's UCLA agent:
 * - each ACK's bytes over the time since the previous ACK are a sample; the estimate follows
 *   the discretized Tustin filter est = a est + (1 - a) (sample + previous) / 2, a = (2 tau -
 *   dt) / (2 tau + dt); a gap longer than tau/2 is filled with zero samples every tau/2;
 * - a duplicate ACK counts one segment delivered, and the cumulative ACK that follows is
 *   reduced by what was counted;
 * - a congestion signal: ssthresh = BWE x RTTmin / MSS, at least 2; entering recovery the
 *   window is never raised above its value at the signal;
 * - growth is Reno's (byte_counting: per segment, else per ACK).
 * Fixed point: the estimate in bytes per second, a in 30 fraction bits, time in microseconds.
 */
#include "westwood.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, filter_time_constant_us, 1000000);
FP_PARAM(__u32, byte_counting, 0);

#define ONE_Q30 (1ULL << 30)

struct westwood {
	struct fp_ack ack;
	__u64 last_ack_us;
	__u64 pending_bytes;
	__u64 prev_sample;    /* bytes per second */
	__u64 estimate;       /* bytes per second */
	__u32 accounted_bytes;
	__u32 cwnd_at_signal;
	__u32 have_last_ack;
};
FP_PRIV(struct westwood)

static __always_inline __u64 coefficient_q30(__u64 dt)
{
	__u64 two_tau = 2 * filter_time_constant_us;
	return fp_div((two_tau - dt) << 30, two_tau + dt);
}

static __always_inline void filter(struct westwood *w, __u64 dt, __u64 sample)
{
	__u64 a = coefficient_q30(dt);
	w->estimate = (a * w->estimate + (ONE_Q30 - a) * ((sample + w->prev_sample) / 2)) >> 30;
	w->prev_sample = sample;
}

/* x^n, 30 fraction bits, by squaring. */
static __always_inline __u64 pow_q30(__u64 x, __u64 n)
{
	__u64 r = ONE_Q30;
	for (int i = 0; i < 64 && n; i++) {
		if (n & 1)
			r = (r * x) >> 30;
		x = (x * x) >> 30;
		n >>= 1;
	}
	return r;
}

static __always_inline void on_ack(struct westwood *w, __u64 now, __u64 bytes)
{
	if (!w->have_last_ack) {
		w->have_last_ack = 1;
		w->last_ack_us = now;
		return;
	}
	__u64 dt = now - w->last_ack_us;
	w->last_ack_us = now;
	bytes += w->pending_bytes;
	w->pending_bytes = 0;
	if (dt == 0) {
		w->pending_bytes = bytes;
		return;
	}
	__u64 null_interval = filter_time_constant_us / 2;
	__u64 nulls = fp_div(dt - 1, null_interval);
	if (nulls > 0) {
		filter(w, null_interval, 0);
		w->estimate = (w->estimate * pow_q30(coefficient_q30(null_interval), nulls - 1)) >> 30;
		dt -= nulls * null_interval;
	}
	filter(w, dt, fp_div(bytes * USEC_PER_SEC, dt));
}

FP_OP(void, fp_ww_init, struct sock *, sk)
{
	struct westwood *w = priv(sk);
	fp_ack_init(tcp_sk(sk), &w->ack);
	w->last_ack_us = 0;
	w->pending_bytes = 0;
	w->prev_sample = 0;
	w->estimate = 0;
	w->accounted_bytes = 0;
	w->cwnd_at_signal = 0;
	w->have_last_ack = 0;
}

FP_OP(__u32, fp_ww_ssthresh, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	w->cwnd_at_signal = tp->snd_cwnd;
	return ww_bandwidth_window(tp, w->estimate);
}

FP_OP(void, fp_ww_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	fp_reno_growth(tp, byte_counting ? acked : 1);
}

FP_OP(void, fp_ww_set_state, struct sock *, sk, __u8, new_state)
{
	ww_set_state(sk, new_state, priv(sk)->cwnd_at_signal);
}

FP_OP(void, fp_ww_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	if (!fp_ack_update(tp, &w->ack, sample))
		return;
	__u64 bytes = w->ack.acked_bytes;
	__u64 mss = tp->mss_cache;
	if (bytes > mss) {
		if (w->accounted_bytes >= bytes) {
			w->accounted_bytes -= bytes;
			bytes = mss;
		} else {
			bytes -= w->accounted_bytes;
			w->accounted_bytes = 0;
		}
	}
	on_ack(w, tp->tcp_mstamp, bytes);
}

FP_OP(void, fp_ww_in_ack_event, struct sock *, sk, __u32, flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	if (!fp_ack_is_duplicate(tp, &w->ack, flags))
		return;
	w->accounted_bytes += tp->mss_cache;
	on_ack(w, tp->tcp_mstamp, tp->mss_cache);
}

FP_RENO_UNDO_CWND(fp_ww_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_westwood = {
	.init = (void *)fp_ww_init,
	.ssthresh = (void *)fp_ww_ssthresh,
	.cong_avoid = (void *)fp_ww_cong_avoid,
	.set_state = (void *)fp_ww_set_state,
	.in_ack_event = (void *)fp_ww_in_ack_event,
	.pkts_acked = (void *)fp_ww_pkts_acked,
	.undo_cwnd = (void *)fp_ww_undo_cwnd,
	.name = "fp_westwood",
};
