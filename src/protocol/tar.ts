import { concatBytes } from '../bytes';
import { InputError } from './errors';

/**
 * Just enough tar for module packages, in plain Web-standard code that runs in
 * the Worker and in Node: read the entries of a tar archive (ustar, GNU long
 * names and links, pax `path`/`linkpath`/`size`) with the one parser every
 * reader uses (TarReader). Damaged input is an InputError. Writing the one
 * deterministic module tar is tar-write.ts. Decompression is the caller's.
 */

export interface TarEntry {
  /** Path as written in the archive ("/"-separated, not yet checked). */
  name: string;
  /** '0' file, '5' directory, '2' symlink, '1' hard link, other types as read. */
  type: string;
  mode: number;
  /** Link target for types '1' and '2'. */
  linkname: string;
  data: Uint8Array;
}

const decoder = new TextDecoder();

function field(block: Uint8Array, offset: number, length: number): string {
  const bytes = block.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

function octal(block: Uint8Array, offset: number, length: number, what: string): number {
  const text = field(block, offset, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new InputError(`not a valid tar archive (a header's ${what} is unreadable)`);
  return parseInt(text, 8);
}

function paxRecords(data: Uint8Array): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(decoder.decode(data.subarray(at, space)));
    if (!Number.isSafeInteger(length) || length <= 0 || at + length > data.length) throw new InputError('not a valid tar archive (a pax record is damaged)');
    const record = decoder.decode(data.subarray(space + 1, at + length - 1));
    const eq = record.indexOf('=');
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}

/** The largest pax or GNU long-name/long-link payload read: it is held whole (Go's archive/tar allows 1 MiB; a module's names need far less). */
export const MAX_TAR_METADATA_BYTES = 64 * 1024;

/** An entry as its header (and the pax or GNU long-name headers before it) describe it, before its data. */
export type TarHeader = Omit<TarEntry, 'data'> & { size: number };

/** The entry whose data is being read: an entry's, or a pax / GNU long-name payload's (always collected). */
interface Body {
  kind: 'entry' | 'x' | 'g' | 'L' | 'K';
  header: TarHeader | null;
  size: number;
  got: number;
  /** Pieces of the data, or null when it is skipped. */
  chunks: Uint8Array[] | null;
  /** Padding to the next 512-byte block still to skip. */
  pad: number;
}

const nulTerminated = (data: Uint8Array) => decoder.decode(data).replace(/\0.*$/s, '');

/**
 * A tar stream read chunk by chunk (chunks may split a header or an entry
 * anywhere): each header's checksum and numeric fields are checked, and an
 * entry's name and link target are the ones extractors use — a pax `path` /
 * `linkpath` (and `size`) over a GNU long name (`L`) / long link (`K`) over
 * the ustar fields, as Go's archive/tar (Terraform's go-getter), GNU tar and
 * tar-stream read them. An entry's data is collected or, when `collect` says
 * no, skipped without being copied; pax and long-name payloads are collected,
 * up to MAX_TAR_METADATA_BYTES. Pieces of the chunks given are kept, not
 * copied, for collected data: a caller must not reuse a chunk's buffer.
 * The one tar parser: readTar (the module proxy), the publish API's check of
 * a stored .tar.gz (src/store/uploads/stored-module.ts) and publish-module's
 * check of a supplied one (scripts/lib/module/archive.ts).
 */
export class TarReader {
  /** True once the end-of-archive block was read: nothing after it is read. */
  done = false;
  private readonly header = new Uint8Array(512);
  private headerGot = 0;
  private body: Body | null = null;
  private pax: Map<string, string> | null = null;
  private longName: string | null = null;
  private longLink: string | null = null;
  private entries = 0;

  /** `collect(header)` says whether an entry's data is kept in `data` (all are by default) or skipped (`data` empty). */
  constructor(private readonly collect: (header: TarHeader) => boolean = () => true) {}

  /**
   * Reads `chunk`; returns the entries completed in it (their data read or
   * skipped), in order. Throws InputError for a damaged header (checksum,
   * numeric field, pax record), a pax or long-name payload over
   * MAX_TAR_METADATA_BYTES, a global pax header setting a path, link or size,
   * or a name or link given differently by a pax record and a GNU long name.
   */
  push(chunk: Uint8Array): TarEntry[] {
    const out: TarEntry[] = [];
    let at = 0;
    while (at < chunk.length && !this.done) {
      const body = this.body;
      if (body) {
        const n = Math.min(body.size - body.got, chunk.length - at);
        if (n > 0) body.chunks?.push(chunk.subarray(at, at + n));
        body.got += n;
        at += n;
        const pad = Math.min(body.pad, chunk.length - at);
        body.pad -= pad;
        at += pad;
        if (body.got === body.size && body.pad === 0) this.finish(body, out);
        continue;
      }
      let block: Uint8Array;
      if (this.headerGot === 0 && chunk.length - at >= 512) {
        block = chunk.subarray(at, at + 512);
        at += 512;
      } else {
        const n = Math.min(512 - this.headerGot, chunk.length - at);
        this.header.set(chunk.subarray(at, at + n), this.headerGot);
        this.headerGot += n;
        at += n;
        if (this.headerGot < 512) continue;
        this.headerGot = 0;
        block = this.header;
      }
      if (block.every((b) => b === 0)) {
        this.done = true;
        break;
      }
      const next = this.readHeader(block);
      this.body = next;
      if (next.size === 0) this.finish(next, out);
    }
    return out;
  }

  /**
   * Called when the stream has ended. Throws InputError when it ended inside
   * a header or an entry, or before any entry and with no end-of-archive
   * marker (an archive that ends cleanly after an entry without the marker is
   * read, as readTar always read one).
   */
  end(): void {
    if (this.done) return;
    if (this.body) throw new InputError('not a valid tar archive (it ends inside an entry: truncated)');
    if (this.headerGot > 0 || this.entries === 0) throw new InputError('not a valid tar archive (no end-of-archive marker: truncated)');
  }

  /** One header block: what follows it (an entry's data, or a pax / long-name payload). */
  private readHeader(block: Uint8Array): Body {
    const stored = octal(block, 148, 8, 'checksum');
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
    if (sum !== stored) throw new InputError('not a valid tar archive (a header checksum does not match)');
    let size = octal(block, 124, 12, 'size');
    const type = String.fromCharCode(block[156]!);
    const pad = (size: number) => (512 - (size % 512)) % 512;
    if (type === 'x' || type === 'g' || type === 'L' || type === 'K') {
      if (size > MAX_TAR_METADATA_BYTES)
        throw new InputError(`not a valid tar archive (a pax or GNU long-name header of ${size} bytes, over the ${MAX_TAR_METADATA_BYTES} read)`);
      return { kind: type, header: null, size, got: 0, chunks: [], pad: pad(size) };
    }
    const pax = this.pax;
    const paxSize = pax?.get('size');
    if (paxSize !== undefined) {
      if (!/^[0-9]+$/.test(paxSize) || !Number.isSafeInteger(Number(paxSize)))
        throw new InputError("not a valid tar archive (a pax record's size is unreadable)");
      size = Number(paxSize);
    }
    // The prefix field holds other things in GNU and old (v7) headers: only a POSIX ustar header's is part of the name.
    const ustar = field(block, 257, 6) === 'ustar' && block[262] === 0;
    const prefix = ustar ? field(block, 345, 155) : '';
    const headerName = prefix ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100);
    const header: TarHeader = {
      name: resolved('name', pax?.get('path'), this.longName) ?? headerName,
      type: type === '\0' ? '0' : type,
      mode: octal(block, 100, 8, 'mode'),
      linkname: resolved('link target', pax?.get('linkpath'), this.longLink) ?? field(block, 157, 100),
      size,
    };
    this.pax = null;
    this.longName = null;
    this.longLink = null;
    this.entries++;
    return { kind: 'entry', header, size, got: 0, chunks: this.collect(header) ? [] : null, pad: pad(size) };
  }

  private finish(body: Body, out: TarEntry[]): void {
    this.body = null;
    const chunks = body.chunks ?? [];
    const data = chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
    if (body.kind === 'entry') {
      const { size: _, ...header } = body.header!;
      out.push({ ...header, data });
    } else if (body.kind === 'x') this.pax = paxRecords(data);
    else if (body.kind === 'L') this.longName = nulTerminated(data);
    else if (body.kind === 'K') this.longLink = nulTerminated(data);
    else {
      // Ignored by Go's archive/tar, applied by GNU tar: one that would change an entry's name, link or size is refused.
      const records = paxRecords(data);
      if (['path', 'linkpath', 'size'].some((key) => records.has(key)))
        throw new InputError('not a valid tar archive (a global pax header sets a path, link target or size; extractors disagree on it)');
    }
  }
}

/** A name or link target from a pax record or a GNU long-name header; extractors differ on which wins, so two that differ are refused. */
function resolved(what: string, pax: string | undefined, gnu: string | null): string | null {
  if (pax !== undefined && gnu !== null && pax !== gnu)
    throw new InputError(`not a valid tar archive (an entry's ${what} is given twice, by a pax record and a GNU long-name header, differently)`);
  return pax ?? gnu;
}

/** Parses a whole (decompressed) tar archive, through TarReader. Throws InputError for a truncated or damaged one. */
export function readTar(bytes: Uint8Array): TarEntry[] {
  const reader = new TarReader();
  const entries = reader.push(bytes);
  reader.end();
  return entries;
}
