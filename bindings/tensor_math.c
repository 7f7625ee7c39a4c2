/* Tensor methods (and their torch.xxx twins) for elementwise ops, in-place ops,
 * reductions and matrix products. Each generic method carries its op as an
 * upvalue. */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "lt.h"

static const char *const no_keys[] = {NULL};

static nn_op upvalue_op(lua_State *L)
{
    return (nn_op)lua_tointeger(L, lua_upvalueindex(1));
}

/* Hold two operands at args i, j (new references); type errors come before allocation. */
static void operands(lua_State *L, int i, int j, nn_tensor **a, nn_tensor **b)
{
    if (!lt_is_operand(L, i)) luaL_typeerror(L, i, "tensor or number");
    if (!lt_is_operand(L, j)) luaL_typeerror(L, j, "tensor or number");
    *a = lt_operand(L, i);
    if (!*a) lt_fail(L, 0);
    *b = lt_operand(L, j);
    if (!*b) {
        nn_release(*a);
        lt_fail(L, 0);
    }
}

/* alpha of add/sub: a number at arg 3 or {alpha=} */
static double read_alpha(lua_State *L, nn_op op)
{
    static const char *const keys[] = {"alpha", NULL};
    int last = lt_last_positional(L);
    lt_check_opts(L, last + 1, (op == NN_OP_add || op == NN_OP_sub) ? keys : no_keys);
    double alpha = 1;
    if (last >= 3) {
        if (op != NN_OP_add && op != NN_OP_sub) luaL_argerror(L, 3, "unexpected argument");
        alpha = luaL_checknumber(L, 3);
    }
    return lt_opt_number(L, last + 1, "alpha", alpha);
}

/* ---- elementwise ---- */

static int m_binary(lua_State *L)
{
    nn_op op = upvalue_op(L);
    double alpha = read_alpha(L, op);
    nn_tensor *a, *b, *r;
    operands(L, 1, 2, &a, &b);
    if (alpha != 1) r = nn_add_alpha(a, b, op == NN_OP_sub ? -alpha : alpha);
    else r = lt_binary(op, a, b);
    nn_release(a);
    nn_release(b);
    lt_push_or_fail(L, r, 2);
    return 1;
}

static int m_binary_(lua_State *L)
{
    nn_op op = upvalue_op(L);
    nn_tensor *t = lt_check(L, 1);
    double alpha = read_alpha(L, op);
    if (!lt_is_operand(L, 2)) return luaL_typeerror(L, 2, "tensor or number");
    nn_tensor *b = lt_operand(L, 2);
    if (!b) return lt_fail(L, 0);
    nn_status s = alpha != 1 ? nn_add_alpha_(t, b, op == NN_OP_sub ? -alpha : alpha) : nn_binary_(op, t, b);
    nn_release(b);
    if (s || nn_take_deferred_error()) return lt_fail(L, 2); /* deferred: b an inference tensor autograd must keep */
    lua_settop(L, 1);
    return 1;
}

static int m_unary(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push_or_fail(L, nn_unary(upvalue_op(L), t), 1);
    return 1;
}

static int m_unary_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (nn_unary_(upvalue_op(L), t)) return lt_fail(L, 1);
    lua_settop(L, 1);
    return 1;
}

/* clamp(min, max) with either nil, or clamp({min=, max=}) */
static void read_clamp(lua_State *L, bool *has_min, double *min, bool *has_max, double *max)
{
    static const char *const keys[] = {"min", "max", NULL};
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    *has_min = last >= 2 && !lua_isnil(L, 2);
    *has_max = last >= 3 && !lua_isnil(L, 3);
    if (*has_min) *min = luaL_checknumber(L, 2);
    if (*has_max) *max = luaL_checknumber(L, 3);
    if (lt_opt(L, o, "min") != LUA_TNIL) *has_min = true, *min = luaL_checknumber(L, -1);
    if (lt_opt(L, o, "max") != LUA_TNIL) *has_max = true, *max = luaL_checknumber(L, -1);
}

static int m_clamp(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    bool hmin, hmax;
    double min = 0, max = 0;
    read_clamp(L, &hmin, &min, &hmax, &max);
    lt_push_or_fail(L, nn_clamp(t, hmin, min, hmax, max), 2);
    return 1;
}

static int m_clamp_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    bool hmin, hmax;
    double min = 0, max = 0;
    read_clamp(L, &hmin, &min, &hmax, &max);
    if (nn_clamp_(t, hmin, min, hmax, max)) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

/* x:where(cond, y) = torch.where(cond, x, y) */
static nn_tensor *where3(lua_State *L, int ci, int ai, int bi)
{
    nn_tensor *cond = lt_check(L, ci), *a, *b;
    operands(L, ai, bi, &a, &b);
    nn_tensor *r = nn_where(cond, a, b);
    nn_release(a);
    nn_release(b);
    return r;
}

static int m_where(lua_State *L)
{
    lt_push_or_fail(L, where3(L, 2, 1, 3), 3);
    return 1;
}

static int torch_where(lua_State *L)
{
    lt_push_or_fail(L, where3(L, 1, 2, 3), 3);
    return 1;
}

/* ---- in-place fills ---- */

static int m_fill_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    nn_status s;
    if (lua_type(L, 2) == LUA_TNUMBER && (!lua_isinteger(L, 2) || llabs(lua_tointeger(L, 2)) < (1LL << 53)))
        s = nn_fill_(t, lua_tonumber(L, 2));
    else {
        if (!lt_is_operand(L, 2)) return luaL_typeerror(L, 2, "number");
        nn_tensor *v = lt_operand(L, 2);
        s = v ? nn_copy_(t, v) : nn_last_status();
        nn_release(v);
    }
    if (s) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

static int m_zero_(lua_State *L)
{
    if (nn_zero_(lt_check(L, 1))) return lt_fail(L, 1);
    lua_settop(L, 1);
    return 1;
}

static int m_copy_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *src = lt_check(L, 2);
    static const char *const keys[] = {"non_blocking", NULL};
    lt_check_opts(L, lt_last_positional(L) + 1, keys);
    if (nn_copy_(t, src)) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

/* uniform_(from, to) / normal_(mean, std), positional or by name */
static void two_numbers(lua_State *L, const char *k1, double *v1, const char *k2, double *v2)
{
    const char *keys[] = {k1, k2, "generator", NULL};
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    if (last >= 2) *v1 = luaL_checknumber(L, 2);
    if (last >= 3) *v2 = luaL_checknumber(L, 3);
    *v1 = lt_opt_number(L, o, k1, *v1);
    *v2 = lt_opt_number(L, o, k2, *v2);
}

static int m_uniform_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    double lo = 0, hi = 1;
    two_numbers(L, "from", &lo, "to", &hi);
    nn_generator *g = lt_opt_generator(L, lt_last_positional(L) + 1), *prev = lt_generator_begin(g);
    nn_status st = nn_uniform_(t, lo, hi);
    lt_generator_end(g, prev);
    if (st) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

/* t:_dropout_noise_(keep): dropout's noise, 1 / keep with probability keep, else 0 (F.dropout) */
static int m_dropout_noise_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    if (nn_dropout_noise_(t, luaL_checknumber(L, 2))) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

static int m_normal_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    double mean = 0, std = 1;
    two_numbers(L, "mean", &mean, "std", &std);
    nn_generator *g = lt_opt_generator(L, lt_last_positional(L) + 1), *prev = lt_generator_begin(g);
    nn_status st = nn_normal_(t, mean, std);
    lt_generator_end(g, prev);
    if (st) return lt_fail(L, 2);
    lua_settop(L, 1);
    return 1;
}

/* ---- reductions ---- */

typedef struct {
    bool has_dim;
    uint32_t mask; /* dims, for multi-dim reductions */
    int dim;       /* the dim, for one-dim reductions */
    bool keepdim;
    int opts;      /* index of the keyword table (or of none) */
} red_args;

/* (dim?, keepdim?, {dim=, keepdim=, ...}) starting at arg `first`; single: one dim only. */
static void read_red(lua_State *L, nn_tensor *t, int first, bool single, const char *const *keys, red_args *r)
{
    int last = lt_last_positional(L);
    r->opts = last + 1;
    lt_check_opts(L, r->opts, keys);
    r->has_dim = false, r->mask = 0, r->dim = NN_NO_DIM, r->keepdim = false;
    int dim_at = 0;
    if (first <= last && !lua_isnil(L, first)) dim_at = first;
    else if (lt_opt(L, r->opts, "dim") != LUA_TNIL) dim_at = lua_gettop(L);
    if (dim_at) {
        if (single && lua_type(L, dim_at) == LUA_TTABLE) luaL_argerror(L, dim_at, "one dim expected, got a table");
        r->has_dim = true;
        if (single) r->dim = lt_check_dim(L, dim_at, t->ndim);
        else r->mask = lt_dim_mask(L, dim_at, t->ndim);
    }
    if (first + 1 <= last) {
        luaL_checktype(L, first + 1, LUA_TBOOLEAN);
        r->keepdim = lua_toboolean(L, first + 1);
    }
    if (first + 2 <= last) luaL_argerror(L, first + 2, "unexpected argument");
    r->keepdim = lt_opt_bool(L, r->opts, "keepdim", r->keepdim);
}

/* sum mean prod amax amin all any */
static int m_reduce(lua_State *L)
{
    static const char *const keys[] = {"dim", "keepdim", "dtype", NULL};
    nn_op op = upvalue_op(L);
    nn_tensor *t = lt_check(L, 1);
    red_args r;
    read_red(L, t, 2, false, keys, &r);
    nn_dtype dt = lt_opt_dtype(L, r.opts, NN_DTYPE_NONE);
    nn_tensor *out;
    if (dt != NN_DTYPE_NONE && op == NN_OP_sum) out = nn_sum_dtype(t, r.mask, r.keepdim, dt);
    else if (dt != NN_DTYPE_NONE) {
        nn_tensor *c = nn_to_dtype(t, dt);
        out = c ? nn_reduce(op, c, r.mask, r.keepdim) : NULL;
        nn_release(c);
    } else out = nn_reduce(op, t, r.mask, r.keepdim);
    lt_push_or_fail(L, out, 2);
    return 1;
}

/* max() / max(dim, keepdim) -> values, indices / max(other) = maximum; the same for min */
static int m_maxmin(lua_State *L)
{
    static const char *const keys[] = {"dim", "keepdim", NULL};
    bool is_max = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    nn_tensor *t = lt_check(L, 1);
    if (lt_is_tensor(L, 2)) {
        nn_tensor *o = lt_check(L, 2);
        lt_push_or_fail(L, nn_binary(is_max ? NN_OP_maximum : NN_OP_minimum, t, o), 2);
        return 1;
    }
    red_args r;
    read_red(L, t, 2, true, keys, &r);
    if (!r.has_dim) {
        lt_push_or_fail(L, is_max ? nn_max(t) : nn_min(t), 1);
        return 1;
    }
    nn_tensor *v = NULL, *i = NULL;
    nn_status s = (is_max ? nn_max_dim : nn_min_dim)(t, r.dim, r.keepdim, &v, &i);
    if (s) return lt_fail(L, 2);
    lt_push(L, v);
    lt_push(L, i);
    return 2;
}

static int m_argmaxmin(lua_State *L)
{
    static const char *const keys[] = {"dim", "keepdim", NULL};
    bool is_max = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    nn_tensor *t = lt_check(L, 1);
    red_args r;
    read_red(L, t, 2, true, keys, &r);
    lt_push_or_fail(L, (is_max ? nn_argmax : nn_argmin)(t, r.dim, r.keepdim), 2);
    return 1;
}

/* var/std(dim?, unbiased?, keepdim?, {dim=, unbiased=, correction=, keepdim=}); var(false) too */
static int m_varstd(lua_State *L)
{
    static const char *const keys[] = {"dim", "unbiased", "correction", "keepdim", NULL};
    bool is_std = lua_tointeger(L, lua_upvalueindex(1)) != 0;
    nn_tensor *t = lt_check(L, 1);
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    double correction = 1;
    uint32_t mask = 0;
    bool keepdim = false;
    int pos = 2;
    if (pos <= last && lua_type(L, pos) == LUA_TBOOLEAN) correction = lua_toboolean(L, pos++) ? 1 : 0;
    else {
        if (pos <= last && !lua_isnil(L, pos)) mask = lt_dim_mask(L, pos, t->ndim);
        pos++;
        if (pos <= last) {
            luaL_checktype(L, pos, LUA_TBOOLEAN);
            correction = lua_toboolean(L, pos++) ? 1 : 0;
        }
        if (pos <= last) {
            luaL_checktype(L, pos, LUA_TBOOLEAN);
            keepdim = lua_toboolean(L, pos++);
        }
    }
    if (pos <= last) return luaL_argerror(L, pos, "unexpected argument");
    if (lt_opt(L, o, "dim") != LUA_TNIL) mask = lt_dim_mask(L, lua_gettop(L), t->ndim);
    if (lt_opt(L, o, "unbiased") != LUA_TNIL) correction = lt_opt_bool(L, o, "unbiased", 1) ? 1 : 0;
    correction = lt_opt_number(L, o, "correction", correction);
    keepdim = lt_opt_bool(L, o, "keepdim", keepdim);
    lt_push_or_fail(L, (is_std ? nn_std : nn_var)(t, mask, correction, keepdim), 2);
    return 1;
}

/* norm(p=2, dim?, keepdim?, {p=, dim=, keepdim=}); p may be "fro" or math.huge */
static int m_norm(lua_State *L)
{
    static const char *const keys[] = {"p", "dim", "keepdim", NULL};
    nn_tensor *t = lt_check(L, 1);
    int last = lt_last_positional(L), o = last + 1;
    lt_check_opts(L, o, keys);
    double p = 2;
    int p_at = last >= 2 && !lua_isnil(L, 2) ? 2 : 0;
    if (!p_at && lt_opt(L, o, "p") != LUA_TNIL) p_at = lua_gettop(L);
    if (p_at) {
        if (lua_type(L, p_at) == LUA_TSTRING) {
            if (strcmp(lua_tostring(L, p_at), "fro")) return luaL_argerror(L, p_at, "only p='fro' or a number is supported");
        } else p = luaL_checknumber(L, p_at);
    }
    uint32_t mask = 0;
    if (last >= 3 && !lua_isnil(L, 3)) mask = lt_dim_mask(L, 3, t->ndim);
    else if (lt_opt(L, o, "dim") != LUA_TNIL) mask = lt_dim_mask(L, lua_gettop(L), t->ndim);
    bool keepdim = false;
    if (last >= 4) {
        luaL_checktype(L, 4, LUA_TBOOLEAN);
        keepdim = lua_toboolean(L, 4);
    }
    keepdim = lt_opt_bool(L, o, "keepdim", keepdim);
    lt_push_or_fail(L, nn_norm(t, p, mask, keepdim), 2);
    return 1;
}

/* ---- matrix products ---- */

static const struct { const char *name; nn_tensor *(*f)(nn_tensor *, nn_tensor *); } products[] = {
    {"mm", nn_mm}, {"bmm", nn_bmm}, {"matmul", nn_matmul}, {"dot", nn_dot}, {"outer", nn_outer}, {"ger", nn_outer},
};

static int m_product(lua_State *L)
{
    lua_Integer k = lua_tointeger(L, lua_upvalueindex(1));
    nn_tensor *a = lt_check(L, 1), *b = lt_check(L, 2);
    lt_push_or_fail(L, products[k].f(a, b), 2);
    return 1;
}

static int m_addmm(lua_State *L)
{
    static const char *const keys[] = {"beta", "alpha", NULL};
    nn_tensor *bias = lt_check(L, 1), *a = lt_check(L, 2), *b = lt_check(L, 3);
    int o = lt_last_positional(L) + 1;
    lt_check_opts(L, o, keys);
    double beta = lt_opt_number(L, o, "beta", 1), alpha = lt_opt_number(L, o, "alpha", 1);
    lt_push_or_fail(L, nn_addmm(bias, a, b, beta, alpha), 3);
    return 1;
}

/* ---- registration ---- */

/* Set torch.Tensor[name] and torch[name] to f with an integer upvalue. */
static void reg(lua_State *L, int torch, int methods, const char *name, lua_CFunction f, lua_Integer up, bool in_torch)
{
    lua_pushinteger(L, up);
    lua_pushcclosure(L, f, 1);
    if (in_torch) {
        lua_pushvalue(L, -1);
        lua_setfield(L, torch, name);
    }
    lua_setfield(L, methods, name);
}

void lt_open_math(lua_State *L)
{
    int torch = lua_gettop(L);
    lua_getfield(L, torch, "Tensor");
    int methods = lua_gettop(L);
    static const struct { const char *name; nn_op op; bool inplace; } binary[] = {
        {"add", NN_OP_add, true}, {"sub", NN_OP_sub, true}, {"mul", NN_OP_mul, true}, {"div", NN_OP_div, true},
        {"pow", NN_OP_pow, true}, {"remainder", NN_OP_remainder, true}, {"fmod", NN_OP_fmod, true}, {"maximum", NN_OP_maximum, false},
        {"minimum", NN_OP_minimum, false}, {"eq", NN_OP_eq, true}, {"ne", NN_OP_ne, true}, {"lt", NN_OP_lt, true},
        {"le", NN_OP_le, true}, {"gt", NN_OP_gt, true}, {"ge", NN_OP_ge, true},
        {"logical_and", NN_OP_logical_and, true}, {"logical_or", NN_OP_logical_or, true},
        {"subtract", NN_OP_sub, true}, {"multiply", NN_OP_mul, true}, {"divide", NN_OP_div, true},
        {"true_divide", NN_OP_div, true}, {"greater", NN_OP_gt, false}, {"less", NN_OP_lt, false},
        {"greater_equal", NN_OP_ge, false}, {"less_equal", NN_OP_le, false}, {"not_equal", NN_OP_ne, false},
        {"bitwise_and", NN_OP_bitwise_and, true}, {"bitwise_or", NN_OP_bitwise_or, true},
        {"bitwise_xor", NN_OP_bitwise_xor, true}, {"bitwise_left_shift", NN_OP_bitwise_left_shift, true},
        {"bitwise_right_shift", NN_OP_bitwise_right_shift, true}, {"fmax", NN_OP_fmax, false},
        {"fmin", NN_OP_fmin, false}, {"nextafter", NN_OP_nextafter, true}, {"atan2", NN_OP_atan2, true},
        {"arctan2", NN_OP_atan2, true},
    };
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) {
        reg(L, torch, methods, binary[i].name, m_binary, binary[i].op, true);
        if (binary[i].inplace) {
            lua_pushfstring(L, "%s_", binary[i].name);
            reg(L, torch, methods, lua_tostring(L, -1), m_binary_, binary[i].op, false);
            lua_pop(L, 1);
        }
    }
    static const struct { const char *name; nn_op op; } unary[] = {
        {"neg", NN_OP_neg}, {"negative", NN_OP_neg}, {"exp", NN_OP_exp}, {"log", NN_OP_log},
        {"sqrt", NN_OP_sqrt}, {"rsqrt", NN_OP_rsqrt}, {"abs", NN_OP_abs}, {"sign", NN_OP_sign},
        {"sigmoid", NN_OP_sigmoid}, {"tanh", NN_OP_tanh}, {"relu", NN_OP_relu},
        {"logical_not", NN_OP_logical_not}, {"sin", NN_OP_sin}, {"cos", NN_OP_cos}, {"tan", NN_OP_tan},
        {"asin", NN_OP_asin}, {"arcsin", NN_OP_asin}, {"acos", NN_OP_acos}, {"arccos", NN_OP_acos}, {"atan", NN_OP_atan},
        {"arctan", NN_OP_atan}, {"sinh", NN_OP_sinh}, {"cosh", NN_OP_cosh}, {"expm1", NN_OP_expm1}, {"exp2", NN_OP_exp2},
        {"log2", NN_OP_log2}, {"log10", NN_OP_log10}, {"reciprocal", NN_OP_reciprocal}, {"erfc", NN_OP_erfc},
        {"frac", NN_OP_frac}, {"floor", NN_OP_floor}, {"ceil", NN_OP_ceil}, {"round", NN_OP_round},
        {"trunc", NN_OP_trunc}, {"fix", NN_OP_trunc}, {"asinh", NN_OP_asinh}, {"arcsinh", NN_OP_asinh},
        {"acosh", NN_OP_acosh}, {"arccosh", NN_OP_acosh}, {"atanh", NN_OP_atanh}, {"arctanh", NN_OP_atanh},
        {"bitwise_not", NN_OP_bitwise_not},
    };
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) {
        reg(L, torch, methods, unary[i].name, m_unary, unary[i].op, true);
        lua_pushfstring(L, "%s_", unary[i].name);
        reg(L, torch, methods, lua_tostring(L, -1), m_unary_, unary[i].op, false);
        lua_pop(L, 1);
    }
    static const struct { const char *name; nn_op op; } reductions[] = {
        {"sum", NN_OP_sum}, {"mean", NN_OP_mean}, {"prod", NN_OP_prod}, {"amax", NN_OP_amax},
        {"amin", NN_OP_amin}, {"all", NN_OP_all}, {"any", NN_OP_any},
    };
    for (size_t i = 0; i < sizeof reductions / sizeof *reductions; i++)
        reg(L, torch, methods, reductions[i].name, m_reduce, reductions[i].op, true);
    reg(L, torch, methods, "max", m_maxmin, 1, true);
    reg(L, torch, methods, "min", m_maxmin, 0, true);
    reg(L, torch, methods, "argmax", m_argmaxmin, 1, true);
    reg(L, torch, methods, "argmin", m_argmaxmin, 0, true);
    reg(L, torch, methods, "var", m_varstd, 0, true);
    reg(L, torch, methods, "std", m_varstd, 1, true);

    for (size_t i = 0; i < sizeof products / sizeof *products; i++)
        reg(L, torch, methods, products[i].name, m_product, (lua_Integer)i, true);

    static const luaL_Reg both[] = {
        {"clamp", m_clamp}, {"clip", m_clamp}, {"norm", m_norm}, {"addmm", m_addmm}, {NULL, NULL},
    };
    static const luaL_Reg only_methods[] = {
        {"clamp_", m_clamp_}, {"clip_", m_clamp_}, {"where", m_where}, {"fill_", m_fill_}, {"zero_", m_zero_},
        {"copy_", m_copy_}, {"uniform_", m_uniform_}, {"normal_", m_normal_}, {"_dropout_noise_", m_dropout_noise_}, {NULL, NULL},
    };
    luaL_setfuncs(L, only_methods, 0);
    luaL_setfuncs(L, both, 0);
    lua_pushvalue(L, torch);
    luaL_setfuncs(L, both, 0);
    lua_pushcfunction(L, torch_where);
    lua_setfield(L, torch, "where");
    lua_settop(L, torch);
}
