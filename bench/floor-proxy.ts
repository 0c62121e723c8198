import http from 'node:http';

/**
 * The least a Node.js gateway can do: relay each request to the simulator
 * over a keep-alive agent and pipe the answer back, with no parsing, no
 * auth, no limits, no billing. `npm run bench` with BENCH_FLOOR=1 measures
 * it beside Tollgate, so the report shows what Node's HTTP stack alone costs
 * on this machine.
 *
 * @example
 * node --import tsx bench/floor-proxy.ts --port 8090 --upstream http://127.0.0.1:8000
 */
const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const upstream = new URL(args.get('upstream') ?? 'http://127.0.0.1:8000');
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

const server = http.createServer((request, response) => {
  if (request.url === '/health') return void response.end('ok');
  const headers = { ...request.headers, host: upstream.host };
  delete headers.authorization;
  const outgoing = http.request(
    { host: upstream.hostname, port: upstream.port, method: request.method, path: request.url, headers, agent },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    },
  );
  outgoing.on('error', () => {
    response.statusCode = 502;
    response.end();
  });
  request.pipe(outgoing);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(args.get('port') ?? 8090), '127.0.0.1');
