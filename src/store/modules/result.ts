import { formatModuleAddress } from '../../protocol/modules-v1';
import type { ModulePublishResult, PublishStatus } from '../../protocol/publish-api';
import type { ModuleVersionRecord } from './types';

/**
 * What a module publish answers about the version it published or found — the publish API's JSON and the
 * first fields of `publish-module --json`, so both ways in describe a version alike.
 */

/** The stored version's address, version, file, format, SHA-256 and size. */
export function moduleVersionFields(record: ModuleVersionRecord): Omit<ModulePublishResult, 'status'> {
  return {
    address: formatModuleAddress(record.address),
    version: record.version,
    filename: record.filename,
    format: record.format,
    sha256: record.sha256,
    size: record.size,
  };
}

/** The publish API's answer: the version's fields and what the publish did. */
export function moduleResult(record: ModuleVersionRecord, status: PublishStatus): ModulePublishResult {
  return { ...moduleVersionFields(record), status };
}
