import { describe, expect, it } from 'vitest';
import { type RelayOutcome, relaySse } from '../../../src/gateway/proxy/sse.js';

function upstreamOf(parts: (string | Uint8Array)[], { close = true } = {}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(typeof part === 'string' ? encoder.encode(part) : part);
      if (close) controller.close();
    },
  });
}

async function relay(parts: (string | Uint8Array)[], onData = (d: string) => d as string | null) {
  const outcomes: RelayOutcome[] = [];
  const stream = relaySse({
    upstream: upstreamOf(parts),
    onData,
    onEnd: async (o) => void outcomes.push(o),
    abortUpstream: () => {},
  });
  return { text: await new Response(stream).text(), outcomes };
}

describe('relaySse', () => {
  it('reassembles events split across reads, mid-JSON and mid-line', async () => {
    const { text, outcomes } = await relay(['data: {"a":', '1}\n', '\ndata: {"b"', ':2}\r\n\r\ndata: [DO', 'NE]\n\n']);
    expect(text).toBe('data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n');
    expect(outcomes).toEqual(['done']);
  });

  it('reads a CRLF split across two reads as one line end, not the end of an event', async () => {
    const events: string[] = [];
    const { outcomes } = await relay(
      ['data: one\r', '\ndata: two\r\n\r', '\ndata: three\r\r', 'data: [DONE]\r\n\r\n'],
      (d) => (events.push(d), d),
    );
    expect(events).toEqual(['one\ntwo', 'three']);
    expect(outcomes).toEqual(['done']);
  });

  it('joins a character whose UTF-8 bytes are split across reads', async () => {
    const bytes = new TextEncoder().encode('data: "héllo 🦙"\n\ndata: [DONE]\n\n');
    // Cut between the two bytes of "é" and between each of the llama's four.
    const cuts = [8, 9, 15, 16, 17, 18, bytes.length];
    const parts = cuts.map((end, i) => bytes.subarray(i === 0 ? 0 : cuts[i - 1], end));
    const { text } = await relay(parts);
    expect(text).toBe('data: "héllo 🦙"\n\ndata: [DONE]\n\n');
  });

  it('strips a byte order mark at the start of the stream, as the SSE standard asks, and only there', async () => {
    const events: string[] = [];
    // The mark's three bytes come in two reads.
    await relay(
      [Uint8Array.of(0xef), Uint8Array.of(0xbb, 0xbf), 'data: one\n\ndata: \uFEFFtwo\n\ndata: [DONE]\n\n'],
      (d) => (events.push(d), d),
    );
    expect(events).toEqual(['one', '\uFEFFtwo']);
  });

  it('drops events the caller drops and ignores comments', async () => {
    const { text } = await relay([': keep-alive\n\ndata: keep\n\ndata: drop\n\ndata: [DONE]\n\n'], (d) =>
      d === 'drop' ? null : d,
    );
    expect(text).toBe('data: keep\n\ndata: [DONE]\n\n');
  });

  it('ends a stream cut without [DONE] with an error event and [DONE]', async () => {
    const { text, outcomes } = await relay(['data: {"a":1}\n\n']);
    const events = text.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"a":1}');
    expect(JSON.parse(events[1]!.slice(6)).error.code).toBe('upstream_error');
    expect(events[2]).toBe('data: [DONE]');
    expect(outcomes).toEqual(['upstream_failed']);
  });

  it('cancels the upstream and reports client_closed when the client leaves', async () => {
    let aborted = false;
    const outcomes: RelayOutcome[] = [];
    const stream = relaySse({
      upstream: upstreamOf(['data: 1\n\n'], { close: false }),
      onData: (d) => d,
      onEnd: async (o) => void outcomes.push(o),
      abortUpstream: () => {
        aborted = true;
      },
    });
    const reader = stream.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n');
    await reader.cancel();
    expect(aborted).toBe(true);
    expect(outcomes).toEqual(['client_closed']);
  });
});
