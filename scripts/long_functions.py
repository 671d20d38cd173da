#!/usr/bin/python3
"""Lists the C++ functions longer than a limit (default 80 lines), from the line their signature
starts on to their closing brace: the style guide's "a function past ~80 lines usually does
several jobs". Functions and methods at namespace or class scope are counted, with the lambdas
inside them; a lambda is not counted on its own.

Usage: scripts/long_functions.py [--limit N] PATH...   (files, or folders searched for .cc/.h)
Prints "LINES file:line name" per long function, longest first; exits 1 when there is one.
"""
import os
import re
import sys

SIGNATURE_END = re.compile(
    r"\)\s*(?:const\b|override\b|final\b|noexcept\b|mutable\b|->\s*[\w:<>,\s*&]+|\s)*$")
NAME = re.compile(r"([~\w:]+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:const|override|final|"
                  r"noexcept|\s)*(?:->.*)?$", re.S)
CONTROL = re.compile(r"\b(if|for|while|switch|catch|return)\s*\(")


def strip(text):
    """The text with comments, strings and characters blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, lines) of every function at namespace or class scope in `path`."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    found = []
    # Each open brace: whether it opened a function counted here.
    stack = []
    start = 0  # where the current statement began
    for i, c in enumerate(text):
        if c in ";":
            start = i + 1
        elif c == "{":
            head = text[start:i]
            inFunction = any(kind == "function" for kind, _, _ in stack)
            isFunction = (not inFunction and SIGNATURE_END.search(head.rstrip())
                          and not CONTROL.search(head) and "=" not in head.split("(")[0])
            if isFunction:
                name = NAME.search(head.strip())
                first = text.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
                stack.append(("function", name.group(1) if name else "?", first))
            else:
                stack.append(("block", "", 0))
            start = i + 1
        elif c == "}":
            if stack:
                kind, name, first = stack.pop()
                if kind == "function":
                    last = text.count("\n", 0, i) + 1
                    found.append((name, first, last - first + 1))
            start = i + 1
    return found


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith((".cc", ".h")):
                        yield os.path.join(root, f)
        else:
            yield p


def main(argv):
    limit = 80
    if len(argv) > 2 and argv[1] == "--limit":
        limit = int(argv[2])
        argv = argv[2:]
    long = []
    for path in sources(argv[1:]):
        for name, line, lines in functions(path):
            if lines > limit:
                long.append((lines, f"{path}:{line}", name))
    for lines, where, name in sorted(long, reverse=True):
        print(f"{lines:4d} {where} {name}")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
