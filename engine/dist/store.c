/* The store wrappers and the file store: records (u32 key length, key, u64 value
 * length, value) appended to one file under flock; the last record of a key wins.
 * A reader that does not find its key yet sleeps and looks again until its deadline. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "store.h"

nn_status nn_store_set(nn_store *s, const char *key, const void *val, size_t n) { return s->ops->set(s, key, val, n); }
nn_status nn_store_get(nn_store *s, const char *key, void **val, size_t *n) { return s->ops->get(s, key, s->timeout, val, n); }
nn_status nn_store_add(nn_store *s, const char *key, int64_t delta, int64_t *result) { return s->ops->add(s, key, delta, result); }
nn_status nn_store_check(nn_store *s, const char *key, bool *exists) { return s->ops->check(s, key, exists); }
nn_status nn_store_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                               void **cur, size_t *curn)
{
    return s->ops->compare_set(s, key, expected, en, desired, dn, cur, curn);
}
nn_status nn_store_delete_key(nn_store *s, const char *key, bool *deleted) { return s->ops->delete_key(s, key, deleted); }
nn_status nn_store_num_keys(nn_store *s, int64_t *n) { return s->ops->num_keys(s, n); }

nn_store *nn_store_retain(nn_store *s)
{
    if (s) __atomic_add_fetch(&s->extra_refs, 1, __ATOMIC_ACQ_REL);
    return s;
}

void nn_store_free(nn_store *s)
{
    if (!s) return;
    if (__atomic_fetch_sub(&s->extra_refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    s->ops->free(s);
}

/* compare_set's rule over a looked-up value (NULL: absent); *set: store desired. */
nn_status nn_store_cas_result(const void *v, size_t vn, const void *expected, size_t en, const void *desired, size_t dn,
                              void **cur, size_t *curn, bool *set)
{
    const void *out;
    size_t on;
    *set = v ? vn == en && (!en || !memcmp(v, expected, en)) : en == 0;
    if (*set) out = desired, on = dn;
    else if (v) out = v, on = vn;
    else out = expected, on = en;
    *cur = malloc(on ? on : 1);
    if (!*cur) return nn_error(NN_ERR_NOMEM, "store: out of memory");
    if (on) memcpy(*cur, out, on);
    *curn = on;
    return NN_OK;
}

nn_status nn_store_wait(nn_store *s, const char *const *keys, int n, double timeout)
{
    double deadline = nn_net_now() + timeout;
    for (int i = 0; i < n; i++) {
        double left = deadline - nn_net_now();
        void *v;
        size_t len;
        nn_status st = s->ops->get(s, keys[i], left > 0 ? left : 0, &v, &len);
        if (st) return st;
        free(v);
    }
    return NN_OK;
}

/* ---- the file store ---- */

typedef struct {
    nn_store base;
    char path[4096];
} file_store;

/* Read the whole file under a lock of kind lk; the fd stays open and locked (caller unlocks). */
/* The store's file open, locked (LOCK_SH or LOCK_EX) and read whole, until close_locked. */
typedef struct {
    int fd;
    char *data;
    size_t len;
} locked;

static nn_status open_locked(file_store *f, int lk, locked *l)
{
    l->fd = open(f->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0) return nn_error(NN_ERR_RUNTIME, "store %s: cannot open: %s", f->base.desc, strerror(errno));
    while (flock(l->fd, lk) < 0) {
        if (errno == EINTR) continue;
        nn_status st = nn_error(NN_ERR_RUNTIME, "store %s: cannot lock: %s", f->base.desc, strerror(errno));
        close(l->fd);
        return st;
    }
    struct stat sb;
    fstat(l->fd, &sb);
    size_t n = (size_t)sb.st_size, got = 0;
    l->data = malloc(n + 1);
    if (!l->data) { close(l->fd); return nn_error(NN_ERR_NOMEM, "store %s: out of memory", f->base.desc); }
    while (got < n) {
        ssize_t k = pread(l->fd, l->data + got, n - got, (off_t)got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    l->len = got;
    return NN_OK;
}

#define TOMBSTONE UINT64_MAX /* a record's value length: the key was deleted */

/* The last value of key in the records, or NULL (absent or deleted). */
static const char *lookup(const char *data, size_t n, const char *key, uint64_t *vlen)
{
    size_t klen = strlen(key), p = 0;
    const char *found = NULL;
    while (p + 4 <= n) {
        uint32_t kl;
        memcpy(&kl, data + p, 4);
        if (p + 4 + kl + 8 > n) break;
        uint64_t vl;
        memcpy(&vl, data + p + 4 + kl, 8);
        uint64_t stored = vl == TOMBSTONE ? 0 : vl;
        if (p + 12 + kl + stored > n) break; /* a record being written */
        if (kl == klen && !memcmp(data + p + 4, key, klen)) { found = vl == TOMBSTONE ? NULL : data + p + 12 + kl; *vlen = stored; }
        p += 12 + kl + stored;
    }
    return found;
}

/* A record of key = val (n bytes), or a deletion when val is NULL. */
static nn_status append(file_store *f, int fd, const char *key, const void *val, size_t n)
{
    uint32_t kl = (uint32_t)strlen(key);
    uint64_t vl = val ? n : TOMBSTONE;
    if (!val) n = 0;
    size_t total = 12 + kl + n;
    char *rec = malloc(total);
    if (!rec) return nn_error(NN_ERR_NOMEM, "store %s: out of memory", f->base.desc);
    memcpy(rec, &kl, 4);
    memcpy(rec + 4, key, kl);
    memcpy(rec + 4 + kl, &vl, 8);
    if (n) memcpy(rec + 12 + kl, val, n);
    off_t end = lseek(fd, 0, SEEK_END);
    size_t done = 0;
    while (done < total) {
        ssize_t k = pwrite(fd, rec + done, total - done, end + (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += (size_t)k;
    }
    free(rec);
    if (done < total) return nn_error(NN_ERR_RUNTIME, "store %s: cannot write: %s", f->base.desc, strerror(errno));
    return NN_OK;
}

static void close_locked(locked *l)
{
    flock(l->fd, LOCK_UN);
    close(l->fd);
    free(l->data);
}

static nn_status file_set(nn_store *s, const char *key, const void *val, size_t n)
{
    file_store *f = (file_store *)s;
    locked l;
    nn_status st = open_locked(f, LOCK_EX, &l);
    if (st) return st;
    st = append(f, l.fd, key, val, n);
    close_locked(&l);
    return st;
}

static nn_status file_get(nn_store *s, const char *key, double timeout, void **val, size_t *n)
{
    file_store *f = (file_store *)s;
    double deadline = nn_net_now() + timeout, pause = 0.005;
    for (;;) {
        locked l;
        nn_status st = open_locked(f, LOCK_SH, &l);
        if (st) return st;
        uint64_t vl = 0;
        const char *v = lookup(l.data, l.len, key, &vl);
        if (v) {
            *val = malloc(vl ? vl : 1);
            if (*val) memcpy(*val, v, vl);
            *n = vl;
            close_locked(&l);
            return *val ? NN_OK : nn_error(NN_ERR_NOMEM, "store %s: out of memory", s->desc);
        }
        close_locked(&l);
        if (nn_net_now() >= deadline)
            return nn_error(NN_ERR_RUNTIME, "store %s: timed out after %g s waiting for key '%s'", s->desc, timeout, key);
        struct timespec ts = {0, (long)(pause * 1e9)};
        nanosleep(&ts, NULL);
        if (pause < 0.05) pause *= 2;
    }
}

static nn_status file_add(nn_store *s, const char *key, int64_t delta, int64_t *result)
{
    file_store *f = (file_store *)s;
    locked l;
    nn_status st = open_locked(f, LOCK_EX, &l);
    if (st) return st;
    uint64_t vl = 0;
    const char *v = lookup(l.data, l.len, key, &vl);
    char num[32];
    int64_t x = 0;
    if (v) {
        size_t k = vl < sizeof num - 1 ? vl : sizeof num - 1;
        memcpy(num, v, k);
        num[k] = 0;
        x = strtoll(num, NULL, 10);
    }
    x += delta;
    int k = snprintf(num, sizeof num, "%lld", (long long)x);
    st = append(f, l.fd, key, num, (size_t)k);
    close_locked(&l);
    *result = x;
    return st;
}

/* Whether key is there; with del, delete it if so. */
static nn_status file_find(nn_store *s, const char *key, bool del, bool *found)
{
    file_store *f = (file_store *)s;
    locked l;
    nn_status st = open_locked(f, del ? LOCK_EX : LOCK_SH, &l);
    if (st) return st;
    uint64_t vl;
    *found = lookup(l.data, l.len, key, &vl) != NULL;
    if (*found && del) st = append(f, l.fd, key, NULL, 0);
    close_locked(&l);
    return st;
}

static nn_status file_check(nn_store *s, const char *key, bool *exists) { return file_find(s, key, false, exists); }

static nn_status file_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                                  void **cur, size_t *curn)
{
    file_store *f = (file_store *)s;
    locked l;
    nn_status st = open_locked(f, LOCK_EX, &l);
    if (st) return st;
    uint64_t vl = 0;
    const char *v = lookup(l.data, l.len, key, &vl);
    bool set;
    st = nn_store_cas_result(v, vl, expected, en, desired, dn, cur, curn, &set);
    if (!st && set) st = append(f, l.fd, key, desired ? desired : "", dn);
    close_locked(&l);
    return st;
}

static nn_status file_delete_key(nn_store *s, const char *key, bool *deleted) { return file_find(s, key, true, deleted); }

/* Step over the record at p: its key (kl bytes at *key), whether it is a deletion; the next
 * record's offset, or 0 at the end or at a partial record. */
static size_t record_at(const char *data, size_t len, size_t p, const char **key, uint32_t *kl, bool *dead)
{
    uint64_t vl;
    if (p + 12 > len) return 0;
    memcpy(kl, data + p, 4);
    if (p + 12 + *kl > len) return 0;
    memcpy(&vl, data + p + 4 + *kl, 8);
    *dead = vl == TOMBSTONE;
    size_t next = p + 12 + *kl + (*dead ? 0 : vl);
    *key = data + p + 4;
    return next <= len ? next : 0;
}

/* The keys whose last record is not a deletion. */
static nn_status file_num_keys(nn_store *s, int64_t *count)
{
    file_store *f = (file_store *)s;
    locked l;
    nn_status st = open_locked(f, LOCK_SH, &l);
    if (st) return st;
    *count = 0;
    const char *key, *k2;
    uint32_t kl, kl2;
    bool dead, dead2;
    for (size_t p = 0, next; (next = record_at(l.data, l.len, p, &key, &kl, &dead)); p = next) {
        bool last = true;
        for (size_t q = next, n2; last && (n2 = record_at(l.data, l.len, q, &k2, &kl2, &dead2)); q = n2)
            if (kl2 == kl && !memcmp(k2, key, kl)) last = false;
        if (last && !dead) (*count)++;
    }
    close_locked(&l);
    return NN_OK;
}

static void file_free(nn_store *s) { free(s); }

static const nn_store_ops file_ops = {file_set, file_get, file_add, file_check, file_free, file_compare_set, file_delete_key, file_num_keys};

nn_store *nn_store_file(const char *path, double timeout)
{
    if (!*path) { nn_error(NN_ERR_ARG, "file:// init method needs a path, as file:///tmp/rendezvous"); return NULL; }
    file_store *f = calloc(1, sizeof *f);
    if (!f) { nn_error(NN_ERR_NOMEM, "out of memory creating the store"); return NULL; }
    f->base.ops = &file_ops;
    f->base.timeout = timeout;
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->base.desc, sizeof f->base.desc, "file://%s", path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        nn_error(NN_ERR_RUNTIME, "store %s: cannot open: %s", f->base.desc, strerror(errno));
        free(f);
        return NULL;
    }
    close(fd);
    return &f->base;
}

const char *nn_store_file_path(const nn_store *s) { return s && s->ops == &file_ops ? ((const file_store *)s)->path : NULL; }
