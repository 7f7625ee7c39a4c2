/* PNG and JPEG codecs on plain HWC uint8 buffers (see image.h). No other
 * engine dependency: the fuzz targets link this file alone.
 *
 * libpng reports errors by longjmp out of its calls. Every PNG function here
 * follows one rule: what must be freed on the error path is either created
 * before setjmp and never reassigned (png, info, the heap context), or held in
 * a volatile local; the setjmp branch frees all of it and returns -1. */
#include "image.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <turbojpeg.h>

#define DEFAULT_MAX_PIXELS ((int64_t)1 << 28)
static int64_t max_pixels = DEFAULT_MAX_PIXELS;

void nn_image_set_max_pixels(int64_t n) { max_pixels = n > 0 ? n : DEFAULT_MAX_PIXELS; }

static int fail(char *err, size_t errlen, const char *msg)
{
    if (errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

static int check_size(int64_t w, int64_t h, char *err, size_t errlen)
{
    if (w <= 0 || h <= 0) return fail(err, errlen, "image has zero width or height");
    if (w > max_pixels / h) {
        if (errlen) snprintf(err, errlen, "image of %lld x %lld pixels exceeds the limit of %lld pixels",
                             (long long)w, (long long)h, (long long)max_pixels);
        return -1;
    }
    return 0;
}

nn_image_format nn_image_sniff(const void *bytes, size_t n)
{
    const uint8_t *b = bytes;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return NN_IMAGE_FMT_PNG;
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return NN_IMAGE_FMT_JPEG;
    return NN_IMAGE_FMT_UNKNOWN;
}

/* ---- channel conversions (Pillow's Convert.c rules) ---- */

void nn_image_convert_buf(const uint8_t *src, int cin, uint8_t *dst, int cout, int64_t npix)
{
    if (cin == cout) {
        memcpy(dst, src, (size_t)npix * (size_t)cin);
        return;
    }
    for (int64_t i = 0; i < npix; i++, src += cin, dst += cout) {
        uint8_t l = cin >= 3 ? (uint8_t)((src[0] * 19595u + src[1] * 38470u + src[2] * 7471u + 0x8000u) >> 16) : src[0];
        uint8_t a = (cin == 2 || cin == 4) ? src[cin - 1] : 255;
        switch (cout) {
        case 1: dst[0] = l; break;
        case 2: dst[0] = l, dst[1] = a; break;
        default:
            if (cin >= 3) dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
            else dst[0] = dst[1] = dst[2] = l;
            if (cout == 4) dst[3] = a;
        }
    }
}

/* Replace buf's pixels by their conversion to `channels` (0: keep). */
static int convert_in_place(nn_image_buf *buf, int channels, char *err, size_t errlen)
{
    if (!channels || channels == buf->channels) return 0;
    int64_t npix = buf->height * buf->width;
    uint8_t *d = malloc((size_t)npix * (size_t)channels);
    if (!d) return fail(err, errlen, "out of memory");
    nn_image_convert_buf(buf->data, buf->channels, d, channels, npix);
    free(buf->data);
    buf->data = d;
    buf->channels = channels;
    return 0;
}

/* ---- PNG ---- */

typedef struct {
    char *err;
    size_t errlen;
    const uint8_t *data; /* reading */
    size_t n, pos;
    uint8_t *buf; /* writing */
    size_t len, cap;
} png_ctx;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(png);
    if (c->errlen) snprintf(c->err, c->errlen, "%s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static void png_on_read(png_structp png, png_bytep out, size_t len)
{
    png_ctx *c = png_get_io_ptr(png);
    if (len > c->n - c->pos) png_error(png, "truncated file (unexpected end of data)");
    memcpy(out, c->data + c->pos, len);
    c->pos += len;
}

static void png_on_write(png_structp png, png_bytep data, size_t len)
{
    png_ctx *c = png_get_io_ptr(png);
    if (len > c->cap - c->len) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap - c->len < len) cap *= 2;
        uint8_t *b = realloc(c->buf, cap);
        if (!b) png_error(png, "out of memory");
        c->buf = b;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, len);
    c->len += len;
}

static void png_on_flush(png_structp png) { (void)png; }

/* Every chunk before IEND lies inside the n bytes. libpng allocates an ancillary chunk's buffer
 * from its declared length before it reads the data, so a corrupt length (an sPLT claiming
 * 1.9 GB in a 311-byte file) would cost that much memory. */
static int png_chunks_fit(const uint8_t *bytes, size_t n, char *err, size_t errlen)
{
    size_t pos = 8;
    while (pos + 8 <= n) {
        uint32_t len = (uint32_t)bytes[pos] << 24 | (uint32_t)bytes[pos + 1] << 16 | (uint32_t)bytes[pos + 2] << 8 | bytes[pos + 3];
        if (len > n - pos - 8 || n - pos - 8 - len < 4)
            return fail(err, errlen, "truncated file (a chunk runs past the end of the data)");
        if (!memcmp(bytes + pos + 4, "IEND", 4)) break;
        pos += 12 + (size_t)len;
    }
    return 0;
}

static int decode_png(const uint8_t *bytes, size_t n, nn_image_buf *out, char *err, size_t errlen)
{
    if (png_chunks_fit(bytes, n, err, errlen)) return -1;
    png_ctx ctx = {.err = err, .errlen = errlen, .data = bytes, .n = n};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return fail(err, errlen, "out of memory");
    }
    uint8_t *volatile data = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(data);
        free(rows);
        return -1;
    }
    png_set_read_fn(png, &ctx, png_on_read);
    png_set_chunk_cache_max(png, 128); /* a corrupt file may hold thousands of ancillary chunks */
    png_read_info(png, info);
    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (check_size(w, h, err, errlen)) png_longjmp(png, 1);
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_strip_16(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int c = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (c < 1 || c > 4 || rowbytes != (size_t)w * (size_t)c) png_error(png, "unsupported pixel layout");
    data = malloc((size_t)h * rowbytes);
    rows = malloc((size_t)h * sizeof *rows);
    if (!data || !rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = data + (size_t)y * rowbytes;
    png_read_image(png, rows);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    *out = (nn_image_buf){data, h, w, c};
    return 0;
}

int nn_image_encode_png_buf(const uint8_t *hwc, int64_t h, int64_t w, int c, int level, uint8_t **out, size_t *outlen,
                            char *err, size_t errlen)
{
    static const int ctypes[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    *out = NULL;
    *outlen = 0;
    if (c < 1 || c > 4) return fail(err, errlen, "PNG images have 1 to 4 channels");
    if (level < 0 || level > 9) return fail(err, errlen, "compression level must be between 0 and 9");
    if (w <= 0 || h <= 0 || w > INT32_MAX || h > INT32_MAX) return fail(err, errlen, "PNG width and height must be in [1, 2^31)");
    png_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return fail(err, errlen, "out of memory");
    ctx->err = err;
    ctx->errlen = errlen;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        free(ctx);
        return fail(err, errlen, "out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(ctx->buf);
        free(ctx);
        return -1;
    }
    png_set_write_fn(png, ctx, png_on_write, png_on_flush);
    png_set_compression_level(png, level);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, ctypes[c], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int64_t y = 0; y < h; y++) png_write_row(png, hwc + (size_t)y * (size_t)w * (size_t)c);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    *out = ctx->buf;
    *outlen = ctx->len;
    free(ctx);
    return 0;
}

/* ---- JPEG (TurboJPEG API) ---- */

static int tj_fail(tjhandle tj, char *err, size_t errlen)
{
    fail(err, errlen, tj ? tjGetErrorStr2(tj) : tjGetErrorStr2(NULL));
    if (tj) tjDestroy(tj);
    return -1;
}

static int decode_jpeg(const uint8_t *bytes, size_t n, int channels, nn_image_buf *out, char *err, size_t errlen)
{
    if (n > ULONG_MAX) return fail(err, errlen, "file too large");
    tjhandle tj = tjInitDecompress();
    if (!tj) return tj_fail(NULL, err, errlen);
    int w, h, subsamp, cs;
    if (tjDecompressHeader3(tj, bytes, (unsigned long)n, &w, &h, &subsamp, &cs)) return tj_fail(tj, err, errlen);
    if (w <= 0 || h <= 0) {
        tjDestroy(tj);
        return fail(err, errlen, "truncated or corrupt JPEG header");
    }
    if (check_size(w, h, err, errlen)) {
        tjDestroy(tj);
        return -1;
    }
    if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
        tjDestroy(tj);
        return fail(err, errlen, "CMYK JPEG images are not supported");
    }
    int c = (cs == TJCS_GRAY || channels == 1) ? 1 : 3; /* 1 channel from colour: the decoder's luma */
    uint8_t *data = malloc((size_t)w * (size_t)h * (size_t)c);
    if (!data) {
        tjDestroy(tj);
        return fail(err, errlen, "out of memory");
    }
    /* A warning (e.g. premature end of data) also returns -1: a truncated file is an error. */
    if (tjDecompress2(tj, bytes, (unsigned long)n, data, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, 0)) {
        free(data);
        return tj_fail(tj, err, errlen);
    }
    tjDestroy(tj);
    *out = (nn_image_buf){data, h, w, c};
    return 0;
}

int nn_image_encode_jpeg_buf(const uint8_t *hwc, int64_t h, int64_t w, int c, int quality, uint8_t **out,
                             size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    if (c != 1 && c != 3) return fail(err, errlen, "JPEG images have 1 or 3 channels");
    if (quality < 1 || quality > 100) return fail(err, errlen, "quality must be between 1 and 100");
    if (w <= 0 || h <= 0 || w > 65535 || h > 65535) return fail(err, errlen, "JPEG width and height must be in [1, 65535]");
    tjhandle tj = tjInitCompress();
    if (!tj) return tj_fail(NULL, err, errlen);
    unsigned char *jbuf = NULL;
    unsigned long jlen = 0;
    if (tjCompress2(tj, hwc, (int)w, 0, (int)h, c == 1 ? TJPF_GRAY : TJPF_RGB, &jbuf, &jlen,
                    c == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0)) {
        tjFree(jbuf);
        return tj_fail(tj, err, errlen);
    }
    tjDestroy(tj);
    *out = malloc(jlen);
    if (!*out) {
        tjFree(jbuf);
        return fail(err, errlen, "out of memory");
    }
    memcpy(*out, jbuf, jlen);
    *outlen = jlen;
    tjFree(jbuf);
    return 0;
}

int nn_image_decode_buf(const void *bytes, size_t n, int channels, nn_image_buf *out, char *err, size_t errlen)
{
    *out = (nn_image_buf){0};
    if (channels < 0 || channels > 4) return fail(err, errlen, "channels must be 0 (unchanged) or 1 to 4");
    int rc;
    switch (nn_image_sniff(bytes, n)) {
    case NN_IMAGE_FMT_PNG: rc = decode_png(bytes, n, out, err, errlen); break;
    case NN_IMAGE_FMT_JPEG: rc = decode_jpeg(bytes, n, channels, out, err, errlen); break;
    default: return fail(err, errlen, "not a PNG or JPEG file");
    }
    if (!rc && convert_in_place(out, channels, err, errlen)) {
        free(out->data);
        *out = (nn_image_buf){0};
        return -1;
    }
    return rc;
}
