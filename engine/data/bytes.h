/* Whole-file reading for the dataset parsers: a file's bytes, gunzipped when
 * they start with the gzip magic (1f 8b), so every parser reads .gz and plain
 * files alike. Errors name the file. */
#ifndef NN_DATA_BYTES_H
#define NN_DATA_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct {
    uint8_t *data; /* malloc'd; NULL when len == 0 */
    size_t len;
} nn_bytes;

/* The largest decompressed size nn_read_file accepts (a guard against gzip bombs). */
#define NN_BYTES_LIMIT ((size_t)1 << 34)

/* Read path whole; gunzip if it is gzip data. */
nn_status nn_read_file(const char *path, nn_bytes *out);
/* Decompress gzip data (one or more members) from memory, at most limit bytes of
 * output. name appears in error messages. */
nn_status nn_gunzip(const uint8_t *in, size_t n, size_t limit, const char *name, nn_bytes *out);
int nn_is_gzip(const uint8_t *p, size_t n);
void nn_bytes_free(nn_bytes *b);

#endif
