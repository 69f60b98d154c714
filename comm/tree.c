/*
 * Tree shapes for restricted collectives (see tree.h). Pure arithmetic on member positions: no MPI,
 * no shared state, so every member derives the same tree from the same (members, shape, seed).
 *
 * The three shapes follow papers/pselinv-tree-collectives.txt §3-4 (also used for the triangular
 * solves of papers/sptrsv-3d-comm-trees.txt §3.3):
 *  - flat: the root talks to every member itself; one hop, but p-1 messages leave the root.
 *  - binary: a heap over the member positions, so the root sends two messages and data reaches
 *    everyone in floor(log2 p) hops.
 *  - shifted binary: the same heap after rotating the non-root members. With plain binary trees
 *    and many collectives over overlapping member sets, the same (early) positions always
 *    forward, which concentrates traffic on a few ranks; a rotation that differs between
 *    collectives moves the forwarding role around while keeping neighbours in the caller's order
 *    next to each other (a full random permutation would lose that locality).
 */
#include "tree.h"

#include <stdlib.h>

/* Members up to this count are checked for duplicates in a stack copy; above, a heap copy. */
#define COMM_TREE_STACK 64

static int comm_int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/*
 * Shift of a shifted tree. The seed is mixed (the splitmix64 finaliser) before the modulo so that
 * seeds the caller derives with a regular stride, e.g. supernode numbers stepping by p-1, still
 * give different rotations.
 */
static int comm_tree_shift(unsigned seed, int p)
{
    if (p <= 2) return 0;
    uint64_t z = (uint64_t)seed + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (int)(z % (uint64_t)(p - 1));
}

/* floor(log2 x) for x >= 1 */
static int comm_ilog2(int x)
{
    int l = 0;
    while (x > 1) {
        x >>= 1;
        l++;
    }
    return l;
}

/* Tree position of the member at index i of the list (index 0, the root, stays at position 0). */
static int comm_tree_pos_of_index(const comm_tree *t, int i)
{
    if (i == 0) return 0;
    int m = t->p - 1;
    return 1 + ((i - 1 - t->shift) % m + m) % m;
}

/* List index of the member at tree position pos: the inverse of comm_tree_pos_of_index. */
static int comm_tree_index_of_pos(const comm_tree *t, int pos)
{
    if (pos == 0) return 0;
    return 1 + (pos - 1 + t->shift) % (t->p - 1);
}

int comm_tree_rank_at(const comm_tree *t, const int *members, int pos)
{
    if (t == NULL || members == NULL || pos < 0 || pos >= t->p) return -1;
    return members[comm_tree_index_of_pos(t, pos)];
}

int comm_tree_child(const comm_tree *t, const int *members, int k)
{
    if (t == NULL || members == NULL || k < 0 || k >= t->nchildren) return -1;
    if (t->shape == CANOPY_TREE_FLAT) return members[1 + k];
    return t->kids[k];
}

/* Rejects negative and duplicate ranks: sorts a copy, so O(p log p) rather than O(p^2). */
static canopy_status comm_tree_check_members(const int *members, int p, canopy_err *err)
{
    for (int i = 0; i < p; i++)
        if (members[i] < 0)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "tree member %d has negative rank %d", i,
                                  members[i]);
    int stack[COMM_TREE_STACK];
    int *copy = stack;
    if (p > COMM_TREE_STACK) {
        copy = canopy_alloc((size_t)p, sizeof *copy, "tree member check", err);
        if (copy == NULL) return err != NULL ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int i = 0; i < p; i++) copy[i] = members[i];
    qsort(copy, (size_t)p, sizeof *copy, comm_int_cmp);
    int dup = -1;
    for (int i = 1; i < p && dup < 0; i++)
        if (copy[i] == copy[i - 1]) dup = copy[i];
    if (copy != stack) canopy_free(copy);
    if (dup >= 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "rank %d appears more than once among the %d tree members",
                              dup, p);
    return CANOPY_SUCCESS;
}

canopy_status comm_tree_build(const int *members, int p, int me, canopy_tree shape, unsigned shift_seed,
                              comm_tree *out, canopy_err *err)
{
    if (members == NULL || out == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tree_build: NULL %s",
                              members == NULL ? "member list" : "output");
    if (p < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "a tree needs at least one member, got %d", p);
    if (shape != CANOPY_TREE_FLAT && shape != CANOPY_TREE_BINARY && shape != CANOPY_TREE_SHIFTED)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown tree shape %d", (int)shape);
    canopy_status st = comm_tree_check_members(members, p, err);
    if (st != CANOPY_SUCCESS) return st;
    int idx = -1;
    for (int i = 0; i < p && idx < 0; i++)
        if (members[i] == me) idx = i;
    if (idx < 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "rank %d is not among the %d members of the tree rooted at %d",
                              me, p, members[0]);

    comm_tree t = {.shape = shape, .p = p, .root = members[0], .me = me, .parent = -1, .kids = {-1, -1}};
    if (shape == CANOPY_TREE_FLAT) {
        t.pos = idx;
        t.depth = p > 1 ? 1 : 0;
        t.level = idx > 0 ? 1 : 0;
        if (idx > 0)
            t.parent = t.root;
        else
            t.nchildren = p - 1;
        *out = t;
        return CANOPY_SUCCESS;
    }
    /*
     * Heap numbering over tree positions: children of position q are 2q+1 and 2q+2, so the root
     * has at most two children and the last level is filled from the left; the height is
     * floor(log2 p), i.e. ceil(log2(p+1)) levels counting the root.
     */
    t.shift = shape == CANOPY_TREE_SHIFTED ? comm_tree_shift(shift_seed, p) : 0;
    t.pos = comm_tree_pos_of_index(&t, idx);
    t.depth = comm_ilog2(p);
    t.level = comm_ilog2(t.pos + 1);
    if (t.pos > 0) t.parent = members[comm_tree_index_of_pos(&t, (t.pos - 1) / 2)];
    for (int c = 1; c <= 2; c++) {
        /* 2*pos+c cannot overflow: pos < p <= INT_MAX, checked in a wider type anyway */
        int64_t q = 2 * (int64_t)t.pos + c;
        if (q < p) t.kids[t.nchildren++] = members[comm_tree_index_of_pos(&t, (int)q)];
    }
    *out = t;
    return CANOPY_SUCCESS;
}

/*
 * Restricted collectives over a tree, driven by test calls so that the communication thread can
 * keep many of them in flight at once (pipelined over supernodes) instead of blocking in one.
 */
canopy_status comm_tree_op_init(comm_tree_op *op, const comm_tree *t, const int *members, comm_tree_opkind kind,
                                int count, canopy_err *err)
{
    if (op == NULL || t == NULL || members == NULL || count < 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tree_op_init: bad argument");
    if (kind != COMM_TREE_BCAST && kind != COMM_TREE_REDUCE_SUM)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "unknown tree operation %d", (int)kind);
    *op = (comm_tree_op){.t = *t, .kind = kind, .count = count, .stage = -1};
    int nk = t->nchildren;
    op->kids = canopy_alloc((size_t)nk + 1, sizeof *op->kids, "tree children", err);
    op->req = canopy_alloc((size_t)nk + 1, sizeof *op->req, "tree requests", err);
    size_t nscratch = 0;
    if (kind == COMM_TREE_REDUCE_SUM && !canopy_mul_ok((size_t)nk, (size_t)count, &nscratch)) {
        comm_tree_op_free(op);
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "reduction buffer of %d x %d doubles", nk, count);
    }
    if (nscratch > 0) op->scratch = canopy_alloc(nscratch, sizeof *op->scratch, "tree reduction buffer", err);
    if (op->kids == NULL || op->req == NULL || (nscratch > 0 && op->scratch == NULL)) {
        comm_tree_op_free(op);
        return err != NULL ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int k = 0; k <= nk; k++) op->req[k] = MPI_REQUEST_NULL;
    for (int k = 0; k < nk; k++) op->kids[k] = comm_tree_child(t, members, k);
    return CANOPY_SUCCESS;
}

canopy_status comm_tree_op_post(comm_tree_op *op, MPI_Comm comm, int tag, double *buf, canopy_err *err)
{
    if (op == NULL || op->stage != -1 || (buf == NULL && op->count > 0))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tree_op_post: operation not initialized, or no buffer");
    op->comm = comm;
    op->tag = tag;
    op->buf = buf;
    op->stage = 0;
    int nk = op->t.nchildren, count = op->count, rc = MPI_SUCCESS;
    if (op->kind == COMM_TREE_BCAST) {
        if (op->t.parent < 0) {
            for (int k = 0; k < nk && rc == MPI_SUCCESS; k++)
                rc = MPI_Isend(buf, count, MPI_DOUBLE, op->kids[k], tag, comm, &op->req[k]);
            op->stage = 1;
        } else {
            rc = MPI_Irecv(buf, count, MPI_DOUBLE, op->t.parent, tag, comm, &op->req[nk]);
        }
    } else {
        /* receives from every child are posted at once: children finish in any order */
        for (int k = 0; k < nk && rc == MPI_SUCCESS; k++)
            rc = MPI_Irecv(op->scratch + (size_t)k * (size_t)count, count, MPI_DOUBLE, op->kids[k], tag, comm,
                           &op->req[k]);
    }
    if (rc != MPI_SUCCESS) return canopy_err_set(err, CANOPY_ERR_MPI, "posting a tree message failed (tag %d)", tag);
    return CANOPY_SUCCESS;
}

/*
 * Restricted collectives over a tree, driven by test calls so that the communication thread can
 * keep many of them in flight at once (pipelined over supernodes) instead of blocking in one.
 */
canopy_status comm_tree_op_start(comm_tree_op *op, const comm_tree *t, const int *members, MPI_Comm comm,
                                 int tag, comm_tree_opkind kind, double *buf, int count, canopy_err *err)
{
    if (op == NULL || t == NULL || members == NULL || (buf == NULL && count > 0) || count < 0)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tree_op_start: bad argument");
    canopy_status st = comm_tree_op_init(op, t, members, kind, count, err);
    return st == CANOPY_SUCCESS ? comm_tree_op_post(op, comm, tag, buf, err) : st;
}

/* MPI_Testall one request at a time: the same semantics, and it avoids a false stringop-overflow
 * error GCC raises on MPI_STATUSES_IGNORE with MPICH's headers. */
static int test_each(int n, MPI_Request *req, int *flag)
{
    *flag = 1;
    for (int k = 0; k < n; k++) {
        int f = 0, rc = MPI_Test(&req[k], &f, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        if (!f) *flag = 0;
    }
    return MPI_SUCCESS;
}

canopy_status comm_tree_op_test(comm_tree_op *op, bool *done, canopy_err *err)
{
    if (op == NULL || done == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_tree_op_test: NULL argument");
    int nk = op->t.nchildren, flag = 0, rc = MPI_SUCCESS;
    if (op->stage == 0) {
        if (op->kind == COMM_TREE_BCAST) {
            rc = MPI_Test(&op->req[nk], &flag, MPI_STATUS_IGNORE);
            /* forward only once the parent's data is here */
            for (int k = 0; flag && k < nk && rc == MPI_SUCCESS; k++)
                rc = MPI_Isend(op->buf, op->count, MPI_DOUBLE, op->kids[k], op->tag, op->comm, &op->req[k]);
            if (flag) op->stage = 1;
        } else {
            rc = test_each(nk, op->req, &flag);
            if (rc == MPI_SUCCESS && flag) {
                /* children summed in a fixed order: the result does not depend on arrival order */
                for (int k = 0; k < nk; k++)
                    for (int i = 0; i < op->count; i++) op->buf[i] += op->scratch[(size_t)k * (size_t)op->count + i];
                if (op->t.parent >= 0)
                    rc = MPI_Isend(op->buf, op->count, MPI_DOUBLE, op->t.parent, op->tag, op->comm, &op->req[nk]);
                op->stage = 1;
            }
        }
    }
    if (rc == MPI_SUCCESS && op->stage == 1) {
        rc = test_each(nk + 1, op->req, &flag);
        if (rc == MPI_SUCCESS && flag) op->stage = 2;
    }
    if (rc != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "progressing a tree operation failed (tag %d)", op->tag);
    *done = op->stage == 2;
    return CANOPY_SUCCESS;
}

canopy_status comm_tree_op_wait(comm_tree_op *op, canopy_err *err)
{
    bool done = false;
    while (!done) {
        canopy_status st = comm_tree_op_test(op, &done, err);
        if (st != CANOPY_SUCCESS) return st;
    }
    return CANOPY_SUCCESS;
}

void comm_tree_op_free(comm_tree_op *op)
{
    if (op == NULL) return;
    canopy_free(op->kids);
    canopy_free(op->req);
    canopy_free(op->scratch);
    op->kids = NULL;
    op->req = NULL;
    op->scratch = NULL;
}
