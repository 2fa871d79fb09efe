# SPDX-License-Identifier: Apache-2.0
"""The rooms of src/ and plugin/daemon/ (docs/architecture.md, "Rooms"),
checked by check-layering.py.

A room is a folder of src/ or plugin/daemon/ holding C files. Its README.md
says what it owns and, on a line of its own, which rooms of its layer it may
use:

    Uses: src/base, src/units

("Uses: nothing" for a room at the bottom). The check reads those lines, so
the READMEs are the rules and cannot drift from them. It fails when
  - a room has no README.md, or no Uses: line, or names a room that does not
    exist, or the Uses: lines make a circle;
  - a file includes a header of another room of its layer that its room may
    not use (the include resolved as the compiler would: the file's own
    folder, then the layer's include root);
  - with a build tree: an object calls (or reads) a symbol defined in a room
    its room may not use: the upward call, named with the symbol;
  - with a build tree: files call each other in a circle, unless they are in
    one room and all include one shared *_internal.h (one file split for
    size);
  - docs/architecture.md does not name every room, or names a src/ or
    plugin/ file that does not exist, or a file of a room is over 600 lines
    and the page does not name it (saying why it stays whole).
Rooms of different layers (libioqos and the plugin, say) are the layer
check's business (check-layering.py), not this one's.
"""
import collections
import os
import re
import subprocess

# layer roots: a room is a folder under one of these holding .c or .h files;
# the root folder itself is a room too when it holds C files (plugin/daemon:
# main.c and plugin.h, the wiring)
LAYER_ROOTS = ("src", "plugin/daemon")
# src/kube is a layer of its own (check-layering.py), not a room of libioqos
NOT_ROOMS = ("src/kube",)
# The daemon's context header: struct plugin, through which the components
# find each other. Any room of the daemon may include it; it may include
# only headers of rooms every room may use (CONTEXT_USES) and of libioqos.
CONTEXT = "plugin/daemon/plugin.h"
CONTEXT_USES = ("plugin/daemon/support",)
LONG_LINES = 600  # a file longer than this is split, or docs/architecture.md says why
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
USES = re.compile(r"^Uses:\s*(.*)$", re.M)


def rel(root, path):
    return os.path.relpath(os.path.normpath(path), root).replace(os.sep, "/")


def c_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith((".c", ".h")))


def find_rooms(root):
    """{room: layer root} for every folder with C files under the layer roots."""
    rooms = {}
    for top in LAYER_ROOTS:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for d, dirs, _ in os.walk(base):
            dirs.sort()
            r = rel(root, d)
            if any(r == n or r.startswith(n + "/") for n in NOT_ROOMS):
                continue
            if c_files(d):
                rooms[r] = top
    return rooms


def room_of(rooms, relpath):
    d = os.path.dirname(relpath)
    return d if d in rooms else None


def read_uses(root, rooms, problems):
    """{room: set of rooms it may use}, from the READMEs."""
    uses = {}
    for room in rooms:
        readme = os.path.join(root, room, "README.md")
        if not os.path.isfile(readme):
            problems.append("%s: no README.md (what the room owns, and a 'Uses:' line)" % room)
            uses[room] = set()
            continue
        m = USES.search(open(readme).read())
        if not m:
            problems.append("%s/README.md: no 'Uses:' line" % room)
            uses[room] = set()
            continue
        names = [n.strip().rstrip(".").rstrip("/") for n in m.group(1).split(",")]
        names = [n for n in names if n and n != "nothing"]
        for n in names:
            if n not in rooms:
                problems.append("%s/README.md: Uses: names %s, which is not a room" % (room, n))
            elif rooms[n] != rooms[room]:
                problems.append("%s/README.md: Uses: names %s, a room of another layer" % (room, n))
        uses[room] = {n for n in names if n in rooms}
    # the Uses: lines themselves must not make a circle
    for room, path in cycles({r: u for r, u in uses.items()}):
        problems.append("the rooms' Uses: lines make a circle: %s" % " -> ".join(path))
        break
    return uses


def cycles(graph):
    """(node, path) of each strongly connected set of more than one node
    (Tarjan), path being the set in order; self-edges ignored."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append((v, sorted(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def may_use(uses, a, b):
    return a == b or b in uses.get(a, ())


def check_includes(root, rooms, uses, problems):
    for room, top in sorted(rooms.items()):
        d = os.path.join(root, room)
        for f in c_files(d):
            path = os.path.join(d, f)
            r = rel(root, path)
            text = open(path, errors="replace").read()
            for m in INCLUDE.finditer(text):
                name = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                hit = None
                for base in (d, os.path.join(root, top)):
                    p = os.path.normpath(os.path.join(base, name))
                    if os.path.isfile(p):
                        hit = rel(root, p)
                        break
                if not hit:
                    continue
                to = room_of(rooms, hit)
                if to is None or rooms.get(to) != top:
                    continue
                if hit == CONTEXT:
                    continue  # any room of the daemon may include its context
                if r == CONTEXT:
                    if to not in CONTEXT_USES:
                        problems.append("%s:%d: the context header includes %s (room %s): "
                                        "it may include only %s" %
                                        (r, line, hit, to, ", ".join(CONTEXT_USES)))
                    continue
                if not may_use(uses, room, to):
                    problems.append("%s:%d: room %s includes %s of room %s, which its "
                                    "README's Uses: line does not allow" % (r, line, room, hit, to))


def build_objects(root, build):
    """{source relpath: object path} for the objects of a CMake build tree
    whose sources are in the rooms (CMakeFiles/<target>.dir/<path>.c.o)."""
    out = {}
    for d, _, files in os.walk(build):
        parts = d.replace(os.sep, "/").split("/CMakeFiles/")
        if len(parts) != 2:
            continue
        srcdir = rel(build, parts[0]) if parts[0] != build.rstrip("/") else "."
        inner = parts[1].split("/", 1)
        if not inner[0].endswith(".dir"):
            continue
        sub = inner[1] if len(inner) > 1 else ""
        for f in files:
            if not f.endswith(".c.o"):
                continue
            src = os.path.normpath(os.path.join(srcdir, sub, f[:-2])).replace(os.sep, "/")
            if os.path.isfile(os.path.join(root, src)):
                out.setdefault(src, os.path.join(d, f))
    return out


def symbols(objs):
    """{object: (defined, undefined)} global symbols, from one nm run over
    all the objects (nm -A names the object on every line)."""
    out = {o: (set(), set()) for o in objs}
    if not objs:
        return out
    res = subprocess.run(["nm", "-g", "-A"] + list(objs), capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("nm: %s" % res.stderr.strip())
    for line in res.stdout.splitlines():
        obj, _, rest = line.partition(":")
        parts = rest.split()
        if obj not in out or not parts:
            continue
        kind, sym = parts[-2], parts[-1]
        if kind == "U":
            out[obj][1].add(sym)
        elif kind.upper() in "TDBRCVW" and kind != "w":
            out[obj][0].add(sym)
    return out


def internal_headers(root, src):
    text = open(os.path.join(root, src), errors="replace").read()
    return {os.path.basename(n) for n in INCLUDE.findall(text) if n.endswith("_internal.h")}


def check_calls(root, rooms, uses, objects, problems):
    """The upward calls and the circles, from the objects' symbols."""
    objects = {s: o for s, o in objects.items() if room_of(rooms, s)}
    syms = symbols(sorted(objects.values()))
    defined = {}
    for src, obj in sorted(objects.items()):
        for sym in sorted(syms[obj][0]):
            defined.setdefault(sym, src)
    graph = collections.defaultdict(set)
    why = {}
    for src, obj in sorted(objects.items()):
        for sym in sorted(syms[obj][1]):
            to = defined.get(sym)
            if not to or to == src:
                continue
            a, b = room_of(rooms, src), room_of(rooms, to)
            if rooms[a] != rooms[b]:
                continue  # another layer: check-layering.py's business
            graph[src].add(to)
            why.setdefault((src, to), sym)
            if not may_use(uses, a, b):
                problems.append("%s calls %s (%s) in room %s, which room %s may not use" %
                                (src, sym, to, b, a))
    for _, comp in cycles(graph):
        comp_rooms = {room_of(rooms, s) for s in comp}
        shared = set.intersection(*(internal_headers(root, s) for s in comp))
        if len(comp_rooms) == 1 and shared:
            continue  # one file split for size, sharing its internal header
        edges = ["%s -> %s (%s)" % (a, b, why[(a, b)])
                 for a in comp for b in sorted(graph[a]) if b in comp]
        problems.append("files call each other in a circle%s: %s" %
                        ("" if len(comp_rooms) == 1 else " across rooms", "; ".join(edges)))
    return len(objects)


def check_docs(root, rooms, problems):
    doc = os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(doc):
        problems.append("docs/architecture.md is missing")
        return
    text = open(doc).read()
    for room in sorted(rooms):
        if "`%s/`" % room not in text:
            problems.append("docs/architecture.md does not name the room `%s/`" % room)
    for ref in sorted(set(re.findall(r"`((?:src|plugin)/[\w./-]*\.[ch])`", text))):
        if not os.path.isfile(os.path.join(root, ref)):
            problems.append("docs/architecture.md names %s, which does not exist" % ref)
    # a long file is split by job, or the page says why it is not
    for room in sorted(rooms):
        for f in c_files(os.path.join(root, room)):
            n = sum(1 for _ in open(os.path.join(root, room, f), errors="replace"))
            short = room.split("/")[-1] + "/" + f
            if n > LONG_LINES and "`%s`" % short not in text and "`%s/%s`" % (room, f) not in text:
                problems.append("%s/%s has %d lines (over %d): split it by job, or say in "
                                "docs/architecture.md why not (naming `%s`)" % (room, f, n, LONG_LINES, short))


def check(root, build=None):
    """Problems of the tree at root (and of its objects under build), and a
    line saying what was checked."""
    root = os.path.abspath(root)
    problems = []
    rooms = find_rooms(root)
    uses = read_uses(root, rooms, problems)
    check_includes(root, rooms, uses, problems)
    n = 0
    if build:
        n = check_calls(root, rooms, uses, build_objects(root, os.path.abspath(build)), problems)
    check_docs(root, rooms, problems)
    return problems, "%d rooms, %d objects" % (len(rooms), n)


# ---- controls: planted violations the check must catch ----

ROOMS_DOC = ("The rooms: `src/base/`, `src/grant/`, `plugin/daemon/`, `plugin/daemon/support/`, "
             "`plugin/daemon/core/`; the pool is in `src/grant/g.c`.\n")
CLEAN = {
    "src/base/README.md": "Helpers.\n\nUses: nothing\n",
    "src/base/b.h": "int b(void);\n",
    "src/base/b.c": '#include "b.h"\nint b(void) { return 1; }\n',
    "src/grant/README.md": "Grants.\n\nUses: src/base\n",
    "src/grant/g.h": '#include "base/b.h"\nint g(void);\n',
    "src/grant/g.c": '#include "g.h"\nint g(void) { return b(); }\n',
    "plugin/daemon/README.md": "The daemon.\n\nUses: plugin/daemon/support, plugin/daemon/core\n",
    "plugin/daemon/plugin.h": '#include "support/s.h"\n#include "grant/g.h"\n',
    "plugin/daemon/main.c": '#include "plugin.h"\n#include "core/c.h"\nint main(void) { return c(); }\n',
    "plugin/daemon/support/README.md": "Support.\n\nUses: nothing\n",
    "plugin/daemon/support/s.h": "int s(void);\nint s2(void);\n",
    # one file split for size: the two halves call each other through their
    # shared internal header, which is allowed
    "plugin/daemon/support/s_internal.h": "int s_half(int);\n",
    "plugin/daemon/support/s.c": '#include "s.h"\n#include "s_internal.h"\n'
                                 "int s(void) { return s_half(1); }\nint s2(void) { return 2; }\n",
    "plugin/daemon/support/s_half.c": '#include "s.h"\n#include "s_internal.h"\n'
                                      "int s_half(int x) { return x ? s2() : 0; }\n",
    "plugin/daemon/core/README.md": "Core.\n\nUses: plugin/daemon/support\n",
    "plugin/daemon/core/c.h": "int c(void);\n",
    "plugin/daemon/core/c.c": '#include "c.h"\n#include "plugin.h"\n'
                              "int c(void) { return s() + g(); }\n",
    "docs/architecture.md": ROOMS_DOC,
}

PLANTED = [
    ("a room includes a header of a room it may not use",
     {"src/base/b.c": '#include "b.h"\n#include "grant/g.h"\nint b(void) { return 1; }\n'},
     "room src/base includes src/grant/g.h of room src/grant"),
    ("a room calls up without the header",
     {"src/base/b.c": "int g(void);\nint b(void) { return g(); }\n"},
     "src/base/b.c calls g (src/grant/g.c) in room src/grant, which room src/base may not use"),
    ("a server-like room calls its caller",
     {"plugin/daemon/support/s.c": '#include "s.h"\n#include "s_internal.h"\nint c(void);\n'
                                   "int s(void) { return s_half(c()); }\nint s2(void) { return 2; }\n"},
     "calls c (plugin/daemon/core/c.c) in room plugin/daemon/core"),
    ("two files of a room in a circle without a shared internal header",
     {"plugin/daemon/support/s_half.c": '#include "s.h"\nint s_half(int);\n'
                                        "int s_half(int x) { return x ? s2() : 0; }\n"},
     "files call each other in a circle: plugin/daemon/support/s.c -> plugin/daemon/support/s_half.c (s_half)"),
    ("the context header includes a room above support",
     {"plugin/daemon/plugin.h": '#include "support/s.h"\n#include "core/c.h"\n'},
     "the context header includes plugin/daemon/core/c.h"),
    ("a room without a README",
     {"plugin/daemon/core/README.md": None}, "plugin/daemon/core: no README.md"),
    ("a README without a Uses: line",
     {"plugin/daemon/core/README.md": "Core.\n"}, "plugin/daemon/core/README.md: no 'Uses:' line"),
    ("Uses: names no room",
     {"src/grant/README.md": "Uses: src/base, src/bsae\n"}, "names src/bsae, which is not a room"),
    ("Uses: names a room of another layer",
     {"plugin/daemon/core/README.md": "Uses: plugin/daemon/support, src/base\n"},
     "names src/base, a room of another layer"),
    ("the Uses: lines make a circle",
     {"src/base/README.md": "Uses: src/grant\n"}, "the rooms' Uses: lines make a circle"),
    ("docs/architecture.md misses a room",
     {"docs/architecture.md": ROOMS_DOC.replace("`src/grant/`, ", "")},
     "does not name the room `src/grant/`"),
    ("a long file the docs do not explain",
     {"plugin/daemon/core/c.c": CLEAN["plugin/daemon/core/c.c"] + "/* */\n" * 600},
     "plugin/daemon/core/c.c has 603 lines (over 600)"),
    ("docs/architecture.md names a file that is gone",
     {"docs/architecture.md": ROOMS_DOC.replace("g.c", "pool.c")},
     "names src/grant/pool.c, which does not exist"),
]


_compiled = {}  # (room, file, the tree's C text) -> object bytes: a control recompiles only what it changed


def compile_tree(root, build):
    """cc -c every .c of the rooms into build, laid out as CMake does."""
    rooms = find_rooms(root)
    text = "".join(open(os.path.join(root, r, f)).read() for r in sorted(rooms)
                   for f in c_files(os.path.join(root, r)) if f.endswith(".h"))
    for room in rooms:
        for f in c_files(os.path.join(root, room)):
            if not f.endswith(".c"):
                continue
            obj = os.path.join(build, "CMakeFiles", "t.dir", room, f + ".o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            key = (room, f, text, open(os.path.join(root, room, f)).read())
            if key in _compiled:
                with open(obj, "wb") as o:
                    o.write(_compiled[key])
                continue
            res = subprocess.run(["cc", "-c", "-o", obj, "-I", os.path.join(root, "src"),
                                  "-I", os.path.join(root, "plugin", "daemon"),
                                  os.path.join(root, room, f)], capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError("cc %s/%s: %s" % (room, f, res.stderr.strip()))
            with open(obj, "rb") as o:
                _compiled[key] = o.read()


def check_planted(files):
    import tempfile
    with tempfile.TemporaryDirectory(prefix="rooms-") as d:
        root, build = os.path.join(d, "tree"), os.path.join(d, "build")
        for path, text in files.items():
            if text is None:
                continue
            p = os.path.join(root, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        compile_tree(root, build)
        return check(root, build)[0]


def run_controls(label, check_files, clean, planted, clean_note=""):
    """Runs check_files (files -> problems) on the clean tree, which must
    pass, and on each planted variant (name, changed files, expected report),
    which must be caught. Prints a line each; returns how many failed. Shared
    with check-layering.py's layer controls."""
    bad = 0
    problems = check_files(clean)
    if problems:
        print("FAIL control '%sclean tree': reported %s" % (label, problems))
        bad += 1
    else:
        print("ok:   control '%sclean tree' passes%s" % (label, clean_note))
    for name, change, want in planted:
        files = dict(clean)
        files.update(change)
        problems = check_files(files)
        hit = next((p for p in problems if want in p), None)
        if hit:
            print("ok:   control '%s%s' is caught: %s" % (label, name, hit))
        else:
            print("FAIL control '%s%s': no report containing %r (got %s)" % (label, name, want, problems))
            bad += 1
    return bad


def controls():
    """Runs the planted controls of the rooms; returns how many failed (printed)."""
    return run_controls("rooms: ", check_planted, CLEAN, PLANTED,
                        " (a split file's halves may call each other)")
