/* The TCP store. Rank 0 runs the server: one thread polling the listening socket,
 * a wake-up pipe and every client. Requests are
 *   u8 cmd, u32 key length, key, then for SET u64 length + value, for ADD i64 delta;
 * for CAS u64 length + expected, u64 length + desired;
 * replies: SET u8, GET u64 length + value, ADD i64, CHECK u8, CAS u64 length + value,
 * DELETE u8, NUMKEYS i64. A GET for a key not
 * there yet is parked and answered when a SET brings the key, so a client waits
 * on its socket and gives up at its own deadline (then it reconnects for the next
 * request, dropping the late answer with the old connection). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"
#include "store.h"

enum { CMD_SET = 1, CMD_GET, CMD_ADD, CMD_CHECK, CMD_CAS, CMD_DELETE, CMD_NUMKEYS };
#define MAX_KEY 4096
#define MAX_VALUE (1u << 30)

typedef struct { char *key; void *val; size_t n; } entry;
typedef struct { int fd; unsigned char *buf; size_t len, cap; } conn;
typedef struct { int fd; char *key; } waiter;

typedef struct {
    int lfd, wake[2];
    pthread_t thread;
    entry *kv; int nkv, capkv;
    conn *conns; int nconns, capconns;
    waiter *waiters; int nwait, capwait;
} server;

typedef struct {
    nn_store base;
    pthread_mutex_t mu;
    char host[256];
    int port;
    int fd;                /* client connection, -1 when closed */
    char local_addr[64];
    server *srv;           /* rank 0 only */
} tcp_store;

#define GROW(arr, n, cap) \
    ((n) < (cap) || ((arr) = realloc((arr), sizeof *(arr) * ((cap) = (cap) ? (cap) * 2 : 16))) != NULL)

/* ---- server ---- */

static entry *find(server *s, const char *key)
{
    for (int i = 0; i < s->nkv; i++)
        if (!strcmp(s->kv[i].key, key)) return &s->kv[i];
    return NULL;
}

static void reply_value(int fd, const entry *e)
{
    uint64_t n = e->n;
    double dl = nn_net_now() + 30;
    if (nn_net_send_all(fd, &n, 8, dl) == NN_NET_OK) nn_net_send_all(fd, e->val, e->n, dl);
}

static int set_key(server *s, const char *key, const void *val, size_t n)
{
    entry *e = find(s, key);
    void *copy = malloc(n ? n : 1);
    if (!copy) return -1;
    if (n) memcpy(copy, val, n);
    if (!e) {
        char *k = strdup(key);
        if (!k || !GROW(s->kv, s->nkv, s->capkv)) { free(copy); free(k); return -1; }
        e = &s->kv[s->nkv++];
        e->key = k;
    } else free(e->val);
    e->val = copy;
    e->n = n;
    for (int i = 0; i < s->nwait;) { /* answer the GETs parked on this key */
        if (!strcmp(s->waiters[i].key, key)) {
            reply_value(s->waiters[i].fd, e);
            free(s->waiters[i].key);
            s->waiters[i] = s->waiters[--s->nwait];
        } else i++;
    }
    return 0;
}

/* Handle one complete request at c->buf; returns its length, 0 if incomplete, -1 to drop the client. */
static long handle(server *s, conn *c)
{
    if (c->len < 5) return 0;
    unsigned char cmd = c->buf[0];
    uint32_t klen;
    memcpy(&klen, c->buf + 1, 4);
    if (klen > MAX_KEY || cmd < CMD_SET || cmd > CMD_NUMKEYS) return -1;
    size_t need = 5 + klen + (cmd == CMD_SET || cmd == CMD_ADD || cmd == CMD_CAS ? 8 : 0);
    if (c->len < need) return 0;
    uint64_t vlen = 0, dlen = 0;
    if (cmd == CMD_SET || cmd == CMD_CAS) {
        memcpy(&vlen, c->buf + 5 + klen, 8);
        if (vlen > MAX_VALUE) return -1;
        need += vlen;
        if (c->len < need) return 0;
    }
    if (cmd == CMD_CAS) {
        need += 8;
        if (c->len < need) return 0;
        memcpy(&dlen, c->buf + 5 + klen + 8 + vlen, 8);
        if (dlen > MAX_VALUE) return -1;
        need += dlen;
        if (c->len < need) return 0;
    }
    char key[MAX_KEY + 1];
    memcpy(key, c->buf + 5, klen);
    key[klen] = 0;
    const unsigned char *arg = c->buf + 5 + klen;
    double dl = nn_net_now() + 30;
    switch (cmd) {
    case CMD_SET: {
        unsigned char ok = set_key(s, key, arg + 8, vlen) == 0;
        nn_net_send_all(c->fd, &ok, 1, dl);
        break;
    }
    case CMD_GET: {
        entry *e = find(s, key);
        if (e) reply_value(c->fd, e);
        else {
            char *k = strdup(key);
            if (!k || !GROW(s->waiters, s->nwait, s->capwait)) { free(k); return -1; }
            s->waiters[s->nwait++] = (waiter){c->fd, k};
        }
        break;
    }
    case CMD_ADD: {
        int64_t delta, v = 0;
        memcpy(&delta, arg, 8);
        entry *e = find(s, key);
        if (e) {
            char num[32];
            size_t n = e->n < sizeof num - 1 ? e->n : sizeof num - 1;
            memcpy(num, e->val, n);
            num[n] = 0;
            v = strtoll(num, NULL, 10);
        }
        v += delta;
        char num[32];
        int n = snprintf(num, sizeof num, "%lld", (long long)v);
        if (set_key(s, key, num, (size_t)n)) return -1;
        nn_net_send_all(c->fd, &v, 8, dl);
        break;
    }
    case CMD_CHECK: {
        unsigned char there = find(s, key) != NULL;
        nn_net_send_all(c->fd, &there, 1, dl);
        break;
    }
    case CMD_CAS: {
        entry *e = find(s, key);
        void *cur;
        size_t curn;
        bool set;
        if (nn_store_cas_result(e ? e->val : NULL, e ? e->n : 0, arg + 8, vlen, arg + 16 + vlen, dlen, &cur, &curn, &set)) return -1;
        if (set && set_key(s, key, arg + 16 + vlen, dlen)) { free(cur); return -1; }
        reply_value(c->fd, &(entry){NULL, cur, curn});
        free(cur);
        break;
    }
    case CMD_DELETE: {
        entry *e = find(s, key);
        unsigned char there = e != NULL;
        if (e) {
            free(e->key);
            free(e->val);
            *e = s->kv[--s->nkv];
        }
        nn_net_send_all(c->fd, &there, 1, dl);
        break;
    }
    case CMD_NUMKEYS: {
        int64_t n = s->nkv;
        nn_net_send_all(c->fd, &n, 8, dl);
        break;
    }
    }
    return (long)need;
}

static void drop_conn(server *s, int i)
{
    int fd = s->conns[i].fd;
    for (int w = 0; w < s->nwait;) {
        if (s->waiters[w].fd == fd) {
            free(s->waiters[w].key);
            s->waiters[w] = s->waiters[--s->nwait];
        } else w++;
    }
    close(fd);
    free(s->conns[i].buf);
    s->conns[i] = s->conns[--s->nconns];
}

static void *serve(void *arg)
{
    server *s = arg;
    struct pollfd *pf = NULL;
    int cappf = 0;
    for (;;) {
        int n = s->nconns + 2;
        if (n > cappf) {
            struct pollfd *p = realloc(pf, sizeof *pf * (cappf = n * 2));
            if (!p) break;
            pf = p;
        }
        pf[0] = (struct pollfd){s->wake[0], POLLIN, 0};
        pf[1] = (struct pollfd){s->lfd, POLLIN, 0};
        for (int i = 0; i < s->nconns; i++) pf[i + 2] = (struct pollfd){s->conns[i].fd, POLLIN, 0};
        if (poll(pf, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pf[0].revents) break; /* shutdown */
        for (int i = s->nconns - 1; i >= 0; i--) {
            if (!pf[i + 2].revents) continue;
            conn *c = &s->conns[i];
            if (c->cap - c->len < 65536) {
                size_t cap = c->cap * 2 + 65536;
                unsigned char *b = realloc(c->buf, cap);
                if (!b) { drop_conn(s, i); continue; }
                c->buf = b;
                c->cap = cap;
            }
            ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) { drop_conn(s, i); continue; }
            if (k < 0) continue;
            c->len += (size_t)k;
            long used;
            while ((used = handle(s, c)) > 0) {
                memmove(c->buf, c->buf + used, c->len - (size_t)used);
                c->len -= (size_t)used;
            }
            if (used < 0) drop_conn(s, i);
        }
        if (pf[1].revents & POLLIN) {
            int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                if (GROW(s->conns, s->nconns, s->capconns)) s->conns[s->nconns++] = (conn){fd, NULL, 0, 0};
                else close(fd);
            }
        }
    }
    free(pf);
    return NULL;
}

static void server_free(server *s)
{
    if (!s) return;
    if (s->wake[1] >= 0) {
        char b = 1;
        if (write(s->wake[1], &b, 1) == 1) pthread_join(s->thread, NULL);
    }
    while (s->nconns) drop_conn(s, s->nconns - 1);
    for (int i = 0; i < s->nkv; i++) { free(s->kv[i].key); free(s->kv[i].val); }
    for (int i = 0; i < s->nwait; i++) free(s->waiters[i].key);
    free(s->kv);
    free(s->conns);
    free(s->waiters);
    if (s->lfd >= 0) close(s->lfd);
    if (s->wake[0] >= 0) { close(s->wake[0]); close(s->wake[1]); }
    free(s);
}

/* ---- client ---- */

static nn_status fail_io(tcp_store *t, int rc, const char *what, const char *key, double timeout)
{
    if (t->fd >= 0) { close(t->fd); t->fd = -1; } /* a late answer must not be read as the next one's */
    if (rc == NN_NET_TIMEOUT)
        return nn_error(NN_ERR_RUNTIME, "store %s: timed out after %g s %s key '%s'", t->base.desc, timeout, what, key);
    return nn_error(NN_ERR_RUNTIME, "store %s: %s while %s key '%s'", t->base.desc, nn_net_strerror(rc), what, key);
}

static nn_status ensure_conn(tcp_store *t)
{
    if (t->fd >= 0) return NN_OK;
    char err[256];
    t->fd = nn_net_connect(t->host, t->port, nn_net_now() + t->base.timeout, err, sizeof err);
    if (t->fd < 0) return nn_error(NN_ERR_RUNTIME, "store %s: %s after %g s", t->base.desc, err, t->base.timeout);
    nn_net_local_addr(t->fd, t->local_addr, sizeof t->local_addr);
    return NN_OK;
}

/* Send one request; the caller reads the answer. */
static int send_request(tcp_store *t, unsigned char cmd, const char *key, const void *extra, size_t nextra,
                        const void *val, size_t nval, double dl)
{
    size_t klen = strlen(key);
    unsigned char head[5 + MAX_KEY + 8];
    head[0] = cmd;
    uint32_t k32 = (uint32_t)klen;
    memcpy(head + 1, &k32, 4);
    memcpy(head + 5, key, klen);
    if (nextra) memcpy(head + 5 + klen, extra, nextra);
    int rc = nn_net_send_all(t->fd, head, 5 + klen + nextra, dl);
    if (rc == NN_NET_OK && nval) rc = nn_net_send_all(t->fd, val, nval, dl);
    return rc;
}

static nn_status check_key(tcp_store *t, const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > MAX_KEY) return nn_error(NN_ERR_ARG, "store %s: bad key length %zu", t->base.desc, n);
    return ensure_conn(t);
}

static nn_status tcp_set(nn_store *s, const char *key, const void *val, size_t n)
{
    tcp_store *t = (tcp_store *)s;
    pthread_mutex_lock(&t->mu);
    nn_status st = check_key(t, key);
    if (!st) {
        double dl = nn_net_now() + s->timeout;
        uint64_t n64 = n;
        unsigned char ok = 0;
        int rc = send_request(t, CMD_SET, key, &n64, 8, val, n, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, &ok, 1, dl);
        if (rc) st = fail_io(t, rc, "setting", key, s->timeout);
        else if (!ok) st = nn_error(NN_ERR_NOMEM, "store %s: the server is out of memory setting key '%s'", s->desc, key);
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

static nn_status tcp_get(nn_store *s, const char *key, double timeout, void **val, size_t *n)
{
    tcp_store *t = (tcp_store *)s;
    *val = NULL;
    *n = 0;
    pthread_mutex_lock(&t->mu);
    nn_status st = check_key(t, key);
    if (!st) {
        double dl = nn_net_now() + timeout;
        uint64_t len = 0;
        int rc = send_request(t, CMD_GET, key, NULL, 0, NULL, 0, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, &len, 8, dl);
        if (rc == NN_NET_OK) {
            *val = malloc(len ? len : 1);
            if (!*val) st = nn_error(NN_ERR_NOMEM, "store %s: out of memory reading key '%s'", s->desc, key);
            else rc = nn_net_recv_all(t->fd, *val, len, dl);
        }
        if (rc) st = fail_io(t, rc, "waiting for", key, timeout);
        if (st) { free(*val); *val = NULL; } else *n = len;
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

static nn_status tcp_add(nn_store *s, const char *key, int64_t delta, int64_t *result)
{
    tcp_store *t = (tcp_store *)s;
    pthread_mutex_lock(&t->mu);
    nn_status st = check_key(t, key);
    if (!st) {
        double dl = nn_net_now() + s->timeout;
        int rc = send_request(t, CMD_ADD, key, &delta, 8, NULL, 0, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, result, 8, dl);
        if (rc) st = fail_io(t, rc, "adding to", key, s->timeout);
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

/* A request whose answer is one byte (CHECK, DELETE): *yes gets it. */
static nn_status byte_request(nn_store *s, unsigned char cmd, const char *key, const char *what, bool *yes)
{
    tcp_store *t = (tcp_store *)s;
    pthread_mutex_lock(&t->mu);
    nn_status st = check_key(t, key);
    if (!st) {
        double dl = nn_net_now() + s->timeout;
        unsigned char answer = 0;
        int rc = send_request(t, cmd, key, NULL, 0, NULL, 0, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, &answer, 1, dl);
        if (rc) st = fail_io(t, rc, what, key, s->timeout);
        *yes = answer;
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

static nn_status tcp_check(nn_store *s, const char *key, bool *exists) { return byte_request(s, CMD_CHECK, key, "checking", exists); }

static nn_status tcp_compare_set(nn_store *s, const char *key, const void *expected, size_t en, const void *desired, size_t dn,
                                 void **cur, size_t *curn)
{
    tcp_store *t = (tcp_store *)s;
    *cur = NULL;
    *curn = 0;
    pthread_mutex_lock(&t->mu);
    nn_status st = check_key(t, key);
    if (!st) {
        double dl = nn_net_now() + s->timeout;
        uint64_t e64 = en, d64 = dn, len = 0;
        int rc = send_request(t, CMD_CAS, key, &e64, 8, expected, en, dl);
        if (rc == NN_NET_OK) rc = nn_net_send_all(t->fd, &d64, 8, dl);
        if (rc == NN_NET_OK && dn) rc = nn_net_send_all(t->fd, desired, dn, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, &len, 8, dl);
        if (rc == NN_NET_OK) {
            *cur = malloc(len ? len : 1);
            if (!*cur) st = nn_error(NN_ERR_NOMEM, "store %s: out of memory reading key '%s'", s->desc, key);
            else rc = nn_net_recv_all(t->fd, *cur, len, dl);
        }
        if (rc) st = fail_io(t, rc, "comparing and setting", key, s->timeout);
        if (st) { free(*cur); *cur = NULL; } else *curn = len;
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

static nn_status tcp_delete_key(nn_store *s, const char *key, bool *deleted) { return byte_request(s, CMD_DELETE, key, "deleting", deleted); }

static nn_status tcp_num_keys(nn_store *s, int64_t *n)
{
    tcp_store *t = (tcp_store *)s;
    pthread_mutex_lock(&t->mu);
    nn_status st = ensure_conn(t);
    if (!st) {
        double dl = nn_net_now() + s->timeout;
        int rc = send_request(t, CMD_NUMKEYS, "", NULL, 0, NULL, 0, dl);
        if (rc == NN_NET_OK) rc = nn_net_recv_all(t->fd, n, 8, dl);
        if (rc) st = fail_io(t, rc, "counting", "", s->timeout);
    }
    pthread_mutex_unlock(&t->mu);
    return st;
}

static void tcp_free(nn_store *s)
{
    tcp_store *t = (tcp_store *)s;
    if (t->fd >= 0) close(t->fd);
    server_free(t->srv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const nn_store_ops tcp_ops = {tcp_set, tcp_get, tcp_add, tcp_check, tcp_free, tcp_compare_set, tcp_delete_key, tcp_num_keys};

nn_store *nn_store_tcp(const char *host, int port, bool is_server, double timeout)
{
    tcp_store *t = calloc(1, sizeof *t);
    if (!t) { nn_error(NN_ERR_NOMEM, "out of memory creating the store"); return NULL; }
    t->base.ops = &tcp_ops;
    t->base.timeout = timeout;
    t->fd = -1;
    pthread_mutex_init(&t->mu, NULL);
    snprintf(t->host, sizeof t->host, "%s", host);
    t->port = port;
    if (is_server) {
        server *s = calloc(1, sizeof *s);
        if (!s) { tcp_free(&t->base); nn_error(NN_ERR_NOMEM, "out of memory creating the store"); return NULL; }
        s->lfd = s->wake[0] = s->wake[1] = -1;
        t->srv = s;
        char err[256];
        s->lfd = nn_net_listen(host, port, &t->port, err, sizeof err);
        if (s->lfd < 0) {
            tcp_free(&t->base);
            nn_error(NN_ERR_RUNTIME, "the store server %s", err);
            return NULL;
        }
        if (pipe2(s->wake, O_CLOEXEC) || pthread_create(&s->thread, NULL, serve, s)) {
            if (s->wake[0] >= 0) { close(s->wake[0]); close(s->wake[1]); }
            s->wake[0] = s->wake[1] = -1;
            tcp_free(&t->base);
            nn_error(NN_ERR_RUNTIME, "cannot start the store server: %s", strerror(errno));
            return NULL;
        }
    }
    snprintf(t->base.desc, sizeof t->base.desc, "tcp://%s:%d", host, t->port);
    if (ensure_conn(t)) { tcp_free(&t->base); return NULL; }
    return &t->base;
}

int nn_store_tcp_port(const nn_store *s)
{
    s = nn_store_inner(s);
    return s && s->ops == &tcp_ops ? ((const tcp_store *)s)->port : 0;
}
const char *nn_store_local_addr(const nn_store *s)
{
    s = nn_store_inner(s);
    return s && s->ops == &tcp_ops ? ((const tcp_store *)s)->local_addr : "";
}
