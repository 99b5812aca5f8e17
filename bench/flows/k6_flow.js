// The three-step user flow of bench/flows (see run.py), for k6:
//   POST /login {"user":"u17","password":"p"}  -> take "token" from the JSON answer
//   GET  /items   (Authorization: Bearer <token>) -> take one id of "items" (random, or the first)
//   GET  /items/<id> (the same header)            -> the item has an "id"
// each answer checked: status 200, and the JSON field there. A failed step ends the flow.
//
// Environment (run.py sets it; the defaults run it by hand against the simulator on :8080):
//   BASE     http://127.0.0.1:8080
//   MODE     open: constant-arrival-rate of RATE requests/s, so RATE/3 flows/s (timeUnit 3s)
//            closed: constant-vus, VUS users, each sleeping THINK seconds between flows
//   RATE     requests/s in the open model (2000)
//   VUS      users in the closed model (10000); THINK their pause in seconds (5)
//   SECONDS  the scenario's duration (20)
//   PICK     random (default) or first: which id of the list the third step opens
//   SUMMARY  write k6's end-of-test summary data here as JSON (else a short line on stdout)
//
//   k6 run --no-usage-report -e MODE=open -e RATE=2000 -e SECONDS=20 bench/flows/k6_flow.js
import http from 'k6/http';
import { check, sleep } from 'k6';

const BASE = __ENV.BASE || 'http://127.0.0.1:8080';
const MODE = __ENV.MODE || 'open';
const RATE = Number(__ENV.RATE || 2000);
const VUS = Number(__ENV.VUS || 10000);
const THINK = Number(__ENV.THINK || 5);
const SECONDS = Number(__ENV.SECONDS || 20);
const PICK_FIRST = __ENV.PICK === 'first';

const scenario = MODE === 'closed'
  ? { executor: 'constant-vus', vus: VUS, duration: `${SECONDS}s`, gracefulStop: '10s' }
  : {
      executor: 'constant-arrival-rate',
      rate: RATE, // iterations (flows) per timeUnit: RATE per 3 s = RATE/3 flows/s = RATE requests/s
      timeUnit: '3s',
      duration: `${SECONDS}s`,
      // The simulator answers at once, so a few users keep up; more are made when the
      // generator falls behind, up to maxVUs (then iterations are dropped and counted).
      preAllocatedVUs: Number(__ENV.PREALLOCATED || Math.max(50, Math.ceil(RATE / 100))),
      maxVUs: Number(__ENV.MAX_VUS || 2000),
      gracefulStop: '5s',
    };

export const options = {
  scenarios: { flow: scenario },
  // Checks read the bodies, so they are kept (k6's default).
  summaryTrendStats: ['med', 'p(99)'],
};

const LOGIN_BODY = JSON.stringify({ user: 'u17', password: 'p' });
const LOGIN_PARAMS = { headers: { 'Content-Type': 'application/json' }, tags: { name: 'login' } };

function field(r, path) {
  try {
    return r.json(path);
  } catch (e) {
    return undefined;
  }
}

export default function () {
  const login = http.post(`${BASE}/login`, LOGIN_BODY, LOGIN_PARAMS);
  const token = field(login, 'token');
  const loggedIn = check(login, {
    'login: status 200': (r) => r.status === 200,
    'login: json token exists': () => token !== undefined && token !== null,
  });
  if (loggedIn) {
    const auth = { headers: { Authorization: `Bearer ${token}` } };
    const list = http.get(`${BASE}/items`, Object.assign({ tags: { name: 'list' } }, auth));
    const items = field(list, 'items');
    const listed = check(list, {
      'list: status 200': (r) => r.status === 200,
      'list: json items[0].id exists': () => Array.isArray(items) && items.length > 0 && items[0].id !== undefined,
    });
    if (listed) {
      const id = (PICK_FIRST ? items[0] : items[Math.floor(Math.random() * items.length)]).id;
      const item = http.get(`${BASE}/items/${id}`, Object.assign({ tags: { name: 'item' } }, auth));
      check(item, {
        'item: status 200': (r) => r.status === 200,
        'item: json id exists': (r) => field(r, 'id') !== undefined,
      });
    }
  }
  if (MODE === 'closed') {
    sleep(THINK);
  }
}

export function handleSummary(data) {
  if (__ENV.SUMMARY) {
    return { [__ENV.SUMMARY]: JSON.stringify(data) };
  }
  const m = data.metrics;
  const value = (name, key) => (m[name] ? m[name].values[key] : 0);
  return {
    stdout: `requests ${value('http_reqs', 'count')}  iterations ${value('iterations', 'count')}  ` +
      `dropped ${value('dropped_iterations', 'count')}  checks ${(value('checks', 'rate') * 100).toFixed(3)}%\n`,
  };
}
