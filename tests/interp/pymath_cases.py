"""Cases for Python's math names in nnrepl (bindings/lua/pymath.lua) and CPython's answers.
Writes <dir>/cases.json (a list of [function, args...]) and <dir>/want.txt (one line a case):
a float as float.hex(), an int as i:<n>, a bool as b:<0|1>, several values joined by " ",
an error as E:<message>. An int result outside Lua's 64 bits is E:integer overflow (nnrepl's
integers are 64-bit). Usage: python3 pymath_cases.py DIR"""
import json, math, random, sys

out = sys.argv[1]
rnd = random.Random(7)
cases = []

def floats(n, lo, hi):
    return [rnd.uniform(lo, hi) for _ in range(n)]

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-300, -1e-300, 1e300, -1e300, 710.0, -745.5, 1e-8,
           float("inf"), float("-inf"), float("nan"), 3.0, -3.0, -2.5, 0.1, 170.5, 171.7, -171.5]
unary = ["erf", "erfc", "log1p", "expm1", "log2", "log10", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
         "cbrt", "exp2", "gamma", "lgamma", "isnan", "isinf", "isfinite", "fabs", "degrees", "radians", "trunc",
         "ulp", "frexp"]
for f in unary:
    for x in SPECIAL + floats(20, -5, 5) + floats(10, -800, 800):
        cases.append([f, x])
binary = ["pow", "copysign", "nextafter", "remainder", "atan2", "isclose", "hypot"]
for f in binary:
    for x in SPECIAL[:16] + floats(6, -10, 10):
        for y in [0.0, -0.0, 1.0, -2.0, 0.5, 3.0, float("inf"), float("nan"), 1e-9, rnd.uniform(-4, 4)]:
            cases.append([f, x, y])
for x in floats(10, -3, 3):
    cases.append(["isclose", x, x * (1 + 1e-10)])
    cases.append(["isclose", x, x + 1e-6])
for x, e in [(1.0, 1024), (1.0, 1023), (0.75, -1074), (0.5, -1075), (3.0, 5), (-2.0, -3), (1.5, 100000)]:
    cases.append(["ldexp", x, e])
for n in range(0, 25):
    cases.append(["factorial", n])
cases += [["factorial", -1], ["factorial", 2.0]]
for n in [0, 1, 5, 10, 20, 30, 40, 50, 60, 62, 66, 67, 68, 100]:
    for k in [0, 1, 2, 3, n // 2, n - 1, n, n + 1]:
        if k >= 0:
            cases.append(["comb", n, k])
            cases.append(["perm", n, k])
cases += [["comb", -1, 2], ["perm", 5, -1], ["perm", 6]]
for a, b in [(12, 18), (0, 0), (-4, 6), (17, 5), (2**40, 2**20 * 3), (0, 9)]:
    cases.append(["gcd", a, b])
    cases.append(["lcm", a, b])
cases += [["gcd"], ["lcm"], ["gcd", 12, 18, 27], ["lcm", 4, 6, 10], ["lcm", 2**40, 2**30 * 3]]
for n in [0, 1, 2, 3, 4, 15, 16, 17, 99, 100, 101, 2**52 + 1, 2**62, 2**63 - 1, -1]:
    cases.append(["isqrt", n])
for _ in range(300):
    xs = [rnd.choice([1e16, -1e16, 1.0, 0.1, -0.1, 1e-16, 3.3, rnd.uniform(-1e6, 1e6)]) for _ in range(rnd.randint(0, 12))]
    cases.append(["fsum", xs])
cases += [["fsum", [0.1] * 10], ["fsum", [1e308, 1e308, -1e308]], ["fsum", [float("inf"), 1.0]],
          ["fsum", [float("inf"), float("-inf")]], ["fsum", [1.0, 1e100, 1.0, -1e100]]]
for xs in [[1, 2, 3, 4], [], [2.5, 2], [2**31, 2**31], [2**32, 2**32], [1.5, float("inf")], [3, -2]]:
    cases.append(["prod", xs])
for p, q in [([0, 0], [3, 4]), ([1.5, -2.0, 7.0], [0.5, 2.0, -1.0]), ([1e200, 1e200], [0, 0]), ([], [])]:
    cases.append(["dist", p, q])
cases += [["hypot", 3.0, 4.0, 12.0], ["hypot"], ["hypot", -5.0]]

def show(v):
    if isinstance(v, bool):
        return "b:%d" % v
    if isinstance(v, int):
        return "i:%d" % v if -2**63 <= v < 2**63 else "E:integer overflow"
    if isinstance(v, float):
        return "nan" if v != v else v.hex()
    if isinstance(v, tuple):
        return " ".join(show(e) for e in v)
    raise TypeError(v)

fns = {"hypot": lambda *a: math.hypot(*a), "dist": math.dist, "prod": lambda xs: math.prod(xs),
       "fsum": lambda xs: math.fsum(xs)}
lines = []
for c in cases:
    f = fns.get(c[0]) or getattr(math, c[0])
    try:
        r = show(f(*c[1:]))
    except (ValueError, OverflowError, TypeError) as e:
        r = "E:" + str(e)
    lines.append(r)
with open(f"{out}/cases.json", "w") as fh:
    json.dump(cases, fh)
with open(f"{out}/want.txt", "w") as fh:
    fh.write("\n".join(lines) + "\n")
