/* torch._optim: the C half of torch.optim (bindings/lua/torch_optim.lua is the rest).
 *
 *   _optim.sgd_step(group, state, [found_inf, [grad_scale]])  one fused update of a group:
 *   _optim.adam_step(group, state, decoupled, [found_inf, [grad_scale]])  the params are
 *   _optim.rmsprop_step(group, state, [found_inf, [grad_scale]])  group.params, the
 *   _optim.adagrad_step(group, state, [found_inf, [grad_scale]])  hyperparameters its
 *                                                  fields; state[param] the param's state
 *                                      table (created when the param first gets
 *                                      an update), holding PyTorch's names (step,
 *                                      exp_avg, ...). Params whose .grad is nil are skipped.
 *   _optim.zero_grad(params, set_to_none)
 *   _optim.state_like(param, value)    a state tensor like param, filled with value
 *   _optim.step_counter(value)         a 0-dim step tensor
 *   _optim.id(tensor)                  a light userdata naming the tensor (not the Lua object)
 *   _optim.total_norm(tensors, p)      torch.nn.utils' clipping: the p-norm of the tensors' norms,
 *   _optim.grad_total_norm(params, p)  or of the params' gradients (nothing when none has one);
 *   _optim.mul_grads_(params, coef)    the gradients times a one-element tensor, or clamped
 *   _optim.clamp_grads_(params, v)     to [-v, v] (params without a gradient are skipped)
 *
 * Updates run with grad mode off. Integer param ids (state_dict) are the Lua half's business. */
#include <string.h>

#include "autograd.h"
#include "lt.h"
#include "optim.h"

#define MAX_STATE 4

typedef struct {
    int nstate;
    const char *names[MAX_STATE]; /* state tensor names, in the engine's argument order */
    bool step_state;              /* the last name is the step counter */
} algo;

static const algo SGD = {1, {"momentum_buffer"}, false};
static const algo ADAM = {4, {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"}, true};
static const algo RMSPROP = {4, {"square_avg", "momentum_buffer", "grad_avg", "step"}, true};
static const algo ADAGRAD = {2, {"sum", "step"}, true};

/* A number field of the group (a one-element tensor is read as its value). */
static double group_num(lua_State *L, int group, const char *name, double def)
{
    int t = lua_getfield(L, group, name);
    double v = def;
    if (t == LUA_TNUMBER) v = lua_tonumber(L, -1);
    else if (t != LUA_TNIL) {
        nn_tensor *x = lt_totensor(L, -1);
        if (!x || nn_numel(x) != 1 || x->storage->device.type != NN_CPU)
            luaL_error(L, "param group's '%s' must be a number, got %s", name, luaL_typename(L, -1));
        int64_t zero[NN_MAX_DIMS] = {0};
        v = nn_get_f64(x, zero);
    }
    lua_pop(L, 1);
    return v;
}

static bool group_bool(lua_State *L, int group, const char *name)
{
    lua_getfield(L, group, name);
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* betas = {beta1, beta2} */
static void group_betas(lua_State *L, int group, double *b1, double *b2)
{
    if (lua_getfield(L, group, "betas") != LUA_TTABLE) luaL_error(L, "param group's 'betas' must be a list of two numbers");
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    if (!lua_isnumber(L, -2) || !lua_isnumber(L, -1)) luaL_error(L, "param group's 'betas' must be a list of two numbers");
    *b1 = lua_tonumber(L, -2);
    *b2 = lua_tonumber(L, -1);
    lua_pop(L, 3);
}

/* The lists for one group: n params, their grads and state (all borrowed), plus which
 * state entries were missing before the engine ran. */
typedef struct {
    int n;
    nn_tensor **p, **g, **st[MAX_STATE];
    bool *missing[MAX_STATE];
} lists;

/* Gather group.params (at stack index `params`), their grads and the state tensors named by
 * `al` from state[param]; `used[r]` says which state lists the update needs. The arrays live
 * in a userdata pushed on the stack. State tables are created for params with a gradient. */
static void gather(lua_State *L, int params, int state, const algo *al, const bool *used, lists *ls)
{
    int n = (int)lua_rawlen(L, params);
    size_t per = sizeof(nn_tensor *) * (2 + MAX_STATE) + sizeof(bool) * MAX_STATE;
    char *mem = lua_newuserdatauv(L, per * (size_t)(n ? n : 1), 0);
    memset(mem, 0, per * (size_t)(n ? n : 1));
    ls->n = n;
    ls->p = (nn_tensor **)mem;
    ls->g = ls->p + n;
    for (int r = 0; r < MAX_STATE; r++) ls->st[r] = ls->g + n + (size_t)r * n;
    bool *b = (bool *)(ls->g + n + (size_t)MAX_STATE * n);
    for (int r = 0; r < MAX_STATE; r++) ls->missing[r] = b + (size_t)r * n;
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, params, k + 1);
        nn_tensor *p = lt_totensor(L, -1);
        if (!p) luaL_error(L, "optimizer can only optimize Tensors, but one of the params is %s", luaL_typename(L, -1));
        ls->p[k] = p;
        ls->g[k] = p->grad;
        bool any = false;
        for (int r = 0; r < al->nstate; r++) any |= used[r];
        if (!p->grad || !any) { /* plain SGD keeps no state */
            lua_pop(L, 1);
            continue;
        }
        lua_pushvalue(L, -1);
        if (lua_rawget(L, state) != LUA_TTABLE) { /* state[p] = {} */
            lua_pop(L, 1);
            lua_newtable(L);
            lua_pushvalue(L, -2);
            lua_pushvalue(L, -2);
            lua_rawset(L, state);
        }
        for (int r = 0; r < al->nstate; r++) {
            if (!used[r]) continue;
            lua_getfield(L, -1, al->names[r]);
            nn_tensor *s = lua_isnil(L, -1) ? NULL : lt_totensor(L, -1);
            if (!s && !lua_isnil(L, -1))
                luaL_error(L, "optimizer state '%s' must be a tensor, got %s", al->names[r], luaL_typename(L, -1));
            ls->st[r][k] = s; /* borrowed: the state table holds it */
            ls->missing[r][k] = !s;
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
    }
}

/* After the engine ran: store the state tensors it created into state[param] (or release them
 * when the update failed). */
static void store_created(lua_State *L, int params, int state, const algo *al, const lists *ls, bool ok)
{
    for (int k = 0; k < ls->n; k++) {
        if (!ls->g[k]) continue;
        bool any = false;
        for (int r = 0; r < al->nstate; r++) any |= ls->missing[r][k] && ls->st[r][k];
        if (!any) continue;
        if (!ok) {
            for (int r = 0; r < al->nstate; r++)
                if (ls->missing[r][k]) nn_release(ls->st[r][k]);
            continue;
        }
        lua_rawgeti(L, params, k + 1);
        lua_rawget(L, state);
        for (int r = 0; r < al->nstate; r++) {
            if (!ls->missing[r][k] || !ls->st[r][k]) continue;
            lt_push(L, ls->st[r][k]);
            lua_setfield(L, -2, al->names[r]);
        }
        lua_pop(L, 1);
    }
}

/* Common frame: args (group, state); fn reads the options (which may raise) and runs the
 * update with grad mode off; then the new state is stored. */
typedef nn_status (*step_fn)(lua_State *L, int group, lists *ls);

/* GradScaler's found_inf or grad_scale (engine/optim.h), or nothing */
static const nn_tensor *found_inf_arg(lua_State *L, int i) { return lua_isnoneornil(L, i) ? NULL : lt_check(L, i); }

static bool grad_off(void)
{
    bool prev = nn_grad_enabled();
    nn_set_grad_enabled(false);
    return prev;
}

static int run(lua_State *L, const algo *al, const bool *used, step_fn fn)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 1, "params") != LUA_TTABLE) return luaL_error(L, "param group has no 'params' list");
    int params = lua_gettop(L);
    lists ls;
    gather(L, params, 2, al, used, &ls);
    nn_status s = fn(L, 1, &ls);
    store_created(L, params, 2, al, &ls, s == NN_OK);
    if (s) return lt_fail(L, 0);
    return 0;
}

static nn_status sgd(lua_State *L, int group, lists *ls)
{
    nn_sgd_opts o = {
        .lr = group_num(L, group, "lr", 1e-3), .momentum = group_num(L, group, "momentum", 0),
        .dampening = group_num(L, group, "dampening", 0), .weight_decay = group_num(L, group, "weight_decay", 0),
        .nesterov = group_bool(L, group, "nesterov"), .maximize = group_bool(L, group, "maximize"),
        .found_inf = found_inf_arg(L, 3), .grad_scale = found_inf_arg(L, 4),
    };
    bool prev = grad_off();
    nn_status s = nn_sgd_step(ls->n, ls->p, ls->g, ls->st[0], &o);
    nn_set_grad_enabled(prev);
    return s;
}

static int l_sgd_step(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bool used[MAX_STATE] = {group_num(L, 1, "momentum", 0) != 0};
    return run(L, &SGD, used, sgd);
}

static nn_status adam(lua_State *L, int group, lists *ls)
{
    nn_adam_opts o = {
        .lr = group_num(L, group, "lr", 1e-3), .eps = group_num(L, group, "eps", 1e-8),
        .weight_decay = group_num(L, group, "weight_decay", 0), .amsgrad = group_bool(L, group, "amsgrad"),
        .maximize = group_bool(L, group, "maximize"),
        .decoupled = lua_toboolean(L, 3) || group_bool(L, group, "decoupled_weight_decay"),
        .found_inf = found_inf_arg(L, 4), .grad_scale = found_inf_arg(L, 5),
    };
    group_betas(L, group, &o.beta1, &o.beta2);
    bool prev = grad_off();
    nn_status s = nn_adam_step(ls->n, ls->p, ls->g, ls->st[0], ls->st[1], ls->st[2], ls->st[3], &o);
    nn_set_grad_enabled(prev);
    return s;
}

static int l_adam_step(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bool used[MAX_STATE] = {true, true, group_bool(L, 1, "amsgrad"), true};
    return run(L, &ADAM, used, adam);
}

static nn_status rmsprop(lua_State *L, int group, lists *ls)
{
    nn_rmsprop_opts o = {
        .lr = group_num(L, group, "lr", 1e-2), .alpha = group_num(L, group, "alpha", 0.99),
        .eps = group_num(L, group, "eps", 1e-8), .weight_decay = group_num(L, group, "weight_decay", 0),
        .momentum = group_num(L, group, "momentum", 0), .centered = group_bool(L, group, "centered"),
        .maximize = group_bool(L, group, "maximize"), .found_inf = found_inf_arg(L, 3), .grad_scale = found_inf_arg(L, 4),
    };
    bool prev = grad_off();
    nn_status s = nn_rmsprop_step(ls->n, ls->p, ls->g, ls->st[0], ls->st[1], ls->st[2], ls->st[3], &o);
    nn_set_grad_enabled(prev);
    return s;
}

static int l_rmsprop_step(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bool used[MAX_STATE] = {true, group_num(L, 1, "momentum", 0) > 0, group_bool(L, 1, "centered"), true};
    return run(L, &RMSPROP, used, rmsprop);
}

static nn_status adagrad(lua_State *L, int group, lists *ls)
{
    nn_adagrad_opts o = {
        .lr = group_num(L, group, "lr", 1e-2), .lr_decay = group_num(L, group, "lr_decay", 0),
        .weight_decay = group_num(L, group, "weight_decay", 0), .eps = group_num(L, group, "eps", 1e-10),
        .initial_accumulator_value = group_num(L, group, "initial_accumulator_value", 0),
        .maximize = group_bool(L, group, "maximize"), .found_inf = found_inf_arg(L, 3), .grad_scale = found_inf_arg(L, 4),
    };
    bool prev = grad_off();
    nn_status s = nn_adagrad_step(ls->n, ls->p, ls->g, ls->st[0], ls->st[1], &o);
    nn_set_grad_enabled(prev);
    return s;
}

static int l_adagrad_step(lua_State *L)
{
    bool used[MAX_STATE] = {true, true};
    return run(L, &ADAGRAD, used, adagrad);
}

/* zero_grad(params, set_to_none): PyTorch's Optimizer.zero_grad for one group */
static int l_zero_grad(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    bool to_none = lua_isnone(L, 2) || lua_toboolean(L, 2);
    int n = (int)lua_rawlen(L, 1);
    for (int k = 1; k <= n; k++) {
        lua_rawgeti(L, 1, k);
        nn_tensor *p = lt_totensor(L, -1);
        lua_pop(L, 1);
        if (!p || !p->grad) continue;
        if (to_none) {
            nn_tensor *g = p->grad;
            p->grad = NULL;
            nn_release(g);
            continue;
        }
        nn_tensor *g = p->grad;
        if (g->grad_fn) nn_detach_(g);
        else g->requires_grad = false;
        if (nn_zero_(g)) return lt_fail(L, 0);
    }
    return 0;
}

static int l_total_norm(lua_State *L)
{
    int n;
    nn_tensor **ts = lt_tensor_list(L, 1, &n, LT_TENSORS);
    if (!n) return luaL_argerror(L, 1, "no tensors");
    lt_push(L, nn_total_norm(n, ts, luaL_checknumber(L, 2)));
    return 1;
}

static int l_grad_total_norm(lua_State *L)
{
    int n;
    nn_tensor **gs = lt_tensor_list(L, 1, &n, LT_SOME_GRADS);
    if (!n) return 0;
    lt_push(L, nn_total_norm(n, gs, luaL_checknumber(L, 2)));
    return 1;
}

static int l_mul_grads(lua_State *L)
{
    nn_tensor *coef = lt_check(L, 2);
    int n;
    nn_tensor **gs = lt_tensor_list(L, 1, &n, LT_SOME_GRADS);
    if (nn_mul_each_(n, gs, coef)) return lt_fail(L, 0);
    return 0;
}

static int l_clamp_grads(lua_State *L)
{
    double v = luaL_checknumber(L, 2);
    int n;
    nn_tensor **gs = lt_tensor_list(L, 1, &n, LT_SOME_GRADS);
    bool was = nn_grad_enabled();
    nn_set_grad_enabled(false);
    nn_status st = NN_OK;
    for (int k = 0; k < n && !st; k++) st = nn_clamp_(gs[k], true, -v, true, v);
    nn_set_grad_enabled(was);
    if (st) return lt_fail(L, 0);
    return 0;
}

static int l_state_like(lua_State *L)
{
    lt_push(L, nn_optim_state_like(lt_check(L, 1), luaL_optnumber(L, 2, 0)));
    return 1;
}

static int l_step_counter(lua_State *L)
{
    lt_push(L, nn_optim_step_counter(luaL_optnumber(L, 1, 0)));
    return 1;
}

static int l_id(lua_State *L)
{
    lua_pushlightuserdata(L, lt_check(L, 1));
    return 1;
}

void lt_open_optim(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"sgd_step", l_sgd_step}, {"adam_step", l_adam_step}, {"rmsprop_step", l_rmsprop_step},
        {"adagrad_step", l_adagrad_step}, {"zero_grad", l_zero_grad}, {"state_like", l_state_like},
        {"step_counter", l_step_counter}, {"id", l_id}, {"total_norm", l_total_norm}, {"grad_total_norm", l_grad_total_norm},
        {"mul_grads_", l_mul_grads}, {"clamp_grads_", l_clamp_grads}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_setfield(L, -2, "_optim");
}
