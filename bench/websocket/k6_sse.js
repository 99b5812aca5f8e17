// Server-sent events for bench/websocket/traffic.py, for a k6 built with the xk6-sse
// extension (`xk6 build --with github.com/phymbert/xk6-sse`): each VU reads URL's
// event stream for SECONDS, counting events in `sse_event`.
//
//   K6_SSE=./k6 ./k6 run -e URL=http://127.0.0.1:8080/events -e VUS=100 -e SECONDS=20 k6_sse.js
import sse from 'k6/x/sse';
import { Counter } from 'k6/metrics';

const URL = __ENV.URL || 'http://127.0.0.1:8080/events';
const VUS = Number(__ENV.VUS || 100);
const SECONDS = Number(__ENV.SECONDS || 20);
const events = new Counter('sse_event');

export const options = {
  scenarios: {
    sse: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: `${SECONDS + 60}s` },
  },
};

export default function () {
  const started = Date.now();
  sse.open(URL, {}, (client) => {
    client.on('event', () => {
      events.add(1);
      if (Date.now() - started > SECONDS * 1000) {
        client.close();
      }
    });
  });
}
