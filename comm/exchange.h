/*
 * The communication of one factorization: every message is known before it starts (the plan
 * fixes the fan-in buffers, their largest sizes and peers). Buffers live only while they are
 * needed: a send's buffer is handed over complete and freed here once MPI is done with it; a
 * receive's buffer is allocated here when its message is there (MPI_Improbe, then MPI_Imrecv of
 * exactly its size) and handed to the arrival callback, which owns it from then on. Every send
 * is nonblocking and every message is probed for until it came, so the exchange runs to
 * completion with any eager limit.
 *
 * Who drives MPI (option comm-threads):
 *  1 (default): one communication thread. Workers hand a finished buffer over with a lock-free
 *    push (never a lock, never an MPI call); the thread starts the sends, harvests completions
 *    with MPI_Testsome and turns each arrival into work (a callback: src/ releases the task that
 *    waits for it). Adaptive polling: it naps 1 to 64 microseconds between polls while a worker
 *    waits for work, up to 256 while its own sends are in flight, and 2 milliseconds while every
 *    worker is busy; a hand-over or a worker running out of work ends a nap at once. So it never
 *    keeps a core from busy workers (measured: polling every 64 us cost 20% of the factorization
 *    on 2 cores). Needs MPI_THREAD_SERIALIZED.
 *  0: no thread; idle workers (and the worker that finished a buffer) drive the same progress
 *    step under a trylock. MPI_THREAD_SERIALIZED.
 *  2: one thread for the sends and one for the receives. MPI_THREAD_MULTIPLE.
 *  COMM_FUNNELED (chosen by the phase driver when MPI gives only MPI_THREAD_FUNNELED, as an
 *    unmodified PETSc program does): mode 1's loop without its thread: the calling thread runs it
 *    (comm_exchange_drive) while the workers compute, so that only that thread ever calls MPI.
 *
 * Stress mode (environment CANOPY_STRESS=1): random sleeps up to 200 microseconds in the
 * communication threads, to shake out ordering assumptions in tests.
 */
#ifndef CANOPY_COMM_EXCHANGE_H
#define CANOPY_COMM_EXCHANGE_H

#include <mpi.h>
#include <stdatomic.h>
#include "base/common.h"

/** One message of the exchange. */
typedef struct comm_msg {
    void *buf;              /**< sends: set by comm_exchange_send; receives: allocated on arrival */
    int count;              /**< elements of MPI_DOUBLE (receives: at most) */
    int peer;
    MPI_Comm comm;
    int tag;
    int64_t cookie;         /**< receives: handed to the arrival callback */
} comm_msg;

typedef struct comm_exchange comm_exchange;

enum { COMM_FUNNELED = 3 };

/** Required thread level of MPI for @p comm_threads (0, 1, 2, COMM_FUNNELED). */
int comm_exchange_thread_level(int comm_threads);

/** COMM_FUNNELED: the communication loop on the calling thread, after comm_exchange_start, until
 * every message of the exchange is done (or one failed). No-op in the other modes. */
void comm_exchange_drive(comm_exchange *x);

/**
 * Create an exchange of @p nrecv receives and @p nsend sends (arrays copied) among @p nranks
 * ranks. No two receives may share (communicator, tag, peer). @p on_recv(arg, cookie, buf,
 * count, lost) runs on the thread that saw the arrival: @p buf (canopy_alloc'd, NULL when
 * @p count is 0) now belongs to the callee; @p lost = 1 when this rank could not allocate it (the
 * message went to a sink held for that case, so the sender still completes): the caller fails.
 * Everything else that can fail for lack of resources happens here, threads and the sink (the
 * largest receive) included (they wait for comm_exchange_start): a caller can agree with the
 * other ranks before any message moves.
 */
canopy_status comm_exchange_create(int comm_threads, int nranks, const comm_msg *recvs, int nrecv,
                                   const comm_msg *sends, int nsend,
                                   void (*on_recv)(void *arg, int64_t cookie, void *buf, int count, int lost),
                                   void *arg, comm_exchange **out, canopy_err *err);

/** Let the communication thread(s) run. From the calling thread. */
canopy_status comm_exchange_start(comm_exchange *x, canopy_err *err);

/**
 * Adaptive polling: @p starving(arg) > 0 when some worker waits for work (then arrivals matter at
 * once and the thread polls hard); without it the thread always assumes so. Before the start.
 */
void comm_exchange_set_urgency(comm_exchange *x, int (*starving)(void *arg), void *arg);

/** A worker ran out of work: end the communication thread's nap now. Any thread. */
void comm_exchange_nudge(comm_exchange *x);

/** Send @p slot (index into the sends) from @p buf, @p count doubles (at most the slot's count;
 * 0 with NULL: an empty message, a failed sender's): the buffer is complete and is freed here
 * (canopy_free) once sent. Any thread; lock-free. */
void comm_exchange_send(comm_exchange *x, int slot, void *buf, int count);

/** comm-threads=0: one progress step if nobody else is doing one (the workers' idle hook). */
void comm_exchange_poll(comm_exchange *x);

/**
 * After the workers finished: drive (or wait for) the remaining sends and receives, then join
 * the threads. Every send must have been handed over. Returns CANOPY_ERR_MPI if MPI failed.
 */
canopy_status comm_exchange_finish(comm_exchange *x, canopy_err *err);

/** Messages and bytes sent to / received from each peer ([nranks] each, may be NULL). */
void comm_exchange_counts(const comm_exchange *x, int64_t *msgs_sent, int64_t *bytes_sent, int64_t *msgs_recv,
                          int64_t *bytes_recv);

/** Seconds the communication thread(s) spent sleeping or backing off (idle). */
double comm_exchange_idle_time(const comm_exchange *x);

void comm_exchange_free(comm_exchange *x);

/** Whether CANOPY_STRESS asks for random delays (read once). */
int comm_stress_enabled(void);
/** A random sleep of up to @p max_us microseconds (stress mode), with a per-caller seed. */
void comm_stress_delay(unsigned *seed, int max_us);

#endif
