#include "cifar.h"

#include <stdlib.h>
#include <string.h>

const nn_cifar_format nn_cifar10 = {"CIFAR-10", 1, {10, 0}};
const nn_cifar_format nn_cifar100 = {"CIFAR-100", 2, {20, 100}};

static size_t record_size(const nn_cifar_format *f) { return (size_t)f->label_bytes + NN_CIFAR_IMAGE; }

/* Check one file's bytes: whole records, labels in range. Returns the record count or -1. */
static int64_t check(const nn_cifar_format *f, const uint8_t *p, size_t n, const char *name)
{
    size_t rec = record_size(f);
    if (n == 0) {
        nn_error(NN_ERR_RUNTIME, "%s: empty file (expected %s records of %zu bytes)", name, f->name, rec);
        return -1;
    }
    if (n % rec) {
        nn_error(NN_ERR_RUNTIME, "%s: truncated or corrupt %s file (%zu bytes is not a whole number of %zu-byte records: %zu bytes over)",
                 name, f->name, n, rec, n % rec);
        return -1;
    }
    size_t records = n / rec;
    for (size_t r = 0; r < records; r++)
        for (int b = 0; b < f->label_bytes; b++) {
            uint8_t label = p[r * rec + (size_t)b];
            if (label >= f->classes[b]) {
                nn_error(NN_ERR_RUNTIME, "%s: corrupt %s file (%slabel %d out of range [0, %d] in record %zu)", name, f->name,
                         f->label_bytes == 2 ? (b == 0 ? "coarse " : "fine ") : "", label, f->classes[b] - 1, r);
                return -1;
            }
        }
    return (int64_t)records;
}

/* records at p into img, lab (the last label byte) and coarse (the first; NULL: not kept) */
static void unpack(const nn_cifar_format *f, const uint8_t *p, int64_t records, uint8_t *img, int64_t *lab, int64_t *coarse)
{
    size_t rec = record_size(f);
    for (int64_t r = 0; r < records; r++, p += rec) {
        lab[r] = p[f->label_bytes - 1];
        if (coarse) coarse[r] = p[0];
        memcpy(img + r * NN_CIFAR_IMAGE, p + f->label_bytes, NN_CIFAR_IMAGE);
    }
}

static nn_status alloc(int64_t records, nn_tensor **images, nn_tensor **labels, nn_tensor **coarse)
{
    int64_t ishape[4] = {records, 3, 32, 32};
    *images = nn_empty(4, ishape, NN_U8, NN_DEVICE_CPU);
    *labels = *images ? nn_empty(1, &records, NN_I64, NN_DEVICE_CPU) : NULL;
    if (coarse) *coarse = *labels ? nn_empty(1, &records, NN_I64, NN_DEVICE_CPU) : NULL;
    if (coarse ? *coarse != NULL : *labels != NULL) return NN_OK;
    nn_release(*images);
    nn_release(*labels);
    *images = *labels = NULL;
    return nn_last_status();
}

/* the coarse labels are kept only for a two-label format and a caller that wants them */
static nn_tensor **coarse_out(const nn_cifar_format *f, nn_tensor **coarse)
{
    if (coarse) *coarse = NULL;
    return f->label_bytes == 2 ? coarse : NULL;
}

nn_status nn_cifar_parse_as(const nn_cifar_format *f, const uint8_t *p, size_t n, const char *name, nn_tensor **images,
                            nn_tensor **labels, nn_tensor **coarse)
{
    *images = *labels = NULL;
    coarse = coarse_out(f, coarse);
    int64_t records = check(f, p, n, name);
    if (records < 0) return nn_last_status();
    if (alloc(records, images, labels, coarse)) return nn_last_status();
    unpack(f, p, records, nn_data(*images), nn_data(*labels), coarse ? nn_data(*coarse) : NULL);
    return NN_OK;
}

nn_status nn_cifar_load_as(const nn_cifar_format *f, const char *const *paths, int npaths, nn_tensor **images,
                           nn_tensor **labels, nn_tensor **coarse)
{
    *images = *labels = NULL;
    coarse = coarse_out(f, coarse);
    if (npaths <= 0) return nn_error(NN_ERR_ARG, "%s: no files given", f->name);
    nn_bytes *files = calloc((size_t)npaths, sizeof *files);
    if (!files) return nn_error(NN_ERR_NOMEM, "out of memory");
    nn_status st = NN_OK;
    int64_t total = 0;
    for (int i = 0; i < npaths && !st; i++) {
        int64_t r = -1;
        if (!(st = nn_read_file(paths[i], &files[i])) && (r = check(f, files[i].data, files[i].len, paths[i])) < 0) st = nn_last_status();
        total += r;
    }
    if (!st && !(st = alloc(total, images, labels, coarse))) {
        int64_t at = 0;
        for (int i = 0; i < npaths; i++) {
            int64_t r = (int64_t)(files[i].len / record_size(f));
            unpack(f, files[i].data, r, (uint8_t *)nn_data(*images) + at * NN_CIFAR_IMAGE, (int64_t *)nn_data(*labels) + at,
                   coarse ? (int64_t *)nn_data(*coarse) + at : NULL);
            at += r;
        }
    }
    for (int i = 0; i < npaths; i++) nn_bytes_free(&files[i]);
    free(files);
    return st;
}

nn_status nn_cifar_parse(const uint8_t *p, size_t n, const char *name, nn_tensor **images, nn_tensor **labels)
{
    return nn_cifar_parse_as(&nn_cifar10, p, n, name, images, labels, NULL);
}

nn_status nn_cifar_load(const char *const *paths, int npaths, nn_tensor **images, nn_tensor **labels)
{
    return nn_cifar_load_as(&nn_cifar10, paths, npaths, images, labels, NULL);
}
