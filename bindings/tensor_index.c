/* Python's tensor subscripts, the fallbacks of the Tensor's __index and __newindex:
 *
 *   x[":, 1:3"]  x["..., 0"]  x["None, ::2"]   a string holding what Python writes between
 *                                             the brackets: basic indexing, a view
 *   x[idx]       an int64/int32 tensor or a Lua list of integers: rows of dim 0 (a copy)
 *   x[mask]      a bool tensor (or a list of booleans) over x's leading dims: the selected
 *                elements, [k, rest...] in row-major order (a copy)
 *   x[{i, j}]    a list of index tensors (or lists): x[i[k], j[k], ...] for the broadcast k,
 *                Python's x[i, j] (torch._index_tensors, in Lua)
 *
 * and the assignments to each (x[key] = number or tensor). Semantics and messages are
 * PyTorch's: at::indexing::get_item / set_item for subscripts (integers select, slices clamp,
 * one `...`, None adds a dim; set_item's copy_to for assignment), index / index_put_ for
 * tensor keys. Integer keys (x[0], x[-1] = v) stay in tensor.c. */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "lt.h"
#include "mask.h"
#include "nnfunc.h"

/* ---- parsing ---- */

enum { IT_INT, IT_SLICE, IT_NONE, IT_ELLIPSIS };
typedef struct {
    int kind;
    int64_t v[3];   /* IT_INT: v[0]; IT_SLICE: start, stop, step */
    bool has[3];    /* IT_SLICE: which of them are given (not empty or None) */
} item;

#define MAX_ITEMS 32
typedef struct {
    int n;
    bool tuple;     /* a comma: "0," indexes like (0,), not like 0 */
    item it[MAX_ITEMS];
} subscript;

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

static const char *trim_end(const char *p, const char *end)
{
    while (end > p && isspace((unsigned char)end[-1])) end--;
    return end;
}

static bool is_word(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(end - p) == n && !memcmp(p, w, n);
}

/* A Python integer literal in [p, end) (trimmed): unary signs, then decimal digits with
 * single underscores between them; no leading zeros unless all zeros. Values past int64
 * saturate (they are out of range for any size anyway). */
static bool parse_int(const char *p, const char *end, int64_t *v)
{
    bool neg = false;
    while (p < end && (*p == '-' || *p == '+' || isspace((unsigned char)*p))) {
        if (*p == '-') neg = !neg;
        p++;
    }
    if (p == end || !isdigit((unsigned char)*p)) return false;
    bool nonzero = false, leading_zero = *p == '0';
    uint64_t u = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (const char *q = p; q < end; q++) {
        if (*q == '_') {
            if (q + 1 == end || !isdigit((unsigned char)q[1]) || !isdigit((unsigned char)q[-1])) return false;
            continue;
        }
        if (!isdigit((unsigned char)*q)) return false;
        int d = *q - '0';
        nonzero |= d != 0;
        u = u > (lim - (uint64_t)d) / 10 ? lim : u * 10 + (uint64_t)d;
    }
    if (leading_zero && nonzero) return false;
    *v = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

/* One comma-separated item [p, end); false if malformed. */
static bool parse_item(const char *p, const char *end, item *it)
{
    p = skip_space(p, end);
    end = trim_end(p, end);
    memset(it, 0, sizeof *it);
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon) {
        if (is_word(p, end, "...") || is_word(p, end, "Ellipsis")) it->kind = IT_ELLIPSIS;
        else if (is_word(p, end, "None")) it->kind = IT_NONE;
        else if (parse_int(p, end, &it->v[0])) it->kind = IT_INT;
        else return false;
        return true;
    }
    it->kind = IT_SLICE;
    const char *part = p;
    for (int k = 0; k < 3; k++) {
        const char *stop = memchr(part, ':', (size_t)(end - part));
        if (!stop) stop = end;
        else if (k == 2) return false; /* a third colon */
        const char *a = skip_space(part, stop), *b = trim_end(a, stop);
        if (a < b && !is_word(a, b, "None")) {
            if (!parse_int(a, b, &it->v[k])) return false;
            it->has[k] = true;
        }
        if (stop == end) break;
        part = stop + 1;
    }
    return true;
}

/* A string that tried to be a subscript: errors in it are reported, not taken for a missing
 * method (method and field names have no ':', ',' or '...' and start with a letter or '_'). */
static bool looks_like_subscript(const char *s)
{
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    return strchr(s, ':') || strchr(s, ',') || strstr(s, "...") || isdigit((unsigned char)*p) || (*p && strchr("+-[(", *p));
}

/* Parse s into out. Returns false for a string that is no subscript (the caller answers
 * nil); raises for one that looks like a subscript but is malformed. */
static bool parse_subscript(lua_State *L, const char *s, size_t len, subscript *out)
{
    const char *p = s, *end = s + len;
    out->n = 0;
    out->tuple = false;
    if (skip_space(p, end) == end) return false;
    const char *why = NULL;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if (skip_space(p, stop) == stop) { /* an empty item: only after a last comma, "0," */
            if (comma || out->n == 0) {
                why = "empty item";
                break;
            }
            return true;
        }
        if (out->n == MAX_ITEMS) {
            why = "too many items";
            break;
        }
        if (!parse_item(p, stop, &out->it[out->n])) {
            const char *a = skip_space(p, stop), *b = trim_end(a, stop);
            if (is_word(a, b, "True") || is_word(a, b, "False"))
                return luaL_error(L, "invalid tensor subscript \"%s\": True and False indices are not supported", s);
            lua_pushfstring(L, "\"%s\" is not an integer, a slice (start:stop:step), ..., or None", lua_pushlstring(L, a, (size_t)(b - a)));
            why = lua_tostring(L, -1);
            break;
        }
        out->n++;
        if (!comma) return true;
        out->tuple = true;
        p = comma + 1;
    }
    if (!looks_like_subscript(s)) return false;
    return luaL_error(L, "invalid tensor subscript \"%s\": %s", s, why);
}

/* ---- basic indexing: views ---- */

/* PyTorch's applySelect: the bounds message names real_dim, the item's place in the subscript. */
static nn_tensor *select_item(nn_tensor *t, int dim, int64_t index, int real_dim)
{
    if (t->ndim == 0) {
        nn_error(NN_ERR_INDEX, "invalid index of a 0-dim tensor. Use `tensor:item()` to convert a 0-dim tensor to a number");
        return NULL;
    }
    int64_t size = t->shape[dim];
    if (index < -size || index >= size) {
        nn_error(NN_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)index, real_dim,
                 (long long)size);
        return NULL;
    }
    return nn_select(t, dim, index);
}

/* PyTorch's applySlice; skip_full: a tuple's `:` over a whole dim is no op (t itself, retained). */
static nn_tensor *slice_item(nn_tensor *t, int dim, const item *it, bool skip_full)
{
    int64_t step = it->has[2] ? it->v[2] : 1;
    if (step == 0) {
        nn_error(NN_ERR_ARG, "slice step cannot be zero");
        return NULL;
    }
    if (step < 0) {
        nn_error(NN_ERR_ARG, "step must be greater than zero");
        return NULL;
    }
    int64_t start = it->has[0] ? it->v[0] : 0, stop = it->has[1] ? it->v[1] : INT64_MAX;
    if (skip_full && t->ndim > 0 && start == 0 && stop >= t->shape[dim] && step == 1) return nn_retain(t);
    return nn_slice(t, dim, start, stop, step);
}

/* A new tensor viewing all of t (x[...], x[:, :]): PyTorch's alias. */
static nn_tensor *alias(nn_tensor *t) { return nn_view(t, t->ndim, t->shape); }

/* x[s], a view (NULL with the error set). for_set: x itself (retained) where reading would
 * give an alias, since assigning through either is the same. */
static nn_tensor *apply(nn_tensor *x, const subscript *s, bool for_set)
{
    int ellipses = 0, specified = 0;
    for (int i = 0; i < s->n; i++) {
        ellipses += s->it[i].kind == IT_ELLIPSIS;
        specified += s->it[i].kind == IT_INT || s->it[i].kind == IT_SLICE;
    }
    if (ellipses > 1) {
        nn_error(NN_ERR_INDEX, "an index can only have a single ellipsis ('...')");
        return NULL;
    }
    if (s->n == 1 && !s->tuple) { /* get_item's single index: no dimension count, no slice skipping */
        const item *it = &s->it[0];
        switch (it->kind) {
        case IT_INT: return select_item(x, 0, it->v[0], 0);
        case IT_SLICE: return slice_item(x, 0, it, false);
        case IT_NONE: return nn_unsqueeze(x, 0);
        default: return for_set ? nn_retain(x) : alias(x);
        }
    }
    if (specified > x->ndim) {
        nn_error(NN_ERR_INDEX, "too many indices for tensor of dimension %d", x->ndim);
        return NULL;
    }
    nn_tensor *r = nn_retain(x), *next;
    int dim = 0;
    for (int i = 0; i < s->n; i++) {
        const item *it = &s->it[i];
        switch (it->kind) {
        case IT_INT: next = select_item(r, dim, it->v[0], i); break;
        case IT_SLICE: next = slice_item(r, dim++, it, true); break;
        case IT_NONE: next = nn_unsqueeze(r, dim++); break;
        default: dim += x->ndim - specified; continue;
        }
        nn_release(r);
        if (!(r = next)) return NULL;
    }
    if (r == x && !for_set) {
        next = alias(x);
        nn_release(r);
        r = next;
    }
    return r;
}

/* set_item's copy_to: dst = src, src's leading size-1 dims dropped, then expanded to dst. */
static nn_status copy_to(nn_tensor *dst, nn_tensor *src)
{
    if (src->ndim == 0 || (src->ndim == dst->ndim && !memcmp(src->shape, dst->shape, sizeof(int64_t) * (size_t)dst->ndim)))
        return nn_copy_(dst, src);
    int first = 0;
    while (first < src->ndim && src->shape[first] == 1) first++;
    nn_tensor *v = first ? nn_view(src, src->ndim - first, src->shape + first) : nn_retain(src);
    nn_tensor *e = v ? nn_expand(v, dst->ndim, dst->shape) : NULL;
    nn_status st = e ? nn_copy_(dst, e) : nn_last_status();
    nn_release(e);
    nn_release(v);
    return st;
}

/* ---- tensor keys: advanced indexing on dim 0 ---- */

static bool is_mask(const nn_tensor *k) { return k->dtype == NN_BOOL || k->dtype == NN_U8; }

/* Indices may live on the CPU or on x's device. */
static nn_status check_key_device(const nn_tensor *x, const nn_tensor *k)
{
    nn_device kd = k->storage->device, xd = x->storage->device;
    if (kd.type == NN_CPU || nn_device_eq(kd, xd)) return NN_OK;
    char b[16];
    return nn_error(NN_ERR_DEVICE, "indices should be either on cpu or on the same device as the indexed tensor (%s)",
                    nn_device_str(b, xd));
}

/* The mask k against x's leading dims (PyTorch's messages); *n: the number of positions it covers. */
static nn_status check_mask(const nn_tensor *x, const nn_tensor *k, int64_t *n)
{
    if (k->ndim > x->ndim) return nn_error(NN_ERR_INDEX, "too many indices for tensor of dimension %d", x->ndim);
    char b1[160], b2[160];
    *n = 1;
    for (int d = 0; d < k->ndim; d++) {
        if (k->shape[d] != x->shape[d])
            return nn_error(NN_ERR_INDEX, "The shape of the mask %s at index %d does not match the shape of the indexed tensor %s at index %d",
                            nn_shape_str(b1, k->ndim, k->shape), d, nn_shape_str(b2, x->ndim, x->shape), d);
        *n *= k->shape[d];
    }
    if (x->ndim - k->ndim + 1 > NN_MAX_DIMS) /* the rows view [n, rest...] has one dim more */
        return nn_error(NN_ERR_ARG, "indexing: a 0-dim mask on a tensor of %d dimensions is not supported (at most %d)", x->ndim,
                        NN_MAX_DIMS - 1);
    return check_key_device(x, k);
}

/* Integer key k (any shape) as a flat int64 index on x's device with negatives wrapped.
 * A CPU key is checked entry by entry (PyTorch's message); a GPU key is wrapped with tensor
 * ops, without a sync, and a bad entry is index_select's error when its kernel runs. */
static nn_tensor *flat_index(nn_tensor *x, nn_tensor *k)
{
    int64_t size = x->shape[0], n = nn_numel(k);
    if (k->storage->device.type == NN_CPU) {
        nn_tensor *w = nn_to_dtype(k, NN_I64), *c = w ? nn_contiguous(w) : NULL;
        nn_tensor *out = c ? nn_empty(1, &n, NN_I64, NN_DEVICE_CPU) : NULL;
        nn_release(w);
        if (!out) {
            nn_release(c);
            return NULL;
        }
        const int64_t *src = nn_data(c);
        int64_t *dst = nn_data(out);
        for (int64_t i = 0; i < n; i++) {
            if (src[i] < -size || src[i] >= size) {
                nn_error(NN_ERR_INDEX, "index %lld is out of bounds for dimension 0 with size %lld", (long long)src[i], (long long)size);
                nn_release(c);
                nn_release(out);
                return NULL;
            }
            dst[i] = src[i] < 0 ? src[i] + size : src[i];
        }
        nn_release(c);
        if (x->storage->device.type == NN_CPU) return out;
        nn_tensor *moved = nn_to_device(out, x->storage->device);
        nn_release(out);
        return moved;
    }
    nn_tensor *w = nn_to_dtype(k, NN_I64), *flat = w ? nn_reshape(w, 1, &n) : NULL;
    nn_tensor *zero = nn_scalar_i64(0), *sz = nn_scalar_i64(size);
    nn_tensor *neg = flat && zero ? nn_binary(NN_OP_lt, flat, zero) : NULL;
    nn_tensor *up = neg && sz ? nn_binary(NN_OP_add, flat, sz) : NULL;
    nn_tensor *out = up ? nn_where(neg, up, flat) : NULL;
    nn_release(w);
    nn_release(flat);
    nn_release(zero);
    nn_release(sz);
    nn_release(neg);
    nn_release(up);
    return out;
}

/* x[k] for a tensor key k. */
static nn_tensor *adv_get(nn_tensor *x, nn_tensor *k)
{
    int64_t shape[NN_MAX_DIMS];
    if (is_mask(k)) {
        int64_t n;
        if (check_mask(x, k, &n)) return NULL;
        int rest = x->ndim - k->ndim;
        shape[0] = n;
        memcpy(shape + 1, x->shape + k->ndim, sizeof(int64_t) * (size_t)rest);
        nn_tensor *xr = nn_reshape(x, 1 + rest, shape);
        nn_tensor *pos = xr ? nn_mask_positions(k) : NULL;
        nn_tensor *on = pos ? nn_to_device(pos, x->storage->device) : NULL;
        nn_tensor *r = on ? nn_index_select(xr, 0, on) : NULL;
        nn_release(xr);
        nn_release(pos);
        nn_release(on);
        return r;
    }
    if (k->dtype != NN_I64 && k->dtype != NN_I32) {
        nn_error(NN_ERR_INDEX, "tensors used as indices must be long, int, byte or bool tensors");
        return NULL;
    }
    if (check_key_device(x, k)) return NULL;
    if (k->ndim == 0) { /* a 0-dim integer tensor indexes like an integer: a view (PyTorch reads it, a sync on a GPU) */
        nn_tensor *h = nn_to_device(k, NN_DEVICE_CPU);
        if (!h) return NULL;
        int64_t v = nn_get_i64(h, NULL);
        nn_release(h);
        return select_item(x, 0, v, 0);
    }
    if (x->ndim == 0) {
        nn_error(NN_ERR_INDEX, "too many indices for tensor of dimension 0");
        return NULL;
    }
    nn_tensor *ix = flat_index(x, k), *r = ix ? nn_index_select(x, 0, ix) : NULL;
    nn_release(ix);
    if (!r || k->ndim == 1) return r;
    if (k->ndim + x->ndim - 1 > NN_MAX_DIMS) {
        nn_release(r);
        nn_error(NN_ERR_ARG, "indexing: the result would have more than %d dimensions", NN_MAX_DIMS);
        return NULL;
    }
    memcpy(shape, k->shape, sizeof(int64_t) * (size_t)k->ndim); /* idx.shape + x.shape[1:] */
    memcpy(shape + k->ndim, x->shape + 1, sizeof(int64_t) * (size_t)(x->ndim - 1));
    nn_tensor *out = nn_reshape(r, k->ndim + x->ndim - 1, shape);
    nn_release(r);
    return out;
}

/* The written rows of x viewed as [N, rest...] for an assignment through k: pos, the flat
 * index (int64, x's device), hit, a bool [N] marking the rows written, and target, the shape
 * of x[k] (what a value broadcasts to). */
typedef struct {
    int64_t n_rows, target[NN_MAX_DIMS];
    int rest, target_nd;
    nn_tensor *pos, *hit;
} put_plan;

static nn_status plan_put(nn_tensor *x, nn_tensor *k, put_plan *p)
{
    memset(p, 0, sizeof *p);
    nn_device dev = x->storage->device;
    if (is_mask(k)) {
        if (check_mask(x, k, &p->n_rows)) return nn_last_status();
        p->rest = x->ndim - k->ndim;
        p->pos = nn_mask_positions(k);
        nn_tensor *on = p->pos ? nn_to_device(p->pos, dev) : NULL;
        nn_release(p->pos);
        p->pos = on;
        nn_tensor *kd = on ? nn_to_device(k, dev) : NULL; /* the mask itself marks the rows */
        p->hit = kd ? nn_reshape(kd, 1, &p->n_rows) : NULL;
        nn_release(kd);
        if (!p->hit) return nn_last_status();
        p->target_nd = 1;
        p->target[0] = nn_numel(p->pos);
    } else {
        if (k->dtype != NN_I64 && k->dtype != NN_I32)
            return nn_error(NN_ERR_INDEX, "tensors used as indices must be long, int, byte or bool tensors");
        if (check_key_device(x, k)) return nn_last_status();
        if (x->ndim == 0) return nn_error(NN_ERR_INDEX, "too many indices for tensor of dimension 0");
        p->n_rows = x->shape[0];
        p->rest = x->ndim - 1;
        if (!(p->pos = flat_index(x, k))) return nn_last_status();
        /* rows hit: count each row's entries (index_add_ of ones), then > 0 */
        int64_t n = nn_numel(p->pos);
        nn_tensor *count = nn_zeros(1, &p->n_rows, NN_F32, dev), *ones = nn_ones(1, &n, NN_F32, dev), *zero = nn_scalar_f64(0);
        if (count && ones && zero && !nn_index_add_(count, 0, p->pos, ones, 1.0)) p->hit = nn_binary(NN_OP_gt, count, zero);
        nn_release(count);
        nn_release(ones);
        nn_release(zero);
        if (!p->hit) return nn_last_status();
        p->target_nd = k->ndim;
        memcpy(p->target, k->shape, sizeof(int64_t) * (size_t)k->ndim);
    }
    if (p->target_nd + p->rest > NN_MAX_DIMS) return nn_error(NN_ERR_ARG, "indexing: more than %d dimensions", NN_MAX_DIMS);
    memcpy(p->target + p->target_nd, x->shape + x->ndim - p->rest, sizeof(int64_t) * (size_t)p->rest);
    p->target_nd += p->rest;
    return NN_OK;
}

/* The value to write, as rows [N, rest...] where hit (the rows not hit are zero), or for a
 * single-element fill a 0-dim tensor of x's dtype. */
static nn_tensor *put_source(nn_tensor *x, nn_tensor *k, nn_tensor *v, bool is_number, const put_plan *p)
{
    nn_device dev = x->storage->device;
    char b1[160], b2[160], d1[16], d2[16];
    /* a number, or one CPU element into a mask: masked_fill_, which casts */
    if (is_number || (is_mask(k) && nn_numel(v) == 1 && v->storage->device.type == NN_CPU)) {
        nn_tensor *v0 = v->ndim ? nn_reshape(v, 0, NULL) : nn_retain(v);
        nn_tensor *c = v0 ? nn_to_dtype(v0, x->dtype) : NULL, *out = c ? nn_to_device(c, dev) : NULL;
        nn_release(v0);
        nn_release(c);
        return out;
    }
    if (v->dtype != x->dtype) {
        nn_error(NN_ERR_DTYPE, "Index put requires the source and destination dtypes match, got %s for the destination and %s for the source.",
                 nn_dtype_scalar_name(x->dtype), nn_dtype_scalar_name(v->dtype));
        return NULL;
    }
    if (!nn_device_eq(v->storage->device, dev) && v->ndim != 0) {
        nn_error(NN_ERR_DEVICE, "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                 nn_device_str(d1, dev), nn_device_str(d2, v->storage->device));
        return NULL;
    }
    int first = 0; /* set_item drops the value's leading size-1 dims */
    while (first < v->ndim && v->shape[first] == 1) first++;
    nn_tensor *vd = nn_to_device(v, dev), *vs = vd ? nn_view(vd, vd->ndim - first, vd->shape + first) : NULL;
    nn_release(vd);
    if (!vs) return NULL;
    nn_tensor *e = nn_expand(vs, p->target_nd, p->target);
    if (!e) {
        nn_release(vs);
        nn_error(NN_ERR_SHAPE, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
                 nn_shape_str(b1, v->ndim, v->shape), nn_shape_str(b2, p->target_nd, p->target));
        return NULL;
    }
    nn_release(vs);
    int64_t rows[NN_MAX_DIMS], n = nn_numel(p->pos);
    rows[0] = n;
    memcpy(rows + 1, x->shape + x->ndim - p->rest, sizeof(int64_t) * (size_t)p->rest);
    nn_tensor *flat = nn_reshape(e, 1 + p->rest, rows);
    nn_release(e);
    rows[0] = p->n_rows;
    nn_tensor *full = flat ? nn_zeros(1 + p->rest, rows, x->dtype, dev) : NULL;
    /* index_put_ with repeated indices leaves which value lands unspecified; here they add up */
    if (full && nn_index_add_(full, 0, p->pos, flat, 1.0)) {
        nn_release(full);
        full = NULL;
    }
    nn_release(flat);
    return full;
}

/* x[k] = v for a tensor key: x = where(hit rows, value rows, x), copied into x in place (so
 * autograd sees one in-place copy_, and the value gets the gradient of the rows it wrote). */
static nn_status adv_set(nn_tensor *x, nn_tensor *k, nn_tensor *v, bool is_number)
{
    if (is_mask(k) || k->ndim != 0) {
        put_plan p;
        nn_status st = plan_put(x, k, &p);
        nn_tensor *src = st ? NULL : put_source(x, k, v, is_number, &p);
        int64_t shape[NN_MAX_DIMS];
        shape[0] = p.n_rows;
        memcpy(shape + 1, x->shape + x->ndim - p.rest, sizeof(int64_t) * (size_t)p.rest);
        nn_tensor *xr = src ? nn_reshape(x, 1 + p.rest, shape) : NULL;
        for (int d = 1; d <= p.rest; d++) shape[d] = 1;
        nn_tensor *hit = xr ? nn_reshape(p.hit, 1 + p.rest, shape) : NULL;
        nn_tensor *r = hit ? nn_where(hit, src, xr) : NULL;
        nn_tensor *rv = r ? nn_view(r, x->ndim, x->shape) : NULL;
        st = rv ? nn_copy_(x, rv) : nn_last_status();
        nn_release(rv);
        nn_release(r);
        nn_release(hit);
        nn_release(xr);
        nn_release(src);
        nn_release(p.hit);
        nn_release(p.pos);
        return st;
    }
    /* a 0-dim integer key indexes like an integer */
    nn_tensor *view = adv_get(x, k);
    nn_status st = view ? copy_to(view, v) : nn_last_status();
    nn_release(view);
    return st;
}

/* ---- Lua entry points ---- */

/* Raise the engine's message without its "fn: " prefix. */
static int raise_error(lua_State *L)
{
    const char *msg = nn_last_error(), *p = msg;
    while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_') p++;
    if (p > msg && p[0] == ':' && p[1] == ' ') msg = p + 2;
    return luaL_error(L, "%s", msg);
}

/* The key at idx as an index tensor (a new reference): a tensor, or a flat Lua list of
 * integers (int64) or booleans (a bool mask). Other keys raise tensor.c's message. */
static nn_tensor *key_tensor(lua_State *L, int idx)
{
    nn_tensor *k = lt_totensor(L, idx);
    if (k) return nn_retain(k);
    if (!lua_istable(L, idx) || lua_getmetatable(L, idx)) {
        luaL_error(L, "tensors are indexed by integers (0-based), got %s", luaL_typename(L, idx));
        return NULL;
    }
    int64_t n = (int64_t)lua_rawlen(L, idx);
    lua_rawgeti(L, idx, 1);
    bool bools = lua_type(L, -1) == LUA_TBOOLEAN;
    lua_pop(L, 1);
    for (int64_t i = 1; i <= n; i++) { /* check everything before allocating */
        int t = lua_rawgeti(L, idx, i), isint = 0;
        if (!bools) lua_tointegerx(L, -1, &isint);
        lua_pop(L, 1);
        if (bools ? t != LUA_TBOOLEAN : !isint)
            luaL_error(L, "a list used as an index must hold only integers or only booleans (entry %I is %s)", (lua_Integer)i,
                       lua_typename(L, t));
    }
    k = nn_empty(1, &n, bools ? NN_BOOL : NN_I64, NN_DEVICE_CPU);
    if (!k) raise_error(L);
    for (int64_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        if (bools) ((uint8_t *)nn_data(k))[i] = (uint8_t)lua_toboolean(L, -1);
        else ((int64_t *)nn_data(k))[i] = lua_tointeger(L, -1);
        lua_pop(L, 1);
    }
    return k;
}

/* Whether the key at idx is a list of index tensors or index lists, x[{rows, cols}] (Python's
 * x[rows, cols]; an integer among them, x[{0, cols}], indexes as a 0-d tensor would): some
 * entry is a tensor or a table. */
static bool is_index_list(lua_State *L, int idx)
{
    if (!lua_istable(L, idx) || lt_totensor(L, idx)) return false;
    if (lua_getmetatable(L, idx)) { lua_pop(L, 1); return false; }
    bool yes = false;
    for (lua_Integer i = 1; !yes; i++) {
        int t = lua_rawgeti(L, idx, i);
        yes = t == LUA_TTABLE || lt_totensor(L, -1) != NULL;
        lua_pop(L, 1);
        if (t == LUA_TNIL) break;
    }
    return yes;
}

/* torch._index_tensors(x, key[, value]) from torch_tensor_ops2.lua: a list of index tensors is
 * indexed (or assigned) there, on top of index_put / index_select. */
static int index_list(lua_State *L, bool set)
{
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "torch");
    lua_getfield(L, -1, "_index_tensors");
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    if (set) lua_pushvalue(L, 3);
    lua_call(L, set ? 3 : 2, set ? 0 : 1);
    return set ? 0 : 1;
}

int lt_index_get(lua_State *L)
{
    nn_tensor *r;
    if (is_index_list(L, 2)) return index_list(L, false);
    if (lua_type(L, 2) == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, 2, &len);
        subscript sub;
        if (!parse_subscript(L, s, len, &sub)) {
            lua_pushnil(L); /* not a subscript: a missing method or field */
            return 1;
        }
        r = apply(lt_check(L, 1), &sub, false);
    } else {
        nn_tensor *x = lt_check(L, 1), *k = key_tensor(L, 2);
        r = adv_get(x, k);
        nn_release(k);
    }
    if (!r) return raise_error(L);
    lt_push(L, r);
    return 1;
}

int lt_index_set(lua_State *L)
{
    if (is_index_list(L, 2)) return index_list(L, true);
    subscript sub;
    bool is_string = lua_type(L, 2) == LUA_TSTRING;
    if (is_string) {
        size_t len;
        const char *s = lua_tolstring(L, 2, &len);
        if (!parse_subscript(L, s, len, &sub)) return 0;
    }
    nn_tensor *x = lt_check(L, 1);
    if (!lt_is_operand(L, 3))
        return luaL_error(L, "cannot assign a %s to a tensor element (tensor or number expected)", luaL_typename(L, 3));
    bool is_number = !lt_is_tensor(L, 3);
    nn_tensor *k = is_string ? NULL : key_tensor(L, 2);
    nn_tensor *v = lt_operand(L, 3);
    nn_status st;
    if (!v) st = nn_last_status();
    else if (is_string) {
        nn_tensor *view = apply(x, &sub, true);
        st = view ? copy_to(view, v) : nn_last_status();
        nn_release(view);
    } else {
        st = adv_set(x, k, v, is_number);
    }
    nn_release(v);
    nn_release(k);
    if (st) return raise_error(L);
    return 1;
}
