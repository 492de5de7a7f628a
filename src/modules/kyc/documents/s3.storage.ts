import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { DOCUMENT_KEY, type DocumentStorage, type StoredObject } from './document-storage.port.js';

export interface S3StorageOptions {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, Ceph, R2…); unset for AWS S3. */
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  keyPrefix: string;
}

/**
 * Documents in an S3-compatible bucket (AWS SDK v3). Objects are written with
 * server-side encryption requested, and the key is `<prefix>/<appId>/<uuid>`.
 * Without explicit keys the SDK's default credential chain applies (IAM roles).
 */
export class S3Storage implements DocumentStorage {
  private readonly client: S3Client;

  constructor(private readonly options: S3StorageOptions) {
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      // Plain signed payloads: no aws-chunked trailers, which some S3-compatible stores do not accept.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...(options.accessKeyId && options.secretAccessKey
        ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
        : {}),
    });
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.options.bucket,
        Key: this.objectKey(key),
        Body: bytes,
        ContentLength: bytes.length,
        ServerSideEncryption: 'AES256',
      }),
    );
  }

  /** The object's body as the SDK gives it in Node: the HTTP answer itself, read as the download is. */
  async get(key: string): Promise<Readable> {
    const answer = await this.client.send(
      new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }),
    );
    if (!(answer.Body instanceof Readable)) throw new Error(`document ${key} has no content in the bucket`);
    return answer.Body;
  }

  async remove(key: string): Promise<void> {
    // S3 answers a DELETE of a key that is not there with success too.
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }),
    );
  }

  /**
   * The objects under the key prefix, a page of up to 1,000 at a time (ListObjectsV2), each with its
   * LastModified. A PUT is atomic, so there are no leftovers here; objects whose key is not a document's are
   * not listed.
   */
  async *list(): AsyncIterable<StoredObject> {
    const prefix = this.options.keyPrefix ? `${this.options.keyPrefix}/` : '';
    let continuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.options.bucket,
          Prefix: prefix || undefined,
          ContinuationToken: continuationToken,
        }),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key?.startsWith(prefix) ? object.Key.slice(prefix.length) : undefined;
        if (key !== undefined && DOCUMENT_KEY.test(key) && object.LastModified)
          yield { key, appId: key.slice(0, 36), modifiedAt: object.LastModified };
      }
      continuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (continuationToken);
  }

  destroy(): void {
    this.client.destroy();
  }

  private objectKey(key: string): string {
    return this.options.keyPrefix ? `${this.options.keyPrefix}/${key}` : key;
  }
}
