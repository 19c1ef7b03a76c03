// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * HighSpeed TCP as Linux tcp_highspeed.c runs it, after fatpipe's cc/highspeed/linux.rs
 * ("linux" variant; the kernel here is built without the module):
 * - RFC 3649 appendix B's 72 rows (window, decrease x 256), fixed;
 * - in congestion avoidance the row index is the first row at or above cwnd (the last row
 *   beyond the table); each ACK adds row + 1 to snd_cwnd_cnt whatever it acknowledged, and cwnd
 *   grows by one when the counter reaches cwnd;
 * - a loss: ssthresh = cwnd - cwnd x md >> 8 with the row congestion avoidance last used;
 * - slow start is standard; undo is tcp_reno_undo_cwnd.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

#define ROWS 72
/* RFC 3649 appendix B: windows, and the decrease of each row x 256 (floor of 256 b(w)). */
static const __u32 row_window[ROWS] = {
	38, 118, 221, 347, 495, 663, 851, 1058, 1284, 1529, 1793, 2076, 2378, 2699, 3039, 3399,
	3778, 4177, 4596, 5036, 5497, 5979, 6483, 7009, 7558, 8130, 8726, 9346, 9991, 10661,
	11358, 12082, 12834, 13614, 14424, 15265, 16137, 17042, 17981, 18955, 19965, 21013,
	22101, 23230, 24402, 25618, 26881, 28193, 29557, 30975, 32450, 33986, 35586, 37253,
	38992, 40808, 42707, 44694, 46776, 48961, 51258, 53677, 56230, 58932, 61799, 64851,
	68113, 71617, 75401, 79517, 84035, 89053,
};
static const __u32 row_md[ROWS] = {
	128, 112, 104, 98, 93, 89, 86, 83, 81, 78, 76, 74, 72, 71, 69, 68, 66, 65, 64, 62, 61,
	60, 59, 58, 57, 56, 55, 54, 53, 52, 52, 51, 50, 49, 48, 48, 47, 46, 45, 45, 44, 43, 43,
	42, 41, 41, 40, 39, 39, 38, 38, 37, 36, 36, 35, 35, 34, 33, 33, 32, 32, 31, 30, 30, 29,
	28, 28, 27, 26, 26, 25, 24,
};

struct hstcp {
	__u32 ai;
};
FP_PRIV(struct hstcp)

FP_OP(void, fp_hsl_init, struct sock *, sk)
{
	priv(sk)->ai = 0;
}

FP_OP(__u32, fp_hsl_ssthresh, struct sock *, sk)
{
	__u32 ai = priv(sk)->ai;
	__u64 cwnd = tcp_sk(sk)->snd_cwnd;
	__u64 md = ai < ROWS ? row_md[ai] : row_md[ROWS - 1];
	return fp_max(cwnd - ((cwnd * md) >> 8), 2);
}

FP_OP(void, fp_hsl_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp *ca = priv(sk);
	if (!fp_cwnd_limited(tp))
		return;
	if (fp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	__u32 cwnd = tp->snd_cwnd;
	/* The row whose range holds cwnd: row_window[ai - 1] < cwnd <= row_window[ai] (the last
	 * row above the table). Linux moves there one step per ACK; where it ends does not
	 * depend on where it starts, so a binary search finds the same row. */
	__u32 lo = 0, hi = ROWS - 1;
	for (int i = 0; i < 8 && lo < hi; i++) {
		__u32 mid = (lo + hi) / 2;
		if (mid >= ROWS)
			break;
		if (cwnd <= row_window[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	__u32 ai = lo;
	ca->ai = ai;
	tp->snd_cwnd_cnt += ai + 1;
	if (tp->snd_cwnd_cnt >= cwnd) {
		tp->snd_cwnd_cnt -= cwnd;
		tp->snd_cwnd = cwnd + 1;
	}
}

FP_RENO_UNDO_CWND(fp_hsl_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_highspeed_linux = {
	.init = (void *)fp_hsl_init,
	.ssthresh = (void *)fp_hsl_ssthresh,
	.cong_avoid = (void *)fp_hsl_cong_avoid,
	.undo_cwnd = (void *)fp_hsl_undo_cwnd,
	.name = "fp_hs_linux",
};
