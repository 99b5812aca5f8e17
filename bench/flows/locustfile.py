"""The three-step user flow of bench/flows (see run.py), for Locust with FastHttpUser:

  POST /login {"user":"u17","password":"p"}    -> take "token" from the JSON answer
  GET  /items (Authorization: Bearer <token>)   -> take one id of "items" (random, or the first)
  GET  /items/<id> (the same header)            -> the item has an "id"

each answer checked (status 200, and the JSON field there); a failed check marks the
request failed in Locust's stats and ends the flow.

Locust has no open model. FLOW_MODE=open approximates one: each user runs the flow at most
FLOW_PER_USER times a second (`constant_throughput`), so `-u U` users ask U * FLOW_PER_USER
flows/s, as long as every flow takes less than 1/FLOW_PER_USER s; a late user does not catch
up. FLOW_MODE=closed: each user pauses FLOW_THINK seconds (`constant`) between two flows.
FLOW_PICK=first opens the first item instead of a random one.

FLOW_STATS=PATH: at exit, writes the checks' passes and failures and the requests counted
from the end of spawning to the end of the run, with their monotonic times, as JSON there
(run.py takes the achieved rate from that steady window, not from the spawn ramp).

  FLOW_MODE=open FLOW_PER_USER=5 locust -f bench/flows/locustfile.py --headless \
      -u 134 -r 134 -t 20s -H http://127.0.0.1:8080
"""

import json
import os
import random
import time

from locust import FastHttpUser, constant, constant_throughput, events, task

MODE = os.environ.get("FLOW_MODE", "open")
PICK_FIRST = os.environ.get("FLOW_PICK") == "first"
LOGIN = json.dumps({"user": "u17", "password": "p"})
LOGIN_HEADERS = {"Content-Type": "application/json"}

counts = {"passes": 0, "failures": 0, "requests": 0, "steady_start": None, "steady_stop": None}


def checked(response, ok, what):
    """Counts the two checks of a step (status, then the JSON field) and marks the request."""
    status_ok = response.status_code == 200
    counts["requests"] += 1
    counts["passes"] += status_ok + ok
    counts["failures"] += (not status_ok) + (not ok)
    if not status_ok:
        response.failure(f"status {response.status_code}")
    elif not ok:
        response.failure(f"no {what} in the JSON answer")
    return status_ok and ok


def json_of(response):
    try:
        return response.json()
    except Exception:  # noqa: BLE001 - a body that is not JSON fails its check
        return None


class FlowUser(FastHttpUser):
    if MODE == "closed":
        wait_time = constant(float(os.environ.get("FLOW_THINK", "5")))
    else:
        wait_time = constant_throughput(float(os.environ.get("FLOW_PER_USER", "5")))

    @task
    def flow(self):
        with self.client.post("/login", data=LOGIN, headers=LOGIN_HEADERS, name="login",
                              catch_response=True) as r:
            body = json_of(r)
            token = body.get("token") if isinstance(body, dict) else None
            if not checked(r, token is not None, "token"):
                return
        auth = {"Authorization": f"Bearer {token}"}
        with self.client.get("/items", headers=auth, name="list", catch_response=True) as r:
            body = json_of(r)
            items = body.get("items") if isinstance(body, dict) else None
            ok = isinstance(items, list) and len(items) > 0 and "id" in items[0]
            if not checked(r, ok, "items[0].id"):
                return
        item = items[0] if PICK_FIRST else random.choice(items)
        with self.client.get(f"/items/{item['id']}", headers=auth, name="item", catch_response=True) as r:
            body = json_of(r)
            checked(r, isinstance(body, dict) and "id" in body, "id")


@events.spawning_complete.add_listener
def _spawned(user_count, **_kw):
    counts["steady_start"] = (time.monotonic(), counts["requests"])


@events.test_stop.add_listener
def _stopped(**_kw):
    if counts["steady_stop"] is None:
        counts["steady_stop"] = (time.monotonic(), counts["requests"])


@events.quitting.add_listener
def _quitting(**_kw):
    path = os.environ.get("FLOW_STATS")
    if path:
        with open(path, "w") as f:
            json.dump(counts, f)
