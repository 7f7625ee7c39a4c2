# The reference side of test_re_cpython.sh: runs each case of re_cases.json through CPython's re
# and prints "<case number> <result as JSON>", the form re_run.lua prints for nnrepl's re.
# Positions become UTF-8 byte offsets (nnrepl's); Python counts code points.
import json
import re
import sys

FLAGS = {"I": re.I, "M": re.M, "S": re.S, "X": re.X, "A": re.A, "U": re.U, "L": re.L}
FUNCS = {  # the named replacement functions of sub cases with "fn"
    "upper": lambda m: m.group(0).upper(),
    "swap": lambda m: m.group(2) + m.group(1),
    "bracket": lambda m: "[" + m.group(0) + "]",
}


def b(s, i):
    return -1 if i < 0 else len(s[:i].encode())


def desc(m):
    if m is None:
        return None
    s = m.string
    return {"span": [b(s, m.start()), b(s, m.end())], "group": m.group(), "groups": list(m.groups()),
            "spans": [[b(s, m.start(g)), b(s, m.end(g))] for g in range(1, m.re.groups + 1)],
            "lastindex": m.lastindex, "lastgroup": m.lastgroup, "groupdict": m.groupdict(),
            "pos": b(s, m.pos), "endpos": b(s, m.endpos), "repr": repr(m) if s.isascii() else None}


def run(case):
    fn, args = case[0], case[1:]
    o = args.pop() if args and isinstance(args[-1], dict) else {}
    flags = 0
    for ch in o.get("flags", ""):
        flags |= FLAGS[ch]
    pe = {k: o[k] for k in ("pos", "endpos") if k in o}
    if fn in ("search", "match", "fullmatch"):
        if pe:
            return desc(getattr(re.compile(args[0], flags), fn)(args[1], **pe))
        return desc(getattr(re, fn)(args[0], args[1], flags))
    if fn == "findall":
        return re.compile(args[0], flags).findall(args[1], **pe)
    if fn == "finditer":
        return [desc(m) for m in re.compile(args[0], flags).finditer(args[1], **pe)]
    if fn == "split":
        return re.split(args[0], args[1], o.get("maxsplit", 0), flags)
    if fn in ("sub", "subn"):
        repl = FUNCS[args[1]] if o.get("fn") else args[1]
        r = getattr(re, fn)(args[0], repl, args[2], o.get("count", 0), flags)
        return list(r) if fn == "subn" else r
    if fn == "escape":
        return re.escape(args[0])
    if fn == "escaped_match":
        return desc(re.search(re.escape(args[0]), args[1]))
    if fn == "compile":
        p = re.compile(args[0], flags)
        return {"flags": int(p.flags), "groups": p.groups, "groupindex": dict(p.groupindex), "repr": repr(p)}
    if fn in ("error", "error_flags"):
        re.compile(args[0], flags)
        return "compiled"
    if fn == "expand":
        return re.search(args[0], args[1]).expand(args[2])
    if fn == "group":
        r = re.search(args[0], args[1]).group(*o["args"])
        return list(r) if isinstance(r, tuple) else [r]
    if fn == "groupdefault":
        m = re.search(args[0], args[1])
        return [list(m.groups()), list(m.groups("-")), m.groupdict(), m.groupdict("-")]
    raise SystemExit("unknown case kind " + fn)


with open(sys.argv[1], encoding="utf-8") as f:
    cases = json.load(f)
for i, case in enumerate(cases, 1):
    try:
        r = run(case)
    except (re.error, IndexError, TypeError, ValueError) as e:
        r = {"error": type(e).__name__ + ": " + str(e)}
    print(i, json.dumps(r, sort_keys=True))
