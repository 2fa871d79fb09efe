# SPDX-License-Identifier: Apache-2.0
"""SPDX license lines (issue 14 item 1).

    check_spdx.py ROOT          every source file under ROOT starts with its
                                SPDX-License-Identifier line; LICENSE is the
                                Apache License 2.0 text, unchanged
    check_spdx.py --add ROOT    insert the line where it is missing (first
                                line, or second after a #! line)

Source files: C and headers, proto, Python, shell, CMake, Makefile,
Containerfile, YAML, *.in templates, and #! scripts without a suffix. Not:
docs (*.md), JSON (no comment syntax), fuzz corpora, build trees, hidden
directories (.git, .ci: not ours to change here). Exit 0 clean, 1 otherwise."""
import hashlib
import os
import sys

LICENSE_ID = "Apache-2.0"
# sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt (11358 bytes; the
# same file is Debian's /usr/share/common-licenses/Apache-2.0)
LICENSE_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
SKIP_DIRS = {"__pycache__", "bench-results", "Testing", "corpus"}
SLASH = {".c", ".h", ".proto"}
HASH = {".py", ".sh", ".cmake", ".yaml", ".yml"}
HASH_NAMES = {"CMakeLists.txt", "Makefile", "Containerfile"}


def comment_of(path):
    """The SPDX line a file needs, or None when it is not a source file."""
    name = os.path.basename(path)
    stem, ext = os.path.splitext(name[:-3] if name.endswith(".in") else name)
    if ext in SLASH:
        return "// SPDX-License-Identifier: %s\n" % LICENSE_ID
    if ext in HASH or name in HASH_NAMES or stem in HASH_NAMES:
        return "# SPDX-License-Identifier: %s\n" % LICENSE_ID
    if not ext:
        with open(path, "rb") as f:
            if f.read(2) == b"#!":
                return "# SPDX-License-Identifier: %s\n" % LICENSE_ID
    return None


def sources(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in SKIP_DIRS
                         and not (rel == "." and x.startswith("build")))
        for f in sorted(files):
            p = os.path.join(d, f)
            if os.path.isfile(p) and not os.path.islink(p):
                line = comment_of(p)
                if line:
                    yield p, line


def split(text):
    """(shebang line or '', the rest)"""
    if text.startswith("#!"):
        nl = text.find("\n")
        return (text, "") if nl < 0 else (text[:nl + 1], text[nl + 1:])
    return "", text


def has_line(path, line):
    with open(path, encoding="utf-8") as f:
        _, rest = split(f.read())
    return rest.startswith(line)


def add_line(path, line):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, rest = split(text)
    st = os.stat(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + line + rest)
    os.chmod(path, st.st_mode)


def problems(root):
    out = []
    lic = os.path.join(root, "LICENSE")
    try:
        with open(lic, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != LICENSE_SHA256:
            out.append("LICENSE is not the Apache License 2.0 text as published (sha256 %s)" % got)
    except OSError as e:
        out.append("LICENSE: %s" % e)
    n = 0
    for p, line in sources(root):
        n += 1
        if not has_line(p, line):
            out.append("%s: no '%s' as its first line (after #! if any); "
                       "tests/release/check_spdx.py --add ROOT inserts it"
                       % (os.path.relpath(p, root), line.strip()))
    if n == 0:
        out.append("no source files found under %s" % root)
    return out, n


def main():
    args = sys.argv[1:]
    if args[:1] == ["--add"] and len(args) == 2:
        for p, line in sources(args[1]):
            if not has_line(p, line):
                add_line(p, line)
                print("added: %s" % os.path.relpath(p, args[1]))
        return 0
    if len(args) != 1:
        raise SystemExit(__doc__)
    out, n = problems(args[0])
    for msg in out:
        print("FAIL: " + msg)
    if out:
        print("\n%d problem(s); %d source files checked" % (len(out), n))
        return 1
    print("ok: LICENSE is Apache-2.0; %d source files carry SPDX-License-Identifier: %s" % (n, LICENSE_ID))
    return 0


if __name__ == "__main__":
    sys.exit(main())
