/*
 * Parallel nested dissection with PT-SCOTCH (ordering=ptscotch): every rank of the communicator
 * takes a contiguous range of vertices of the graph of A + A^T, PT-SCOTCH dissects the
 * distributed graph on all of them, and the ordering is gathered on rank 0, which goes on with
 * the symbolic factorization. The graph still starts on rank 0 (it is built there from the
 * assembled matrix) and is sent out in slices; what runs in parallel is the dissection itself.
 *
 * Without PT-SCOTCH (configure found none built for this MPI) the option is refused when it is
 * set, and order_ptscotch() says so if it is reached anyway.
 */
#include "order.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"

#ifdef CANOPY_HAVE_PTSCOTCH
bool order_have_ptscotch(void) { return true; }
#else
bool order_have_ptscotch(void) { return false; }
#endif

#ifdef CANOPY_HAVE_PTSCOTCH
#include <scotch.h>
#include <ptscotch.h>

/* configure refuses a SCOTCH whose integers differ from ours, so the arrays are handed over as is */
_Static_assert(sizeof(SCOTCH_Num) == sizeof(cint), "SCOTCH_Num must be canopy_int");

#define PT_CHUNK (1 << 30) /* bytes per MPI message: counts are ints */

static int send_bytes(const void *buf, size_t len, int dest, int tag, MPI_Comm comm)
{
    const char *p = buf;
    do {
        int part = len > PT_CHUNK ? PT_CHUNK : (int)len;
        int rc = MPI_Send(p, part, MPI_BYTE, dest, tag, comm);
        if (rc != MPI_SUCCESS) return rc;
        p += part;
        len -= (size_t)part;
    } while (len > 0);
    return MPI_SUCCESS;
}

static int recv_bytes(void *buf, size_t len, int src, int tag, MPI_Comm comm)
{
    char *p = buf;
    do {
        int part = len > PT_CHUNK ? PT_CHUNK : (int)len;
        int rc = MPI_Recv(p, part, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        p += part;
        len -= (size_t)part;
    } while (len > 0);
    return MPI_SUCCESS;
}

/* first vertex of rank r's range: the vertices split as evenly as the count allows */
static cint range_start(cint n, int nranks, int r) { return (cint)((int64_t)n * r / nranks); }

/*
 * Rank 0 sends each rank its slice of G (column pointers rebased to 0, row indices global);
 * the others receive theirs into *vert / *edge (rank 0's slice is a copy as well, so that every
 * rank frees what it holds). Collective; the status is agreed.
 */
static canopy_status scatter_graph(MPI_Comm comm, int rank, int nranks, const canopy_csc *G, cint n, SCOTCH_Num **vert,
                                   SCOTCH_Num **edge, cint *nedge, canopy_err *err)
{
    enum { TAG_COUNT = 71, TAG_VERT, TAG_EDGE };
    cint lo = range_start(n, nranks, rank), nv = range_start(n, nranks, rank + 1) - lo;
    int64_t ne = 0;
    *vert = NULL;
    *edge = NULL;
    if (rank == 0) {
        for (int r = 1; r < nranks; r++) {
            cint rlo = range_start(n, nranks, r), rhi = range_start(n, nranks, r + 1);
            int64_t cnt = (int64_t)(G->colptr[rhi] - G->colptr[rlo]);
            MPI_Send(&cnt, 1, MPI_INT64_T, r, TAG_COUNT, comm);
        }
        ne = (int64_t)(G->colptr[nv] - G->colptr[0]);
    } else {
        MPI_Recv(&ne, 1, MPI_INT64_T, 0, TAG_COUNT, comm, MPI_STATUS_IGNORE);
    }
    *vert = canopy_alloc((size_t)nv + 1, sizeof(SCOTCH_Num), "PT-SCOTCH graph slice", err);
    *edge = canopy_alloc((size_t)ne + 1, sizeof(SCOTCH_Num), "PT-SCOTCH graph slice", err);
    if (comm_agree(comm, err) < 0) return err->status;
    int rc = MPI_SUCCESS;
    if (rank == 0) {
        for (int r = 1; r < nranks && rc == MPI_SUCCESS; r++) {
            cint rlo = range_start(n, nranks, r), rhi = range_start(n, nranks, r + 1);
            rc = send_bytes(G->colptr + rlo, (size_t)(rhi - rlo + 1) * sizeof(cint), r, TAG_VERT, comm);
            if (rc == MPI_SUCCESS)
                rc = send_bytes(G->rowind + G->colptr[rlo], (size_t)(G->colptr[rhi] - G->colptr[rlo]) * sizeof(cint), r,
                                TAG_EDGE, comm);
        }
        memcpy(*vert, G->colptr, ((size_t)nv + 1) * sizeof(cint));
        memcpy(*edge, G->rowind, (size_t)ne * sizeof(cint));
    } else {
        rc = recv_bytes(*vert, ((size_t)nv + 1) * sizeof(cint), 0, TAG_VERT, comm);
        if (rc == MPI_SUCCESS) rc = recv_bytes(*edge, (size_t)ne * sizeof(cint), 0, TAG_EDGE, comm);
        SCOTCH_Num base = (*vert)[0];
        for (cint v = 0; v <= nv; v++) (*vert)[v] -= base;
    }
    if (rc != MPI_SUCCESS) canopy_err_set(err, CANOPY_ERR_MPI, "PT-SCOTCH: sending the graph slices failed (MPI error %d)", rc);
    *nedge = (cint)ne;
    return comm_agree(comm, err);
}

/*
 * Our PT-SCOTCH strategy: PT-SCOTCH's own parallel separators (its "quality" strategy: multilevel
 * on the distributed graph down to max(2000 P, 10000) vertices, then folded and solved on one
 * process, refined by band FM on the way up), and once a part lives on one process, our
 * sequential strategy (src/order.c: compression, separators coarsened to 200 vertices with 20%
 * imbalance, halo minimum fill leaves of 120) instead of PT-SCOTCH's default (leaves of 240,
 * 10-40% more flops on the small test matrices).
 */
static bool strategy_string(char *buf, size_t len, int nranks)
{
    char seq[2048];
    int m = order_strategy_string(seq, sizeof seq, ORDER_LEAF_SIZE, ORDER_LEAF_METHOD);
    if (m < 0 || (size_t)m >= sizeof seq) return false;
    int64_t vert = 2000 * (int64_t)nranks;
    if (vert < 10000) vert = 10000;
    if (vert > 1000000) vert = 1000000;
    int k = snprintf(buf, len,
                     "n{sep=/(0=0)?m{vert=%" PRId64 ",asc=b{width=3,strat=q{strat=f}},low=q{strat=h},"
                     "seq=q{strat=m{vert=120,low=h{pass=10},asc=b{width=3,bnd=f{bal=0.2},org=h{pass=10}f{bal=0.2}}}}};,"
                     "ole=q{strat=%s},ose=s,osq=%s}",
                     vert, seq, seq);
    return k > 0 && (size_t)k < len;
}

canopy_status order_ptscotch(MPI_Comm comm, const canopy_csc *G, cint *perm, cint *iperm, canopy_err *err)
{
    int rank = 0, nranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    /* rank 0 says whether it has a graph, and its order */
    int64_t head[2] = {0, 0};
    if (rank == 0) {
        bool ok = G && perm && iperm && G->n >= 0 && (G->n == 0 || G->colptr);
        if (!ok) canopy_err_set(err, CANOPY_ERR_ARGUMENT, "order_ptscotch: NULL or invalid argument on rank 0");
        head[0] = ok;
        head[1] = ok ? (int64_t)G->n : 0;
    }
    if (comm_agree(comm, err) < 0) return err->status;
    MPI_Bcast(head, 2, MPI_INT64_T, 0, comm);
    cint n = (cint)head[1];
    /* nothing to dissect: SCOTCH dislikes empty graphs, and the sequential path skips them too */
    int64_t edges = rank == 0 && n > 0 ? (int64_t)G->colptr[n] : 0;
    MPI_Bcast(&edges, 1, MPI_INT64_T, 0, comm);
    if (n <= 1 || edges == 0) {
        if (rank == 0)
            for (cint k = 0; k < n; k++) perm[k] = iperm[k] = k;
        return CANOPY_SUCCESS;
    }

    SCOTCH_Num *vert = NULL, *edge = NULL;
    cint nedge = 0;
    if (scatter_graph(comm, rank, nranks, G, n, &vert, &edge, &nedge, err) < 0) {
        canopy_free(vert);
        canopy_free(edge);
        return err->status;
    }
    cint nv = range_start(n, nranks, rank + 1) - range_start(n, nranks, rank);

    SCOTCH_Dgraph dg;
    SCOTCH_Strat strat;
    SCOTCH_Dordering dord;
    int have_graph = 0, have_strat = 0, have_dord = 0;
    if (SCOTCH_dgraphInit(&dg, comm) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphInit failed");
    else
        have_graph = 1;
    if (have_graph && SCOTCH_dgraphBuild(&dg, 0, nv, nv, vert, NULL, NULL, NULL, nedge, nedge, edge, NULL, NULL) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphBuild failed on %" CINT_FMT " vertices", nv);
    if (comm_agree(comm, err) < 0) goto done;

    if (SCOTCH_stratInit(&strat) != 0) {
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_stratInit failed");
    } else {
        have_strat = 1;
        /* expert override, for experiments with PT-SCOTCH's strategy grammar */
        const char *user = getenv("CANOPY_PTSCOTCH_STRATEGY");
        char text[4096];
        int rc = user && *user ? SCOTCH_stratDgraphOrder(&strat, user)
                 : strategy_string(text, sizeof text, nranks) ? SCOTCH_stratDgraphOrder(&strat, text)
                                                              : 1;
        if (rc != 0)
            canopy_err_set(err, CANOPY_ERR_ORDERING, "PT-SCOTCH refused the ordering strategy%s%s",
                           user && *user ? " in CANOPY_PTSCOTCH_STRATEGY: " : "", user && *user ? user : "");
    }
    if (comm_agree(comm, err) < 0) goto done;

    if (SCOTCH_dgraphOrderInit(&dg, &dord) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderInit failed");
    else
        have_dord = 1;
    if (comm_agree(comm, err) < 0) goto done;
    if (SCOTCH_dgraphOrderCompute(&dg, &dord, &strat) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderCompute failed on %" CINT_FMT " vertices", n);
    if (comm_agree(comm, err) < 0) goto done;

    /* gathered on rank 0: SCOTCH's permtab (old -> new) is our iperm, peritab our perm */
    SCOTCH_Ordering cord;
    int have_cord = 0;
    if (rank == 0) {
        if (SCOTCH_dgraphCorderInit(&dg, &cord, (SCOTCH_Num *)iperm, (SCOTCH_Num *)perm, NULL, NULL, NULL) != 0)
            canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphCorderInit failed");
        else
            have_cord = 1;
    }
    if (comm_agree(comm, err) < 0) goto done;
    if (SCOTCH_dgraphOrderGather(&dg, &dord, rank == 0 ? &cord : NULL) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderGather failed");
    if (have_cord) SCOTCH_dgraphCorderExit(&dg, &cord);
    if (rank == 0 && err->status == CANOPY_SUCCESS) {
        /* trust, but check: what comes back must be a permutation and its inverse */
        cint bad = -1;
        for (cint k = 0; k < n && bad < 0; k++)
            if (perm[k] < 0 || perm[k] >= n || iperm[perm[k]] != k) bad = k;
        if (bad >= 0)
            canopy_err_set(err, CANOPY_ERR_INTERNAL, "PT-SCOTCH returned an invalid ordering (position %" CINT_FMT ")", bad);
    }
    comm_agree(comm, err);

done:
    if (have_dord) SCOTCH_dgraphOrderExit(&dg, &dord);
    if (have_strat) SCOTCH_stratExit(&strat);
    if (have_graph) SCOTCH_dgraphExit(&dg);
    canopy_free(vert);
    canopy_free(edge);
    return err->status;
}

#else /* !CANOPY_HAVE_PTSCOTCH */

canopy_status order_ptscotch(MPI_Comm comm, const canopy_csc *G, cint *perm, cint *iperm, canopy_err *err)
{
    (void)G;
    (void)perm;
    (void)iperm;
    canopy_err_set(err, CANOPY_ERR_ARGUMENT, "ordering=ptscotch: %s", ORDER_NO_PTSCOTCH);
    return comm_agree(comm, err);
}

#endif
