/* Neural-network functions with autograd: softmax / log_softmax, nll_loss,
 * index_select / index_add_, embedding and batch_norm (engine/softmax.c, loss.c,
 * index.c, batchnorm.c).
 * Same conventions as ops.h: new references or NULL with the error set; dims
 * may be negative. */
#ifndef NN_NNFUNC_H
#define NN_NNFUNC_H

#include "ops.h"

/* ---- softmax (engine/softmax.c) ----
 * Over dim, numerically stable (the row max is subtracted first). dt NN_DTYPE_NONE keeps x's
 * dtype (which must then be floating); otherwise x is read as dt (any input dtype) and the
 * result has dtype dt. Autograd: SoftmaxBackward0 / LogSoftmaxBackward0, saving the output. */
nn_tensor *nn_softmax(nn_tensor *x, int dim, nn_dtype dt);
nn_tensor *nn_log_softmax(nn_tensor *x, int dim, nn_dtype dt);
/* The gradients with respect to the input, given grad_out and the forward output y (same shape):
 * softmax (g - sum(g*y)) * y, log_softmax g - exp(y) * sum(g), sums over dim. */
nn_tensor *nn_softmax_backward(nn_tensor *grad_out, nn_tensor *y, int dim);
nn_tensor *nn_log_softmax_backward(nn_tensor *grad_out, nn_tensor *y, int dim);

/* ---- nll_loss (engine/loss.c) ---- */
enum { NN_REDUCTION_NONE = 0, NN_REDUCTION_MEAN = 1, NN_REDUCTION_SUM = 2 };
/* logp [N, C] with target [N], [C] with a 0-dim target, or [N, C, d1, ...] with target
 * [N, d1, ...]; target int64 in [0, C) or ignore_index (PyTorch's default is -100); weight
 * [C] or NULL. loss = -weight[t] * logp[.., t, ..]; mean divides the sum by the sum of the
 * weights of the non-ignored targets (nan when there are none). Autograd: NllLossBackward0
 * (gradient for logp only). */
nn_tensor *nn_nll_loss(nn_tensor *logp, nn_tensor *target, nn_tensor *weight, int reduction, int64_t ignore_index);
/* The gradient for logp, of shape [ndim, shape] and total_weight's dtype; total_weight is the
 * 0-dim sum of the weights of the non-ignored targets (what the forward's mean divides by). */
nn_tensor *nn_nll_loss_backward(nn_tensor *grad_out, int ndim, const int64_t *shape, nn_tensor *target, nn_tensor *weight,
                                nn_tensor *total_weight, int reduction, int64_t ignore_index);

/* nll_loss(log_softmax(x, class dim), target, weight, reduction, ignore_index) in one kernel
 * forward and one backward, with nll_loss's arguments, checks and errors. Autograd:
 * NllLossBackward0 (gradient for x: weight[t] * (softmax(x) - onehot(t)), scaled as the loss). */
nn_tensor *nn_cross_entropy(nn_tensor *x, nn_tensor *target, nn_tensor *weight, int reduction, int64_t ignore_index);

/* ---- the pointwise losses (engine/pointwise_loss.c; kinds NN_PLOSS_* of pointwise_loss_math.h) ----
 * The elementwise loss of x against t (same shape, float dtypes; computed in their promoted dtype,
 * float32 under autocast), p: smooth_l1's beta or huber's delta. With g (0-dim or x's shape), the
 * gradient for x instead: dloss/dx * g * s. One kernel each way, no autograd: F.*'s nodes in
 * torch_functional.lua call them. */
nn_tensor *nn_pointwise_loss(int kind, nn_tensor *x, nn_tensor *t, nn_tensor *g, double p, double s);

/* ---- the fused activations (engine/activation.c; kinds NN_ACT_* of activation_math.h) ----
 * The activation of x (a float dtype), p and q its parameters; with g (x's shape), the gradient
 * for x instead: g times the derivative at x. One kernel each way, no autograd: F.*'s nodes in
 * torch_functional.lua call them. */
nn_tensor *nn_activation(int kind, nn_tensor *x, nn_tensor *g, double p, double q);

/* ---- indexing (engine/index.c) ---- index: 1-D or 0-D, int64 or int32 */
/* x's slices at the indices along dim; out-of-range indices are an error. Autograd: IndexSelectBackward0. */
nn_tensor *nn_index_select(nn_tensor *x, int dim, nn_tensor *index);
/* self[.., index[k], ..] += alpha * source[.., k, ..] along dim, in place; repeated indices
 * accumulate. source has self's shape but index.numel() at dim. Autograd: IndexAddBackward0. */
nn_status nn_index_add_(nn_tensor *self, int dim, nn_tensor *index, nn_tensor *source, double alpha);
/* weight [V, D] rows at indices (any shape, int64 or int32): indices.shape + [D].
 * padding_idx in [0, V) gets no gradient; -1: none (wrap PyTorch's negative padding_idx
 * before the call). Autograd: EmbeddingBackward0. */
nn_tensor *nn_embedding(nn_tensor *weight, nn_tensor *indices, int64_t padding_idx);

/* ---- batch_norm (engine/batchnorm.c) ----
 * torch.nn.functional.batch_norm over dim 1 of x [N, C, *]. running_mean, running_var, weight
 * and bias have C elements each, or are NULL. Training: normalised with the batch mean and biased
 * variance over every dim but 1; running stats given are updated in place,
 * running = (1 - momentum) * running + momentum * stat, the variance's with the unbiased batch
 * variance. Eval: normalised with the running stats (both required). y = (x - mean) /
 * sqrt(var + eps) * weight + bias, of x's dtype and layout (contiguous or channels-last); float16
 * and bfloat16 inputs compute in float32, and their per-channel tensors may be float32.
 * Autograd: NativeBatchNormBackward0 for x, weight and bias (not the running stats). */
/* F.layer_norm over x's trailing dims holding E elements (the caller checked normalized_shape);
 * weight and bias (NULL: none) hold E elements. Fused kernels, forward and backward. */
nn_tensor *nn_layer_norm(nn_tensor *x, int64_t E, nn_tensor *weight, nn_tensor *bias, double eps);
/* F.dropout in training, not in place (engine/dropout.c): x / (1 - p) where kept, else 0, kept with
 * probability 1 - p; 0 <= p < 1. The same elements as x * the noise of nn_dropout_noise_. */
nn_tensor *nn_dropout(nn_tensor *x, double p);
nn_tensor *nn_batch_norm(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var, nn_tensor *weight, nn_tensor *bias,
                         bool training, double momentum, double eps);
/* The gradients of batch_norm for x, weight and bias: each computed when its want[] flag is set,
 * else left NULL. Training: mean and invstd are the batch's mean and 1/sqrt(biased var + eps) of
 * the forward; eval: mean and var are the running stats (var is then the running variance, eps
 * its epsilon), fixed, so grad_input = grad_out * weight / sqrt(var + eps). */
nn_status nn_batch_norm_backward(nn_tensor *grad_out, nn_tensor *x, nn_tensor *weight, nn_tensor *mean, nn_tensor *var_or_invstd,
                                 bool training, double eps, const bool want[3], nn_tensor **grad_input, nn_tensor **grad_weight,
                                 nn_tensor **grad_bias);

#endif
