/*
 * Per-peer communication statistics (see peerstats.h): atomic counters, summaries over ranks,
 * gathering of the volume matrix on rank 0, SVG/PNG heat maps. The collectives check their
 * arguments locally first and agree on the outcome (comm/agree.c) before moving any data, so a
 * rank with bad arguments makes every rank return instead of leaving the others in a collective.
 */
#include "peerstats.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "agree.h"
#include "numa/probe.h"

/* ---- counters ---------------------------------------------------------------------------- */

canopy_status comm_peerstats_init(comm_peerstats *ps, int nranks, canopy_err *err)
{
    if (ps == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_peerstats_init: NULL statistics");
    memset(ps, 0, sizeof *ps);
    if (nranks < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "per-peer statistics need at least one rank, got %d", nranks);
    /* one block for the four arrays: one allocation to check, one to free */
    atomic_llong *all = canopy_alloc(4 * (size_t)nranks, sizeof *all, "per-peer statistics", err);
    if (all == NULL) return err != NULL ? err->status : CANOPY_ERR_NOMEM;
    for (size_t i = 0; i < 4 * (size_t)nranks; i++) atomic_init(&all[i], 0);
    ps->nranks = nranks;
    ps->msgs_sent = all;
    ps->bytes_sent = all + nranks;
    ps->msgs_recv = all + 2 * (size_t)nranks;
    ps->bytes_recv = all + 3 * (size_t)nranks;
    return CANOPY_SUCCESS;
}

void comm_peerstats_reset(comm_peerstats *ps)
{
    if (ps == NULL || ps->msgs_sent == NULL) return;
    for (size_t i = 0; i < 4 * (size_t)ps->nranks; i++) atomic_store_explicit(&ps->msgs_sent[i], 0, memory_order_relaxed);
}

void comm_peerstats_free(comm_peerstats *ps)
{
    if (ps == NULL) return;
    canopy_free(ps->msgs_sent); /* the base of the single block */
    memset(ps, 0, sizeof *ps);
}

/*
 * Relaxed order is enough: the counters publish nothing, and they are read after the traffic is
 * over, past a synchronisation (thread join, MPI collective) that orders the adds before the read.
 * Atomic signed arithmetic wraps silently (C11 7.17.7.5), so even absurd totals are no UB.
 */
static bool peerstats_add(comm_peerstats *ps, atomic_llong *msgs, atomic_llong *bytes, int peer, int64_t nbytes)
{
    if (ps == NULL || msgs == NULL || peer < 0 || peer >= ps->nranks || nbytes < 0) return false;
    atomic_fetch_add_explicit(&msgs[peer], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes[peer], (long long)nbytes, memory_order_relaxed);
    return true;
}

bool comm_peerstats_sent(comm_peerstats *ps, int peer, int64_t bytes)
{
    return ps != NULL && peerstats_add(ps, ps->msgs_sent, ps->bytes_sent, peer, bytes);
}

bool comm_peerstats_recv(comm_peerstats *ps, int peer, int64_t bytes)
{
    return ps != NULL && peerstats_add(ps, ps->msgs_recv, ps->bytes_recv, peer, bytes);
}

/* ---- summaries --------------------------------------------------------------------------- */

/*
 * A key whose unsigned order is the numeric order of (non-NaN) doubles: flip every bit of
 * negatives, only the sign bit of the others. -0.0 sorts just below +0.0, which changes no value.
 */
static uint64_t order_key(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

static double key_value(uint64_t k)
{
    uint64_t u = (k >> 63) ? k & ~(UINT64_C(1) << 63) : ~k;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/*
 * The k-th smallest (0-based) of v[0], v[stride], ...: the least key K with more than k values at
 * or below it, found by bisection over the 64-bit keys, so at most 64 counting passes and no
 * copy of the values (the summary stays allocation-free whatever the number of ranks).
 */
static double kth_smallest(const double *v, int n, size_t stride, int k)
{
    uint64_t lo = 0, hi = UINT64_MAX;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int at_or_below = 0;
        for (int i = 0; i < n; i++) at_or_below += order_key(v[(size_t)i * stride]) <= mid;
        if (at_or_below > k) hi = mid;
        else lo = mid + 1;
    }
    return key_value(lo);
}

static void summary_strided(const double *v, int n, size_t stride, comm_summary *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0 || v == NULL) return;
    double lo = v[0], hi = v[0], sum = 0.0;
    for (int i = 0; i < n; i++) {
        double x = v[(size_t)i * stride];
        if (isnan(x)) {
            out->min = out->max = out->median = out->mean = out->stddev = out->total = NAN;
            return;
        }
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
    }
    out->min = lo;
    out->max = hi;
    out->total = sum;
    if (lo == hi) { /* constant: exact, whatever rounding sum / n would do */
        out->median = out->mean = lo;
        out->stddev = 0.0;
        return;
    }
    double mean = sum / n;
    mean = mean < lo ? lo : mean > hi ? hi : mean;
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        double d = v[(size_t)i * stride] - mean;
        ss += d * d;
    }
    out->mean = mean;
    out->stddev = sqrt(ss / n);
    double a = kth_smallest(v, n, stride, (n - 1) / 2);
    /* halves first: a + b could overflow to infinity */
    out->median = n % 2 == 1 ? a : a / 2 + kth_smallest(v, n, stride, n / 2) / 2;
}

void comm_summary_compute(const double *v, int n, comm_summary *out)
{
    if (out == NULL) return;
    summary_strided(v, n, 1, out);
}

/* Copy an agreed failure into the caller's record; the agreed status is returned. */
/* (k + 1) x ranks values that comm_summary_allranks_n gathers on the stack */
#define SUMMARY_STACK 128

static canopy_status agreed_failure(const canopy_err *local, canopy_err *err)
{
    return canopy_err_set(err, local->status, "%s", local->msg);
}

canopy_status comm_summary_allranks(MPI_Comm comm, double mine, comm_summary *out, canopy_err *err)
{
    return comm_summary_allranks_n(comm, &mine, 1, out, NULL, err);
}

canopy_status comm_summary_allranks_n(MPI_Comm comm, const double *mine, int k, comm_summary *out, double *first,
                                      canopy_err *err)
{
    if (out != NULL && k > 0) memset(out, 0, (size_t)k * sizeof *out);
    if (first != NULL && k > 0) memset(first, 0, (size_t)k * sizeof *first);
    if (comm == MPI_COMM_NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_summary_allranks: MPI_COMM_NULL");
    int size;
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "comm_summary_allranks: MPI communicator is not usable");
    canopy_err local = {0};
    double *all = NULL;
    size_t cells = 0;
    if (out == NULL || (mine == NULL && k > 0) || k < 1)
        canopy_err_set(&local, CANOPY_ERR_ARGUMENT, "comm_summary_allranks: NULL output or values, or %d values", k);
    if (k >= 1 && (size_t)size * (size_t)(k + 1) <= SUMMARY_STACK) {
        /* few ranks: no allocation, and each rank's check travels with its values, so that a
         * good run is one collective (a refactorization's figures); the agreement (and its
         * message) only when some rank failed, which every rank then knows */
        double row[SUMMARY_STACK], got[SUMMARY_STACK];
        memset(row, 0, sizeof row);
        row[0] = (double)local.status;
        if (local.status == CANOPY_SUCCESS) memcpy(row + 1, mine, (size_t)k * sizeof *row);
        if (MPI_Allgather(row, k + 1, MPI_DOUBLE, got, k + 1, MPI_DOUBLE, comm) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allgather failed while summarising %d values over %d ranks", k,
                                  size);
        bool failed = false;
        for (int r = 0; r < size; r++) failed |= got[(size_t)r * (size_t)(k + 1)] != 0;
        if (failed) {
            comm_agree(comm, &local);
            return agreed_failure(&local, err);
        }
        for (int i = 0; i < k; i++) summary_strided(got + 1 + i, size, (size_t)k + 1, &out[i]);
        if (first != NULL) memcpy(first, got + 1, (size_t)k * sizeof *first);
        return CANOPY_SUCCESS;
    }
    /* local checks and allocation, then one agreement: every rank reaches the same collectives */
    if (local.status != CANOPY_SUCCESS) {
        /* reported below */
    } else if (!canopy_mul_ok((size_t)size, (size_t)k, &cells)) {
        canopy_err_set(&local, CANOPY_ERR_TOO_LARGE, "comm_summary_allranks: %d values on %d ranks", k, size);
    } else {
        all = canopy_alloc(cells, sizeof *all, "per-rank values", &local);
    }
    if (comm_agree(comm, &local) != CANOPY_SUCCESS) {
        canopy_free(all);
        return agreed_failure(&local, err);
    }
    canopy_status st = CANOPY_SUCCESS;
    /* all k values in one collective: rank r's are all[r * k .. r * k + k - 1] */
    if (MPI_Allgather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, comm) != MPI_SUCCESS) {
        st = canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allgather failed while summarising %d values over %d ranks", k, size);
    } else {
        for (int i = 0; i < k; i++) summary_strided(all + i, size, (size_t)k, &out[i]);
        if (first != NULL) memcpy(first, all, (size_t)k * sizeof *first);
    }
    canopy_free(all);
    return st;
}

canopy_status comm_peerstats_gather(MPI_Comm comm, const comm_peerstats *ps, comm_summary *bytes_sent,
                                    comm_summary *msgs_sent, int64_t *bytes_matrix, int64_t *msgs_matrix,
                                    canopy_err *err)
{
    if (bytes_sent != NULL) memset(bytes_sent, 0, sizeof *bytes_sent);
    if (msgs_sent != NULL) memset(msgs_sent, 0, sizeof *msgs_sent);
    if (comm == MPI_COMM_NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_peerstats_gather: MPI_COMM_NULL");
    int size, rank;
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "comm_peerstats_gather: MPI communicator is not usable");
    canopy_err local = {0};
    int64_t *rows = NULL;   /* this rank's [bytes row | msgs row], plain integers MPI can send */
    double *totals = NULL;  /* [2 * size]: bytes then messages sent by each rank, interleaved */
    if (ps == NULL || ps->msgs_sent == NULL)
        canopy_err_set(&local, CANOPY_ERR_ARGUMENT, "comm_peerstats_gather: NULL or freed statistics");
    else if (ps->nranks != size)
        canopy_err_set(&local, CANOPY_ERR_ARGUMENT, "per-peer statistics are for %d ranks, the communicator has %d",
                       ps->nranks, size);
    else if ((rows = canopy_alloc(2 * (size_t)size, sizeof *rows, "per-peer row", &local)) != NULL)
        totals = canopy_alloc(2 * (size_t)size, sizeof *totals, "per-rank totals", &local);
    if (comm_agree(comm, &local) != CANOPY_SUCCESS) {
        canopy_free(rows);
        canopy_free(totals);
        return agreed_failure(&local, err);
    }
    double mine[2] = {0.0, 0.0};
    for (int j = 0; j < size; j++) {
        rows[j] = atomic_load_explicit(&ps->bytes_sent[j], memory_order_relaxed);
        rows[size + j] = atomic_load_explicit(&ps->msgs_sent[j], memory_order_relaxed);
        /* summed as doubles: exact below 2^53, and no signed overflow whatever the counters hold */
        mine[0] += (double)rows[j];
        mine[1] += (double)rows[size + j];
    }
    canopy_status st = CANOPY_SUCCESS;
    /* only rank 0 knows whether it wants the matrices: its two bits, broadcast */
    int want = rank == 0 ? (bytes_matrix != NULL) | ((msgs_matrix != NULL) << 1) : 0;
    if (MPI_Allgather(mine, 2, MPI_DOUBLE, totals, 2, MPI_DOUBLE, comm) != MPI_SUCCESS)
        st = canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Allgather of the per-rank communication totals failed");
    else if (MPI_Bcast(&want, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
        st = canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Bcast failed while gathering the communication matrix");
    else if ((want & 1) && MPI_Gather(rows, size, MPI_INT64_T, bytes_matrix, size, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
        st = canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Gather of the bytes matrix failed");
    else if ((want & 2) && MPI_Gather(rows + size, size, MPI_INT64_T, msgs_matrix, size, MPI_INT64_T, 0, comm) != MPI_SUCCESS)
        st = canopy_err_set(err, CANOPY_ERR_MPI, "MPI_Gather of the messages matrix failed");
    if (st == CANOPY_SUCCESS) {
        if (bytes_sent != NULL) summary_strided(totals, size, 2, bytes_sent);
        if (msgs_sent != NULL) summary_strided(totals + 1, size, 2, msgs_sent);
    }
    canopy_free(rows);
    canopy_free(totals);
    return st;
}

/* ---- heat maps --------------------------------------------------------------------------- */

/*
 * Colour of the fraction x of the maximum, on one linear scale: 0 white (no traffic at all), then
 * (0, 1] from pale yellow through orange to dark red (the ends of ColorBrewer's YlOrRd).
 */
static void heat_rgb(double x, unsigned char rgb[3])
{
    static const double stop[3][3] = {{255, 255, 204}, {254, 153, 41}, {153, 0, 13}};
    if (!(x > 0.0)) {
        rgb[0] = rgb[1] = rgb[2] = 255;
        return;
    }
    x = x > 1.0 ? 1.0 : x;
    int s = x < 0.5 ? 0 : 1;
    double u = x < 0.5 ? 2.0 * x : 2.0 * x - 1.0;
    for (int i = 0; i < 3; i++) rgb[i] = (unsigned char)lround(stop[s][i] + u * (stop[s + 1][i] - stop[s][i]));
}

static double frac(int64_t v, int64_t hi) { return hi > 0 ? (double)v / (double)hi : 0.0; }

/* @p v in at most 5 characters (1234, 12.3k, 456M, 7.8G, ...) for the text inside a cell. */
static void compact(int64_t v, char buf[16])
{
    static const char unit[] = " kMGTPE";
    double x = (double)v;
    int u = 0;
    while (x >= 9999.5 && u < 6) {
        x /= 1000.0;
        u++;
    }
    if (u == 0) snprintf(buf, 16, "%" PRId64, v);
    else if (x < 99.95) snprintf(buf, 16, "%.1f%c", x, unit[u]);
    else snprintf(buf, 16, "%.0f%c", x, unit[u]);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* True when @p path ends in @p ext (".svg"), ignoring case. */
static bool has_ext(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    if (lp <= le) return false;
    for (size_t i = 0; i < le; i++)
        if (tolower((unsigned char)path[lp - le + i]) != ext[i]) return false;
    return true;
}

static void xml_escaped(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

static canopy_status heatmap_svg(const char *path, int p, const int64_t *vol, int64_t hi, const char *title,
                                 canopy_err *err)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) return canopy_err_set(err, CANOPY_ERR_IO, "cannot create %s", path);
    int cs = clampi(640 / p, 2, 48), left = 70, top = 70, map = p * cs;
    int width = left + CANOPY_MAX(map, 420) + 20, height = top + map + 50; /* legend: 300 px bar + its max */
    int step = clampi((24 + cs - 1) / cs, 1, p); /* a tick label every step ranks, ~24 px apart */
    unsigned char c[3];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"10\" y=\"20\" font-size=\"14\">",
            width, height, width, height);
    xml_escaped(f, title);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">to rank</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">"
               "from rank</text>\n",
            left + map / 2, top - 24, 16, top + map / 2, 16, top + map / 2);
    for (int k = 0; k < p; k += step) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%d</text>\n", left + k * cs + cs / 2,
                top - 4, k);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"end\">%d</text>\n", left - 4,
                top + k * cs + cs / 2 + 3, k);
    }
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) {
            int64_t v = vol[(size_t)i * (size_t)p + (size_t)j];
            heat_rgb(frac(v, hi), c);
            fprintf(f, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\" "
                       "stroke=\"#cccccc\" stroke-width=\"0.5\"><title>from rank %d to rank %d: %" PRId64 "</title></rect>\n",
                    left + j * cs, top + i * cs, cs, cs, c[0], c[1], c[2], i, j, v);
            if (cs >= 32) {
                char txt[16];
                compact(v, txt);
                fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                        left + j * cs + cs / 2, top + i * cs + cs / 2 + 3, frac(v, hi) > 0.6 ? "white" : "black", txt);
            }
        }
    int ly = top + map + 16;
    for (int i = 0; i < 100; i++) {
        /* legend: 0 is white, then the scale from just above 0 to the maximum */
        heat_rgb(i / 99.0, c);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"12\" fill=\"#%02x%02x%02x\"/>\n", left + 3 * i, ly, c[0],
                c[1], c[2]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">0</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\">%" PRId64 " (max)</text>\n</svg>\n",
            left - 4, ly + 10, left + 304, ly + 10, hi);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return canopy_err_set(err, CANOPY_ERR_IO, "cannot write %s", path);
    return CANOPY_SUCCESS;
}

static canopy_status heatmap_png(const char *path, int p, const int64_t *vol, int64_t hi, canopy_err *err)
{
    int cs = clampi(512 / p, 1, 32);
    /* the rows numa_png_write compresses (3 w + 1 bytes each) must stay below 2^31 bytes */
    if ((double)p * cs * (3.0 * p * cs + 1.0) > (double)INT32_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "a PNG heat map of %d x %d ranks is too large (use .svg)", p, p);
    int w = p * cs;
    unsigned char *img = canopy_alloc(3 * (size_t)w, (size_t)w, "heat map image", err);
    if (img == NULL) return err != NULL ? err->status : CANOPY_ERR_NOMEM;
    unsigned char c[3];
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) {
            heat_rgb(frac(vol[(size_t)i * (size_t)p + (size_t)j], hi), c);
            for (int y = i * cs; y < (i + 1) * cs; y++)
                for (int x = j * cs; x < (j + 1) * cs; x++) memcpy(img + 3 * ((size_t)y * (size_t)w + (size_t)x), c, 3);
        }
    canopy_status st = numa_png_write(path, w, w, img, err);
    canopy_free(img);
    return st;
}

canopy_status comm_heatmap_write(const char *path, int nranks, const int64_t *volume, const char *title,
                                 canopy_err *err)
{
    if (path == NULL || volume == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "comm_heatmap_write: NULL %s", path == NULL ? "path" : "matrix");
    if (nranks < 1) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "a heat map needs at least one rank, got %d", nranks);
    bool svg = has_ext(path, ".svg"), png = has_ext(path, ".png");
    if (!svg && !png)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "heat map %s: the file name must end in .svg or .png", path);
    size_t cells;
    if (!canopy_mul_ok((size_t)nranks, (size_t)nranks, &cells))
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "a %d x %d heat map is too large", nranks, nranks);
    int64_t hi = 0;
    for (size_t k = 0; k < cells; k++) {
        if (volume[k] < 0)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "heat map: negative volume %" PRId64 " from rank %zu to rank %zu",
                                  volume[k], k / (size_t)nranks, k % (size_t)nranks);
        hi = volume[k] > hi ? volume[k] : hi;
    }
    if (svg) return heatmap_svg(path, nranks, volume, hi, title != NULL ? title : "communication volume", err);
    return heatmap_png(path, nranks, volume, hi, err);
}
