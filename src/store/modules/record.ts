import { formatModuleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { moduleCommittedRecordKey, moduleRecordKey } from '../layout';
import type { Store } from '../store';
import { parseStoredJson, readCommittedRecord } from '../records';
import type { ModuleVersionRecord } from './types';
import { DamagedRecordError, VersionConflictError } from '../errors';

/**
 * A module version's stored record: parsed and validated, read (R2 first, the KV copy of older versions), and
 * compared with another publish of the same version (immutability).
 */

/**
 * Parses and validates a stored module version record. Throws
 * DamagedRecordError naming `key` when it is not JSON or lacks a field.
 */
export function parseModuleRecord(text: string, key: string): ModuleVersionRecord {
  const value = parseStoredJson(text, key);
  const r = value as Partial<ModuleVersionRecord> | null;
  const fail = (why: string): never => {
    throw new DamagedRecordError(key, why);
  };
  if (typeof r !== 'object' || r === null) return fail('not an object');
  if (typeof r.version !== 'string' || !r.version) fail('no version');
  const a = r.address as Partial<ModuleAddress> | undefined;
  if (!a || typeof a.hostname !== 'string' || typeof a.namespace !== 'string' || typeof a.name !== 'string' || typeof a.system !== 'string') fail('no address');
  if (typeof r.filename !== 'string' || !r.filename) fail('no file name');
  if (r.format !== 'tar.gz' && r.format !== 'zip') fail('no package format');
  if (typeof r.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(r.sha256)) fail('no SHA-256');
  if (typeof r.size !== 'number' || !Number.isInteger(r.size) || r.size < 0) fail('no size');
  return r as ModuleVersionRecord;
}

/**
 * The committed record of a module version, or null when it was never
 * (completely) published. Reads the R2 record (strongly consistent); a
 * version published before records were kept in R2 is found through its KV
 * record. Throws DamagedRecordError for a damaged record.
 */
export async function readModuleRecord(store: Store, address: ModuleAddress, version: string): Promise<ModuleVersionRecord | null> {
  return readCommittedRecord(store, moduleCommittedRecordKey(address, version), moduleRecordKey(address, version), parseModuleRecord);
}

/** True when two records are the same package bytes (a re-run). */
export function samePackage(a: ModuleVersionRecord, b: ModuleVersionRecord): boolean {
  return a.sha256 === b.sha256 && a.size === b.size && a.filename === b.filename;
}

/** The VersionConflictError for a module version published with another package. */
export function differentPackageError(record: ModuleVersionRecord, existing: ModuleVersionRecord): VersionConflictError {
  return new VersionConflictError(
    `${formatModuleAddress(record.address)} ${record.version} is already published with different contents (SHA-256 ${existing.sha256}, ${existing.filename}; this package ${record.sha256}, ${record.filename}); published versions are immutable — publish a new version instead`,
  );
}
