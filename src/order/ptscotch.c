/*
 * Parallel nested dissection with PT-SCOTCH (ordering=ptscotch): every rank of the communicator
 * takes a contiguous range of vertices of the graph of A + A^T, PT-SCOTCH dissects the
 * distributed graph on all of them, and the ordering is gathered on rank 0, which goes on with
 * the symbolic factorization. A matrix given centralized has its graph built on rank 0 and sent
 * out in slices (order_ptscotch); a distributed one builds every slice where its columns live
 * (order_ptscotch_slices, from distm_graph_slice).
 *
 * The messages go through comm/share.h; the calls into PT-SCOTCH are PT-SCOTCH's own MPI.
 *
 * Without PT-SCOTCH (configure found none built for this MPI) the option is refused when it is
 * set, and order_ptscotch() says so if it is reached anyway.
 */
#include "order/order.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"

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

/* first vertex of rank r's range: the vertices split as evenly as the count allows */
static cint range_start(cint n, int nranks, int r) { return (cint)((int64_t)n * r / nranks); }

/*
 * Rank 0 sends each rank its slice of G (column pointers rebased to 0, row indices global);
 * every rank ends with its own copy in *vert / *edge. Collective; the status is agreed.
 */
static canopy_status scatter_graph(MPI_Comm comm, int rank, int nranks, const canopy_csc *G, cint n, SCOTCH_Num **vert,
                                   SCOTCH_Num **edge, cint *nedge, canopy_err *err)
{
    cint lo = range_start(n, nranks, rank), nv = range_start(n, nranks, rank + 1) - lo;
    int64_t *cnt = NULL, *vc = NULL, *vd = NULL, *ec = NULL, *ed = NULL, ne = 0;
    *vert = NULL;
    *edge = NULL;
    if (rank == 0) {
        cnt = canopy_alloc(5 * (size_t)nranks, sizeof(int64_t), "PT-SCOTCH graph slices", err);
        if (cnt) {
            vc = cnt + nranks;
            vd = vc + nranks;
            ec = vd + nranks;
            ed = ec + nranks;
            for (int r = 0; r < nranks; r++) {
                cint rlo = range_start(n, nranks, r), rhi = range_start(n, nranks, r + 1);
                cnt[r] = (int64_t)(G->colptr[rhi] - G->colptr[rlo]);
                vc[r] = ((int64_t)(rhi - rlo) + 1) * (int64_t)sizeof(cint);
                vd[r] = (int64_t)rlo * (int64_t)sizeof(cint);
                ec[r] = cnt[r] * (int64_t)sizeof(cint);
                ed[r] = (int64_t)G->colptr[rlo] * (int64_t)sizeof(cint);
            }
        }
    }
    if (comm_agree(comm, err) < 0) goto out;
    /* each rank's edge count (8-byte elements, one per rank) */
    {
        int64_t *one = NULL, *disp = NULL;
        if (rank == 0) {
            one = canopy_alloc(2 * (size_t)nranks, sizeof(int64_t), "PT-SCOTCH graph slices", err);
            if (one) {
                disp = one + nranks;
                for (int r = 0; r < nranks; r++) {
                    one[r] = 1;
                    disp[r] = r;
                }
            }
        }
        if (comm_agree(comm, err) >= 0) comm_share_scatter(comm, cnt, one, disp, &ne, 1, err);
        canopy_free(one);
    }
    if (comm_agree(comm, err) < 0) goto out;
    *vert = canopy_alloc((size_t)nv + 1, sizeof(SCOTCH_Num), "PT-SCOTCH graph slice", err);
    *edge = canopy_alloc((size_t)ne + 1, sizeof(SCOTCH_Num), "PT-SCOTCH graph slice", err);
    if (comm_agree(comm, err) < 0) goto out;
    if (comm_share_scatter_bytes(comm, rank == 0 ? G->colptr : NULL, vc, vd, *vert, ((int64_t)nv + 1) * (int64_t)sizeof(cint),
                                 err) == CANOPY_SUCCESS)
        comm_share_scatter_bytes(comm, rank == 0 ? G->rowind : NULL, ec, ed, *edge, ne * (int64_t)sizeof(cint), err);
    SCOTCH_Num base = (*vert)[0];
    for (cint v = 0; v <= nv; v++) (*vert)[v] -= base;
    *nedge = (cint)ne;
out:
    canopy_free(cnt);
    return comm_agree(comm, err);
}

/*
 * Our PT-SCOTCH strategy: PT-SCOTCH's own parallel separators (its "quality" strategy: multilevel
 * on the distributed graph down to max(2000 P, 10000) vertices, then folded and solved on one
 * process, refined by band FM on the way up), and once a part lives on one process, our
 * sequential strategy (src/order/order.c: compression, separators coarsened to 200 vertices with 20%
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

static canopy_status dissect(MPI_Comm comm, int rank, int nranks, cint n, SCOTCH_Num *vert, SCOTCH_Num *edge,
                             cint nedge, cint *perm, cint *iperm, canopy_err *err);

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
    if (rank == 0 && head[0] && head[1] > 0) head[0] = 1 + (G->colptr[G->n] > 0); /* 2: there are edges */
    if (comm_agree(comm, err) < 0 || comm_share_bcast_bytes(comm, head, sizeof head, err) != CANOPY_SUCCESS)
        return comm_agree(comm, err);
    cint n = (cint)head[1];
    /* nothing to dissect: SCOTCH dislikes empty graphs, and the sequential path skips them too */
    int64_t edges = head[0] == 2;
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
    dissect(comm, rank, nranks, n, vert, edge, nedge, perm, iperm, err);
    canopy_free(vert);
    canopy_free(edge);
    return err->status;
}

/*
 * PT-SCOTCH's nested dissection of the distributed graph whose slice here is vert / edge
 * (vertices range_start(n, nranks, rank) on, borrowed), the ordering gathered on
 * rank 0 into perm / iperm. Collective; the status is agreed.
 */
static canopy_status dissect(MPI_Comm comm, int rank, int nranks, cint n, SCOTCH_Num *vert, SCOTCH_Num *edge,
                             cint nedge, cint *perm, cint *iperm, canopy_err *err)
{
    cint nv = range_start(n, nranks, rank + 1) - range_start(n, nranks, rank);

    /*
     * A private context, as for the sequential ordering (src/order/order.c): one thread, the
     * deterministic option and a generator reset to a fixed seed. With PT-SCOTCH's default
     * context its nested dissection runs the two halves of a separator on two threads, each
     * with MPI calls on its own sub-communicator: under fault-injection loops this hung now and
     * then (one rank waiting in SCOTCH's thread launch while the other had finished), and the
     * ordering changed from run to run.
     */
    SCOTCH_Dgraph dg0, dgraph, *dg = &dgraph;
    SCOTCH_Context ctx;
    SCOTCH_Strat strat;
    SCOTCH_Dordering dord;
    int have_dg0 = 0, have_ctx = 0, have_graph = 0, have_strat = 0, have_dord = 0;
    if (SCOTCH_dgraphInit(&dg0, comm) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphInit failed");
    else
        have_dg0 = 1;
    if (have_dg0 && SCOTCH_dgraphBuild(&dg0, 0, nv, nv, vert, NULL, NULL, NULL, nedge, nedge, edge, NULL, NULL) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphBuild failed on %" CINT_FMT " vertices", nv);
    if (comm_agree(comm, err) < 0) goto done;
    if (SCOTCH_contextInit(&ctx) == 0) {
        have_ctx = 1;
        SCOTCH_randomSeed(12345);
        SCOTCH_randomReset();
        bool ok = SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMDETERMINISTIC, 1) == 0 &&
                  SCOTCH_contextOptionSetNum(&ctx, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) == 0 &&
                  SCOTCH_contextRandomClone(&ctx) == 0;
        if (ok) {
            SCOTCH_contextRandomSeed(&ctx, 12345);
            SCOTCH_contextRandomReset(&ctx);
            ok = SCOTCH_contextThreadSpawn(&ctx, 1, NULL) == 0 && SCOTCH_dgraphInit(&dgraph, comm) == 0;
        }
        if (ok) {
            have_graph = 1;
            ok = SCOTCH_contextBindDgraph(&ctx, &dg0, &dgraph) == 0;
        }
        if (!ok) canopy_err_set(err, CANOPY_ERR_ORDERING, "cannot set up a PT-SCOTCH context");
    } else {
        canopy_err_set(err, CANOPY_ERR_ORDERING, "cannot set up a PT-SCOTCH context");
    }
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

    if (SCOTCH_dgraphOrderInit(dg, &dord) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderInit failed");
    else
        have_dord = 1;
    if (comm_agree(comm, err) < 0) goto done;
    if (SCOTCH_dgraphOrderCompute(dg, &dord, &strat) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderCompute failed on %" CINT_FMT " vertices", n);
    if (comm_agree(comm, err) < 0) goto done;

    /* gathered on rank 0: SCOTCH's permtab (old -> new) is our iperm, peritab our perm */
    SCOTCH_Ordering cord;
    int have_cord = 0;
    if (rank == 0) {
        if (SCOTCH_dgraphCorderInit(dg, &cord, (SCOTCH_Num *)iperm, (SCOTCH_Num *)perm, NULL, NULL, NULL) != 0)
            canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphCorderInit failed");
        else
            have_cord = 1;
    }
    if (comm_agree(comm, err) < 0) goto done;
    if (SCOTCH_dgraphOrderGather(dg, &dord, rank == 0 ? &cord : NULL) != 0)
        canopy_err_set(err, CANOPY_ERR_ORDERING, "SCOTCH_dgraphOrderGather failed");
    if (have_cord) SCOTCH_dgraphCorderExit(dg, &cord);
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
    if (have_dord) SCOTCH_dgraphOrderExit(dg, &dord);
    if (have_strat) SCOTCH_stratExit(&strat);
    if (have_graph) SCOTCH_dgraphExit(&dgraph); /* before its context */
    if (have_ctx) SCOTCH_contextExit(&ctx);
    if (have_dg0) SCOTCH_dgraphExit(&dg0);
    return err->status;
}

canopy_status order_ptscotch_slices(MPI_Comm comm, cint n, cint *vert, cint *edge, cint nedge, cint *perm, cint *iperm,
                                    canopy_err *err)
{
    int rank = 0, nranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int64_t edges = nedge, all = 0;
    if (rank == 0 && (perm == NULL || iperm == NULL))
        canopy_err_set(err, CANOPY_ERR_ARGUMENT, "order_ptscotch_slices: NULL permutation on rank 0");
    MPI_Allreduce(&edges, &all, 1, MPI_INT64_T, MPI_SUM, comm);
    if (comm_agree(comm, err) < 0 || n <= 1 || all == 0) {
        /* nothing to dissect (as in order_ptscotch) */
        if (err->status == CANOPY_SUCCESS && rank == 0)
            for (cint k = 0; k < n; k++) perm[k] = iperm[k] = k;
        return err->status;
    }
    return dissect(comm, rank, nranks, n, vert, edge, nedge, perm, iperm, err);
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

canopy_status order_ptscotch_slices(MPI_Comm comm, cint n, cint *vert, cint *edge, cint nedge, cint *perm, cint *iperm,
                                    canopy_err *err)
{
    (void)n;
    (void)nedge;
    (void)perm;
    (void)iperm;
    (void)vert;
    (void)edge;
    canopy_err_set(err, CANOPY_ERR_ARGUMENT, "ordering=ptscotch: %s", ORDER_NO_PTSCOTCH);
    return comm_agree(comm, err);
}

#endif
