"""CPython's side of tests/interp/test_pystr_cpython.sh (the reference): writes the case files
and CPython's answers, one canonical line per case; tests/interp/pystr_cases.lua writes nnrepl's
from the same case files.
    python3 pystr_cases.py DIR   -> DIR/methods.jsonl, DIR/norm.jsonl (cases),
                                    DIR/methods.py.txt, DIR/ucd.py.txt, DIR/norm.py.txt (answers)
Canonical form: a string is s<hex of its UTF-8 bytes>, an integer i<n>, a boolean b1/b0, a list
[a,b,...], an error E<message>. The methods whose positions nnrepl counts in bytes (count,
index, rindex, rfind, startswith, endswith) run on the UTF-8 bytes here (Python's bytes methods
have the same semantics in bytes)."""
import json
import random
import sys
import unicodedata

out_dir = sys.argv[1]

ASCII = ["", "a", "abc", "  hello  world  ", "a,b,,c,", "\t x \n", "Hello World", "hello_world42", "ABC",
         "abc def", "  ", "aaa", "-42", "+7", "x\r\ny\rz\n", "a\x1cb\x1dc\x1ed\x0be\x0cf\n\n", "tab\there\tx",
         "1234", "12a", "_id1", "1abc", "MiXeD cAsE", "they're bill's", "a1b2 c3", "  lead", "trail  ",
         "x\x1f y\x85z"]
UTF8 = ["é", "café", "ßtraße", "Ǆemal ǆ ǅ", "ΟΔΟΣ σοφός ΣΑΣ", "Σ", "ΑΣ.", "ΑΣ\u0301 x", "中文字符", "e\u0301",
        "naïve\u2003word\u3000end", "\u00a0x\u00a0", "a\u2028b\u2029c\u0085d", "Ⅻ ⅻ", "²³", "一二三", "٣٤",
        "ﬁ ŉ İ", "ǰ", "\U0001F600 emoji", "x\u200by", "ᾳ ᾼ ᾀ", "éé,é", "Ωmega ω", "ʰa ª", "über_über",
        "中,文,,字", "ÉCOLE", "élan Élan", "\u1680x\u180ey"]
STRINGS = ASCII + UTF8

ARGS = {
    "strip": [[], [None], ["ab"], [" "], ["é"], ["xé"], [""], ["a\u0301"]],
    "split": [[], [None, 1], [None, 0], [None, -1], [None, 2], [","], [",", 1], [",", 0], [",", -1], [" "],
              ["ab"], [""], ["é"], ["Σ"], ["a", 1]],
    "splitlines": [[], [True]],
    "partition": [[","], [" "], ["a"], ["é"], [""], ["zz"], ["Σ"]],
    "startswith": [["a"], [""], ["ab"], [["x", "a"]], ["é"], ["a", 1], ["b", 1], ["", 0, 0], ["", 3], ["", 99],
                   ["a", -3], ["c", 0, -1], ["b", 1, 2], [[]], ["", 2, 1], ["\u00a9"]],
    "join": [[[]], [["a"]], [["a", "b", "c"]], [["é", "中", ""]]],
    "replace": [["a", "X"], ["", "-"], ["", "-", 2], ["", "-", 0], ["a", "", 1], ["é", "e"], ["ab", "ba", 0],
                ["a", "b", -1], ["Σ", "σ"], [" ", ""], ["aa", "b"]],
    "count": [["a"], [""], ["a", 1], ["a", -2], ["a", 0, 2], ["", 2, 1], ["", 99], ["aa"], ["é"], ["", -3],
              [" "], ["", 1, 3]],
    "index": [["a"], ["b"], [""], ["", 2], ["a", 1], ["a", -1], ["z"], ["a", 1, 2], ["é"], ["", 99], [" "],
              ["", -2, -1]],
    "removeprefix": [["a"], [""], ["ab"], ["é"], ["c"], ["Hello"]],
    "zfill": [[0], [1], [5], [10], [-3]],
    "center": [[0], [5], [8, "*"], [9, "é"], [10, "ab"], [11, "中"], [6]],
    "expandtabs": [[], [4], [0], [1], [-1], [3]],
}
SAME_ARGS = {"lstrip": "strip", "rstrip": "strip", "rsplit": "split", "rpartition": "partition",
             "endswith": "startswith", "rindex": "index", "rfind": "index", "removesuffix": "removeprefix",
             "ljust": "center", "rjust": "center"}
NO_ARGS = ["capitalize", "title", "swapcase", "casefold", "isalpha", "isdecimal", "isdigit", "isnumeric",
           "isalnum", "isspace", "isupper", "islower", "istitle", "isprintable", "isidentifier", "isascii"]
BYTES_METHODS = {"count", "index", "rindex", "rfind", "startswith", "endswith"}
JOIN_SEPS = [",", "", "é-", ", "]


def canon(v):
    if isinstance(v, bool):
        return "b1" if v else "b0"
    if isinstance(v, int):
        return "i%d" % v
    if isinstance(v, (bytes, bytearray)):
        return "s" + bytes(v).hex()
    if isinstance(v, str):
        return "s" + v.encode().hex()
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(canon(x) for x in v) + "]"
    raise TypeError(repr(v))


def enc(a):
    if isinstance(a, str):
        return a.encode()
    if isinstance(a, list):
        return tuple(enc(x) for x in a)
    return a


def call(m, s, args):
    try:
        if m in BYTES_METHODS:
            return canon(getattr(s.encode(), m)(*[enc(a) for a in args]))
        if m in ("startswith", "endswith"):
            args = [tuple(a) if isinstance(a, list) else a for a in args]
        return canon(getattr(s, m)(*args))
    except (ValueError, TypeError) as e:
        # bytes.index says "subsection not found" where str.index says "substring not found"
        return "E" + str(e).replace("subsection not found", "substring not found")


cases = []
for s in STRINGS:
    for m in list(ARGS) + list(SAME_ARGS):
        if m == "join":
            continue
        for args in ARGS[SAME_ARGS.get(m, m)]:
            cases.append({"m": m, "s": s, "a": args})
    for m in NO_ARGS:
        cases.append({"m": m, "s": s, "a": []})
for sep in JOIN_SEPS:
    for args in ARGS["join"]:
        cases.append({"m": "join", "s": sep, "a": args})

with open(out_dir + "/methods.jsonl", "w") as f, open(out_dir + "/methods.py.txt", "w") as g:
    for c in cases:
        f.write(json.dumps(c) + "\n")
        g.write(call(c["m"], c["s"], c["a"]) + "\n")

# one line per code point 0..0x2FFFF (surrogates left out: not UTF-8): the unicodedata
# functions, then the str methods on the one-character string
METHODS_1 = ["swapcase", "title", "capitalize", "casefold", "isalpha", "isdecimal", "isdigit", "isnumeric",
             "isalnum", "isspace", "isupper", "islower", "istitle", "isprintable", "isidentifier"]
with open(out_dir + "/ucd.py.txt", "w") as g:
    for cp in range(0x30000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        ucd = [unicodedata.category(c), unicodedata.bidirectional(c), str(unicodedata.combining(c)),
               str(unicodedata.mirrored(c)), str(unicodedata.decimal(c, -1))]
        norm = [canon(unicodedata.normalize(f, c)) for f in ("NFC", "NFD", "NFKC", "NFKD")]
        meth = [canon(getattr(c, m)()) for m in METHODS_1]
        g.write("%X %s|%s|%s\n" % (cp, " ".join(ucd), " ".join(norm), " ".join(meth)))

# normalization of random strings built from assigned characters of scripts with decompositions,
# combining marks (reordering) and Hangul; plus the case mappings of the same strings
rng = random.Random(14)
pools = [range(0x41, 0x7B), range(0xC0, 0x250), range(0x300, 0x370), range(0x370, 0x400), range(0x1E00, 0x1F00),
         range(0x1F00, 0x2000), range(0x1100, 0x1200), range(0xAC00, 0xAC80), range(0x3040, 0x3100),
         range(0xFB00, 0xFB50), range(0x2150, 0x2190), range(0x0591, 0x05C8), range(0x0900, 0x0980),
         range(0xFF00, 0xFF70), range(0x1D400, 0x1D420), [0x20, 0x3A3, 0x2E, 0x27]]
with open(out_dir + "/norm.jsonl", "w") as f, open(out_dir + "/norm.py.txt", "w") as g:
    n = 0
    while n < 4000:
        chars = [chr(rng.choice(rng.choice(pools))) for _ in range(rng.randint(1, 12))]
        s = "".join(chars)
        if any(unicodedata.category(c) == "Cn" for c in s):
            continue
        n += 1
        f.write(json.dumps(s) + "\n")
        out = [canon(unicodedata.normalize(form, s)) for form in ("NFC", "NFD", "NFKC", "NFKD")]
        out += [canon(unicodedata.is_normalized(form, s)) for form in ("NFC", "NFD", "NFKC", "NFKD")]
        out += [canon(getattr(s, m)()) for m in ("swapcase", "title", "capitalize", "casefold", "istitle",
                                                   "isupper", "islower", "split", "strip")]
        g.write(" ".join(out) + "\n")
