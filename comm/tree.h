/*
 * Communication trees for restricted collectives: a broadcast from one rank to a subset of the
 * ranks, or a reduction from that subset onto one rank, routed along a flat, binary or shifted
 * binary tree. This file owns only the tree shape, computed locally and deterministically by every
 * member from the same inputs; it does not send anything (the communication thread will).
 */
#ifndef CANOPY_TREE_H
#define CANOPY_TREE_H

#include <mpi.h>
#include "base/common.h"

/**
 * One member's view of a tree. Children of the binary shapes are stored inline; the root of a flat
 * tree has p-1 children, which are read back from the member list with comm_tree_child() so that
 * no shape needs an allocation whatever p is.
 */
typedef struct comm_tree {
    canopy_tree shape;
    int p;            /**< number of members */
    int shift;        /**< rotation applied to the non-root members (0 unless shifted) */
    int root;         /**< rank of the root (members[0]) */
    int me;           /**< rank this view was built for */
    int pos;          /**< position of me in the tree order (0 = root) */
    int parent;       /**< rank of the parent, -1 for the root */
    int nchildren;    /**< number of children of me */
    int kids[2];      /**< children of me for the binary shapes (unused for flat) */
    int level;        /**< edges from the root to me */
    int depth;        /**< edges on the longest root-to-leaf path (same on every member) */
} comm_tree;

/**
 * Build the tree of a restricted collective as seen by rank @p me.
 *
 * @param[in]  members     the p ranks taking part, root first, any order after it, no duplicates
 * @param[in]  p           number of members (>= 1)
 * @param[in]  me          the rank whose view is built; must be one of the members
 * @param[in]  shape       CANOPY_TREE_FLAT, CANOPY_TREE_BINARY or CANOPY_TREE_SHIFTED
 * @param[in]  shift_seed  for CANOPY_TREE_SHIFTED, any value the members agree on (a tag, a
 *                         supernode number); ignored by the other shapes
 * @param[out] out         the view
 * @param[out] err         message on failure (may be NULL)
 * @return CANOPY_SUCCESS; CANOPY_ERR_ARGUMENT for a NULL pointer, p < 1, a negative or duplicate
 *         member, @p me not a member or an unknown shape; CANOPY_ERR_NOMEM when the duplicate check
 *         of a large member list cannot get its scratch copy.
 */
canopy_status comm_tree_build(const int *members, int p, int me, canopy_tree shape, unsigned shift_seed,
                              comm_tree *out, canopy_err *err);

/**
 * The @p k-th child (0 <= k < t->nchildren) of the member @p t was built for; @p members must be
 * the list given to comm_tree_build. Returns -1 when @p k is out of range.
 */
int comm_tree_child(const comm_tree *t, const int *members, int k);

/** The rank at position @p pos (0 <= pos < t->p) of the tree order, -1 when out of range. */
int comm_tree_rank_at(const comm_tree *t, const int *members, int pos);

/** True when the member forwards data: it has a parent and at least one child. */
static inline bool comm_tree_is_inner(const comm_tree *t)
{
    return t->parent >= 0 && t->nchildren > 0;
}

/** What a tree operation moves: data down from the root, or a sum of doubles up to it. */
typedef enum comm_tree_opkind { COMM_TREE_BCAST = 0, COMM_TREE_REDUCE_SUM = 1 } comm_tree_opkind;

/** A restricted broadcast or reduction in flight on one member. */
typedef struct comm_tree_op {
    comm_tree t;
    comm_tree_opkind kind;
    MPI_Comm comm;
    int tag;
    double *buf;
    int count;
    int stage;           /* 0: receiving, 1: sending, 2: done */
    int *kids;           /* child ranks (any shape) */
    MPI_Request *req;    /* one per child, plus one for the parent */
    double *scratch;     /* reduction: one contribution per child */
} comm_tree_op;

/**
 * Start a broadcast of @p buf (count doubles) from the root to every member, or a sum of every
 * member's @p buf into the root's, along tree @p t (built from @p members, ranks of @p comm).
 * Messages use @p tag, which must not be shared with another operation in flight on @p comm
 * between the same ranks. @p buf must stay untouched until the operation completes.
 * @return CANOPY_SUCCESS, CANOPY_ERR_ARGUMENT, CANOPY_ERR_NOMEM or CANOPY_ERR_MPI.
 */
canopy_status comm_tree_op_start(comm_tree_op *op, const comm_tree *t, const int *members, MPI_Comm comm,
                                 int tag, comm_tree_opkind kind, double *buf, int count, canopy_err *err);

/**
 * comm_tree_op_start in two steps: init allocates (nothing is sent; the only step that can run out
 * of memory), post starts the messages. Lets a caller allocate every operation, agree that all
 * ranks could, and only then communicate.
 */
canopy_status comm_tree_op_init(comm_tree_op *op, const comm_tree *t, const int *members, comm_tree_opkind kind,
                                int count, canopy_err *err);
canopy_status comm_tree_op_post(comm_tree_op *op, MPI_Comm comm, int tag, double *buf, canopy_err *err);

/** Progress @p op without blocking; @p done becomes true once this member's part is finished. */
canopy_status comm_tree_op_test(comm_tree_op *op, bool *done, canopy_err *err);

/** Progress @p op until this member's part is finished. */
canopy_status comm_tree_op_wait(comm_tree_op *op, canopy_err *err);

/** Release what start allocated; the operation must be finished (or never started). */
void comm_tree_op_free(comm_tree_op *op);

#endif
