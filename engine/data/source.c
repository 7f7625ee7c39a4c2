#include "source.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "ops.h"

typedef enum { FIELD_COPY, FIELD_LUT } field_kind;

typedef struct {
    nn_tensor *src;     /* [rows, ...], contiguous CPU */
    field_kind kind;
    nn_dtype out_dtype;
    int out_ndim;       /* per sample */
    int64_t out_shape[NN_MAX_DIMS];
    size_t row_bytes;   /* one source sample */
    int64_t row_numel;
    int nch;            /* FIELD_LUT: channels, each chsize bytes -> floats through lut[c * 256 + byte] */
    int64_t chsize;
    float *lut;
} field;

struct nn_data_source {
    int refcount;
    int nfields;
    int64_t rows;   /* samples in the fields */
    int64_t length; /* samples of the source: rows, or the map's length */
    int64_t *map;   /* NULL, or length entries in [0, rows) */
    float *luts[NN_DATA_MAX_FIELDS]; /* owned; fields point into them (shared with subsets) */
    nn_data_source *base; /* subsets keep the source that owns the tensors and tables */
    field fields[NN_DATA_MAX_FIELDS];
};

/* page-locked memory: a registered allocator, else the GPU backend's (device.h), else none */
static void *(*pinned_alloc)(size_t);
static void (*pinned_free)(void *);

static bool pinned_hooks(void *(**alloc)(size_t), void (**free_fn)(void *))
{
    if (pinned_alloc) *alloc = pinned_alloc, *free_fn = pinned_free;
    else if (nn_gpu && nn_gpu->host_alloc_pinned && nn_gpu->host_free_pinned && nn_gpu->device_count() > 0)
        *alloc = nn_gpu->host_alloc_pinned, *free_fn = nn_gpu->host_free_pinned;
    else return false;
    return true;
}

void nn_data_set_pinned_allocator(void *(*alloc)(size_t), void (*free_fn)(void *))
{
    pinned_alloc = alloc;
    pinned_free = free_fn;
}

bool nn_data_have_pinned_allocator(void)
{
    void *(*a)(size_t);
    void (*f)(void *);
    return pinned_hooks(&a, &f);
}

nn_data_source *nn_data_source_new(void)
{
    nn_data_source *s = calloc(1, sizeof *s);
    if (!s) nn_error(NN_ERR_NOMEM, "out of memory");
    else s->refcount = 1;
    return s;
}

nn_data_source *nn_data_source_retain(nn_data_source *s)
{
    if (s) s->refcount++;
    return s;
}

void nn_data_source_release(nn_data_source *s)
{
    if (!s || --s->refcount > 0) return;
    if (s->base) nn_data_source_release(s->base);
    else
        for (int f = 0; f < s->nfields; f++) {
            nn_release(s->fields[f].src);
            free(s->luts[f]);
        }
    free(s->map);
    free(s);
}

int nn_data_nfields(const nn_data_source *s) { return s->nfields; }
int64_t nn_data_length(const nn_data_source *s) { return s->length; }

/* The channel tables of ToTensor then Normalize*, in float32 as torchvision computes them. */
static nn_status build_lut(field *fd, const nn_data_op *ops, int nops, float **out)
{
    float *lut = malloc((size_t)fd->nch * 256 * sizeof *lut);
    if (!lut) return nn_error(NN_ERR_NOMEM, "out of memory");
    for (int c = 0; c < fd->nch; c++)
        for (int v = 0; v < 256; v++) {
            float x = (float)v / 255.0f;
            for (int k = 1; k < nops; k++) {
                int j = ops[k].n == 1 ? 0 : c;
                x = (x - (float)ops[k].mean[j]) / (float)ops[k].std[j];
            }
            lut[c * 256 + v] = x;
        }
    *out = lut;
    return NN_OK;
}

nn_status nn_data_add_field(nn_data_source *s, nn_tensor *t, const nn_data_op *ops, int nops)
{
    if (s->base) return nn_error(NN_ERR_ARG, "data source: cannot add a field to a subset");
    if (s->nfields == NN_DATA_MAX_FIELDS) return nn_error(NN_ERR_NOTIMPL, "data source: more than %d fields", NN_DATA_MAX_FIELDS);
    if (t->storage->device.type != NN_CPU) return nn_error(NN_ERR_NOTIMPL, "data source: tensors on a device are not fetched in C");
    if (t->ndim < 1) return nn_error(NN_ERR_ARG, "data source: a field needs at least one dimension (the samples)");
    if (s->nfields && t->shape[0] != s->rows)
        return nn_error(NN_ERR_SHAPE, "data source: field %d has %lld samples, expected %lld", s->nfields, (long long)t->shape[0],
                        (long long)s->rows);
    field fd = {0};
    int sd = t->ndim - 1; /* sample dims */
    const int64_t *ss = t->shape + 1;
    fd.row_numel = 1;
    for (int i = 0; i < sd; i++) fd.row_numel *= ss[i];
    fd.row_bytes = (size_t)fd.row_numel * nn_dtype_size(t->dtype);
    float *lut = NULL;
    if (nops == 0) {
        fd.kind = FIELD_COPY;
        fd.out_dtype = t->dtype;
        fd.out_ndim = sd;
        memcpy(fd.out_shape, ss, (size_t)sd * sizeof *ss);
    } else {
        if (ops[0].kind != NN_DATA_TO_TENSOR || t->dtype != NN_U8 || (sd != 2 && sd != 3))
            return nn_error(NN_ERR_NOTIMPL, "data source: only ToTensor on uint8 [H, W] or [C, H, W] images, then Normalize, run in C");
        fd.kind = FIELD_LUT;
        fd.out_dtype = NN_F32;
        fd.out_ndim = 3;
        fd.out_shape[0] = sd == 2 ? 1 : ss[0];
        fd.out_shape[1] = ss[sd - 2];
        fd.out_shape[2] = ss[sd - 1];
        fd.nch = (int)fd.out_shape[0];
        fd.chsize = fd.out_shape[1] * fd.out_shape[2];
        if (fd.nch < 1 || fd.nch > 4096) return nn_error(NN_ERR_NOTIMPL, "data source: %d channels", fd.nch);
        for (int k = 1; k < nops; k++) {
            if (ops[k].kind != NN_DATA_NORMALIZE || (ops[k].n != 1 && ops[k].n != fd.nch))
                return nn_error(NN_ERR_NOTIMPL, "data source: transform %d is not a Normalize for %d channels", k, fd.nch);
            for (int j = 0; j < ops[k].n; j++)
                if ((float)ops[k].std[j] == 0.0f) return nn_error(NN_ERR_NOTIMPL, "data source: Normalize with a zero std");
        }
        if (build_lut(&fd, ops, nops, &lut)) return nn_last_status();
    }
    fd.src = nn_contiguous(t);
    if (!fd.src) {
        free(lut);
        return nn_last_status();
    }
    fd.lut = lut;
    if (!s->nfields) s->rows = s->length = t->shape[0];
    s->luts[s->nfields] = lut;
    s->fields[s->nfields++] = fd;
    return NN_OK;
}

/* idx in [-len, len) -> [0, len), or an error. */
static nn_status wrap_index(int64_t *i, int64_t len)
{
    if (*i < -len || *i >= len)
        return nn_error(NN_ERR_INDEX, "index %lld is out of range for a dataset of size %lld", (long long)*i, (long long)len);
    if (*i < 0) *i += len;
    return NN_OK;
}

nn_data_source *nn_data_source_subset(nn_data_source *s, const int64_t *idx, int64_t n)
{
    nn_data_source *sub = nn_data_source_new();
    if (!sub) return NULL;
    sub->map = malloc((size_t)(n ? n : 1) * sizeof *sub->map);
    if (!sub->map) {
        free(sub);
        nn_error(NN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t i = idx[k];
        if (wrap_index(&i, s->length)) {
            free(sub->map);
            free(sub);
            return NULL;
        }
        sub->map[k] = s->map ? s->map[i] : i;
    }
    sub->base = nn_data_source_retain(s->base ? s->base : s);
    sub->nfields = s->nfields;
    memcpy(sub->fields, s->fields, sizeof s->fields);
    sub->rows = s->rows;
    sub->length = n;
    return sub;
}

typedef struct {
    void (*free_fn)(void *);
} pinned_ctx;

static void pinned_release(void *data, void *ctx)
{
    ((pinned_ctx *)ctx)->free_fn(data);
    free(ctx);
}

static nn_tensor *alloc_batch(const field *fd, int64_t n, bool pin)
{
    int64_t shape[NN_MAX_DIMS + 1] = {n};
    int ndim = fd->out_ndim + 1;
    if (ndim > NN_MAX_DIMS) {
        nn_error(NN_ERR_SHAPE, "data source: a batch of %d-dim samples has more than %d dims", fd->out_ndim, NN_MAX_DIMS);
        return NULL;
    }
    memcpy(shape + 1, fd->out_shape, (size_t)fd->out_ndim * sizeof *shape);
    void *(*alloc_fn)(size_t);
    void (*free_fn)(void *);
    if (!pin || !pinned_hooks(&alloc_fn, &free_fn)) return nn_empty(ndim, shape, fd->out_dtype, NN_DEVICE_CPU);
    pinned_ctx *ctx = malloc(sizeof *ctx); /* the free function travels with the buffer */
    if (!ctx) {
        nn_error(NN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    ctx->free_fn = free_fn;
    size_t nbytes = nn_dtype_size(fd->out_dtype);
    for (int i = 0; i < ndim; i++) nbytes *= (size_t)shape[i];
    void *p = alloc_fn(nbytes ? nbytes : 1);
    if (!p) {
        free(ctx);
        nn_error(NN_ERR_NOMEM, "out of pinned memory allocating %zu bytes", nbytes);
        return NULL;
    }
    nn_tensor *t = nn_from_blob(p, ndim, shape, NULL, fd->out_dtype, NN_DEVICE_CPU, pinned_release, ctx);
    if (!t) ctx->free_fn(p), free(ctx);
    else t->storage->pinned = true;
    return t;
}

static void fill_sample(const field *fd, int64_t row, char *dst, int64_t b)
{
    const uint8_t *src = (const uint8_t *)nn_data(fd->src) + (size_t)row * fd->row_bytes;
    if (fd->kind == FIELD_COPY) {
        memcpy(dst + (size_t)b * fd->row_bytes, src, fd->row_bytes);
        return;
    }
    float *o = (float *)dst + b * fd->row_numel;
    for (int c = 0; c < fd->nch; c++) {
        const float *lut = fd->lut + c * 256;
        const uint8_t *in = src + c * fd->chsize;
        float *oc = o + c * fd->chsize;
        for (int64_t e = 0; e < fd->chsize; e++) oc[e] = lut[in[e]];
    }
}

nn_status nn_data_fetch(const nn_data_source *s, const int64_t *idx, int64_t n, bool pin, nn_tensor **out)
{
    int nf = s->nfields;
    for (int f = 0; f < nf; f++) out[f] = NULL;
    for (int64_t b = 0; b < n; b++) {
        int64_t i = idx[b];
        if (wrap_index(&i, s->length)) return nn_last_status();
    }
    for (int f = 0; f < nf; f++)
        if (!(out[f] = alloc_batch(&s->fields[f], n, pin))) {
            for (int g = 0; g < f; g++) nn_release(out[g]), out[g] = NULL;
            return nn_last_status();
        }
    for (int64_t b = 0; b < n; b++) {
        int64_t i = idx[b];
        if (i < 0) i += s->length;
        int64_t row = s->map ? s->map[i] : i;
        for (int f = 0; f < nf; f++) fill_sample(&s->fields[f], row, nn_data(out[f]), b);
    }
    return NN_OK;
}
