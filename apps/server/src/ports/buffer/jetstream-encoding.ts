import type { IngestionBatch, IngestionKind } from './port.js';

/** How a batch travels as a JetStream message: JSON, on the subject of its project. */

const KINDS: IngestionKind[] = ['track', 'engage', 'alias'];

export function encodeBatch(batch: IngestionBatch): Buffer {
  return Buffer.from(JSON.stringify(batch));
}

/** The message id: a retried request inside the duplicate window is stored once. */
export const messageId = (batch: IngestionBatch) => `${batch.projectId}.${batch.id}`;

/** The batch a message carries, or why it can never be applied (poison). */
export function decodeBatch(msg: { data: Uint8Array; subject: string }, prefix: string): IngestionBatch | string {
  let v: Partial<IngestionBatch>;
  try {
    v = JSON.parse(Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength).toString('utf8'));
  } catch {
    return 'undecodable message: not JSON';
  }
  if (!v || typeof v !== 'object') return 'undecodable message: not an object';
  if (typeof v.id !== 'string' || !v.id) return 'undecodable message: id';
  if (!KINDS.includes(v.kind as IngestionKind)) return 'undecodable message: kind';
  if (!Number.isSafeInteger(v.projectId)) return 'undecodable message: projectId';
  if (typeof v.acceptedAt !== 'number') return 'undecodable message: acceptedAt';
  if (!Array.isArray(v.records)) return 'undecodable message: records';
  if (msg.subject !== `${prefix}.${v.projectId}`) return `undecodable message: project ${v.projectId} on subject ${msg.subject}`;
  return v as IngestionBatch;
}
