/* Images: PNG (libpng) and JPEG (libjpeg-turbo) codecs, and the pixel loops
 * behind torchvision.io and torchvision.transforms.
 *
 * Two families:
 *  - buffer level (engine/image.c): codecs on plain malloc'd HxWxC uint8
 *    buffers, with no other engine dependency, so the fuzz targets link
 *    engine/image.c alone. Errors go into the caller's err buffer.
 *  - tensor level (image_io.c, image_geom.c, image_color.c): the engine's
 *    usual conventions (new reference or NULL with nn_error set).
 *
 * Two layouts, and with them two semantics:
 *  - NN_IMAGE_HWC: a PIL-like image, uint8 H x W x C, C = 1 (L), 2 (LA),
 *    3 (RGB), 4 (RGBA). Operations reproduce Pillow's integer arithmetic
 *    (resize in 22-bit fixed point with a uint8 intermediate between the
 *    horizontal and vertical passes, ImageEnhance's blends, L = (19595 R +
 *    38470 G + 7471 B + 0x8000) >> 16), as torchvision does on PIL images.
 *  - NN_IMAGE_CHW: a tensor image (..., C, H, W) of any float dtype or uint8,
 *    with torchvision's tensor formulas (resize computed in double; antialias
 *    as torch.nn.functional.interpolate(antialias=True), integer outputs
 *    rounded half to even).
 * All functions are thread-safe (the data workers call them). */
#ifndef NN_IMAGE_H
#define NN_IMAGE_H

#include "tensor.h"

/* ---- buffer level (image.c) ---- */

typedef struct {
    uint8_t *data; /* malloc'd, height * width * channels bytes, row-major HWC */
    int64_t height, width;
    int channels;
} nn_image_buf;

typedef enum { NN_IMAGE_FMT_UNKNOWN, NN_IMAGE_FMT_PNG, NN_IMAGE_FMT_JPEG } nn_image_format;
nn_image_format nn_image_sniff(const void *bytes, size_t n);

/* Decode PNG or JPEG bytes. channels 0 keeps the file's channels (palette
 * becomes RGB, or RGBA with transparency; 16-bit samples keep their high
 * byte), 1..4 converts to L, LA, RGB, RGBA. JPEG to 1 channel takes the
 * decoder's luma (as torchvision's decode_jpeg does); other conversions follow
 * nn_image_convert_buf. Returns 0, or -1 with a message in err (out->data NULL). */
int nn_image_decode_buf(const void *bytes, size_t n, int channels, nn_image_buf *out, char *err, size_t errlen);

/* Encode an HWC uint8 image. PNG: 1..4 channels, level 0..9 (zlib). JPEG:
 * 1 or 3 channels, quality 1..100, 4:2:0 chroma subsampling for colour (Pillow's
 * default). *out is malloc'd. Returns 0, or -1 with a message in err. */
int nn_image_encode_png_buf(const uint8_t *hwc, int64_t h, int64_t w, int c, int level, uint8_t **out, size_t *outlen,
                            char *err, size_t errlen);
int nn_image_encode_jpeg_buf(const uint8_t *hwc, int64_t h, int64_t w, int c, int quality, uint8_t **out,
                             size_t *outlen, char *err, size_t errlen);

/* Pillow's mode conversions between 1..4 channels of npix pixels (dst must not
 * alias src): colour to L by the L24 formula above, alpha dropped or set to 255,
 * L replicated to RGB. */
void nn_image_convert_buf(const uint8_t *src, int cin, uint8_t *dst, int cout, int64_t npix);

/* Decoders refuse images with more pixels than this (default 2^28); 0 restores the default. */
void nn_image_set_max_pixels(int64_t n);

/* ---- tensor level: files and codecs (image_io.c) ---- */

/* Read and decode an image file into uint8 H x W x C (channels as above).
 * Errors name the function fn (e.g. "read_image") and the path. */
nn_tensor *nn_image_read(const char *fn, const char *path, int channels);
/* Decode the bytes of a 1-D uint8 tensor; name appears in messages. */
nn_tensor *nn_image_decode(const char *fn, nn_tensor *bytes, int channels, const char *name);
/* Encode uint8 H x W x C into a new 1-D uint8 tensor. */
nn_tensor *nn_image_encode_png(nn_tensor *hwc, int level);
nn_tensor *nn_image_encode_jpeg(nn_tensor *hwc, int quality);
/* Whole files as 1-D uint8 tensors. */
nn_tensor *nn_image_read_file(const char *fn, const char *path);
nn_status nn_image_write_file(const char *fn, const char *path, nn_tensor *bytes);

/* ---- tensor level: geometry (image_geom.c) ---- */

typedef enum { NN_IMAGE_HWC, NN_IMAGE_CHW } nn_image_layout;
typedef enum { NN_PAD_CONSTANT, NN_PAD_EDGE, NN_PAD_REFLECT, NN_PAD_SYMMETRIC } nn_pad_mode;
/* NN_INTERP_BOX, _HAMMING, _LANCZOS: Pillow's filters, for resizing PIL-like (HWC uint8) images only */
typedef enum {
    NN_INTERP_BILINEAR, NN_INTERP_NEAREST, NN_INTERP_NEAREST_EXACT, NN_INTERP_BICUBIC,
    NN_INTERP_BOX, NN_INTERP_HAMMING, NN_INTERP_LANCZOS
} nn_interp;

/* The h x w window whose top-left corner is (top, left) (may be negative or
 * reach past the image); pixels outside come from mode: fill[c % nfill] for
 * constant (nfill 0 means 0), else the edge / reflected / mirrored pixel.
 * A crop is a window inside; pad(l, t, r, b) is the window (-t, -l, H+t+b, W+l+r). */
nn_tensor *nn_image_window(nn_tensor *img, nn_image_layout layout, int64_t top, int64_t left, int64_t h, int64_t w,
                           nn_pad_mode mode, const double *fill, int nfill);
/* Reverse dim (any dtype, any tensor); a new contiguous tensor. */
nn_tensor *nn_image_flip(nn_tensor *t, int dim);
/* Resize to h x w. HWC: uint8 only, Pillow's Image.resize (bilinear is always
 * antialiased when shrinking, RGBA and LA premultiplied by alpha; nearest samples
 * pixel centres as Pillow accumulates them); antialias is ignored. CHW: float
 * dtypes and uint8, computed in double and rounded once (half to even for uint8);
 * bilinear uses align_corners=False, antialias=true is torch's
 * _upsample_bilinear2d_aa (same as plain bilinear when enlarging); nearest is
 * torch's 'nearest' (floor(x * scale)), NEAREST_EXACT is 'nearest-exact'. */
nn_tensor *nn_image_resize(nn_tensor *img, nn_image_layout layout, int64_t h, int64_t w, nn_interp interp,
                           bool antialias);

/* ---- tensor level: pixel values (image_color.c) ---- */

/* ToTensor: uint8 -> the default float dtype, v / 255. HWC: H x W x C (or H x W)
 * becomes C x H x W; CHW: the shape is kept. */
nn_tensor *nn_image_to_tensor(nn_tensor *img, nn_image_layout layout);
/* In place (t - mean[c]) / std[c] over dim -3 of a float tensor (..., C, H, W);
 * n is 1 (broadcast) or C. */
nn_status nn_image_normalize_(nn_tensor *t, const double *mean, const double *std, int n);
/* HWC uint8 image converted to c channels (nn_image_convert_buf's rules). */
nn_tensor *nn_image_convert(nn_tensor *hwc, int channels);

typedef enum { NN_COLOR_BRIGHTNESS, NN_COLOR_CONTRAST, NN_COLOR_SATURATION, NN_COLOR_HUE, NN_COLOR_GRAYSCALE } nn_color_op;
/* ColorJitter's pieces and Grayscale. HWC: Pillow's ImageEnhance (blend with a
 * black / mean-grey / greyscale image, truncated to uint8) and hue through
 * Pillow's 8-bit HSV. CHW: torchvision's tensor functional (_blend, rgb_to_grayscale
 * 0.2989/0.587/0.114, _rgb2hsv/_hsv2rgb in float32). GRAYSCALE takes factor =
 * number of output channels (1 or 3). */
nn_tensor *nn_image_adjust(nn_tensor *img, nn_image_layout layout, nn_color_op op, double factor);

/* ---- tensor level: augmentations (image_point.c, image_filter.c, image_warp.c) ---- */

typedef enum { NN_POINT_INVERT, NN_POINT_POSTERIZE, NN_POINT_SOLARIZE, NN_POINT_AUTOCONTRAST, NN_POINT_EQUALIZE } nn_point_op;
/* Per-pixel maps (arg: bits for POSTERIZE, the threshold for SOLARIZE). HWC: Pillow's ImageOps
 * lookup tables, L and RGB images only (as Pillow). CHW: torchvision's tensor functional, channels
 * 1 or 3 of (..., C, H, W); POSTERIZE and EQUALIZE take uint8 only; float images have bound 1. */
nn_tensor *nn_image_point(nn_tensor *img, nn_image_layout layout, nn_point_op op, double arg);

/* adjust_sharpness. HWC: ImageEnhance.Sharpness (blend with ImageFilter.SMOOTH, alpha kept). CHW:
 * torchvision's blend with the 3x3 [1 1 1; 1 5 1; 1 1 1] / 13 smoothing of the interior (the border
 * pixels kept); images of width or height <= 2 come back as they are (a new reference). */
nn_tensor *nn_image_sharpness(nn_tensor *img, nn_image_layout layout, double factor);

/* torchvision's _get_gaussian_kernel1d(k, sigma) in float32 (f64: float64) into out[k]. */
void nn_image_gaussian_kernel1d(int k, double sigma, bool f64, double *out);
/* Gaussian blur of a tensor image (..., H, W) (float or uint8), torchvision's: reflect padding by
 * k / 2, the kernel computed in float32 (float64 images: float64), uint8 results rounded. kx and ky
 * are the kernel's width and height, odd and positive. */
nn_tensor *nn_image_gaussian_blur(nn_tensor *img, int kx, int ky, double sx, double sy);

typedef enum { NN_WARP_AFFINE, NN_WARP_PERSPECTIVE } nn_warp_kind;
/* Resample img into an oh x ow image through a map from output to input coordinates.
 * HWC: Pillow's Image.transform(size, AFFINE (6 coefficients) | PERSPECTIVE (8), resample,
 * fillcolor) (nearest and bilinear; LA/RGBA premultiplied for bilinear); fill: nfill = C values
 * (0: black). CHW: torchvision's tensor affine/rotate (coefficients: the 2 x 3 inverse matrix about
 * the image centre, normalised by the input's size) and perspective (8 coefficients) grids, sampled
 * as grid_sample(align_corners=False, zeros) in float32 (float64 images: float64); fill: nfill 1
 * (broadcast) or C values through a mask channel, nfill 0 for fill=None. */
nn_tensor *nn_image_warp(nn_tensor *img, nn_image_layout layout, int64_t oh, int64_t ow, nn_warp_kind kind,
                         const double *coeffs, nn_interp interp, const double *fill, int nfill);
/* A tensor image sampled at grid [1, oh, ow, 2] (or [oh, ow, 2]) of normalised (x, y), as nn_image_warp's CHW path. */
nn_tensor *nn_image_grid_sample(nn_tensor *img, nn_tensor *grid, nn_interp interp, const double *fill, int nfill);

#endif
