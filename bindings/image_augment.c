/* torch._image's augmentation loops (engine/image_point.c, image_filter.c, image_warp.c), called
 * by bindings/lua/tv_augment.lua. Layouts are "hwc" (PIL-like image) and "chw" (tensor image);
 * interpolation "nearest" | "bilinear"; fill nil (torchvision's fill=None), a number or a list. */
#include "image.h"
#include "lt.h"

static nn_image_layout check_layout(lua_State *L, int idx)
{
    static const char *const names[] = {"hwc", "chw", NULL};
    return (nn_image_layout)luaL_checkoption(L, idx, NULL, names);
}

static nn_interp check_interp(lua_State *L, int idx)
{
    static const char *const names[] = {"bilinear", "nearest", NULL};
    return (nn_interp)luaL_checkoption(L, idx, "nearest", names);
}

/* fill at idx into v (nil: 0 values) */
static int fill_arg(lua_State *L, int idx, double *v)
{
    if (lua_isnoneornil(L, idx)) return 0;
    return lt_image_numbers(L, idx, v, 64, "fill must be a number or a list of 1 to 64 numbers");
}

/* point(img, layout, op, arg) */
static int i_point(lua_State *L)
{
    static const char *const ops[] = {"invert", "posterize", "solarize", "autocontrast", "equalize", NULL};
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    nn_point_op op = (nn_point_op)luaL_checkoption(L, 3, NULL, ops);
    lt_push(L, nn_image_point(t, layout, op, luaL_optnumber(L, 4, 0)));
    return 1;
}

/* sharpness(img, layout, factor) */
static int i_sharpness(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    lt_push(L, nn_image_sharpness(t, layout, luaL_checknumber(L, 3)));
    return 1;
}

/* gaussian_kernel1d(k, sigma, f64) -> list of k numbers */
static int i_gaussian_kernel1d(lua_State *L)
{
    lua_Integer k = luaL_checkinteger(L, 1);
    luaL_argcheck(L, k >= 1 && k <= 4095, 1, "kernel size must be 1 to 4095");
    double v[4095];
    nn_image_gaussian_kernel1d((int)k, luaL_checknumber(L, 2), lua_toboolean(L, 3), v);
    lua_createtable(L, (int)k, 0);
    for (int i = 0; i < k; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* gaussian_blur(img, kx, ky, sigma_x, sigma_y) */
static int i_gaussian_blur(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lua_Integer kx = luaL_checkinteger(L, 2), ky = luaL_checkinteger(L, 3);
    luaL_argcheck(L, kx >= -1 && kx <= 4095, 2, "kernel size out of range");
    luaL_argcheck(L, ky >= -1 && ky <= 4095, 3, "kernel size out of range");
    lt_push(L, nn_image_gaussian_blur(t, (int)kx, (int)ky, luaL_checknumber(L, 4), luaL_checknumber(L, 5)));
    return 1;
}

/* warp(img, layout, oh, ow, "affine" | "perspective", coeffs, interpolation, fill) */
static int i_warp(lua_State *L)
{
    static const char *const kinds[] = {"affine", "perspective", NULL};
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    lua_Integer oh = luaL_checkinteger(L, 3), ow = luaL_checkinteger(L, 4);
    nn_warp_kind kind = (nn_warp_kind)luaL_checkoption(L, 5, NULL, kinds);
    double c[8] = {0}, fill[64];
    int nc = lt_image_numbers(L, 6, c, 8, "coefficients must be a list of 6 or 8 numbers");
    luaL_argcheck(L, nc == (kind == NN_WARP_AFFINE ? 6 : 8), 6, "6 coefficients for affine, 8 for perspective");
    nn_interp interp = check_interp(L, 7);
    int nfill = fill_arg(L, 8, fill);
    lt_push(L, nn_image_warp(t, layout, oh, ow, kind, c, interp, fill, nfill));
    return 1;
}

/* grid_sample(img, grid, interpolation, fill) */
static int i_grid_sample(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1), *grid = lt_check(L, 2);
    nn_interp interp = check_interp(L, 3);
    double fill[64];
    int nfill = fill_arg(L, 4, fill);
    lt_push(L, nn_image_grid_sample(t, grid, interp, fill, nfill));
    return 1;
}

void lt_open_image_augment(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"point", i_point}, {"sharpness", i_sharpness}, {"gaussian_kernel1d", i_gaussian_kernel1d},
        {"gaussian_blur", i_gaussian_blur}, {"warp", i_warp}, {"grid_sample", i_grid_sample}, {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
