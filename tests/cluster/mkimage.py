#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a single-layer container image archive (the `docker save` layout,
which `ctr images import` reads) from files of this machine, with no registry
and no image builder: the test cluster's images are made from the binaries the
harness built, so what runs in the node is exactly what the tests built.

  mkimage.py OUT.tar --name REF [--bin SRC[:DEST]]... [--file SRC:DEST]...
             [--link TARGET:DEST]... [--dir DEST]... [--cmd JSON] [--user U]
             [--env K=V]...

--bin copies an executable and every shared library `ldd` lists for it (with
the dynamic loader), so a dynamically linked binary runs in the image.
The archive is deterministic: same inputs, same bytes (mtime 0, sorted).
"""
import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def die(msg):
    sys.stderr.write("mkimage: %s\n" % msg)
    sys.exit(1)


def ldd_closure(path):
    """The shared libraries `ldd` reports for path (empty for static binaries)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0:
        if "not a dynamic executable" in r.stdout + r.stderr:
            return []
        die("ldd %s: %s" % (path, (r.stderr or r.stdout).strip()))
    libs = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            die("ldd %s: %s" % (path, line))
        if "=>" in line:
            lib = line.split("=>", 1)[1].split("(")[0].strip()
        else:
            lib = line.split("(")[0].strip()
        if lib.startswith("/"):
            libs.append(lib)
    return libs


class Layer:
    def __init__(self):
        self.entries = {}  # dest -> (kind, data, mode)

    def add_dirs(self, dest):
        parts = dest.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            self.entries.setdefault(d, ("dir", None, 0o755))

    def add_file(self, src, dest, mode=None):
        dest = dest.strip("/")
        try:
            with open(src, "rb") as f:
                data = f.read()
            st = os.stat(src)
        except OSError as e:
            die("read %s: %s" % (src, e.strerror))
        self.add_dirs(dest)
        self.entries[dest] = ("file", data, mode if mode is not None else (st.st_mode & 0o7777))

    def add_link(self, target, dest):
        dest = dest.strip("/")
        self.add_dirs(dest)
        self.entries[dest] = ("link", target, 0o777)

    def add_dir(self, dest, mode=0o755):
        dest = dest.strip("/")
        self.add_dirs(dest + "/x")
        self.entries[dest] = ("dir", None, mode)

    def tar(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for name in sorted(self.entries):
                kind, data, mode = self.entries[name]
                ti = tarfile.TarInfo(name)
                ti.mtime = 0
                ti.mode = mode
                if kind == "dir":
                    ti.type = tarfile.DIRTYPE
                    t.addfile(ti)
                elif kind == "link":
                    ti.type = tarfile.SYMTYPE
                    ti.linkname = data
                    t.addfile(ti)
                else:
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
        return buf.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--name", required=True, help="image reference (REPOSITORY:TAG)")
    ap.add_argument("--bin", action="append", default=[], help="SRC[:DEST] executable + its libraries")
    ap.add_argument("--file", action="append", default=[], help="SRC:DEST")
    ap.add_argument("--link", action="append", default=[], help="TARGET:DEST symlink")
    ap.add_argument("--dir", action="append", default=[], help="DEST[:MODE] empty directory")
    ap.add_argument("--cmd", default=None, help="JSON list")
    ap.add_argument("--entrypoint", default=None, help="JSON list")
    ap.add_argument("--user", default=None)
    ap.add_argument("--env", action="append", default=[])
    a = ap.parse_args()

    layer = Layer()
    for spec in a.bin:
        src, _, dest = spec.partition(":")
        dest = dest or src
        if not os.access(src, os.X_OK):
            die("%s is not an executable file" % src)
        layer.add_file(src, dest, 0o755)
        for lib in ldd_closure(src):
            real = os.path.realpath(lib)
            layer.add_file(real, lib, 0o755)
    for spec in a.file:
        src, sep, dest = spec.partition(":")
        if not sep:
            die("--file wants SRC:DEST, got %r" % spec)
        layer.add_file(src, dest)
    for spec in a.link:
        target, sep, dest = spec.partition(":")
        if not sep:
            die("--link wants TARGET:DEST, got %r" % spec)
        layer.add_link(target, dest)
    for spec in a.dir:
        dest, _, mode = spec.partition(":")
        layer.add_dir(dest, int(mode, 8) if mode else 0o755)

    blob = layer.tar()
    diff_id = "sha256:" + hashlib.sha256(blob).hexdigest()
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + a.env
    cfg = {"Env": env}
    if a.cmd:
        cfg["Cmd"] = json.loads(a.cmd)
    if a.entrypoint:
        cfg["Entrypoint"] = json.loads(a.entrypoint)
    if a.user:
        cfg["User"] = a.user
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "tests/cluster/mkimage.py"}],
    }
    cbytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    cname = hashlib.sha256(cbytes).hexdigest() + ".json"
    lname = diff_id[7:] + "/layer.tar"
    manifest = [{"Config": cname, "RepoTags": [a.name], "Layers": [lname]}]
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in sorted([(cname, cbytes), (lname, blob),
                                  ("manifest.json", json.dumps(manifest).encode())]):
            ti = tarfile.TarInfo(name)
            ti.mtime = 0
            ti.mode = 0o644
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    os.replace(tmp, a.out)
    print("%s %s %d bytes" % (a.out, a.name, os.path.getsize(a.out)))


if __name__ == "__main__":
    main()
