/* torch._matfile: the two byte-level steps of the MATLAB v5 .mat reader (tv_matfile.lua):
 * inflating a miCOMPRESSED element (a zlib stream) and decoding a numeric data element
 * into a 1-d CPU tensor. The element structure itself is parsed in Lua. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "lt.h"

/* inflate(bytes, offset, length[, name]) -> the zlib stream at bytes[offset, offset + length)
 * (offset 0-based) decompressed, as a string */
static int m_inflate(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_Integer off = luaL_checkinteger(L, 2), len = luaL_checkinteger(L, 3);
    const char *name = luaL_optstring(L, 4, "<bytes>");
    if (off < 0 || len < 0 || (size_t)off > n || (size_t)len > n - (size_t)off)
        return luaL_error(L, "%s: truncated MAT file (a compressed element of %d bytes at byte %d runs past the end)", name,
                          (int)len, (int)off);
    size_t cap = (size_t)len * 4 + 1024, used = 0;
    unsigned char *out = malloc(cap);
    if (!out) return luaL_error(L, "%s: out of memory inflating a MAT element", name);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        free(out);
        return luaL_error(L, "%s: zlib initialisation failed", name);
    }
    size_t pos = 0;
    const char *err = NULL;
    for (;;) {
        size_t in_left = (size_t)len - pos, out_left = cap - used;
        z.next_in = (Bytef *)(s + off + pos);
        z.avail_in = (uInt)(in_left > (1u << 30) ? 1u << 30 : in_left);
        z.next_out = out + used;
        z.avail_out = (uInt)(out_left > (1u << 30) ? 1u << 30 : out_left);
        uInt gave_in = z.avail_in, gave_out = z.avail_out;
        int r = inflate(&z, Z_NO_FLUSH);
        pos += gave_in - z.avail_in;
        used += gave_out - z.avail_out;
        if (r == Z_STREAM_END) break;
        if (r == Z_DATA_ERROR || r == Z_STREAM_ERROR || r == Z_NEED_DICT || r == Z_MEM_ERROR) {
            err = z.msg ? z.msg : "invalid stream";
            break;
        }
        if (used == cap) {
            unsigned char *p = realloc(out, cap * 2);
            if (!p) {
                err = "out of memory";
                break;
            }
            out = p;
            cap *= 2;
            continue;
        }
        if (pos == (size_t)len) {
            err = "unexpected end of the compressed data";
            break;
        }
    }
    inflateEnd(&z);
    if (err) {
        free(out);
        return luaL_error(L, "%s: corrupt compressed element in MAT file (%s)", name, err);
    }
    lua_pushlstring(L, (const char *)out, used);
    free(out);
    return 1;
}

/* element width of a MAT data type (miINT8 = 1 ... miUINT64 = 13; 0 for non-numeric) */
static size_t mi_width(int type)
{
    switch (type) {
    case 1: case 2: return 1;
    case 3: case 4: return 2;
    case 5: case 6: case 7: return 4;
    case 9: case 12: case 13: return 8;
    default: return 0;
    }
}

static uint64_t load(const unsigned char *p, size_t w, int swap)
{
    uint64_t v = 0;
    for (size_t i = 0; i < w; i++) v |= (uint64_t)p[swap ? w - 1 - i : i] << (8 * i);
    return v;
}

/* element i of a MAT data block as a double, and as an int64 when integral */
static double get(const unsigned char *p, int type, size_t i, int swap, int64_t *iv)
{
    size_t w = mi_width(type);
    uint64_t u = load(p + i * w, w, swap);
    *iv = 0;
    switch (type) {
    case 1: *iv = (int8_t)u; break;
    case 2: *iv = (uint8_t)u; break;
    case 3: *iv = (int16_t)u; break;
    case 4: *iv = (uint16_t)u; break;
    case 5: *iv = (int32_t)u; break;
    case 6: *iv = (uint32_t)u; break;
    case 12: *iv = (int64_t)u; break;
    case 13: *iv = (int64_t)u; break;
    case 7: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); *iv = (int64_t)f; return f; }
    case 9: { double d; memcpy(&d, &u, 8); *iv = (int64_t)d; return d; }
    }
    return (double)*iv;
}

/* decode(bytes, offset, type, count, dtype_name[, swap]) -> a 1-d tensor of count elements of
 * MAT data type `type` read from bytes at offset (0-based), converted to dtype */
static int m_decode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_Integer off = luaL_checkinteger(L, 2), count = luaL_checkinteger(L, 4);
    int type = (int)luaL_checkinteger(L, 3);
    const char *dname = luaL_checkstring(L, 5);
    int swap = lua_toboolean(L, 6);
    size_t w = mi_width(type);
    if (!w) return luaL_error(L, "MAT file: data type %d is not numeric", type);
    if (off < 0 || count < 0 || (size_t)off > n || (size_t)count > (n - (size_t)off) / w)
        return luaL_error(L, "truncated MAT file (%d elements of %d bytes at byte %d run past the end)", (int)count, (int)w, (int)off);
    nn_dtype dt = NN_DTYPE_NONE;
    for (int d = 0; d < NN_NDTYPES; d++)
        if (!strcmp(nn_dtype_name((nn_dtype)d), dname)) dt = (nn_dtype)d;
    if (dt != NN_F64 && dt != NN_F32 && dt != NN_I64 && dt != NN_I32 && dt != NN_I16 && dt != NN_I8 && dt != NN_U8 && dt != NN_BOOL)
        return luaL_error(L, "MAT file: cannot decode into dtype %s", dname);
    int64_t shape[1] = {count};
    nn_tensor *t = nn_empty(1, shape, dt, NN_DEVICE_CPU);
    if (!t) return lt_fail(L, 0);
    const unsigned char *p = (const unsigned char *)s + off;
    void *dst = nn_data(t);
    if ((dt == NN_U8 && type == 2) || (dt == NN_I8 && type == 1)) memcpy(dst, p, (size_t)count);
    else
        for (size_t i = 0; i < (size_t)count; i++) {
            int64_t iv;
            double v = get(p, type, i, swap, &iv);
            switch (dt) {
            case NN_F64: ((double *)dst)[i] = v; break;
            case NN_F32: ((float *)dst)[i] = (float)v; break;
            case NN_I64: ((int64_t *)dst)[i] = iv; break;
            case NN_I32: ((int32_t *)dst)[i] = (int32_t)iv; break;
            case NN_I16: ((int16_t *)dst)[i] = (int16_t)iv; break;
            case NN_I8: ((int8_t *)dst)[i] = (int8_t)iv; break;
            case NN_U8: ((uint8_t *)dst)[i] = (uint8_t)iv; break;
            case NN_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
            default: break;
            }
        }
    lt_push(L, t);
    return 1;
}

void lt_open_matfile(lua_State *L)
{
    static const luaL_Reg fns[] = {{"inflate", m_inflate}, {"decode", m_decode}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_matfile");
}
