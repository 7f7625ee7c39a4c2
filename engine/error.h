/* Engine errors: a status code plus a message in a thread-local buffer.
 * The engine never exits or aborts; callers turn a status into a Lua error
 * (bindings) or a return code (embedding API). */
#ifndef NN_ERROR_H
#define NN_ERROR_H

#include <stdint.h>

typedef enum {
    NN_OK = 0,
    NN_ERR_ARG,       /* bad argument value */
    NN_ERR_SHAPE,     /* shapes do not match */
    NN_ERR_DTYPE,     /* dtype not allowed */
    NN_ERR_INDEX,     /* index out of range */
    NN_ERR_DEVICE,    /* wrong or mixed device, missing GPU */
    NN_ERR_NOMEM,     /* out of memory */
    NN_ERR_NOTIMPL,   /* no kernel for this op/device/dtype */
    NN_ERR_RUNTIME,   /* anything else (library failure, I/O) */
    NN_ERR_INTERRUPTED
} nn_status;

/* Set the message (printf-style) and return s, so `return nn_error(...)` reads well. */
nn_status nn_error(nn_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
nn_status nn_last_status(void);
const char *nn_last_error(void);
void nn_clear_error(void);

/* Format a shape as "[2, 3]" into buf (at least 160 bytes is always enough). */
const char *nn_shape_str(char *buf, int ndim, const int64_t *shape);

#endif
