# SPDX-License-Identifier: Apache-2.0
"""A strict logfmt parser (the grammar of go-logfmt: key=value pairs separated
by spaces; a value is bare or "quoted" with \\" \\\\ \\n \\r \\t \\uXXXX escapes),
written here so the tests check our lines against the format, not against
our own writer. Also `legacy()`, which turns a logfmt line back into the
`msg key=value` shape the older tests' regexes expect."""
import json
import re

_KEY = re.compile(r"[^\s=\"]+")
_ESC = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "/": "/", "b": "\b", "f": "\f"}


class Error(ValueError):
    pass


def parse(line):
    """Returns the list of (key, value) pairs of one line; raises Error."""
    pairs, i, n = [], 0, len(line)
    while i < n:
        if line[i] == " ":
            i += 1
            continue
        m = _KEY.match(line, i)
        if not m:
            raise Error("no key at %d: %r" % (i, line[i:i + 20]))
        key, i = m.group(0), m.end()
        if i >= n or line[i] != "=":
            raise Error("key %r without '=' at %d" % (key, i))
        i += 1
        if i < n and line[i] == '"':
            i += 1
            out = []
            while True:
                if i >= n:
                    raise Error("unterminated quoted value of %r" % key)
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\":
                    e = line[i + 1:i + 2]
                    if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", line[i + 2:i + 6]):
                        out.append(chr(int(line[i + 2:i + 6], 16)))
                        i += 6
                        continue
                    if e not in _ESC:
                        raise Error("bad escape \\%s in %r" % (e, key))
                    out.append(_ESC[e])
                    i += 2
                    continue
                if ord(c) < 0x20 or ord(c) == 0x7f:
                    raise Error("raw control byte %r in %r" % (c, key))
                out.append(c)
                i += 1
            value = "".join(out)
            if i < n and line[i] != " ":
                raise Error("garbage after quoted value of %r" % key)
        else:
            j = i
            while j < n and line[j] != " ":
                if line[j] in '="' or ord(line[j]) < 0x20 or ord(line[j]) == 0x7f:
                    raise Error("%r in the bare value of %r" % (line[j], key))
                j += 1
            value, i = line[i:j], j
        pairs.append((key, value))
    return pairs


_MSG = re.compile(r'^(time=\S+ level=\S+ )msg="((?:[^"\\]|\\.)*)"')


def legacy(line):
    """`time=T level=L msg="what" k=v` -> `time=T level=L what k=v` (escapes kept),
    the shape of the lines the older tests' regexes were written for; a JSON
    line is turned into the same shape."""
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            return line
        parts = ["%s=%s" % (k, v if v and not re.search(r'[\s="\\]', v) else json.dumps(v))
                 for k, v in obj.items() if k != "msg"]
        return " ".join(parts[:2] + [obj.get("msg", "")] + parts[2:])
    return _MSG.sub(lambda m: m.group(1) + m.group(2), line, count=1)
