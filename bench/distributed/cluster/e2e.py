#!/usr/bin/env python3
"""`loadlab kube run` end to end against the single-node cluster of up.sh (python3, stdlib).

Brings the cluster up (or uses it if up), builds and imports loadlab's image (image.py),
serves `loadlab simulate` on 127.0.0.1 (the pods use the node's network to reach it), then:

  a. a 4-shard run: records gathered, merged report, Job and ConfigMap gone; asked vs
     achieved, each shard's start skew, time to the first request and from the last to
     the report; a one-process run at the same rate for comparison;
  b. a shard's pod deleted while it sends: that shard missing with why, the others kept;
  c. a user whose Role can only get pods: refused (403), nothing left behind;
  d. a namespace that does not exist; a kubeconfig pointing at a closed port; the same
     -name twice while the first runs; an image that is not there with -pull never;
  e. `kube run` killed: `kube gather NAME` fetches the lingering shards' records.

Prints each command and its output, writes a summary to bench/out/kube-e2e.md, stops the
simulator, and the cluster only if it started it (or with --down).

  K8S_BIN=/work/k8s/bin bench/distributed/cluster/e2e.py [--no-build] [--down]
"""
import argparse, datetime, glob, json, os, re, shutil, socket, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
K8S_DIR = os.path.abspath(os.environ.setdefault("K8S_DIR", os.path.join(REPO, "bench", "out", "k8s")))
K8S_BIN = os.environ.setdefault("K8S_BIN", os.path.join(K8S_DIR, "bin"))
OUT = os.path.join(REPO, "bench", "out", "kube-e2e")
LOADLAB = os.path.join(REPO, "target", "x86_64-unknown-linux-gnu", "dist", "loadlab")
ADMIN = os.path.join(K8S_DIR, "admin.kubeconfig")
IMAGE = "localhost/loadlab:dev"
LABEL = "loadlab.dev/run"

summary = []   # markdown lines
checks = []    # (name, ok, detail)


def say(text=""):
    print(text, flush=True)


def sh(cmd, env=None, check=False, timeout=600, quiet=False):
    """Runs cmd (a list), printing it and its output; returns (rc, stdout, stderr, seconds)."""
    say("$ " + " ".join(cmd))
    started = time.time()
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
    took = time.time() - started
    if not quiet:
        for line in (p.stdout + p.stderr).rstrip().splitlines():
            say("  " + line)
    say(f"  (exit {p.returncode}, {took:.1f}s)")
    if check and p.returncode != 0:
        sys.exit(f"e2e.py: {cmd[0]} failed")
    return p.returncode, p.stdout, p.stderr, took


def kubectl(*args, kubeconfig=ADMIN, quiet=False):
    return sh([os.path.join(K8S_BIN, "kubectl"), "--kubeconfig", kubeconfig, *args], quiet=quiet)


def check(name, ok, detail=""):
    checks.append((name, ok, detail))
    say(f"CHECK {'PASS' if ok else 'FAIL'}: {name}{': ' + detail if detail else ''}")


def leftovers(name, namespace="default"):
    """The run's Job, ConfigMap and pods still in the cluster (after a short wait)."""
    for _ in range(30):
        _, out, _, _ = kubectl("get", "jobs,configmaps,pods", "-n", namespace, "-l", f"{LABEL}={name}",
                               "-o", "name", quiet=True)
        names = out.split()
        if not names:
            return []
        time.sleep(1)
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_time(text):
    """RFC 3339 with nanoseconds -> unix seconds (float)."""
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    base = datetime.datetime.fromisoformat(m.group(1) + (m.group(3).replace("Z", "+00:00")))
    return base.timestamp() + float(m.group(2) or 0)


def shard_header(path):
    """The `shard` object of a record file's header."""
    data = open(path, "rb").read(1 << 16).decode("latin-1")
    at = data.find('"shard":{')
    if at < 0:
        return None
    return json.JSONDecoder().raw_decode(data[at + len('"shard":'):])[0]


def report_json(files):
    _, out, _, _ = sh([LOADLAB, "report", "-type=json", *files], quiet=True)
    return json.loads(out)


def kube_run(name, extra, attack, kubeconfig=ADMIN, timeout=300):
    cmd = [LOADLAB, "kube", "run", "-name", name, *extra, "--", *attack]
    return sh(cmd, env={"KUBECONFIG": kubeconfig}, timeout=timeout)


def cluster_up():
    rc, _, _, _ = kubectl("get", "--raw", "/readyz", quiet=True) if os.path.exists(ADMIN) else (1, "", "", 0)
    if rc == 0:
        say("e2e.py: the cluster is up already")
        return False
    _, _, _, took = sh([os.path.join(HERE, "up.sh")], check=True)
    summary.append(f"- `up.sh` (cold): {took:.1f} s to a Ready node")
    return True


def main_run(targets, rate, duration_s, shards):
    say("\n## a. a 4-shard run\n")
    name = f"e2e-main-{int(time.time())}"
    out = os.path.join(OUT, "a")
    shutil.rmtree(out, ignore_errors=True)
    started = time.time()
    rc, stdout, stderr, took = kube_run(name, ["-shards", str(shards), "-host-network", "-pull", "never",
                                               "-image", IMAGE, "-targets", targets, "-start-delay", "15s",
                                               "-output", out],
                                        ["-rate", str(rate), "-duration", f"{duration_s}s"])
    reported = started + took
    files = sorted(glob.glob(os.path.join(out, "shard-*.llr")))
    check("a: kube run exits 0 with every shard's records", rc == 0 and len(files) == shards,
          f"exit {rc}, {len(files)} files")
    left = leftovers(name)
    check("a: Job, ConfigMap and pods gone afterwards", not left, " ".join(left))
    if not files:
        return None
    merged = report_json(files)
    asked = rate * duration_s
    got = merged["requests"]
    ok_share = sum(1 for c, n in merged.get("status_codes", {}).items() if c == "200")
    check("a: achieved total within 0.5% of asked", abs(got - asked) <= asked * 0.005,
          f"asked {asked}, sent {got} ({(got - asked) / asked * 100:+.2f}%)")
    skews = []
    for f in files:
        h = shard_header(f)
        skews.append((h["index"], h["start_skew_ns"]))
    first = parse_time(merged["earliest"]) - started
    last_to_report = reported - parse_time(merged["latest"])
    one = os.path.join(OUT, "one.llr")
    sh([LOADLAB, "attack", "-rate", str(rate), "-duration", f"{duration_s}s", "-targets", targets,
        "-output", one, "-quiet"])
    single = report_json([one])
    lat = lambda r, p: r["latencies"][p] / 1e6
    lag = lambda r, p: r["loadlab"]["send_lag"][p] / 1e6
    summary.extend([
        f"## a. 4 shards, -rate {rate} -duration {duration_s}s, -host-network -pull never",
        "",
        f"- asked {asked} requests, sent {got} ({(got - asked) / asked * 100:+.3f}%); status codes {merged.get('status_codes')}",
        f"- asked rate {merged['loadlab']['asked_rate']:.1f}/s, achieved {merged['loadlab']['achieved_rate']:.1f}/s",
        "- start skew per shard: " + ", ".join(f"shard {i}: {s / 1e3:.0f} µs" for i, s in sorted(skews)),
        f"- `kube run` start to first request: {first:.1f} s (-start-delay 15s: -start-at is now + 15 s, rounded to the second)",
        f"- last request sent to merged report printed: {last_to_report:.1f} s",
        f"- `kube run` wall time: {took:.1f} s",
        "",
        "| | p50 | p99 | max | send lag p99 |",
        "|---|---|---|---|---|",
        f"| 4 shards in pods | {lat(merged, '50th'):.3f} ms | {lat(merged, '99th'):.3f} ms | {lat(merged, 'max'):.3f} ms | {lag(merged, '99th'):.3f} ms |",
        f"| one process | {lat(single, '50th'):.3f} ms | {lat(single, '99th'):.3f} ms | {lat(single, 'max'):.3f} ms | {lag(single, '99th'):.3f} ms |",
        "",
        "`kube run`'s output:", "", "```", (stdout + stderr).rstrip(), "```", "",
    ])
    return ok_share


def kill_run(targets, rate):
    say("\n## b. a shard's pod deleted mid-run\n")
    name = f"e2e-kill-{int(time.time())}"
    out = os.path.join(OUT, "b")
    shutil.rmtree(out, ignore_errors=True)
    def kill():
        time.sleep(10 + 8)   # start delay + 8 s of sending
        _, pods, _, _ = kubectl("get", "pods", "-l", f"{LABEL}={name}", "-o",
                                "jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index}{\"\\n\"}{end}")
        for line in pods.split("\n"):
            if line.endswith(" 1"):
                kubectl("delete", "pod", line.split()[0], "--grace-period=1", "--wait=false")
    killer = threading.Thread(target=kill)
    killer.start()
    rc, stdout, stderr, _ = kube_run(name, ["-shards", "4", "-host-network", "-pull", "never", "-image", IMAGE,
                                            "-targets", targets, "-start-delay", "10s", "-output", out],
                                     ["-rate", str(rate), "-duration", "20s"])
    killer.join()
    text = stdout + stderr
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out, "shard-*.llr")))
    check("b: the deleted shard is reported missing with why", "shard 1/4 missing" in text, 
          next((l for l in text.splitlines() if "missing" in l), ""))
    check("b: the other three shards' records are kept and reported",
          files == ["shard-0.llr", "shard-2.llr", "shard-3.llr"] and rc == 0, f"exit {rc}, {files}")
    left = leftovers(name)
    check("b: nothing left behind", not left, " ".join(left))
    summary.extend(["## b. shard 1's pod deleted 8 s into the run", "", "```", text.rstrip(), "```", ""])


def forbidden(targets):
    say("\n## c. a user who may only get pods\n")
    pki = os.path.join(K8S_DIR, "pki")
    user = "e2e-viewer"
    key, csr, crt = (os.path.join(pki, f"{user}.{e}") for e in ("key", "csr", "crt"))
    sh(["openssl", "genrsa", "-out", key, "2048"], quiet=True)
    sh(["openssl", "req", "-new", "-key", key, "-subj", f"/CN={user}", "-out", csr])
    ext = os.path.join(pki, f"{user}.ext")
    with open(ext, "w") as f:   # an extension makes it an X.509 v3 cert, which rustls needs
        f.write("extendedKeyUsage=clientAuth\n")
    sh(["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"), "-CAkey",
        os.path.join(pki, "ca.key"), "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", crt],
       quiet=True)
    kubeconfig = os.path.join(K8S_DIR, f"{user}.kubeconfig")
    k = [os.path.join(K8S_BIN, "kubectl"), "--kubeconfig", kubeconfig]
    sh(k + ["config", "set-cluster", "local", "--server=https://127.0.0.1:6443",
            f"--certificate-authority={pki}/ca.crt", "--embed-certs"])
    sh(k + ["config", "set-credentials", user, f"--client-certificate={crt}", f"--client-key={key}", "--embed-certs"])
    sh(k + ["config", "set-context", "local", "--cluster=local", f"--user={user}"])
    sh(k + ["config", "use-context", "local"])
    kubectl("delete", "role,rolebinding", "e2e-pod-getter", "--ignore-not-found")
    kubectl("create", "role", "e2e-pod-getter", "--verb=get", "--resource=pods")
    kubectl("create", "rolebinding", "e2e-pod-getter", "--role=e2e-pod-getter", f"--user={user}")
    name = "e2e-forbidden"
    rc, stdout, stderr, _ = kube_run(name, ["-shards", "2", "-host-network", "-pull", "never", "-image", IMAGE,
                                            "-targets", targets, "-start-delay", "10s",
                                            "-output", os.path.join(OUT, "c")],
                                     ["-rate", "10", "-duration", "2s"], kubeconfig=kubeconfig)
    text = (stdout + stderr).strip()
    check("c: refused with the RBAC message", rc != 0 and "refused to create the targets ConfigMap (RBAC)" in text
          and 'cannot create resource "configmaps"' in text, text.splitlines()[-1] if text else "")
    left = leftovers(name)
    check("c: nothing left behind", not left, " ".join(left))
    kubectl("delete", "role,rolebinding", "e2e-pod-getter")
    summary.extend(["## c. 403", "", "```", text, "```", ""])


def refusals(targets):
    say("\n## d. refusals\n")
    base = ["-shards", "2", "-host-network", "-pull", "never", "-targets", targets,
            "-output", os.path.join(OUT, "d")]
    attack = ["-rate", "10", "-duration", "10s"]
    rows = []
    # a namespace that does not exist
    rc, o, e, took = kube_run("e2e-nons", base + ["-image", IMAGE, "-namespace", "no-such-ns"], attack)
    rows.append(("a namespace that does not exist", rc != 0 and 'namespace "no-such-ns" does not exist' in o + e, o + e, took))
    # a kubeconfig pointing at a closed port
    closed = os.path.join(K8S_DIR, "closed.kubeconfig")
    shutil.copy(ADMIN, closed)
    port = free_port()
    sh([os.path.join(K8S_BIN, "kubectl"), "--kubeconfig", closed, "config", "set-cluster", "local",
        f"--server=https://127.0.0.1:{port}"])
    rc, o, e, took = kube_run("e2e-closed", base + ["-image", IMAGE], attack, kubeconfig=closed)
    rows.append(("a kubeconfig pointing at a closed port",
                 rc != 0 and f"https://127.0.0.1:{port}" in o + e and closed in o + e and "refused" in (o + e).lower(),
                 o + e, took))
    # the same -name twice while the first runs
    first_out = os.path.join(OUT, "d-first")
    first = subprocess.Popen([LOADLAB, "kube", "run", "-name", "e2e-twice", *base[:-1], first_out,
                              "-image", IMAGE, "-start-delay", "8s", "--", *attack],
                             env=dict(os.environ, KUBECONFIG=ADMIN), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    for _ in range(30):
        if kubectl("get", "job", "e2e-twice", quiet=True)[0] == 0:
            break
        time.sleep(0.5)
    rc, o, e, took = kube_run("e2e-twice", base + ["-image", IMAGE], attack)
    first_text = first.communicate(timeout=120)[0]
    say("  first run's output:\n" + "\n".join("    " + l for l in first_text.splitlines()))
    rows.append(("the same -name twice (the second while the first runs)",
                 rc != 0 and 'a run named "e2e-twice" already exists in namespace default' in o + e
                 and first.returncode == 0 and "2 shard record files" in first_text,
                 o + e + f"\n(the first run: exit {first.returncode}, "
                 + next((l for l in first_text.splitlines() if "record files" in l), "no records") + ")", took))
    # an image that is not there, with -pull never
    rc, o, e, took = kube_run("e2e-noimage", base + ["-image", "localhost/no-such-image:1"], attack)
    rows.append(("an image that is not there with -pull never",
                 rc != 0 and "cannot run image localhost/no-such-image:1: ErrImageNeverPull" in o + e and took < 30,
                 o + e, took))
    summary.extend(["## d. refusals", ""])
    for name, ok, text, took in rows:
        last = [l for l in text.strip().splitlines() if l.strip()]
        check("d: " + name, ok, f"{took:.1f}s: " + (last[-1] if last else ""))
        summary.extend([f"**{name}** ({took:.1f} s):", "", "```", text.strip(), "```", ""])
    for name in ("e2e-nons", "e2e-closed", "e2e-twice", "e2e-noimage"):
        left = leftovers(name)
        check(f"d: nothing left of {name}", not left, " ".join(left))


def gather_after_death(targets):
    say("\n## e. kube gather after the coordinator died\n")
    name = f"e2e-gather-{int(time.time())}"
    cmd = [LOADLAB, "kube", "run", "-name", name, "-shards", "2", "-host-network", "-pull", "never",
           "-image", IMAGE, "-targets", targets, "-start-delay", "8s", "-output", os.path.join(OUT, "e-dead"),
           "--", "-rate", "100", "-duration", "5s"]
    say("$ " + " ".join(cmd) + " &   # then SIGKILL once the pods run")
    run = subprocess.Popen(cmd, env=dict(os.environ, KUBECONFIG=ADMIN), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(5)
    run.kill()
    run.wait()
    time.sleep(8 + 5 + 2)   # the shards send, write their records and linger
    out = os.path.join(OUT, "e")
    shutil.rmtree(out, ignore_errors=True)
    rc, o, e, took = sh([LOADLAB, "kube", "gather", name, "-output", out], env={"KUBECONFIG": ADMIN})
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out, "shard-*.llr")))
    check("e: kube gather fetches every shard's records of a dead run", rc == 0 and files == ["shard-0.llr", "shard-1.llr"],
          f"exit {rc}, {files}, {took:.1f}s")
    left = leftovers(name)
    check("e: and deletes the run", not left, " ".join(left))
    summary.extend(["## e. `kube gather` after `kube run` was killed (SIGKILL)", "", "```", (o + e).strip(), "```", ""])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--no-build", action="store_true", help="use the static binary already built")
    p.add_argument("--down", action="store_true", help="stop the cluster afterwards even if it was up")
    p.add_argument("--rate", type=int, default=2000)
    p.add_argument("--duration", type=int, default=20, help="seconds")
    a = p.parse_args()
    os.makedirs(OUT, exist_ok=True)
    started_cluster = cluster_up()
    sh([sys.executable, os.path.join(HERE, "image.py")] + (["--no-build"] if a.no_build else []), check=True)
    port = free_port()
    recipe = os.path.join(REPO, "examples", "recipes", "small_no_latency.json")
    sim = subprocess.Popen([LOADLAB, "simulate", "-addr", f"127.0.0.1:{port}", "-threads", "1", recipe],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    say(f"e2e.py: simulator on 127.0.0.1:{port} (pid {sim.pid})")
    targets = os.path.join(OUT, "targets.txt")
    with open(targets, "w") as f:
        f.write(f"GET http://127.0.0.1:{port}/\n")
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        main_run(targets, a.rate, a.duration, 4)
        kill_run(targets, a.rate)
        forbidden(targets)
        refusals(targets)
        gather_after_death(targets)
    finally:
        sim.terminate()
        sim.wait()
        if started_cluster or a.down:
            sh([os.path.join(HERE, "down.sh")])
    failed = [c for c in checks if not c[1]]
    head = [f"# `loadlab kube` end to end on a single-node cluster ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"Kubernetes v1.34.4 (up.sh), image {IMAGE} (image.py), simulator on 127.0.0.1. "
            f"{len(checks) - len(failed)}/{len(checks)} checks passed.", "",
            "| check | | detail |", "|---|---|---|"]
    head += [f"| {n} | {'PASS' if ok else '**FAIL**'} | {d.replace('|', '/')} |" for n, ok, d in checks]
    md = os.path.join(REPO, "bench", "out", "kube-e2e.md")
    with open(md, "w") as f:
        f.write("\n".join(head + [""] + summary) + "\n")
    say(f"\ne2e.py: {len(checks) - len(failed)}/{len(checks)} checks passed; summary in {md}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
