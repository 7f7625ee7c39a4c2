/* Recurrent layers in one op each way on CUDA (cuDNN's RNN): nn.RNN, nn.LSTM and nn.GRU run
 * every step of every layer in one call, where the form composed of ops (bindings/lua/nn_rnn.lua,
 * which the CPU and the cases below keep) launches a dozen ops per step and layer. */
#ifndef NN_RNN_H
#define NN_RNN_H

#include "tensor.h"

typedef enum { NN_RNN_RELU, NN_RNN_TANH, NN_RNN_LSTM, NN_RNN_GRU } nn_rnn_mode;

/* One problem as the GPU backend takes it: x [T,N,I], hx (and cx for LSTM) [L*D,N,H], w the nw
 * parameters in PyTorch's order (per layer and direction w_ih, w_hh, then b_ih, b_hh with bias),
 * all contiguous, of one float dtype, on one CUDA device. lengths (N entries, each 1..T, the
 * longest T) for a packed batch: a sequence's output is zero past its length and its final state
 * is the one at its length; NULL: all T. */
typedef struct nn_rnn_problem {
    nn_rnn_mode mode;
    int64_t T, N, I, H, layers;
    bool bidirectional, bias;
    const int64_t *lengths;
    nn_tensor *x, *hx, *cx;
    nn_tensor *const *w;
    int nw;
} nn_rnn_problem;

/* y [T,N,D*H], hy and cy (LSTM) [L*D,N,H] of nn_rnn: new references (cy NULL otherwise). The
 * parameters may need gradients; x, hx and cx too. The node's backward runs cuDNN's. */
nn_status nn_rnn(nn_rnn_mode mode, nn_tensor *x, nn_tensor *hx, nn_tensor *cx, nn_tensor *const *w, int nw,
                 int64_t layers, bool bidirectional, const int64_t *lengths, nn_tensor **y, nn_tensor **hy, nn_tensor **cy);

#endif
