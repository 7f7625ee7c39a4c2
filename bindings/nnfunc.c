/* Lua bindings of the engine's neural-network ops: torch.conv2d, the 2-D pools,
 * softmax / log_softmax, nll_loss, batch_norm, index_select / index_add_, embedding, erf,
 * log1p, masked_fill and linear. The functions take PyTorch's positional
 * arguments and a trailing keyword table with PyTorch's names, so
 * torch.nn.functional (bindings/lua/torch_functional.lua) uses several of them
 * as they are. */
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "conv.h"
#include "lt.h"
#include "nnfunc.h"

/* ---- argument reading ---- */

/* The index of the last positional argument. Like lt_last_positional, except that a
 * trailing table with an entry at [2] is a value ({nil, 7} as an output size), not options. */
static int last_positional(lua_State *L)
{
    int top = lua_gettop(L);
    while (top > 0 && lua_isnil(L, top)) top--;
    if (top > 0 && lt_is_opts(L, top)) {
        int is_list = lua_rawgeti(L, top, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (!is_list) top--;
    }
    return top;
}

typedef struct {
    int last; /* last positional argument */
    int opts; /* index of the keyword table (or of none) */
} fargs;

static fargs begin(lua_State *L, const char *const *keys)
{
    luaL_checkstack(L, 24, NULL);
    fargs a = {last_positional(L), 0};
    a.opts = a.last + 1;
    lt_check_opts(L, a.opts, keys);
    return a;
}

/* The stack index of argument `name`, given at position pos or by keyword (then pushed),
 * or 0 when it is absent or nil. */
static int arg(lua_State *L, const fargs *a, int pos, const char *name)
{
    bool positional = pos > 0 && pos <= a->last && !lua_isnil(L, pos);
    if (lt_opt(L, a->opts, name) != LUA_TNIL) {
        if (positional) luaL_argerror(L, a->opts, lua_pushfstring(L, "got multiple values for argument '%s'", name));
        return lua_gettop(L);
    }
    lua_pop(L, 1);
    return positional ? pos : 0;
}

/* The argument number to report for the value at stack index i. */
static int argno(const fargs *a, int i)
{
    return i > a->last ? a->opts : i;
}

/* Arguments past the last one a function takes are an error. */
static void no_more(lua_State *L, const fargs *a, int nparams)
{
    if (a->last > nparams) luaL_argerror(L, nparams + 1, "too many arguments");
}

static nn_tensor *tensor_arg(lua_State *L, const fargs *a, int i, const char *name)
{
    nn_tensor *t = lt_totensor(L, i);
    if (!t) luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be a tensor, got %s", name, luaL_typename(L, i)));
    return t;
}

static int64_t int_arg(lua_State *L, const fargs *a, int i, const char *name)
{
    int isint;
    lua_Integer v = lua_tointegerx(L, i, &isint);
    if (!isint) luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be an integer, got %s", name, luaL_typename(L, i)));
    return v;
}

static bool bool_arg(lua_State *L, const fargs *a, int i, const char *name)
{
    if (lua_type(L, i) != LUA_TBOOLEAN)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be a boolean, got %s", name, luaL_typename(L, i)));
    return lua_toboolean(L, i);
}

/* One entry of a list at stack index i, position k (1-based): an integer, or nil
 * when nil_ok (then *v is untouched and 0 is returned). */
static int list_entry(lua_State *L, const fargs *a, int i, int k, const char *name, bool nil_ok, int64_t *v)
{
    const int64_t *s;
    int n = lt_tosize(L, i, &s);
    if (n >= 0) {
        *v = s[k - 1];
        return 1;
    }
    int ty = lua_rawgeti(L, i, k), isint;
    lua_Integer x = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (ty == LUA_TNIL && nil_ok) return 0;
    if (!isint)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be an int or a list of 2 ints, got %s at position %d", name,
                                                      lua_typename(L, ty), k));
    *v = x;
    return 1;
}

/* An int or a list of one or two ints (table or torch.Size) at stack index i into out[2]. */
static void pair_arg(lua_State *L, const fargs *a, int i, const char *name, int64_t out[2])
{
    if (lua_type(L, i) == LUA_TNUMBER) {
        out[0] = out[1] = int_arg(L, a, i, name);
        return;
    }
    const int64_t *s;
    int n = lt_tosize(L, i, &s);
    if (n < 0 && lua_type(L, i) == LUA_TTABLE) n = (int)lua_rawlen(L, i);
    else if (n < 0) luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be an int or a list of 2 ints, got %s", name, luaL_typename(L, i)));
    if (n != 1 && n != 2)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be an int or a list of 2 ints, got a list of %d", name, n));
    list_entry(L, a, i, 1, name, false, &out[0]);
    if (n == 2) list_entry(L, a, i, 2, name, false, &out[1]);
    else out[1] = out[0];
}

/* Nonzero if the value at i is an empty list (PyTorch's stride=[] meaning "the kernel size"). */
static bool empty_list(lua_State *L, int i)
{
    const int64_t *s;
    int n = lt_tosize(L, i, &s);
    if (n >= 0) return n == 0;
    if (lua_type(L, i) != LUA_TTABLE) return false;
    bool empty = lua_rawgeti(L, i, 1) == LUA_TNIL;
    lua_pop(L, 1);
    return empty;
}

/* 'none' / 'mean' / 'sum' */
static int reduction_arg(lua_State *L, const fargs *a, int i)
{
    static const char *const names[] = {"none", "mean", "sum", NULL};
    const char *s = lua_tostring(L, i);
    if (lua_type(L, i) == LUA_TSTRING)
        for (int k = 0; names[k]; k++)
            if (!strcmp(s, names[k])) return k;
    return luaL_argerror(L, argno(a, i), lua_pushfstring(L, "%s is not a valid value for reduction", luaL_tolstring(L, i, NULL)));
}

/* Push the results of a function that may return indices too. */
static int push_values_indices(lua_State *L, nn_tensor *values, nn_tensor *indices, bool with_indices)
{
    lt_push(L, values);
    if (!with_indices) {
        nn_release(indices);
        return 1;
    }
    lt_push(L, indices);
    return 2;
}

/* ---- convolution and pooling ---- */

/* conv2d(input, weight, bias=nil, stride=1, padding=0, dilation=1, groups=1); padding may be
 * 'same' or 'valid' */
static int f_conv2d(lua_State *L)
{
    static const char *const keys[] = {"input", "weight", "bias", "stride", "padding", "dilation", "groups", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 7);
    int i;
    if (!(i = arg(L, &a, 1, "input"))) return luaL_argerror(L, 1, "tensor expected, got no value");
    nn_tensor *x = tensor_arg(L, &a, i, "input");
    if (!(i = arg(L, &a, 2, "weight"))) return luaL_argerror(L, 2, "tensor expected, got no value");
    nn_tensor *w = tensor_arg(L, &a, i, "weight");
    nn_tensor *b = (i = arg(L, &a, 3, "bias")) ? tensor_arg(L, &a, i, "bias") : NULL;
    int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1}, groups = 1;
    bool same = false;
    if ((i = arg(L, &a, 4, "stride"))) pair_arg(L, &a, i, "stride", stride);
    if ((i = arg(L, &a, 5, "padding"))) {
        if (lua_type(L, i) == LUA_TSTRING) {
            const char *p = lua_tostring(L, i);
            if (!strcmp(p, "same")) same = true;
            else if (strcmp(p, "valid"))
                return luaL_argerror(L, argno(&a, i), lua_pushfstring(L, "Invalid padding string '%s', should be one of ['valid', 'same']", p));
        } else pair_arg(L, &a, i, "padding", pad);
    }
    if ((i = arg(L, &a, 6, "dilation"))) pair_arg(L, &a, i, "dilation", dil);
    if ((i = arg(L, &a, 7, "groups"))) groups = int_arg(L, &a, i, "groups");
    nn_tensor *r = same ? nn_conv2d_same(x, w, b, stride, dil, groups) : nn_conv2d(x, w, b, stride, pad, dil, groups);
    lt_push_or_fail(L, r, 1);
    return 1;
}

/* n ints from the list at i */
static void ints_at(lua_State *L, int i, int n, int64_t *out)
{
    luaL_checktype(L, i, LUA_TTABLE);
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, i, k + 1);
        out[k] = (int64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
}

/* torch._conv2d_backward_input(grad_out, weight, input_shape, stride, padding, dilation, groups) and
 * torch._conv2d_backward_weight(grad_out, input, weight_shape, ...): conv2d's gradients with no
 * history (conv_transpose2d is made of them, bindings/lua/nn_conv_more.lua); lists of ints */
static int conv2d_grad(lua_State *L, bool weight)
{
    nn_tensor *g = lt_check(L, 1), *other = lt_check(L, 2);
    int64_t shape[4], stride[2], pad[2], dil[2];
    ints_at(L, 3, 4, shape);
    ints_at(L, 4, 2, stride);
    ints_at(L, 5, 2, pad);
    ints_at(L, 6, 2, dil);
    int64_t groups = luaL_checkinteger(L, 7);
    nn_tensor *r = weight ? nn_conv2d_backward_weight(g, other, shape, stride, pad, dil, groups)
                          : nn_conv2d_backward_input(g, other, shape, stride, pad, dil, groups);
    lt_push_or_fail(L, r, 1);
    return 1;
}
static int f_conv2d_backward_input(lua_State *L) { return conv2d_grad(L, false); }
static int f_conv2d_backward_weight(lua_State *L) { return conv2d_grad(L, true); }

/* The kernel_size (arg 2) and stride (arg 3; nil or {} = kernel_size) of a pool. */
static void pool_kernel(lua_State *L, const fargs *a, int64_t kernel[2], int64_t stride[2])
{
    int i;
    if (!(i = arg(L, a, 2, "kernel_size"))) luaL_argerror(L, 2, "missing required argument 'kernel_size'");
    pair_arg(L, a, i, "kernel_size", kernel);
    stride[0] = kernel[0], stride[1] = kernel[1];
    if ((i = arg(L, a, 3, "stride")) && !empty_list(L, i)) pair_arg(L, a, i, "stride", stride);
}

/* max_pool2d(input, kernel_size, stride=kernel_size, padding=0, dilation=1, ceil_mode=false,
 * return_indices=false) -> output[, indices] */
static int f_max_pool2d(lua_State *L)
{
    static const char *const keys[] = {"kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 7);
    nn_tensor *x = lt_check(L, 1);
    int64_t kernel[2], stride[2], pad[2] = {0, 0}, dil[2] = {1, 1};
    pool_kernel(L, &a, kernel, stride);
    int i;
    if ((i = arg(L, &a, 4, "padding"))) pair_arg(L, &a, i, "padding", pad);
    if ((i = arg(L, &a, 5, "dilation"))) pair_arg(L, &a, i, "dilation", dil);
    bool ceil_mode = (i = arg(L, &a, 6, "ceil_mode")) && bool_arg(L, &a, i, "ceil_mode");
    bool with_indices = (i = arg(L, &a, 7, "return_indices")) && bool_arg(L, &a, i, "return_indices");
    nn_tensor *indices = NULL;
    nn_tensor *r = nn_max_pool2d(x, kernel, stride, pad, dil, ceil_mode, with_indices ? &indices : NULL);
    if (!r) return lt_fail(L, 1);
    return push_values_indices(L, r, indices, with_indices);
}

/* max_pool2d_with_indices(...) = max_pool2d(..., return_indices=true) */
static int f_max_pool2d_with_indices(lua_State *L)
{
    static const char *const keys[] = {"kernel_size", "stride", "padding", "dilation", "ceil_mode", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 6);
    nn_tensor *x = lt_check(L, 1);
    int64_t kernel[2], stride[2], pad[2] = {0, 0}, dil[2] = {1, 1};
    pool_kernel(L, &a, kernel, stride);
    int i;
    if ((i = arg(L, &a, 4, "padding"))) pair_arg(L, &a, i, "padding", pad);
    if ((i = arg(L, &a, 5, "dilation"))) pair_arg(L, &a, i, "dilation", dil);
    bool ceil_mode = (i = arg(L, &a, 6, "ceil_mode")) && bool_arg(L, &a, i, "ceil_mode");
    nn_tensor *indices = NULL;
    nn_tensor *r = nn_max_pool2d(x, kernel, stride, pad, dil, ceil_mode, &indices);
    if (!r) return lt_fail(L, 1);
    return push_values_indices(L, r, indices, true);
}

/* avg_pool2d(input, kernel_size, stride=kernel_size, padding=0, ceil_mode=false,
 * count_include_pad=true, divisor_override=nil) */
static int f_avg_pool2d(lua_State *L)
{
    static const char *const keys[] = {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 7);
    nn_tensor *x = lt_check(L, 1);
    int64_t kernel[2], stride[2], pad[2] = {0, 0}, divisor = 0;
    pool_kernel(L, &a, kernel, stride);
    int i;
    if ((i = arg(L, &a, 4, "padding"))) pair_arg(L, &a, i, "padding", pad);
    bool ceil_mode = (i = arg(L, &a, 5, "ceil_mode")) && bool_arg(L, &a, i, "ceil_mode");
    bool count_include_pad = !(i = arg(L, &a, 6, "count_include_pad")) || bool_arg(L, &a, i, "count_include_pad");
    if ((i = arg(L, &a, 7, "divisor_override"))) {
        divisor = int_arg(L, &a, i, "divisor_override");
        if (divisor == 0) return luaL_argerror(L, argno(&a, i), "divisor must be not zero");
    }
    lt_push_or_fail(L, nn_avg_pool2d(x, kernel, stride, pad, ceil_mode, count_include_pad, divisor), 1);
    return 1;
}

/* output_size of the adaptive pools: an int, or a pair whose nil entries keep the input's size */
static void adaptive_size(lua_State *L, const fargs *a, nn_tensor *x, int64_t out[2])
{
    int i = arg(L, a, 2, "output_size");
    if (!i) luaL_argerror(L, 2, "missing required argument 'output_size'");
    if (lua_type(L, i) == LUA_TNUMBER) {
        out[0] = out[1] = int_arg(L, a, i, "output_size");
        return;
    }
    const int64_t *s;
    int n = lt_tosize(L, i, &s);
    if (n < 0 && lua_type(L, i) != LUA_TTABLE)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'output_size' must be an int or a list of 2 ints, got %s", luaL_typename(L, i)));
    if (n >= 0 && n != 2)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'output_size' must be an int or a list of 2 ints, got a list of %d", n));
    if (n < 0) {
        lua_Integer len = (lua_Integer)lua_rawlen(L, i);
        if (len > 2)
            luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'output_size' must be an int or a list of 2 ints, got a list of %d", (int)len));
    }
    for (int k = 0; k < 2; k++) {
        /* None keeps the input's size (when the input has fewer dims, the engine reports it) */
        out[k] = x->ndim >= 2 ? x->shape[x->ndim - 2 + k] : 1;
        list_entry(L, a, i, k + 1, "output_size", true, &out[k]);
    }
}

static int f_adaptive_avg_pool2d(lua_State *L)
{
    static const char *const keys[] = {"output_size", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 2);
    nn_tensor *x = lt_check(L, 1);
    int64_t size[2];
    adaptive_size(L, &a, x, size);
    lt_push_or_fail(L, nn_adaptive_avg_pool2d(x, size[0], size[1]), 1);
    return 1;
}

/* adaptive_max_pool2d(input, output_size, return_indices=false) -> output[, indices] */
static int f_adaptive_max_pool2d(lua_State *L)
{
    static const char *const keys[] = {"output_size", "return_indices", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 3);
    nn_tensor *x = lt_check(L, 1);
    int64_t size[2];
    adaptive_size(L, &a, x, size);
    int i;
    bool with_indices = (i = arg(L, &a, 3, "return_indices")) && bool_arg(L, &a, i, "return_indices");
    nn_tensor *indices = NULL;
    nn_tensor *r = nn_adaptive_max_pool2d(x, size[0], size[1], with_indices ? &indices : NULL);
    if (!r) return lt_fail(L, 1);
    return push_values_indices(L, r, indices, with_indices);
}

/* ---- softmax ---- */

/* softmax(input, dim, {dtype=}) and x:softmax(dim); upvalue 1: 1 for log_softmax */
static int f_softmax(lua_State *L)
{
    static const char *const keys[] = {"dim", "dtype", NULL};
    bool is_log = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    fargs a = begin(L, keys);
    nn_tensor *x = lt_check(L, 1);
    int i = arg(L, &a, 2, "dim");
    if (!i) return luaL_argerror(L, 2, lua_pushfstring(L, "%s() missing required argument 'dim'", is_log ? "log_softmax" : "softmax"));
    int dim = (int)int_arg(L, &a, i, "dim");
    if (nn_wrap_dim("dim", &dim, x->ndim)) return lt_fail(L, argno(&a, i));
    nn_dtype dt = NN_DTYPE_NONE;
    if ((i = arg(L, &a, 3, "dtype")) && (dt = lt_todtype(L, i)) == NN_DTYPE_NONE)
        return luaL_argerror(L, argno(&a, i), lua_pushfstring(L, "'dtype' must be a dtype, got %s", luaL_tolstring(L, i, NULL)));
    no_more(L, &a, 3);
    lt_push_or_fail(L, (is_log ? nn_log_softmax : nn_softmax)(x, dim, dt), 1);
    return 1;
}

/* ---- losses ---- */

/* f(input, target, weight=nil, reduction='mean', ignore_index=-100), ATen's order */
static int class_loss(lua_State *L, nn_tensor *(*f)(nn_tensor *, nn_tensor *, nn_tensor *, int, int64_t))
{
    static const char *const keys[] = {"weight", "reduction", "ignore_index", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 5);
    nn_tensor *x = lt_check(L, 1), *t = lt_check(L, 2);
    int i;
    nn_tensor *w = (i = arg(L, &a, 3, "weight")) ? tensor_arg(L, &a, i, "weight") : NULL;
    int reduction = (i = arg(L, &a, 4, "reduction")) ? reduction_arg(L, &a, i) : NN_REDUCTION_MEAN;
    int64_t ignore = (i = arg(L, &a, 5, "ignore_index")) ? int_arg(L, &a, i, "ignore_index") : -100;
    lt_push_or_fail(L, f(x, t, w, reduction, ignore), 2);
    return 1;
}

static int f_nll_loss(lua_State *L) { return class_loss(L, nn_nll_loss); }
/* cross-entropy with class-index targets, fused (F.cross_entropy calls it when label_smoothing is 0) */
static int f_cross_entropy_loss(lua_State *L) { return class_loss(L, nn_cross_entropy); }

/* torch._pointwise_loss(kind, input, target, p) and torch._pointwise_loss_backward(kind, input, target, grad, p, scale)
 * (nn_pointwise_loss): the fused kernels that F.mse_loss, smooth_l1_loss, huber_loss, binary_cross_entropy and
 * binary_cross_entropy_with_logits's nodes call */
static const char *const ploss_kinds[] = {"mse", "smooth_l1", "huber", "bce", "bce_logits", NULL};

static int f_pointwise_loss(lua_State *L)
{
    bool backward = lua_tointeger(L, lua_upvalueindex(1));
    int kind = luaL_checkoption(L, 1, NULL, ploss_kinds);
    nn_tensor *x = lt_check(L, 2), *t = lt_check(L, 3), *g = backward ? lt_check(L, 4) : NULL;
    double p = luaL_optnumber(L, backward ? 5 : 4, 0), s = backward ? luaL_optnumber(L, 6, 1) : 1;
    lt_push_or_fail(L, nn_pointwise_loss(kind, x, t, g, p, s), 2);
    return 1;
}

/* torch._activation(kind, input, p, q) and torch._activation_backward(kind, input, grad, p, q) (nn_activation):
 * the fused kernels that F.gelu, silu, mish, softplus, logsigmoid, leaky_relu, elu, hardswish and hardsigmoid's
 * nodes call */
static const char *const act_kinds[] = {"gelu", "gelu_tanh", "silu", "mish", "softplus", "log_sigmoid", "leaky_relu",
                                        "elu", "hardswish", "hardsigmoid", NULL};

static int f_activation(lua_State *L)
{
    bool backward = lua_tointeger(L, lua_upvalueindex(1));
    int kind = luaL_checkoption(L, 1, NULL, act_kinds);
    nn_tensor *x = lt_check(L, 2), *g = backward ? lt_check(L, 3) : NULL;
    int k = backward ? 4 : 3;
    double p = luaL_optnumber(L, k, 0), q = luaL_optnumber(L, k + 1, 0);
    lt_push_or_fail(L, nn_activation(kind, x, g, p, q), 2);
    return 1;
}

/* The activations' autograd node (PyTorch's name), in C so that its saved input goes with the
 * backward (a Lua Function's context would hold it until the collector reached it, one cycle per
 * node of a chain). Under create_graph the gradient comes from the kind's Lua function in
 * differentiable ops, registered by torch._activation_set_grad(kind, fn). */
static const char *const act_nodes[] = {"GeluBackward0", "GeluBackward0", "SiluBackward0", "MishBackward0", "SoftplusBackward0",
                                        "LogSigmoidBackward0", "LeakyReluBackward0", "EluBackward0", "HardswishBackward0",
                                        "HardsigmoidBackward0"};
static int act_grad_ref[sizeof act_nodes / sizeof *act_nodes];

static nn_status act_graph_grad(nn_node *n, nn_tensor *x, nn_tensor *g, nn_tensor **out)
{
    lua_State *L = lt_backward_state();
    if (!L) return nn_error(NN_ERR_RUNTIME, "%s: its double backward needs backward started from Lua", n->name);
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, act_grad_ref[n->i[0]]);
    lt_push(L, nn_retain(x));
    lt_push(L, nn_retain(g));
    lua_pushnumber(L, n->f[0]);
    lua_pushnumber(L, n->f[1]);
    nn_status st = NN_OK;
    if (lua_pcall(L, 4, 1, 0) != LUA_OK) st = nn_error(NN_ERR_RUNTIME, "%s: %s", n->name, lua_tostring(L, -1));
    else *out = nn_retain(lt_totensor(L, -1));
    lua_settop(L, top);
    return st;
}

static nn_status act_backward(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in)
{
    nn_tensor *x = nn_node_saved(n, 0), *g = grad_out[0];
    if (!x) return nn_last_status();
    if (nn_backward_creates_graph() && nn_grad_enabled()) return act_graph_grad(n, x, g, &grad_in[0]);
    nn_tensor *gc = nn_to_dtype(g, x->dtype);
    grad_in[0] = gc ? nn_activation((int)n->i[0], x, gc, n->f[0], n->f[1]) : NULL;
    nn_release(gc);
    return grad_in[0] ? NN_OK : nn_last_status();
}

/* torch._activation_node(kind, input, p, q): the activation, recorded for autograd */
static int f_activation_node(lua_State *L)
{
    int kind = luaL_checkoption(L, 1, NULL, act_kinds);
    nn_tensor *x = lt_check(L, 2);
    double p = luaL_optnumber(L, 3, 0), q = luaL_optnumber(L, 4, 0);
    nn_tensor *y = nn_activation(kind, x, NULL, p, q);
    if (y && nn_any_requires_grad(1, &x)) {
        nn_node *n = nn_node_new(act_nodes[kind], act_backward, 1, &x);
        if (!n) {
            nn_release(y);
            y = NULL;
        } else {
            n->i[0] = kind, n->f[0] = p, n->f[1] = q;
            nn_node_set_output(n, y, 0);
            nn_node_save(n, 0, x);
            nn_node_release(n);
        }
    }
    lt_push_or_fail(L, y, 2);
    return 1;
}

/* torch._activation_set_grad(kind, fn): fn(x, g, p, q), the gradient in differentiable ops */
static int f_activation_set_grad(lua_State *L)
{
    int kind = luaL_checkoption(L, 1, NULL, act_kinds);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    if (act_grad_ref[kind]) luaL_unref(L, LUA_REGISTRYINDEX, act_grad_ref[kind]);
    act_grad_ref[kind] = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- normalisation ---- */

static double number_arg(lua_State *L, const fargs *a, int i, const char *name)
{
    int isnum;
    lua_Number v = lua_tonumberx(L, i, &isnum);
    if (!isnum || lua_type(L, i) != LUA_TNUMBER)
        luaL_argerror(L, argno(a, i), lua_pushfstring(L, "'%s' must be a number, got %s", name, luaL_typename(L, i)));
    return v;
}

/* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled),
 * ATen's order (F.batch_norm has its own); tensors may be nil, cudnn_enabled is accepted and ignored */
static int f_batch_norm(lua_State *L)
{
    static const char *const keys[] = {"weight", "bias", "running_mean", "running_var", "training", "momentum", "eps", "cudnn_enabled", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 9);
    nn_tensor *x = lt_check(L, 1), *t[4];
    for (int k = 0; k < 4; k++) {
        int i = arg(L, &a, k + 2, keys[k]);
        t[k] = i ? tensor_arg(L, &a, i, keys[k]) : NULL;
    }
    int i;
    bool training = (i = arg(L, &a, 6, "training")) && bool_arg(L, &a, i, "training");
    double momentum = (i = arg(L, &a, 7, "momentum")) ? number_arg(L, &a, i, "momentum") : 0.1;
    double eps = (i = arg(L, &a, 8, "eps")) ? number_arg(L, &a, i, "eps") : 1e-5;
    if ((i = arg(L, &a, 9, "cudnn_enabled"))) bool_arg(L, &a, i, "cudnn_enabled");
    lt_push_or_fail(L, nn_batch_norm(x, t[2], t[3], t[0], t[1], training, momentum, eps), 1);
    return 1;
}

/* torch._layer_norm(x, E, weight, bias, eps): F.layer_norm's fused kernels over x's trailing dims
 * of E elements (torch_functional.lua checks normalized_shape); weight, bias may be nil */
static int f_layer_norm(lua_State *L)
{
    nn_tensor *x = lt_check(L, 1);
    lua_Integer E = luaL_checkinteger(L, 2);
    nn_tensor *w = lua_isnoneornil(L, 3) ? NULL : lt_check(L, 3), *b = lua_isnoneornil(L, 4) ? NULL : lt_check(L, 4);
    lt_push_or_fail(L, nn_layer_norm(x, E, w, b, luaL_checknumber(L, 5)), 1);
    return 1;
}

/* torch._dropout(x, p): F.dropout's fused kernels in training, not in place (torch_functional.lua
 * checks p and leaves 0, 1 and eval to itself) */
static int f_dropout(lua_State *L)
{
    lt_push_or_fail(L, nn_dropout(lt_check(L, 1), luaL_checknumber(L, 2)), 1);
    return 1;
}

/* linear(input, weight, bias=nil): input @ weight^T + bias, addmm for 2-D input */
static int f_linear(lua_State *L)
{
    static const char *const keys[] = {"bias", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 3);
    nn_tensor *x = lt_check(L, 1), *w = lt_check(L, 2);
    int i;
    nn_tensor *b = (i = arg(L, &a, 3, "bias")) ? tensor_arg(L, &a, i, "bias") : NULL;
    char s1[160], s2[160];
    if (w->ndim != 2 && w->ndim != 1)
        return luaL_argerror(L, 2, lua_pushfstring(L, "weight must be 1-D or 2-D, got %s", nn_shape_str(s1, w->ndim, w->shape)));
    if (x->ndim == 0 || x->shape[x->ndim - 1] != w->shape[w->ndim - 1])
        return luaL_argerror(L, 2, lua_pushfstring(L, "input %s and weight %s do not match", nn_shape_str(s1, x->ndim, x->shape),
                                                   nn_shape_str(s2, w->ndim, w->shape)));
    lt_push_or_fail(L, nn_linear(x, w, b), b ? 3 : 2);
    return 1;
}

/* ---- indexing ---- */

/* index_select(input, dim, index) and x:index_select(dim, index) */
static int f_index_select(lua_State *L)
{
    static const char *const keys[] = {"dim", "index", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 3);
    nn_tensor *x = lt_check(L, 1);
    int i = arg(L, &a, 2, "dim"), j = arg(L, &a, 3, "index");
    if (!i) return luaL_argerror(L, 2, "missing required argument 'dim'");
    if (!j) return luaL_argerror(L, 3, "missing required argument 'index'");
    int dim = (int)int_arg(L, &a, i, "dim");
    nn_tensor *index = tensor_arg(L, &a, j, "index");
    lt_push_or_fail(L, nn_index_select(x, dim, index), argno(&a, j));
    return 1;
}

/* x:index_add_(dim, index, source, {alpha=}) in place; x:index_add(...) and torch.index_add
 * on a copy. Upvalue 1: true for the in-place form. */
static int f_index_add(lua_State *L)
{
    static const char *const keys[] = {"dim", "index", "source", "alpha", NULL};
    bool inplace = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    fargs a = begin(L, keys);
    no_more(L, &a, 5);
    nn_tensor *x = lt_check(L, 1);
    int i = arg(L, &a, 2, "dim"), j = arg(L, &a, 3, "index"), k = arg(L, &a, 4, "source");
    if (!i) return luaL_argerror(L, 2, "missing required argument 'dim'");
    if (!j) return luaL_argerror(L, 3, "missing required argument 'index'");
    if (!k) return luaL_argerror(L, 4, "missing required argument 'source'");
    int dim = (int)int_arg(L, &a, i, "dim");
    nn_tensor *index = tensor_arg(L, &a, j, "index"), *src = tensor_arg(L, &a, k, "source");
    double alpha = 1;
    int ai = arg(L, &a, 5, "alpha");
    if (ai) {
        if (lua_type(L, ai) != LUA_TNUMBER) return luaL_argerror(L, argno(&a, ai), "'alpha' must be a number");
        if (!nn_dtype_is_float(x->dtype) && !lua_isinteger(L, ai))
            return luaL_argerror(L, argno(&a, ai), "For integral input tensors, argument alpha must not be a floating point number.");
        alpha = lua_tonumber(L, ai);
    }
    if (inplace) {
        if (nn_index_add_(x, dim, index, src, alpha)) return lt_fail(L, argno(&a, k));
        lua_settop(L, 1);
        return 1;
    }
    nn_tensor *c = nn_clone(x);
    if (!c) return lt_fail(L, 1);
    if (nn_index_add_(c, dim, index, src, alpha)) {
        nn_release(c);
        return lt_fail(L, argno(&a, k));
    }
    lt_push(L, c);
    return 1;
}

/* embedding(weight, indices, padding_idx=-1), ATen's order: torch.embedding */
static int f_embedding(lua_State *L)
{
    static const char *const keys[] = {"padding_idx", "scale_grad_by_freq", "sparse", NULL};
    fargs a = begin(L, keys);
    no_more(L, &a, 5);
    nn_tensor *w = lt_check(L, 1), *idx = lt_check(L, 2);
    int i;
    int64_t padding_idx = (i = arg(L, &a, 3, "padding_idx")) ? int_arg(L, &a, i, "padding_idx") : -1;
    if ((i = arg(L, &a, 4, "scale_grad_by_freq")) && bool_arg(L, &a, i, "scale_grad_by_freq"))
        return luaL_argerror(L, argno(&a, i), "scale_grad_by_freq=true is not supported");
    if ((i = arg(L, &a, 5, "sparse")) && bool_arg(L, &a, i, "sparse")) return luaL_argerror(L, argno(&a, i), "sparse=true is not supported");
    if (padding_idx < -1 && w->ndim == 2) padding_idx += w->shape[0]; /* PyTorch wraps it before the op */
    lt_push_or_fail(L, nn_embedding(w, idx, padding_idx), 2);
    return 1;
}

/* masked_fill(mask, value) out of place and masked_fill_ in place (upvalue 1: in place):
 * value a number or a 0-dim tensor, mask a bool tensor broadcastable to self */
static int f_masked_fill(lua_State *L)
{
    bool inplace = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    nn_tensor *x = lt_check(L, 1), *mask = lt_check(L, 2);
    if (mask->dtype != NN_BOOL)
        return luaL_argerror(L, 2, lua_pushfstring(L, "masked_fill only supports boolean masks, but got mask with dtype %s", nn_dtype_name(mask->dtype)));
    if (!lt_is_operand(L, 3)) return luaL_typeerror(L, 3, "number or tensor");
    nn_tensor *v = lt_operand(L, 3);
    if (!v) return lt_fail(L, 3);
    if (v->ndim != 0) {
        nn_release(v);
        return luaL_argerror(L, 3, lua_pushfstring(L, "only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).", v->ndim));
    }
    char s1[160], s2[160];
    if (inplace) { /* the mask must broadcast to self's shape, not the other way round */
        int n;
        int64_t shape[NN_MAX_DIMS];
        if (nn_broadcast_shapes("masked_fill_", x->ndim, x->shape, mask->ndim, mask->shape, &n, shape) || n != x->ndim ||
            memcmp(shape, x->shape, sizeof(int64_t) * (size_t)n)) {
            nn_release(v);
            return luaL_argerror(L, 2, lua_pushfstring(L, "mask %s is not broadcastable to self %s", nn_shape_str(s1, mask->ndim, mask->shape),
                                                       nn_shape_str(s2, x->ndim, x->shape)));
        }
    }
    nn_tensor *vv = nn_to_dtype(v, x->dtype); /* masked_fill keeps self's dtype */
    nn_release(v);
    nn_tensor *r = vv ? nn_where(mask, vv, x) : NULL;
    nn_release(vv);
    if (!r) return lt_fail(L, 2);
    if (!inplace) {
        lt_push(L, r);
        return 1;
    }
    nn_status s = nn_copy_(x, r);
    nn_release(r);
    if (s) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

/* ---- erf, log1p: methods, in-place methods and torch functions ---- */

static int f_unary(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push_or_fail(L, nn_unary((nn_op)lua_tointeger(L, lua_upvalueindex(1)), t), 1);
    return 1;
}

static int f_unary_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (nn_unary_((nn_op)lua_tointeger(L, lua_upvalueindex(1)), t)) return lt_fail(L, 1);
    lua_settop(L, 1);
    return 1;
}

/* ---- registration ---- */

/* torch[name] (when in_torch) and torch.Tensor[name] (when in_methods) = f with an integer upvalue */
static void reg(lua_State *L, int torch, int methods, const char *name, lua_CFunction f, lua_Integer up, bool in_torch, bool in_methods)
{
    lua_pushinteger(L, up);
    lua_pushcclosure(L, f, 1);
    if (in_torch) {
        lua_pushvalue(L, -1);
        lua_setfield(L, torch, name);
    }
    if (in_methods) lua_setfield(L, methods, name);
    else lua_pop(L, 1);
}

void lt_open_nnfunc(lua_State *L)
{
    int torch = lua_gettop(L);
    lua_getfield(L, torch, "Tensor");
    int methods = lua_gettop(L);
    static const struct { const char *name; lua_CFunction f; } fns[] = {
        {"conv2d", f_conv2d}, {"_conv2d_backward_input", f_conv2d_backward_input},
        {"_conv2d_backward_weight", f_conv2d_backward_weight}, {"max_pool2d", f_max_pool2d}, {"max_pool2d_with_indices", f_max_pool2d_with_indices},
        {"avg_pool2d", f_avg_pool2d}, {"adaptive_avg_pool2d", f_adaptive_avg_pool2d},
        {"adaptive_max_pool2d", f_adaptive_max_pool2d}, {"nll_loss", f_nll_loss}, {"_cross_entropy_loss", f_cross_entropy_loss}, {"linear", f_linear},
        {"embedding", f_embedding}, {"_layer_norm", f_layer_norm}, {"_dropout", f_dropout},
    };
    for (size_t k = 0; k < sizeof fns / sizeof *fns; k++) reg(L, torch, methods, fns[k].name, fns[k].f, 0, true, false);
    reg(L, torch, methods, "batch_norm", f_batch_norm, 0, true, false);
    reg(L, torch, methods, "_pointwise_loss", f_pointwise_loss, 0, true, false);
    reg(L, torch, methods, "_pointwise_loss_backward", f_pointwise_loss, 1, true, false);
    reg(L, torch, methods, "_activation", f_activation, 0, true, false);
    reg(L, torch, methods, "_activation_backward", f_activation, 1, true, false);
    reg(L, torch, methods, "_activation_node", f_activation_node, 0, true, false);
    reg(L, torch, methods, "_activation_set_grad", f_activation_set_grad, 0, true, false);
    reg(L, torch, methods, "softmax", f_softmax, 0, true, true);
    reg(L, torch, methods, "log_softmax", f_softmax, 1, true, true);
    reg(L, torch, methods, "index_select", f_index_select, 0, true, true);
    reg(L, torch, methods, "index_add", f_index_add, 0, true, true);
    reg(L, torch, methods, "index_add_", f_index_add, 1, false, true);
    reg(L, torch, methods, "masked_fill", f_masked_fill, 0, true, true);
    reg(L, torch, methods, "masked_fill_", f_masked_fill, 1, false, true);
    static const struct { const char *name; nn_op op; } unary[] = {{"erf", NN_OP_erf}, {"log1p", NN_OP_log1p}};
    for (size_t k = 0; k < sizeof unary / sizeof *unary; k++) {
        reg(L, torch, methods, unary[k].name, f_unary, unary[k].op, true, true);
        lua_pushfstring(L, "%s_", unary[k].name);
        reg(L, torch, methods, lua_tostring(L, -1), f_unary_, unary[k].op, true, true);
        lua_pop(L, 1);
    }
    lua_settop(L, torch);
}
