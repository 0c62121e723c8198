/** The data of every SSE event of a body, `[DONE]` included. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((event) => event.trim() !== '')
    .map((event) =>
      event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.charCodeAt(5) === 32 ? 6 : 5))
        .join('\n'),
    );
}

/** One server-sent event: its name and id when it has them, and its data lines joined. */
export interface SseEvent {
  event?: string;
  id?: string;
  data: string;
}

/** Reads a whole event stream (until the server ends it) into its events. */
export async function readSse(response: Response): Promise<SseEvent[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: SseEvent = { data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event.event = value;
        else if (field === 'id') event.id = value;
      }
      event.data = data.join('\n');
      return event;
    });
}
