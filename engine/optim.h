/* Optimizer steps: one fused pass over a parameter group (PyTorch 2.x's update
 * formulas, the single-tensor algorithm boxes of torch.optim.SGD / Adam / AdamW /
 * RMSprop / Adagrad), updating params and state in place and bumping their versions.
 *
 * Every step takes n parameters and their gradients; a NULL gradient skips the
 * parameter. A gradient has its parameter's shape, dtype and device. State lists
 * have n entries: a NULL entry (where that state is used) is created with
 * PyTorch's initial value and returned as a new reference the caller owns
 * (zeros like the param; SGD's momentum buffer is the first step's gradient;
 * steps are 0-dim CPU tensors of the default float dtype, counting updates).
 *
 * Dtypes: float32 and float64 are computed in their own precision, op by op as
 * PyTorch does; float16 and bfloat16 params are computed in float32 and rounded
 * to their dtype on store (state keeps the param's dtype); other dtypes are an
 * error. Params may live on several devices: one pass per device.
 *
 * found_inf (GradScaler's skip, decided on the device): a one-element float32
 * tensor on the params' device; where it is nonzero the step changes nothing,
 * step counters included. On a GPU nothing is read back: the kernels read it, and
 * the step counters should then live on the device too (a CPU counter would have
 * to be read and counted on the host); device counters are counted by the kernels.
 *
 * grad_scale (GradScaler's scale, as PyTorch's fused optimizers take it): a one-element
 * float32 tensor on the params' device; each gradient is multiplied by its float32
 * reciprocal as it is read (the unscale fused into the update), and .grad stays scaled. */
#ifndef NN_OPTIM_H
#define NN_OPTIM_H

#include "tensor.h"

typedef struct {
    double lr, momentum, dampening, weight_decay;
    bool nesterov, maximize;
    const nn_tensor *found_inf; /* GradScaler's: see below (NULL: always update) */
    const nn_tensor *grad_scale; /* GradScaler's: see below (NULL: gradients as they are) */
} nn_sgd_opts;

typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    bool amsgrad, maximize;
    bool decoupled; /* AdamW: weight decay applied to the param, not added to the gradient */
    const nn_tensor *found_inf; /* GradScaler's: see below (NULL: always update) */
    const nn_tensor *grad_scale; /* GradScaler's: see below (NULL: gradients as they are) */
} nn_adam_opts;

typedef struct {
    double lr, alpha, eps, weight_decay, momentum;
    bool centered, maximize;
    const nn_tensor *found_inf; /* GradScaler's: see below (NULL: always update) */
    const nn_tensor *grad_scale; /* GradScaler's: see below (NULL: gradients as they are) */
} nn_rmsprop_opts;

typedef struct {
    double lr, lr_decay, weight_decay, eps, initial_accumulator_value;
    bool maximize;
    const nn_tensor *found_inf; /* GradScaler's: see below (NULL: always update) */
    const nn_tensor *grad_scale; /* GradScaler's: see below (NULL: gradients as they are) */
} nn_adagrad_opts;

/* bufs: momentum buffers, used when momentum != 0 (may be NULL otherwise). */
nn_status nn_sgd_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **bufs,
                      const nn_sgd_opts *o);
/* max_exp_avg_sqs: used when amsgrad (may be NULL otherwise). */
nn_status nn_adam_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **exp_avgs,
                       nn_tensor **exp_avg_sqs, nn_tensor **max_exp_avg_sqs, nn_tensor **steps,
                       const nn_adam_opts *o);
/* momentum_bufs: used when momentum > 0; grad_avgs: when centered (either may be NULL otherwise). */
nn_status nn_rmsprop_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **square_avgs,
                          nn_tensor **momentum_bufs, nn_tensor **grad_avgs, nn_tensor **steps,
                          const nn_rmsprop_opts *o);
/* sums: NULL entries start at initial_accumulator_value (PyTorch creates them in the
 * optimizer's constructor: nn_optim_state_like). */
nn_status nn_adagrad_step(int n, nn_tensor *const *params, nn_tensor *const *grads, nn_tensor **sums,
                          nn_tensor **steps, const nn_adagrad_opts *o);

/* A state tensor for param p: p's shape, dtype and device, filled with value; p's strides
 * when p is dense (torch.full_like with preserve_format), else contiguous. */
nn_tensor *nn_optim_state_like(nn_tensor *p, double value);
/* A step counter: a 0-dim CPU tensor of the default float dtype holding value (a
 * float32 or float64 counter on the param's device also works; see found_inf). */
nn_tensor *nn_optim_step_counter(double value);

/* torch.nn.utils' gradient clipping, with grad mode off:
 * the p-norm of the n tensors' p-norms, a 0-dim tensor on ts[0]'s device (n >= 1); for p = 2
 * over float tensors on one device, one pass (foreach_sumsq) summing squares in float64; */
nn_tensor *nn_total_norm(int n, nn_tensor *const *ts, double p);
/* ts[k] *= coef for every k (coef: one element, copied to each device it meets; one pass over
 * float32/16-bit tensors on one GPU). */
nn_status nn_mul_each_(int n, nn_tensor *const *ts, nn_tensor *coef);

/* The kernel list layout (kargs.list holds nlist = n tensors per role, role-major:
 * list[r * n + k]; params with no gradient are left out before dispatch):
 *   sgd_step      0 params, 1 grads, 2 momentum buffers (NULL when momentum == 0),
 *                 3 "fresh" markers: the buffer where it was just created (set it from
 *                 the gradient), else NULL.  f: lr momentum dampening weight_decay;
 *                 i: nesterov maximize
 *   adam_step     0 params, 1 grads, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (NULL unless
 *                 amsgrad), 5 steps (CPU 0-dim, already counted for this update; or on the
 *                 device, counted by the kernel after it).
 *                 f: lr beta1 beta2 eps weight_decay; i: amsgrad maximize decoupled
 *   rmsprop_step  0 params, 1 grads, 2 square_avg, 3 momentum buffers (NULL unless
 *                 momentum > 0), 4 grad_avg (NULL unless centered), 5 steps.
 *                 f: lr alpha eps weight_decay momentum; i: centered maximize
 *   adagrad_step  0 params, 1 grads, 2 sum, 3 steps.  f: lr lr_decay weight_decay eps;
 *                 i: maximize
 * Every op's list ends with one more role, kargs.i[7] its index: the float16/bfloat16 copy
 * to write beside each updated float32 param (NULL where none; engine/optim.c makes them for
 * the params autocast cast since their last step, on CUDA only), set even when found_inf
 * skips the update.
 * kargs.in[0]: found_inf on the device, or NULL; a CPU found_inf is read by the frontend,
 * which then skips or runs the step without it. kargs.in[1]: grad_scale, or NULL.
 * Kernels update params and state in place; frontends have checked shapes, dtypes and
 * devices, and bump versions afterwards. */

#endif
