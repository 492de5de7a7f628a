/** Where document bytes live. The default keeps them on local disk under DATA_DIR/documents. */
export const DOCUMENT_STORAGE = Symbol('DOCUMENT_STORAGE');

export interface DocumentStorage {
  put(key: string, bytes: Buffer): Promise<void>;
  get(key: string): Promise<Buffer>;
  /** Removes the bytes of a document whose row was never written; nothing when they are not there. */
  remove(key: string): Promise<void>;
}
