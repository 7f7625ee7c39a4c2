/* TensorBoard event files: CRC-32C, TFRecord framing, a minimal protobuf
 * encoder for Event/Summary, and the histogram binning (tfevents.h). */
#include "tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- CRC-32C ---- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_table[i] = c;
    }
}

uint32_t nn_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

uint32_t nn_tfrecord_crc(const void *data, size_t n)
{
    uint32_t c = nn_crc32c(0, data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protobuf encoding ---- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} pb;

static void pb_raw(pb *b, const void *s, size_t n)
{
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->n + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    unsigned char out[10];
    int n = 0;
    do {
        out[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v) out[n] |= 0x80;
        n++;
    } while (v);
    pb_raw(b, out, (size_t)n);
}

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static void pb_key(pb *b, int field, int wt) { pb_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }

static void pb_double(pb *b, int field, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(u >> (8 * i));
    pb_key(b, field, WT_I64);
    pb_raw(b, le, 8);
}

static void pb_float(pb *b, int field, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    unsigned char le[4];
    for (int i = 0; i < 4; i++) le[i] = (unsigned char)(u >> (8 * i));
    pb_key(b, field, WT_I32);
    pb_raw(b, le, 4);
}

static void pb_int(pb *b, int field, int64_t v)
{
    pb_key(b, field, WT_VARINT);
    pb_varint(b, (uint64_t)v); /* negative int64/int32: ten bytes, two's complement */
}

static void pb_bytes(pb *b, int field, const void *s, size_t n)
{
    pb_key(b, field, WT_LEN);
    pb_varint(b, n);
    pb_raw(b, s, n);
}

static void pb_msg(pb *b, int field, const pb *m)
{
    if (m->oom) b->oom = true;
    pb_bytes(b, field, m->p, m->n);
}

static void pb_packed_doubles(pb *b, int field, const double *v, int n)
{
    pb_key(b, field, WT_LEN);
    pb_varint(b, (uint64_t)n * 8);
    for (int i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        unsigned char le[8];
        for (int k = 0; k < 8; k++) le[k] = (unsigned char)(u >> (8 * k));
        pb_raw(b, le, 8);
    }
}

/* ---- the writer ---- */

struct nn_tb_writer {
    int fd;
    char *path;
};

const char *nn_tb_path(const nn_tb_writer *w) { return w->path; }

nn_status nn_tb_write_record(nn_tb_writer *w, const void *data, size_t n)
{
    if (!w || w->fd < 0) return nn_error(NN_ERR_RUNTIME, "SummaryWriter: the event file is closed");
    unsigned char *rec = malloc(n + 16);
    if (!rec) return nn_error(NN_ERR_NOMEM, "SummaryWriter: out of memory");
    for (int i = 0; i < 8; i++) rec[i] = (unsigned char)((uint64_t)n >> (8 * i));
    uint32_t c = nn_tfrecord_crc(rec, 8);
    for (int i = 0; i < 4; i++) rec[8 + i] = (unsigned char)(c >> (8 * i));
    if (n) memcpy(rec + 12, data, n);
    c = nn_tfrecord_crc(data, n);
    for (int i = 0; i < 4; i++) rec[12 + n + i] = (unsigned char)(c >> (8 * i));
    const unsigned char *p = rec;
    size_t left = n + 16;
    nn_status st = NN_OK;
    while (left) {
        ssize_t r = write(w->fd, p, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { st = nn_error(NN_ERR_RUNTIME, "SummaryWriter: cannot write '%s': %s", w->path, strerror(errno)); break; }
        p += r, left -= (size_t)r;
    }
    free(rec);
    return st;
}

/* Event{wall_time, step, <field>: body} written as a record. */
static nn_status write_event(nn_tb_writer *w, double wall_time, int64_t step, int field, const pb *body)
{
    pb ev = {0};
    pb_double(&ev, 1, wall_time);
    if (step) pb_int(&ev, 2, step);
    pb_msg(&ev, field, body);
    nn_status st = ev.oom ? nn_error(NN_ERR_NOMEM, "SummaryWriter: out of memory") : nn_tb_write_record(w, ev.p, ev.n);
    free(ev.p);
    return st;
}

/* Summary{value: Value{tag, <value>}} as an event. */
static nn_status write_summary(nn_tb_writer *w, const pb *value, int64_t step, double wall_time)
{
    pb sum = {0};
    pb_msg(&sum, 1, value);
    nn_status st = write_event(w, wall_time, step, 5, &sum);
    free(sum.p);
    return st;
}

nn_status nn_tb_summary(nn_tb_writer *w, const void *summary, size_t n, int64_t step, double wall_time)
{
    pb sum = {(unsigned char *)summary, n, n, false};
    return write_event(w, wall_time, step, 5, &sum);
}

nn_tb_writer *nn_tb_open(const char *path, double wall_time)
{
    nn_tb_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        nn_error(NN_ERR_NOMEM, "SummaryWriter: out of memory");
        return NULL;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        nn_error(NN_ERR_RUNTIME, "SummaryWriter: cannot create '%s': %s", path, strerror(errno));
        nn_tb_close(w);
        return NULL;
    }
    static const char version[] = "brain.Event:2";
    pb v = {(unsigned char *)version, sizeof version - 1, sizeof version - 1, false};
    if (write_event(w, wall_time, 0, 3, &v)) {
        nn_tb_close(w);
        return NULL;
    }
    return w;
}

nn_status nn_tb_close(nn_tb_writer *w)
{
    if (!w) return NN_OK;
    nn_status st = NN_OK;
    if (w->fd >= 0 && close(w->fd) < 0)
        st = nn_error(NN_ERR_RUNTIME, "SummaryWriter: cannot close '%s': %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return st;
}

nn_status nn_tb_scalar(nn_tb_writer *w, const char *tag, double value, int64_t step, double wall_time)
{
    pb v = {0};
    pb_bytes(&v, 1, tag, strlen(tag));
    pb_float(&v, 2, (float)value);
    nn_status st = write_summary(w, &v, step, wall_time);
    free(v.p);
    return st;
}

nn_status nn_tb_image(nn_tb_writer *w, const char *tag, int64_t h, int64_t wd, int c, const void *png, size_t len,
                      int64_t step, double wall_time)
{
    pb img = {0}, v = {0};
    pb_int(&img, 1, h);
    pb_int(&img, 2, wd);
    pb_int(&img, 3, c);
    pb_bytes(&img, 4, png, len);
    pb_bytes(&v, 1, tag, strlen(tag));
    pb_msg(&v, 4, &img);
    nn_status st = write_summary(w, &v, step, wall_time);
    free(img.p), free(v.p);
    return st;
}

nn_status nn_tb_text(nn_tb_writer *w, const char *tag, const char *text, size_t len, int64_t step, double wall_time)
{
    pb plugin = {0}, meta = {0}, dim = {0}, shape = {0}, tensor = {0}, v = {0};
    pb_bytes(&plugin, 1, "text", 4);
    pb_msg(&meta, 1, &plugin);
    pb_int(&dim, 1, 1);
    pb_msg(&shape, 2, &dim);
    pb_int(&tensor, 1, 7); /* DT_STRING */
    pb_msg(&tensor, 2, &shape);
    pb_bytes(&tensor, 8, text, len);
    pb_bytes(&v, 1, tag, strlen(tag));
    pb_msg(&v, 9, &meta);
    pb_msg(&v, 8, &tensor);
    nn_status st = write_summary(w, &v, step, wall_time);
    free(plugin.p), free(meta.p), free(dim.p), free(shape.p), free(tensor.p), free(v.p);
    return st;
}

nn_status nn_tb_histogram(nn_tb_writer *w, const char *tag, const nn_tb_histo *h, int64_t step, double wall_time)
{
    pb hp = {0}, v = {0};
    pb_double(&hp, 1, h->min);
    pb_double(&hp, 2, h->max);
    pb_double(&hp, 3, h->num);
    pb_double(&hp, 4, h->sum);
    pb_double(&hp, 5, h->sum_squares);
    pb_packed_doubles(&hp, 6, h->limits, h->nbuckets);
    pb_packed_doubles(&hp, 7, h->counts, h->nbuckets);
    pb_bytes(&v, 1, tag, strlen(tag));
    pb_msg(&v, 5, &hp);
    nn_status st = write_summary(w, &v, step, wall_time);
    free(hp.p), free(v.p);
    return st;
}

/* ---- histograms ---- */

void nn_tb_histo_free(nn_tb_histo *h)
{
    free(h->limits), free(h->counts);
    h->limits = h->counts = NULL;
    h->nbuckets = 0;
}

/* The bin of x among nb bins with the given edges (numpy.histogram's rule:
 * [e_i, e_i+1), the last bin closed), or -1 outside. */
static int64_t find_bin(double x, const double *e, int64_t nb)
{
    if (!(x >= e[0] && x <= e[nb])) return -1;
    if (x == e[nb]) return nb - 1;
    int64_t lo = 0, hi = nb; /* e[lo] <= x < e[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (e[mid] <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

nn_status nn_tb_make_histogram(const double *values, int64_t n, const double *edges, int nedges, int max_bins,
                               nn_tb_histo *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return nn_error(NN_ERR_ARG, "add_histogram: The input has no element.");
    double mn = values[0], mx = values[0], sum = 0, sq = 0;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        double x = values[i];
        nan |= x != x;
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        sum += x, sq += x * x;
    }
    if (nan) mn = mx = NAN; /* numpy's min and max propagate NaN */
    int64_t nb;
    double *e;
    if (edges) {
        if (nedges < 2) return nn_error(NN_ERR_ARG, "add_histogram: bins must hold at least 2 edges, got %d", nedges);
        for (int i = 1; i < nedges; i++)
            if (!(edges[i] >= edges[i - 1]))
                return nn_error(NN_ERR_ARG, "add_histogram: bins must increase monotonically");
        nb = nedges - 1;
        e = malloc((size_t)nedges * sizeof *e);
        if (!e) return nn_error(NN_ERR_NOMEM, "add_histogram: out of memory");
        memcpy(e, edges, (size_t)nedges * sizeof *e);
    } else {
        if (nedges < 1) return nn_error(NN_ERR_ARG, "add_histogram: bins must be a positive integer, got %d", nedges);
        if (!isfinite(mn) || !isfinite(mx))
            return nn_error(NN_ERR_ARG, "add_histogram: autodetected range of [%g, %g] is not finite", mn, mx);
        double lo = mn, hi = mx;
        if (lo == hi) lo -= 0.5, hi += 0.5;
        nb = nedges;
        e = malloc(((size_t)nb + 1) * sizeof *e);
        if (!e) return nn_error(NN_ERR_NOMEM, "add_histogram: out of memory");
        double step = (hi - lo) / (double)nb;
        for (int64_t i = 0; i <= nb; i++) e[i] = lo + (double)i * step; /* numpy.linspace */
        e[nb] = hi;
    }
    double *counts = calloc((size_t)nb, sizeof *counts);
    if (!counts) { free(e); return nn_error(NN_ERR_NOMEM, "add_histogram: out of memory"); }
    for (int64_t i = 0; i < n; i++) {
        int64_t b = find_bin(values[i], e, nb);
        if (b >= 0) counts[b] += 1;
    }
    if (max_bins > 0 && nb > max_bins) { /* merge groups of `sub` neighbouring bins */
        int64_t sub = nb / max_bins;
        int64_t m = (nb + sub - 1) / sub;
        for (int64_t g = 0; g < m; g++) {
            double c = 0;
            for (int64_t k = g * sub; k < (g + 1) * sub && k < nb; k++) c += counts[k];
            counts[g] = c;
        }
        double last = e[nb];
        for (int64_t g = 0; g < m; g++) e[g] = e[g * sub];
        e[m] = last;
        nb = m;
    }
    /* keep the bins from one left of the first non-empty one to the last non-empty one */
    int64_t first = -1, lastnz = -1;
    for (int64_t i = 0; i < nb; i++)
        if (counts[i] > 0) {
            if (first < 0) first = i;
            lastnz = i;
        }
    nn_status st = NN_OK;
    if (first < 0) {
        st = nn_error(NN_ERR_ARG, "add_histogram: The histogram is empty (no value falls inside the bins)");
        goto done;
    }
    int64_t m = lastnz - first + 2;
    out->limits = malloc((size_t)m * sizeof(double));
    out->counts = malloc((size_t)m * sizeof(double));
    if (!out->limits || !out->counts) {
        nn_tb_histo_free(out);
        st = nn_error(NN_ERR_NOMEM, "add_histogram: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t b = first - 1 + i; /* bucket i counts bin b, whose right edge is e[b + 1] */
        out->counts[i] = b >= 0 ? counts[b] : 0;
        out->limits[i] = e[b + 1];
    }
    out->nbuckets = (int)m;
    out->min = mn, out->max = mx, out->num = (double)n, out->sum = sum, out->sum_squares = sq;
done:
    free(e), free(counts);
    return st;
}
