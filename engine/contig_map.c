/* nn_contig_map_op (contig_map.h) */
#include "contig_map.h"

nn_tensor *nn_contig_map_op(nn_op op, int kind, int nin, nn_tensor *const *in, nn_dtype dt, double p, double q)
{
    nn_tensor *ready[3] = {NULL, NULL, NULL}, *out = NULL;
    nn_status st = NN_OK;
    for (int k = 0; k < nin && !st; k++) {
        nn_tensor *c = nn_to_dtype(in[k], dt);
        ready[k] = c ? nn_contiguous(c) : NULL;
        nn_release(c);
        if (!ready[k]) st = nn_last_status();
    }
    nn_tensor *x = in[0];
    if (!st && !(out = nn_empty(x->ndim, x->shape, dt, x->storage->device))) st = nn_last_status();
    if (!st) {
        nn_kargs a = {.op = op, .out = {out}, .in = {ready[0], ready[1], ready[2]}, .nin = nin, .f = {p, q}, .i = {kind}};
        st = nn_dispatch(&a);
    }
    for (int k = 0; k < nin; k++) nn_release(ready[k]);
    if (st) {
        nn_release(out);
        return NULL;
    }
    return out;
}
