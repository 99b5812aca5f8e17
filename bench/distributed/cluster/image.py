#!/usr/bin/env python3
"""Builds loadlab's container image without a registry or a container daemon, and imports it
into the cluster's containerd (up.sh) as localhost/loadlab:dev.

The Containerfile at the repository's root cannot be built here (its FROM images cannot be
pulled), so this script builds what its run stage holds, and so checks that stage: it reads
the run stage's COPY, EXPOSE, USER and ENTRYPOINT lines and refuses a COPY it does not know
how to fill. The binary is static glibc instead of musl (no musl target is installed here):

  RUSTFLAGS="-C target-feature=+crt-static" cargo build --profile dist -p loadlab \\
      --target x86_64-unknown-linux-gnu

  image.py [--ref localhost/loadlab:dev] [--no-build] [--no-import] [--out FILE.tar]
"""
import argparse, json, os, re, shlex, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import mkimage  # noqa: E402

TARGET = "x86_64-unknown-linux-gnu"
BINARY = os.path.join(REPO, "target", TARGET, "dist", "loadlab")
# Each run-stage `COPY --from=build SRC DST` of the Containerfile -> what fills it here.
COPIES = {
    ("/loadlab", "/loadlab"): ("file", BINARY, 0o755),
    ("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt"):
        ("file", "/etc/ssl/certs/ca-certificates.crt", 0o644),
    # The build stage makes /rootfs/tmp (mode 1777): shards write their records in /tmp
    # as user 65534, and a FROM scratch image has no /tmp.
    ("/rootfs/", "/"): ("dir", "/tmp", 0o1777),
}


def run_stage(path):
    """The Containerfile's last stage: its COPY pairs and its image config."""
    lines, stage = [], []
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    for line in text.splitlines():
        line = line.strip()
        if line.upper().startswith("FROM "):
            stage = []
        elif line and not line.startswith("#"):
            stage.append(line)
    copies, config = [], {}
    for line in stage:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "COPY":
            args = [a for a in shlex.split(rest) if not a.startswith("--")]
            copies.append(tuple(args))
        elif word == "EXPOSE":
            config["expose"] = rest.split()
        elif word == "USER":
            config["user"] = rest.strip()
        elif word == "ENTRYPOINT":
            config["entrypoint"] = json.loads(rest)
        elif word in ("LABEL", "ENV", "WORKDIR"):
            sys.exit(f"image.py: {path}: run stage {word} is not built here; add it to image.py")
    return copies, config


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ref", default="localhost/loadlab:dev")
    p.add_argument("--no-build", action="store_true", help="use the binary already built")
    p.add_argument("--no-import", action="store_true")
    p.add_argument("--out", help="the OCI archive [default: $K8S_DIR/img/loadlab.tar]")
    a = p.parse_args()
    k8s_dir = os.environ.get("K8S_DIR", os.path.join(REPO, "bench", "out", "k8s"))
    out = a.out or os.path.join(k8s_dir, "img", "loadlab.tar")
    if not a.no_build:
        started = time.time()
        env = dict(os.environ, RUSTFLAGS="-C target-feature=+crt-static", CARGO_INCREMENTAL="0")
        cmd = ["nice", "-n", "15", "cargo", "build", "--profile", "dist", "-p", "loadlab",
               "--target", TARGET]
        print("image.py: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=REPO, env=env, check=True)
        print(f"image.py: built in {time.time() - started:.0f}s", flush=True)
    copies, config = run_stage(os.path.join(REPO, "Containerfile"))
    files, dirs = [], []
    for copy in copies:
        if copy not in COPIES:
            sys.exit(f"image.py: Containerfile: run stage `COPY {' '.join(copy)}` is not built here; add it to COPIES")
        kind, src, mode = COPIES[copy]
        if kind == "file":
            files.append((src, copy[1].lstrip("/"), mode))
        else:
            dirs.append((src.lstrip("/"), mode))
    if len(set(copies)) != len(COPIES):
        missing = set(COPIES) - set(copies)
        sys.exit(f"image.py: Containerfile: run stage lacks {sorted(missing)}; remove them here or add them there")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    argv = [out, a.ref, "--entrypoint", config["entrypoint"][0], "--user", config["user"]]
    for port in config.get("expose", []):
        argv += ["--expose", port if "/" in port else port + "/tcp"]
    for src, dst, mode in files:
        argv += ["--file", f"{src}:/{dst}:{mode:o}"]
    for dst, mode in dirs:
        argv += ["--dir", f"/{dst}:{mode:o}"]
    sys.argv = ["mkimage.py"] + argv
    mkimage.main()
    print(f"image.py: {out} ({os.path.getsize(out) // 1024} KiB): "
          f"{', '.join('/' + f[1] for f in files)}, {', '.join('/' + d[0] for d in dirs)}; "
          f"entrypoint {config['entrypoint']}, user {config['user']}, ports {config.get('expose')}")
    if not a.no_import:
        sock = os.path.join(k8s_dir, "run", "containerd.sock")
        cmd = ["ctr", "--address", sock, "-n", "k8s.io", "image", "import", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        print(f"image.py: imported as {a.ref} ({' '.join(cmd)})")


if __name__ == "__main__":
    main()
