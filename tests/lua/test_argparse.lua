-- require "argparse": types, defaults, actions, nargs, choices, abbreviations,
-- help text in Python 3.12's layout, and Python's error messages and exits.
local T = ...
local argparse = require "argparse"

local testable = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "argparse_harness.lua")

-- A parser whose exit raises {status, stdout, stderr} instead of ending the process.
local function parser_for_tests(opts)
  return testable(argparse.ArgumentParser(opts))
end

local function exit_of(p, argv)
  p.stdout.text, p.stderr.text = "", ""
  local ok, e = pcall(p.parse_args, p, argv)
  if ok then return nil end
  if type(e) ~= "table" then error(e, 0) end
  return e
end

local function train_parser()
  local p = parser_for_tests{ prog = "train.lua", description = "CV Train" }
  p:add_argument("--lr", { type = "float", default = 1e-4, help = "learning rate (default: %(default)s)" })
  p:add_argument("-e", "--epochs", { type = "int", default = 20, help = "Number of epochs to train." })
  p:add_argument("--amp", { action = "store_true", help = "use mixed precision" })
  p:add_argument("--mode", { choices = { "train", "eval" }, default = "train" })
  p:add_argument("data", { nargs = "?", default = ".", help = "dataset root" })
  return p
end

T.test("types and defaults", function()
  local p = train_parser()
  local a = p:parse_args({})
  T.check(a.lr == 1e-4 and math.type(a.lr) == "float")
  T.check(a.epochs == 20 and math.type(a.epochs) == "integer")
  T.check(a.amp == false and a.mode == "train" and a.data == ".")
  a = p:parse_args({ "--lr", "0.5", "--epochs=3", "--amp", "--mode", "eval", "root" })
  T.check(a.lr == 0.5 and a.epochs == 3 and math.type(a.epochs) == "integer" and a.amp == true and a.mode == "eval"
    and a.data == "root")
  a = p:parse_args({ "-e7", "--lr=1e-3", "--ep", "9" })
  T.check(a.epochs == 9 and a.lr == 1e-3, "last one wins; -e7; prefix --ep")
  a = p:parse_args({ "--lr", "-2.5", "--", "-weird" })
  T.check(a.lr == -2.5 and a.data == "-weird", "negative numbers are values; -- ends options")
  a = p:parse_args({ "--lr", " 1_000.5 " })
  T.eq(a.lr, 1000.5)
  a = p:parse_args({ "--lr", "inf" })
  T.eq(a.lr, math.huge)
  T.eq(tostring(p:parse_args({ "x" })), "Namespace(lr=0.0001, epochs=20, amp=False, mode='train', data='x')")
end)

T.test("the documents' flags as they are", function()
  local p = parser_for_tests{ description = "CV Train" }
  p:add_argument("--dataset", { type = "str", default = "CIFAR10", help = "CIFAR10" })
  p:add_argument("--img_size", { type = "int", default = 227, help = "image size" })
  p:add_argument("--tensorboard", { type = "str", default = true, help = "Use tensorboard for loss visualization" })
  p:add_argument("--batch-size", { type = "int", default = "64" })
  local a = p:parse_args({})
  T.check(a.dataset == "CIFAR10" and a.img_size == 227 and a.tensorboard == true)
  T.check(a.batch_size == 64 and math.type(a.batch_size) == "integer", "dest with '_'; a string default goes through type")
  a = p:parse_args({ "--tensorboard", "False" })
  T.eq(a.tensorboard, "False", "type=str keeps the string, as in Python")
end)

T.test("actions and nargs", function()
  local p = parser_for_tests{ prog = "x" }
  p:add_argument("-v", "--verbose", { action = "count", default = 0 })
  p:add_argument("-q", { action = "store_false", dest = "loud" })
  p:add_argument("--const", { action = "store_const", const = 42 })
  p:add_argument("--tag", { action = "append" })
  p:add_argument("--size", { nargs = 2, type = "int" })
  p:add_argument("--gpus", { nargs = "+", type = "int" })
  p:add_argument("--opt", { nargs = "?", const = "c", default = "d" })
  p:add_argument("--bool", { type = "bool" })
  p:add_argument("files", { nargs = "*" })
  p:add_argument("--fn", { type = function(s) return s:upper() end })
  local a = p:parse_args({ "-vvv", "-q", "--const", "--tag", "a", "--tag", "b", "--size", "3", "4", "--gpus", "0", "1", "2",
    "--opt", "--bool", "", "f1", "f2", "--fn", "abc" })
  T.eq(a.verbose, 3)
  T.eq(a.loud, false)
  T.eq(a.const, 42)
  T.eq(a.tag, { "a", "b" })
  T.eq(a.size, { 3, 4 })
  T.eq(a.gpus, { 0, 1, 2 })
  T.eq(a.opt, "c")
  T.eq(a.bool, false, "Python's bool(''): False")
  T.eq(a.files, { "f1", "f2" })
  T.eq(a.fn, "ABC")
  a = p:parse_args({})
  T.check(a.verbose == 0 and a.loud == true and a.const == nil and a.tag == nil and a.opt == "d")
  T.eq(a.files, {})
  local ns, extras = p:parse_known_args({ "--nope", "f", "--opt", "v" })
  T.eq(extras, { "--nope" })
  T.check(ns.opt == "v")
  T.eq(ns.files, { "f" })
end)

T.test("positionals share tokens as argparse's patterns do", function()
  local p = parser_for_tests{ prog = "cp" }
  p:add_argument("src", { nargs = "+" })
  p:add_argument("dst")
  local a = p:parse_args({ "a", "b", "c" })
  T.eq(a.src, { "a", "b" })
  T.eq(a.dst, "c")
  local e = exit_of(p, { "a" })
  T.eq(e and e.stderr, "usage: cp [-h] src [src ...] dst\ncp: error: the following arguments are required: dst\n")
end)

T.test("errors: message, usage on stderr, status 2", function()
  local p = train_parser()
  local usage = "usage: train.lua [-h] [--lr LR] [-e EPOCHS] [--amp] [--mode {train,eval}]\n                 [data]\n"
  local cases = {
    { { "--lr", "abc" }, "argument --lr: invalid float value: 'abc'" },
    { { "--epochs", "1.5" }, "argument -e/--epochs: invalid int value: '1.5'" },
    { { "--mode", "test" }, "argument --mode: invalid choice: 'test' (choose from 'train', 'eval')" },
    { { "--foo", "3" }, "unrecognized arguments: --foo" },
    { { "a", "b" }, "unrecognized arguments: b" },
    { { "--epochs" }, "argument -e/--epochs: expected one argument" },
    { { "--amp=1" }, "argument --amp: ignored explicit argument '1'" },
  }
  for _, c in ipairs(cases) do
    local e = exit_of(p, c[1])
    T.check(e and e.status == 2, table.concat(c[1], " ") .. ": exit 2")
    T.eq(e and e.stderr, usage .. "train.lua: error: " .. c[2] .. "\n")
    T.eq(e and e.stdout, "")
  end
  p:add_argument("--eval", { action = "store_true" })
  local e = exit_of(p, { "--e" })
  T.eq(e and e.stderr:match("error: (.-)\n$"), "ambiguous option: --e could match --epochs, --eval")
  local r = parser_for_tests{ prog = "r" }
  r:add_argument("--need", { required = true })
  r:add_argument("pos")
  e = exit_of(r, {})
  T.eq(e and e.stderr:match("error: (.-)\n$"), "the following arguments are required: --need, pos")
  -- exit_on_error = false raises the message instead
  local q = argparse.ArgumentParser{ prog = "q", exit_on_error = false }
  q:add_argument("--n", { type = "int" })
  T.raises(function() q:parse_args({ "--n", "x" }) end, "argument --n: invalid int value: 'x'")
  T.raises(function() q:parse_args({ "--zzz" }) end, "unrecognized arguments: --zzz")
  -- mistakes in add_argument itself
  T.raises(function() q:add_argument("--n") end, "~conflicting option string: --n")
  T.raises(function() q:add_argument("--k", { typ = "int" }) end, "add_argument() got an unexpected keyword argument 'typ'")
  T.raises(function() q:add_argument("--k", { type = "double" }) end, "~unknown type 'double'")
  T.raises(function() q:add_argument("--k", { action = "store_true", nargs = 1 }) end, "~nargs is not allowed")
  T.raises(function() argparse.ArgumentParser{ desc = "x" } end, "ArgumentParser() got an unexpected keyword argument 'desc'")
end)

T.test("help text in Python's layout, exit 0", function()
  local p = train_parser()
  local want = table.concat({
    "usage: train.lua [-h] [--lr LR] [-e EPOCHS] [--amp] [--mode {train,eval}]",
    "                 [data]",
    "",
    "CV Train",
    "",
    "positional arguments:",
    "  data                  dataset root",
    "",
    "options:",
    "  -h, --help            show this help message and exit",
    "  --lr LR               learning rate (default: 0.0001)",
    "  -e EPOCHS, --epochs EPOCHS",
    "                        Number of epochs to train.",
    "  --amp                 use mixed precision",
    "  --mode {train,eval}",
    "",
  }, "\n")
  T.eq(p:format_help(), want)
  local e = exit_of(p, { "--help" })
  T.check(e and e.status == 0 and e.stdout == want and e.stderr == "", "--help prints to stdout, exits 0")
  e = exit_of(p, { "-h", "--lr", "x" })
  T.check(e and e.status == 0, "-h wins over later errors")

  local s = parser_for_tests{ prog = "s.lua", description = "A short one.", epilog = "See the docs." }
  s:add_argument("--x", { type = "int", default = 1, help = "an option whose help is long enough to need more than one line of text in the help" })
  T.eq(s:format_help(), table.concat({
    "usage: s.lua [-h] [--x X]",
    "",
    "A short one.",
    "",
    "options:",
    "  -h, --help  show this help message and exit",
    "  --x X       an option whose help is long enough to need more than one line",
    "              of text in the help",
    "",
    "See the docs.",
    "",
  }, "\n"))
  T.eq(s:format_usage(), "usage: s.lua [-h] [--x X]\n")
end)

T.test("groups and mutually exclusive options", function()
  local p = parser_for_tests{ prog = "g" }
  local g = p:add_argument_group("training", "Options for training.")
  g:add_argument("--lr", { type = "float", default = 0.1, help = "rate" })
  local m = p:add_mutually_exclusive_group()
  m:add_argument("--cpu", { action = "store_true" })
  m:add_argument("--gpu", { action = "store_true" })
  T.check(p:parse_args({ "--lr", "0.5" }).lr == 0.5)
  local e = exit_of(p, { "--cpu", "--gpu" })
  T.eq(e and e.stderr:match("error: (.-)\n$"), "argument --gpu: not allowed with argument --cpu")
  T.check(p:format_help():find("training:\n  Options for training.\n\n  --lr LR     rate\n", 1, true) ~= nil, p:format_help())
  p:set_defaults({ extra = "yes" })
  T.eq(p:parse_args({}).extra, "yes")
  T.eq(p:get_default("lr"), 0.1)
end)

T.test("parse_args() reads the script's arg table", function()
  local saved = arg
  arg = { [0] = "scripts/run.lua", "--n", "5" }
  local ok, a = pcall(function()
    local p = argparse.ArgumentParser()
    p:add_argument("--n", { type = "int" })
    return { p:parse_args(), p.prog }
  end)
  arg = saved
  T.check(ok and a[1].n == 5 and a[2] == "run.lua", tostring(a))
end)
