#include "error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char msg[1024];
static _Thread_local nn_status last;

nn_status nn_error(nn_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    last = s;
    return s;
}

nn_status nn_last_status(void) { return last; }
const char *nn_last_error(void) { return msg[0] ? msg : "unknown error"; }
void nn_clear_error(void) { msg[0] = 0; last = NN_OK; }

const char *nn_shape_str(char *buf, int ndim, const int64_t *shape)
{
    int n = sprintf(buf, "[");
    for (int i = 0; i < ndim; i++)
        n += sprintf(buf + n, i ? ", %lld" : "%lld", (long long)shape[i]);
    sprintf(buf + n, "]");
    return buf;
}
