/* CIFAR-10 binary batches (data_batch_1.bin ... data_batch_5.bin, test_batch.bin):
 * records of 1 label byte (0..9) and 3072 image bytes (the R, G and B planes of
 * a 32x32 image, rows in order). Images come out uint8 [N, 3, 32, 32], labels
 * int64 [N]. A size that is not whole records, or a label past 9, is an error
 * naming the file and record. */
#ifndef NN_DATA_CIFAR_H
#define NN_DATA_CIFAR_H

#include "bytes.h"
#include "tensor.h"

#define NN_CIFAR_RECORD 3073
#define NN_CIFAR_CLASSES 10

nn_status nn_cifar_parse(const uint8_t *p, size_t n, const char *name, nn_tensor **images, nn_tensor **labels);
/* Read and concatenate the files in order. */
nn_status nn_cifar_load(const char *const *paths, int npaths, nn_tensor **images, nn_tensor **labels);

#endif
