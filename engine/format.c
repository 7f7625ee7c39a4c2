/* Tensor printing, identical to PyTorch's repr (torch/_tensor_str.py).
 *
 * One formatter per tensor decides a mode (integer dtype, float "int mode"
 * where every value is integral, fixed or scientific) and one width, from the
 * elements that will be shown (all of them, or the edge items when the tensor
 * has more than `threshold` elements). The layout then nests brackets with an
 * indent that grows by one per dim, wraps 1-D rows at `linewidth`, and puts
 * dim-1 newlines between blocks. Suffixes (device, size, dtype, grad_fn) come
 * last, each on a new line when it would pass the line width. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ops.h"

static nn_print_options opts = {.precision = 4, .threshold = 1000, .edgeitems = 3, .linewidth = 80, .sci_mode = -1};

nn_print_options *nn_print_opts(void) { return &opts; }

const char *(*nn_grad_fn_name_hook)(const nn_tensor *t);

/* ---- a growable string ---- */
typedef struct { char *p; size_t len, cap; bool failed; } strbuf;

static bool sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->failed) return false;
    if (sb->len + extra + 1 <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) cap *= 2;
    char *p = realloc(sb->p, cap);
    if (!p) { sb->failed = true; return false; }
    sb->p = p, sb->cap = cap;
    return true;
}

static void sb_putn(strbuf *sb, const char *s, size_t n)
{
    if (!sb_reserve(sb, n)) return;
    memcpy(sb->p + sb->len, s, n);
    sb->len += n;
    sb->p[sb->len] = 0;
}

static void sb_puts(strbuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

static void sb_chars(strbuf *sb, char c, int64_t n)
{
    if (n <= 0 || !sb_reserve(sb, (size_t)n)) return;
    memset(sb->p + sb->len, c, (size_t)n);
    sb->len += (size_t)n;
    sb->p[sb->len] = 0;
}

/* ---- the formatter (PyTorch's _Formatter) ---- */
typedef enum { F_INT, F_BOOL, F_SCI, F_INTMODE, F_FIXED } fmode;

typedef struct formatter {
    fmode mode;
    int width;
    int precision;
    /* complex tensors: this formats the real parts (views re, im of the tensor's parts) and
     * imag the imaginary ones, each element written as PyTorch's "re+imj" */
    const struct formatter *imag;
    const nn_tensor *re, *im;
} formatter;

/* The text of one value, snprintf-style: returns its length, writes at most cap bytes. */
static int value_text(const formatter *f, double v, int64_t iv, char *buf, size_t cap)
{
    switch (f->mode) {
    case F_BOOL: return snprintf(buf, cap, "%s", iv ? "True" : "False");
    case F_INT: return snprintf(buf, cap, "%" PRId64, iv);
    default: break;
    }
    /* Python writes nan without a sign; C may write "-nan" */
    if (isnan(v)) return snprintf(buf, cap, "nan");
    switch (f->mode) {
    case F_SCI: return snprintf(buf, cap, "%.*e", f->precision, v);
    case F_INTMODE: return snprintf(buf, cap, isinf(v) ? "%.0f" : "%.0f.", v);
    default: return snprintf(buf, cap, "%.*f", f->precision, v);
    }
}

/* Which indices of a dim of size n are shown: [0, head), a "..." marker, then [tail, n). */
typedef struct { int64_t head, tail, n; bool marker; } shown;

static int64_t edgeitems(void) { return opts.edgeitems < 0 ? 0 : opts.edgeitems; }

static shown shown_of(int64_t n, bool summarize)
{
    int64_t e = edgeitems();
    if (summarize && n > 2 * e) return (shown){e, n - e, n, true};
    return (shown){n, n, n, false};
}

typedef void (*visit_fn)(double v, void *ctx);

/* Visit every shown element of t (the formatter sees only these, as PyTorch's get_summarized_data). */
static void walk(const nn_tensor *t, int d, int64_t *idx, bool summarize, visit_fn fn, void *ctx)
{
    if (d == t->ndim) { fn(nn_get_f64(t, idx), ctx); return; }
    shown s = shown_of(t->shape[d], summarize);
    for (int64_t i = 0; i < s.head; i++) { idx[d] = i; walk(t, d + 1, idx, summarize, fn, ctx); }
    if (s.marker)
        for (int64_t i = s.tail; i < s.n; i++) { idx[d] = i; walk(t, d + 1, idx, summarize, fn, ctx); }
}

typedef struct {
    double min, max;  /* of the nonzero finite absolute values */
    int64_t count;
    bool integral;
    const formatter *f; /* second pass: measure widths in this mode */
    int width;
} scan;

static void scan_range(double v, void *ctx)
{
    scan *s = ctx;
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (!s->count || a < s->min) s->min = a;
    if (!s->count || a > s->max) s->max = a;
    if (v != ceil(v)) s->integral = false;
    s->count++;
}

static void scan_width(double v, void *ctx)
{
    scan *s = ctx;
    if (!isfinite(v) || v == 0) return;
    int n = value_text(s->f, v, 0, NULL, 0);
    if (n > s->width) s->width = n;
}

/* Integer widths need the exact int64 values, so they get their own walk. */
static void int_width(const nn_tensor *t, int d, int64_t *idx, bool summarize, formatter *f)
{
    if (d == t->ndim) {
        int n = value_text(f, 0, nn_get_i64(t, idx), NULL, 0);
        if (n > f->width) f->width = n;
        return;
    }
    shown s = shown_of(t->shape[d], summarize);
    for (int64_t i = 0; i < s.head; i++) { idx[d] = i; int_width(t, d + 1, idx, summarize, f); }
    if (s.marker)
        for (int64_t i = s.tail; i < s.n; i++) { idx[d] = i; int_width(t, d + 1, idx, summarize, f); }
}

static formatter make_formatter(const nn_tensor *t, bool summarize)
{
    formatter f = {.precision = opts.precision < 0 ? 0 : opts.precision, .width = 1};
    int64_t idx[NN_MAX_DIMS] = {0};
    if (!nn_dtype_is_float(t->dtype)) {
        f.mode = t->dtype == NN_BOOL ? F_BOOL : F_INT;
        int_width(t, 0, idx, summarize, &f);
        return f;
    }
    scan s = {.integral = true};
    walk(t, 0, idx, summarize, scan_range, &s);
    f.mode = F_INTMODE;
    if (!s.count) return f; /* nothing finite and nonzero: PyTorch returns before sci_mode applies */
    bool sci = opts.sci_mode >= 0 ? opts.sci_mode : s.max / s.min > 1000.0 || s.max > 1.0e8 || s.min < 1.0e-4;
    f.mode = sci ? F_SCI : s.integral ? F_INTMODE : F_FIXED;
    s.f = &f;
    s.width = 1;
    walk(t, 0, idx, summarize, scan_width, &s);
    f.width = s.width;
    return f;
}

/* One element, right-aligned to the formatter's width. */
static void put_value(strbuf *sb, const formatter *f, const nn_tensor *t, const int64_t *idx);

/* PyTorch's complex element: the real part padded, then the imaginary part stripped of its
 * padding, with a "+" unless it has a sign, and "j" */
static void put_complex(strbuf *sb, const formatter *f, const int64_t *idx)
{
    formatter fr = *f;
    fr.imag = NULL;
    put_value(sb, &fr, f->re, idx);
    char buf[64];
    double v = nn_get_f64(f->im, idx);
    int n = value_text(f->imag, v, 0, buf, sizeof buf);
    if (n < 0) return;
    if (buf[0] != '-' && buf[0] != '+') sb_putn(sb, "+", 1);
    sb_puts(sb, buf);
    sb_putn(sb, "j", 1);
}

static void put_value(strbuf *sb, const formatter *f, const nn_tensor *t, const int64_t *idx)
{
    if (f->imag) { put_complex(sb, f, idx); return; }
    bool isint = f->mode == F_INT || f->mode == F_BOOL;
    double v = isint ? 0 : nn_get_f64(t, idx);
    int64_t iv = isint ? nn_get_i64(t, idx) : 0;
    int n = value_text(f, v, iv, NULL, 0);
    if (n < 0) return;
    sb_chars(sb, ' ', f->width - n);
    if (!sb_reserve(sb, (size_t)n)) return;
    value_text(f, v, iv, sb->p + sb->len, (size_t)n + 1);
    sb->len += (size_t)n;
}

/* ---- layout (PyTorch's _tensor_str_with_formatter and _vector_str) ---- */
static void put_vector(strbuf *sb, const formatter *f, const nn_tensor *t, int64_t *idx, int indent, bool summarize)
{
    int d = t->ndim - 1;
    int element = f->width + 2 + (f->imag ? f->imag->width + 1 : 0);
    int64_t per_line = (int64_t)floor((double)(opts.linewidth - indent) / (double)element);
    if (per_line < 1) per_line = 1;
    shown s = shown_of(t->shape[d], summarize);
    int64_t k = 0; /* items written so far; the " ..." marker counts as one */
    sb_putn(sb, "[", 1);
    for (int part = 0; part < 3; part++) {
        int64_t lo = part == 0 ? 0 : part == 1 ? 0 : s.tail, hi = part == 0 ? s.head : part == 1 ? 1 : s.n;
        if (part > 0 && !s.marker) break;
        for (int64_t i = lo; i < hi; i++, k++) {
            if (k && k % per_line == 0) {
                sb_putn(sb, ",\n", 2);
                sb_chars(sb, ' ', indent + 1);
            } else if (k) sb_putn(sb, ", ", 2);
            /* with edgeitems 0 a summarized row is just "[...]" */
            if (part == 1) { sb_puts(sb, edgeitems() ? " ..." : "..."); continue; }
            idx[d] = i;
            put_value(sb, f, t, idx);
        }
    }
    sb_putn(sb, "]", 1);
}

static void put_tensor(strbuf *sb, const formatter *f, const nn_tensor *t, int d, int64_t *idx, int indent, bool summarize)
{
    if (t->ndim == 0) { put_value(sb, f, t, idx); return; }
    if (d == t->ndim - 1) { put_vector(sb, f, t, idx, indent, summarize); return; }
    shown s = shown_of(t->shape[d], summarize);
    int newlines = t->ndim - d - 1;
    bool first = true;
    sb_putn(sb, "[", 1);
    for (int part = 0; part < 3; part++) {
        int64_t lo = part == 0 ? 0 : part == 1 ? 0 : s.tail, hi = part == 0 ? s.head : part == 1 ? 1 : s.n;
        if (part > 0 && !s.marker) break;
        for (int64_t i = lo; i < hi; i++) {
            if (!first) {
                sb_putn(sb, ",", 1);
                sb_chars(sb, '\n', newlines);
                sb_chars(sb, ' ', indent + 1);
            }
            first = false;
            if (part == 1) { sb_puts(sb, "..."); continue; }
            idx[d] = i;
            put_tensor(sb, f, t, d + 1, idx, indent + 1, summarize);
        }
    }
    sb_putn(sb, "]", 1);
}

/* ---- suffixes (PyTorch's _add_suffixes) ---- */
#define SUFFIX_LEN 200 /* fits "size=(...)" of NN_MAX_DIMS 19-digit sizes */
static void add_suffixes(strbuf *sb, char suffixes[][SUFFIX_LEN], int n, int indent)
{
    /* PyTorch's measure: the last line's length plus 2 */
    const char *nl = sb->p ? strrchr(sb->p, '\n') : NULL;
    int64_t last = nl ? (int64_t)(sb->p + sb->len - nl) + 1 : (int64_t)sb->len + 2;
    for (int i = 0; i < n; i++) {
        int64_t len = (int64_t)strlen(suffixes[i]);
        if (last + len + 2 > opts.linewidth) {
            sb_putn(sb, ",\n", 2);
            sb_chars(sb, ' ', indent);
            last = indent + len;
        } else {
            sb_putn(sb, ", ", 2);
            last += len + 2;
        }
        sb_puts(sb, suffixes[i]);
    }
    sb_putn(sb, ")", 1);
}

static void host_blob_free(void *data, void *ctx) { (void)ctx; free(data); }

/* A CPU tensor with t's geometry over a host copy of the storage t reaches. */
static nn_tensor *host_copy(const nn_tensor *t)
{
    char d[16];
    nn_device dev = t->storage->device;
    const nn_backend *b = nn_backend_for(dev);
    if (!b || !b->copy) {
        nn_error(NN_ERR_DEVICE, "repr: device %s is not available", nn_device_str(d, dev));
        return NULL;
    }
    int64_t lo = 0, hi = 0; /* element offsets reached, relative to t->offset */
    for (int i = 0; i < t->ndim; i++) {
        int64_t span = (t->shape[i] - 1) * t->strides[i];
        if (span < 0) lo += span;
        else hi += span;
    }
    size_t es = nn_dtype_size(t->dtype), n = (size_t)(hi - lo + 1) * es;
    char *host = malloc(n);
    if (!host) { nn_error(NN_ERR_NOMEM, "repr: out of memory copying %zu bytes from %s", n, nn_device_str(d, dev)); return NULL; }
    const char *src = (const char *)t->storage->data + (t->offset + lo) * (int64_t)es;
    if (b->copy(host, NN_DEVICE_CPU, src, dev, n)) { free(host); return NULL; }
    nn_tensor *h = nn_from_blob(host, t->ndim, t->shape, t->strides, t->dtype, NN_DEVICE_CPU, host_blob_free, NULL);
    if (!h) { free(host); return NULL; }
    h->offset = -lo;
    return h;
}

/* "size=(2, 0, 3)", Python's str of a tuple: "()" and "(5,)" for 0 and 1 dims. */
static void size_suffix(char *buf, const nn_tensor *t)
{
    int n = snprintf(buf, SUFFIX_LEN, "size=(");
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(buf + n, SUFFIX_LEN - n, i ? ", %" PRId64 : "%" PRId64, t->shape[i]);
    snprintf(buf + n, SUFFIX_LEN - n, t->ndim == 1 ? ",)" : ")");
}

static char *finish(strbuf *sb, const nn_tensor *t, char suffixes[][SUFFIX_LEN], int ns, int indent);

/* A meta tensor has no values: "tensor(..., device='meta', size=(3, 4))", as PyTorch writes it. */
static char *meta_repr(const nn_tensor *t)
{
    char suffixes[5][SUFFIX_LEN];
    int ns = 0;
    snprintf(suffixes[ns++], SUFFIX_LEN, "device='meta'");
    size_suffix(suffixes[ns++], t);
    if (t->dtype != nn_default_dtype()) snprintf(suffixes[ns++], SUFFIX_LEN, "dtype=torch.%s", nn_dtype_name(t->dtype));
    strbuf sb = {0};
    sb_puts(&sb, "tensor(...");
    return finish(&sb, t, suffixes, ns, 7);
}

char *nn_tensor_repr(const nn_tensor *t)
{
    const int indent = 7; /* strlen("tensor(") */
    char suffixes[5][SUFFIX_LEN];
    int ns = 0;
    nn_device dev = t->storage->device;
    int64_t numel = nn_numel(t);
    nn_tensor *h = NULL;
    if (dev.type == NN_META) return meta_repr(t);
    if (dev.type != NN_CPU) {
        char d[16];
        snprintf(suffixes[ns++], SUFFIX_LEN, "device='%s'", nn_device_str(d, dev));
        if (numel && !(h = host_copy(t))) return NULL;
    }
    const nn_tensor *src = h ? h : t;

    strbuf sb = {0};
    sb_puts(&sb, "tensor(");
    if (numel == 0) {
        if (t->ndim != 1) size_suffix(suffixes[ns++], t);
        if (t->dtype != nn_default_dtype()) snprintf(suffixes[ns++], SUFFIX_LEN, "dtype=torch.%s", nn_dtype_name(t->dtype));
        sb_puts(&sb, "[]");
    } else {
        if (opts.edgeitems == 0) size_suffix(suffixes[ns++], t); /* PyTorch shows the size when it shows no items */
        if (t->dtype != nn_default_dtype() && t->dtype != NN_I64 && t->dtype != NN_BOOL &&
            t->dtype != nn_dtype_to_complex(nn_default_dtype()))
            snprintf(suffixes[ns++], SUFFIX_LEN, "dtype=torch.%s", nn_dtype_name(t->dtype));
        bool summarize = numel > opts.threshold;
        int64_t idx[NN_MAX_DIMS] = {0};
        nn_tensor *parts[2] = {NULL, NULL};
        formatter f, fi;
        if (nn_dtype_is_complex(src->dtype)) { /* the parts as real tensors of src's shape, one formatter each */
            int64_t st[NN_MAX_DIMS];
            for (int d = 0; d < src->ndim; d++) st[d] = 2 * src->strides[d];
            for (int k = 0; k < 2; k++) {
                parts[k] = nn_make_view(src, src->ndim, src->shape, st, 2 * src->offset + k);
                if (parts[k]) parts[k]->dtype = nn_dtype_to_real(src->dtype);
            }
        }
        if (parts[0] && parts[1]) {
            f = make_formatter(parts[0], summarize);
            fi = make_formatter(parts[1], summarize);
            f.imag = &fi, f.re = parts[0], f.im = parts[1];
        } else f = make_formatter(src, summarize);
        put_tensor(&sb, &f, src, 0, idx, indent, summarize);
        nn_release(parts[0]);
        nn_release(parts[1]);
    }
    nn_release(h);
    return finish(&sb, t, suffixes, ns, indent);
}

/* the grad_fn or requires_grad suffix, then all suffixes and the closing parenthesis */
static char *finish(strbuf *sb_, const nn_tensor *t, char suffixes[][SUFFIX_LEN], int ns, int indent)
{
    strbuf sb = *sb_;
    const char *gf = nn_grad_fn_name_hook ? nn_grad_fn_name_hook(t) : NULL;
    if (gf) snprintf(suffixes[ns++], SUFFIX_LEN, "grad_fn=<%.150s>", gf);
    else if (t->requires_grad) snprintf(suffixes[ns++], SUFFIX_LEN, "requires_grad=True");
    add_suffixes(&sb, suffixes, ns, indent);
    if (sb.failed) {
        free(sb.p);
        nn_error(NN_ERR_NOMEM, "repr: out of memory");
        return NULL;
    }
    return sb.p;
}
