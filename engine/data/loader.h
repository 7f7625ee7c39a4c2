/* The worker pool of a DataLoader over a C data source: num_workers threads
 * fetch and collate whole batches ahead of the consumer, at most
 * prefetch_factor * num_workers batches at a time, and the consumer takes them
 * in the order the batches were given, whichever worker finished first.
 *
 * One epoch at a time: nn_loader_start hands over the epoch's index order (the
 * caller's sampler drew it, so the order is the same with and without workers),
 * nn_loader_next delivers batch after batch, nn_loader_stop abandons the rest
 * and waits for the workers to go idle (they finish the batch in hand, which is
 * dropped). nn_loader_free stops and joins the threads. An error in a worker
 * (an index out of range, out of memory) is delivered by nn_loader_next in its
 * batch's turn, as "DataLoader worker <k>: <message>", and ends the epoch. All
 * loader calls come from one thread. */
#ifndef NN_DATA_LOADER_H
#define NN_DATA_LOADER_H

#include "source.h"

typedef struct nn_loader nn_loader;

/* Retains s. timeout_s > 0: nn_loader_next gives up after that many seconds. */
nn_loader *nn_loader_new(nn_data_source *s, int num_workers, int prefetch_factor, bool pin, double timeout_s);
/* The epoch: batch k holds idx[off[k] .. off[k + 1]) (nbatches + 1 offsets). Both are copied. */
nn_status nn_loader_start(nn_loader *l, const int64_t *idx, const int64_t *off, int64_t nbatches);
/* The next batch into out[0 .. nfields): NN_OK and *done = false, or NN_OK and
 * *done = true at the end of the epoch, or an error (the epoch is then over). */
nn_status nn_loader_next(nn_loader *l, nn_tensor **out, bool *done);
void nn_loader_stop(nn_loader *l);
void nn_loader_free(nn_loader *l);
int nn_loader_workers(const nn_loader *l);

#endif
