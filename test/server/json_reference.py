"""Python's json module as the reference for Braid's JSON reader.

Reads, from the file named by the first argument, texts each preceded by its
length in decimal and a newline; writes one line per text:

  A <canon>  read: the value in the canonical form below
  R          refused (not UTF-8, or not JSON, NaN and Infinity included)
  S          read, but a string holds a lone surrogate (from a \\uD800 escape)
  I          read, but a number overflowed to infinity
  D          nested deeper than 512 (or Python's recursion limit)

Canonical form: n t f; i<decimal>; for integers; d<16 hex digits> for the
bits of a float; u<hex of the UTF-8 bytes>; for strings; [ items ] and
{ key value ... } with every member in order (duplicates kept).
"""

import json
import struct
import sys

MAX_DEPTH = 512


class Surrogate(Exception):
    pass


class Infinite(Exception):
    pass


class Deep(Exception):
    pass


class Members(list):
    """An object's members, in order: kept apart from arrays."""


def refuse_constant(name):
    raise ValueError("not JSON: " + name)


def canon(v, depth, out):
    if v is None:
        out.append("n")
    elif v is True:
        out.append("t")
    elif v is False:
        out.append("f")
    elif isinstance(v, int):
        out.append("i%d;" % v)
    elif isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise Infinite()
        out.append("d" + struct.pack(">d", v).hex())
    elif isinstance(v, str):
        try:
            out.append("u" + v.encode("utf-8").hex() + ";")
        except UnicodeEncodeError:
            raise Surrogate()
    elif isinstance(v, Members):
        if depth >= MAX_DEPTH:
            raise Deep()
        out.append("{")
        for k, x in v:
            canon(k, depth + 1, out)
            canon(x, depth + 1, out)
        out.append("}")
    elif isinstance(v, list):
        if depth >= MAX_DEPTH:
            raise Deep()
        out.append("[")
        for x in v:
            canon(x, depth + 1, out)
        out.append("]")
    else:
        raise TypeError(type(v))


def verdict(data):
    try:
        text = data.decode("utf-8", errors="strict")
        v = json.loads(
            text,
            strict=True,
            parse_constant=refuse_constant,
            object_pairs_hook=Members,
        )
    except RecursionError:
        return "D"
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, constants
        return "R"
    out = []
    try:
        canon(v, 0, out)
    except Surrogate:
        return "S"
    except Infinite:
        return "I"
    except (Deep, RecursionError):
        return "D"
    return "A " + "".join(out)


def main():
    sys.setrecursionlimit(3000)
    sys.set_int_max_str_digits(0)
    with open(sys.argv[1], "rb") as f:
        corpus = f.read()
    i = 0
    lines = []
    while i < len(corpus):
        nl = corpus.index(b"\n", i)
        n = int(corpus[i:nl])
        lines.append(verdict(corpus[nl + 1 : nl + 1 + n]))
        i = nl + 1 + n
    sys.stdout.write("\n".join(lines) + "\n")


main()
