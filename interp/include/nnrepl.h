/* nnrepl.h: embedding the nnrepl interpreter (Lua 5.4 with the torch library) in a
 * C or C++ host application.
 *
 *     nnrepl_State *S = nnrepl_open();
 *     if (nnrepl_dostring(S, "model = nn.Linear(3, 1)\n"
 *                            "function predict(x) return model(x) end") != NNREPL_OK)
 *         fprintf(stderr, "%s\n", nnrepl_error(S));
 *     float buf[4 * 3] = {...};
 *     int64_t shape[] = {4, 3};
 *     nnrepl_tensor x = {.data = buf, .ndim = 2, .shape = shape, .dtype = NNREPL_FLOAT32};
 *     nnrepl_push_tensor(S, &x, NNREPL_BORROW);          // the argument, no copy
 *     if (nnrepl_call(S, "predict", 1, 1) == NNREPL_OK) {
 *         nnrepl_tensor y;
 *         nnrepl_get_tensor(S, -1, &y);                  // y.data: 4 floats, y.shape {4, 1}
 *         lua_pop(nnrepl_lua(S), 1);
 *     }
 *     nnrepl_close(S);
 *
 * Link with libnnrepl (pkg-config nnrepl): the engine and the Lua bindings, with Lua
 * 5.4 inside libnnrepl.a and Debian's liblua5.4.so.0 under libnnrepl.so. The host may
 * use the whole Lua C API on nnrepl_lua(S); the Lua headers of the build are
 * installed next to this one (include/nnrepl/).
 *
 * Statuses. Every function that can fail returns NNREPL_OK (0) or one of the
 * NNREPL_ERR* codes below, and leaves a message for nnrepl_error(S): the Lua error
 * message followed by a stack traceback for errors raised by Lua code. The library
 * never exits the host and never aborts: a script's os.exit() raises an error.
 *
 * Threads. An interpreter belongs to one thread at a time: never call two functions
 * on the same nnrepl_State at once, and do not share tensors between interpreters
 * that run on different threads (their reference counts are not atomic). Separate
 * interpreters on separate threads are independent Lua states, but the engine's
 * settings are process-wide: default dtype, random seed, CUDA current device and
 * memory caches. nnrepl_interrupt is the one function that may be called from any
 * thread (and from a signal handler) while the interpreter is open.
 *
 * Stack. Functions that take or leave values (nnrepl_push_tensor, nnrepl_call,
 * nnrepl_get_tensor) work on the Lua stack of nnrepl_lua(S), as Lua's C API does:
 * indices are Lua stack indices, negative ones count from the top, and the host pops
 * results with lua_pop(nnrepl_lua(S), n). The stack starts empty and has room for 20
 * values; call lua_checkstack for more. */
#ifndef NNREPL_H
#define NNREPL_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NNREPL_VERSION_MAJOR 0
#define NNREPL_VERSION_MINOR 1
#define NNREPL_VERSION_PATCH 0

/* Status codes. The Lua ones map one to one (LUA_ERRRUN -> NNREPL_ERRRUN, ...). */
enum {
    NNREPL_OK = 0,
    NNREPL_ERRRUN = 1,         /* a runtime error raised by Lua code or by the library */
    NNREPL_ERRSYNTAX = 2,      /* the code does not compile */
    NNREPL_ERRMEM = 3,         /* out of memory (Lua's allocator) */
    NNREPL_ERRERR = 4,         /* an error while handling an error */
    NNREPL_ERRFILE = 5,        /* nnrepl_dofile could not open or read the file */
    NNREPL_ERRINTERRUPTED = 6, /* stopped by nnrepl_interrupt */
    NNREPL_ERRARG = 7,         /* a bad argument to an API function: a value that is not a
                                  tensor, a bad tensor descriptor, a name that is not found */
};

/* Element types, in the engine's order (torch.float32, torch.float64, ...). */
typedef enum {
    NNREPL_FLOAT32 = 0,
    NNREPL_FLOAT64 = 1,
    NNREPL_FLOAT16 = 2,  /* IEEE half, stored as uint16_t */
    NNREPL_BFLOAT16 = 3, /* bfloat16, stored as uint16_t */
    NNREPL_INT64 = 4,
    NNREPL_INT32 = 5,
    NNREPL_UINT8 = 6,
    NNREPL_BOOL = 7,     /* one byte, 0 or 1 */
    NNREPL_INT8 = 8,
    NNREPL_INT16 = 9,
    NNREPL_COMPLEX64 = 10,  /* (real, imag) float pairs */
    NNREPL_COMPLEX128 = 11, /* (real, imag) double pairs */
} nnrepl_dtype;

typedef enum { NNREPL_CPU = 0, NNREPL_CUDA = 1 } nnrepl_device_type;

/* nnrepl_push_tensor modes. */
enum {
    NNREPL_COPY = 0,   /* the tensor gets its own contiguous copy of the data; the host keeps
                          its buffer and may free or reuse it as soon as the call returns */
    NNREPL_BORROW = 1, /* the tensor uses the host's memory in place (no copy): writes from
                          either side are seen by the other; the buffer must stay valid until
                          `release` is called */
};

#define NNREPL_MAX_DIMS 8

/* A tensor as the host sees it: where the elements are and how they are laid out.
 * Strides count elements, not bytes (as in PyTorch). */
typedef struct nnrepl_tensor {
    void *data;              /* address of the element at index (0, ..., 0) */
    int ndim;                /* 0 (a scalar) to NNREPL_MAX_DIMS */
    const int64_t *shape;    /* ndim sizes, each >= 0 (may be NULL when ndim is 0) */
    const int64_t *strides;  /* ndim strides in elements, each >= 0; NULL: contiguous, row-major */
    nnrepl_dtype dtype;
    nnrepl_device_type device;
    int device_index;        /* NNREPL_CUDA: the GPU (-1: the current one); ignored for the CPU */
    /* NNREPL_BORROW only: called once, as release(data, release_ctx), when the last
     * tensor using the memory is gone (views included), at the latest in nnrepl_close,
     * on the thread that drops it. May be NULL. */
    void (*release)(void *data, void *release_ctx);
    void *release_ctx;
} nnrepl_tensor;

typedef struct nnrepl_State nnrepl_State;

/* ---- the interpreter ---- */

/* A new interpreter: a fresh Lua state with Lua's standard libraries and the whole
 * nnrepl library opened (the globals torch, nn, F, optim, time; require "torchvision"
 * and the other bundled modules work). Returns NULL if the state cannot be created
 * (then nnrepl_error(NULL) says why). */
nnrepl_State *nnrepl_open(void);

/* Closes the interpreter: runs pending finalizers, frees every tensor it holds (so
 * borrowed buffers are released), and frees S. NULL is ignored. */
void nnrepl_close(nnrepl_State *S);

/* The interpreter's Lua state, for the Lua C API (lua_pushnumber, lua_pop, ...). It
 * stays valid until nnrepl_close. Code that calls Lua functions directly should use
 * lua_pcall: an unprotected error in the host's own Lua calls aborts, as in any Lua
 * host. */
lua_State *nnrepl_lua(nnrepl_State *S);

/* The message of the last function that failed on S: the error message, followed by
 * "\nstack traceback:\n..." for errors raised while Lua code ran. "" after a call that
 * succeeded. The string stays valid until the next call on S. With S == NULL: why
 * the last nnrepl_open on this thread failed. Never returns NULL. */
const char *nnrepl_error(nnrepl_State *S);

/* The library version, "major.minor.patch". */
const char *nnrepl_version(void);

/* ---- running code ---- */

/* Compiles and runs the Lua source `code`; its results are discarded. Returns
 * NNREPL_OK, NNREPL_ERRSYNTAX, NNREPL_ERRRUN, NNREPL_ERRINTERRUPTED or NNREPL_ERRMEM.
 * The interpreter stays usable after an error: globals set before the error keep
 * their values. */
int nnrepl_dostring(nnrepl_State *S, const char *code);

/* Runs the Lua file at `path` (source or precompiled); as nnrepl_dostring, plus
 * NNREPL_ERRFILE when the file cannot be read. */
int nnrepl_dofile(nnrepl_State *S, const char *path);

/* Calls the function found at `name` with the nargs values on top of the stack as its
 * arguments (pushed first to last), leaving nresults results on the stack
 * (LUA_MULTRET: all of them; count them with lua_gettop). `name` is a global or a
 * dotted path through tables ("train_step", "torch.manual_seed", "model.forward"); the
 * value may be a function or a callable object (nnrepl_call(S, "model", 1, 1) runs
 * model(x)). A method needs its object as the first argument, as in Lua's
 * model.forward(model, x). On success the arguments are replaced by the results; on
 * failure the arguments are popped, nothing is pushed and the status is returned
 * (NNREPL_ERRARG if `name` is not found or not callable). */
int nnrepl_call(nnrepl_State *S, const char *name, int nargs, int nresults);

/* Registers a C function as a Lua global; a dotted name ("host.log") puts it into
 * nested tables, created when missing. The function follows the lua_CFunction rules
 * (its arguments on its own stack, returns the number of results, raises errors with
 * luaL_error); it reads tensor arguments with nnrepl_totensor and pushes tensor
 * results with nnrepl_pushtensor. It may call back into S (nnrepl_dostring,
 * nnrepl_call) when Lua calls it from the main thread, not from inside a coroutine.
 * Returns NNREPL_OK, or NNREPL_ERRARG when a part of the path is not a table. */
int nnrepl_register(nnrepl_State *S, const char *name, lua_CFunction f);

/* Stops the code running in S: the running nnrepl_dostring/dofile/call returns
 * NNREPL_ERRINTERRUPTED with an "interrupted" message. The error is raised again at
 * each Lua step until the call returns, so a pcall in the script cannot hold it (and
 * Lua-written __close handlers that run on the way out are stopped as well; C ones,
 * such as torch.no_grad's, run).
 * Callable from any thread or a signal handler while S is open; S stays usable for
 * the next call. No effect when nothing runs. A long C operation (a big matmul) is
 * not cut short: the error comes at the next Lua step after it; a loop running inside
 * a coroutine is only reached when it yields or ends. */
void nnrepl_interrupt(nnrepl_State *S);

/* ---- tensors ---- */

/* Pushes a new Tensor on the stack made from the host's description (see
 * nnrepl_tensor): with NNREPL_COPY, a contiguous copy of the data (release is not
 * used); with NNREPL_BORROW, a tensor over the host's memory. CUDA data must be device
 * memory of that GPU (CUDA is then required). Returns NNREPL_OK, or NNREPL_ERRARG (bad
 * descriptor), NNREPL_ERRRUN (the engine refused, e.g. no CUDA) or NNREPL_ERRMEM; on
 * failure nothing is pushed and release is not called. */
int nnrepl_push_tensor(nnrepl_State *S, const nnrepl_tensor *desc, int mode);

/* Reads the Tensor at stack index idx: *out gets its data pointer (element 0, device
 * memory for CUDA tensors), ndim, shape, strides (always set), dtype and device
 * (device_index -1 for the CPU); release fields NULL. The pointers stay valid while
 * the Lua value stays alive and keeps its shape (in-place resizing ops change it).
 * Work queued on a GPU may still be writing a CUDA tensor: run
 * torch.cuda.synchronize() first. Returns NNREPL_OK, or NNREPL_ERRARG if the value is
 * not a tensor (or a closed one). Does not change the stack. */
int nnrepl_get_tensor(nnrepl_State *S, int idx, nnrepl_tensor *out);

/* nnrepl_push_tensor, then assigns the tensor to the global (or dotted path, tables
 * created when missing) `name`; the stack is left as it was. */
int nnrepl_set_global_tensor(nnrepl_State *S, const char *name, const nnrepl_tensor *desc, int mode);

/* nnrepl_get_tensor on the value of the global (or dotted path) `name`; the pointers
 * stay valid while that value stays alive. The stack is left as it was. */
int nnrepl_get_global_tensor(nnrepl_State *S, const char *name, nnrepl_tensor *out);

/* ---- tensors inside C functions called by Lua (nnrepl_register) ----
 * These work on the lua_State the function received, which is the stack of the
 * calling coroutine when it runs in one. */

/* As nnrepl_get_tensor, for the value at idx of L: returns 1 and fills *out if it is
 * a tensor, else returns 0. Never raises. */
int nnrepl_totensor(lua_State *L, int idx, nnrepl_tensor *out);

/* As nnrepl_push_tensor on L, except that a failure raises a Lua error (in which case
 * release is not called). */
void nnrepl_pushtensor(lua_State *L, const nnrepl_tensor *desc, int mode);

#ifdef __cplusplus
}
#endif

#endif
