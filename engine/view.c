/* Views: new headers over the same storage (shape, strides, offset), no copy.
 * Semantics and messages follow PyTorch's view/reshape/transpose/... */
#include <string.h>

#include "backend.h"
#include "grad.h"
#include "memory_format.h"
#include "ops.h"

#define SHAPE_BUF 192

static int64_t prod(int n, const int64_t *s)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= s[i];
    return p;
}

/* v is a view of t: remember the tensor it views (an in-place op on v changes that one too). */
static void link_base(nn_tensor *v, nn_tensor *t)
{
    if (v && v->storage == t->storage && !v->base) v->base = nn_retain(t->base ? t->base : t);
}

/* Recording on the autograd graph: each takes the new view v of t (or NULL), and returns it,
 * or NULL (releasing it) when recording fails. */
static nn_tensor *rec_view(nn_tensor *v, const char *name, nn_tensor *t)
{
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_view(name, t, v)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

static nn_tensor *rec_slice(nn_tensor *v, const char *name, nn_tensor *t, int dim, int64_t start, int64_t step)
{
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_slice(name, t, v, dim, start, step)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

/* Resolve one -1 in shape against numel (PyTorch's infer_size). */
static nn_status infer_size(const char *fn, int ndim, const int64_t *shape, int64_t numel, int64_t *out)
{
    char b[SHAPE_BUF];
    if (ndim < 0 || ndim > NN_MAX_DIMS) return nn_error(NN_ERR_ARG, "%s: tensors have at most %d dimensions, got %d", fn, NN_MAX_DIMS, ndim);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return nn_error(NN_ERR_ARG, "%s: only one dimension can be inferred", fn);
            infer = i;
        } else if (shape[i] < 0) {
            return nn_error(NN_ERR_ARG, "%s: invalid shape dimension %lld", fn, (long long)shape[i]);
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0) {
            if (numel == 0)
                return nn_error(NN_ERR_SHAPE, "%s: cannot reshape tensor of 0 elements into shape %s because the unspecified "
                                "dimension size -1 can be any value and is ambiguous", fn, nn_shape_str(b, ndim, shape));
        } else if (numel % known == 0) {
            out[infer] = numel / known;
            return NN_OK;
        }
    } else if (known == numel) {
        return NN_OK;
    }
    return nn_error(NN_ERR_SHAPE, "%s: shape '%s' is invalid for input of size %lld", fn, nn_shape_str(b, ndim, shape), (long long)numel);
}

/* Strides that let t be viewed with shape ns, or false (PyTorch's computeStride): walk the old dims
 * from the back in chunks that are contiguous with each other; each chunk of the new shape must
 * cover exactly one such chunk of the old one. */
static bool view_strides(const nn_tensor *t, int nd, const int64_t *ns, int64_t *st)
{
    if (t->ndim == 0) {
        for (int i = 0; i < nd; i++) st[i] = 1;
        return true;
    }
    int64_t numel = nn_numel(t);
    if (numel == 0) {
        if (nd == t->ndim && !memcmp(ns, t->shape, nd * sizeof *ns)) {
            memcpy(st, t->strides, nd * sizeof *st);
            return true;
        }
        nn_contiguous_strides(nd, ns, st);
        return true;
    }
    int vd = nd - 1;
    int64_t base = t->strides[t->ndim - 1], tnumel = 1, vnumel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tnumel *= t->shape[td];
        bool chunk_end = td == 0 || (t->shape[td - 1] != 1 && t->strides[td - 1] != tnumel * base);
        if (!chunk_end) continue;
        while (vd >= 0 && (vnumel < tnumel || ns[vd] == 1)) {
            st[vd] = vnumel * base;
            vnumel *= ns[vd];
            vd--;
        }
        if (vnumel != tnumel) return false;
        if (td > 0) {
            base = t->strides[td - 1];
            tnumel = vnumel = 1;
        }
    }
    return vd == -1;
}

nn_tensor *nn_view(nn_tensor *t, int ndim, const int64_t *shape)
{
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    if (infer_size("view", ndim, shape, nn_numel(t), ns)) return NULL;
    if (!view_strides(t, ndim, ns, st)) {
        nn_error(NN_ERR_SHAPE, "view: view size is not compatible with input tensor's size and stride (at least one dimension "
                 "spans across two contiguous subspaces). Use .reshape(...) instead.");
        return NULL;
    }
    return rec_view(nn_make_view(t, ndim, ns, st, t->offset), "ViewBackward0", t);
}

nn_tensor *nn_reshape(nn_tensor *t, int ndim, const int64_t *shape)
{
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    if (infer_size("reshape", ndim, shape, nn_numel(t), ns)) return NULL;
    if (view_strides(t, ndim, ns, st)) return rec_view(nn_make_view(t, ndim, ns, st, t->offset), "ViewBackward0", t);
    nn_tensor *c = nn_contiguous(t); /* PyTorch: a clone, then _unsafe_view */
    if (!c) return NULL;
    nn_contiguous_strides(ndim, ns, st);
    nn_tensor *v = rec_view(nn_make_view(c, ndim, ns, st, c->offset), "UnsafeViewBackward0", c);
    nn_release(c);
    return v;
}

nn_tensor *nn_flatten(nn_tensor *t, int start_dim, int end_dim)
{
    if (nn_wrap_dim("flatten", &start_dim, t->ndim) || nn_wrap_dim("flatten", &end_dim, t->ndim)) return NULL;
    if (start_dim > end_dim) {
        nn_error(NN_ERR_ARG, "flatten: flatten() has invalid args: start_dim cannot come after end_dim");
        return NULL;
    }
    if (t->ndim == 0) return nn_reshape(t, 1, (int64_t[]){1});
    if (start_dim == end_dim) return nn_retain(t);
    int64_t ns[NN_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < start_dim; i++) ns[n++] = t->shape[i];
    ns[n++] = prod(end_dim - start_dim + 1, t->shape + start_dim);
    for (int i = end_dim + 1; i < t->ndim; i++) ns[n++] = t->shape[i];
    return nn_reshape(t, n, ns);
}

static nn_tensor *transpose(const char *name, nn_tensor *t, int d0, int d1)
{
    if (nn_wrap_dim("transpose", &d0, t->ndim) || nn_wrap_dim("transpose", &d1, t->ndim)) return NULL;
    nn_tensor *v = nn_make_view(t, t->ndim, t->shape, t->strides, t->offset);
    if (v && t->ndim) {
        v->shape[d0] = t->shape[d1], v->shape[d1] = t->shape[d0];
        v->strides[d0] = t->strides[d1], v->strides[d1] = t->strides[d0];
    }
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_transpose(name, t, v, d0, d1)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

nn_tensor *nn_transpose(nn_tensor *t, int d0, int d1) { return transpose("TransposeBackward0", t, d0, d1); }

nn_tensor *nn_t(nn_tensor *t)
{
    if (t->ndim > 2) {
        nn_error(NN_ERR_SHAPE, "t: t() expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
        return NULL;
    }
    return transpose("TBackward0", t, 0, t->ndim < 2 ? 0 : 1);
}

nn_tensor *nn_permute(nn_tensor *t, const int *dims)
{
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    bool seen[NN_MAX_DIMS] = {0};
    for (int i = 0; i < t->ndim; i++) {
        int d = dims[i];
        if (nn_wrap_dim("permute", &d, t->ndim)) return NULL;
        if (seen[d]) {
            nn_error(NN_ERR_ARG, "permute: permute(): duplicate dims are not allowed.");
            return NULL;
        }
        seen[d] = true;
        ns[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    nn_tensor *v = nn_make_view(t, t->ndim, ns, st, t->offset);
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_permute(t, v, dims)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

nn_tensor *nn_narrow(nn_tensor *t, int dim, int64_t start, int64_t length)
{
    if (t->ndim == 0) {
        nn_error(NN_ERR_SHAPE, "narrow: narrow() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (nn_wrap_dim("narrow", &dim, t->ndim)) return NULL;
    if (length < 0) {
        nn_error(NN_ERR_ARG, "narrow: narrow(): length must be non-negative.");
        return NULL;
    }
    int64_t size = t->shape[dim];
    if (start < -size || start > size) {
        nn_error(NN_ERR_INDEX, "narrow: start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                 (long long)-size, (long long)size, (long long)start);
        return NULL;
    }
    if (start < 0) start += size;
    if (start > size - length) {
        nn_error(NN_ERR_INDEX, "narrow: start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                 (long long)length, (long long)size);
        return NULL;
    }
    nn_tensor *v = nn_make_view(t, t->ndim, t->shape, t->strides, t->offset + start * t->strides[dim]);
    if (v) v->shape[dim] = length;
    return rec_slice(v, "SliceBackward0", t, dim, start, 1);
}

nn_tensor *nn_slice(nn_tensor *t, int dim, int64_t start, int64_t end, int64_t step)
{
    if (t->ndim == 0) {
        nn_error(NN_ERR_SHAPE, "slice: slice() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (nn_wrap_dim("slice", &dim, t->ndim)) return NULL;
    if (step <= 0) {
        nn_error(NN_ERR_ARG, "slice: slice step must be positive");
        return NULL;
    }
    int64_t size = t->shape[dim];
    if (start < 0) start = start < -size ? 0 : start + size;
    if (end < 0) end = end < -size ? 0 : end + size;
    if (start > size) start = size;
    if (end > size) end = size;
    if (end < start) end = start;
    int64_t len = (end - start + step - 1) / step;
    nn_tensor *v = nn_make_view(t, t->ndim, t->shape, t->strides, t->offset + (len ? start * t->strides[dim] : 0));
    if (v) {
        v->shape[dim] = len;
        v->strides[dim] = t->strides[dim] * step;
    }
    return rec_slice(v, "SliceBackward0", t, dim, start, step);
}

nn_tensor *nn_select(nn_tensor *t, int dim, int64_t index)
{
    if (t->ndim == 0) {
        nn_error(NN_ERR_SHAPE, "select: select() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    if (nn_wrap_dim("select", &dim, t->ndim)) return NULL;
    int64_t size = t->shape[dim];
    if (index < -size || index >= size) {
        char b[SHAPE_BUF];
        nn_error(NN_ERR_INDEX, "select(): index %lld out of range for tensor of size %s at dimension %d", (long long)index,
                 nn_shape_str(b, t->ndim, t->shape), dim);
        return NULL;
    }
    if (index < 0) index += size;
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != dim) ns[n] = t->shape[i], st[n++] = t->strides[i];
    nn_tensor *v = nn_make_view(t, n, ns, st, t->offset + index * t->strides[dim]);
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_select(t, v, dim, index)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

/* The diagonal of dims dim1 and dim2 (offset above the main one when positive, below when
 * negative) as a view: those dims dropped, one dim of the diagonal's length appended, whose
 * stride steps along both. */
nn_tensor *nn_diagonal(nn_tensor *t, int64_t offset, int dim1, int dim2)
{
    if (t->ndim < 2) {
        nn_error(NN_ERR_SHAPE, "diagonal(): expected a tensor with at least 2 dimensions, got %d", t->ndim);
        return NULL;
    }
    if (nn_wrap_dim("diagonal", &dim1, t->ndim) || nn_wrap_dim("diagonal", &dim2, t->ndim)) return NULL;
    if (dim1 == dim2) {
        nn_error(NN_ERR_ARG, "diagonal dimensions cannot be identical %d, %d", dim1, dim2);
        return NULL;
    }
    int64_t rows = t->shape[dim1] - (offset < 0 ? -offset : 0), cols = t->shape[dim2] - (offset > 0 ? offset : 0);
    int64_t len = rows < cols ? rows : cols;
    if (len < 0) len = 0;
    int64_t start = len == 0 ? 0 : offset >= 0 ? offset * t->strides[dim2] : -offset * t->strides[dim1];
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != dim1 && i != dim2) ns[n] = t->shape[i], st[n++] = t->strides[i];
    ns[n] = len, st[n++] = t->strides[dim1] + t->strides[dim2];
    nn_tensor *v = nn_make_view(t, n, ns, st, t->offset + start);
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_diagonal(t, v, offset, dim1, dim2)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

nn_tensor *nn_squeeze(nn_tensor *t, int dim)
{
    if (dim != NN_ALL_DIMS && nn_wrap_dim("squeeze", &dim, t->ndim)) return NULL;
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        bool drop = t->shape[i] == 1 && (dim == NN_ALL_DIMS || dim == i);
        if (!drop) ns[n] = t->shape[i], st[n++] = t->strides[i];
    }
    return rec_view(nn_make_view(t, n, ns, st, t->offset), dim == NN_ALL_DIMS ? "SqueezeBackward0" : "SqueezeBackward1", t);
}

nn_tensor *nn_unsqueeze(nn_tensor *t, int dim)
{
    if (nn_wrap_dim("unsqueeze", &dim, t->ndim + 1)) return NULL;
    if (t->ndim + 1 > NN_MAX_DIMS) {
        nn_error(NN_ERR_ARG, "unsqueeze: tensors have at most %d dimensions", NN_MAX_DIMS);
        return NULL;
    }
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == dim) {
            ns[i] = 1;
            st[i] = dim < t->ndim ? t->shape[dim] * t->strides[dim] : 1;
        } else {
            ns[i] = t->shape[j], st[i] = t->strides[j++];
        }
    }
    return rec_view(nn_make_view(t, t->ndim + 1, ns, st, t->offset), "UnsqueezeBackward0", t);
}

nn_tensor *nn_expand(nn_tensor *t, int ndim, const int64_t *shape)
{
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    if (ndim > NN_MAX_DIMS) {
        nn_error(NN_ERR_ARG, "expand: tensors have at most %d dimensions, got %d", NN_MAX_DIMS, ndim);
        return NULL;
    }
    if (ndim < t->ndim) {
        nn_error(NN_ERR_SHAPE, "expand: the number of sizes provided (%d) must be greater or equal to the number of dimensions "
                 "in the tensor (%d)", ndim, t->ndim);
        return NULL;
    }
    int64_t ns[NN_MAX_DIMS], st[NN_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = ndim - 1; i >= 0; i--) {
        int d = i - lead;
        int64_t size = d >= 0 ? t->shape[d] : 1;
        int64_t stride = d >= 0 ? t->strides[d] : (i + 1 < ndim ? ns[i + 1] * st[i + 1] : 1);
        int64_t target = shape[i];
        if (target == -1) {
            if (d < 0) {
                nn_error(NN_ERR_ARG, "expand: The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                         "dimension %d", i);
                return NULL;
            }
            target = size;
        } else if (target < 0) {
            nn_error(NN_ERR_ARG, "expand: the expanded size of the tensor (%lld) is not allowed", (long long)target);
            return NULL;
        }
        if (size != target) {
            if (size != 1) {
                nn_error(NN_ERR_SHAPE, "expand: The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                         "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", (long long)target, (long long)size,
                         i, nn_shape_str(b1, ndim, shape), nn_shape_str(b2, t->ndim, t->shape));
                return NULL;
            }
            size = target;
            stride = 0;
        }
        ns[i] = size;
        st[i] = stride;
    }
    nn_tensor *v = nn_make_view(t, ndim, ns, st, t->offset);
    link_base(v, t);
    if (v && nn_any_requires_grad(1, &t) && nn_record_expand(t, v)) {
        nn_release(v);
        return NULL;
    }
    return v;
}

nn_tensor *nn_contiguous(nn_tensor *t)
{
    if (nn_is_contiguous(t)) return nn_retain(t);
    int64_t strides[NN_MAX_DIMS];
    nn_contiguous_strides(t->ndim, t->shape, strides);
    return nn_copy_as(t, strides, t->dtype, "CloneBackward0");
}

/* A piece [start, start+len) of dim, as a view (on the graph as name). */
static nn_tensor *piece(const char *name, nn_tensor *t, int dim, int64_t start, int64_t len)
{
    nn_tensor *v = nn_make_view(t, t->ndim, t->shape, t->strides, t->offset + start * t->strides[dim]);
    if (v) v->shape[dim] = len;
    return rec_slice(v, name, t, dim, start, 1);
}

/* Writes the first min(n, max) pieces (sizes from size_of) into out; returns n, or -1 with nothing kept. */
static int pieces(const char *name, nn_tensor *t, int dim, int n, int64_t (*size_of)(int i, const void *ctx), const void *ctx,
                  nn_tensor **out, int max)
{
    int64_t start = 0;
    for (int i = 0; i < n && i < max; i++) {
        int64_t len = size_of(i, ctx);
        out[i] = piece(name, t, dim, start, len);
        if (!out[i]) {
            for (int k = 0; k < i; k++) nn_release(out[k]), out[k] = NULL;
            return -1;
        }
        start += len;
    }
    return n;
}

typedef struct { int64_t split_size, size; int n; } even_ctx;

static int64_t even_size(int i, const void *ctx)
{
    const even_ctx *c = ctx;
    return i == c->n - 1 ? c->size - c->split_size * (c->n - 1) : c->split_size;
}

static int64_t given_size(int i, const void *ctx) { return ((const int64_t *)ctx)[i]; }

static nn_status split_dim(const char *fn, nn_tensor *t, int *dim)
{
    if (t->ndim == 0) return nn_error(NN_ERR_SHAPE, "%s: %s expects at least a 1-dimensional tensor", fn, fn);
    return nn_wrap_dim(fn, dim, t->ndim);
}

/* Pieces of split_size with a smaller last one; at least one piece. */
static int split_even(const char *fn, nn_tensor *t, int64_t split_size, int dim, nn_tensor **out, int max)
{
    int64_t size = t->shape[dim];
    if (split_size == 0 && size != 0) {
        nn_error(NN_ERR_ARG, "%s: split_size can only be 0 if dimension size is 0, but got dimension size of %lld", fn,
                 (long long)size);
        return -1;
    }
    int64_t n = split_size ? (size + split_size - 1) / split_size : 1;
    if (n < 1) n = 1;
    if (n > INT32_MAX) {
        nn_error(NN_ERR_ARG, "%s: too many pieces (%lld)", fn, (long long)n);
        return -1;
    }
    even_ctx c = {split_size, size, (int)n};
    return pieces("SplitBackward0", t, dim, (int)n, even_size, &c, out, max);
}

int nn_chunk(nn_tensor *t, int chunks, int dim, nn_tensor **out, int max)
{
    if (split_dim("chunk", t, &dim)) return -1;
    if (chunks <= 0) {
        nn_error(NN_ERR_ARG, "chunk: chunk expects `chunks` to be greater than 0, got: %d", chunks);
        return -1;
    }
    int64_t size = t->shape[dim];
    if (size == 0) { /* `chunks` empty pieces, as PyTorch gives */
        even_ctx c = {0, 0, chunks};
        return pieces("SplitWithSizesBackward0", t, dim, chunks, even_size, &c, out, max);
    }
    return split_even("chunk", t, (size + chunks - 1) / chunks, dim, out, max);
}

int nn_split(nn_tensor *t, int64_t split_size, int dim, nn_tensor **out, int max)
{
    if (split_dim("split", t, &dim)) return -1;
    if (split_size < 0) {
        nn_error(NN_ERR_ARG, "split: split expects split_size be non-negative, but got split_size=%lld", (long long)split_size);
        return -1;
    }
    return split_even("split", t, split_size, dim, out, max);
}

int nn_split_sizes(nn_tensor *t, int n, const int64_t *sizes, int dim, nn_tensor **out, int max)
{
    if (split_dim("split_with_sizes", t, &dim)) return -1;
    char b[SHAPE_BUF];
    const char *shown = n >= 0 && n <= NN_MAX_DIMS ? nn_shape_str(b, n, sizes) : "[...]";
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) {
            nn_error(NN_ERR_ARG, "split_with_sizes: split_with_sizes expects split_sizes have only non-negative entries, but "
                     "got split_sizes=%s", shown);
            return -1;
        }
        sum += sizes[i];
    }
    if (n < 0 || sum != t->shape[dim]) {
        nn_error(NN_ERR_SHAPE, "split_with_sizes: split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's "
                 "size at dimension %d), but got split_sizes=%s", (long long)t->shape[dim], dim, shown);
        return -1;
    }
    return pieces("SplitWithSizesBackward0", t, dim, n, given_size, sizes, out, max);
}
