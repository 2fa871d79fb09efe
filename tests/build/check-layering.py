#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The folders' dependencies (docs/architecture.md, "Folders and what they may
include"): the plugin and the extender share src/, never each other.

    check-layering.py [REPO [BUILD]]

Layers, by path: libioqos (src/ but src/kube), kube (src/kube: the Kubernetes
API client), plugin (plugin/), extender (scheduler-ext/), proto (proto/).
Fails when
  - a C file or header includes a header of a layer it may not use: quoted
    includes are resolved as the compiler would (the file's directory, then
    the include directories the CMakeLists declare: its own layer's first,
    then those it may use, then the rest), <...> includes against the include
    directories only; so `#include "body.h"` from plugin/ that only
    scheduler-ext/ can satisfy is caught, as is "../scheduler-ext/x.h";
  - a CMakeLists.txt links a target defined by, or adds an include directory
    of, a layer it may not use;
  - libioqos uses curl (its link line or a <curl/...> include): the HTTP
    client is src/kube's.
Then the rooms inside src/ and plugin/daemon/ (rooms.py): each room's README
says which rooms it may use; includes, and with BUILD (a CMake build tree,
its objects read with nm) calls, that go elsewhere fail, as do circles.
Then the controls: planted violations in throw-away trees, each of which the
checks must catch, and a clean tree they must pass. Exit 0 clean, 1 not.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rooms  # noqa: E402

FORBIDDEN = {
    "libioqos": {"kube", "plugin", "extender", "proto"},
    "kube": {"plugin", "extender", "proto"},
    "plugin": {"extender"},
    "extender": {"plugin", "proto"},
    "proto": {"libioqos", "kube", "plugin", "extender"},
}
SOURCE_EXT = (".c", ".h")
CMAKE_CMDS = ("target_link_libraries", "target_include_directories", "include_directories",
              "link_libraries", "add_library", "add_executable")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(rel):
    """The layer of a repository-relative path, None outside them."""
    rel = rel.replace(os.sep, "/") + "/"  # a directory itself too
    if rel.startswith("src/kube/"):
        return "kube"
    for prefix, name in (("src/", "libioqos"), ("plugin/", "plugin"),
                         ("scheduler-ext/", "extender"), ("proto/", "proto")):
        if rel.startswith(prefix):
            return name
    return None


def walk(root, want):
    for top in ("src", "plugin", "scheduler-ext", "proto"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if want(f):
                    yield os.path.join(d, f)


def rel(root, path):
    return os.path.relpath(os.path.normpath(path), root).replace(os.sep, "/")


def cmake_calls(text):
    """(command, [arguments]) of the commands this check reads."""
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"\b(%s)\s*\(([^)]*)\)" % "|".join(CMAKE_CMDS), text, re.S):
        yield m.group(1), m.group(2).split()


def expand(arg, root, cmdir):
    """A path argument with the source-directory variables replaced; None
    when it is not a source path (other variables, keywords)."""
    a = arg.replace("${CMAKE_CURRENT_SOURCE_DIR}", cmdir).replace("${CMAKE_SOURCE_DIR}", root)
    a = a.replace("${PROJECT_SOURCE_DIR}", root)
    if "${" in a or "$<" in a or a in ("PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE",
                                       "AFTER", "STATIC", "SHARED", "OBJECT"):
        return None
    if not os.path.isabs(a):
        a = os.path.join(cmdir, a)
    return os.path.normpath(a)


class Tree:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.targets = {}   # target name -> layer defining it
        self.incdirs = []   # (layer declaring it, absolute dir)
        self.cmakes = list(walk(self.root, lambda f: f == "CMakeLists.txt"))
        for cm in self.cmakes:
            layer = layer_of(rel(self.root, cm))
            cmdir = os.path.dirname(cm)
            for cmd, args in cmake_calls(open(cm).read()):
                if cmd in ("add_library", "add_executable") and args:
                    self.targets[args[0]] = layer
                elif cmd in ("target_include_directories", "include_directories"):
                    for a in args[1:] if cmd.startswith("target_") else args:
                        d = expand(a, self.root, cmdir)
                        if d:
                            self.incdirs.append((layer, d))

    def search_order(self, layer):
        own = [d for l, d in self.incdirs if l == layer]
        allowed = [d for l, d in self.incdirs if l != layer and l not in FORBIDDEN.get(layer, ())]
        rest = [d for l, d in self.incdirs if l in FORBIDDEN.get(layer, ())]
        return own + allowed + rest

    def resolve(self, src, kind, name, layer):
        dirs = ([os.path.dirname(src)] if kind == '"' else []) + self.search_order(layer)
        for d in dirs:
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p):
                return p
        return None


def check(root):
    t = Tree(root)
    problems = []
    for f in walk(t.root, lambda f: f.endswith(SOURCE_EXT)):
        r = rel(t.root, f)
        layer = layer_of(r)
        text = open(f, errors="replace").read()
        for m in INCLUDE.finditer(text):
            kind, name = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if layer == "libioqos" and name.startswith("curl/"):
                problems.append("%s:%d: libioqos includes <%s> (HTTP is src/kube's)" %
                                (r, line, name))
            hit = t.resolve(f, kind, name, layer)
            if not hit:
                continue
            to = layer_of(rel(t.root, hit))
            if to in FORBIDDEN.get(layer, ()):
                problems.append("%s:%d: %s includes %s from %s (%s)" %
                                (r, line, layer, name, to, rel(t.root, hit)))
    for cm in t.cmakes:
        r = rel(t.root, cm)
        layer = layer_of(r)
        cmdir = os.path.dirname(cm)
        for cmd, args in cmake_calls(open(cm).read()):
            if cmd in ("add_library", "add_executable"):
                continue
            for a in args:
                if layer == "libioqos" and cmd.endswith("link_libraries") and "CURL" in a.upper():
                    problems.append("%s: libioqos links %s (HTTP is src/kube's)" % (r, a))
                other = t.targets.get(a)
                if other in FORBIDDEN.get(layer, ()):
                    problems.append("%s: %s %s links %s, a target of %s" %
                                    (r, cmd, layer, a, other))
                if cmd.endswith("include_directories"):
                    d = expand(a, t.root, cmdir)
                    to = layer_of(rel(t.root, d)) if d and d.startswith(t.root + os.sep) else None
                    if to in FORBIDDEN.get(layer, ()):
                        problems.append("%s: %s adds the include directory %s of %s" %
                                        (r, layer, rel(t.root, d), to))
    return problems


# ---- controls: planted violations the check must catch ----

CUR = "${CMAKE_CURRENT_SOURCE_DIR}"


def lib(name, src, inc, links):
    """A CMakeLists.txt defining one library."""
    return ("add_library(%s STATIC %s)\n" % (name, src) +
            "target_include_directories(%s PUBLIC %s)\n" % (name, inc) +
            "target_link_libraries(%s PUBLIC %s)\n" % (name, links))


CLEAN = {
    "src/CMakeLists.txt": lib("ioqos", "a.c", CUR + "/include", "PkgConfig::JSONC"),
    "src/include/ioqos/a.h": "",
    "src/a.c": '#include "ioqos/a.h"\n#include <stdio.h>\n',
    "src/kube/CMakeLists.txt": lib("ioqos_kube", "k.c", CUR + "/include", "ioqos PkgConfig::CURL"),
    "src/kube/include/ioqos/kube/kube.h": '#include "ioqos/a.h"\n',
    "src/kube/k.c": '#include <curl/curl.h>\n#include "ioqos/kube/kube.h"\n',
    "plugin/daemon/CMakeLists.txt": lib("ioqos_plugin_core", "p.c", CUR, "ioqos ioqos_kube"),
    "plugin/daemon/metrics.h": "",
    "plugin/daemon/p.c": '#include "metrics.h"\n#include "ioqos/kube/kube.h"\n',
    "scheduler-ext/CMakeLists.txt": "# links ioqos_plugin_core: no\n" +
                                    lib("ioqos_ext", "x.c", CUR, "ioqos ioqos_kube"),
    "scheduler-ext/metrics.h": "",
    "scheduler-ext/body.h": "",
    "scheduler-ext/x.c": '#include "metrics.h"\n#include "body.h"\n#include "ioqos/kube/kube.h"\n',
}

PLANTED = [
    ("plugin includes an extender header through an include dir",
     {"plugin/daemon/p.c": '#include "body.h"\n',
      "plugin/daemon/CMakeLists.txt": CLEAN["plugin/daemon/CMakeLists.txt"] +
      "target_include_directories(ioqos_plugin_core PRIVATE ${CMAKE_SOURCE_DIR}/scheduler-ext)\n"},
     "includes body.h from extender"),
    ("plugin includes an extender header by path",
     {"plugin/daemon/p.c": '#include "../../scheduler-ext/body.h"\n'}, "from extender"),
    ("plugin CMake adds the extender's include dir",
     {"plugin/daemon/CMakeLists.txt": CLEAN["plugin/daemon/CMakeLists.txt"] +
      "target_include_directories(ioqos_plugin_core PRIVATE ../../scheduler-ext)\n"},
     "adds the include directory scheduler-ext of extender"),
    ("plugin CMake adds the extender's include dir (absolute)",
     {"plugin/daemon/CMakeLists.txt": CLEAN["plugin/daemon/CMakeLists.txt"] +
      "include_directories(${CMAKE_SOURCE_DIR}/scheduler-ext)\n"},
     "adds the include directory scheduler-ext of extender"),
    ("extender links the plugin's core",
     {"scheduler-ext/CMakeLists.txt": CLEAN["scheduler-ext/CMakeLists.txt"] +
      "target_link_libraries(ioqos_ext PRIVATE\n  ioqos_plugin_core)\n"},
     "links ioqos_plugin_core, a target of plugin"),
    ("extender includes a plugin header by path",
     {"scheduler-ext/x.c": '#include "../plugin/daemon/metrics.h"\n'}, "from plugin"),
    ("libioqos includes the kube client",
     {"src/a.c": '#include "ioqos/kube/kube.h"\n',
      "src/CMakeLists.txt": CLEAN["src/CMakeLists.txt"] +
      "target_include_directories(ioqos PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/kube/include)\n"},
     "libioqos includes ioqos/kube/kube.h from kube"),
    ("libioqos includes a plugin header",
     {"src/a.c": '#include "../plugin/daemon/metrics.h"\n'}, "from plugin"),
    ("libioqos uses curl",
     {"src/a.c": "#include <curl/curl.h>\n"}, "libioqos includes <curl/curl.h>"),
    ("libioqos links curl",
     {"src/CMakeLists.txt": lib("ioqos", "a.c", CUR + "/include",
                                "PkgConfig::JSONC PkgConfig::CURL")},
     "libioqos links PkgConfig::CURL"),
]


def check_tree(files):
    """check() of a throw-away tree holding files."""
    with tempfile.TemporaryDirectory(prefix="layering-") as d:
        for path, text in files.items():
            p = os.path.join(d, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return check(d)


def controls():
    return rooms.run_controls("", check_tree, CLEAN, PLANTED)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    build = sys.argv[2] if len(sys.argv) > 2 else None
    problems = check(root)
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print("ok:   %s: plugin/ and scheduler-ext/ use only src/, libioqos only itself" %
              os.path.abspath(root))
    room_problems, what = rooms.check(root, build)
    for p in room_problems:
        print("FAIL " + p)
    if not room_problems:
        print("ok:   rooms (%s): every include%s points where the room's README allows; "
              "no circles; docs/architecture.md names every room" %
              (what, " and call" if build else ""))
    bad = controls() + rooms.controls()
    sys.exit(1 if problems or room_problems or bad else 0)


if __name__ == "__main__":
    main()
