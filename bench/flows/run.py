#!/usr/bin/env python3
"""Flows: one three-step user flow (log in, list the items, open one) run by loadlab, k6 and
Locust, each on one generator core, against loadlab's simulator on the other core.

The flow (flow.toml for loadlab, k6_flow.js, locustfile.py): POST /login with a JSON body
{"user":"u17","password":"p"}, take "token" from the JSON answer; GET /items with
`Authorization: Bearer <token>`, take an id of the list (a random one); GET /items/<id>.
Each answer is checked twice (status 200; the JSON field there), six checks a flow. The
simulator answers it from app.json (`requires` refuses a missing token with 401, `ids_from`
an unknown id with 404) at once, latency 0, so the generator is the bottleneck. The
simulator (`loadlab simulate -threads=1`) is pinned to CPU 1, every generator to CPU 0;
each run is measured with wait4 (user + system CPU of the generator process, peak RSS)
and bounded in time (killed past its duration plus a margin).

  1. CPU per request (CPU-µs / requests completed) at --rates (default 2000 and 10000
     requests/s), --seconds each (default 25), with the achieved rate and the checks'
     pass rate. The open model where the tool has one: loadlab `rate = "R/3s"` (flow
     starts/s = R/3), k6 `constant-arrival-rate` of R iterations per 3 s. Locust has none:
     `constant_throughput(--locust-user-rate)` per user (default 5 flows/s) with
     R / 3 / 5 users, spawned in about 1 s; its achieved rate is taken from the end of
     spawning to the end of the run (locustfile.py counts it), the others' over the run.
  2. Memory: peak RSS with --users (default 10000) closed-model users pausing --think
     (default 5 s) between flows, --memory-seconds (default 60) after the ramp: loadlab
     `concurrency` and `think_time`; k6 `constant-vus` with `sleep(5)`; Locust `-u 10000`
     with `wait_time = constant(5)` (spawned at 1000/s). A run is killed when its RSS
     passes --rss-cap-mib (default 12288): the machine has 24 GiB shared.
  3. The highest rate held within 1% of asked, checks passing: --search-rates tried in
     order, --search-seconds each (default 10), stopping at the first not held (twice: a
     rate missed is tried again), then once half-way between the last held and that one
     (below the first rate: halving down).

A run whose checks pass less than 99.9% is marked BROKEN and counted nowhere (no CPU per
request, no ratio, not held). The simulator's own count of answers by status is shown
beside each run (401/404 would be a flow that lost its token or id), and its CPU use over
the run (near 100% the simulator, not the generator, is what holds the rate back).

Peers: k6 from --k6, $K6, PATH or $(go env GOPATH)/bin (install:
`nice -n 15 go install go.k6.io/k6@latest`); Locust from --locust, PATH or
/work/venvs/locust/bin (install: `python3 -m venv /work/venvs/locust &&
/work/venvs/locust/bin/pip install locust`). A missing tool is skipped, and so is loadlab
when its build does not run flows yet (the attack refuses flow.toml).

Usage: bench/flows/run.py [--tools loadlab,k6,locust] [--seconds 25] [--rates 2000,10000]
         [--users 10000] [--think 5] [--memory-seconds 60] [--search-rates 1000,1500,...]
         [--search-seconds 10] [--skip-cpu] [--skip-memory] [--skip-search]
         [--binary LOADLAB] [--simulator LOADLAB] [--no-build] [--k6 PATH] [--locust PATH]
Output: a table, and JSON in bench/out/flows-<time>.json (and bench/out/flows.json) with
each run and the ratios loadlab/k6 and loadlab/locust. Traffic goes to 127.0.0.1 only.
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from benchlib import GENERATOR_CPU, LOADLAB, OUT, ROOT, SERVER_CPU, free_port, sh  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_OUT = os.path.dirname(OUT)  # bench/out
RUNS = os.path.join(OUT, "flows")  # bench/out/runs/flows: per-run files
VALID_CHECKS = 0.999
HELD = 0.99


# ---------------------------------------------------------------- measuring


def descendants(pid):
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def tree_rss_kib(pid):
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def measured(cmd, label, timeout, rss_cap_mib, env=None, stdin=subprocess.DEVNULL):
    """Runs cmd pinned to GENERATOR_CPU in its own process group; returns its CPU seconds
    (wait4: user + system, its waited-for children included), peak RSS (the larger of
    wait4's and of the tree's summed VmRSS polled every 0.5 s), wall time, exit code, and
    why it was killed (timeout, rss cap) if it was."""
    os.makedirs(RUNS, exist_ok=True)
    base = os.path.join(RUNS, re.sub(r"[^A-Za-z0-9_.-]+", "_", label))
    with open(base + ".stdout", "wb") as out, open(base + ".stderr", "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(["taskset", "-c", GENERATOR_CPU, *cmd], stdin=stdin, stdout=out, stderr=err,
                                env=env, start_new_session=True)
        try:
            status, usage, killed, polled_peak = watch(proc, start, timeout, rss_cap_mib)
        except BaseException:
            # Interrupted (Ctrl-C, an error here): the tool, in its own session, goes too.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    with open(base + ".stdout", "rb") as f:
        stdout = f.read().decode(errors="replace")
    with open(base + ".stderr", "rb") as f:
        stderr = f.read().decode(errors="replace")
    return {"cpu": usage.ru_utime + usage.ru_stime, "rss_mib": max(usage.ru_maxrss, polled_peak) / 1024,
            "wall": time.monotonic() - start, "rc": proc.returncode, "killed": killed,
            "stdout": stdout, "stderr": stderr}


def watch(proc, start, timeout, rss_cap_mib):
    """Waits for proc, polling its tree's RSS every 0.5 s and killing it past the cap or
    the timeout; returns wait4's status and usage, why it was killed (or None) and the
    largest RSS polled (KiB)."""
    killed, polled_peak = None, 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss = tree_rss_kib(proc.pid)
        polled_peak = max(polled_peak, rss)
        if not killed and rss > rss_cap_mib * 1024:
            killed = f"RSS over {rss_cap_mib} MiB"
        if not killed and time.monotonic() - start > timeout:
            killed = f"still running after {timeout:.0f}s"
        if killed:
            # SIGINT first: k6 and Locust then stop cleanly and still write their figures.
            for sig in (signal.SIGINT, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not _exited(proc.pid):
                    time.sleep(0.1)
                if _exited(proc.pid):
                    break
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.5)
    return status, usage, killed, polled_peak


def _exited(pid):
    """True once pid is a zombie (exited, not yet reaped: wait4 still has its usage)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# ---------------------------------------------------------------- the simulator


class Simulator:
    """`loadlab simulate app.json` on SERVER_CPU, one thread."""

    def __init__(self, binary):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(RUNS, "simulator.log"), "wb")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, binary, "simulate", os.path.join(HERE, "app.json"),
                                      f"-addr=127.0.0.1:{self.port}", "-threads=1"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.admin("status")
                break
            except OSError:
                time.sleep(0.1)
        else:
            self.stop()
            sys.exit("the simulator did not start: see bench/out/runs/flows/simulator.log")
        self.selftest()

    def admin(self, what):
        with urllib.request.urlopen(f"{self.base}/_admin/{what}", timeout=5) as r:
            return r.read().decode()

    def clear(self):
        self.admin("clear_current_count")
        self.mark = (time.monotonic(), self.cpu_seconds())  # CPU seconds (user + system) so far

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_since_clear(self):
        return self.cpu_seconds() - self.mark[1]

    def counts(self):
        try:
            c = json.loads(self.admin("current_count"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in c.items() if k != "total_requests"}

    def selftest(self):
        """The flow once by hand: a recipe that does not answer it stops the bench here."""
        req = urllib.request.Request(f"{self.base}/login", data=b'{"user":"u17","password":"p"}',
                                     headers={"Content-Type": "application/json"})
        token = json.loads(urllib.request.urlopen(req, timeout=5).read())["token"]
        auth = {"Authorization": f"Bearer {token}"}
        items = json.loads(urllib.request.urlopen(urllib.request.Request(f"{self.base}/items", headers=auth),
                                                  timeout=5).read())["items"]
        item = json.loads(urllib.request.urlopen(urllib.request.Request(f"{self.base}/items/{items[-1]['id']}",
                                                                        headers=auth), timeout=5).read())
        assert item["id"] == items[-1]["id"], item
        try:
            urllib.request.urlopen(f"{self.base}/items", timeout=5)
            sys.exit("the simulator answered /items without a token: app.json lost its `requires`")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


# ---------------------------------------------------------------- the tools


class Tool:
    name = "?"
    available = True
    why_not = ""

    def result(self, label, m, requests, seconds, passes, failures, extra=None):
        checks = passes + failures
        r = {"tool": self.name, "label": label, "requests": requests, "rate": requests / seconds,
             "cpu_s": m["cpu"], "cpu_us": m["cpu"] / requests * 1e6 if requests else None,
             "rss_mib": m["rss_mib"], "wall": m["wall"], "rc": m["rc"], "killed": m["killed"],
             "checks": checks, "checks_failed": failures, "pass_rate": passes / checks if checks else 0.0}
        r["valid"] = bool(requests and r["pass_rate"] >= VALID_CHECKS and not m["killed"])
        r.update(extra or {})
        return r


class Loadlab(Tool):
    name = "loadlab"

    def __init__(self, binary, args):
        self.binary, self.args = binary, args
        self.template = open(os.path.join(HERE, "flow.toml")).read()

    def flow_file(self, base, label, load_lines, seconds):
        text = self.template.replace("http://127.0.0.1:8080", base)
        text, n = re.subn(r'(?m)^rate = .*$', load_lines, text, count=1)
        assert n == 1, "flow.toml has no `rate = ` line"
        text = re.sub(r'(?m)^duration = .*$', f'duration = "{seconds}s"', text, count=1)
        if self.args.pick == "first":
            text = text.replace("json $.items[*].id", "json $.items[0].id")
        path = os.path.join(RUNS, f"{label}.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, base, label, load_lines, seconds, timeout, extra=None):
        flows = self.flow_file(base, label, load_lines, seconds)
        record = os.path.join(RUNS, f"{label}.llr")
        m = measured([self.binary, "attack", f"-scenarios={flows}", "-threads=1", f"-output={record}"],
                     label, timeout, self.args.rss_cap_mib)
        if m["rc"] != 0 and not m["killed"]:
            self.available = False
            self.why_not = f"attack failed ({m['rc']}): {m['stderr'].strip()[-300:]}"
            return None
        report = json.loads(subprocess.run([self.binary, "report", "-type=json", record], check=True,
                                           capture_output=True).stdout)
        passes, failures, source = checks_of(report)
        if os.path.exists(record):
            os.remove(record)
        return self.result(label, m, report["requests"], seconds, passes, failures,
                           dict(extra or {}, success=report.get("success"), checks_from=source))

    def open_run(self, base, rate, seconds):
        return self.run(base, f"loadlab-open-{rate}-{seconds}s", f'rate = "{rate}/3s"', seconds,
                        seconds + 60, {"asked": rate})

    def closed_run(self, base, users, think, seconds):
        return self.run(base, f"loadlab-closed-{users}", f'concurrency = {users}\nthink_time = "{think:g}s"',
                        seconds, seconds + 120, {"users": users})


def checks_of(report):
    """Passes and failures of every check in `loadlab report -type=json` (its `checks` array;
    the field names are read loosely while the format settles), and where they came from.
    A report without a checks block (flows landed before it) gives its requests' success
    instead: a failed check fails its request (`checks_fail_requests` is on by default)."""
    passes = failures = 0
    for c in report.get("checks") or report.get("loadlab", {}).get("checks") or []:
        passes += next((c[k] for k in ("passes", "passed", "pass", "ok") if k in c), 0)
        failures += next((c[k] for k in ("failures", "failed", "fails", "fail") if k in c), 0)
    if passes + failures == 0:  # no checks block: count the requests' success instead
        requests = report.get("requests", 0)
        passes = round(requests * report.get("success", 0))
        failures = requests - passes
        return passes, failures, "success"
    return passes, failures, "checks"


def find_k6(given):
    for path in (given, os.environ.get("K6"), shutil.which("k6")):
        if path and os.access(path, os.X_OK):
            return path
    if shutil.which("go"):
        gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
        path = os.path.join(gopath.split(os.pathsep)[0], "bin", "k6")
        if os.access(path, os.X_OK):
            return path
    return None


class K6(Tool):
    name = "k6"

    def __init__(self, args):
        self.args = args
        self.binary = find_k6(args.k6)
        if not self.binary:
            self.available = False
            self.why_not = "not found (nice -n 15 go install go.k6.io/k6@latest, or --k6 PATH)"

    def run(self, base, label, env_extra, seconds, timeout, extra=None):
        summary = os.path.join(RUNS, f"{label}.summary.json")
        if os.path.exists(summary):
            os.remove(summary)
        env = dict(os.environ, K6_NO_USAGE_REPORT="true", BASE=base, SECONDS=str(seconds), SUMMARY=summary,
                   PICK=self.args.pick, **env_extra)
        m = measured([self.binary, "run", "--no-usage-report", "--quiet", "--no-color",
                      os.path.join(HERE, "k6_flow.js")], label, timeout, self.args.rss_cap_mib, env=env)
        if not os.path.exists(summary):
            return self.result(label, m, 0, seconds, 0, 0, dict(extra or {}, error=m["stderr"].strip()[-300:]))
        metrics = json.load(open(summary))["metrics"]

        def value(name, key):
            return metrics.get(name, {}).get("values", {}).get(key, 0)
        return self.result(label, m, int(value("http_reqs", "count")), seconds, int(value("checks", "passes")),
                           int(value("checks", "fails")),
                           dict(extra or {}, iterations=int(value("iterations", "count")),
                                dropped_iterations=int(value("dropped_iterations", "count")),
                                vus_max=int(value("vus_max", "max") or value("vus_max", "value"))))

    def open_run(self, base, rate, seconds):
        return self.run(base, f"k6-open-{rate}-{seconds}s", {"MODE": "open", "RATE": str(rate)}, seconds,
                        seconds + 60, {"asked": rate})

    def closed_run(self, base, users, think, seconds):
        # k6 makes every VU (a JavaScript runtime each) before the clock starts: allow for it.
        return self.run(base, f"k6-closed-{users}", {"MODE": "closed", "VUS": str(users), "THINK": f"{think:g}"},
                        seconds, seconds + 300, {"users": users})


class Locust(Tool):
    name = "locust"

    def __init__(self, args):
        self.args = args
        candidates = (args.locust, shutil.which("locust"), "/work/venvs/locust/bin/locust")
        self.binary = next((p for p in candidates if p and os.access(p, os.X_OK)), None)
        if not self.binary:
            self.available = False
            self.why_not = ("not found (python3 -m venv /work/venvs/locust && "
                            "/work/venvs/locust/bin/pip install locust, or --locust PATH)")

    def run(self, base, label, users, spawn_rate, run_seconds, steady_from_spawn, env_extra, timeout, extra=None):
        stats = os.path.join(RUNS, f"{label}.counts.json")
        if os.path.exists(stats):
            os.remove(stats)
        env = dict(os.environ, FLOW_STATS=stats, FLOW_PICK=self.args.pick, **env_extra)
        m = measured([self.binary, "-f", os.path.join(HERE, "locustfile.py"), "--headless", "--only-summary",
                      "--loglevel", "WARNING", "-u", str(users), "-r", str(spawn_rate), "-t", f"{run_seconds}s",
                      "--stop-timeout", "0", "--exit-code-on-error", "0", "-H", base],
                     label, timeout, self.args.rss_cap_mib, env=env)
        if not os.path.exists(stats):
            return self.result(label, m, 0, run_seconds, 0, 0, dict(extra or {}, error=m["stderr"].strip()[-300:]))
        c = json.load(open(stats))
        r = self.result(label, m, c["requests"], run_seconds, c["passes"], c["failures"], extra)
        if steady_from_spawn and c["steady_start"] and c["steady_stop"]:
            (t0, n0), (t1, n1) = c["steady_start"], c["steady_stop"]
            r["rate"] = (n1 - n0) / (t1 - t0)
            r["steady_seconds"] = t1 - t0
        return r

    def open_run(self, base, rate, seconds):
        per_user = self.args.locust_user_rate
        users = max(1, round(rate / 3 / per_user))
        # Users * per-user flows/s is the rate asked of Locust (rounded users: say what it was).
        asked = users * per_user * 3
        return self.run(base, f"locust-open-{rate}-{seconds}s", users, users, seconds + 1, True,
                        {"FLOW_MODE": "open", "FLOW_PER_USER": f"{per_user:g}"}, seconds + 60,
                        {"asked": asked, "users": users})

    def closed_run(self, base, users, think, seconds):
        spawn = min(users, 1000)
        ramp = -(-users // spawn)
        return self.run(base, f"locust-closed-{users}", users, spawn, ramp + seconds, False,
                        {"FLOW_MODE": "closed", "FLOW_THINK": f"{think:g}"}, ramp + seconds + 120,
                        {"users": users, "ramp_seconds": ramp})


# ---------------------------------------------------------------- the figures


def show(r, sim_counts):
    if r is None:
        return
    codes = ", ".join(f"{k}: {v}" for k, v in sorted(sim_counts.items()))
    cpu = f"{r['cpu_us']:8.2f}" if r["cpu_us"] else f"{'-':>8}"
    asked = f"{r['rate'] / r['asked'] * 100:6.2f}% of asked" if r.get("asked") else ""
    flag = "" if r["valid"] else "  BROKEN" + (f" ({r['killed']})" if r["killed"] else "")
    print(f"   {r['tool']:<8} {r['requests']:>9} req  {r['rate']:9.0f} req/s {asked:<17} {cpu} CPU-µs/req  "
          f"RSS {r['rss_mib']:8.1f} MiB  checks {r['pass_rate'] * 100:7.3f}%  "
          f"simulator: {codes}, CPU {r['simulator_cpu'] * 100:.0f}%{flag}", flush=True)
    if r.get("error"):
        print(f"            {r['error']}", flush=True)


def run_one(sim, tool, how, *a):
    load = os.getloadavg()[0]
    sim.clear()
    r = getattr(tool, how)(sim.base, *a)
    if r is not None:
        r["simulator"] = sim.counts()
        # Its CPU over the generator's wall time (start-up included): near 1.0 the
        # simulator, not the generator, would be what holds the rate back.
        r["simulator_cpu_s"] = sim.cpu_since_clear()
        r["simulator_cpu"] = r["simulator_cpu_s"] / r["wall"]
        r["load_average"] = load
        show(r, r["simulator"])
    elif not tool.available:
        print(f"   {tool.name:<8} skipped: {tool.why_not}", flush=True)
    time.sleep(1)
    return r


def cpu_runs(sim, tools, args, results):
    print(f"== 1. CPU per request in the open model ({args.seconds}s each; generators on CPU {GENERATOR_CPU}, "
          f"simulator on CPU {SERVER_CPU}; Locust: constant_throughput({args.locust_user_rate:g}) per user)", flush=True)
    for rate in [int(x) for x in args.rates.split(",")]:
        print(f"   -- {rate} requests/s asked ({rate / 3:.1f} flows/s)", flush=True)
        for tool in tools:
            if tool.available:
                r = run_one(sim, tool, "open_run", rate, args.seconds)
                if r:
                    results["cpu"].setdefault(str(rate), {})[tool.name] = r


def memory_runs(sim, tools, args, results):
    print(f"== 2. memory: {args.users} closed-model users, {args.think:g}s think time, "
          f"{args.memory_seconds}s after the ramp (RSS cap {args.rss_cap_mib} MiB)", flush=True)
    for tool in tools:
        if tool.available:
            r = run_one(sim, tool, "closed_run", args.users, args.think, args.memory_seconds)
            if r:
                results["memory"][tool.name] = r


def search_runs(sim, tools, args, results):
    print(f"== 3. highest rate held within {(1 - HELD) * 100:g}% of asked, checks passing "
          f"({args.search_seconds}s each)", flush=True)
    rates = [int(x) for x in args.search_rates.split(",")]
    for tool in tools:
        if not tool.available:
            continue
        tried, held, failed = [], None, None

        def attempt(rate):
            # A rate not held is tried once more: on a shared machine one run can lose
            # its core for a moment (and k6, once behind, makes VUs and falls further).
            for _ in range(2):
                r = run_one(sim, tool, "open_run", rate, args.search_seconds)
                if r is None:
                    return None
                ok = r["valid"] and r["rate"] >= HELD * r["asked"]
                tried.append({"asked": rate, "achieved": r["rate"], "asked_of_tool": r["asked"], "held": ok,
                              "pass_rate": r["pass_rate"], "cpu_us": r["cpu_us"],
                              "simulator_cpu": r["simulator_cpu"], "load_average": r["load_average"]})
                if ok:
                    return True
            return False
        for rate in rates:
            ok = attempt(rate)
            if ok is None:
                break
            if ok:
                held = rate
            else:
                failed = rate
                break
        if tool.available and failed is not None:
            if held is not None:
                mid = round((held + failed) / 2 / 250) * 250
                if held < mid < failed and attempt(mid):
                    held = mid
            else:
                rate = failed // 2
                while rate >= 250 and tool.available:
                    if attempt(rate):
                        held = rate
                        break
                    rate //= 2
        if tool.available:
            results["max_rate"][tool.name] = {"held": held, "tried": tried,
                                              "note": None if failed is not None else "held every rate tried"}
            print(f"   {tool.name}: held {held if held is not None else 'none'} req/s"
                  f"{'' if failed is not None else ' (every rate tried: search higher with --search-rates)'}", flush=True)


def ratios(results):
    out = {}
    for peer in ("k6", "locust"):
        r = {}
        for rate, by_tool in results["cpu"].items():
            a, b = by_tool.get("loadlab"), by_tool.get(peer)
            if a and b and a["valid"] and b["valid"]:
                r[f"cpu_us_at_{rate}"] = a["cpu_us"] / b["cpu_us"]
        a, b = results["memory"].get("loadlab"), results["memory"].get(peer)
        if a and b and a["valid"] and b["valid"]:
            r["rss"] = a["rss_mib"] / b["rss_mib"]
        a, b = results["max_rate"].get("loadlab"), results["max_rate"].get(peer)
        if a and b and a["held"] and b["held"]:
            r["max_rate_held"] = a["held"] / b["held"]
        out[f"loadlab/{peer}"] = r
    return out


def summary(results, tools):
    names = [t.name for t in tools]
    print("== summary (BROKEN runs: -)", flush=True)
    print(f"   {'':<34}" + "".join(f"{n:>12}" for n in names), flush=True)

    def row(label, values):
        print(f"   {label:<34}" + "".join(f"{v:>12}" for v in values), flush=True)
    for rate, by_tool in results["cpu"].items():
        row(f"CPU-µs/request at {rate}/s", [f"{by_tool[n]['cpu_us']:.1f}" if n in by_tool and by_tool[n]["valid"]
                                            else "-" for n in names])
        row(f"  achieved req/s at {rate}/s", [f"{by_tool[n]['rate']:.0f}" if n in by_tool else "-" for n in names])
    if results["memory"]:
        m = results["memory"]
        users = next(iter(m.values()))["users"]
        row(f"peak RSS MiB, {users} users", [f"{m[n]['rss_mib']:.0f}" if n in m and m[n]["valid"] else "-"
                                           for n in names])
        row("  achieved req/s", [f"{m[n]['rate']:.0f}" if n in m else "-" for n in names])
    if results["max_rate"]:
        mr = results["max_rate"]
        row("max rate held (req/s)", [str(mr[n]["held"]) if n in mr and mr[n]["held"] else "-" for n in names])
    for pair, r in results["ratios"].items():
        if r:
            print(f"   {pair}: " + ", ".join(f"{k} {v:.2f}x" for k, v in r.items()), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default="loadlab,k6,locust")
    parser.add_argument("--seconds", type=int, default=25, help="each CPU-per-request run")
    parser.add_argument("--rates", default="2000,10000", help="requests/s for the CPU runs")
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--think", type=float, default=5.0)
    parser.add_argument("--memory-seconds", type=int, default=60)
    parser.add_argument("--rss-cap-mib", type=int, default=12288)
    parser.add_argument("--search-rates",
                        default="1000,1500,2000,2500,3000,4000,5000,6000,8000,10000,12500,15000,20000,25000,"
                                "30000,40000,50000,60000,80000,100000,120000,150000")
    parser.add_argument("--search-seconds", type=int, default=10)
    parser.add_argument("--locust-user-rate", type=float, default=5.0, help="flows/s per Locust user (open model)")
    parser.add_argument("--pick", choices=("random", "first"), default="random", help="which listed item to open")
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--binary", help="the loadlab that runs the flows (default: this tree's release)")
    parser.add_argument("--simulator", help="the loadlab that simulates (default: this tree's release)")
    parser.add_argument("--no-build", action="store_true", help="do not build this tree's release first")
    parser.add_argument("--k6")
    parser.add_argument("--locust")
    args = parser.parse_args()
    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(wanted) - {"loadlab", "k6", "locust"}
    if unknown:
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")
    os.makedirs(RUNS, exist_ok=True)
    # 10k users open 10k connections in the generator and as many in the simulator.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if not args.no_build and (not args.binary or not args.simulator):
        print("== building loadlab (release)", flush=True)
        sh("cargo", "build", "--release", "-q", "-p", "loadlab", cwd=ROOT)
    binary, simulator = args.binary or LOADLAB, args.simulator or LOADLAB
    tools = []
    for name in wanted:
        tools.append(Loadlab(binary, args) if name == "loadlab" else K6(args) if name == "k6" else Locust(args))
    for t in tools:
        where = getattr(t, "binary", None)
        print(f"   {t.name:<8} {where if t.available else 'skipped: ' + t.why_not}", flush=True)
    print(f"== machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "args": vars(args), "cpu": {}, "memory": {},
               "max_rate": {}, "tools": {t.name: getattr(t, "binary", None) for t in tools}}
    sim = Simulator(simulator)
    try:
        if not args.skip_cpu:
            cpu_runs(sim, tools, args, results)
        if not args.skip_memory:
            memory_runs(sim, tools, args, results)
        if not args.skip_search:
            search_runs(sim, tools, args, results)
    finally:
        sim.stop()
    results["skipped"] = {t.name: t.why_not for t in tools if not t.available}
    results["ratios"] = ratios(results)
    for r in [*(x for by in results["cpu"].values() for x in by.values()), *results["memory"].values()]:
        r.pop("stdout", None)
    summary(results, tools)
    os.makedirs(BENCH_OUT, exist_ok=True)
    path = os.path.join(BENCH_OUT, f"flows-{time.strftime('%Y%m%d-%H%M%S')}.json")
    for p in (path, os.path.join(BENCH_OUT, "flows.json")):
        with open(p, "w") as f:
            json.dump(results, f, indent=1)
    print(f"== JSON: {path} (and bench/out/flows.json)", flush=True)


if __name__ == "__main__":
    main()
