/* GradScaler's device-side steps (PyTorch's torch._amp_foreach_non_finite_check_and_unscale_
 * and torch._amp_update_scale_), engine/amp.c. Both run on the device of their tensors
 * and never read a value back to the host: the scale, the growth tracker and the
 * found-inf flag stay device tensors, so a step costs no synchronisation. */
#ifndef NN_AMP_H
#define NN_AMP_H

#include "tensor.h"

/* One fused pass over the n gradients (float dtypes, any strides, on found_inf's device):
 * g *= inv_scale in place (computed in float, double for float64; left as is when inv_scale
 * is 1), and found_inf (float32, 1 element) is set to 1 when any value is inf or nan (it is
 * never cleared here). inv_scale: float32, 1 element, same device. NULL gradients are skipped. */
nn_status nn_amp_unscale_(int n, nn_tensor *const *grads, nn_tensor *found_inf, nn_tensor *inv_scale);

/* found_inf (float32, 1 element) = 1 when any value of the n gradients is inf or nan, reading
 * nothing but a gradient's finite_flags where they still speak for it (nn_cast_checked); the
 * gradients are left as they are. Checks and NULLs as nn_amp_unscale_. */
nn_status nn_amp_check_finite_(int n, nn_tensor *const *grads, nn_tensor *found_inf);

/* t (dense, float) as dtype dt (float) in t's layout, with finite_flags set by the same kernel:
 * how a float16/bfloat16 gradient becomes a float32 .grad whose inf/nan check is then almost
 * free. t must not require grad (the cast is not recorded). */
nn_tensor *nn_cast_checked(nn_tensor *t, nn_dtype dt);
/* t's finite_flags still speak for its values (none of them has been written since they were set) */
static inline bool nn_finite_flags_hold(const nn_tensor *t)
{
    if (!t->finite_flags[0] || t->finite_version != t->storage->version) return false;
    for (int k = 0; k < 2; k++)
        if (t->finite_flags[k] && t->finite_flags[k]->storage->version != t->finite_wversion[k]) return false;
    return true;
}
/* t's finite_flags become w[0..n) (n <= 2; 0: none), as of now */
void nn_set_finite_witnesses(nn_tensor *t, int n, nn_tensor *const *w);

/* PyTorch's scale update, in place: found_inf nonzero -> scale *= backoff_factor, tracker = 0;
 * else tracker + 1 == growth_interval -> scale *= growth_factor (only if the result is finite),
 * tracker = 0; else tracker += 1. scale float32 and growth_tracker int32, 1 element each, and
 * found_inf (float32, 1 element) on one device. */
nn_status nn_amp_update_scale_(nn_tensor *scale, nn_tensor *growth_tracker, nn_tensor *found_inf, double growth_factor,
                               double backoff_factor, int64_t growth_interval);

#endif
