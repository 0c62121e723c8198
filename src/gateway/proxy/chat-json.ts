/**
 * The JSON of a chat body's large parts, written once however often it is asked for: a tools
 * array's text (the estimates read its length) and bytes, and each message's bytes
 * (`requests/sent-body.ts` sends them as they are). A translation's parts may be given the bytes
 * kept from the organization's last turn (`prime…`), so they are not written at all. Keyed by the
 * array or message object, weakly: an entry lives as long as its request's body, or the translation
 * kept (`TranslationJsonCache`, which owns this one, made in services.ts), and is bounded by them.
 * Tools arrays and messages are never changed once a body is read or translated, so the JSON stays
 * theirs.
 */
export class ChatJsonMemo {
  private readonly toolsText = new WeakMap<unknown[], string>();
  private readonly toolsBytes = new WeakMap<unknown[], Buffer>();
  private readonly messageBytes = new WeakMap<object, Buffer>();

  /**
   * A tools array's JSON: an agent's 60 KB of tools is written once for every estimate of a
   * request.
   */
  toolsJsonOf(tools: unknown[]): string {
    let text = this.toolsText.get(tools);
    if (text === undefined) {
      text = JSON.stringify(tools);
      this.toolsText.set(tools, text);
    }
    return text;
  }

  /** A tools array's JSON as UTF-8 bytes, encoded once from `toolsJsonOf`'s text. */
  toolsBytesOf(tools: unknown[]): Buffer {
    let bytes = this.toolsBytes.get(tools);
    if (bytes === undefined) {
      bytes = Buffer.from(this.toolsJsonOf(tools));
      this.toolsBytes.set(tools, bytes);
    }
    return bytes;
  }

  /** A chat message's JSON as UTF-8 bytes, written once. */
  messageBytesOf(message: object): Buffer {
    let bytes = this.messageBytes.get(message);
    if (bytes === undefined) {
      bytes = Buffer.from(JSON.stringify(message));
      this.messageBytes.set(message, bytes);
    }
    return bytes;
  }

  /** Gives a tools array the text and bytes already written for tools that write alike. */
  primeTools(tools: unknown[], text: string, bytes: Buffer): void {
    this.toolsText.set(tools, text);
    this.toolsBytes.set(tools, bytes);
  }

  /** Gives a message the bytes already written for a message that writes alike. */
  primeMessage(message: object, bytes: Buffer): void {
    this.messageBytes.set(message, bytes);
  }
}
