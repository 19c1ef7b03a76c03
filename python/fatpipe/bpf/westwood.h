/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * The response to a congestion signal that fatpipe's Westwood and Westwood+ ("paper") share
 * (cc/westwood.rs, WestwoodFamily): ssthresh = BWE x RTTmin / MSS, at least 2, and entering
 * recovery the window is never raised above its value at the signal.
 */
#ifndef FATPIPE_WESTWOOD_H
#define FATPIPE_WESTWOOD_H

#include "fatpipe_cc.h"

/* BWE x RTTmin in segments, at least 2; `bytes_per_s` is the estimate. */
static __always_inline __u32 ww_bandwidth_window(struct tcp_sock *tp, __u64 bytes_per_s)
{
	__u32 rtt_min = fp_min_rtt_us(tp);
	if (rtt_min == ~0U)
		rtt_min = 0;
	__u64 segments = fp_div(bytes_per_s * rtt_min / USEC_PER_SEC, tp->mss_cache);
	return fp_max(fp_min64(segments, 0xffffffffULL), 2);
}

/* set_state: entering recovery, cwnd = min(ssthresh, cwnd at the signal) + the inflation the
 * stack added above ssthresh. */
static __always_inline void ww_set_state(struct sock *sk, __u8 new_state, __u32 cwnd_at_signal)
{
	struct tcp_sock *tp = tcp_sk(sk);
	if (!fp_core_transition(sk, new_state) || new_state != TCP_CA_Recovery)
		return;
	__u32 inflation = tp->snd_cwnd > tp->snd_ssthresh ? tp->snd_cwnd - tp->snd_ssthresh : 0;
	tp->snd_cwnd = fp_min(tp->snd_ssthresh, cwnd_at_signal) + inflation;
}

#endif
