/* safetensors: byte-exact round trips for every dtype (non-contiguous inputs,
 * 0-dim and empty tensors, metadata, odd names), the file layout, files in the
 * reference writer's style, every kind of bad file (truncated at every length,
 * corrupt JSON, oversized header lengths, bad offsets) with their messages,
 * and atomic writes that leave nothing behind when they fail. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#pragma GCC diagnostic ignored "-Wformat-zero-length" /* CHECK(cond) without a message */
#include "device.h"
#include "ops.h"
#include "safetensors.h"

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
#define NDT ((int)(sizeof all_dtypes / sizeof *all_dtypes))

static uint64_t lcg = 2024;
static uint32_t rnd(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg >> 33);
}

static char dir[256];

static const char *path_of(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* A contiguous CPU tensor of random bytes (any bit pattern, NaN payloads
 * included; bools 0/1). */
static nn_tensor *random_tensor(int ndim, const int64_t *shape, nn_dtype dt)
{
    nn_tensor *t = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    unsigned char *p = nn_data(t);
    size_t n = (size_t)nn_numel(t) * nn_dtype_size(dt);
    for (size_t i = 0; i < n; i++) p[i] = dt == NN_BOOL ? (unsigned char)(rnd() & 1) : (unsigned char)rnd();
    return t;
}

/* bytes of element idx of t, through its strides */
static const unsigned char *elem(const nn_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->strides[i];
    return (const unsigned char *)t->storage->data + off * (int64_t)nn_dtype_size(t->dtype);
}

static bool next_index(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* Same shape, dtype and bytes element by element (b contiguous). */
static bool same_bytes(const nn_tensor *a, const nn_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    if (nn_numel(a) == 0) return nn_numel(b) == 0;
    size_t es = nn_dtype_size(a->dtype);
    int64_t idx[NN_MAX_DIMS] = {0};
    const unsigned char *q = nn_data(b);
    do {
        if (memcmp(elem(a, idx), q, es)) return false;
        q += es;
    } while (next_index(a->ndim, a->shape, idx));
    return true;
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 1);
    *n = fread(buf, 1, (size_t)len, f);
    buf[*n] = 0; /* the header is searched as text */
    fclose(f);
    return buf;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* A file of the given header text (padding none) followed by data bytes. */
static size_t make_file(unsigned char *out, const char *header, const void *data, size_t ndata)
{
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(n >> (8 * i));
    memcpy(out + 8, header, n);
    if (ndata) memcpy(out + 8 + n, data, ndata);
    return 8 + n + ndata;
}

static int count_tmp_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp")) n++;
    closedir(d);
    return n;
}

/* ---- round trips ---- */

static void test_round_trip(void)
{
    for (int k = 0; k < NDT; k++) {
        nn_dtype dt = all_dtypes[k];
        int64_t big[3] = {5, 6, 7};
        nn_tensor *base = random_tensor(3, big, dt);
        /* non-contiguous views: transposed, narrowed, stepped, expanded */
        nn_tensor *tr = nn_transpose(base, 0, 2);
        nn_tensor *nar = nn_narrow(base, 1, 2, 3);
        nn_tensor *stp = nn_slice(base, 2, 1, 7, 3);
        int64_t one[2] = {1, 4};
        nn_tensor *small = random_tensor(2, one, dt);
        int64_t ex_shape[2] = {3, 4};
        nn_tensor *ex = nn_expand(small, 2, ex_shape);
        nn_tensor *scalar = random_tensor(0, NULL, dt);
        int64_t empty_shape[2] = {0, 3};
        nn_tensor *empty = random_tensor(2, empty_shape, dt);
        nn_tensor *ts[] = {base, tr, nar, stp, ex, scalar, empty};
        const char *names[] = {"base", "layer.0.weight", "narrow", "step", "expanded", "scalar", "empty"};
        int n = 7;
        CHECK(!nn_is_contiguous(tr) && !nn_is_contiguous(nar) && !nn_is_contiguous(stp) && !nn_is_contiguous(ex));
        const char *keys[] = {"format", "note"};
        const char *vals[] = {"pt", "quote \" backslash \\ newline \n tab \t unicode \xc3\xa9\xe2\x82\xac"};
        const char *p = path_of("rt.safetensors");
        CHECK(nn_safetensors_save(p, n, names, ts, 2, keys, vals) == NN_OK, "%s: %s", nn_dtype_name(dt), nn_last_error());
        nn_safetensors *f = nn_safetensors_open(p);
        CHECK(f != NULL, "%s: %s", nn_dtype_name(dt), nn_last_error());
        if (f) {
            CHECK(nn_safetensors_count(f) == n);
            for (int i = 0; i < n && i < nn_safetensors_count(f); i++) {
                CHECK(!strcmp(nn_safetensors_name(f, i), names[i]), "order: %s", nn_safetensors_name(f, i));
                CHECK(nn_safetensors_dtype(f, i) == dt);
                nn_tensor *back = nn_safetensors_load(f, i);
                CHECK(back && nn_is_contiguous(back) && same_bytes(ts[i], back), "%s %s", nn_dtype_name(dt), names[i]);
                nn_release(back);
            }
            size_t len;
            const char *v = nn_safetensors_meta_get(f, "note", &len);
            CHECK(v && len == strlen(vals[1]) && !memcmp(v, vals[1], len), "metadata");
            CHECK(nn_safetensors_meta_count(f) == 2 && !strcmp(nn_safetensors_meta_key(f, 0), "format"));
            CHECK(nn_safetensors_find(f, "step") == 3 && nn_safetensors_find(f, "nope") == -1);
            nn_safetensors_close(f);
        }
        for (int i = 0; i < n; i++) nn_release(ts[i]);
        nn_release(small);
    }
    CHECK(count_tmp_files() == 0);
}

/* Layout: header length a multiple of 8, tensors aligned, data packed in order. */
static void test_layout(void)
{
    int64_t s3[1] = {3}, s2[1] = {2};
    nn_tensor *a = random_tensor(1, s3, NN_U8), *b = random_tensor(1, s2, NN_F64), *c = random_tensor(1, s3, NN_F16);
    nn_tensor *ts[] = {a, b, c};
    const char *names[] = {"a", "b", "c"};
    const char *p = path_of("layout.safetensors");
    CHECK(nn_safetensors_save(p, 3, names, ts, 0, NULL, NULL) == NN_OK, "%s", nn_last_error());
    size_t n;
    unsigned char *buf = read_file(p, &n);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | buf[i];
    CHECK(h % 8 == 0 && 8 + h <= n, "header length %llu", (unsigned long long)h);
    CHECK(n == 8 + h + 3 + 16 + 6, "file size %zu", n);
    CHECK(buf[8] == '{' && (buf[8 + h - 1] == ' ' || buf[8 + h - 1] == '}'));
    /* b (8-byte elements) first, then c (2), then a (1) */
    CHECK(strstr((char *)buf + 8, "\"b\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}") != NULL, "%.*s", (int)h, buf + 8);
    CHECK(strstr((char *)buf + 8, "\"c\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[16,22]}") != NULL);
    CHECK(strstr((char *)buf + 8, "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[22,25]}") != NULL);
    CHECK(!memcmp(buf + 8 + h, nn_data(b), 16) && !memcmp(buf + 8 + h + 16, nn_data(c), 6) &&
          !memcmp(buf + 8 + h + 22, nn_data(a), 3));
    CHECK(strstr((char *)buf + 8, "__metadata__") == NULL);
    free(buf);
    nn_release(a), nn_release(b), nn_release(c);
}

/* A file in the reference writer's style, with JSON features our writer does not use. */
static void test_reference_style(void)
{
    float vals[2] = {1.5f, -2.25f};
    int64_t iv = -7;
    unsigned char data[24];
    memcpy(data, &iv, 8);
    memcpy(data + 8, vals, 8);
    data[16] = 1, data[17] = 0, data[18] = 5; /* bools, one not 0/1 */
    const char *hdr =
        "{ \"__metadata__\" : { \"format\" : \"pt\" , \"esc\":\"\\u00e9\\ud83d\\ude00\\/\\n\" },\n"
        "  \"b\\u0061r\": {\"data_offsets\": [8, 16], \"shape\": [2], \"dtype\": \"F32\", \"extra\": [1, {\"x\": null}, -2.5e3]},\n"
        "  \"i\": {\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},\n"
        "  \"flags\": {\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[16,19]},\n"
        "  \"none\": {\"dtype\":\"F32\",\"shape\":[0, 4],\"data_offsets\":[19,19]}\n"
        "}      ";
    unsigned char file[1024];
    size_t n = make_file(file, hdr, data, 19);
    const char *p = path_of("ref.safetensors");
    write_file(p, file, n);
    nn_safetensors *f = nn_safetensors_open(p);
    CHECK(f != NULL, "%s", nn_last_error());
    if (!f) return;
    CHECK(nn_safetensors_count(f) == 4 && !strcmp(nn_safetensors_name(f, 0), "bar") && !strcmp(nn_safetensors_name(f, 1), "i"));
    size_t len;
    const char *esc = nn_safetensors_meta_get(f, "esc", &len);
    CHECK(esc && !strcmp(esc, "\xc3\xa9\xf0\x9f\x98\x80/\n"), "escapes: %s", esc ? esc : "(null)");
    nn_tensor *t = nn_safetensors_load(f, 0);
    CHECK(t && t->dtype == NN_F32 && t->ndim == 1 && ((float *)nn_data(t))[0] == 1.5f && ((float *)nn_data(t))[1] == -2.25f);
    nn_release(t);
    t = nn_safetensors_load(f, 1);
    CHECK(t && t->ndim == 0 && *(int64_t *)nn_data(t) == -7);
    nn_release(t);
    t = nn_safetensors_load(f, 2);
    CHECK(t && ((unsigned char *)nn_data(t))[0] == 1 && ((unsigned char *)nn_data(t))[1] == 0 && ((unsigned char *)nn_data(t))[2] == 1,
          "bools normalised to 0/1");
    nn_release(t);
    t = nn_safetensors_load(f, 3);
    CHECK(t && t->ndim == 2 && t->shape[0] == 0 && t->shape[1] == 4);
    nn_release(t);
    CHECK(nn_safetensors_load(f, 4) == NULL && nn_last_status() == NN_ERR_INDEX);
    nn_safetensors_close(f);
}

/* ---- bad files ---- */

/* The header must fail to open with a message containing want (and the file name). */
static void expect_bad(const char *what, const char *hdr, const void *data, size_t ndata, const char *want)
{
    unsigned char file[4096];
    size_t n = make_file(file, hdr, data, ndata);
    const char *p = path_of("bad.safetensors");
    write_file(p, file, n);
    nn_clear_error();
    nn_safetensors *f = nn_safetensors_open(p);
    CHECK(f == NULL, "%s: opened", what);
    CHECK(strstr(nn_last_error(), want) != NULL, "%s: message '%s' lacks '%s'", what, nn_last_error(), want);
    CHECK(strstr(nn_last_error(), "bad.safetensors") != NULL, "%s: message '%s' lacks the file name", what, nn_last_error());
    nn_safetensors_close(f);
    f = nn_safetensors_open_mem(file, n, "mem");
    CHECK(f == NULL && strstr(nn_last_error(), want) != NULL, "%s (memory): %s", what, nn_last_error());
    nn_safetensors_close(f);
}

static void test_bad_files(void)
{
    unsigned char zeros[64] = {0};
    expect_bad("not json", "hello", zeros, 8, "not a JSON object");
    expect_bad("array", "[1, 2]", zeros, 8, "not a JSON object");
    expect_bad("unterminated", "{\"a\": {\"dtype\": \"F32", zeros, 8, "unterminated string");
    expect_bad("missing brace", "{\"a\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", zeros, 8, "expected ','");
    expect_bad("trailing", "{} x", zeros, 0, "unexpected text after");
    expect_bad("bad dtype", "{\"a\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[0,2]}}", zeros, 2, "dtype U16");
    expect_bad("dtype type", "{\"a\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,2]}}", zeros, 2, "dtype must be a string");
    expect_bad("no shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", zeros, 8, "lacks shape");
    expect_bad("negative dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", zeros, 8, "non-negative integer");
    expect_bad("float dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", zeros, 8, "expected an integer");
    expect_bad("huge dim", "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", zeros, 8, "out of range");
    expect_bad("numel overflow",
               "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,8]}}", zeros, 8, "too large");
    expect_bad("9 dims", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", zeros, 1, "more than 8 dims");
    expect_bad("size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", zeros, 16, "needs 12 bytes");
    expect_bad("past end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", zeros, 8, "past the end of the data");
    expect_bad("end before begin", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", zeros, 8, "end before begin");
    expect_bad("overlap",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               zeros, 16, "overlap");
    expect_bad("duplicate",
               "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
               zeros, 2, "appears twice");
    expect_bad("offsets shape", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", zeros, 1, "data_offsets must be");
    expect_bad("metadata value", "{\"__metadata__\":{\"k\":1}}", zeros, 0, "must be a string");
    expect_bad("bad escape", "{\"a\\q\":{}}", zeros, 0, "bad escape");
    expect_bad("lone surrogate", "{\"\\ud800\":{}}", zeros, 0, "surrogate");
    expect_bad("bad utf8", "{\"\xff\":{}}", zeros, 0, "UTF-8");
    expect_bad("control char", "{\"a\nb\":{}}", zeros, 0, "control character");
    expect_bad("nul in name", "{\"a\\u0000b\":{}}", zeros, 0, "NUL");
    expect_bad("deep", "{\"a\":{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
               zeros, 0, "nesting too deep");

    /* header lengths: larger than the file, absurd, too small; nothing absurd is allocated */
    const char *p = path_of("len.safetensors");
    unsigned char buf[64] = {0};
    uint64_t lens[] = {1000, 1000000000000ull, UINT64_MAX, 0x8000000000000000ull, 1};
    const char *wants[] = {"larger than the rest of the file", "larger than the rest", "larger than the rest", "larger than the rest",
                           "too small"};
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(lens[i] >> (8 * k));
        memcpy(buf + 8, "{}      ", 8);
        write_file(p, buf, 16);
        nn_safetensors *f = nn_safetensors_open(p);
        CHECK(f == NULL && strstr(nn_last_error(), wants[i]) && strstr(nn_last_error(), "len.safetensors"),
              "length %llu: %s", (unsigned long long)lens[i], nn_last_error());
        nn_safetensors_close(f);
    }
    /* a header over the 100 MB limit in a file that is big enough: refused before reading it */
    int fd = open(p, O_WRONLY | O_TRUNC);
    uint64_t big = 200000000;
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(big >> (8 * k));
    CHECK(write(fd, buf, 8) == 8 && ftruncate(fd, (off_t)(big + 8)) == 0);
    close(fd);
    nn_safetensors *f = nn_safetensors_open(p);
    CHECK(f == NULL && strstr(nn_last_error(), "exceeds the limit"), "%s", nn_last_error());
    nn_safetensors_close(f);
    unlink(p);

    write_file(p, "abc", 3);
    f = nn_safetensors_open(p);
    CHECK(f == NULL && strstr(nn_last_error(), "fewer than the 8-byte"), "%s", nn_last_error());
    write_file(p, "PK\3\4zipzipzipzip", 16);
    f = nn_safetensors_open(p);
    CHECK(f == NULL && strstr(nn_last_error(), "PyTorch pickle"), "%s", nn_last_error());
    f = nn_safetensors_open(path_of("does-not-exist"));
    CHECK(f == NULL && strstr(nn_last_error(), "No such file") && nn_last_status() == NN_ERR_ARG, "%s", nn_last_error());
    f = nn_safetensors_open(dir);
    CHECK(f == NULL && strstr(nn_last_error(), "directory"), "%s", nn_last_error());
}

/* Every prefix of a valid file fails cleanly (or, for the full file, loads). */
static void test_truncation(void)
{
    int64_t s[2] = {3, 5};
    nn_tensor *a = random_tensor(2, s, NN_F32), *b = random_tensor(1, s, NN_I64);
    nn_tensor *ts[] = {a, b};
    const char *names[] = {"a", "b"};
    const char *p = path_of("full.safetensors");
    CHECK(nn_safetensors_save(p, 2, names, ts, 0, NULL, NULL) == NN_OK);
    size_t n;
    unsigned char *full = read_file(p, &n);
    const char *q = path_of("cut.safetensors");
    int opened = 0, clean = 0;
    for (size_t len = 0; len < n; len++) {
        write_file(q, full, len);
        nn_safetensors *f = nn_safetensors_open(q);
        if (f) {
            opened++;
            nn_safetensors_close(f);
        } else if (strstr(nn_last_error(), "cut.safetensors")) {
            clean++;
        }
    }
    CHECK(opened == 0 && clean == (int)n, "opened %d, clean errors %d of %zu", opened, clean, n);
    /* bytes flipped at random: never a crash; a file that opens loads every tensor */
    for (int iter = 0; iter < 3000; iter++) {
        unsigned char *m = malloc(n);
        memcpy(m, full, n);
        int flips = 1 + (int)(rnd() % 4);
        for (int k = 0; k < flips; k++) m[rnd() % n] = (unsigned char)rnd();
        nn_safetensors *f = nn_safetensors_open_mem(m, n, "fuzz");
        if (f) {
            for (int i = 0; i < nn_safetensors_count(f); i++) nn_release(nn_safetensors_load(f, i));
            nn_safetensors_close(f);
        }
        free(m);
    }
    CHECK(1);
    free(full);
    nn_release(a), nn_release(b);
}

/* ---- atomic writes ---- */

static void test_atomic(void)
{
    int64_t s[1] = {16384};
    nn_tensor *t = random_tensor(1, s, NN_F32);
    nn_tensor *ts[] = {t};
    const char *names[] = {"w"};
    const char *target = path_of("keep.safetensors");
    write_file(target, "old contents", 12);

    /* a directory that does not exist */
    CHECK(nn_safetensors_save(path_of("no/such/dir/x.safetensors"), 1, names, ts, 0, NULL, NULL) != NN_OK &&
          strstr(nn_last_error(), "No such file"), "%s", nn_last_error());

    /* the write fails half-way (file size limit): the target keeps its old contents */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        nn_status st = nn_safetensors_save(target, 1, names, ts, 0, NULL, NULL);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(st != NN_OK && strstr(nn_last_error(), "keep.safetensors"), "%s", nn_last_error());
        size_t n;
        unsigned char *buf = read_file(target, &n);
        CHECK(n == 12 && !memcmp(buf, "old contents", 12), "target changed");
        free(buf);
        CHECK(count_tmp_files() == 0, "a temporary file was left");
    }

    /* a tensor whose copy to the host fails after the header went out (a CUDA
     * tensor in a build without CUDA): same guarantees */
    static float fake[4];
    int64_t s4[1] = {4};
    nn_tensor *cuda = nn_from_blob(fake, 1, s4, NULL, NN_F32, (nn_device){NN_CUDA, 0}, NULL, NULL);
    nn_tensor *both[] = {t, cuda};
    const char *bnames[] = {"w", "gpu"};
    if (!nn_gpu) {
        CHECK(nn_safetensors_save(target, 2, bnames, both, 0, NULL, NULL) != NN_OK);
        size_t n;
        unsigned char *buf = read_file(target, &n);
        CHECK(n == 12 && !memcmp(buf, "old contents", 12), "target changed");
        free(buf);
        CHECK(count_tmp_files() == 0, "a temporary file was left");
    }
    nn_release(cuda);

    /* the target is a directory: rename fails, the temporary file goes */
    const char *sub = path_of("subdir");
    mkdir(sub, 0777);
    CHECK(nn_safetensors_save(sub, 1, names, ts, 0, NULL, NULL) != NN_OK && strstr(nn_last_error(), "subdir"), "%s", nn_last_error());
    CHECK(count_tmp_files() == 0, "a temporary file was left");

    /* a directory we may not write to (root may write anywhere: skipped then) */
    const char *ro = path_of("readonly");
    mkdir(ro, 0555);
    chmod(ro, 0555);
    if (geteuid() != 0) {
        char p[600];
        snprintf(p, sizeof p, "%s/x.safetensors", ro);
        CHECK(nn_safetensors_save(p, 1, names, ts, 0, NULL, NULL) != NN_OK && strstr(nn_last_error(), "Permission denied"),
              "%s", nn_last_error());
        CHECK(access(p, F_OK) != 0);
    }
    rmdir(ro);
    rmdir(sub);

    /* success replaces the target */
    CHECK(nn_safetensors_save(target, 1, names, ts, 0, NULL, NULL) == NN_OK);
    nn_safetensors *f = nn_safetensors_open(target);
    CHECK(f && nn_safetensors_count(f) == 1);
    nn_tensor *back = f ? nn_safetensors_load(f, 0) : NULL;
    CHECK(back && same_bytes(t, back));
    nn_release(back);
    nn_safetensors_close(f);

    /* bad arguments */
    const char *dup[] = {"w", "w"};
    nn_tensor *two[] = {t, t};
    CHECK(nn_safetensors_save(target, 2, dup, two, 0, NULL, NULL) == NN_ERR_ARG && strstr(nn_last_error(), "appears twice"));
    const char *meta_name[] = {"__metadata__"};
    CHECK(nn_safetensors_save(target, 1, meta_name, ts, 0, NULL, NULL) == NN_ERR_ARG && strstr(nn_last_error(), "reserved"));
    const char *bad_utf8[] = {"w\xff"};
    CHECK(nn_safetensors_save(target, 1, bad_utf8, ts, 0, NULL, NULL) == NN_ERR_ARG && strstr(nn_last_error(), "UTF-8"));
    CHECK(count_tmp_files() == 0);
    nn_release(t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/nnrepl_test_safetensors_%ld", (long)getpid());
    mkdir(dir, 0777);
    test_round_trip();
    test_layout();
    test_reference_style();
    test_bad_files();
    test_truncation();
    test_atomic();
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || strstr(e->d_name, ".tmp")) unlink(path_of(e->d_name));
    closedir(d);
    rmdir(dir);
    return CHECK_REPORT();
}
