/* TensorBoard event files (events.out.tfevents.*): the writer behind
 * torch.utils.tensorboard.SummaryWriter.
 *
 * A file is a sequence of TFRecords:
 *   u64 length (little-endian) | u32 masked_crc32c(length bytes) | data | u32 masked_crc32c(data)
 * with masked_crc(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 over CRC-32C
 * (Castagnoli, reflected polynomial 0x82F63B78). Each record is a serialized
 * tensorflow.Event protobuf:
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }
 *   Value   { string tag = 1; float simple_value = 2; Image image = 4; HistogramProto histo = 5;
 *             TensorProto tensor = 8; SummaryMetadata metadata = 9; }
 *   Image   { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string = 4; }
 *   HistogramProto { double min = 1, max = 2, num = 3, sum = 4, sum_squares = 5;
 *                    repeated double bucket_limit = 6 [packed]; repeated double bucket = 7 [packed]; }
 *   TensorProto { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
 *   SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1; } }
 * The first record is Event{wall_time, file_version: "brain.Event:2"}.
 *
 * Each record goes to the file in one write() as it is made (no user-space
 * buffer), so a crash of the process loses nothing already logged. */
#ifndef NN_TFEVENTS_H
#define NN_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* CRC-32C of n bytes, continuing from crc (start with 0). */
uint32_t nn_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord's masked CRC-32C of n bytes. */
uint32_t nn_tfrecord_crc(const void *data, size_t n);

typedef struct nn_tb_writer nn_tb_writer;

/* Create the event file at path (the directory must exist) and write the
 * file_version event. NULL with the error set on failure. */
nn_tb_writer *nn_tb_open(const char *path, double wall_time);
/* Close the file and free w (NULL is fine). Returns the close status. */
nn_status nn_tb_close(nn_tb_writer *w);
const char *nn_tb_path(const nn_tb_writer *w);

/* One framed record of n bytes (a serialized Event). */
nn_status nn_tb_write_record(nn_tb_writer *w, const void *data, size_t n);

/* Summary events; step 0 is written as an absent field (proto3's default). */
nn_status nn_tb_scalar(nn_tb_writer *w, const char *tag, double value, int64_t step, double wall_time);
/* PNG bytes of an h x w image with c channels. */
nn_status nn_tb_image(nn_tb_writer *w, const char *tag, int64_t h, int64_t wd, int c, const void *png, size_t len,
                      int64_t step, double wall_time);
/* A text summary: plugin "text", a DT_STRING tensor of shape [1]. */
nn_status nn_tb_text(nn_tb_writer *w, const char *tag, const char *text, size_t len, int64_t step, double wall_time);

/* An event holding an already serialized Summary of n bytes (the plugins'
 * summaries that torch_tensorboard_more.lua encodes). */
nn_status nn_tb_summary(nn_tb_writer *w, const void *summary, size_t n, int64_t step, double wall_time);

/* A histogram the way torch.utils.tensorboard makes one (numpy.histogram, then
 * empty buckets trimmed to one on the left, right bucket limits):
 * edges != NULL: nedges sorted bin edges (values outside are not counted);
 * edges == NULL: nedges equal-width bins over [min, max] (±0.5 when min == max).
 * max_bins > 0 merges neighbouring buckets down to at most max_bins. */
typedef struct {
    double min, max, num, sum, sum_squares;
    int nbuckets;
    double *limits, *counts; /* malloc'd, nbuckets each */
} nn_tb_histo;
nn_status nn_tb_make_histogram(const double *values, int64_t n, const double *edges, int nedges, int max_bins,
                               nn_tb_histo *out);
void nn_tb_histo_free(nn_tb_histo *h);
nn_status nn_tb_histogram(nn_tb_writer *w, const char *tag, const nn_tb_histo *h, int64_t step, double wall_time);

#endif
