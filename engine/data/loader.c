#include "loader.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    bool ready;
    nn_status status;
    nn_tensor *out[NN_DATA_MAX_FIELDS];
    char msg[512];
} slot;

struct nn_loader {
    nn_data_source *src;
    int nworkers, window, nfields;
    bool pin;
    double timeout_s;
    pthread_t *threads;
    int started;           /* threads running */
    pthread_mutex_t mu;
    pthread_cond_t work;   /* workers: a batch may be claimed, or quit */
    pthread_cond_t done;   /* consumer: a slot is ready */
    pthread_cond_t idle;   /* stop: no worker is busy */
    /* the epoch, under mu */
    uint64_t gen;          /* bumped by stop: batches of an older epoch are dropped */
    int64_t *idx, *off, nbatches;
    int64_t next;          /* next batch to claim */
    int64_t consumed;      /* next batch to deliver */
    int busy;
    bool quit;
    slot *slots;           /* window slots; batch k lives in slots[k % window] */
};

typedef struct {
    nn_loader *l;
    int id;
} worker_arg;

static void clear_slot(slot *s)
{
    for (int f = 0; f < NN_DATA_MAX_FIELDS; f++) nn_release(s->out[f]), s->out[f] = NULL;
    s->ready = false;
    s->status = NN_OK;
}

static void *worker_main(void *p)
{
    worker_arg a = *(worker_arg *)p;
    free(p);
    nn_loader *l = a.l;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->quit && !(l->next < l->nbatches && l->next < l->consumed + l->window)) pthread_cond_wait(&l->work, &l->mu);
        if (l->quit) break;
        int64_t k = l->next++;
        uint64_t gen = l->gen;
        const int64_t *idx = l->idx + l->off[k];
        int64_t n = l->off[k + 1] - l->off[k];
        l->busy++;
        pthread_mutex_unlock(&l->mu);

        nn_tensor *out[NN_DATA_MAX_FIELDS] = {0};
        nn_status st = nn_data_fetch(l->src, idx, n, l->pin, out);
        char msg[512] = "";
        if (st) snprintf(msg, sizeof msg, "DataLoader worker %d: %s", a.id, nn_last_error());

        pthread_mutex_lock(&l->mu);
        l->busy--;
        if (gen == l->gen) {
            slot *s = &l->slots[k % l->window];
            s->ready = true;
            s->status = st;
            memcpy(s->out, out, sizeof out);
            memcpy(s->msg, msg, sizeof msg);
            pthread_cond_signal(&l->done);
        } else
            for (int f = 0; f < NN_DATA_MAX_FIELDS; f++) nn_release(out[f]);
        if (!l->busy) pthread_cond_broadcast(&l->idle);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

nn_loader *nn_loader_new(nn_data_source *s, int num_workers, int prefetch_factor, bool pin, double timeout_s)
{
    if (num_workers < 1 || num_workers > 1024) {
        nn_error(NN_ERR_ARG, "DataLoader: num_workers must be in [1, 1024], got %d", num_workers);
        return NULL;
    }
    if (prefetch_factor < 1) {
        nn_error(NN_ERR_ARG, "DataLoader: prefetch_factor must be positive, got %d", prefetch_factor);
        return NULL;
    }
    nn_loader *l = calloc(1, sizeof *l);
    if (!l) goto nomem;
    l->nworkers = num_workers;
    l->window = num_workers * prefetch_factor;
    l->nfields = nn_data_nfields(s);
    l->pin = pin;
    l->timeout_s = timeout_s;
    l->slots = calloc((size_t)l->window, sizeof *l->slots);
    l->threads = calloc((size_t)num_workers, sizeof *l->threads);
    if (!l->slots || !l->threads) goto nomem;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->done, NULL);
    pthread_cond_init(&l->idle, NULL);
    l->src = nn_data_source_retain(s);
    for (int i = 0; i < num_workers; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) *a = (worker_arg){l, i};
        int rc = a ? pthread_create(&l->threads[i], NULL, worker_main, a) : ENOMEM;
        if (rc) {
            free(a);
            nn_loader_free(l);
            nn_error(NN_ERR_RUNTIME, "DataLoader: cannot start worker thread %d (%s)", i, strerror(rc));
            return NULL;
        }
        l->started++;
    }
    return l;
nomem:
    if (l) free(l->slots), free(l->threads);
    free(l);
    nn_error(NN_ERR_NOMEM, "out of memory");
    return NULL;
}

int nn_loader_workers(const nn_loader *l) { return l->nworkers; }

void nn_loader_stop(nn_loader *l)
{
    pthread_mutex_lock(&l->mu);
    l->gen++;
    l->nbatches = l->next = l->consumed = 0;
    while (l->busy) pthread_cond_wait(&l->idle, &l->mu);
    for (int i = 0; i < l->window; i++) clear_slot(&l->slots[i]);
    free(l->idx);
    free(l->off);
    l->idx = l->off = NULL;
    pthread_mutex_unlock(&l->mu);
}

nn_status nn_loader_start(nn_loader *l, const int64_t *idx, const int64_t *off, int64_t nbatches)
{
    nn_loader_stop(l);
    if (nbatches < 0 || off[0] != 0) return nn_error(NN_ERR_ARG, "DataLoader: bad batch offsets");
    for (int64_t k = 0; k < nbatches; k++)
        if (off[k + 1] < off[k]) return nn_error(NN_ERR_ARG, "DataLoader: batch offsets must not decrease");
    int64_t total = off[nbatches];
    int64_t *ci = malloc((size_t)(total ? total : 1) * sizeof *ci), *co = malloc((size_t)(nbatches + 1) * sizeof *co);
    if (!ci || !co) {
        free(ci), free(co);
        return nn_error(NN_ERR_NOMEM, "out of memory");
    }
    memcpy(ci, idx, (size_t)total * sizeof *ci);
    memcpy(co, off, (size_t)(nbatches + 1) * sizeof *co);
    pthread_mutex_lock(&l->mu);
    l->idx = ci;
    l->off = co;
    l->nbatches = nbatches;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    return NN_OK;
}

nn_status nn_loader_next(nn_loader *l, nn_tensor **out, bool *done)
{
    struct timespec deadline;
    if (l->timeout_s > 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        double t = (double)deadline.tv_sec + deadline.tv_nsec * 1e-9 + l->timeout_s;
        deadline.tv_sec = (time_t)t;
        deadline.tv_nsec = (long)((t - (double)deadline.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&l->mu);
    *done = l->consumed >= l->nbatches;
    if (*done) {
        pthread_mutex_unlock(&l->mu);
        return NN_OK;
    }
    slot *s = &l->slots[l->consumed % l->window];
    while (!s->ready) {
        if (l->timeout_s > 0) {
            if (pthread_cond_timedwait(&l->done, &l->mu, &deadline) == ETIMEDOUT && !s->ready) {
                pthread_mutex_unlock(&l->mu);
                nn_loader_stop(l);
                return nn_error(NN_ERR_RUNTIME, "DataLoader timed out after %g seconds", l->timeout_s);
            }
        } else pthread_cond_wait(&l->done, &l->mu);
    }
    nn_status st = s->status;
    char msg[sizeof s->msg];
    if (st) memcpy(msg, s->msg, sizeof msg);
    for (int f = 0; f < l->nfields; f++) out[f] = s->out[f], s->out[f] = NULL;
    clear_slot(s);
    l->consumed++;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    if (st) {
        nn_loader_stop(l);
        return nn_error(st, "%s", msg);
    }
    return NN_OK;
}

void nn_loader_free(nn_loader *l)
{
    if (!l) return;
    nn_loader_stop(l);
    pthread_mutex_lock(&l->mu);
    l->quit = true;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->started; i++) pthread_join(l->threads[i], NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->work);
    pthread_cond_destroy(&l->done);
    pthread_cond_destroy(&l->idle);
    nn_data_source_release(l->src);
    free(l->slots);
    free(l->threads);
    free(l);
}
