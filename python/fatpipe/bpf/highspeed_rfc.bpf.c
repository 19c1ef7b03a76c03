// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * HighSpeed TCP (Floyd, RFC 3649) as fatpipe's cc/highspeed.rs runs it ("rfc" variant):
 * - above Low_Window the window grows by a(w) segments per RTT and a loss takes the fraction
 *   b(w) off it; below, standard TCP (a = 1, b = 1/2);
 * - a(w) comes from a table the loader computes from the RFC's parameters (fatpipe-core's
 *   `aimd_table`: row k holds a = k from the smallest window whose a(w) reaches k - 1/2), so
 *   tuning low_window, high_window, high_p and high_decrease works; the row of a window is
 *   found by binary search;
 * - b(w) = (High_Decrease - 1/2) (log w - log Low_Window) / (log High_Window - log
 *   Low_Window) + 1/2, with log2 computed in fixed point (20 fraction bits, by repeated
 *   squaring), at a loss only;
 * - growth counts acknowledged segments (RFC 3465): cwnd += a(w)/cwnd per segment.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

/* Rows the table may hold; the RFC's defaults need 72. The loader refuses more. */
#define TABLE_MAX 1024
FP_PARAM(__u32, table_len, 1);
FP_PARAM(__u32, table_w[TABLE_MAX], {0});
FP_PARAM(__u32, table_a[TABLE_MAX], {1});
FP_PARAM(__u32, low_window, 38);
FP_PARAM(__u64, high_decrease_q20, 104858);
/* log2(Low_Window) and log2(High_Window), 20 fraction bits (the loader computes them). */
FP_PARAM(__u64, log2_low_window_q20, 5505024);
FP_PARAM(__u64, log2_high_window_q20, 17163255);

#define HALF_Q20 (1ULL << 19)

/* a(w): the table's row for window w (the last row whose window is at most w, row 0 below). */
static __always_inline __u32 increase(__u32 w)
{
	__u32 lo = 0, hi = table_len;
	if (hi > TABLE_MAX)
		hi = TABLE_MAX;
	/* Invariant: rows below lo start at or below w; rows from hi on above it. */
	for (int i = 0; i < 11 && lo + 1 < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		if (mid >= TABLE_MAX)
			break;
		if (table_w[mid] <= w)
			lo = mid;
		else
			hi = mid;
	}
	if (lo >= TABLE_MAX)
		return 1;
	return table_a[lo];
}

/* log2(x) with 20 fraction bits: the integer part from the leading bit, each fraction bit by
 * squaring the mantissa. */
static __always_inline __u64 log2_q20(__u32 x)
{
	__u64 ip = 0;
	for (int i = 0; i < 32; i++) {
		if ((x >> (ip + 1)) == 0)
			break;
		ip++;
	}
	/* mantissa in [1, 2) with 30 fraction bits */
	__u64 m = ((__u64)x << 30) >> ip;
	__u64 frac = 0;
	for (int i = 0; i < 20; i++) {
		m = (m * m) >> 30;
		frac <<= 1;
		if (m >= (2ULL << 30)) {
			m >>= 1;
			frac |= 1;
		}
	}
	return (ip << 20) | frac;
}

/* b(w), 20 fraction bits: standard TCP's 1/2 up to Low_Window. */
static __always_inline __u64 decrease_q20(__u32 w)
{
	if (w <= low_window)
		return HALF_Q20;
	__u64 span = log2_high_window_q20 - log2_low_window_q20;
	__u64 above = log2_q20(w) - log2_low_window_q20;
	/* High_Decrease < 1/2: b falls from 1/2 as log w rises. */
	__u64 drop = fp_div((HALF_Q20 - high_decrease_q20) * above, span);
	return drop < HALF_Q20 ? HALF_Q20 - drop : 0;
}

FP_OP(__u32, fp_hs_ssthresh, struct sock *, sk)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	__u64 w = fp_q20(cwnd, (1 << 20) - decrease_q20(cwnd));
	return fp_max(w, 2);
}

FP_OP(void, fp_hs_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 left = fp_slow_start_first(tp, acked);
	if (!left)
		return;
	tcp_cong_avoid_ai(tp, tp->snd_cwnd, left * increase(tp->snd_cwnd));
}

FP_RENO_UNDO_CWND(fp_hs_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_highspeed = {
	.ssthresh = (void *)fp_hs_ssthresh,
	.cong_avoid = (void *)fp_hs_cong_avoid,
	.undo_cwnd = (void *)fp_hs_undo_cwnd,
	.name = "fp_highspeed",
};
