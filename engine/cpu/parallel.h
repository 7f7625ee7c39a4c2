/* Intra-op parallelism for the CPU kernels: a persistent pool of worker threads (pthreads) that
 * runs one op's independent ranges at once. Its size is torch.get_num_threads(): by default the
 * CPUs this process may run on (OMP_NUM_THREADS, when set, as in PyTorch), torch.set_num_threads(n)
 * sets it (and OpenBLAS's count). Only the thread that loaded the engine (the interpreter's main
 * thread) hands work to the pool; a call from any other thread (DataLoader's workers, a host
 * application's threads), or from inside a range, runs serially. After fork() the child has no
 * workers: its pool is re-created on its first large op. */
#ifndef NN_CPU_PARALLEL_H
#define NN_CPU_PARALLEL_H

#include <stdint.h>

#include "../error.h"

/* Ops of fewer elements than this run inline, with no synchronisation (bench/cpu_threads.lua on
 * 2 cores: at 32768 elements a float32 add takes 7.9 us on one thread and 6.1 on two, exp 19.7
 * and 10.4; at 1M elements 2 threads are 1.8-2x faster). */
#define NN_PARALLEL_MIN 32768

/* One range [begin, end) of the work; returns NN_OK or an error set with nn_error. */
typedef nn_status (*nn_parallel_fn)(int64_t begin, int64_t end, void *ctx);

/* Splits [0, n) into contiguous chunks of at least `grain` units each (up to 4 a thread; their
 * boundaries depend on n, grain and the thread count only) and runs fn on each, on the calling
 * thread and on the workers that are free (one chunk, run inline, when n < 2 * grain). Returns
 * when all are done: NN_OK, or the error of the failing chunk that comes first in [0, n), its
 * message set on the calling thread (as the serial run would have raised it). */
nn_status nn_parallel_for(int64_t n, int64_t grain, nn_parallel_fn fn, void *ctx);

int nn_parallel_threads(void);       /* torch.get_num_threads() */
int nn_parallel_width(void);         /* threads an nn_parallel_for called here would use: 1 off the owner thread or inside a range */
void nn_parallel_set_threads(int n); /* the pool only; nn_cpu_set_num_threads also sets OpenBLAS's */

#endif
