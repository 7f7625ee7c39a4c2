/* A host application that embeds nnrepl: it owns a small regression data set in C
 * arrays, defines a model and its training step in Lua, trains it on the arrays
 * (passed as borrowed tensors: no copies), reads the predictions back as a C
 * pointer, and checks them. Exits 0 when the model has learned the data.
 *
 * Build: cc host.c $(pkg-config --cflags --libs nnrepl) -o host */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <nnrepl.h>

#define N 64     /* samples */
#define D 3      /* features */
#define STEPS 100

static const char model_lua[] =
    "torch.manual_seed(0)\n"
    "model = nn.Linear(3, 1)\n"
    "local opt = optim.SGD(model:parameters(), {lr = 0.3})\n"
    "function train_step(x, y, step)\n"
    "  opt:zero_grad()\n"
    "  local loss = F.mse_loss(model(x), y)\n"
    "  loss:backward()\n"
    "  opt:step()\n"
    "  if step % 25 == 0 then host.log(step, loss:item()) end\n"
    "  return loss:item()\n"
    "end\n"
    "function predict(x)\n"
    "  local _ <close> = torch.no_grad()\n"
    "  return model(x)\n"
    "end\n";

/* host.log(step, loss): a C function the Lua code calls */
static int host_log(lua_State *L)
{
    printf("embed_host: step %d, loss %.3g\n", (int)luaL_checkinteger(L, 1), luaL_checknumber(L, 2));
    return 0;
}

static int released; /* borrowed buffers given back by the interpreter */

static void release(void *data, void *ctx)
{
    (void)data;
    ++*(int *)ctx;
}

static int fail(nnrepl_State *S, const char *what)
{
    fprintf(stderr, "embed_host: %s: %s\n", what, nnrepl_error(S));
    nnrepl_close(S);
    return 1;
}

int main(void)
{
    /* the data: y = 2 x0 - 3 x1 + 0.5 x2 + 1, x in [-1, 1) */
    static float X[N][D], Y[N];
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < D; j++) {
            seed = seed * 1664525u + 1013904223u;
            X[i][j] = (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
        }
        Y[i] = 2.0f * X[i][0] - 3.0f * X[i][1] + 0.5f * X[i][2] + 1.0f;
    }

    nnrepl_State *S = nnrepl_open();
    if (!S) {
        fprintf(stderr, "embed_host: %s\n", nnrepl_error(NULL));
        return 1;
    }
    lua_State *L = nnrepl_lua(S);
    if (nnrepl_register(S, "host.log", host_log) != NNREPL_OK) return fail(S, "register");
    if (nnrepl_dostring(S, model_lua) != NNREPL_OK) return fail(S, "model");

    int64_t xshape[] = {N, D}, yshape[] = {N, 1};
    nnrepl_tensor x = {.data = X, .ndim = 2, .shape = xshape, .dtype = NNREPL_FLOAT32,
                       .release = release, .release_ctx = &released};
    nnrepl_tensor y = {.data = Y, .ndim = 2, .shape = yshape, .dtype = NNREPL_FLOAT32,
                       .release = release, .release_ctx = &released};
    double loss = 0;
    for (int step = 1; step <= STEPS; step++) {
        if (nnrepl_push_tensor(S, &x, NNREPL_BORROW) != NNREPL_OK ||
            nnrepl_push_tensor(S, &y, NNREPL_BORROW) != NNREPL_OK)
            return fail(S, "push");
        lua_pushinteger(L, step);
        if (nnrepl_call(S, "train_step", 3, 1) != NNREPL_OK) return fail(S, "train_step");
        loss = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }

    if (nnrepl_push_tensor(S, &x, NNREPL_BORROW) != NNREPL_OK) return fail(S, "push");
    if (nnrepl_call(S, "predict", 1, 1) != NNREPL_OK) return fail(S, "predict");
    nnrepl_tensor pred;
    if (nnrepl_get_tensor(S, -1, &pred) != NNREPL_OK) return fail(S, "predictions");
    if (pred.dtype != NNREPL_FLOAT32 || pred.device != NNREPL_CPU || pred.ndim != 2 || pred.shape[0] != N ||
        pred.shape[1] != 1) {
        fprintf(stderr, "embed_host: unexpected predictions tensor\n");
        nnrepl_close(S);
        return 1;
    }
    const float *p = pred.data;
    double mse = 0;
    for (int i = 0; i < N; i++) {
        double e = p[i * pred.strides[0]] - Y[i];
        mse += e * e / N;
    }
    printf("embed_host: trained %d steps, loss %.3g; predictions mse %.3g, y[0] = %.4f predicted %.4f\n", STEPS,
           loss, mse, Y[0], p[0]);
    lua_pop(L, 1);

    nnrepl_close(S); /* every borrowed buffer is given back by now */
    int pushed = 2 * STEPS + 1;
    printf("embed_host: %d of %d borrowed buffers released\n", released, pushed);
    return mse < 1e-4 && released == pushed ? 0 : 1;
}
