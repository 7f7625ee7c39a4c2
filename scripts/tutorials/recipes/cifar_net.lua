-- The Net the state_dict recipes define (class Net(nn.Module): conv1, pool, conv2, fc1-fc3), the
-- CIFAR-10 tutorial's CNN: one copy, in ../blitz/cifar10_model.lua.
return dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "../blitz/cifar10_model.lua")
