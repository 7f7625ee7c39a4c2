#include "idx.h"

#include <stdlib.h>
#include <string.h>

static nn_dtype idx_dtype(uint8_t type, size_t *width)
{
    switch (type) {
    case 0x08: *width = 1; return NN_U8;
    case 0x09: *width = 1; return NN_I8;
    case 0x0B: *width = 2; return NN_I16;
    case 0x0C: *width = 4; return NN_I32;
    case 0x0D: *width = 4; return NN_F32;
    case 0x0E: *width = 8; return NN_F64;
    default: return NN_DTYPE_NONE;
    }
}

static uint64_t be(const uint8_t *p, size_t w)
{
    uint64_t v = 0;
    for (size_t i = 0; i < w; i++) v = v << 8 | p[i];
    return v;
}

/* Check the header; fills dtype, width, shape and the data offset. */
static nn_status idx_header(const uint8_t *p, size_t n, const char *name, nn_dtype *dt, size_t *width, int *ndim,
                            int64_t *shape, size_t *offset)
{
    if (n < 4) return nn_error(NN_ERR_RUNTIME, "%s: not an IDX file (%zu bytes, shorter than the 4-byte header)", name, n);
    if (p[0] || p[1])
        return nn_error(NN_ERR_RUNTIME, "%s: not an IDX file (magic %02x %02x %02x %02x; expected 00 00 <type> <ndim>)", name,
                        p[0], p[1], p[2], p[3]);
    *dt = idx_dtype(p[2], width);
    if (*dt == NN_DTYPE_NONE) return nn_error(NN_ERR_RUNTIME, "%s: corrupt IDX file (unknown element type 0x%02x)", name, p[2]);
    *ndim = p[3];
    if (*ndim < 1 || *ndim > NN_MAX_DIMS)
        return nn_error(NN_ERR_RUNTIME, "%s: corrupt IDX file (%d dimensions; expected 1 to %d)", name, *ndim, NN_MAX_DIMS);
    *offset = 4 + 4 * (size_t)*ndim;
    if (n < *offset)
        return nn_error(NN_ERR_RUNTIME, "%s: truncated IDX file (%zu bytes, the header of %d dimensions needs %zu)", name, n, *ndim, *offset);
    size_t count = 1;
    bool overflow = false;
    for (int i = 0; i < *ndim; i++) {
        shape[i] = (int64_t)be(p + 4 + 4 * i, 4);
        if (shape[i] && count > ((size_t)1 << 46) / (size_t)shape[i]) overflow = true;
        else count *= (size_t)shape[i];
    }
    char sb[160];
    nn_shape_str(sb, *ndim, shape);
    if (overflow) return nn_error(NN_ERR_RUNTIME, "%s: corrupt IDX file (sizes %s are too large)", name, sb);
    size_t need = count * *width, have = n - *offset;
    if (have < need)
        return nn_error(NN_ERR_RUNTIME, "%s: truncated IDX file (sizes %s need %zu data bytes, found %zu)", name, sb, need, have);
    if (have > need)
        return nn_error(NN_ERR_RUNTIME, "%s: corrupt IDX file (%zu bytes after the data of sizes %s)", name, have - need, sb);
    return NN_OK;
}

static void decode(const uint8_t *src, uint8_t type, size_t count, void *dst)
{
    switch (type) {
    case 0x08: memcpy(dst, src, count); break;
    case 0x09: memcpy(dst, src, count); break;
    case 0x0B: for (size_t i = 0; i < count; i++) ((int16_t *)dst)[i] = (int16_t)be(src + 2 * i, 2); break;
    case 0x0C: for (size_t i = 0; i < count; i++) ((int32_t *)dst)[i] = (int32_t)(uint32_t)be(src + 4 * i, 4); break;
    case 0x0D:
        for (size_t i = 0; i < count; i++) {
            uint32_t u = (uint32_t)be(src + 4 * i, 4);
            memcpy((float *)dst + i, &u, 4);
        }
        break;
    case 0x0E:
        for (size_t i = 0; i < count; i++) {
            uint64_t u = be(src + 8 * i, 8);
            memcpy((double *)dst + i, &u, 8);
        }
        break;
    }
}

nn_tensor *nn_idx_parse(const uint8_t *p, size_t n, const char *name)
{
    nn_dtype dt;
    size_t width, off;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    if (idx_header(p, n, name, &dt, &width, &ndim, shape, &off)) return NULL;
    nn_tensor *t = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    if (t) decode(p + off, p[2], (size_t)nn_numel(t), nn_data(t));
    return t;
}

static void free_ctx(void *data, void *ctx)
{
    (void)data;
    free(ctx);
}

nn_tensor *nn_idx_parse_bytes(nn_bytes *b, const char *name)
{
    nn_dtype dt;
    size_t width, off;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    nn_tensor *t = NULL;
    if (idx_header(b->data, b->len, name, &dt, &width, &ndim, shape, &off)) {
        nn_bytes_free(b);
        return NULL;
    }
    if (dt == NN_U8 && b->len > off) { /* the tensor keeps the buffer, past the header */
        t = nn_from_blob(b->data + off, ndim, shape, NULL, NN_U8, NN_DEVICE_CPU, free_ctx, b->data);
        if (t) *b = (nn_bytes){0};
    } else t = nn_idx_parse(b->data, b->len, name);
    nn_bytes_free(b);
    return t;
}

nn_tensor *nn_idx_load(const char *path)
{
    nn_bytes b;
    if (nn_read_file(path, &b)) return NULL;
    return nn_idx_parse_bytes(&b, path);
}
