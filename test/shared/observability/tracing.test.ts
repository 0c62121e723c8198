import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator } from '../../../src/sim/server.js';
import type { RunningSimulator } from '../../../src/sim/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

// Traces with the SDK's in-memory exporter: one span per request, children for admission, the
// upstream call, the relay and the charge, and the W3C traceparent the engine received naming the
// upstream span.

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/** In front of the simulator: records the traceparent each engine request carried, and passes it on. */
async function startRecordingProxy(targetPort: number) {
  const received: Array<{ path: string; traceparent: string | undefined }> = [];
  const server = http.createServer((req, res) => {
    received.push({ path: req.url ?? '', traceparent: req.headers.traceparent as string | undefined });
    const upstream = http.request(
      { host: '127.0.0.1', port: targetPort, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('traces (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  const exporter = new InMemorySpanExporter();
  let sim: RunningSimulator;
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  let dir = '';
  let gateway: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [
        { name: 'sim-chat', task: 'chat' },
        { name: 'sim-embed', task: 'embedding' },
      ],
      itlMs: 1,
    });
    proxy = await startRecordingProxy(sim.port);
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-tracing-'));
    const enginesFile = path.join(dir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({
        engines: ['sim-chat', 'sim-embed'].map((model) => ({ kind: 'static', model, url: proxy.url })),
      }),
    );
    // The endpoint turns tracing on; the spans go to the in-memory exporter instead of it.
    gateway = await startTestGateway(
      'pglite',
      { TOLLGATE_ENGINES_FILE: enginesFile, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      { spanExporter: exporter },
    );
    const { secret } = await gateway.tenant();
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.close();
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    exporter.reset();
    proxy.received.length = 0;
  });

  const spansOf = (traceId: string) =>
    exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
  const named = (spans: ReadableSpan[], name: string) => {
    const found = spans.filter((span) => span.name === name);
    expect(found, name).toHaveLength(1);
    return found[0]!;
  };

  it('continues the client trace: request span, admission, upstream, relay and charge, and the engine gets the upstream span as parent', async () => {
    const clientTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpanId = '00f067aa0ba902b7';
    const { data, response } = await client.chat.completions
      .create(
        { model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'trace me' }] },
        { headers: { traceparent: `00-${clientTraceId}-${clientSpanId}-01` } },
      )
      .withResponse();
    expect(data.usage?.completion_tokens).toBeGreaterThan(0);

    const back = TRACEPARENT.exec(response.headers.get('traceparent') ?? '');
    expect(back, 'traceparent in the response').not.toBeNull();
    expect(back![1]).toBe(clientTraceId);

    const spans = spansOf(clientTraceId);
    const root = named(spans, 'POST /v1/chat/completions');
    expect(root.kind).toBe(SpanKind.SERVER);
    expect(root.parentSpanContext?.spanId).toBe(clientSpanId);
    expect(root.spanContext().spanId).toBe(back![2]);
    expect(root.attributes).toMatchObject({
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'gen_ai.request.model': 'sim-chat',
    });

    const children = ['tollgate.admission', 'tollgate.upstream', 'tollgate.relay', 'tollgate.charge'].map((name) =>
      named(spans, name),
    );
    for (const child of children) expect(child.parentSpanContext?.spanId, child.name).toBe(root.spanContext().spanId);
    const upstream = children[1]!;
    expect(upstream.kind).toBe(SpanKind.CLIENT);
    expect(upstream.attributes['tollgate.engine.replica']).toEqual(expect.any(String));
    expect(children[3]!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': data.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': data.usage!.completion_tokens,
    });

    // In order, inside the request's span.
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    const [admission, , relay, charge] = children;
    expect(ms(admission!.endTime)).toBeLessThanOrEqual(ms(upstream.startTime) + 0.001);
    expect(ms(upstream.endTime)).toBeLessThanOrEqual(ms(relay!.startTime) + 0.001);
    expect(ms(relay!.endTime)).toBeLessThanOrEqual(ms(charge!.startTime) + 0.001);
    expect(ms(charge!.endTime)).toBeLessThanOrEqual(ms(root.endTime) + 0.001);

    expect(proxy.received).toHaveLength(1);
    const sent = TRACEPARENT.exec(proxy.received[0]!.traceparent ?? '');
    expect(sent, 'traceparent sent to the engine').not.toBeNull();
    expect(sent![1]).toBe(clientTraceId);
    expect(sent![2]).toBe(upstream.spanContext().spanId);
  });

  it('ends a stream’s span when the stream ends, and starts a new trace without a client traceparent', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'sim-chat', max_tokens: 6, stream: true, messages: [{ role: 'user', content: 'stream me' }] })
      .withResponse();
    const traceId = TRACEPARENT.exec(response.headers.get('traceparent') ?? '')?.[1];
    expect(traceId).toBeDefined();
    let chunks = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) chunks += 1;
    expect(chunks).toBeGreaterThan(0);

    const spans = spansOf(traceId!);
    const root = named(spans, 'POST /v1/chat/completions');
    expect(root.parentSpanContext).toBeUndefined();
    for (const name of ['tollgate.admission', 'tollgate.upstream', 'tollgate.relay', 'tollgate.charge']) {
      expect(named(spans, name).parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    }
    expect(named(spans, 'tollgate.relay').attributes['tollgate.streamed']).toBe(true);
    expect(TRACEPARENT.exec(proxy.received[0]?.traceparent ?? '')?.[2]).toBe(
      named(spans, 'tollgate.upstream').spanContext().spanId,
    );
  });

  it('marks a refused request on its span, and sends nothing to the engine', async () => {
    const { secret } = await gateway.tenant({ credit: '0' });
    const broke = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    const refused = await broke.embeddings.create({ model: 'sim-embed', input: 'x' }).then(
      () => ({ status: 200, headers: new Headers() }),
      (error: unknown) => error as { status: number; headers: Headers },
    );
    expect(refused.status).toBe(402);
    const traceId = TRACEPARENT.exec(refused.headers.get('traceparent') ?? '')?.[1];
    const root = named(spansOf(traceId!), 'POST /v1/embeddings');
    expect(root.attributes).toMatchObject({ 'http.response.status_code': 402, 'error.type': 'insufficient_funds' });
    // A client's error is not the server's: the span's status stays unset.
    expect(root.status.code).toBe(SpanStatusCode.UNSET);
    expect(spansOf(traceId!).map((span) => span.name)).toEqual(['POST /v1/embeddings']);
    expect(proxy.received).toHaveLength(0);
  });

  it('installs no global tracer provider or context manager: spans travel explicitly, with no async hooks', async () => {
    const { context, trace } = await import('@opentelemetry/api');
    expect((context as unknown as { _getContextManager(): object })._getContextManager().constructor.name).toBe(
      'NoopContextManager',
    );
    expect(trace.getTracerProvider().constructor.name).toBe('ProxyTracerProvider');
    expect((trace.getTracerProvider() as unknown as { getDelegate(): object }).getDelegate().constructor.name).toBe(
      'NoopTracerProvider',
    );
  });
});

describe('traces off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('starts no tracer, sends no traceparent, and installs no context manager', async () => {
    const gateway = await startTestGateway('pglite');
    try {
      expect(gateway.services.tracing).toBeNull();
      const { secret } = await gateway.tenant();
      const { response } = await new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 }).embeddings
        .create({ model: 'sim-embed', input: 'x' })
        .withResponse();
      expect(response.headers.get('traceparent')).toBeNull();
      // No global context manager: the API's default (no-op) one has no AsyncLocalStorage behind
      // it.
      const { context } = await import('@opentelemetry/api');
      expect((context as unknown as { _getContextManager(): object })._getContextManager().constructor.name).toBe(
        'NoopContextManager',
      );
    } finally {
      await gateway.close();
    }
  });
});

describe('traces over OTLP/HTTP', () => {
  it('sends the spans as protobuf to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, and the last ones when the gateway closes', async () => {
    const received: Array<{ method: string; path: string; type: string | undefined; body: Buffer }> = [];
    const collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({
          method: req.method ?? '',
          path: req.url ?? '',
          type: req.headers['content-type'],
          body: Buffer.concat(chunks),
        });
        res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/`;
      const gateway = await startTestGateway('pglite', {
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_SERVICE_NAME: 'tollgate-otlp-test',
      });
      try {
        const { secret } = await gateway.tenant();
        await new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 }).embeddings.create({
          model: 'sim-embed',
          input: 'exported',
        });
      } finally {
        // Spans leave in batches every few seconds; closing sends what is left.
        await gateway.close();
      }
      expect(received.length).toBeGreaterThan(0);
      const body = Buffer.concat(received.map((r) => r.body));
      expect(
        received.every((r) => r.method === 'POST' && r.path === '/v1/traces' && r.type === 'application/x-protobuf'),
      ).toBe(true);
      // Protobuf keeps strings as UTF-8 bytes: the service and the request's span name are in the
      // export.
      expect(body.includes(Buffer.from('tollgate-otlp-test'))).toBe(true);
      expect(body.includes(Buffer.from('POST /v1/embeddings'))).toBe(true);
      expect(body.includes(Buffer.from('tollgate.upstream'))).toBe(true);
    } finally {
      await new Promise<void>((resolve) => collector.close(() => resolve()));
    }
  });
});
