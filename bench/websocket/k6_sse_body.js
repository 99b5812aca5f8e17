// Server-sent events for bench/websocket/traffic.py with the k6 that has no event-stream
// reader (no xk6-sse extension): each VU GETs URL, a finite event stream of the same
// pace as loadlab's, as one HTTP body, and counts its `data:` lines in `sse_event`.
// k6 receives and buffers the same bytes, but times no event: the figure is the CPU
// per event received, beside loadlab's, not a like-for-like event reader.
//
//   k6 run -e URL=http://127.0.0.1:8080/events-finite -e VUS=100 -e SECONDS=20 k6_sse_body.js
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const URL = __ENV.URL || 'http://127.0.0.1:8080/events-finite';
const VUS = Number(__ENV.VUS || 100);
const SECONDS = Number(__ENV.SECONDS || 20);
const events = new Counter('sse_event');

export const options = {
  scenarios: {
    sse: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: `${SECONDS + 60}s` },
  },
};

export default function () {
  const answer = http.get(URL, { timeout: `${SECONDS + 30}s`, headers: { Accept: 'text/event-stream' } });
  const body = answer.body || '';
  let count = 0;
  for (const line of body.split('\n')) {
    if (line.startsWith('data:')) {
      count += 1;
    }
  }
  events.add(count);
}
