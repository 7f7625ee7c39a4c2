-- torch.distributed's exception classes: DistError and its subclasses DistBackendError (a
-- collective or point-to-point operation failed: a peer is gone, a timeout), DistNetworkError
-- (a store cannot reach its server, or lost it), DistStoreError (a store key or the ranks of a
-- rendezvous did not arrive in time) and QueueEmptyError (a DistStoreError: Store:queue_pop
-- without blocking on an empty queue). Errors are message strings; catch by class as with
-- torch.cuda.OutOfMemoryError (torch_errors.lua):
--   local ok, err = pcall(store.get, store, "key")
--   if not ok and dist.DistStoreError:matches(err) then ... end
local torch = require "torch"
local class = require("torch_errors").class
local dist = torch.distributed

local DistError = class("torch.distributed.DistError", {})
dist.DistError = DistError
-- the engine's collective failures: "<op> failed on rank r of n (backend): ..."
dist.DistBackendError = class("torch.distributed.DistBackendError", { "failed on rank %d+ of %d+ %(%a+%): " }, DistError)
dist.DistNetworkError = class("torch.distributed.DistNetworkError", {
  "store %S+: cannot connect to ", -- a client that finds no server
  "store %S+: [^\n]- while [%a ]+ key '", -- the connection failed mid-request
  "cannot start the store server", "the store server ", -- the server cannot listen
}, DistError)
local store_error = class("torch.distributed.DistStoreError", {
  "store %S+: timed out after [^\n]- key '", -- get/wait of a key that never came
  "TCPStore: timed out after [^\n]- waiting for clients", -- a master waiting for world_size stores
  "timed out after [^\n]- waiting for all %d+ ranks to join", -- init_process_group's rendezvous
}, DistError)
dist.DistStoreError = store_error
dist.QueueEmptyError = class("torch.distributed.QueueEmptyError", { "queue_pop: the queue '[^\n]-' is empty" }, store_error)

return dist
