// The `data:` payloads of an SSE response body, parsed as JSON, in order (the fault runs' watchers).
export async function* sseData<T>(body: AsyncIterable<Uint8Array>, onChunk: () => void = () => {}): AsyncGenerator<T> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    onChunk();
    buffered += decoder.decode(chunk, { stream: true });
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('data: ')) yield JSON.parse(line.slice(6)) as T;
  }
}
