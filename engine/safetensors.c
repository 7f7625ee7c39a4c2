/* safetensors reader and writer (format and guarantees: safetensors.h). */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

static const char *const DTYPE_NAMES[NN_NDTYPES] = {
    [NN_F32] = "F32", [NN_F64] = "F64", [NN_F16] = "F16", [NN_BF16] = "BF16",
    [NN_I64] = "I64", [NN_I32] = "I32", [NN_U8] = "U8",   [NN_BOOL] = "BOOL",
    [NN_I8] = "I8",   [NN_I16] = "I16",
    [NN_C64] = "C64", /* complex128 has no safetensors name */
};

const char *nn_safetensors_dtype_name(nn_dtype dt)
{
    return dt >= 0 && dt < NN_NDTYPES && DTYPE_NAMES[dt] ? DTYPE_NAMES[dt] : "?";
}

static nn_dtype dtype_from_st(const char *s)
{
    for (int i = 0; i < NN_NDTYPES; i++)
        if (DTYPE_NAMES[i] && !strcmp(s, DTYPE_NAMES[i])) return (nn_dtype)i;
    return NN_DTYPE_NONE;
}

/* Valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) { i++; continue; }
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (!len || c > 0xF4 || i + (size_t)len > n) return false;
        uint32_t cp = c & (0xFF >> (len + 1));
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* ======================= reading ======================= */

typedef struct {
    char *name;
    nn_dtype dtype;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    uint64_t begin, end; /* within the data section */
} st_entry;

typedef struct {
    char *key, *value;
    size_t value_len;
} st_meta;

struct nn_safetensors {
    char *name;          /* path, for messages */
    int fd;              /* file-backed, or -1 */
    unsigned char *mem;  /* memory-backed: the whole file */
    uint64_t data_start; /* 8 + header length */
    uint64_t data_size;
    st_entry *entries;
    int n, cap;
    st_meta *meta;
    int nmeta, metacap;
};

/* ---- a small JSON parser, enough for the header ---- */

typedef struct {
    const char *p, *end;
    const char *err; /* first error, static text */
    char detail[96];
    int depth;
} jp;

static void jp_fail(jp *j, const char *msg)
{
    if (!j->err) j->err = msg;
}

static void jp_ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static bool jp_eat(jp *j, char c)
{
    jp_ws(j);
    if (j->p < j->end && *j->p == c) { j->p++; return true; }
    return false;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(jp *j, uint32_t *out)
{
    if (j->end - j->p < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(j->p[i]);
        if (h < 0) return false;
        v = v << 4 | (uint32_t)h;
    }
    j->p += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string, decoded into a malloc'd NUL-terminated buffer (*len bytes,
 * which may include NULs). NULL on error (the decoded form is never longer
 * than the source, so the buffer is sized by the source). */
static char *jp_string(jp *j, size_t *len)
{
    jp_ws(j);
    if (j->p >= j->end || *j->p != '"') { jp_fail(j, "expected a string"); return NULL; }
    const char *s = ++j->p;
    const char *q = s;
    while (q < j->end && *q != '"') q += (*q == '\\' && q + 1 < j->end) ? 2 : 1;
    if (q >= j->end) { jp_fail(j, "unterminated string"); return NULL; }
    char *out = malloc((size_t)(q - s) + 1);
    if (!out) { jp_fail(j, "out of memory"); return NULL; }
    size_t n = 0;
    while (j->p < q) {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) { jp_fail(j, "control character in a string"); goto bad; }
        if (c != '\\') { out[n++] = (char)c; continue; }
        char e = *j->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!read_hex4(j, &cp)) { jp_fail(j, "bad \\u escape"); goto bad; }
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
                if (q - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') { jp_fail(j, "lone surrogate in a string"); goto bad; }
                j->p += 2;
                if (!read_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) { jp_fail(j, "lone surrogate in a string"); goto bad; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                jp_fail(j, "lone surrogate in a string");
                goto bad;
            }
            n += put_utf8(out + n, cp); /* at most 4 bytes for 6 or 12 source bytes */
            break;
        }
        default: jp_fail(j, "bad escape in a string"); goto bad;
        }
    }
    j->p = q + 1;
    if (!utf8_valid((unsigned char *)out, n)) { jp_fail(j, "string is not valid UTF-8"); goto bad; }
    out[n] = 0;
    *len = n;
    return out;
bad:
    free(out);
    return NULL;
}

/* A non-negative integer that fits in int64 (what shapes and offsets are). */
static bool jp_uint(jp *j, uint64_t *out)
{
    jp_ws(j);
    const char *p = j->p;
    if (p >= j->end || *p < '0' || *p > '9') { jp_fail(j, "expected a non-negative integer"); return false; }
    if (*p == '0' && p + 1 < j->end && p[1] >= '0' && p[1] <= '9') { jp_fail(j, "leading zero in a number"); return false; }
    uint64_t v = 0;
    while (p < j->end && *p >= '0' && *p <= '9') {
        if (v > (uint64_t)INT64_MAX / 10 || v * 10 + (uint64_t)(*p - '0') > (uint64_t)INT64_MAX) {
            jp_fail(j, "integer out of range");
            return false;
        }
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    if (p < j->end && (*p == '.' || *p == 'e' || *p == 'E')) { jp_fail(j, "expected an integer"); return false; }
    j->p = p;
    *out = v;
    return true;
}

/* Skip any JSON value (unknown fields). */
static bool jp_skip(jp *j)
{
    jp_ws(j);
    if (j->p >= j->end) { jp_fail(j, "unexpected end of header"); return false; }
    if (++j->depth > 64) { jp_fail(j, "nesting too deep"); return false; }
    bool ok = true;
    char c = *j->p;
    if (c == '"') {
        size_t n;
        char *s = jp_string(j, &n);
        ok = s != NULL;
        free(s);
    } else if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (!jp_eat(j, close)) {
            do {
                if (c == '{') {
                    size_t n;
                    char *k = jp_string(j, &n);
                    free(k);
                    if (!k || !jp_eat(j, ':')) { jp_fail(j, "expected ':'"); ok = false; break; }
                }
                if (!jp_skip(j)) { ok = false; break; }
            } while (jp_eat(j, ','));
            if (ok && !jp_eat(j, close)) { jp_fail(j, "expected ',' or a closing bracket"); ok = false; }
        }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        const char *p = j->p + (c == '-');
        if (p >= j->end || *p < '0' || *p > '9') { jp_fail(j, "bad number"); ok = false; }
        while (ok && p < j->end && (strchr("0123456789.eE+-", *p))) p++;
        j->p = p;
    } else {
        static const char *const words[] = {"true", "false", "null"};
        ok = false;
        for (int i = 0; i < 3; i++) {
            size_t n = strlen(words[i]);
            if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, words[i], n)) { j->p += n; ok = true; break; }
        }
        if (!ok) jp_fail(j, "unexpected character");
    }
    j->depth--;
    return ok;
}

/* ---- header ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static nn_status bad_file(const nn_safetensors *f, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return nn_error(NN_ERR_RUNTIME, "'%s' is not a valid safetensors file (%s)", f->name, why);
}

static bool add_meta(nn_safetensors *f, char *key, char *value, size_t vlen)
{
    if (f->nmeta == f->metacap) {
        int cap = f->metacap ? f->metacap * 2 : 8;
        st_meta *m = realloc(f->meta, (size_t)cap * sizeof *m);
        if (!m) return false;
        f->meta = m, f->metacap = cap;
    }
    f->meta[f->nmeta++] = (st_meta){key, value, vlen};
    return true;
}

/* "__metadata__": {string: string} or null */
static nn_status parse_metadata(nn_safetensors *f, jp *j)
{
    jp_ws(j);
    if ((size_t)(j->end - j->p) >= 4 && !memcmp(j->p, "null", 4)) { j->p += 4; return NN_OK; }
    if (!jp_eat(j, '{')) return bad_file(f, "__metadata__ must be an object of strings");
    if (jp_eat(j, '}')) return NN_OK;
    do {
        size_t klen, vlen;
        char *k = jp_string(j, &klen);
        if (!k) return bad_file(f, "in __metadata__: %s", j->err);
        if (!jp_eat(j, ':')) { free(k); return bad_file(f, "in __metadata__: expected ':'"); }
        char *v = jp_string(j, &vlen);
        if (!v) {
            free(k);
            return bad_file(f, "in __metadata__: the value of a key must be a string");
        }
        if (!add_meta(f, k, v, vlen)) { free(k), free(v); return nn_error(NN_ERR_NOMEM, "out of memory"); }
    } while (jp_eat(j, ','));
    if (!jp_eat(j, '}')) return bad_file(f, "in __metadata__: expected ',' or '}'");
    return NN_OK;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} */
static nn_status parse_entry(nn_safetensors *f, jp *j, st_entry *e)
{
    const char *nm = e->name;
    if (!jp_eat(j, '{')) return bad_file(f, "the entry of tensor '%s' must be an object", nm);
    bool have_dtype = false, have_shape = false, have_offsets = false;
    if (!jp_eat(j, '}')) {
        do {
            size_t klen;
            char *k = jp_string(j, &klen);
            if (!k) return bad_file(f, "in tensor '%s': %s", nm, j->err);
            if (!jp_eat(j, ':')) { free(k); return bad_file(f, "in tensor '%s': expected ':'", nm); }
            if (!strcmp(k, "dtype")) {
                size_t n;
                char *s = jp_string(j, &n);
                if (!s) { free(k); return bad_file(f, "in tensor '%s': dtype must be a string (%s)", nm, j->err); }
                e->dtype = dtype_from_st(s);
                if (e->dtype == NN_DTYPE_NONE) {
                    nn_status st = nn_error(NN_ERR_DTYPE,
                                            "'%s': tensor '%s' has dtype %.32s, which nnrepl does not support "
                                            "(it reads F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)",
                                            f->name, nm, s);
                    free(s), free(k);
                    return st;
                }
                free(s);
                have_dtype = true;
            } else if (!strcmp(k, "shape")) {
                if (!jp_eat(j, '[')) { free(k); return bad_file(f, "in tensor '%s': shape must be a list", nm); }
                e->ndim = 0;
                if (!jp_eat(j, ']')) {
                    do {
                        uint64_t d;
                        if (!jp_uint(j, &d)) { free(k); return bad_file(f, "in tensor '%s': shape: %s", nm, j->err); }
                        if (e->ndim == NN_MAX_DIMS) {
                            free(k);
                            return bad_file(f, "tensor '%s' has more than %d dims", nm, NN_MAX_DIMS);
                        }
                        e->shape[e->ndim++] = (int64_t)d;
                    } while (jp_eat(j, ','));
                    if (!jp_eat(j, ']')) { free(k); return bad_file(f, "in tensor '%s': shape: expected ',' or ']'", nm); }
                }
                have_shape = true;
            } else if (!strcmp(k, "data_offsets")) {
                if (!jp_eat(j, '[') || !jp_uint(j, &e->begin) || !jp_eat(j, ',') || !jp_uint(j, &e->end) || !jp_eat(j, ']')) {
                    free(k);
                    return bad_file(f, "in tensor '%s': data_offsets must be [begin, end]", nm);
                }
                have_offsets = true;
            } else if (!jp_skip(j)) {
                free(k);
                return bad_file(f, "in tensor '%s': %s", nm, j->err);
            }
            free(k);
        } while (jp_eat(j, ','));
        if (!jp_eat(j, '}')) return bad_file(f, "in tensor '%s': expected ',' or '}'", nm);
    }
    if (!have_dtype || !have_shape || !have_offsets)
        return bad_file(f, "tensor '%s' lacks %s", nm, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return NN_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(st_entry *const *)a)->name, (*(st_entry *const *)b)->name);
}

static int cmp_begin(const void *a, const void *b)
{
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Sizes and offsets: each tensor's bytes inside the data section, matching its
 * shape, and no two tensors sharing a byte; names unique. */
static nn_status check_entries(nn_safetensors *f)
{
    for (int i = 0; i < f->n; i++) {
        st_entry *e = &f->entries[i];
        uint64_t bytes = nn_dtype_size(e->dtype);
        bool zero = false;
        for (int d = 0; d < e->ndim; d++) zero |= e->shape[d] == 0;
        for (int d = 0; d < e->ndim && !zero; d++) {
            if ((uint64_t)e->shape[d] > UINT64_MAX / bytes)
                return bad_file(f, "tensor '%s' is too large", e->name);
            bytes *= (uint64_t)e->shape[d];
        }
        if (zero) bytes = 0;
        if (e->end < e->begin)
            return bad_file(f, "tensor '%s' has data_offsets [%llu, %llu] with end before begin", e->name,
                            (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->end > f->data_size)
            return bad_file(f, "tensor '%s' has data_offsets [%llu, %llu] past the end of the data (%llu bytes); "
                            "the file may be truncated", e->name, (unsigned long long)e->begin,
                            (unsigned long long)e->end, (unsigned long long)f->data_size);
        if (e->end - e->begin != bytes) {
            char buf[160];
            return bad_file(f, "tensor '%s' of shape %s and dtype %s needs %llu bytes, but data_offsets [%llu, %llu] hold %llu",
                            e->name, nn_shape_str(buf, e->ndim, e->shape), DTYPE_NAMES[e->dtype],
                            (unsigned long long)bytes, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)(e->end - e->begin));
        }
    }
    if (f->n < 2) return NN_OK;
    st_entry **order = malloc((size_t)f->n * sizeof *order);
    if (!order) return nn_error(NN_ERR_NOMEM, "out of memory");
    for (int i = 0; i < f->n; i++) order[i] = &f->entries[i];
    nn_status st = NN_OK;
    qsort(order, (size_t)f->n, sizeof *order, cmp_name);
    for (int i = 1; i < f->n && !st; i++)
        if (!strcmp(order[i - 1]->name, order[i]->name)) st = bad_file(f, "tensor '%s' appears twice", order[i]->name);
    qsort(order, (size_t)f->n, sizeof *order, cmp_begin);
    uint64_t reach = 0;
    const char *last = NULL;
    for (int i = 0; i < f->n && !st; i++) {
        const st_entry *e = order[i];
        if (e->begin == e->end) continue; /* empty tensors own no bytes */
        if (e->begin < reach) st = bad_file(f, "tensors '%s' and '%s' overlap", last, e->name);
        reach = e->end, last = e->name;
    }
    free(order);
    return st;
}

static nn_status parse_header(nn_safetensors *f, const char *text, size_t n)
{
    jp j = {text, text + n, NULL, {0}, 0};
    if (!jp_eat(&j, '{')) return bad_file(f, "the header is not a JSON object");
    if (!jp_eat(&j, '}')) {
        do {
            size_t klen;
            char *key = jp_string(&j, &klen);
            if (!key) return bad_file(f, "in the header: %s", j.err);
            if (!jp_eat(&j, ':')) { free(key); return bad_file(f, "in the header: expected ':'"); }
            if (!strcmp(key, "__metadata__")) {
                free(key);
                nn_status st = parse_metadata(f, &j);
                if (st) return st;
                continue;
            }
            if (strlen(key) != klen) { free(key); return bad_file(f, "a tensor name contains a NUL character"); }
            if (f->n == f->cap) {
                int cap = f->cap ? f->cap * 2 : 16;
                st_entry *e = realloc(f->entries, (size_t)cap * sizeof *e);
                if (!e) { free(key); return nn_error(NN_ERR_NOMEM, "out of memory"); }
                f->entries = e, f->cap = cap;
            }
            st_entry *e = &f->entries[f->n++];
            memset(e, 0, sizeof *e);
            e->name = key;
            nn_status st = parse_entry(f, &j, e);
            if (st) return st;
        } while (jp_eat(&j, ','));
        if (!jp_eat(&j, '}')) return bad_file(f, "in the header: expected ',' or '}'");
    }
    jp_ws(&j);
    if (j.p != j.end) return bad_file(f, "unexpected text after the header's JSON object");
    return check_entries(f);
}

/* The 8-byte length, then the header; total is the file's size. */
static nn_status check_length(nn_safetensors *f, const unsigned char *len8, uint64_t total, uint64_t *hlen)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
    if (n > total - 8)
        return bad_file(f, "header length %llu is larger than the rest of the file (%llu bytes); the file may be truncated",
                        (unsigned long long)n, (unsigned long long)(total - 8));
    if (n > NN_ST_MAX_HEADER)
        return bad_file(f, "header length %llu exceeds the limit of %u bytes", (unsigned long long)n, NN_ST_MAX_HEADER);
    if (n < 2) return bad_file(f, "header length %llu is too small", (unsigned long long)n);
    *hlen = n;
    return NN_OK;
}

static nn_safetensors *new_file(const char *name)
{
    nn_safetensors *f = calloc(1, sizeof *f);
    if (f) f->name = strdup(name ? name : "<memory>");
    if (!f || !f->name) {
        free(f);
        nn_error(NN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->fd = -1;
    return f;
}

void nn_safetensors_close(nn_safetensors *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    for (int i = 0; i < f->n; i++) free(f->entries[i].name);
    for (int i = 0; i < f->nmeta; i++) free(f->meta[i].key), free(f->meta[i].value);
    free(f->entries), free(f->meta), free(f->mem), free(f->name);
    free(f);
}

static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
    unsigned char *p = buf;
    errno = 0;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r, n -= (size_t)r, off += (uint64_t)r;
    }
    return true;
}

nn_safetensors *nn_safetensors_open(const char *path)
{
    nn_safetensors *f = new_file(path);
    if (!f) return NULL;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (f->fd < 0 || fstat(f->fd, &sb) < 0) {
        nn_error(errno == ENOENT ? NN_ERR_ARG : NN_ERR_RUNTIME, "cannot open '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (S_ISDIR(sb.st_mode)) { nn_error(NN_ERR_ARG, "cannot open '%s': Is a directory", path); goto fail; }
    uint64_t total = (uint64_t)sb.st_size;
    unsigned char len8[8];
    if (total < 8 || !read_at(f->fd, len8, 8, 0)) {
        bad_file(f, "the file has %llu bytes, fewer than the 8-byte header length", (unsigned long long)total);
        goto fail;
    }
    if (!memcmp(len8, "PK\3\4", 4)) {
        nn_error(NN_ERR_RUNTIME, "'%s' is a PyTorch pickle (zip) checkpoint; nnrepl reads safetensors files "
                 "(in Python: safetensors.torch.save_file(torch.load(path), 'model.safetensors'))", path);
        goto fail;
    }
    uint64_t hlen;
    if (check_length(f, len8, total, &hlen)) goto fail;
    char *text = malloc(hlen);
    if (!text) { nn_error(NN_ERR_NOMEM, "out of memory reading the header of '%s'", path); goto fail; }
    if (!read_at(f->fd, text, hlen, 8)) {
        free(text);
        nn_error(NN_ERR_RUNTIME, "cannot read '%s': %s", path, errno ? strerror(errno) : "short read");
        goto fail;
    }
    f->data_start = 8 + hlen;
    f->data_size = total - 8 - hlen;
    nn_status st = parse_header(f, text, hlen);
    free(text);
    if (st) goto fail;
    return f;
fail:
    nn_safetensors_close(f);
    return NULL;
}

nn_safetensors *nn_safetensors_open_mem(const void *bytes, size_t n, const char *name)
{
    nn_safetensors *f = new_file(name);
    if (!f) return NULL;
    uint64_t hlen;
    if (n < 8) {
        bad_file(f, "the file has %zu bytes, fewer than the 8-byte header length", n);
        goto fail;
    }
    if (check_length(f, bytes, n, &hlen)) goto fail;
    f->mem = malloc(n);
    if (!f->mem) { nn_error(NN_ERR_NOMEM, "out of memory"); goto fail; }
    memcpy(f->mem, bytes, n);
    f->data_start = 8 + hlen;
    f->data_size = n - 8 - hlen;
    if (parse_header(f, (const char *)f->mem + 8, hlen)) goto fail;
    return f;
fail:
    nn_safetensors_close(f);
    return NULL;
}

int nn_safetensors_count(const nn_safetensors *f) { return f->n; }
const char *nn_safetensors_name(const nn_safetensors *f, int i) { return f->entries[i].name; }
nn_dtype nn_safetensors_dtype(const nn_safetensors *f, int i) { return f->entries[i].dtype; }

int nn_safetensors_shape(const nn_safetensors *f, int i, const int64_t **shape)
{
    *shape = f->entries[i].shape;
    return f->entries[i].ndim;
}

int nn_safetensors_find(const nn_safetensors *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->entries[i].name, name)) return i;
    return -1;
}

nn_tensor *nn_safetensors_load(nn_safetensors *f, int i)
{
    if (i < 0 || i >= f->n) {
        nn_error(NN_ERR_INDEX, "safetensors: tensor index %d out of range for '%s' (%d tensors)", i, f->name, f->n);
        return NULL;
    }
    const st_entry *e = &f->entries[i];
    nn_tensor *t = nn_empty(e->ndim, e->shape, e->dtype, NN_DEVICE_CPU);
    if (!t) return NULL;
    size_t n = (size_t)(e->end - e->begin);
    if (n) {
        if (f->mem) memcpy(nn_data(t), f->mem + f->data_start + e->begin, n);
        else if (!read_at(f->fd, nn_data(t), n, f->data_start + e->begin)) {
            nn_error(NN_ERR_RUNTIME, "cannot read tensor '%s' from '%s': %s", e->name, f->name,
                     errno ? strerror(errno) : "the file was truncated");
            nn_release(t);
            return NULL;
        }
    }
    if (e->dtype == NN_BOOL) { /* any nonzero byte is true; keep bools 0/1 */
        unsigned char *b = nn_data(t);
        for (size_t k = 0; k < n; k++) b[k] = b[k] != 0;
    }
    return t;
}

int nn_safetensors_meta_count(const nn_safetensors *f) { return f->nmeta; }
const char *nn_safetensors_meta_key(const nn_safetensors *f, int i) { return f->meta[i].key; }

const char *nn_safetensors_meta_value(const nn_safetensors *f, int i, size_t *len)
{
    if (len) *len = f->meta[i].value_len;
    return f->meta[i].value;
}

const char *nn_safetensors_meta_get(const nn_safetensors *f, const char *key, size_t *len)
{
    for (int i = f->nmeta - 1; i >= 0; i--) /* a repeated key: the last wins, as in JSON readers */
        if (!strcmp(f->meta[i].key, key)) return nn_safetensors_meta_value(f, i, len);
    return NULL;
}

/* ======================= writing ======================= */

typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const void *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = true; return; }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_json_string(sbuf *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            sb_put(b, esc, 2);
        } else if (c < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_put(b, esc, 6);
        } else {
            sb_put(b, &s[i], 1);
        }
    }
    sb_put(b, "\"", 1);
}

static bool write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

static size_t tensor_bytes(const nn_tensor *t) { return (size_t)nn_numel(t) * nn_dtype_size(t->dtype); }

/* Tensor t as a contiguous CPU tensor (t itself, retained, when it already is one). */
static nn_tensor *host_contiguous(nn_tensor *t)
{
    nn_tensor *c = nn_contiguous(t);
    if (!c || c->storage->device.type == NN_CPU) return c;
    nn_tensor *h = nn_to_device(c, NN_DEVICE_CPU);
    nn_release(c);
    return h;
}

static nn_status check_names(int n, const char *const *names, nn_tensor *const *tensors, int nmeta,
                             const char *const *keys, const char *const *values)
{
    for (int i = 0; i < n; i++) {
        if (!names[i] || !tensors[i]) return nn_error(NN_ERR_ARG, "save: tensor %d has no name or no tensor", i);
        if (!utf8_valid((const unsigned char *)names[i], strlen(names[i])))
            return nn_error(NN_ERR_ARG, "save: tensor name '%s' is not valid UTF-8", names[i]);
        if (!strcmp(names[i], "__metadata__"))
            return nn_error(NN_ERR_ARG, "save: '__metadata__' is reserved and cannot name a tensor");
        if (tensors[i]->dtype < 0 || tensors[i]->dtype >= NN_NDTYPES)
            return nn_error(NN_ERR_DTYPE, "save: tensor '%s' has an unknown dtype", names[i]);
        if (!DTYPE_NAMES[tensors[i]->dtype])
            return nn_error(NN_ERR_DTYPE, "save: tensor '%s' is %s, which safetensors files cannot hold", names[i],
                            nn_dtype_name(tensors[i]->dtype));
        for (int k = 0; k < i; k++)
            if (!strcmp(names[k], names[i])) return nn_error(NN_ERR_ARG, "save: tensor name '%s' appears twice", names[i]);
    }
    for (int i = 0; i < nmeta; i++) {
        if (!keys[i] || !values[i]) return nn_error(NN_ERR_ARG, "save: metadata entry %d is missing", i);
        if (!utf8_valid((const unsigned char *)keys[i], strlen(keys[i])) ||
            !utf8_valid((const unsigned char *)values[i], strlen(values[i])))
            return nn_error(NN_ERR_ARG, "save: metadata '%s' is not valid UTF-8", keys[i]);
    }
    return NN_OK;
}

/* The header text (padded to a multiple of 8) and each tensor's data offset. */
static nn_status build_header(sbuf *b, int n, const char *const *names, nn_tensor *const *tensors, int nmeta,
                              const char *const *keys, const char *const *values, const int *order, uint64_t *begin)
{
    uint64_t off = 0;
    for (int k = 0; k < n; k++) {
        begin[order[k]] = off;
        off += tensor_bytes(tensors[order[k]]);
    }
    sb_str(b, "{");
    if (nmeta) {
        sb_str(b, "\"__metadata__\":{");
        for (int i = 0; i < nmeta; i++) {
            if (i) sb_str(b, ",");
            sb_json_string(b, keys[i], strlen(keys[i]));
            sb_str(b, ":");
            sb_json_string(b, values[i], strlen(values[i]));
        }
        sb_str(b, "}");
    }
    for (int i = 0; i < n; i++) {
        const nn_tensor *t = tensors[i];
        char num[64];
        if (i || nmeta) sb_str(b, ",");
        sb_json_string(b, names[i], strlen(names[i]));
        sb_str(b, ":{\"dtype\":\"");
        sb_str(b, DTYPE_NAMES[t->dtype]);
        sb_str(b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            snprintf(num, sizeof num, d ? ",%lld" : "%lld", (long long)t->shape[d]);
            sb_str(b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)begin[i],
                 (unsigned long long)(begin[i] + tensor_bytes(t)));
        sb_str(b, num);
    }
    sb_str(b, "}");
    while (!b->oom && b->n % 8) sb_str(b, " ");
    if (b->oom) return nn_error(NN_ERR_NOMEM, "save: out of memory building the header");
    if (b->n > NN_ST_MAX_HEADER) return nn_error(NN_ERR_ARG, "save: the header would exceed %u bytes", NN_ST_MAX_HEADER);
    return NN_OK;
}

static atomic_uint tmp_counter;

nn_status nn_safetensors_save(const char *path, int n, const char *const *names, nn_tensor *const *tensors, int nmeta,
                              const char *const *meta_keys, const char *const *meta_values)
{
    nn_status st = check_names(n, names, tensors, nmeta, meta_keys, meta_values);
    if (st) return st;
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    uint64_t *begin = malloc(((size_t)n + 1) * sizeof *begin);
    sbuf hdr = {0};
    char *tmp = NULL, *dir = NULL;
    int fd = -1;
    bool created = false;
    if (!order || !begin) { st = nn_error(NN_ERR_NOMEM, "save: out of memory"); goto done; }
    /* data layout: largest element size first (stable), so each tensor is aligned */
    int k = 0;
    for (size_t sz = 8; sz >= 1; sz /= 2)
        for (int i = 0; i < n; i++)
            if (nn_dtype_size(tensors[i]->dtype) == sz) order[k++] = i;
    if (k != n) { st = nn_error(NN_ERR_DTYPE, "save: unexpected element size"); goto done; }
    st = build_header(&hdr, n, names, tensors, nmeta, meta_keys, meta_values, order, begin);
    if (st) goto done;

    /* the temporary file sits beside the target, so rename is atomic */
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    dir = malloc(dlen + 2);
    tmp = malloc(strlen(path) + 64);
    if (!dir || !tmp) { st = nn_error(NN_ERR_NOMEM, "save: out of memory"); goto done; }
    if (slash) memcpy(dir, path, dlen ? dlen : 1), dir[dlen ? dlen : 1] = 0;
    else strcpy(dir, ".");
    snprintf(tmp, strlen(path) + 64, "%.*s%s.%s.tmp%ld.%u", (int)dlen, path, slash ? "/" : "", slash ? slash + 1 : path,
             (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) { st = nn_error(NN_ERR_RUNTIME, "cannot save '%s': %s", path, strerror(errno)); goto done; }
    created = true;

    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hdr.n >> (8 * i));
    if (!write_all(fd, len8, 8) || !write_all(fd, hdr.p, hdr.n)) goto io_error;
    for (k = 0; k < n; k++) {
        nn_tensor *h = host_contiguous(tensors[order[k]]);
        if (!h) { st = nn_last_status() ? nn_last_status() : NN_ERR_RUNTIME; goto done; }
        bool ok = write_all(fd, nn_data(h), tensor_bytes(h));
        nn_release(h);
        if (!ok) goto io_error;
    }
    if (fsync(fd) < 0) goto io_error;
    int rc = close(fd);
    fd = -1;
    if (rc < 0) goto io_error;
    if (rename(tmp, path) < 0) goto io_error;
    created = false;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* best effort: some file systems refuse fsync on a directory */
        (void)fsync(dfd);
        close(dfd);
    }
    goto done;
io_error:
    st = nn_error(NN_ERR_RUNTIME, "cannot save '%s': %s", path, strerror(errno));
done:
    if (fd >= 0) close(fd);
    if (created) unlink(tmp); /* a failure: nothing half-written stays */
    free(tmp), free(dir), free(order), free(begin), free(hdr.p);
    return st;
}
