/* Autocast (torch.autocast): thread-local mixed-precision state and the cast
 * every eligible op frontend applies to its inputs.
 *
 * State, per thread: for each device type, enabled and the lower-precision dtype
 * (float16 for cuda, bfloat16 for cpu by default); shared by the device types, the
 * cache switch and the nesting depth of regions. A region (nn_autocast_enter/exit)
 * saves and restores the state; when the outermost region closes the cast cache is
 * emptied.
 *
 * The policy is ops.def's autocast column, applied to the inputs that are eligible:
 * floating tensors other than float64 on a device type where autocast is on.
 *   LOWER    cast to the region's dtype (linear, mm, bmm, matmul, addmm, conv2d)
 *   FP32     cast to float32 (softmax, log_softmax, nll_loss, exp, log, pow, sum,
 *            mean, var, norm, ...); softmax reads its input as float32 instead
 *   PROMOTE  cast to the widest eligible dtype (dot). Elementwise ops (add, where,
 *            comparisons, ...) and cat/stack promote natively to exactly that type,
 *            as PyTorch leaves them to native promotion, so they cast nothing.
 * In-place ops and ops given an explicit dtype are not autocast (PyTorch's rules).
 *
 * Casts go through nn_to_dtype (dense layouts such as channels_last are kept), so
 * autograd records ToCopyBackward0 and gradients flow back in the input's dtype.
 * The cast of a float32 leaf that requires grad (a parameter) to the region's
 * dtype is cached, keyed by tensor, storage version, dtype and grad mode: one cast
 * per parameter per region however often it is used. Backward runs with autocast
 * suspended: its ops keep the dtypes of the forward.
 *
 * Cost when autocast is off: nn_autocast_on(), one thread-local load. */
#ifndef NN_AUTOCAST_H
#define NN_AUTOCAST_H

#include "ops.h"

extern _Thread_local unsigned nn_autocast_mask_; /* bit d: autocast enabled for device type d */
static inline bool nn_autocast_on(void) { return nn_autocast_mask_ != 0; }

/* ---- state (torch.is_autocast_enabled, get/set_autocast_dtype, ...) ---- */
bool nn_autocast_enabled(nn_devtype dev);
void nn_autocast_set_enabled(nn_devtype dev, bool on);
nn_dtype nn_autocast_dtype(nn_devtype dev);
/* float16, bfloat16 or float32; anything else is an error */
nn_status nn_autocast_set_dtype(nn_devtype dev, nn_dtype dt);
bool nn_autocast_cache_enabled(void);
void nn_autocast_set_cache_enabled(bool on);
int nn_autocast_increment_nesting(void); /* returns the new depth */
int nn_autocast_decrement_nesting(void);
void nn_autocast_clear_cache(void);

/* ---- regions ---- */
typedef struct {
    int8_t dev;
    bool enabled, cache_enabled;
    nn_dtype dtype;
} nn_autocast_region;
/* Enter a region for dev: enabled, dtype (NN_DTYPE_NONE: the current one for dev), cache
 * switch. *saved receives what exit restores. Errors: bad device type or dtype (state unchanged). */
nn_status nn_autocast_enter(nn_devtype dev, bool enabled, nn_dtype dtype, bool cache_enabled, nn_autocast_region *saved);
/* Leave it: empties the cache when the outermost region closes, then restores *saved. */
void nn_autocast_exit(const nn_autocast_region *saved);

/* Turn autocast off for a while (backward) and back on; the cache is left alone. */
unsigned nn_autocast_suspend(void);
void nn_autocast_resume(unsigned mask);

/* ---- the frontends' hook ---- */
/* Apply op's policy to in[0..n) (NULL entries are skipped): casted[k] receives a new reference
 * to in[k] cast where a cast is needed, else NULL. On error every casted[k] is NULL. Call it only
 * when nn_autocast_on(); release with nn_autocast_release. */
nn_status nn_autocast_inputs(nn_op op, int n, nn_tensor *const *in, nn_tensor **casted);
/* The same with the policy given (PROMOTE here casts explicitly; for ops that need the same dtype). */
nn_status nn_autocast_apply(nn_autocast_kind kind, int n, nn_tensor *const *in, nn_tensor **casted);
/* Ops that record float32 params themselves rather than their casts, and give them float32
 * gradients (linear on CUDA, conv2d's bias): t is such a param (a float32 leaf that requires
 * grad), and the 16-bit casts of params[0..n) made off the graph (as nn_autocast_apply). */
bool nn_autocast_records_param(const nn_tensor *t);
nn_status nn_autocast_params_off_graph(int n, nn_tensor *const *params, nn_tensor **casted);
void nn_autocast_release(int n, nn_tensor **casted);
/* PyTorch's "fp32_set_opt_dtype" ops (softmax, log_softmax): the dtype to compute x in when the
 * caller asked for dt (NN_DTYPE_NONE: none): float32 for an eligible lower-precision x, else dt. */
nn_dtype nn_autocast_opt_dtype(const nn_tensor *x, nn_dtype dt);

/* ---- counters, for tests ---- */
typedef struct {
    uint64_t casts;      /* casts made (cached or not) */
    uint64_t cache_hits; /* casts served from the cache */
    uint64_t lowp_hits;  /* parameter casts taken from the copy the optimizer step wrote */
    int cached;          /* entries in the cache now */
} nn_autocast_stats;
nn_autocast_stats nn_autocast_get_stats(void);

#endif
