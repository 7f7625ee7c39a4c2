/* torch._image: the C half of torchvision.io and torchvision.transforms
 * (engine/image.h), called by bindings/lua/tv_io.lua and tv_transforms.lua,
 * plus directory listing for ImageFolder. Layouts are the strings "hwc"
 * (PIL-like image) and "chw" (tensor image). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"
#include "lt.h"

static nn_image_layout check_layout(lua_State *L, int idx)
{
    static const char *const names[] = {"hwc", "chw", NULL};
    return (nn_image_layout)luaL_checkoption(L, idx, NULL, names);
}

static int check_channels(lua_State *L, int idx)
{
    lua_Integer c = luaL_optinteger(L, idx, 0);
    luaL_argcheck(L, c >= 0 && c <= 4, idx, "channels must be 0 (unchanged) or 1 to 4");
    return (int)c;
}

/* read(path, channels) -> uint8 H x W x C; fn names the caller in messages */
static int i_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int channels = check_channels(L, 2);
    lt_push(L, nn_image_read(luaL_optstring(L, 3, "read_image"), path, channels));
    return 1;
}

/* decode(bytes, channels, name) */
static int i_decode(lua_State *L)
{
    nn_tensor *b = lt_check(L, 1);
    int channels = check_channels(L, 2);
    lt_push(L, nn_image_decode(luaL_optstring(L, 4, "decode_image"), b, channels, luaL_optstring(L, 3, "<bytes>")));
    return 1;
}

static int i_encode_png(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push(L, nn_image_encode_png(t, (int)luaL_optinteger(L, 2, 6)));
    return 1;
}

static int i_encode_jpeg(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push(L, nn_image_encode_jpeg(t, (int)luaL_optinteger(L, 2, 75)));
    return 1;
}

static int i_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lt_push(L, nn_image_read_file(luaL_optstring(L, 2, "read_file"), path));
    return 1;
}

static int i_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    nn_tensor *t = lt_check(L, 2);
    if (nn_image_write_file(luaL_optstring(L, 3, "write_file"), path, t)) return lt_fail(L, 0);
    return 0;
}

/* window(img, layout, top, left, h, w, mode, fill) */
static int i_window(lua_State *L)
{
    static const char *const modes[] = {"constant", "edge", "reflect", "symmetric", NULL};
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    int64_t top = luaL_checkinteger(L, 3), left = luaL_checkinteger(L, 4);
    int64_t h = luaL_checkinteger(L, 5), w = luaL_checkinteger(L, 6);
    nn_pad_mode mode = (nn_pad_mode)luaL_checkoption(L, 7, "constant", modes);
    double fill[8];
    int nfill = 0;
    if (lua_istable(L, 8)) {
        nfill = (int)luaL_len(L, 8);
        luaL_argcheck(L, nfill >= 1 && nfill <= 8, 8, "fill must have 1 to 8 values");
        for (int i = 0; i < nfill; i++) {
            lua_geti(L, 8, i + 1);
            fill[i] = luaL_checknumber(L, -1);
            lua_pop(L, 1);
        }
    } else if (!lua_isnoneornil(L, 8)) {
        fill[0] = luaL_checknumber(L, 8);
        nfill = 1;
    }
    lt_push(L, nn_image_window(t, layout, top, left, h, w, mode, fill, nfill));
    return 1;
}

static int i_flip(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push(L, nn_image_flip(t, (int)luaL_checkinteger(L, 2)));
    return 1;
}

/* resize(img, layout, h, w, interpolation, antialias) */
static int i_resize(lua_State *L)
{
    static const char *const interps[] = {"bilinear", "nearest", "nearest-exact", "bicubic", "box", "hamming", "lanczos", NULL};
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    int64_t h = luaL_checkinteger(L, 3), w = luaL_checkinteger(L, 4);
    nn_interp interp = (nn_interp)luaL_checkoption(L, 5, "bilinear", interps);
    bool aa = lua_isnone(L, 6) || lua_toboolean(L, 6);
    lt_push(L, nn_image_resize(t, layout, h, w, interp, aa));
    return 1;
}

/* to_tensor(img, layout = "hwc") */
static int i_to_tensor(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push(L, nn_image_to_tensor(t, lua_isnoneornil(L, 2) ? NN_IMAGE_HWC : check_layout(L, 2)));
    return 1;
}

/* a number or a list of numbers at idx into v (at most max); returns the count */
int lt_image_numbers(lua_State *L, int idx, double *v, int max, const char *what)
{
    if (lua_type(L, idx) == LUA_TNUMBER) {
        v[0] = lua_tonumber(L, idx);
        return 1;
    }
    if (lt_is_tensor(L, idx)) {
        nn_tensor *t = lt_check(L, idx);
        luaL_argcheck(L, t->ndim <= 1 && nn_numel(t) >= 1 && nn_numel(t) <= max && t->storage->device.type == NN_CPU,
                      idx, what);
        for (int64_t i = 0; i < nn_numel(t); i++) {
            int64_t ix[1] = {i};
            v[i] = nn_get_f64(t, ix);
        }
        return (int)nn_numel(t);
    }
    luaL_argexpected(L, lua_istable(L, idx), idx, "number or list of numbers");
    int n = (int)luaL_len(L, idx);
    luaL_argcheck(L, n >= 1 && n <= max, idx, what);
    for (int i = 0; i < n; i++) {
        lua_geti(L, idx, i + 1);
        if (!lua_isnumber(L, -1)) luaL_argerror(L, idx, what);
        v[i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    return n;
}

/* normalize_(t, mean, std) */
static int i_normalize_(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    double mean[64], std[64];
    int nm = lt_image_numbers(L, 2, mean, 64, "mean must be a number or a list of 1 to 64 numbers");
    int ns = lt_image_numbers(L, 3, std, 64, "std must be a number or a list of 1 to 64 numbers");
    if (nm != ns) { /* one of them may broadcast */
        if (nm == 1) for (int i = 1; i < ns; i++) mean[i] = mean[0];
        else if (ns == 1) for (int i = 1; i < nm; i++) std[i] = std[0];
        else return luaL_error(L, "normalize: mean has %d values but std has %d", nm, ns);
        nm = ns = nm > ns ? nm : ns;
    }
    if (nn_image_normalize_(t, mean, std, nm)) return lt_fail(L, 0);
    lua_settop(L, 1);
    return 1;
}

static int i_convert(lua_State *L)
{
    nn_tensor *t = lt_check(L, 1);
    lt_push(L, nn_image_convert(t, (int)luaL_checkinteger(L, 2)));
    return 1;
}

/* adjust(img, layout, op, factor) */
static int i_adjust(lua_State *L)
{
    static const char *const ops[] = {"brightness", "contrast", "saturation", "hue", "grayscale", NULL};
    nn_tensor *t = lt_check(L, 1);
    nn_image_layout layout = check_layout(L, 2);
    nn_color_op op = (nn_color_op)luaL_checkoption(L, 3, NULL, ops);
    lt_push(L, nn_image_adjust(t, layout, op, luaL_checknumber(L, 4)));
    return 1;
}

/* listdir(path) -> {name = "dir" | "file" | "other", ...}, following symlinks; nil, message on error */
static int i_listdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    DIR *d = opendir(path);
    if (!d) {
        luaL_pushfail(L);
        lua_pushfstring(L, "cannot list '%s': %s", path, strerror(errno));
        return 2;
    }
    lua_newtable(L);
    luaL_Buffer b;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, path);
        luaL_addchar(&b, '/');
        luaL_addstring(&b, e->d_name);
        luaL_pushresult(&b);
        struct stat st;
        const char *kind = stat(lua_tostring(L, -1), &st) ? "other" : S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : "other";
        lua_pop(L, 1);
        lua_pushstring(L, kind);
        lua_setfield(L, -2, e->d_name);
    }
    closedir(d);
    return 1;
}

/* kind(path) -> "dir" | "file" | "other" | nil */
static int i_kind(lua_State *L)
{
    struct stat st;
    if (stat(luaL_checkstring(L, 1), &st)) return 0;
    lua_pushstring(L, S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : "other");
    return 1;
}

static int i_set_max_pixels(lua_State *L)
{
    nn_image_set_max_pixels(luaL_checkinteger(L, 1));
    return 0;
}

void lt_open_image(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"read", i_read}, {"decode", i_decode}, {"encode_png", i_encode_png}, {"encode_jpeg", i_encode_jpeg},
        {"read_file", i_read_file}, {"write_file", i_write_file}, {"window", i_window}, {"flip", i_flip},
        {"resize", i_resize}, {"to_tensor", i_to_tensor}, {"normalize_", i_normalize_}, {"convert", i_convert},
        {"adjust", i_adjust}, {"listdir", i_listdir}, {"kind", i_kind}, {"set_max_pixels", i_set_max_pixels},
        {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lt_open_image_augment(L);
    lua_setfield(L, -2, "_image");
}
