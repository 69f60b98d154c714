/*
 * The communication thread(s) of a factorization (see exchange.h).
 *
 * Hand-off: a worker pushes the slot of a complete buffer onto a Treiber stack (next[] + head,
 * one CAS); the progress step takes the whole stack with one exchange, so there is a single
 * consumer and no ABA. Requests live in one array, receives first, then sends in slot order;
 * a receive's request exists once MPI_Improbe (any source, any tag, on each communicator of the
 * receives) found its message and its buffer was allocated. MPI_Testsome reports completions,
 * which are counted per peer; a send's buffer is freed, a receive's passed to the callback. The
 * step that sees the last completion ends the exchange.
 */
#include "base/config.h"
#include "exchange.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XCH_BACKOFF_MIN_NS 1000L     /* first nap after a progress step found nothing */
#define XCH_BACKOFF_MAX_NS 64000L    /* longest nap while workers wait for data */
#define XCH_SENDS_MAX_NS 256000L     /* longest nap while our own sends are in flight */
#define XCH_CALM_NS 2000000L         /* nap while every worker has work: a hand-over or a worker
                                        running out of work cuts it short */

struct comm_exchange {
    int mode, nranks;
    int nrecv, nsend;
    comm_msg *msgs;                 /* [nrecv + nsend] */
    MPI_Request *req;               /* [nrecv + nsend] */
    int *idx;                       /* Testsome output */
    MPI_Status *status;             /* Testsome output (a real array: GCC flags MPI_STATUSES_IGNORE
                                       with MPICH's headers as an overflow) */
    void (*on_recv)(void *, int64_t, void *, int, int);
    void *arg;
    int ncomm;                      /* distinct communicators of the receives */
    MPI_Comm *comms;                /* [ncomm] */
    int64_t *keys;                  /* [nrecv] (communicator index, tag, peer) of each receive, sorted */
    int *key_recv;                  /* [nrecv] the receive of each key */
    void *sink;                     /* the largest receive: where a message goes when its buffer
                                       cannot be allocated */
    int sink_count;
    atomic_int head;                /* stack of sends handed over, -1 = empty */
    atomic_int *next;               /* [nsend] */
    atomic_int recv_done, send_done, sends_posted;
    atomic_int failed;              /* an MPI call failed */
    atomic_int finishing;           /* the workers are done: no more hand-overs */
    atomic_int go;                  /* 1: receives posted, threads may run; -1: cancelled */
    pthread_mutex_t poll_mu;        /* comm-threads=0: one progress step at a time */
    pthread_mutex_t sleep_mu;
    pthread_cond_t sleep_cv;
    atomic_int sleeping;            /* communication threads napping now */
    pthread_t thr[2];
    int nthr;
    atomic_llong *counts;           /* [4 * nranks]: msgs sent, bytes sent, msgs received, bytes received */
    double idle[2];
    int stress;
    int (*starving)(void *);        /* workers waiting for work right now (NULL: always assume so) */
    void *starving_arg;
    int sync_ready;                 /* the mutexes and condition exist */
};

static canopy_status xch_spawn(comm_exchange *x, canopy_err *err);

int comm_exchange_thread_level(int comm_threads)
{
    return comm_threads == 2 ? MPI_THREAD_MULTIPLE : comm_threads == COMM_FUNNELED ? MPI_THREAD_FUNNELED
                                                                                    : MPI_THREAD_SERIALIZED;
}

int comm_stress_enabled(void)
{
    static int cached = -1;
    if (cached < 0) {
        const char *e = getenv("CANOPY_STRESS");
        cached = e && *e && strcmp(e, "0") != 0;
    }
    return cached;
}

void comm_stress_delay(unsigned *seed, int max_us)
{
    *seed = *seed * 1103515245u + 12345u;
    long us = (long)((*seed >> 8) % (unsigned)(max_us + 1));
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

/* a receive's key: communicator index, tag (< 2^31) and peer (< 2^20 ranks would do; 2^24 kept) */
static int64_t xch_key(int c, int tag, int peer)
{
    return ((int64_t)c << 55) | ((int64_t)tag << 24) | (int64_t)peer;
}

typedef struct xch_kv {
    int64_t key;
    int recv;
} xch_kv;

static int xch_cmp_kv(const void *a, const void *b)
{
    int64_t x = ((const xch_kv *)a)->key, y = ((const xch_kv *)b)->key;
    return x < y ? -1 : x > y;
}

/* The lookup of arriving messages: the distinct communicators of the receives, each receive's
 * key, sorted; and the sink (the largest receive). */
static canopy_status xch_index(comm_exchange *x, canopy_err *err)
{
    int nrecv = x->nrecv, maxc = 0;
    x->comms = canopy_alloc((size_t)nrecv + 1, sizeof *x->comms, "communication", err);
    x->keys = canopy_alloc((size_t)nrecv + 1, sizeof *x->keys, "communication", err);
    x->key_recv = canopy_alloc((size_t)nrecv + 1, sizeof *x->key_recv, "communication", err);
    xch_kv *kv = canopy_alloc((size_t)nrecv + 1, sizeof *kv, "communication", err);
    if (!x->comms || !x->keys || !x->key_recv || !kv) {
        canopy_free(kv);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int i = 0; i < nrecv; i++) {
        const comm_msg *m = &x->msgs[i];
        int c = 0;
        while (c < x->ncomm && x->comms[c] != m->comm) c++;
        if (c == x->ncomm) x->comms[x->ncomm++] = m->comm;
        if (m->tag < 0 || m->peer < 0 || m->peer >= (1 << 24) || c >= 256) {
            canopy_free(kv);
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_exchange_create: receive %d out of range", i);
        }
        kv[i] = (xch_kv){xch_key(c, m->tag, m->peer), i};
        maxc = m->count > maxc ? m->count : maxc;
    }
    qsort(kv, (size_t)nrecv, sizeof *kv, xch_cmp_kv);
    for (int i = 0; i < nrecv; i++) {
        x->keys[i] = kv[i].key;
        x->key_recv[i] = kv[i].recv;
    }
    canopy_free(kv);
    for (int i = 1; i < nrecv; i++)
        if (x->keys[i] == x->keys[i - 1])
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_exchange_create: two receives of one message");
    x->sink_count = maxc;
    x->sink = canopy_alloc((size_t)maxc + 1, sizeof(double), "fan-in sink (a receive that finds no memory)", err);
    return x->sink ? CANOPY_SUCCESS : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
}

/* The receive an arriving message (communicator index, tag, source) is for, or -1. */
static int xch_find(const comm_exchange *x, int c, int tag, int peer)
{
    int64_t key = xch_key(c, tag, peer);
    int lo = 0, hi = x->nrecv;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (x->keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < x->nrecv && x->keys[lo] == key ? x->key_recv[lo] : -1;
}

canopy_status comm_exchange_create(int comm_threads, int nranks, const comm_msg *recvs, int nrecv,
                                   const comm_msg *sends, int nsend,
                                   void (*on_recv)(void *arg, int64_t cookie, void *buf, int count, int lost),
                                   void *arg, comm_exchange **out, canopy_err *err)
{
    if (out) *out = NULL;
    if (out == NULL || comm_threads < 0 || comm_threads > COMM_FUNNELED || nranks < 1 || nrecv < 0 || nsend < 0 ||
        (nrecv > 0 && recvs == NULL) || (nsend > 0 && sends == NULL) || nrecv > INT32_MAX - nsend)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_exchange_create: bad argument");
    comm_exchange *x = canopy_calloc(1, sizeof *x, "communication", err);
    if (x == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    size_t m = (size_t)nrecv + (size_t)nsend + 1;
    x->msgs = canopy_calloc(m, sizeof *x->msgs, "communication", err); /* buffers NULL: none owned yet */
    x->req = canopy_alloc(m, sizeof *x->req, "communication", err);
    x->idx = canopy_alloc(m, sizeof *x->idx, "communication", err);
    x->status = canopy_alloc(m, sizeof *x->status, "communication", err);
    x->next = canopy_alloc((size_t)nsend + 1, sizeof *x->next, "communication", err);
    x->counts = canopy_calloc(4 * (size_t)nranks, sizeof *x->counts, "communication", err);
    if (!x->msgs || !x->req || !x->idx || !x->status || !x->next || !x->counts) {
        comm_exchange_free(x);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    if (nrecv) memcpy(x->msgs, recvs, (size_t)nrecv * sizeof *recvs);
    if (nsend) memcpy(x->msgs + nrecv, sends, (size_t)nsend * sizeof *sends);
    for (size_t i = 0; i < m; i++) x->msgs[i].buf = NULL; /* allocated on arrival, handed over with a send */
    for (size_t i = 0; i < m; i++) x->req[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < 4 * nranks; i++) atomic_init(&x->counts[i], 0);
    for (int i = 0; i < nsend; i++) atomic_init(&x->next[i], -1);
    x->mode = comm_threads;
    x->nranks = nranks;
    x->nrecv = nrecv;
    x->nsend = nsend;
    x->on_recv = on_recv;
    x->arg = arg;
    x->stress = comm_stress_enabled();
    atomic_init(&x->head, -1);
    atomic_init(&x->recv_done, 0);
    atomic_init(&x->send_done, 0);
    atomic_init(&x->sends_posted, 0);
    atomic_init(&x->failed, 0);
    atomic_init(&x->finishing, 0);
    atomic_init(&x->sleeping, 0);
    atomic_init(&x->go, 0);
    pthread_mutex_init(&x->poll_mu, NULL);
    pthread_mutex_init(&x->sleep_mu, NULL);
    pthread_cond_init(&x->sleep_cv, NULL);
    x->sync_ready = 1;
    canopy_status st = xch_index(x, err);
    if (st == CANOPY_SUCCESS) st = xch_spawn(x, err);
    if (st != CANOPY_SUCCESS) {
        comm_exchange_free(x);
        return st;
    }
    *out = x;
    return CANOPY_SUCCESS;
}

static int xch_all_done(const comm_exchange *x)
{
    return atomic_load_explicit(&x->recv_done, memory_order_acquire) == x->nrecv &&
           atomic_load_explicit(&x->send_done, memory_order_acquire) == x->nsend;
}

/* Start the sends handed over since the last call; true if there were any. */
static int xch_post_sends(comm_exchange *x)
{
    int h = atomic_exchange_explicit(&x->head, -1, memory_order_acq_rel);
    int any = 0;
    while (h >= 0) {
        comm_msg *m = &x->msgs[x->nrecv + h]; /* buf and count: set before the push */
        if (MPI_Isend(m->buf, m->count, MPI_DOUBLE, m->peer, m->tag, m->comm, &x->req[x->nrecv + h]) != MPI_SUCCESS)
            atomic_store(&x->failed, 1);
        atomic_fetch_add_explicit(&x->sends_posted, 1, memory_order_relaxed);
        any = 1;
        h = atomic_load_explicit(&x->next[h], memory_order_relaxed);
    }
    return any;
}

/*
 * Messages that arrived for receives not started yet: each gets a buffer of exactly its size and
 * its MPI_Imrecv. A buffer that cannot be allocated: the message is received into the sink at
 * once (blocking: the sink serves one message at a time; the sender's side progresses its send
 * meanwhile) and reported lost. True if there were any.
 */
static int xch_probe(comm_exchange *x)
{
    int any = 0;
    for (int c = 0; c < x->ncomm; c++)
        for (;;) {
            int flag = 0, count = 0;
            MPI_Message msg;
            MPI_Status st;
            if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, x->comms[c], &flag, &msg, &st) != MPI_SUCCESS) {
                atomic_store(&x->failed, 1);
                return any;
            }
            if (!flag) break;
            any = 1;
            int i = xch_find(x, c, st.MPI_TAG, st.MPI_SOURCE);
            if (MPI_Get_count(&st, MPI_DOUBLE, &count) != MPI_SUCCESS || count == MPI_UNDEFINED) count = -1;
            if (i < 0 || x->req[i] != MPI_REQUEST_NULL || x->msgs[i].buf != NULL || count < 0 ||
                count > x->msgs[i].count) {
                /* not one of ours: nothing else runs on these communicators during a factorization */
                MPI_Mrecv(x->sink, count >= 0 && count <= x->sink_count ? count : 0, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);
                atomic_store(&x->failed, 1);
                return any;
            }
            comm_msg *m = &x->msgs[i];
            void *buf = count > 0 ? canopy_alloc((size_t)count, sizeof(double), "received fan-in buffer", NULL) : NULL;
            int lost = count > 0 && buf == NULL;
            m->count = count;
            if (count == 0 || lost) {
                if (MPI_Mrecv(lost ? x->sink : NULL, count, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    atomic_store(&x->failed, 1);
                atomic_fetch_add_explicit(&x->counts[2 * x->nranks + m->peer], 1, memory_order_relaxed);
                if (x->on_recv) x->on_recv(x->arg, m->cookie, NULL, 0, lost);
                m->buf = x->sink; /* done: a second message for it is an error */
                atomic_fetch_add_explicit(&x->recv_done, 1, memory_order_acq_rel);
                continue;
            }
            m->buf = buf;
            if (MPI_Imrecv(buf, count, MPI_DOUBLE, &msg, &x->req[i]) != MPI_SUCCESS) atomic_store(&x->failed, 1);
        }
    return any;
}

/* Harvest completions among requests [a, b); true if there were any. */
static int xch_test(comm_exchange *x, int a, int b)
{
    if (b <= a) return 0;
    int outcount = 0;
    if (MPI_Testsome(b - a, x->req + a, &outcount, x->idx + a, x->status + a) != MPI_SUCCESS) {
        atomic_store(&x->failed, 1);
        return 0;
    }
    if (outcount == MPI_UNDEFINED || outcount <= 0) return 0;
    for (int q = 0; q < outcount; q++) {
        int i = a + x->idx[a + q];
        comm_msg *m = &x->msgs[i];
        int64_t bytes = (int64_t)m->count * (int64_t)sizeof(double);
        if (i < x->nrecv) {
            atomic_fetch_add_explicit(&x->counts[2 * x->nranks + m->peer], 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&x->counts[3 * x->nranks + m->peer], bytes, memory_order_relaxed);
            void *buf = m->buf;
            m->buf = x->sink; /* handed over: the callee owns it now */
            if (x->on_recv) x->on_recv(x->arg, m->cookie, buf, m->count, 0);
            else canopy_free(buf);
            atomic_fetch_add_explicit(&x->recv_done, 1, memory_order_acq_rel);
        } else {
            atomic_fetch_add_explicit(&x->counts[m->peer], 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&x->counts[x->nranks + m->peer], bytes, memory_order_relaxed);
            canopy_free(m->buf); /* sent: the buffer's life ends here */
            m->buf = NULL;
            atomic_fetch_add_explicit(&x->send_done, 1, memory_order_acq_rel);
        }
    }
    return 1;
}

/* Sleep up to @p ns, woken early by a hand-over (comm_exchange_send), a starving worker
 * (comm_exchange_nudge) or the end of the workers; returns the time slept. @p sends: the caller
 * posts sends (a pending hand-over is then work, not a reason to sleep; the receive thread of
 * comm-threads=2 ignores it). `sleeping` counts the nappers: with two threads, one waking must
 * not hide the other from the wakers. Once the workers are done, naps are short polls (the
 * last completions end the run), never a long sleep and never a spin. */
static double xch_nap(comm_exchange *x, long ns, int sends)
{
    double t0 = canopy_wtime();
    pthread_mutex_lock(&x->sleep_mu);
    atomic_fetch_add_explicit(&x->sleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&x->finishing, memory_order_seq_cst) && ns > XCH_BACKOFF_MAX_NS) ns = XCH_BACKOFF_MAX_NS;
    if (!sends || atomic_load_explicit(&x->head, memory_order_seq_cst) < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += ns;
        while (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&x->sleep_cv, &x->sleep_mu, &ts);
    }
    atomic_fetch_sub_explicit(&x->sleeping, 1, memory_order_relaxed);
    pthread_mutex_unlock(&x->sleep_mu);
    return canopy_wtime() - t0;
}

/* Threads are created with the exchange (so that a failure to create them is known before any
 * message) and wait here until comm_exchange_start posted the receives, or the exchange is
 * freed unused. Returns 0 when cancelled. */
static int xch_wait_go(comm_exchange *x)
{
    pthread_mutex_lock(&x->sleep_mu);
    while (atomic_load(&x->go) == 0) pthread_cond_wait(&x->sleep_cv, &x->sleep_mu);
    pthread_mutex_unlock(&x->sleep_mu);
    return atomic_load(&x->go) > 0;
}

static void xch_loop(comm_exchange *x, int part, double *idle)
{
    if (!xch_wait_go(x)) return;
    long backoff = XCH_BACKOFF_MIN_NS;
    unsigned seed = 12345u + 77u * (unsigned)part;
    for (;;) {
        if (x->stress) comm_stress_delay(&seed, 200);
        int progress = 0;
        if (part != 2) progress |= xch_post_sends(x);
        if (part != 1) progress |= xch_probe(x) | xch_test(x, 0, x->nrecv);
        if (part != 2) progress |= xch_test(x, x->nrecv, x->nrecv + x->nsend);
        int recv_over = atomic_load_explicit(&x->recv_done, memory_order_acquire) == x->nrecv;
        int send_over = atomic_load_explicit(&x->send_done, memory_order_acquire) == x->nsend;
        if (atomic_load(&x->failed) || (part == 0 && recv_over && send_over) || (part == 1 && send_over) ||
            (part == 2 && recv_over))
            return;
        if (progress) {
            backoff = XCH_BACKOFF_MIN_NS;
            continue;
        }
        /*
         * Adaptive polling: poll hard (1 to 64 us naps) only while some worker waits for work,
         * a bit less while our own sends are in flight, and otherwise nap for milliseconds:
         * every worker then has work, and a wake-up every few microseconds would take their
         * core. Hand-overs and starving workers end a nap at once.
         */
        int posted = atomic_load_explicit(&x->sends_posted, memory_order_relaxed);
        int sends_in_flight = part != 2 && posted > atomic_load_explicit(&x->send_done, memory_order_relaxed);
        int starving = part != 1 && (x->starving == NULL || x->starving(x->starving_arg) > 0);
        long nap = starving ? backoff : sends_in_flight ? CANOPY_MIN(4 * backoff, XCH_SENDS_MAX_NS) : XCH_CALM_NS;
        *idle += xch_nap(x, nap, part != 2);
        backoff = backoff * 2 > XCH_BACKOFF_MAX_NS ? XCH_BACKOFF_MAX_NS : backoff * 2;
    }
}

static void *xch_main_all(void *arg)
{
    comm_exchange *x = arg;
    xch_loop(x, 0, &x->idle[0]);
    return NULL;
}

static void *xch_main_send(void *arg)
{
    comm_exchange *x = arg;
    xch_loop(x, 1, &x->idle[0]);
    return NULL;
}

static void *xch_main_recv(void *arg)
{
    comm_exchange *x = arg;
    xch_loop(x, 2, &x->idle[1]);
    return NULL;
}

static canopy_status xch_spawn(comm_exchange *x, canopy_err *err)
{
    if (x->mode == 1) {
        if (pthread_create(&x->thr[0], NULL, xch_main_all, x) != 0)
            return canopy_err_set(err, CANOPY_ERR_NOMEM, "cannot start the communication thread");
        x->nthr = 1;
    } else if (x->mode == 2) {
        if (pthread_create(&x->thr[0], NULL, xch_main_send, x) != 0)
            return canopy_err_set(err, CANOPY_ERR_NOMEM, "cannot start the communication threads");
        x->nthr = 1;
        if (pthread_create(&x->thr[1], NULL, xch_main_recv, x) != 0)
            return canopy_err_set(err, CANOPY_ERR_NOMEM, "cannot start the communication threads");
        x->nthr = 2;
    }
    return CANOPY_SUCCESS;
}

static void xch_release(comm_exchange *x, int value)
{
    pthread_mutex_lock(&x->sleep_mu);
    atomic_store(&x->go, value);
    pthread_cond_broadcast(&x->sleep_cv);
    pthread_mutex_unlock(&x->sleep_mu);
}

canopy_status comm_exchange_start(comm_exchange *x, canopy_err *err)
{
    if (x == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_exchange_start: NULL");
    xch_release(x, 1);
    return CANOPY_SUCCESS;
}

void comm_exchange_drive(comm_exchange *x)
{
    if (x == NULL || x->mode != COMM_FUNNELED) return;
    xch_loop(x, 0, &x->idle[0]);
}

void comm_exchange_poll(comm_exchange *x)
{
    if (x == NULL || x->mode != 0 || pthread_mutex_trylock(&x->poll_mu) != 0) return;
    xch_post_sends(x);
    xch_probe(x);
    xch_test(x, 0, x->nrecv + x->nsend);
    pthread_mutex_unlock(&x->poll_mu);
}

void comm_exchange_set_urgency(comm_exchange *x, int (*starving)(void *arg), void *arg)
{
    if (x == NULL) return;
    x->starving = starving;
    x->starving_arg = arg;
}

void comm_exchange_nudge(comm_exchange *x)
{
    if (x == NULL || x->mode == 0 || !atomic_load_explicit(&x->sleeping, memory_order_seq_cst)) return;
    pthread_mutex_lock(&x->sleep_mu);
    pthread_cond_broadcast(&x->sleep_cv);
    pthread_mutex_unlock(&x->sleep_mu);
}

void comm_exchange_send(comm_exchange *x, int slot, void *buf, int count)
{
    if (x == NULL || slot < 0 || slot >= x->nsend) {
        canopy_free(buf);
        return;
    }
    comm_msg *m = &x->msgs[x->nrecv + slot];
    m->buf = buf; /* published by the push's release */
    m->count = buf != NULL && count > 0 && count <= m->count ? count : 0;
    int old = atomic_load_explicit(&x->head, memory_order_relaxed);
    do {
        atomic_store_explicit(&x->next[slot], old, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&x->head, &old, slot, memory_order_seq_cst,
                                                    memory_order_relaxed)); /* seq_cst: ordered before the
                                                                               load of `sleeping` below */
    if (x->mode == 0) {
        comm_exchange_poll(x);
    } else if (atomic_load_explicit(&x->sleeping, memory_order_seq_cst)) {
        pthread_mutex_lock(&x->sleep_mu);
        pthread_cond_broadcast(&x->sleep_cv);
        pthread_mutex_unlock(&x->sleep_mu);
    }
}

canopy_status comm_exchange_finish(comm_exchange *x, canopy_err *err)
{
    if (x == NULL) return CANOPY_SUCCESS;
    atomic_store_explicit(&x->finishing, 1, memory_order_seq_cst);
    pthread_mutex_lock(&x->sleep_mu);
    pthread_cond_broadcast(&x->sleep_cv);
    pthread_mutex_unlock(&x->sleep_mu);
    if (x->mode == 0) {
        long backoff = XCH_BACKOFF_MIN_NS;
        while (!xch_all_done(x) && !atomic_load(&x->failed)) {
            pthread_mutex_lock(&x->poll_mu);
            int progress = xch_post_sends(x) | xch_probe(x) | xch_test(x, 0, x->nrecv + x->nsend);
            pthread_mutex_unlock(&x->poll_mu);
            if (!progress) {
                x->idle[0] += xch_nap(x, backoff, 1);
                backoff = backoff * 2 > XCH_BACKOFF_MAX_NS ? XCH_BACKOFF_MAX_NS : backoff * 2;
            }
        }
    }
    for (int t = 0; t < x->nthr; t++) pthread_join(x->thr[t], NULL);
    x->nthr = 0;
    if (atomic_load(&x->failed)) return canopy_err_set(err, CANOPY_ERR_MPI, "an MPI call of the communication failed");
    return CANOPY_SUCCESS;
}

void comm_exchange_counts(const comm_exchange *x, int64_t *msgs_sent, int64_t *bytes_sent, int64_t *msgs_recv,
                          int64_t *bytes_recv)
{
    if (x == NULL) return;
    for (int p = 0; p < x->nranks; p++) {
        if (msgs_sent) msgs_sent[p] = atomic_load(&x->counts[p]);
        if (bytes_sent) bytes_sent[p] = atomic_load(&x->counts[x->nranks + p]);
        if (msgs_recv) msgs_recv[p] = atomic_load(&x->counts[2 * x->nranks + p]);
        if (bytes_recv) bytes_recv[p] = atomic_load(&x->counts[3 * x->nranks + p]);
    }
}

double comm_exchange_idle_time(const comm_exchange *x)
{
    return x ? x->idle[0] + x->idle[1] : 0;
}

void comm_exchange_free(comm_exchange *x)
{
    if (x == NULL) return;
    if (x->nthr > 0 && atomic_load(&x->go) == 0) xch_release(x, -1); /* never started */
    for (int t = 0; t < x->nthr; t++) pthread_join(x->thr[t], NULL);
    /* what a failed exchange left: the buffers of sends not completed, receives not handed over */
    if (x->msgs)
        for (int i = 0; i < x->nrecv + x->nsend; i++) {
            if (x->req && x->req[i] != MPI_REQUEST_NULL) continue; /* MPI may still write it: leak, do not free */
            if (x->msgs[i].buf != x->sink) canopy_free(x->msgs[i].buf);
            x->msgs[i].buf = NULL;
        }
    canopy_free(x->sink);
    canopy_free(x->comms);
    canopy_free(x->keys);
    canopy_free(x->key_recv);
    if (x->sync_ready) {
        pthread_mutex_destroy(&x->poll_mu);
        pthread_mutex_destroy(&x->sleep_mu);
        pthread_cond_destroy(&x->sleep_cv);
    }
    canopy_free(x->msgs);
    canopy_free(x->req);
    canopy_free(x->idx);
    canopy_free(x->status);
    canopy_free(x->next);
    canopy_free(x->counts);
    canopy_free(x);
}
