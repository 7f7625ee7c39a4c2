/* Complex tensors (complex64, complex128): the frontends that have no real counterpart
 * (views as real pairs, real/imag, torch.complex, polar, conj, angle, sgn, complex random
 * fills) and the rules the shared frontends consult for a complex operand. Elementwise
 * kernels live in cpu/complex.c; a kernel that has no complex form is refused up front
 * (nn_complex_guard), never run on the bytes. */
#ifndef NN_COMPLEX_OPS_H
#define NN_COMPLEX_OPS_H

#include "backend.h"

/* nn_dispatch's check: an op given a complex operand must have a complex kernel on its device
 * ("<op>: \"<op>\" not implemented for 'ComplexFloat'"). */
nn_status nn_complex_guard(const nn_kargs *a);
/* The result dtype of a unary op of complex input in (abs, angle: the real dtype), or an error. */
nn_status nn_complex_unary_dtype(const char *fn, nn_op op, nn_dtype in, nn_dtype *out);
/* Whether binary op computes in complex dtype c (comparisons other than eq/ne do not). */
nn_status nn_complex_binary_dtype(const char *fn, nn_op op, nn_dtype c);
/* The ops the complex elementwise kernels compute (cpu/complex.c, cuda/complex.cu) */
bool nn_complex_unary_op(nn_op op);  /* pow_scalar included */
bool nn_complex_binary_op(nn_op op);

nn_tensor *nn_view_as_real(nn_tensor *t);    /* [..., 2] real view of a complex tensor */
nn_tensor *nn_view_as_complex(nn_tensor *t); /* complex view of a real [..., 2] with unit last stride */
nn_tensor *nn_real(nn_tensor *t);            /* a view; a real tensor itself */
nn_tensor *nn_imag(nn_tensor *t);            /* a view; an error for a real tensor */
nn_tensor *nn_complex(nn_tensor *re, nn_tensor *im); /* torch.complex: broadcast, float16/32/64 of one dtype */
nn_tensor *nn_polar(nn_tensor *abs, nn_tensor *angle);
nn_tensor *nn_conj(nn_tensor *t);            /* conj_physical; a real tensor itself */
nn_tensor *nn_angle(nn_tensor *t);
nn_tensor *nn_sgn(nn_tensor *t);             /* z / |z| (0 at 0); sign for real tensors */
/* rand/randn of a complex dtype: real and imaginary parts each U[0,1) or N(0, 1/2) */
nn_tensor *nn_complex_random(bool normal, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev);
nn_status nn_fill_complex_(nn_tensor *self, double re, double im);

/* The unnormalized DFT of x (complex) along dim, exp(-2 pi i jk/n), or with the inverse's sign:
 * torch.fft's building block (engine/fft.c; its gradient is the transform of the other sign). */
nn_tensor *nn_fft_c2c(nn_tensor *x, int dim, bool inverse);

/* autograd of the views and of torch.complex (grad_complex.c) */
nn_status nn_record_view_as_real(nn_tensor *x, nn_tensor *out);
nn_status nn_record_view_as_complex(nn_tensor *x, nn_tensor *out);
nn_status nn_record_complex(nn_tensor *re, nn_tensor *im, nn_tensor *out);

#endif
