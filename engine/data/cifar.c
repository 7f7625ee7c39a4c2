#include "cifar.h"

#include <stdlib.h>
#include <string.h>

/* Check one file's bytes: whole records, labels in range. Returns the record count or -1. */
static int64_t check(const uint8_t *p, size_t n, const char *name)
{
    if (n == 0) {
        nn_error(NN_ERR_RUNTIME, "%s: empty file (expected CIFAR-10 records of %d bytes)", name, NN_CIFAR_RECORD);
        return -1;
    }
    if (n % NN_CIFAR_RECORD) {
        nn_error(NN_ERR_RUNTIME, "%s: truncated or corrupt CIFAR-10 file (%zu bytes is not a whole number of %d-byte records: %zu bytes over)",
                 name, n, NN_CIFAR_RECORD, n % NN_CIFAR_RECORD);
        return -1;
    }
    size_t records = n / NN_CIFAR_RECORD;
    for (size_t r = 0; r < records; r++) {
        uint8_t label = p[r * NN_CIFAR_RECORD];
        if (label >= NN_CIFAR_CLASSES) {
            nn_error(NN_ERR_RUNTIME, "%s: corrupt CIFAR-10 file (label %d out of range [0, %d] in record %zu)", name, label,
                     NN_CIFAR_CLASSES - 1, r);
            return -1;
        }
    }
    return (int64_t)records;
}

static void unpack(const uint8_t *p, int64_t records, uint8_t *img, int64_t *lab)
{
    for (int64_t r = 0; r < records; r++, p += NN_CIFAR_RECORD) {
        lab[r] = p[0];
        memcpy(img + r * (NN_CIFAR_RECORD - 1), p + 1, NN_CIFAR_RECORD - 1);
    }
}

static nn_status alloc(int64_t records, nn_tensor **images, nn_tensor **labels)
{
    int64_t ishape[4] = {records, 3, 32, 32};
    *images = nn_empty(4, ishape, NN_U8, NN_DEVICE_CPU);
    *labels = *images ? nn_empty(1, &records, NN_I64, NN_DEVICE_CPU) : NULL;
    if (*labels) return NN_OK;
    nn_release(*images);
    *images = NULL;
    return nn_last_status();
}

nn_status nn_cifar_parse(const uint8_t *p, size_t n, const char *name, nn_tensor **images, nn_tensor **labels)
{
    *images = *labels = NULL;
    int64_t records = check(p, n, name);
    if (records < 0) return nn_last_status();
    if (alloc(records, images, labels)) return nn_last_status();
    unpack(p, records, nn_data(*images), nn_data(*labels));
    return NN_OK;
}

nn_status nn_cifar_load(const char *const *paths, int npaths, nn_tensor **images, nn_tensor **labels)
{
    *images = *labels = NULL;
    if (npaths <= 0) return nn_error(NN_ERR_ARG, "CIFAR-10: no files given");
    nn_bytes *files = calloc((size_t)npaths, sizeof *files);
    if (!files) return nn_error(NN_ERR_NOMEM, "out of memory");
    nn_status st = NN_OK;
    int64_t total = 0;
    for (int i = 0; i < npaths && !st; i++) {
        int64_t r = -1;
        if (!(st = nn_read_file(paths[i], &files[i])) && (r = check(files[i].data, files[i].len, paths[i])) < 0) st = nn_last_status();
        total += r;
    }
    if (!st && !(st = alloc(total, images, labels))) {
        int64_t at = 0;
        for (int i = 0; i < npaths; i++) {
            int64_t r = (int64_t)(files[i].len / NN_CIFAR_RECORD);
            unpack(files[i].data, r, (uint8_t *)nn_data(*images) + at * (NN_CIFAR_RECORD - 1), (int64_t *)nn_data(*labels) + at);
            at += r;
        }
    }
    for (int i = 0; i < npaths; i++) nn_bytes_free(&files[i]);
    free(files);
    return st;
}
