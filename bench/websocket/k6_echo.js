// WebSocket echo traffic for bench/websocket/traffic.py: each VU connects once to URL,
// sends a 16-byte message RATE times a second for SECONDS, waits 1 s for the last
// echoes, then closes. ws_msgs_sent / ws_msgs_received count them.
//
//   k6 run --no-usage-report -e URL=ws://127.0.0.1:8080/echo -e VUS=1000 -e RATE=20 -e SECONDS=20 k6_echo.js
import ws from 'k6/ws';

const URL = __ENV.URL || 'ws://127.0.0.1:8080/echo';
const VUS = Number(__ENV.VUS || 1000);
const RATE = Number(__ENV.RATE || 20);
const SECONDS = Number(__ENV.SECONDS || 20);

export const options = {
  scenarios: {
    echo: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: `${SECONDS + 60}s` },
  },
  summaryTrendStats: ['p(50)', 'p(99)'],
};

export default function () {
  ws.connect(URL, {}, (socket) => {
    socket.on('open', () => {
      let sent = 0;
      socket.setInterval(() => {
        if (sent < RATE * SECONDS) {
          socket.send('0123456789abcdef');
          sent += 1;
        }
      }, 1000 / RATE);
      socket.setTimeout(() => socket.close(), (SECONDS + 1) * 1000);
    });
  });
}
