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
