/* GradScaler frontends: checks (PyTorch's messages), then one dispatch per call to the
 * device's amp_unscale / amp_update_scale kernel (engine/cpu/amp.c, cuda/amp.cu). */
#include <stdlib.h>

#include "amp.h"
#include "backend.h"
#include "memory_format.h"

/* The CPU kernel table refers to NN kernels weakly, and a weak reference does not pull a member
 * out of a static library: this strong one pulls in cpu/amp.c. */
nn_status nn_cpu_amp_unscale(const nn_kargs *a);
static nn_kernel const link_cpu_kernels __attribute__((used)) = nn_cpu_amp_unscale;

/* type: "a float", "an int" */
static nn_status one_element(const char *fn, const char *what, const nn_tensor *t, nn_dtype dt, const char *type)
{
    if (nn_numel(t) != 1) return nn_error(NN_ERR_SHAPE, "%s: %s must be a 1-element tensor.", fn, what);
    if (t->dtype != dt) return nn_error(NN_ERR_DTYPE, "%s: %s must be %s tensor.", fn, what, type);
    return NN_OK;
}

static nn_status same_device(const char *fn, const char *what, const nn_tensor *t, const nn_tensor *ref)
{
    char d1[16], d2[16];
    if (nn_device_eq(t->storage->device, ref->storage->device)) return NN_OK;
    return nn_error(NN_ERR_DEVICE, "%s: %s is on %s, but found_inf is on %s", fn, what, nn_device_str(d1, t->storage->device),
                    nn_device_str(d2, ref->storage->device));
}

/* The unscale pass over the gradients; inv_scale NULL: the check alone, through finite_flags
 * where they still hold. */
static nn_status unscale_or_check(const char *fn, int n, nn_tensor *const *grads, nn_tensor *found_inf, nn_tensor *inv_scale)
{
    nn_status st = inv_scale ? one_element(fn, "inv_scale", inv_scale, NN_F32, "a float") : NN_OK;
    if (!st) st = one_element(fn, "found_inf", found_inf, NN_F32, "a float");
    if (!st && inv_scale) st = same_device(fn, "inv_scale", inv_scale, found_inf);
    int m = 0;
    for (int k = 0; k < n && !st; k++) {
        if (!grads[k]) continue;
        m++;
        if (!nn_dtype_is_float(grads[k]->dtype))
            st = nn_error(NN_ERR_DTYPE, "%s: tensor %d has dtype %s, expected a floating point dtype", fn, k, nn_dtype_name(grads[k]->dtype));
        else st = same_device(fn, "a gradient", grads[k], found_inf);
    }
    if (st || m == 0) return st;
    nn_tensor *small[64], **list = 2 * m <= 64 ? small : malloc(sizeof *list * 2 * (size_t)m); /* two flags a gradient at most */
    if (!list) return nn_error(NN_ERR_NOMEM, "%s: out of memory", fn);
    m = 0;
    for (int k = 0; k < n; k++) {
        nn_tensor *g = grads[k];
        if (!g) continue;
        if (!inv_scale && nn_finite_flags_hold(g)) {
            list[m++] = g->finite_flags[0];
            if (g->finite_flags[1]) list[m++] = g->finite_flags[1];
        } else {
            list[m++] = g;
        }
    }
    nn_kargs a = {.op = NN_OP_amp_unscale, .out = {found_inf}, .in = {inv_scale}, .nin = inv_scale ? 1 : 0, .list = list, .nlist = m};
    st = nn_dispatch(&a);
    if (!st) {
        for (int k = 0; k < m && inv_scale; k++) nn_bump_version(list[k]);
        nn_bump_version(found_inf);
    }
    if (list != small) free(list);
    return st;
}

nn_status nn_amp_unscale_(int n, nn_tensor *const *grads, nn_tensor *found_inf, nn_tensor *inv_scale)
{
    return unscale_or_check("_amp_foreach_non_finite_check_and_unscale_", n, grads, found_inf, inv_scale);
}

nn_status nn_amp_check_finite_(int n, nn_tensor *const *grads, nn_tensor *found_inf)
{
    return unscale_or_check("_amp_non_finite_check_", n, grads, found_inf, NULL);
}

nn_tensor *nn_cast_checked(nn_tensor *t, nn_dtype dt)
{
    if (!nn_dtype_is_float(t->dtype) || !nn_dtype_is_float(dt) || !nn_is_dense(t) || t->requires_grad) {
        nn_error(NN_ERR_ARG, "cast_checked: expected a dense floating point tensor that does not require grad and a floating point dtype");
        return NULL;
    }
    nn_device dev = t->storage->device;
    int64_t n = nn_numel(t), blocks = (n + (1 << 11) - 1) >> 11; /* a conv weight's gradient (~10^5-10^6 values) still fills the GPU */
    blocks = blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks;     /* one flag per part the kernel checks */
    nn_tensor *out = nn_empty_strided(t->ndim, t->shape, t->strides, dt, dev);
    nn_tensor *flags = out ? nn_empty(1, &blocks, NN_U8, dev) : NULL;
    nn_kargs a = {.op = NN_OP_cast_check, .out = {out, flags}, .in = {t}, .nin = 1};
    if (!flags || nn_dispatch(&a)) {
        nn_release(flags);
        nn_release(out);
        return NULL;
    }
    nn_set_finite_witnesses(out, 1, &flags);
    nn_release(flags);
    return out;
}

void nn_set_finite_witnesses(nn_tensor *t, int n, nn_tensor *const *w)
{
    for (int k = 0; k < 2; k++) {
        nn_tensor *old = t->finite_flags[k];
        t->finite_flags[k] = k < n ? nn_retain(w[k]) : NULL;
        t->finite_wversion[k] = k < n ? w[k]->storage->version : 0;
        nn_release(old);
    }
    t->finite_version = t->storage->version;
}

nn_status nn_amp_update_scale_(nn_tensor *scale, nn_tensor *growth_tracker, nn_tensor *found_inf, double growth_factor,
                               double backoff_factor, int64_t growth_interval)
{
    static const char fn[] = "_amp_update_scale_";
    nn_status st = one_element(fn, "growth_tracker", growth_tracker, NN_I32, "an int");
    if (!st) st = one_element(fn, "current_scale", scale, NN_F32, "a float");
    if (!st) st = one_element(fn, "found_inf", found_inf, NN_F32, "a float");
    if (!st) st = same_device(fn, "current_scale", scale, found_inf);
    if (!st) st = same_device(fn, "growth_tracker", growth_tracker, found_inf);
    if (st) return st;
    nn_kargs a = {.op = NN_OP_amp_update_scale, .out = {scale, growth_tracker}, .in = {found_inf}, .nin = 1,
                  .f = {growth_factor, backoff_factor}, .i = {growth_interval}};
    st = nn_dispatch(&a);
    if (!st) {
        nn_bump_version(scale);
        nn_bump_version(growth_tracker);
    }
    return st;
}
