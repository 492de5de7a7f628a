import type { Readable } from 'node:stream';

/** Where document bytes live. The default keeps them on local disk under DATA_DIR/documents. */
export const DOCUMENT_STORAGE = Symbol('DOCUMENT_STORAGE');

/** The key of a document's bytes as the service writes it: `<appId>/<documentId>`. */
export const DOCUMENT_KEY = /^[0-9a-f-]{36}\/[0-9a-f-]{36}$/;

/** Something the storage holds, as its listing gives it. */
export interface StoredObject {
  /** What `remove` takes: a document's key, or the name of a leftover of an unfinished write. */
  key: string;
  /** The application whose bytes these are (the key's first part). */
  appId: string;
  /** When it was written, by the storage's clock. */
  modifiedAt: Date;
}

export interface DocumentStorage {
  put(key: string, bytes: Buffer): Promise<void>;
  /**
   * The bytes as a stream, read as the response takes them (backpressure): a download holds a stream's buffer,
   * not the file. Rejects when the bytes are not there, before any is read.
   */
  get(key: string): Promise<Readable>;
  /** Removes the bytes of a document whose row was never written; nothing when they are not there. */
  remove(key: string): Promise<void>;
  /**
   * Everything of the service's shape the storage holds: document keys, and leftovers of writes a process
   * did not finish (which `remove` also takes). Anything else under the root or prefix is not listed, so is
   * never removed. Objects removed meanwhile may be listed or not.
   */
  list(): AsyncIterable<StoredObject>;
}
