/* CIFAR binary batches. CIFAR-10 (data_batch_1.bin ... data_batch_5.bin, test_batch.bin):
 * records of 1 label byte (0..9) and 3072 image bytes (the R, G and B planes of a 32x32
 * image, rows in order). CIFAR-100 (train.bin, test.bin): 2 label bytes, the coarse label
 * (0..19) then the fine one (0..99), then the 3072 image bytes. Images come out uint8
 * [N, 3, 32, 32], labels (the last label byte) int64 [N], and for CIFAR-100 the coarse
 * labels int64 [N]. A size that is not whole records, or a label out of range, is an error
 * naming the file and record. */
#ifndef NN_DATA_CIFAR_H
#define NN_DATA_CIFAR_H

#include "bytes.h"
#include "tensor.h"

#define NN_CIFAR_IMAGE 3072
#define NN_CIFAR_RECORD 3073
#define NN_CIFAR_CLASSES 10

typedef struct {
    const char *name;  /* "CIFAR-10", in messages */
    int label_bytes;   /* 1 or 2 */
    int classes[2];    /* each label byte's class count */
} nn_cifar_format;

extern const nn_cifar_format nn_cifar10, nn_cifar100;

/* CIFAR-10 */
nn_status nn_cifar_parse(const uint8_t *p, size_t n, const char *name, nn_tensor **images, nn_tensor **labels);
/* Read and concatenate the files in order. */
nn_status nn_cifar_load(const char *const *paths, int npaths, nn_tensor **images, nn_tensor **labels);

/* Either format; coarse (may be NULL) gets the first label byte when there are two. */
nn_status nn_cifar_parse_as(const nn_cifar_format *f, const uint8_t *p, size_t n, const char *name, nn_tensor **images,
                            nn_tensor **labels, nn_tensor **coarse);
nn_status nn_cifar_load_as(const nn_cifar_format *f, const char *const *paths, int npaths, nn_tensor **images,
                           nn_tensor **labels, nn_tensor **coarse);

#endif
