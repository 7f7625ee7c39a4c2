/* Image files and codecs as tensors: the buffer-level codecs of image.c
 * wrapped in the engine's conventions. Decoded pixels are adopted by the
 * tensor without a copy (nn_from_blob with free as the release). */
#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static void release_malloc(void *data, void *ctx) { (void)ctx, free(data); }

static nn_tensor *adopt(uint8_t *data, int ndim, const int64_t *shape)
{
    nn_tensor *t = nn_from_blob(data, ndim, shape, NULL, NN_U8, NN_DEVICE_CPU, release_malloc, NULL);
    if (!t) free(data);
    return t;
}

static nn_tensor *from_buf(nn_image_buf *b)
{
    int64_t shape[3] = {b->height, b->width, b->channels};
    return adopt(b->data, 3, shape);
}

/* A uint8 CPU tensor of the given ndim, made contiguous (new reference). */
static nn_tensor *u8_contiguous(const char *fn, nn_tensor *t, int ndim, const char *what)
{
    char s[160];
    if (t->dtype != NN_U8)
        return nn_error(NN_ERR_DTYPE, "%s: expected a uint8 %s, got %s", fn, what, nn_dtype_name(t->dtype)), NULL;
    if (t->ndim != ndim)
        return nn_error(NN_ERR_SHAPE, "%s: expected a %d-D %s, got shape %s", fn, ndim, what,
                        nn_shape_str(s, t->ndim, t->shape)), NULL;
    if (t->storage->device.type != NN_CPU)
        return nn_error(NN_ERR_DEVICE, "%s: expected a CPU tensor", fn), NULL;
    return nn_contiguous(t);
}

static int check_channels(const char *fn, int channels)
{
    if (channels < 0 || channels > 4) return nn_error(NN_ERR_ARG, "%s: channels must be 0 (unchanged) or 1 to 4, got %d", fn, channels);
    return 0;
}

/* Read a whole file; *data malloc'd. Errors name fn and path. */
static nn_status slurp(const char *fn, const char *path, uint8_t **data, size_t *n)
{
    *data = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return nn_error(NN_ERR_RUNTIME, "%s: cannot open '%s': %s", fn, path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        uint8_t *b = realloc(buf, cap * 2);
        if (!b) { free(buf); buf = NULL; break; }
        buf = b;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return nn_error(NN_ERR_NOMEM, "%s: out of memory reading '%s'", fn, path);
    if (bad) {
        free(buf);
        return nn_error(NN_ERR_RUNTIME, "%s: cannot read '%s'", fn, path);
    }
    *data = buf;
    *n = len;
    return NN_OK;
}

static nn_tensor *decode(const char *fn, const uint8_t *data, size_t n, int channels, const char *name)
{
    char err[256];
    nn_image_buf b;
    if (nn_image_decode_buf(data, n, channels, &b, err, sizeof err)) {
        static const char *const kinds[] = {"image", "PNG", "JPEG"};
        nn_image_format f = nn_image_sniff(data, n);
        if (f == NN_IMAGE_FMT_UNKNOWN && channels >= 0 && channels <= 4)
            return nn_error(NN_ERR_RUNTIME, "%s: '%s' is not a PNG or JPEG file", fn, name), NULL;
        return nn_error(NN_ERR_RUNTIME, "%s: cannot decode %s file '%s': %s", fn, kinds[f], name, err), NULL;
    }
    return from_buf(&b);
}

nn_tensor *nn_image_read(const char *fn, const char *path, int channels)
{
    if (check_channels(fn, channels)) return NULL;
    uint8_t *data;
    size_t n;
    if (slurp(fn, path, &data, &n)) return NULL;
    nn_tensor *t = decode(fn, data, n, channels, path);
    free(data);
    return t;
}

nn_tensor *nn_image_decode(const char *fn, nn_tensor *bytes, int channels, const char *name)
{
    if (check_channels(fn, channels)) return NULL;
    nn_tensor *c = u8_contiguous(fn, bytes, 1, "tensor of bytes");
    if (!c) return NULL;
    nn_tensor *t = decode(fn, nn_data(c), (size_t)nn_numel(c), channels, name);
    nn_release(c);
    return t;
}

static nn_tensor *encode(const char *fn, nn_tensor *hwc, int param, bool png)
{
    nn_tensor *c = u8_contiguous(fn, hwc, 3, "H x W x C image");
    if (!c) return NULL;
    char err[256];
    uint8_t *out;
    size_t len;
    int rc = png ? nn_image_encode_png_buf(nn_data(c), c->shape[0], c->shape[1], (int)c->shape[2], param, &out, &len, err, sizeof err)
                 : nn_image_encode_jpeg_buf(nn_data(c), c->shape[0], c->shape[1], (int)c->shape[2], param, &out, &len, err, sizeof err);
    nn_release(c);
    if (rc) return nn_error(NN_ERR_ARG, "%s: %s", fn, err), NULL;
    int64_t shape[1] = {(int64_t)len};
    return adopt(out, 1, shape);
}

nn_tensor *nn_image_encode_png(nn_tensor *hwc, int level) { return encode("encode_png", hwc, level, true); }
nn_tensor *nn_image_encode_jpeg(nn_tensor *hwc, int quality) { return encode("encode_jpeg", hwc, quality, false); }

nn_tensor *nn_image_read_file(const char *fn, const char *path)
{
    uint8_t *data;
    size_t n;
    if (slurp(fn, path, &data, &n)) return NULL;
    int64_t shape[1] = {(int64_t)n};
    return adopt(data, 1, shape);
}

nn_status nn_image_write_file(const char *fn, const char *path, nn_tensor *bytes)
{
    nn_tensor *c = u8_contiguous(fn, bytes, 1, "tensor of bytes");
    if (!c) return nn_last_status();
    FILE *f = fopen(path, "wb");
    if (!f) {
        nn_release(c);
        return nn_error(NN_ERR_RUNTIME, "%s: cannot open '%s' for writing: %s", fn, path, strerror(errno));
    }
    size_t n = (size_t)nn_numel(c);
    size_t wrote = fwrite(nn_data(c), 1, n, f);
    int bad = fclose(f) != 0 || wrote != n;
    nn_release(c);
    if (bad) return nn_error(NN_ERR_RUNTIME, "%s: cannot write '%s': %s", fn, path, strerror(errno));
    return NN_OK;
}
