// k6's side of bench/grpc/run.py: gRPC calls with k6/net/grpc against grpc-go's example
// servers. MODE=unary calls helloworld.Greeter/SayHello; MODE=stream calls
// routeguide.RouteGuide/ListFeatures (a server stream) and counts its messages. RATE set:
// an open model, `constant-arrival-rate` of RATE calls a second (VUS pre-allocated, at
// most VUS); RATE unset: a closed model of VUS users calling back to back. Each VU
// connects once (plaintext, h2c) and keeps its connection, as loadlab and ghz do.
// The figures go to SUMMARY (JSON) through handleSummary.
import grpc from 'k6/net/grpc';
import { Counter } from 'k6/metrics';

const MODE = __ENV.MODE || 'unary';
const VUS = parseInt(__ENV.VUS || '50', 10);
const DURATION = `${__ENV.SECONDS || '10'}s`;

const calls_ok = new Counter('calls_ok');
const calls_failed = new Counter('calls_failed');
const messages = new Counter('messages');

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], __ENV.PROTO_FILE);

export const options = {
  scenarios: {
    calls: __ENV.RATE
      ? {
          executor: 'constant-arrival-rate',
          rate: parseInt(__ENV.RATE, 10),
          timeUnit: '1s',
          duration: DURATION,
          preAllocatedVUs: VUS,
          maxVUs: VUS,
        }
      : { executor: 'constant-vus', vus: VUS, duration: DURATION },
  },
  summaryTrendStats: ['p(50)', 'p(99)'],
  // Nothing judged here: run.py reads the counts.
  thresholds: {},
};

let connected = false;

function connect() {
  if (!connected) {
    client.connect(__ENV.ADDR, { plaintext: true });
    connected = true;
  }
}

function unary() {
  const answer = client.invoke('helloworld.Greeter/SayHello', { name: 'loadlab' });
  if (answer && answer.status === grpc.StatusOK) {
    calls_ok.add(1);
  } else {
    calls_failed.add(1);
  }
}

// Every feature of the route guide's database: one call, the whole stream.
const EVERYWHERE = {
  lo: { latitude: -900000000, longitude: -1800000000 },
  hi: { latitude: 900000000, longitude: 1800000000 },
};

function stream() {
  const call = new grpc.Stream(client, 'routeguide.RouteGuide/ListFeatures');
  call.on('data', () => messages.add(1));
  call.on('error', () => calls_failed.add(1));
  call.on('end', () => calls_ok.add(1));
  call.write(EVERYWHERE);
  call.end();
}

export default function () {
  connect();
  if (MODE === 'stream') {
    stream();
  } else {
    unary();
  }
}

export function handleSummary(data) {
  return { [__ENV.SUMMARY]: JSON.stringify(data) };
}
