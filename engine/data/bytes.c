#include "bytes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

int nn_is_gzip(const uint8_t *p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

void nn_bytes_free(nn_bytes *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

static nn_status grow(nn_bytes *b, size_t *cap, size_t limit, const char *name)
{
    if (*cap >= limit) return nn_error(NN_ERR_RUNTIME, "%s: decompressed data exceeds %zu bytes", name, limit);
    size_t ncap = *cap > limit / 2 ? limit : *cap * 2;
    uint8_t *p = realloc(b->data, ncap);
    if (!p) return nn_error(NN_ERR_NOMEM, "%s: out of memory decompressing (%zu bytes)", name, ncap);
    b->data = p;
    *cap = ncap;
    return NN_OK;
}

nn_status nn_gunzip(const uint8_t *in, size_t n, size_t limit, const char *name, nn_bytes *out)
{
    *out = (nn_bytes){0};
    /* the trailer's ISIZE (size mod 2^32) is a good first guess for one member */
    size_t cap = 1 << 16;
    if (n >= 18) {
        uint32_t isize = (uint32_t)in[n - 4] | (uint32_t)in[n - 3] << 8 | (uint32_t)in[n - 2] << 16 | (uint32_t)in[n - 1] << 24;
        if (isize > cap) cap = isize;
    }
    if (cap > limit) cap = limit ? limit : 1;
    out->data = malloc(cap);
    if (!out->data) return nn_error(NN_ERR_NOMEM, "%s: out of memory decompressing (%zu bytes)", name, cap);

    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        nn_bytes_free(out);
        return nn_error(NN_ERR_RUNTIME, "%s: zlib initialisation failed", name);
    }
    nn_status st = NN_OK;
    size_t pos = 0; /* input consumed */
    for (;;) {
        /* zlib counts in uInt: feed and drain at most 1 GiB per call */
        size_t in_left = n - pos, out_left = cap - out->len;
        z.next_in = (Bytef *)(in + pos);
        z.avail_in = (uInt)(in_left > (1u << 30) ? 1u << 30 : in_left);
        z.next_out = out->data + out->len;
        z.avail_out = (uInt)(out_left > (1u << 30) ? 1u << 30 : out_left);
        uInt gave_in = z.avail_in, gave_out = z.avail_out;
        int r = inflate(&z, Z_NO_FLUSH);
        pos += gave_in - z.avail_in;
        out->len += gave_out - z.avail_out;
        if (r == Z_STREAM_END) {
            if (pos == n) break;
            if (!nn_is_gzip(in + pos, n - pos)) {
                st = nn_error(NN_ERR_RUNTIME, "%s: corrupt gzip file: %zu bytes of trailing garbage after the compressed data", name, n - pos);
                break;
            }
            inflateReset(&z); /* another gzip member follows */
            continue;
        }
        if (r == Z_DATA_ERROR || r == Z_STREAM_ERROR || r == Z_NEED_DICT) {
            st = nn_error(NN_ERR_RUNTIME, "%s: corrupt gzip data (%s)", name, z.msg ? z.msg : "invalid stream");
            break;
        }
        if (r == Z_MEM_ERROR) {
            st = nn_error(NN_ERR_NOMEM, "%s: out of memory in zlib", name);
            break;
        }
        if (out->len == cap) {
            if ((st = grow(out, &cap, limit, name))) break;
            continue;
        }
        if (pos == n && (r == Z_BUF_ERROR || r == Z_OK) && z.avail_out > 0) {
            st = nn_error(NN_ERR_RUNTIME, "%s: truncated gzip file (unexpected end of compressed data after %zu bytes of output)", name, out->len);
            break;
        }
        if (gave_in == z.avail_in && gave_out == z.avail_out) { /* no progress: cannot happen with valid data */
            st = nn_error(NN_ERR_RUNTIME, "%s: corrupt gzip data (inflate made no progress)", name);
            break;
        }
    }
    inflateEnd(&z);
    if (st) nn_bytes_free(out);
    return st;
}

nn_status nn_read_file(const char *path, nn_bytes *out)
{
    *out = (nn_bytes){0};
    FILE *f = fopen(path, "rb");
    if (!f) return nn_error(NN_ERR_RUNTIME, "%s: cannot open (%s)", path, strerror(errno));
    nn_bytes raw = {0};
    size_t cap = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0) cap = (size_t)sz;
        rewind(f);
    }
    if (cap < 4096) cap = 4096;
    raw.data = malloc(cap);
    nn_status st = raw.data ? NN_OK : nn_error(NN_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap);
    while (!st) {
        size_t got = fread(raw.data + raw.len, 1, cap - raw.len, f);
        raw.len += got;
        if (raw.len < cap) {
            if (ferror(f)) st = nn_error(NN_ERR_RUNTIME, "%s: read error (%s)", path, strerror(errno));
            break;
        }
        uint8_t *p = realloc(raw.data, cap * 2);
        if (!p) st = nn_error(NN_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap * 2);
        else raw.data = p, cap *= 2;
    }
    fclose(f);
    if (st) {
        nn_bytes_free(&raw);
        return st;
    }
    if (!nn_is_gzip(raw.data, raw.len)) {
        *out = raw;
        return NN_OK;
    }
    st = nn_gunzip(raw.data, raw.len, NN_BYTES_LIMIT, path, out);
    nn_bytes_free(&raw);
    return st;
}
