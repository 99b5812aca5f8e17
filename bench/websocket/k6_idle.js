// Idle WebSocket connections for bench/websocket (see run.py): each VU connects once to
// URL, holds the connection HOLD seconds without sending, then closes it.
//
//   k6 run --no-usage-report -e URL=ws://127.0.0.1:8080/idle -e VUS=1000 -e HOLD=20 k6_idle.js
import ws from 'k6/ws';

const URL = __ENV.URL || 'ws://127.0.0.1:8080/idle';
const VUS = Number(__ENV.VUS || 1000);
const HOLD = Number(__ENV.HOLD || 20);

export const options = {
  scenarios: {
    idle: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: `${HOLD + 60}s` },
  },
  summaryTrendStats: ['p(50)', 'p(99)'],
};

export default function () {
  ws.connect(URL, {}, (socket) => {
    socket.setTimeout(() => socket.close(), HOLD * 1000);
  });
}
