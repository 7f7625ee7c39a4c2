-- require "argparse": add_subparsers / add_parser (sub-commands) against what Python 3.12's
-- argparse prints and stores for the same parsers (written out by hand below).
local T = ...
local argparse = require "argparse"

-- exits raise {status, stdout, stderr} instead of ending the process
local testable = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "argparse_harness.lua")

-- fast_neural_style's parser, cut down
local function style_parser(sub_opts)
  local p = testable(argparse.ArgumentParser({ prog = "neural_style.py", description = "parser for fast-neural-style" }))
  local sp = p:add_subparsers(sub_opts or { title = "subcommands", dest = "subcommand" })
  local t = testable(sp:add_parser("train", { help = "parser for training arguments" }))
  t:add_argument("--epochs", { type = "int", default = 2, help = "number of training epochs, default is 2" })
  t:add_argument("--dataset", { type = "str", required = true, help = "path to training dataset" })
  t:add_argument("--accel", { action = "store_true", help = "use accelerator" })
  local e = testable(sp:add_parser("eval", { help = "parser for evaluation/stylizing arguments" }))
  e:add_argument("--content-scale", { type = "float", default = nil, help = "factor for scaling down the content image" })
  e:add_argument("--accel", { action = "store_true", help = "use accelerator" })
  return p, t, e
end

local function exit_of(p, argv)
  for _, q in ipairs({ p, table.unpack(p.subparsers and p.subparsers.choices or {}) }) do
    q = type(q) == "string" and p.subparsers.parsers[q] or q
    q.stdout.text, q.stderr.text = "", ""
  end
  local ok, e = pcall(p.parse_args, p, argv)
  if ok then return nil end
  if type(e) ~= "table" then error(e, 0) end
  return e
end

T.test("the command picks the parser; its values join the namespace", function()
  local p = style_parser()
  local a = p:parse_args({ "train", "--dataset", "d", "--epochs", "3", "--accel" })
  T.eq(tostring(a), "Namespace(subcommand='train', epochs=3, dataset='d', accel=True)")
  T.check(a.epochs == 3 and math.type(a.epochs) == "integer" and a.accel == true)
  a = p:parse_args({ "eval", "--content-scale", "2" })
  T.eq(tostring(a), "Namespace(subcommand='eval', content_scale=2.0, accel=False)")
  a = p:parse_args({})
  T.eq(a.subcommand, nil, "no command: dest is None (not required by default)")
  T.eq(tostring(a), "Namespace(subcommand=None)")
end)

T.test("help and usage", function()
  local p, t = style_parser()
  T.eq(p:format_usage(), "usage: neural_style.py [-h] {train,eval} ...\n")
  T.eq(p:format_help(), [[
usage: neural_style.py [-h] {train,eval} ...

parser for fast-neural-style

options:
  -h, --help    show this help message and exit

subcommands:
  {train,eval}
    train       parser for training arguments
    eval        parser for evaluation/stylizing arguments
]])
  T.eq(t.prog, "neural_style.py train", "the sub-parser's prog: the parent's and the command")
  local e = exit_of(p, { "train", "-h" })
  T.check(e and e.status == 0, "train -h exits 0")
  T.eq(e.stdout, t:format_help(), "train -h prints train's help")
  T.check(t:format_help():find("^usage: neural_style.py train %[%-h%] %[%-%-epochs EPOCHS%] %-%-dataset DATASET\n") ~= nil)
  -- no title: the row sits under "positional arguments", help and metavar as given
  local q = testable(argparse.ArgumentParser({ prog = "git" }))
  local sp = q:add_subparsers({ help = "what to do", metavar = "CMD" })
  sp:add_parser("commit", { help = "record changes", aliases = { "ci" } })
  sp:add_parser("hidden")
  T.eq(q:format_help(), [[
usage: git [-h] CMD ...

positional arguments:
  CMD            what to do
    commit (ci)  record changes

options:
  -h, --help     show this help message and exit
]])
end)

T.test("errors", function()
  local p, t = style_parser()
  local e = exit_of(p, { "test" })
  T.eq(e.status, 2)
  T.eq(e.stderr, "usage: neural_style.py [-h] {train,eval} ...\n" ..
    "neural_style.py: error: argument subcommand: invalid choice: 'test' (choose from 'train', 'eval')\n")
  e = exit_of(t, { "--epochs", "x" }) -- the sub-parser reports its own errors under its prog
  T.eq(e.stderr, "usage: neural_style.py train [-h] [--epochs EPOCHS] --dataset DATASET\n" ..
    "                             [--accel]\n" ..
    "neural_style.py train: error: argument --epochs: invalid int value: 'x'\n")
  e = exit_of(p, { "train" })
  T.check(e.stderr:find("neural_style.py train: error: the following arguments are required: --dataset", 1, true) ~= nil)
  e = exit_of(p, { "train", "--dataset", "d", "--bogus", "x" }) -- unknown ones go up to the top parser
  T.check(e.stderr:find("\nneural_style.py: error: unrecognized arguments: --bogus x\n", 1, true) ~= nil, e.stderr)
  local ns, extras = p:parse_known_args({ "train", "--dataset", "d", "--more" })
  T.eq(ns.dataset, "d")
  T.eq(table.concat(extras, " "), "--more")
  -- required: the dest names it; without a dest, the choices do
  p = style_parser({ dest = "cmd", required = true })
  e = exit_of(p, {})
  T.check(e.stderr:find("error: the following arguments are required: cmd\n", 1, true) ~= nil, e.stderr)
  p = style_parser({ required = true })
  e = exit_of(p, {})
  T.check(e.stderr:find("error: the following arguments are required: {train,eval}\n", 1, true) ~= nil, e.stderr)
  T.eq(p:parse_args({ "eval" }).accel, false)
  T.eq(rawget(p:parse_args({ "eval" }), "cmd"), nil, "no dest: the command's name is not stored")
  e = exit_of(p, { "--accel" }) -- an option of the sub-command before it: no command, that error first
  T.check(e.stderr:find("error: the following arguments are required: {train,eval}\n", 1, true) ~= nil, e.stderr)
  e = exit_of(style_parser(), { "--accel", "eval" }) -- else the top parser's unknown argument
  T.check(e.stderr:find("error: unrecognized arguments: --accel", 1, true) ~= nil, e.stderr)
  -- a second add_subparsers, an unknown keyword, a repeated name
  p.stderr.text = ""
  T.check(pcall(p.add_subparsers, p) == false)
  T.check(p.stderr.text:find("error: cannot have multiple subparser arguments", 1, true) ~= nil)
  T.raises(function() argparse.ArgumentParser():add_subparsers({ titel = "x" }) end,
    "add_subparsers() got an unexpected keyword argument 'titel'")
  local sp = argparse.ArgumentParser():add_subparsers()
  sp:add_parser("a", { aliases = { "b" } })
  T.raises(function() sp:add_parser("b") end, "conflicting subparser: b")
end)

T.test("positionals before the command, top-level options", function()
  local p = testable(argparse.ArgumentParser({ prog = "tool" }))
  p:add_argument("--verbose", { action = "store_true" })
  p:add_argument("root")
  local sp = p:add_subparsers({ dest = "cmd" })
  local run = testable(sp:add_parser("run"))
  run:add_argument("n", { type = "int" })
  T.eq(run.prog, "tool root run")
  local a = p:parse_args({ "--verbose", "/data", "run", "5" })
  T.eq(tostring(a), "Namespace(verbose=True, root='/data', cmd='run', n=5)")
  T.eq(p:format_usage(), "usage: tool [-h] [--verbose] root {run} ...\n")
  run:add_argument("--verbose", { type = "int", default = 0 })
  a = p:parse_args({ "--verbose", "/data", "run", "5" })
  T.eq(tostring(a), "Namespace(verbose=0, root='/data', cmd='run', n=5)", "the command's default wins, listed once")
end)
