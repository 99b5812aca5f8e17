#!/usr/bin/env python3
"""Writes an OCI image layout archive (one layer) that `ctr image import` loads: no
registry, no container daemon. Used by up.sh (the pod sandbox's pause image) and image.sh
(loadlab's image, the Containerfile's run stage).

  mkimage.py OUT.tar REF --file SRC:DST[:MODE] ... [--dir DST:MODE] ...
             [--entrypoint PATH] [--user UID:GID] [--expose PORT/tcp]
"""
import argparse, gzip, hashlib, io, json, tarfile


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def layer(files, dirs):
    """A tar of the files and dirs, with their parent dirs, owned by root, mtime 0."""
    out = io.BytesIO()
    seen = set()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add_dir(path, mode=0o755):
            if path in seen:
                return
            seen.add(path)
            info = tarfile.TarInfo(path)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
            tar.addfile(info)
        def parents(path):
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                add_dir("/".join(parts[:i]))
        for dst, mode in dirs:
            parents(dst)
            add_dir(dst, mode)
        for src, dst, mode in files:
            parents(dst)
            with open(src, "rb") as f:
                data = f.read()
            info = tarfile.TarInfo(dst)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("ref", help="the image's name, e.g. localhost/loadlab:dev")
    p.add_argument("--file", action="append", default=[], help="SRC:DST[:OCTAL MODE]")
    p.add_argument("--dir", action="append", default=[], help="DST:OCTAL MODE")
    p.add_argument("--entrypoint")
    p.add_argument("--user")
    p.add_argument("--expose", action="append", default=[])
    a = p.parse_args()
    files = []
    for spec in a.file:
        src, dst, *mode = spec.split(":")
        files.append((src, dst.lstrip("/"), int(mode[0], 8) if mode else 0o644))
    dirs = [(d.lstrip("/"), int(m, 8)) for d, m in (s.split(":") for s in a.dir)]
    raw = layer(files, dirs)
    gz = gzip.compress(raw, mtime=0)
    config = {"Env": ["PATH=/"], "WorkingDir": "/"}
    if a.entrypoint:
        config["Entrypoint"] = [a.entrypoint]
    if a.user:
        config["User"] = a.user
    if a.expose:
        config["ExposedPorts"] = {port: {} for port in a.expose}
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": config,
                      "rootfs": {"type": "layers", "diff_ids": [digest(raw)]}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(cfg), "size": len(cfg)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": digest(gz), "size": len(gz)}]}).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": digest(manifest), "size": len(manifest),
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {"io.containerd.image.name": a.ref,
                        "org.opencontainers.image.ref.name": a.ref.rsplit(":", 1)[1]}}]}).encode()
    with tarfile.open(a.out, "w") as tar:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for blob in (gz, cfg, manifest):
            add("blobs/sha256/" + digest(blob)[7:], blob)


if __name__ == "__main__":
    main()
