/* The Lua side of tensors, shared by every binding file: the Tensor userdata,
 * argument helpers (tensors, numbers, sizes, dims, dtypes, devices, keyword
 * tables) and the conversion of engine errors into Lua errors.
 *
 * A Tensor is a full userdata holding one reference to an nn_tensor; the
 * metatable is registered as "torch.Tensor" and also stored in the registry
 * under the light key LT_TENSOR_MT (no string lookups on the hot path). A
 * closed tensor (after <close>) holds NULL; using it raises an error.
 *
 * Error rules: an engine call that fails returns NULL/status with the message
 * set; the binding releases what it holds, then calls lt_fail(L, arg), which
 * raises `bad argument #arg to 'fn' (message)` for argument errors (shape,
 * dtype, index, value) and a plain error with the engine's message otherwise. */
#ifndef LT_H
#define LT_H

#include <lauxlib.h>
#include <lua.h>

#include "ops.h"

extern const char LT_TENSOR_MT[1]; /* address = registry key of the Tensor metatable */
extern const char LT_DTYPES[1];    /* registry key: table dtype index + 1 -> dtype object */

typedef struct { nn_tensor *t; size_t bytes; } lt_tensor; /* the userdata block; bytes: what it reported to the GC */

/* ---- tensors ---- */
/* Push t as a new userdata, taking over the caller's reference. t == NULL raises
 * the engine's error (lt_fail(L, 0)). */
void lt_push(lua_State *L, nn_tensor *t);
/* Push t, or raise the engine error as an argument error naming argument arg. */
void lt_push_or_fail(lua_State *L, nn_tensor *t, int arg);
/* The tensor at idx (borrowed), or NULL if the value is not a Tensor. A closed
 * tensor raises an error. */
nn_tensor *lt_totensor(lua_State *L, int idx);
/* The tensor at idx, or `bad argument #idx (tensor expected, got T)`. */
nn_tensor *lt_check(lua_State *L, int idx);
int lt_is_tensor(lua_State *L, int idx);

/* The tensors of the list at idx (LT_TENSORS), or the gradients of the params there, read in C
 * (LT_GRADS: each must have one; LT_SOME_GRADS: those that have one), in a buffer pushed on the
 * stack for the GC to free, borrowed; *n: how many. Per-step library code reads .grad this way:
 * a Tensor userdata for it would report its bytes to the collector's pacing again (tensor.c). */
enum { LT_TENSORS, LT_GRADS, LT_SOME_GRADS };
nn_tensor **lt_tensor_list(lua_State *L, int idx, int *n, int what);

/* A tensor, or a number/boolean made into a wrapped 0-dim tensor. Returns a new
 * reference in every case (release it). Raises `tensor or number expected`. */
nn_tensor *lt_operand(lua_State *L, int idx);
/* Nonzero if the value at idx can be an operand (tensor, number, boolean). */
int lt_is_operand(lua_State *L, int idx);

/* nn_binary, except that tensor ^ number uses nn_pow_scalar where the dtype allows. */
nn_tensor *lt_binary(nn_op op, nn_tensor *a, nn_tensor *b);

/* The Lua state running the backward pass now (NULL: none from Lua): where Lua functions the
 * engine calls during backward (hooks, custom Functions) run. */
lua_State *lt_backward_state(void);

/* ---- complex numbers (complex.c) ---- */
void lt_push_complex(lua_State *L, double re, double im);
/* 1 and the parts if idx holds a complex number (torch.complex_number), else 0 */
int lt_tocomplex(lua_State *L, int idx, double *re, double *im);
/* element index of CPU tensor t as a complex number */
void lt_push_element(lua_State *L, const nn_tensor *t, const int64_t *index);
int lt_field_real(lua_State *L); /* x.real, x.imag */
int lt_field_imag(lua_State *L);
int lt_set_part(lua_State *L, nn_tensor *t, int imag); /* x.real = v (imag 0) or x.imag = v: v at arg 3 */
void lt_open_complex(lua_State *L);

/* ---- errors ---- */
/* Raise the engine's last error; arg > 0 makes argument errors name arg. */
int lt_fail(lua_State *L, int arg);

/* ---- hints for Python habits (hints.c) ---- */
/* Makes each C function of the method table at idx that has no upvalues a closure of its own
 * with a marker upvalue, so that x.f(...) (a method called with '.') can be told from torch.f. */
void lt_mark_methods(lua_State *L, int idx);
/* Raises "bad argument #1 to 'f' (<expected> expected, got T)", with "call it as x:f(...)" when
 * the running C function is a marked method called with '.'. */
int lt_self_error(lua_State *L, const char *expected);

/* ---- keyword tables ---- */
/* Nonzero if idx holds a plain table that is a keyword table (no [1], no metatable). */
int lt_is_opts(lua_State *L, int idx);
/* Check that every key of the table at idx is one of the NULL-terminated names;
 * otherwise `bad argument #idx to 'fn' (unknown keyword 'xyz')`. idx may hold nil
 * or none (then nothing to check). */
void lt_check_opts(lua_State *L, int idx, const char *const *names);
/* The torch.Generator in field "generator" of the option table at o (NULL: none given). Random ops
 * made between lt_generator_begin and lt_generator_end draw from it; begin returns what end restores. */
nn_generator *lt_opt_generator(lua_State *L, int o);
nn_generator *lt_generator_begin(nn_generator *g);
void lt_generator_end(nn_generator *g, nn_generator *prev);
/* Push field `name` of the options table at idx (nil if idx is not a table);
 * returns its Lua type. */
int lt_opt(lua_State *L, int idx, const char *name);
double lt_opt_number(lua_State *L, int idx, const char *name, double def);
int lt_opt_bool(lua_State *L, int idx, const char *name, int def);
/* The `dtype` / `device` field of the options table at idx, or def. */
nn_dtype lt_opt_dtype(lua_State *L, int idx, nn_dtype def);
nn_device lt_opt_device(lua_State *L, int idx, nn_device def);
/* torch.get_default_device(): the factories' device when no device= is given (tensor_create.c) */
nn_device lt_default_device(void);

/* ---- sizes and dims ---- */
/* Read a size given as integers in [first, last], or as one table or torch.Size
 * at first. Returns the number of dims; raises on a bad entry. */
int lt_sizes(lua_State *L, int first, int last, int64_t *shape);
/* The index of the last argument, not counting a trailing keyword table. */
int lt_last_positional(lua_State *L);
/* A dim (number) or list of dims (table) at idx as a bitmask over ndim dims. */
uint32_t lt_dim_mask(lua_State *L, int idx, int ndim);
/* One dim at idx, wrapped into [0, ndim) (ndim 0 accepts 0 and -1). */
int lt_check_dim(lua_State *L, int idx, int ndim);

/* ---- dtypes, devices, sizes as Lua objects (tensor_types.c) ---- */
void lt_push_dtype(lua_State *L, nn_dtype dt);
/* The dtype at idx (dtype object or name string), or NN_DTYPE_NONE. */
nn_dtype lt_todtype(lua_State *L, int idx);
nn_dtype lt_check_dtype(lua_State *L, int idx);
/* index -1: a device with no index ("cuda", "cpu") */
void lt_push_device(lua_State *L, nn_device d);
/* The device at idx (device object, "cpu", "cuda", "cuda:1", integer n = cuda:n);
 * returns 0 if the value is not a device. */
int lt_todevice(lua_State *L, int idx, nn_device *d);
nn_device lt_check_device(lua_State *L, int idx);
void lt_push_size(lua_State *L, int ndim, const int64_t *shape);
/* The dims of a torch.Size at idx, or -1 if it is not one; *shape points into it. */
int lt_tosize(lua_State *L, int idx, const int64_t **shape);

/* ---- Python subscripts (tensor_index.c): the Tensor's __index / __newindex fallbacks for a
 * key that is no method, field or integer ---- */
/* x[k]: a subscript string (":, 1:3") gives a view, any other string nil; an integer or bool
 * tensor, or a Lua list of integers or booleans, indexes like PyTorch (a copy). */
int lt_index_get(lua_State *L);
/* x[k] = v for such a key; returns 0, doing nothing, when k is a string that is no subscript. */
int lt_index_set(lua_State *L);

/* ---- per-area openers: each gets the torch table on top of the stack and leaves
 * the stack as it found it (nnrepl_lib.c calls them in order) ---- */
void lt_open_tensor(lua_State *L);  /* tensor.c: the metatable, torch.Tensor */
void lt_open_types(lua_State *L);   /* tensor_types.c: dtypes, device, Size */
void lt_open_views(lua_State *L);   /* tensor_views.c: geometry, views, conversion */
void lt_open_math(lua_State *L);    /* tensor_math.c: elementwise, reductions, matmul */
void lt_open_create(lua_State *L);  /* tensor_create.c: torch.tensor, zeros, ... */
void lt_open_autograd(lua_State *L); /* autograd.c: backward, detach, no_grad, ... */
void lt_open_saved_hooks(lua_State *L); /* saved_hooks.c: torch._set_saved_tensors_hooks (torch at -1) */
int lt_field_grad_fn(lua_State *L);  /* autograd.c: the x.grad_fn field */
void lt_open_storage(lua_State *L); /* storage.c: torch._storage_view, _storage_resize_ */
void lt_open_denormal(lua_State *L); /* denormal.c: torch.set_flush_denormal */
void lt_open_rnn(lua_State *L);     /* rnn.c: torch._cudnn_rnn */
void lt_open_autograd_function(lua_State *L); /* autograd_function.c: torch._function_node */
void lt_open_cuda(lua_State *L);    /* cuda.c: torch.cuda, pin_memory */
void lt_open_cuda_graph(lua_State *L); /* cuda_graph.c: torch.cuda.CUDAGraph */
void lt_open_cuda_debug(lua_State *L); /* cuda_debug.c: sync debug mode, allocator views, NVML */
void lt_open_nnfunc(lua_State *L);  /* nnfunc.c: conv2d, pools, softmax, nll_loss, index ops, ... */
void lt_open_data(lua_State *L);    /* data.c: torch.Generator, randperm, torch._data (datasets, loader) */
void lt_open_image(lua_State *L);   /* image.c: torch._image (codecs, image transforms' loops) */
/* image.c: a number, list of numbers or 1-d tensor at idx into v (1 to max values); returns the count */
int lt_image_numbers(lua_State *L, int idx, double *v, int max, const char *what);
void lt_open_image_augment(lua_State *L); /* image_augment.c: the augmentations' loops, into the table on top */
void lt_open_optim(lua_State *L);   /* optim.c: torch._optim (optimizer steps) */
void lt_open_dist(lua_State *L);    /* dist.c: torch._dist (torch.distributed, DDP's reducer) */
void lt_open_io(lua_State *L);      /* io.c: torch._io (safetensors files, TensorBoard event files) */
/* The memory_format field (torch.channels_last, ...) of the keyword table at idx as an
 * nn_memory_format, or -1 when idx holds no table or the field is nil (amp.c). */
int lt_opt_memory_format(lua_State *L, int idx);
void lt_open_amp(lua_State *L);     /* amp.c: torch._amp (autocast, GradScaler kernels), memory formats; after lt_open_views */
void lt_open_backends(lua_State *L); /* backends.c: torch._backends (the TF32 and cudnn.benchmark switches) */
void lt_open_sort(lua_State *L); /* sort.c: torch._argsort (engine/sort.h) */
void lt_open_matfile(lua_State *L); /* matfile.c: torch._matfile (MATLAB .mat inflate, decode) */
void lt_open_profiler(lua_State *L); /* profiler.c: torch._profiler (engine/profiler.h) */
void lt_open_tracer(lua_State *L);   /* tracer.c: torch._tracer (engine/tracer.h) */
int luaopen_time(lua_State *L);     /* time.c */
int luaopen_hashlib(lua_State *L);  /* hashlib.c */
int luaopen_pymath(lua_State *L);   /* pymath.c: require "_pymath", the libm half of Python's math names */
int luaopen_pyos(lua_State *L);     /* pyos.c: require "_pyos", the system calls of os.* and shutil */
int luaopen_re_pcre2(lua_State *L); /* re.c: require "_re", the PCRE2 layer of re.lua */
int luaopen_unicodedata(lua_State *L); /* unicodedata.c: Python's unicodedata through utf8proc */
int luaopen_pystr(lua_State *L);    /* pystr.c: require "_pystr", the Unicode half of Python's str methods */

#endif
