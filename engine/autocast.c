/* Autocast state, regions, the cast cache and the frontends' hook (see autocast.h). */
#include <stdlib.h>
#include <string.h>

#include "autocast.h"
#include "backend.h"
#include "device.h"
#include "grad.h"
#include "memory_format.h"

_Thread_local unsigned nn_autocast_mask_;

static _Thread_local nn_dtype fast[NN_NDEVTYPES] = {[NN_CPU] = NN_BF16, [NN_CUDA] = NN_F16};
static _Thread_local bool cache_off;
static _Thread_local int depth;
static _Thread_local nn_autocast_stats stats;

/* ---- the cast cache: open addressing over (source, dtype, grad mode) ---- */
typedef struct {
    nn_tensor *src;  /* retained: its address cannot be reused while the entry lives */
    nn_tensor *cast;
    uint32_t version; /* of src's storage when cast */
    nn_dtype dtype;
    bool grad;        /* cast with grad mode on (it has a grad_fn) */
} entry;

static _Thread_local entry *slots;
static _Thread_local int cap; /* a power of two, or 0 */

static size_t slot_of(const nn_tensor *src, nn_dtype dt, bool grad)
{
    uint64_t h = ((uint64_t)(uintptr_t)src >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(dt * 2 + grad) * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h >> 32) & (size_t)(cap - 1);
}

static entry *find(const nn_tensor *src, nn_dtype dt, bool grad)
{
    if (!cap) return NULL;
    for (size_t i = slot_of(src, dt, grad);; i = (i + 1) & (size_t)(cap - 1)) {
        entry *e = &slots[i];
        if (!e->src) return e;
        if (e->src == src && e->dtype == dt && e->grad == grad) return e;
    }
}

/* Room for one more entry (load at most one half); false when out of memory. */
static bool reserve(void)
{
    if (cap && (stats.cached + 1) * 2 <= cap) return true;
    int ncap = cap ? cap * 2 : 64;
    entry *old = slots, *nv = calloc((size_t)ncap, sizeof *nv);
    if (!nv) return false;
    int ocap = cap;
    slots = nv, cap = ncap;
    for (int i = 0; i < ocap; i++)
        if (old[i].src) *find(old[i].src, old[i].dtype, old[i].grad) = old[i];
    free(old);
    return true;
}

void nn_autocast_clear_cache(void)
{
    for (int i = 0; i < cap; i++) {
        nn_release(slots[i].src);
        nn_release(slots[i].cast);
    }
    free(slots);
    slots = NULL;
    cap = 0;
    stats.cached = 0;
}

/* ---- state ---- */

static bool valid_dev(nn_devtype dev) { return dev >= 0 && dev < NN_NDEVTYPES; }

bool nn_autocast_enabled(nn_devtype dev) { return valid_dev(dev) && (nn_autocast_mask_ >> dev & 1); }

void nn_autocast_set_enabled(nn_devtype dev, bool on)
{
    if (!valid_dev(dev)) return;
    if (on) nn_autocast_mask_ |= 1u << dev;
    else nn_autocast_mask_ &= ~(1u << dev);
}

nn_dtype nn_autocast_dtype(nn_devtype dev) { return valid_dev(dev) ? fast[dev] : NN_DTYPE_NONE; }

static nn_status check_dtype(nn_dtype dt)
{
    if (dt == NN_F16 || dt == NN_BF16 || dt == NN_F32) return NN_OK;
    return nn_error(NN_ERR_DTYPE, "autocast: dtype %s is not supported: autocast runs in torch.float16, torch.bfloat16 or torch.float32",
                    dt >= 0 && dt < NN_NDTYPES ? nn_dtype_name(dt) : "none");
}

nn_status nn_autocast_set_dtype(nn_devtype dev, nn_dtype dt)
{
    if (!valid_dev(dev)) return nn_error(NN_ERR_DEVICE, "autocast: unknown device type %d", (int)dev);
    nn_status st = check_dtype(dt);
    if (!st) fast[dev] = dt;
    return st;
}

bool nn_autocast_cache_enabled(void) { return !cache_off; }
void nn_autocast_set_cache_enabled(bool on) { cache_off = !on; }
int nn_autocast_increment_nesting(void) { return ++depth; }
int nn_autocast_decrement_nesting(void) { return depth > 0 ? --depth : 0; }

nn_status nn_autocast_enter(nn_devtype dev, bool enabled, nn_dtype dtype, bool cache_enabled, nn_autocast_region *saved)
{
    if (!valid_dev(dev)) return nn_error(NN_ERR_DEVICE, "autocast: unknown device type %d", (int)dev);
    if (dtype != NN_DTYPE_NONE && check_dtype(dtype)) return nn_last_status();
    *saved = (nn_autocast_region){.dev = (int8_t)dev, .enabled = nn_autocast_enabled(dev), .cache_enabled = !cache_off, .dtype = fast[dev]};
    nn_autocast_set_enabled(dev, enabled);
    if (dtype != NN_DTYPE_NONE) fast[dev] = dtype;
    depth++;
    cache_off = !cache_enabled;
    return NN_OK;
}

void nn_autocast_exit(const nn_autocast_region *saved)
{
    if (nn_autocast_decrement_nesting() == 0) nn_autocast_clear_cache();
    nn_autocast_set_enabled((nn_devtype)saved->dev, saved->enabled);
    fast[saved->dev] = saved->dtype;
    cache_off = !saved->cache_enabled;
}

unsigned nn_autocast_suspend(void)
{
    unsigned m = nn_autocast_mask_;
    nn_autocast_mask_ = 0;
    return m;
}

void nn_autocast_resume(unsigned mask) { nn_autocast_mask_ = mask; }

nn_autocast_stats nn_autocast_get_stats(void) { return stats; }

/* ---- casts ---- */

/* floating, not float64, on a device type where autocast is on */
static bool eligible(const nn_tensor *t)
{
    return t && (nn_autocast_mask_ >> t->storage->device.type & 1) && nn_dtype_is_float(t->dtype) && t->dtype != NN_F64;
}

/* t as dt, on the graph as ToCopyBackward0; a dense permuted layout (channels_last) is kept */
static nn_tensor *convert(nn_tensor *t, nn_dtype dt)
{
    stats.casts++;
    return nn_to_dtype_preserve(t, dt);
}

/* Parameter t as dt: the copy its last optimizer step wrote where that still holds, else a new
 * cast; either way its next step is asked to write one (engine/optim.c). The copy is handed
 * over, not kept, so that it lives no longer than a cast would. */
static nn_tensor *cast_param(nn_tensor *t, nn_dtype dt)
{
    nn_tensor *c = t->lowp;
    t->lowp = NULL;
    t->lowp_dtype = dt;
    if (c && c->dtype == dt && t->lowp_version == t->storage->version && !nn_gpu_capturing()) {
        if (nn_any_requires_grad(1, &t) && nn_record_copy("ToCopyBackward0", t, c)) {
            nn_release(c);
            return NULL;
        }
        stats.lowp_hits++;
        return c;
    }
    nn_release(c);
    return convert(t, dt);
}

/* t cast to dt, through the cache when t is a parameter going to the region's dtype */
static nn_tensor *cast_one(nn_tensor *t, nn_dtype dt)
{
    if (cache_off || !t->requires_grad || t->grad_fn || t->dtype != NN_F32 || dt != fast[t->storage->device.type])
        return convert(t, dt);
    bool grad = nn_grad_enabled();
    uint32_t version = t->storage->version;
    entry *e = find(t, dt, grad);
    if (e && e->src) {
        if (e->version == version) {
            stats.cache_hits++;
            return nn_retain(e->cast);
        }
        nn_tensor *c = cast_param(t, dt); /* t changed in place since: the entry is stale */
        if (c) {
            nn_release(e->cast);
            e->cast = nn_retain(c);
            e->version = version;
        }
        return c;
    }
    nn_tensor *c = cast_param(t, dt);
    if (c && reserve()) {
        e = find(t, dt, grad);
        *e = (entry){nn_retain(t), nn_retain(c), version, dt, grad};
        stats.cached++;
    }
    return c;
}

void nn_autocast_release(int n, nn_tensor **casted)
{
    for (int k = 0; k < n; k++) {
        nn_release(casted[k]);
        casted[k] = NULL;
    }
}

nn_status nn_autocast_apply(nn_autocast_kind kind, int n, nn_tensor *const *in, nn_tensor **casted)
{
    for (int k = 0; k < n; k++) casted[k] = NULL;
    if (!nn_autocast_mask_ || kind == NN_AUTOCAST_NONE) return NN_OK;
    nn_dtype widest = NN_DTYPE_NONE;
    if (kind == NN_AUTOCAST_PROMOTE) { /* from the region's dtype up to the widest eligible input */
        for (int k = 0; k < n; k++)
            if (eligible(in[k]))
                widest = nn_promote_types(widest == NN_DTYPE_NONE ? fast[in[k]->storage->device.type] : widest, in[k]->dtype);
        if (widest == NN_DTYPE_NONE) return NN_OK;
    }
    for (int k = 0; k < n; k++) {
        if (!eligible(in[k])) continue;
        nn_dtype dt = kind == NN_AUTOCAST_LOWER ? fast[in[k]->storage->device.type] : kind == NN_AUTOCAST_FP32 ? NN_F32 : widest;
        if (in[k]->dtype == dt) continue;
        if (!(casted[k] = cast_one(in[k], dt))) {
            nn_autocast_release(n, casted);
            return nn_last_status();
        }
    }
    return NN_OK;
}

bool nn_autocast_records_param(const nn_tensor *t) { return t && t->dtype == NN_F32 && t->requires_grad && !t->grad_fn; }

nn_status nn_autocast_params_off_graph(int n, nn_tensor *const *params, nn_tensor **casted)
{
    bool grad = nn_grad_enabled();
    nn_set_grad_enabled(false);
    nn_status st = nn_autocast_apply(NN_AUTOCAST_LOWER, n, params, casted);
    nn_set_grad_enabled(grad);
    return st;
}

nn_status nn_autocast_inputs(nn_op op, int n, nn_tensor *const *in, nn_tensor **casted)
{
    nn_autocast_kind kind = op >= 0 && op < NN_OP_COUNT ? nn_op_autocast(op) : NN_AUTOCAST_NONE;
    if (kind == NN_AUTOCAST_PROMOTE) {
        nn_op_kind k = nn_op_kind_of(op);
        if (k == NN_KIND_UNARY || k == NN_KIND_BINARY || k == NN_KIND_TERNARY) kind = NN_AUTOCAST_NONE; /* native promotion */
    }
    return nn_autocast_apply(kind, n, in, casted);
}

nn_dtype nn_autocast_opt_dtype(const nn_tensor *x, nn_dtype dt)
{
    if (!nn_autocast_mask_ || dt != NN_DTYPE_NONE || !eligible(x) || x->dtype == NN_F32) return dt;
    return NN_F32;
}
