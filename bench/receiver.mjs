// The webhook receiver of the benchmark, in its own process: a plain node:http server on 127.0.0.1 that reads
// the whole body and answers 200 (no verification: the receiver must not be the bottleneck). It records, per
// Webhook-Id, when the body had fully arrived (the epoch clock in ms with sub-ms precision, comparable across
// processes of one machine), and answers the parent over IPC:
//   {type:'count'}            → {type:'count', unique, requests, firstAt, lastAt}
//   {type:'times', ids}       → {type:'times', times: [ms|null…]}
//   {type:'watch', id}        → {type:'arrived', id, at} once that id has arrived (at once if it already has)
//   {type:'reset'}            → forget everything
// Started with fork(): prints "receiver listening on PORT" when ready.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const now = () => performance.timeOrigin + performance.now();
let arrivals = new Map();
let requests = 0;
let firstAt = null;
let lastAt = null;
const watched = new Map();

const server = http.createServer((req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    const at = now();
    requests++;
    const id = String(req.headers['webhook-id'] ?? '');
    if (!arrivals.has(id)) {
      arrivals.set(id, at);
      firstAt ??= at;
      lastAt = at;
      if (watched.delete(id)) process.send({ type: 'arrived', id, at });
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;

process.on('message', (message) => {
  if (message.type === 'count') {
    process.send({ type: 'count', unique: arrivals.size, requests, firstAt, lastAt });
  } else if (message.type === 'times') {
    process.send({ type: 'times', times: message.ids.map((id) => arrivals.get(id) ?? null) });
  } else if (message.type === 'watch') {
    const at = arrivals.get(message.id);
    if (at !== undefined) process.send({ type: 'arrived', id: message.id, at });
    else watched.set(message.id, true);
  } else if (message.type === 'reset') {
    arrivals = new Map();
    requests = 0;
    firstAt = null;
    lastAt = null;
    process.send({ type: 'reset' });
  }
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`receiver listening on ${server.address().port}`);
});
