// The bare ledger behind a bare HTTP server (see lib/bare-ledger.mjs): node:http and a pg pool, nothing else (no
// framework, auth, validation, logging or metrics). POST /transfers with {"from":1,"to":2,"amount":"1.23"} calls
// bare_transfer as a named statement, one transaction per request, and answers 201 {"id":"…"}; a refused call
// answers 400. The floor under any HTTP service on that ledger, on this machine.
// Usage: PORT=… DATABASE_URL=… node bench/bare-ledger.mjs  (prints "bare ledger listening" when ready)
import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 32 });

const server = http.createServer((request, response) => {
  if (request.method !== 'POST' || request.url !== '/transfers') {
    response.writeHead(404).end();
    return;
  }
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', async () => {
    try {
      const { from, to, amount } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const { rows } = await pool.query({
        name: 'bare_transfer',
        text: 'SELECT bare_transfer($1, $2, $3) AS id',
        values: [from, to, amount],
      });
      const body = JSON.stringify({ id: rows[0].id });
      response
        .writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) })
        .end(body);
    } catch (error) {
      response.writeHead(400, { 'Content-Type': 'text/plain' }).end(String(error.message));
    }
  });
});

const stop = () => server.close(() => pool.end().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
server.listen(Number(process.env.PORT ?? 3998), '127.0.0.1', () => console.log('bare ledger listening'));
