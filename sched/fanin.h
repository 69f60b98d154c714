/*
 * The fan-in buffers of a plan: the rows each buffer (and each message of a cut one) holds, the
 * cuts, and every rank's memory for them by the plan's simulated times (fanin.c). Pure functions
 * of the plan and the structure: a sender and its receiver derive the same layout without a
 * message. sched_plan_local (distribute.h) builds one rank's messages from them.
 */
#ifndef CANOPY_SCHED_FANIN_H
#define CANOPY_SCHED_FANIN_H

#include "base/common.h"
#include "base/structure.h"
#include "plan.h"

/**
 * The memory of every rank's fan-in buffers and update buffers, [nranks] each (scalars, one part):
 * @p peak: the most fan-in buffer scalars alive at once on the rank, by the plan's simulated
 * times: a sent buffer (each message of a cut one, sched_fanin_cuts) lives from its first
 * contribution (which allocates it: a SUBTREE task's at its time in the plan, blok_time, an
 * UPDATE's when its task ends) until its receiver took it: its last contribution plus a time in
 * flight (2 ms, the exchange's longest nap while workers are busy, plus the copy at 5 GB/s; the
 * messages of one burst are in flight together), at most the target's panel; a received buffer from its arrival (the
 * sender's last contribution) to the start of the target's panel task (which adds and frees it:
 * scheduler=static).
 * @p peak_arrival: the same with received buffers added into the panel on arrival
 * (scheduler=dynamic): they count only at that instant. Intervals that touch count together.
 * @p sink: the largest buffer the rank receives. Any of them may be NULL. (The update buffers are
 * the workers' own: sched_thread_work.)
 */
canopy_status sched_fanin_memory(const symbolic *S, const sched_plan *P, double *peak, double *peak_arrival, double *sink,
                                 canopy_err *err);

/** A fan-in buffer goes in at most this many messages (sched_fanin_cuts). */
#define SCHED_FANIN_SEGS 8

/**
 * Fan-in buffers sent in several messages: for each pair q of @p pairs (as sched_fanin_rows'),
 * @p nmsg[q] messages (1: the buffer goes whole), and @p cuts[q * (SCHED_FANIN_SEGS - 1) + s] for
 * s < nmsg[q] - 1: how many of the sending rank's contributions into the target (in the plan's
 * order, i.e. by their simulated times) come before cut s, ascending. A buffer (of at least 32768
 * scalars unless P->fanin_cuts is 2) is cut at every gap of at least 2% of the predicted factorization between two of its
 * contributions in the plan
 * (the widest SCHED_FANIN_SEGS - 1 of them): a rank's subtrees contribute to the top separators
 * early, each of its top cblks in a burst after its panel, and one buffer would be held through all
 * of it. Then a cap: where a rank's open buffers (each counted whole, from a message's first
 * contribution to its last) would hold more than half its own factor's scalars, the open buffers
 * whose next contribution comes last are cut at that moment until it is under again (at most
 * SCHED_FANIN_SEGS messages a buffer). Each message is sent when its last contribution is in and
 * holds only its own contributions' rows (sched_fanin_msgrows); the next contribution allocates a
 * new buffer. Every rank derives the same cuts from the plan (the receiver expects every message).
 * Plans without blok_time, or with fanin_cuts 0, cut nothing.
 */
canopy_status sched_fanin_cuts(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t nu, int *nmsg,
                               int *cuts, canopy_err *err);

/**
 * The rows of fan-in buffers: for each pair q of @p pairs (target cblk j * @p nranks + sending
 * rank r, sorted and unique), @p rows[q] = how many rows of j's panel the updates that rank r
 * computes into j write (sched_src_rank of @p P: its own cblks', and under top2d flat those it
 * runs for other ranks' cblks): for every facing group of such a cblk k facing j, the rows of k's
 * bloks from that group on, each inside one blok of j (2D tiles write subsets of the same rows).
 * With @p moff (NULL: every pair, no maps), only the pairs with moff[q] >= 0 are done, and
 * @p maps[moff[q] + i] gets the buffer row of panel row i of j (rows numbered in panel order),
 * or -1, for i < stride of j. A pure function of the structure and the ranks of the cblks, so
 * that the sender and the receiver derive the same layout without a message.
 */
canopy_status sched_fanin_rows(const symbolic *S, const sched_plan *P, int nranks, cint root_first,
                               const int64_t *pairs, size_t np, cint *rows, const int64_t *moff, cint *maps, canopy_err *err);

/**
 * The rows of each message of the fan-in buffers of @p pairs (as sched_fanin_rows') when buffer q
 * goes in @p nmsg[q] messages cut at @p cuts (as sched_fanin_cuts gives them; both NULL: every
 * buffer whole): @p rows[q * SCHED_FANIN_SEGS + s], s < nmsg[q], = how many rows of the target's
 * panel the contributions of message s write (the sending rank's contributions into the target
 * numbered in the plan's order, blok_contrib and task_contrib: those from cuts[s - 1] to
 * cuts[s] - 1; an UPDATE2D task writes only its facing group's rows). The rows of the messages of
 * one buffer together are sched_fanin_rows' rows. With @p loff (NULL: every pair, counts only):
 * a pair with loff[q * SCHED_FANIN_SEGS] == -1 is skipped (its rows left 0); for each (q, s) with
 * loff[q * SCHED_FANIN_SEGS + s] >= 0 and @p lists, lists from there gets the message's panel
 * rows, ascending (-2: counted only). A pure function of the plan: every rank derives the same.
 */
canopy_status sched_fanin_msgrows(const symbolic *S, const sched_plan *P, const int64_t *pairs, size_t np, const int *nmsg,
                                  const int *cuts, cint *rows, const int64_t *loff, cint *lists, canopy_err *err);

#endif
