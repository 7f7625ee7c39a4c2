/* IDX files, the MNIST format: bytes 0 0 <type> <ndim>, ndim big-endian uint32
 * sizes, then the elements big-endian in row-major order. Types (torchvision's
 * dtypes): 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
 * The data must fill the file exactly; anything else is an error naming the file. */
#ifndef NN_DATA_IDX_H
#define NN_DATA_IDX_H

#include "bytes.h"
#include "tensor.h"

/* Parse IDX bytes (not compressed); name appears in errors. A new CPU tensor. */
nn_tensor *nn_idx_parse(const uint8_t *p, size_t n, const char *name);
/* Parse and take over b's buffer (no copy for uint8 data); b is emptied either way. */
nn_tensor *nn_idx_parse_bytes(nn_bytes *b, const char *name);
/* Read an IDX file, gzip-compressed or not. */
nn_tensor *nn_idx_load(const char *path);

#endif
