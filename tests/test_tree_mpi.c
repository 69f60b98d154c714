/*
 * Restricted broadcasts and sum reductions over every tree shape, many in flight at once, run by
 * tests/test_tree_mpi.sh under mpiexec -n 1..4. Every rank derives the same schedule of
 * collectives (roots, member subsets, seeds) from the communicator size, so no setup is exchanged.
 */
#include "base/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include "comm/tree.h"

#define NOPS 24
#define COUNT 5

static int fail(int rank, const char *what, int op, const char *msg)
{
    fprintf(stderr, "rank %d, collective %d: %s %s\n", rank, op, what, msg != NULL ? msg : "");
    return 1;
}

/* Members of collective c: the root, then a rotation of a subset of the others (c selects both). */
static int members_of(int c, int size, int *members)
{
    int root = (c * 7 + 3) % size, p = 0;
    members[p++] = root;
    for (int j = 1; j < size; j++) {
        int r = (root + j * (c % 2 == 0 ? 1 : size - 1)) % size;
        if (c % 3 != 2 || r % 2 == 0) members[p++] = r; /* every third collective: a subset */
    }
    return p;
}

int main(int argc, char **argv)
{
    int provided, rank, size, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *members = malloc((size_t)size * sizeof *members);
    comm_tree_op ops[NOPS];
    bool active[NOPS] = {false};
    double bufs[NOPS][COUNT];
    canopy_err err = {0};
    static const canopy_tree shapes[3] = {CANOPY_TREE_FLAT, CANOPY_TREE_BINARY, CANOPY_TREE_SHIFTED};
    for (int round = 0; round < 3 && !bad; round++) {
        /* post every collective this rank takes part in, then progress them all together */
        for (int c = 0; c < NOPS && !bad; c++) {
            int p = members_of(c, size, members), me = -1;
            for (int i = 0; i < p; i++)
                if (members[i] == rank) me = i;
            if (me < 0) continue;
            comm_tree t;
            comm_tree_opkind kind = (c / 2) % 2 == 0 ? COMM_TREE_BCAST : COMM_TREE_REDUCE_SUM;
            if (comm_tree_build(members, p, rank, shapes[(c + round) % 3], (unsigned)c, &t, &err) != CANOPY_SUCCESS)
                bad = fail(rank, "build", c, err.msg);
            for (int i = 0; i < COUNT; i++)
                bufs[c][i] = kind == COMM_TREE_REDUCE_SUM ? (rank + 1) * (i + 1)
                                                          : (rank == members[0] ? 1000 * c + i : -1);
            if (!bad && comm_tree_op_start(&ops[c], &t, members, MPI_COMM_WORLD, 100 + c, kind, bufs[c], COUNT,
                                           &err) != CANOPY_SUCCESS)
                bad = fail(rank, "start", c, err.msg);
            active[c] = !bad;
        }
        for (int left = 1; left > 0 && !bad;) {
            left = 0;
            for (int c = NOPS - 1; c >= 0 && !bad; c--) {
                if (!active[c]) continue;
                bool done = false;
                if (comm_tree_op_test(&ops[c], &done, &err) != CANOPY_SUCCESS) bad = fail(rank, "test", c, err.msg);
                left += !done;
            }
        }
        for (int c = 0; c < NOPS && !bad; c++) {
            if (!active[c]) continue;
            int p = members_of(c, size, members);
            long sum = 0;
            for (int i = 0; i < p; i++) sum += members[i] + 1;
            for (int i = 0; i < COUNT; i++) {
                double want = ops[c].kind == COMM_TREE_BCAST ? 1000 * c + i : (double)(sum * (i + 1));
                bool check = ops[c].kind == COMM_TREE_BCAST || rank == members[0];
                if (check && bufs[c][i] != want) bad = fail(rank, "wrong value", c, NULL);
            }
            comm_tree_op_free(&ops[c]);
            active[c] = false;
        }
    }
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !anybad) printf("tree collectives: %d ranks, %d x 3 rounds OK\n", size, NOPS);
    free(members);
    MPI_Finalize();
    return anybad ? EXIT_FAILURE : EXIT_SUCCESS;
}
