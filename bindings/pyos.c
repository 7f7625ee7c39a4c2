/* _pyos: the system calls behind Python's os, os.path and shutil names (bindings/lua/pyos.lua,
 * os_path.lua, shutil.lua; require "_pyos"). Failures raise Python's OSError text,
 * "[Errno 2] No such file or directory: 'x'" (two paths: "... 'a' -> 'b'"), with no position,
 * unless a function says it returns nil instead.
 *   listdir(path) -> list of names (no . and ..)
 *   stat(path, follow_symlinks, quiet) -> {st_mode = ..., st_size = ..., st_mtime = ..., kind = ...}
 *     kind: "dir" | "file" | "link" | "other"; quiet: nil on failure instead of raising
 *   mkdir(path, mode), rmdir(path), unlink(path), chdir(path), getcwd(), readlink(path),
 *   rename(src, dst, quiet) (quiet: false, message on failure), symlink(target, link),
 *   chmod(path, mode), utime(path, atime_ns, mtime_ns), copyfile(src, dst) (the bytes),
 *   access(path, mode) -> bool, disk_usage(path) -> total, used, free,
 *   environ() -> {name = value}, setenv(name, value), unsetenv(name),
 *   home(user) -> the home folder of user (nil: this process's) or nil, cpu_count() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <dirent.h>
#include <unistd.h>

#include <lauxlib.h>

#include "lt.h"

extern char **environ;

/* raises Python's OSError text for errno, without a position (pyos_sys.lua adds the user's) */
static int os_error(lua_State *L, const char *path, const char *path2)
{
    int e = errno;
    if (!path) lua_pushfstring(L, "[Errno %d] %s", e, strerror(e));
    else if (path2) lua_pushfstring(L, "[Errno %d] %s: '%s' -> '%s'", e, strerror(e), path, path2);
    else lua_pushfstring(L, "[Errno %d] %s: '%s'", e, strerror(e), path);
    return lua_error(L);
}

static int p_listdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    DIR *d = opendir(path);
    if (!d) return os_error(L, path, NULL);
    lua_newtable(L);
    lua_Integer n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        lua_pushstring(L, e->d_name);
        lua_rawseti(L, -2, ++n);
    }
    closedir(d);
    return 1;
}

static void set_int(lua_State *L, const char *k, lua_Integer v) { lua_pushinteger(L, v); lua_setfield(L, -2, k); }

static void set_time(lua_State *L, const char *k, struct timespec ts)
{
    char name[16];
    lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    lua_setfield(L, -2, k);
    snprintf(name, sizeof name, "%s_ns", k);
    set_int(L, name, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static int p_stat(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int follow = lua_isnoneornil(L, 2) || lua_toboolean(L, 2);
    struct stat st;
    if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
        if (lua_toboolean(L, 3)) return 0;
        return os_error(L, path, NULL);
    }
    lua_createtable(L, 0, 18);
    set_int(L, "st_mode", st.st_mode);
    set_int(L, "st_ino", (lua_Integer)st.st_ino);
    set_int(L, "st_dev", (lua_Integer)st.st_dev);
    set_int(L, "st_nlink", (lua_Integer)st.st_nlink);
    set_int(L, "st_uid", st.st_uid);
    set_int(L, "st_gid", st.st_gid);
    set_int(L, "st_size", st.st_size);
    set_time(L, "st_atime", st.st_atim);
    set_time(L, "st_mtime", st.st_mtim);
    set_time(L, "st_ctime", st.st_ctim);
    lua_pushstring(L, S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : S_ISLNK(st.st_mode) ? "link" : "other");
    lua_setfield(L, -2, "kind");
    return 1;
}

static int p_mkdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (mkdir(path, (mode_t)luaL_optinteger(L, 2, 0777))) return os_error(L, path, NULL);
    return 0;
}

#define PATH_CALL(name, call)                                   \
    static int name(lua_State *L)                               \
    {                                                           \
        const char *path = luaL_checkstring(L, 1);              \
        if (call(path)) return os_error(L, path, NULL);         \
        return 0;                                               \
    }
PATH_CALL(p_rmdir, rmdir)
PATH_CALL(p_unlink, unlink)
PATH_CALL(p_chdir, chdir)

static int p_getcwd(lua_State *L)
{
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof buf)) return os_error(L, NULL, NULL);
    lua_pushstring(L, buf);
    return 1;
}

static int p_readlink(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf);
    if (n < 0) return os_error(L, path, NULL);
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
}

static int p_rename(lua_State *L)
{
    const char *src = luaL_checkstring(L, 1), *dst = luaL_checkstring(L, 2);
    if (rename(src, dst) == 0) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (!lua_toboolean(L, 3)) return os_error(L, src, dst);
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "[Errno %d] %s: '%s' -> '%s'", errno, strerror(errno), src, dst);
    return 2;
}

static int p_symlink(lua_State *L)
{
    const char *target = luaL_checkstring(L, 1), *link = luaL_checkstring(L, 2);
    if (symlink(target, link)) return os_error(L, target, link);
    return 0;
}

static int p_chmod(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (chmod(path, (mode_t)luaL_checkinteger(L, 2))) return os_error(L, path, NULL);
    return 0;
}

static int p_utime(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer a = luaL_checkinteger(L, 2), m = luaL_checkinteger(L, 3);
    struct timespec ts[2] = {{a / 1000000000, a % 1000000000}, {m / 1000000000, m % 1000000000}};
    if (utimensat(AT_FDCWD, path, ts, 0)) return os_error(L, path, NULL);
    return 0;
}

static int p_copyfile(lua_State *L)
{
    const char *src = luaL_checkstring(L, 1), *dst = luaL_checkstring(L, 2);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return os_error(L, src, NULL);
    struct stat st;
    if (fstat(in, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(in);
        errno = EISDIR;
        return os_error(L, src, NULL);
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (out < 0) {
        int e = errno;
        close(in);
        errno = e;
        return os_error(L, dst, NULL);
    }
    char buf[1 << 16];
    const char *failed = NULL;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { failed = src; break; }
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) { failed = dst; break; }
            off += w;
        }
        if (failed) break;
    }
    int e = errno;
    close(in);
    if (close(out) && !failed) { e = errno; failed = dst; }
    errno = e;
    if (failed) return os_error(L, failed, NULL);
    return 0;
}

static int p_access(lua_State *L)
{
    lua_pushboolean(L, access(luaL_checkstring(L, 1), (int)luaL_checkinteger(L, 2)) == 0);
    return 1;
}

static int p_disk_usage(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct statvfs s;
    if (statvfs(path, &s)) return os_error(L, path, NULL);
    lua_pushinteger(L, (lua_Integer)(s.f_blocks * s.f_frsize));
    lua_pushinteger(L, (lua_Integer)((s.f_blocks - s.f_bfree) * s.f_frsize));
    lua_pushinteger(L, (lua_Integer)(s.f_bavail * s.f_frsize));
    return 3;
}

static int p_environ(lua_State *L)
{
    lua_newtable(L);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        lua_pushlstring(L, *e, (size_t)(eq - *e));
        lua_pushstring(L, eq + 1);
        lua_rawset(L, -3);
    }
    return 1;
}

static int p_setenv(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1), *value = luaL_checkstring(L, 2);
    if (setenv(name, value, 1)) return os_error(L, NULL, NULL);
    return 0;
}

static int p_unsetenv(lua_State *L)
{
    if (unsetenv(luaL_checkstring(L, 1))) return os_error(L, NULL, NULL);
    return 0;
}

static int p_home(lua_State *L)
{
    struct passwd *pw = lua_isnoneornil(L, 1) ? getpwuid(getuid()) : getpwnam(luaL_checkstring(L, 1));
    if (!pw || !pw->pw_dir) return 0;
    lua_pushstring(L, pw->pw_dir);
    return 1;
}

static int p_cpu_count(lua_State *L)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 0;
    lua_pushinteger(L, n);
    return 1;
}

int luaopen_pyos(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"listdir", p_listdir}, {"stat", p_stat}, {"mkdir", p_mkdir}, {"rmdir", p_rmdir}, {"unlink", p_unlink},
        {"chdir", p_chdir}, {"getcwd", p_getcwd}, {"readlink", p_readlink}, {"rename", p_rename},
        {"symlink", p_symlink}, {"chmod", p_chmod}, {"utime", p_utime}, {"copyfile", p_copyfile},
        {"access", p_access}, {"disk_usage", p_disk_usage}, {"environ", p_environ}, {"setenv", p_setenv},
        {"unsetenv", p_unsetenv}, {"home", p_home}, {"cpu_count", p_cpu_count}, {NULL, NULL},
    };
    luaL_newlib(L, fns);
    return 1;
}
