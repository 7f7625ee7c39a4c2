-- Document 003's (../shared/seeds/003_*.txt) CIFAR-10 CNN (conv 3->6 5x5, pool, conv 6->16 5x5,
-- pool, fc 400->120->84->10) is PyTorch's CIFAR-10 tutorial's: one copy, in
-- tutorials/blitz/cifar10_model.lua. doc003_cifar_dp.lua and bench/cpu_train_step.lua use it as
-- `local Net = require "doc003_net"` (see scripts/doc000_net.lua on package.path).
return dofile(debug.getinfo(1, "S").source:match("^@(.*[/\\])") .. "tutorials/blitz/cifar10_model.lua")
