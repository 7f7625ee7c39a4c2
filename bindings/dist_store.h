/* The Store userdata of torch._dist (dist_store.c), for dist.c. */
#ifndef LT_DIST_STORE_H
#define LT_DIST_STORE_H

#include "dist/store.h"
#include "lt.h"

nn_store *lt_dist_checkstore(lua_State *L, int idx);
/* Push a Store userdata owning one reference to s. */
void lt_dist_pushstore(lua_State *L, nn_store *s);
/* Store constructors and the Store metatable into the table on top of the stack. */
void lt_dist_store_open(lua_State *L);

#endif
