/* hashlib: Python's hashlib through OpenSSL's libcrypto (require "hashlib").
 *   local h = hashlib.sha256(); h:update(data); h:hexdigest()   -- or hashlib.sha256(data)
 *   hashlib.new("md5", data), h:digest() (raw bytes), h:copy(), h.name, h.digest_size,
 *   h.block_size, hashlib.file_digest(file_or_path, "sha256"), hashlib.algorithms_available.
 * Users: random.seed(str) (SHA-512, as CPython), torch.hub's check_hash, torchvision's
 * check_integrity / calculate_md5. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>
#include <openssl/evp.h>

#include "lt.h"

#define HASH_MT "hashlib.HASH"

typedef struct {
    EVP_MD_CTX *ctx;
    char name[32];
} hash_obj;

/* Python's names (and the hashlib constructors) -> OpenSSL's */
static const struct { const char *py, *ssl; } algorithms[] = {
    {"md5", "MD5"}, {"sha1", "SHA1"}, {"sha224", "SHA224"}, {"sha256", "SHA256"}, {"sha384", "SHA384"},
    {"sha512", "SHA512"}, {"sha3_224", "SHA3-224"}, {"sha3_256", "SHA3-256"}, {"sha3_384", "SHA3-384"},
    {"sha3_512", "SHA3-512"}, {"blake2b", "BLAKE2B-512"}, {"blake2s", "BLAKE2S-256"}, {NULL, NULL},
};

static hash_obj *check_hash(lua_State *L, int idx) { return luaL_checkudata(L, idx, HASH_MT); }

static hash_obj *push_hash(lua_State *L, const char *name)
{
    hash_obj *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->ctx = NULL;
    snprintf(h->name, sizeof h->name, "%s", name);
    luaL_setmetatable(L, HASH_MT);
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx) luaL_error(L, "hashlib: out of memory");
    return h;
}

static const char *ssl_name(const char *py)
{
    for (int i = 0; algorithms[i].py; i++)
        if (!strcmp(algorithms[i].py, py)) return algorithms[i].ssl;
    return NULL;
}

static void update(lua_State *L, hash_obj *h, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        luaL_error(L, "object supporting the buffer API required (a Lua string of bytes), got %s", luaL_typename(L, idx));
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    if (!EVP_DigestUpdate(h->ctx, s, n)) luaL_error(L, "hashlib: %s update failed", h->name);
}

/* new(name, data): a hash object, data hashed when given */
static int new_named(lua_State *L, const char *name, int data_idx)
{
    if (data_idx) lua_settop(L, data_idx); /* the data slot exists (nil when not given) below the new object */
    char lower[32];
    size_t i = 0;
    for (; name[i] && i < sizeof lower - 1; i++) lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    lower[i] = 0;
    for (char *c = lower; *c; c++) if (*c == '-') *c = '_';
    const char *ssl = ssl_name(lower);
    if (!ssl) return luaL_error(L, "unsupported hash type %s", name);
    const EVP_MD *md = EVP_get_digestbyname(ssl);
    if (!md) return luaL_error(L, "unsupported hash type %s (not in this OpenSSL)", name);
    hash_obj *h = push_hash(L, lower);
    if (!EVP_DigestInit_ex(h->ctx, md, NULL)) return luaL_error(L, "hashlib: %s init failed", lower);
    if (data_idx && !lua_isnoneornil(L, data_idx)) update(L, h, data_idx);
    return 1;
}

static int l_new(lua_State *L) { return new_named(L, luaL_checkstring(L, 1), 2); }

static int l_named(lua_State *L) { return new_named(L, lua_tostring(L, lua_upvalueindex(1)), 1); }

static int h_update(lua_State *L)
{
    update(L, check_hash(L, 1), 2);
    return 0;
}

/* the digest of what was hashed so far (the object can go on hashing, as Python's) */
static int finish(lua_State *L, unsigned char *out, unsigned *n)
{
    hash_obj *h = check_hash(L, 1);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || !EVP_MD_CTX_copy_ex(c, h->ctx) || !EVP_DigestFinal_ex(c, out, n)) {
        EVP_MD_CTX_free(c);
        return luaL_error(L, "hashlib: %s digest failed", h->name);
    }
    EVP_MD_CTX_free(c);
    return 0;
}

static int h_digest(lua_State *L)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    finish(L, out, &n);
    lua_pushlstring(L, (const char *)out, n);
    return 1;
}

static int h_hexdigest(lua_State *L)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    unsigned n = 0;
    finish(L, out, &n);
    for (unsigned i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", out[i]);
    lua_pushlstring(L, hex, 2 * n);
    return 1;
}

static int h_copy(lua_State *L)
{
    hash_obj *h = check_hash(L, 1);
    hash_obj *c = push_hash(L, h->name);
    if (!EVP_MD_CTX_copy_ex(c->ctx, h->ctx)) return luaL_error(L, "hashlib: %s copy failed", h->name);
    return 1;
}

static int h_gc(lua_State *L)
{
    hash_obj *h = check_hash(L, 1);
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    return 0;
}

static int h_tostring(lua_State *L)
{
    hash_obj *h = check_hash(L, 1);
    lua_pushfstring(L, "<%s _hashlib.HASH object @ %p>", h->name, (void *)h);
    return 1;
}

static int h_index(lua_State *L)
{
    hash_obj *h = check_hash(L, 1);
    const char *k = luaL_checkstring(L, 2);
    const EVP_MD *md = EVP_MD_CTX_get0_md(h->ctx);
    if (!strcmp(k, "name")) lua_pushstring(L, h->name);
    else if (!strcmp(k, "digest_size")) lua_pushinteger(L, EVP_MD_get_size(md));
    else if (!strcmp(k, "block_size")) lua_pushinteger(L, EVP_MD_get_block_size(md));
    else {
        luaL_getmetatable(L, HASH_MT);
        lua_getfield(L, -1, "__methods");
        lua_getfield(L, -1, k);
    }
    return 1;
}

/* file_digest(file or path, name): reads the file to its end in chunks */
static int l_file_digest(lua_State *L)
{
    FILE *f = NULL;
    int close = 0;
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *path = lua_tostring(L, 1);
        f = fopen(path, "rb");
        if (!f) return luaL_error(L, "file_digest: cannot open %s", path);
        close = 1;
    } else {
        luaL_Stream *s = luaL_testudata(L, 1, LUA_FILEHANDLE);
        if (!s || !s->closef) return luaL_error(L, "file_digest: expected an open file or a path, got %s", luaL_typename(L, 1));
        f = s->f;
    }
    new_named(L, luaL_checkstring(L, 2), 0);
    hash_obj *h = check_hash(L, -1);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(h->ctx, buf, n);
    int err = ferror(f);
    if (close) fclose(f);
    if (err) return luaL_error(L, "file_digest: read error");
    return 1;
}

int luaopen_hashlib(lua_State *L)
{
    luaL_newmetatable(L, HASH_MT);
    static const luaL_Reg meta[] = {{"__gc", h_gc}, {"__close", h_gc}, {"__tostring", h_tostring}, {"__index", h_index}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    static const luaL_Reg methods[] = {{"update", h_update}, {"digest", h_digest}, {"hexdigest", h_hexdigest}, {"copy", h_copy}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__methods");
    lua_pop(L, 1);

    static const luaL_Reg funcs[] = {{"new", l_new}, {"file_digest", l_file_digest}, {NULL, NULL}};
    luaL_newlib(L, funcs);
    lua_newtable(L);
    for (int i = 0; algorithms[i].py; i++) {
        lua_pushstring(L, algorithms[i].py);
        lua_pushcclosure(L, l_named, 1);
        lua_setfield(L, -3, algorithms[i].py);
        lua_pushstring(L, algorithms[i].py);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "algorithms_available");
    lua_setfield(L, -2, "algorithms_guaranteed");
    return 1;
}
