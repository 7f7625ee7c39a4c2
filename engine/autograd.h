/* Reverse-mode autograd: a graph of nodes recorded as ops run.
 *
 * Ownership (no cycles, so a graph is freed in C the moment its last output goes):
 *   output tensor --grad_fn--> node --next[i].node--> the nodes of its inputs
 *   AccumulateGrad node --leaf--> the leaf tensor it accumulates into
 * A node keeps the tensors its backward needs as saved values; a saved output is
 * kept as a detached alias (same storage, no grad_fn), and every saved value
 * remembers its storage version so an in-place change is caught at backward. */
#ifndef NN_AUTOGRAD_H
#define NN_AUTOGRAD_H

#include "ops.h"

#define NN_NODE_MAX_SAVED 6
#define NN_NODE_MAX_OUT 3

typedef struct nn_node nn_node;

/* One forward input as backward sees it: where its gradient goes and its metadata
 * (a gradient is reduced to this shape and cast to this dtype before it is passed on). */
typedef struct {
    nn_node *node; /* NULL: the input needs no gradient */
    int input_nr;  /* which output of `node` the input was */
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    nn_dtype dtype;
    nn_device device;
} nn_edge;

/* grad_out[k]: gradient of output k (NULL where none flowed: zero). Fill grad_in[i] with new
 * references for the inputs whose edge has a node (others may stay NULL). */
typedef nn_status (*nn_backward_fn)(nn_node *n, nn_tensor *const *grad_out, nn_tensor **grad_in);

struct nn_node {
    int refcount;
    const char *name;       /* "AddBackward0", printed as grad_fn=<...> */
    nn_backward_fn backward;
    nn_tensor *saved[NN_NODE_MAX_SAVED];
    struct nn_packed *packed[NN_NODE_MAX_SAVED]; /* what a saved-tensor pack hook kept instead of saved[i] */
    uint32_t saved_version[NN_NODE_MAX_SAVED];
    const char *saved_fn[NN_NODE_MAX_SAVED]; /* for the version error: the saved value's grad_fn then */
    int saved_nr[NN_NODE_MAX_SAVED];
    uint8_t saved_output;   /* bit i: saved[i] is an output of this node (kept without its history) */
    bool released;          /* saved values freed after a backward without retain_graph */
    double f[4];            /* op parameters backward needs */
    int64_t i[4];
    uint32_t dims;
    nn_tensor *leaf;        /* AccumulateGrad only */
    bool view;              /* the node of a view op (its output shares its input's storage) */
    void *ctx;              /* extra per-node data, freed with ctx_free (NULL: free()) */
    void (*ctx_free)(void *);
    nn_node *inner;         /* CopySlices: the in-place op's node, whose backward it runs */
    struct nn_pass_end *pass_end; /* run after every backward pass through this node */
    struct nn_hook_list *pre_hooks; /* Tensor.register_hook on this node's outputs; NULL: none */
    struct nn_node_extra *extra; /* Node.register_hook / register_prehook and Node.metadata; NULL: none */
    uint64_t seq;           /* creation order; backward runs the latest-made ready node first */
    int nout;
    /* set while a backward pass runs, for the pass tagged `pass` (0: none runs through the node;
     * a pass nested in another sets the outer one's state aside while it runs, engine/autograd.c) */
    uint32_t pass;
    int deps;
    uint8_t need;           /* a pass with targets: 0 not yet known, 1 being worked out, 2 a target is at or below it, 3 none is */
    bool visited;           /* not the engine's: a mark for walks of the graph outside backward (the DDP reducer's) */
    nn_tensor *grad_buf[NN_NODE_MAX_OUT];
    nn_tensor *retained[NN_NODE_MAX_OUT]; /* weak: outputs that asked for retain_grad */
    int nin;
    nn_edge next[];
};

/* Anomaly mode (thread-local): torch.autograd.set_detect_anomaly. While on, backward checks
 * the gradients each node returns and fails naming the node when one holds a NaN. */
bool nn_anomaly_enabled(void);
void nn_set_anomaly_enabled(bool on);

/* Grad mode (thread-local): torch.no_grad / enable_grad / set_grad_enabled. */
bool nn_grad_enabled(void);
void nn_set_grad_enabled(bool on);

/* True when grad mode is on and any of the inputs requires grad. */
bool nn_any_requires_grad(int n, nn_tensor *const *ts);

/* A node for an op with nin inputs; edges and metadata are taken from the inputs. */
nn_node *nn_node_new(const char *name, nn_backward_fn fn, int nin, nn_tensor *const *inputs);
/* Keep t for backward (an output of the same op is kept as a detached alias: call
 * nn_node_set_output first, else the node and its output would own each other). */
void nn_node_save(nn_node *n, int slot, nn_tensor *t);
/* Check a saved value is still as it was; returns it (borrowed) or NULL with the error set.
 * A value a pack hook kept comes back through its unpack function (no version check then, as
 * in PyTorch), held until the node's backward ends. */
nn_tensor *nn_node_saved(nn_node *n, int slot);
/* Whether slot holds a saved value (as a tensor or packed by a hook). */
bool nn_node_has_saved(const nn_node *n, int slot);

/* Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks), provided by the bindings.
 * While a pack function is set, nn_node_save calls it (grad mode off) with each tensor a node
 * saves (an output as a detached alias) and keeps what it returns in place of the tensor. */
typedef struct nn_packed nn_packed;
struct nn_packed {
    nn_tensor *(*unpack)(nn_packed *p); /* the tensor back: a new reference, or NULL with the error set */
    void (*free)(nn_packed *p);
};
/* Returns the packed value, or NULL with the error set: the tensor is then saved as it is and
 * the error becomes the deferred one (below). */
typedef nn_packed *(*nn_pack_fn)(nn_tensor *t);
void nn_set_saved_tensor_pack(nn_pack_fn fn); /* NULL: none */

/* Saving can fail (an inference tensor, a failing pack hook) where the ops that save have no
 * way to report it: the first such error is kept here, and the bindings raise it when the op's
 * result comes back (or before the next backward). Returns it and clears it; NN_OK: none. */
nn_status nn_take_deferred_error(void);
bool nn_has_deferred_error(void);
/* Make out the output_nr-th output of n: out->grad_fn = n, requires_grad = true. Consumes
 * nothing; the node gains a reference from out. */
void nn_node_set_output(nn_node *n, nn_tensor *out, int output_nr);
void nn_node_release(nn_node *n);

/* Run backward from root. grad NULL means ones (root must have one element); a grad of
 * another dtype is cast to root's, as PyTorch's engine does. */
nn_status nn_backward(nn_tensor *root, nn_tensor *grad, bool retain_graph);

/* The tensors a pass is for (PyTorch's backward(inputs=) and torch.autograd.grad): only the
 * part of the graph that leads to them runs. out NULL: their gradients go into their .grad
 * (a non-leaf's too), and no other tensor's; else out[i] gets t[i]'s gradient (a new reference,
 * NULL where none flowed) and no .grad, retained gradient, post-accumulate hook or pass-end
 * function is touched. */
typedef struct {
    int n;
    nn_tensor *const *t;
    nn_tensor **out;
} nn_grad_targets;

/* Whether the backward pass running on this thread keeps the graph (retain_graph): a node
 * whose backward consumes a saved buffer (cuDNN's RNN reserve) works on a copy then. */
bool nn_backward_retains_graph(void);

/* the error for a saved value used after a backward without retain_graph freed it */
extern const char nn_saved_freed_message[];

/* Whether the backward pass running on this thread records its own graph (create_graph, for
 * double backward): grad mode is on while nodes run, a saved output comes back with its node
 * as grad_fn, and a backward kernel that has no derivative here fails naming the node. */
bool nn_backward_creates_graph(void);
/* That failure: "... through <node> is not supported: its backward <what>". */
nn_status nn_no_double_backward(const char *what);

/* Within a pass that records a graph: the gradients of y (weighted by gy) against xs[0..n) (at most
 * 8; one that is NULL or requires no grad is skipped), with graphs of their own, into out[] (NULL
 * where none flowed or was asked for). A fused op whose backward kernel has no derivative takes its
 * gradients this way from its forward recomputed of differentiable ops. */
nn_status nn_recorded_grad(nn_tensor *y, nn_tensor *gy, int n, nn_tensor *const *xs, nn_tensor **out);

/* Backward from several roots at once (grads[i] NULL: ones); want NULL: every leaf.
 * create_graph: the gradients have histories of their own (and .grad gets them). */
nn_status nn_backward_ex(int nroots, nn_tensor *const *roots, nn_tensor *const *grads, bool retain_graph,
                         bool create_graph, const nn_grad_targets *want);

/* fn(ctx) runs once at the end of each backward pass that reaches node n, after every
 * gradient of the pass is computed (DataParallel reduces its replicas' gradients then);
 * free_ctx(ctx) when the node goes. One per node: a second replaces the first. */
typedef nn_status (*nn_pass_end_fn)(void *ctx);
nn_status nn_node_at_pass_end(nn_node *n, nn_pass_end_fn fn, void *ctx, void (*free_ctx)(void *));

/* Tensor-level autograd helpers */
nn_tensor *nn_detach(nn_tensor *t);          /* alias without history, requires_grad false */
nn_status nn_detach_(nn_tensor *t);
nn_status nn_requires_grad_(nn_tensor *t, bool on); /* error for non-leaf when turning off / non-float */
bool nn_is_leaf(const nn_tensor *t);
nn_status nn_retain_grad(nn_tensor *t);
/* Error if grad mode is on and t is a leaf requiring grad or a view of one, or t is an inference
 * tensor and inference mode is off (in-place ops call this). */
nn_status nn_check_inplace(const char *fn, nn_tensor *t);
/* The inference-tensor part alone (also under no_grad, as in PyTorch). */
nn_status nn_check_inference_inplace(const nn_tensor *t);

/* After an in-place op made node the grad_fn of self: when self is a view, the op changed
 * its base too, so the base's history becomes a CopySlices node running the op's backward
 * on the view's part of the base's gradient, and self's history a view of the base's new
 * one (PyTorch's rebase_history). Nothing to do for a tensor that is not a view. */
nn_status nn_rebase_view_history(nn_tensor *self);

/* A view whose base (or a sibling view) was changed in place since its history was
 * recorded gets a new one: its geometry within the base's current history (PyTorch
 * regenerates a view's grad_fn the same way). Called wherever a grad_fn is read. */
nn_status nn_refresh_view_history(nn_tensor *v);

/* Called by nn_release when a tensor with history goes. */
void nn_autograd_drop(nn_tensor *t);

/* Post-accumulate-grad hooks (PyTorch's Tensor.register_post_accumulate_grad_hook):
 * fn(leaf, ctx) runs once per backward pass, after the leaf's .grad has taken in all
 * of that pass's gradient (after the last of its AccumulateGrad nodes). An error it
 * returns ends the pass. DDP's reducer uses it to start a bucket's all-reduce as soon
 * as the bucket's gradients are ready. free_ctx (may be NULL) runs when the hook is
 * removed or the tensor goes. Returns a handle > 0, or 0 with the error set. */
typedef nn_status (*nn_grad_hook_fn)(nn_tensor *leaf, void *ctx);
/* leaf.grad += g, or leaf.grad = a copy of g in leaf's layout when it has none (AccumulateGrad's
 * rule; g itself where nothing else holds it) */
nn_status nn_accumulate_grad(nn_tensor *leaf, nn_tensor *g);
int64_t nn_add_post_accumulate_grad_hook(nn_tensor *leaf, nn_grad_hook_fn fn, void *ctx, void (*free_ctx)(void *));

/* Tensor hooks (PyTorch's Tensor.register_hook): fn(grad, ctx, &out) runs each time backward
 * has t's whole gradient for a pass (a leaf's: summed over its uses, before it goes into .grad;
 * a non-leaf's: before its grad_fn runs and before retain_grad keeps it). Setting out (a new
 * reference, same size, dtype and device) replaces the gradient for what follows; hooks run in
 * the order registered, each on the one before's result. Returns a handle > 0, or 0 with the
 * error set (t must require grad). */
typedef nn_status (*nn_tensor_hook_fn)(nn_tensor *grad, void *ctx, nn_tensor **out);
int64_t nn_add_tensor_hook(nn_tensor *t, nn_tensor_hook_fn fn, void *ctx, void (*free_ctx)(void *));
/* Takes off either kind of hook by its handle. */
void nn_remove_grad_hook(nn_tensor *t, int64_t handle);
void nn_grad_hooks_free(nn_tensor *t); /* by nn_release */

/* Hooks on a node (PyTorch's Node.register_prehook and Node.register_hook). A pre hook runs
 * before the node with the gradients of its nout outputs (gout; NULL: none flowed), a post hook
 * after it with those and the gradients it computed for its nin inputs (gin, reduced to each
 * input's shape and dtype; NULL where none). fn may set *replace and fill repl (nout entries for
 * a pre hook, nin for a post hook: new references or NULL, all of them replacing what was), which
 * must keep each gradient's size, dtype and device. The hooks and metadata of an AccumulateGrad
 * node are its leaf's, shared by all of them, and run once per pass on its whole gradient (its
 * post hooks see nin 0, after the post-accumulate-grad hooks). Returns a handle > 0, or 0 with
 * the error set. */
typedef nn_status (*nn_node_hook_fn)(nn_node *n, int nin, nn_tensor *const *gin, int nout, nn_tensor *const *gout,
                                     bool *replace, nn_tensor **repl, void *ctx);
int64_t nn_node_add_hook(nn_node *n, bool pre, nn_node_hook_fn fn, void *ctx, void (*free_ctx)(void *));
void nn_node_remove_hook(nn_node *n, int64_t handle);
/* n's metadata slot (owned by the bindings, freed with free_fn as the node, or an AccumulateGrad
 * node's leaf, goes), or NULL with the error set */
void **nn_node_meta(nn_node *n, void (*free_fn)(void *));
/* Where t's gradient enters the graph (PyTorch's get_gradient_edge): its grad_fn, or for a leaf
 * a new AccumulateGrad node (the same node as the leaf's others, as hooks and metadata go); a
 * new reference, with *output_nr, or NULL with the error set (t must require grad). */
nn_node *nn_gradient_node(nn_tensor *t, int *output_nr);
/* The backward pass running on this thread: its number (0: none), and whether it computes
 * t's gradient (reaches t's node, and t is wanted or leads to what is) */
uint64_t nn_backward_pass_id(void);
bool nn_backward_computes(const nn_tensor *t);

/* Reduce a gradient to an input's shape (sum over broadcast dims) and cast to its dtype. */
nn_tensor *nn_grad_to_input(nn_tensor *g, const nn_edge *e);

#endif
