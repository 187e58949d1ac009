import type { KvStore } from '../../src/store/store';

/**
 * Workers KV is eventually consistent: a write can take up to 60 s to be seen
 * by a reader elsewhere (another CI job's publish). LaggingKv puts that in
 * front of the real local KV: each publisher gets its own view, which does
 * not see keys other views wrote within the lag — it reads their previous
 * value, and lists without keys they created. The lists must still end up
 * complete, because they are rebuilt from the version records in R2, which
 * is strongly consistent.
 */

export interface Write {
  writer: number;
  at: number;
  previous: string | null;
}

export class LaggingKv implements KvStore {
  constructor(
    private readonly inner: KvStore,
    private readonly writes: Map<string, Write>,
    private readonly writer: number,
    private readonly lagMs = 60_000,
  ) {}

  private hidden(key: string): Write | null {
    const write = this.writes.get(key);
    return write && write.writer !== this.writer && Date.now() - write.at < this.lagMs ? write : null;
  }

  async get(key: string, type: 'text'): Promise<string | null> {
    const hidden = this.hidden(key);
    return hidden ? hidden.previous : this.inner.get(key, type);
  }

  async put(key: string, value: string): Promise<void> {
    const mine = this.writes.get(key);
    const previous = mine && mine.writer === this.writer ? mine.previous : await this.inner.get(key, 'text');
    this.writes.set(key, { writer: this.writer, at: Date.now(), previous });
    await this.inner.put(key, value);
  }

  async delete(key: string): Promise<void> {
    await this.put(key, '');
    await this.inner.delete(key);
  }

  async list(options: { prefix: string; cursor?: string; limit?: number }) {
    const page = await this.inner.list(options);
    return { ...page, keys: page.keys.filter(({ name }) => this.hidden(name)?.previous !== null) };
  }
}
