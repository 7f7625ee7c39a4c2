/* safetensors files: the checkpoint format (https://github.com/huggingface/safetensors).
 *
 *   [8 bytes: N, little-endian u64][N bytes: JSON header][data]
 *
 * The header maps each tensor name to {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]} (offsets into the data section, which
 * follows the header), plus an optional "__metadata__": {string: string}.
 * Dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL; data is little-endian, row-major.
 *
 * Writing is atomic: the bytes go to a temporary file in the target's
 * directory, which is fsync'd and renamed over the target, and the directory
 * is fsync'd; on any failure the temporary file is removed and the target is
 * untouched. Tensors of any device and any strides are written (copied to a
 * contiguous CPU buffer first); tensors are laid out in the data section by
 * element size, largest first, so every tensor starts aligned to its element
 * size, and the header is padded with spaces to a multiple of 8 bytes.
 *
 * Reading validates everything before allocating tensor memory: the header
 * length against the file size (and at most 100 MB), the JSON, the dtypes,
 * shapes and offsets (inside the data section, not overlapping, end - begin ==
 * numel * element size). Error messages name the file. */
#ifndef NN_SAFETENSORS_H
#define NN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#define NN_ST_MAX_HEADER 100000000u /* the reference implementation's limit */

/* Write n tensors under the given names (unique, UTF-8) and nmeta metadata
 * string pairs (nmeta 0: no __metadata__) to path, atomically. */
nn_status nn_safetensors_save(const char *path, int n, const char *const *names, nn_tensor *const *tensors, int nmeta,
                              const char *const *meta_keys, const char *const *meta_values);

/* An opened, validated file: its header parsed, data not read yet. */
typedef struct nn_safetensors nn_safetensors;

/* Open and validate a file. NULL with the error set on failure. */
nn_safetensors *nn_safetensors_open(const char *path);
/* The same from bytes in memory (copied); name appears in messages. */
nn_safetensors *nn_safetensors_open_mem(const void *bytes, size_t n, const char *name);
void nn_safetensors_close(nn_safetensors *f);

/* Tensors in the order of the header's text. */
int nn_safetensors_count(const nn_safetensors *f);
const char *nn_safetensors_name(const nn_safetensors *f, int i);
nn_dtype nn_safetensors_dtype(const nn_safetensors *f, int i);
int nn_safetensors_shape(const nn_safetensors *f, int i, const int64_t **shape); /* returns ndim */
/* Tensor i as a new contiguous CPU tensor. */
nn_tensor *nn_safetensors_load(nn_safetensors *f, int i);
/* Index of the tensor named name, or -1. */
int nn_safetensors_find(const nn_safetensors *f, const char *name);

/* __metadata__ entries, in the header's order. */
int nn_safetensors_meta_count(const nn_safetensors *f);
const char *nn_safetensors_meta_key(const nn_safetensors *f, int i);
const char *nn_safetensors_meta_value(const nn_safetensors *f, int i, size_t *len);
/* The value of metadata key, or NULL. */
const char *nn_safetensors_meta_get(const nn_safetensors *f, const char *key, size_t *len);

/* "F32" ... for a dtype. */
const char *nn_safetensors_dtype_name(nn_dtype dt);

#endif
